//! NEON `Method::Lut` softmax on 8-bit data (see `crate::ops::softmax_lut`).
//!
//! Per row, 64 bytes per iteration in each of three passes:
//! 1. max: `umax`/`smax`.
//! 2. sum: `d = max - x` (bytes; the same for int8 and uint8), the high byte
//!    of `t[d]` from one 64-byte `tbl`, the low byte from `tbl` + `tbx` over
//!    128 bytes (out-of-range indices read 0), each summed by `uadalp` into
//!    u16 lanes, which are widened into u32 lanes before they can overflow.
//! 3. output: a 64-entry table of the row's outputs by `d`, built with four
//!    lanes of `sqrdmulh` + rounding shift, then one `tbl` per 16 elements
//!    (`d >= 64` reads 0, the output's minimum, checked per row).
//!
//! Row tails go through 64-byte stack buffers, padded so that padding adds
//! nothing (a byte whose `d` is 128, past both tables), so every byte goes
//! through the same block code and nothing outside the slices is touched.

use crate::fixedpoint::Lane;
use crate::ops::softmax_lut::{softmax_scalar, SoftmaxLut, OUTPUT_ENTRIES};
use core::arch::aarch64::*;

/// Bytes per loop iteration.
const STEP: usize = 64;
/// Iterations after which the u16 sums are widened: each lane gains at most
/// 2 * 255 per `uadalp`, two `uadalp`s per iteration, and 64 * 1020 < 65536.
const FLUSH_EVERY: usize = 64;

/// Four registers of bytes.
type Block = uint8x16x4_t;

/// The row's bytes in 64-byte blocks: whole blocks straight from the slice,
/// then the tail copied into a buffer filled with `pad` first.
#[inline(always)]
fn for_each_block(row: &[u8], pad: u8, mut f: impl FnMut(Block)) {
    let whole = row.len() - row.len() % STEP;
    let mut src = row.as_ptr();
    let mut blocks = whole / STEP;
    while blocks > 0 {
        // SAFETY: src points `whole - blocks * STEP` bytes into row, so the
        // next STEP bytes are in bounds (whole <= row.len()); afterwards it
        // points at most one past the end.
        unsafe {
            f(vld1q_u8_x4(src));
            src = src.add(STEP);
        }
        blocks -= 1;
    }
    if whole < row.len() {
        let mut buf = [pad; STEP];
        buf[..row.len() - whole].copy_from_slice(&row[whole..]);
        // SAFETY: buf is STEP bytes.
        f(unsafe { vld1q_u8_x4(buf.as_ptr()) });
    }
}

/// Maximum byte of a non-empty row, signed (int8) or unsigned (uint8), as
/// the raw byte. Rows of at least 64 bytes end with an overlapping block (a
/// repeated byte cannot change the maximum); shorter ones are padded with
/// their first byte.
#[inline(always)]
fn row_max<const SIGNED: bool>(row: &[u8]) -> u8 {
    // SAFETY (all blocks below): register arithmetic; NEON is a compile-time
    // target feature (the cfg on this module).
    let mut acc = unsafe { vdupq_n_u8(if SIGNED { 0x80 } else { 0 }) };
    let mut fold = |b: Block| unsafe {
        if SIGNED {
            let s = |v| vreinterpretq_s8_u8(v);
            let m01 = vmaxq_s8(s(b.0), s(b.1));
            let m23 = vmaxq_s8(s(b.2), s(b.3));
            acc = vreinterpretq_u8_s8(vmaxq_s8(s(acc), vmaxq_s8(m01, m23)));
        } else {
            acc = vmaxq_u8(acc, vmaxq_u8(vmaxq_u8(b.0, b.1), vmaxq_u8(b.2, b.3)));
        }
    };
    if row.len() >= STEP {
        for_each_whole_block(row, &mut fold);
        // SAFETY: row.len() >= STEP, so the last STEP bytes are in bounds.
        fold(unsafe { vld1q_u8_x4(row.as_ptr().add(row.len() - STEP)) });
    } else {
        for_each_block(row, row[0], fold);
    }
    // SAFETY: register arithmetic.
    unsafe {
        if SIGNED {
            vmaxvq_s8(vreinterpretq_s8_u8(acc)) as u8
        } else {
            vmaxvq_u8(acc)
        }
    }
}

