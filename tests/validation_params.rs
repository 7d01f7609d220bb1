//! Every public constructor over a grid of extreme parameters: each point
//! gives either a correct operator or an `Error` whose message names the
//! offending parameter; nothing panics (the test profile has overflow checks
//! and debug assertions on).
//!
//! Found by an adversarial probe: `Softmax::<i16>::new` with input scale
//! 1e30 and beta 1e30 (`Method::Lut`) and `Add::new` with a scale of
//! `f32::MAX` returned `Multiplier { inf }` (all three at `f32::MAX`:
//! `Multiplier { NaN }`), naming no parameter; `NoNorm::from_f32` with a NaN
//! gamma said "must be finite and > 0" although negative gammas are valid.
//!
//! The grid: scales and betas `f32::MAX`, `f32::MAX / 2`, 1e30, 1e10, 1,
//! 0.1, 1e-10, 1e-30, `f32::MIN_POSITIVE`, subnormals, 0, -0, negative, NaN,
//! ±inf; zero points from `i32::MIN` to `i32::MAX` around each type's range.
//! Each parameter is varied alone from a valid point (so the error must name
//! that one), and every scale at once.
//!
//! "Correct" is checked by running the operator on every backend and
//! comparing with exact `f64` math on the dequantized inputs (clamped to the
//! output type): activations and softmax within their methods' stated
//! accuracy (8-bit: 1 LSB of the correctly rounded value, log-softmax 3;
//! int16: the bounds of `tests/validation_int16_scales.rs`), the layer ops
//! (add, sub, mul, NoNorm, GEMM, matmul) within 1 LSB of exact.

use qneon::q31;
use qneon::{
    Add, Backend, Error, FusedActivation, Gemm, LogSoftmax, Logistic, MatMul, Method, Mul, NoNorm,
    QuantElem, QuantParams, Requantization, Rounding, Softmax, Sub, Tanh,
};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// Scales and betas at every edge: valid ones first, then invalid ones.
const EXTREME_VALUES: [f32; 18] = [
    f32::MAX,
    f32::MAX / 2.0,
    1e30,
    1e10,
    1.0,
    0.1,
    1e-10,
    1e-30,
    f32::MIN_POSITIVE,
    f32::MIN_POSITIVE / 4.0, // subnormal
    f32::from_bits(1),       // the smallest subnormal
    0.0,
    -0.0,
    -1.0,
    -f32::MAX,
    f32::NAN,
    f32::INFINITY,
    f32::NEG_INFINITY,
];

/// Zero points around every type's range.
const EXTREME_ZERO_POINTS: [i32; 13] = [
    i32::MIN,
    -32769,
    -32768,
    -129,
    -128,
    -1,
    0,
    127,
    128,
    255,
    256,
    32768,
    i32::MAX,
];

const BACKENDS_NOTE: &str = "every available backend";

/// Asserts that `e`'s message names one of `names` (the varied parameter,
/// in the words the library uses for it).
#[track_caller]
fn assert_names(case: &str, e: &Error, names: &[&str]) {
    let msg = e.to_string();
    assert!(
        names.iter().any(|n| msg.contains(n)),
        "{case}: the error \"{msg}\" ({e:?}) names none of {names:?}"
    );
}

/// Runs `f`, failing the test (with the case) if it panics.
#[track_caller]
fn no_panic<R>(case: &str, f: impl FnOnce() -> R) -> R {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(p) => {
            let msg = p
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            panic!("{case}: panicked: {msg}")
        }
    }
}

/// `|got - exact| <= bound` for every element.
#[track_caller]
fn assert_close(case: &str, got: &[i32], exact: &[f64], bound: f64) {
    for (i, (g, e)) in got.iter().zip(exact).enumerate() {
        assert!(
            (*g as f64 - e).abs() <= bound,
            "{case}: element {i} is {g}, exact {e} (bound {bound} LSB, {BACKENDS_NOTE})"
        );
    }
}

// ---------------------------------------------------------------------------
// Activations, softmax, log-softmax.
// ---------------------------------------------------------------------------

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Act {
    Softmax,
    LogSoftmax,
    Logistic,
    Tanh,
}

