//! Rows of at most 64 bytes of the exact 8-bit `Method::FixedPoint` NEON
//! kernel, four rows at a time, where every output with `d >= 64` is the
//! zero point (`SoftmaxExact::outputs_fit`).
//!
//! A row is one 16-byte (rows of up to 16) or 64-byte window of the input
//! (lanes past the row are masked to `d = 0`, whose term is taken off the
//! sum again), and the per-row work of the long-row kernel would dominate
//! it. Instead:
//! * sum: the term bytes of each plane by `tbl` (plus `tbx` per further
//!   chunk), the four rows' sums gathered into the lanes of one vector by
//!   pairwise adds;
//! * reciprocal: the reference's `get_reciprocal` on those four lanes at
//!   once (row sums of at most 64 terms are below 2^26, so the normalizing
//!   shift is a per-lane `clz`);
//! * output, rows of up to 16: `e[d]` gathered from its four byte planes
//!   (`d < 64`; beyond, `tbl` reads 0 and so does the output), then the
//!   reference's output arithmetic on four lanes per 32-bit register (the
//!   64-entry output table would cost four instructions per element);
//!   longer rows: the one-chunk output table, from `e[0..64]` loaded once
//!   per group.
//!
//! Windows are stored whole: their bytes past the row are the next rows'
//! outputs, rewritten when those rows are done (the caller runs the rows
//! whose window would pass the end of the slices another way).

use super::blocks::{opaque, STEP};
use super::fixed::output_table_from;
use crate::fixedpoint::{one_over_one_plus_x_for_x_in_0_1, Q0_31};
use crate::ops::softmax::exact::{SoftmaxExact, PLANES};
use crate::ops::softmax::params::ACCUMULATION_INTEGER_BITS;
use core::arch::aarch64::*;

/// Bytes of a window.
pub(super) const WINDOW: usize = 16;
/// Rows per group (lanes of the reciprocal).
pub(super) const GROUP: usize = 4;

/// The four 64-byte chunks of `e`'s byte planes for `d < 64`.
#[inline(always)]
fn load_exp_bytes(t: &SoftmaxExact) -> [uint8x16x4_t; 4] {
    // Opaque: loaded once per group, not kept in registers across the sum.
    // SAFETY: each plane is 64 bytes.
    core::array::from_fn(|j| unsafe { vld1q_u8_x4(opaque(t.exp_bytes[j].0.as_ptr())) })
}

/// The lane sums of four rows' 16 bytes, as u32 lanes (row `i` in lane `i`).
#[inline(always)]
pub(super) fn row_sums(b: [uint8x16_t; GROUP]) -> uint32x4_t {
    // SAFETY: register arithmetic.
    row_sums16(b.map(|x| unsafe { vpaddlq_u8(x) }))
}