/// The whole 64-byte blocks of a row (the tail is the caller's).
#[inline(always)]
fn for_each_whole_block(row: &[u8], mut f: impl FnMut(Block)) {
    let mut src = row.as_ptr();
    let mut blocks = row.len() / STEP;
    while blocks > 0 {
        // SAFETY: src points `(row.len() / STEP - blocks) * STEP` bytes into
        // row, so the next STEP bytes are in bounds.
        unsafe {
            f(vld1q_u8_x4(src));
            src = src.add(STEP);
        }
        blocks -= 1;
    }
}

/// The split exp tables in registers.
struct Tables {
    high: uint8x16x4_t,
    low0: uint8x16x4_t,
    low1: uint8x16x4_t,
}

/// u16 partial sums of the high and low bytes, two registers each (so
/// consecutive `uadalp`s do not wait on each other).
struct Partial {
    high: [uint16x8_t; 2],
    low: [uint16x8_t; 2],
}

impl Partial {
    #[inline(always)]
    fn new() -> Self {
        // SAFETY: register arithmetic; NEON is a compile-time target feature.
        let z = unsafe { vdupq_n_u16(0) };
        Partial {
            high: [z; 2],
            low: [z; 2],
        }
    }

    /// Adds `t[d]` for 16 indices (`d >= 128` adds 0).
    #[inline(always)]
    fn add(&mut self, tables: &Tables, d: uint8x16_t, acc: usize) {
        // SAFETY: register arithmetic; NEON is a compile-time target feature.
        unsafe {
            let hi = vqtbl4q_u8(tables.high, d);
            let lo = vqtbl4q_u8(tables.low0, d);
            let lo = vqtbx4q_u8(lo, tables.low1, veorq_u8(d, vdupq_n_u8(64)));
            self.high[acc] = vpadalq_u8(self.high[acc], hi);
            self.low[acc] = vpadalq_u8(self.low[acc], lo);
        }
    }

    /// Adds a 64-byte block of inputs; `mask` bytes are ORed into `d` (0x80
    /// marks a lane to skip: `d | 0x80 >= 128` adds 0).
    #[inline(always)]
    fn add_block(&mut self, tables: &Tables, maxv: uint8x16_t, b: Block, mask: Option<&Block>) {
        // SAFETY: register arithmetic; NEON is a compile-time target feature.
        let d = |x: uint8x16_t, k: usize| unsafe {
            let d = vsubq_u8(maxv, x);
            match mask {
                Some(m) => vorrq_u8(d, [m.0, m.1, m.2, m.3][k]),
                None => d,
            }
        };
        self.add(tables, d(b.0, 0), 0);
        self.add(tables, d(b.1, 1), 1);
        self.add(tables, d(b.2, 2), 0);
        self.add(tables, d(b.3, 3), 1);
    }

    /// Moves the u16 partial sums into u32 totals.
    #[inline(always)]
    fn flush(&mut self, high32: &mut uint32x4_t, low32: &mut uint32x4_t) {
        // SAFETY: register arithmetic; NEON is a compile-time target feature.
        unsafe {
            *high32 = vpadalq_u16(vpadalq_u16(*high32, self.high[0]), self.high[1]);
            *low32 = vpadalq_u16(vpadalq_u16(*low32, self.low[0]), self.low[1]);
        }
        *self = Partial::new();
    }
}

/// The exact sum of u32 totals of high and low bytes.
#[inline(always)]
fn total(high32: uint32x4_t, low32: uint32x4_t) -> u64 {
    // SAFETY: register arithmetic; NEON is a compile-time target feature.
    // Each u32 lane holds at most row_len / 4 * 510, below 2^32 for rows
    // shorter than 2^24; the lanes are added in 64 bits.
    unsafe { (vaddlvq_u32(high32) << 8) + vaddlvq_u32(low32) }
}

