//! NEON `Method::Lut` softmax on 8-bit data (see `crate::ops::softmax_lut`).
//!
//! Per row, 64 bytes per iteration in each of three passes:
//! 1. max: `umax`/`smax`.
//! 2. sum: `d = max - x` (bytes; the same for int8 and uint8), the high and
//!    the low byte of `t[d]` by table lookups, each summed by `uadalp` into
//!    u16 lanes, which are widened into u32 lanes before they can overflow.
//!    Split tables (`beta * scale >= ~0.09`) stay in registers: the high byte
//!    is one 64-byte `tbl`, the low byte `tbl` + `tbx` over 128 bytes
//!    (out-of-range indices read 0). Full tables take a `tbl` and up to three
//!    `tbx` per byte over 256 entries; their 16 registers per byte do not fit
//!    beside the row, so every 64 inputs reload them, 64 bytes at a time.
//!    Full-table rows of at least 64 bytes find their minimum in the max pass
//!    too: all their `d` lie below `max - min + 1`, so only the 64-entry
//!    chunks that range reaches are looked up (and of the high bytes only
//!    those where `t >= 256` somewhere): attention scores at scale 0.03 span
//!    two or three chunks, not four.
//! 3. output: the row's outputs by `d`, in 64-entry chunks built with four
//!    lanes of `sqrdmulh`, narrowed to u16 and divided by the row's power of
//!    two with `urshl` on eight lanes, then a `tbl` (plus a `tbx` per
//!    further chunk) for every 16 elements. Outputs do not increase with `d`,
//!    so only the chunks whose first entry is nonzero are built and looked
//!    up; beyond them `tbl`/`tbx` leave 0, the output's minimum. Full-table
//!    rows too short to repay the chunks (under 56 elements per chunk) look
//!    `t` up again and requantize every element instead.
//!
//! The table lookups of the sum pass are inline asm: LLVM allocates the
//! four-register table operands differently from build to build, hoists
//! table loads into more registers than there are, and spills. The asm pins
//! the split tables to v16..v27 and loads each full-table chunk into
//! v24..v31 where it is used.
//!
//! Rows of at least 64 bytes end with an overlapping block whose lanes
//! already counted are masked off. Shorter rows are read as 64-byte windows
//! of the input (lanes past the row masked off) and written as 64-byte
//! windows of the output, whose bytes past the row are rewritten by the next
//! rows; only the last rows, whose window would pass the end of the slices,
//! go through 64-byte stack buffers. Nothing outside the slices is touched.

//!
//! Rows of at most 16 bytes take `short` instead: four rows per group, the
//! reciprocals on four lanes, the outputs by arithmetic rather than tables.
//!
//! Files: `output` (the per-row output tables and the output pass),
//! `rows64` (rows of exactly 64 bytes), `short` (rows of at most 16
//! bytes), `fixed` and `fixed_short` (the exact `Method::FixedPoint`
//! kernel); the row shapes are chosen here. The max and sum passes (64-byte
//! block walking, lane masks, row maximum, the exp tables and their sums)
//! are the shared row math in `ops/softmax_rows/neon/`, which the
//! thresholded softmax runs too.

mod fixed;
mod fixed_short;
mod output;
mod rows64;
mod short;

pub(crate) use self::fixed::{softmax_exact_i8, softmax_exact_u8};
use self::output::{
    look, output_table, rows_by_chunks, write_outputs_post, write_row, write_row_direct,
};
use self::rows64::rows64;
use crate::ops::softmax_rows::lut::{SoftmaxLut, OUTPUT_ENTRIES};
use crate::ops::softmax_rows::neon::blocks::{row_max, row_max_min, window_max, Masks, STEP};
use crate::ops::softmax_rows::neon::sums::{
    full_sum, load_tables, row_sum, window_sum, FullTables, SumTables,
};
use core::arch::aarch64::*;