/// The lane sums of four rows' u16 lanes (each at most 2^16 / 8), as u32
/// lanes.
#[inline(always)]
fn row_sums16(w: [uint16x8_t; GROUP]) -> uint32x4_t {
    // SAFETY: register arithmetic; the pairwise sums of eight lanes fit u16.
    unsafe {
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

/// Softmax of the first `groups * 4` rows of `row_len <= 16` bytes (all 16
/// when `FULL`), each
/// read and written as a 16-byte window; the caller checked that every
/// window lies in both slices, and that `t.outputs_fit`.
// Index loops over fixed-size arrays of registers and planes: the
// indices pick planes, chunks and lanes at compile time once unrolled.
#[allow(clippy::needless_range_loop)]
#[inline(always)]
pub(super) fn short_rows<const SIGNED: bool, const FULL: bool>(
    t: &SoftmaxExact,
    input: &[u8],
    output: &mut [u8],
    row_len: usize,
    groups: usize,
) {
    debug_assert!(row_len <= WINDOW && t.outputs_fit && (row_len == WINDOW) == FULL);
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
                let m = if FULL { x } else { vbslq_u8(keep, x, fill) };
                if SIGNED {
                    vmaxvq_s8(vreinterpretq_s8_u8(m)) as u8
                } else {
                    vmaxvq_u8(m)
                }
            });
            core::array::from_fn(|i| {
                let d = vsubq_u8(vdupq_n_u8(maxes[i]), x[i]);
                if FULL {
                    d
                } else {
                    vandq_u8(d, keep)
                }
            })
        };
        // SAFETY: register arithmetic.
        let mut sum = unsafe { vdupq_n_u32(0) };
        for j in 0..PLANES {
            let chunks = t.plane_chunks[j];
            if chunks == 0 {
                continue;
            }
            // Each plane's bytes by tbl, then tbx over its further nonzero
            // chunks (tbx of an index outside 0..64 keeps the lane), each
            // chunk loaded once for the four rows.
            // SAFETY: the chunk is 64 bytes; register arithmetic.
            let mut bytes = unsafe {
                let c = vld1q_u8_x4(opaque(t.planes[j][0].0.as_ptr()));
                d.map(|d| vqtbl4q_u8(c, d))
            };
            for k in 1..4 {
                if k < chunks {
                    // SAFETY: the chunk is 64 bytes; register arithmetic.
                    // d - 64 k indexes chunk k, formed only where a row needs it.
                    unsafe {
                        let c = vld1q_u8_x4(opaque(t.planes[j][k].0.as_ptr()));
                        let offset = vdupq_n_u8(64 * k as u8);
                        for i in 0..GROUP {
                            bytes[i] = vqtbx4q_u8(bytes[i], c, vsubq_u8(d[i], offset));
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
            let (s, n) = lane(scale, neg_exponent, i);
            let y = outputs::<SIGNED>(&exp, d, s, n);
            // SAFETY: the window lies within output (checked above); rows are
            // written in order, so bytes past this row are rewritten later.
            unsafe { vst1q_u8(dst.add(base + i * row_len), y) };
        }
    }
}

/// Softmax of the first `groups * 4` rows of `row_len <= 64` bytes (all
/// 64 when `FULL`), each read and written as a 64-byte window; the caller
/// checked that every window lies in both slices, and that
/// `t.outputs_fit`. Per row: maximum, `d` (masked lanes to 0), each
/// plane's bytes by `tbl`/`tbx` over its chunks, summed in u16 lanes; per
/// group: the four sums in one vector and their reciprocals; per row again:
/// its output table (one chunk: the outputs past `d = 63` are the zero
/// point) and the lookup.
// Index loops over fixed-size arrays of registers and planes: the
// indices pick planes, chunks and lanes at compile time once unrolled.
#[allow(clippy::needless_range_loop)]
#[inline(always)]
pub(super) fn window_rows<const SIGNED: bool, const FULL: bool>(
    t: &SoftmaxExact,
    input: &[u8],
    output: &mut [u8],
    row_len: usize,
    groups: usize,
) {
    debug_assert!(row_len <= STEP && t.outputs_fit && (row_len == STEP) == FULL);
    let last = (groups * GROUP).saturating_sub(1) * row_len + STEP;
    assert!(groups == 0 || (last <= input.len() && last <= output.len()));
    let keep_bytes: [u8; STEP] = core::array::from_fn(|i| if i < row_len { 0xff } else { 0 });
    // SAFETY: register arithmetic.
    let (fill, extra) = unsafe {
        (
            vdupq_n_u8(if SIGNED { 0x80 } else { 0 }),
            vdupq_n_u32((STEP - row_len) as u32 * t.term0),
        )
    };
    let src = input.as_ptr();
    let dst = output.as_mut_ptr();
    for g in 0..groups {
        let base = g * GROUP * row_len;
        let mut maxes = [0u8; GROUP];
        // SAFETY: register arithmetic.
        let mut acc = [[unsafe { vdupq_n_u16(0) }; GROUP]; PLANES];
        for i in 0..GROUP {
            // SAFETY: window `base + i * row_len` of 64 bytes lies within
            // input (checked above); the mask is 64 bytes; the rest is
            // register arithmetic.
            let d = unsafe {
                let b = vld1q_u8_x4(src.add(base + i * row_len));
                let mut x = [b.0, b.1, b.2, b.3];
                let keep = if FULL {
                    None
                } else {
                    let k = vld1q_u8_x4(opaque(keep_bytes.as_ptr()));
                    Some([k.0, k.1, k.2, k.3])
                };
                if let Some(k) = keep {
                    for r in 0..4 {
                        x[r] = vbslq_u8(k[r], x[r], fill);
                    }
                }
                let max = if SIGNED {
                    let s = |v| vreinterpretq_s8_u8(v);
                    vmaxvq_s8(vmaxq_s8(
                        vmaxq_s8(s(x[0]), s(x[1])),
                        vmaxq_s8(s(x[2]), s(x[3])),
                    )) as u8
                } else {
                    vmaxvq_u8(vmaxq_u8(vmaxq_u8(x[0], x[1]), vmaxq_u8(x[2], x[3])))
                };
                maxes[i] = max;
                let maxv = vdupq_n_u8(max);
                let mut d = x.map(|x| vsubq_u8(maxv, x));
                if let Some(k) = keep {
                    for r in 0..4 {
                        d[r] = vandq_u8(d[r], k[r]);
                    }
                }
                d
            };
            for j in 0..PLANES {
                let chunks = t.plane_chunks[j];
                if chunks == 0 {
                    continue;
                }
                // SAFETY: each chunk is 64 bytes; register arithmetic.
                unsafe {
                    let c = vld1q_u8_x4(opaque(t.planes[j][0].0.as_ptr()));
                    let mut bytes = d.map(|d| vqtbl4q_u8(c, d));
                    for k in 1..4 {
                        if k < chunks {
                            // d - 64 k indexes chunk k, formed only where
                            // the row needs it.
                            let c = vld1q_u8_x4(opaque(t.planes[j][k].0.as_ptr()));
                            let offset = vdupq_n_u8(64 * k as u8);
                            for r in 0..4 {
                                bytes[r] = vqtbx4q_u8(bytes[r], c, vsubq_u8(d[r], offset));
                            }
                        }
                    }
                    // At most 8 * 255 per u16 lane.
                    let mut a = vpaddlq_u8(bytes[0]);
                    for b in &bytes[1..] {
                        a = vpadalq_u8(a, *b);
                    }
                    acc[j][i] = a;
                }
            }
        }
        // SAFETY: register arithmetic.
        let mut sum = unsafe { vdupq_n_u32(0) };
        for (j, a) in acc.into_iter().enumerate() {
            // SAFETY: register arithmetic; sums stay below 2^26.
            sum = unsafe { vaddq_u32(sum, vshlq_u32(row_sums16(a), vdupq_n_s32(8 * j as i32))) };
        }
        // SAFETY: register arithmetic; the masked lanes' terms come off.
        let sum = unsafe { vsubq_u32(sum, extra) };
        let (scale, neg_exponent) = reciprocals(sum);
        // e[0..64], loaded once for the four rows' tables.
        let e = opaque(t.exp.as_ptr());
        // SAFETY: the 16 loads of four read e[0..64] of the 256 entries.
        let e: [int32x4_t; 16] = core::array::from_fn(|k| unsafe { vld1q_s32(e.add(4 * k)) });
        for (i, &max) in maxes.iter().enumerate() {
            let (s, n) = lane(scale, neg_exponent, i);
            let [table] = output_table_from::<1>(|k| e[k], s, n);
            let at = base + i * row_len;
            // SAFETY: the window lies within input and output (checked
            // above); rows are written in order, so bytes past this row are
            // rewritten later. The rest is register arithmetic.
            unsafe {
                let b = vld1q_u8_x4(src.add(at));
                let maxv = vdupq_n_u8(max);
                let y = [b.0, b.1, b.2, b.3].map(|x| {
                    let q = vqtbl4q_u8(table, vsubq_u8(maxv, x));
                    if SIGNED {
                        veorq_u8(q, vdupq_n_u8(0x80))
                    } else {
                        q
                    }
                });
                vst1q_u8_x4(dst.add(at), uint8x16x4_t(y[0], y[1], y[2], y[3]));
            }
        }
    }
}

/// Lane `i` of the scales and negated exponents, splat.
#[inline(always)]
pub(super) fn lane(scale: int32x4_t, neg_exponent: int32x4_t, i: usize) -> (int32x4_t, int32x4_t) {
    // SAFETY: register arithmetic.
    unsafe {
        match i {
            0 => (
                vdupq_laneq_s32::<0>(scale),
                vdupq_laneq_s32::<0>(neg_exponent),
            ),
            1 => (
                vdupq_laneq_s32::<1>(scale),
                vdupq_laneq_s32::<1>(neg_exponent),
            ),
            2 => (
                vdupq_laneq_s32::<2>(scale),
                vdupq_laneq_s32::<2>(neg_exponent),
            ),
            _ => (
                vdupq_laneq_s32::<3>(scale),
                vdupq_laneq_s32::<3>(neg_exponent),
            ),
        }
    }
}
