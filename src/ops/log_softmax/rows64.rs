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
//!    looked up in one asm block (`row_asm`). Otherwise, when every row
//!    meets them up to its cut-off (the cut-off lies inside the reach, as
//!    on full-range data, where `diff_min` is about -248 steps at scale
//!    0.1: the same mask without the uncut test, and a positive cut-off;
//!    `cut_plan` for rows reaching past `monotonic`),
//!    `rows64_out::rows_out4_cut` clamps each row's differences where its
//!    outputs reach the type's minimum (before its cut-off or its reach)
//!    and builds its table only that far; else the four rows go through
//!    the general kernel, whose per-row plan covers every case.
//!
//! Measured (`cargo xtask bench`, 9216 rows of 64, scale 0.1): about 242
//! instructions a row (3.78 an element), against 477 through the general
//! kernel. On full-range uniform rows (`--data uniform`) 4.15 an element
//! (11.6 when every group went through the general kernel). By part, per
//! element, bench data / uniform (region markers in a local build, which
//! add about 0.06): maxima and sums 1.63 / 1.63; logarithms and the uncut
//! test 0.23 / 0.20 (with the call of `rows_out4` on the bench data); the
//! cut test and the call of `rows_out4_cut` - / 0.07; its lane plan (the
//! cut-offs, `live` by binary search, which rows clamp at `16 live`) -
//! / 0.19; per-row set-up 0.05 / 0.10; tables, clamps and lookups 1.89 /
//! 2.02 (8 more instructions a row: 5 for the clamp, `umin` and `strb`,
//! the rest in the tables and chunks of rows that saturate later). The uniform rows' excess is the cut path's
//! control (about 0.27, 69 instructions a group) and the clamp (0.13).

use super::blocks::{load, Block};
use super::log_neon::log_x_for_x_greater_than_or_equal_to_1_x4;
use super::neon::{log_softmax_i8, log_softmax_u8};
use super::params::LogSoftmaxParams;
use super::rows64_out::{rows_out4, rows_out4_cut, CutLanes};
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
    // Every lane all ones where the floor formula holds up to the reach:
    // L > s[0]; reach < monotonic; and s[reach] - L >= i32::MIN.
    let formula = log
        .mask_if_greater_than(splat(t.scaled[0]))
        .and(splat(t.monotonic as i32).mask_if_greater_than(reach_v))
        .and(shifted.mask_if_greater_than(s_reach).not());
    // ... and covers the whole row: kept (-adjusted_diff_min) > reach.
    let ok = formula.and(reach_v.neg().mask_if_greater_than(adjusted_diff_min));
    // SAFETY: register arithmetic.
    let all = unsafe { vminvq_u32(vreinterpretq_u32_s32(ok)) != 0 };
    let mut maxs = [0u8; 16];
    // SAFETY: a store into a local array of sixteen bytes.
    unsafe { vst1q_u8(maxs.as_mut_ptr(), max4) };
    if all {
        let bs = outputs_b(p, log);
        // SAFETY: as the caller guarantees; chunks is 1..=4.
        unsafe { rows_out4::<SIGNED>(t, table, (src, dst), &maxs, &bs, &reach, chunks) };
        return;
    }
    // Rows cut inside their reach (full-range data): the formula holding up
    // to the reach implies `cut_plan`'s conditions (its `last` is at most
    // the reach, and `s` does not increase below `monotonic`, so `s[last] >=
    // s[reach]`), given kept > 0 (adjusted_diff_min < 0).
    let cut_ok = formula.and(splat(0).mask_if_greater_than(adjusted_diff_min));
    // SAFETY: register arithmetic.
    if unsafe { vminvq_u32(vreinterpretq_u32_s32(cut_ok)) != 0 } {
        let lanes = CutLanes {
            b: outputs_b_lanes(p, log),
            adjusted_diff_min,
            reach: reach_v,
        };
        // SAFETY: as the caller guarantees; chunks is 1..=4; every row
        // meets `cut_plan`'s conditions.
        unsafe { rows_out4_cut::<SIGNED>(t, table, (src, dst), &maxs, &lanes, chunks) };
    } else {
        let lanes = Uncovered {
            log,
            shifted,
            adjusted_diff_min,
            reach: reach_v,
        };
        // SAFETY: as the caller guarantees.
        unsafe { uncovered::<SIGNED>(p, t, (src, dst), &lanes, (&maxs, chunks), table) };
    }
}

