//! `qneon::f32`: accuracy against `f64` math (in ulp), special values, the
//! backends' bit equality, lengths and errors. Runs on the host (scalar) and
//! under qemu (scalar and NEON).

mod common;
use common::Rng;
use qneon::f32 as qf;
use qneon::f32::SoftmaxVariant;
use qneon::{Backend, Error};

/// Stated bounds (ulp of the correctly rounded result).
const EXP_ULP: f64 = 1.0;
/// From the exact softmax of the `f32`-rounded differences `x - max`:
/// two-pass, online.
const SOFTMAX_ULP: f64 = 3.0;
const SOFTMAX_ONLINE_ULP: f64 = 3.5;
const SIGMOID_ULP: f64 = 3.0;
const TANH_ULP: f64 = 3.0;

/// ulp of an f32 of magnitude |v| (v normal or subnormal).
fn ulp_of(v: f64) -> f64 {
    let a = v.abs() as f32;
    if a < f32::MIN_POSITIVE {
        return f32::from_bits(1) as f64;
    }
    let b = a.to_bits() & 0x7f80_0000;
    // ulp = 2^(e - 23)
    f32::from_bits(b) as f64 * f64::powi(2.0, -23)
}

fn ulp_err(got: f32, exact: f64) -> f64 {
    if got as f64 == exact {
        return 0.0;
    }
    (got as f64 - exact).abs() / ulp_of(exact)
}

fn backends() -> Vec<Backend> {
    Backend::available().collect()
}

fn same_bits(a: &[f32], b: &[f32]) -> bool {
    a.iter()
        .zip(b)
        .all(|(x, y)| x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan()))
}

/// Inputs from `lo` to `hi` (same sign), roughly `count` of them spread
/// evenly over the bit patterns, plus the end points.
fn sweep(lo: f32, hi: f32, count: u32) -> Vec<f32> {
    let (a, b) = (
        lo.to_bits().min(hi.to_bits()),
        lo.to_bits().max(hi.to_bits()),
    );
    let step = ((b - a) / count).max(1);
    let mut v: Vec<f32> = (a..=b).step_by(step as usize).map(f32::from_bits).collect();
    v.push(lo);
    v.push(hi);
    v
}

#[test]
fn ln2_split_and_constants() {
    // LN2_LO's decimal literal is the f32 nearest ln2 - LN2_HI.
    let hi = 0.693_359_375f64;
    let lo = (std::f64::consts::LN_2 - hi) as f32;
    assert_eq!(lo.to_bits(), 0xb95e_8083);
}

#[test]
fn fma_is_correctly_rounded() {
    let mut rng = Rng(0x1234_5678);
    let specials = [
        0.0f32,
        -0.0,
        1.0,
        -1.0,
        f32::MIN_POSITIVE,
        1e-45,
        f32::MAX,
        -f32::MAX,
        f32::INFINITY,
        f32::NEG_INFINITY,
        1.0 + f32::EPSILON,
        1.0 - f32::EPSILON / 2.0,
        3.0,
        1e20,
        1e-20,
    ];
    for &a in &specials {
        for &b in &specials {
            for &c in &specials {
                let (got, want) = (qf::fma(a, b, c), a.mul_add(b, c));
                assert!(
                    got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan()),
                    "fma({a:e}, {b:e}, {c:e}) = {got:e}, want {want:e}"
                );
            }
        }
    }
    for _ in 0..200_000 {
        let a = f32::from_bits(rng.next() as u32);
        let b = f32::from_bits((rng.next() >> 32) as u32);
        // c near -a*b for cancellation half the time.
        let c = if rng.next() & 1 == 0 {
            f32::from_bits(rng.next() as u32)
        } else {
            -(a * b) * (1.0 + rng.range(-1e-6, 1e-6))
        };
        let (got, want) = (qf::fma(a, b, c), a.mul_add(b, c));
        assert!(
            got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan()),
            "fma({a:e}, {b:e}, {c:e}) = {got:e}, want {want:e}"
        );
    }
}

