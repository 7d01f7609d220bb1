//! [`GemmParams`]: what `Gemm::new` prepares (the packed weights, biases,
//! per-channel multipliers and output range) and every backend reads, and
//! [`GemmView`], the borrowed form the NEON kernels run on (also built by
//! the batch matrix product over a right-hand side packed at run time), and
//! [`Tile`], the part of the output one kernel call computes.

use super::pack::{packed_index, NR};
use crate::error::{Error, Result};
use crate::ops::requant::ChannelMultipliers;
use crate::quant::{Requantization, Rounding};
use alloc::vec::Vec;
use core::ops::Range;

/// The part of a GEMM's `m x n` output one kernel call computes: input
/// rows `rows` (of the whole `m x k` input) by output channels `cols`,
/// stored through `stride`: element `(r, c)` at
/// `(r - rows.start) * stride + (c - cols.start)` of the tile's output
/// slice. `cols.start` is a multiple of [`NR`] (the packed column block),
/// `cols.end` too unless it is `n`; both ranges are non-empty and, when the
/// tile has more than one row, `stride >= cols.len()` (checked by
/// `Gemm::run_tile`). Every output element depends only on its row and
/// channel, so any split into tiles gives the same bytes as one tile.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Tile {
    pub(crate) rows: Range<usize>,
    pub(crate) cols: Range<usize>,
    pub(crate) stride: usize,
}

impl Tile {
    /// The whole `m x n` output, row after row (what `Gemm::run` computes).
    pub(crate) fn whole(m: usize, n: usize) -> Tile {
        Tile {
            rows: 0..m,
            cols: 0..n,
            stride: n,
        }
    }

    /// `Gemm::run_tile`'s checks of a tile of an `(n, k)` GEMM over an
    /// input of `input_len` bytes into an output of `output_len`, in its
    /// documented order: whole input rows ([`Error::RowLength`]), the
    /// ranges ([`Error::Tile`]), the stride and the output's extent
    /// ([`Error::Length`]).
    pub(crate) fn checked(
        op: &'static str,
        (n, k): (usize, usize),
        input_len: usize,
        output_len: usize,
        stride: usize,
        rows: Range<usize>,
        cols: Range<usize>,
    ) -> Result<Tile> {
        if !input_len.is_multiple_of(k) {
            return Err(Error::RowLength {
                op,
                len: input_len,
                row: k,
            });
        }
        let m = input_len / k;
        let off_grain = |v: usize| !v.is_multiple_of(NR) && v != n;
        let bad = |what, r: &Range<usize>, limit, grain| Error::Tile {
            op,
            what,
            start: r.start,
            end: r.end,
            limit,
            grain,
        };
        if rows.start > rows.end || rows.end > m {
            return Err(bad("rows", &rows, m, 1));
        }
        if cols.start > cols.end || cols.end > n || off_grain(cols.start) || off_grain(cols.end) {
            return Err(bad("columns", &cols, n, NR));
        }
        if rows.len() > 1 && stride < cols.len() {
            return Err(Error::Length {
                op,
                what: "output stride (at least the tile's width)",
                expected: cols.len(),
                got: stride,
            });
        }
        if !rows.is_empty() && !cols.is_empty() {
            let needed = (rows.len() - 1)
                .checked_mul(stride)
                .and_then(|v| v.checked_add(cols.len()));
            if needed.is_none_or(|needed| output_len < needed) {
                return Err(Error::Length {
                    op,
                    what: "output (at least the tile's extent)",
                    expected: needed.unwrap_or(usize::MAX),
                    got: output_len,
                });
            }
        }
        Ok(Tile { rows, cols, stride })
    }
}

/// A prepared int8 fully connected layer's data: the packed weights (layout
/// in [`super::pack`]), the bias folded with the input zero point, the
/// per-channel multipliers and the output range.
#[derive(Clone, Debug)]
pub(crate) struct GemmParams {
    pub(crate) n: usize,
    pub(crate) k: usize,
    /// The depth rounded up to a multiple of [`KC`](super::pack::KC).
    pub(crate) k_padded: usize,
    pub(crate) packed: Vec<i8>,
    /// `packed` with each block's channels paired as `smmla` takes them
    /// (`neon::mmla::pair_blocks`), built with the weights when the GEMM's
    /// path is `smmla` and its depth fits that kernel's panel, so that no
    /// call pairs them again; empty otherwise (the kernels then pair each
    /// block per group of row tiles).
    #[cfg_attr(not(target_arch = "aarch64"), allow(dead_code))]
    pub(crate) paired: Vec<i8>,
    /// TFLite's bias (zeros when there is none), length `n`.
    pub(crate) bias: Vec<i32>,
    /// `bias - input_zero_point * sum_k w`, padded with zeros to whole blocks.
    #[cfg_attr(not(target_arch = "aarch64"), allow(dead_code))]
    pub(crate) folded_bias: Vec<i32>,
    pub(crate) multipliers: ChannelMultipliers,
    /// Per block of 8 channels: (some channel shifts left, every channel
    /// shifts right by at least 1), for the NEON output stage.
    #[cfg_attr(not(target_arch = "aarch64"), allow(dead_code))]
    pub(crate) block_shifts: Vec<(bool, bool)>,
    /// Per block of 8 channels, the `sdot` whole-tile loop's bias and output
    /// stage as it loads them, made when the weights are set (single
    /// rounding on aarch64; empty otherwise): a block whose channels all
    /// shift right runs from these, not from the per-channel arrays.
    #[cfg_attr(not(target_arch = "aarch64"), allow(dead_code))]
    pub(crate) single_right: Vec<SingleRightBlock>,
    /// No weight is -128 (the widening NEON path may then add two products
    /// in 16 bits).
    #[cfg_attr(not(target_arch = "aarch64"), allow(dead_code))]
    pub(crate) weights_above_min: bool,
    pub(crate) input_zero_point: i32,
    pub(crate) output_zero_point: i32,
    pub(crate) act_min: i32,
    pub(crate) act_max: i32,
}

