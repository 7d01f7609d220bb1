//! Operator codes: the format's `BuiltinOperator` numbers and their names.

use core::fmt;

/// A TFLite builtin operator code (`BuiltinOperator`, an `int32` in the file).
///
/// A newtype rather than an enum so that a code newer than this crate still
/// parses and is shown by number (`BUILTIN_OP_250`); the runtime rejects
/// what it cannot run, naming it with [`BuiltinOp::name`].
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct BuiltinOp(pub i32);

/// The operator of an [`crate::Operator`]: a builtin code or a custom op name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OpKind<'a> {
    /// A builtin operator (never [`BuiltinOp::CUSTOM`]).
    Builtin(BuiltinOp),
    /// A custom operator (`BuiltinOperator` CUSTOM), by its `custom_code`.
    Custom(&'a str),
}

impl OpKind<'_> {
    /// The builtin code, or `None` for a custom operator.
    pub fn builtin(&self) -> Option<BuiltinOp> {
        match *self {
            OpKind::Builtin(op) => Some(op),
            OpKind::Custom(_) => None,
        }
    }
}

impl fmt::Display for OpKind<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OpKind::Builtin(op) => write!(f, "{op}"),
            OpKind::Custom(name) => write!(f, "CUSTOM({name})"),
        }
    }
}