/// Sum of `t[max - x]` over a row of at least 64 bytes, exact: whole blocks,
/// then the last 64 bytes again with the lanes already counted masked off.
#[inline(always)]
fn row_sum(tables: &Tables, row: &[u8], max: u8, tail_mask: &[u8; STEP]) -> u64 {
    debug_assert!(row.len() >= STEP);
    // SAFETY: register arithmetic; NEON is a compile-time target feature.
    let maxv = unsafe { vdupq_n_u8(max) };
    let (mut high32, mut low32) = unsafe { (vdupq_n_u32(0), vdupq_n_u32(0)) };
    let mut partial = Partial::new();
    let whole = row.len() / STEP;
    // Through black_box so that LLVM does not keep the max pass's last block
    // in four registers for the tail below (it would spill the tables).
    let start = core::hint::black_box(row.as_ptr());
    let mut src = start;
    let mut left = whole;
    while left > 0 {
        let chunk = left.min(FLUSH_EVERY);
        for _ in 0..chunk {
            // SAFETY: src points at a whole 64-byte block inside row: at most
            // `whole` blocks are read from the start of row.
            unsafe {
                partial.add_block(tables, maxv, vld1q_u8_x4(src), None);
                src = src.add(STEP);
            }
        }
        partial.flush(&mut high32, &mut low32);
        left -= chunk;
    }
    if row.len() % STEP != 0 {
        // SAFETY: row.len() >= STEP, so the last STEP bytes are in bounds.
        let last = unsafe { vld1q_u8_x4(start.add(row.len() - STEP)) };
        // SAFETY: the mask is STEP bytes.
        let mask = unsafe { vld1q_u8_x4(tail_mask.as_ptr()) };
        partial.add_block(tables, maxv, last, Some(&mask));
        partial.flush(&mut high32, &mut low32);
    }
    total(high32, low32)
}

/// Sum of `t[max - x]` over a row shorter than 64 bytes (one padded block).
#[inline(always)]
fn short_row_sum(tables: &Tables, row: &[u8], max: u8) -> u64 {
    // SAFETY: register arithmetic; NEON is a compile-time target feature.
    let maxv = unsafe { vdupq_n_u8(max) };
    let (mut high32, mut low32) = unsafe { (vdupq_n_u32(0), vdupq_n_u32(0)) };
    let mut partial = Partial::new();
    // Padding bytes get d = 128: past both tables, so they add 0.
    for_each_block(row, max.wrapping_sub(128), |b| {
        partial.add_block(tables, maxv, b, None)
    });
    partial.flush(&mut high32, &mut low32);
    total(high32, low32)
}

/// The row's outputs for `d < 64` as bytes above the type's minimum
/// (`clamp(out) - MIN`, which is `min(MBQM(t[d]), 255)`), in four registers.
#[inline(always)]
fn output_table(p: &SoftmaxLut, multiplier: i32, right_shift: u32) -> uint8x16x4_t {
    // Through black_box so that LLVM reloads the 64 entries here, once per
    // row, instead of hoisting them out of the row loop into 16 registers
    // that the sum loop then has to spill.
    let head = core::hint::black_box(p.exp_head.as_ptr());
    let m = <int32x4_t as Lane>::splat(multiplier);
    // MultiplyByQuantizedMultiplier for a negative shift on values >= 0: the
    // rounding divide needs no sign fix-up.
    let entries = |k: usize| -> int32x4_t {
        // SAFETY: k < 16, so the 4 lanes at 4k are within the 64-entry table.
        let t = unsafe { vld1q_s32(head.add(4 * k)) };
        t.saturating_rounding_doubling_high_mul(m)
            .rounding_divide_by_pot_non_negative(right_shift)
    };
    // Outputs are at most 256 * 65535 / sum * (1 + 0.1%) (the output scale
    // is within 0.1% of 1/256); above 255 only where t[d] is above 65280,
    // which in a split table (beta * scale >= 0.086) is d = 0 alone. So
    // lanes 0..4 are clamped and the rest narrow by dropping high halves.
    // SAFETY: register arithmetic.
    let first = unsafe { vminq_s32(entries(0), vdupq_n_s32(255)) };
    let narrow16 = |a: int32x4_t, b: int32x4_t| unsafe {
        vuzp1q_u16(vreinterpretq_u16_s32(a), vreinterpretq_u16_s32(b))
    };
    let narrow8 = |a: uint16x8_t, b: uint16x8_t| unsafe {
        vuzp1q_u8(vreinterpretq_u8_u16(a), vreinterpretq_u8_u16(b))
    };
    let quad = |a: int32x4_t, k: usize| {
        narrow8(
            narrow16(a, entries(k + 1)),
            narrow16(entries(k + 2), entries(k + 3)),
        )
    };
    uint8x16x4_t(
        quad(first, 0),
        quad(entries(4), 4),
        quad(entries(8), 8),
        quad(entries(12), 12),
    )
}

