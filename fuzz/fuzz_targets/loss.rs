//! `qneon::loss`: `CrossEntropy` (every reduction, class weights, ignore
//! index, label smoothing, `[N, C, inner]` layouts) forward, backward and
//! `nll`, `target_log_probs`, and the quantized (int8/uint8) forward, on
//! any `f32` logits, any targets and any lengths, every backend.
//!
//! Checked when a call succeeds or fails:
//! * a call is an error exactly when an argument is bad (a length, a
//!   target that is neither a class nor the ignore index, a negative or
//!   non-finite weight, a smoothing outside `[0, 1]`);
//! * every backend gives the scalar backend's result and bits;
//! * on finite logits of moderate size, each loss is within the documented
//!   4 ulp of an `f64` oracle of PyTorch's definition (also the quantized
//!   forward, on the dequantized logits), the gradient matches the
//!   oracle's, `nll` of `f32::log_softmax` matches the fused forward within
//!   log-softmax's bound, and `target_log_probs` is the negated forward.

#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use qneon::loss::{self, CrossEntropy, LogSumExp, Reduction};
use qneon::{Backend, QuantParams};
use qneon_fuzz::*;

/// A logit.
#[derive(Arbitrary, Clone, Copy, Debug)]
enum Logit {
    /// `v / 16`: the range real logits live in.
    Small(i16),
    /// Any bit pattern.
    Bits(u32),
    Special(u8),
}

const SPECIALS: [f32; 10] = [
    0.0,
    f32::INFINITY,
    f32::NEG_INFINITY,
    f32::NAN,
    f32::MAX,
    f32::MIN,
    1.0e4,
    -1.0e4,
    1.0e-45,
    88.0,
];

impl Logit {
    fn get(self) -> f32 {
        match self {
            Logit::Small(v) => v as f32 / 16.0,
            Logit::Bits(b) => f32::from_bits(b),
            Logit::Special(i) => SPECIALS[i as usize % SPECIALS.len()],
        }
    }
}

/// A target.
#[derive(Arbitrary, Clone, Copy, Debug)]
enum Target {
    /// `class % C`.
    Class(u8),
    /// The ignore index in force (or -100 when there is none).
    Ignore,
    /// Any value (usually out of range: an error).
    Raw(i64),
}

#[derive(Arbitrary, Clone, Copy, Debug)]
enum ReductionChoice {
    None,
    Sum,
    Mean,
}

#[derive(Arbitrary, Debug)]
struct Case {
    /// `1 + classes % 40`, or from 240 on `256 + 37 (classes - 240)`
    /// (256..=811: the quantized loss's histogram rows).
    classes: u8,
    /// `inner % 4` (0: a length error unless there are no positions).
    inner: u8,
    reduction: ReductionChoice,
    weights: Option<Vec<Logit>>,
    /// `None`: PyTorch's -100; `Some(None)`: no ignore index.
    ignore_index: Option<Option<i8>>,
    /// `smoothing / 128`, sometimes outside `[0, 1]`.
    smoothing: Option<i16>,
    targets: Vec<Target>,
    logits: Vec<Logit>,
    /// Extra logits (a length error) or fewer.
    logits_delta: Option<i8>,
    out_delta: Option<i8>,
    quantized: Option<(bool, Quant, Vec<u8>)>,
}

fuzz_target!(|case: Case| check(&case));

fn same_bits(a: &f32, b: &f32) -> bool {
    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
}

fn ulp(v: f64) -> f64 {
    let a = (v.abs() as f32).max(f32::MIN_POSITIVE);
    (f32::from_bits(a.to_bits() + 1) - a) as f64
}

/// `-ln p_c` for every class of one position, in f64.
fn neg_log_probs(x: &[f64]) -> Vec<f64> {
    let m = x.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    let ties = x.iter().filter(|&&v| v == m).count() as f64;
    let rest: f64 = x.iter().filter(|&&v| v < m).map(|&v| (v - m).exp()).sum();
    let ln_sum = ties.ln() + (rest / ties).ln_1p();
    x.iter().map(|&v| (m - v) + ln_sum).collect()
}

