//! Log-softmax, [`Method::FixedPoint`](crate::Method::FixedPoint), NEON:
//! table-driven, bit-exact with the scalar reference (see `table.rs` for
//! the tables and why they are exact).
//!
//! Per row, 64 bytes per iteration:
//! 1. maximum and minimum (`smax`/`smin` or `umax`/`umin`): every `d = max - x`
//!    lies in `0..=reach`, `reach = max - min`, so only the `reach / 64 + 1`
//!    table chunks it touches are looked up and built.
//! 2. sum: `d` by one byte subtraction (the same for int8 and uint8: the
//!    distance fits a byte), each byte plane of the term by a `tbl` and a
//!    `tbx` per further chunk (`d ^ 64 c` moves chunk `c`'s indices to
//!    `0..64` and the others out of range, where `tbx` keeps what it
//!    has), plane by plane, summed by `uadalp` into u16 lanes, widened into
//!    u64 lanes every 32 blocks (before a u16 lane can overflow): exact for
//!    any row length. Sum = plane 0 + plane 1 * 2^8 + plane 2 * 2^16, the
//!    scalar reference's `i64` sum.
//! 3. the row's log-sum, four rows at once on NEON lanes (`log_neon`), and
//!    its cut-off by the scalar code (`row_constants_from_log`).
//! 4. the row's output table for `d` in `0..=reach` (16 entries by a
//!    load, four `subhn` and two saturating narrowing shifts, see
//!    `table.rs`), then a `tbl` (plus a `tbx` per further chunk) for
//!    every 16 outputs.
//!
//! Rows of exactly 64 bytes go four at a time through `rows64.rs` (the
//! same tables, straight-line; `neon_entry.rs` sends them there); the rows
//! left over, and every other row length, come here. `rows64.rs` also hands
//! back here the groups of four whose floor formula does not hold.
//!
//! Rows of at least 64 bytes end with an overlapping block (the sum masks
//! the lanes already counted; the output pass rewrites them with the same
//! values); shorter rows go through a 64-byte window of the buffers where
//! it fits (`blocks::span`), else through 64-byte stack buffers. A short
//! row's outputs are looked up and stored by the 16-byte vectors that hold
//! the row only.

use super::blocks::{load, row_max_min, span, Block, KEEP_FROM, KEEP_TO, STEP};
use super::log_neon::log_x_for_x_greater_than_or_equal_to_1_x4;
use super::params::{LogSoftmaxParams, LogSoftmaxRow};
use super::table::{Chunk, LogSoftmaxTables, CHUNK};
use crate::elem::QuantElem;
use crate::simd::lookup::lookup4;
use crate::simd::tail::{map_tail, read_tail};
use core::arch::aarch64::*;

/// Blocks between widenings of the u16 plane sums: each block adds four
/// `uadalp` of at most `2 * 255` per lane, and `32 * 4 * 510 < 65536`.
const FLUSH_EVERY: usize = 32;

/// The sums of the three byte planes: u16 lanes, widened into u64 lanes.
struct Sums {
    acc16: [uint16x8_t; 3],
    acc64: [uint64x2_t; 3],
}

impl Sums {
    #[inline(always)]
    fn new() -> Self {
        // SAFETY: register arithmetic.
        unsafe {
            Sums {
                acc16: [vdupq_n_u16(0); 3],
                acc64: [vdupq_n_u64(0); 3],
            }
        }
    }

    /// Adds the terms of a 64-byte block of inputs through the first `N`
    /// chunks (`chunks[k] <= N` of plane `k`); `keep` (0 or 0xff per lane)
    /// masks off lanes that must not count.
    ///
    /// Plane by plane: each plane's lookups are summed into its u16 lanes
    /// before the next plane's start, so only four looked-up registers are
    /// live (holding all three planes' twelve spilled registers to the
    /// stack). A further chunk's indices are `d ^ 64 c`: for `d` in chunk
    /// `c` that is `d - 64 c` (`0..64`), for `d` in any other chunk it is
    /// 64 or more, out of `tbx`'s range.
    #[inline(always)]
    fn add<const N: usize>(
        &mut self,
        t: &LogSoftmaxTables,
        chunks: &[usize; 3],
        maxv: uint8x16_t,
        b: Block,
        keep: Option<&Block>,
    ) {
        // SAFETY: register arithmetic, and loads of whole 64-byte chunks of
        // the planes (ch < chunks[k] <= N <= 4).
        unsafe {
            let planes = t.planes.as_ptr();
            let table = |k: usize, ch: usize| (*planes.add(k))[ch].0.as_ptr();
            let d = b.map(|x| vsubq_u8(maxv, x));
            for (k, acc) in self.acc16.iter_mut().enumerate() {
                let n = chunks[k];
                if n == 0 {
                    continue;
                }
                let mut v = [vdupq_n_u8(0); 4];
                lookup4::<true>(table(k, 0), &d, &mut v);
                for ch in 1..N {
                    if ch < n {
                        let flip = vdupq_n_u8((CHUNK * ch) as u8);
                        let dc = d.map(|x| veorq_u8(x, flip));
                        lookup4::<false>(table(k, ch), &dc, &mut v);
                    }
                }
                for (j, x) in v.into_iter().enumerate() {
                    let x = match keep {
                        Some(m) => vandq_u8(x, m[j]),
                        None => x,
                    };
                    *acc = vpadalq_u8(*acc, x);
                }
            }
        }
    }

