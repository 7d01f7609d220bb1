//! The output stage of `rows64.rs` (rows of exactly 64 bytes): per row,
//! one asm block builds the row's output table by the floor formula
//! (`table.rs`) and looks up its 64 outputs.

use super::neon::build_split;
use super::table::{Chunk, LogSoftmaxTables, CHUNK};
use core::arch::aarch64::*;

/// Bytes per row (one block).
const ROW: usize = 64;
/// Rows per group.
const GROUP: usize = 4;

/// One 16-entry group of a row's output table (`build_split`'s formula),
/// as asm lines: `s` points at the group's 16 `s[d]` and `out` at its 16
/// bytes (both advanced), `b` holds `B` in every lane; `$narrow` is the
/// saturating narrowing shift of the type (`sqshrn` or `sqshrun`).
macro_rules! group_lines {
    ($narrow:literal) => {
        concat!(
            "ld1 {{v16.4s-v19.4s}}, [{s}], #64\n",
            "subhn v20.4h, v16.4s, {b:v}.4s\n",
            "subhn2 v20.8h, v17.4s, {b:v}.4s\n",
            "subhn v21.4h, v18.4s, {b:v}.4s\n",
            "subhn2 v21.8h, v19.4s, {b:v}.4s\n",
            $narrow,
            " v22.8b, v20.8h, #6\n",
            $narrow,
            "2 v22.16b, v21.8h, #6\n",
            "st1 {{v22.16b}}, [{out}], #16\n",
        )
    };
}

/// The lines of one further table chunk of the output lookup: indices
/// `v0..v4` lowered by 64 (`{k}`), looked up by `tbx` in the chunk loaded
/// into v20..v24, into `v4..v8`.
macro_rules! chunk_lines {
    () => {
        concat!(
            "ld1 {{v20.16b-v23.16b}}, [{tab}], #64\n",
            "sub v0.16b, v0.16b, {k:v}.16b\n",
            "sub v1.16b, v1.16b, {k:v}.16b\n",
            "sub v2.16b, v2.16b, {k:v}.16b\n",
            "sub v3.16b, v3.16b, {k:v}.16b\n",
            "tbx v4.16b, {{v20.16b-v23.16b}}, v0.16b\n",
            "tbx v5.16b, {{v20.16b-v23.16b}}, v1.16b\n",
            "tbx v6.16b, {{v20.16b-v23.16b}}, v2.16b\n",
            "tbx v7.16b, {{v20.16b-v23.16b}}, v3.16b\n",
        )
    };
}

/// One row, in one asm block (so that LLVM neither unrolls nor unswitches
/// copies of it): the first `g` (1..=16) groups of its output table,
/// straight-line (one group when bit 4 of `g` is set, then runs of 8, 4, 2
/// and 1 groups by the bits of what is left: no loop counter, no indirect
/// branch), then its 64 outputs `table[max - x]` through `c` (1..=4) table
/// chunks (`tbl` on the first, `tbx` on each further one: `c` is the
/// number of further chunks, 0..=3, whose blocks are alike, as the indices
/// and the table pointer advance by one chunk in each).
macro_rules! row_asm {
    ($narrow:literal, $s:expr, $out:expr, $b:expr, $g:expr, $tab:expr, $src:expr, $dst:expr, $m:expr, $c:expr, $k:expr) => {
        core::arch::asm!(
            "tbz {g:w}, #4, 2f",
            group_lines!($narrow),
            "mov {g:w}, #15",
            "2:",
            "tbz {g:w}, #3, 3f",
            group_lines!($narrow), group_lines!($narrow), group_lines!($narrow), group_lines!($narrow),
            group_lines!($narrow), group_lines!($narrow), group_lines!($narrow), group_lines!($narrow),
            "3:",
            "tbz {g:w}, #2, 4f",
            group_lines!($narrow), group_lines!($narrow), group_lines!($narrow), group_lines!($narrow),
            "4:",
            "tbz {g:w}, #1, 5f",
            group_lines!($narrow), group_lines!($narrow),
            "5:",
            "tbz {g:w}, #0, 6f",
            group_lines!($narrow),
            "6:",
            "ld1 {{v0.16b-v3.16b}}, [{src}]",
            "ld1 {{v16.16b-v19.16b}}, [{tab}], #64",
            "sub v0.16b, {m:v}.16b, v0.16b",
            "sub v1.16b, {m:v}.16b, v1.16b",
            "sub v2.16b, {m:v}.16b, v2.16b",
            "sub v3.16b, {m:v}.16b, v3.16b",
            "tbl v4.16b, {{v16.16b-v19.16b}}, v0.16b",
            "tbl v5.16b, {{v16.16b-v19.16b}}, v1.16b",
            "tbl v6.16b, {{v16.16b-v19.16b}}, v2.16b",
            "tbl v7.16b, {{v16.16b-v19.16b}}, v3.16b",
            "tbz {c:w}, #1, 7f",
            chunk_lines!(),
            chunk_lines!(),
            "7:",
            "tbz {c:w}, #0, 8f",
            chunk_lines!(),
            "8:",
            "st1 {{v4.16b-v7.16b}}, [{dst}]",
            s = inout(reg) $s => _,
            out = inout(reg) $out => _,
            b = in(vreg) $b,
            g = inout(reg) $g => _,
            tab = inout(reg) $tab => _,
            src = in(reg) $src,
            dst = in(reg) $dst,
            m = in(vreg) $m,
            c = in(reg) $c,
            k = in(vreg) $k,
            out("v0") _, out("v1") _, out("v2") _, out("v3") _,
            out("v4") _, out("v5") _, out("v6") _, out("v7") _,
            out("v16") _, out("v17") _, out("v18") _, out("v19") _,
            out("v20") _, out("v21") _, out("v22") _, out("v23") _,
            options(nostack),
        )
    };
}

