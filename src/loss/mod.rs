//! Losses over `f32` logits, fused: softmax cross-entropy that never writes
//! the log-probabilities, its gradient from one saved value per position,
//! the negative log-likelihood of given log-probabilities, and the
//! log-probability of chosen classes.
//!
//! Semantics are PyTorch's `cross_entropy` / `nll_loss` (and ONNX's
//! `SoftmaxCrossEntropyLoss` / `NegativeLogLikelihoodLoss`, which have no
//! label smoothing): logits `[N, C]`, or `[N, C, d1, ...]` with the class
//! axis second (read in place: `inner = d1 * ...` positions per sample),
//! targets `[N]` or `[N, d1, ...]` of class indices; per position `i` with
//! target `y`, class weights `w` (1 without) and label smoothing `ε`:
//!
//! ```text
//! loss_i = (1 - ε) w_y (-ln p_y) + (ε / C) sum_c w_c (-ln p_c)
//! ```
//!
//! 0 at positions whose target is the ignore index. Reduction `None` gives
//! every `loss_i`, `Sum` their sum, `Mean` their sum divided by the sum of
//! `w_y` over the positions not ignored (NaN when there are none, as in
//! PyTorch).
//!
//! # How
//!
//! Per position one pass for the maximum and one for `sum e^(x - max)` (in
//! `f64`, by the `f32` module's `exp`): nothing per element is written.
//! `-ln p_y = (max - x_y) + ln sum`. The smoothing term adds the gap sum
//! `sum w_c (max - x_c)` to the second pass (a third, two-stream pass with
//! class weights). A row whose target is its only maximum and whose sum is
//! below 2 (a loss below `ln 2`) takes one more pass: the sum less the
//! maximal term, each term with `x - max` kept exact, and `ln(1 + rest)`
//! without forming `1 + rest`; so a confident row's loss of `1e-8` keeps its
//! digits (a plain `ln(sum)` gives 0 or `1.2e-7` there). With label
//! smoothing every such row (target maximal or not) takes it, as the
//! smoothing term holds `ln sum` by itself; where the rest is below about
//! `C 2^-96` (terms the `f32` `exp` flushes could matter) it is summed
//! again with `f64` exponentials.
//!
//! The gradient, from the saved `(max, ln sum)` ([`LogSumExp`]): one `exp`
//! per element, `grad_c = g [(1 - ε) w_y (p_c - [c = y]) + (ε / C)(W p_c -
//! w_c)]`, `W = sum w`, `g` the incoming gradient (divided by the weight sum
//! for `Mean`); at the target `p - 1` is formed as `expm1(x_y - max - ln
//! sum)`, without cancellation.
//!
//! # Special values
//!
//! A NaN anywhere in a position's logits makes its loss (and gradient) NaN;
//! so do two or more `+inf` (the limit depends on how they grow) and an
//! all-`-inf` row. One `+inf` follows the one-hot limit: loss 0 when it is
//! the target, `+inf` otherwise (with smoothing, `+inf` whenever another
//! class has a non-zero weight); gradient `g (1 - ε) w_y (onehot - [c = y])`
//! plus the smoothing part. A target logit of `-inf` gives `+inf`.
//!
//! # Accuracy (against `f64` math on the `f32` inputs)
//!
//! Asserted by `tests/cross_entropy.rs`: the per-position loss within a few
//! `f32` ulp, also for confident rows; the gradient within the `f32`
//! softmax's bound per element (absolute, relative to the largest term).
//! The backends agree bit for bit.

mod coefficients;
mod columns;
mod quantized;
mod rows;
mod stats;

use crate::backend::{unavailable, Backend};
use crate::error::{Error, Result};
use crate::f32::Lane;
use coefficients::Coefficients;
pub use quantized::QuantizedCrossEntropy;
use rows::GradRow;
use stats::{column_stats, row_stats, Stats, Want};

/// How the per-position losses are combined.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Reduction {
    /// Every position's loss (`[N]` or `[N, d1, ...]`).
    None,
    /// Their sum (one value).
    Sum,
    /// Their sum over the sum of the target weights of the positions not
    /// ignored (one value). PyTorch's default.
    #[default]
    Mean,
}

/// What the forward pass saves per position for the backward pass:
/// `lse = max + ln_sum`, kept in two parts so that `p = e^(x - max) /
/// e^ln_sum` is as accurate as the forward softmax.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct LogSumExp {
    /// `ln sum_c e^(x_c - max)`, in `f64`.
    pub ln_sum: f64,
    /// The position's maximum logit.
    pub max: f32,
}

