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
    /// The cut-off `-adjusted_diff_min`, before its clamp to `0..=256`.
    pub(super) adjusted_diff_min: int32x4_t,
    /// `max - min` of each row (0..=255).
    pub(super) reach: int32x4_t,
}

/// [`live_groups`](super::neon::live_groups) of four rows at once, lane by lane: the number of the
/// 16 heads with `s[16 g] >= B + (min + 1) 2^22` (saturated), each head
/// broadcast (`ld4r`) and compared with all four rows' thresholds.
#[inline(always)]
fn live_groups4<const SIGNED: bool>(t: &LogSoftmaxTables, b: int32x4_t) -> int32x4_t {
    let min_out: i32 = if SIGNED { i8::MIN as i32 } else { 0 };
    // SAFETY: register arithmetic and loads of the 16 heads.
    unsafe {
        let below = vqaddq_s32(b, vdupq_n_s32((min_out + 1) << 22));
        let h = t.heads.as_ptr();
        let quad = |q: usize| {
            let x = vld4q_dup_s32(h.add(4 * q));
            let m = |v: int32x4_t| vreinterpretq_s32_u32(vcgeq_s32(v, below));
            vaddq_s32(vaddq_s32(m(x.0), m(x.1)), vaddq_s32(m(x.2), m(x.3)))
        };
        let n = vaddq_s32(vaddq_s32(quad(0), quad(1)), vaddq_s32(quad(2), quad(3)));
        vnegq_s32(n)
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
/// up to `min(reach, kept - 1)` (`rows64::cut_plan`).
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
    let minimum = if SIGNED { i8::MIN as u8 } else { u8::MIN } as u32;
    let CutLanes {
        b,
        adjusted_diff_min,
        reach,
    } = *lanes;
    let (mut bs, mut clamps) = ([0i32; GROUP], [0u8; 16]);
    let (mut groups, mut kind) = ([0i32; GROUP], [0i32; GROUP]);
    // SAFETY: register arithmetic and stores into local arrays of four
    // i32 and sixteen bytes.
    unsafe {
        let splat = vdupq_n_s32;
        // -adjusted_diff_min saturates (it is at least diff_min - 1, which
        // may be i32::MIN), then the clamp.
        let kept = vminq_s32(
            vmaxq_s32(vqnegq_s32(adjusted_diff_min), splat(0)),
            splat(256),
        );
        let n = live_groups4::<SIGNED>(t, b);
        let cut = vcleq_s32(kept, reach);
        // The entries the row's lookups may need: up to its cut-off (past
        // it every output is the minimum) or its reach.
        let end = vbslq_s32(cut, kept, vaddq_s32(reach, splat(1)));
        let start = vshlq_n_s32::<4>(n);
        let early = vcltq_s32(start, end);
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
