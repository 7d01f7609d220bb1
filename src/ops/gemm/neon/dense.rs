//! [`DenseRows`]: the panel kernels' rows as an `m x k` row-major matrix
//! (what `Gemm::run` and the batch matrix product multiply), copied into
//! the panel by the kernels' own `fill_panel` and `fill_pairs`.

use super::dot::fill_panel;
use super::mmla::fill_pairs;
use super::source::PanelRows;
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