struct Setup {
    classes: usize,
    inner: usize,
    reduction: Reduction,
    weights: Option<Vec<f32>>,
    ignore: Option<i64>,
    eps: f32,
    targets: Vec<i64>,
}

impl Setup {
    fn weight(&self, c: usize) -> f64 {
        self.weights.as_ref().map_or(1.0, |w| w[c] as f64)
    }

    fn class_of(&self, t: i64) -> Option<usize> {
        (Some(t) != self.ignore).then_some(t as usize)
    }

    /// Whether every argument but the lengths is valid.
    fn options_valid(&self) -> bool {
        let weights_ok = self.weights.as_ref().is_none_or(|w| {
            w.len() == self.classes && w.iter().all(|w| w.is_finite() && *w >= 0.0)
        });
        (0.0..=1.0).contains(&self.eps) && weights_ok
    }

    fn target_weight_sum(&self) -> f64 {
        self.targets
            .iter()
            .filter_map(|&t| self.class_of(t))
            .map(|y| self.weight(y))
            .sum()
    }

    fn targets_valid(&self) -> bool {
        self.targets
            .iter()
            .all(|&t| Some(t) == self.ignore || (0..self.classes as i64).contains(&t))
    }

    /// The per-position losses and weights of the oracle, then reduced.
    fn oracle(&self, logits: &dyn Fn(usize) -> f64) -> Vec<f64> {
        let (classes, inner) = (self.classes, self.inner);
        let eps = self.eps as f64;
        let total: Vec<(f64, f64)> = self
            .targets
            .iter()
            .enumerate()
            .map(|(i, &t)| {
                let Some(y) = self.class_of(t) else {
                    return (0.0, 0.0);
                };
                let (n, j) = (i / inner, i % inner);
                let x: Vec<f64> = (0..classes)
                    .map(|c| logits((n * classes + c) * inner + j))
                    .collect();
                let nlp = neg_log_probs(&x);
                let smooth: f64 = (0..classes).map(|c| self.weight(c) * nlp[c]).sum();
                let loss = (1.0 - eps) * self.weight(y) * nlp[y] + eps / classes as f64 * smooth;
                (loss, self.weight(y))
            })
            .collect();
        match self.reduction {
            Reduction::None => total.iter().map(|p| p.0).collect(),
            Reduction::Sum => vec![total.iter().map(|p| p.0).sum()],
            Reduction::Mean => {
                vec![
                    total.iter().map(|p| p.0).sum::<f64>() / total.iter().map(|p| p.1).sum::<f64>(),
                ]
            }
        }
    }

    fn op(&self) -> qneon::Result<CrossEntropy<'_>> {
        let mut ce = CrossEntropy::new(self.classes)?
            .reduction(self.reduction)
            .ignore_index(self.ignore)
            .label_smoothing(self.eps)?;
        if let Some(w) = &self.weights {
            ce = ce.weights(w)?;
        }
        Ok(ce)
    }
}

