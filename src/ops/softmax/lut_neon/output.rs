//! The output pass of the `Method::Lut` NEON kernel: per row, the 64-entry
//! chunks of its output table (requantized `t[d]` by `d`), then a `tbl`
//! (plus a `tbx` per further chunk) for every 16 elements; or, for short
//! full-table rows, `t` looked up again and requantized lane by lane.

use crate::fixedpoint::Lane;
use crate::ops::softmax_rows::lut::SoftmaxLut;
use crate::ops::softmax_rows::neon::blocks::{load_post, opaque, Block, STEP};
use crate::ops::softmax_rows::neon::sums::lookup_chunk;
use crate::simd::tail::map_tail;
use core::arch::aarch64::*;

/// The row's outputs for `d < 64 C` as bytes above the type's minimum
/// (`clamp(out) - MIN`, which is `min(MBQM(t[d]), 255)`), in `C` chunks of
/// four registers.
#[inline(always)]
pub(super) fn output_table<const C: usize>(
    p: &SoftmaxLut,
    multiplier: i32,
    neg_shift: i16,
) -> [uint8x16x4_t; C] {
    // Opaque so that LLVM reloads the entries here, once per row, instead of
    // hoisting them out of the row loop into registers that the sum loop
    // then has to spill.
    let wide = opaque(p.exp_wide.as_ptr());
    let m = <int32x4_t as Lane>::splat(multiplier);
    // MultiplyByQuantizedMultiplier for a negative shift on values >= 0 is
    // sqrdmulh, then a rounding divide by 2^r (r = -neg_shift, the negative exponent) that needs
    // no sign fix-up: (x + 2^(r - 1)) >> r. The sqrdmulh result
    // is at most t <= 65535 (m < 2^31), so it is narrowed to u16 first and
    // divided eight lanes at a time by `urshl`, which rounds the same way
    // (Arm defines it with the rounding constant added at full precision;
    // right shifts of 16 and more give 0 or 1 as the 32-bit divide would).
    let entries = |k: usize| -> int32x4_t {
        // SAFETY: k < 16 C <= 64, so the 4 lanes at 4k are within the
        // 256-entry table.
        let t = unsafe { vld1q_s32(wide.add(4 * k)) };
        t.saturating_rounding_doubling_high_mul(m)
    };
    // SAFETY: register arithmetic; -31 <= neg_shift <= -7.
    let shift = unsafe { vdupq_n_s16(neg_shift) };
    // Outputs are at most 256 * 65535 / sum * (1 + 0.1%) (the output scale
    // is within 0.1% of 1/256); the narrowing to bytes saturates at 255.
    // (Loads of one register each: the four-register `ld1` raises register
    // pressure enough to make LLVM spill the split tables on every row.)
    // SAFETY: register arithmetic.
    let sixteen = |k: usize| unsafe {
        let h = |a: int32x4_t, b: int32x4_t| {
            let x = vuzp1q_u16(vreinterpretq_u16_s32(a), vreinterpretq_u16_s32(b));
            vrshlq_u16(x, shift)
        };
        let low = h(entries(k), entries(k + 1));
        let high = h(entries(k + 2), entries(k + 3));
        vqmovn_high_u16(vqmovn_u16(low), high)
    };
    core::array::from_fn(|c| {
        let k = 16 * c;
        uint8x16x4_t(sixteen(k), sixteen(k + 4), sixteen(k + 8), sixteen(k + 12))
    })
}

/// One output block: `table[max - x]`, moved to the type's range.
#[inline(always)]
pub(super) fn look<const SIGNED: bool, const C: usize>(
    table: &[uint8x16x4_t; C],
    maxv: uint8x16_t,
    b: Block,
) -> Block {
    let one = |x: uint8x16_t| -> uint8x16_t {
        // SAFETY: register arithmetic. For int8, q - 128 is q ^ 0x80 (q in
        // 0..=255). Lowering d by 64 per chunk moves the next chunk's
        // indices into 0..64 and the others out of it (see add_block_full).
        unsafe {
            let mut d = vsubq_u8(maxv, x);
            let mut q = vqtbl4q_u8(table[0], d);
            for chunk in &table[1..] {
                d = vsubq_u8(d, vdupq_n_u8(64));
                q = vqtbx4q_u8(q, *chunk, d);
            }
            if SIGNED {
                veorq_u8(q, vdupq_n_u8(0x80))
            } else {
                q
            }
        }
    };
    uint8x16x4_t(one(b.0), one(b.1), one(b.2), one(b.3))
}