#[test]
fn exp_ulp_bound() {
    let mut xs = sweep(-87.3, -0.0, 400_000);
    xs.extend(sweep(0.0, 88.72, 100_000));
    xs.extend(sweep(-1e-6, -1e-30, 10_000));
    let mut worst = (0.0f64, 0.0f32);
    for &x in &xs {
        let e = ulp_err(qf::exp(x), (x as f64).exp());
        if e > worst.0 {
            worst = (e, x);
        }
    }
    println!("exp scalar: max {:.3} ulp at {:e}", worst.0, worst.1);
    assert!(
        worst.0 <= EXP_ULP,
        "exp: {:.3} ulp at {:e}",
        worst.0,
        worst.1
    );
    // The slice kernels on every backend give the scalar bits.
    let mut want = vec![0.0f32; xs.len()];
    qf::exp_into_with(Backend::Scalar, &xs, &mut want).unwrap();
    assert!(xs
        .iter()
        .zip(&want)
        .all(|(&x, y)| y.to_bits() == qf::exp(x).to_bits()));
    for b in backends() {
        let mut got = vec![0.0f32; xs.len()];
        qf::exp_into_with(b, &xs, &mut got).unwrap();
        assert!(same_bits(&got, &want), "{b:?}");
    }
}

#[test]
fn exp_special_values() {
    assert_eq!(qf::exp(0.0), 1.0);
    assert_eq!(qf::exp(-0.0), 1.0);
    assert_eq!(qf::exp(f32::NEG_INFINITY), 0.0);
    assert_eq!(qf::exp(-87.4), 0.0);
    assert_eq!(qf::exp(-1e30), 0.0);
    assert_eq!(qf::exp(f32::INFINITY), f32::INFINITY);
    assert_eq!(qf::exp(88.73), f32::INFINITY);
    assert!(qf::exp(88.72).is_finite());
    assert!(qf::exp(f32::NAN).is_nan());
    assert!(qf::exp(-87.33) >= f32::MIN_POSITIVE);
}

/// The exact softmax of the differences `x - max` as the kernels round them
/// to `f32` (what the documented bound is stated against; the rounding of
/// the differences is the input's, see `tests/f32_softmax_bound.rs`).
fn softmax_ref(x: &[f32]) -> Vec<f64> {
    let m = x.iter().fold(f32::NEG_INFINITY, |a, &b| a.max(b));
    let e: Vec<f64> = x.iter().map(|&v| ((v - m) as f64).exp()).collect();
    let s: f64 = e.iter().sum();
    e.iter().map(|v| v / s).collect()
}

/// `what` names the variant (`Online` gets its own bound).
fn check_softmax_row(x: &[f32], y: &[f32], what: &str) -> f64 {
    let bound = if what.contains("Online") {
        SOFTMAX_ONLINE_ULP
    } else {
        SOFTMAX_ULP
    };
    let r = softmax_ref(x);
    let mut worst = 0.0f64;
    for (i, (&g, &w)) in y.iter().zip(&r).enumerate() {
        if w >= f32::MIN_POSITIVE as f64 {
            let e = ulp_err(g, w);
            worst = worst.max(e);
            assert!(
                e <= bound,
                "{what}: y[{i}] = {g:e}, exact {w:e}: {e:.2} ulp"
            );
        } else {
            assert!(
                (g as f64 - w).abs() < f32::MIN_POSITIVE as f64,
                "{what}: y[{i}] = {g:e}, exact {w:e}"
            );
        }
    }
    worst
}

fn lengths() -> Vec<usize> {
    (1..=70).chain(383..=385).collect()
}

