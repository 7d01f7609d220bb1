//! `qneon::loss`: the fused cross-entropy, its gradient and NLL against an
//! `f64` oracle of PyTorch's definitions, against the unfused kernels
//! (`f32::log_softmax` + gather, `f32::softmax` - one-hot), every option
//! combination, N-d inputs, row lengths 1..=70 and 32768, extreme logits,
//! every backend bit for bit, and every bad input's error.

use qneon::loss::{CrossEntropy, LogSumExp, Reduction};
use qneon::{Backend, Error};

// ---------------------------------------------------------------------------
// The oracle: PyTorch's cross_entropy in f64 on the f32 inputs.
// ---------------------------------------------------------------------------

/// `-ln p_c` for every class of one position, in f64 (the sum less its
/// maximal terms kept apart, so confident rows keep their digits).
fn neg_log_probs(x: &[f64]) -> Vec<f64> {
    let m = x.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    let ties = x.iter().filter(|&&v| v == m).count() as f64;
    let rest: f64 = x.iter().filter(|&&v| v < m).map(|&v| (v - m).exp()).sum();
    let ln_sum = ties.ln() + (rest / ties).ln_1p();
    x.iter().map(|&v| (m - v) + ln_sum).collect()
}

struct Options<'a> {
    weights: Option<&'a [f32]>,
    ignore: Option<i64>,
    eps: f64,
}

/// Per-position losses and the weight of each (0 if ignored).
fn oracle_positions<V: Copy + Into<f64>>(
    logits: &[V],
    targets: &[i64],
    classes: usize,
    inner: usize,
    o: &Options<'_>,
) -> Vec<(f64, f64)> {
    let w = |c: usize| o.weights.map_or(1.0, |w| w[c] as f64);
    let total_w: f64 = (0..classes).map(w).sum();
    let _ = total_w;
    targets
        .iter()
        .enumerate()
        .map(|(i, &t)| {
            if Some(t) == o.ignore {
                return (0.0, 0.0);
            }
            let (n, j) = (i / inner, i % inner);
            let x: Vec<f64> = (0..classes)
                .map(|c| logits[(n * classes + c) * inner + j].into())
                .collect();
            let nlp = neg_log_probs(&x);
            let y = t as usize;
            let smooth: f64 = (0..classes).map(|c| w(c) * nlp[c]).sum();
            let loss = (1.0 - o.eps) * w(y) * nlp[y] + o.eps / classes as f64 * smooth;
            (loss, w(y))
        })
        .collect()
}

fn ulp(v: f64) -> f64 {
    let a = (v.abs() as f32).max(f32::MIN_POSITIVE);
    (f32::from_bits(a.to_bits() + 1) - a) as f64
}

/// Distance in ulp of the exact value (infinities and NaN must match).
fn ulps(ours: f32, exact: f64) -> f64 {
    if exact.is_nan() {
        return if ours.is_nan() { 0.0 } else { f64::INFINITY };
    }
    if exact.is_infinite() {
        return if ours as f64 == exact {
            0.0
        } else {
            f64::INFINITY
        };
    }
    let err = (ours as f64 - exact).abs();
    // Below f32's normal range `exp` flushes to 0: absolute error < 2^-126
    // there, as the f32 kernels document.
    if exact.abs() < f32::MIN_POSITIVE as f64 && err < f32::MIN_POSITIVE as f64 {
        return 0.0;
    }
    err / ulp(exact)
}

/// The bound the module documents for a per-position loss (and reductions of
/// non-negative losses).
const LOSS_ULPS: f64 = 4.0;

