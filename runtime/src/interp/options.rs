//! What the caller chooses at load: the rounding of requantizing ops, the
//! activations' method, the backend and the memory budget.

use qneon::{Backend, Method};

pub use qneon::quant::Rounding;

/// What the caller chooses at load.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Options {
    /// Rounding of every requantizing op.
    pub rounding: Rounding,
    /// The method of SOFTMAX, LOG_SOFTMAX, LOGISTIC and TANH.
    pub softmax_method: Method,
    /// The kernels' backend (never changes a byte).
    pub backend: Backend,
    /// Most bytes the model may need at run time: any one tensor, and the
    /// planned arena. `None`: no limit.
    pub memory_budget: Option<usize>,
}

impl Default for Options {
    /// Single rounding and the fixed-point method (TFLite's reference
    /// kernels as LiteRT 2.3 builds them), the best backend, 1 GiB.
    fn default() -> Options {
        Options {
            rounding: Rounding::Single,
            softmax_method: Method::FixedPoint,
            backend: Backend::best(),
            memory_budget: Some(1 << 30),
        }
    }
}
