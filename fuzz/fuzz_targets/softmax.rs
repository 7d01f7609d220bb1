//! Quantized `Softmax` for int8, uint8 and int16, every method, every
//! backend (unavailable ones must be errors; available ones must give the
//! scalar bytes).
//!
//! When `new` and `run` succeed:
//! * `Method::FixedPoint` with the required output quantization: outputs
//!   are probabilities (`>= zero point`), each row sums to 1 within the
//!   rounding bound of `tests/invariants.rs`, rows are monotonic, the
//!   maximum gets the largest output, and adding a constant to the input
//!   changes nothing;
//! * 8-bit `Method::Lut`: within one output step of `Method::FixedPoint`;
//! * `Method::DequantF32`: within 1 LSB of the correctly rounded exact value.

#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use qneon::catalogue::Op;
use qneon::{Method, QuantElem, Softmax};
use qneon_fuzz::*;

#[derive(Arbitrary, Debug)]
struct Case {
    elem: ElemType,
    method: MethodChoice,
    input: Quant,
    beta: Scale,
    output: OutputQuant,
    shape: RowShape,
    shift: u8,
    data: Vec<u8>,
}

fuzz_target!(
    init: check_catalogue("softmax", &[Op::Softmax]),
    |case: Case| match case.elem {
        ElemType::I8 => check::<i8>(&case),
        ElemType::U8 => check::<u8>(&case),
        ElemType::I16 => check::<i16>(&case),
    }
);

fn run_all<T: QuantElem>(op: &Softmax<T>, rows: &Rows<T>) -> (qneon::Result<()>, Vec<T>) {
    on_every_backend(
        rows.output_len,
        T::from_i32(T::MAX),
        |a, b| a == b,
        |backend, out| match backend {
            None => op.run(&rows.input, out, rows.row_len),
            Some(b) => op.run_with(b, &rows.input, out, rows.row_len),
        },
    )
}

fn check<T: QuantElem>(case: &Case) {
    let input = case.input.get::<T>();
    let beta = case.beta.get();
    let (required, bits) = softmax_output::<T>();
    let output = case.output.get::<T>(required);
    let method = case.method.get();
    let Ok(op) = Softmax::<T>::new(input, beta, output, method) else {
        return;
    };
    let rows = case.shape.apply(elements::<T>(&case.data));
    let (result, y) = run_all(&op, &rows);
    assert_eq!(
        result.is_ok(),
        rows.valid,
        "lengths {} / {} with row_len {}: {result:?}",
        rows.input.len(),
        rows.output_len,
        rows.row_len
    );
    if result.is_err() {
        return;
    }
    let what = format!(
        "softmax {} {method:?} {input:?} beta {beta:e} {output:?}",
        T::NAME
    );
    let x = widen(&rows.input);
    let y = widen(&y);
    let row_len = rows.row_len;
    match method {
        Method::FixedPoint if output == required => {
            reached(|| format!("softmax {} FixedPoint", T::NAME));
            let zp = required.zero_point as i64;
            for (xr, yr) in x.chunks(row_len).zip(y.chunks(row_len)) {
                let xr: Vec<i64> = xr.iter().map(|&v| v as i64).collect();
                let yr: Vec<i64> = yr.iter().map(|&v| v as i64).collect();
                for &v in &yr {
                    assert!(v >= zp, "{what}: output {v} below the zero point {zp}");
                }
                // tests/invariants.rs: half an LSB per output, one for a
                // clamped maximum, and the Q12.19 sum's rounding.
                let n = xr.len();
                let bound = 1.0 + 0.5 * n as f64 + (n - 1) as f64 * 2f64.powi(bits as i32 - 20);
                let sum: i64 = yr.iter().map(|v| v - zp).sum();
                let err = (sum - (1i64 << bits)).abs() as f64;
                assert!(
                    err <= bound,
                    "{what}: row of {n} sums to {sum} LSB, not 2^{bits} within {bound}"
                );
                assert_monotonic(&xr, &yr, 0, &what);
                assert_argmax(&xr, &yr, &what);
            }
            let x64: Vec<i64> = x.iter().map(|&v| v as i64).collect();
            let c = shift_constant(&x64, T::MIN as i64, T::MAX as i64, case.shift);
            let shifted = Rows {
                input: x64.iter().map(|&v| T::from_i32((v + c) as i32)).collect(),
                ..rows
            };
            let (_, y_shifted) = run_all(&op, &shifted);
            assert_eq!(
                widen(&y_shifted),
                y,
                "{what}: adding {c} to the input changed the output"
            );
        }
        Method::Lut if T::MAX - T::MIN == 255 && output == required => {
            reached(|| format!("softmax {} Lut vs FixedPoint", T::NAME));
            let fixed = Softmax::<T>::new(input, beta, output, Method::FixedPoint)
                .expect("Method::Lut accepted parameters Method::FixedPoint refuses");
            let (_, y_fixed) = run_all(&fixed, &rows);
            for (i, (&a, &b)) in y.iter().zip(&widen(&y_fixed)).enumerate() {
                assert!(
                    (a - b).abs() <= 1,
                    "{what}: element {i} (x = {}): Lut {a}, FixedPoint {b}",
                    x[i]
                );
            }
        }
        Method::DequantF32 => {
            reached(|| format!("softmax {} DequantF32", T::NAME));
            let c = beta as f64 * input.scale as f64;
            for (r, (xr, yr)) in x.chunks(row_len).zip(y.chunks(row_len)).enumerate() {
                let exact = exact_softmax_row(xr, c, false);
                for (i, (&got, e)) in yr.iter().zip(exact).enumerate() {
                    let want = quantize_exact::<T>(e / output.scale as f64, output.zero_point);
                    assert_within_one_lsb(got as i64, want, || {
                        format!("{what}: row {r} element {i} (x = {})", xr[i])
                    });
                }
            }
        }
        _ => reached(|| format!("softmax {} {method:?} (run only)", T::NAME)),
    }
}
