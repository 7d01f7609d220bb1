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
//!   pairwise adds. The chunk counts per plane are const parameters
//!   (`[L, M, H]`, chosen by the caller to cover `t.plane_chunks`), so the
//!   lookups unroll with no branch per row, and each chunk is loaded by
//!   one `ld1` beside its lookups (`simd::lookup::lookup4`);
//! * reciprocal: the reference's `get_reciprocal` on those four lanes at
//!   once (row sums of at most 64 terms are below 2^26, so the normalizing
//!   shift is a per-lane `clz`);
//! * output, rows of up to 16: `e[d]` gathered from its four byte planes
//!   (`d < 64`; beyond, `tbl` reads 0 and so does the output) and put
//!   together four lanes at a time by one four-register `tbl` (`SPREAD`),
//!   then the reference's output arithmetic on four lanes per 32-bit
//!   register (the 64-entry output table would cost four instructions per
//!   element); longer rows: the one-chunk output table, from `e[0..64]`
//!   loaded once per group, looked up by the `d` kept from the sum pass.
//!
//! Windows are stored whole: their bytes past the row are the next rows'
//! outputs, rewritten when those rows are done (the caller runs the rows
//! whose window would pass the end of the slices another way).

use crate::fixedpoint::{one_over_one_plus_x_for_x_in_0_1, Q0_31};
use crate::ops::softmax_rows::exact::{SoftmaxExact, PLANES};
use crate::ops::softmax_rows::neon::blocks::{load_post, opaque, STEP};
use crate::ops::softmax_rows::params::ACCUMULATION_INTEGER_BITS;
use crate::simd::lookup::lookup4;
use core::arch::aarch64::*;

/// Bytes of a window.
pub(super) const WINDOW: usize = 16;
/// Rows per group (lanes of the reciprocal).
pub(super) const GROUP: usize = 4;

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

