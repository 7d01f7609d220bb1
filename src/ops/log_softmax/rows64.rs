//! Rows of exactly 64 bytes (`Method::FixedPoint`, NEON), four at a time
//! and straight-line: a row is one 64-byte block, so the general kernel's
//! per-row bookkeeping (block loops, u64 widenings, the scalar logarithm
//! input, the plan) would cost as much as the work itself.
//!
//! Per group of four rows:
//! 1. each row's maximum and minimum folded to one register, the four rows
//!    reduced together by pairwise `smaxp`/`sminp` (lanes 0..4 hold rows
//!    0..4); the largest reach of the four picks the chunk count `N` (an
//!    extra chunk only costs lookups: no lane of a row reaches into it).
//! 2. the three byte planes of each row's terms by `tbl`/`tbx` as in
//!    `neon.rs`, summed by `uaddlp`/`uadalp` into u16 lanes (a lane holds 8
//!    bytes, at most 2040), then the twelve row-plane registers reduced
//!    together by pairwise `addp` (a lane then holds a whole row's plane,
//!    at most `64 * 255 = 16320`, still a u16) and combined as
//!    `plane 0 + plane 1 * 2^8 + plane 2 * 2^16` into one u32 lane per row.
//!    A 64-byte row sums below `64 * 2^19 = 2^25`, so the logarithm takes
//!    the sum itself with 12 integer bits (what `log_input` gives below
//!    2^31).
//! 3. the four logarithms at once (`log_neon`), and the constants on the
//!    same lanes: `row_constants_from_log`'s cut-off and `plan`'s conditions
//!    for the floor formula (`L > s[0]`, nothing cut within the reach,
//!    `reach < monotonic`, `s[reach] - L` not below `i32::MIN`: with
//!    `reach` as `last`, since `kept > reach`) and its `B`, by the same
//!    `Lane` code as the scalar constants. When all four rows meet them (the
//!    common case), each row's output table is built and its 64 outputs
//!    looked up in one asm block (`row_asm`); otherwise the four rows go
//!    through the general kernel, whose per-row plan covers every case.
//!
//! Measured (`cargo xtask bench`, 9216 rows of 64, scale 0.1): about 242
//! instructions a row (3.78 an element), against 477 through the general kernel.

use super::blocks::{load, Block};
use super::log_neon::log_x_for_x_greater_than_or_equal_to_1_x4;
use super::neon::{log_softmax_i8, log_softmax_u8};
use super::params::LogSoftmaxParams;
use super::rows64_out::rows_out4;
use super::table::{Chunk, LogSoftmaxTables, CHUNK};
use crate::fixedpoint::Lane;
use crate::quant::multiply_by_quantized_multiplier;
use crate::simd::lookup::lookup4;
use core::arch::aarch64::*;

/// Bytes per row (one block).
const ROW: usize = 64;
/// Rows per group.
const GROUP: usize = 4;
/// Fraction bits dropped by the output's rounding (as in `table.rs`).
const OUTPUT_SHIFT: u32 = 22;

/// One register of a block's maxima and one of its minima (type order).
#[inline(always)]
fn fold<const SIGNED: bool>(b: &Block) -> (uint8x16_t, uint8x16_t) {
    // SAFETY: register arithmetic; NEON is a compile-time target feature.
    unsafe {
        if SIGNED {
            let s = |v| vreinterpretq_s8_u8(v);
            let u = |v| vreinterpretq_u8_s8(v);
            let hi = vmaxq_s8(vmaxq_s8(s(b[0]), s(b[1])), vmaxq_s8(s(b[2]), s(b[3])));
            let lo = vminq_s8(vminq_s8(s(b[0]), s(b[1])), vminq_s8(s(b[2]), s(b[3])));
            (u(hi), u(lo))
        } else {
            (
                vmaxq_u8(vmaxq_u8(b[0], b[1]), vmaxq_u8(b[2], b[3])),
                vminq_u8(vminq_u8(b[0], b[1]), vminq_u8(b[2], b[3])),
            )
        }
    }
}