/// The outputs of four rows whose floor formula holds: per row `i`, its
/// output table for `d` in `0..16 (reach[i] / 16 + 1)` from `B = b[i]`,
/// then its 64 outputs through `chunks` (1..=4) table chunks (entries past
/// the built groups are never looked up: every `d` is at most the row's
/// reach). Not inlined: the straight-line table build is large, and one
/// copy per type serves every group.
///
/// # Safety
/// `src` and `dst` must be valid for 256 bytes; `chunks` in `1..=4`.
#[inline(never)]
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn rows_out4<const SIGNED: bool>(
    t: &LogSoftmaxTables,
    table: &mut [Chunk; 4],
    (src, dst): (*const u8, *mut u8),
    max: &[u8; 16],
    b: &[i32; GROUP],
    reach: &[usize; GROUP],
    chunks: usize,
) {
    debug_assert!((1..=4).contains(&chunks));
    let out = table.as_mut_ptr().cast::<u8>();
    let tab = table.as_ptr().cast::<u8>();
    // SAFETY: register arithmetic.
    let k = unsafe { vdupq_n_u8(CHUNK as u8) };
    for i in 0..GROUP {
        // SAFETY: the build reads 16 groups of 16 i32 of `scaled` at most
        // (groups = reach / 16 + 1 <= 16, 256 entries) and writes as many
        // groups of 16 bytes of `table` (256 bytes); the lookup reads
        // `chunks` 64-byte chunks of `table` and row i's 64 bytes at `src`,
        // writes 64 at `dst` (within the caller's 256); each asm clobbers
        // only the registers it names.
        unsafe {
            let bv = vdupq_n_s32(b[i]);
            let groups = (reach[i] / 16 + 1) as u64;
            let m = vdupq_n_u8(max[i]);
            let (src, dst) = (src.add(ROW * i), dst.add(ROW * i));
            // Further chunks after the first: 0..=3.
            let c = chunks as u64 - 1;
            let s = t.scaled.as_ptr();
            if SIGNED {
                row_asm!("sqshrn", s, out, bv, groups, tab, src, dst, m, c, k);
            } else {
                row_asm!("sqshrun", s, out, bv, groups, tab, src, dst, m, c, k);
            }
        }
    }
}

