//! Where a tensor's bytes live at run time ([`Place`]), and the model's
//! constant data ([`Constant`], [`ModelData`]).

use std::ops::Range;
use std::sync::Arc;

use qneon_tflite::ModelBytes;

/// Where a tensor's bytes live at run time: the one answer the plan, the
/// node I/O and the session read. A model input or output is an arena
/// range (the caller writes and reads it there); an operator's scratch is an
/// arena range of the node's own (in its I/O, not a tensor).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Place {
    /// Read or written by no node, not a model input or output; or an
    /// omitted optional input.
    Unused,
    /// Constant data: [`Constant`] `.0` of the plan.
    Constant(usize),
    /// These bytes of a session's arena (reused once the tensor is dead).
    Arena(Range<usize>),
    /// These bytes of a session's variable block: state kept across
    /// invokes, reset by `Session::reset_variables`.
    Variable(Range<usize>),
}

/// The model file's bytes, as a plan keeps them: borrowed from the caller
/// (the plan lives no longer than they do) or shared (the plan owns a
/// reference and can live anywhere). Constant tensors are ranges into them,
/// so neither way copies a weight.
#[derive(Clone, Debug)]
pub(super) enum ModelData<'a> {
    Borrowed(&'a [u8]),
    Shared(Arc<ModelBytes>),
}

impl ModelData<'_> {
    pub(super) fn bytes(&self) -> &[u8] {
        match self {
            ModelData::Borrowed(bytes) => bytes,
            ModelData::Shared(bytes) => bytes.as_bytes(),
        }
    }
}

/// A constant tensor's bytes: a range of the model file when aligned for
/// its element type (zero-copy), else a copy made at load.
#[derive(Clone, Debug)]
pub(super) enum Constant {
    InModel(Range<usize>),
    /// `u128` storage for its alignment; `.1` bytes of it are the data.
    Copied(Vec<u128>, usize),
}

impl Constant {
    /// `data`, a slice of `model`, kept in place when aligned to `align`.
    pub(super) fn new(model: &[u8], data: &[u8], align: usize) -> Constant {
        let offset = (data.as_ptr() as usize).wrapping_sub(model.as_ptr() as usize);
        let inside = offset <= model.len() && data.len() <= model.len() - offset;
        if inside && (data.as_ptr() as usize).is_multiple_of(align) {
            Constant::InModel(offset..offset + data.len())
        } else {
            let mut storage = vec![0u128; data.len().div_ceil(16)];
            bytemuck::cast_slice_mut::<u128, u8>(&mut storage)[..data.len()].copy_from_slice(data);
            Constant::Copied(storage, data.len())
        }
    }

    /// Its bytes, `model` being the file it was made from.
    pub(super) fn bytes<'m>(&'m self, model: &'m [u8]) -> &'m [u8] {
        match self {
            Constant::InModel(range) => &model[range.clone()],
            Constant::Copied(storage, len) => &bytemuck::cast_slice(storage)[..*len],
        }
    }
}