fn check(case: &Case) {
    let classes = match case.classes {
        c @ 240.. => 256 + 37 * (c as usize - 240),
        c => 1 + c as usize % 40,
    };
    let inner = case.inner as usize % 4;
    let ignore = match case.ignore_index {
        None => Some(-100),
        Some(v) => v.map(i64::from),
    };
    let targets: Vec<i64> = case
        .targets
        .iter()
        .take(12)
        .map(|t| match *t {
            Target::Class(c) => (c as usize % classes) as i64,
            Target::Ignore => ignore.unwrap_or(-100),
            Target::Raw(v) => v,
        })
        .collect();
    // `targets` is `[N, inner]`: whole groups of `inner`.
    let mut targets = targets;
    targets.truncate(targets.len() - targets.len() % inner.max(1));
    let setup = Setup {
        classes,
        inner,
        reduction: match case.reduction {
            ReductionChoice::None => Reduction::None,
            ReductionChoice::Sum => Reduction::Sum,
            ReductionChoice::Mean => Reduction::Mean,
        },
        weights: case
            .weights
            .as_ref()
            .map(|w| w.iter().take(41).map(|v| v.get().abs()).collect()),
        ignore,
        eps: case.smoothing.map_or(0.0, |s| s as f32 / 128.0),
        targets,
    };
    let op = setup.op();
    assert_eq!(op.is_ok(), setup.options_valid(), "options: {op:?}");
    let Ok(op) = op else {
        return;
    };
    let positions = setup.targets.len();
    let logits_len = (positions * classes) as isize + case.logits_delta.unwrap_or(0) as isize;
    let logits: Vec<f32> = (0..logits_len.max(0) as usize)
        .map(|i| {
            case.logits
                .get(i % case.logits.len().max(1))
                .map_or(0.0, |v| v.get())
        })
        .collect();
    let out_len_ok = match setup.reduction {
        Reduction::None => positions,
        _ => 1,
    };
    let out_len = (out_len_ok as isize + case.out_delta.unwrap_or(0) as isize).max(0) as usize;
    let lengths_ok = inner > 0 && logits.len() == positions * classes && out_len == out_len_ok;
    let valid = lengths_ok && setup.targets_valid();

    // Forward on every backend, with the saved statistics.
    let (result, out) =
        on_every_backend(out_len, f32::from_bits(0x7fc0_dead), same_bits, |b, out| {
            let op = match b {
                Some(b) => op.backend(b)?,
                None => op,
            };
            op.forward(&logits, &setup.targets, inner, out, None)
        });
    assert_eq!(result.is_ok(), valid, "forward: {result:?}");
    if result.is_err() {
        return;
    }
    let mut saved = vec![LogSumExp::default(); positions];
    op.backend(Backend::Scalar)
        .unwrap()
        .forward(
            &logits,
            &setup.targets,
            inner,
            &mut vec![0.0; out_len],
            Some(&mut saved),
        )
        .unwrap();

    let moderate = logits.iter().all(|v| v.abs() <= 1.0e4);
    if moderate {
        let exact = setup.oracle(&|i| logits[i] as f64);
        for (i, (&ours, &e)) in out.iter().zip(&exact).enumerate() {
            if setup.reduction == Reduction::Mean && setup.target_weight_sum() == 0.0 {
                // A sum over a weight sum of 0: NaN or inf, depending on
                // whether terms below f32's range (the documented absolute
                // 2^-126 each) sum to 0 or not.
                assert!(!ours.is_finite(), "mean over zero weight: {ours}");
                continue;
            }
            if e.is_nan() {
                assert!(ours.is_nan(), "loss {i}: {ours} where the oracle is NaN");
                continue;
            }
            if (e as f32).is_infinite() {
                assert_eq!(ours, e as f32, "loss {i}: beyond f32, exact {e:e}");
                continue;
            }
            let err = (ours as f64 - e).abs();
            assert!(
                err <= 4.0 * ulp(e)
                    || (e.abs() < f32::MIN_POSITIVE as f64 && err < f32::MIN_POSITIVE as f64),
                "loss {i}: {ours:e} vs exact {e:e} ({} ulp), logits {logits:?}",
                err / ulp(e)
            );
        }
        check_backward(&setup, op, &logits, &saved);
        check_nll(&setup, op, &logits, &out);
    }
    if setup.ignore.is_none() && setup.eps == 0.0 && setup.weights.is_none() {
        let mut lp = vec![0.0; positions];
        loss::target_log_probs_with(
            Backend::Scalar,
            &logits,
            classes,
            &setup.targets,
            inner,
            &mut lp,
        )
        .unwrap();
        if setup.reduction == Reduction::None {
            for (a, b) in lp.iter().zip(&out) {
                assert!(same_bits(a, &-*b), "target_log_probs {a} vs -loss {b}");
            }
        }
    }
    if let Some((unsigned, q, data)) = &case.quantized {
        if *unsigned {
            check_quantized::<u8>(&setup, op, q.get::<u8>(), data, out_len);
        } else {
            check_quantized::<i8>(&setup, op, q.get::<i8>(), data, out_len);
        }
    }
}