/// Writes a row of at least 64 bytes, `f` mapping each 64-byte input block
/// to its outputs: whole blocks, then the last 64 bytes again (rewriting
/// some outputs with the same values).
#[inline(always)]
pub(super) fn write_outputs(row_in: &[u8], row_out: &mut [u8], mut f: impl FnMut(Block) -> Block) {
    debug_assert!(row_in.len() >= STEP && row_in.len() == row_out.len());
    let n = row_in.len().min(row_out.len());
    let (mut src, mut dst) = (row_in.as_ptr(), row_out.as_mut_ptr());
    let mut blocks = n / STEP;
    while blocks > 0 {
        // SAFETY: src and dst point `(n / STEP - blocks) * STEP` bytes into
        // the rows, so the next STEP bytes of each are in bounds.
        unsafe {
            vst1q_u8_x4(dst, f(vld1q_u8_x4(src)));
            src = src.add(STEP);
            dst = dst.add(STEP);
        }
        blocks -= 1;
    }
    if !n.is_multiple_of(STEP) {
        // SAFETY: n >= STEP, so the last STEP bytes of both rows are in bounds.
        unsafe {
            let y = f(vld1q_u8_x4(row_in.as_ptr().add(n - STEP)));
            vst1q_u8_x4(row_out.as_mut_ptr().add(n - STEP), y);
        }
    }
}

/// `write_outputs` with each whole block loaded and stored by one
/// post-incremented four-register `ld1` / `st1` (LLVM emits two `ldp`, two
/// `stp` and two `add`s), for the full-table rows, where v0..v3 are free.
#[inline(always)]
pub(super) fn write_outputs_post(
    row_in: &[u8],
    row_out: &mut [u8],
    mut f: impl FnMut(Block) -> Block,
) {
    assert!(row_in.len() >= STEP && row_in.len() == row_out.len());
    let n = row_in.len();
    let (mut src, mut dst) = (row_in.as_ptr(), row_out.as_mut_ptr());
    for _ in 0..n / STEP {
        // SAFETY: src and dst point at the same whole 64-byte block of
        // their rows (n / STEP blocks from the starts); the asm writes only
        // those 64 bytes of row_out and the pointer.
        unsafe {
            let y = f(load_post(&mut src));
            core::arch::asm!(
                "st1 {{v0.16b-v3.16b}}, [{dst}], #64",
                dst = inout(reg) dst,
                in("v0") y.0, in("v1") y.1, in("v2") y.2, in("v3") y.3,
                options(nostack, preserves_flags),
            );
        }
    }
    if !n.is_multiple_of(STEP) {
        // SAFETY: n >= STEP, so the last STEP bytes of both rows are in bounds.
        unsafe {
            let y = f(vld1q_u8_x4(row_in.as_ptr().add(n - STEP)));
            vst1q_u8_x4(row_out.as_mut_ptr().add(n - STEP), y);
        }
    }
}

/// The same for a row shorter than 64 bytes, through stack buffers (padded
/// with the row's maximum: a valid index for every table).
#[inline(always)]
pub(super) fn write_short_outputs(
    row_in: &[u8],
    row_out: &mut [u8],
    max: u8,
    mut f: impl FnMut(Block) -> Block,
) {
    debug_assert!(row_in.len() < STEP);
    map_tail::<STEP, u8>(
        row_in,
        row_out,
        max,
        #[inline(always)]
        |src, dst| {
            // SAFETY: map_tail hands out STEP readable and STEP writable bytes.
            unsafe { vst1q_u8_x4(dst, f(vld1q_u8_x4(src))) }
        },
    );
}

/// Writes a row through `f` (long or short row).
#[inline(always)]
pub(super) fn write_any(row_in: &[u8], row_out: &mut [u8], max: u8, f: impl FnMut(Block) -> Block) {
    if row_in.len() >= STEP {
        write_outputs(row_in, row_out, f);
    } else {
        write_short_outputs(row_in, row_out, max, f);
    }
}

/// Builds `C` chunks of the output table and writes the row through them.
#[inline(always)]
pub(super) fn write_row<const SIGNED: bool, const C: usize>(
    p: &SoftmaxLut,
    row_in: &[u8],
    row_out: &mut [u8],
    max: u8,
    multiplier: i32,
    neg_shift: i16,
) {
    let table = output_table::<C>(p, multiplier, neg_shift);
    // SAFETY: register arithmetic.
    let maxv = unsafe { vdupq_n_u8(max) };
    write_any(row_in, row_out, max, |b| look::<SIGNED, C>(&table, maxv, b));
}