/// TFLite's output quantization of `act` on `T`.
fn output_of<T: QuantElem>(act: Act) -> QuantParams {
    let (scale, zero_point) = match (act, T::MIN, T::MAX) {
        (Act::Softmax | Act::Logistic, -128, _) => (1.0 / 256.0, -128),
        (Act::Softmax | Act::Logistic, 0, _) => (1.0 / 256.0, 0),
        (Act::Softmax | Act::Logistic, _, _) => (1.0 / 32768.0, 0),
        (Act::Tanh, -128, _) => (1.0 / 128.0, 0),
        (Act::Tanh, 0, _) => (1.0 / 128.0, 128),
        (Act::Tanh, _, _) => (1.0 / 32768.0, 0),
        (Act::LogSoftmax, -128, _) => (16.0 / 256.0, 127),
        (Act::LogSoftmax, _, _) => (16.0 / 256.0, 255),
    };
    QuantParams::new(scale, zero_point)
}

/// One prepared activation-style operator, run on `x` with `row_len`.
type Runner<T> = Box<dyn Fn(Backend, &[T], &mut [T], usize) -> Result<(), Error>>;

fn prepare<T: QuantElem>(
    act: Act,
    input: QuantParams,
    beta: f32,
    output: QuantParams,
    method: Method,
) -> Result<Runner<T>, Error> {
    Ok(match act {
        Act::Softmax => {
            let op = Softmax::<T>::new(input, beta, output, method)?;
            Box::new(move |b: Backend, x: &[T], y: &mut [T], r: usize| op.run_with(b, x, y, r))
        }
        Act::LogSoftmax => {
            let op = LogSoftmax::<T>::new(input, output, method)?;
            Box::new(move |b: Backend, x: &[T], y: &mut [T], r: usize| op.run_with(b, x, y, r))
        }
        Act::Logistic => {
            let op = Logistic::<T>::new(input, output, method)?;
            Box::new(move |b: Backend, x: &[T], y: &mut [T], _: usize| op.run_with(b, x, y))
        }
        Act::Tanh => {
            let op = Tanh::<T>::new(input, output, method)?;
            Box::new(move |b: Backend, x: &[T], y: &mut [T], _: usize| op.run_with(b, x, y))
        }
    })
}

/// Inputs: every value of 8-bit types, 257 spread values of int16.
fn act_inputs<T: QuantElem + TryFrom<i32>>() -> Vec<T> {
    let values: Vec<i32> = if T::MAX - T::MIN == 255 {
        (T::MIN..=T::MAX).collect()
    } else {
        (0..=256).map(|i| (T::MIN + i * 255).min(T::MAX)).collect()
    };
    values
        .into_iter()
        .map(|v| T::try_from(v).ok().unwrap())
        .collect()
}

/// Exact outputs (unrounded, clamped to `T`) of `act` on `x` in rows of `row_len`.
fn exact_act<T: QuantElem>(
    act: Act,
    input: QuantParams,
    beta: f32,
    output: QuantParams,
    x: &[T],
    row_len: usize,
) -> Vec<f64> {
    let real = |q: &T| (q.to_i32() as f64 - input.zero_point as f64) * input.scale as f64;
    let quantize = |v: f64| {
        (v / output.scale as f64 + output.zero_point as f64).clamp(T::MIN as f64, T::MAX as f64)
    };
    let mut out = Vec::with_capacity(x.len());
    for row in x.chunks(row_len) {
        match act {
            Act::Logistic | Act::Tanh => out.extend(row.iter().map(|q| {
                let v = real(q);
                quantize(if act == Act::Tanh {
                    v.tanh()
                } else {
                    1.0 / (1.0 + (-v).exp())
                })
            })),
            Act::Softmax | Act::LogSoftmax => {
                let k = if act == Act::Softmax {
                    beta as f64
                } else {
                    1.0
                };
                let max = row.iter().map(|q| q.to_i32()).max().unwrap();
                // Differences in input steps times scale times beta; d = 0 is
                // exactly 0 even where the product would overflow.
                let z: Vec<f64> = row
                    .iter()
                    .map(|q| {
                        let d = (q.to_i32() - max) as f64;
                        if d == 0.0 {
                            0.0
                        } else {
                            d * input.scale as f64 * k
                        }
                    })
                    .collect();
                let sum: f64 = z.iter().map(|v| v.exp()).sum();
                out.extend(z.iter().map(|v| {
                    quantize(if act == Act::Softmax {
                        v.exp() / sum
                    } else {
                        v - sum.ln()
                    })
                }));
            }
        }
    }
    out
}

