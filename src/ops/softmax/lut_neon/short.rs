//! Rows of at most 16 bytes of the NEON `Method::Lut` softmax, four rows at
//! a time.
//!
//! At 16-wide rows (attention over short sequences, classifier heads) the
//! per-row work of the long-row kernel (a 64-entry output table built with
//! about 50 instructions, a scalar reciprocal) costs more than the row's
//! elements. Here a row is one 16-byte window of the input, and:
//! * sum: `t[d]`'s high and low bytes by `tbl` (plus `tbx` per further
//!   64-entry chunk, each chunk loaded once per group), the four rows' sums
//!   gathered into the lanes of one vector by pairwise adds; lanes past the
//!   row read `d = 0` and their `t[0] = 65535` comes off the sum again;
//! * reciprocal: TFLite's `1 / (f32(sum) * out_scale)` on the four lanes at
//!   once (`fdiv` rounds as the scalar division does; sums of at most 16
//!   terms are below 2^20, so `f32(sum)` is exact and the exponent needs no
//!   clamp), the Q0.31 multiplier and shift taken from its bits;
//! * output: `t[d]` re-assembled from its bytes into u32 lanes, then
//!   `MultiplyByQuantizedMultiplier` as `sqrdmulh` and a rounding right
//!   shift (the products are non-negative, so rounding half up is
//!   TFLite's rounding half away from zero).
//!
//! Windows are stored whole: their bytes past the row are the next rows'
//! outputs, rewritten when those rows are done; the caller runs the rows
//! whose window would pass the end of the slices another way.

// The four-row group, its lane sums and per-lane splats are the exact
// kernel's short-row helpers.
use super::fixed_short::{lane, row_sums, GROUP};
use crate::ops::softmax_rows::lut::{Bytes64, SoftmaxLut};
use crate::ops::softmax_rows::neon::blocks::opaque;
use core::arch::aarch64::*;

/// Bytes of a window (the longest row this path takes).
pub(super) const WINDOW: usize = 16;

/// `QuantizeMultiplier(1 / (f32(sum) * out_scale))` of four row sums (each
/// in `65535..2^20`): the Q0.31 multipliers and the shifts (negative:
/// right shifts, as `urshl` takes them).
#[inline(always)]
fn multipliers(sum: uint32x4_t, output_scale: f32) -> (int32x4_t, int32x4_t) {
    // SAFETY: register arithmetic.
    unsafe {
        let product = vmulq_n_f32(vcvtq_f32_u32(sum), output_scale);
        let bits = vreinterpretq_u32_f32(vdivq_f32(vdupq_n_f32(1.0), product));
        // The implicit one at bit 30, the 23 stored bits below it.
        let mantissa = vshlq_n_u32::<7>(vandq_u32(bits, vdupq_n_u32(0x7f_ffff)));
        let multiplier = vreinterpretq_s32_u32(vorrq_u32(mantissa, vdupq_n_u32(0x4000_0000)));
        let shift = vsubq_s32(
            vreinterpretq_s32_u32(vshrq_n_u32::<23>(bits)),
            vdupq_n_s32(126),
        );
        (multiplier, shift)
    }
}

/// One row's outputs from the high and low bytes of its `t[d]`.
#[inline(always)]
fn outputs<const SIGNED: bool>(
    high: uint8x16_t,
    low: uint8x16_t,
    multiplier: int32x4_t,
    shift: int32x4_t,
) -> uint8x16_t {
    // SAFETY: register arithmetic. t <= 65535 and the multiplier is
    // positive, so the products are non-negative and `urshl` by the negative
    // shift (7..=16 places) is TFLite's rounding divide by a power of two.
    unsafe {
        // Little-endian: the low byte first makes the u16 value.
        let t0 = vreinterpretq_u16_u8(vzip1q_u8(low, high));
        let t1 = vreinterpretq_u16_u8(vzip2q_u8(low, high));
        let t = [
            vmovl_u16(vget_low_u16(t0)),
            vmovl_high_u16(t0),
            vmovl_u16(vget_low_u16(t1)),
            vmovl_high_u16(t1),
        ];
        let q = t.map(|t| {
            let product = vqrdmulhq_s32(vreinterpretq_s32_u32(t), multiplier);
            vreinterpretq_u16_u32(vrshlq_u32(vreinterpretq_u32_s32(product), shift))
        });
        // Each output is at most 256: the low halves hold it.
        let lo = vuzp1q_u16(q[0], q[1]);
        let hi = vuzp1q_u16(q[2], q[3]);
        let y = vqmovn_high_u16(vqmovn_u16(lo), hi);
        if SIGNED {
            // q - 128 is q ^ 0x80 for q in 0..=255.
            veorq_u8(y, vdupq_n_u8(0x80))
        } else {
            y
        }
    }
}