#[test]
fn softmax_accuracy_and_backends_agree() {
    let mut rng = Rng(42);
    let mut worst = [0.0f64; 2];
    for n in lengths() {
        for spread in [1.0f32, 10.0, 40.0, 200.0] {
            let x: Vec<f32> = (0..n).map(|_| rng.range(-spread, spread)).collect();
            for (vi, v) in [SoftmaxVariant::TwoPass, SoftmaxVariant::Online]
                .into_iter()
                .enumerate()
            {
                let mut want = vec![0.0f32; n];
                qf::softmax_variant(v, Backend::Scalar, &x, &mut want, n).unwrap();
                worst[vi] = worst[vi].max(check_softmax_row(&x, &want, &format!("{v:?} n={n}")));
                for b in backends() {
                    let mut got = vec![f32::NAN; n];
                    qf::softmax_variant(v, b, &x, &mut got, n).unwrap();
                    assert!(same_bits(&got, &want), "{v:?} {b:?} n={n}");
                }
            }
        }
    }
    println!(
        "softmax: max {:.3} ulp (two-pass), {:.3} ulp (online)",
        worst[0], worst[1]
    );
}

#[test]
fn softmax_multiple_rows_and_default() {
    let mut rng = Rng(7);
    let (rows, n) = (5, 67);
    let x: Vec<f32> = (0..rows * n).map(|_| rng.range(-30.0, 30.0)).collect();
    let mut all = vec![0.0f32; rows * n];
    qf::softmax(&x, &mut all, n).unwrap();
    for r in 0..rows {
        let mut one = vec![0.0f32; n];
        qf::softmax_with(Backend::Scalar, &x[r * n..][..n], &mut one, n).unwrap();
        assert!(same_bits(&one, &all[r * n..][..n]));
        let mut two = vec![0.0f32; n];
        qf::softmax_variant(
            SoftmaxVariant::TwoPass,
            Backend::Scalar,
            &x[r * n..][..n],
            &mut two,
            n,
        )
        .unwrap();
        assert!(same_bits(&one, &two), "default is TwoPass");
    }
    // No rows at all.
    qf::softmax(&[], &mut [], 3).unwrap();
}

fn all_softmaxes(x: &[f32]) -> Vec<(String, Vec<f32>)> {
    let mut out = vec![];
    for b in backends() {
        for v in [SoftmaxVariant::TwoPass, SoftmaxVariant::Online] {
            let mut y = vec![0.5f32; x.len()];
            qf::softmax_variant(v, b, x, &mut y, x.len()).unwrap();
            out.push((format!("{v:?} {b:?}"), y));
        }
    }
    out
}

#[test]
fn softmax_special_rows() {
    for n in [1usize, 3, 16, 17, 40] {
        // Huge and tiny finite values: finite, correct.
        let mut x: Vec<f32> = (0..n).map(|i| (i as f32) * 0.5).collect();
        x[0] = 1e4;
        if n > 1 {
            x[n - 1] = -1e4;
        }
        if n > 2 {
            x[1] = 3.4e38;
            x[2] = -3.4e38;
        }
        for (what, y) in all_softmaxes(&x) {
            assert!(y.iter().all(|v| v.is_finite()), "{what} n={n}");
            check_softmax_row(&x, &y, &what);
        }
        // -inf contributes exactly 0.
        let mut x: Vec<f32> = (0..n).map(|i| (i as f32).sin()).collect();
        x[n / 2] = f32::NEG_INFINITY;
        for (what, y) in all_softmaxes(&x) {
            if n > 1 {
                assert_eq!(y[n / 2], 0.0, "{what}");
                check_softmax_row(&x, &y, &what);
            } else {
                assert!(y[0].is_nan(), "{what}: all -inf row is NaN");
            }
        }
        // One +inf: one-hot.
        let mut x: Vec<f32> = (0..n).map(|i| i as f32).collect();
        x[n - 1 - n / 3] = f32::INFINITY;
        for (what, y) in all_softmaxes(&x) {
            for (i, &v) in y.iter().enumerate() {
                assert_eq!(
                    v,
                    if i == n - 1 - n / 3 { 1.0 } else { 0.0 },
                    "{what} n={n}"
                );
            }
        }
        // Two or more +inf: NaN (the limit is undefined; ONNX, PyTorch, numpy).
        if n > 1 {
            let mut x: Vec<f32> = (0..n).map(|i| i as f32).collect();
            x[0] = f32::INFINITY;
            x[n - 1] = f32::INFINITY;
            for (what, y) in all_softmaxes(&x) {
                assert!(y.iter().all(|v| v.is_nan()), "{what} n={n}: {y:?}");
            }
        }
        // All -inf: NaN (the documented convention).
        let x = vec![f32::NEG_INFINITY; n];
        for (what, y) in all_softmaxes(&x) {
            assert!(y.iter().all(|v| v.is_nan()), "{what}");
        }
        // NaN propagates.
        let mut x: Vec<f32> = (0..n).map(|i| i as f32).collect();
        x[n / 2] = f32::NAN;
        for (what, y) in all_softmaxes(&x) {
            assert!(y[n / 2].is_nan(), "{what}");
        }
    }
}

