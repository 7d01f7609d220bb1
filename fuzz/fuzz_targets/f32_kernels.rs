//! The `f32` kernels (`qneon::f32`): `exp`, `exp_into`, `sigmoid`, `tanh`,
//! `softmax` (both variants), `log_softmax` and `sigmoid_backward`, on any
//! `f32` values (NaN, infinities, subnormals included), every backend
//! (equal bits for every non-NaN output).
//!
//! Each output is checked against the module documentation:
//! * `exp`: within 1 ulp over `[-87.3, 88.72]`, `+0` below
//!   `ln(f32::MIN_POSITIVE)`, `+inf` above `ln(f32::MAX)`, NaN for NaN;
//! * `sigmoid`: within 3 ulp (absolute `2^-126` below `f32::MIN_POSITIVE`),
//!   in `[0, 1]`, NaN for NaN;
//! * `tanh`: within 3 ulp everywhere, the sign of zero kept, NaN for NaN;
//! * `softmax`: a NaN or two `+inf` make the row NaN, one `+inf` gives 1
//!   there and 0 elsewhere, an all-`-inf` row is NaN; otherwise each
//!   output within `3 + |x - max|` ulp (absolute `2^-126` below
//!   `f32::MIN_POSITIVE`);
//! * `log_softmax`: the same special rows (0 and `-inf`), `-inf`
//!   for `-inf` inputs, otherwise within `ulp(y) + 2^-22 (1 + ln sum)`
//!   and `<= 0`;
//! * `sigmoid_backward`: 0 at saturated outputs for finite `dy`, finite for
//!   outputs in `[0, 1]`.

#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use qneon::f32::{self as kernels, SoftmaxVariant};
use qneon::Backend;
use qneon_fuzz::*;

#[derive(Arbitrary, Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    Exp,
    ExpInto,
    Sigmoid,
    Tanh,
    Softmax,
    SoftmaxOnline,
    LogSoftmax,
    SigmoidBackward,
}

/// An input value.
#[derive(Arbitrary, Clone, Copy, Debug)]
enum Value {
    Bits(u32),
    /// `v / 64`: the range where the functions are not saturated.
    Small(i16),
    /// `+-(1 + mantissa / 2^16) * 2^exponent`.
    Scaled {
        exponent: i8,
        mantissa: u16,
        negative: bool,
    },
    Special(u8),
}

const SPECIALS: [f32; 16] = [
    0.0,
    -0.0,
    f32::INFINITY,
    f32::NEG_INFINITY,
    f32::NAN,
    f32::MAX,
    f32::MIN,
    f32::MIN_POSITIVE,
    1.0e-45,
    -1.0e-45,
    88.72284,
    88.0,
    -87.33655,
    -104.0,
    1.0,
    0.5,
];

impl Value {
    fn get(self) -> f32 {
        match self {
            Value::Bits(b) => f32::from_bits(b),
            Value::Small(v) => v as f32 / 64.0,
            Value::Scaled {
                exponent,
                mantissa,
                negative,
            } => {
                let v = (1.0 + mantissa as f32 / 65536.0) * 2f32.powi(exponent as i32);
                if negative {
                    -v
                } else {
                    v
                }
            }
            Value::Special(i) => SPECIALS[i as usize % SPECIALS.len()],
        }
    }
}

#[derive(Arbitrary, Debug)]
struct Case {
    op: Op,
    shape: RowShape,
    values: Vec<Value>,
}

fuzz_target!(|case: Case| check(&case));

/// One unit in the last place of an `f32` of magnitude `|v|`.
fn ulp(v: f64) -> f64 {
    let a = v.abs();
    if a < f32::MIN_POSITIVE as f64 {
        return 2f64.powi(-149);
    }
    let exponent = ((a.to_bits() >> 52) & 0x7ff) as i32 - 1023;
    2f64.powi(exponent - 23)
}

fn same_bits(a: &f32, b: &f32) -> bool {
    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
}

fn check_exp(x: f32, y: f32, what: &str) {
    if x.is_nan() {
        assert!(y.is_nan(), "{what}: exp(NaN) = {y}");
    } else if x > 88.7229 {
        assert_eq!(y, f32::INFINITY, "{what}: exp({x})");
    } else if x < -87.3366 {
        assert_eq!(y.to_bits(), 0, "{what}: exp({x}) = {y:e}, not +0");
    } else if (-87.3..=88.72).contains(&x) {
        let exact = (x as f64).exp();
        assert!(
            (y as f64 - exact).abs() <= ulp(exact),
            "{what}: exp({x:e}) = {y:e}, exact {exact:e}: more than 1 ulp"
        );
    } else {
        assert!(y >= 0.0, "{what}: exp({x}) = {y}");
    }
}