/// One cut row, in one asm block: the first `g` (0..=15) groups of its
/// output table as in `row_asm` (runs of 8, 4, 2 and 1 groups by the bits
/// of `g`), then the type's minimum `{minb}` into the table entry at `out`
/// (where the groups end, or wherever the caller points it when `g` is
/// 0), then the 64 outputs `table[min(max - x, clamp)]` (`umin` by the
/// bytes of `{cl}`) through `c + 1` (1..=4) table chunks.
macro_rules! cut_row_asm {
    ($narrow:literal, $s:expr, $out:expr, $b:expr, $g:expr, $minb:expr, $tab:expr, $src:expr, $dst:expr, $m:expr, $cl:expr, $c:expr, $k:expr) => {
        core::arch::asm!(
            "tbz {g:w}, #3, 3f",
            group_lines!($narrow), group_lines!($narrow), group_lines!($narrow), group_lines!($narrow),
            group_lines!($narrow), group_lines!($narrow), group_lines!($narrow), group_lines!($narrow),
            "3:",
            "tbz {g:w}, #2, 4f",
            group_lines!($narrow), group_lines!($narrow), group_lines!($narrow), group_lines!($narrow),
            "4:",
            "tbz {g:w}, #1, 5f",
            group_lines!($narrow), group_lines!($narrow),
            "5:",
            "tbz {g:w}, #0, 6f",
            group_lines!($narrow),
            "6:",
            "strb {minb:w}, [{out}]",
            "ld1 {{v0.16b-v3.16b}}, [{src}]",
            "ld1 {{v16.16b-v19.16b}}, [{tab}], #64",
            "sub v0.16b, {m:v}.16b, v0.16b",
            "sub v1.16b, {m:v}.16b, v1.16b",
            "sub v2.16b, {m:v}.16b, v2.16b",
            "sub v3.16b, {m:v}.16b, v3.16b",
            "umin v0.16b, v0.16b, {cl:v}.16b",
            "umin v1.16b, v1.16b, {cl:v}.16b",
            "umin v2.16b, v2.16b, {cl:v}.16b",
            "umin v3.16b, v3.16b, {cl:v}.16b",
            "tbl v4.16b, {{v16.16b-v19.16b}}, v0.16b",
            "tbl v5.16b, {{v16.16b-v19.16b}}, v1.16b",
            "tbl v6.16b, {{v16.16b-v19.16b}}, v2.16b",
            "tbl v7.16b, {{v16.16b-v19.16b}}, v3.16b",
            "tbz {c:w}, #1, 7f",
            chunk_lines!(),
            chunk_lines!(),
            "7:",
            "tbz {c:w}, #0, 8f",
            chunk_lines!(),
            "8:",
            "st1 {{v4.16b-v7.16b}}, [{dst}]",
            s = inout(reg) $s => _,
            out = inout(reg) $out => _,
            b = in(vreg) $b,
            g = in(reg) $g,
            minb = in(reg) $minb,
            tab = inout(reg) $tab => _,
            src = in(reg) $src,
            dst = in(reg) $dst,
            m = in(vreg) $m,
            cl = in(vreg) $cl,
            c = in(reg) $c,
            k = in(vreg) $k,
            out("v0") _, out("v1") _, out("v2") _, out("v3") _,
            out("v4") _, out("v5") _, out("v6") _, out("v7") _,
            out("v16") _, out("v17") _, out("v18") _, out("v19") _,
            out("v20") _, out("v21") _, out("v22") _, out("v23") _,
            options(nostack),
        )
    };
}

/// The lanes of four rows that [`rows_out4_cut`] needs (lane `i` row `i`).
#[derive(Clone, Copy)]
pub(super) struct CutLanes {
    /// `B` of each row (`L - 2^21 + 1 - zero_point 2^22`).
    pub(super) b: int32x4_t,
    /// The cut-off `-adjusted_diff_min`, before its clamp to `0..=256`;
    /// negative on every lane (every row keeps some outputs).
    pub(super) adjusted_diff_min: int32x4_t,
    /// `max - min` of each row (0..=255).
    pub(super) reach: int32x4_t,
}

