//! The verified view of a model: [`Model::parse`] walks every part qneon
//! reads once, checks it, and keeps borrowed slices of the file.

use planus::ReadAsRoot;

use crate::dtype::TensorType;
use crate::error::{Error, Place, QuantizationProblem, Result, Structure};
use crate::generated::tflite as fb;
use crate::op::{BuiltinOp, OpKind};
use crate::options::{self, Options};

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
    /// Verifies `bytes` as a TFLite model with the default [`ParseOptions`].
    pub fn parse(bytes: &'a [u8]) -> Result<Model<'a>> {
        Model::parse_with(bytes, &ParseOptions::default())
    }

    /// Verifies `bytes` as a TFLite model under `options`.
    pub fn parse_with(bytes: &'a [u8], options: &ParseOptions) -> Result<Model<'a>> {
        Walker::new(bytes, options).model()
    }

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

    /// The builtin options.
    pub fn options(&self) -> &Options {
        &self.options
    }

    /// The custom options bytes (flexbuffer for custom ops), if any.
    pub fn custom_options(&self) -> Option<&'a [u8]> {
        self.custom_options
    }
}

/// Maps the generated reader's errors to [`Error::Malformed`] at a place.
trait At<T> {
    fn at(self, place: Place) -> Result<T>;
}

impl<T> At<T> for planus::Result<T> {
    fn at(self, place: Place) -> Result<T> {
        self.map_err(|error| malformed(place, error))
    }
}

fn malformed(at: Place, error: planus::Error) -> Error {
    use planus::errors::ErrorKind;
    let problem = match error.error_kind {
        ErrorKind::InvalidOffset => Structure::OffsetOutsideFile,
        ErrorKind::InvalidLength => Structure::PastEndOfFile,
        ErrorKind::InvalidVtableLength { .. } => Structure::BadVtable,
        ErrorKind::InvalidUtf8 { .. } => Structure::NotUtf8,
        ErrorKind::MissingNullTerminator => Structure::MissingNullTerminator,
        // Union and enum tags are handled where read (this schema declares
        // no enums, and every union member up to the last known tag);
        // nothing is `required`.
        _ => Structure::Other,
    };
    let offset = error.source_location.byte_offset;
    Error::Malformed {
        at,
        table: error.source_location.type_,
        field: error.source_location.method,
        offset: (offset != usize::MAX).then_some(offset),
        problem,
    }
}

/// Data stored after the FlatBuffer: `offset` > 1 means the bytes are at
/// `file[offset..offset + size]` (TFLite's rule; 0 and 1 mean "not used").
fn outside_data(bytes: &[u8], at: Place, offset: u64, size: u64) -> Result<Option<&[u8]>> {
    if offset <= 1 {
        return Ok(None);
    }
    let outside = || Error::OutsideFile {
        at,
        offset,
        size,
        file_len: bytes.len(),
    };
    let start = usize::try_from(offset).map_err(|_| outside())?;
    let len = usize::try_from(size).map_err(|_| outside())?;
    let end = start.checked_add(len).ok_or_else(outside)?;
    bytes.get(start..end).map(Some).ok_or_else(outside)
}

/// Checks a stored index against a table length.
fn index_in(at: Place, what: &'static str, index: i64, len: usize) -> Result<usize> {
    usize::try_from(index)
        .ok()
        .filter(|&index| index < len)
        .ok_or(Error::IndexOutOfRange {
            at,
            what,
            index,
            len,
        })
}

/// The state of one verification walk.
struct Walker<'a, 'o> {
    bytes: &'a [u8],
    options: &'o ParseOptions,
    items_left: usize,
    item_limit: usize,
}

impl<'a, 'o> Walker<'a, 'o> {
    fn new(bytes: &'a [u8], options: &'o ParseOptions) -> Self {
        let item_limit = options.max_items.unwrap_or(bytes.len());
        Walker {
            bytes,
            options,
            items_left: item_limit,
            item_limit,
        }
    }

    /// Accounts for `count` tables or vector elements about to be visited,
    /// before anything sized by `count` is allocated.
    fn spend(&mut self, count: usize) -> Result<()> {
        self.items_left = self
            .items_left
            .checked_sub(count)
            .ok_or(Error::TooManyItems {
                limit: self.item_limit,
            })?;
        Ok(())
    }