#[test]
fn log_softmax_accuracy_and_specials() {
    let mut rng = Rng(99);
    let mut worst = 0.0f64;
    for n in lengths() {
        for spread in [1.0f32, 50.0, 1e4] {
            let x: Vec<f32> = (0..n).map(|_| rng.range(-spread, spread)).collect();
            let m = x.iter().fold(f64::NEG_INFINITY, |a, &b| a.max(b as f64));
            let lse = x.iter().map(|&v| (v as f64 - m).exp()).sum::<f64>().ln();
            let mut want = vec![0.0f32; n];
            qf::log_softmax_with(Backend::Scalar, &x, &mut want, n).unwrap();
            for (i, &g) in want.iter().enumerate() {
                let exact = x[i] as f64 - m - lse;
                let err = (g as f64 - exact).abs();
                // 1 ulp of the result plus the rounding of ln(sum) and the sum.
                let bound = ulp_of(exact) + f64::powi(2.0, -22) * (1.0 + lse);
                worst = worst.max(err / ulp_of(exact).max(f64::powi(2.0, -22)));
                assert!(
                    g.is_finite() && err <= bound,
                    "n={n} y[{i}]={g:e} exact {exact:e}"
                );
            }
            for b in backends() {
                let mut got = vec![0.0f32; n];
                qf::log_softmax_with(b, &x, &mut got, n).unwrap();
                assert!(same_bits(&got, &want), "{b:?} n={n}");
            }
        }
    }
    println!("log_softmax: max error {worst:.3} (in max(ulp, 2^-22))");
    let x = [1e4f32, -1e4, 1.5e38, -1.5e38, f32::NEG_INFINITY];
    for b in backends() {
        let mut y = [0.0f32; 5];
        qf::log_softmax_with(b, &x, &mut y, 5).unwrap();
        assert_eq!(y[2], 0.0);
        assert!(y[..4].iter().all(|v| v.is_finite()), "{y:?}");
        assert_eq!(y[4], f32::NEG_INFINITY);
        let x = [0.0f32, f32::INFINITY, 1.0];
        let mut y = [0.0f32; 3];
        qf::log_softmax_with(b, &x, &mut y, 3).unwrap();
        assert_eq!(y, [f32::NEG_INFINITY, 0.0, f32::NEG_INFINITY]);
        let x = [f32::NEG_INFINITY; 3];
        qf::log_softmax_with(b, &x, &mut y, 3).unwrap();
        assert!(y.iter().all(|v| v.is_nan()));
        // Two +inf: NaN, as softmax.
        let x = [f32::INFINITY, 1.0, f32::INFINITY];
        qf::log_softmax_with(b, &x, &mut y, 3).unwrap();
        assert!(y.iter().all(|v| v.is_nan()), "{y:?}");
    }
}

fn sigmoid_ref(x: f32) -> f64 {
    1.0 / (1.0 + (-(x as f64)).exp())
}

