//! NEON weight packing for the GEMM: 8 rows at a time with 4 x 4 transposes
//! of 32-bit words, and the per-block sums that fold the input zero point
//! into the bias.

use crate::ops::gemm::pack::{pack_columns_bytes, pack_rows_groups, KC, NR};
use core::arch::aarch64::*;

/// Packs the `n x k` row-major weights `w` into the layout of `Gemm`
/// (`packed` holds whole blocks of depth `k_padded`; its padding is zero and
/// stays so). Whole blocks, 16 depth bytes at a time: the 8 rows' 16 bytes
/// are four depth groups each, and two 4 x 4 transposes of 32-bit words give
/// the 32-byte groups (rows 0-3 then 4-7). The rest goes group by group.
pub(crate) fn pack_rows(packed: &mut [i8], w: &[i8], n: usize, k: usize, k_padded: usize) {
    assert!(w.len() == n * k && packed.len() >= n.div_ceil(NR) * NR * k_padded);
    let full_blocks = n / NR;
    let chunks = k / KC;
    for b in 0..full_blocks {
        let dst = &mut packed[b * NR * k_padded..(b + 1) * NR * k_padded];
        let src = &w[b * NR * k..(b + 1) * NR * k];
        for i in 0..chunks {
            // SAFETY: row r of the block is src[r k..(r + 1) k] and
            // 16 (i + 1) <= k; the chunk's groups 4i..4i + 4 are the 128 bytes
            // at 128 i of the block, and 128 (i + 1) <= 8 k_padded
            // (k_padded >= k >= 16 (i + 1)).
            unsafe {
                let row =
                    |r: usize| vreinterpretq_s32_s8(vld1q_s8(src.as_ptr().add(r * k + i * KC)));
                let o = dst.as_mut_ptr().add(i * 4 * 4 * NR);
                for half in 0..2 {
                    let (r0, r1, r2, r3) = (
                        row(4 * half),
                        row(4 * half + 1),
                        row(4 * half + 2),
                        row(4 * half + 3),
                    );
                    let t0 = vreinterpretq_s64_s32(vtrn1q_s32(r0, r1));
                    let t1 = vreinterpretq_s64_s32(vtrn2q_s32(r0, r1));
                    let t2 = vreinterpretq_s64_s32(vtrn1q_s32(r2, r3));
                    let t3 = vreinterpretq_s64_s32(vtrn2q_s32(r2, r3));
                    let at = o.add(16 * half);
                    vst1q_s8(at, vreinterpretq_s8_s64(vtrn1q_s64(t0, t2)));
                    vst1q_s8(at.add(32), vreinterpretq_s8_s64(vtrn1q_s64(t1, t3)));
                    vst1q_s8(at.add(64), vreinterpretq_s8_s64(vtrn2q_s64(t0, t2)));
                    vst1q_s8(at.add(96), vreinterpretq_s8_s64(vtrn2q_s64(t1, t3)));
                }
            }
        }
    }
    let d0 = chunks * KC;
    if d0 < k {
        pack_rows_groups(packed, w, 0, full_blocks * NR, d0, k, k_padded);
    }
    pack_rows_groups(packed, w, full_blocks * NR, n, 0, k, k_padded);
}

/// Packs the transpose of the `k x n` row-major `wt` (weight `(c, d)` =
/// `wt[d * n + c]`) into the layout of `Gemm`. Four depth rows of 16
/// channels (two blocks) at a time: zipping bytes of rows 0/1 and 2/3, then
/// 16-bit pairs of the two, gives each channel's 4 depth bytes in a 32-bit
/// lane, four channels per vector. A last odd block goes 8 channels at a
/// time, the channels past whole blocks and the depth past a multiple of 4
/// byte by byte.
pub(crate) fn pack_columns(packed: &mut [i8], wt: &[i8], n: usize, k: usize, k_padded: usize) {
    assert!(wt.len() == n * k && packed.len() >= n.div_ceil(NR) * NR * k_padded);
    let full_blocks = n / NR;
    let groups = k / 4;
    let src = wt.as_ptr();
    let dst = packed.as_mut_ptr();
    for g in 0..groups {
        let mut b = 0;
        while b + 2 <= full_blocks {
            // SAFETY: rows 4g..4g + 4 < k of n bytes, channels 8b..8b + 16 <= n;
            // blocks b and b + 1 < full_blocks hold group g at 32 g, with
            // 32 (g + 1) <= 8 k_padded.
            unsafe {
                let row = |t: usize| vld1q_s8(src.add((4 * g + t) * n + b * NR));
                let (a0, a1, a2, a3) = (row(0), row(1), row(2), row(3));
                let p01 = [vzip1q_s8(a0, a1), vzip2q_s8(a0, a1)];
                let p23 = [vzip1q_s8(a2, a3), vzip2q_s8(a2, a3)];
                for h in 0..2 {
                    let (x, y) = (vreinterpretq_s16_s8(p01[h]), vreinterpretq_s16_s8(p23[h]));
                    let at = dst.add((b + h) * NR * k_padded + g * 4 * NR);
                    vst1q_s8(at, vreinterpretq_s8_s16(vzip1q_s16(x, y)));
                    vst1q_s8(at.add(16), vreinterpretq_s8_s16(vzip2q_s16(x, y)));
                }
            }
            b += 2;
        }
        if b < full_blocks {
            // SAFETY: as above, for the 8 channels of block b.
            unsafe {
                let row = |t: usize| vld1_s8(src.add((4 * g + t) * n + b * NR));
                let (a0, a1, a2, a3) = (row(0), row(1), row(2), row(3));
                let x = vreinterpretq_s16_s8(vcombine_s8(vzip1_s8(a0, a1), vzip2_s8(a0, a1)));
                let y = vreinterpretq_s16_s8(vcombine_s8(vzip1_s8(a2, a3), vzip2_s8(a2, a3)));
                let at = dst.add(b * NR * k_padded + g * 4 * NR);
                vst1q_s8(at, vreinterpretq_s8_s16(vzip1q_s16(x, y)));
                vst1q_s8(at.add(16), vreinterpretq_s8_s16(vzip2q_s16(x, y)));
            }
        }
    }
    pack_columns_bytes(packed, wt, full_blocks * NR, n, 0, k, n, k_padded);
    pack_columns_bytes(packed, wt, 0, full_blocks * NR, 4 * groups, k, n, k_padded);
}

/// The 8 channel sums (wrapping) of one packed block and its smallest
/// weight: per 16 bytes (4 channels x 4 depths) a pairwise widening add to
/// 16 bits and one into each channel's 32-bit lane.
pub(crate) fn block_sums(block: &[i8]) -> ([i32; NR], i8) {
    // SAFETY: neon is a compile-time target feature (cfg on this module);
    // every load is of a 16-byte half of a whole 32-byte group.
    unsafe {
        let mut sums = [vdupq_n_s32(0); 2];
        let mut min = vdupq_n_s8(i8::MAX);
        for group in block.chunks_exact(4 * NR) {
            for (h, sum) in sums.iter_mut().enumerate() {
                let v = vld1q_s8(group.as_ptr().add(16 * h));
                *sum = vpadalq_s16(*sum, vpaddlq_s8(v));
                min = vminq_s8(min, v);
            }
        }
        let mut out = [0i32; NR];
        vst1q_s32(out.as_mut_ptr(), sums[0]);
        vst1q_s32(out.as_mut_ptr().add(4), sums[1]);
        (out, vminvq_s8(min))
    }
}