    fn model(mut self) -> Result<Model<'a>> {
        let bytes = self.bytes;
        let identifier = bytes
            .get(4..8)
            .ok_or(Error::FileTooShort { len: bytes.len() })?;
        if self.options.require_file_identifier && identifier != FILE_IDENTIFIER {
            let mut found = [0; 4];
            found.copy_from_slice(identifier);
            return Err(Error::FileIdentifier { found });
        }
        let root = fb::ModelRef::read_as_root(bytes).at(Place::Model)?;
        let version = root.version().at(Place::Model)?;
        if version != SCHEMA_VERSION {
            return Err(Error::SchemaVersion { version });
        }
        let description = root.description().at(Place::Model)?;

        let buffers = self.buffers(&root)?;
        let operator_codes = self.operator_codes(&root)?;

        let subgraph_refs = root
            .subgraphs()
            .at(Place::Model)?
            .filter(|subgraphs| !subgraphs.is_empty())
            .ok_or(Error::MissingField {
                at: Place::Model,
                field: "Model.subgraphs",
            })?;
        self.spend(subgraph_refs.len())?;
        let mut subgraphs = Vec::with_capacity(subgraph_refs.len());
        for (index, subgraph) in subgraph_refs.iter().enumerate() {
            let subgraph = subgraph.at(Place::Subgraph(index))?;
            subgraphs.push(self.subgraph(index, &subgraph, &buffers, &operator_codes)?);
        }

        let metadata = self.metadata(&root, &buffers)?;

        let mut non_constant_bytes = 0usize;
        for tensor in subgraphs.iter().flat_map(|subgraph| subgraph.tensors()) {
            if tensor.is_constant() {
                continue;
            }
            let bytes = tensor.byte_size().unwrap_or(0);
            non_constant_bytes = non_constant_bytes.saturating_add(bytes);
        }
        if non_constant_bytes > self.options.max_total_bytes {
            return Err(Error::TotalOverBudget {
                bytes: non_constant_bytes,
                limit: self.options.max_total_bytes,
            });
        }