/// The accuracy each method promises, in LSB against the unrounded exact value.
fn act_bound<T: QuantElem>(act: Act, method: Method, input: QuantParams, row_len: usize) -> f64 {
    let int16 = T::MAX - T::MIN > 255;
    match (act, method, int16) {
        // Within 1 LSB of the correctly rounded value.
        (Act::Logistic | Act::Tanh | Act::Softmax, _, false) => 1.5,
        // log-softmax's Q12.19 sum and log: 3 LSB measured (README).
        (Act::LogSoftmax, _, _) => 3.5,
        (_, Method::FixedPoint | Method::DequantF32, true) => 1.5,
        // int16 Method::Lut: see tests/validation_int16_scales.rs.
        (Act::Logistic, _, true) => {
            if near_power_of_two(input.scale, -12) {
                6.4 + 32768.0 * 0.2241 * 0.0007
            } else {
                2.54
            }
        }
        (Act::Tanh, _, true) => {
            if near_power_of_two(input.scale, -12) || near_power_of_two(input.scale, -11) {
                11.8 + 32768.0 * 0.4483 * 0.0007
            } else {
                5.22
            }
        }
        // exact * 2n / (32768 sum) + 2 with sum >= 1 and exact <= 32768.
        (Act::Softmax, _, true) => 2.0 * row_len as f64 + 2.0,
    }
}

fn near_power_of_two(scale: f32, k: i32) -> bool {
    (scale.ln() / std::f32::consts::LN_2 - k as f32).abs() < 1e-3
}

/// Prepares `act` on `T` with `method` at one grid point; if it is accepted,
/// runs it on every backend and checks it against exact math. `varied`
/// names the parameter(s) off the valid point, for the error message check.
fn act_point<T: QuantElem + TryFrom<i32>>(
    act: Act,
    method: Method,
    input: QuantParams,
    beta: f32,
    output: QuantParams,
    varied: &[&str],
) -> bool {
    let case = format!(
        "{act:?}<{}> {method:?} input {input:?} beta {beta:e} output {output:?}",
        T::NAME
    );
    let op = match no_panic(&case, || prepare::<T>(act, input, beta, output, method)) {
        Ok(op) => op,
        Err(e) => {
            assert_names(&case, &e, varied);
            return false;
        }
    };
    let x = act_inputs::<T>();
    let row_len = match act {
        Act::Softmax | Act::LogSoftmax => 16,
        _ => 1,
    };
    let n = x.len() / row_len * row_len;
    let x = &x[..n];
    let exact = exact_act::<T>(act, input, beta, output, x, row_len);
    let bound = act_bound::<T>(act, method, input, row_len);
    for backend in Backend::available() {
        let mut y = vec![T::default(); n];
        let r = no_panic(&case, || op(backend, x, &mut y, row_len));
        assert_eq!(r, Ok(()), "{case} {backend:?}");
        let got: Vec<i32> = y.iter().map(|v| v.to_i32()).collect();
        assert_close(&format!("{case} {backend:?}"), &got, &exact, bound);
    }
    true
}

const METHODS: [Method; 4] = [
    Method::FixedPoint,
    Method::Lut,
    Method::LutFixedPoint,
    Method::DequantF32,
];

/// Every activation-style op and method of `T` over the grid.
fn sweep_activations<T: QuantElem + TryFrom<i32>>() -> (usize, usize) {
    let (mut accepted, mut rejected) = (0, 0);
    let mut count = |ok: bool| {
        if ok {
            accepted += 1
        } else {
            rejected += 1
        }
    };
    let nominal_in = QuantParams::new(0.05, 0);
    for act in [Act::Softmax, Act::LogSoftmax, Act::Logistic, Act::Tanh] {
        let out = output_of::<T>(act);
        for method in METHODS {
            // Methods an op and type do not implement are refused whatever
            // the parameters (tests/errors.rs checks that error).
            if prepare::<T>(act, nominal_in, 1.0, out, method).is_err() {
                continue;
            }
            for &s in &EXTREME_VALUES {
                let input = QuantParams::new(s, 0);
                count(act_point::<T>(
                    act,
                    method,
                    input,
                    1.0,
                    out,
                    &["input scale"],
                ));
                let output = QuantParams::new(s, out.zero_point);
                count(act_point::<T>(
                    act,
                    method,
                    nominal_in,
                    1.0,
                    output,
                    &["output"],
                ));
                if act == Act::Softmax {
                    count(act_point::<T>(act, method, nominal_in, s, out, &["beta"]));
                    for &beta in &EXTREME_VALUES {
                        count(act_point::<T>(
                            act,
                            method,
                            input,
                            beta,
                            out,
                            &["input scale", "beta"],
                        ));
                    }
                }
            }
            for &zp in &EXTREME_ZERO_POINTS {
                let input = QuantParams::new(0.05, zp);
                count(act_point::<T>(
                    act,
                    method,
                    input,
                    1.0,
                    out,
                    &["input zero point"],
                ));
                let output = QuantParams::new(out.scale, zp);
                count(act_point::<T>(
                    act,
                    method,
                    nominal_in,
                    1.0,
                    output,
                    &["output"],
                ));
            }
        }
    }
    (accepted, rejected)
}

