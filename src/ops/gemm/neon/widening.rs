//! The widening path of the NEON GEMM (plain NEON): `smull`/`smull2` to 16
//! bits and `sadalp` into 32 bits on a 4 x 8 tile.

use super::{initial_acc, row_pointers, store_tile, tail_rows, tile_origin, BlockParams};
use crate::ops::gemm::pack::{KC, NR};
use crate::ops::gemm::params::{GemmView, Tile};
use core::arch::aarch64::*;

/// One depth group of 4 (lane `G` of each row vector) on the 4 x 8 widening
/// tile: `acc[r][q]` holds channels `2q, 2q + 1`, two partial sums each.
///
/// # Safety
/// `w` must be valid for reading 32 bytes.
#[inline(always)]
unsafe fn widening_group<const G: i32>(
    acc: &mut [[int32x4_t; 4]; 4],
    x: &[int8x16_t; 4],
    w: *const i8,
) {
    // SAFETY: 32 readable bytes at w (the caller's guarantee); the rest is
    // register arithmetic (neon is a compile-time target feature).
    unsafe {
        let (w0, w1) = (vld1q_s8(w), vld1q_s8(w.add(16)));
        for r in 0..4 {
            // The row's 4 depth bytes of this group in every 32-bit lane.
            let xd = vreinterpretq_s8_s32(vdupq_laneq_s32::<G>(vreinterpretq_s32_s8(x[r])));
            let xl = vget_low_s8(xd);
            acc[r][0] = vpadalq_s16(acc[r][0], vmull_s8(vget_low_s8(w0), xl));
            acc[r][1] = vpadalq_s16(acc[r][1], vmull_high_s8(w0, xd));
            acc[r][2] = vpadalq_s16(acc[r][2], vmull_s8(vget_low_s8(w1), xl));
            acc[r][3] = vpadalq_s16(acc[r][3], vmull_high_s8(w1, xd));
        }
    }
}

/// Two depth groups (lanes `G` and `G + 1` of each row vector) on the 4 x 8
/// widening tile, for weights without -128: `smull` + `smlal` add two
/// products in 16 bits before `sadalp` widens them. Each product is at most
/// 128 * 127 = 16,256 in magnitude, so the sum of two fits (32,512 < 32,767);
/// with a -128 weight two products of 16,384 could overflow, hence the
/// one-group path for those weights.
///
/// # Safety
/// `w` must be valid for reading 64 bytes.
#[inline(always)]
unsafe fn widening_group_pair<const G: i32, const G1: i32>(
    acc: &mut [[int32x4_t; 4]; 4],
    x: &[int8x16_t; 4],
    w: *const i8,
) {
    // SAFETY: 64 readable bytes at w (the caller's guarantee); the rest is
    // register arithmetic (neon is a compile-time target feature).
    unsafe {
        let (a0, a1) = (vld1q_s8(w), vld1q_s8(w.add(16)));
        let (b0, b1) = (vld1q_s8(w.add(32)), vld1q_s8(w.add(48)));
        for r in 0..4 {
            let xa = vreinterpretq_s8_s32(vdupq_laneq_s32::<G>(vreinterpretq_s32_s8(x[r])));
            let xb = vreinterpretq_s8_s32(vdupq_laneq_s32::<G1>(vreinterpretq_s32_s8(x[r])));
            let (xal, xbl) = (vget_low_s8(xa), vget_low_s8(xb));
            let p0 = vmlal_s8(vmull_s8(vget_low_s8(a0), xal), vget_low_s8(b0), xbl);
            let p1 = vmlal_high_s8(vmull_high_s8(a0, xa), b0, xb);
            let p2 = vmlal_s8(vmull_s8(vget_low_s8(a1), xal), vget_low_s8(b1), xbl);
            let p3 = vmlal_high_s8(vmull_high_s8(a1, xa), b1, xb);
            acc[r][0] = vpadalq_s16(acc[r][0], p0);
            acc[r][1] = vpadalq_s16(acc[r][1], p1);
            acc[r][2] = vpadalq_s16(acc[r][2], p2);
            acc[r][3] = vpadalq_s16(acc[r][3], p3);
        }
    }
}