/// Four registers reduced by pairwise maxima (`MAX`) or minima: lane `i`
/// of the result (and lane `4 + i`) is register `i`'s extreme.
#[inline(always)]
fn across4<const SIGNED: bool, const MAX: bool>(v: [uint8x16_t; 4]) -> uint8x16_t {
    // SAFETY: register arithmetic.
    unsafe {
        let pair = |a: uint8x16_t, b: uint8x16_t| {
            let (sa, sb) = (vreinterpretq_s8_u8(a), vreinterpretq_s8_u8(b));
            match (SIGNED, MAX) {
                (true, true) => vreinterpretq_u8_s8(vpmaxq_s8(sa, sb)),
                (true, false) => vreinterpretq_u8_s8(vpminq_s8(sa, sb)),
                (false, true) => vpmaxq_u8(a, b),
                (false, false) => vpminq_u8(a, b),
            }
        };
        // Lanes per row: 8, 4, 2, 1.
        let x = pair(pair(v[0], v[1]), pair(v[2], v[3]));
        let x = pair(x, x);
        pair(x, x)
    }
}

/// Looks up a plane's last table chunk (`tbl` when `FIRST`, else `tbx`
/// into `v`) for the 64 indices `d` and sums the four looked-up registers
/// into u16 lanes (8 bytes a lane), in one asm block: the looked-up bytes
/// die in it, so that LLVM cannot gather every plane's results before
/// summing them (it did, and spilled).
///
/// # Safety
/// `table` must be valid for reading 64 bytes.
#[inline(always)]
unsafe fn lookup4_sum<const FIRST: bool>(
    table: *const u8,
    d: &[uint8x16_t; 4],
    v: [uint8x16_t; 4],
) -> uint16x8_t {
    let acc: uint16x8_t;
    if FIRST {
        // SAFETY: 64 readable bytes at `table` as the caller guarantees;
        // the asm writes only its outputs and the registers it names.
        unsafe {
            core::arch::asm!(
                "ld1 {{v28.16b-v31.16b}}, [{t}]",
                "tbl {o0:v}.16b, {{v28.16b-v31.16b}}, {d0:v}.16b",
                "tbl {o1:v}.16b, {{v28.16b-v31.16b}}, {d1:v}.16b",
                "tbl {o2:v}.16b, {{v28.16b-v31.16b}}, {d2:v}.16b",
                "tbl {o3:v}.16b, {{v28.16b-v31.16b}}, {d3:v}.16b",
                "uaddlp {acc:v}.8h, {o0:v}.16b",
                "uadalp {acc:v}.8h, {o1:v}.16b",
                "uadalp {acc:v}.8h, {o2:v}.16b",
                "uadalp {acc:v}.8h, {o3:v}.16b",
                t = in(reg) table,
                d0 = in(vreg) d[0], d1 = in(vreg) d[1], d2 = in(vreg) d[2], d3 = in(vreg) d[3],
                o0 = out(vreg) _, o1 = out(vreg) _, o2 = out(vreg) _, o3 = out(vreg) _,
                acc = out(vreg) acc,
                out("v28") _, out("v29") _, out("v30") _, out("v31") _,
                options(readonly, nostack, preserves_flags),
            );
        }
        let _ = v;
    } else {
        // SAFETY: as above; `v` is read and overwritten.
        unsafe {
            core::arch::asm!(
                "ld1 {{v28.16b-v31.16b}}, [{t}]",
                "tbx {o0:v}.16b, {{v28.16b-v31.16b}}, {d0:v}.16b",
                "tbx {o1:v}.16b, {{v28.16b-v31.16b}}, {d1:v}.16b",
                "tbx {o2:v}.16b, {{v28.16b-v31.16b}}, {d2:v}.16b",
                "tbx {o3:v}.16b, {{v28.16b-v31.16b}}, {d3:v}.16b",
                "uaddlp {acc:v}.8h, {o0:v}.16b",
                "uadalp {acc:v}.8h, {o1:v}.16b",
                "uadalp {acc:v}.8h, {o2:v}.16b",
                "uadalp {acc:v}.8h, {o3:v}.16b",
                t = in(reg) table,
                d0 = in(vreg) d[0], d1 = in(vreg) d[1], d2 = in(vreg) d[2], d3 = in(vreg) d[3],
                o0 = inout(vreg) v[0] => _, o1 = inout(vreg) v[1] => _,
                o2 = inout(vreg) v[2] => _, o3 = inout(vreg) v[3] => _,
                acc = out(vreg) acc,
                out("v28") _, out("v29") _, out("v30") _, out("v31") _,
                options(readonly, nostack, preserves_flags),
            );
        }
    }
    acc
}

