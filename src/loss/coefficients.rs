//! The gradient of one position from its saved statistics: the
//! coefficients of `grad_c = a_target (p_c - [c = y]) + a_smooth p_c + b
//! w_c`, the lanes' row form, the target element without cancellation, the
//! one-hot limit of a `+inf` maximum, and the `f64` path for coefficients
//! outside `f32`'s normal range.

use super::rows::{self, GradRow};
use crate::f32::{exp_kernel, exp_neg_f64};

/// The coefficients of one position's gradient: `grad_c = a_target (p_c -
/// [c = y]) + a_smooth p_c + b w_c`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Coefficients {
    pub a_target: f64,
    pub a_smooth: f64,
    pub b: f64,
    pub max: f32,
    pub ln_sum: f64,
}

impl Coefficients {
    /// `1 / sum = e^-ln_sum` with `ln_sum`'s rounding to `f32` put back.
    pub(crate) fn inv_sum(&self) -> f64 {
        let hi = -(self.ln_sum as f32);
        let lo = -self.ln_sum - hi as f64;
        let e = exp_kernel(hi);
        e as f64 * (1.0 + lo)
    }

    pub(crate) fn row(&self) -> GradRow {
        GradRow {
            max: self.max,
            scale: ((self.a_target + self.a_smooth) * self.inv_sum()) as f32,
            b: self.b as f32,
        }
    }

    /// Whether a coefficient is outside `f32`'s normal range (an upstream
    /// gradient times a class weight beyond `f32::MAX`, or a smoothing
    /// coefficient below `f32::MIN_POSITIVE` that huge class weights
    /// multiply): the lanes would give `inf * 0 = NaN`, or the product of a
    /// subnormal's few bits, where the gradient is finite and exact. Such a
    /// position takes [`exact_row`](Self::exact_row).
    pub(crate) fn outside_f32_normals(&self) -> bool {
        let normal =
            |v: f64| v == 0.0 || (v.abs() >= f32::MIN_POSITIVE as f64 && (v as f32).is_finite());
        // `a_target + a_smooth` bounds both and is the row's `scale` before
        // the factor `1 / sum <= 1`; `b w_c` is at most `a_smooth`.
        !(normal(self.a_target.abs() + self.a_smooth.abs()) && normal(self.b))
    }

    /// One position's gradient in `f64`, rounded once to `f32` (`inf` only
    /// where the gradient itself is beyond `f32`).
    pub(crate) fn exact_row(
        &self,
        logit: impl Fn(usize) -> f32,
        classes: usize,
        target: usize,
        weights: Option<&[f32]>,
        mut set: impl FnMut(usize, f32),
    ) {
        for c in 0..classes {
            // z = ln p_c <= 0.
            let z = (logit(c) as f64 - self.max as f64) - self.ln_sum;
            let p = exp_neg_f64(z);
            // p - 1 without cancellation near p = 1 (|z| < 2^-14: the
            // series' next term is below 2^-56 relative).
            // 2^-14 (`powi` is not in `core`).
            const TWO_TO_MINUS_14: f64 = f64::from_bits((1023 - 14) << 52);
            let p_minus_one = if z > -TWO_TO_MINUS_14 {
                z * (1.0 + z * (0.5 + z / 6.0))
            } else {
                p - 1.0
            };
            let w = weights.map_or(1.0, |w| w[c] as f64);
            let target_term = if c == target {
                self.a_target * p_minus_one
            } else {
                self.a_target * p
            };
            set(c, (target_term + self.a_smooth * p + self.b * w) as f32);
        }
    }

    /// The gradient at the target class (see [`rows::grad_at_target`]).
    pub(crate) fn at_target(&self, x: f32, weight: f64) -> f32 {
        rows::grad_at_target(
            x,
            self.max,
            self.ln_sum,
            self.inv_sum() as f32,
            self.a_target as f32,
            self.a_smooth as f32,
            (self.b * weight) as f32,
        )
    }

    /// The gradient of a position whose maximum is `+inf`: softmax is
    /// one-hot there (NaN if two are infinite, as the forward loss).
    pub(crate) fn one_hot_row(
        &self,
        logit: impl Fn(usize) -> f32,
        classes: usize,
        target: usize,
        weights: Option<&[f32]>,
        mut set: impl FnMut(usize, f32),
    ) {
        let infinities = (0..classes).filter(|&c| logit(c) == f32::INFINITY).count();
        for c in 0..classes {
            let v = if infinities > 1 {
                f32::NAN
            } else {
                let p = if logit(c) == f32::INFINITY { 1.0 } else { 0.0 };
                let at_target = if c == target { 1.0 } else { 0.0 };
                let w = weights.map_or(1.0, |w| w[c] as f64);
                (self.a_target * (p - at_target) + self.a_smooth * p + self.b * w) as f32
            };
            set(c, v);
        }
    }
}