#[test]
fn activations_over_extreme_parameters() {
    for (name, (accepted, rejected)) in [
        ("int8", sweep_activations::<i8>()),
        ("uint8", sweep_activations::<u8>()),
        ("int16", sweep_activations::<i16>()),
    ] {
        println!(
            "{name}: {accepted} grid points accepted and correct, {rejected} rejected by name"
        );
        assert!(
            accepted > 100 && rejected > 100,
            "{name}: {accepted} / {rejected}"
        );
    }
}

#[test]
fn q31_over_extreme_integer_bits() {
    let x: Vec<i32> = vec![i32::MIN, -1, 0, 1, i32::MAX, 123_456_789];
    for backend in Backend::available() {
        for bits in [0, 1, 27, 28, 29, 31, 32, 64, u32::MAX] {
            let case = format!("q31 {backend:?} integer_bits {bits}");
            let mut y = vec![0i32; x.len()];
            let results = [
                no_panic(&case, || q31::softmax_with(backend, &x, bits, &mut y, 3)),
                no_panic(&case, || q31::logistic_with(backend, &x, bits, &mut y)),
                no_panic(&case, || q31::tanh_with(backend, &x, bits, &mut y)),
            ];
            for r in results {
                match r {
                    Ok(()) => assert!(bits <= q31::MAX_INTEGER_BITS, "{case}"),
                    Err(e) => assert_names(&case, &e, &["integer_bits"]),
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------
// Add, Sub, Mul.
// ---------------------------------------------------------------------------

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Binary {
    Add,
    Sub,
    Mul,
}

/// 17 x 17 pairs of int8 values spread over the range.
fn binary_inputs() -> (Vec<i8>, Vec<i8>) {
    let v: Vec<i8> = (0..17).map(|i| (-128 + i * 16).min(127) as i8).collect();
    let a = v.iter().flat_map(|&x| v.iter().map(move |_| x)).collect();
    let b = v.iter().flat_map(|_| v.iter().copied()).collect();
    (a, b)
}

/// One binary op at one grid point: prepared (or refused by name), run on
/// every backend, within 1 LSB of exact.
fn binary_point(
    op: Binary,
    a: QuantParams,
    b: QuantParams,
    out: QuantParams,
    rounding: Rounding,
    varied: &[&str],
) -> bool {
    let case = format!("{op:?} {rounding:?} a {a:?} b {b:?} out {out:?}");
    let none = FusedActivation::None;
    type Run = Box<dyn Fn(Backend, &[i8], &[i8], &mut [i8]) -> Result<(), Error>>;
    let prepared: Result<Run, Error> = no_panic(&case, || {
        Ok(match op {
            Binary::Add => {
                let o = Add::new(a, b, out, none, rounding)?;
                Box::new(move |be: Backend, x: &[i8], y: &[i8], z: &mut [i8]| {
                    o.run_with(be, x, y, z)
                }) as Run
            }
            Binary::Sub => {
                let o = Sub::new(a, b, out, none, rounding)?;
                Box::new(move |be: Backend, x: &[i8], y: &[i8], z: &mut [i8]| {
                    o.run_with(be, x, y, z)
                }) as Run
            }
            Binary::Mul => {
                let o = Mul::new(a, b, out, none, rounding)?;
                Box::new(move |be: Backend, x: &[i8], y: &[i8], z: &mut [i8]| {
                    o.run_with(be, x, y, z)
                }) as Run
            }
        })
    });
    let run = match prepared {
        Ok(r) => r,
        Err(e) => {
            assert_names(&case, &e, varied);
            return false;
        }
    };
    let (x, y) = binary_inputs();
    let exact: Vec<f64> = x
        .iter()
        .zip(&y)
        .map(|(&p, &q)| {
            let ra = (p as f64 - a.zero_point as f64) * a.scale as f64;
            let rb = (q as f64 - b.zero_point as f64) * b.scale as f64;
            let r = match op {
                Binary::Add => ra + rb,
                Binary::Sub => ra - rb,
                Binary::Mul => ra * rb,
            };
            (r / out.scale as f64 + out.zero_point as f64).clamp(-128.0, 127.0)
        })
        .collect();
    for backend in Backend::available() {
        let mut z = vec![0i8; x.len()];
        let r = no_panic(&case, || run(backend, &x, &y, &mut z));
        assert_eq!(r, Ok(()), "{case} {backend:?}");
        let got: Vec<i32> = z.iter().map(|&v| v as i32).collect();
        assert_close(&format!("{case} {backend:?}"), &got, &exact, 1.0);
    }
    true
}

#[test]
fn add_sub_mul_over_extreme_parameters() {
    let nominal = QuantParams::new(0.05, 3);
    let (mut accepted, mut rejected) = (0, 0);
    for op in [Binary::Add, Binary::Sub, Binary::Mul] {
        for rounding in [Rounding::Single, Rounding::Double] {
            let mut point = |a, b, out, varied: &[&str]| {
                if binary_point(op, a, b, out, rounding, varied) {
                    accepted += 1;
                } else {
                    rejected += 1;
                }
            };
            for &s in &EXTREME_VALUES {
                let q = QuantParams::new(s, 3);
                point(q, nominal, nominal, &["input 1 scale", "input scales"]);
                point(nominal, q, nominal, &["input 2 scale", "input scales"]);
                point(nominal, nominal, q, &["output scale"]);
                point(q, q, q, &["scale"]);
                for &t in &EXTREME_VALUES {
                    let r = QuantParams::new(t, -7);
                    point(
                        q,
                        r,
                        nominal,
                        &["input 1 scale", "input 2 scale", "input scales"],
                    );
                    point(
                        q,
                        nominal,
                        r,
                        &["input 1 scale", "output scale", "input scales"],
                    );
                }
            }
            for &zp in &EXTREME_ZERO_POINTS {
                let q = QuantParams::new(0.05, zp);
                point(q, nominal, nominal, &["input 1 zero point"]);
                point(nominal, q, nominal, &["input 2 zero point"]);
                point(nominal, nominal, q, &["output zero point"]);
            }
        }
    }
    println!(
        "add/sub/mul: {accepted} grid points accepted and correct, {rejected} rejected by name"
    );
    assert!(accepted > 100 && rejected > 100, "{accepted} / {rejected}");
}

// ---------------------------------------------------------------------------
// NoNorm, Gemm, MatMul.
// ---------------------------------------------------------------------------

/// Every int8 input value, 3 channels.
fn channel_inputs() -> Vec<i8> {
    (-128..=127)
        .flat_map(|v| [v as i8, v as i8, v as i8])
        .collect()
}

fn check_layer(case: &str, run: impl Fn(Backend, &mut [i8]) -> Result<(), Error>, exact: &[f64]) {
    for backend in Backend::available() {
        let mut y = vec![0i8; exact.len()];
        let r = no_panic(case, || run(backend, &mut y));
        assert_eq!(r, Ok(()), "{case} {backend:?}");
        let got: Vec<i32> = y.iter().map(|&v| v as i32).collect();
        assert_close(&format!("{case} {backend:?}"), &got, exact, 1.0);
    }
}

fn quantize_i8(real: f64, out: QuantParams) -> f64 {
    (real / out.scale as f64 + out.zero_point as f64).clamp(-128.0, 127.0)
}

/// `NoNorm::from_f32` with real gammas and betas, `NoNorm::new` with
/// quantized ones.
fn no_norm_point(
    gamma: [f32; 3],
    beta: [f32; 3],
    input: QuantParams,
    output: QuantParams,
    varied: &[&str],
) -> bool {
    let case =
        format!("NoNorm::from_f32 gamma {gamma:?} beta {beta:?} in {input:?} out {output:?}");
    let none = FusedActivation::None;
    let op = match no_panic(&case, || {
        NoNorm::from_f32(&gamma, &beta, input, output, none)
    }) {
        Ok(op) => op,
        Err(e) => {
            assert_names(&case, &e, varied);
            return false;
        }
    };
    let x = channel_inputs();
    // Exact math on the parameters as the op quantizes them (its documented
    // quantization: gamma = +-127 steps of the f32 scale |gamma| / 127, beta
    // rounded to steps of input scale * that scale; a gamma whose scale
    // underflows f32 is zero). At output scales far below |x gamma| the f32
    // rounding of the gamma scale shows, so the real gamma would not do.
    let exact: Vec<f64> = x
        .iter()
        .enumerate()
        .map(|(i, &q)| {
            let c = i % 3;
            let real_x = (q as f64 - input.zero_point as f64) * input.scale as f64;
            let s = gamma[c].abs() / 127.0;
            let (g, s) = if s == 0.0 {
                (0.0, 1.0f32)
            } else {
                (127f64.copysign(gamma[c] as f64) * s as f64, s)
            };
            let step = input.scale as f64 * s as f64;
            let b = (beta[c] as f64 / step)
                .round()
                .clamp(i32::MIN as f64, i32::MAX as f64)
                * step;
            quantize_i8(real_x * g + b, output)
        })
        .collect();
    check_layer(&case, |b, y| op.run_with(b, &x, y), &exact);
    true
}

#[test]
fn no_norm_over_extreme_parameters() {
    let nominal = QuantParams::new(0.05, 3);
    let (mut accepted, mut rejected) = (0, 0);
    let mut count = |ok: bool| {
        if ok {
            accepted += 1
        } else {
            rejected += 1
        }
    };
    for &v in &EXTREME_VALUES {
        count(no_norm_point(
            [v, 1.0, -2.0],
            [0.5; 3],
            nominal,
            nominal,
            &["gamma"],
        ));
        count(no_norm_point(
            [1.0, -v, 0.0],
            [0.5; 3],
            nominal,
            nominal,
            &["gamma"],
        ));
        count(no_norm_point(
            [1.0, 2.0, -2.0],
            [v, 0.0, -v],
            nominal,
            nominal,
            &["beta"],
        ));
        let q = QuantParams::new(v, 3);
        count(no_norm_point(
            [1.0, -0.5, 3.0],
            [0.5; 3],
            q,
            nominal,
            &["input scale", "gamma scale"],
        ));
        count(no_norm_point(
            [1.0, -0.5, 3.0],
            [0.5; 3],
            nominal,
            q,
            &["output scale"],
        ));
    }
    for &zp in &EXTREME_ZERO_POINTS {
        let q = QuantParams::new(0.05, zp);
        count(no_norm_point(
            [1.0; 3],
            [0.0; 3],
            q,
            nominal,
            &["input zero point"],
        ));
        count(no_norm_point(
            [1.0; 3],
            [0.0; 3],
            nominal,
            q,
            &["output zero point"],
        ));
    }
    // NoNorm::new: a quantized gamma with an extreme channel scale.
    for &s in &EXTREME_VALUES {
        let case = format!("NoNorm::new gamma scale {s:e}");
        let r = no_panic(&case, || {
            NoNorm::new(
                &[127, -3],
                &[s, 0.5],
                &[0, 0],
                nominal,
                nominal,
                FusedActivation::None,
            )
        });
        match r {
            Err(e) => {
                assert_names(&case, &e, &["gamma scale"]);
                count(false);
            }
            Ok(op) => {
                let x: Vec<i8> = (-128..=127).flat_map(|v| [v as i8, v as i8]).collect();
                let exact: Vec<f64> = x
                    .iter()
                    .enumerate()
                    .map(|(i, &q)| {
                        let (g, gs) = if i % 2 == 0 {
                            (127.0, s as f64)
                        } else {
                            (-3.0, 0.5)
                        };
                        let real = (q as f64 - 3.0) * 0.05 * g * gs;
                        quantize_i8(real, nominal)
                    })
                    .collect();
                check_layer(&case, |b, y| op.run_with(b, &x, y), &exact);
                count(true);
            }
        }
    }
    println!("no_norm: {accepted} grid points accepted and correct, {rejected} rejected by name");
    assert!(accepted > 20 && rejected > 20, "{accepted} / {rejected}");
}

const GEMM_K: usize = 4;
const GEMM_WEIGHTS: [i8; 2 * GEMM_K] = [127, -128, 3, 0, -5, 64, 1, -1];

/// Input rows for the GEMM: 64 rows of depth 4 spread over the int8 range.
fn gemm_inputs() -> Vec<i8> {
    (0..64 * GEMM_K)
        .map(|i| ((i * 37) % 256) as i32 - 128)
        .map(|v| v as i8)
        .collect()
}

/// Exact `m x n` output of `x (m x k) * w^T (n x k)` with per-channel effective scales.
fn exact_gemm(
    x: &[i8],
    input: QuantParams,
    weight_scales: &[f32],
    output: QuantParams,
) -> Vec<f64> {
    let n = weight_scales.len();
    let mut out = Vec::new();
    for row in x.chunks(GEMM_K) {
        for c in 0..n {
            let acc: f64 = row
                .iter()
                .zip(&GEMM_WEIGHTS[c * GEMM_K..(c + 1) * GEMM_K])
                .map(|(&a, &w)| (a as f64 - input.zero_point as f64) * w as f64)
                .sum();
            out.push(quantize_i8(
                acc * input.scale as f64 * weight_scales[c] as f64,
                output,
            ));
        }
    }
    out
}

fn gemm_point(
    input: QuantParams,
    weight_scales: [f32; 2],
    output: QuantParams,
    requantization: Requantization,
    varied: &[&str],
) -> bool {
    let case = format!(
        "Gemm {requantization:?} in {input:?} weight scales {weight_scales:?} out {output:?}"
    );
    let r = no_panic(&case, || {
        Gemm::new(
            &GEMM_WEIGHTS,
            2,
            GEMM_K,
            None,
            input,
            &weight_scales,
            output,
            FusedActivation::None,
            requantization,
        )
    });
    let op = match r {
        Ok(op) => op,
        Err(e) => {
            assert_names(&case, &e, varied);
            return false;
        }
    };
    let x = gemm_inputs();
    let exact = exact_gemm(&x, input, &weight_scales, output);
    check_layer(&case, |b, y| op.run_with(b, &x, y, 64), &exact);
    true
}

fn matmul_point(
    lhs: QuantParams,
    rhs: QuantParams,
    output: QuantParams,
    rounding: Rounding,
    varied: &[&str],
) -> bool {
    let case = format!("MatMul {rounding:?} lhs {lhs:?} rhs {rhs:?} out {output:?}");
    let (m, n, k) = (64, 2, GEMM_K);
    let op = match no_panic(&case, || {
        MatMul::new(m, n, k, false, true, lhs, rhs, output, rounding)
    }) {
        Ok(op) => op,
        Err(e) => {
            assert_names(&case, &e, varied);
            return false;
        }
    };
    let x = gemm_inputs();
    // rhs stored n x k (adj_y), as the GEMM's weights, offset by its zero point.
    let rhs_q: Vec<i8> = GEMM_WEIGHTS
        .iter()
        .map(|&w| (w as i32 + rhs.zero_point).clamp(-128, 127) as i8)
        .collect();
    let mut exact = Vec::new();
    for row in x.chunks(k) {
        for c in 0..n {
            let acc: f64 = row
                .iter()
                .zip(&rhs_q[c * k..(c + 1) * k])
                .map(|(&a, &w)| {
                    (a as f64 - lhs.zero_point as f64) * (w as f64 - rhs.zero_point as f64)
                })
                .sum();
            exact.push(quantize_i8(
                acc * lhs.scale as f64 * rhs.scale as f64,
                output,
            ));
        }
    }
    check_layer(
        &case,
        |b, y| {
            let mut bytes = vec![0i8; op.scratch_bytes()];
            let mut words = vec![0i32; op.scratch_words()];
            op.run_with(b, &x, &rhs_q, y, &mut bytes, &mut words)
        },
        &exact,
    );
    true
}

#[test]
fn gemm_and_matmul_over_extreme_parameters() {
    let nominal = QuantParams::new(0.05, 3);
    let (mut accepted, mut rejected) = (0, 0);
    let mut count = |ok: bool| {
        if ok {
            accepted += 1
        } else {
            rejected += 1
        }
    };
    for requantization in [
        Requantization::Multiplier(Rounding::Single),
        Requantization::Multiplier(Rounding::Double),
        Requantization::RealF64,
    ] {
        for &s in &EXTREME_VALUES {
            let q = QuantParams::new(s, 3);
            count(gemm_point(
                q,
                [0.01, 0.02],
                nominal,
                requantization,
                &["input scale"],
            ));
            count(gemm_point(
                nominal,
                [s, 0.02],
                nominal,
                requantization,
                &["weight scale"],
            ));
            count(gemm_point(
                nominal,
                [0.01, 0.02],
                q,
                requantization,
                &["output scale"],
            ));
            count(gemm_point(q, [s, s], q, requantization, &["scale"]));
        }
        for &zp in &EXTREME_ZERO_POINTS {
            let q = QuantParams::new(0.05, zp);
            count(gemm_point(
                q,
                [0.01, 0.02],
                nominal,
                requantization,
                &["input zero point"],
            ));
            count(gemm_point(
                nominal,
                [0.01, 0.02],
                q,
                requantization,
                &["output zero point"],
            ));
        }
    }
    for rounding in [Rounding::Single, Rounding::Double] {
        for &s in &EXTREME_VALUES {
            let q = QuantParams::new(s, 3);
            count(matmul_point(q, nominal, nominal, rounding, &["lhs scale"]));
            count(matmul_point(nominal, q, nominal, rounding, &["rhs scale"]));
            count(matmul_point(
                nominal,
                nominal,
                q,
                rounding,
                &["output scale"],
            ));
            count(matmul_point(q, q, q, rounding, &["scale"]));
        }
        for &zp in &EXTREME_ZERO_POINTS {
            let q = QuantParams::new(0.05, zp);
            count(matmul_point(
                q,
                nominal,
                nominal,
                rounding,
                &["lhs zero point"],
            ));
            count(matmul_point(
                nominal,
                q,
                nominal,
                rounding,
                &["rhs zero point"],
            ));
            count(matmul_point(
                nominal,
                nominal,
                q,
                rounding,
                &["output zero point"],
            ));
        }
    }
    println!(
        "gemm/matmul: {accepted} grid points accepted and correct, {rejected} rejected by name"
    );
    assert!(accepted > 50 && rejected > 50, "{accepted} / {rejected}");
}

/// The probe's cases, one by one.
#[test]
fn the_probes_cases() {
    // int16 softmax at input scale 1e30 and beta 1e30: the f32 product is
    // infinite. Method::Lut refuses it (TFLite's 32-bit rescaling overflows
    // from a product of about 5.0 on), naming the limit; Method::FixedPoint
    // runs it, the maximum taking all of the probability.
    let make = |method| {
        Softmax::<i16>::new(
            QuantParams::new(1e30, 0),
            1e30,
            QuantParams::new(1.0 / 32768.0, 0),
            method,
        )
    };
    let e = make(Method::Lut).unwrap_err();
    assert_names("softmax int16 lut 1e30", &e, &["input scale * beta", "5.0"]);
    let op = make(Method::FixedPoint).unwrap();
    let mut y = [0i16; 4];
    op.run(&[-5, 7, 6, -32768], &mut y, 4).unwrap();
    assert!(
        y[1] >= 32760 && y.iter().enumerate().all(|(i, &v)| i == 1 || v <= 2),
        "{y:?}"
    );

    // Add at f32::MAX: one huge input scale needs an output multiplier >= 1
    // (refused, naming the scales); all three at f32::MAX is exact.
    let max = QuantParams::new(f32::MAX, 0);
    let one = QuantParams::new(1.0, 0);
    let e = Add::new(max, one, one, FusedActivation::None, Rounding::Single).unwrap_err();
    assert!(matches!(e, Error::Unsupported { op: "add", .. }), "{e:?}");
    assert_names("add f32::MAX", &e, &["input scales", "output scale"]);
    for rounding in [Rounding::Single, Rounding::Double] {
        let add = Add::new(max, max, max, FusedActivation::None, rounding).unwrap();
        let mut z = [0i8; 4];
        add.run(&[1, -3, 100, 0], &[2, 5, 100, -128], &mut z)
            .unwrap();
        assert_eq!(z, [3, 2, 127, -128]);
    }

    // NoNorm::from_f32: a NaN gamma is "must be finite", not "> 0";
    // negative and zero gammas are valid.
    let none = FusedActivation::None;
    let e = NoNorm::from_f32(&[f32::NAN], &[0.0], one, one, none).unwrap_err();
    let msg = e.to_string();
    assert!(
        msg.contains("gamma must be finite") && !msg.contains("> 0"),
        "{msg}"
    );
    let op = NoNorm::from_f32(&[-2.0, 0.0], &[1.0, -3.0], one, one, none).unwrap();
    let mut z = [0i8; 2];
    op.run(&[5, 5], &mut z).unwrap();
    assert_eq!(z, [-9, -3]);
}
