//! Quantized `Logistic` and `Tanh` for int8, uint8 and int16, every
//! method, every backend.
//!
//! When `new` and `run` succeed:
//! * `Method::FixedPoint`: outputs in the function's range, monotonic over
//!   the inputs given, exact at real 0 (logistic 1/2, tanh 0), and
//!   symmetric within 1 LSB (`logistic(-x) = 1 - logistic(x)`,
//!   `tanh(-x) = -tanh(x)`), as `tests/invariants.rs` states them;
//! * `Method::LutFixedPoint`: the bytes of `Method::FixedPoint`;
//! * `Method::DequantF32`: within 1 LSB of the correctly rounded exact value.

#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use qneon::catalogue::Op as CatalogueOp;
use qneon::{Logistic, Method, QuantElem, QuantParams, Tanh};
use qneon_fuzz::*;

#[derive(Arbitrary, Debug)]
struct Case {
    tanh: bool,
    elem: ElemType,
    method: MethodChoice,
    input: Quant,
    output: OutputQuant,
    output_delta: Option<i8>,
    data: Vec<u8>,
}

fuzz_target!(
    init: check_catalogue("activation", &[CatalogueOp::Logistic, CatalogueOp::Tanh]),
    |case: Case| match case.elem {
        ElemType::I8 => check::<i8>(&case),
        ElemType::U8 => check::<u8>(&case),
        ElemType::I16 => check::<i16>(&case),
    }
);

/// Either op behind one interface.
enum Op<T: QuantElem> {
    Logistic(Logistic<T>),
    Tanh(Tanh<T>),
}

impl<T: QuantElem> Op<T> {
    fn new(
        tanh: bool,
        input: QuantParams,
        output: QuantParams,
        method: Method,
    ) -> qneon::Result<Self> {
        Ok(if tanh {
            Op::Tanh(Tanh::new(input, output, method)?)
        } else {
            Op::Logistic(Logistic::new(input, output, method)?)
        })
    }

    /// Runs on every backend; the scalar result and output.
    fn run_all(&self, x: &[T], output_len: usize) -> (qneon::Result<()>, Vec<T>) {
        on_every_backend(
            output_len,
            T::from_i32(T::MAX),
            |a, b| a == b,
            |backend, out| match (self, backend) {
                (Op::Logistic(op), None) => op.run(x, out),
                (Op::Logistic(op), Some(b)) => op.run_with(b, x, out),
                (Op::Tanh(op), None) => op.run(x, out),
                (Op::Tanh(op), Some(b)) => op.run_with(b, x, out),
            },
        )
    }

    /// The outputs of valid-length input `x`.
    fn outputs(&self, x: &[T]) -> Vec<i64> {
        let (result, y) = self.run_all(x, x.len());
        result.expect("equal lengths refused");
        y.iter().map(|v| v.to_i32() as i64).collect()
    }
}

fn check<T: QuantElem>(case: &Case) {
    let input = case.input.get::<T>();
    let (required, bits) = activation_output::<T>(case.tanh);
    let output = case.output.get::<T>(required);
    let method = case.method.get();
    let Ok(op) = Op::<T>::new(case.tanh, input, output, method) else {
        return;
    };
    let x = elements::<T>(&case.data);
    let output_len = match case.output_delta {
        Some(d) => (x.len() as isize + d as isize).max(0) as usize,
        None => x.len(),
    };
    let (result, y) = op.run_all(&x, output_len);
    assert_eq!(
        result.is_ok(),
        output_len == x.len(),
        "lengths {} / {output_len}: {result:?}",
        x.len()
    );
    if result.is_err() {
        return;
    }
    let name = if case.tanh { "tanh" } else { "logistic" };
    let what = format!("{name} {} {method:?} {input:?} {output:?}", T::NAME);
    let x64: Vec<i64> = x.iter().map(|v| v.to_i32() as i64).collect();
    let y64: Vec<i64> = y.iter().map(|v| v.to_i32() as i64).collect();
    match method {
        Method::FixedPoint if output == required => {
            reached(|| format!("{name} {} FixedPoint", T::NAME));
            let zp = required.zero_point as i64;
            let low = if case.tanh { zp - (1 << bits) } else { zp };
            for (&q, &v) in x64.iter().zip(&y64) {
                assert!(
                    v >= low.max(T::MIN as i64),
                    "{what}: x {q} -> {v}, below the function's range"
                );
            }
            assert_monotonic(&x64, &y64, 0, &what);
            // Real 0 is exact.
            let at_zero = op.outputs(&[T::from_i32(input.zero_point)])[0];
            let expected = if case.tanh {
                zp
            } else {
                zp + (1 << (bits - 1))
            };
            assert_eq!(at_zero, expected, "{what}: f(0)");
            // Symmetry around the input zero point, within 1 LSB.
            let pairs: Vec<(T, T)> = x64
                .iter()
                .map(|&q| (q, 2 * input.zero_point as i64 - q))
                .filter(|&(_, m)| (T::MIN as i64..=T::MAX as i64).contains(&m))
                .map(|(q, m)| (T::from_i32(q as i32), T::from_i32(m as i32)))
                .collect();
            let (xs, mirrors): (Vec<T>, Vec<T>) = pairs.into_iter().unzip();
            let (ys, ym) = (op.outputs(&xs), op.outputs(&mirrors));
            let target = if case.tanh { 0 } else { 1i64 << bits };
            for i in 0..xs.len() {
                let deviation = ((ys[i] - zp) + (ym[i] - zp) - target).abs();
                assert!(
                    deviation <= 1,
                    "{what}: x {:?} -> {}, mirror {:?} -> {}: not symmetric within 1 LSB",
                    xs[i],
                    ys[i],
                    mirrors[i],
                    ym[i]
                );
            }
        }
        Method::LutFixedPoint => {
            reached(|| format!("{name} {} LutFixedPoint", T::NAME));
            let fixed = Op::<T>::new(case.tanh, input, output, Method::FixedPoint)
                .expect("LutFixedPoint accepted parameters FixedPoint refuses");
            assert_eq!(y64, fixed.outputs(&x), "{what}: differs from FixedPoint");
        }
        Method::DequantF32 => {
            reached(|| format!("{name} {} DequantF32", T::NAME));
            for (&q, &got) in x64.iter().zip(&y64) {
                let real = input.scale as f64 * (q - input.zero_point as i64) as f64;
                let exact = if case.tanh {
                    real.tanh()
                } else {
                    1.0 / (1.0 + (-real).exp())
                };
                let want = quantize_exact::<T>(exact / output.scale as f64, output.zero_point);
                assert_within_one_lsb(got, want, || format!("{what}: x {q} (real {real:e})"));
            }
        }
        _ => {}
    }
}
