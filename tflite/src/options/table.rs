//! An operator's options table as the generated code decodes it: every
//! member of both options unions, with no decoder written by hand.

use core::fmt;

use crate::generated::tflite as fb;
use crate::op::BuiltinOp;

/// Which of the format's two options unions a table belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OptionsUnion {
    /// `BuiltinOptions` (`Operator.builtin_options`).
    Builtin,
    /// `BuiltinOptions2` (`Operator.builtin_options_2`: StableHLO ops,
    /// DILATE, ...), for operators added after the first union was full.
    Builtin2,
}

/// An operator's builtin options table, decoded by the generated code
/// ([`crate::schema`]): the runtime matches on the generated tables, so an
/// operator needs no decoder of its own here.
///
/// Enum-typed fields hold the format's integer code (the schema declares
/// them so); [`super::FusedActivation::from_code`] and
/// [`super::WeightsFormat::from_code`] name them, keeping codes this crate
/// does not know for the runtime to refuse. A field the file leaves out
/// reads as the schema's default, as TFLite reads it.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum Options {
    /// The operator has no options table. TFLite then uses zero / false
    /// for every option. (LOGISTIC and TANH have no table in the format.)
    None,
    /// A member of `BuiltinOptions`.
    Builtin(fb::BuiltinOptions),
    /// A member of `BuiltinOptions2`.
    Builtin2(fb::BuiltinOptions2),
    /// A member newer than this crate's schema: its union and tag. The rest
    /// of the operator is read; the runtime refuses it by name.
    Unknown {
        /// The union it is a member of.
        union: OptionsUnion,
        /// The union tag.
        tag: u8,
    },
}

impl Options {
    /// The union the table belongs to, `None` without a table.
    pub fn union(&self) -> Option<OptionsUnion> {
        match self {
            Options::None => None,
            Options::Builtin(_) => Some(OptionsUnion::Builtin),
            Options::Builtin2(_) => Some(OptionsUnion::Builtin2),
            Options::Unknown { union, .. } => Some(*union),
        }
    }

    /// The union tag (the table's position in its union, from 1); 0 for
    /// no table.
    pub fn tag(&self) -> u8 {
        match self {
            Options::None => 0,
            Options::Builtin(table) => builtin_tag(table),
            Options::Builtin2(table) => builtin2_tag(table),
            Options::Unknown { tag, .. } => *tag,
        }
    }

    /// The format's name of the table (`"FullyConnectedOptions"`, `"NONE"`
    /// for no table), or `None` for a member this crate does not know.
    pub fn table_name(&self) -> Option<&'static str> {
        let names: &[&'static str] = match self.union() {
            None => return Some("NONE"),
            Some(OptionsUnion::Builtin) => &OPTIONS_NAMES,
            Some(OptionsUnion::Builtin2) => &OPTIONS2_NAMES,
        };
        names.get(usize::from(self.tag()).checked_sub(1)?).copied()
    }

    /// The operator a table belongs to, for the tables of the operators
    /// qneon runs (an operator carrying another's table is refused); `None`
    /// for the others, which are not checked.
    pub(crate) fn owner(&self) -> Option<BuiltinOp> {
        let Options::Builtin(table) = self else {
            return None;
        };
        Some(match table {
            fb::BuiltinOptions::FullyConnectedOptions(_) => BuiltinOp::FULLY_CONNECTED,
            fb::BuiltinOptions::AddOptions(_) => BuiltinOp::ADD,
            fb::BuiltinOptions::SubOptions(_) => BuiltinOp::SUB,
            fb::BuiltinOptions::MulOptions(_) => BuiltinOp::MUL,
            fb::BuiltinOptions::SoftmaxOptions(_) => BuiltinOp::SOFTMAX,
            fb::BuiltinOptions::LogSoftmaxOptions(_) => BuiltinOp::LOG_SOFTMAX,
            fb::BuiltinOptions::ReshapeOptions(_) => BuiltinOp::RESHAPE,
            fb::BuiltinOptions::TransposeOptions(_) => BuiltinOp::TRANSPOSE,
            fb::BuiltinOptions::BatchMatMulOptions(_) => BuiltinOp::BATCH_MATMUL,
            fb::BuiltinOptions::GatherOptions(_) => BuiltinOp::GATHER,
            fb::BuiltinOptions::StridedSliceOptions(_) => BuiltinOp::STRIDED_SLICE,
            fb::BuiltinOptions::PadOptions(_) => BuiltinOp::PAD,
            fb::BuiltinOptions::ConcatenationOptions(_) => BuiltinOp::CONCATENATION,
            fb::BuiltinOptions::SplitOptions(_) => BuiltinOp::SPLIT,
            fb::BuiltinOptions::CastOptions(_) => BuiltinOp::CAST,
            fb::BuiltinOptions::QuantizeOptions(_) => BuiltinOp::QUANTIZE,
            fb::BuiltinOptions::DequantizeOptions(_) => BuiltinOp::DEQUANTIZE,
            _ => return None,
        })
    }
}

