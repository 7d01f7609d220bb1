//! Quantized `LogSoftmax` for int8 and uint8 (int16 must be refused by
//! `new`), every method, every backend.
//!
//! When `new` and `run` succeed:
//! * `Method::FixedPoint`: rows are monotonic, the maximum gets the
//!   largest output, and adding a constant to the input changes nothing;
//! * `Method::DequantF32`: within 1 LSB of the correctly rounded exact value.

#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use qneon::catalogue::Op;
use qneon::{LogSoftmax, Method, QuantElem};
use qneon_fuzz::*;

#[derive(Arbitrary, Debug)]
struct Case {
    elem: ElemType,
    method: MethodChoice,
    input: Quant,
    output: OutputQuant,
    shape: RowShape,
    shift: u8,
    data: Vec<u8>,
}

fuzz_target!(
    init: check_catalogue("log_softmax", &[Op::LogSoftmax]),
    |case: Case| match case.elem {
        ElemType::I8 => check::<i8>(&case),
        ElemType::U8 => check::<u8>(&case),
        ElemType::I16 => check::<i16>(&case),
    }
);

fn run_all<T: QuantElem>(op: &LogSoftmax<T>, rows: &Rows<T>) -> (qneon::Result<()>, Vec<T>) {
    on_every_backend(
        rows.output_len,
        T::from_i32(T::MIN),
        |a, b| a == b,
        |backend, out| match backend {
            None => op.run(&rows.input, out, rows.row_len),
            Some(b) => op.run_with(b, &rows.input, out, rows.row_len),
        },
    )
}

fn check<T: QuantElem>(case: &Case) {
    let input = case.input.get::<T>();
    let output = case.output.get::<T>(log_softmax_output::<T>());
    let method = case.method.get();
    let made = LogSoftmax::<T>::new(input, output, method);
    if T::MAX - T::MIN != 255 {
        assert!(made.is_err(), "int16 log-softmax was accepted");
    }
    let Ok(op) = made else {
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
    let what = format!("log_softmax {} {method:?} {input:?} {output:?}", T::NAME);
    let x = widen(&rows.input);
    let y = widen(&y);
    let row_len = rows.row_len;
    match method {
        Method::FixedPoint => {
            reached(|| format!("log_softmax {} FixedPoint", T::NAME));
            for (xr, yr) in x.chunks(row_len).zip(y.chunks(row_len)) {
                let xr: Vec<i64> = xr.iter().map(|&v| v as i64).collect();
                let yr: Vec<i64> = yr.iter().map(|&v| v as i64).collect();
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
        Method::DequantF32 => {
            reached(|| format!("log_softmax {} DequantF32", T::NAME));
            for (r, (xr, yr)) in x.chunks(row_len).zip(y.chunks(row_len)).enumerate() {
                let exact = exact_softmax_row(xr, input.scale as f64, true);
                for (i, (&got, e)) in yr.iter().zip(exact).enumerate() {
                    let want = quantize_exact::<T>(e / output.scale as f64, output.zero_point);
                    assert_within_one_lsb(got as i64, want, || {
                        format!("{what}: row {r} element {i} (x = {})", xr[i])
                    });
                }
            }
        }
        _ => {}
    }
}
