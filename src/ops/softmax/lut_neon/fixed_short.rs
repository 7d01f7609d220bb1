//! Rows of at most 16 bytes of the exact 8-bit `Method::FixedPoint` NEON
//! kernel, four rows at a time, where every output with `d >= 64` is the
//! zero point (`SoftmaxExact::outputs_fit`).
//!
//! A row is one 16-byte window of the input (lanes past the row are masked
//! to `d = 0`, whose term is taken off the sum again), and the per-row work
//! of the long-row kernel would dominate it: its output table alone costs
//! about four instructions per element. Instead:
//! * sum: the term bytes of each plane by `tbl` (plus `tbx` per further
//!   chunk), the four rows' sums gathered into the lanes of one vector by
//!   pairwise adds;
//! * reciprocal: the reference's `get_reciprocal` on those four lanes at
//!   once (row sums of at most 16 terms are below 2^24, so the normalizing
//!   shift is a per-lane `clz`);
//! * output: `e[d]` gathered from its four byte planes (`d < 64`; beyond,
//!   `tbl` reads 0 and so does the output), then the reference's output
//!   arithmetic on four lanes per 32-bit register.
//!
//! Windows are stored whole: their bytes past the row are the next rows'
//! outputs, rewritten when those rows are done (the caller runs the rows
//! whose window would pass the end of the slices another way).

use super::blocks::opaque;
use crate::fixedpoint::{one_over_one_plus_x_for_x_in_0_1, Q0_31};
use crate::ops::softmax::exact::{SoftmaxExact, PLANES};
use crate::ops::softmax::params::ACCUMULATION_INTEGER_BITS;
use core::arch::aarch64::*;

/// Bytes of a window.
pub(super) const WINDOW: usize = 16;
/// Rows per group (lanes of the reciprocal).
const GROUP: usize = 4;

/// The four 64-byte chunks of `e`'s byte planes for `d < 64`.
#[inline(always)]
fn load_exp_bytes(t: &SoftmaxExact) -> [uint8x16x4_t; 4] {
    // Opaque: loaded once per group, not kept in registers across the sum.
    // SAFETY: each plane is 64 bytes.
    core::array::from_fn(|j| unsafe { vld1q_u8_x4(opaque(t.exp_bytes[j].0.as_ptr())) })
}

/// The lane sums of four rows' 16 bytes, as u32 lanes (row `i` in lane `i`).
#[inline(always)]
fn row_sums(b: [uint8x16_t; GROUP]) -> uint32x4_t {
    // SAFETY: register arithmetic. u16 lanes hold at most 16 * 255.
    unsafe {
        let w = b.map(|x| vpaddlq_u8(x));
        let ab = vpaddq_u16(w[0], w[1]);
        let cd = vpaddq_u16(w[2], w[3]);
        vpaddlq_u16(vpaddq_u16(ab, cd))
    }
}

/// `get_reciprocal` (as `SoftmaxParams::reciprocal` calls it, Q12.19 sums)
/// of four row sums in `1..2^32`, lane by lane: `(scale Q0.31, -exponent)`,
/// with the output exponent `num_bits_over_unit + 31 - 8` negated for
/// `urshl`.
#[inline(always)]
fn reciprocals(sum: uint32x4_t) -> (int32x4_t, int32x4_t) {
    // SAFETY: register arithmetic.
    unsafe {
        // The sum's leading zeros as a u32 (the reference's headroom plus
        // one); the normalized sum has its top bit set.
        let headroom = vreinterpretq_s32_u32(vclzq_u32(sum));
        let normalized = vshlq_u32(sum, headroom);
        let minus_one = vreinterpretq_s32_u32(vsubq_u32(normalized, vdupq_n_u32(1 << 31)));
        let scale = one_over_one_plus_x_for_x_in_0_1(Q0_31::from_raw(minus_one)).raw();
        // exponent = (12 - headroom) + 31 - 8.
        let neg_exponent = vsubq_s32(
            headroom,
            vdupq_n_s32(ACCUMULATION_INTEGER_BITS as i32 + 31 - 8),
        );
        (scale, neg_exponent)
    }
}

/// Outputs of one row from its `d` (all below 256): `e[d]` from the byte
/// planes of its first 64 entries, then `sqrdmulh` by the scale and the
/// rounding shift, as bytes above the type's minimum.
#[inline(always)]
fn outputs<const SIGNED: bool>(
    exp: &[uint8x16x4_t; 4],
    d: uint8x16_t,
    scale: int32x4_t,
    neg_exponent: int32x4_t,
) -> uint8x16_t {
    // SAFETY: register arithmetic. e >= 0 and scale > 0, so the products
    // are non-negative and the unsigned rounding shift is the reference's
    // rounding_divide_by_pot (exponents 23..=35: beyond 31 the rounding bit
    // is added at full precision and a product below 2^31 gives 0, as the
    // reference's zero).
    unsafe {
        let b = exp.map(|plane| vqtbl4q_u8(plane, d));
        // Little-endian: interleaving bytes 0/1 and 2/3, then the halves,
        // gives the e of lanes 0..4, 4..8, 8..12, 12..16.
        let lo01 = vreinterpretq_u16_u8(vzip1q_u8(b[0], b[1]));
        let hi01 = vreinterpretq_u16_u8(vzip2q_u8(b[0], b[1]));
        let lo23 = vreinterpretq_u16_u8(vzip1q_u8(b[2], b[3]));
        let hi23 = vreinterpretq_u16_u8(vzip2q_u8(b[2], b[3]));
        let e = [
            vzip1q_u16(lo01, lo23),
            vzip2q_u16(lo01, lo23),
            vzip1q_u16(hi01, hi23),
            vzip2q_u16(hi01, hi23),
        ];
        let q = e.map(|e| {
            let prod = vqrdmulhq_s32(vreinterpretq_s32_u16(e), scale);
            vreinterpretq_u16_u32(vrshlq_u32(vreinterpretq_u32_s32(prod), neg_exponent))
        });
        // Each output is at most 256: the low halves hold it.
        let lo = vuzp1q_u16(q[0], q[1]);
        let hi = vuzp1q_u16(q[2], q[3]);
        let y = vqmovn_high_u16(vqmovn_u16(lo), hi);
        if SIGNED {
            veorq_u8(y, vdupq_n_u8(0x80))
        } else {
            y
        }
    }
}