impl fmt::Display for Options {
    /// The table's fields as the generated code prints them:
    /// `FullyConnectedOptions { fused_activation_function: 1, .. }`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Options::None => f.write_str("no options"),
            Options::Builtin(table) => write_table(f, format_args!("{table:?}")),
            Options::Builtin2(table) => write_table(f, format_args!("{table:?}")),
            Options::Unknown { union, tag } => {
                write!(f, "{union:?} options member {tag} (unknown)")
            }
        }
    }
}

/// Writes `Member(Table { .. })` (a generated union's debug text) as
/// `Table { .. }`.
fn write_table(f: &mut fmt::Formatter<'_>, debug: fmt::Arguments<'_>) -> fmt::Result {
    let text = debug.to_string();
    let inner = text
        .split_once('(')
        .and_then(|(_, rest)| rest.strip_suffix(')'))
        .unwrap_or(&text);
    f.write_str(inner)
}

/// The tag of a `BuiltinOptions` member.
fn builtin_tag(table: &fb::BuiltinOptions) -> u8 {
    match table {
        fb::BuiltinOptions::Conv2DOptions(_) => 1,
        fb::BuiltinOptions::DepthwiseConv2DOptions(_) => 2,
        fb::BuiltinOptions::ConcatEmbeddingsOptions(_) => 3,
        fb::BuiltinOptions::LshProjectionOptions(_) => 4,
        fb::BuiltinOptions::Pool2DOptions(_) => 5,
        fb::BuiltinOptions::SvdfOptions(_) => 6,
        fb::BuiltinOptions::RnnOptions(_) => 7,
        fb::BuiltinOptions::FullyConnectedOptions(_) => 8,
        fb::BuiltinOptions::SoftmaxOptions(_) => 9,
        fb::BuiltinOptions::ConcatenationOptions(_) => 10,
        fb::BuiltinOptions::AddOptions(_) => 11,
        fb::BuiltinOptions::L2NormOptions(_) => 12,
        fb::BuiltinOptions::LocalResponseNormalizationOptions(_) => 13,
        fb::BuiltinOptions::LstmOptions(_) => 14,
        fb::BuiltinOptions::ResizeBilinearOptions(_) => 15,
        fb::BuiltinOptions::CallOptions(_) => 16,
        fb::BuiltinOptions::ReshapeOptions(_) => 17,
        fb::BuiltinOptions::SkipGramOptions(_) => 18,
        fb::BuiltinOptions::SpaceToDepthOptions(_) => 19,
        fb::BuiltinOptions::EmbeddingLookupSparseOptions(_) => 20,
        fb::BuiltinOptions::MulOptions(_) => 21,
        fb::BuiltinOptions::PadOptions(_) => 22,
        fb::BuiltinOptions::GatherOptions(_) => 23,
        fb::BuiltinOptions::BatchToSpaceNdOptions(_) => 24,
        fb::BuiltinOptions::SpaceToBatchNdOptions(_) => 25,
        fb::BuiltinOptions::TransposeOptions(_) => 26,
        fb::BuiltinOptions::ReducerOptions(_) => 27,
        fb::BuiltinOptions::SubOptions(_) => 28,
        fb::BuiltinOptions::DivOptions(_) => 29,
        fb::BuiltinOptions::SqueezeOptions(_) => 30,
        fb::BuiltinOptions::SequenceRnnOptions(_) => 31,
        fb::BuiltinOptions::StridedSliceOptions(_) => 32,
        fb::BuiltinOptions::ExpOptions(_) => 33,
        fb::BuiltinOptions::TopKv2Options(_) => 34,
        fb::BuiltinOptions::SplitOptions(_) => 35,
        fb::BuiltinOptions::LogSoftmaxOptions(_) => 36,
        fb::BuiltinOptions::CastOptions(_) => 37,
        fb::BuiltinOptions::DequantizeOptions(_) => 38,
        fb::BuiltinOptions::MaximumMinimumOptions(_) => 39,
        fb::BuiltinOptions::ArgMaxOptions(_) => 40,
        fb::BuiltinOptions::LessOptions(_) => 41,
        fb::BuiltinOptions::NegOptions(_) => 42,
        fb::BuiltinOptions::PadV2Options(_) => 43,
        fb::BuiltinOptions::GreaterOptions(_) => 44,
        fb::BuiltinOptions::GreaterEqualOptions(_) => 45,
        fb::BuiltinOptions::LessEqualOptions(_) => 46,
        fb::BuiltinOptions::SelectOptions(_) => 47,
        fb::BuiltinOptions::SliceOptions(_) => 48,
        fb::BuiltinOptions::TransposeConvOptions(_) => 49,
        fb::BuiltinOptions::SparseToDenseOptions(_) => 50,
        fb::BuiltinOptions::TileOptions(_) => 51,
        fb::BuiltinOptions::ExpandDimsOptions(_) => 52,
        fb::BuiltinOptions::EqualOptions(_) => 53,
        fb::BuiltinOptions::NotEqualOptions(_) => 54,
        fb::BuiltinOptions::ShapeOptions(_) => 55,
        fb::BuiltinOptions::PowOptions(_) => 56,
        fb::BuiltinOptions::ArgMinOptions(_) => 57,
        fb::BuiltinOptions::FakeQuantOptions(_) => 58,
        fb::BuiltinOptions::PackOptions(_) => 59,
        fb::BuiltinOptions::LogicalOrOptions(_) => 60,
        fb::BuiltinOptions::OneHotOptions(_) => 61,
        fb::BuiltinOptions::LogicalAndOptions(_) => 62,
        fb::BuiltinOptions::LogicalNotOptions(_) => 63,
        fb::BuiltinOptions::UnpackOptions(_) => 64,
        fb::BuiltinOptions::FloorDivOptions(_) => 65,
        fb::BuiltinOptions::SquareOptions(_) => 66,
        fb::BuiltinOptions::ZerosLikeOptions(_) => 67,
        fb::BuiltinOptions::FillOptions(_) => 68,
        fb::BuiltinOptions::BidirectionalSequenceLstmOptions(_) => 69,
        fb::BuiltinOptions::BidirectionalSequenceRnnOptions(_) => 70,
        fb::BuiltinOptions::UnidirectionalSequenceLstmOptions(_) => 71,
        fb::BuiltinOptions::FloorModOptions(_) => 72,
        fb::BuiltinOptions::RangeOptions(_) => 73,
        fb::BuiltinOptions::ResizeNearestNeighborOptions(_) => 74,
        fb::BuiltinOptions::LeakyReluOptions(_) => 75,
        fb::BuiltinOptions::SquaredDifferenceOptions(_) => 76,
        fb::BuiltinOptions::MirrorPadOptions(_) => 77,
        fb::BuiltinOptions::AbsOptions(_) => 78,
        fb::BuiltinOptions::SplitVOptions(_) => 79,
        fb::BuiltinOptions::UniqueOptions(_) => 80,
        fb::BuiltinOptions::ReverseV2Options(_) => 81,
        fb::BuiltinOptions::AddNOptions(_) => 82,
        fb::BuiltinOptions::GatherNdOptions(_) => 83,
        fb::BuiltinOptions::CosOptions(_) => 84,
        fb::BuiltinOptions::WhereOptions(_) => 85,
        fb::BuiltinOptions::RankOptions(_) => 86,
        fb::BuiltinOptions::ReverseSequenceOptions(_) => 87,
        fb::BuiltinOptions::MatrixDiagOptions(_) => 88,
        fb::BuiltinOptions::QuantizeOptions(_) => 89,
        fb::BuiltinOptions::MatrixSetDiagOptions(_) => 90,
        fb::BuiltinOptions::HardSwishOptions(_) => 91,
        fb::BuiltinOptions::IfOptions(_) => 92,
        fb::BuiltinOptions::WhileOptions(_) => 93,
        fb::BuiltinOptions::DepthToSpaceOptions(_) => 94,
        fb::BuiltinOptions::NonMaxSuppressionV4Options(_) => 95,
        fb::BuiltinOptions::NonMaxSuppressionV5Options(_) => 96,
        fb::BuiltinOptions::ScatterNdOptions(_) => 97,
        fb::BuiltinOptions::SelectV2Options(_) => 98,
        fb::BuiltinOptions::DensifyOptions(_) => 99,
        fb::BuiltinOptions::SegmentSumOptions(_) => 100,
        fb::BuiltinOptions::BatchMatMulOptions(_) => 101,
        fb::BuiltinOptions::CumsumOptions(_) => 102,
        fb::BuiltinOptions::CallOnceOptions(_) => 103,
        fb::BuiltinOptions::BroadcastToOptions(_) => 104,
        fb::BuiltinOptions::Rfft2dOptions(_) => 105,
        fb::BuiltinOptions::Conv3DOptions(_) => 106,
        fb::BuiltinOptions::HashtableOptions(_) => 107,
        fb::BuiltinOptions::HashtableFindOptions(_) => 108,
        fb::BuiltinOptions::HashtableImportOptions(_) => 109,
        fb::BuiltinOptions::HashtableSizeOptions(_) => 110,
        fb::BuiltinOptions::VarHandleOptions(_) => 111,
        fb::BuiltinOptions::ReadVariableOptions(_) => 112,
        fb::BuiltinOptions::AssignVariableOptions(_) => 113,
        fb::BuiltinOptions::RandomOptions(_) => 114,
        fb::BuiltinOptions::BucketizeOptions(_) => 115,
        fb::BuiltinOptions::GeluOptions(_) => 116,
        fb::BuiltinOptions::DynamicUpdateSliceOptions(_) => 117,
        fb::BuiltinOptions::UnsortedSegmentProdOptions(_) => 118,
        fb::BuiltinOptions::UnsortedSegmentMaxOptions(_) => 119,
        fb::BuiltinOptions::UnsortedSegmentMinOptions(_) => 120,
        fb::BuiltinOptions::UnsortedSegmentSumOptions(_) => 121,
        fb::BuiltinOptions::ATan2Options(_) => 122,
        fb::BuiltinOptions::SignOptions(_) => 123,
        fb::BuiltinOptions::BitcastOptions(_) => 124,
        fb::BuiltinOptions::BitwiseXorOptions(_) => 125,
        fb::BuiltinOptions::RightShiftOptions(_) => 126,
    }
}