/// `BuiltinOperator` names, indexed by code (0 ..= 209).
const NAMES: [&str; 210] = [
    "ADD",
    "AVERAGE_POOL_2D",
    "CONCATENATION",
    "CONV_2D",
    "DEPTHWISE_CONV_2D",
    "DEPTH_TO_SPACE",
    "DEQUANTIZE",
    "EMBEDDING_LOOKUP",
    "FLOOR",
    "FULLY_CONNECTED",
    "HASHTABLE_LOOKUP",
    "L2_NORMALIZATION",
    "L2_POOL_2D",
    "LOCAL_RESPONSE_NORMALIZATION",
    "LOGISTIC",
    "LSH_PROJECTION",
    "LSTM",
    "MAX_POOL_2D",
    "MUL",
    "RELU",
    "RELU_N1_TO_1",
    "RELU6",
    "RESHAPE",
    "RESIZE_BILINEAR",
    "RNN",
    "SOFTMAX",
    "SPACE_TO_DEPTH",
    "SVDF",
    "TANH",
    "CONCAT_EMBEDDINGS",
    "SKIP_GRAM",
    "CALL",
    "CUSTOM",
    "EMBEDDING_LOOKUP_SPARSE",
    "PAD",
    "UNIDIRECTIONAL_SEQUENCE_RNN",
    "GATHER",
    "BATCH_TO_SPACE_ND",
    "SPACE_TO_BATCH_ND",
    "TRANSPOSE",
    "MEAN",
    "SUB",
    "DIV",
    "SQUEEZE",
    "UNIDIRECTIONAL_SEQUENCE_LSTM",
    "STRIDED_SLICE",
    "BIDIRECTIONAL_SEQUENCE_RNN",
    "EXP",
    "TOPK_V2",
    "SPLIT",
    "LOG_SOFTMAX",
    "DELEGATE",
    "BIDIRECTIONAL_SEQUENCE_LSTM",
    "CAST",
    "PRELU",
    "MAXIMUM",
    "ARG_MAX",
    "MINIMUM",
    "LESS",
    "NEG",
    "PADV2",
    "GREATER",
    "GREATER_EQUAL",
    "LESS_EQUAL",
    "SELECT",
    "SLICE",
    "SIN",
    "TRANSPOSE_CONV",
    "SPARSE_TO_DENSE",
    "TILE",
    "EXPAND_DIMS",
    "EQUAL",
    "NOT_EQUAL",
    "LOG",
    "SUM",
    "SQRT",
    "RSQRT",
    "SHAPE",
    "POW",
    "ARG_MIN",
    "FAKE_QUANT",
    "REDUCE_PROD",
    "REDUCE_MAX",
    "PACK",
    "LOGICAL_OR",
    "ONE_HOT",
    "LOGICAL_AND",
    "LOGICAL_NOT",
    "UNPACK",
    "REDUCE_MIN",
    "FLOOR_DIV",
    "REDUCE_ANY",
    "SQUARE",
    "ZEROS_LIKE",
    "FILL",
    "FLOOR_MOD",
    "RANGE",
    "RESIZE_NEAREST_NEIGHBOR",
    "LEAKY_RELU",
    "SQUARED_DIFFERENCE",
    "MIRROR_PAD",
    "ABS",
    "SPLIT_V",
    "UNIQUE",
    "CEIL",
    "REVERSE_V2",
    "ADD_N",
    "GATHER_ND",
    "COS",
    "WHERE",
    "RANK",
    "ELU",
    "REVERSE_SEQUENCE",
    "MATRIX_DIAG",
    "QUANTIZE",
    "MATRIX_SET_DIAG",
    "ROUND",
    "HARD_SWISH",
    "IF",
    "WHILE",
    "NON_MAX_SUPPRESSION_V4",
    "NON_MAX_SUPPRESSION_V5",
    "SCATTER_ND",
    "SELECT_V2",
    "DENSIFY",
    "SEGMENT_SUM",
    "BATCH_MATMUL",
    "PLACEHOLDER_FOR_GREATER_OP_CODES",
    "CUMSUM",
    "CALL_ONCE",
    "BROADCAST_TO",
    "RFFT2D",
    "CONV_3D",
    "IMAG",
    "REAL",
    "COMPLEX_ABS",
    "HASHTABLE",
    "HASHTABLE_FIND",
    "HASHTABLE_IMPORT",
    "HASHTABLE_SIZE",
    "REDUCE_ALL",
    "CONV_3D_TRANSPOSE",
    "VAR_HANDLE",
    "READ_VARIABLE",
    "ASSIGN_VARIABLE",
    "BROADCAST_ARGS",
    "RANDOM_STANDARD_NORMAL",
    "BUCKETIZE",
    "RANDOM_UNIFORM",
    "MULTINOMIAL",
    "GELU",
    "DYNAMIC_UPDATE_SLICE",
    "RELU_0_TO_1",
    "UNSORTED_SEGMENT_PROD",
    "UNSORTED_SEGMENT_MAX",
    "UNSORTED_SEGMENT_SUM",
    "ATAN2",
    "UNSORTED_SEGMENT_MIN",
    "SIGN",
    "BITCAST",
    "BITWISE_XOR",
    "RIGHT_SHIFT",
    "STABLEHLO_LOGISTIC",
    "STABLEHLO_ADD",
    "STABLEHLO_DIVIDE",
    "STABLEHLO_MULTIPLY",
    "STABLEHLO_MAXIMUM",
    "STABLEHLO_RESHAPE",
    "STABLEHLO_CLAMP",
    "STABLEHLO_CONCATENATE",
    "STABLEHLO_BROADCAST_IN_DIM",
    "STABLEHLO_CONVOLUTION",
    "STABLEHLO_SLICE",
    "STABLEHLO_CUSTOM_CALL",
    "STABLEHLO_REDUCE",
    "STABLEHLO_ABS",
    "STABLEHLO_AND",
    "STABLEHLO_COSINE",
    "STABLEHLO_EXPONENTIAL",
    "STABLEHLO_FLOOR",
    "STABLEHLO_LOG",
    "STABLEHLO_MINIMUM",
    "STABLEHLO_NEGATE",
    "STABLEHLO_OR",
    "STABLEHLO_POWER",
    "STABLEHLO_REMAINDER",
    "STABLEHLO_RSQRT",
    "STABLEHLO_SELECT",
    "STABLEHLO_SUBTRACT",
    "STABLEHLO_TANH",
    "STABLEHLO_SCATTER",
    "STABLEHLO_COMPARE",
    "STABLEHLO_CONVERT",
    "STABLEHLO_DYNAMIC_SLICE",
    "STABLEHLO_DYNAMIC_UPDATE_SLICE",
    "STABLEHLO_PAD",
    "STABLEHLO_IOTA",
    "STABLEHLO_DOT_GENERAL",
    "STABLEHLO_REDUCE_WINDOW",
    "STABLEHLO_SORT",
    "STABLEHLO_WHILE",
    "STABLEHLO_GATHER",
    "STABLEHLO_TRANSPOSE",
    "DILATE",
    "STABLEHLO_RNG_BIT_GENERATOR",
    "REDUCE_WINDOW",
    "STABLEHLO_COMPOSITE",
    "STABLEHLO_SHIFT_LEFT",
    "STABLEHLO_CBRT",
    "STABLEHLO_CASE",
];

