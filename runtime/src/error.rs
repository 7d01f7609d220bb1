//! The runtime's error: model-file problems of its own, and the library's
//! [`qneon::Error`] for everything a kernel (or a check made in a kernel's
//! terms) rejects.

use core::fmt;

/// Everything loading or running a model can report.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum Error {
    /// A `.tflite` file the reader refuses: truncated, corrupted, an offset,
    /// length, index or shape out of range, or over the memory budget.
    Tflite(qneon_tflite::Error),
    /// An operator of a `.tflite` model this runtime cannot run (yet): the
    /// op, its dtypes, an option or a rounding mode without a kernel.
    UnsupportedOp {
        /// TFLite's name of the operator (`CONV_2D`).
        op: String,
        /// Its index in the main subgraph's execution order.
        index: usize,
        /// What is missing.
        missing: String,
    },
    /// An operator of a `.tflite` model that breaks TFLite's own rules
    /// (shapes that do not match, a quantization TFLite's `Prepare` refuses,
    /// an index out of range at run time).
    InvalidOp {
        /// TFLite's name of the operator.
        op: String,
        /// Its index in the main subgraph's execution order.
        index: usize,
        /// What is wrong.
        problem: String,
    },
    /// A model whose graph cannot be planned: a tensor read before any
    /// operator writes it, a tensor written twice, no subgraph to run.
    Graph {
        /// What is wrong.
        problem: String,
    },
    /// The model needs more memory than the caller's budget allows.
    OverBudget {
        /// What needs the memory (`"arena"`).
        what: &'static str,
        /// Bytes it needs.
        needed: usize,
        /// The budget in bytes.
        budget: usize,
    },
    /// Input data given to `invoke` that does not fit the model: unknown
    /// input, wrong dtype or byte length.
    Input {
        /// What is wrong.
        problem: String,
    },
    /// A length, scale, zero point, shape or backend the library's kernels
    /// reject: raised by an operator's `new` or `run`, or by the runtime when
    /// it checks a model's parameters before an
    /// operator sees them, so the problem is named in the kernels' terms.
    Kernel(qneon::Error),
    /// An [`Options`](crate::interp::Options) field out of its domain
    /// (a threshold that is NaN or outside `[0, 1]`).
    InvalidOption {
        /// The field (`"threshold"`).
        option: &'static str,
        /// What is wrong.
        problem: String,
    },
}

/// `core::result::Result` with the runtime's [`Error`].
pub type Result<T, E = Error> = core::result::Result<T, E>;

impl From<qneon::Error> for Error {
    fn from(e: qneon::Error) -> Error {
        Error::Kernel(e)
    }
}

impl From<qneon_tflite::Error> for Error {
    fn from(e: qneon_tflite::Error) -> Error {
        Error::Tflite(e)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Tflite(e) => write!(f, "model file: {e}"),
            Error::UnsupportedOp { op, index, missing } => {
                write!(f, "operator {index} ({op}) is not supported: {missing}")
            }
            Error::InvalidOp { op, index, problem } => {
                write!(f, "operator {index} ({op}): {problem}")
            }
            Error::Graph { problem } => write!(f, "model graph: {problem}"),
            Error::OverBudget {
                what,
                needed,
                budget,
            } => write!(
                f,
                "the {what} needs {needed} bytes, over the memory budget of {budget} bytes"
            ),
            Error::Input { problem } => write!(f, "input: {problem}"),
            Error::Kernel(e) => e.fmt(f),
            Error::InvalidOption { option, problem } => write!(f, "option {option}: {problem}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Kernel(e) => Some(e),
            Error::Tflite(e) => Some(e),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_names_the_problem_and_kernel_errors_keep_their_text() {
        let input = Error::Input {
            problem: "input 3 does not exist".into(),
        };
        assert_eq!(input.to_string(), "input: input 3 does not exist");
        let kernel = qneon::Error::ZeroDimension {
            op: "gemm",
            what: "heads",
        };
        let wrapped = Error::from(kernel);
        assert_eq!(wrapped.to_string(), kernel.to_string());
        assert!(std::error::Error::source(&wrapped).is_some());
        assert!(std::error::Error::source(&input).is_none());
    }
}
