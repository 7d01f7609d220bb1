//! The verification walk: checks every table, vector and string qneon reads
//! once and builds the borrowed views of [`super`].

use core::fmt;

use planus::ReadAsRoot;

use super::{
    Metadata, Model, Operator, OperatorCode, ParseOptions, Subgraph, FILE_IDENTIFIER,
    SCHEMA_VERSION,
};
use crate::error::{Error, Place, Result, Structure};
use crate::generated::tflite as fb;
use crate::op::{BuiltinOp, OpKind};
use crate::options::{self, Options, OptionsUnion};

mod tensor;

impl<'a> Model<'a> {
    /// Verifies `bytes` as a TFLite model with the default [`ParseOptions`].
    pub fn parse(bytes: &'a [u8]) -> Result<Model<'a>> {
        Model::parse_with(bytes, &ParseOptions::default())
    }

    /// Verifies `bytes` as a TFLite model under `options`.
    pub fn parse_with(bytes: &'a [u8], options: &ParseOptions) -> Result<Model<'a>> {
        Walker::new(bytes, options).model()
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

        let options = self.options(at, operator)?;
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

    /// Decodes an operator's options table with the generated code: the
    /// first union's member if there is one, else the second's.
    fn options(&mut self, at: Place, operator: &fb::OperatorRef<'a>) -> Result<Options> {
        use planus::errors::ErrorKind::UnknownUnionTag;
        let table = match operator.builtin_options() {
            Ok(Some(table)) => Options::Builtin(fb::BuiltinOptions::try_from(table).at(at)?),
            Ok(None) => match operator.builtin_options_2() {
                Ok(Some(table)) => Options::Builtin2(fb::BuiltinOptions2::try_from(table).at(at)?),
                Ok(None) => Options::None,
                Err(planus::Error {
                    error_kind: UnknownUnionTag { tag },
                    ..
                }) if tag > options::KNOWN_OPTIONS2_TAGS => Options::Unknown {
                    union: OptionsUnion::Builtin2,
                    tag,
                },
                Err(error) => return Err(malformed(at, error)),
            },
            Err(planus::Error {
                error_kind: UnknownUnionTag { tag },
                ..
            }) if tag > options::KNOWN_OPTIONS_TAGS => Options::Unknown {
                union: OptionsUnion::Builtin,
                tag,
            },
            Err(error) => return Err(malformed(at, error)),
        };
        // The decoded table's vectors were allocated by lengths the file
        // bounds, but operators may share one table: the walk's budget
        // counts every decoding, by the separators of its debug text (one
        // per field and per vector element), a measure that needs no code
        // per table.
        let mut separators = SeparatorCount(0);
        fmt::write(&mut separators, format_args!("{table:?}")).ok();
        self.spend(1 + separators.0)?;
        Ok(table)
    }
}

/// Counts the commas written to it, storing nothing.
struct SeparatorCount(usize);

impl fmt::Write for SeparatorCount {
    fn write_str(&mut self, text: &str) -> fmt::Result {
        self.0 += text.bytes().filter(|&byte| byte == b',').count();
        Ok(())
    }
}
