//! The block math of quantize and dequantize, written once over the `f32`
//! lanes of [`QuantLanes`] (16 scalar `f32`s, or four `float32x4_t`); the
//! backend files instantiate it.

use crate::elem::QuantElem;
use crate::ops::dequant_f32::QuantLanes;
use crate::simd::tail::{map_blocks_across, BLOCK};

/// `output[i] = saturate(round_half_away(input[i] / scale) + zero_point)`.
/// The division is one correctly rounded `f32` division, as TFLite's
/// reference kernel divides (`val / static_cast<float>(scale)`); the
/// rounding, the saturating zero-point addition and the saturation to `T`
/// are [`QuantLanes::store_requantized`]'s (NEON `fcvtas`, `sqadd`,
/// saturating narrows). Lengths are checked by the caller.
#[inline(always)]
pub(crate) fn quantize<L: QuantLanes<T, N>, T: QuantElem, const N: usize>(
    scale: f32,
    zero_point: i32,
    input: &[f32],
    output: &mut [T],
) {
    let s = L::splat(scale);
    map_blocks_across::<BLOCK, f32, T>(input, output, 0.0, T::default(), |src, dst| {
        let mut v = [L::splat(0.0); N];
        for (j, x) in v.iter_mut().enumerate() {
            // SAFETY: the walker hands out 16 readable f32s at `src`, and
            // N * WIDTH = 16, so lane group j is in bounds.
            *x = unsafe { L::load(src.add(j * L::WIDTH)) }.div(s);
        }
        // SAFETY: the walker hands out 16 writable elements at `dst`.
        unsafe { L::store_requantized(dst, v, zero_point) };
    });
}

/// `output[i] = (input[i] - zero_point) * scale` in `f32`. The difference
/// (at most 65,535 in magnitude) is exact in `f32`, so the result is the
/// exact product rounded once: what TFLite's reference kernel gives (it
/// multiplies in `f64`, exactly, as the factors have 24 and 17 significant
/// bits, and rounds to `f32` once) and its optimized kernel (one `f32`
/// multiply). Lengths are checked by the caller.
#[inline(always)]
pub(crate) fn dequantize<L: QuantLanes<T, N>, T: QuantElem, const N: usize>(
    scale: f32,
    zero_point: i32,
    input: &[T],
    output: &mut [f32],
) {
    let s = L::splat(scale);
    map_blocks_across::<BLOCK, T, f32>(input, output, T::default(), 0.0, |src, dst| {
        // SAFETY: the walker hands out 16 readable elements at `src`; the
        // zero point is a value of `T` (checked by the caller), as
        // `load_offset` requires.
        let v = unsafe { L::load_offset(src, zero_point) };
        for (j, x) in v.iter().enumerate() {
            // SAFETY: 16 writable f32s at `dst`; lane group j is in bounds.
            unsafe { x.mul(s).store(dst.add(j * L::WIDTH)) };
        }
    });
}