    /// Moves the u16 sums into the u64 totals.
    #[inline(always)]
    fn flush(&mut self) {
        // SAFETY: register arithmetic.
        unsafe {
            for k in 0..3 {
                self.acc64[k] = vpadalq_u32(self.acc64[k], vpaddlq_u16(self.acc16[k]));
                self.acc16[k] = vdupq_n_u16(0);
            }
        }
    }

    /// The exact sum of the terms (call after `flush`).
    #[inline(always)]
    fn total(&self) -> u64 {
        // SAFETY: register arithmetic.
        unsafe { (0..3).map(|k| vaddvq_u64(self.acc64[k]) << (8 * k)).sum() }
    }
}

/// Sum of the terms `t[max - x]` over a row's first `len` bytes (`row`
/// as [`row_max_min`] takes it), exact, through `N` chunks.
#[inline(always)]
fn row_sum<const N: usize>(
    t: &LogSoftmaxTables,
    chunks: &[usize; 3],
    row: &[u8],
    len: usize,
    max: u8,
) -> u64 {
    let mut sums = Sums::new();
    // SAFETY: register arithmetic.
    let maxv = unsafe { vdupq_n_u8(max) };
    if len < STEP {
        // SAFETY: KEEP_TO holds 128 bytes; 64 - len + 64 <= 128.
        let keep = unsafe { load(KEEP_TO.as_ptr().add(STEP - len)) };
        if row.len() >= STEP {
            // SAFETY: the window holds STEP bytes; lanes past len are masked.
            let b = unsafe { load(row.as_ptr()) };
            sums.add::<N>(t, chunks, maxv, b, Some(&keep));
        } else {
            read_tail::<STEP, u8, ()>(&row[..len], max, |buf| {
                // SAFETY: read_tail hands out STEP readable bytes.
                let b = unsafe { load(buf) };
                sums.add::<N>(t, chunks, maxv, b, Some(&keep));
            });
        }
        sums.flush();
    } else {
        let row = &row[..len];
        let mut src = row.as_ptr();
        let mut left = row.len() / STEP;
        while left > 0 {
            let now = left.min(FLUSH_EVERY);
            for _ in 0..now {
                // SAFETY: src points at one of the row's whole 64-byte blocks.
                unsafe {
                    let b = load(src);
                    src = src.add(STEP);
                    sums.add::<N>(t, chunks, maxv, b, None);
                }
            }
            sums.flush();
            left -= now;
        }
        let rest = row.len() % STEP;
        if rest != 0 {
            // SAFETY: row.len() >= STEP, so the last STEP bytes are in
            // bounds; KEEP_FROM holds 128 bytes and 64 - m + 64 <= 128 for
            // the m = 64 - rest lanes counted already.
            unsafe {
                let b = load(row.as_ptr().add(row.len() - STEP));
                let keep = load(KEEP_FROM.as_ptr().add(rest));
                sums.add::<N>(t, chunks, maxv, b, Some(&keep));
            }
            sums.flush();
        }
    }
    // Every path ends flushed (the block loop flushes after its last run).
    sums.total()
}

