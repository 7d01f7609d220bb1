//! [`DenseRows`]: the panel kernels' rows as an `m x k` row-major matrix
//! (what `Gemm::run` and the batch matrix product multiply), copied into
//! the panel by [`fill_panel`] (`sdot`) and [`fill_pairs`] (`smmla`).

use super::source::PanelRows;
use super::{row_pointers, tail_vectors};
use crate::ops::gemm::pack::KC;
use core::arch::aarch64::*;
use core::mem::MaybeUninit;

/// The rows of an `m x k` row-major matrix (`input`).
pub(crate) struct DenseRows<'a> {
    pub(crate) input: &'a [i8],
    pub(crate) k: usize,
}

impl PanelRows for DenseRows<'_> {
    #[inline(always)]
    fn fill_dot(&self, panel: &mut [MaybeUninit<i8>], row: usize, mr: usize) {
        fill_panel(panel, self.input, self.k, row, mr)
    }

    #[inline(always)]
    fn fill_pairs(&self, panel: &mut [MaybeUninit<i8>], row: usize, mr: usize) {
        fill_pairs(panel, self.input, self.k, row, mr)
    }

    #[inline(always)]
    fn dense(&self) -> Option<&[i8]> {
        Some(self.input)
    }
}

/// Copies rows `row..row + 8` (rows past `row + mr` repeat the last one) of
/// the `k`-deep input into the first `8 k_padded` bytes of `panel`
/// (`k_padded`: `k` rounded up to 16), interleaved by steps of 16 depth bytes:
/// step `i` of tile row `r` at `128 i + 16 r`, the depth past `k` zero. One
/// step of all 8 rows is then 128 contiguous bytes, loaded with two `ld1`s of
/// four registers. Every one of those `8 k_padded` bytes is written, so the
/// panel need not start initialized (its kernels read no byte past them).
#[inline(always)]
fn fill_panel(panel: &mut [MaybeUninit<i8>], input: &[i8], k: usize, row: usize, mr: usize) {
    let whole = k / KC;
    // One check for every store below: the panel holds 8 k_padded bytes.
    let panel = &mut panel[..8 * k.div_ceil(KC) * KC];
    let rows = row_pointers::<8>(input, k, row, mr);
    let dst = panel.as_mut_ptr().cast::<i8>();
    for i in 0..whole {
        // SAFETY: each row pointer starts a k-byte input row and
        // 16 (i + 1) <= k; the panel holds 8 k_padded >= 128 (i + 1) bytes
        // (sliced above).
        unsafe {
            let x: [int8x16_t; 8] = core::array::from_fn(|r| vld1q_s8(rows[r].add(i * KC)));
            let at = dst.add(i * 8 * KC);
            vst1q_s8_x4(at, int8x16x4_t(x[0], x[1], x[2], x[3]));
            vst1q_s8_x4(at.add(64), int8x16x4_t(x[4], x[5], x[6], x[7]));
        }
    }
    if !k.is_multiple_of(KC) {
        let x = tail_vectors::<8>(input, k, row, mr);
        // SAFETY: the panel holds 8 k_padded = 128 (whole + 1) bytes
        // (sliced above).
        unsafe {
            let at = dst.add(whole * 8 * KC);
            vst1q_s8_x4(at, int8x16x4_t(x[0], x[1], x[2], x[3]));
            vst1q_s8_x4(at.add(64), int8x16x4_t(x[4], x[5], x[6], x[7]));
        }
    }
}

/// Copies rows `row..row + 8` (rows past `row + mr` repeat the last one) of
/// the `k`-deep input into the first `8 k_padded` bytes of `panel`
/// (`k_padded`: `k` rounded up to 16) as row pairs: depth bytes `16 i` to
/// `16 i + 16` are the 128 bytes at `128 i`, first 64 bytes of depths `16 i`
/// to `16 i + 8` for pairs `(0, 1), (2, 3), (4, 5), (6, 7)` (16 bytes each,
/// the even row first), then 64 bytes of depths `16 i + 8` to `16 i + 16`
/// alike. The depth past `k` is zero. Every one of those `8 k_padded` bytes
/// is written, so the panel need not start initialized.
#[inline(always)]
fn fill_pairs(panel: &mut [MaybeUninit<i8>], input: &[i8], k: usize, row: usize, mr: usize) {
    let whole = k / KC;
    // One check for every store below: the panel holds 8 k_padded bytes.
    let panel = &mut panel[..8 * k.div_ceil(KC) * KC];
    let rows = row_pointers::<8>(input, k, row, mr);
    let store = |at: usize, x: &[int8x16_t; 8], panel: &mut [MaybeUninit<i8>]| {
        // SAFETY: neon is a compile-time target feature (cfg on this
        // module); the caller keeps at + 128 <= 8 k_padded = panel.len().
        unsafe {
            let pair = |p: usize, high: bool| {
                let (a, b) = (
                    vreinterpretq_s64_s8(x[2 * p]),
                    vreinterpretq_s64_s8(x[2 * p + 1]),
                );
                vreinterpretq_s8_s64(if high {
                    vzip2q_s64(a, b)
                } else {
                    vzip1q_s64(a, b)
                })
            };
            let dst = panel.as_mut_ptr().cast::<i8>().add(at);
            let low = int8x16x4_t(
                pair(0, false),
                pair(1, false),
                pair(2, false),
                pair(3, false),
            );
            let high = int8x16x4_t(pair(0, true), pair(1, true), pair(2, true), pair(3, true));
            vst1q_s8_x4(dst, low);
            vst1q_s8_x4(dst.add(64), high);
        }
    };
    for i in 0..whole {
        // SAFETY: each row pointer starts a k-byte input row and
        // 16 (i + 1) <= k.
        let x: [int8x16_t; 8] = core::array::from_fn(|r| unsafe { vld1q_s8(rows[r].add(i * KC)) });
        // 128 (i + 1) <= 8 k_padded.
        store(i * 8 * KC, &x, panel);
    }
    if !k.is_multiple_of(KC) {
        let x = tail_vectors::<8>(input, k, row, mr);
        store(whole * 8 * KC, &x, panel);
    }
}