/// Outputs of one row from `e`'s four byte planes at its `d` (`b[j]`,
/// gathered by `tbl` from the first 64 entries: `d >= 64` reads 0), then
/// `sqrdmulh` by the scale and the rounding shift, as bytes above the
/// type's minimum.
#[inline(always)]
fn outputs<const SIGNED: bool>(
    b: [uint8x16_t; 4],
    spread: &[uint8x16_t; 4],
    scale: int32x4_t,
    neg_exponent: int32x4_t,
) -> uint8x16_t {
    // SAFETY: register arithmetic. e >= 0 and scale > 0, so the products
    // are non-negative and the unsigned rounding shift is the reference's
    // rounding_divide_by_pot (exponents 23..=35: beyond 31 the rounding bit
    // is added at full precision and a product below 2^31 gives 0, as the
    // reference's zero).
    unsafe {
        let planes = uint8x16x4_t(b[0], b[1], b[2], b[3]);
        // The e of lanes 0..4, 4..8, 8..12, 12..16.
        let q = spread.map(|s| {
            let e = vreinterpretq_s32_u8(vqtbl4q_u8(planes, s));
            let prod = vqrdmulhq_s32(e, scale);
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

/// Byte `4 m + j` of `SPREAD[q]` indexes byte `j` (plane `j`) of element
/// `4 q + m` in the four registers of `e`'s byte planes of 16 elements: one
/// four-register `tbl` gathers the little-endian `e` of four elements.
const SPREAD: [[u8; 16]; 4] = {
    let mut s = [[0u8; 16]; 4];
    let mut q = 0;
    while q < 4 {
        let mut k = 0;
        while k < 16 {
            s[q][k] = (16 * (k % 4) + 4 * q + k / 4) as u8;
            k += 1;
        }
        q += 1;
    }
    s
};

/// The term bytes of plane `j` for every `d` of four registers: `tbl`
/// over chunk 0, `tbx` over chunks `1..C[j]` (`C = [L, M, H]`; `d - 64 k`,
/// formed once per chunk for all planes, indexes chunk `k`, and `tbx`
/// keeps the lanes outside it). Chunks past `t.plane_chunks[j]` are zero,
/// so a larger `C` only adds lookups that change nothing.
// Index loops over fixed-size arrays of registers and planes: the
// indices pick planes, chunks and lanes at compile time once unrolled.
#[allow(clippy::needless_range_loop)]
#[inline(always)]
fn term_bytes<const L: usize, const M: usize, const H: usize>(
    t: &SoftmaxExact,
    d: &[uint8x16_t; 4],
) -> [[uint8x16_t; 4]; PLANES] {
    let chunks = [L, M, H];
    // SAFETY: register arithmetic.
    let mut bytes = [[unsafe { vdupq_n_u8(0) }; 4]; PLANES];
    for k in 0..4 {
        if k >= L.max(M).max(H) {
            break;
        }
        // SAFETY: register arithmetic.
        let idx = d.map(|d| unsafe { vsubq_u8(d, vdupq_n_u8(64 * k as u8)) });
        for j in 0..PLANES {
            if k < chunks[j] {
                let c = t.planes[j][k].0.as_ptr();
                // SAFETY: the chunk is 64 bytes.
                unsafe {
                    if k == 0 {
                        lookup4::<true>(c, &idx, &mut bytes[j]);
                    } else {
                        lookup4::<false>(c, &idx, &mut bytes[j]);
                    }
                }
            }
        }
    }
    bytes
}

/// Softmax of the first `groups * 4` rows of `row_len <= 16` bytes (all 16
/// when `FULL`), each read and written as a 16-byte window; the caller
/// checked that every window lies in both slices, that `t.outputs_fit`,
/// and that no plane has more chunks than `[L, M, H]`.
// Index loops over fixed-size arrays of registers and planes: the
// indices pick planes, chunks and lanes at compile time once unrolled.
#[allow(clippy::needless_range_loop)]
// Out of line: called once per kernel call, and kept apart from the
// long-row loops, whose code LLVM would otherwise allocate with theirs.
#[inline(never)]
pub(super) fn short_rows<
    const SIGNED: bool,
    const FULL: bool,
    const L: usize,
    const M: usize,
    const H: usize,
>(
    t: &SoftmaxExact,
    input: &[u8],
    output: &mut [u8],
    row_len: usize,
    groups: usize,
) {
    debug_assert!(row_len <= WINDOW && t.outputs_fit && (row_len == WINDOW) == FULL);
    debug_assert!(t.plane_chunks[0] <= L && t.plane_chunks[1] <= M && t.plane_chunks[2] <= H);
    let last = (groups * GROUP).saturating_sub(1) * row_len + WINDOW;
    assert!(groups == 0 || (last <= input.len() && last <= output.len()));
    // Lanes past the row: 0 in `keep` (d = 0, one term0 each, taken off).
    let keep_bytes: [u8; WINDOW] = core::array::from_fn(|i| if i < row_len { 0xff } else { 0 });
    // SAFETY: register arithmetic; the arrays are 16 bytes.
    let (keep, fill, extra, spread) = unsafe {
        (
            vld1q_u8(keep_bytes.as_ptr()),
            vdupq_n_u8(if SIGNED { 0x80 } else { 0 }),
            vdupq_n_u32((WINDOW - row_len) as u32 * t.term0),
            SPREAD.map(|s| vld1q_u8(s.as_ptr())),
        )
    };
    let src = input.as_ptr();
    let dst = output.as_mut_ptr();
    for g in 0..groups {
        let base = g * GROUP * row_len;
        // SAFETY: window `base + i * row_len` of 16 bytes lies within input
        // (checked above); the rest is register arithmetic.
        let d: [uint8x16_t; GROUP] = unsafe {
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
        let [low, mid, high] = term_bytes::<L, M, H>(t, &d);
        // SAFETY: register arithmetic. Per u16 lane, before the pairwise
        // sums of `row_sums16`: at most 2 * 255 (mid) + 256 * 2 * 8 (high:
        // terms are at most 2^19, so their high byte at most 8), 4606, and
        // eight lanes of that fit u16.
        let sum = unsafe {
            let upper = row_sums16(core::array::from_fn(|i| {
                vmlaq_n_u16(vpaddlq_u8(mid[i]), vpaddlq_u8(high[i]), 256)
            }));
            // Sums of 16 terms of at most 2^19 fit u32; the masked lanes'
            // terms come off.
            vsubq_u32(vmlaq_n_u32(row_sums(low), upper, 256), extra)
        };
        let (scale, neg_exponent) = reciprocals(sum);
        // e's byte planes for every d (d >= 64 reads 0), a plane at a time.
        let planes = t.exp_bytes.each_ref().map(|e| {
            let mut out = d;
            // SAFETY: each plane is 64 bytes.
            unsafe { lookup4::<true>(e.0.as_ptr(), &d, &mut out) };
            out
        });
        let b: [[uint8x16_t; 4]; GROUP] = core::array::from_fn(|i| planes.map(|p| p[i]));
        for i in 0..GROUP {
            let (s, n) = lane(scale, neg_exponent, i);
            let y = outputs::<SIGNED>(b[i], &spread, s, n);
            // SAFETY: the window lies within output (checked above); rows are
            // written in order, so bytes past this row are rewritten later.
            unsafe { vst1q_u8(dst.add(base + i * row_len), y) };
        }
    }
}

/// Softmax of the first `groups * 4` rows of `row_len <= 64` bytes (all
/// 64 when `FULL`), each read and written as a 64-byte window; the caller
/// checked that every window lies in both slices, that `t.outputs_fit`
/// and that no plane has more chunks than `[L, M, H]`. Per row: maximum,
/// `d` (masked lanes to 0, kept for the output), each plane's bytes by
/// `tbl`/`tbx` over its chunks, summed in u16 lanes; per group: the four
/// sums in one vector and their reciprocals; per row again: its output
/// table (one chunk: the outputs past `d = 63` are the zero point) and the
/// lookup.
// Index loops over fixed-size arrays of registers and planes: the
// indices pick planes, chunks and lanes at compile time once unrolled.
#[allow(clippy::needless_range_loop)]
// Out of line: called once per kernel call, and kept apart from the
// long-row loops, whose code LLVM would otherwise allocate with theirs.
#[inline(never)]
pub(super) fn window_rows<
    const SIGNED: bool,
    const FULL: bool,
    const L: usize,
    const M: usize,
    const H: usize,
>(
    t: &SoftmaxExact,
    input: &[u8],
    output: &mut [u8],
    row_len: usize,
    groups: usize,
) {
    debug_assert!(row_len <= STEP && t.outputs_fit && (row_len == STEP) == FULL);
    debug_assert!(t.plane_chunks[0] <= L && t.plane_chunks[1] <= M && t.plane_chunks[2] <= H);
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
    // The rows' d, kept from the sum pass for the output pass.
    let mut ds = [[0u8; STEP]; GROUP];
    // The rows' u16 lane sums per plane, rewritten by every group.
    // SAFETY: register arithmetic.
    let mut acc = [[unsafe { vdupq_n_u16(0) }; GROUP]; PLANES];
    // The rows' scales and negated exponents, for `ld1r` by row.
    let mut scales = [0i32; GROUP];
    let mut neg_exponents = [0i32; GROUP];
    for g in 0..groups {
        let base = g * GROUP * row_len;
        // A loop, not unrolled (`black_box` hides the count): LLVM would
        // interleave the four rows, which need more registers than there
        // are, and spill.
        let rows = core::hint::black_box(GROUP);
        for i in 0..rows {
            let i = i % GROUP;
            // SAFETY: window `base + i * row_len` of 64 bytes lies within
            // input (checked above); the mask is 64 bytes; the rest is
            // register arithmetic.
            let d = unsafe {
                let b = load_post(&mut src.add(base + i * row_len));
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
                let maxv = vdupq_n_u8(max);
                let mut d = x.map(|x| vsubq_u8(maxv, x));
                if let Some(k) = keep {
                    for r in 0..4 {
                        d[r] = vandq_u8(d[r], k[r]);
                    }
                }
                vst1q_u8_x4(ds[i].as_mut_ptr(), uint8x16x4_t(d[0], d[1], d[2], d[3]));
                d
            };
            let bytes = term_bytes::<L, M, H>(t, &d);
            for j in 0..PLANES {
                // SAFETY: register arithmetic; at most 8 * 255 per u16 lane.
                unsafe {
                    let mut a = vpaddlq_u8(bytes[j][0]);
                    for b in &bytes[j][1..] {
                        a = vpadalq_u8(a, *b);
                    }
                    acc[j][i] = a;
                }
            }
        }
        let [low, mid, high] = acc.map(row_sums16);
        // SAFETY: register arithmetic; sums of 64 terms of at most 2^19
        // fit u32; the masked lanes' terms come off.
        let sum = unsafe {
            let upper = vmlaq_n_u32(mid, high, 256);
            vsubq_u32(vmlaq_n_u32(low, upper, 256), extra)
        };
        let (scale, neg_exponent) = reciprocals(sum);
        // SAFETY: the arrays are four lanes.
        unsafe {
            vst1q_s32(scales.as_mut_ptr(), scale);
            vst1q_s32(neg_exponents.as_mut_ptr(), neg_exponent);
        }
        // e[0..64], loaded once for the four rows' tables.
        let e = opaque(t.exp.as_ptr());
        // SAFETY: the 16 loads of four read e[0..64] of the 256 entries.
        let e: [int32x4_t; 16] = core::array::from_fn(|k| unsafe { vld1q_s32(e.add(4 * k)) });
        for i in 0..rows {
            let i = i % GROUP;
            // SAFETY: i < GROUP.
            let (s, n) = unsafe {
                (
                    vld1q_dup_s32(scales.as_ptr().add(i)),
                    vld1q_dup_s32(neg_exponents.as_ptr().add(i)),
                )
            };
            let [table] = output_table_from::<1>(|k| e[k], s, n);
            let at = base + i * row_len;
            // SAFETY: the window lies within output (checked above); rows
            // are written in order, so bytes past this row are rewritten
            // later. `ds[i]` is 64 bytes. The rest is register arithmetic.
            unsafe {
                let d = load_post(&mut ds[i].as_ptr());
                let y = [d.0, d.1, d.2, d.3].map(|d| {
                    let q = vqtbl4q_u8(table, d);
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

/// `fixed::output_table` with the entries `e[4 k..4 k + 4]` given by `exp(k)`.
#[inline(always)]
pub(super) fn output_table_from<const C: usize>(
    exp: impl Fn(usize) -> int32x4_t,
    scale: int32x4_t,
    neg_exponent: int32x4_t,
) -> [uint8x16x4_t; C] {
    // SAFETY: register arithmetic. e >= 0 and scale > 0, so the product is
    // non-negative and the unsigned rounding shift is the reference's
    // rounding_divide_by_pot; the result is at most 2^8, so it fits u16.
    let four = |k: usize| unsafe {
        vrshlq_u32(
            vreinterpretq_u32_s32(vqrdmulhq_s32(exp(k), scale)),
            neg_exponent,
        )
    };
    // SAFETY: register arithmetic.
    let sixteen = |k: usize| unsafe {
        let lo = vuzp1q_u16(
            vreinterpretq_u16_u32(four(k)),
            vreinterpretq_u16_u32(four(k + 1)),
        );
        let hi = vuzp1q_u16(
            vreinterpretq_u16_u32(four(k + 2)),
            vreinterpretq_u16_u32(four(k + 3)),
        );
        vqmovn_high_u16(vqmovn_u16(lo), hi)
    };
    core::array::from_fn(|c| {
        let k = 16 * c;
        uint8x16x4_t(sixteen(k), sixteen(k + 4), sixteen(k + 8), sixteen(k + 12))
    })
}