/// Where the outputs of four rows reach the type's minimum, lane by lane:
/// a group count `live` with `s[16 g] >= B + (min + 1) 2^22` (saturated)
/// for every head before group `live` and not at head `live` (when
/// `live < 16`), found by binary search over the 16 heads on the four
/// lanes at once: each probe gathers one head per lane by `tbl` from the
/// 64 bytes of heads. This is the count of [`live_groups`](super::neon::live_groups)
/// where the heads fall with `g`; past `monotonic` they need not, and then
/// `live` may be a later group where they fall below the threshold,
/// which is as good for the caller: every entry from the first head below
/// the threshold up to `monotonic` is the minimum (`s` does not increase
/// there), and the caller clamps at `16 live` only below its end, at most
/// `monotonic`.
#[inline(always)]
fn live_groups4<const SIGNED: bool>(t: &LogSoftmaxTables, b: int32x4_t) -> int32x4_t {
    let min_out: i32 = if SIGNED { i8::MIN as i32 } else { 0 };
    // One byte step on each of a lane's four bytes.
    const R: u32 = 0x0101_0101;
    // SAFETY: register arithmetic and loads of the 16 heads (64 bytes).
    unsafe {
        let below = vqaddq_s32(b, vdupq_n_s32((min_out + 1) << 22));
        let heads = vld1q_u8_x4(t.heads.as_ptr().cast::<u8>());
        // A lane's byte indices of head k: 4k, 4k + 1, 4k + 2, 4k + 3.
        let at = |k: u32| vdupq_n_u32(0x0302_0100 + 4 * k * R);
        let ge = |pos: uint32x4_t| {
            let h = vreinterpretq_s32_u8(vqtbl4q_u8(heads, vreinterpretq_u8_u32(pos)));
            vcgeq_s32(h, below)
        };
        // Probe head idx + step - 1 with idx (heads known at or above)
        // starting at 0 and steps 8, 4, 2, 1; a hit (all ones) moves the
        // next probe up by the next step, a miss down by it: 4 index bytes
        // a head, moved byte by byte (no byte leaves 0..64, so there is no
        // carry between the bytes of a lane).
        let m8 = ge(at(7));
        let p4 = vbslq_u32(m8, at(11), at(3));
        let step = |p: uint32x4_t, m: uint32x4_t, next: u8| {
            let p = vsubq_u8(vreinterpretq_u8_u32(p), vdupq_n_u8(4 * next));
            let up = vandq_u8(vreinterpretq_u8_u32(m), vdupq_n_u8(8 * next));
            vreinterpretq_u32_u8(vaddq_u8(p, up))
        };
        let p2 = step(p4, ge(p4), 2);
        let p1 = step(p2, ge(p2), 1);
        let m1 = ge(p1);
        // idx from the probe's top byte (4 idx + 3), then the last hit;
        // idx is at most 14 here: head 15 at or above the threshold makes
        // it 16 (the heads fall, so every head is then).
        let idx = vshrq_n_u32::<26>(p1);
        let m16 = vcgeq_s32(vld1q_dup_s32(&t.heads[15]), below);
        vreinterpretq_s32_u32(vsubq_u32(vsubq_u32(idx, m1), m16))
    }
}

