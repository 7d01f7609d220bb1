//! int16 softmax, `Method::Lut`, NEON backend, bit for bit the scalar kernel
//! of `lut16.rs`.
//!
//! A row's exps depend on `q - max` only, one of 65,536 differences
//! (`-65535..=0`), so `new()` evaluates the scalar `exp` (rescale, re-centre,
//! interpolate in the 513-entry table) on every difference once: 65,536 `i16`
//! (128 KiB, on the heap, shared between clones), `lut16::ExpByDiff`. Per row:
//!
//! ```text
//! max   NEON smax, 32 elements per iteration
//! e     out[i] = table[q - max + 65535]: a gather, ldrsh + ldrh + strh per element
//! sum   NEON uadalp of the cached exps (u32 lanes, flushed to u64 per 2^20 elements)
//! 1/sum the scalar code (one 1/(1+x) lookup per row)
//! out   NEON, 8 lanes of Q0.15: with right_shift = 15 + k,
//!         k = 0:  sqrdmulh(e, r)                      = (e r + 2^14) >> 15, saturated
//!         k >= 1: srshl(sqdmulh(e, r), -min(k, 16))   = (e r + 2^(14+k)) >> (15+k)
//! ```
//!
//! The second form is exact: with `e r = 2^15 a + b`, `0 <= b < 2^15`,
//! `sqdmulh` gives `a` and `(a + 2^(k-1)) >> k = (e r + 2^(14+k)) >> (15+k)`
//! because the dropped `b / 2^15 < 1` cannot carry past a multiple of `2^k`
//! when added to an integer. Both are `>= 0` (`e >= 0`, `r > 0`) and at most
//! 32767, which is the scalar clamp. Rows whose sum is below `2^15`
//! (`right_shift` 14: rows of one element) take the scalar output loop.
//!
//! The gather is the cost: NEON has no gather instruction and its table
//! instructions reach 64 bytes, not the 1 KiB of a 513-entry `i16` table, so
//! interpolating in registers would still need two scalar loads and a lane
//! insert per element, besides the 32-bit rescaling.

#![cfg_attr(not(feature = "std"), allow(dead_code))]

use super::lut16::{scale_exp, softmax_scalar, SoftmaxLut16};
use core::arch::aarch64::*;

/// Softmax of each `row_len`-long row (lengths checked by the caller; an
/// unfilled table, which `new()` never leaves, runs the scalar kernel).
pub(crate) fn softmax(lut: &SoftmaxLut16, input: &[i16], output: &mut [i16], row_len: usize) {
    match &lut.exp_by_diff.0 {
        Some(table) => softmax_lut_i16(lut, table, input, output, row_len),
        None => softmax_scalar(lut, input, output, row_len),
    }
}

/// The NEON kernel, under a stable name for the asm checks.
#[inline(never)]
fn softmax_lut_i16(
    lut: &SoftmaxLut16,
    table: &[i16; 65536],
    input: &[i16],
    output: &mut [i16],
    row_len: usize,
) {
    for (row, out) in input
        .chunks_exact(row_len)
        .zip(output.chunks_exact_mut(row_len))
    {
        let max = row_max(row);
        gather_exps(table, max, row, out);
        let (reciprocal, right_shift) = lut.reciprocal(row_sum(out) as i64);
        if right_shift >= 15 {
            // The reciprocal is a Q0.15 table value, in (0, 32767].
            scale_row(out, reciprocal as i16, right_shift - 15);
        } else {
            for e in out.iter_mut() {
                *e = scale_exp(*e, reciprocal, right_shift);
            }
        }
    }
}

