//! Builtin operator options (the `BuiltinOptions` union), decoded for the
//! operators qneon runs and reported by table name for the others.

use core::fmt;

use crate::dtype::TensorType;
use crate::generated::tflite::BuiltinOptionsRef;
use crate::op::BuiltinOp;

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

    /// The operator a decoded options table belongs to; `None` for `None`
    /// and `Other`, which are not checked against the operator.
    pub(crate) fn owner(&self) -> Option<BuiltinOp> {
        Some(match self {
            Options::FullyConnected(_) => BuiltinOp::FULLY_CONNECTED,
            Options::Add(_) => BuiltinOp::ADD,
            Options::Sub(_) => BuiltinOp::SUB,
            Options::Mul(_) => BuiltinOp::MUL,
            Options::Softmax(_) => BuiltinOp::SOFTMAX,
            Options::LogSoftmax => BuiltinOp::LOG_SOFTMAX,
            Options::Reshape(_) => BuiltinOp::RESHAPE,
            Options::Transpose => BuiltinOp::TRANSPOSE,
            Options::BatchMatMul(_) => BuiltinOp::BATCH_MATMUL,
            Options::Gather(_) => BuiltinOp::GATHER,
            Options::StridedSlice(_) => BuiltinOp::STRIDED_SLICE,
            Options::Pad => BuiltinOp::PAD,
            Options::Concatenation(_) => BuiltinOp::CONCATENATION,
            Options::Split(_) => BuiltinOp::SPLIT,
            Options::Cast(_) => BuiltinOp::CAST,
            Options::Quantize => BuiltinOp::QUANTIZE,
            Options::Dequantize => BuiltinOp::DEQUANTIZE,
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

/// Decodes one union member. The generated accessors re-check every field
/// against the file; the error names the table and field.
pub(crate) fn decode(options: BuiltinOptionsRef<'_>) -> planus::Result<Options> {
    Ok(match options {
        BuiltinOptionsRef::FullyConnectedOptions(o) => {
            Options::FullyConnected(FullyConnectedOptions {
                fused_activation: FusedActivation::from_code(o.fused_activation_function()?),
                weights_format: WeightsFormat::from_code(o.weights_format()?),
                keep_num_dims: o.keep_num_dims()?,
                asymmetric_quantize_inputs: o.asymmetric_quantize_inputs()?,
            })
        }
        BuiltinOptionsRef::AddOptions(o) => Options::Add(AddSubOptions {
            fused_activation: FusedActivation::from_code(o.fused_activation_function()?),
            pot_scale_int16: o.pot_scale_int16()?,
        }),
        BuiltinOptionsRef::SubOptions(o) => Options::Sub(AddSubOptions {
            fused_activation: FusedActivation::from_code(o.fused_activation_function()?),
            pot_scale_int16: o.pot_scale_int16()?,
        }),
        BuiltinOptionsRef::MulOptions(o) => Options::Mul(MulOptions {
            fused_activation: FusedActivation::from_code(o.fused_activation_function()?),
        }),
        BuiltinOptionsRef::SoftmaxOptions(o) => {
            Options::Softmax(SoftmaxOptions { beta: o.beta()? })
        }
        BuiltinOptionsRef::LogSoftmaxOptions(_) => Options::LogSoftmax,
        BuiltinOptionsRef::ReshapeOptions(o) => Options::Reshape(ReshapeOptions {
            new_shape: o.new_shape()?.map(|shape| shape.iter().collect()),
        }),
        BuiltinOptionsRef::TransposeOptions(_) => Options::Transpose,
        BuiltinOptionsRef::BatchMatMulOptions(o) => Options::BatchMatMul(BatchMatMulOptions {
            adj_x: o.adj_x()?,
            adj_y: o.adj_y()?,
            asymmetric_quantize_inputs: o.asymmetric_quantize_inputs()?,
        }),
        BuiltinOptionsRef::GatherOptions(o) => Options::Gather(GatherOptions {
            axis: o.axis()?,
            batch_dims: o.batch_dims()?,
        }),
        BuiltinOptionsRef::StridedSliceOptions(o) => Options::StridedSlice(StridedSliceOptions {
            begin_mask: o.begin_mask()?,
            end_mask: o.end_mask()?,
            ellipsis_mask: o.ellipsis_mask()?,
            new_axis_mask: o.new_axis_mask()?,
            shrink_axis_mask: o.shrink_axis_mask()?,
            offset: o.offset()?,
        }),
        BuiltinOptionsRef::PadOptions(_) => Options::Pad,
        BuiltinOptionsRef::ConcatenationOptions(o) => {
            Options::Concatenation(ConcatenationOptions {
                axis: o.axis()?,
                fused_activation: FusedActivation::from_code(o.fused_activation_function()?),
            })
        }
        BuiltinOptionsRef::SplitOptions(o) => Options::Split(SplitOptions {
            num_splits: o.num_splits()?,
        }),
        BuiltinOptionsRef::CastOptions(o) => Options::Cast(CastOptions {
            in_data_type: o.in_data_type()?,
            out_data_type: o.out_data_type()?,
        }),
        BuiltinOptionsRef::QuantizeOptions(_) => Options::Quantize,
        BuiltinOptionsRef::DequantizeOptions(_) => Options::Dequantize,
        other => Options::Other {
            type_id: union_tag(&other),
        },
    })
}

/// The number of `BuiltinOptions` members this crate's schema declares.
pub(crate) const KNOWN_OPTIONS_TAGS: u8 = 126;

/// Names of the `BuiltinOptions` members, at index tag - 1.
const OPTIONS_NAMES: [&str; KNOWN_OPTIONS_TAGS as usize] = [
    "Conv2DOptions",
    "DepthwiseConv2DOptions",
    "ConcatEmbeddingsOptions",
    "LSHProjectionOptions",
    "Pool2DOptions",
    "SVDFOptions",
    "RNNOptions",
    "FullyConnectedOptions",
    "SoftmaxOptions",
    "ConcatenationOptions",
    "AddOptions",
    "L2NormOptions",
    "LocalResponseNormalizationOptions",
    "LSTMOptions",
    "ResizeBilinearOptions",
    "CallOptions",
    "ReshapeOptions",
    "SkipGramOptions",
    "SpaceToDepthOptions",
    "EmbeddingLookupSparseOptions",
    "MulOptions",
    "PadOptions",
    "GatherOptions",
    "BatchToSpaceNDOptions",
    "SpaceToBatchNDOptions",
    "TransposeOptions",
    "ReducerOptions",
    "SubOptions",
    "DivOptions",
    "SqueezeOptions",
    "SequenceRNNOptions",
    "StridedSliceOptions",
    "ExpOptions",
    "TopKV2Options",
    "SplitOptions",
    "LogSoftmaxOptions",
    "CastOptions",
    "DequantizeOptions",
    "MaximumMinimumOptions",
    "ArgMaxOptions",
    "LessOptions",
    "NegOptions",
    "PadV2Options",
    "GreaterOptions",
    "GreaterEqualOptions",
    "LessEqualOptions",
    "SelectOptions",
    "SliceOptions",
    "TransposeConvOptions",
    "SparseToDenseOptions",
    "TileOptions",
    "ExpandDimsOptions",
    "EqualOptions",
    "NotEqualOptions",
    "ShapeOptions",
    "PowOptions",
    "ArgMinOptions",
    "FakeQuantOptions",
    "PackOptions",
    "LogicalOrOptions",
    "OneHotOptions",
    "LogicalAndOptions",
    "LogicalNotOptions",
    "UnpackOptions",
    "FloorDivOptions",
    "SquareOptions",
    "ZerosLikeOptions",
    "FillOptions",
    "BidirectionalSequenceLSTMOptions",
    "BidirectionalSequenceRNNOptions",
    "UnidirectionalSequenceLSTMOptions",
    "FloorModOptions",
    "RangeOptions",
    "ResizeNearestNeighborOptions",
    "LeakyReluOptions",
    "SquaredDifferenceOptions",
    "MirrorPadOptions",
    "AbsOptions",
    "SplitVOptions",
    "UniqueOptions",
    "ReverseV2Options",
    "AddNOptions",
    "GatherNdOptions",
    "CosOptions",
    "WhereOptions",
    "RankOptions",
    "ReverseSequenceOptions",
    "MatrixDiagOptions",
    "QuantizeOptions",
    "MatrixSetDiagOptions",
    "HardSwishOptions",
    "IfOptions",
    "WhileOptions",
    "DepthToSpaceOptions",
    "NonMaxSuppressionV4Options",
    "NonMaxSuppressionV5Options",
    "ScatterNdOptions",
    "SelectV2Options",
    "DensifyOptions",
    "SegmentSumOptions",
    "BatchMatMulOptions",
    "CumsumOptions",
    "CallOnceOptions",
    "BroadcastToOptions",
    "Rfft2dOptions",
    "Conv3DOptions",
    "HashtableOptions",
    "HashtableFindOptions",
    "HashtableImportOptions",
    "HashtableSizeOptions",
    "VarHandleOptions",
    "ReadVariableOptions",
    "AssignVariableOptions",
    "RandomOptions",
    "BucketizeOptions",
    "GeluOptions",
    "DynamicUpdateSliceOptions",
    "UnsortedSegmentProdOptions",
    "UnsortedSegmentMaxOptions",
    "UnsortedSegmentMinOptions",
    "UnsortedSegmentSumOptions",
    "ATan2Options",
    "SignOptions",
    "BitcastOptions",
    "BitwiseXorOptions",
    "RightShiftOptions",
];

/// The union tag of a member (its position in the format's union, from 1).
fn union_tag(options: &BuiltinOptionsRef<'_>) -> u8 {
    match options {
        BuiltinOptionsRef::Conv2DOptions(_) => 1,
        BuiltinOptionsRef::DepthwiseConv2DOptions(_) => 2,
        BuiltinOptionsRef::ConcatEmbeddingsOptions(_) => 3,
        BuiltinOptionsRef::LshProjectionOptions(_) => 4,
        BuiltinOptionsRef::Pool2DOptions(_) => 5,
        BuiltinOptionsRef::SvdfOptions(_) => 6,
        BuiltinOptionsRef::RnnOptions(_) => 7,
        BuiltinOptionsRef::FullyConnectedOptions(_) => 8,
        BuiltinOptionsRef::SoftmaxOptions(_) => 9,
        BuiltinOptionsRef::ConcatenationOptions(_) => 10,
        BuiltinOptionsRef::AddOptions(_) => 11,
        BuiltinOptionsRef::L2NormOptions(_) => 12,
        BuiltinOptionsRef::LocalResponseNormalizationOptions(_) => 13,
        BuiltinOptionsRef::LstmOptions(_) => 14,
        BuiltinOptionsRef::ResizeBilinearOptions(_) => 15,
        BuiltinOptionsRef::CallOptions(_) => 16,
        BuiltinOptionsRef::ReshapeOptions(_) => 17,
        BuiltinOptionsRef::SkipGramOptions(_) => 18,
        BuiltinOptionsRef::SpaceToDepthOptions(_) => 19,
        BuiltinOptionsRef::EmbeddingLookupSparseOptions(_) => 20,
        BuiltinOptionsRef::MulOptions(_) => 21,
        BuiltinOptionsRef::PadOptions(_) => 22,
        BuiltinOptionsRef::GatherOptions(_) => 23,
        BuiltinOptionsRef::BatchToSpaceNdOptions(_) => 24,
        BuiltinOptionsRef::SpaceToBatchNdOptions(_) => 25,
        BuiltinOptionsRef::TransposeOptions(_) => 26,
        BuiltinOptionsRef::ReducerOptions(_) => 27,
        BuiltinOptionsRef::SubOptions(_) => 28,
        BuiltinOptionsRef::DivOptions(_) => 29,
        BuiltinOptionsRef::SqueezeOptions(_) => 30,
        BuiltinOptionsRef::SequenceRnnOptions(_) => 31,
        BuiltinOptionsRef::StridedSliceOptions(_) => 32,
        BuiltinOptionsRef::ExpOptions(_) => 33,
        BuiltinOptionsRef::TopKv2Options(_) => 34,
        BuiltinOptionsRef::SplitOptions(_) => 35,
        BuiltinOptionsRef::LogSoftmaxOptions(_) => 36,
        BuiltinOptionsRef::CastOptions(_) => 37,
        BuiltinOptionsRef::DequantizeOptions(_) => 38,
        BuiltinOptionsRef::MaximumMinimumOptions(_) => 39,
        BuiltinOptionsRef::ArgMaxOptions(_) => 40,
        BuiltinOptionsRef::LessOptions(_) => 41,
        BuiltinOptionsRef::NegOptions(_) => 42,
        BuiltinOptionsRef::PadV2Options(_) => 43,
        BuiltinOptionsRef::GreaterOptions(_) => 44,
        BuiltinOptionsRef::GreaterEqualOptions(_) => 45,
        BuiltinOptionsRef::LessEqualOptions(_) => 46,
        BuiltinOptionsRef::SelectOptions(_) => 47,
        BuiltinOptionsRef::SliceOptions(_) => 48,
        BuiltinOptionsRef::TransposeConvOptions(_) => 49,
        BuiltinOptionsRef::SparseToDenseOptions(_) => 50,
        BuiltinOptionsRef::TileOptions(_) => 51,
        BuiltinOptionsRef::ExpandDimsOptions(_) => 52,
        BuiltinOptionsRef::EqualOptions(_) => 53,
        BuiltinOptionsRef::NotEqualOptions(_) => 54,
        BuiltinOptionsRef::ShapeOptions(_) => 55,
        BuiltinOptionsRef::PowOptions(_) => 56,
        BuiltinOptionsRef::ArgMinOptions(_) => 57,
        BuiltinOptionsRef::FakeQuantOptions(_) => 58,
        BuiltinOptionsRef::PackOptions(_) => 59,
        BuiltinOptionsRef::LogicalOrOptions(_) => 60,
        BuiltinOptionsRef::OneHotOptions(_) => 61,
        BuiltinOptionsRef::LogicalAndOptions(_) => 62,
        BuiltinOptionsRef::LogicalNotOptions(_) => 63,
        BuiltinOptionsRef::UnpackOptions(_) => 64,
        BuiltinOptionsRef::FloorDivOptions(_) => 65,
        BuiltinOptionsRef::SquareOptions(_) => 66,
        BuiltinOptionsRef::ZerosLikeOptions(_) => 67,
        BuiltinOptionsRef::FillOptions(_) => 68,
        BuiltinOptionsRef::BidirectionalSequenceLstmOptions(_) => 69,
        BuiltinOptionsRef::BidirectionalSequenceRnnOptions(_) => 70,
        BuiltinOptionsRef::UnidirectionalSequenceLstmOptions(_) => 71,
        BuiltinOptionsRef::FloorModOptions(_) => 72,
        BuiltinOptionsRef::RangeOptions(_) => 73,
        BuiltinOptionsRef::ResizeNearestNeighborOptions(_) => 74,
        BuiltinOptionsRef::LeakyReluOptions(_) => 75,
        BuiltinOptionsRef::SquaredDifferenceOptions(_) => 76,
        BuiltinOptionsRef::MirrorPadOptions(_) => 77,
        BuiltinOptionsRef::AbsOptions(_) => 78,
        BuiltinOptionsRef::SplitVOptions(_) => 79,
        BuiltinOptionsRef::UniqueOptions(_) => 80,
        BuiltinOptionsRef::ReverseV2Options(_) => 81,
        BuiltinOptionsRef::AddNOptions(_) => 82,
        BuiltinOptionsRef::GatherNdOptions(_) => 83,
        BuiltinOptionsRef::CosOptions(_) => 84,
        BuiltinOptionsRef::WhereOptions(_) => 85,
        BuiltinOptionsRef::RankOptions(_) => 86,
        BuiltinOptionsRef::ReverseSequenceOptions(_) => 87,
        BuiltinOptionsRef::MatrixDiagOptions(_) => 88,
        BuiltinOptionsRef::QuantizeOptions(_) => 89,
        BuiltinOptionsRef::MatrixSetDiagOptions(_) => 90,
        BuiltinOptionsRef::HardSwishOptions(_) => 91,
        BuiltinOptionsRef::IfOptions(_) => 92,
        BuiltinOptionsRef::WhileOptions(_) => 93,
        BuiltinOptionsRef::DepthToSpaceOptions(_) => 94,
        BuiltinOptionsRef::NonMaxSuppressionV4Options(_) => 95,
        BuiltinOptionsRef::NonMaxSuppressionV5Options(_) => 96,
        BuiltinOptionsRef::ScatterNdOptions(_) => 97,
        BuiltinOptionsRef::SelectV2Options(_) => 98,
        BuiltinOptionsRef::DensifyOptions(_) => 99,
        BuiltinOptionsRef::SegmentSumOptions(_) => 100,
        BuiltinOptionsRef::BatchMatMulOptions(_) => 101,
        BuiltinOptionsRef::CumsumOptions(_) => 102,
        BuiltinOptionsRef::CallOnceOptions(_) => 103,
        BuiltinOptionsRef::BroadcastToOptions(_) => 104,
        BuiltinOptionsRef::Rfft2dOptions(_) => 105,
        BuiltinOptionsRef::Conv3DOptions(_) => 106,
        BuiltinOptionsRef::HashtableOptions(_) => 107,
        BuiltinOptionsRef::HashtableFindOptions(_) => 108,
        BuiltinOptionsRef::HashtableImportOptions(_) => 109,
        BuiltinOptionsRef::HashtableSizeOptions(_) => 110,
        BuiltinOptionsRef::VarHandleOptions(_) => 111,
        BuiltinOptionsRef::ReadVariableOptions(_) => 112,
        BuiltinOptionsRef::AssignVariableOptions(_) => 113,
        BuiltinOptionsRef::RandomOptions(_) => 114,
        BuiltinOptionsRef::BucketizeOptions(_) => 115,
        BuiltinOptionsRef::GeluOptions(_) => 116,
        BuiltinOptionsRef::DynamicUpdateSliceOptions(_) => 117,
        BuiltinOptionsRef::UnsortedSegmentProdOptions(_) => 118,
        BuiltinOptionsRef::UnsortedSegmentMaxOptions(_) => 119,
        BuiltinOptionsRef::UnsortedSegmentMinOptions(_) => 120,
        BuiltinOptionsRef::UnsortedSegmentSumOptions(_) => 121,
        BuiltinOptionsRef::ATan2Options(_) => 122,
        BuiltinOptionsRef::SignOptions(_) => 123,
        BuiltinOptionsRef::BitcastOptions(_) => 124,
        BuiltinOptionsRef::BitwiseXorOptions(_) => 125,
        BuiltinOptionsRef::RightShiftOptions(_) => 126,
    }
}
