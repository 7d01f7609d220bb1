//! Builtin operator options (the `BuiltinOptions` union), decoded for the
//! operators qneon runs and reported by table name for the others.

use core::fmt;

use crate::dtype::TensorType;

// Decoding from the generated union reader lives apart from the typed view.
mod decode;
mod table;

pub(crate) use decode::decode;
use table::OPTIONS_NAMES;
pub use table::{OptionsTable, OptionsUnion};
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

/// FULLY_CONNECTED options.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct FullyConnectedOptions {
    /// Activation applied to the output.
    pub fused_activation: FusedActivation,
    /// Weights layout.
    pub weights_format: WeightsFormat,
    /// Keep the input's leading dimensions instead of flattening them to one.
    pub keep_num_dims: bool,
    /// Hybrid models: quantize float inputs with their own zero point.
    pub asymmetric_quantize_inputs: bool,
}

/// ADD or SUB options.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AddSubOptions {
    /// Activation applied to the output.
    pub fused_activation: FusedActivation,
    /// int16 only: scales are powers of two (the format's default is true).
    pub pot_scale_int16: bool,
}

/// MUL options.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct MulOptions {
    /// Activation applied to the output.
    pub fused_activation: FusedActivation,
}

/// SOFTMAX options.
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub struct SoftmaxOptions {
    /// Input multiplier: softmax(beta * x).
    pub beta: f32,
}

/// RESHAPE options.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct ReshapeOptions {
    /// The output shape (one entry may be -1, inferred), when the file gives
    /// it here rather than as the second input tensor.
    pub new_shape: Option<Vec<i32>>,
}

/// BATCH_MATMUL options.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct BatchMatMulOptions {
    /// Transpose the last two dimensions of the first input.
    pub adj_x: bool,
    /// Transpose the last two dimensions of the second input.
    pub adj_y: bool,
    /// Hybrid models: quantize float inputs with their own zero point.
    pub asymmetric_quantize_inputs: bool,
}

/// GATHER options.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct GatherOptions {
    /// The axis gathered along (negative counts from the end).
    pub axis: i32,
    /// Leading dimensions shared by params and indices.
    pub batch_dims: i32,
}

/// STRIDED_SLICE options: bit `i` of a mask applies to dimension `i`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct StridedSliceOptions {
    /// Ignore `begin[i]`: start at the first (or, striding backwards, last) element.
    pub begin_mask: i32,
    /// Ignore `end[i]`: run to the end.
    pub end_mask: i32,
    /// Dimension `i` stands for all unspecified dimensions.
    pub ellipsis_mask: i32,
    /// Insert a new dimension of size 1 at `i`.
    pub new_axis_mask: i32,
    /// Take the single element `begin[i]` and drop dimension `i`.
    pub shrink_axis_mask: i32,
    /// `end` counts from `begin` rather than from 0.
    pub offset: bool,
}

/// CONCATENATION options.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct ConcatenationOptions {
    /// The axis joined along (negative counts from the end).
    pub axis: i32,
    /// Activation applied to the output.
    pub fused_activation: FusedActivation,
}

/// SPLIT options.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct SplitOptions {
    /// Number of equal parts.
    pub num_splits: i32,
}

/// CAST options. The codes are kept raw: TFLite's kernel takes the types
/// from the tensors, and an unknown code here must not refuse the model.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct CastOptions {
    /// `TensorType` code of the input.
    pub in_data_type: i8,
    /// `TensorType` code of the output.
    pub out_data_type: i8,
}

impl CastOptions {
    /// The input type, if its code is known.
    pub fn in_type(&self) -> Option<TensorType> {
        TensorType::from_code(self.in_data_type)
    }

    /// The output type, if its code is known.
    pub fn out_type(&self) -> Option<TensorType> {
        TensorType::from_code(self.out_data_type)
    }
}

/// An operator's builtin options.
///
/// LOGISTIC and TANH have no options table in the format; they carry
/// [`Options::None`].
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum Options {
    /// The operator has no options table. TFLite then uses zero / false
    /// for every option.
    None,
    /// FullyConnectedOptions.
    FullyConnected(FullyConnectedOptions),
    /// AddOptions.
    Add(AddSubOptions),
    /// SubOptions.
    Sub(AddSubOptions),
    /// MulOptions.
    Mul(MulOptions),
    /// SoftmaxOptions.
    Softmax(SoftmaxOptions),
    /// LogSoftmaxOptions (no fields).
    LogSoftmax,
    /// ReshapeOptions.
    Reshape(ReshapeOptions),
    /// TransposeOptions (no fields).
    Transpose,
    /// BatchMatMulOptions.
    BatchMatMul(BatchMatMulOptions),
    /// GatherOptions.
    Gather(GatherOptions),
    /// StridedSliceOptions.
    StridedSlice(StridedSliceOptions),
    /// PadOptions (no fields).
    Pad,
    /// ConcatenationOptions.
    Concatenation(ConcatenationOptions),
    /// SplitOptions.
    Split(SplitOptions),
    /// CastOptions.
    Cast(CastOptions),
    /// QuantizeOptions (no fields).
    Quantize,
    /// DequantizeOptions (no fields).
    Dequantize,
    /// Another member of the union, not decoded: its tag (the
    /// `builtin_options_type`), named by [`Options::table_name`].
    Other {
        /// The union tag.
        type_id: u8,
    },
}