/// Fills `out[0..16 groups]` with the row's outputs by the floor formula
/// `floor((s[d] - B) / 2^22)`, saturated to the type (see `table.rs`).
#[inline(always)]
pub(super) fn build_split<const SIGNED: bool>(
    t: &LogSoftmaxTables,
    groups: usize,
    b: i32,
    out: &mut [Chunk; 4],
) {
    debug_assert!(groups <= 16);
    let dst = out.as_mut_ptr().cast::<u8>();
    // SAFETY: register arithmetic; the loads read entries 16 g .. 16 g + 16
    // of the 256-entry `scaled` and the stores write 16 bytes at 16 g of the
    // 256-byte `out`, for g < groups <= 16.
    unsafe {
        let bv = vdupq_n_s32(b);
        for g in 0..groups.min(16) {
            let s = vld1q_s32_x4(t.scaled.as_ptr().add(16 * g));
            // High halves of the exact i32 differences: floor(. / 2^16).
            let x = vsubhn_high_s32(vsubhn_s32(s.0, bv), s.1, bv);
            let y = vsubhn_high_s32(vsubhn_s32(s.2, bv), s.3, bv);
            // floor(. / 2^6), saturated to the type.
            let q = if SIGNED {
                vreinterpretq_u8_s8(vqshrn_high_n_s16::<6>(vqshrn_n_s16::<6>(x), y))
            } else {
                vqshrun_high_n_s16::<6>(vqshrun_n_s16::<6>(x), y)
            };
            vst1q_u8(dst.add(16 * g), q);
        }
    }
}

/// How many of the 16 table groups start above the type's range: the
/// number of heads with `s[16 g] - B >= (min + 1) 2^22`. The heads fall
/// with `g`, so these are the first groups; from entry `16 live` on, the
/// floor formula gives the type's minimum (outputs do not increase with
/// `d` below the cut-off).
#[inline(always)]
pub(super) fn live_groups<const SIGNED: bool>(t: &LogSoftmaxTables, b: i32) -> usize {
    let min_out: i64 = if SIGNED { i8::MIN as i64 } else { 0 };
    let below = (b as i64 + ((min_out + 1) << 22)).clamp(i32::MIN as i64, i32::MAX as i64) as i32;
    // SAFETY: register arithmetic and loads of the 16 heads.
    unsafe {
        let h = vld1q_s32_x4(t.heads.as_ptr());
        let th = vdupq_n_s32(below);
        let n = vaddq_s32(
            vaddq_s32(
                vreinterpretq_s32_u32(vcgeq_s32(h.0, th)),
                vreinterpretq_s32_u32(vcgeq_s32(h.1, th)),
            ),
            vaddq_s32(
                vreinterpretq_s32_u32(vcgeq_s32(h.2, th)),
                vreinterpretq_s32_u32(vcgeq_s32(h.3, th)),
            ),
        );
        vaddvq_s32(n).unsigned_abs() as usize
    }
}

/// The row's output bytes for `d` in `0..=reach` into `out`; returns
/// `Some(k)` when the row is cut off inside its reach: then only entries
/// `0..=k` are built, entry `k` is the type's minimum and so is every
/// output for `d > k`, so the lookup clamps `d` to `k` (and needs the
/// chunks up to `k` only). `k` is the first group start past which the
/// floor formula saturates (`live_groups`) when that comes before the
/// cut-off, else the cut-off itself.
#[inline(always)]
fn build_table<T: QuantElem, const SIGNED: bool>(
    p: &LogSoftmaxParams,
    t: &LogSoftmaxTables,
    row: &LogSoftmaxRow,
    reach: usize,
    out: &mut [Chunk; 4],
) -> Option<usize> {
    let row = *row;
    let plan = t.plan(p, &row, reach);
    match plan.split {
        Some(b) => {
            if plan.kept <= reach {
                // At most reach, so at most 255 (the min only tells the compiler).
                let kept = plan.kept.min(255);
                let live = live_groups::<SIGNED>(t, b);
                if 16 * live < kept {
                    // Group `live` holds entry 16 live, the minimum.
                    build_split::<SIGNED>(t, live + 1, b, out);
                    Some(16 * live)
                } else {
                    build_split::<SIGNED>(t, kept / 16 + 1, b, out);
                    out[kept / CHUNK].0[kept % CHUNK] = T::MIN as u8;
                    Some(kept)
                }
            } else {
                build_split::<SIGNED>(t, reach / 16 + 1, b, out);
                None
            }
        }
        None => {
            // Log-sums at or below 0 or wrapping differences: entry by
            // entry with the reference's lane math (rare, exact).
            for d in 0..=reach.min(255) {
                out[d / CHUNK].0[d % CHUNK] = T::saturate(p.output_for(d, &row)).to_i32() as u8;
            }
            None
        }
    }
}

/// Writes a row's outputs `table[max - x]` through `C` chunks (a 64-byte
/// window is written whole); with `CLAMP`, `table[min(max - x, clamp)]`.
#[inline(always)]
pub(super) fn write_row<const C: usize, const CLAMP: bool>(
    table: &[Chunk; 4],
    row_in: &[u8],
    row_out: &mut [u8],
    max: u8,
    clamp: u8,
) {
    write_row_of::<C, CLAMP, false>(table, (row_in, row_out, STEP), max, clamp)
}