/// Writes a row of full-table data without an output table: each block's
/// `t` looked up again (four chunks, as in the sum) and requantized lane by
/// lane, as `output_table` does it. Cheaper than building a table of `C`
/// chunks for rows shorter than about `33 C` elements.
#[inline(never)]
pub(super) fn write_row_direct<const SIGNED: bool>(
    p: &SoftmaxLut,
    row_in: &[u8],
    row_out: &mut [u8],
    max: u8,
    multiplier: i32,
    neg_shift: i16,
) {
    let m = <int32x4_t as Lane>::splat(multiplier);
    // SAFETY: register arithmetic; NEON is a compile-time target feature;
    // -31 <= neg_shift <= -7.
    let (maxv, shift) = unsafe { (vdupq_n_u8(max), vdupq_n_s16(neg_shift)) };
    let high = p.high.as_ptr().cast::<u8>();
    let low = p.low.as_ptr().cast::<u8>();
    // 16 outputs from the high and low bytes of their t (see output_table
    // for the arithmetic and its bounds).
    let requantize = |hi: uint8x16_t, lo: uint8x16_t| -> uint8x16_t {
        // SAFETY: register arithmetic.
        unsafe {
            // Little-endian: zipping (lo, hi) bytes gives the u16 t values.
            let t01 = vreinterpretq_u16_u8(vzip1q_u8(lo, hi));
            let t23 = vreinterpretq_u16_u8(vzip2q_u8(lo, hi));
            let wide =
                |t: uint32x4_t| vreinterpretq_s32_u32(t).saturating_rounding_doubling_high_mul(m);
            let h = |a: int32x4_t, b: int32x4_t| {
                let x = vuzp1q_u16(vreinterpretq_u16_s32(a), vreinterpretq_u16_s32(b));
                vrshlq_u16(x, shift)
            };
            let a = h(
                wide(vmovl_u16(vget_low_u16(t01))),
                wide(vmovl_high_u16(t01)),
            );
            let b = h(
                wide(vmovl_u16(vget_low_u16(t23))),
                wide(vmovl_high_u16(t23)),
            );
            let q = vqmovn_high_u16(vqmovn_u16(a), b);
            if SIGNED {
                veorq_u8(q, vdupq_n_u8(0x80))
            } else {
                q
            }
        }
    };
    write_any(row_in, row_out, max, |b| {
        // SAFETY: register arithmetic.
        let mut d = [b.0, b.1, b.2, b.3].map(|x| unsafe { vsubq_u8(maxv, x) });
        // Placeholders: the first chunk's `tbl`s write every lane.
        // SAFETY: as above.
        let (mut hi, mut lo) = unsafe { ([vdupq_n_u8(0); 4], [vdupq_n_u8(0); 4]) };
        // SAFETY: high and low point at four 64-byte chunks each.
        unsafe {
            lookup_chunk::<true, true>(high, low, &mut d, &mut hi, &mut lo);
            for k in 1..4 {
                lookup_chunk::<false, true>(
                    high.add(64 * k),
                    low.add(64 * k),
                    &mut d,
                    &mut hi,
                    &mut lo,
                );
            }
        }
        uint8x16x4_t(
            requantize(hi[0], lo[0]),
            requantize(hi[1], lo[1]),
            requantize(hi[2], lo[2]),
            requantize(hi[3], lo[3]),
        )
    });
}

/// `write_row` with `chunks` output chunks, out of line so that the common
/// one-chunk row keeps its registers.
#[inline(never)]
pub(super) fn rows_by_chunks<const SIGNED: bool>(
    p: &SoftmaxLut,
    row_in: &[u8],
    row_out: &mut [u8],
    max: u8,
    multiplier: i32,
    neg_shift: i16,
    chunks: usize,
) {
    write_by_chunks::<SIGNED>(p, row_in, row_out, max, multiplier, neg_shift, chunks)
}

/// `write_row` with `chunks` output chunks.
#[inline(always)]
pub(super) fn write_by_chunks<const SIGNED: bool>(
    p: &SoftmaxLut,
    row_in: &[u8],
    row_out: &mut [u8],
    max: u8,
    multiplier: i32,
    neg_shift: i16,
    chunks: usize,
) {
    match chunks {
        1 => write_row::<SIGNED, 1>(p, row_in, row_out, max, multiplier, neg_shift),
        2 => write_row::<SIGNED, 2>(p, row_in, row_out, max, multiplier, neg_shift),
        3 => write_row::<SIGNED, 3>(p, row_in, row_out, max, multiplier, neg_shift),
        _ => write_row::<SIGNED, 4>(p, row_in, row_out, max, multiplier, neg_shift),
    }
}
