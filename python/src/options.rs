//! The one place where the Python keyword arguments become the runtime's
//! [`Options`]: the kernel set the resolver type chose, qneon's own
//! options, and `num_threads`.

use pyo3::exceptions::PyValueError;
use pyo3::PyResult;
use qneon::{Backend, Method};
use qneon_runtime::interp::{Options, Rounding, TfliteKernels};

/// What `Interpreter(...)` was given, as the extension module receives it
/// (`qneon/interpreter.py` has already mapped the resolver type to a kernel
/// set's name).
pub struct LoadArgs<'a> {
    /// `"reference"`, `"optimized"` or `"xnnpack"`.
    pub kernels: &'a str,
    /// A [`Method`] name (`"fixed"`, `"lut"`, `"f32"`), or `None` for the
    /// method whose bytes the kernel set has.
    pub softmax: Option<&'a str>,
    /// `"single"` or `"double"`.
    pub rounding: &'a str,
    /// `"neon"` or `"scalar"`; `None`: the best this CPU has.
    pub backend: Option<&'a str>,
    /// Bytes; `None`: the runtime's default budget.
    pub memory_budget: Option<usize>,
    /// `None` or at least 1 (checked by the caller as TFLite checks it).
    pub num_threads: Option<usize>,
}

/// The runtime's options for `args`; a `ValueError` naming the argument
/// for a name it does not know.
///
/// `num_threads` becomes [`Options::threads`]: `None` (TFLite's `-1`, "let
/// the runtime choose") is one thread, qneon's default; more than
/// [`MAX_THREADS`](qneon_runtime::interp::MAX_THREADS) is the runtime's
/// `InvalidOption` at load, raised as a `ValueError`.
pub fn load_options(args: &LoadArgs<'_>) -> PyResult<Options> {
    let kernels = match args.kernels {
        "reference" => TfliteKernels::Reference,
        "optimized" => TfliteKernels::Optimized,
        "xnnpack" => TfliteKernels::Xnnpack,
        other => {
            return Err(PyValueError::new_err(format!(
                "kernels {other:?}: expected \"reference\", \"optimized\" or \"xnnpack\""
            )))
        }
    };
    let softmax_method = match args.softmax {
        Some(name) => name
            .parse::<Method>()
            .map_err(|e| PyValueError::new_err(format!("softmax {name:?}: {e}")))?,
        None => default_method(kernels),
    };
    let rounding = match args.rounding {
        "single" => Rounding::Single,
        "double" => Rounding::Double,
        other => {
            return Err(PyValueError::new_err(format!(
                "rounding {other:?}: expected \"single\" or \"double\""
            )))
        }
    };
    let backend = match args.backend {
        None => Backend::best(),
        Some(name) => {
            let backend = name
                .parse::<Backend>()
                .map_err(|e| PyValueError::new_err(format!("backend {name:?}: {e}")))?;
            if !backend.is_available() {
                return Err(PyValueError::new_err(format!(
                    "backend {name:?} is not available on this CPU"
                )));
            }
            backend
        }
    };
    let defaults = Options::default();
    Ok(Options {
        rounding,
        softmax_method,
        kernels,
        backend,
        memory_budget: args.memory_budget.or(defaults.memory_budget),
        threshold: None,
        threads: args.num_threads.unwrap_or(defaults.threads),
    })
}

/// The activations' method whose bytes the kernel set's run has: the
/// reference kernels compute in fixed point; TFLite's optimized kernels
/// (and the builtin kernels XNNPACK leaves int8 SOFTMAX to) take the table
/// path.
fn default_method(kernels: TfliteKernels) -> Method {
    match kernels {
        TfliteKernels::Reference => Method::FixedPoint,
        TfliteKernels::Optimized | TfliteKernels::Xnnpack => Method::Lut,
    }
}