#[allow(missing_docs)]
impl BuiltinOp {
    pub const ADD: Self = Self(0);
    pub const AVERAGE_POOL_2D: Self = Self(1);
    pub const CONCATENATION: Self = Self(2);
    pub const CONV_2D: Self = Self(3);
    pub const DEPTHWISE_CONV_2D: Self = Self(4);
    pub const DEPTH_TO_SPACE: Self = Self(5);
    pub const DEQUANTIZE: Self = Self(6);
    pub const EMBEDDING_LOOKUP: Self = Self(7);
    pub const FLOOR: Self = Self(8);
    pub const FULLY_CONNECTED: Self = Self(9);
    pub const HASHTABLE_LOOKUP: Self = Self(10);
    pub const L2_NORMALIZATION: Self = Self(11);
    pub const L2_POOL_2D: Self = Self(12);
    pub const LOCAL_RESPONSE_NORMALIZATION: Self = Self(13);
    pub const LOGISTIC: Self = Self(14);
    pub const LSH_PROJECTION: Self = Self(15);
    pub const LSTM: Self = Self(16);
    pub const MAX_POOL_2D: Self = Self(17);
    pub const MUL: Self = Self(18);
    pub const RELU: Self = Self(19);
    pub const RELU_N1_TO_1: Self = Self(20);
    pub const RELU6: Self = Self(21);
    pub const RESHAPE: Self = Self(22);
    pub const RESIZE_BILINEAR: Self = Self(23);
    pub const RNN: Self = Self(24);
    pub const SOFTMAX: Self = Self(25);
    pub const SPACE_TO_DEPTH: Self = Self(26);
    pub const SVDF: Self = Self(27);
    pub const TANH: Self = Self(28);
    pub const CONCAT_EMBEDDINGS: Self = Self(29);
    pub const SKIP_GRAM: Self = Self(30);
    pub const CALL: Self = Self(31);
    pub const CUSTOM: Self = Self(32);
    pub const EMBEDDING_LOOKUP_SPARSE: Self = Self(33);
    pub const PAD: Self = Self(34);
    pub const UNIDIRECTIONAL_SEQUENCE_RNN: Self = Self(35);
    pub const GATHER: Self = Self(36);
    pub const BATCH_TO_SPACE_ND: Self = Self(37);
    pub const SPACE_TO_BATCH_ND: Self = Self(38);
    pub const TRANSPOSE: Self = Self(39);
    pub const MEAN: Self = Self(40);
    pub const SUB: Self = Self(41);
    pub const DIV: Self = Self(42);
    pub const SQUEEZE: Self = Self(43);
    pub const UNIDIRECTIONAL_SEQUENCE_LSTM: Self = Self(44);
    pub const STRIDED_SLICE: Self = Self(45);
    pub const BIDIRECTIONAL_SEQUENCE_RNN: Self = Self(46);
    pub const EXP: Self = Self(47);
    pub const TOPK_V2: Self = Self(48);
    pub const SPLIT: Self = Self(49);
    pub const LOG_SOFTMAX: Self = Self(50);
    pub const DELEGATE: Self = Self(51);
    pub const BIDIRECTIONAL_SEQUENCE_LSTM: Self = Self(52);
    pub const CAST: Self = Self(53);
    pub const PRELU: Self = Self(54);
    pub const MAXIMUM: Self = Self(55);
    pub const ARG_MAX: Self = Self(56);
    pub const MINIMUM: Self = Self(57);
    pub const LESS: Self = Self(58);
    pub const NEG: Self = Self(59);
    pub const PADV2: Self = Self(60);
    pub const GREATER: Self = Self(61);
    pub const GREATER_EQUAL: Self = Self(62);
    pub const LESS_EQUAL: Self = Self(63);
    pub const SELECT: Self = Self(64);
    pub const SLICE: Self = Self(65);
    pub const SIN: Self = Self(66);
    pub const TRANSPOSE_CONV: Self = Self(67);
    pub const SPARSE_TO_DENSE: Self = Self(68);
    pub const TILE: Self = Self(69);
    pub const EXPAND_DIMS: Self = Self(70);
    pub const EQUAL: Self = Self(71);
    pub const NOT_EQUAL: Self = Self(72);
    pub const LOG: Self = Self(73);
    pub const SUM: Self = Self(74);
    pub const SQRT: Self = Self(75);
    pub const RSQRT: Self = Self(76);
    pub const SHAPE: Self = Self(77);
    pub const POW: Self = Self(78);
    pub const ARG_MIN: Self = Self(79);
    pub const FAKE_QUANT: Self = Self(80);
    pub const REDUCE_PROD: Self = Self(81);
    pub const REDUCE_MAX: Self = Self(82);
    pub const PACK: Self = Self(83);
    pub const LOGICAL_OR: Self = Self(84);
    pub const ONE_HOT: Self = Self(85);
    pub const LOGICAL_AND: Self = Self(86);
    pub const LOGICAL_NOT: Self = Self(87);
    pub const UNPACK: Self = Self(88);
    pub const REDUCE_MIN: Self = Self(89);
    pub const FLOOR_DIV: Self = Self(90);
    pub const REDUCE_ANY: Self = Self(91);
    pub const SQUARE: Self = Self(92);
    pub const ZEROS_LIKE: Self = Self(93);
    pub const FILL: Self = Self(94);
    pub const FLOOR_MOD: Self = Self(95);
    pub const RANGE: Self = Self(96);
    pub const RESIZE_NEAREST_NEIGHBOR: Self = Self(97);
    pub const LEAKY_RELU: Self = Self(98);
    pub const SQUARED_DIFFERENCE: Self = Self(99);
    pub const MIRROR_PAD: Self = Self(100);
    pub const ABS: Self = Self(101);
    pub const SPLIT_V: Self = Self(102);
    pub const UNIQUE: Self = Self(103);
    pub const CEIL: Self = Self(104);
    pub const REVERSE_V2: Self = Self(105);
    pub const ADD_N: Self = Self(106);
    pub const GATHER_ND: Self = Self(107);
    pub const COS: Self = Self(108);
    pub const WHERE: Self = Self(109);
    pub const RANK: Self = Self(110);
    pub const ELU: Self = Self(111);
    pub const REVERSE_SEQUENCE: Self = Self(112);
    pub const MATRIX_DIAG: Self = Self(113);
    pub const QUANTIZE: Self = Self(114);
    pub const MATRIX_SET_DIAG: Self = Self(115);
    pub const ROUND: Self = Self(116);
    pub const HARD_SWISH: Self = Self(117);
    pub const IF: Self = Self(118);
    pub const WHILE: Self = Self(119);
    pub const NON_MAX_SUPPRESSION_V4: Self = Self(120);
    pub const NON_MAX_SUPPRESSION_V5: Self = Self(121);
    pub const SCATTER_ND: Self = Self(122);
    pub const SELECT_V2: Self = Self(123);
    pub const DENSIFY: Self = Self(124);
    pub const SEGMENT_SUM: Self = Self(125);
    pub const BATCH_MATMUL: Self = Self(126);
    pub const PLACEHOLDER_FOR_GREATER_OP_CODES: Self = Self(127);
    pub const CUMSUM: Self = Self(128);
    pub const CALL_ONCE: Self = Self(129);
    pub const BROADCAST_TO: Self = Self(130);
    pub const RFFT2D: Self = Self(131);
    pub const CONV_3D: Self = Self(132);
    pub const IMAG: Self = Self(133);
    pub const REAL: Self = Self(134);
    pub const COMPLEX_ABS: Self = Self(135);
    pub const HASHTABLE: Self = Self(136);
    pub const HASHTABLE_FIND: Self = Self(137);
    pub const HASHTABLE_IMPORT: Self = Self(138);
    pub const HASHTABLE_SIZE: Self = Self(139);
    pub const REDUCE_ALL: Self = Self(140);
    pub const CONV_3D_TRANSPOSE: Self = Self(141);
    pub const VAR_HANDLE: Self = Self(142);
    pub const READ_VARIABLE: Self = Self(143);
    pub const ASSIGN_VARIABLE: Self = Self(144);
    pub const BROADCAST_ARGS: Self = Self(145);
    pub const RANDOM_STANDARD_NORMAL: Self = Self(146);
    pub const BUCKETIZE: Self = Self(147);
    pub const RANDOM_UNIFORM: Self = Self(148);
    pub const MULTINOMIAL: Self = Self(149);
    pub const GELU: Self = Self(150);
    pub const DYNAMIC_UPDATE_SLICE: Self = Self(151);
    pub const RELU_0_TO_1: Self = Self(152);
    pub const UNSORTED_SEGMENT_PROD: Self = Self(153);
    pub const UNSORTED_SEGMENT_MAX: Self = Self(154);
    pub const UNSORTED_SEGMENT_SUM: Self = Self(155);
    pub const ATAN2: Self = Self(156);
    pub const UNSORTED_SEGMENT_MIN: Self = Self(157);
    pub const SIGN: Self = Self(158);
    pub const BITCAST: Self = Self(159);
    pub const BITWISE_XOR: Self = Self(160);
    pub const RIGHT_SHIFT: Self = Self(161);
    pub const STABLEHLO_LOGISTIC: Self = Self(162);
    pub const STABLEHLO_ADD: Self = Self(163);
    pub const STABLEHLO_DIVIDE: Self = Self(164);
    pub const STABLEHLO_MULTIPLY: Self = Self(165);
    pub const STABLEHLO_MAXIMUM: Self = Self(166);
    pub const STABLEHLO_RESHAPE: Self = Self(167);
    pub const STABLEHLO_CLAMP: Self = Self(168);
    pub const STABLEHLO_CONCATENATE: Self = Self(169);
    pub const STABLEHLO_BROADCAST_IN_DIM: Self = Self(170);
    pub const STABLEHLO_CONVOLUTION: Self = Self(171);
    pub const STABLEHLO_SLICE: Self = Self(172);
    pub const STABLEHLO_CUSTOM_CALL: Self = Self(173);
    pub const STABLEHLO_REDUCE: Self = Self(174);
    pub const STABLEHLO_ABS: Self = Self(175);
    pub const STABLEHLO_AND: Self = Self(176);
    pub const STABLEHLO_COSINE: Self = Self(177);
    pub const STABLEHLO_EXPONENTIAL: Self = Self(178);
    pub const STABLEHLO_FLOOR: Self = Self(179);
    pub const STABLEHLO_LOG: Self = Self(180);
    pub const STABLEHLO_MINIMUM: Self = Self(181);
    pub const STABLEHLO_NEGATE: Self = Self(182);
    pub const STABLEHLO_OR: Self = Self(183);
    pub const STABLEHLO_POWER: Self = Self(184);
    pub const STABLEHLO_REMAINDER: Self = Self(185);
    pub const STABLEHLO_RSQRT: Self = Self(186);
    pub const STABLEHLO_SELECT: Self = Self(187);
    pub const STABLEHLO_SUBTRACT: Self = Self(188);
    pub const STABLEHLO_TANH: Self = Self(189);
    pub const STABLEHLO_SCATTER: Self = Self(190);
    pub const STABLEHLO_COMPARE: Self = Self(191);
    pub const STABLEHLO_CONVERT: Self = Self(192);
    pub const STABLEHLO_DYNAMIC_SLICE: Self = Self(193);
    pub const STABLEHLO_DYNAMIC_UPDATE_SLICE: Self = Self(194);
    pub const STABLEHLO_PAD: Self = Self(195);
    pub const STABLEHLO_IOTA: Self = Self(196);
    pub const STABLEHLO_DOT_GENERAL: Self = Self(197);
    pub const STABLEHLO_REDUCE_WINDOW: Self = Self(198);
    pub const STABLEHLO_SORT: Self = Self(199);
    pub const STABLEHLO_WHILE: Self = Self(200);
    pub const STABLEHLO_GATHER: Self = Self(201);
    pub const STABLEHLO_TRANSPOSE: Self = Self(202);
    pub const DILATE: Self = Self(203);
    pub const STABLEHLO_RNG_BIT_GENERATOR: Self = Self(204);
    pub const REDUCE_WINDOW: Self = Self(205);
    pub const STABLEHLO_COMPOSITE: Self = Self(206);
    pub const STABLEHLO_SHIFT_LEFT: Self = Self(207);
    pub const STABLEHLO_CBRT: Self = Self(208);
    pub const STABLEHLO_CASE: Self = Self(209);
}