/// Softmax of the first `groups * 4` rows of `row_len <= 16` bytes, each
/// read and written as a 16-byte window; the caller checked that every
/// window lies in both slices, and that `t.outputs_fit`.
#[inline(always)]
pub(super) fn short_rows<const SIGNED: bool>(
    t: &SoftmaxExact,
    input: &[u8],
    output: &mut [u8],
    row_len: usize,
    groups: usize,
) {
    debug_assert!(row_len <= WINDOW && t.outputs_fit);
    let last = (groups * GROUP).saturating_sub(1) * row_len + WINDOW;
    assert!(groups == 0 || (last <= input.len() && last <= output.len()));
    // Lanes past the row: 0 in `keep` (d = 0, one term0 each, taken off).
    let keep_bytes: [u8; WINDOW] = core::array::from_fn(|i| if i < row_len { 0xff } else { 0 });
    // SAFETY: register arithmetic; the array is WINDOW bytes.
    let (keep, fill, extra) = unsafe {
        (
            vld1q_u8(keep_bytes.as_ptr()),
            vdupq_n_u8(if SIGNED { 0x80 } else { 0 }),
            vdupq_n_u32((WINDOW - row_len) as u32 * t.term0),
        )
    };
    let src = input.as_ptr();
    let dst = output.as_mut_ptr();
    for g in 0..groups {
        let base = g * GROUP * row_len;
        // SAFETY: window `base + i * row_len` of 16 bytes lies within input
        // (checked above); the rest is register arithmetic.
        let d = unsafe {
            let x: [uint8x16_t; GROUP] =
                core::array::from_fn(|i| vld1q_u8(src.add(base + i * row_len)));
            let maxes: [u8; GROUP] = x.map(|x| {
                let m = vbslq_u8(keep, x, fill);
                if SIGNED {
                    vmaxvq_s8(vreinterpretq_s8_u8(m)) as u8
                } else {
                    vmaxvq_u8(m)
                }
            });
            let d: [uint8x16_t; GROUP] =
                core::array::from_fn(|i| vandq_u8(vsubq_u8(vdupq_n_u8(maxes[i]), x[i]), keep));
            d
        };
        // d - 64 k for the chunks past the first.
        // SAFETY: register arithmetic.
        let dk: [[uint8x16_t; 4]; GROUP] = d.map(|d| unsafe {
            let c = vdupq_n_u8(64);
            let d1 = vsubq_u8(d, c);
            let d2 = vsubq_u8(d1, c);
            [d, d1, d2, vsubq_u8(d2, c)]
        });
        // SAFETY: register arithmetic.
        let mut sum = unsafe { vdupq_n_u32(0) };
        for j in 0..PLANES {
            let chunks = t.plane_chunks[j];
            if chunks == 0 {
                continue;
            }
            // Each plane's bytes by tbx from zero over its nonzero chunks
            // (tbx of an index outside 0..64 keeps the lane), each chunk
            // loaded once for the four rows.
            // SAFETY: register arithmetic.
            let mut bytes = [unsafe { vdupq_n_u8(0) }; GROUP];
            for k in 0..4 {
                if k < chunks {
                    // SAFETY: the chunk is 64 bytes; register arithmetic.
                    unsafe {
                        let c = vld1q_u8_x4(opaque(t.planes[j][k].0.as_ptr()));
                        for i in 0..GROUP {
                            bytes[i] = vqtbx4q_u8(bytes[i], c, dk[i][k]);
                        }
                    }
                }
            }
            let s = row_sums(bytes);
            // SAFETY: register arithmetic; sums stay below 2^24.
            sum = unsafe { vaddq_u32(sum, vshlq_u32(s, vdupq_n_s32(8 * j as i32))) };
        }
        // SAFETY: register arithmetic; the masked lanes' terms come off.
        let sum = unsafe { vsubq_u32(sum, extra) };
        let (scale, neg_exponent) = reciprocals(sum);
        let exp = load_exp_bytes(t);
        for (i, d) in d.into_iter().enumerate() {
            // SAFETY: register arithmetic.
            let (s, n) = unsafe {
                match i {
                    0 => (vdupq_laneq_s32::<0>(scale), vdupq_laneq_s32::<0>(neg_exponent)),
                    1 => (vdupq_laneq_s32::<1>(scale), vdupq_laneq_s32::<1>(neg_exponent)),
                    2 => (vdupq_laneq_s32::<2>(scale), vdupq_laneq_s32::<2>(neg_exponent)),
                    _ => (vdupq_laneq_s32::<3>(scale), vdupq_laneq_s32::<3>(neg_exponent)),
                }
            };
            let y = outputs::<SIGNED>(&exp, d, s, n);
            // SAFETY: the window lies within output (checked above); rows are
            // written in order, so bytes past this row are rewritten later.
            unsafe { vst1q_u8(dst.add(base + i * row_len), y) };
        }
    }
}