/// The three byte planes of a row's terms `t[max - x]`, plane `k` through
/// its first `[A, B, C][k]` chunks (later chunks of the plane are zero),
/// each summed into u16 lanes (8 bytes a lane). Chunk by chunk, so that
/// the chunk's indices `d ^ 64 c` serve every plane that needs it; the
/// counts are constants, so the sequence of lookups is straight-line.
#[inline(always)]
fn plane_sums<const A: usize, const B: usize, const C: usize>(
    t: &LogSoftmaxTables,
    maxv: uint8x16_t,
    b: &Block,
) -> [uint16x8_t; 3] {
    let counts = [A, B, C];
    // SAFETY: register arithmetic, and loads of whole 64-byte chunks of the
    // planes (c < counts[k] <= 4).
    unsafe {
        let planes = t.planes.as_ptr();
        let table = |k: usize, c: usize| (*planes.add(k))[c].0.as_ptr();
        let d = b.map(|x| vsubq_u8(maxv, x));
        let zero = vdupq_n_u8(0);
        let mut v = [[zero; 4]; 3];
        let mut acc = [vdupq_n_u16(0); 3];
        for k in 0..3 {
            match counts[k] {
                0 => {}
                1 => acc[k] = lookup4_sum::<true>(table(k, 0), &d, v[k]),
                _ => lookup4::<true>(table(k, 0), &d, &mut v[k]),
            }
        }
        for c in 1..A {
            let flip = vdupq_n_u8((CHUNK * c) as u8);
            let dc = d.map(|x| veorq_u8(x, flip));
            for k in 0..3 {
                if c + 1 == counts[k] {
                    acc[k] = lookup4_sum::<false>(table(k, c), &dc, v[k]);
                } else if c < counts[k] {
                    lookup4::<false>(table(k, c), &dc, &mut v[k]);
                }
            }
        }
        acc
    }
}

/// The four rows' sums of terms (one i32 lane a row) at `src` (256 bytes),
/// with maxima in lanes 0..4 of `max4`; plane `k` through `[A, B, C][k]`
/// chunks, `A >= B >= C`.
type SumsFn = unsafe fn(&LogSoftmaxTables, *const u8, uint8x16_t) -> int32x4_t;

/// # Safety
/// `src` must be valid for 256 bytes.
#[inline(never)]
unsafe fn sums4<const A: usize, const B: usize, const C: usize>(
    t: &LogSoftmaxTables,
    src: *const u8,
    max4: uint8x16_t,
) -> int32x4_t {
    let maxv = broadcast(max4);
    // SAFETY: row i's 64 bytes lie within the caller's 256. The rows go in
    // pairs, so that each pair's six registers are reduced to two before
    // the next pair's are made.
    unsafe {
        let p01 = pair(
            plane_sums::<A, B, C>(t, maxv[0], &load(src)),
            plane_sums::<A, B, C>(t, maxv[1], &load(src.add(ROW))),
        );
        let p23 = pair(
            plane_sums::<A, B, C>(t, maxv[2], &load(src.add(2 * ROW))),
            plane_sums::<A, B, C>(t, maxv[3], &load(src.add(3 * ROW))),
        );
        totals(p01, p23)
    }
}

/// The sums function for planes through `counts` chunks (each at most 4),
/// padded to non-increasing counts (a plane's chunks past its count are
/// zero, so looking them up adds nothing).
fn pick_sums(counts: [usize; 3]) -> SumsFn {
    let c = counts[2];
    let b = counts[1].max(c);
    let a = counts[0].max(b).max(1);
    macro_rules! pick {
        ($(($x:literal, $y:literal, $z:literal)),* $(,)?) => {
            match (a, b, c) {
                $(($x, $y, $z) => sums4::<$x, $y, $z>,)*
                _ => sums4::<4, 4, 4>,
            }
        };
    }
    pick!(
        (1, 0, 0),
        (1, 1, 0),
        (1, 1, 1),
        (2, 0, 0),
        (2, 1, 0),
        (2, 1, 1),
        (2, 2, 0),
        (2, 2, 1),
        (2, 2, 2),
        (3, 0, 0),
        (3, 1, 0),
        (3, 1, 1),
        (3, 2, 0),
        (3, 2, 1),
        (3, 2, 2),
        (3, 3, 0),
        (3, 3, 1),
        (3, 3, 2),
        (3, 3, 3),
        (4, 0, 0),
        (4, 1, 0),
        (4, 1, 1),
        (4, 2, 0),
        (4, 2, 1),
        (4, 2, 2),
        (4, 3, 0),
        (4, 3, 1),
        (4, 3, 2),
        (4, 3, 3),
        (4, 4, 0),
        (4, 4, 1),
        (4, 4, 2),
        (4, 4, 3),
    )
}