impl BuiltinOp {
    /// The format's name of this code (`"FULLY_CONNECTED"`), or `None` for a
    /// code this crate does not know.
    pub fn name(self) -> Option<&'static str> {
        usize::try_from(self.0)
            .ok()
            .and_then(|index| NAMES.get(index).copied())
    }

    /// The code of a format name (`"SOFTMAX"` gives [`BuiltinOp::SOFTMAX`]).
    pub fn from_name(name: &str) -> Option<BuiltinOp> {
        NAMES
            .iter()
            .position(|&known| known == name)
            .map(|index| BuiltinOp(index as i32))
    }
}

impl fmt::Display for BuiltinOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(name) => f.write_str(name),
            None => write!(f, "BUILTIN_OP_{}", self.0),
        }
    }
}

impl fmt::Debug for BuiltinOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{self}({})", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_codes_agree_with_the_format() {
        // Spot checks of codes the runtime dispatches on.
        assert_eq!(BuiltinOp::ADD.0, 0);
        assert_eq!(BuiltinOp::CONV_2D.0, 3);
        assert_eq!(BuiltinOp::FULLY_CONNECTED.0, 9);
        assert_eq!(BuiltinOp::SOFTMAX.0, 25);
        assert_eq!(BuiltinOp::CUSTOM.0, 32);
        assert_eq!(BuiltinOp::MEAN.0, 40);
        assert_eq!(BuiltinOp::LOG_SOFTMAX.0, 50);
        assert_eq!(BuiltinOp::QUANTIZE.0, 114);
        assert_eq!(BuiltinOp::BATCH_MATMUL.0, 126);
        assert_eq!(BuiltinOp::PLACEHOLDER_FOR_GREATER_OP_CODES.0, 127);
        assert_eq!(BuiltinOp::GELU.0, 150);
        assert_eq!(BuiltinOp::STABLEHLO_CASE.0, 209);
        for (code, name) in NAMES.iter().enumerate() {
            assert_eq!(BuiltinOp(code as i32).name(), Some(*name));
            assert_eq!(BuiltinOp::from_name(name), Some(BuiltinOp(code as i32)));
        }
    }

    #[test]
    fn unknown_codes_are_named_by_number() {
        assert_eq!(BuiltinOp(210).name(), None);
        assert_eq!(BuiltinOp(-3).name(), None);
        assert_eq!(BuiltinOp(210).to_string(), "BUILTIN_OP_210");
        assert_eq!(BuiltinOp(-3).to_string(), "BUILTIN_OP_-3");
        assert_eq!(
            BuiltinOp::DEPTHWISE_CONV_2D.to_string(),
            "DEPTHWISE_CONV_2D"
        );
        assert_eq!(format!("{:?}", BuiltinOp::TANH), "TANH(28)");
    }
}
