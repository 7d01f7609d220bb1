//! The NEON kernel: output-stationary, 16 output channels in the lanes of
//! four `int32x4_t` accumulators. For each output pixel and block of 16
//! channels it walks the taps that reach the pixel ([`taps`]) and, per
//! input channel, multiplies the input value less its zero point (an
//! `i16` in `-255..=255`) by the block's 16 weights (widened to `i16` at
//! `new()`) with `smlal` / `smlal2`: exact products, sums wrapping modulo
//! 2^32 as the scalar oracle's. The accumulators then take the scalar
//! output stage lane by lane.

use core::arch::aarch64::*;
use core::ops::Range;

use super::geometry::{taps, TransposeConvGeometry};
use super::{Packed, BLOCK};
use crate::ops::conv::OutputStage;

/// Output rows `rows` of the whole NHWC `output` (checked by the caller).
/// Out of line: one call per tile, and the asm check finds it by name.
#[inline(never)]
pub(crate) fn transpose_conv(
    g: &TransposeConvGeometry,
    packed: &Packed,
    input_zero_point: i32,
    stage: &OutputStage,
    input: &[i8],
    output: &mut [i8],
    rows: Range<usize>,
) {
    let (kh, kw, depth) = (g.kernel_height, g.kernel_width, g.input_channels);
    let in_row = g.input_width * depth;
    let out_row = g.output_width * g.output_channels;
    let block_weights = kh * kw * depth * BLOCK;
    // In -128..=127 (checked at new()).
    let zero_point = input_zero_point as i16;
    let mut lanes = [0i32; BLOCK];
    for r in rows {
        let (b, oy) = (r / g.output_height, r % g.output_height);
        let image = &input[b * g.input_height * in_row..][..g.input_height * in_row];
        let out = &mut output[r * out_row..][..out_row];
        let ys = taps(oy, g.pad_top, g.stride_height, kh, g.input_height);
        for ox in 0..g.output_width {
            let xs = taps(ox, g.pad_left, g.stride_width, kw, g.input_width);
            let pixel_out = &mut out[ox * g.output_channels..][..g.output_channels];
            for (block, channels) in pixel_out.chunks_mut(BLOCK).enumerate() {
                let weights = &packed.weights[block * block_weights..][..block_weights];
                let bias = &packed.bias[block * BLOCK..][..BLOCK];
                // SAFETY: NEON is enabled (this module's cfg); `bias` holds
                // BLOCK = 16 i32 and `lanes` 16, the four loads and stores
                // read and write 4 lanes each at offsets 0, 4, 8 and 12.
                let mut acc = unsafe {
                    [
                        vld1q_s32(bias.as_ptr()),
                        vld1q_s32(bias.as_ptr().add(4)),
                        vld1q_s32(bias.as_ptr().add(8)),
                        vld1q_s32(bias.as_ptr().add(12)),
                    ]
                };
                for (ky, iy) in ys.clone() {
                    for (kx, ix) in xs.clone() {
                        let pixel = &image[iy * in_row + ix * depth..][..depth];
                        let tap = &weights[(ky * kw + kx) * depth * BLOCK..][..depth * BLOCK];
                        accumulate(&mut acc, pixel, tap, zero_point);
                    }
                }
                // SAFETY: as above.
                unsafe {
                    vst1q_s32(lanes.as_mut_ptr(), acc[0]);
                    vst1q_s32(lanes.as_mut_ptr().add(4), acc[1]);
                    vst1q_s32(lanes.as_mut_ptr().add(8), acc[2]);
                    vst1q_s32(lanes.as_mut_ptr().add(12), acc[3]);
                }
                let c0 = block * BLOCK;
                for (i, (o, &a)) in channels.iter_mut().zip(&lanes).enumerate() {
                    *o = stage.finish(c0 + i, a);
                }
            }
        }
    }
}

/// `acc[lane] += (pixel[i] - zero_point) * tap[i * 16 + lane]` over the
/// pixel's input channels `i`: eight channels at a time from one widened
/// vector of inputs (`smlal` by lane), the rest one by one.
#[inline(always)]
fn accumulate(acc: &mut [int32x4_t; 4], pixel: &[i8], tap: &[i16], zero_point: i16) {
    debug_assert_eq!(tap.len(), pixel.len() * BLOCK);
    let [mut a0, mut a1, mut a2, mut a3] = *acc;
    let mut eights = pixel.chunks_exact(8);
    let mut taps = tap.chunks_exact(8 * BLOCK);
    for (x8, w8) in (&mut eights).zip(&mut taps) {
        // SAFETY: NEON is enabled; `x8` holds 8 i8 and `w8` 8 * 16 i16,
        // read as vectors of 8 at offsets 16 * lane and 16 * lane + 8.
        unsafe {
            let zp = vdupq_n_s16(zero_point);
            let x = vsubq_s16(vmovl_s8(vld1_s8(x8.as_ptr())), zp);
            let w = w8.as_ptr();
            macro_rules! lane {
                ($l:literal) => {
                    let lo = vld1q_s16(w.add($l * BLOCK));
                    let hi = vld1q_s16(w.add($l * BLOCK + 8));
                    a0 = vmlal_laneq_s16::<$l>(a0, vget_low_s16(lo), x);
                    a1 = vmlal_high_laneq_s16::<$l>(a1, lo, x);
                    a2 = vmlal_laneq_s16::<$l>(a2, vget_low_s16(hi), x);
                    a3 = vmlal_high_laneq_s16::<$l>(a3, hi, x);
                };
            }
            lane!(0);
            lane!(1);
            lane!(2);
            lane!(3);
            lane!(4);
            lane!(5);
            lane!(6);
            lane!(7);
        }
    }
    let rest = eights.remainder();
    let rest_taps = &tap[(pixel.len() - rest.len()) * BLOCK..];
    for (&x, w) in rest.iter().zip(rest_taps.chunks_exact(BLOCK)) {
        let v = x as i16 - zero_point;
        // SAFETY: NEON is enabled; `w` holds 16 i16, read as two vectors
        // of 8 at offsets 0 and 8.
        unsafe {
            let lo = vld1q_s16(w.as_ptr());
            let hi = vld1q_s16(w.as_ptr().add(8));
            a0 = vmlal_n_s16(a0, vget_low_s16(lo), v);
            a1 = vmlal_high_n_s16(a1, lo, v);
            a2 = vmlal_n_s16(a2, vget_low_s16(hi), v);
            a3 = vmlal_high_n_s16(a3, hi, v);
        }
    }
    *acc = [a0, a1, a2, a3];
}