fn check_sigmoid(x: f32, y: f32, what: &str) {
    if x.is_nan() {
        assert!(y.is_nan(), "{what}: sigmoid(NaN) = {y}");
        return;
    }
    assert!(
        (0.0..=1.0).contains(&y),
        "{what}: sigmoid({x}) = {y} outside [0, 1]"
    );
    let exact = 1.0 / (1.0 + (-(x as f64)).exp());
    let err = (y as f64 - exact).abs();
    if exact >= f32::MIN_POSITIVE as f64 {
        assert!(
            err <= 3.0 * ulp(exact),
            "{what}: sigmoid({x:e}) = {y:e}, exact {exact:e}: more than 3 ulp"
        );
    } else {
        assert!(
            err < 2f64.powi(-126),
            "{what}: sigmoid({x:e}) = {y:e}, exact {exact:e}"
        );
    }
}

fn check_tanh(x: f32, y: f32, what: &str) {
    if x.is_nan() {
        assert!(y.is_nan(), "{what}: tanh(NaN) = {y}");
        return;
    }
    assert!(
        (-1.0..=1.0).contains(&y),
        "{what}: tanh({x}) = {y} outside [-1, 1]"
    );
    if x == 0.0 {
        assert_eq!(
            y.to_bits(),
            x.to_bits(),
            "{what}: tanh({x}) = {y}: the sign of zero"
        );
    }
    let exact = (x as f64).tanh();
    assert!(
        (y as f64 - exact).abs() <= 3.0 * ulp(exact),
        "{what}: tanh({x:e}) = {y:e}, exact {exact:e}: more than 3 ulp"
    );
}

/// The special rows both softmaxes share; `true` if the row was one.
fn special_row(x: &[f32], y: &[f32], log: bool, what: &str) -> bool {
    if x.iter().any(|v| v.is_nan()) {
        assert!(
            y.iter().all(|v| v.is_nan()),
            "{what}: a row with NaN gives {y:?}"
        );
        return true;
    }
    let k = x.iter().filter(|&&v| v == f32::INFINITY).count();
    if k > 1 {
        assert!(
            y.iter().all(|v| v.is_nan()),
            "{what}: a row with {k} infinities gives {y:?}"
        );
        return true;
    }
    if k > 0 {
        for (&v, &o) in x.iter().zip(y) {
            if v == f32::INFINITY {
                if log {
                    let want = (1.0 / k as f64).ln();
                    assert!(
                        (o as f64 - want).abs() <= ulp(want),
                        "{what}: {k} infinities give {o}, not ln(1/{k})"
                    );
                } else {
                    assert_eq!(
                        o,
                        1.0 / k as f32,
                        "{what}: {k} infinities give {o}, not 1/{k}"
                    );
                }
            } else if log {
                assert_eq!(o, f32::NEG_INFINITY, "{what}: beside +inf, {v} gives {o}");
            } else {
                assert_eq!(o, 0.0, "{what}: beside +inf, {v} gives {o}");
            }
        }
        return true;
    }
    if x.iter().all(|&v| v == f32::NEG_INFINITY) {
        assert!(
            y.iter().all(|v| v.is_nan()),
            "{what}: an all -inf row gives {y:?}"
        );
        return true;
    }
    false
}

fn check_softmax_row(x: &[f32], y: &[f32], what: &str) {
    if special_row(x, y, false, what) {
        reached(|| format!("{what} special row"));
        return;
    }
    reached(|| format!("{what} finite row"));
    let max = x.iter().copied().fold(f32::NEG_INFINITY, f32::max) as f64;
    let e: Vec<f64> = x.iter().map(|&v| (v as f64 - max).exp()).collect();
    let sum: f64 = e.iter().sum();
    for (i, (&v, &o)) in x.iter().zip(y).enumerate() {
        assert!(
            (0.0..=1.0).contains(&o),
            "{what}: element {i} ({v}) gives {o}"
        );
        let exact = e[i] / sum;
        let err = (o as f64 - exact).abs();
        if exact >= f32::MIN_POSITIVE as f64 {
            let d = (v as f64 - max).abs();
            assert!(
                err <= (3.0 + d) * ulp(exact),
                "{what}: element {i} ({v:e}, max {max:e}) gives {o:e}, exact {exact:e}: more than {} ulp",
                3.0 + d
            );
        } else {
            assert!(
                err < 2f64.powi(-126),
                "{what}: element {i} ({v:e}) gives {o:e}, exact {exact:e}"
            );
        }
    }
}

fn check_log_softmax_row(x: &[f32], y: &[f32], what: &str) {
    if special_row(x, y, true, what) {
        reached(|| format!("{what} special row"));
        return;
    }
    reached(|| format!("{what} finite row"));
    let max = x.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let sum: f64 = x.iter().map(|&v| (v as f64 - max as f64).exp()).sum();
    let ln_sum = sum.ln();
    for (i, (&v, &o)) in x.iter().zip(y).enumerate() {
        if v == f32::NEG_INFINITY {
            assert_eq!(o, f32::NEG_INFINITY, "{what}: element {i} (-inf) gives {o}");
            continue;
        }
        if !(v - max).is_finite() {
            // The spread does not fit in f32: no finite promise.
            continue;
        }
        assert!(o <= 0.0, "{what}: element {i} ({v:e}) gives {o:e} > 0");
        let exact = (v as f64 - max as f64) - ln_sum;
        let bound = ulp(exact.abs().max(o.abs() as f64)) + 2f64.powi(-22) * (1.0 + ln_sum);
        assert!(
            (o as f64 - exact).abs() <= bound,
            "{what}: element {i} ({v:e}, max {max:e}) gives {o:e}, exact {exact:e} (bound {bound:e})"
        );
    }
}

