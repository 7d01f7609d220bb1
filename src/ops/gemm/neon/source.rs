//! Where the panel kernels (`sdot`, `smmla`) take their input rows from.
//!
//! Both kernels copy 8 input rows at a time into a stack panel before they
//! multiply them; the copy is the only place that reads the input. A
//! [`PanelRows`] is that copy: `DenseRows` (in `dense.rs`) reads the rows of an `m x k`
//! matrix (what `Gemm::run` multiplies); a convolution builds each row
//! from its image instead (a pixel's window: no im2col copy in between),
//! storing it with [`PanelLayout::store_row`].

use core::arch::aarch64::*;
use core::mem::MaybeUninit;

/// Stores one row's 16-byte step into a tile's panel.
pub(crate) trait PanelLayout {
    /// Stores `v`, depth bytes `16 step..16 step + 16` of tile row `r`
    /// (`r < 8`), into `panel`, which holds the tile's `8 k_padded` bytes.
    ///
    /// # Safety
    /// `panel` must be valid for writing `128 (step + 1)` bytes.
    unsafe fn store_row(panel: *mut i8, step: usize, r: usize, v: int8x16_t);
}

/// The `sdot` panel: step `i` of tile row `r` at `128 i + 16 r`.
pub(crate) struct DotLayout;

impl PanelLayout for DotLayout {
    #[inline(always)]
    unsafe fn store_row(panel: *mut i8, step: usize, r: usize, v: int8x16_t) {
        // SAFETY: 128 step + 16 r + 16 <= 128 (step + 1) (the caller's
        // guarantee with r < 8).
        unsafe { vst1q_s8(panel.add(128 * step + 16 * r), v) }
    }
}

/// The `smmla` panel of row pairs: depths `16 i..16 i + 8` of row `r` at
/// `128 i + 16 (r / 2) + 8 (r % 2)`, depths `16 i + 8..16 i + 16` 64 bytes on.
pub(crate) struct PairLayout;

impl PanelLayout for PairLayout {
    #[inline(always)]
    unsafe fn store_row(panel: *mut i8, step: usize, r: usize, v: int8x16_t) {
        // SAFETY: both 8-byte stores end at or before 128 step + 64 + 56 +
        // 8 = 128 (step + 1) (the caller's guarantee with r < 8).
        unsafe {
            let at = panel.add(128 * step + 16 * (r / 2) + 8 * (r % 2));
            vst1_s8(at, vget_low_s8(v));
            vst1_s8(at.add(64), vget_high_s8(v));
        }
    }
}

/// A source of a GEMM's input rows for the panel kernels: depth `k`
/// (the GEMM's), rows numbered from 0.
pub(crate) trait PanelRows {
    /// Writes rows `row..row + 8` (rows past `row + mr` repeat row `row +
    /// mr - 1`; `1 <= mr <= 8`) into the first `8 k_padded` bytes of
    /// `panel` in the `sdot` layout ([`DotLayout`]), the depth past `k`
    /// zero. Every one of those bytes is written (the panel need not start
    /// initialized).
    fn fill_dot(&self, panel: &mut [MaybeUninit<i8>], row: usize, mr: usize);

    /// [`fill_dot`](Self::fill_dot) in the `smmla` layout of row pairs
    /// ([`PairLayout`]).
    fn fill_pairs(&self, panel: &mut [MaybeUninit<i8>], row: usize, mr: usize);

    /// The rows as an `m x k` row-major matrix in memory, if they are one:
    /// the `sdot` kernel then reads a depth of 8, and depths past its
    /// panel, in place.
    fn dense(&self) -> Option<&[i8]>;
}