impl Options {
    /// The union tag (`builtin_options_type`): 0 for [`Options::None`].
    pub fn type_id(&self) -> u8 {
        match self {
            Options::None => 0,
            Options::Other { type_id } => *type_id,
            decoded => decoded.decoded_tag().unwrap_or(0),
        }
    }

    /// The format's name of the options table (`"FullyConnectedOptions"`,
    /// `"NONE"` for no table), or `None` for a tag this crate does not know.
    pub fn table_name(&self) -> Option<&'static str> {
        match self.type_id() {
            0 => Some("NONE"),
            tag => OPTIONS_NAMES.get(usize::from(tag) - 1).copied(),
        }
    }

    /// The union tag of a decoded variant, `None` for `None` and `Other`.
    fn decoded_tag(&self) -> Option<u8> {
        Some(match self {
            Options::FullyConnected(_) => 8,
            Options::Softmax(_) => 9,
            Options::Concatenation(_) => 10,
            Options::Add(_) => 11,
            Options::Reshape(_) => 17,
            Options::Mul(_) => 21,
            Options::Pad => 22,
            Options::Gather(_) => 23,
            Options::Transpose => 26,
            Options::Sub(_) => 28,
            Options::StridedSlice(_) => 32,
            Options::Split(_) => 35,
            Options::LogSoftmax => 36,
            Options::Cast(_) => 37,
            Options::Dequantize => 38,
            Options::Quantize => 89,
            Options::BatchMatMul(_) => 101,
            Options::None | Options::Other { .. } => return None,
        })
    }
}

impl fmt::Display for Options {
    /// `FullyConnectedOptions { fused_activation: RELU, .. }`-like text.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Options::None => f.write_str("no options"),
            Options::FullyConnected(o) => write!(
                f,
                "activation={} weights={:?} keep_num_dims={} asymmetric_quantize_inputs={}",
                o.fused_activation, o.weights_format, o.keep_num_dims, o.asymmetric_quantize_inputs
            ),
            Options::Add(o) | Options::Sub(o) => write!(
                f,
                "activation={} pot_scale_int16={}",
                o.fused_activation, o.pot_scale_int16
            ),
            Options::Mul(o) => write!(f, "activation={}", o.fused_activation),
            Options::Softmax(o) => write!(f, "beta={}", o.beta),
            Options::Reshape(o) => match &o.new_shape {
                Some(shape) => write!(f, "new_shape={shape:?}"),
                None => f.write_str("new_shape from input"),
            },
            Options::BatchMatMul(o) => write!(
                f,
                "adj_x={} adj_y={} asymmetric_quantize_inputs={}",
                o.adj_x, o.adj_y, o.asymmetric_quantize_inputs
            ),
            Options::Gather(o) => write!(f, "axis={} batch_dims={}", o.axis, o.batch_dims),
            Options::StridedSlice(o) => write!(
                f,
                "begin_mask={:#b} end_mask={:#b} ellipsis_mask={:#b} new_axis_mask={:#b} shrink_axis_mask={:#b} offset={}",
                o.begin_mask, o.end_mask, o.ellipsis_mask, o.new_axis_mask, o.shrink_axis_mask, o.offset
            ),
            Options::Concatenation(o) => {
                write!(f, "axis={} activation={}", o.axis, o.fused_activation)
            }
            Options::Split(o) => write!(f, "num_splits={}", o.num_splits),
            Options::Cast(o) => {
                let name = |code: i8| match TensorType::from_code(code) {
                    Some(dtype) => dtype.name().to_string(),
                    None => format!("type {code}"),
                };
                write!(f, "{} -> {}", name(o.in_data_type), name(o.out_data_type))
            }
            Options::LogSoftmax
            | Options::Transpose
            | Options::Pad
            | Options::Quantize
            | Options::Dequantize => f.write_str("no fields"),
            Options::Other { type_id } => match self.table_name() {
                Some(name) => write!(f, "{name} (not decoded)"),
                None => write!(f, "BuiltinOptions member {type_id} (unknown)"),
            },
        }
    }
}
