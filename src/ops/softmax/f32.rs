//! Softmax, [`Method::DequantF32`](crate::Method::DequantF32): dequantize,
//! `exp` in `f32`, requantize (see [`crate::ops::dequant_f32`] for the
//! method and its accuracy). The row code is generic over the lanes; the
//! scalar backend runs it on 16 `f32`, NEON on four `float32x4_t`
//! (`softmax_f32_i8`, ... under stable names for the asm checks).

use crate::elem::QuantElem;
#[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
use crate::elem::{view, Slices};
use crate::f32::BLOCK;
use crate::ops::dequant_f32::{exp_block, sum_of_exps, QuantLanes, EXP_CACHE};
use crate::ops::softmax_rows::SoftmaxF32;
use crate::simd::tail::map_blocks_at;
#[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
use core::arch::aarch64::float32x4_t;

/// Softmax of every `row_len`-long row (lengths checked by the caller).
#[inline(always)]
pub(crate) fn softmax_rows<L: QuantLanes<T, N>, T: QuantElem, const N: usize>(
    k: &SoftmaxF32,
    input: &[T],
    output: &mut [T],
    row_len: usize,
) {
    if row_len == 0 {
        return; // checked by the caller; lets the compiler drop a panic path
    }
    let mut cache = [0.0f32; EXP_CACHE];
    let c = L::splat(k.input_multiplier);
    let pad = T::from_i32(T::MIN);
    for (x, y) in input
        .chunks_exact(row_len)
        .zip(output.chunks_exact_mut(row_len))
    {
        let max = L::row_max(x);
        // >= 1: the maximum contributes exp(0) = 1.
        let sum = sum_of_exps::<L, T, N>(x, max, c, Some(&mut cache));
        let r = L::splat(k.inv_output_scale / sum);
        let split = x.len().min(EXP_CACHE);
        let (x_cached, x_rest) = x.split_at(split);
        let (y_cached, y_rest) = y.split_at_mut(split);
        map_blocks_at::<BLOCK, T>(x_cached, y_cached, pad, |_, dst, start| {
            let mut e = [L::splat(0.0); N];
            for (j, v) in e.iter_mut().enumerate() {
                // SAFETY: sum_of_exps stored this block: start + 16 <= EXP_CACHE.
                *v = unsafe { L::load(cache.as_ptr().add(start + j * L::WIDTH)) }.mul(r);
            }
            // SAFETY: map_blocks hands out 16 writable elements.
            unsafe { L::store_requantized(dst, e, k.output_zero_point) };
        });
        map_blocks_at::<BLOCK, T>(x_rest, y_rest, pad, |src, dst, _| {
            // SAFETY: map_blocks hands out 16 readable elements.
            let mut e = unsafe { exp_block::<L, T, N>(src, max, c) };
            for v in e.iter_mut() {
                *v = v.mul(r);
            }
            // SAFETY: map_blocks hands out 16 writable elements.
            unsafe { L::store_requantized(dst, e, k.output_zero_point) };
        });
    }
}

/// Softmax rows on the scalar backend; lengths were checked by the caller.
pub(crate) fn softmax_scalar<T: QuantElem>(
    k: &SoftmaxF32,
    input: &[T],
    output: &mut [T],
    row_len: usize,
) {
    softmax_rows::<f32, T, BLOCK>(k, input, output, row_len)
}

macro_rules! neon_kernels {
    ($($name:ident: $t:ty;)*) => {$(
        #[doc = concat!("`softmax_rows` on `", stringify!($t), "` rows, NEON.")]
        #[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
        #[inline(never)]
        pub(crate) fn $name(k: &SoftmaxF32, input: &[$t], output: &mut [$t], row_len: usize) {
            softmax_rows::<float32x4_t, $t, 4>(k, input, output, row_len)
        }
    )*};
}

neon_kernels! {
    softmax_f32_i8: i8;
    softmax_f32_u8: u8;
    softmax_f32_i16: i16;
}

/// Softmax rows on NEON; lengths were checked by the caller.
#[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
pub(crate) fn softmax_neon<T: QuantElem>(
    k: &SoftmaxF32,
    input: &[T],
    output: &mut [T],
    row_len: usize,
) {
    match view(input, output) {
        Slices::I8(i, o) => softmax_f32_i8(k, i, o, row_len),
        Slices::U8(i, o) => softmax_f32_u8(k, i, o, row_len),
        Slices::I16(i, o) => softmax_f32_i16(k, i, o, row_len),
    }
}
