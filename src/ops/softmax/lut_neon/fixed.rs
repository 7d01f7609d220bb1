//! NEON [`Method::FixedPoint`](crate::Method::FixedPoint) softmax on 8-bit
//! data: the reference's own values through the exact tables of `softmax_rows/exact.rs`
//! (see there why this is bit-exact), on the block walking, row maximum and
//! output lookup of the `Method::Lut` kernel.
//!
//! Per row, 64 bytes per iteration:
//! 1. max and min: `smax`/`umax`, `smin`/`umin`. Every `d = max - x` lies
//!    in `0..=max - min`, so only the 64-entry chunks that range reaches
//!    are looked up or built below.
//! 2. sum, one pass per chunk `k` of the term planes (`tbl` and `uadalp`;
//!    shared with the thresholded softmax in
//!    `ops/softmax_rows/neon/exact_sums.rs`).
//! 3. reciprocal and exponent: the reference's `reciprocal`, on vector
//!    lanes.
//! 4. output: the row's output bytes by `d` for the chunks that can hold a
//!    nonzero output (`sqrdmulh`, `urshl`, saturating narrows), then a `tbl`
//!    (plus a `tbx` per further chunk) for every 16 elements.

use super::fixed_short::{output_table_from, short_rows, window_rows, WINDOW};
use super::output::{look, write_any};
use crate::ops::softmax_rows::exact::SoftmaxExact;
use crate::ops::softmax_rows::neon::blocks::{
    opaque, row_max, row_max_min, window_max, Masks, STEP,
};
use crate::ops::softmax_rows::neon::exact_sums::row_sum;
use crate::ops::softmax_rows::params::SoftmaxParams;
use core::arch::aarch64::*;

/// `C` chunks of the row's output bytes by `d`: `output(e[d])` above the
/// type's minimum (the zero point), saturated to a byte as the store
/// saturates it. `neg_exponent` is minus the row's exponent, clamped to
/// -32, which gives 0 as the reference does beyond 31 (`urshl` adds the
/// rounding bit at full precision, and `sqrdmulh` results are below 2^31).
#[inline(always)]
pub(super) fn output_table<const C: usize>(
    t: &SoftmaxExact,
    scale: int32x4_t,
    neg_exponent: int32x4_t,
) -> [uint8x16x4_t; C] {
    let exp = opaque(t.exp.as_ptr());
    // SAFETY: k < 16 C <= 64, so the four entries at 4 k are in the table.
    output_table_from(
        |k| unsafe { vld1q_s32(exp.add(4 * k)) },
        scale,
        neg_exponent,
    )
}

/// The rest of a row once its maximum and sum are known.
#[inline(always)]
fn finish_row<const SIGNED: bool>(
    p: &SoftmaxParams,
    t: &SoftmaxExact,
    row_in: &[u8],
    row_out: &mut [u8],
    max: u8,
    sum: u64,
    range_chunks: usize,
) {
    // The reference's reciprocal of the same sum (i64: sums of rows shorter
    // than 2^44 elements fit).
    let (scale, exponent) = p.reciprocal::<int32x4_t>(sum as i64);
    let chunks = t.output_chunks(exponent, range_chunks);
    // SAFETY: register arithmetic.
    let (maxv, neg_exponent) =
        unsafe { (vdupq_n_u8(max), vdupq_n_s32(-(exponent.min(32) as i32))) };
    macro_rules! write {
        ($c:literal) => {{
            let table = output_table::<$c>(t, scale, neg_exponent);
            write_any(row_in, row_out, max, |b| {
                look::<SIGNED, $c>(&table, maxv, b)
            })
        }};
    }
    match chunks {
        1 => write!(1),
        2 => write!(2),
        3 => write!(3),
        _ => write!(4),
    }
}

/// Calls `f::<SIGNED, FULL, L, M, H>(args)` with the first of a few chunk
/// counts `[L, M, H]` that covers every plane's (`t.plane_chunks`): the
/// short-row kernels unroll their lookups over them, with no branch per
/// row. Scales with `outputs_fit` (`beta * scale` above about 0.1) need at
/// most `[3, 2, 1]`; `[4, 4, 4]` covers any table.
macro_rules! by_chunks {
    ($t:expr, $f:ident::<$signed:ident, $full:literal>($($arg:expr),*)) => {{
        let [l, m, h] = $t.plane_chunks;
        if l <= 1 && m <= 1 && h <= 1 {
            $f::<$signed, $full, 1, 1, 1>($($arg),*)
        } else if l <= 2 && m <= 2 && h <= 1 {
            $f::<$signed, $full, 2, 2, 1>($($arg),*)
        } else if l <= 3 && m <= 2 && h <= 1 {
            $f::<$signed, $full, 3, 2, 1>($($arg),*)
        } else {
            $f::<$signed, $full, 4, 4, 4>($($arg),*)
        }
    }};
}

