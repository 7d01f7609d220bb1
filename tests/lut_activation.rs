//! `Method::Lut` for int8/uint8 logistic and tanh, through the public API.
//!
//! * Every backend gives the same bytes, for every input byte, lengths
//!   0..=200 at offsets 0..16 (on aarch64 NEON must be available).
//! * With `std`, the tables are TFLite's (`LUTPopulate`): bit-exact with the
//!   TFLite interpreter's optimized kernels (`tests/golden/*_tflite_opt.jsonl`).
//!
//! * `Method::LutFixedPoint` gives the bytes of `Method::FixedPoint` for
//!   every input over a grid of quantizations.
//!
//! Random tables are tested in `src/ops/activation/table256.rs`.

mod common;
use common::load;
use qneon::{Backend, Logistic, Method, QuantElem, QuantParams, Tanh};

/// A prepared LUT op of either kind.
enum Op<T: QuantElem> {
    Logistic(Logistic<T>),
    Tanh(Tanh<T>),
}

impl<T: QuantElem> Op<T> {
    fn run_with(&self, backend: Backend, input: &[T], output: &mut [T]) {
        match self {
            Op::Logistic(op) => op.run_with(backend, input, output),
            Op::Tanh(op) => op.run_with(backend, input, output),
        }
        .unwrap_or_else(|e| panic!("run_with({backend:?}): {e}"));
    }
}

/// A prepared op with `method` (it must exist: a failure, never a skip).
fn op_with<T: QuantElem>(
    tanh: bool,
    q_in: QuantParams,
    q_out: QuantParams,
    method: Method,
) -> Op<T> {
    let op = if tanh {
        Tanh::<T>::new(q_in, q_out, method).map(Op::Tanh)
    } else {
        Logistic::<T>::new(q_in, q_out, method).map(Op::Logistic)
    };
    op.unwrap_or_else(|e| panic!("{} tanh={tanh} {method:?} {q_in:?} {q_out:?}: {e}", T::NAME))
}

/// The `Method::Lut` op.
fn lut_op<T: QuantElem>(tanh: bool, q_in: QuantParams, q_out: QuantParams) -> Option<Op<T>> {
    Some(op_with(tanh, q_in, q_out, Method::Lut))
}

/// TFLite's output quantization for (op, type).
fn output_quant<T: QuantElem>(tanh: bool) -> QuantParams {
    let (scale, zero_point) = match (tanh, T::NAME) {
        (false, "int8") => (1.0 / 256.0, -128),
        (false, _) => (1.0 / 256.0, 0),
        (true, "int8") => (1.0 / 128.0, 0),
        (true, _) => (1.0 / 128.0, 128),
    };
    QuantParams { scale, zero_point }
}

#[test]
fn neon_is_available_on_aarch64() {
    if cfg!(target_arch = "aarch64") {
        assert!(Backend::Neon.is_available());
        assert_eq!(Backend::best(), Backend::Neon);
    }
}

fn backends_agree<T: QuantElem>(zero_points: &[i32]) -> usize {
    let mut checked = 0;
    let all: Vec<T> = (T::MIN..=T::MAX).map(T::from_i32).collect();
    for tanh in [false, true] {
        for &scale in &[0.004f32, 0.05, 0.1, 0.9, 6.0] {
            for &zp in zero_points {
                let q_in = QuantParams {
                    scale,
                    zero_point: zp,
                };
                let Some(op) = lut_op::<T>(tanh, q_in, output_quant::<T>(tanh)) else {
                    return 0;
                };
                let mut want = vec![T::default(); all.len()];
                op.run_with(Backend::Scalar, &all, &mut want);
                for backend in Backend::available() {
                    // Every input byte.
                    let mut got = vec![T::default(); all.len()];
                    op.run_with(backend, &all, &mut got);
                    assert_eq!(got, want, "{} tanh={tanh} {q_in:?} {backend:?}", T::NAME);
                    // Lengths 0..=200 at offsets 0..16; bytes around the output untouched.
                    let src: Vec<T> = (0..232usize)
                        .map(|i| all[(i * 97 + i / 7) % all.len()])
                        .collect();
                    let guard = all[37];
                    for len in 0..=200usize {
                        for off in 0..16usize {
                            let x = &src[off..off + len];
                            let mut y = vec![guard; off + len + 16];
                            op.run_with(backend, x, &mut y[off..off + len]);
                            let mut y_ref = vec![guard; off + len + 16];
                            op.run_with(Backend::Scalar, x, &mut y_ref[off..off + len]);
                            assert_eq!(y, y_ref, "{} len {len} off {off} {backend:?}", T::NAME);
                        }
                    }
                    checked += 1;
                }
            }
        }
    }
    checked
}