        Ok(Model {
            bytes,
            version,
            description,
            operator_codes,
            buffers,
            subgraphs,
            metadata,
            non_constant_bytes,
        })
    }

    fn buffers(&mut self, root: &fb::ModelRef<'a>) -> Result<Vec<&'a [u8]>> {
        // TFLite refuses a model without a buffer table: every tensor names
        // a buffer, if only the empty buffer 0.
        let refs = root
            .buffers()
            .at(Place::Model)?
            .ok_or(Error::MissingField {
                at: Place::Model,
                field: "Model.buffers",
            })?;
        self.spend(refs.len())?;
        let mut buffers = Vec::with_capacity(refs.len());
        for (index, buffer) in refs.iter().enumerate() {
            let at = Place::Buffer(index);
            let buffer = buffer.at(at)?;
            let outside = outside_data(
                self.bytes,
                at,
                buffer.offset().at(at)?,
                buffer.size().at(at)?,
            )?;
            let data = match outside {
                Some(data) => data,
                None => buffer.data().at(at)?.unwrap_or(&[]),
            };
            buffers.push(data);
        }
        Ok(buffers)
    }

    fn operator_codes(&mut self, root: &fb::ModelRef<'a>) -> Result<Vec<OperatorCode<'a>>> {
        let Some(refs) = root.operator_codes().at(Place::Model)? else {
            return Ok(Vec::new());
        };
        self.spend(refs.len())?;
        let mut codes = Vec::with_capacity(refs.len());
        for (index, code) in refs.iter().enumerate() {
            let at = Place::OperatorCode(index);
            let code = code.at(at)?;
            // Files written before codes above 127 existed hold the code in
            // the int8 field only (builtin_code absent, so 0); newer files
            // hold it in builtin_code and 127 (the placeholder) or the same
            // code in the int8 field. The larger of the two is the code in
            // both cases, as TFLite reads it.
            let deprecated = i32::from(code.deprecated_builtin_code().at(at)?);
            let builtin = BuiltinOp(code.builtin_code().at(at)?.max(deprecated));
            let op = if builtin == BuiltinOp::CUSTOM {
                let name = code
                    .custom_code()
                    .at(at)?
                    .ok_or(Error::MissingCustomCode { at })?;
                OpKind::Custom(name)
            } else {
                OpKind::Builtin(builtin)
            };
            codes.push(OperatorCode {
                op,
                version: code.version().at(at)?,
            });
        }
        Ok(codes)
    }

    fn metadata(
        &mut self,
        root: &fb::ModelRef<'a>,
        buffers: &[&'a [u8]],
    ) -> Result<Vec<Metadata<'a>>> {
        let Some(refs) = root.metadata().at(Place::Model)? else {
            return Ok(Vec::new());
        };
        self.spend(refs.len())?;
        let mut metadata = Vec::with_capacity(refs.len());
        for (index, entry) in refs.iter().enumerate() {
            let at = Place::Metadata(index);
            let entry = entry.at(at)?;
            let buffer = index_in(
                at,
                "metadata buffer",
                entry.buffer().at(at)?.into(),
                buffers.len(),
            )?;
            metadata.push(Metadata {
                name: entry.name().at(at)?.unwrap_or(""),
                buffer,
                data: buffers[buffer],
            });
        }
        Ok(metadata)
    }

    /// Reads a vector of int32 tensor indices, each in `0..tensor_count`.
    fn tensor_indices(
        &mut self,
        indices: Option<planus::Vector<'a, i32>>,
        at: Place,
        what: &'static str,
        tensor_count: usize,
    ) -> Result<Vec<usize>> {
        let Some(indices) = indices else {
            return Ok(Vec::new());
        };
        self.spend(indices.len())?;
        indices
            .iter()
            .map(|index| index_in(at, what, index.into(), tensor_count))
            .collect()
    }

    /// Reads operator inputs or outputs: indices in `0..tensor_count`, or
    /// -1 for an omitted optional tensor.
    fn optional_tensor_indices(
        &mut self,
        indices: Option<planus::Vector<'a, i32>>,
        at: Place,
        what: &'static str,
        tensor_count: usize,
    ) -> Result<Vec<Option<usize>>> {
        let Some(indices) = indices else {
            return Ok(Vec::new());
        };
        self.spend(indices.len())?;
        indices
            .iter()
            .map(|index| match index {
                -1 => Ok(None),
                index if index < 0 => Err(Error::BadTensorIndex { at, index }),
                index => index_in(at, what, index.into(), tensor_count).map(Some),
            })
            .collect()
    }

    fn subgraph(
        &mut self,
        index: usize,
        subgraph: &fb::SubGraphRef<'a>,
        buffers: &[&'a [u8]],
        operator_codes: &[OperatorCode<'a>],
    ) -> Result<Subgraph<'a>> {
        let at = Place::Subgraph(index);
        let name = subgraph.name().at(at)?.unwrap_or("");

        let mut tensors = Vec::new();
        if let Some(refs) = subgraph.tensors().at(at)? {
            self.spend(refs.len())?;
            tensors.reserve_exact(refs.len());
            for (tensor_index, tensor) in refs.iter().enumerate() {
                let tensor_at = Place::Tensor {
                    subgraph: index,
                    tensor: tensor_index,
                };
                let tensor = tensor.at(tensor_at)?;
                tensors.push(self.tensor(index, tensor_index, &tensor, buffers)?);
            }
        }

        let inputs = self.tensor_indices(
            subgraph.inputs().at(at)?,
            at,
            "subgraph input tensor",
            tensors.len(),
        )?;
        let outputs = self.tensor_indices(
            subgraph.outputs().at(at)?,
            at,
            "subgraph output tensor",
            tensors.len(),
        )?;

        let mut operators = Vec::new();
        if let Some(refs) = subgraph.operators().at(at)? {
            self.spend(refs.len())?;
            operators.reserve_exact(refs.len());
            for (operator_index, operator) in refs.iter().enumerate() {
                let operator_at = Place::Operator {
                    subgraph: index,
                    operator: operator_index,
                };
                let operator = operator.at(operator_at)?;
                operators.push(self.operator(
                    operator_at,
                    operator_index,
                    &operator,
                    tensors.len(),
                    operator_codes,
                )?);
            }
        }

        Ok(Subgraph {
            index,
            name,
            tensors,
            inputs,
            outputs,
            operators,
        })
    }

    fn tensor(
        &mut self,
        subgraph_index: usize,
        index: usize,
        tensor: &fb::TensorRef<'a>,
        buffers: &[&'a [u8]],
    ) -> Result<Tensor<'a>> {
        let at = Place::Tensor {
            subgraph: subgraph_index,
            tensor: index,
        };
        let code = tensor.type_().at(at)?;
        let dtype = TensorType::from_code(code).ok_or(Error::UnknownTensorType { at, code })?;

        let stored_shape: Vec<i32> = match tensor.shape().at(at)? {
            Some(shape) => {
                self.spend(shape.len())?;
                shape.iter().collect()
            }
            None => Vec::new(),
        };
        let mut shape = Vec::with_capacity(stored_shape.len());
        for &dim in &stored_shape {
            match usize::try_from(dim) {
                Ok(dim) => shape.push(dim),
                Err(_) => {
                    return Err(Error::NegativeDimension {
                        at,
                        shape: stored_shape,
                    })
                }
            }
        }
        let element_count = shape
            .iter()
            .try_fold(1usize, |count, &dim| count.checked_mul(dim));
        let Some(element_count) = element_count else {
            return Err(Error::ShapeOverflow {
                at,
                shape: stored_shape,
            });
        };
        let byte_size = match dtype.element_bits() {
            Some(_) => match dtype.byte_size(element_count) {
                Some(bytes) => Some(bytes),
                None => {
                    return Err(Error::ShapeOverflow {
                        at,
                        shape: stored_shape,
                    })
                }
            },
            None => None,
        };

        let shape_signature: Option<Vec<i32>> = match tensor.shape_signature().at(at)? {
            Some(signature) => {
                self.spend(signature.len())?;
                Some(signature.iter().collect())
            }
            None => None,
        };
        if let Some(signature) = &shape_signature {
            if signature.iter().any(|&dim| dim < -1) {
                return Err(Error::BadShapeSignature {
                    at,
                    shape: stored_shape,
                    signature: signature.clone(),
                });
            }
        }

        let buffer = index_in(
            at,
            "tensor buffer",
            tensor.buffer().at(at)?.into(),
            buffers.len(),
        )?;
        let data = Some(buffers[buffer]).filter(|data| !data.is_empty());
        let is_sparse = tensor.sparsity().at(at)?.is_some();
        if let (Some(data), Some(expected), false) = (data, byte_size, is_sparse) {
            if data.len() != expected {
                return Err(Error::BufferSize {
                    at,
                    buffer,
                    expected,
                    got: data.len(),
                });
            }
        }

        if data.is_none() {
            let bytes = byte_size.unwrap_or(0);
            if bytes > self.options.max_tensor_bytes {
                return Err(Error::TensorOverBudget {
                    at,
                    bytes,
                    limit: self.options.max_tensor_bytes,
                });
            }
        }

        let quantization = match tensor.quantization().at(at)? {
            Some(quantization) => self.quantization(at, &quantization, &shape)?,
            None => None,
        };

        Ok(Tensor {
            subgraph: subgraph_index,
            index,
            name: tensor.name().at(at)?.unwrap_or(""),
            dtype,
            shape,
            shape_signature,
            element_count,
            byte_size,
            buffer,
            data,
            quantization,
            is_variable: tensor.is_variable().at(at)?,
            is_sparse,
        })
    }

    fn float_vector(&mut self, vector: Option<planus::Vector<'a, f32>>) -> Result<Vec<f32>> {
        let Some(vector) = vector else {
            return Ok(Vec::new());
        };
        self.spend(vector.len())?;
        Ok(vector.iter().collect())
    }

    /// TFLite's rules: no scales means not quantized; scales need as many
    /// zero points; more than one scale quantizes along `quantized_dimension`,
    /// one scale per index of that axis.
    fn quantization(
        &mut self,
        at: Place,
        quantization: &fb::QuantizationParametersRef<'a>,
        shape: &[usize],
    ) -> Result<Option<Quantization>> {
        let scales = self.float_vector(quantization.scale().at(at)?)?;
        if scales.is_empty() {
            return Ok(None);
        }
        let zero_points: Vec<i64> = match quantization.zero_point().at(at)? {
            Some(zero_points) => {
                self.spend(zero_points.len())?;
                zero_points.iter().collect()
            }
            None => {
                return Err(Error::BadQuantization {
                    at,
                    problem: QuantizationProblem::MissingZeroPoints,
                })
            }
        };
        if zero_points.len() != scales.len() {
            return Err(Error::BadQuantization {
                at,
                problem: QuantizationProblem::LengthMismatch {
                    scales: scales.len(),
                    zero_points: zero_points.len(),
                },
            });
        }
        let axis = if scales.len() > 1 {
            let stored_axis = quantization.quantized_dimension().at(at)?;
            let axis = usize::try_from(stored_axis)
                .ok()
                .filter(|&axis| axis < shape.len())
                .ok_or(Error::BadQuantization {
                    at,
                    problem: QuantizationProblem::AxisOutOfRange {
                        axis: stored_axis,
                        rank: shape.len(),
                    },
                })?;
            if shape[axis] != scales.len() {
                return Err(Error::BadQuantization {
                    at,
                    problem: QuantizationProblem::AxisSizeMismatch {
                        axis,
                        dim: shape[axis],
                        scales: scales.len(),
                    },
                });
            }
            Some(axis)
        } else {
            None
        };
        Ok(Some(Quantization {
            scales,
            zero_points,
            axis,
            min: self.float_vector(quantization.min().at(at)?)?,
            max: self.float_vector(quantization.max().at(at)?)?,
        }))
    }

    fn operator(
        &mut self,
        at: Place,
        index: usize,
        operator: &fb::OperatorRef<'a>,
        tensor_count: usize,
        operator_codes: &[OperatorCode<'a>],
    ) -> Result<Operator<'a>> {
        let opcode_index = index_in(
            at,
            "operator code",
            operator.opcode_index().at(at)?.into(),
            operator_codes.len(),
        )?;
        let code = operator_codes[opcode_index];
        let inputs = self.optional_tensor_indices(
            operator.inputs().at(at)?,
            at,
            "operator input tensor",
            tensor_count,
        )?;
        let outputs = self.optional_tensor_indices(
            operator.outputs().at(at)?,
            at,
            "operator output tensor",
            tensor_count,
        )?;
        let intermediates = self.tensor_indices(
            operator.intermediates().at(at)?,
            at,
            "operator intermediate tensor",
            tensor_count,
        )?;

        let options = match operator.builtin_options() {
            Ok(None) => Options::None,
            Ok(Some(options)) => {
                if let fb::BuiltinOptionsRef::ReshapeOptions(reshape) = &options {
                    // The only decoded options with a vector: account for it
                    // before it is copied.
                    let len = reshape.new_shape().at(at)?.map_or(0, |shape| shape.len());
                    self.spend(len)?;
                }
                options::decode(options).at(at)?
            }
            // A member newer than this crate's schema: the rest of the
            // operator is still read; the runtime refuses it by name.
            Err(planus::Error {
                error_kind: planus::errors::ErrorKind::UnknownUnionTag { tag },
                ..
            }) if tag > options::KNOWN_OPTIONS_TAGS => Options::Other { type_id: tag },
            Err(error) => return Err(malformed(at, error)),
        };
        if let Some(owner) = options.owner() {
            let op = code.op.builtin().unwrap_or(BuiltinOp::CUSTOM);
            if owner != op {
                return Err(Error::OptionsMismatch {
                    at,
                    op,
                    options: options.table_name().unwrap_or("?"),
                });
            }
        }

        let outside = outside_data(
            self.bytes,
            at,
            operator.large_custom_options_offset().at(at)?,
            operator.large_custom_options_size().at(at)?,
        )?;
        let custom_options = match outside {
            Some(data) => Some(data),
            None => operator.custom_options().at(at)?,
        };

        Ok(Operator {
            index,
            opcode_index,
            op: code.op,
            version: code.version,
            inputs,
            outputs,
            intermediates,
            options,
            custom_options,
        })
    }
}

impl std::fmt::Display for Quantization {
    /// `scale 0.5 zero_point -1`, or `3 scales along axis 0 (0.01..0.03), zero points [0, 0, 0]`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (self.axis, self.per_tensor()) {
            (None, Some((scale, zero_point))) => {
                write!(f, "scale {scale} zero_point {zero_point}")
            }
            _ => {
                let low = self.scales.iter().copied().fold(f32::INFINITY, f32::min);
                let high = self
                    .scales
                    .iter()
                    .copied()
                    .fold(f32::NEG_INFINITY, f32::max);
                write!(f, "{} scales", self.scales.len())?;
                if let Some(axis) = self.axis {
                    write!(f, " along axis {axis}")?;
                }
                write!(f, " ({low}..{high})")?;
                let first_zero_point = self.zero_points.first().copied().unwrap_or(0);
                if self.zero_points.iter().all(|&z| z == first_zero_point) {
                    write!(f, ", zero points all {first_zero_point}")
                } else {
                    write!(f, ", zero points vary")
                }
            }
        }
    }
}

