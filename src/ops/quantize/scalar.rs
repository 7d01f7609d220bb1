//! Quantize and dequantize, [`Backend::Scalar`](crate::Backend::Scalar): the
//! reference, one `f32` at a time (16 per block).

use super::blocks;
use crate::elem::QuantElem;
use crate::f32::BLOCK;

/// See [`blocks::quantize`].
pub(crate) fn quantize<T: QuantElem>(scale: f32, zero_point: i32, input: &[f32], output: &mut [T]) {
    blocks::quantize::<f32, T, BLOCK>(scale, zero_point, input, output);
}

/// See [`blocks::dequantize`].
pub(crate) fn dequantize<T: QuantElem>(
    scale: f32,
    zero_point: i32,
    input: &[T],
    output: &mut [f32],
) {
    blocks::dequantize::<f32, T, BLOCK>(scale, zero_point, input, output);
}
