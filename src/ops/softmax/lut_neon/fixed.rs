//! NEON [`Method::FixedPoint`](crate::Method::FixedPoint) softmax on 8-bit
//! data: the reference's own values through the exact tables of `exact.rs`
//! (see there why this is bit-exact), on the block walking, row maximum and
//! output lookup of the `Method::Lut` kernel.
//!
//! Per row, 64 bytes per iteration:
//! 1. max and min: `smax`/`umax`, `smin`/`umin`. Every `d = max - x` lies
//!    in `0..=max - min`, so only the 64-entry chunks that range reaches
//!    are looked up or built below.
//! 2. sum, one pass per chunk `k` of the term planes: `d - 64 k` (out of
//!    `0..64` for the other chunks, where `tbl` reads 0), one `tbl` per
//!    16 bytes and nonzero plane of the chunk, `uadalp` into u16 lanes,
//!    which are reduced into a `u64` per plane before they can overflow.
//!    A chunk's three planes stay in registers for the whole pass.
//! 3. reciprocal and exponent: the reference's `reciprocal`, on vector
//!    lanes.
//! 4. output: the row's output bytes by `d` for the chunks that can hold a
//!    nonzero output (`sqrdmulh`, `urshl`, saturating narrows), then a `tbl`
//!    (plus a `tbx` per further chunk) for every 16 elements.

use super::blocks::{
    for_each_whole_block, opaque, row_max, row_max_min, window_max, Block, Masks, STEP,
};
use super::fixed_short::{output_table_from, short_rows, window_rows, WINDOW};
use super::output::{look, write_any};
use crate::ops::softmax::exact::{SoftmaxExact, PLANES};
use crate::ops::softmax::params::SoftmaxParams;
use core::arch::aarch64::*;

/// Blocks (of any chunk pass) between reductions of the u16 plane sums:
/// each of the two registers of a plane gains at most 2 * 510 per lane and
/// block, and their lane sum must stay below 2^16 (32 * 2 * 1020 < 65536).
const FLUSH_BLOCKS: usize = 32;

/// u16 lane sums of the three planes, two registers per plane, and their
/// exact totals.
struct PlaneSums {
    acc: [[uint16x8_t; 2]; PLANES],
    total: [u64; PLANES],
    /// Blocks added (in any pass) since the last flush.
    blocks: usize,
}

impl PlaneSums {
    #[inline(always)]
    fn new() -> Self {
        // SAFETY: register arithmetic; NEON is a compile-time target feature.
        let z = unsafe { vdupq_n_u16(0) };
        PlaneSums {
            acc: [[z; 2]; PLANES],
            total: [0; PLANES],
            blocks: 0,
        }
    }

    /// Counts a block added, and flushes before the lanes can overflow.
    #[inline(always)]
    fn count(&mut self) {
        self.blocks += 1;
        if self.blocks == FLUSH_BLOCKS {
            self.flush();
        }
    }

    /// Moves the lane sums into the totals.
    #[inline(always)]
    fn flush(&mut self) {
        self.blocks = 0;
        for j in 0..PLANES {
            {
                // SAFETY: register arithmetic. Each lane of the two registers
                // holds at most FLUSH_BLOCKS * 1020, so their sum fits u16.
                unsafe {
                    let a = vaddq_u16(self.acc[j][0], self.acc[j][1]);
                    self.total[j] += vaddlvq_u16(a) as u64;
                    self.acc[j] = [vdupq_n_u16(0); 2];
                }
            }
        }
    }

    /// The sum of the terms: `low + 256 mid + 65536 high`.
    #[inline(always)]
    fn sum(&self) -> u64 {
        self.total[0] + (self.total[1] << 8) + (self.total[2] << 16)
    }
}

/// Adds chunk `k`'s term bytes of a block to the plane sums: `dk` is the
/// row maximum minus `64 k` (so `dk - x` is `d - 64 k`), `skip` ORs 0x80
/// into the lanes not to count (an index of 128 or more reads 0).
// Index loops over fixed-size arrays of registers and planes: the
// indices pick planes, chunks and lanes at compile time once unrolled.
#[allow(clippy::needless_range_loop)]
#[inline(always)]
fn add_block<const MASK: u8>(
    tables: &[uint8x16x4_t; PLANES],
    dk: uint8x16_t,
    b: Block,
    skip: Option<Block>,
    sums: &mut PlaneSums,
) {
    let x = [b.0, b.1, b.2, b.3];
    let s = skip.map(|m| [m.0, m.1, m.2, m.3]);
    for (i, x) in x.into_iter().enumerate() {
        // SAFETY: register arithmetic.
        let d = unsafe {
            let d = vsubq_u8(dk, x);
            match s {
                Some(m) => vorrq_u8(d, m[i]),
                None => d,
            }
        };
        for j in 0..PLANES {
            if MASK & (1 << j) != 0 {
                // SAFETY: register arithmetic.
                unsafe {
                    let t = vqtbl4q_u8(tables[j], d);
                    sums.acc[j][i % 2] = vpadalq_u8(sums.acc[j][i % 2], t);
                }
            }
        }
    }
}

