//! Raw Q31 `softmax`, `logistic` and `tanh` (`qneon::q31`) for any
//! `integer_bits` (above `MAX_INTEGER_BITS` must be an error), on raw `i32`
//! and on `fixed` types (matching ones give the raw bytes; mismatched
//! fraction bits must be an error), every backend.
//!
//! When a call succeeds, the properties `tests/invariants.rs` states:
//! * softmax: outputs `>= 0`, each row sums to `2^31` within `16 + n` LSB,
//!   every output within `205.6 + (n - 1)/2` LSB of exact `f64` softmax
//!   (`346.7 + (n - 1)/2` for `integer_bits <= 4`, where a difference below
//!   the format's range is split in two exp factors; derived and measured
//!   in `tests/q31_softmax_bound.rs`),
//!   exactly monotonic, the maximum gets the largest output, and adding a
//!   constant to the input changes nothing;
//! * logistic: outputs `>= 0`, monotonic within 8 LSB, and
//!   `logistic(x) + logistic(-x)` exactly `2^31 - 1` (`2^31` at 0);
//! * tanh: monotonic within 16 LSB, and `tanh(-x) = -tanh(x)` exactly.

#![no_main]

use arbitrary::Arbitrary;
use fixed::types::{I13F19, I1F31, I29F3, I4F28, I6F26};
use libfuzzer_sys::fuzz_target;
use qneon::q31::{self, RawQ31};
use qneon::Backend;
use qneon_fuzz::*;

#[derive(Arbitrary, Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    Softmax,
    Logistic,
    Tanh,
}

/// How the slices are typed.
#[derive(Arbitrary, Clone, Copy, Debug)]
enum Form {
    Raw,
    /// A `fixed` input type with `31 - integer_bits` fraction bits where
    /// one is listed (0, 3, 5, 12, 28 integer bits), raw otherwise; a
    /// `fixed` Q0.31 output.
    Fixed,
    /// An `I6F26` input whatever `integer_bits` is (an error unless 5).
    WrongInput,
    /// An `I6F26` output (always an error: outputs are Q0.31).
    WrongOutput,
}

#[derive(Arbitrary, Debug)]
struct Case {
    op: Op,
    /// Taken modulo 32: 29..=31 are errors.
    integer_bits: u8,
    form: Form,
    shape: RowShape,
    shift: u8,
    data: Vec<i32>,
}

fuzz_target!(|case: Case| check(&case));

/// Runs `op` on `x` typed as `X`, the output typed as `Y`.
fn call<X: RawQ31, Y: RawQ31>(
    op: Op,
    backend: Option<Backend>,
    x: &[i32],
    bits: u32,
    out: &mut [i32],
    row_len: usize,
) -> qneon::Result<()> {
    let x: &[X] = bytemuck::cast_slice(x);
    let y: &mut [Y] = bytemuck::cast_slice_mut(out);
    let backend = backend.unwrap_or(Backend::best());
    match op {
        Op::Softmax => q31::softmax_with(backend, x, bits, y, row_len),
        Op::Logistic => q31::logistic_with(backend, x, bits, y),
        Op::Tanh => q31::tanh_with(backend, x, bits, y),
    }
}

/// Runs `op` on every backend with the typing `form` asks for.
fn run_all(op: Op, form: Form, bits: u32, rows: &Rows<i32>) -> (qneon::Result<()>, Vec<i32>) {
    on_every_backend(
        rows.output_len,
        i32::MIN,
        |a, b| a == b,
        |backend, out| {
            let (x, r) = (&rows.input[..], rows.row_len);
            match (form, bits) {
                (Form::Raw, _) => call::<i32, i32>(op, backend, x, bits, out, r),
                (Form::Fixed, 0) => call::<I1F31, I1F31>(op, backend, x, bits, out, r),
                (Form::Fixed, 3) => call::<I4F28, I1F31>(op, backend, x, bits, out, r),
                (Form::Fixed, 5) => call::<I6F26, I1F31>(op, backend, x, bits, out, r),
                (Form::Fixed, 12) => call::<I13F19, I1F31>(op, backend, x, bits, out, r),
                (Form::Fixed, 28) => call::<I29F3, I1F31>(op, backend, x, bits, out, r),
                (Form::Fixed, _) => call::<i32, I1F31>(op, backend, x, bits, out, r),
                (Form::WrongInput, _) => call::<I6F26, i32>(op, backend, x, bits, out, r),
                (Form::WrongOutput, _) => call::<i32, I6F26>(op, backend, x, bits, out, r),
            }
        },
    )
}

/// `P(u) exp(-u) - 1` for gemmlowp's degree-4 exp polynomial `P`.
fn polynomial_error(u: f64) -> f64 {
    let p = 1.0 + u + u * u / 2.0 + u * u * u / 6.0 + u * u * u * u / 24.0;
    p * (-u).exp() - 1.0
}