/// The gradient against the oracle's `(1 - ε) w_y (p_c - [c = y]) + ε/C (W
/// p_c - w_c)`, scaled by the upstream gradient (over the weight sum for the
/// mean).
fn check_backward(setup: &Setup, op: CrossEntropy<'_>, logits: &[f32], saved: &[LogSumExp]) {
    let (classes, inner) = (setup.classes, setup.inner);
    let positions = setup.targets.len();
    let upstream: Vec<f32> = match setup.reduction {
        Reduction::None => (0..positions).map(|i| 1.0 + i as f32 / 4.0).collect(),
        _ => vec![0.75],
    };
    let (result, grad) = on_every_backend(
        logits.len(),
        f32::from_bits(0x7fc0_beef),
        same_bits,
        |b, g| {
            let op = match b {
                Some(b) => op.backend(b)?,
                None => op,
            };
            op.backward(logits, &setup.targets, inner, saved, &upstream, g)
        },
    );
    result.expect("backward with forward's statistics");
    let eps = setup.eps as f64;
    let total_w: f64 = (0..classes).map(|c| setup.weight(c)).sum();
    let mean_w: f64 = setup
        .targets
        .iter()
        .filter_map(|&t| setup.class_of(t))
        .map(|y| setup.weight(y))
        .sum();
    for (i, &t) in setup.targets.iter().enumerate() {
        let (n, j) = (i / inner, i % inner);
        let at = |c: usize| (n * classes + c) * inner + j;
        let Some(y) = setup.class_of(t) else {
            for c in 0..classes {
                assert_eq!(grad[at(c)], 0.0, "gradient at an ignored position");
            }
            continue;
        };
        let g = match setup.reduction {
            Reduction::None => upstream[i] as f64,
            Reduction::Sum => upstream[0] as f64,
            Reduction::Mean => upstream[0] as f64 / mean_w,
        };
        if !g.is_finite() {
            continue;
        }
        let x: Vec<f64> = (0..classes).map(|c| logits[at(c)] as f64).collect();
        let nlp = neg_log_probs(&x);
        // The largest coefficient a term can carry: the error budget scales
        // with it (a p_c near 1 minus one cancels).
        let scale =
            g.abs() * ((1.0 - eps) * setup.weight(y) + eps / classes as f64 * 2.0 * total_w);
        for c in 0..classes {
            let p = (-nlp[c]).exp();
            let one = if c == y { 1.0 } else { 0.0 };
            let exact = g
                * ((1.0 - eps) * setup.weight(y) * (p - one)
                    + eps / classes as f64 * (total_w * p - setup.weight(c)));
            if (exact as f32).is_infinite() {
                assert_eq!(
                    grad[at(c)],
                    exact as f32,
                    "gradient beyond f32 at {i} class {c}"
                );
                continue;
            }
            let err = (grad[at(c)] as f64 - exact).abs();
            assert!(
                err <= 8.0 * ulp(exact) + scale * 2f64.powi(-21),
                "gradient at position {i} class {c}: {} vs exact {exact:e}",
                grad[at(c)]
            );
        }
    }
}

