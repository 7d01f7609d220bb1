//! Quantize and dequantize, [`Backend::Neon`](crate::Backend::Neon): the
//! same block math on four `float32x4_t` per 16 elements (`fdiv`, `fcvtas`,
//! `sqadd`, saturating narrows; `scvtf`, `fmul`), bit for bit the scalar
//! results.

use super::blocks;
use crate::elem::{view, QuantElem, Slices};
use core::arch::aarch64::float32x4_t;

macro_rules! kernels {
    ($t:ty, $quantize:ident, $dequantize:ident) => {
        /// See [`blocks::quantize`].
        #[inline(never)]
        pub(crate) fn $quantize(scale: f32, zero_point: i32, input: &[f32], output: &mut [$t]) {
            blocks::quantize::<float32x4_t, $t, 4>(scale, zero_point, input, output);
        }

        /// See [`blocks::dequantize`].
        #[inline(never)]
        pub(crate) fn $dequantize(scale: f32, zero_point: i32, input: &[$t], output: &mut [f32]) {
            blocks::dequantize::<float32x4_t, $t, 4>(scale, zero_point, input, output);
        }
    };
}
kernels!(i8, quantize_i8, dequantize_i8);
kernels!(u8, quantize_u8, dequantize_u8);
kernels!(i16, quantize_i16, dequantize_i16);

/// The kernel of `T`.
pub(crate) fn quantize<T: QuantElem>(scale: f32, zero_point: i32, input: &[f32], output: &mut [T]) {
    // The crate's one slice view, with an empty input of `T`.
    match view::<T>(&[], output) {
        Slices::I8(_, o) => quantize_i8(scale, zero_point, input, o),
        Slices::U8(_, o) => quantize_u8(scale, zero_point, input, o),
        Slices::I16(_, o) => quantize_i16(scale, zero_point, input, o),
    }
}

/// The kernel of `T`.
pub(crate) fn dequantize<T: QuantElem>(
    scale: f32,
    zero_point: i32,
    input: &[T],
    output: &mut [f32],
) {
    // The crate's one slice view, with an empty output of `T`.
    match view::<T>(input, &mut []) {
        Slices::I8(i, _) => dequantize_i8(scale, zero_point, i, output),
        Slices::U8(i, _) => dequantize_u8(scale, zero_point, i, output),
        Slices::I16(i, _) => dequantize_i16(scale, zero_point, i, output),
    }
}