/// `chunks` steps of 16 depth bytes on the 4 x 8 widening tile; `PAIRS` when
/// no weight is -128 (see [`widening_group_pair`]).
///
/// # Safety
/// As [`dot_chunks`].
#[inline(always)]
unsafe fn widening_chunks<const PAIRS: bool>(
    acc: &mut [[int32x4_t; 4]; 4],
    rows: &[*const i8; 4],
    chunks: usize,
    w: *const i8,
) {
    let mut w = w;
    for i in 0..chunks {
        // SAFETY: as in `dot_chunks`.
        unsafe {
            let x: [int8x16_t; 4] = core::array::from_fn(|r| vld1q_s8(rows[r].add(i * KC)));
            if PAIRS {
                widening_group_pair::<0, 1>(acc, &x, w);
                widening_group_pair::<2, 3>(acc, &x, w.add(64));
            } else {
                widening_group::<0>(acc, &x, w);
                widening_group::<1>(acc, &x, w.add(32));
                widening_group::<2>(acc, &x, w.add(64));
                widening_group::<3>(acc, &x, w.add(96));
            }
            w = w.add(4 * 32);
        }
    }
}

/// The widening multiply-accumulate path (plain NEON) on the tile `t` (the
/// whole output when `Gemm::run` calls it): `input` holds the whole `m x k`
/// input, `rows.end <= m`, and `output` the tile, as `Gemm::run_tile` checks
/// (see [`Tile`]); with `AT_ORIGIN` the tile starts at row 0 and channel 0
/// (see `tile_origin`).
#[inline(never)]
pub(crate) fn gemm_widening<const AT_ORIGIN: bool>(
    g: &GemmView<'_>,
    input: &[i8],
    output: &mut [i8],
    t: &Tile,
) {
    if g.weights_above_min {
        gemm_widening_with::<true, AT_ORIGIN>(g, input, output, t)
    } else {
        gemm_widening_with::<false, AT_ORIGIN>(g, input, output, t)
    }
}

#[inline(always)]
fn gemm_widening_with<const PAIRS: bool, const AT_ORIGIN: bool>(
    g: &GemmView<'_>,
    input: &[i8],
    output: &mut [i8],
    t: &Tile,
) {
    const MR: usize = 4;
    debug_assert!(input.len() >= t.rows.end * g.k && !t.rows.is_empty());
    debug_assert!(output.len() >= (t.rows.len() - 1) * t.stride + t.cols.len());
    let k = g.k;
    let whole = k / KC;
    let block_bytes = NR * g.k_padded;
    // The tile in locals (positions in the output are tile-relative: rows
    // from 0, channels from 0 at the first block).
    let (first_row, first_block, end_block) = tile_origin::<AT_ORIGIN>(t);
    let (rows_len, width, stride) = (
        t.rows.end - first_row,
        t.cols.end - first_block * NR,
        t.stride,
    );
    let weights = &g.packed[first_block * block_bytes..end_block * block_bytes];
    // SAFETY: neon is a compile-time target feature (cfg on this module).
    let zero = unsafe { vdupq_n_s32(0) };
    for (i, w) in weights.chunks_exact(block_bytes).enumerate() {
        let p = BlockParams::load(g, first_block + i);
        let out_col = i * NR;
        let nr = NR.min(width - out_col);
        let mut out_row = 0;
        while out_row < rows_len {
            let (row, mr) = (first_row + out_row, MR.min(rows_len - out_row));
            let rows = row_pointers::<MR>(input, k, row, mr);
            let mut buf = [[0i8; KC]; MR];
            if !k.is_multiple_of(KC) {
                tail_rows(input, k, row, mr, &mut buf);
            }
            let mut acc = [[zero; 4]; MR];
            // SAFETY: as in `gemm_dot`.
            unsafe { widening_chunks::<PAIRS>(&mut acc, &rows, whole, w.as_ptr()) };
            if !k.is_multiple_of(KC) {
                let rows: [*const i8; MR] = core::array::from_fn(|r| buf[r].as_ptr());
                // SAFETY: as in `gemm_dot`.
                unsafe {
                    widening_chunks::<PAIRS>(&mut acc, &rows, 1, w.as_ptr().add(whole * 4 * 32))
                };
            }
            let start = initial_acc::<MR>(p.bias, g.row_offsets, row, mr);
            let sums: [[int32x4_t; 2]; MR] = core::array::from_fn(|r| {
                // SAFETY: neon is a compile-time target feature (cfg on this module).
                unsafe {
                    [
                        vaddq_s32(vpaddq_s32(acc[r][0], acc[r][1]), start[r][0]),
                        vaddq_s32(vpaddq_s32(acc[r][2], acc[r][3]), start[r][1]),
                    ]
                }
            });
            store_tile::<MR>(&sums, &p, output, stride, out_row, mr, out_col, nr);
            out_row += MR;
        }
    }
}