impl LogSumExp {
    /// `ln sum_c e^(x_c)`, rounded to `f32`.
    pub fn value(&self) -> f32 {
        (self.max as f64 + self.ln_sum) as f32
    }
}

/// Softmax cross-entropy (and NLL) with PyTorch's options, prepared once.
///
/// ```
/// use qneon::loss::{CrossEntropy, Reduction};
/// let logits = [2.0f32, 0.5, -1.0, 0.0, 0.0, 3.0]; // [N = 2, C = 3]
/// let targets = [0i64, 2];
/// let ce = CrossEntropy::new(3)?.reduction(Reduction::Mean);
/// let mut loss = [0.0f32];
/// ce.forward(&logits, &targets, 1, &mut loss, None)?;
/// // Mean of 0.24131 (row 0) and 0.09492 (row 1).
/// assert!((loss[0] - 0.168_117).abs() < 1e-5);
/// # Ok::<(), qneon::Error>(())
/// ```
#[derive(Clone, Copy, Debug)]
pub struct CrossEntropy<'w> {
    classes: usize,
    reduction: Reduction,
    weights: Option<&'w [f32]>,
    /// `sum_c w_c` (`C` without weights), for the smoothing term.
    weight_total: f64,
    ignore_index: Option<i64>,
    label_smoothing: f32,
    backend: Backend,
}

const OP: &str = "cross_entropy";

impl<'w> CrossEntropy<'w> {
    /// Cross-entropy over `classes` classes with PyTorch's defaults:
    /// [`Reduction::Mean`], no class weights, ignore index -100, no label
    /// smoothing, the best backend. `classes` 0 is an error.
    pub fn new(classes: usize) -> Result<Self> {
        if classes == 0 {
            return Err(Error::ZeroDimension {
                op: OP,
                what: "classes",
            });
        }
        Ok(CrossEntropy {
            classes,
            reduction: Reduction::default(),
            weights: None,
            weight_total: classes as f64,
            ignore_index: Some(-100),
            label_smoothing: 0.0,
            backend: Backend::best(),
        })
    }

    /// The reduction.
    pub fn reduction(mut self, reduction: Reduction) -> Self {
        self.reduction = reduction;
        self
    }

    /// Class weights, one per class, each finite and `>= 0`.
    pub fn weights(mut self, weights: &'w [f32]) -> Result<Self> {
        if weights.len() != self.classes {
            return Err(Error::Length {
                op: OP,
                what: "weights",
                expected: self.classes,
                got: weights.len(),
            });
        }
        if let Some(&w) = weights.iter().find(|w| !(w.is_finite() && **w >= 0.0)) {
            return Err(Error::OutOfDomain {
                op: OP,
                what: "class weight",
                value: w as f64,
                requirement: "finite and >= 0",
            });
        }
        self.weight_total = weights.iter().map(|&w| w as f64).sum();
        self.weights = Some(weights);
        Ok(self)
    }

    /// The target value whose positions are skipped (loss 0, gradient 0, not
    /// counted by the mean); `None`: every target must be a class.
    pub fn ignore_index(mut self, ignore_index: Option<i64>) -> Self {
        self.ignore_index = ignore_index;
        self
    }

    /// Label smoothing `ε` in `[0, 1]`.
    pub fn label_smoothing(mut self, epsilon: f32) -> Result<Self> {
        if !(0.0..=1.0).contains(&epsilon) {
            return Err(Error::OutOfDomain {
                op: OP,
                what: "label smoothing",
                value: epsilon as f64,
                requirement: "in [0, 1]",
            });
        }
        self.label_smoothing = epsilon;
        Ok(self)
    }

    /// The backend `forward`, `backward` and `nll` run on.
    pub fn backend(mut self, backend: Backend) -> Result<Self> {
        if !backend.is_available() {
            return Err(unavailable(backend));
        }
        self.backend = backend;
        Ok(self)
    }