/// One output block: `table[max - x]`, moved to the type's range.
#[inline(always)]
fn look<const SIGNED: bool>(table: &uint8x16x4_t, maxv: uint8x16_t, b: Block) -> Block {
    let one = |x: uint8x16_t| -> uint8x16_t {
        // SAFETY: register arithmetic. For int8, q - 128 is q ^ 0x80 (q in 0..=255).
        unsafe {
            let q = vqtbl4q_u8(*table, vsubq_u8(maxv, x));
            if SIGNED {
                veorq_u8(q, vdupq_n_u8(0x80))
            } else {
                q
            }
        }
    };
    uint8x16x4_t(one(b.0), one(b.1), one(b.2), one(b.3))
}

/// Writes a row of at least 64 bytes through the 64-entry table: whole
/// blocks, then the last 64 bytes again (rewriting some outputs with the
/// same values).
#[inline(always)]
fn write_outputs<const SIGNED: bool>(
    table: uint8x16x4_t,
    row_in: &[u8],
    row_out: &mut [u8],
    max: u8,
) {
    debug_assert!(row_in.len() >= STEP && row_in.len() == row_out.len());
    // SAFETY: register arithmetic.
    let maxv = unsafe { vdupq_n_u8(max) };
    let n = row_in.len().min(row_out.len());
    let (mut src, mut dst) = (row_in.as_ptr(), row_out.as_mut_ptr());
    let mut blocks = n / STEP;
    while blocks > 0 {
        // SAFETY: src and dst point `(n / STEP - blocks) * STEP` bytes into
        // the rows, so the next STEP bytes of each are in bounds.
        unsafe {
            vst1q_u8_x4(dst, look::<SIGNED>(&table, maxv, vld1q_u8_x4(src)));
            src = src.add(STEP);
            dst = dst.add(STEP);
        }
        blocks -= 1;
    }
    if n % STEP != 0 {
        // SAFETY: n >= STEP, so the last STEP bytes of both rows are in bounds.
        unsafe {
            let y = look::<SIGNED>(&table, maxv, vld1q_u8_x4(row_in.as_ptr().add(n - STEP)));
            vst1q_u8_x4(row_out.as_mut_ptr().add(n - STEP), y);
        }
    }
}

/// The same for a row shorter than 64 bytes, through stack buffers.
#[inline(always)]
fn write_short_outputs<const SIGNED: bool>(
    table: uint8x16x4_t,
    row_in: &[u8],
    row_out: &mut [u8],
    max: u8,
) {
    // SAFETY: register arithmetic.
    let maxv = unsafe { vdupq_n_u8(max) };
    for_each_block(row_in, 0, |b| {
        let mut buf = [0u8; STEP];
        // SAFETY: buf is STEP bytes.
        unsafe { vst1q_u8_x4(buf.as_mut_ptr(), look::<SIGNED>(&table, maxv, b)) };
        row_out.copy_from_slice(&buf[..row_out.len()]);
    });
}