/// The tag of a `BuiltinOptions2` member.
fn builtin2_tag(table: &fb::BuiltinOptions2) -> u8 {
    match table {
        fb::BuiltinOptions2::StablehloConcatenateOptions(_) => 1,
        fb::BuiltinOptions2::StablehloBroadcastInDimOptions(_) => 2,
        fb::BuiltinOptions2::StablehloSliceOptions(_) => 3,
        fb::BuiltinOptions2::StablehloConvolutionOptions(_) => 4,
        fb::BuiltinOptions2::StablehloCustomCallOptions(_) => 5,
        fb::BuiltinOptions2::StablehloReduceOptions(_) => 6,
        fb::BuiltinOptions2::StablehloScatterOptions(_) => 7,
        fb::BuiltinOptions2::StablehloCompareOptions(_) => 8,
        fb::BuiltinOptions2::StablehloDynamicSliceOptions(_) => 9,
        fb::BuiltinOptions2::StablehloPadOptions(_) => 10,
        fb::BuiltinOptions2::StablehloIotaOptions(_) => 11,
        fb::BuiltinOptions2::StablehloDotGeneralOptions(_) => 12,
        fb::BuiltinOptions2::StablehloReduceWindowOptions(_) => 13,
        fb::BuiltinOptions2::StablehloSortOptions(_) => 14,
        fb::BuiltinOptions2::StablehloWhileOptions(_) => 15,
        fb::BuiltinOptions2::StablehloGatherOptions(_) => 16,
        fb::BuiltinOptions2::StablehloTransposeOptions(_) => 17,
        fb::BuiltinOptions2::DilateOptions(_) => 18,
        fb::BuiltinOptions2::StablehloRngBitGeneratorOptions(_) => 19,
        fb::BuiltinOptions2::ReduceWindowOptions(_) => 20,
        fb::BuiltinOptions2::StableHloCompositeOptions(_) => 21,
        fb::BuiltinOptions2::StablehloShiftLeftOptions(_) => 22,
        fb::BuiltinOptions2::StablehloCaseOptions(_) => 23,
    }
}

