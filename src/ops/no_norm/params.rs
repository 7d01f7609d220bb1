//! [`NoNormParams`]: what `NoNorm::new` prepares (per-channel gammas, betas
//! and multipliers, padded to whole groups of 16 channels) and its lane math
//! ([`NoNormParams::lanes`], every backend's reference).

use crate::ops::requant::{
    output_stage, requantize_lanes, ChannelLane, ChannelMultiplier, ChannelMultipliers,
};
use alloc::vec::Vec;

/// Vector kernels read per-channel parameters 16 channels at a time.
pub(crate) const NO_NORM_PAD: usize = 16;

/// A prepared NoNorm's data.
#[derive(Clone, Debug)]
pub(crate) struct NoNormParams {
    /// `gamma_q` widened, padded with zeros to a multiple of 16 channels.
    pub(crate) gamma: Vec<i32>,
    /// `beta_q`, padded likewise.
    pub(crate) beta: Vec<i32>,
    pub(crate) multipliers: ChannelMultipliers,
    pub(crate) channels: usize,
    pub(crate) input_zero_point: i32,
    pub(crate) output_zero_point: i32,
    pub(crate) act_min: i32,
    pub(crate) act_max: i32,
}

impl NoNormParams {
    /// Channels per row.
    pub(crate) fn channels(&self) -> usize {
        self.channels
    }

    /// The whole per-element computation for `L::LANES` channels, shared by
    /// every backend; the output within `[act_min, act_max]`.
    #[inline(always)]
    pub(crate) fn lanes<L: ChannelLane>(
        &self,
        x: L,
        gamma: L,
        beta: L,
        m: &ChannelMultiplier<L>,
    ) -> L {
        let acc = x
            .sub(L::splat(self.input_zero_point))
            .wrapping_mul(gamma)
            .add(beta);
        output_stage(
            requantize_lanes(acc, m),
            self.output_zero_point,
            self.act_min,
            self.act_max,
        )
    }
}