impl std::fmt::Display for Tensor<'_> {
    /// `#1 weights INT8 [3, 4] const 12 B, 3 scales along axis 0 (...)`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "#{} {:?} {} {:?}",
            self.index, self.name, self.dtype, self.shape
        )?;
        if let Some(signature) = &self.shape_signature {
            if signature.iter().any(|&dim| dim < 0) {
                write!(f, " (signature {signature:?})")?;
            }
        }
        match (self.data, self.byte_size) {
            (Some(data), _) => write!(f, " const {} B (buffer {})", data.len(), self.buffer)?,
            (None, Some(bytes)) => write!(f, " {bytes} B")?,
            (None, None) => {}
        }
        if self.is_variable {
            f.write_str(" variable")?;
        }
        if self.is_sparse {
            f.write_str(" sparse")?;
        }
        if let Some(quantization) = &self.quantization {
            write!(f, ", {quantization}")?;
        }
        Ok(())
    }
}

impl std::fmt::Display for Operator<'_> {
    /// `#0 FULLY_CONNECTED v4 (0, 1, 2) -> (3) activation=RELU ...`; `-`
    /// marks an omitted optional tensor.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let list = |indices: &[Option<usize>]| {
            indices
                .iter()
                .map(|index| match index {
                    Some(index) => index.to_string(),
                    None => "-".to_string(),
                })
                .collect::<Vec<_>>()
                .join(", ")
        };
        write!(
            f,
            "#{} {} v{} ({}) -> ({})",
            self.index,
            self.op,
            self.version,
            list(&self.inputs),
            list(&self.outputs)
        )?;
        if self.options != Options::None {
            write!(f, " {}", self.options)?;
        }
        if let Some(custom) = self.custom_options {
            write!(f, " custom options {} B", custom.len())?;
        }
        Ok(())
    }
}