/// One block's bias and single-rounding output stage in the order the
/// `sdot` whole-tile loop loads them: the folded bias as `[b0, b1, b0, b1]`
/// (channels 0-3, 4-7, twice: two rows' first accumulators), the
/// multipliers (Q0.31), the negated right shifts, the output zero point as
/// 8 lanes and the activation bounds as 16 lanes each.
#[repr(C, align(16))]
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct SingleRightBlock {
    pub(crate) bias: [i32; 16],
    pub(crate) multiplier: [i32; 8],
    pub(crate) neg_right_shift: [i32; 8],
    pub(crate) zero_point: [i16; 8],
    pub(crate) min: [i8; 16],
    pub(crate) max: [i8; 16],
}

/// Room for [`GemmParams::single_right`] (filled when the weights are
/// set, not loaded and copied per block per call): a block each on aarch64
/// under single rounding, else none.
pub(crate) fn single_right_room(m: &ChannelMultipliers, blocks: usize) -> Vec<SingleRightBlock> {
    let single = matches!(
        m.requantization,
        Requantization::Multiplier(Rounding::Single)
    );
    if cfg!(all(target_arch = "aarch64", target_feature = "neon")) && single {
        alloc::vec![SingleRightBlock::default(); blocks]
    } else {
        Vec::new()
    }
}

impl GemmParams {
    /// Fills [`GemmParams::single_right`] (when `new` made room) from the
    /// folded bias, the multipliers, the zero point and the bounds: after
    /// every change of the weights.
    pub(crate) fn fill_single_right(&mut self) {
        let m = &self.multipliers;
        for (b, block) in self.single_right.iter_mut().enumerate() {
            let c = b * NR;
            let bias = &self.folded_bias[c..c + NR];
            block.bias[..8].copy_from_slice(bias);
            block.bias[8..].copy_from_slice(bias);
            block.multiplier.copy_from_slice(&m.multiplier[c..c + NR]);
            block
                .neg_right_shift
                .copy_from_slice(&m.neg_right_shift[c..c + NR]);
            block.zero_point = [self.output_zero_point as i16; 8];
            block.min = [self.act_min as i8; 16];
            block.max = [self.act_max as i8; 16];
        }
    }

    /// Weight `(c, d)` as packed (the original value for `c < n`, `d < k`).
    #[inline(always)]
    pub(crate) fn weight(&self, c: usize, d: usize) -> i8 {
        self.packed[packed_index(self.k_padded, c, d)]
    }

    /// The borrowed form the NEON kernels take (no row offsets).
    #[cfg_attr(not(target_arch = "aarch64"), allow(dead_code))]
    pub(crate) fn view(&self) -> GemmView<'_> {
        GemmView {
            k: self.k,
            k_padded: self.k_padded,
            packed: &self.packed,
            paired: &self.paired,
            folded_bias: &self.folded_bias,
            row_offsets: None,
            multipliers: &self.multipliers,
            block_shifts: &self.block_shifts,
            single_right: &self.single_right,
            weights_above_min: self.weights_above_min,
            output_zero_point: self.output_zero_point,
            act_min: self.act_min,
            act_max: self.act_max,
        }
    }
}

/// What the NEON GEMM kernels read: packed weights (whole blocks of 8
/// channels, depth `k_padded`), the int32 starting value of each channel's
/// accumulator (`folded_bias`, padded to whole blocks), optionally one more
/// int32 per input row added to all its channels (`row_offsets`, length
/// `m`: the right-hand zero point's term of a product of two asymmetric
/// operands), the multipliers and the output range.
#[derive(Clone, Copy, Debug)]
#[cfg_attr(not(target_arch = "aarch64"), allow(dead_code))]
pub(crate) struct GemmView<'a> {
    pub(crate) k: usize,
    pub(crate) k_padded: usize,
    pub(crate) packed: &'a [i8],
    /// `packed` paired for `smmla` (as long as `packed`), or empty.
    pub(crate) paired: &'a [i8],
    pub(crate) folded_bias: &'a [i32],
    pub(crate) row_offsets: Option<&'a [i32]>,
    pub(crate) multipliers: &'a ChannelMultipliers,
    pub(crate) block_shifts: &'a [(bool, bool)],
    /// [`GemmParams::single_right`] (empty: every block runs from the
    /// per-channel arrays).
    pub(crate) single_right: &'a [SingleRightBlock],
    pub(crate) weights_above_min: bool,
    pub(crate) output_zero_point: i32,
    pub(crate) act_min: i32,
    pub(crate) act_max: i32,
}
