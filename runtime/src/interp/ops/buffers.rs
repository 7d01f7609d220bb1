//! A node's bytes at run time: the buffers it reads and writes, the element
//! type views its kernels cast them to, and the element sizes the runtime
//! moves.

use qneon_tflite::TensorType;

/// The buffers of one node: inputs in operator order (an omitted optional
/// input is empty), outputs, and the node's scratch.
pub(crate) struct Io<'b> {
    pub ins: crate::interp::carve::Ins<'b>,
    pub outs: crate::interp::carve::Outs<'b>,
    pub scratch: &'b mut [u8],
}

/// The element type views a kernel needs, cast in place from arena bytes
/// (every arena buffer is 64-byte aligned and constant data is copied to
/// aligned memory at load, so the casts cannot fail on a planned model).
pub(crate) fn view<T: bytemuck::Pod>(bytes: &[u8]) -> Result<&[T], String> {
    bytemuck::try_cast_slice(bytes).map_err(|e| format!("tensor data not viewable: {e}"))
}

pub(crate) fn view_mut<T: bytemuck::Pod>(bytes: &mut [u8]) -> Result<&mut [T], String> {
    bytemuck::try_cast_slice_mut(bytes).map_err(|e| format!("tensor data not viewable: {e}"))
}

/// Element size of the types the runtime moves (`None` for others).
pub(crate) fn element_size(dtype: TensorType) -> Option<usize> {
    match dtype {
        TensorType::Int8 | TensorType::Uint8 | TensorType::Bool => Some(1),
        TensorType::Int16 | TensorType::Float16 => Some(2),
        TensorType::Int32 | TensorType::Float32 | TensorType::Uint32 => Some(4),
        TensorType::Int64 | TensorType::Float64 | TensorType::Uint64 => Some(8),
        _ => None,
    }
}
