//! [`GemmParams`]: what `Gemm::new` prepares (the packed weights, biases,
//! per-channel multipliers and output range) and every backend reads.

use super::pack::packed_index;
use crate::ops::requant::ChannelMultipliers;
use alloc::vec::Vec;

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
    /// No weight is -128 (the widening NEON path may then add two products
    /// in 16 bits).
    #[cfg_attr(not(target_arch = "aarch64"), allow(dead_code))]
    pub(crate) weights_above_min: bool,
    pub(crate) input_zero_point: i32,
    pub(crate) output_zero_point: i32,
    pub(crate) act_min: i32,
    pub(crate) act_max: i32,
}

impl GemmParams {
    /// Weight `(c, d)` as packed (the original value for `c < n`, `d < k`).
    #[inline(always)]
    pub(crate) fn weight(&self, c: usize, d: usize) -> i8 {
        self.packed[packed_index(self.k_padded, c, d)]
    }
}
