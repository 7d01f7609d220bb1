//! The statistics of one position (a row of `[N, C]` logits, or a column of
//! `[N, C, d...]`): its maximum, `ln sum e^(x - max)` and the gap sum the
//! label smoothing needs, with the special rows (`+inf`, NaN) settled once
//! here for every loss.

use super::columns::{column_sums, ColumnSums, GROUP};
use super::rows::{rest_below_max, rest_below_max_strided, sums, weighted_gaps};
use crate::f32::{exp_neg_f64, ln_1p_f64, ln_f64, row_max, Lane};

/// Below this row sum the target may be the only maximal element with a
/// small loss `ln(1 + rest)`: the rest is then summed again without the
/// maximal term and with `x - max` kept to `f64` precision (a second pass
/// over those rows only). Above it, the loss is at least `ln 2` and the
/// first pass's sum is accurate to a few `f32` ulp of it. Label smoothing
/// takes the second pass below it whatever the target: its term weighs the
/// maximal class's `-ln p = ln sum` alone.
const CONFIDENT_SUM: f64 = 2.0;

/// `rest` as given, unless it is so small that the terms the `f32` `exp`
/// flushed to 0 (each below `2^-126`, at most `classes` of them) could
/// weigh more than `2^-30` of it: then the sum again with `f64`
/// exponentials of the `f64` differences. Only the rows whose loss is below
/// about `classes * 2^-96` take it.
fn unflushed(rest: f64, logit: impl Fn(usize) -> f32, classes: usize, max: f32) -> f64 {
    // 2^-96 (`powi` is not in `core`).
    const TWO_TO_MINUS_96: f64 = f64::from_bits((1023 - 96) << 52);
    if rest > classes as f64 * TWO_TO_MINUS_96 {
        return rest;
    }
    (0..classes)
        .map(logit)
        .filter(|&x| x < max)
        .map(|x| exp_neg_f64(x as f64 - max as f64))
        .sum()
}

/// One position's statistics.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Stats {
    /// The maximum logit (`+inf` when one logit is `+inf`; NaN for a NaN row).
    pub max: f32,
    /// `ln sum e^(x - max)` (0 for a row with one `+inf`).
    pub ln_sum: f64,
    /// `sum w_c (lse - x_c) - W ln_sum = sum w_c (max - x_c)`: the label
    /// smoothing's sum over the classes less its `ln_sum` part (weights 1
    /// without class weights); only when asked for.
    pub gaps: f64,
    /// The target's logit.
    pub target: f32,
}

impl Stats {
    /// `-ln p_target = (max - x_target) + ln_sum`.
    pub fn nll(&self) -> f64 {
        if self.max == f32::INFINITY {
            // One-hot limit: 0 at the infinity, +inf elsewhere.
            return if self.target == f32::INFINITY {
                self.ln_sum
            } else {
                f64::INFINITY
            };
        }
        (self.max as f64 - self.target as f64) + self.ln_sum
    }
}

/// What the statistics must include.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Want<'w> {
    /// The gap sum (label smoothing).
    pub gaps: bool,
    /// Class weights for the gap sum.
    pub weights: Option<&'w [f32]>,
}

/// The statistics of a row whose maximum is `+inf`: the limit of softmax is
/// one-hot at a single `+inf` (two or more make the row NaN: the limit
/// depends on how they tend to infinity).
fn infinite_row(
    logit: impl Fn(usize) -> f32,
    classes: usize,
    target: usize,
    want: Want<'_>,
) -> Stats {
    let infinities = (0..classes).filter(|&c| logit(c) == f32::INFINITY).count();
    if infinities > 1 {
        return Stats {
            max: f32::NAN,
            ln_sum: f64::NAN,
            gaps: f64::NAN,
            target: logit(target),
        };
    }
    // -ln p_c is 0 at the infinity and +inf elsewhere; a zero weight keeps
    // its class out of the smoothing sum.
    let gaps = if want.gaps
        && (0..classes)
            .any(|c| logit(c) != f32::INFINITY && want.weights.is_none_or(|w| w[c] != 0.0))
    {
        f64::INFINITY
    } else {
        0.0
    };
    Stats {
        max: f32::INFINITY,
        ln_sum: 0.0,
        gaps,
        target: logit(target),
    }
}

/// The statistics of a contiguous row `x` with target class `target`.
#[inline(always)]
pub(crate) fn row_stats<L: Lane, const N: usize, const M: usize>(
    x: &[f32],
    target: usize,
    want: Want<'_>,
) -> Stats {
    let max = row_max::<L, N>(x);
    if max == f32::INFINITY {
        return infinite_row(|c| x[c], x.len(), target, want);
    }
    let (sum, mut gaps) = if want.gaps && want.weights.is_none() {
        sums::<L, N, M, true>(x, max)
    } else {
        sums::<L, N, M, false>(x, max)
    };
    if let (true, Some(w)) = (want.gaps, want.weights) {
        gaps = weighted_gaps::<L, N, M>(x, w, max);
    }
    let ln_sum = if (x[target] == max || want.gaps) && sum < CONFIDENT_SUM {
        let rest = rest_below_max::<L, N, M>(x, max);
        ln_1p_f64(unflushed(rest, |c| x[c], x.len(), max))
    } else {
        ln_f64(sum)
    };
    Stats {
        max,
        ln_sum,
        gaps,
        target: x[target],
    }
}

/// The statistics of the columns of one sample's slab (`classes` rows of
/// `inner`), lanes across columns; `targets[j]` is column `j`'s target
/// class, or `None` to skip it. Calls `f(j, stats)` for each other column.
#[inline(always)]
pub(crate) fn column_stats<L: Lane>(
    slab: &[f32],
    inner: usize,
    targets: impl Fn(usize) -> Option<usize>,
    want: Want<'_>,
    mut f: impl FnMut(usize, Stats),
) {
    let mut group = [ColumnSums::default(); GROUP];
    let mut j = 0;
    while j < inner {
        // Whole groups in the backend's lanes, the last columns one by one
        // (the same per-column arithmetic).
        let width = if j + L::WIDTH <= inner {
            column_sums::<L>(slab, inner, j, want.weights, want.gaps, &mut group);
            L::WIDTH
        } else {
            column_sums::<f32>(slab, inner, j, want.weights, want.gaps, &mut group);
            1
        };
        for (l, sums) in group.iter().enumerate().take(width) {
            let column = j + l;
            let Some(target) = targets(column) else {
                continue;
            };
            let column_slice = &slab[column..];
            let logit = |c: usize| column_slice[c * inner];
            let classes = slab.len() / inner;
            let stats = if sums.max == f32::INFINITY {
                infinite_row(logit, classes, target, want)
            } else {
                let ln_sum = if (logit(target) == sums.max || want.gaps) && sums.sum < CONFIDENT_SUM
                {
                    let rest = rest_below_max_strided(column_slice, inner, classes, sums.max);
                    ln_1p_f64(unflushed(rest, logit, classes, sums.max))
                } else {
                    ln_f64(sums.sum)
                };
                Stats {
                    max: sums.max,
                    ln_sum,
                    gaps: sums.gaps,
                    target: logit(target),
                }
            };
            f(column, stats);
        }
        j += width;
    }
}