// ---------------------------------------------------------------------------
// Inputs.
// ---------------------------------------------------------------------------

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn uniform(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
    fn logit(&mut self, spread: f64) -> f32 {
        ((self.uniform() * 2.0 - 1.0) * spread) as f32
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

fn backends() -> Vec<Backend> {
    Backend::available().collect()
}

fn forward(
    ce: &CrossEntropy<'_>,
    backend: Backend,
    logits: &[f32],
    targets: &[i64],
    inner: usize,
    out_len: usize,
) -> (Vec<f32>, Vec<LogSumExp>) {
    let mut out = vec![0f32; out_len];
    let mut saved = vec![LogSumExp::default(); targets.len()];
    ce.backend(backend)
        .unwrap()
        .forward(logits, targets, inner, &mut out, Some(&mut saved))
        .unwrap();
    (out, saved)
}

// ---------------------------------------------------------------------------
// Forward.
// ---------------------------------------------------------------------------

#[test]
fn per_row_loss_within_a_few_ulp_of_f64() {
    let mut rng = Rng(0x1234_5678_9abc_def1);
    let mut worst: f64 = 0.0;
    for classes in (1..=70).chain([383, 384, 385, 1000, 32768]) {
        let rows = if classes > 1000 { 4 } else { 40 };
        for spread in [0.01, 1.0, 8.0, 30.0, 1e4] {
            let logits: Vec<f32> = (0..rows * classes).map(|_| rng.logit(spread)).collect();
            let targets: Vec<i64> = (0..rows).map(|_| rng.below(classes) as i64).collect();
            let ce = CrossEntropy::new(classes)
                .unwrap()
                .reduction(Reduction::None);
            let o = Options {
                weights: None,
                ignore: Some(-100),
                eps: 0.0,
            };
            let exact = oracle_positions(&logits, &targets, classes, 1, &o);
            for backend in backends() {
                let (out, saved) = forward(&ce, backend, &logits, &targets, 1, rows);
                for (i, (&ours, &(e, _))) in out.iter().zip(&exact).enumerate() {
                    let u = ulps(ours, e);
                    worst = worst.max(u);
                    assert!(
                        u <= LOSS_ULPS,
                        "C {classes} spread {spread} row {i} ({}): {ours} vs {e} ({u} ulp)",
                        backend.name()
                    );
                    // The saved log-sum-exp is the loss's: lse - x_y.
                    let y = targets[i] as usize;
                    let lse = saved[i].max as f64 + saved[i].ln_sum;
                    let x_y = logits[i * classes + y] as f64;
                    let rounding = 4.0 * f64::EPSILON * (lse.abs() + x_y.abs());
                    assert!((lse - x_y - e).abs() <= 2.0 * ulp(e) + rounding);
                }
            }
        }
    }
    println!("worst per-row loss error: {worst:.3} ulp");
}

#[test]
fn confident_rows_keep_their_digits() {
    // Loss ln(1 + sum e^-d) for a target far above the rest: 1e-8 and below,
    // where ln(sum) in f32 or f64 rounds to 0 or 1.2e-7.
    let mut rng = Rng(77);
    for classes in [2, 3, 17, 1000, 32768] {
        for gap in [10.0f32, 18.4, 25.0, 40.0, 80.0] {
            let mut logits: Vec<f32> = (0..classes).map(|_| -gap - rng.logit(2.0).abs()).collect();
            let y = rng.below(classes);
            let top = rng.logit(5.0);
            for v in logits.iter_mut() {
                *v += top;
            }
            logits[y] = top;
            let targets = [y as i64];
            let o = Options {
                weights: None,
                ignore: None,
                eps: 0.0,
            };
            let exact = oracle_positions(&logits, &targets, classes, 1, &o)[0].0;
            let ce = CrossEntropy::new(classes)
                .unwrap()
                .reduction(Reduction::None);
            for backend in backends() {
                let (out, _) = forward(&ce, backend, &logits, &targets, 1, 1);
                assert!(
                    ulps(out[0], exact) <= LOSS_ULPS,
                    "C {classes} gap {gap}: {} vs {exact}",
                    out[0]
                );
                assert!(exact > 0.0 && (gap < 25.0 || exact < 1e-5), "{exact}");
            }
        }
    }
}

#[test]
fn every_option_combination_matches_the_oracle() {
    let mut rng = Rng(99);
    let classes = 37;
    let weights: Vec<f32> = (0..classes)
        .map(|c| {
            if c % 5 == 0 {
                0.0
            } else {
                rng.uniform() as f32 * 3.0
            }
        })
        .collect();
    for inner in [1, 2, 5, 16, 19] {
        let n = 6;
        let logits: Vec<f32> = (0..n * classes * inner).map(|_| rng.logit(6.0)).collect();
        let targets: Vec<i64> = (0..n * inner)
            .map(|i| {
                if i % 7 == 3 {
                    -100
                } else {
                    rng.below(classes) as i64
                }
            })
            .collect();
        for w in [None, Some(&weights[..])] {
            for ignore in [Some(-100), Some(4), None] {
                let targets: Vec<i64> = targets
                    .iter()
                    .map(|&t| {
                        if t == -100 && ignore != Some(-100) {
                            1
                        } else {
                            t
                        }
                    })
                    .collect();
                for eps in [0.0f32, 0.1, 1.0] {
                    let o = Options {
                        weights: w,
                        ignore,
                        eps: eps as f64,
                    };
                    let exact = oracle_positions(&logits, &targets, classes, inner, &o);
                    for reduction in [Reduction::None, Reduction::Sum, Reduction::Mean] {
                        let mut ce = CrossEntropy::new(classes)
                            .unwrap()
                            .reduction(reduction)
                            .ignore_index(ignore)
                            .label_smoothing(eps)
                            .unwrap();
                        if let Some(w) = w {
                            ce = ce.weights(w).unwrap();
                        }
                        let expected: Vec<f64> = match reduction {
                            Reduction::None => exact.iter().map(|e| e.0).collect(),
                            Reduction::Sum => vec![exact.iter().map(|e| e.0).sum()],
                            Reduction::Mean => vec![
                                exact.iter().map(|e| e.0).sum::<f64>()
                                    / exact.iter().map(|e| e.1).sum::<f64>(),
                            ],
                        };
                        let mut first: Option<Vec<f32>> = None;
                        for backend in backends() {
                            let (out, _) =
                                forward(&ce, backend, &logits, &targets, inner, expected.len());
                            for (k, (&ours, &e)) in out.iter().zip(&expected).enumerate() {
                                assert!(
                                    ulps(ours, e) <= LOSS_ULPS || (e == 0.0 && ours == 0.0),
                                    "inner {inner} w {} ignore {ignore:?} eps {eps} {reduction:?} [{k}]: {ours} vs {e}",
                                    w.is_some()
                                );
                            }
                            match &first {
                                None => first = Some(out),
                                Some(f) => assert_eq!(
                                    f.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
                                    out.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
                                    "backends differ"
                                ),
                            }
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn nd_layout_equals_the_transposed_rows() {
    // [N, C, d1, d2] read in place against the same positions as [N', C] rows.
    let mut rng = Rng(5);
    let (n, classes, d1, d2) = (3, 11, 4, 5);
    let inner = d1 * d2;
    let logits: Vec<f32> = (0..n * classes * inner).map(|_| rng.logit(4.0)).collect();
    let targets: Vec<i64> = (0..n * inner).map(|_| rng.below(classes) as i64).collect();
    let mut rows = Vec::new();
    for s in 0..n {
        for j in 0..inner {
            for c in 0..classes {
                rows.push(logits[(s * classes + c) * inner + j]);
            }
        }
    }
    let ce = CrossEntropy::new(classes)
        .unwrap()
        .reduction(Reduction::None);
    for backend in backends() {
        let (nd, _) = forward(&ce, backend, &logits, &targets, inner, targets.len());
        let (flat, _) = forward(&ce, backend, &rows, &targets, 1, targets.len());
        for (a, b) in nd.iter().zip(&flat) {
            // Same math, sums in another order.
            assert!((a - b).abs() <= 2.0 * ulp(*b as f64) as f32, "{a} vs {b}");
        }
    }
}

#[test]
fn matches_log_softmax_then_gather() {
    let mut rng = Rng(11);
    for classes in [1, 2, 16, 17, 384, 4097] {
        let rows = 8;
        let logits: Vec<f32> = (0..rows * classes).map(|_| rng.logit(10.0)).collect();
        let targets: Vec<i64> = (0..rows).map(|_| rng.below(classes) as i64).collect();
        let mut lsm = vec![0f32; logits.len()];
        qneon::f32::log_softmax(&logits, &mut lsm, classes).unwrap();
        let ce = CrossEntropy::new(classes)
            .unwrap()
            .reduction(Reduction::None);
        let mut out = vec![0f32; rows];
        ce.forward(&logits, &targets, 1, &mut out, None).unwrap();
        for r in 0..rows {
            let unfused = -lsm[r * classes + targets[r] as usize];
            // log_softmax's documented bound: ulp(y) + 2^-22 (1 + ln sum).
            let bound =
                2.0 * ulp(unfused as f64) + 2f64.powi(-22) * (1.0 + (classes as f64).ln() + 10.0);
            assert!(
                ((out[r] - unfused) as f64).abs() <= bound,
                "{} vs {unfused}",
                out[r]
            );
        }
    }
}

#[test]
fn special_logits() {
    let inf = f32::INFINITY;
    let nan = f32::NAN;
    let cases: Vec<(Vec<f32>, i64, f64)> = vec![
        (vec![inf, 1.0, 2.0], 0, 0.0),
        (vec![inf, 1.0, 2.0], 1, f64::INFINITY),
        (vec![inf, inf, 2.0], 0, f64::NAN),
        (vec![nan, 1.0, 2.0], 1, f64::NAN),
        (vec![1.0, nan, 2.0], 1, f64::NAN),
        (vec![f32::NEG_INFINITY, 1.0, 2.0], 0, f64::INFINITY),
        (vec![f32::NEG_INFINITY; 3], 0, f64::NAN),
        (vec![3.4e38, -3.4e38, 0.0], 0, 0.0),
        (vec![3.4e38, -3.4e38, 0.0], 1, 6.8e38),
        (vec![1e4, -1e4, 0.0], 2, 1e4),
        (vec![-1e4, -1e4 + 1.0, -1e4], 1, 0.551_444_713_932_051_5),
    ];
    for (x, t, expected) in &cases {
        let ce = CrossEntropy::new(3).unwrap().reduction(Reduction::None);
        for backend in backends() {
            let (out, _) = forward(&ce, backend, x, &[*t], 1, 1);
            let ok = if expected.is_nan() {
                out[0].is_nan()
            } else if *expected > f32::MAX as f64 {
                out[0] == inf
            } else {
                ulps(out[0], *expected) <= LOSS_ULPS
            };
            assert!(
                ok,
                "{x:?} target {t} ({}): {} vs {expected}",
                backend.name(),
                out[0]
            );
        }
    }
}

#[test]
fn mean_of_all_ignored_is_nan_and_sum_is_zero() {
    let ce = CrossEntropy::new(2).unwrap();
    let mut out = [1f32];
    ce.forward(&[1.0, 2.0], &[-100], 1, &mut out, None).unwrap();
    assert!(out[0].is_nan());
    ce.reduction(Reduction::Sum)
        .forward(&[1.0, 2.0], &[-100], 1, &mut out, None)
        .unwrap();
    assert_eq!(out[0], 0.0);
}

// ---------------------------------------------------------------------------
// Backward.
// ---------------------------------------------------------------------------

/// The exact gradient of one position's loss times `g`.
fn oracle_grad(x: &[f64], y: usize, w: &dyn Fn(usize) -> f64, eps: f64, g: f64) -> Vec<f64> {
    let c_n = x.len() as f64;
    let nlp = neg_log_probs(x);
    let total: f64 = (0..x.len()).map(w).sum();
    (0..x.len())
        .map(|c| {
            let p = (-nlp[c]).exp();
            // p - 1 at the target without cancellation.
            let p_minus = if c == y { (-nlp[c]).exp_m1() } else { p };
            g * ((1.0 - eps) * w(y) * p_minus + eps / c_n * (total * p - w(c)))
        })
        .collect()
}

#[test]
fn backward_matches_the_oracle_and_the_unfused_softmax() {
    let mut rng = Rng(21);
    let classes_list = [1usize, 2, 15, 16, 17, 64, 385, 4099];
    for &classes in &classes_list {
        let weights: Vec<f32> = (0..classes).map(|_| rng.uniform() as f32 * 2.0).collect();
        for inner in [1usize, 3, 4, 9] {
            let n = 3;
            let logits: Vec<f32> = (0..n * classes * inner).map(|_| rng.logit(8.0)).collect();
            let targets: Vec<i64> = (0..n * inner)
                .map(|i| {
                    if i % 5 == 4 {
                        -100
                    } else {
                        rng.below(classes) as i64
                    }
                })
                .collect();
            for w in [None, Some(&weights[..])] {
                for eps in [0.0f32, 0.2] {
                    for reduction in [Reduction::None, Reduction::Sum, Reduction::Mean] {
                        let mut ce = CrossEntropy::new(classes)
                            .unwrap()
                            .reduction(reduction)
                            .label_smoothing(eps)
                            .unwrap();
                        if let Some(w) = w {
                            ce = ce.weights(w).unwrap();
                        }
                        let out_len = if reduction == Reduction::None {
                            targets.len()
                        } else {
                            1
                        };
                        let grad_out: Vec<f32> = (0..out_len).map(|_| rng.logit(2.0)).collect();
                        let wf = |c: usize| w.map_or(1.0, |w| w[c] as f64);
                        let wsum: f64 = targets
                            .iter()
                            .filter(|&&t| t >= 0)
                            .map(|&t| wf(t as usize))
                            .sum();
                        let mut first: Option<Vec<u32>> = None;
                        for backend in backends() {
                            let (_, saved) =
                                forward(&ce, backend, &logits, &targets, inner, out_len);
                            let mut grad = vec![f32::NAN; logits.len()];
                            ce.backend(backend)
                                .unwrap()
                                .backward(&logits, &targets, inner, &saved, &grad_out, &mut grad)
                                .unwrap();
                            for (i, &t) in targets.iter().enumerate() {
                                let (s, j) = (i / inner, i % inner);
                                let at = |c: usize| (s * classes + c) * inner + j;
                                if t < 0 {
                                    assert!((0..classes).all(|c| grad[at(c)] == 0.0));
                                    continue;
                                }
                                let g = match reduction {
                                    Reduction::None => grad_out[i] as f64,
                                    Reduction::Sum => grad_out[0] as f64,
                                    Reduction::Mean => grad_out[0] as f64 / wsum,
                                };
                                let x: Vec<f64> =
                                    (0..classes).map(|c| logits[at(c)] as f64).collect();
                                let exact = oracle_grad(&x, t as usize, &wf, eps as f64, g);
                                let nlp = neg_log_probs(&x);
                                for c in 0..classes {
                                    let p = (-nlp[c]).exp();
                                    let scale = g.abs()
                                        * ((1.0 - eps as f64) * wf(t as usize)
                                            + eps as f64 * (1.0 + wf(c)))
                                        * p.max(if c == t as usize { 1.0 } else { 0.0 });
                                    let err = (grad[at(c)] as f64 - exact[c]).abs();
                                    let bound = 8.0
                                        * f32::EPSILON as f64
                                        * (scale + eps as f64 * g.abs() * wf(c))
                                        + 4.0 * ulp(exact[c]);
                                    assert!(
                                        err <= bound,
                                        "C {classes} inner {inner} eps {eps} {reduction:?} pos {i} class {c} ({}): {} vs {} (bound {bound})",
                                        backend.name(),
                                        grad[at(c)],
                                        exact[c]
                                    );
                                }
                            }
                            let bits: Vec<u32> = grad.iter().map(|v| v.to_bits()).collect();
                            match &first {
                                None => first = Some(bits),
                                Some(f) => assert_eq!(f, &bits, "backends differ"),
                            }
                        }
                    }
                }
            }
        }
    }
    // Unfused: softmax - one-hot, plain options, contiguous rows.
    let classes = 300;
    let logits: Vec<f32> = (0..4 * classes).map(|_| rng.logit(5.0)).collect();
    let targets = [3i64, 299, 0, 150];
    let ce = CrossEntropy::new(classes)
        .unwrap()
        .reduction(Reduction::Sum);
    let (_, saved) = forward(&ce, Backend::Scalar, &logits, &targets, 1, 1);
    let mut grad = vec![0f32; logits.len()];
    ce.backward(&logits, &targets, 1, &saved, &[1.0], &mut grad)
        .unwrap();
    let mut sm = vec![0f32; logits.len()];
    qneon::f32::softmax(&logits, &mut sm, classes).unwrap();
    for (r, &t) in targets.iter().enumerate() {
        sm[r * classes + t as usize] -= 1.0;
    }
    for (a, b) in grad.iter().zip(&sm) {
        assert!(
            (a - b).abs() <= 4.0 * f32::EPSILON * b.abs().max(1e-7),
            "{a} vs {b}"
        );
    }
}

#[test]
fn confident_gradient_at_the_target_keeps_its_digits() {
    // p_target = 1 - 1e-9: softmax - 1 in f32 gives 0 or -1.2e-7.
    let logits = [0.0f32, -20.7, -21.0, -30.0];
    let ce = CrossEntropy::new(4).unwrap().reduction(Reduction::Sum);
    for backend in backends() {
        let (_, saved) = forward(&ce, backend, &logits, &[0], 1, 1);
        let mut grad = [0f32; 4];
        ce.backward(&logits, &[0], 1, &saved, &[1.0], &mut grad)
            .unwrap();
        let x: Vec<f64> = logits.iter().map(|&v| v as f64).collect();
        let exact = oracle_grad(&x, 0, &|_| 1.0, 0.0, 1.0);
        assert!(
            ulps(grad[0], exact[0]) <= 8.0,
            "{} vs {}",
            grad[0],
            exact[0]
        );
    }
}

// ---------------------------------------------------------------------------
// NLL and bad input.
// ---------------------------------------------------------------------------

#[test]
fn nll_of_log_softmax_equals_cross_entropy() {
    let mut rng = Rng(3);
    let classes = 29;
    let inner = 3;
    let logits: Vec<f32> = (0..2 * classes * inner).map(|_| rng.logit(5.0)).collect();
    let targets: Vec<i64> = (0..2 * inner).map(|_| rng.below(classes) as i64).collect();
    let weights: Vec<f32> = (0..classes).map(|c| 0.5 + (c % 3) as f32).collect();
    // log-probs from the oracle, rounded to f32.
    let mut lp = vec![0f32; logits.len()];
    for s in 0..2 {
        for j in 0..inner {
            let x: Vec<f64> = (0..classes)
                .map(|c| logits[(s * classes + c) * inner + j] as f64)
                .collect();
            for (c, v) in neg_log_probs(&x).iter().enumerate() {
                lp[(s * classes + c) * inner + j] = -*v as f32;
            }
        }
    }
    for eps in [0.0f32, 0.3] {
        let ce = CrossEntropy::new(classes)
            .unwrap()
            .reduction(Reduction::None)
            .weights(&weights)
            .unwrap()
            .label_smoothing(eps)
            .unwrap();
        let mut a = vec![0f32; targets.len()];
        let mut b = vec![0f32; targets.len()];
        ce.nll(&lp, &targets, inner, &mut a).unwrap();
        ce.forward(&logits, &targets, inner, &mut b, None).unwrap();
        for (x, y) in a.iter().zip(&b) {
            assert!(
                (x - y).abs() <= 4.0 * ulp(*y as f64) as f32 + 1e-6 * y.abs(),
                "{x} vs {y}"
            );
        }
    }
}

#[test]
fn bad_inputs_are_errors() {
    assert!(matches!(
        CrossEntropy::new(0),
        Err(Error::ZeroDimension { .. })
    ));
    let ce = CrossEntropy::new(3).unwrap();
    assert!(matches!(
        ce.weights(&[1.0, 2.0]),
        Err(Error::Length {
            what: "weights",
            ..
        })
    ));
    assert!(matches!(
        ce.weights(&[1.0, -2.0, 0.0]),
        Err(Error::OutOfDomain { .. })
    ));
    assert!(matches!(
        ce.weights(&[1.0, f32::NAN, 0.0]),
        Err(Error::OutOfDomain { .. })
    ));
    assert!(matches!(
        ce.weights(&[1.0, f32::INFINITY, 0.0]),
        Err(Error::OutOfDomain { .. })
    ));
    assert!(matches!(
        ce.label_smoothing(1.5),
        Err(Error::OutOfDomain { .. })
    ));
    assert!(matches!(
        ce.label_smoothing(f32::NAN),
        Err(Error::OutOfDomain { .. })
    ));
    let logits = [0.0f32; 6];
    let mut out = [0f32];
    // Target out of range, negative but not the ignore index, wrong lengths.
    assert_eq!(
        ce.forward(&logits, &[0, 3], 1, &mut out, None),
        Err(Error::Target {
            op: "cross_entropy",
            position: 1,
            value: 3,
            classes: 3
        })
    );
    assert!(matches!(
        ce.forward(&logits, &[-1, 0], 1, &mut out, None),
        Err(Error::Target { .. })
    ));
    assert!(ce.forward(&logits, &[-100, 0], 1, &mut out, None).is_ok());
    assert!(matches!(
        ce.ignore_index(None)
            .forward(&logits, &[-100, 0], 1, &mut out, None),
        Err(Error::Target { .. })
    ));
    assert!(matches!(
        ce.forward(&logits, &[0], 1, &mut out, None),
        Err(Error::Length { what: "logits", .. })
    ));
    assert!(matches!(
        ce.forward(&logits, &[0, 0], 0, &mut out, None),
        Err(Error::ZeroDimension { .. })
    ));
    assert!(matches!(
        ce.forward(&logits, &[0, 0], 3, &mut out, None),
        Err(Error::RowLength { .. })
    ));
    let mut two = [0f32; 2];
    assert!(matches!(
        ce.forward(&logits, &[0, 0], 1, &mut two, None),
        Err(Error::Length { what: "out", .. })
    ));
    let mut saved = [LogSumExp::default(); 1];
    assert!(matches!(
        ce.forward(&logits, &[0, 0], 1, &mut out, Some(&mut saved)),
        Err(Error::Length { what: "saved", .. })
    ));
    let mut grad = [0f32; 5];
    let saved2 = [LogSumExp::default(); 2];
    assert!(matches!(
        ce.backward(&logits, &[0, 0], 1, &saved2, &[1.0], &mut grad),
        Err(Error::Length { what: "grad", .. })
    ));
    // Huge target counts do not overflow the length check.
    let many = vec![0i64; 4];
    assert!(CrossEntropy::new(usize::MAX / 2)
        .unwrap()
        .forward(&logits, &many, 1, &mut out, None)
        .is_err());
}

// ---------------------------------------------------------------------------
// Quantized logits.
// ---------------------------------------------------------------------------

/// Class counts of the quantized tests: short rows (a pass per element)
/// and long ones (counted into a histogram first), around the switch.
const QUANTIZED_CLASSES: [usize; 6] = [1, 7, 255, 256, 300, 4099];

fn quantized_case<T: qneon::QuantElem + Copy>(to_t: impl Fn(i32) -> T, seed: u64) {
    for classes in QUANTIZED_CLASSES {
        quantized_case_of::<T>(&to_t, seed, classes);
    }
}

fn quantized_case_of<T: qneon::QuantElem + Copy>(
    to_t: &impl Fn(i32) -> T,
    seed: u64,
    classes: usize,
) {
    let mut rng = Rng(seed);
    let weights: Vec<f32> = (0..classes).map(|c| (c % 4) as f32 * 0.5).collect();
    for scale in [0.003f32, 0.05, 0.1, 0.5, 3.0] {
        for inner in [1usize, 3] {
            let n = 5;
            let zp = if T::MIN < 0 { -3 } else { 120 };
            let mut q: Vec<i32> = (0..n * classes * inner)
                .map(|_| T::MIN + rng.below((T::MAX - T::MIN + 1) as usize) as i32)
                .collect();
            let targets: Vec<i64> = (0..n * inner)
                .map(|i| {
                    if i == 2 {
                        -100
                    } else {
                        rng.below(classes) as i64
                    }
                })
                .collect();
            // One confident position: the target at the maximum, the rest at the minimum.
            if let Some(&t) = targets.first() {
                for c in 0..classes {
                    q[c * inner] = if c == t as usize { T::MAX } else { T::MIN };
                }
            }
            // One position with every logit equal (a single value present).
            if n * inner > 1 {
                let (row, j) = (1 / inner, 1 % inner);
                for c in 0..classes {
                    q[(row * classes + c) * inner + j] = T::MIN + 77;
                }
            }
            let logits: Vec<T> = q.iter().map(|&v| to_t(v)).collect();
            let real: Vec<f64> = q.iter().map(|&v| (v - zp) as f64 * scale as f64).collect();
            for (w, eps) in [(None, 0.0f32), (Some(&weights[..]), 0.2)] {
                let o = Options {
                    weights: w,
                    ignore: Some(-100),
                    eps: eps as f64,
                };
                let exact = oracle_positions(&real, &targets, classes, inner, &o);
                let mut ce = CrossEntropy::new(classes)
                    .unwrap()
                    .reduction(Reduction::None)
                    .label_smoothing(eps)
                    .unwrap();
                if let Some(w) = w {
                    ce = ce.weights(w).unwrap();
                }
                let qce = ce
                    .quantized::<T>(qneon::QuantParams::new(scale, zp))
                    .unwrap();
                let mut out = vec![0f32; targets.len()];
                qce.forward(&logits, &targets, inner, &mut out).unwrap();
                for (k, (&ours, &(e, _))) in out.iter().zip(&exact).enumerate() {
                    assert!(
                        ulps(ours, e) <= LOSS_ULPS,
                        "{} classes {classes} scale {scale} inner {inner} eps {eps} [{k}]: \
                         {ours} vs {e}",
                        T::NAME
                    );
                }
            }
        }
    }
}

#[test]
fn quantized_logits_match_the_oracle_of_their_real_values() {
    quantized_case::<i8>(|v| v as i8, 41);
    quantized_case::<u8>(|v| v as u8, 42);
}

#[test]
fn quantized_bad_parameters() {
    let ce = CrossEntropy::new(4).unwrap();
    assert!(matches!(
        ce.quantized::<i16>(qneon::QuantParams::new(0.1, 0)),
        Err(Error::Unsupported { .. })
    ));
    assert!(matches!(
        ce.quantized::<i8>(qneon::QuantParams::new(0.0, 0)),
        Err(Error::Scale { .. })
    ));
    assert!(matches!(
        ce.quantized::<u8>(qneon::QuantParams::new(0.1, 300)),
        Err(Error::ZeroPoint { .. })
    ));
    let qce = ce.quantized::<i8>(qneon::QuantParams::new(0.1, 0)).unwrap();
    let mut out = [0f32];
    assert!(matches!(
        qce.forward(&[0i8; 4], &[4], 1, &mut out),
        Err(Error::Target { .. })
    ));
}

/// Found by the `loss` fuzz target: an upstream gradient times a class
/// weight beyond `f32::MAX` made the lanes multiply `inf` by a probability
/// difference of 0 (NaN where the gradient is 0). Such positions take an
/// `f64` path: the gradient is finite where the oracle's is, on every
/// backend and layout.
#[test]
fn gradient_with_coefficients_beyond_f32_stays_exact() {
    for backend in backends() {
        for (classes, logits) in [
            (1usize, vec![0.0f32, 0.0]),
            (3, vec![9.0, 0.0, -3.0, 1.0, 1.0, 40.0]),
        ] {
            let n = logits.len() / classes;
            let weights = vec![f32::MAX; classes];
            let targets: Vec<i64> = (0..n as i64).map(|i| i % classes as i64).collect();
            for eps in [0.0f32, 0.25] {
                let ce = CrossEntropy::new(classes)
                    .unwrap()
                    .reduction(Reduction::None)
                    .weights(&weights)
                    .unwrap()
                    .label_smoothing(eps)
                    .unwrap()
                    .backend(backend)
                    .unwrap();
                let mut out = vec![0.0; n];
                let mut saved = vec![LogSumExp::default(); n];
                ce.forward(&logits, &targets, 1, &mut out, Some(&mut saved))
                    .unwrap();
                let upstream = vec![1.25f32; n];
                let mut grad = vec![0.0; logits.len()];
                ce.backward(&logits, &targets, 1, &saved, &upstream, &mut grad)
                    .unwrap();
                for i in 0..n {
                    let x: Vec<f64> = logits[i * classes..(i + 1) * classes]
                        .iter()
                        .map(|&v| v as f64)
                        .collect();
                    let w = |_| f32::MAX as f64;
                    let exact = oracle_grad(&x, targets[i] as usize, &w, eps as f64, 1.25);
                    for c in 0..classes {
                        let ours = grad[i * classes + c];
                        let e = exact[c];
                        if e.abs() > f32::MAX as f64 {
                            assert!(ours.is_infinite() && ours.signum() as f64 == e.signum());
                        } else {
                            assert!(
                                (ours as f64 - e).abs() <= 2.0 * ulp(e) + 1e-30,
                                "{backend:?} C {classes} eps {eps} row {i} class {c}: {ours:e} vs {e:e}"
                            );
                        }
                    }
                }
            }
        }
    }
}

/// Found by the `loss` fuzz target: a row so confident that its other
/// terms are below `f32`'s normal range (`e^-88`) lost them (the `f32`
/// `exp` flushes there): loss 7e-40 for an exact 1.2e-38. Such rows sum
/// their rest again in `f64`; rows and columns alike.
#[test]
fn terms_below_f32_normals_still_count_in_confident_rows() {
    for backend in backends() {
        for (logits, target) in [
            (vec![1.0e-45f32, 88.0, 0.0], 1usize),
            (vec![-100.0, 0.0, -95.0, -90.0], 1),
            (vec![0.0, 120.0, 5.0, 7.5, 119.0 - 30.0], 1),
        ] {
            let classes = logits.len();
            let x: Vec<f64> = logits.iter().map(|&v| v as f64).collect();
            let exact = neg_log_probs(&x)[target];
            // The row, and the same values as the column of an [1, C, 2]
            // layout beside a dummy column.
            let mut columns = vec![0.0f32; classes * 2];
            for c in 0..classes {
                columns[c * 2 + 1] = logits[c];
            }
            let ce = CrossEntropy::new(classes)
                .unwrap()
                .reduction(Reduction::None)
                .backend(backend)
                .unwrap();
            let mut out = [0.0f32];
            ce.forward(&logits, &[target as i64], 1, &mut out, None)
                .unwrap();
            let mut out2 = [0.0f32; 2];
            ce.forward(&columns, &[0, target as i64], 2, &mut out2, None)
                .unwrap();
            for ours in [out[0], out2[1]] {
                assert!(
                    ulps(ours, exact) <= LOSS_ULPS,
                    "{backend:?} {logits:?}: {ours:e} vs {exact:e}"
                );
            }
        }
    }
}

/// Found by the `loss` fuzz target: with label smoothing and a target that
/// is not the maximum (here of weight 0), the loss holds `w_max ln sum`
/// alone, and `ln(1 + 1e-35)` formed as `ln(sum)` is 0. Smoothing rows with
/// a small sum take the `ln(1 + rest)` pass whatever their target.
#[test]
fn smoothing_keeps_a_tiny_ln_sum_of_a_non_target_maximum() {
    for backend in backends() {
        let logits = [1252.5625f32, 1171.9375];
        let weights = [256.0f32, 0.0];
        let eps = 1.0f32 / 128.0;
        let ce = CrossEntropy::new(2)
            .unwrap()
            .reduction(Reduction::None)
            .weights(&weights)
            .unwrap()
            .label_smoothing(eps)
            .unwrap()
            .backend(backend)
            .unwrap();
        let mut out = [0.0f32];
        ce.forward(&logits, &[1], 1, &mut out, None).unwrap();
        let x: Vec<f64> = logits.iter().map(|&v| v as f64).collect();
        let o = Options {
            weights: Some(&weights),
            ignore: None,
            eps: eps as f64,
        };
        let exact = oracle_positions(&x, &[1], 2, 1, &o)[0].0;
        assert!(exact > 1e-36, "{exact:e}");
        assert!(
            ulps(out[0], exact) <= LOSS_ULPS,
            "{backend:?}: {:e} vs {exact:e}",
            out[0]
        );
    }
}