/// The number of `BuiltinOptions2` members this crate's schema declares.
pub(crate) const KNOWN_OPTIONS2_TAGS: u8 = 23;

/// Names of the `BuiltinOptions2` members, at index tag - 1.
const OPTIONS2_NAMES: [&str; KNOWN_OPTIONS2_TAGS as usize] = [
    "StablehloConcatenateOptions",
    "StablehloBroadcastInDimOptions",
    "StablehloSliceOptions",
    "StablehloConvolutionOptions",
    "StablehloCustomCallOptions",
    "StablehloReduceOptions",
    "StablehloScatterOptions",
    "StablehloCompareOptions",
    "StablehloDynamicSliceOptions",
    "StablehloPadOptions",
    "StablehloIotaOptions",
    "StablehloDotGeneralOptions",
    "StablehloReduceWindowOptions",
    "StablehloSortOptions",
    "StablehloWhileOptions",
    "StablehloGatherOptions",
    "StablehloTransposeOptions",
    "DilateOptions",
    "StablehloRngBitGeneratorOptions",
    "ReduceWindowOptions",
    "StableHLOCompositeOptions",
    "StablehloShiftLeftOptions",
    "StablehloCaseOptions",
];

/// The number of `BuiltinOptions` members this crate's schema declares.
pub(crate) const KNOWN_OPTIONS_TAGS: u8 = 126;

