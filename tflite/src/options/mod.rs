//! Builtin operator options: the options table of either union as the
//! generated code decodes it ([`Options`]), and names for the enum codes the
//! runtime checks.

use core::fmt;

mod table;

pub use table::{Options, OptionsUnion};
pub(crate) use table::{KNOWN_OPTIONS2_TAGS, KNOWN_OPTIONS_TAGS};

/// An activation fused into an operator's output (`ActivationFunctionType`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum FusedActivation {
    /// No activation.
    #[default]
    None,
    /// max(x, 0).
    Relu,
    /// Clamp to [-1, 1].
    ReluN1To1,
    /// Clamp to [0, 6].
    Relu6,
    /// tanh(x).
    Tanh,
    /// The sign bit (unused by TFLite's kernels).
    SignBit,
    /// A code this crate does not know; the runtime must refuse it.
    Unknown(i8),
}

impl FusedActivation {
    /// The activation of a format code.
    pub fn from_code(code: i8) -> FusedActivation {
        match code {
            0 => FusedActivation::None,
            1 => FusedActivation::Relu,
            2 => FusedActivation::ReluN1To1,
            3 => FusedActivation::Relu6,
            4 => FusedActivation::Tanh,
            5 => FusedActivation::SignBit,
            other => FusedActivation::Unknown(other),
        }
    }
}

impl fmt::Display for FusedActivation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FusedActivation::None => f.write_str("NONE"),
            FusedActivation::Relu => f.write_str("RELU"),
            FusedActivation::ReluN1To1 => f.write_str("RELU_N1_TO_1"),
            FusedActivation::Relu6 => f.write_str("RELU6"),
            FusedActivation::Tanh => f.write_str("TANH"),
            FusedActivation::SignBit => f.write_str("SIGN_BIT"),
            FusedActivation::Unknown(code) => write!(f, "ACTIVATION_{code}"),
        }
    }
}

/// The layout of FULLY_CONNECTED weights (`FullyConnectedOptionsWeightsFormat`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum WeightsFormat {
    /// Row-major `[output, input]`.
    #[default]
    Default,
    /// The shuffled 4x16 int8 layout of TFLite's optimized kernels.
    Shuffled4x16Int8,
    /// A code this crate does not know; the runtime must refuse it.
    Unknown(i8),
}

impl WeightsFormat {
    /// The format of a format code.
    pub fn from_code(code: i8) -> WeightsFormat {
        match code {
            0 => WeightsFormat::Default,
            1 => WeightsFormat::Shuffled4x16Int8,
            other => WeightsFormat::Unknown(other),
        }
    }
}