/// [`rows_out4`] for four rows of which some are cut off inside their
/// reach (`kept <= reach`, with `kept = clamp(-adjusted_diff_min, 0, 256)`:
/// differences `d >= kept` give the type minimum). A row's differences are
/// clamped (`umin`, in the asm block) to a `k` past which every output it
/// may need is the minimum, and its table is built up to entry `k` only,
/// entry `k` being the minimum:
///
/// * usually `k = 16 live`, the start of the first group below the type's
///   range (`s[16 g] - B < (min + 1) 2^22`, [`live_groups`](super::neon::live_groups)), when that
///   comes before the row's cut-off, or before the end of its reach if it
///   is not cut: outputs do not increase with `d` below the cut-off, so
///   from there on the formula itself gives the minimum. The asm block
///   builds the `live` groups before it as in `rows_out4` and stores the
///   minimum at entry `16 live` (one byte: no lookup goes past it). On
///   full-range data at the usual scales the outputs saturate well before
///   the cut-off: about 10 groups, not 16; the rows of such a group that
///   are not cut (about half of them) saturate as early.
/// * else, for a cut row, `k = kept`, the table built by `build_split` and
///   entry `kept` set to the minimum (by the asm block, with no groups);
///   a row neither cut nor saturating within its reach goes as in
///   `rows_out4`.
///
/// The lookups go through the chunks up to entry `k`. Which case a row
/// takes, its `k` and its group count are worked out for the four rows
/// at once on lanes.
///
/// # Safety
/// As [`rows_out4`]; every row meets the conditions of the floor formula
/// up to `min(reach, kept - 1)` (`rows64::cut_plan`), with `kept > 0`.
#[inline(never)]
pub(super) unsafe fn rows_out4_cut<const SIGNED: bool>(
    t: &LogSoftmaxTables,
    table: &mut [Chunk; 4],
    (src, dst): (*const u8, *mut u8),
    max: &[u8; 16],
    lanes: &CutLanes,
    chunks: usize,
) {
    debug_assert!((1..=4).contains(&chunks));
    let b = lanes.b;
    let plan = CutPlan::new::<SIGNED>(t, lanes);
    // SAFETY: register arithmetic.
    if unsafe { vminvq_u32(plan.early) } == 0 {
        // SAFETY: as the caller guarantees.
        unsafe { rows_out4_cut_mixed::<SIGNED>(t, table, (src, dst), max, lanes, chunks) };
        return;
    }
    // Every row clamped at 16 live (full-range data at the usual scales):
    // per row only its B, maximum, group count and clamp byte.
    let minimum = if SIGNED { i8::MIN as u8 } else { u8::MIN } as u32;
    let (mut bs, mut live, mut starts) = ([0i32; GROUP], [0i32; GROUP], [0u8; 16]);
    // SAFETY: stores into local arrays of four i32 and sixteen bytes.
    unsafe {
        vst1q_s32(bs.as_mut_ptr(), b);
        vst1q_s32(live.as_mut_ptr(), plan.live);
        // 16 live is below the row's end (at most 256): a byte.
        let start = vmovn_u32(vreinterpretq_u32_s32(vshlq_n_s32::<4>(plan.live)));
        let start = vmovn_u16(vcombine_u16(start, start));
        vst1q_u8(starts.as_mut_ptr(), vcombine_u8(start, start));
    }
    // SAFETY: register arithmetic.
    let k = unsafe { vdupq_n_u8(CHUNK as u8) };
    let s = t.scaled.as_ptr();
    for i in 0..GROUP {
        let (src, dst) = (src.wrapping_add(ROW * i), dst.wrapping_add(ROW * i));
        // SAFETY: loads of local arrays (ld1r).
        let (bv, m, cl) = unsafe {
            (
                vld1q_dup_s32(&bs[i]),
                vld1q_dup_u8(&max[i]),
                vld1q_dup_u8(&starts[i]),
            )
        };
        // At most 15 (16 live < end <= 256); the asm block reads only its
        // low four bits, so its reads and writes stay within the tables
        // whatever the value.
        let g = live[i] as u64;
        let (out, tab) = (table.as_mut_ptr().cast::<u8>(), table.as_ptr().cast::<u8>());
        // The chunks up to entry 16 live: live / 4 further ones (the asm
        // block reads the low two bits).
        let c = g / 4;
        // SAFETY: the build reads the low four bits of `g` (at most 15)
        // groups of 16 i32 of `scaled` and writes as many of `table`, the
        // minimum goes to the entry after them (at most 240); the lookup
        // reads at most 4 chunks of `table` (the low two bits of `c`, plus
        // one) and row
        // i's 64 bytes at `src`, writes 64 at `dst` (within the caller's
        // 256); the asm clobbers only the registers it names.
        unsafe {
            if SIGNED {
                cut_row_asm!("sqshrn", s, out, bv, g, minimum, tab, src, dst, m, cl, c, k);
            } else {
                cut_row_asm!("sqshrun", s, out, bv, g, minimum, tab, src, dst, m, cl, c, k);
            }
        }
    }
}

/// What [`rows_out4_cut`] works out for four rows on lanes (lane `i` row
/// `i`; masks all ones where true).
#[derive(Clone, Copy)]
struct CutPlan {
    /// The cut-off `-adjusted_diff_min` (saturated; positive), used only
    /// where it is at most `reach + 1 <= 256`.
    kept: int32x4_t,
    /// [`live_groups4`].
    live: int32x4_t,
    /// `kept <= reach`.
    cut: uint32x4_t,
    /// `16 live` before the row's end (its cut-off, else its reach + 1).
    early: uint32x4_t,
}