/// Largest `|y - p 2^31|` of Q31 softmax on a row of `n` (raw LSB), as
/// `tests/q31_softmax_bound.rs` derives and measures it: exps' relative
/// errors in `[-l, h]` (the polynomial's ends; two factors where the wide
/// split applies) with the maximum's exact give at most `2^31 max(g(h, l),
/// g(l, h))`, `g(a, b) = (a + b)^2 / (4 (a + 2b))`; then 16 LSB of
/// reciprocal and roundings and half an LSB per other term.
fn softmax_bound(n: usize, integer_bits: u32) -> f64 {
    let (hi, lo) = (polynomial_error(-0.125), -polynomial_error(0.125));
    let hi = if integer_bits <= 4 {
        (1.0 + hi) * (1.0 + hi) - 1.0
    } else {
        hi
    };
    let g = |a: f64, b: f64| (a + b) * (a + b) / (4.0 * (a + 2.0 * b));
    2f64.powi(31) * g(hi, lo).max(g(lo, hi)) + 16.0 + (n as f64 - 1.0) / 2.0
}

fn check(case: &Case) {
    let bits = case.integer_bits as u32 % 32;
    let mut rows = case.shape.apply(case.data.clone());
    if case.op != Op::Softmax {
        // Element-wise: only the lengths matter.
        rows.valid = rows.output_len == rows.input.len();
    }
    let (result, y) = run_all(case.op, case.form, bits, &rows);
    let format_ok = bits <= q31::MAX_INTEGER_BITS
        && match case.form {
            Form::WrongInput => bits == 5,
            Form::WrongOutput => false,
            _ => true,
        };
    assert_eq!(
        result.is_ok(),
        format_ok && rows.valid,
        "{:?} {:?} integer_bits {bits}, lengths {} / {} row_len {}: {result:?}",
        case.op,
        case.form,
        rows.input.len(),
        rows.output_len,
        rows.row_len
    );
    if result.is_err() {
        return;
    }
    // Every typing gives the raw bytes.
    let raw = Rows {
        input: rows.input.clone(),
        ..rows
    };
    let (_, y_raw) = run_all(case.op, Form::Raw, bits, &raw);
    assert_eq!(
        y, y_raw,
        "{:?} {:?}: typed and raw calls differ",
        case.op, case.form
    );

    let what = format!("q31 {:?} integer_bits {bits}", case.op);
    reached(|| format!("q31 {:?} {:?}", case.op, case.form));
    let x: Vec<i64> = rows.input.iter().map(|&v| v as i64).collect();
    let y: Vec<i64> = y.iter().map(|&v| v as i64).collect();
    let real = |raw: i64| raw as f64 / 2f64.powi(31 - bits as i32);
    match case.op {
        Op::Softmax => {
            for (xr, yr) in x.chunks(rows.row_len).zip(y.chunks(rows.row_len)) {
                let n = xr.len();
                assert!(yr.iter().all(|&v| v >= 0), "{what}: negative output");
                let sum: i64 = yr.iter().sum();
                assert!(
                    (sum - (1i64 << 31)).abs() <= 16 + n as i64,
                    "{what}: row of {n} sums to {sum}, not 2^31 within {}",
                    16 + n
                );
                assert_monotonic(xr, yr, 0, &what);
                assert_argmax(xr, yr, &what);
                let max = *xr.iter().max().unwrap();
                let e: Vec<f64> = xr.iter().map(|&v| real(v - max).exp()).collect();
                let total: f64 = e.iter().sum();
                let bound = softmax_bound(n, bits);
                for i in 0..n {
                    let want = e[i] / total * 2f64.powi(31);
                    assert!(
                        (yr[i] as f64 - want).abs() <= bound,
                        "{what}: x[{i}] = {} (max {max}, n {n}): {} vs exact {want:.1}",
                        xr[i],
                        yr[i]
                    );
                }
            }
            let c = shift_constant(&x, i32::MIN as i64, i32::MAX as i64, case.shift);
            let shifted = Rows {
                input: x.iter().map(|&v| (v + c) as i32).collect(),
                ..raw
            };
            let (_, y_shifted) = run_all(case.op, Form::Raw, bits, &shifted);
            let y_shifted: Vec<i64> = y_shifted.iter().map(|&v| v as i64).collect();
            assert_eq!(
                y_shifted, y,
                "{what}: adding {c} to the input changed the output"
            );
        }
        Op::Logistic | Op::Tanh => {
            let tolerance = if case.op == Op::Logistic { 8 } else { 16 };
            assert_monotonic(&x, &y, tolerance, &what);
            if case.op == Op::Logistic {
                assert!(y.iter().all(|&v| v >= 0), "{what}: negative output");
            }
            let xs: Vec<i32> = rows
                .input
                .iter()
                .copied()
                .filter(|&v| v != i32::MIN)
                .collect();
            let straight = Rows {
                input: xs.clone(),
                row_len: 1,
                output_len: xs.len(),
                valid: true,
            };
            let mirrored = Rows {
                input: xs.iter().map(|&v| -v).collect(),
                ..straight
            };
            let (_, y_pos) = run_all(case.op, Form::Raw, bits, &straight);
            let (_, y_neg) = run_all(case.op, Form::Raw, bits, &mirrored);
            for i in 0..xs.len() {
                let (a, b) = (y_pos[i] as i64, y_neg[i] as i64);
                if case.op == Op::Logistic {
                    let want = if xs[i] == 0 {
                        1i64 << 31
                    } else {
                        (1i64 << 31) - 1
                    };
                    assert_eq!(
                        a + b,
                        want,
                        "{what}: logistic({}) + logistic({})",
                        xs[i],
                        -xs[i]
                    );
                } else {
                    assert_eq!(
                        b, -a,
                        "{what}: tanh({}) = {a} but tanh({}) = {b}",
                        xs[i], -xs[i]
                    );
                }
            }
        }
    }
}