/// Two rows' plane sums reduced to two registers: planes 0 and 1 of both
/// rows (two lanes each a plane and row), and plane 2 of both (four lanes
/// each).
#[inline(always)]
fn pair(x: [uint16x8_t; 3], y: [uint16x8_t; 3]) -> (uint16x8_t, uint16x8_t) {
    // SAFETY: register arithmetic.
    unsafe {
        (
            vpaddq_u16(vpaddq_u16(x[0], x[1]), vpaddq_u16(y[0], y[1])),
            vpaddq_u16(x[2], y[2]),
        )
    }
}

/// The four rows' sums of terms, one u32 lane a row, from the two pairs'
/// registers (`pair`).
#[inline(always)]
fn totals((u01, w01): (uint16x8_t, uint16x8_t), (u23, w23): (uint16x8_t, uint16x8_t)) -> int32x4_t {
    // SAFETY: register arithmetic.
    unsafe {
        // z01: plane 0 and plane 1 of row 0, then of rows 1, 2, 3.
        let z01 = vpaddq_u16(u01, u23);
        let w = vpaddq_u16(w01, w23);
        // z2: plane 2 of rows 0..4.
        let z2 = vpaddq_u16(w, w);
        // u16 weights 1, 256, 1, 256, ...
        let weights = vreinterpretq_u16_u32(vdupq_n_u32(0x0100_0001));
        let lo = vmull_u16(vget_low_u16(z01), vget_low_u16(weights));
        let hi = vmull_high_u16(z01, weights);
        let low_planes = vpaddq_u32(lo, hi);
        let sum = vaddq_u32(low_planes, vshll_n_u16::<16>(vget_low_u16(z2)));
        vreinterpretq_s32_u32(sum)
    }
}

/// Lane `i` of four bytes broadcast.
#[inline(always)]
fn broadcast(v: uint8x16_t) -> [uint8x16_t; GROUP] {
    // SAFETY: register arithmetic.
    unsafe {
        [
            vdupq_laneq_u8::<0>(v),
            vdupq_laneq_u8::<1>(v),
            vdupq_laneq_u8::<2>(v),
            vdupq_laneq_u8::<3>(v),
        ]
    }
}

/// One group of four rows at `src`/`dst` (256 bytes each); `max4` and
/// `reach4` hold the rows' maxima and reaches in lanes 0..4, `chunks` the
/// chunk count of the largest reach, `sums` the matching sums function.
///
/// # Safety
/// `src` and `dst` must be valid for 256 bytes.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn group<const SIGNED: bool>(
    p: &LogSoftmaxParams,
    t: &LogSoftmaxTables,
    (src, dst): (*const u8, *mut u8),
    max4: uint8x16_t,
    reach4: uint8x16_t,
    chunks: usize,
    sums: SumsFn,
    table: &mut [Chunk; 4],
) {
    // SAFETY: as the caller guarantees.
    let sums = unsafe { sums(t, src, max4) };
    // SAFETY: register arithmetic.
    let reach_bytes = unsafe { vgetq_lane_u32::<0>(vreinterpretq_u32_u8(reach4)) };
    let reach: [usize; GROUP] = core::array::from_fn(|i| (reach_bytes >> (8 * i)) as u8 as usize);
    let splat = <int32x4_t as Lane>::splat;
    let log = log_x_for_x_greater_than_or_equal_to_1_x4(sums, splat(12));
    // log_sum - 32 in Q5.26 (wrapping, as `row_constants_from_log`); for a
    // positive log-sum also `L - 2^31`, exact.
    let shifted = log.add(splat(i32::MIN));
    let cut = if p.reverse_multiplier == 0 {
        splat(i32::MIN)
    } else {
        multiply_by_quantized_multiplier(shifted, p.reverse_multiplier, p.reverse_shift)
    };
    let adjusted_diff_min = cut.lane_max(splat(p.diff_min.saturating_sub(1)));
    // SAFETY: register arithmetic and a load of a local array of four.
    let (reach_v, s_reach) = unsafe {
        let r16 = vmovl_u8(vget_low_u8(reach4));
        (
            vreinterpretq_s32_u32(vmovl_u16(vget_low_u16(r16))),
            vld1q_s32(reach.map(|r| t.scaled[r]).as_ptr()),
        )
    };
    // Every lane all ones where the floor formula covers the whole row:
    // L > s[0]; kept (-adjusted_diff_min) > reach; reach < monotonic; and
    // s[reach] - L >= i32::MIN.
    let ok = log
        .mask_if_greater_than(splat(t.scaled[0]))
        .and(reach_v.neg().mask_if_greater_than(adjusted_diff_min))
        .and(splat(t.monotonic as i32).mask_if_greater_than(reach_v))
        .and(shifted.mask_if_greater_than(s_reach).not());
    // SAFETY: register arithmetic.
    let all = unsafe { vminvq_u32(vreinterpretq_u32_s32(ok)) != 0 };
    let mut maxs = [0u8; 16];
    // SAFETY: a store into a local array of sixteen bytes.
    unsafe { vst1q_u8(maxs.as_mut_ptr(), max4) };
    if all {
        // B = L - 2^21 + 1 - zero_point 2^22 (an i32 for L > 0 and a zero
        // point in 0..=255, checked by the caller).
        let offset = 1 - (1 << (OUTPUT_SHIFT - 1)) - (p.output_zero_point << OUTPUT_SHIFT);
        let b = log.add(splat(offset));
        let mut bs = [0i32; GROUP];
        // SAFETY: a store into a local array of four.
        unsafe { vst1q_s32(bs.as_mut_ptr(), b) };
        // SAFETY: as the caller guarantees; chunks is 1..=4.
        unsafe { rows_out4::<SIGNED>(t, table, (src, dst), &maxs, &bs, &reach, chunks) };
    } else {
        // The general kernel for these four rows (rare: a log-sum at or
        // below 0, a cut-off inside a row's reach, or a wrapping
        // difference): its row-by-row plan covers every case.
        // SAFETY: the caller's 256 bytes at src and dst, which its slices
        // own (src is read-only, dst is written only here).
        let (rows_in, rows_out) = unsafe {
            (
                core::slice::from_raw_parts(src, GROUP * ROW),
                core::slice::from_raw_parts_mut(dst, GROUP * ROW),
            )
        };
        if SIGNED {
            log_softmax_i8(p, t, rows_in, rows_out, ROW);
        } else {
            log_softmax_u8(p, t, rows_in, rows_out, ROW);
        }
    }
}

