//! Why a file was refused, and where in the model.

use core::fmt;

use crate::op::BuiltinOp;

/// The part of the model an error is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Place {
    /// The root table or the file as a whole.
    Model,
    /// Entry `index` of `Model.operator_codes`.
    OperatorCode(usize),
    /// Entry `index` of `Model.buffers`.
    Buffer(usize),
    /// Entry `index` of `Model.metadata`.
    Metadata(usize),
    /// Subgraph `index` (its own fields: inputs, outputs, name).
    Subgraph(usize),
    /// Tensor `tensor` of subgraph `subgraph`.
    Tensor {
        /// Subgraph index.
        subgraph: usize,
        /// Tensor index within the subgraph.
        tensor: usize,
    },
    /// Operator `operator` (execution order) of subgraph `subgraph`.
    Operator {
        /// Subgraph index.
        subgraph: usize,
        /// Operator index within the subgraph.
        operator: usize,
    },
}

impl fmt::Display for Place {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Place::Model => f.write_str("model"),
            Place::OperatorCode(index) => write!(f, "operator code {index}"),
            Place::Buffer(index) => write!(f, "buffer {index}"),
            Place::Metadata(index) => write!(f, "metadata {index}"),
            Place::Subgraph(index) => write!(f, "subgraph {index}"),
            Place::Tensor { subgraph, tensor } => {
                write!(f, "tensor {tensor} of subgraph {subgraph}")
            }
            Place::Operator { subgraph, operator } => {
                write!(f, "operator {operator} of subgraph {subgraph}")
            }
        }
    }
}

/// What is wrong with a tensor's quantization parameters.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum QuantizationProblem {
    /// Scales are given but zero points are not.
    MissingZeroPoints,
    /// The scale and zero point vectors differ in length.
    LengthMismatch {
        /// Number of scales.
        scales: usize,
        /// Number of zero points.
        zero_points: usize,
    },
    /// Per-axis quantization on an axis the tensor does not have.
    AxisOutOfRange {
        /// `quantized_dimension`.
        axis: i32,
        /// The tensor's rank.
        rank: usize,
    },
    /// Per-axis quantization whose scale count is not the axis' size.
    AxisSizeMismatch {
        /// `quantized_dimension`.
        axis: usize,
        /// The size of that axis.
        dim: usize,
        /// Number of scales.
        scales: usize,
    },
}

impl fmt::Display for QuantizationProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            QuantizationProblem::MissingZeroPoints => {
                f.write_str("scales are given without zero points")
            }
            QuantizationProblem::LengthMismatch {
                scales,
                zero_points,
            } => write!(f, "{scales} scales but {zero_points} zero points"),
            QuantizationProblem::AxisOutOfRange { axis, rank } => {
                write!(f, "quantized dimension {axis} of a rank {rank} tensor")
            }
            QuantizationProblem::AxisSizeMismatch { axis, dim, scales } => write!(
                f,
                "{scales} scales for quantized dimension {axis} of size {dim} (must be 1 or {dim})"
            ),
        }
    }
}

/// What is wrong with a FlatBuffer structure ([`Error::Malformed`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Structure {
    /// An offset points outside the file.
    OffsetOutsideFile,
    /// A length (of a vector, string or table) runs past the end of the file.
    PastEndOfFile,
    /// A table's layout (its vtable) is malformed.
    BadVtable,
    /// A string is not UTF-8.
    NotUtf8,
    /// A string has no terminating zero.
    MissingNullTerminator,
    /// Another structural fault reported by the FlatBuffers reader.
    Other,
}

impl fmt::Display for Structure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Structure::OffsetOutsideFile => "offset points outside the file",
            Structure::PastEndOfFile => "length runs past the end of the file",
            Structure::BadVtable => "table layout (vtable) is malformed",
            Structure::NotUtf8 => "string is not UTF-8",
            Structure::MissingNullTerminator => "string has no terminating zero",
            Structure::Other => "malformed",
        })
    }
}

