//! The `sdot` path for inputs deeper than the panel ([`super::dot::PANEL_DEPTH`]):
//! 8 x 8 tiles of int32 accumulators over the input rows read in place,
//! the weights of each step of 16 depth bytes held in registers while the
//! rows stream past them. A leaf of [`super::dot`], which calls
//! [`gemm_dot_rows`].

use super::{initial_acc, row_pointers, store_tile, tail_rows, tile_origin, BlockParams};
use crate::ops::gemm::pack::{KC, NR};
use crate::ops::gemm::params::{GemmView, Tile};
use core::arch::aarch64::*;

/// `sdot` by element: `acc[i] += dot(w[4i..4i + 4], x[4 LANE..4 LANE + 4])`.
#[inline(always)]
fn sdot_lane<const LANE: i32>(acc: int32x4_t, w: int8x16_t, x: int8x16_t) -> int32x4_t {
    let mut acc = acc;
    // SAFETY: `sdot` on vector registers has no memory, stack or flag effects.
    // It is only reached from `gemm_dot`, which requires dotprod (the
    // intrinsic is not stable yet, hence the asm).
    unsafe {
        core::arch::asm!(
            "sdot {acc:v}.4s, {w:v}.16b, {x:v}.4b[{lane}]",
            acc = inout(vreg) acc,
            w = in(vreg) w,
            x = in(vreg) x,
            lane = const LANE,
            options(pure, nomem, nostack, preserves_flags),
        );
    }
    acc
}

/// One step of 16 depth bytes for two rows (`x0`, `x1`: 16 bytes of each)
/// with the 8 weight vectors of the step (`w[2g + j]`: depth group `g`,
/// channels `4j..4j + 4`): four independent accumulator chains.
#[inline(always)]
fn dot_row_pair(
    acc: &mut [[int32x4_t; 2]; 8],
    r: usize,
    w: &[int8x16_t; 8],
    x0: int8x16_t,
    x1: int8x16_t,
) {
    macro_rules! group {
        ($g:literal) => {
            acc[r][0] = sdot_lane::<$g>(acc[r][0], w[2 * $g], x0);
            acc[r][1] = sdot_lane::<$g>(acc[r][1], w[2 * $g + 1], x0);
            acc[r + 1][0] = sdot_lane::<$g>(acc[r + 1][0], w[2 * $g], x1);
            acc[r + 1][1] = sdot_lane::<$g>(acc[r + 1][1], w[2 * $g + 1], x1);
        };
    }
    group!(0);
    group!(1);
    group!(2);
    group!(3);
}

/// `chunks` steps of 16 depth bytes on the 8 x 8 tile. The step's weights
/// (8 vectors) stay in registers while the rows stream past them: 16
/// accumulators + 8 weights + 2 rows fit the 32 registers without spills.
///
/// # Safety
/// Each row pointer must be valid for reading `16 chunks` bytes and `w` for
/// `128 chunks` bytes.
#[inline(always)]
unsafe fn dot_chunks(
    acc: &mut [[int32x4_t; 2]; 8],
    rows: &[*const i8; 8],
    chunks: usize,
    w: *const i8,
) {
    let mut w = w;
    for i in 0..chunks {
        // SAFETY: i < chunks, so 16 bytes at i * 16 are within each row and
        // 128 bytes at w within the block (the caller's guarantee).
        unsafe {
            let wv: [int8x16_t; 8] = core::array::from_fn(|j| vld1q_s8(w.add(16 * j)));
            // Written out (not a loop) so the accumulators stay in registers.
            let x = |r: usize| vld1q_s8(rows[r].add(i * KC));
            dot_row_pair(acc, 0, &wv, x(0), x(1));
            dot_row_pair(acc, 2, &wv, x(2), x(3));
            dot_row_pair(acc, 4, &wv, x(4), x(5));
            dot_row_pair(acc, 6, &wv, x(6), x(7));
            w = w.add(8 * 16);
        }
    }
}