#[test]
fn lut_backends_agree_int8() {
    backends_agree::<i8>(&[-128, -1, 0, 3, 127]);
}

#[test]
fn lut_backends_agree_uint8() {
    backends_agree::<u8>(&[0, 100, 128, 255]);
}

/// Runs every case of a TFLite interpreter (optimized kernels) file through
/// `Method::Lut` on every backend; returns the cases run and the mismatches.
fn golden_file<T: QuantElem + TryFrom<i32>>(file: &str, tanh: bool) -> (usize, Vec<String>) {
    let mut cases = 0;
    let mut mismatches = Vec::new();
    for c in load(file) {
        assert_eq!(c.status, "ok", "{file}:{}", c.line);
        let q_in = QuantParams::new(c.in_scale, c.in_zp);
        let q_out = QuantParams::new(c.out_scale, c.out_zp);
        let input = c.input;
        let want = c.output.expect("an ok case has an output");
        assert_eq!(input.len(), want.len(), "{file}");
        let Some(op) = lut_op::<T>(tanh, q_in, q_out) else {
            return (0, mismatches);
        };
        let x: Vec<T> = input
            .iter()
            .map(|&i| T::try_from(i).unwrap_or_else(|_| panic!("{file}: input {i} out of range")))
            .collect();
        for backend in Backend::available() {
            let mut y = vec![T::default(); x.len()];
            op.run_with(backend, &x, &mut y);
            for (i, (got, w)) in y.iter().zip(&want).enumerate() {
                if got.to_i32() != *w {
                    mismatches.push(format!(
                        "{file} in_scale {} in_zp {} {backend:?}: input {} got {} want {w} (index {i})",
                        q_in.scale,
                        q_in.zero_point,
                        input[i],
                        got.to_i32()
                    ));
                }
            }
        }
        cases += 1;
    }
    (cases, mismatches)
}

/// The LUT is TFLite's only with `std` (f32 `exp`/`tanh`).
#[cfg(feature = "std")]
#[test]
fn lut_equals_tflite_interpreter() {
    let mut cases = 0;
    let mut mismatches = Vec::new();
    for (file, tanh, int8) in [
        ("logistic_int8_tflite_opt.jsonl", false, true),
        ("tanh_int8_tflite_opt.jsonl", true, true),
        ("logistic_uint8_tflite_opt.jsonl", false, false),
        ("tanh_uint8_tflite_opt.jsonl", true, false),
    ] {
        let (n, m) = if int8 {
            golden_file::<i8>(file, tanh)
        } else {
            golden_file::<u8>(file, tanh)
        };
        cases += n;
        mismatches.extend(m);
    }
    eprintln!("{cases} golden cases through Method::Lut");
    assert!(
        mismatches.is_empty(),
        "{} mismatching elements:\n{}",
        mismatches.len(),
        mismatches.join("\n")
    );
}

/// `Method::LutFixedPoint` is the FixedPoint kernel at table speed: the same
/// bytes for every input, op, 8-bit type and a grid of input quantizations.
fn lut_fixed_point_equals_fixed_point<T: QuantElem + TryFrom<i32>>() -> usize {
    let inputs: Vec<T> = (T::MIN..=T::MAX)
        .map(|v| T::try_from(v).ok().expect("in range"))
        .collect();
    let mut checked = 0;
    for tanh in [false, true] {
        for scale in [0.001f32, 0.02, 0.1, 0.37, 1.0, 3.9, 4.0, 8.0, 20.0] {
            for zero_point in [T::MIN, 0.max(T::MIN), 37, T::MAX] {
                let q_in = QuantParams::new(scale, zero_point);
                let q_out = output_quant::<T>(tanh);
                let fixed = op_with::<T>(tanh, q_in, q_out, Method::FixedPoint);
                let table = op_with::<T>(tanh, q_in, q_out, Method::LutFixedPoint);
                for backend in Backend::available() {
                    let mut want = vec![T::default(); inputs.len()];
                    let mut got = vec![T::default(); inputs.len()];
                    fixed.run_with(Backend::Scalar, &inputs, &mut want);
                    table.run_with(backend, &inputs, &mut got);
                    assert_eq!(
                        want,
                        got,
                        "{} tanh={tanh} scale {scale} zp {zero_point} {backend:?}",
                        T::NAME
                    );
                    checked += 1;
                }
            }
        }
    }
    checked
}

#[test]
fn lut_fixed_point_equals_fixed_point_int8() {
    assert!(lut_fixed_point_equals_fixed_point::<i8>() >= 72);
}

#[test]
fn lut_fixed_point_equals_fixed_point_uint8() {
    assert!(lut_fixed_point_equals_fixed_point::<u8>() >= 72);
}