/// One pass of chunk `k` over a row: `whole` holds its whole 64-byte
/// blocks, `last` its final block and the lanes of it to skip.
#[inline(always)]
fn chunk_pass<const MASK: u8>(
    t: &SoftmaxExact,
    k: usize,
    whole: &[u8],
    last: &impl Fn() -> Option<(Block, Block)>,
    max: u8,
    sums: &mut PlaneSums,
) {
    // SAFETY: each plane chunk is 64 bytes; opaque keeps the loads here,
    // once per pass, rather than hoisted into registers the loop lacks.
    let tables: [uint8x16x4_t; PLANES] = core::array::from_fn(|j| unsafe {
        if MASK & (1 << j) != 0 {
            vld1q_u8_x4(opaque(t.planes[j][k].0.as_ptr()))
        } else {
            uint8x16x4_t(vdupq_n_u8(0), vdupq_n_u8(0), vdupq_n_u8(0), vdupq_n_u8(0))
        }
    });
    // SAFETY: register arithmetic.
    let dk = unsafe { vdupq_n_u8(max.wrapping_sub(64 * k as u8)) };
    for_each_whole_block(whole, |b| {
        add_block::<MASK>(&tables, dk, b, None, sums);
        sums.count();
    });
    if let Some((b, skip)) = last() {
        add_block::<MASK>(&tables, dk, b, Some(skip), sums);
        sums.count();
    }
}

/// The row's sum of exps (Q12.19 raw): the terms of every `d` of the row,
/// all of which lie below `64 range_chunks`.
#[inline(always)]
fn row_sum(
    t: &SoftmaxExact,
    whole: &[u8],
    last: impl Fn() -> Option<(Block, Block)>,
    max: u8,
    range_chunks: usize,
) -> u64 {
    let mut sums = PlaneSums::new();
    for k in 0..range_chunks.min(4) {
        let mask = (0..PLANES)
            .filter(|&j| t.plane_chunks[j] > k)
            .fold(0u8, |m, j| m | 1 << j);
        macro_rules! pass {
            ($($m:literal)*) => {
                match mask {
                    $($m => chunk_pass::<$m>(t, k, whole, &last, max, &mut sums),)*
                    _ => {}
                }
            };
        }
        pass!(1 2 3 4 5 6 7);
    }
    sums.flush();
    sums.sum()
}

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

/// A row's maximum (raw byte) and the exact sum of the reference's terms
/// (Q12.19 raw), by this kernel's passes: for the thresholded softmax,
/// which needs both but writes only the elements that pass. `SIGNED`
/// selects int8 over uint8; an empty row gives `(0, 0)`.
#[inline(always)]
pub(crate) fn row_max_sum<const SIGNED: bool>(t: &SoftmaxExact, row: &[u8]) -> (u8, u64) {
    let n = row.len();
    if n == 0 {
        return (0, 0);
    }
    let masks = Masks::new(n);
    // SAFETY: the mask is STEP bytes.
    let skip = || unsafe { vld1q_u8_x4(opaque(masks.skip.as_ptr())) };
    if n >= STEP {
        let (max, min) = row_max_min::<SIGNED>(row);
        // The distance max - min (0..=255) for int8 too.
        let range_chunks = max.wrapping_sub(min) as usize / 64 + 1;
        let whole = &row[..n - n % STEP];
        let last = || {
            (!n.is_multiple_of(STEP)).then(|| {
                // SAFETY: n >= STEP, so the last STEP bytes are in bounds;
                // their first lanes, counted in the block before, are masked.
                (unsafe { vld1q_u8_x4(row.as_ptr().add(n - STEP)) }, skip())
            })
        };
        (max, row_sum(t, whole, last, max, range_chunks))
    } else {
        let max = row_max::<SIGNED>(row);
        let mut buf = [0u8; STEP];
        buf[..n].copy_from_slice(row);
        // SAFETY: the buffer is STEP bytes; lanes past n are masked.
        let last = || Some((unsafe { vld1q_u8_x4(buf.as_ptr()) }, skip()));
        (max, row_sum(t, &[], last, max, 4))
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
