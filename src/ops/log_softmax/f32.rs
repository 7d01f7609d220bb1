//! Log-softmax, [`Method::DequantF32`](crate::Method::DequantF32):
//! dequantize, `exp` and `ln` in `f32`, requantize (see
//! [`crate::ops::dequant_f32`] for the method and its accuracy). The row code
//! is generic over the lanes; the scalar backend runs it on 16 `f32`, NEON
//! on four `float32x4_t` (`log_softmax_f32_i8`, ... under stable names).

use crate::elem::QuantElem;
#[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
use crate::elem::{view, Slices};
use crate::f32::{ln_f32, BLOCK};
use crate::ops::dequant_f32::{f32_multiplier, sum_of_exps, QuantLanes};
use crate::quant::QuantParams;
use crate::simd::tail::map_blocks_at;
#[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
use core::arch::aarch64::float32x4_t;

/// Prepared `Method::DequantF32` log-softmax.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct LogSoftmaxF32 {
    /// `input_scale` in `f32` (the exps' multiplier, beta = 1).
    pub(crate) input_multiplier: f32,
    /// `input_scale / output_scale`, rounded once to `f32`.
    pub(crate) output_multiplier: f32,
    /// `1 / output_scale` in `f32` (16: TFLite fixes the scale at 16/256).
    pub(crate) inv_output_scale: f32,
    /// Output zero point.
    pub(crate) output_zero_point: i32,
}

impl LogSoftmaxF32 {
    /// From validated quantization.
    pub(crate) fn new(input: QuantParams, output: QuantParams) -> Self {
        LogSoftmaxF32 {
            input_multiplier: f32_multiplier(input.scale as f64),
            output_multiplier: f32_multiplier(input.scale as f64 / output.scale as f64),
            inv_output_scale: 1.0 / output.scale,
            output_zero_point: output.zero_point,
        }
    }
}

/// Log-softmax of every `row_len`-long row (lengths checked by the caller).
#[inline(always)]
pub(crate) fn log_softmax_rows<L: QuantLanes<T, N>, T: QuantElem, const N: usize>(
    k: &LogSoftmaxF32,
    input: &[T],
    output: &mut [T],
    row_len: usize,
) {
    if row_len == 0 {
        return; // checked by the caller; lets the compiler drop a panic path
    }
    let c = L::splat(k.input_multiplier);
    let m = L::splat(k.output_multiplier);
    let pad = T::from_i32(T::MIN);
    for (x, y) in input
        .chunks_exact(row_len)
        .zip(output.chunks_exact_mut(row_len))
    {
        let max = L::row_max(x);
        let sum = sum_of_exps::<L, T, N>(x, max, c, None);
        // ln(sum) >= 0 in output steps (exact product for the power-of-two scale).
        let b = L::splat(-(ln_f32(sum) * k.inv_output_scale));
        map_blocks_at::<BLOCK, T>(x, y, pad, |src, dst, _| {
            // SAFETY: map_blocks hands out 16 readable elements.
            let mut v = unsafe { L::load_offset(src, max) };
            for d in v.iter_mut() {
                *d = d.fma(m, b);
            }
            // SAFETY: map_blocks hands out 16 writable elements.
            unsafe { L::store_requantized(dst, v, k.output_zero_point) };
        });
    }
}

/// Log-softmax rows on the scalar backend; lengths were checked by the caller.
pub(crate) fn log_softmax_scalar<T: QuantElem>(
    k: &LogSoftmaxF32,
    input: &[T],
    output: &mut [T],
    row_len: usize,
) {
    log_softmax_rows::<f32, T, BLOCK>(k, input, output, row_len)
}

macro_rules! neon_kernels {
    ($($name:ident: $t:ty;)*) => {$(
        #[doc = concat!("`log_softmax_rows` on `", stringify!($t), "` rows, NEON.")]
        #[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
        #[inline(never)]
        pub(crate) fn $name(k: &LogSoftmaxF32, input: &[$t], output: &mut [$t], row_len: usize) {
            log_softmax_rows::<float32x4_t, $t, 4>(k, input, output, row_len)
        }
    )*};
}

neon_kernels! {
    log_softmax_f32_i8: i8;
    log_softmax_f32_u8: u8;
}

/// Log-softmax rows (int8, uint8) on NEON; lengths were checked by the caller.
#[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
pub(crate) fn log_softmax_neon<T: QuantElem>(
    k: &LogSoftmaxF32,
    input: &[T],
    output: &mut [T],
    row_len: usize,
) {
    match view(input, output) {
        Slices::I8(i, o) => log_softmax_f32_i8(k, i, o, row_len),
        Slices::U8(i, o) => log_softmax_f32_u8(k, i, o, row_len),
        // LogSoftmax::new rejects int16; the generic loop is still correct.
        Slices::I16(i, o) => log_softmax_rows::<float32x4_t, i16, 4>(k, i, o, row_len),
    }
}
