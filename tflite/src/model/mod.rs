//! The verified view of a model: [`Model::parse`] walks every part qneon
//! reads once, checks it, and keeps borrowed slices of the file.

use crate::dtype::TensorType;
use crate::error::Place;
use crate::op::{BuiltinOp, OpKind};
use crate::options::Options;

// The verifier builds these views (it sees their private fields as a child
// module); the Display and Debug impls live apart from the accessors.
mod display;
mod verify;

/// The TFLite schema version this crate reads.
pub const SCHEMA_VERSION: u32 = 3;

/// The FlatBuffer file identifier of TFLite models (bytes 4..8).
pub const FILE_IDENTIFIER: [u8; 4] = *b"TFL3";

/// Limits [`Model::parse_with`] enforces beyond the format's own rules.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ParseOptions {
    /// Refuse a file whose bytes 4..8 are not `TFL3`. Default: true.
    ///
    /// Every TFLite converter writes the identifier; TFLite's own verifier
    /// does not insist on it. Without it, bytes 4..8 are part of the first
    /// table, so a file of another kind would be read as a model and most
    /// likely fail later with a less helpful error. Turn this off only for
    /// files known to be TFLite models written without the identifier.
    pub require_file_identifier: bool,
    /// Largest declared byte size of one non-constant tensor (activations,
    /// inputs, outputs, variables): the memory the runtime would allocate
    /// for it. Default: 1 GiB.
    pub max_tensor_bytes: usize,
    /// Largest sum of the declared byte sizes of all non-constant tensors of
    /// all subgraphs (an upper bound of the runtime's arena, before any
    /// reuse). Default: 4 GiB.
    pub max_total_bytes: usize,
    /// Most steps (tables and vector elements visited) the walk may take;
    /// `None` means the file's length in bytes. A file written by a
    /// converter takes at most about a quarter of that (every element it
    /// visits occupies at least 4 bytes); a file whose tables are shared
    /// many times over could otherwise make the walk and its memory grow
    /// with the square of its size.
    pub max_items: Option<usize>,
}

impl Default for ParseOptions {
    fn default() -> Self {
        ParseOptions {
            require_file_identifier: true,
            max_tensor_bytes: 1 << 30,
            max_total_bytes: 4 << 30,
            max_items: None,
        }
    }
}

impl ParseOptions {
    /// No memory budget (tensor byte sizes are still overflow-checked).
    pub fn unlimited() -> Self {
        ParseOptions {
            max_tensor_bytes: usize::MAX,
            max_total_bytes: usize::MAX,
            ..ParseOptions::default()
        }
    }
}

/// A verified TFLite model, borrowing the file's bytes.
///
/// Everything reachable through its accessors was checked by
/// [`Model::parse`]: indices are in range, shapes are non-negative and their
/// sizes fit `usize`, constant buffers hold exactly the bytes their tensors
/// need, quantization vectors are consistent.
///
/// `Debug` shows byte slices (the file, buffers, constant data) by length.
#[derive(Clone)]
pub struct Model<'a> {
    bytes: &'a [u8],
    version: u32,
    description: Option<&'a str>,
    operator_codes: Vec<OperatorCode<'a>>,
    buffers: Vec<&'a [u8]>,
    subgraphs: Vec<Subgraph<'a>>,
    metadata: Vec<Metadata<'a>>,
    non_constant_bytes: usize,
}

/// One entry of the model's operator code table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OperatorCode<'a> {
    /// The operator.
    pub op: OpKind<'a>,
    /// The operator's version (kernels differ by version).
    pub version: i32,
}

/// A named metadata entry (`Model.metadata`), pointing at a buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Metadata<'a> {
    /// Its name (`"min_runtime_version"`, ...).
    pub name: &'a str,
    /// Its buffer index.
    pub buffer: usize,
    /// The buffer's bytes.
    pub data: &'a [u8],
}

/// A subgraph: tensors and the operators between them, in execution order.
#[derive(Clone, Debug)]
pub struct Subgraph<'a> {
    index: usize,
    name: &'a str,
    tensors: Vec<Tensor<'a>>,
    inputs: Vec<usize>,
    outputs: Vec<usize>,
    operators: Vec<Operator<'a>>,
}

