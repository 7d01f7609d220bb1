//! What the caller chooses at load: the rounding of requantizing ops, the
//! activations' method, the backend and the memory budget.

use qneon::{Backend, Method};

/// How requantizing ops round `MultiplyByQuantizedMultiplier`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Rounding {
    /// `(x * M + 2^(30 - s)) >> (31 - s)` in 64 bits: LiteRT 2.3's build
    /// (`TFLITE_SINGLE_ROUNDING`).
    #[default]
    Single,
    /// gemmlowp's saturating rounding doubling high multiply, then a
    /// rounding divide by a power of two: TF 2.19's bundled interpreter and
    /// TFLite Micro.
    Double,
}

impl Rounding {
    /// `"single"` or `"double"`.
    pub fn name(self) -> &'static str {
        match self {
            Rounding::Single => "single",
            Rounding::Double => "double",
        }
    }
}

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