/// The rest of a row once its maximum and sum are known: the multiplier, the
/// output table chunks that can be nonzero and the outputs. Every `d` of the
/// row is below `64 d_chunks` (at most 4), so later chunks are not needed.
/// `INLINE` writes multi-chunk rows here rather than through the call to
/// `rows_by_chunks` (for loops that keep no tables in registers).
#[inline(always)]
fn finish_row<const SIGNED: bool, const ONE_CHUNK: bool, const INLINE: bool>(
    p: &SoftmaxLut,
    row_in: &[u8],
    row_out: &mut [u8],
    max: u8,
    sum: u64,
    d_chunks: usize,
) {
    // inverse <= 256 / 65535 < 2^-7, so the shift is a right shift of at
    // least 7 (at most 31: beyond, every output is 0 either way).
    let (multiplier, shift) = p.row_multiplier_clamped(sum);
    debug_assert!((-31..=-7).contains(&shift));
    // Negative, as `urshl` takes it.
    let neg_shift = shift as i16;
    if ONE_CHUNK {
        return write_row::<SIGNED, 1>(p, row_in, row_out, max, multiplier, neg_shift);
    }
    // Outputs do not increase with d (t does not, and the requantization is
    // monotonic), so chunk k can be nonzero only if its first entry is.
    let nonzero = |d: usize| p.output(p.exp[d], multiplier, shift) != p.output_zero_point;
    let chunks = 1
        + (1..d_chunks.min(4))
            .take_while(|&k| nonzero(k * OUTPUT_ENTRIES))
            .count();
    // A chunk of the table costs about 50 instructions; looking t up again
    // and requantizing costs about 1.5 more per element than the table
    // lookup (full tables only: split rows need at most two chunks).
    if !p.split && row_in.len() < 56 * chunks {
        return write_row_direct::<SIGNED>(p, row_in, row_out, max, multiplier, neg_shift);
    }
    if INLINE {
        debug_assert!(row_in.len() >= STEP);
        macro_rules! write {
            ($c:literal) => {{
                let table = output_table::<$c>(p, multiplier, neg_shift);
                // SAFETY: register arithmetic.
                let maxv = unsafe { vdupq_n_u8(max) };
                write_outputs_post(row_in, row_out, |b| look::<SIGNED, $c>(&table, maxv, b))
            }};
        }
        match chunks {
            1 => write!(1),
            2 => write!(2),
            3 => write!(3),
            _ => write!(4),
        }
    } else {
        rows_by_chunks::<SIGNED>(p, row_in, row_out, max, multiplier, neg_shift, chunks);
    }
}

/// `Method::Lut` softmax of every `row_len`-long row of 8-bit data through
/// the sum tables `tables` gives for each row; the caller checked the lengths. `SIGNED` selects
/// int8 (signed maximum, outputs offset by -128) over uint8; `ONE_CHUNK`
/// says that the outputs are 0 from `d = 64` on (`p.outputs_fit`).
#[inline(always)]
fn softmax_rows<const SIGNED: bool, const ONE_CHUNK: bool, S: SumTables>(
    p: &SoftmaxLut,
    tables: impl Fn() -> S,
    input: &[u8],
    output: &mut [u8],
    row_len: usize,
) {
    let masks = Masks::new(row_len);
    let rows = input.len().min(output.len()) / row_len;
    let mut row = 0;
    if row_len < STEP {
        // Short rows as 64-byte windows of the slices: one load for the
        // maximum and the sum (lanes past the row masked off), one store of
        // 64 outputs, of which those past the row land on the next rows'
        // outputs and are rewritten with those rows. The last rows, whose
        // window would pass the end, go through stack buffers below.
        let n = input.len().min(output.len());
        let windows = if n >= STEP {
            ((n - STEP) / row_len + 1).min(rows)
        } else {
            0
        };
        while row < windows {
            let start = row * row_len;
            let window_in = &input[start..start + STEP];
            let window_out = &mut output[start..start + STEP];
            let max = window_max::<SIGNED>(window_in, &masks);
            let sum = window_sum(&tables(), window_in, max, &masks);
            finish_row::<SIGNED, ONE_CHUNK, false>(p, window_in, window_out, max, sum, 4);
            row += 1;
        }
    }
    for (row_in, row_out) in input[row * row_len..]
        .chunks_exact(row_len)
        .zip(output[row * row_len..].chunks_exact_mut(row_len))
    {
        let max = row_max::<SIGNED>(row_in);
        let sum = row_sum(&tables(), row_in, max, &masks);
        finish_row::<SIGNED, ONE_CHUNK, false>(p, row_in, row_out, max, sum, 4);
    }
}

