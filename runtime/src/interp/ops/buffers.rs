//! A node's bytes at run time: the buffers it reads and writes, the element
//! type views its kernels cast them to, and the element sizes the runtime
//! moves.

use qneon_tflite::TensorType;
use smallvec::SmallVec;

/// Inputs and outputs a node keeps on the stack during invoke; more (a wide
/// CONCATENATION or SPLIT) spill to the heap.
pub(crate) const INLINE: usize = 4;

/// Inputs a node keeps on the stack: the recurrent ops take more than
/// [`INLINE`] (SVDF 5, UNIDIRECTIONAL_SEQUENCE_LSTM 24) and run every
/// invoke, so their inputs must not spill to the heap.
pub(crate) const INLINE_INPUTS: usize = 24;

/// A node's input slices, in the operator's input order.
pub(crate) type Ins<'b> = SmallVec<[&'b [u8]; INLINE_INPUTS]>;
/// A node's output slices, in the operator's output order.
pub(crate) type Outs<'b> = SmallVec<[&'b mut [u8]; INLINE]>;

/// The buffers of one node: inputs in operator order (an omitted optional
/// input is empty, and so is a variable input the kernel updates in place),
/// outputs, the node's scratch, and the variable tensors it updates in place
/// (in the order of its `state_inputs`).
pub(crate) struct Io<'b> {
    pub ins: Ins<'b>,
    pub outs: Outs<'b>,
    pub scratch: &'b mut [u8],
    /// The byte of output 0 where `outs[0]` starts: 0 when it is the whole
    /// output, a band's start when a thread runs only some tiles.
    pub out_start: usize,
    // Read by the kernels of recurrent ops (LSTM, SVDF state) once they
    // land; the session and the node I/O provide it already.
    #[allow(dead_code)]
    pub state: Outs<'b>,
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

/// Elements `elements` of output 0 as `T`s, where `output` holds output
/// 0's bytes from byte `out_start` on (the whole output, or the band of the
/// tiles one thread runs); an error when they are not all in it.
pub(crate) fn output_band<T: bytemuck::Pod>(
    output: &mut [u8],
    out_start: usize,
    elements: std::ops::Range<usize>,
) -> Result<&mut [T], String> {
    let size = std::mem::size_of::<T>();
    let bytes = elements.start * size..elements.end * size;
    let len = output.len();
    let local = bytes
        .start
        .checked_sub(out_start)
        .zip(bytes.end.checked_sub(out_start));
    match local.and_then(|(start, end)| output.get_mut(start..end)) {
        Some(band) => view_mut(band),
        None => Err(format!(
            "output bytes {bytes:?} outside the {len} bytes from {out_start}"
        )),
    }
}

/// Elements `tiles` cover when tiles are `grain` elements each and the last
/// one ends at `len`: what an element-wise or row-wise kernel runs for a
/// tile range.
pub(crate) fn tile_elements(
    tiles: std::ops::Range<usize>,
    grain: usize,
    len: usize,
) -> std::ops::Range<usize> {
    let end = tiles.end.saturating_mul(grain).min(len);
    tiles.start.saturating_mul(grain).min(end)..end
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