/// A model file that cannot be read safely.
///
/// Every variant says what was wrong and where ([`Place`], the field, the
/// byte offset or the offending values).
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum Error {
    /// The file is shorter than a FlatBuffer header (root offset and identifier).
    FileTooShort {
        /// The file's length in bytes.
        len: usize,
    },
    /// Bytes 4..8 are not the TFLite identifier `TFL3`.
    FileIdentifier {
        /// The four bytes found.
        found: [u8; 4],
    },
    /// `Model.version` is not schema version 3.
    SchemaVersion {
        /// The version found.
        version: u32,
    },
    /// A FlatBuffer structure does not fit in the file: a length runs past
    /// its end, an offset points outside it, a vtable is malformed, or a
    /// string is not terminated UTF-8.
    Malformed {
        /// The model part being read.
        at: Place,
        /// The FlatBuffer table being read (`"Tensor"`).
        table: &'static str,
        /// Its field being read (`"shape"`).
        field: &'static str,
        /// Byte offset of the faulty structure in the file, when known.
        offset: Option<usize>,
        /// What was wrong with it.
        problem: Structure,
    },
    /// A field the model cannot do without is absent.
    MissingField {
        /// The model part being read.
        at: Place,
        /// The field (`"Model.subgraphs"`).
        field: &'static str,
    },
    /// An index (tensor, buffer, operator code, subgraph) is out of range.
    IndexOutOfRange {
        /// The model part holding the index.
        at: Place,
        /// What the index refers to (`"operator input tensor"`).
        what: &'static str,
        /// The index as stored.
        index: i64,
        /// The number of entries it indexes.
        len: usize,
    },
    /// A tensor's shape has a negative dimension.
    NegativeDimension {
        /// The tensor.
        at: Place,
        /// Its shape as stored.
        shape: Vec<i32>,
    },
    /// A tensor's `shape_signature` has a dimension below -1 (-1 is a
    /// dynamic dimension) or a rank different from `shape`.
    BadShapeSignature {
        /// The tensor.
        at: Place,
        /// Its shape as stored.
        shape: Vec<i32>,
        /// Its shape signature as stored.
        signature: Vec<i32>,
    },
    /// A tensor's element count or byte size overflows `usize`.
    ShapeOverflow {
        /// The tensor.
        at: Place,
        /// Its shape as stored.
        shape: Vec<i32>,
    },
    /// A tensor's element type is not a `TensorType` this crate knows.
    UnknownTensorType {
        /// The tensor (or the operator whose options name the type).
        at: Place,
        /// The code found.
        code: i8,
    },
    /// A constant tensor's buffer does not hold exactly the bytes its type
    /// and shape need.
    BufferSize {
        /// The tensor.
        at: Place,
        /// Its buffer index.
        buffer: usize,
        /// Bytes needed by the type and shape.
        expected: usize,
        /// Bytes in the buffer.
        got: usize,
    },
    /// Data stored after the FlatBuffer (`offset`/`size`) lies outside the file.
    OutsideFile {
        /// The buffer or operator holding the reference.
        at: Place,
        /// The offset from the file's start.
        offset: u64,
        /// The length in bytes.
        size: u64,
        /// The file's length.
        file_len: usize,
    },
    /// A tensor's quantization parameters are inconsistent.
    BadQuantization {
        /// The tensor.
        at: Place,
        /// What is wrong.
        problem: QuantizationProblem,
    },
    /// A builtin operator code whose custom op name is missing
    /// (`CUSTOM` without `custom_code`).
    MissingCustomCode {
        /// The operator code entry.
        at: Place,
    },
    /// An operator carries the options table of another operator.
    OptionsMismatch {
        /// The operator.
        at: Place,
        /// Its operator.
        op: BuiltinOp,
        /// The options table found.
        options: &'static str,
    },
    /// An operator input or output is negative but not -1 (absent).
    BadTensorIndex {
        /// The operator.
        at: Place,
        /// The index as stored.
        index: i32,
    },
    /// A non-constant tensor needs more bytes than `ParseOptions::max_tensor_bytes`.
    TensorOverBudget {
        /// The tensor.
        at: Place,
        /// Its declared byte size.
        bytes: usize,
        /// The limit.
        limit: usize,
    },
    /// The non-constant tensors together need more bytes than
    /// `ParseOptions::max_total_bytes`.
    TotalOverBudget {
        /// The sum of their declared byte sizes (saturating).
        bytes: usize,
        /// The limit.
        limit: usize,
    },
    /// Constant data were asked for as another type than the tensor's, or
    /// as numbers while compressed (sparse).
    ElementType {
        /// The tensor.
        at: Place,
        /// Its type.
        dtype: crate::dtype::TensorType,
        /// The type asked for.
        requested: crate::dtype::TensorType,
        /// Whether the tensor is sparse.
        sparse: bool,
    },
    /// Reading the model needed more steps than `ParseOptions::max_items`
    /// (a file whose tables are shared many times over, to amplify work).
    TooManyItems {
        /// The limit.
        limit: usize,
    },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::FileTooShort { len } => write!(
                f,
                "file of {len} bytes is too short for a TFLite model (at least 8 bytes)"
            ),
            Error::FileIdentifier { found } => write!(
                f,
                "file identifier is {:?}, not \"TFL3\": not a TFLite model",
                String::from_utf8_lossy(found)
            ),
            Error::SchemaVersion { version } => {
                write!(
                    f,
                    "model is schema version {version}; only version 3 is read"
                )
            }
            Error::Malformed {
                at,
                table,
                field,
                offset,
                problem,
            } => {
                write!(f, "{at}: {table}.{field}: {problem}")?;
                if let Some(offset) = offset {
                    write!(f, " (byte {offset:#x})")?;
                }
                Ok(())
            }
            Error::MissingField { at, field } => write!(f, "{at}: {field} is missing"),
            Error::IndexOutOfRange {
                at,
                what,
                index,
                len,
            } => write!(f, "{at}: {what} {index} is out of range (there are {len})"),
            Error::NegativeDimension { at, shape } => {
                write!(f, "{at}: shape {shape:?} has a negative dimension")
            }
            Error::BadShapeSignature {
                at,
                shape,
                signature,
            } => write!(
                f,
                "{at}: shape signature {signature:?} does not fit shape {shape:?}"
            ),
            Error::ShapeOverflow { at, shape } => {
                write!(
                    f,
                    "{at}: shape {shape:?} has more elements or bytes than fit in memory"
                )
            }
            Error::UnknownTensorType { at, code } => {
                write!(f, "{at}: tensor type {code} is not a known TensorType")
            }
            Error::BufferSize {
                at,
                buffer,
                expected,
                got,
            } => write!(
                f,
                "{at}: constant buffer {buffer} has {got} bytes, its type and shape need {expected}"
            ),
            Error::OutsideFile {
                at,
                offset,
                size,
                file_len,
            } => write!(
                f,
                "{at}: {size} bytes at offset {offset} lie outside the {file_len}-byte file"
            ),
            Error::BadQuantization { at, problem } => {
                write!(f, "{at}: bad quantization: {problem}")
            }
            Error::MissingCustomCode { at } => {
                write!(f, "{at}: CUSTOM operator without a custom_code name")
            }
            Error::OptionsMismatch { at, op, options } => {
                write!(f, "{at}: {op} carries {options}")
            }
            Error::BadTensorIndex { at, index } => write!(
                f,
                "{at}: tensor index {index} is negative (only -1, absent, is allowed)"
            ),
            Error::TensorOverBudget { at, bytes, limit } => write!(
                f,
                "{at}: needs {bytes} bytes, over the limit of {limit} bytes per tensor"
            ),
            Error::TotalOverBudget { bytes, limit } => write!(
                f,
                "non-constant tensors need {bytes} bytes, over the limit of {limit} bytes"
            ),
            Error::ElementType {
                at,
                dtype,
                requested,
                sparse,
            } => {
                if *sparse {
                    write!(f, "{at}: sparse data cannot be read as {requested} values")
                } else {
                    write!(f, "{at}: {dtype} data cannot be read as {requested} values")
                }
            }
            Error::TooManyItems { limit } => write!(
                f,
                "reading the model takes more than {limit} steps (shared tables repeated?)"
            ),
        }
    }
}

impl std::error::Error for Error {}

/// Result of this crate.
pub type Result<T, E = Error> = core::result::Result<T, E>;