/// `B = L - 2^21 + 1 - zero_point 2^22` of four rows on lanes (an i32 for
/// `L > 0` and a zero point in 0..=255, checked by the caller).
#[inline(always)]
fn outputs_b_lanes(p: &LogSoftmaxParams, log: int32x4_t) -> int32x4_t {
    let offset = 1 - (1 << (OUTPUT_SHIFT - 1)) - (p.output_zero_point << OUTPUT_SHIFT);
    log.add(<int32x4_t as Lane>::splat(offset))
}

/// [`outputs_b_lanes`] as an array.
#[inline(always)]
fn outputs_b(p: &LogSoftmaxParams, log: int32x4_t) -> [i32; GROUP] {
    let b = outputs_b_lanes(p, log);
    let mut bs = [0i32; GROUP];
    // SAFETY: a store into a local array of four.
    unsafe { vst1q_s32(bs.as_mut_ptr(), b) };
    bs
}

/// The lanes of four rows that `uncovered` needs (lane `i` row `i`).
#[derive(Clone, Copy)]
struct Uncovered {
    log: int32x4_t,
    /// `L - 2^31` (wrapping).
    shifted: int32x4_t,
    adjusted_diff_min: int32x4_t,
    reach: int32x4_t,
}

/// Four rows of which some fall outside both tests of `group`: when
/// every row is covered by the floor formula up to its cut-off
/// ([`cut_plan`]: a row reaching past `monotonic` whose cut-off comes
/// before it), `rows_out4_cut`; else (rare: a log-sum at or below 0, a
/// difference that wraps, a row reaching past the monotonic part of the
/// table) the general kernel, whose row-by-row plan covers every case. Out
/// of line, so that the common case's loop stays as it was.
///
/// # Safety
/// `src` and `dst` must be valid for 256 bytes.
#[inline(never)]
unsafe fn uncovered<const SIGNED: bool>(
    p: &LogSoftmaxParams,
    t: &LogSoftmaxTables,
    (src, dst): (*const u8, *mut u8),
    lanes: &Uncovered,
    (maxs, chunks): (&[u8; 16], usize),
    table: &mut [Chunk; 4],
) {
    let Uncovered {
        log,
        shifted,
        adjusted_diff_min,
        reach: reach_v,
    } = *lanes;
    if cut_plan(t, log, shifted, adjusted_diff_min, reach_v) {
        let lanes = CutLanes {
            b: outputs_b_lanes(p, log),
            adjusted_diff_min,
            reach: reach_v,
        };
        // SAFETY: as the caller guarantees; chunks is 1..=4; every row
        // meets `cut_plan`'s conditions.
        unsafe { rows_out4_cut::<SIGNED>(t, table, (src, dst), maxs, &lanes, chunks) };
        return;
    }
    // SAFETY: the caller's 256 bytes at src and dst, which its slices own
    // (src is read-only, dst is written only here).
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

/// The conditions of [`LogSoftmaxTables::plan`] on four rows at once, for
/// rows that may be cut: with `kept = clamp(-adjusted_diff_min, 0, 256)`
/// (differences `d >= kept` give the type minimum) and `last = min(reach,
/// kept - 1)`, the floor formula gives every kept output when `kept > 0`,
/// `L > s[0]`, `last < monotonic` and `s[last] - L >= i32::MIN`. Returns
/// whether all four rows meet them (checked only when `group`'s two tests
/// fail: rows reaching past `monotonic` whose `last` does not).
#[inline(always)]
fn cut_plan(
    t: &LogSoftmaxTables,
    log: int32x4_t,
    shifted: int32x4_t,
    adjusted_diff_min: int32x4_t,
    reach_v: int32x4_t,
) -> bool {
    let splat = <int32x4_t as Lane>::splat;
    // SAFETY: register arithmetic, stores into local arrays of four and a
    // load of one.
    unsafe {
        // -adjusted_diff_min saturates (it is at least diff_min - 1, which
        // may be i32::MIN), then the clamp.
        let kept_v = vminq_s32(
            vmaxq_s32(vqnegq_s32(adjusted_diff_min), splat(0)),
            splat(256),
        );
        let last_v = vminq_s32(reach_v, vsubq_s32(kept_v, splat(1)));
        let mut last = [0i32; GROUP];
        vst1q_s32(last.as_mut_ptr(), vmaxq_s32(last_v, splat(0)));
        // last is in 0..=255 (reach is at most 255).
        let s_last = vld1q_s32(last.map(|l| t.scaled[l as usize]).as_ptr());
        let ok = kept_v
            .mask_if_greater_than(splat(0))
            .and(log.mask_if_greater_than(splat(t.scaled[0])))
            .and(splat(t.monotonic as i32).mask_if_greater_than(last_v))
            .and(shifted.mask_if_greater_than(s_last).not());
        vminvq_u32(vreinterpretq_u32_s32(ok)) != 0
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

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use crate::elem::QuantElem;
    use crate::ops::log_softmax::scalar;
    use crate::QuantParams;
    use std::vec::Vec;

    /// A row of 64 distances `d = max - x` holding 0 and `d` and whose terms
    /// sum to `sum`: the rest greedily by the largest term that fits, then
    /// `pad` (whose term must be 0) in the places left.
    fn distances_with_sum(
        t: &LogSoftmaxTables,
        sum: i64,
        d: usize,
        pad: usize,
    ) -> Option<[usize; ROW]> {
        let term = |k: usize| t.term(k) as i64;
        let mut ds = [pad; ROW];
        ds[1] = d;
        ds[0] = 0;
        let mut left = sum - term(0) - term(d);
        let mut i = 2;
        while left > 0 && i < ROW {
            // Terms do not increase with d: the first that fits is the largest.
            let k = (0..256).find(|&k| term(k) > 0 && term(k) <= left)?;
            ds[i] = k;
            left -= term(k);
            i += 1;
        }
        (left == 0 && term(pad) == 0).then_some(ds)
    }

    /// Rows of 64 (as distances) whose floor formula holds and in which an
    /// element's `s[d] - B` is `r` modulo 2^22 (`r` 0 or 2^22 - 1), with the
    /// output byte strictly inside the type: there `B` one larger (`r = 0`)
    /// or one smaller (`r = 2^22 - 1`) gives another byte. Found by aiming
    /// the log-sum `L` at `s[d] + 2^21 - 1 - r + k 2^22` (then `s[d] - B =
    /// (zero_point - k) 2^22 + r`): a binary search for a sum of terms with
    /// that log-sum, then a row with that sum. `pad` fills the rest of a
    /// row: below the cut-off (the `rows_out4` path) or past it
    /// (`rows_out4_cut`).
    fn boundary_rows<T: QuantElem>(
        p: &LogSoftmaxParams,
        t: &LogSoftmaxTables,
        r: i64,
        pad: usize,
        want: usize,
    ) -> Vec<[usize; ROW]> {
        let log_sum = |s: i64| p.row_constants(s).log_sum as i64;
        let mut rows = Vec::new();
        for k in (8..64i64).rev() {
            for d in 0..pad.min(48) {
                // s[d] - L + 2^21 - 1 is r - 2^22 k (r = 2^22 - 1 as -1).
                let r_low = if r == 0 { 0 } else { 1 };
                let target = t.scaled[d] as i64 + (1 << 21) - 1 + r_low + k * (1 << 22);
                let (mut lo, mut hi) = (1i64 << 19, 64i64 << 19);
                while lo < hi {
                    let mid = (lo + hi) / 2;
                    if log_sum(mid) < target {
                        lo = mid + 1;
                    } else {
                        hi = mid;
                    }
                }
                if log_sum(lo) != target {
                    continue;
                }
                let Some(ds) = distances_with_sum(t, lo, d, pad) else {
                    continue;
                };
                let row = p.row_constants(lo);
                let reach = *ds.iter().max().unwrap();
                let plan = t.plan(p, &row, reach);
                let Some(b) = plan.split else { continue };
                let out = (t.scaled[d] as i64 - b as i64).div_euclid(1 << 22);
                let at = (t.scaled[d] as i64 - b as i64).rem_euclid(1 << 22);
                let cut_row = plan.kept <= reach;
                if d >= plan.kept || at != r || out <= T::MIN as i64 || out >= T::MAX as i64 {
                    continue;
                }
                // The pad decides the output variant.
                if cut_row != (t.term(pad) == 0 && pad as i64 > -(p.diff_min as i64)) {
                    continue;
                }
                rows.push(ds);
                if rows.len() == want {
                    return rows;
                }
            }
        }
        rows
    }

    /// The 64-wide path on rows whose outputs sit on a rounding boundary of
    /// the floor formula, through both output variants: one off in the
    /// output-table constant `B` changes one of their bytes.
    fn boundaries<T: QuantElem>() {
        let out_q = QuantParams::new(16.0 / 256.0, T::MAX);
        let zp = if T::MIN == 0 { 128 } else { 0 };
        let (mut checked, mut checked_r0) = (0, 0);
        for scale in [0.1f32, 0.3, 1.0] {
            let p = LogSoftmaxParams::new::<T>(QuantParams::new(scale, zp), out_q).unwrap();
            let t = LogSoftmaxTables::new(&p);
            let cut_at = (-(p.diff_min as i64) + 1) as usize;
            // A distance whose term is 0 below the cut-off, and one past it.
            let uncut = (1..256).find(|&k| t.term(k) == 0 && k < cut_at);
            let cut = (cut_at <= 255).then_some(cut_at + (255 - cut_at) / 2);
            for pad in [uncut, cut].into_iter().flatten() {
                for r in [0, (1 << 22) - 1] {
                    // The log-sum is even (its last step doubles), so with
                    // every s[d] even, s[d] - B is never a multiple of 2^22
                    // (B is odd): there `B + 1` changes no output (at
                    // scales 0.3 and 1, for instance).
                    if r == 0 && t.scaled.iter().all(|s| s % 2 == 0) {
                        continue;
                    }
                    let rows = boundary_rows::<T>(&p, &t, r, pad, 4);
                    assert_eq!(rows.len(), 4, "scale {scale} pad {pad} r {r}: too few rows");
                    let typed: Vec<T> = rows
                        .iter()
                        .flatten()
                        .map(|&d| T::from_i32(T::MAX - d as i32))
                        .collect();
                    let input: Vec<u8> = typed.iter().map(|x| x.to_i32() as u8).collect();
                    let mut want = std::vec![T::from_i32(0); input.len()];
                    scalar::log_softmax(&p, &typed, &mut want, ROW);
                    let mut got = std::vec![0x5au8; input.len()];
                    let done = if T::MIN == 0 {
                        rows64_u8(&p, &t, &input, &mut got)
                    } else {
                        rows64_i8(&p, &t, &input, &mut got)
                    };
                    assert_eq!(done, 4);
                    let want: Vec<u8> = want.iter().map(|y| y.to_i32() as u8).collect();
                    assert_eq!(got, want, "scale {scale} pad {pad} r {r}");
                    checked += 1;
                    checked_r0 += (r == 0) as usize;
                }
            }
        }
        // Three scales, each with a pad below the cut-off and one past it;
        // both residues at 0.1, only 2^22 - 1 at 0.3 and 1 (every s[d]
        // even there).
        assert_eq!((checked, checked_r0), (8, 2));
    }

    /// Full-range rows of 64 (every byte equally likely) over input scales
    /// from 0.05 to 4, NEON against the scalar reference, and a count of
    /// the rows by how `rows_out4_cut` clamps them: a cut row at the start
    /// of the first group below the type's range (`live_groups`) or at the
    /// cut-off itself (large scales, where the cut-off comes within the
    /// first group that reaches the minimum), a row not cut at that group
    /// start when it lies within the row's reach. All three must occur.
    fn full_range_cut_rows<T: QuantElem>() {
        let out_q = QuantParams::new(16.0 / 256.0, T::MAX);
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 32) as u8
        };
        let (mut by_live, mut by_kept, mut uncut_by_live) = (0, 0, 0);
        for scale in [0.05f32, 0.1, 0.2, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0] {
            let p = LogSoftmaxParams::new::<T>(QuantParams::new(scale, 0), out_q).unwrap();
            let t = LogSoftmaxTables::new(&p);
            let input: Vec<u8> = (0..16 * ROW).map(|_| next()).collect();
            let typed: Vec<T> = input
                .iter()
                .map(|&x| {
                    T::from_i32(if T::MIN == 0 {
                        x as i32
                    } else {
                        x as i8 as i32
                    })
                })
                .collect();
            let mut want = std::vec![T::from_i32(0); input.len()];
            scalar::log_softmax(&p, &typed, &mut want, ROW);
            let mut got = std::vec![0x5au8; input.len()];
            let done = if T::MIN == 0 {
                rows64_u8(&p, &t, &input, &mut got)
            } else {
                rows64_i8(&p, &t, &input, &mut got)
            };
            assert_eq!(done, 16);
            let want: Vec<u8> = want.iter().map(|y| y.to_i32() as u8).collect();
            assert_eq!(got, want, "scale {scale}");
            for row in typed.chunks(ROW) {
                let v: Vec<i32> = row.iter().map(|x| x.to_i32()).collect();
                let (max, min) = (*v.iter().max().unwrap(), *v.iter().min().unwrap());
                let sum: i64 = v.iter().map(|&x| t.term((max - x) as usize) as i64).sum();
                let reach = (max - min) as usize;
                let plan = t.plan(&p, &p.row_constants(sum), reach);
                let Some(b) = plan.split else { continue };
                let live = if T::MIN == 0 {
                    super::super::neon::live_groups::<false>(&t, b)
                } else {
                    super::super::neon::live_groups::<true>(&t, b)
                };
                if plan.kept > reach {
                    uncut_by_live += (16 * live <= reach) as usize;
                } else if 16 * live < plan.kept {
                    by_live += 1;
                } else {
                    by_kept += 1;
                }
            }
        }
        assert!(
            by_live > 0 && by_kept > 0 && uncut_by_live > 0,
            "cut rows: {by_live} clamped at a group, {by_kept} at the cut-off; \
             rows not cut: {uncut_by_live} clamped at a group"
        );
    }

    #[test]
    fn int8_full_range_rows_of_64_clamped_both_ways() {
        full_range_cut_rows::<i8>();
    }

    #[test]
    fn uint8_full_range_rows_of_64_clamped_both_ways() {
        full_range_cut_rows::<u8>();
    }

    #[test]
    fn int8_rows_of_64_on_rounding_boundaries() {
        boundaries::<i8>();
    }

    #[test]
    fn uint8_rows_of_64_on_rounding_boundaries() {
        boundaries::<u8>();
    }
}