/// The groups of four 64-byte rows at the start of `input`/`output`;
/// returns the number of rows done (a multiple of four).
#[inline(always)]
fn rows64<const SIGNED: bool>(
    p: &LogSoftmaxParams,
    t: &LogSoftmaxTables,
    input: &[u8],
    output: &mut [u8],
) -> usize {
    let table = &mut [Chunk([0; CHUNK]); 4];
    if !(0..=255).contains(&p.output_zero_point) {
        return 0;
    }
    let groups = input.len().min(output.len()) / (GROUP * ROW);
    let (src0, dst0) = (input.as_ptr(), output.as_mut_ptr());
    let sums: [SumsFn; 4] =
        core::array::from_fn(|n| pick_sums(t.plane_chunks.map(|c| c.min(n + 1))));
    for g in 0..groups {
        // SAFETY: group g's 256 bytes lie within both buffers (g < groups).
        unsafe {
            let (src, dst) = (src0.add(g * GROUP * ROW), dst0.add(g * GROUP * ROW));
            let (hi, lo): ([uint8x16_t; GROUP], [uint8x16_t; GROUP]) = {
                let f: [(uint8x16_t, uint8x16_t); GROUP] =
                    core::array::from_fn(|i| fold::<SIGNED>(&load(src.add(ROW * i))));
                (f.map(|x| x.0), f.map(|x| x.1))
            };
            let max4 = across4::<SIGNED, true>(hi);
            let min4 = across4::<SIGNED, false>(lo);
            // max >= min in the type's order: the byte difference is the
            // distance (0..=255) for int8 too.
            let reach4 = vsubq_u8(max4, min4);
            // Lanes 4..8 repeat lanes 0..4.
            let n = vmaxv_u8(vget_low_u8(reach4)) as usize / CHUNK;
            group::<SIGNED>(p, t, (src, dst), max4, reach4, n + 1, sums[n], table);
        }
    }
    groups * GROUP
}

/// [`rows64`] for int8 (its own function: not inlined into the general
/// kernel, whose long-row loops it would otherwise crowd, and compiled in
/// this crate, where the asm checks find it).
#[inline(never)]
pub(super) fn rows64_i8(
    p: &LogSoftmaxParams,
    t: &LogSoftmaxTables,
    input: &[u8],
    output: &mut [u8],
) -> usize {
    rows64::<true>(p, t, input, output)
}

/// [`rows64`] for uint8.
#[inline(never)]
pub(super) fn rows64_u8(
    p: &LogSoftmaxParams,
    t: &LogSoftmaxTables,
    input: &[u8],
    output: &mut [u8],
) -> usize {
    rows64::<false>(p, t, input, output)
}