#[test]
fn sigmoid_accuracy() {
    let mut xs = sweep(-87.3, -0.0, 200_000);
    xs.extend(sweep(0.0, 100.0, 200_000));
    xs.extend(sweep(-1e-30, 1e-30, 1000));
    let mut want = vec![0.0f32; xs.len()];
    qf::sigmoid_with(Backend::Scalar, &xs, &mut want).unwrap();
    let mut worst = (0.0f64, 0.0f32);
    for (&x, &y) in xs.iter().zip(&want) {
        let e = ulp_err(y, sigmoid_ref(x));
        if e > worst.0 {
            worst = (e, x);
        }
    }
    println!("sigmoid: max {:.3} ulp at {:e}", worst.0, worst.1);
    assert!(
        worst.0 <= SIGMOID_ULP,
        "sigmoid {:.3} ulp at {:e}",
        worst.0,
        worst.1
    );
    for b in backends() {
        let mut got = vec![0.0f32; xs.len()];
        qf::sigmoid_with(b, &xs, &mut got).unwrap();
        assert!(same_bits(&got, &want), "{b:?}");
    }
}

#[test]
fn tanh_accuracy() {
    let mut xs = sweep(-20.0, -0.0, 200_000);
    xs.extend(sweep(0.0, 20.0, 200_000));
    xs.extend(sweep(1e-38, 1e-3, 20_000));
    let mut want = vec![0.0f32; xs.len()];
    qf::tanh_with(Backend::Scalar, &xs, &mut want).unwrap();
    let mut worst = (0.0f64, 0.0f32);
    for (&x, &y) in xs.iter().zip(&want) {
        let e = ulp_err(y, (x as f64).tanh());
        if e > worst.0 {
            worst = (e, x);
        }
    }
    println!("tanh: max {:.3} ulp at {:e}", worst.0, worst.1);
    assert!(
        worst.0 <= TANH_ULP,
        "tanh {:.3} ulp at {:e}",
        worst.0,
        worst.1
    );
    for b in backends() {
        let mut got = vec![0.0f32; xs.len()];
        qf::tanh_with(b, &xs, &mut got).unwrap();
        assert!(same_bits(&got, &want), "{b:?}");
    }
}

#[test]
fn elementwise_special_values() {
    let x = [
        -548.3f32,
        88.8,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        0.0,
        -0.0,
        1e30,
        -1e30,
        3.4e38,
        -3.4e38,
        9.0,
        -9.0,
        1e-40,
    ];
    for b in backends() {
        let mut s = [0.0f32; 14];
        qf::sigmoid_with(b, &x, &mut s).unwrap();
        assert_eq!(s[0], 0.0, "{b:?}");
        assert_eq!(s[1], 1.0);
        assert_eq!(s[2], 1.0);
        assert_eq!(s[3], 0.0);
        assert!(s[4].is_nan());
        assert_eq!(s[5], 0.5);
        assert_eq!(s[6], 0.5);
        assert_eq!((s[7], s[8], s[9], s[10]), (1.0, 0.0, 1.0, 0.0));
        assert!(s.iter().enumerate().all(|(i, v)| i == 4 || v.is_finite()));
        let mut t = [0.0f32; 14];
        qf::tanh_with(b, &x, &mut t).unwrap();
        assert_eq!((t[0], t[1], t[2], t[3]), (-1.0, 1.0, 1.0, -1.0), "{b:?}");
        assert!(t[4].is_nan());
        assert_eq!(t[5].to_bits(), 0.0f32.to_bits());
        assert_eq!(t[6].to_bits(), (-0.0f32).to_bits());
        assert_eq!(
            (t[7], t[8], t[9], t[10], t[11], t[12]),
            (1.0, -1.0, 1.0, -1.0, 1.0, -1.0)
        );
        assert_eq!(t[13], 1e-40);
    }
}