    /// The loss of `logits` (`[N, C, inner]`, `inner` 1 for `[N, C]`)
    /// against `targets` (`[N, inner]`): `out` has `N * inner` elements for
    /// [`Reduction::None`], else one. `saved`, if given (`N * inner`
    /// entries), receives each position's [`LogSumExp`] for
    /// [`backward`](Self::backward) (unspecified at ignored positions).
    pub fn forward(
        &self,
        logits: &[f32],
        targets: &[i64],
        inner: usize,
        out: &mut [f32],
        saved: Option<&mut [LogSumExp]>,
    ) -> Result<()> {
        self.check(logits.len(), targets, inner, out.len())?;
        if let Some(saved) = &saved {
            self.check_len("saved", targets.len(), saved.len())?;
        }
        match self.backend {
            Backend::Scalar => self.forward_lanes::<f32, 16, 4>(logits, targets, inner, out, saved),
            #[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
            Backend::Neon => self.forward_lanes::<core::arch::aarch64::float32x4_t, 4, 1>(
                logits, targets, inner, out, saved,
            ),
            #[allow(unreachable_patterns)]
            b => return Err(unavailable(b)),
        }
        Ok(())
    }

    /// The gradient of the loss with respect to `logits`, from the
    /// [`LogSumExp`]s [`forward`](Self::forward) saved for the same logits
    /// and targets: `grad` as long as `logits`, `grad_output` the incoming
    /// gradient (`N * inner` values for [`Reduction::None`], else one).
    /// One `exp` per element; 0 at ignored positions.
    pub fn backward(
        &self,
        logits: &[f32],
        targets: &[i64],
        inner: usize,
        saved: &[LogSumExp],
        grad_output: &[f32],
        grad: &mut [f32],
    ) -> Result<()> {
        self.check(logits.len(), targets, inner, grad_output.len())?;
        self.check_len("saved", targets.len(), saved.len())?;
        self.check_len("grad", logits.len(), grad.len())?;
        match self.backend {
            Backend::Scalar => {
                self.backward_lanes::<f32, 16>(logits, targets, inner, saved, grad_output, grad)
            }
            #[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
            Backend::Neon => self.backward_lanes::<core::arch::aarch64::float32x4_t, 4>(
                logits,
                targets,
                inner,
                saved,
                grad_output,
                grad,
            ),
            #[allow(unreachable_patterns)]
            b => return Err(unavailable(b)),
        }
        Ok(())
    }

    /// The negative log-likelihood of `log_probs` (`[N, C, inner]`, e.g. a
    /// log-softmax output) with the same options (label smoothing as
    /// PyTorch's cross-entropy applies it to the log-probabilities).
    pub fn nll(
        &self,
        log_probs: &[f32],
        targets: &[i64],
        inner: usize,
        out: &mut [f32],
    ) -> Result<()> {
        self.check(log_probs.len(), targets, inner, out.len())?;
        let classes = self.classes;
        let mut acc = Accumulator::new(self, out);
        for (n, slab) in log_probs.chunks_exact(classes * inner).enumerate() {
            for j in 0..inner {
                let position = n * inner + j;
                let Some(target) = self.class_of(targets[position]) else {
                    acc.ignored(position);
                    continue;
                };
                let lp = |c: usize| slab[c * inner + j] as f64;
                let smooth = if self.label_smoothing > 0.0 {
                    -(0..classes).map(|c| self.weight(c) * lp(c)).sum::<f64>()
                } else {
                    0.0
                };
                acc.add(position, self.weight(target), -lp(target), smooth);
            }
        }
        acc.finish();
        Ok(())
    }

    fn forward_lanes<L: Lane, const N: usize, const M: usize>(
        &self,
        logits: &[f32],
        targets: &[i64],
        inner: usize,
        out: &mut [f32],
        mut saved: Option<&mut [LogSumExp]>,
    ) {
        let want = Want {
            gaps: self.label_smoothing > 0.0,
            weights: self.weights,
        };
        let mut acc = Accumulator::new(self, out);
        let saved = &mut saved;
        let classes = self.classes;
        for (n, slab) in logits.chunks_exact(classes * inner).enumerate() {
            if inner == 1 {
                match self.class_of(targets[n]) {
                    Some(target) => {
                        let stats = row_stats::<L, N, M>(slab, target, want);
                        self.record(&mut acc, saved, n, target, &stats)
                    }
                    None => acc.ignored(n),
                }
                continue;
            }
            let base = n * inner;
            column_stats::<L>(
                slab,
                inner,
                |j| self.class_of(targets[base + j]),
                want,
                |j, stats| {
                    let target = self.class_of(targets[base + j]).unwrap_or_default();
                    self.record(&mut acc, saved, base + j, target, &stats)
                },
            );
            for j in 0..inner {
                if self.class_of(targets[base + j]).is_none() {
                    acc.ignored(base + j);
                }
            }
        }
        acc.finish();
    }