/// The `sdot` path reading the input rows in place (deep inputs).
///
/// # Safety
/// As [`super::dot::gemm_dot`].
#[target_feature(enable = "dotprod")]
#[inline(never)]
pub(super) unsafe fn gemm_dot_rows<const AT_ORIGIN: bool>(
    g: &GemmView<'_>,
    input: &[i8],
    output: &mut [i8],
    t: &Tile,
) {
    const MR: usize = 8;
    let k = g.k;
    let whole = k / KC;
    let block_bytes = NR * g.k_padded;
    let (first_row, first_block, end_block) = tile_origin::<AT_ORIGIN>(t);
    let (rows_len, width, stride) = (
        t.rows.end - first_row,
        t.cols.end - first_block * NR,
        t.stride,
    );
    let weights = &g.packed[first_block * block_bytes..end_block * block_bytes];
    for (i, w) in weights.chunks_exact(block_bytes).enumerate() {
        let p = BlockParams::load(g, first_block + i);
        let out_col = i * NR;
        let nr = NR.min(width - out_col);
        let mut out_row = 0;
        while out_row < rows_len {
            let (row, mr) = (first_row + out_row, MR.min(rows_len - out_row));
            if mr < MR - 1 {
                // The last rows, fewer than 7: pieces of 4, 2 and 1 rows
                // (as `PanelTiles::tail`).
                let mut r0 = 0;
                for piece in [4, 2, 1] {
                    if mr & piece != 0 {
                        let (at, row) = (out_row + r0, row + r0);
                        let cols = (out_col, nr);
                        // SAFETY: rows row..row + piece <= row + mr lie
                        // within the input; the caller's guarantees.
                        unsafe {
                            let io = (input, &mut *output, stride);
                            match piece {
                                4 => dot_rows_piece::<4, 4>(g, w, &p, io, row, at, cols),
                                2 => dot_rows_piece::<2, 2>(g, w, &p, io, row, at, cols),
                                _ => dot_rows_piece::<1, 2>(g, w, &p, io, row, at, cols),
                            }
                        }
                        r0 += piece;
                    }
                }
                break;
            }
            let rows = row_pointers::<MR>(input, k, row, mr);
            // The depth tail is copied before the accumulators are live, so
            // that they need not be saved around the copies.
            let mut buf = [[0i8; KC]; MR];
            if !k.is_multiple_of(KC) {
                tail_rows(input, k, row, mr, &mut buf);
            }
            let mut acc = initial_acc::<MR>(p.bias, g.row_offsets, row, mr);
            // SAFETY: each row pointer starts a k-byte input row, and
            // whole * 16 <= k; the block holds k_padded / 16 >= whole steps of
            // 128 bytes.
            unsafe { dot_chunks(&mut acc, &rows, whole, w.as_ptr()) };
            if !k.is_multiple_of(KC) {
                let rows: [*const i8; MR] = core::array::from_fn(|r| buf[r].as_ptr());
                // SAFETY: each buffer row holds 16 bytes; the block's last
                // 128 bytes start at whole * 128 (k_padded = (whole + 1) * 16).
                unsafe { dot_chunks(&mut acc, &rows, 1, w.as_ptr().add(whole * 4 * 32)) };
            }
            store_tile::<MR>(&acc, &p, output, stride, out_row, mr, out_col, nr);
            out_row += MR;
        }
    }
}

/// Rows `row..row + R` of the deep input, read in place (R of 4, 2, 1: the
/// last rows of [`gemm_dot_rows`]), on one weight block `w`: `R` rows of
/// `sdot`s instead of a whole 8-row tile's, stored as an `A`-row tile
/// (`A >= R`, even) of which the `R` rows are written, at output row
/// `out_row`, columns `cols` (first, count).
///
/// # Safety
/// The CPU must have dotprod (inlined into `gemm_dot_rows` only); rows
/// `row..row + R` lie within the `k`-deep `input`; `w` holds the block
/// (`8 k_padded` bytes); the output rows and columns lie within the tile.
#[inline(always)]
unsafe fn dot_rows_piece<const R: usize, const A: usize>(
    g: &GemmView<'_>,
    w: &[i8],
    p: &BlockParams,
    (input, output, stride): (&[i8], &mut [i8], usize),
    row: usize,
    out_row: usize,
    (out_col, nr): (usize, usize),
) {
    debug_assert!(R <= A && A.is_multiple_of(2) && w.len() >= NR * g.k_padded);
    let k = g.k;
    let whole = k / KC;
    let rows = row_pointers::<A>(input, k, row, R);
    // The depth tail is copied before the accumulators are live.
    let mut buf = [[0i8; KC]; A];
    if !k.is_multiple_of(KC) {
        tail_rows(input, k, row, R, &mut buf);
    }
    let mut acc = initial_acc::<A>(p.bias, g.row_offsets, row, R);
    // SAFETY: each row pointer starts a k-byte input row, and whole * 16
    // <= k; the block holds k_padded / 16 >= whole steps of 128 bytes.
    unsafe { dot_chunks_rows::<R, A>(&mut acc, &rows, whole, w.as_ptr()) };
    if !k.is_multiple_of(KC) {
        let rows: [*const i8; A] = core::array::from_fn(|r| buf[r].as_ptr());
        // SAFETY: each buffer row holds 16 bytes; the block's last 128
        // bytes start at whole * 128 (k_padded = (whole + 1) * 16).
        unsafe { dot_chunks_rows::<R, A>(&mut acc, &rows, 1, w.as_ptr().add(whole * 128)) };
    }
    store_tile::<A>(&acc, p, output, stride, out_row, R, out_col, nr);
}

/// [`dot_chunks`] on the first `R` of `A` rows (`R <= A`): per step the 8
/// weight vectors, then each row's 16 bytes against them, 8 `sdot`s a row.
///
/// # Safety
/// As [`dot_chunks`], for rows `0..R`.
#[inline(always)]
unsafe fn dot_chunks_rows<const R: usize, const A: usize>(
    acc: &mut [[int32x4_t; 2]; A],
    rows: &[*const i8; A],
    chunks: usize,
    w: *const i8,
) {
    let mut w = w;
    for i in 0..chunks {
        // SAFETY: as `dot_chunks`.
        unsafe {
            let wv: [int8x16_t; 8] = core::array::from_fn(|j| vld1q_s8(w.add(16 * j)));
            for (a, row) in acc.iter_mut().zip(rows).take(R) {
                let x = vld1q_s8(row.add(i * KC));
                macro_rules! group {
                    ($g:literal) => {
                        a[0] = sdot_lane::<$g>(a[0], wv[2 * $g], x);
                        a[1] = sdot_lane::<$g>(a[1], wv[2 * $g + 1], x);
                    };
                }
                group!(0);
                group!(1);
                group!(2);
                group!(3);
            }
            w = w.add(8 * 16);
        }
    }
}