fn check(case: &Case) {
    reached(|| format!("f32 {:?}", case.op));
    let values: Vec<f32> = case.values.iter().map(|v| v.get()).collect();
    let what = format!("f32 {:?}", case.op);
    match case.op {
        Op::Exp => {
            for &x in &values {
                check_exp(x, kernels::exp(x), &what);
            }
        }
        Op::ExpInto | Op::Sigmoid | Op::Tanh => {
            let output_len = match case.shape.defect {
                Some(ShapeDefect::OutputDelta(d)) => {
                    (values.len() as isize + d as isize).max(0) as usize
                }
                _ => values.len(),
            };
            let op = case.op;
            let (result, y) = on_every_backend(output_len, f32::NAN, same_bits, |backend, out| {
                let b = backend.unwrap_or(Backend::best());
                match (op, backend) {
                    (Op::ExpInto, None) => kernels::exp_into(&values, out),
                    (Op::Sigmoid, None) => kernels::sigmoid(&values, out),
                    (Op::Tanh, None) => kernels::tanh(&values, out),
                    (Op::ExpInto, _) => kernels::exp_into_with(b, &values, out),
                    (Op::Sigmoid, _) => kernels::sigmoid_with(b, &values, out),
                    _ => kernels::tanh_with(b, &values, out),
                }
            });
            assert_eq!(
                result.is_ok(),
                output_len == values.len(),
                "{what}: lengths {} / {output_len}",
                values.len()
            );
            if result.is_ok() {
                for (&x, &o) in values.iter().zip(&y) {
                    match op {
                        Op::ExpInto => check_exp(x, o, &what),
                        Op::Sigmoid => check_sigmoid(x, o, &what),
                        _ => check_tanh(x, o, &what),
                    }
                }
            }
        }
        Op::Softmax | Op::SoftmaxOnline | Op::LogSoftmax => {
            let rows = case.shape.apply(values);
            let op = case.op;
            let (result, y) =
                on_every_backend(rows.output_len, f32::NAN, same_bits, |backend, out| {
                    let b = backend.unwrap_or(Backend::best());
                    let (x, r) = (&rows.input[..], rows.row_len);
                    match (op, backend) {
                        (Op::Softmax, None) => kernels::softmax(x, out, r),
                        (Op::Softmax, Some(b)) => kernels::softmax_with(b, x, out, r),
                        (Op::SoftmaxOnline, _) => {
                            kernels::softmax_variant(SoftmaxVariant::Online, b, x, out, r)
                        }
                        (_, None) => kernels::log_softmax(x, out, r),
                        _ => kernels::log_softmax_with(b, x, out, r),
                    }
                });
            assert_eq!(
                result.is_ok(),
                rows.valid,
                "{what}: lengths {} / {} row_len {}",
                rows.input.len(),
                rows.output_len,
                rows.row_len
            );
            if result.is_err() {
                return;
            }
            for (xr, yr) in rows.input.chunks(rows.row_len).zip(y.chunks(rows.row_len)) {
                if op == Op::LogSoftmax {
                    check_log_softmax_row(xr, yr, &what);
                } else {
                    check_softmax_row(xr, yr, &what);
                }
            }
        }
        Op::SigmoidBackward => {
            let half = values.len() / 2;
            let (y, dy) = (&values[..half], &values[half..2 * half]);
            let dx_len = match case.shape.defect {
                Some(ShapeDefect::OutputDelta(d)) => (half as isize + d as isize).max(0) as usize,
                _ => half,
            };
            let (result, dx) =
                on_every_backend(dx_len, f32::NAN, same_bits, |backend, out| match backend {
                    None => kernels::sigmoid_backward(y, dy, out),
                    Some(b) => kernels::sigmoid_backward_with(b, y, dy, out),
                });
            assert_eq!(
                result.is_ok(),
                dx_len == half,
                "{what}: lengths {half} / {dx_len}"
            );
            if result.is_err() {
                return;
            }
            for i in 0..half {
                if dy[i].is_finite() && (0.0..=1.0).contains(&y[i]) {
                    assert!(
                        dx[i].is_finite(),
                        "{what}: y {} dy {} gives dx {}",
                        y[i],
                        dy[i],
                        dx[i]
                    );
                    if y[i] == 0.0 || y[i] == 1.0 {
                        assert_eq!(
                            dx[i], 0.0,
                            "{what}: saturated y {} with dy {} gives dx {}",
                            y[i], dy[i], dx[i]
                        );
                    }
                }
            }
        }
    }
}