    /// One position's loss into `acc`, its [`LogSumExp`] into `saved`.
    fn record(
        &self,
        acc: &mut Accumulator<'_>,
        saved: &mut Option<&mut [LogSumExp]>,
        position: usize,
        target: usize,
        stats: &Stats,
    ) {
        if let Some(saved) = saved.as_deref_mut() {
            saved[position] = LogSumExp {
                ln_sum: stats.ln_sum,
                max: stats.max,
            };
        }
        let smooth = self.weight_total * stats.ln_sum + stats.gaps;
        acc.add(position, self.weight(target), stats.nll(), smooth);
    }

    fn backward_lanes<L: Lane, const N: usize>(
        &self,
        logits: &[f32],
        targets: &[i64],
        inner: usize,
        saved: &[LogSumExp],
        grad_output: &[f32],
        grad: &mut [f32],
    ) {
        let classes = self.classes;
        let scale = match self.reduction {
            Reduction::Mean => 1.0 / self.target_weight_sum(targets),
            _ => 1.0,
        };
        let eps = self.label_smoothing as f64;
        // Per position: the gradient's coefficients, or `None` if ignored.
        let coefficients = |position: usize| -> Option<(usize, Coefficients)> {
            let target = self.class_of(targets[position])?;
            let g = match self.reduction {
                Reduction::None => grad_output[position] as f64,
                _ => grad_output[0] as f64 * scale,
            };
            let s = saved[position];
            Some((
                target,
                Coefficients {
                    a_target: g * self.weight(target) * (1.0 - eps),
                    a_smooth: g * eps * self.weight_total / classes as f64,
                    b: -g * eps / classes as f64,
                    max: s.max,
                    ln_sum: s.ln_sum,
                },
            ))
        };
        for (n, (slab, grad)) in logits
            .chunks_exact(classes * inner)
            .zip(grad.chunks_exact_mut(classes * inner))
            .enumerate()
        {
            if inner == 1 {
                match coefficients(n) {
                    None => grad.fill(0.0),
                    Some((target, k)) => {
                        if k.max == f32::INFINITY {
                            k.one_hot_row(
                                |c| slab[c],
                                classes,
                                target,
                                self.weights,
                                |c, v| grad[c] = v,
                            );
                        } else if k.outside_f32_normals() {
                            k.exact_row(
                                |c| slab[c],
                                classes,
                                target,
                                self.weights,
                                |c, v| grad[c] = v,
                            );
                        } else {
                            rows::grad_row::<L>(slab, self.weights, k.row(), grad);
                            grad[target] = k.at_target(slab[target], self.weight(target));
                        }
                    }
                }
                continue;
            }
            let base = n * inner;
            let mut j = 0;
            while j < inner {
                let width = if j + L::WIDTH <= inner { L::WIDTH } else { 1 };
                let mut group = [GradRow::default(); columns::GROUP];
                for (l, row) in group.iter_mut().enumerate().take(width) {
                    *row = coefficients(base + j + l).map_or(GradRow::default(), |(_, k)| k.row());
                }
                if width == L::WIDTH {
                    columns::column_grads::<L>(slab, inner, j, self.weights, &group, grad);
                } else {
                    columns::column_grads::<f32>(slab, inner, j, self.weights, &group, grad);
                }
                // Fix-ups: ignored columns, one-hot rows, the target element.
                for l in 0..width {
                    let column = j + l;
                    let logit = |c: usize| slab[c * inner + column];
                    match coefficients(base + column) {
                        None => (0..classes).for_each(|c| grad[c * inner + column] = 0.0),
                        Some((target, k)) if k.max == f32::INFINITY => {
                            k.one_hot_row(logit, classes, target, self.weights, |c, v| {
                                grad[c * inner + column] = v
                            })
                        }
                        Some((target, k)) if k.outside_f32_normals() => {
                            k.exact_row(logit, classes, target, self.weights, |c, v| {
                                grad[c * inner + column] = v
                            })
                        }
                        Some((target, k)) => {
                            grad[target * inner + column] =
                                k.at_target(logit(target), self.weight(target))
                        }
                    }
                }
                j += width;
            }
        }
    }