/// A tensor's quantization: `real = scale * (quantized - zero_point)`.
#[derive(Clone, Debug, PartialEq)]
pub struct Quantization {
    scales: Vec<f32>,
    zero_points: Vec<i64>,
    axis: Option<usize>,
    min: Vec<f32>,
    max: Vec<f32>,
}

/// A tensor of a subgraph.
#[derive(Clone)]
pub struct Tensor<'a> {
    subgraph: usize,
    index: usize,
    name: &'a str,
    dtype: TensorType,
    shape: Vec<usize>,
    shape_signature: Option<Vec<i32>>,
    element_count: usize,
    byte_size: Option<usize>,
    buffer: usize,
    data: Option<&'a [u8]>,
    quantization: Option<Quantization>,
    is_variable: bool,
    is_sparse: bool,
}

/// An operator of a subgraph.
#[derive(Clone)]
pub struct Operator<'a> {
    index: usize,
    opcode_index: usize,
    op: OpKind<'a>,
    version: i32,
    inputs: Vec<Option<usize>>,
    outputs: Vec<Option<usize>>,
    intermediates: Vec<usize>,
    options: Options,
    custom_options: Option<&'a [u8]>,
}

impl<'a> Model<'a> {
    /// The whole file.
    pub fn bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// `Model.version` (always [`SCHEMA_VERSION`]).
    pub fn version(&self) -> u32 {
        self.version
    }

    /// `Model.description` (the converter's name, usually).
    pub fn description(&self) -> Option<&'a str> {
        self.description
    }

    /// The operator code table (operators refer to it by index).
    pub fn operator_codes(&self) -> &[OperatorCode<'a>] {
        &self.operator_codes
    }

    /// The buffers, by index; an empty slice for a buffer without data
    /// (buffer 0 is always such, by convention).
    pub fn buffers(&self) -> &[&'a [u8]] {
        &self.buffers
    }

    /// The subgraphs; there is at least one.
    pub fn subgraphs(&self) -> &[Subgraph<'a>] {
        &self.subgraphs
    }

    /// Subgraph 0, the one TFLite runs.
    pub fn main_subgraph(&self) -> &Subgraph<'a> {
        // `parse` refuses a model without subgraphs.
        &self.subgraphs[0]
    }

    /// The named metadata entries.
    pub fn metadata(&self) -> &[Metadata<'a>] {
        &self.metadata
    }

    /// The sum of the declared byte sizes of all non-constant tensors, which
    /// `ParseOptions::max_total_bytes` bounds.
    pub fn non_constant_bytes(&self) -> usize {
        self.non_constant_bytes
    }
}

impl<'a> Subgraph<'a> {
    /// Its index in the model.
    pub fn index(&self) -> usize {
        self.index
    }

    /// Its name (empty when the file gives none).
    pub fn name(&self) -> &'a str {
        self.name
    }

    /// Its tensors, by index.
    pub fn tensors(&self) -> &[Tensor<'a>] {
        &self.tensors
    }

    /// Tensor `index`, if in range.
    pub fn tensor(&self, index: usize) -> Option<&Tensor<'a>> {
        self.tensors.get(index)
    }

    /// Indices of its input tensors (all in range).
    pub fn inputs(&self) -> &[usize] {
        &self.inputs
    }

    /// Indices of its output tensors (all in range).
    pub fn outputs(&self) -> &[usize] {
        &self.outputs
    }

    /// Its operators in execution order.
    pub fn operators(&self) -> &[Operator<'a>] {
        &self.operators
    }
}

impl Quantization {
    /// Scales: one (per tensor) or one per index of [`Quantization::axis`].
    pub fn scales(&self) -> &[f32] {
        &self.scales
    }

    /// Zero points, as many as scales.
    pub fn zero_points(&self) -> &[i64] {
        &self.zero_points
    }

    /// The quantized dimension of per-axis quantization (more than one
    /// scale); `None` for per-tensor quantization.
    pub fn axis(&self) -> Option<usize> {
        self.axis
    }

    /// The single scale and zero point of per-tensor quantization.
    pub fn per_tensor(&self) -> Option<(f32, i64)> {
        match (self.axis, self.scales.first(), self.zero_points.first()) {
            (None, Some(&scale), Some(&zero_point)) => Some((scale, zero_point)),
            _ => None,
        }
    }