/// The rest of a row once its maximum and sum are known: the multiplier, the
/// output table and the outputs.
#[inline(always)]
fn finish_row<const SIGNED: bool>(
    p: &SoftmaxLut,
    row_in: &[u8],
    row_out: &mut [u8],
    max: u8,
    sum: u64,
) {
    let (multiplier, shift) = p.row_multiplier(sum);
    // inverse <= 256 / 65535 < 2^-7, so the shift is a right shift of at least 7.
    debug_assert!(shift <= -7);
    let right_shift = shift.unsigned_abs().min(31);
    // The 64-entry output table needs the output to be 0 for d >= 64; t is
    // non-increasing, so t[64] decides (always true when `outputs_fit`).
    if !p.outputs_fit && p.output(p.exp[OUTPUT_ENTRIES], multiplier, shift) != p.output_zero_point {
        rare_row::<SIGNED>(p, row_in, row_out);
        return;
    }
    let table = output_table(p, multiplier, right_shift);
    if row_in.len() >= STEP {
        write_outputs::<SIGNED>(table, row_in, row_out, max);
    } else {
        write_short_outputs::<SIGNED>(table, row_in, row_out, max);
    }
}

/// A row whose outputs reach past `d = 63` (possible only for `beta * scale`
/// near 0.09 and a lone maximum): the scalar reference on that row.
#[inline(never)]
#[cold]
fn rare_row<const SIGNED: bool>(p: &SoftmaxLut, row_in: &[u8], row_out: &mut [u8]) {
    let len = row_in.len();
    if SIGNED {
        let (x, y): (&[i8], &mut [i8]) = (
            bytemuck::cast_slice(row_in),
            bytemuck::cast_slice_mut(row_out),
        );
        softmax_scalar(p, x, y, len);
    } else {
        softmax_scalar(p, row_in, row_out, len);
    }
}

/// Loads the split tables.
#[inline(always)]
fn load_tables(p: &SoftmaxLut) -> Tables {
    // SAFETY: the three tables are 64 bytes each.
    unsafe {
        Tables {
            high: vld1q_u8_x4(p.high.0.as_ptr()),
            low0: vld1q_u8_x4(p.low[0].0.as_ptr()),
            low1: vld1q_u8_x4(p.low[1].0.as_ptr()),
        }
    }
}

/// `Method::Lut` softmax of every `row_len`-long row of 8-bit data; the
/// caller checked the lengths and that `p.split` holds. `SIGNED` selects
/// int8 (signed maximum, outputs offset by -128) over uint8.
#[inline(always)]
fn softmax_rows<const SIGNED: bool>(
    p: &SoftmaxLut,
    input: &[u8],
    output: &mut [u8],
    row_len: usize,
) {
    debug_assert!(p.split);
    if row_len < STEP {
        return short_rows::<SIGNED>(p, input, output, row_len);
    }
    // The last block of a row overlaps the one before by 64 - row_len % 64
    // bytes; those lanes are already counted, and 0x80 masks them off.
    let mut mask = [0u8; STEP];
    let overlap = (STEP - row_len % STEP) % STEP;
    mask[..overlap].fill(0x80);
    let tables = load_tables(p);
    for (row_in, row_out) in input
        .chunks_exact(row_len)
        .zip(output.chunks_exact_mut(row_len))
    {
        let max = row_max::<SIGNED>(row_in);
        let sum = row_sum(&tables, row_in, max, &mask);
        finish_row::<SIGNED>(p, row_in, row_out, max, sum);
    }
}

/// Rows shorter than 64 bytes: one padded block each.
#[inline(never)]
fn short_rows<const SIGNED: bool>(p: &SoftmaxLut, input: &[u8], output: &mut [u8], row_len: usize) {
    let tables = load_tables(p);
    for (row_in, row_out) in input
        .chunks_exact(row_len)
        .zip(output.chunks_exact_mut(row_len))
    {
        let max = row_max::<SIGNED>(row_in);
        let sum = short_row_sum(&tables, row_in, max);
        finish_row::<SIGNED>(p, row_in, row_out, max, sum);
    }
}

/// The int8 kernel (named for the asm checks and profiles).
#[inline(never)]
pub(crate) fn softmax_lut_i8(p: &SoftmaxLut, input: &[u8], output: &mut [u8], row_len: usize) {
    softmax_rows::<true>(p, input, output, row_len)
}

/// The uint8 kernel.
#[inline(never)]
pub(crate) fn softmax_lut_u8(p: &SoftmaxLut, input: &[u8], output: &mut [u8], row_len: usize) {
    softmax_rows::<false>(p, input, output, row_len)
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