/// The largest element (`i16::MIN` for an empty row).
#[inline(always)]
fn row_max(row: &[i16]) -> i16 {
    let mut blocks = row.chunks_exact(32);
    // SAFETY: NEON is enabled for this module (the cfg on `mod lut16_neon`);
    // each load reads 32 (8) elements of a 32 (8)-element chunk.
    let (vector, rest) = unsafe {
        let mut m = [vdupq_n_s16(i16::MIN); 4];
        for b in &mut blocks {
            let x = vld1q_s16_x4(b.as_ptr());
            m[0] = vmaxq_s16(m[0], x.0);
            m[1] = vmaxq_s16(m[1], x.1);
            m[2] = vmaxq_s16(m[2], x.2);
            m[3] = vmaxq_s16(m[3], x.3);
        }
        let mut eights = blocks.remainder().chunks_exact(8);
        for b in &mut eights {
            m[0] = vmaxq_s16(m[0], vld1q_s16(b.as_ptr()));
        }
        let m = vmaxq_s16(vmaxq_s16(m[0], m[1]), vmaxq_s16(m[2], m[3]));
        (vmaxvq_s16(m), eights.remainder())
    };
    rest.iter().copied().fold(vector, i16::max)
}

/// `out[i] = exp(row[i] - max)` from the table, 32 elements per iteration,
/// then 8.
#[inline(always)]
fn gather_exps(table: &[i16; 65536], max: i16, row: &[i16], out: &mut [i16]) {
    // Entry `q - max + 65535` for `q` in `[-32768, max]` lies in `[0, 65535]`;
    // `base` is the (possibly out-of-bounds, never dereferenced) address of
    // entry `65535 - max`, so `base + q` is that entry.
    let base = table.as_ptr().wrapping_add((65535 - max as i32) as usize);
    let exp = |q: i16| {
        debug_assert!(q <= max);
        // SAFETY: `q <= max` (the row's maximum), so `65535 - max + q` is in
        // `[0, 65535]`: an entry of the table.
        unsafe { *base.wrapping_offset(q as isize) }
    };
    let mut blocks_in = row.chunks_exact(32);
    let mut blocks_out = out.chunks_exact_mut(32);
    for (x, y) in (&mut blocks_in).zip(&mut blocks_out) {
        for k in 0..32 {
            y[k] = exp(x[k]);
        }
    }
    let mut eights_in = blocks_in.remainder().chunks_exact(8);
    let mut eights_out = blocks_out.into_remainder().chunks_exact_mut(8);
    for (x, y) in (&mut eights_in).zip(&mut eights_out) {
        for k in 0..8 {
            y[k] = exp(x[k]);
        }
    }
    for (x, y) in eights_in
        .remainder()
        .iter()
        .zip(eights_out.into_remainder())
    {
        *y = exp(*x);
    }
}

/// Elements per `u32` flush of [`row_sum`]: each lane gains at most
/// `2 * 32767` per 32 elements, so `2^20` elements add at most `2^31 - 2^16`.
const SUM_CHUNK: usize = 1 << 20;

/// The sum of the row's exps (each in `[0, 32767]`).
#[inline(always)]
fn row_sum(exps: &[i16]) -> u64 {
    let mut total = 0u64;
    for chunk in exps.chunks(SUM_CHUNK) {
        let mut blocks = chunk.chunks_exact(32);
        // SAFETY: NEON is enabled for this module; each load reads 32
        // elements of a 32-element chunk. The exps are non-negative, so
        // their `u16` bits are their values.
        let (vector, rest) = unsafe {
            let mut acc = [vdupq_n_u32(0); 4];
            for b in &mut blocks {
                let x = vld1q_u16_x4(b.as_ptr() as *const u16);
                acc[0] = vpadalq_u16(acc[0], x.0);
                acc[1] = vpadalq_u16(acc[1], x.1);
                acc[2] = vpadalq_u16(acc[2], x.2);
                acc[3] = vpadalq_u16(acc[3], x.3);
            }
            // At most 3 more blocks of 8: each lane gains at most 3 * 2 * 32767.
            let mut eights = blocks.remainder().chunks_exact(8);
            for b in &mut eights {
                acc[1] = vpadalq_u16(acc[1], vld1q_u16(b.as_ptr() as *const u16));
            }
            let wide = vaddlvq_u32(acc[0])
                + vaddlvq_u32(acc[1])
                + vaddlvq_u32(acc[2])
                + vaddlvq_u32(acc[3]);
            (wide, eights.remainder())
        };
        total += vector + rest.iter().map(|&e| e as u64).sum::<u64>();
    }
    total
}