impl CutPlan {
    /// The plan of four rows from their lanes (recomputed where needed
    /// rather than passed on, so that the common case keeps it in
    /// registers).
    #[inline(always)]
    fn new<const SIGNED: bool>(t: &LogSoftmaxTables, lanes: &CutLanes) -> Self {
        let CutLanes {
            b,
            adjusted_diff_min,
            reach,
        } = *lanes;
        // SAFETY: register arithmetic.
        unsafe {
            let splat = vdupq_n_s32;
            // -adjusted_diff_min saturates (it is at least diff_min - 1, which
            // may be i32::MIN); it is positive (the callers check that), and
            // only its minimum with reach + 1 <= 256 and its test against
            // the reach are used, so the clamp to 0..=256 changes nothing.
            let kept = vqnegq_s32(adjusted_diff_min);
            let live = live_groups4::<SIGNED>(t, b);
            // The entries the row's lookups may need: up to its cut-off (past
            // it every output is the minimum) or its reach, whichever ends first.
            let end = vminq_s32(kept, vaddq_s32(reach, splat(1)));
            let start = vshlq_n_s32::<4>(live);
            CutPlan {
                kept,
                live,
                cut: vcleq_s32(kept, reach),
                early: vcltq_s32(start, end),
            }
        }
    }
}