    /// Checks the shapes shared by every call: `inner >= 1`, `targets` a
    /// whole number of samples, `logits` `C` values per target, `out` as the
    /// reduction makes it, every target a class or the ignore index.
    fn check(&self, logits: usize, targets: &[i64], inner: usize, out: usize) -> Result<()> {
        if inner == 0 {
            return Err(Error::ZeroDimension {
                op: OP,
                what: "inner (positions per sample)",
            });
        }
        // One sample's logits, `C * inner`, must be a size: the passes walk
        // the logits in steps of it (an empty batch too).
        if self.classes.checked_mul(inner).is_none() {
            return Err(Error::Unsupported {
                op: OP,
                dtype: "f32",
                reason: "classes * inner (the logits of one sample) overflows usize",
            });
        }
        if !targets.len().is_multiple_of(inner) {
            return Err(Error::RowLength {
                op: OP,
                len: targets.len(),
                row: inner,
            });
        }
        let expected = targets.len().saturating_mul(self.classes);
        self.check_len("logits", expected, logits)?;
        let expected_out = match self.reduction {
            Reduction::None => targets.len(),
            _ => 1,
        };
        self.check_len("out", expected_out, out)?;
        for (position, &t) in targets.iter().enumerate() {
            if Some(t) != self.ignore_index && !(0..self.classes as i64).contains(&t) {
                return Err(Error::Target {
                    op: OP,
                    position,
                    value: t,
                    classes: self.classes,
                });
            }
        }
        Ok(())
    }

    fn check_len(&self, what: &'static str, expected: usize, got: usize) -> Result<()> {
        if expected != got {
            return Err(Error::Length {
                op: OP,
                what,
                expected,
                got,
            });
        }
        Ok(())
    }

    /// The class of target `t`, `None` if it is the ignore index (checked
    /// targets are one or the other).
    fn class_of(&self, t: i64) -> Option<usize> {
        (Some(t) != self.ignore_index).then_some(t as usize)
    }

    fn weight(&self, class: usize) -> f64 {
        self.weights.map_or(1.0, |w| w[class] as f64)
    }

    fn target_weight_sum(&self, targets: &[i64]) -> f64 {
        targets
            .iter()
            .filter_map(|&t| self.class_of(t))
            .map(|c| self.weight(c))
            .sum()
    }
}

/// `ln p_target` at every position (log-softmax followed by a gather, without
/// the log-softmax tensor): `logits` `[N, C, inner]` with `C = classes`,
/// `targets` `[N, inner]` (each a class), `out` `[N, inner]`. Within a few
/// ulp of the exact value, as the loss (it is the negated unweighted loss).
pub fn target_log_probs(
    logits: &[f32],
    classes: usize,
    targets: &[i64],
    inner: usize,
    out: &mut [f32],
) -> Result<()> {
    target_log_probs_with(Backend::best(), logits, classes, targets, inner, out)
}

/// [`target_log_probs`] on a chosen backend.
pub fn target_log_probs_with(
    backend: Backend,
    logits: &[f32],
    classes: usize,
    targets: &[i64],
    inner: usize,
    out: &mut [f32],
) -> Result<()> {
    CrossEntropy::new(classes)?
        .reduction(Reduction::None)
        .ignore_index(None)
        .backend(backend)?
        .forward(logits, targets, inner, out, None)?;
    for v in out.iter_mut() {
        *v = -*v;
    }
    Ok(())
}

/// Collects the per-position losses as the reduction wants them: written
/// out (`None`), or summed in `f64` with the target weights (`Sum`, `Mean`).
struct Accumulator<'o> {
    reduction: Reduction,
    smoothing: f64,
    classes: f64,
    out: &'o mut [f32],
    total: f64,
    weight_sum: f64,
}

impl<'o> Accumulator<'o> {
    fn new(op: &CrossEntropy<'_>, out: &'o mut [f32]) -> Self {
        Accumulator {
            reduction: op.reduction,
            smoothing: op.label_smoothing as f64,
            classes: op.classes as f64,
            out,
            total: 0.0,
            weight_sum: 0.0,
        }
    }

    /// Position `position` with target weight `w`, `-ln p_target` `nll` and
    /// the smoothing sum `sum_c w_c (-ln p_c)`.
    fn add(&mut self, position: usize, w: f64, nll: f64, smooth: f64) {
        let eps = self.smoothing;
        let mut loss = w * nll;
        if eps > 0.0 {
            loss = (1.0 - eps) * loss + eps / self.classes * smooth;
        }
        match self.reduction {
            Reduction::None => self.out[position] = loss as f32,
            _ => {
                self.total += loss;
                self.weight_sum += w;
            }
        }
    }

    fn ignored(&mut self, position: usize) {
        if self.reduction == Reduction::None {
            self.out[position] = 0.0;
        }
    }

    fn finish(self) {
        match self.reduction {
            Reduction::None => {}
            Reduction::Sum => self.out[0] = self.total as f32,
            Reduction::Mean => self.out[0] = (self.total / self.weight_sum) as f32,
        }
    }
}