/// [`write_row`] of a row of `len` bytes. With `SHORT`, a row shorter than
/// 64 bytes read and written through a 64-byte window (`blocks::span`) is
/// looked up and stored by the 16-byte vectors that hold it only (the
/// window's other bytes are later rows' outputs, rewritten when those rows
/// are done). `SHORT` is a type parameter rather than a test of `len`
/// because the `Lut` kernel shares [`write_row`]: with the short path
/// present in its copies but never taken, it measured 1 to 3% more
/// instructions per element on full-range rows.
#[inline(always)]
fn write_row_of<const C: usize, const CLAMP: bool, const SHORT: bool>(
    table: &[Chunk; 4],
    (row_in, row_out, len): (&[u8], &mut [u8], usize),
    max: u8,
    clamp: u8,
) {
    // SAFETY: register arithmetic and loads of whole 64-byte chunks (C <= 4).
    let (tabs, maxv, clampv) = unsafe {
        (
            core::array::from_fn::<_, C, _>(|c| vld1q_u8_x4(table[c].0.as_ptr())),
            vdupq_n_u8(max),
            vdupq_n_u8(clamp),
        )
    };
    let lane = |x: uint8x16_t| -> uint8x16_t {
        // SAFETY: register arithmetic.
        unsafe {
            let mut d = vsubq_u8(maxv, x);
            if CLAMP {
                d = vminq_u8(d, clampv);
            }
            let mut q = vqtbl4q_u8(tabs[0], d);
            for tab in &tabs[1..] {
                d = vsubq_u8(d, vdupq_n_u8(CHUNK as u8));
                q = vqtbx4q_u8(q, *tab, d);
            }
            q
        }
    };
    let map = |b: Block| -> Block { b.map(lane) };
    let store = |dst: *mut u8, y: Block| {
        // SAFETY: callers pass 64 writable bytes.
        unsafe { vst1q_u8_x4(dst, uint8x16x4_t(y[0], y[1], y[2], y[3])) }
    };
    let n = row_in.len().min(row_out.len());
    if SHORT && len < STEP && n >= STEP {
        let (src, dst) = (row_in.as_ptr(), row_out.as_mut_ptr());
        for v in 0..len.div_ceil(16).min(STEP / 16) {
            // SAFETY: 16 v + 16 <= 64 bytes of the window in both buffers.
            unsafe { vst1q_u8(dst.add(16 * v), lane(vld1q_u8(src.add(16 * v)))) }
        }
    } else if n >= STEP {
        let (mut src, mut dst) = (row_in.as_ptr(), row_out.as_mut_ptr());
        for _ in 0..n / STEP {
            // SAFETY: src and dst point at the same whole 64-byte block of
            // their rows.
            unsafe {
                store(dst, map(load(src)));
                src = src.add(STEP);
                dst = dst.add(STEP);
            }
        }
        if !n.is_multiple_of(STEP) {
            // SAFETY: n >= STEP, so the last STEP bytes of both are in bounds.
            unsafe {
                let y = map(load(row_in.as_ptr().add(n - STEP)));
                store(row_out.as_mut_ptr().add(n - STEP), y);
            }
        }
    } else {
        // Padded with the maximum: d = 0, a valid entry.
        map_tail::<STEP, u8>(row_in, row_out, max, |src, dst| {
            // SAFETY: map_tail hands out STEP readable and writable bytes.
            store(dst, map(unsafe { load(src) }))
        });
    }
}

/// A row's maximum (raw byte), reach (`max - min`) and exact sum of terms
/// (the first `len` bytes of `row_in`, as [`row_max_min`] takes them).
#[inline(always)]
fn row_stats<const SIGNED: bool>(
    t: &LogSoftmaxTables,
    row_in: &[u8],
    len: usize,
) -> (u8, usize, u64) {
    let (max, min) = row_max_min::<SIGNED>(row_in, len);
    // max >= min in the type's order, so the byte difference is the
    // distance (0..=255) for int8 too.
    let reach = max.wrapping_sub(min) as usize;
    let n = reach / CHUNK + 1;
    let chunks = t.plane_chunks.map(|c| c.min(n));
    let sum = match n {
        1 => row_sum::<1>(t, &chunks, row_in, len, max),
        2 => row_sum::<2>(t, &chunks, row_in, len, max),
        3 => row_sum::<3>(t, &chunks, row_in, len, max),
        _ => row_sum::<4>(t, &chunks, row_in, len, max),
    };
    (max, reach, sum)
}