/// [`rows_out4_cut`] when some row is not clamped at `16 live`: per row
/// the case it takes, its clamp entry and group count (rare on full-range
/// data: large scales, where the cut-off comes within the first group
/// that reaches the minimum). Out of line, so that the common case keeps
/// its code.
///
/// # Safety
/// As [`rows_out4_cut`].
#[inline(never)]
unsafe fn rows_out4_cut_mixed<const SIGNED: bool>(
    t: &LogSoftmaxTables,
    table: &mut [Chunk; 4],
    (src, dst): (*const u8, *mut u8),
    max: &[u8; 16],
    lanes: &CutLanes,
    chunks: usize,
) {
    debug_assert!((1..=4).contains(&chunks));
    let minimum = if SIGNED { i8::MIN as u8 } else { u8::MIN } as u32;
    let CutLanes { b, reach, .. } = *lanes;
    let CutPlan {
        kept,
        live: n,
        cut,
        early,
    } = CutPlan::new::<SIGNED>(t, lanes);
    let (mut bs, mut clamps) = ([0i32; GROUP], [0u8; 16]);
    let (mut groups, mut kind) = ([0i32; GROUP], [0i32; GROUP]);
    // SAFETY: register arithmetic and stores into local arrays of four
    // i32 and sixteen bytes.
    unsafe {
        let splat = vdupq_n_s32;
        let start = vshlq_n_s32::<4>(n);
        // Where the minimum goes: 16 live, else the cut-off (at most the
        // reach, 255); for a row neither cut nor saturating early, the
        // reach (the last entry its lookups need). All three fit a byte.
        let clamp = vbslq_s32(early, start, vbslq_s32(cut, kept, reach));
        // Groups the asm block builds: live, none (`build_split` does), or
        // the whole reach's.
        let whole = vaddq_s32(vshrq_n_s32::<4>(reach), splat(1));
        let g = vbslq_s32(early, n, vbslq_s32(cut, splat(0), whole));
        // 0: clamped at 16 live; 1: clamped at the cut-off; 2: whole reach.
        let k = vbslq_s32(early, splat(0), vbslq_s32(cut, splat(1), splat(2)));
        let c16 = vmovn_u32(vreinterpretq_u32_s32(clamp));
        vst1q_u8(
            clamps.as_mut_ptr(),
            vcombine_u8(vmovn_u16(vcombine_u16(c16, c16)), vdup_n_u8(0)),
        );
        vst1q_s32(bs.as_mut_ptr(), b);
        vst1q_s32(groups.as_mut_ptr(), g);
        vst1q_s32(kind.as_mut_ptr(), k);
    }
    // SAFETY: register arithmetic.
    let k = unsafe { vdupq_n_u8(CHUNK as u8) };
    let s = t.scaled.as_ptr();
    for i in 0..GROUP {
        let (src, dst) = (src.wrapping_add(ROW * i), dst.wrapping_add(ROW * i));
        // SAFETY: loads of local arrays (ld1r).
        let (bv, m, cl) = unsafe {
            (
                vld1q_dup_s32(&bs[i]),
                vld1q_dup_u8(&max[i]),
                vld1q_dup_u8(&clamps[i]),
            )
        };
        let clamp = clamps[i] as usize;
        // At most 16 (a byte's reach / 16 + 1).
        let groups = (groups[i] as usize).min(16);
        let (g, c) = (groups as u64, (clamp / CHUNK) as u64);
        let tab = table.as_ptr().cast::<u8>();
        match kind[i] {
            0 => {}
            1 => build_split::<SIGNED>(t, clamp / 16 + 1, bs[i], table),
            _ => {
                let out = table.as_mut_ptr().cast::<u8>();
                // SAFETY: as in `rows_out4`.
                unsafe {
                    if SIGNED {
                        row_asm!("sqshrn", s, out, bv, g, tab, src, dst, m, c, k);
                    } else {
                        row_asm!("sqshrun", s, out, bv, g, tab, src, dst, m, c, k);
                    }
                }
                continue;
            }
        }
        let out = table
            .as_mut_ptr()
            .cast::<u8>()
            .wrapping_add(clamp.wrapping_sub(16 * groups));
        // SAFETY: the build reads `groups <= 15` groups of 16 i32 of
        // `scaled` and writes as many of `table`, the minimum goes to
        // entry `clamp <= 255` of `table`; the lookup reads `c + 1 <= 4`
        // chunks of `table` and row i's 64 bytes at `src`, writes 64 at
        // `dst` (within the caller's 256); the asm clobbers only the
        // registers it names.
        unsafe {
            if SIGNED {
                cut_row_asm!("sqshrn", s, out, bv, g, minimum, tab, src, dst, m, cl, c, k);
            } else {
                cut_row_asm!("sqshrun", s, out, bv, g, minimum, tab, src, dst, m, cl, c, k);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use crate::elem::QuantElem;
    use crate::ops::log_softmax::neon::live_groups;
    use crate::ops::log_softmax::params::LogSoftmaxParams;
    use crate::QuantParams;

    /// `live_groups4` against the 16-head count of `live_groups`, for `B`
    /// on both sides of every head's threshold and at the i32 extremes,
    /// over input scales whose tables do and do not fall past `monotonic`;
    /// where the heads do not fall, the result must still be a group whose
    /// head lies below the threshold after one at or above it.
    fn live_on_lanes<T: QuantElem, const SIGNED: bool>() {
        let out_q = QuantParams::new(16.0 / 256.0, T::MAX);
        let min_out: i64 = if SIGNED { -128 } else { 0 };
        let mut checked = 0;
        for scale in [0.01f32, 0.05, 0.1, 0.3, 1.0, 4.0, 20.0] {
            let p = LogSoftmaxParams::new::<T>(QuantParams::new(scale, 0), out_q).unwrap();
            let t = LogSoftmaxTables::new(&p);
            let falls = t.heads.windows(2).all(|w| w[0] >= w[1]);
            let mut bs = std::vec![i32::MIN, i32::MIN + 1, i32::MAX - 1, i32::MAX, 0, -1];
            for &h in &t.heads {
                let b = h as i64 - ((min_out + 1) << 22);
                for d in [-1i64, 0, 1] {
                    bs.push((b + d).clamp(i32::MIN as i64, i32::MAX as i64) as i32);
                }
            }
            for four in bs.chunks(4) {
                let mut lanes = [0i32; GROUP];
                lanes[..four.len()].copy_from_slice(four);
                // SAFETY: a load and a store of local arrays of four.
                let got = unsafe {
                    let mut got = [0i32; GROUP];
                    vst1q_s32(
                        got.as_mut_ptr(),
                        live_groups4::<SIGNED>(&t, vld1q_s32(lanes.as_ptr())),
                    );
                    got
                };
                for (&b, &live) in lanes.iter().zip(&got) {
                    let want = live_groups::<SIGNED>(&t, b);
                    let th =
                        (b as i64 + ((min_out + 1) << 22)).clamp(i32::MIN as i64, i32::MAX as i64);
                    if falls {
                        assert_eq!(live as usize, want, "scale {scale}, B {b}");
                    } else {
                        let live = live as usize;
                        assert!(live <= 16, "scale {scale}, B {b}: {live}");
                        let first_below =
                            t.heads.iter().position(|&h| (h as i64) < th).unwrap_or(16);
                        assert!(
                            live >= first_below,
                            "scale {scale}, B {b}: {live} < {first_below}"
                        );
                        assert!(
                            live == 16 || (t.heads[live] as i64) < th,
                            "scale {scale}, B {b}"
                        );
                    }
                    checked += 1;
                }
            }
        }
        assert!(checked > 7 * 48);
    }

    #[test]
    fn int8_live_groups_on_lanes() {
        live_on_lanes::<i8, true>();
    }

    #[test]
    fn uint8_live_groups_on_lanes() {
        live_on_lanes::<u8, false>();
    }
}