/// Full-table rows of at least 64 bytes. The max pass also finds the row's
/// minimum: every `d` lies in `0..=max - min`, so the sum looks up only the
/// chunks that range reaches (and of those, for the high bytes, only the
/// chunks where `t >= 256` somewhere), and the output pass builds no chunk
/// beyond it. Attention rows span two or three chunks of four.
fn full_rows<const SIGNED: bool>(p: &SoftmaxLut, input: &[u8], output: &mut [u8], row_len: usize) {
    debug_assert!(row_len >= STEP);
    let masks = Masks::new(row_len);
    for (row_in, row_out) in input
        .chunks_exact(row_len)
        .zip(output.chunks_exact_mut(row_len))
    {
        let (max, min) = row_max_min::<SIGNED>(row_in);
        // max >= min in the row's order, so the byte difference is the
        // distance (0..=255) for int8 too.
        let d_chunks = max.wrapping_sub(min) as usize / 64 + 1;
        let lo = d_chunks.min(p.low_chunks);
        let hi = lo.min(p.high_chunks);
        let sum = full_sum(p, hi, lo, row_in, max, &masks);
        finish_row::<SIGNED, false, true>(p, row_in, row_out, max, sum, d_chunks);
    }
}

/// Every row: the common case (split tables, one output chunk, rows of at
/// least 64 bytes) here, with no call in its loop (a call would make LLVM
/// save the table registers around it on every row); the others out of line.
#[inline(always)]
fn softmax_any<const SIGNED: bool>(
    p: &SoftmaxLut,
    input: &[u8],
    output: &mut [u8],
    row_len: usize,
) {
    if row_len <= short::WINDOW {
        // Four rows per group through one reciprocal vector; the last rows,
        // whose 16-byte window would pass the end, through the windows below.
        let n = input.len().min(output.len());
        let groups = short::groups(n, row_len);
        short::short_rows::<SIGNED>(p, input, output, row_len, groups);
        let done = groups * 4 * row_len;
        if done < n {
            other_rows::<SIGNED>(p, &input[done..n], &mut output[done..n], row_len);
        }
    } else if p.split && p.outputs_fit && row_len == STEP {
        rows64::<SIGNED>(p, input, output)
    } else if p.split && p.outputs_fit && row_len >= STEP {
        softmax_rows::<SIGNED, true, _>(p, || load_tables(p), input, output, row_len)
    } else {
        other_rows::<SIGNED>(p, input, output, row_len)
    }
}

/// Rows shorter than 64 bytes, rows of scales that may need more than one
/// output chunk, and rows through the full 256-entry tables (`beta * scale`
/// below about 0.09).
#[inline(never)]
fn other_rows<const SIGNED: bool>(p: &SoftmaxLut, input: &[u8], output: &mut [u8], row_len: usize) {
    match (p.split, p.outputs_fit) {
        (true, true) => {
            softmax_rows::<SIGNED, true, _>(p, || load_tables(p), input, output, row_len)
        }
        (true, false) => {
            softmax_rows::<SIGNED, false, _>(p, || load_tables(p), input, output, row_len)
        }
        (false, _) if row_len >= STEP => full_rows::<SIGNED>(p, input, output, row_len),
        (false, _) => {
            softmax_rows::<SIGNED, false, _>(p, || FullTables::<4, 4>(p), input, output, row_len)
        }
    }
}

/// The int8 kernel (named for the asm checks and profiles).
#[inline(never)]
pub(crate) fn softmax_lut_i8(p: &SoftmaxLut, input: &[u8], output: &mut [u8], row_len: usize) {
    softmax_any::<true>(p, input, output, row_len)
}

/// The uint8 kernel.
#[inline(never)]
pub(crate) fn softmax_lut_u8(p: &SoftmaxLut, input: &[u8], output: &mut [u8], row_len: usize) {
    softmax_any::<false>(p, input, output, row_len)
}

/// Dispatches on the signedness.
pub(crate) fn softmax(
    p: &SoftmaxLut,
    signed: bool,
    input: &[u8],
    output: &mut [u8],
    row_len: usize,
) {
    if signed {
        softmax_lut_i8(p, input, output, row_len)
    } else {
        softmax_lut_u8(p, input, output, row_len)
    }
}