/// Shows a byte slice by its length: a model's data can be megabytes.
struct Length<'a>(&'a [u8]);

impl std::fmt::Debug for Length<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "<{} bytes>", self.0.len())
    }
}

impl std::fmt::Debug for Model<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let buffers: Vec<Length<'_>> = self.buffers.iter().map(|data| Length(data)).collect();
        f.debug_struct("Model")
            .field("bytes", &Length(self.bytes))
            .field("version", &self.version)
            .field("description", &self.description)
            .field("operator_codes", &self.operator_codes)
            .field("buffers", &buffers)
            .field("subgraphs", &self.subgraphs)
            .field("metadata", &self.metadata)
            .field("non_constant_bytes", &self.non_constant_bytes)
            .finish()
    }
}

impl std::fmt::Debug for Tensor<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tensor")
            .field("subgraph", &self.subgraph)
            .field("index", &self.index)
            .field("name", &self.name)
            .field("dtype", &self.dtype)
            .field("shape", &self.shape)
            .field("shape_signature", &self.shape_signature)
            .field("element_count", &self.element_count)
            .field("byte_size", &self.byte_size)
            .field("buffer", &self.buffer)
            .field("data", &self.data.map(Length))
            .field("quantization", &self.quantization)
            .field("is_variable", &self.is_variable)
            .field("is_sparse", &self.is_sparse)
            .finish()
    }
}

impl std::fmt::Debug for Operator<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Operator")
            .field("index", &self.index)
            .field("opcode_index", &self.opcode_index)
            .field("op", &self.op)
            .field("version", &self.version)
            .field("inputs", &self.inputs)
            .field("outputs", &self.outputs)
            .field("intermediates", &self.intermediates)
            .field("options", &self.options)
            .field("custom_options", &self.custom_options.map(Length))
            .finish()
    }
}