/// Names of the `BuiltinOptions` members, at index tag - 1.
pub(super) const OPTIONS_NAMES: [&str; KNOWN_OPTIONS_TAGS as usize] = [
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The members of `union name { .. }` in the schema, in tag order.
    fn union_members(schema: &str, name: &str) -> Vec<String> {
        let start = schema
            .find(&format!("union {name} {{"))
            .unwrap_or_else(|| panic!("union {name} not in the schema"));
        let body = &schema[start..];
        let body = &body[body.find('{').unwrap() + 1..body.find('}').unwrap()];
        body.lines()
            .map(|line| line.split("//").next().unwrap().trim())
            .filter(|member| !member.is_empty())
            .map(|member| member.trim_end_matches(',').to_string())
            .collect()
    }

    #[test]
    fn names_follow_the_schema_unions() {
        let schema = include_str!("../../schema/tflite.fbs");
        let first = union_members(schema, "BuiltinOptions");
        let second = union_members(schema, "BuiltinOptions2");
        assert_eq!(first.len(), usize::from(KNOWN_OPTIONS_TAGS));
        assert_eq!(second.len(), usize::from(KNOWN_OPTIONS2_TAGS));
        assert_eq!(first, OPTIONS_NAMES);
        assert_eq!(second, OPTIONS2_NAMES);
        for (tag, name) in (1..).zip(&first) {
            let unknown = Options::Unknown {
                union: OptionsUnion::Builtin,
                tag,
            };
            // Any member at a known tag is named like the schema's.
            assert_eq!(unknown.table_name(), Some(name.as_str()));
        }
    }

    #[test]
    fn tags_of_generated_members_are_their_schema_positions() {
        let schema = include_str!("../../schema/tflite.fbs");
        let first = union_members(schema, "BuiltinOptions");
        let second = union_members(schema, "BuiltinOptions2");
        // A spread of members, each at the position the schema gives it.
        let members = [
            (
                Options::Builtin(fb::BuiltinOptions::Conv2DOptions(Box::default())),
                "Conv2DOptions",
            ),
            (
                Options::Builtin(fb::BuiltinOptions::LstmOptions(Box::default())),
                "LSTMOptions",
            ),
            (
                Options::Builtin(fb::BuiltinOptions::SvdfOptions(Box::default())),
                "SVDFOptions",
            ),
            (
                Options::Builtin(fb::BuiltinOptions::Pool2DOptions(Box::default())),
                "Pool2DOptions",
            ),
            (
                Options::Builtin(fb::BuiltinOptions::ReducerOptions(Box::default())),
                "ReducerOptions",
            ),
            (
                Options::Builtin(fb::BuiltinOptions::MirrorPadOptions(Box::default())),
                "MirrorPadOptions",
            ),
            (
                Options::Builtin(fb::BuiltinOptions::ResizeNearestNeighborOptions(
                    Box::default(),
                )),
                "ResizeNearestNeighborOptions",
            ),
            (
                Options::Builtin(fb::BuiltinOptions::RightShiftOptions(Box::default())),
                "RightShiftOptions",
            ),
            (
                Options::Builtin2(fb::BuiltinOptions2::StablehloConcatenateOptions(
                    Box::default(),
                )),
                "StablehloConcatenateOptions",
            ),
            (
                Options::Builtin2(fb::BuiltinOptions2::DilateOptions(Box::default())),
                "DilateOptions",
            ),
            (
                Options::Builtin2(fb::BuiltinOptions2::StableHloCompositeOptions(
                    Box::default(),
                )),
                "StableHLOCompositeOptions",
            ),
            (
                Options::Builtin2(fb::BuiltinOptions2::StablehloCaseOptions(Box::default())),
                "StablehloCaseOptions",
            ),
        ];
        for (options, name) in members {
            let names = match options.union() {
                Some(OptionsUnion::Builtin) => &first,
                _ => &second,
            };
            let position = names.iter().position(|member| member == name).unwrap();
            assert_eq!(usize::from(options.tag()), position + 1, "{name}");
            assert_eq!(options.table_name(), Some(name));
        }
    }
}
