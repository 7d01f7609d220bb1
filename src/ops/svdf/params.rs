//! The prepared parameters of an SVDF: its sizes, zero points and the two
//! quantized multipliers (see the family's `mod.rs` for the formula).

use crate::quant::{QuantizedMultiplier, Rounding};

/// The sizes of an SVDF.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SvdfShape {
    /// Rows of the input, the state and the output.
    pub batch: usize,
    /// Features per input row.
    pub input_size: usize,
    /// Filters (rows of both weight tensors): `units * rank`.
    pub filters: usize,
    /// Time steps each filter remembers (columns of the time weights).
    pub memory: usize,
    /// Filters summed into each output unit.
    pub rank: usize,
}

impl SvdfShape {
    /// Output units per batch row (`filters / rank`).
    pub fn units(&self) -> usize {
        self.filters / self.rank
    }
}

/// What `Svdf::new` computes once: everything a step needs besides the
/// weights and the state.
#[derive(Clone, Debug)]
pub(crate) struct SvdfParams {
    pub shape: SvdfShape,
    pub input_zero_point: i32,
    pub state_zero_point: i32,
    pub output_zero_point: i32,
    /// `s_x * s_wf / s_state`: the feature dot product into state units.
    pub feature_to_state: QuantizedMultiplier,
    /// `s_state * s_wt / s_y`: the time dot products into output units.
    pub time_to_output: QuantizedMultiplier,
    pub rounding: Rounding,
}
