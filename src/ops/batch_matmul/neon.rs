//! The NEON [`MatMul`](super::MatMul): the right-hand side packed into the
//! GEMM's weight layout in the caller's scratch, its column sums and the
//! left-hand side's row sums folded into the accumulators' starting values,
//! then the GEMM's `smmla`, `sdot` or widening kernel and output stage.

use super::MatMul;
use crate::ops::gemm::kernels::neon::{
    block_sums, dot, mmla, pack_columns, pack_rows, widening, GemmView, Tile,
};
use crate::ops::gemm::kernels::{KC, NR};
use crate::ops::gemm::GemmPath;
use core::arch::aarch64::*;

/// `output = lhs * rhs` on NEON, on the kernel `path` (`Dot`: `sdot`,
/// `Mmla`: `smmla`, whose extensions the caller checked this CPU has).
/// Lengths were checked by the caller: `lhs` `m k`, `rhs` `k n`, `output`
/// `m n`, `bytes` and `words` at least
/// `scratch_bytes()` and `scratch_words()` long.
pub(super) fn matmul(
    p: &MatMul,
    path: GemmPath,
    lhs: &[i8],
    rhs: &[i8],
    output: &mut [i8],
    bytes: &mut [i8],
    words: &mut [i32],
) {
    let (m, n, k) = (p.m, p.n, p.k);
    let (zx, zy) = (p.lhs_zero_point, p.rhs_zero_point);
    let (packed, rest) = bytes.split_at_mut(p.n_padded * p.k_padded);
    let x: &[i8] = if p.adj_x {
        let t = &mut rest[..m * k];
        transpose(lhs, k, m, t);
        t
    } else {
        lhs
    };
    // The packing writes every real weight; the padding (channels past n,
    // depth past k) must read as zero, and the scratch holds whatever the
    // previous user left.
    if n % NR != 0 || k % KC != 0 {
        packed.fill(0);
    }
    if p.adj_y {
        pack_rows(packed, rhs, n, k, p.k_padded);
    } else {
        pack_columns(packed, rhs, n, k, p.k_padded);
    }

    let (column_start, rest) = words.split_at_mut(p.n_padded);
    // k lhs_zp rhs_zp - lhs_zp sum_d y[d][c], all wrapping (equal modulo 2^32).
    let both = (k as i32).wrapping_mul(zx).wrapping_mul(zy);
    let mut above_min = true;
    for (b, block) in packed.chunks_exact(NR * p.k_padded).enumerate() {
        let (sums, min) = block_sums(block);
        above_min &= min != i8::MIN;
        for (start, sum) in column_start[b * NR..(b + 1) * NR].iter_mut().zip(sums) {
            *start = both.wrapping_sub(zx.wrapping_mul(sum));
        }
    }
    let row_offsets = if zy != 0 {
        let offsets = &mut rest[..m];
        for (offset, row) in offsets.iter_mut().zip(x.chunks_exact(k)) {
            *offset = zy.wrapping_mul(row_sum(row)).wrapping_neg();
        }
        Some(&*offsets)
    } else {
        None
    };
    let view = GemmView {
        k,
        k_padded: p.k_padded,
        packed,
        paired: &[],
        folded_bias: column_start,
        row_offsets,
        multipliers: &p.multipliers,
        block_shifts: &p.block_shifts,
        single_right: &[],
        weights_above_min: above_min,
        output_zero_point: p.output_zero_point,
        act_min: i8::MIN as i32,
        act_max: i8::MAX as i32,
    };
    let whole = Tile::whole(m, n);
    match path {
        // SAFETY: the caller checked that this CPU has dotprod; the lengths
        // of x (m k) and output (m n) were checked (m >= 1, n >= 1), packed
        // holds the whole padded blocks, column_start one value per padded
        // channel and row_offsets one per row.
        GemmPath::Dot => unsafe { dot::gemm_dot::<true>(&view, x, output, &whole) },
        // SAFETY: as for `Dot`, the CPU having i8mm and dotprod (checked by
        // the caller).
        GemmPath::Mmla => unsafe { mmla::gemm_mmla::<true>(&view, x, output, &whole) },
        GemmPath::Widening => widening::gemm_widening::<true>(&view, x, output, &whole),
    }
}

/// `t (m x k) = a^T` for the `k x m` row-major `a` (the `adj_x` left-hand
/// side; not on MobileBert's path, so plain loops).
fn transpose(a: &[i8], k: usize, m: usize, t: &mut [i8]) {
    for (d, row) in a.chunks_exact(m).enumerate() {
        for (r, &v) in row.iter().enumerate() {
            t[r * k + d] = v;
        }
    }
}

/// The sum of one int8 row (exact: `|sum| < 2^31` for any row shorter than
/// 2^24). Per 16 bytes one `sadalp` into 16-bit pairs; the 16-bit lanes take
/// at most 128 steps (`128 * 2 * 128 = 32,768` in magnitude, `-32,768` at
/// worst, which fits) before they are widened into the total.
fn row_sum(row: &[i8]) -> i32 {
    const STEPS: usize = 128;
    let chunks = row.chunks_exact(KC);
    let tail: i32 = chunks.remainder().iter().map(|&v| v as i32).sum();
    let mut total = tail;
    let whole = row.len() / KC;
    let mut start = 0;
    while start < whole {
        let end = whole.min(start + STEPS);
        // SAFETY: neon is a compile-time target feature (cfg on this module);
        // chunk i < whole covers bytes 16 i..16 i + 16 <= row.len().
        unsafe {
            let mut acc = vdupq_n_s16(0);
            for i in start..end {
                acc = vpadalq_s8(acc, vld1q_s8(row.as_ptr().add(i * KC)));
            }
            total = total.wrapping_add(vaddlvq_s16(acc));
        }
        start = end;
    }
    total
}

#[cfg(test)]
mod tests {
    use super::row_sum;

    #[test]
    fn row_sums_are_exact_at_the_int8_extremes_and_every_tail() {
        for len in (0..40).chain([255, 256, 2047, 2048, 2049, 4111]) {
            for v in [i8::MIN, i8::MAX, -1, 3] {
                let row = alloc::vec![v; len];
                assert_eq!(row_sum(&row), v as i32 * len as i32, "len {len} value {v}");
            }
            let row: alloc::vec::Vec<i8> = (0..len).map(|i| (i * 37 % 256) as u8 as i8).collect();
            let want: i32 = row.iter().map(|&v| v as i32).sum();
            assert_eq!(row_sum(&row), want, "len {len} mixed");
        }
    }
}