/// Exact softmax of every `row_len`-long row of 8-bit data; the caller
/// checked the lengths. `SIGNED` selects int8 over uint8.
#[inline(always)]
fn softmax_rows<const SIGNED: bool>(
    p: &SoftmaxParams,
    t: &SoftmaxExact,
    input: &[u8],
    output: &mut [u8],
    row_len: usize,
) {
    let masks = Masks::new(row_len);
    // The mask is loaded where used (opaque), not kept in registers.
    // SAFETY: the mask is STEP bytes.
    let skip = || unsafe { vld1q_u8_x4(opaque(masks.skip.as_ptr())) };
    let rows = input.len().min(output.len()) / row_len;
    let mut row = 0;
    if row_len <= WINDOW && t.outputs_fit {
        // Rows whose 16-byte window lies in both slices, in groups of four.
        let n = input.len().min(output.len());
        let windows = if n >= WINDOW {
            ((n - WINDOW) / row_len + 1).min(rows)
        } else {
            0
        };
        let groups = windows / 4;
        if row_len == WINDOW {
            by_chunks!(
                t,
                short_rows::<SIGNED, true>(t, input, output, row_len, groups)
            );
        } else {
            by_chunks!(
                t,
                short_rows::<SIGNED, false>(t, input, output, row_len, groups)
            );
        }
        row = groups * 4;
    } else if row_len <= STEP && t.outputs_fit {
        // The same with 64-byte windows.
        let n = input.len().min(output.len());
        let windows = if n >= STEP {
            ((n - STEP) / row_len + 1).min(rows)
        } else {
            0
        };
        let groups = windows / 4;
        if row_len == STEP {
            by_chunks!(
                t,
                window_rows::<SIGNED, true>(t, input, output, row_len, groups)
            );
        } else {
            by_chunks!(
                t,
                window_rows::<SIGNED, false>(t, input, output, row_len, groups)
            );
        }
        row = groups * 4;
    }
    if row_len < STEP {
        // Short rows as 64-byte windows of the slices (as in the Lut
        // kernel): lanes past the row masked off in the maximum and sum,
        // 64 outputs stored, of which those past the row are rewritten by
        // the next rows. The last rows, whose window would pass the end,
        // go through stack buffers below.
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
            // SAFETY: the window is STEP bytes.
            let last = || Some((unsafe { vld1q_u8_x4(window_in.as_ptr()) }, skip()));
            let sum = row_sum(t, &[], last, max, 4);
            finish_row::<SIGNED>(p, t, window_in, window_out, max, sum, 4);
            row += 1;
        }
        for (row_in, row_out) in input[row * row_len..]
            .chunks_exact(row_len)
            .zip(output[row * row_len..].chunks_exact_mut(row_len))
        {
            let max = row_max::<SIGNED>(row_in);
            let mut buf = [0u8; STEP];
            buf[..row_in.len()].copy_from_slice(row_in);
            // SAFETY: the buffer is STEP bytes.
            let last = || Some((unsafe { vld1q_u8_x4(buf.as_ptr()) }, skip()));
            let sum = row_sum(t, &[], last, max, 4);
            finish_row::<SIGNED>(p, t, row_in, row_out, max, sum, 4);
        }
        return;
    }
    for (row_in, row_out) in input[row * row_len..]
        .chunks_exact(row_len)
        .zip(output[row * row_len..].chunks_exact_mut(row_len))
    {
        let (max, min) = row_max_min::<SIGNED>(row_in);
        // max >= min in the row's order, so the byte difference is the
        // distance (0..=255) for int8 too.
        let range_chunks = max.wrapping_sub(min) as usize / 64 + 1;
        let n = row_in.len();
        let whole = &row_in[..n - n % STEP];
        let last = || {
            (!n.is_multiple_of(STEP)).then(|| {
                // SAFETY: n >= STEP, so the last STEP bytes are in bounds;
                // their first lanes, counted in the block before, are masked.
                (
                    unsafe { vld1q_u8_x4(row_in.as_ptr().add(n - STEP)) },
                    skip(),
                )
            })
        };
        let sum = row_sum(t, whole, last, max, range_chunks);
        finish_row::<SIGNED>(p, t, row_in, row_out, max, sum, range_chunks);
    }
}

/// The int8 kernel (named for the asm checks and profiles).
#[inline(never)]
pub(crate) fn softmax_exact_i8(
    p: &SoftmaxParams,
    t: &SoftmaxExact,
    input: &[u8],
    output: &mut [u8],
    row_len: usize,
) {
    softmax_rows::<true>(p, t, input, output, row_len)
}

/// The uint8 kernel.
#[inline(never)]
pub(crate) fn softmax_exact_u8(
    p: &SoftmaxParams,
    t: &SoftmaxExact,
    input: &[u8],
    output: &mut [u8],
    row_len: usize,
) {
    softmax_rows::<false>(p, t, input, output, row_len)
}