#[test]
fn sigmoid_backward_values() {
    let mut rng = Rng(5);
    for n in (0..=70).chain(383..=385) {
        let y: Vec<f32> = (0..n).map(|_| rng.range(0.0, 1.0)).collect();
        let dy: Vec<f32> = (0..n).map(|_| rng.range(-10.0, 10.0)).collect();
        let mut want = vec![0.0f32; n];
        qf::sigmoid_backward_with(Backend::Scalar, &y, &dy, &mut want).unwrap();
        for i in 0..n {
            let exact = y[i] as f64 * (1.0 - y[i] as f64) * dy[i] as f64;
            assert!(ulp_err(want[i], exact) <= 2.0, "y={} dy={}", y[i], dy[i]);
        }
        for b in backends() {
            let mut got = vec![0.0f32; n];
            qf::sigmoid_backward_with(b, &y, &dy, &mut got).unwrap();
            assert!(same_bits(&got, &want), "{b:?} n={n}");
        }
    }
    // Saturated outputs: exactly 0, never NaN.
    let x = [-548.3f32, 88.8, 1e30, -1e30, 200.0, -200.0];
    let mut y = [0.0f32; 6];
    qf::sigmoid(&x, &mut y).unwrap();
    let dy = [1.0f32, -3.0, 1e30, 7.0, f32::MAX, -f32::MAX];
    for b in backends() {
        let mut dx = [f32::NAN; 6];
        qf::sigmoid_backward_with(b, &y, &dy, &mut dx).unwrap();
        assert!(dx.iter().all(|&v| v == 0.0), "{b:?} {dx:?}");
    }
}

#[test]
fn elementwise_lengths_and_tails() {
    let mut rng = Rng(11);
    for n in (0..=70).chain(383..=385) {
        let x: Vec<f32> = (0..n).map(|_| rng.range(-10.0, 10.0)).collect();
        for b in backends() {
            // Outputs beyond the slice are never touched.
            let mut buf = vec![-7.0f32; n + 8];
            qf::sigmoid_with(b, &x, &mut buf[4..4 + n]).unwrap();
            assert!(buf[..4].iter().chain(&buf[4 + n..]).all(|&v| v == -7.0));
            for (i, &v) in buf[4..4 + n].iter().enumerate() {
                assert!(ulp_err(v, sigmoid_ref(x[i])) <= SIGMOID_ULP);
            }
            qf::tanh_with(b, &x, &mut buf[4..4 + n]).unwrap();
            assert!(buf[..4].iter().chain(&buf[4 + n..]).all(|&v| v == -7.0));
            if n > 0 {
                qf::softmax_with(b, &x, &mut buf[4..4 + n], n).unwrap();
                assert!(buf[..4].iter().chain(&buf[4 + n..]).all(|&v| v == -7.0));
            }
        }
    }
}

#[test]
fn errors() {
    let x = [0.0f32; 6];
    let mut y = [0.0f32; 5];
    assert!(matches!(
        qf::softmax(&x, &mut y, 1),
        Err(Error::LengthMismatch { .. })
    ));
    assert!(matches!(
        qf::log_softmax(&x, &mut y, 1),
        Err(Error::LengthMismatch { .. })
    ));
    assert!(matches!(
        qf::sigmoid(&x, &mut y),
        Err(Error::LengthMismatch { .. })
    ));
    assert!(matches!(
        qf::tanh(&x, &mut y),
        Err(Error::LengthMismatch { .. })
    ));
    assert!(matches!(
        qf::sigmoid_backward(&x, &x[..5], &mut y),
        Err(Error::LengthMismatch { .. })
    ));
    assert!(matches!(
        qf::sigmoid_backward(&x, &x, &mut y),
        Err(Error::LengthMismatch { .. })
    ));
    let mut y = [0.0f32; 6];
    assert!(matches!(
        qf::softmax(&x, &mut y, 4),
        Err(Error::RowLength { .. })
    ));
    assert!(matches!(
        qf::softmax(&x, &mut y, 0),
        Err(Error::RowLength { .. })
    ));
    assert!(matches!(
        qf::log_softmax(&x, &mut y, 5),
        Err(Error::RowLength { .. })
    ));
    if !Backend::Neon.is_available() {
        assert!(matches!(
            qf::softmax_with(Backend::Neon, &x, &mut y, 3),
            Err(Error::BackendUnavailable { .. })
        ));
        assert!(matches!(
            qf::sigmoid_with(Backend::Neon, &x, &mut y),
            Err(Error::BackendUnavailable { .. })
        ));
    } else {
        qf::softmax_with(Backend::Neon, &x, &mut y, 3).unwrap();
        assert!(y.iter().all(|&v| v == 1.0 / 3.0));
    }
}