/// `nll` of `f32::log_softmax`'s log-probabilities equals the fused loss
/// within the error log-softmax documents per log-probability (`ulp(y) +
/// 2^-22 (1 + ln sum)`, `ln sum <= ln C`), carried through the loss's
/// weighted sums, plus the fused loss's own 4 ulp.
fn check_nll(setup: &Setup, op: CrossEntropy<'_>, logits: &[f32], fused: &[f32]) {
    let (classes, inner) = (setup.classes, setup.inner);
    // (A mean over a weight sum of 0 is NaN or inf, checked above.)
    if inner != 1 || setup.reduction == Reduction::Mean && setup.target_weight_sum() == 0.0 {
        return;
    }
    let mut lp = vec![0.0; logits.len()];
    qneon::f32::log_softmax(logits, &mut lp, classes).unwrap();
    let mut out = vec![0.0; fused.len()];
    let result = op.nll(&lp, &setup.targets, inner, &mut out);
    result.expect("nll of log-probabilities where the forward succeeded");
    let eps = setup.eps as f64;
    let per_class = |v: f32| ulp(v as f64) + 2f64.powi(-22) * (1.0 + (classes as f64).ln());
    // Each position's error budget, before the reduction.
    let budgets: Vec<(f64, f64)> = setup
        .targets
        .iter()
        .enumerate()
        .map(|(n, &t)| {
            let Some(y) = setup.class_of(t) else {
                return (0.0, 0.0);
            };
            let row = &lp[n * classes..(n + 1) * classes];
            let smooth: f64 = (0..classes)
                .map(|c| setup.weight(c) * per_class(row[c]))
                .sum();
            let budget =
                (1.0 - eps) * setup.weight(y) * per_class(row[y]) + eps / classes as f64 * smooth;
            (budget, setup.weight(y))
        })
        .collect();
    let reduced: Vec<f64> = match setup.reduction {
        Reduction::None => budgets.iter().map(|b| b.0).collect(),
        Reduction::Sum => vec![budgets.iter().map(|b| b.0).sum()],
        Reduction::Mean => vec![
            budgets.iter().map(|b| b.0).sum::<f64>() / budgets.iter().map(|b| b.1).sum::<f64>(),
        ],
    };
    for ((a, b), budget) in out.iter().zip(fused).zip(&reduced) {
        if b.is_nan() || budget.is_nan() || a == b {
            continue;
        }
        if a.is_infinite() || b.is_infinite() {
            // One rounded past f32::MAX: the other must be near it.
            let finite = if a.is_infinite() { b } else { a };
            assert!(finite.abs() > f32::MAX / 2.0, "nll {a:e} vs fused {b:e}");
            continue;
        }
        let bound = budget * (1.0 + 2f64.powi(-20)) + 4.0 * ulp(*b as f64) + 4.0 * ulp(*a as f64);
        let err = (*a as f64 - *b as f64).abs();
        assert!(err <= bound, "nll {a:e} vs fused {b:e} (bound {bound:e})");
    }
}

/// The quantized forward: an error exactly when the float forward of the
/// same shape is (or the quantization is bad), otherwise within 4 ulp of
/// the oracle of the dequantized logits.
fn check_quantized<T: qneon::QuantElem>(
    setup: &Setup,
    op: CrossEntropy<'_>,
    q: QuantParams,
    data: &[u8],
    out_len: usize,
) {
    let (classes, inner) = (setup.classes, setup.inner);
    let qce = op.quantized::<T>(q);
    let q_ok = q.scale.is_finite() && q.scale > 0.0 && (T::MIN..=T::MAX).contains(&q.zero_point);
    assert_eq!(qce.is_ok(), q_ok, "quantized({q:?}): {qce:?}");
    let Ok(qce) = qce else {
        return;
    };
    let len = setup.targets.len() * classes;
    let bytes: Vec<u8> = (0..len)
        .map(|i| data.get(i % data.len().max(1)).copied().unwrap_or(0))
        .collect();
    let logits: Vec<T> = elements::<T>(&bytes);
    let mut out = vec![f32::NAN; out_len];
    qce.forward(&logits, &setup.targets, inner, &mut out)
        .expect("quantized forward where the float forward succeeded");
    let real = |i: usize| (logits[i].to_i32() - q.zero_point) as f64 * q.scale as f64;
    // The oracle's differences of real logits stay exact in f64 beyond
    // f32's range; the loss itself may round to `inf`.
    let exact = setup.oracle(&real);
    for (i, (&ours, &e)) in out.iter().zip(&exact).enumerate() {
        if setup.reduction == Reduction::Mean && setup.target_weight_sum() == 0.0 {
            assert!(!ours.is_finite(), "quantized mean over zero weight: {ours}");
            continue;
        }
        if e.is_nan() {
            assert!(
                ours.is_nan(),
                "quantized loss {i}: {ours} where the oracle is NaN"
            );
            continue;
        }
        if (e as f32).is_infinite() {
            assert_eq!(
                ours, e as f32,
                "quantized loss {i}: beyond f32, exact {e:e}"
            );
            continue;
        }
        let err = (ours as f64 - e).abs();
        assert!(
            err <= 4.0 * ulp(e)
                || (e.abs() < f32::MIN_POSITIVE as f64 && err < f32::MIN_POSITIVE as f64),
            "quantized loss {i}: {ours:e} vs exact {e:e} ({} ulp)",
            err / ulp(e)
        );
    }
}