/// The number of leading rows of `row_len <= 16` bytes this path can run:
/// whole groups of four whose last window lies in both slices (`n` bytes).
pub(super) fn groups(n: usize, row_len: usize) -> usize {
    if row_len == 0 || row_len > WINDOW || n < WINDOW {
        return 0;
    }
    // Row r's window ends at r * row_len + 16 <= n.
    let rows = ((n - WINDOW) / row_len + 1).min(n / row_len);
    rows / GROUP
}

/// Softmax of the first `groups * 4` rows of `row_len <= 16` bytes, each
/// read and written as a 16-byte window; `groups` as [`groups`] gives it.
/// `p.output_zero_point` is the type's minimum (TFLite's required output).
// Index loops over fixed-size arrays of registers: the indices pick
// chunks and rows at compile time once unrolled.
#[allow(clippy::needless_range_loop)]
#[inline(always)]
pub(super) fn short_rows<const SIGNED: bool>(
    p: &SoftmaxLut,
    input: &[u8],
    output: &mut [u8],
    row_len: usize,
    groups: usize,
) {
    debug_assert!((1..=WINDOW).contains(&row_len));
    let last = (groups * GROUP).saturating_sub(1) * row_len + WINDOW;
    assert!(groups == 0 || (last <= input.len() && last <= output.len()));
    // Lanes past the row: 0 in `keep` (d = 0: one t[0] each, taken off).
    let keep_bytes: [u8; WINDOW] = core::array::from_fn(|i| if i < row_len { 0xff } else { 0 });
    // SAFETY: register arithmetic; the array is WINDOW bytes.
    let (keep, fill, extra) = unsafe {
        (
            vld1q_u8(keep_bytes.as_ptr()),
            vdupq_n_u8(if SIGNED { 0x80 } else { 0 }),
            vdupq_n_u32((WINDOW - row_len) as u32 * p.exp[0] as u32),
        )
    };
    let full = row_len == WINDOW;
    let src = input.as_ptr();
    let dst = output.as_mut_ptr();
    for g in 0..groups {
        let base = g * GROUP * row_len;
        // SAFETY: window `base + i * row_len` of 16 bytes lies within input
        // (checked above); the rest is register arithmetic.
        let d: [uint8x16_t; GROUP] = unsafe {
            let x: [uint8x16_t; GROUP] =
                core::array::from_fn(|i| vld1q_u8(src.add(base + i * row_len)));
            core::array::from_fn(|i| {
                let m = if full {
                    x[i]
                } else {
                    vbslq_u8(keep, x[i], fill)
                };
                let max = if SIGNED {
                    vmaxvq_s8(vreinterpretq_s8_u8(m)) as u8
                } else {
                    vmaxvq_u8(m)
                };
                let d = vsubq_u8(vdupq_n_u8(max), x[i]);
                if full {
                    d
                } else {
                    vandq_u8(d, keep)
                }
            })
        };
        let plane = |table: &[Bytes64; 4], chunks: usize| {
            // SAFETY: each chunk is 64 bytes; register arithmetic.
            unsafe {
                let c = vld1q_u8_x4(opaque(table[0].0.as_ptr()));
                let mut bytes = d.map(|d| vqtbl4q_u8(c, d));
                for k in 1..4 {
                    if k < chunks {
                        // d - 64 k indexes chunk k (tbx of an index outside
                        // 0..64 keeps the lane); formed only where a row
                        // needs the chunk.
                        let c = vld1q_u8_x4(opaque(table[k].0.as_ptr()));
                        let offset = vdupq_n_u8(64 * k as u8);
                        for i in 0..GROUP {
                            bytes[i] = vqtbx4q_u8(bytes[i], c, vsubq_u8(d[i], offset));
                        }
                    }
                }
                bytes
            }
        };
        let high = plane(&p.high, p.high_chunks);
        let low = plane(&p.low, p.low_chunks);
        // SAFETY: register arithmetic; sums stay below 2^20.
        let sum = unsafe {
            let s = vaddq_u32(vshlq_n_u32::<8>(row_sums(high)), row_sums(low));
            vsubq_u32(s, extra)
        };
        let (multiplier, shift) = multipliers(sum, p.output_scale);
        for i in 0..GROUP {
            let (m, s) = lane(multiplier, shift, i);
            let y = outputs::<SIGNED>(high[i], low[i], m, s);
            // SAFETY: the window lies within output (checked above); rows are
            // written in order, so bytes past this row are rewritten later.
            unsafe { vst1q_u8(dst.add(base + i * row_len), y) };
        }
    }
}