    /// The recorded float range minimums (converter information; may be empty).
    pub fn min(&self) -> &[f32] {
        &self.min
    }

    /// The recorded float range maximums (converter information; may be empty).
    pub fn max(&self) -> &[f32] {
        &self.max
    }
}

impl<'a> Tensor<'a> {
    /// Its index in its subgraph.
    pub fn index(&self) -> usize {
        self.index
    }

    /// Where it is, for error messages.
    pub fn place(&self) -> Place {
        Place::Tensor {
            subgraph: self.subgraph,
            tensor: self.index,
        }
    }

    /// Its name (empty when the file gives none).
    pub fn name(&self) -> &'a str {
        self.name
    }

    /// Its element type.
    pub fn dtype(&self) -> TensorType {
        self.dtype
    }

    /// Its shape (rank 0 for a scalar, or when the file gives no shape).
    pub fn shape(&self) -> &[usize] {
        &self.shape
    }

    /// The shape with -1 for dimensions only known at run time, when the
    /// file gives it. Every entry is -1 or non-negative.
    pub fn shape_signature(&self) -> Option<&[i32]> {
        self.shape_signature.as_deref()
    }

    /// The product of the shape (1 for rank 0).
    pub fn element_count(&self) -> usize {
        self.element_count
    }

    /// The declared byte size (`element_count` elements, sub-byte types
    /// packed); `None` for STRING, RESOURCE and VARIANT tensors.
    pub fn byte_size(&self) -> Option<usize> {
        self.byte_size
    }

    /// Its buffer index (0: no data).
    pub fn buffer(&self) -> usize {
        self.buffer
    }

    /// The constant data in the file, for a tensor whose buffer holds data.
    ///
    /// Unless the tensor is sparse or a STRING, its length is exactly
    /// [`Tensor::byte_size`]. The slice has no alignment guarantee beyond
    /// the file's (converters align buffers to 16 bytes within the file);
    /// see [`crate::values`] to read it as numbers.
    pub fn data(&self) -> Option<&'a [u8]> {
        self.data
    }

    /// Whether the tensor is constant (has data in the file).
    pub fn is_constant(&self) -> bool {
        self.data.is_some()
    }

    /// The quantization, when the file gives scales.
    pub fn quantization(&self) -> Option<&Quantization> {
        self.quantization.as_ref()
    }

    /// Whether the tensor is a variable (state kept across runs).
    pub fn is_variable(&self) -> bool {
        self.is_variable
    }

    /// Whether the tensor has sparsity parameters (its constant data is
    /// then compressed, and its length is not checked against the shape).
    pub fn is_sparse(&self) -> bool {
        self.is_sparse
    }
}

impl<'a> Operator<'a> {
    /// Its index in the subgraph's execution order.
    pub fn index(&self) -> usize {
        self.index
    }

    /// Its index into [`Model::operator_codes`].
    pub fn opcode_index(&self) -> usize {
        self.opcode_index
    }

    /// The operator.
    pub fn op(&self) -> OpKind<'a> {
        self.op
    }

    /// The builtin operator, `None` for a custom one.
    pub fn builtin(&self) -> Option<BuiltinOp> {
        self.op.builtin()
    }

    /// The operator's version.
    pub fn version(&self) -> i32 {
        self.version
    }

    /// Input tensor indices, `None` for an omitted optional input.
    pub fn inputs(&self) -> &[Option<usize>] {
        &self.inputs
    }

    /// Output tensor indices, `None` for an omitted optional output.
    pub fn outputs(&self) -> &[Option<usize>] {
        &self.outputs
    }

    /// Intermediate tensor indices (LSTM internals), all in range.
    pub fn intermediates(&self) -> &[usize] {
        &self.intermediates
    }

    /// The builtin options table, as the generated code decodes it (every
    /// member of both options unions).
    pub fn options(&self) -> &Options {
        &self.options
    }

    /// The custom options bytes (flexbuffer for custom ops), if any.
    pub fn custom_options(&self) -> Option<&'a [u8]> {
        self.custom_options
    }
}