/// `out[i] = (out[i] * reciprocal + 2^(14 + k)) >> (15 + k)`, clamped to
/// `[0, 32767]`, for `reciprocal` in `(0, 32767]` (see the module docs).
#[inline(always)]
fn scale_row(out: &mut [i16], reciprocal: i16, k: u32) {
    // SAFETY: NEON is enabled for this module.
    let r = unsafe { vdupq_n_s16(reciprocal) };
    if k == 0 {
        // SAFETY: register arithmetic only.
        map_row(
            out,
            |e| unsafe { vqrdmulhq_s16(e, r) },
            |e| scale_exp(e, reciprocal as i64, 15),
        )
    } else {
        // Shifts beyond 16 give 0 as 16 does (the product is below 2^30).
        // SAFETY: register arithmetic only.
        let shift = unsafe { vdupq_n_s16(-(k.min(16) as i16)) };
        // SAFETY: register arithmetic only.
        map_row(
            out,
            |e| unsafe { vrshlq_s16(vqdmulhq_s16(e, r), shift) },
            |e| scale_exp(e, reciprocal as i64, 15 + k),
        )
    }
}

/// `f` on the row 32, then 8 elements at a time, in place; `tail` on the rest.
#[inline(always)]
fn map_row(out: &mut [i16], f: impl Fn(int16x8_t) -> int16x8_t, tail: impl Fn(i16) -> i16) {
    let mut blocks = out.chunks_exact_mut(32);
    for b in &mut blocks {
        // SAFETY: NEON is enabled for this module; the load and the store
        // each cover the 32 elements of this chunk.
        unsafe {
            let x = vld1q_s16_x4(b.as_ptr());
            vst1q_s16_x4(b.as_mut_ptr(), int16x8x4_t(f(x.0), f(x.1), f(x.2), f(x.3)));
        }
    }
    let mut eights = blocks.into_remainder().chunks_exact_mut(8);
    for b in &mut eights {
        // SAFETY: NEON is enabled for this module; the load and the store
        // each cover the 8 elements of this chunk.
        unsafe { vst1q_s16(b.as_mut_ptr(), f(vld1q_s16(b.as_ptr()))) }
    }
    for e in eights.into_remainder() {
        *e = tail(*e);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec::Vec;

    #[test]
    fn row_sum_and_max_are_exact_past_the_u32_flush() {
        // 2^21 + 37 exps of 32767: each u32 lane would wrap without the flush.
        let mut exps = alloc::vec![32767i16; (1 << 21) + 37];
        assert_eq!(row_sum(&exps), 32767 * ((1u64 << 21) + 37));
        exps[(1 << 21) + 36] = 5;
        assert_eq!(row_sum(&exps), 32767 * ((1u64 << 21) + 36) + 5);
        for len in 0..=70usize {
            for at in 0..len {
                let mut row = alloc::vec![-32768i16; len];
                row[at] = -32767;
                assert_eq!(row_max(&row), -32767);
                let sum: u64 = (0..len as u64).sum();
                let exps: Vec<i16> = (0..len as i16).collect();
                assert_eq!(row_sum(&exps), sum);
            }
        }
        assert_eq!(row_max(&[]), i16::MIN);
    }

    #[test]
    fn output_forms_equal_the_scalar_formula() {
        // Every exp against reciprocals across (0, 32767] and every shift.
        for reciprocal in [1i16, 2, 3, 127, 16384, 16385, 21845, 32766, 32767] {
            for k in 0..=20u32 {
                // 1024 blocks of 32, one of 8 and 6 in the scalar tail.
                let mut out: Vec<i16> = (0..=i16::MAX).chain(32754..=i16::MAX).collect();
                let rs = 15 + k;
                let expect: Vec<i16> = out
                    .iter()
                    .map(|&e| scale_exp(e, reciprocal as i64, rs))
                    .collect();
                scale_row(&mut out, reciprocal, k);
                assert_eq!(out, expect, "reciprocal {reciprocal}, right shift {rs}");
            }
        }
    }
}