/// The output table and the outputs of a row whose constants are known.
#[inline(always)]
fn finish_row<T: QuantElem, const SIGNED: bool>(
    p: &LogSoftmaxParams,
    t: &LogSoftmaxTables,
    row: &LogSoftmaxRow,
    (max, reach): (u8, usize),
    (row_in, row_out, len): (&[u8], &mut [u8], usize),
    table: &mut [Chunk; 4],
) {
    match build_table::<T, SIGNED>(p, t, row, reach, table) {
        None => match reach / CHUNK + 1 {
            1 => write_row_of::<1, false, true>(table, (row_in, row_out, len), max, 0),
            2 => write_row_of::<2, false, true>(table, (row_in, row_out, len), max, 0),
            3 => write_row_of::<3, false, true>(table, (row_in, row_out, len), max, 0),
            _ => write_row_of::<4, false, true>(table, (row_in, row_out, len), max, 0),
        },
        // k < 256: at most the reach.
        Some(k) => match k / CHUNK + 1 {
            1 => write_row_of::<1, true, true>(table, (row_in, row_out, len), max, k as u8),
            2 => write_row_of::<2, true, true>(table, (row_in, row_out, len), max, k as u8),
            3 => write_row_of::<3, true, true>(table, (row_in, row_out, len), max, k as u8),
            _ => write_row_of::<4, true, true>(table, (row_in, row_out, len), max, k as u8),
        },
    }
}

/// Every `row_len`-long row of 8-bit data (`T` int8 or uint8, `SIGNED` for
/// int8); lengths were checked by the caller. Rows go in groups of four:
/// their maxima and sums first, then the four logarithms at once on NEON
/// lanes (`log_neon`; the scalar one costs about 300 instructions per row),
/// then each row's table and outputs. The last `rows % 4` rows take the
/// scalar logarithm.
#[inline(always)]
fn rows<T: QuantElem, const SIGNED: bool>(
    p: &LogSoftmaxParams,
    t: &LogSoftmaxTables,
    input: &[u8],
    output: &mut [u8],
    row_len: usize,
) {
    let mut table = [Chunk([0; CHUNK]); 4];
    let n = input.len().min(output.len());
    let count = n / row_len;
    let mut r = 0;
    while r + 4 <= count {
        let stats: [_; 4] = core::array::from_fn(|i| {
            let at = (r + i) * row_len;
            row_stats::<SIGNED>(t, &input[at..at + span(at, row_len, n)], row_len)
        });
        let inputs = stats.map(|(_, _, sum)| LogSoftmaxParams::log_input(sum as i64));
        // SAFETY: loads of local arrays of four.
        let (raw, bits) = unsafe {
            (
                vld1q_s32(inputs.map(|(r, _)| r).as_ptr()),
                vld1q_s32(inputs.map(|(_, b)| b).as_ptr()),
            )
        };
        let mut logs = [0i32; 4];
        // SAFETY: a store into a local array of four.
        unsafe {
            vst1q_s32(
                logs.as_mut_ptr(),
                log_x_for_x_greater_than_or_equal_to_1_x4(raw, bits),
            )
        };
        for (i, ((max, reach, _), log)) in stats.into_iter().zip(logs).enumerate() {
            let at = (r + i) * row_len;
            let end = at + span(at, row_len, n);
            let row = p.row_constants_from_log(log);
            let (row_in, row_out) = (&input[at..end], &mut output[at..end]);
            finish_row::<T, SIGNED>(
                p,
                t,
                &row,
                (max, reach),
                (row_in, row_out, row_len),
                &mut table,
            );
        }
        r += 4;
    }
    for r in r..count {
        let at = r * row_len;
        let end = at + span(at, row_len, n);
        let (row_in, row_out) = (&input[at..end], &mut output[at..end]);
        let (max, reach, sum) = row_stats::<SIGNED>(t, row_in, row_len);
        let row = p.row_constants(sum as i64);
        finish_row::<T, SIGNED>(
            p,
            t,
            &row,
            (max, reach),
            (row_in, row_out, row_len),
            &mut table,
        );
    }
}

/// Log-softmax rows of int8 (named for the asm checks and profiles).
#[inline(never)]
pub(crate) fn log_softmax_i8(
    p: &LogSoftmaxParams,
    t: &LogSoftmaxTables,
    input: &[u8],
    output: &mut [u8],
    row_len: usize,
) {
    rows::<i8, true>(p, t, input, output, row_len)
}

/// Log-softmax rows of uint8.
#[inline(never)]
pub(crate) fn log_softmax_u8(
    p: &LogSoftmaxParams,
    t: &LogSoftmaxTables,
    input: &[u8],
    output: &mut [u8],
    row_len: usize,
) {
    rows::<u8, false>(p, t, input, output, row_len)
}
