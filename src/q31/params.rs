//! The per-row lane math of Q31 softmax, shared by every backend.

use crate::fixedpoint::{exp_on_negative_values, FixedPoint, Lane};

/// One softmax row's maximum, and whether some difference `x - max` falls
/// below the format's range `-2^I` (only possible for `max >= 0`). Shared by
/// every backend.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Q31Row {
    /// Row maximum (raw).
    pub max: i32,
    /// `max - 2^31` when some element lies below it, i.e. its difference from
    /// the maximum does not fit an `i32`.
    pub threshold: Option<i32>,
}

impl Q31Row {
    pub(crate) fn new(min: i32, max: i32) -> Self {
        // x - max < i32::MIN  <=>  x < max - 2^31, which needs max >= 0.
        let t = max.wrapping_add(i32::MIN);
        Q31Row {
            max,
            threshold: (max >= 0 && min < t).then_some(t),
        }
    }

    /// `exp(x - max)` in Q0.31 for rows without a threshold (every difference
    /// fits the format).
    #[inline(always)]
    pub(crate) fn exp_in_range<L: Lane, const I: u32>(&self, x: L) -> L {
        exp_on_negative_values(FixedPoint::<L, I>::from_raw(
            x.saturating_sub(L::splat(self.max)),
        ))
        .raw()
    }

    /// `exp(x - max)` in Q0.31 for rows with a threshold `t = max - 2^31`: lanes
    /// below it have `x - max = -2^I + r` with `r = x - t` in `[-2^I, 0)`, so
    /// `exp(x - max) = exp(-2^I) * exp(r)`, one more exp and multiply. (For
    /// `I >= 5` the first factor is already 0; for small `I` it is not.)
    #[inline(always)]
    pub(crate) fn exp_wide<L: Lane, const I: u32>(&self, x: L, threshold: i32) -> L {
        let at_most_min = self.exp_in_range::<L, I>(x);
        let t = L::splat(threshold);
        let below = x.mask_if_less_than(t);
        let rest = L::select(below, x.sub(t), L::splat(0));
        let exp_rest = exp_on_negative_values(FixedPoint::<L, I>::from_raw(rest)).raw();
        L::select(
            below,
            at_most_min.saturating_rounding_doubling_high_mul(exp_rest),
            at_most_min,
        )
    }
}
