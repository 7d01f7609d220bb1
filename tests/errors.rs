//! Every bad input gives the documented `qneon::Error` variant, with its key
//! fields, and a message that names the offending parameter; and no input,
//! however bad, panics (the test profile has overflow checks and debug
//! assertions on, so an arithmetic overflow in the library would panic).
//!
//! Operators and types covered: Softmax, LogSoftmax, Logistic and Tanh over
//! i8/u8/i16 (where TFLite defines them; LogSoftmax<i16> is Unsupported), and
//! `q31::{softmax, logistic, tanh}`.

use fixed::types::{I1F31, I2F30, I5F27, I6F26};
use proptest::prelude::*;
use proptest::test_runner::Config;
use qneon::QuantElem;
use qneon::{q31, Backend, Error, LogSoftmax, Logistic, Method, QuantParams, Softmax, Tanh};

// ---------------------------------------------------------------------------
// A uniform handle on the four operators.
// ---------------------------------------------------------------------------

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Softmax,
    LogSoftmax,
    Logistic,
    Tanh,
}

impl Kind {
    /// The `op` string the library puts in its errors.
    fn op(self) -> &'static str {
        match self {
            Kind::Softmax => "softmax",
            Kind::LogSoftmax => "log_softmax",
            Kind::Logistic => "logistic",
            Kind::Tanh => "tanh",
        }
    }

    fn rowwise(self) -> bool {
        matches!(self, Kind::Softmax | Kind::LogSoftmax)
    }

    /// TFLite's required output quantization for this op and type.
    fn valid_output<T: QuantElem>(self) -> QuantParams {
        let (scale, zero_point) = match (self, T::NAME) {
            (Kind::Softmax, "int8") => (1.0 / 256.0, -128),
            (Kind::Softmax, "uint8") => (1.0 / 256.0, 0),
            (Kind::Softmax, _) => (1.0 / 32768.0, 0),
            (Kind::LogSoftmax, "int8") => (16.0 / 256.0, 127),
            (Kind::LogSoftmax, _) => (16.0 / 256.0, 255),
            (Kind::Logistic, "int8") => (1.0 / 256.0, -128),
            (Kind::Logistic, "uint8") => (1.0 / 256.0, 0),
            (Kind::Logistic, _) => (1.0 / 32768.0, 0),
            (Kind::Tanh, "int8") => (1.0 / 128.0, 0),
            (Kind::Tanh, "uint8") => (1.0 / 128.0, 128),
            (Kind::Tanh, _) => (1.0 / 32768.0, 0),
        };
        QuantParams::new(scale, zero_point)
    }
}

// Softmax<i16> holds its int16 Method::Lut tables inline.
#[allow(clippy::large_enum_variant)]
enum Op<T: QuantElem> {
    Softmax(Softmax<T>),
    LogSoftmax(LogSoftmax<T>),
    Logistic(Logistic<T>),
    Tanh(Tanh<T>),
}

impl<T: QuantElem> Op<T> {
    /// `beta` is only used by softmax.
    fn new(
        kind: Kind,
        input: QuantParams,
        beta: f32,
        output: QuantParams,
        method: Method,
    ) -> Result<Self, Error> {
        Ok(match kind {
            Kind::Softmax => Op::Softmax(Softmax::new(input, beta, output, method)?),
            Kind::LogSoftmax => Op::LogSoftmax(LogSoftmax::new(input, output, method)?),
            Kind::Logistic => Op::Logistic(Logistic::new(input, output, method)?),
            Kind::Tanh => Op::Tanh(Tanh::new(input, output, method)?),
        })
    }

    /// `row_len` is only used by the row-wise ops.
    fn run_with(
        &self,
        backend: Backend,
        input: &[T],
        output: &mut [T],
        row_len: usize,
    ) -> Result<(), Error> {
        match self {
            Op::Softmax(op) => op.run_with(backend, input, output, row_len),
            Op::LogSoftmax(op) => op.run_with(backend, input, output, row_len),
            Op::Logistic(op) => op.run_with(backend, input, output),
            Op::Tanh(op) => op.run_with(backend, input, output),
        }
    }

    fn run(&self, input: &[T], output: &mut [T], row_len: usize) -> Result<(), Error> {
        match self {
            Op::Softmax(op) => op.run(input, output, row_len),
            Op::LogSoftmax(op) => op.run(input, output, row_len),
            Op::Logistic(op) => op.run(input, output),
            Op::Tanh(op) => op.run(input, output),
        }
    }
}

fn qp(scale: f32, zero_point: i32) -> QuantParams {
    QuantParams::new(scale, zero_point)
}

/// A valid input quantization for every type.
fn valid_input<T: QuantElem>() -> QuantParams {
    qp(0.05, if T::MIN < 0 { 0 } else { 128 })
}

const BETA: f32 = 1.0;

/// Constructs `kind` for `T` with one parameter replaced.
fn build<T: QuantElem>(
    kind: Kind,
    input: QuantParams,
    beta: f32,
    output: QuantParams,
) -> Result<Op<T>, Error> {
    Op::<T>::new(kind, input, beta, output, Method::FixedPoint)
}

fn valid<T: QuantElem>(kind: Kind) -> Op<T> {
    build::<T>(kind, valid_input::<T>(), BETA, kind.valid_output::<T>()).expect("valid parameters")
}

fn elems<T: QuantElem>(n: usize) -> Vec<T> {
    (0..n)
        .map(|i| T::from_i32((T::MIN + (i as i32 * 37) % 200).clamp(T::MIN, T::MAX)))
        .collect()
}

/// Asserts `err`'s message names every one of `words`.
fn assert_names(err: &Error, words: &[&str]) {
    let msg = err.to_string();
    for w in words {
        assert!(msg.contains(w), "message {msg:?} does not mention {w:?}");
    }
}

// ---------------------------------------------------------------------------
// The checks, one function per case; the macro below makes one #[test] per
// (operator, type, case).
// ---------------------------------------------------------------------------

fn length_mismatch<T: QuantElem>(kind: Kind) {
    let op = valid::<T>(kind);
    let err = op.run(&elems::<T>(6), &mut elems::<T>(4), 2).unwrap_err();
    assert!(
        matches!(err, Error::LengthMismatch { op, input: 6, output: 4 } if op == kind.op()),
        "{err:?}"
    );
    assert_names(&err, &[kind.op(), "input", "output", "6", "4"]);
    // Also with every available backend, and for an empty output.
    for backend in Backend::available() {
        let err = op
            .run_with(backend, &elems::<T>(3), &mut [], 3)
            .unwrap_err();
        assert!(
            matches!(
                err,
                Error::LengthMismatch {
                    input: 3,
                    output: 0,
                    ..
                }
            ),
            "{err:?}"
        );
    }
}

fn row_len_zero<T: QuantElem>(kind: Kind) {
    assert!(kind.rowwise());
    let op = valid::<T>(kind);
    for n in [0, 4] {
        let err = op.run(&elems::<T>(n), &mut elems::<T>(n), 0).unwrap_err();
        assert!(
            matches!(err, Error::RowLength { op, len, row: 0 } if op == kind.op() && len == n),
            "{err:?}"
        );
        assert_names(&err, &[kind.op(), "row_len"]);
    }
}

fn row_len_not_dividing<T: QuantElem>(kind: Kind) {
    assert!(kind.rowwise());
    let op = valid::<T>(kind);
    for (n, row) in [(6, 4), (5, 10), (1, 2)] {
        let err = op.run(&elems::<T>(n), &mut elems::<T>(n), row).unwrap_err();
        assert!(
            matches!(err, Error::RowLength { op, len, row: r } if op == kind.op() && len == n && r == row),
            "{err:?}"
        );
        assert_names(
            &err,
            &[kind.op(), "row_len", &row.to_string(), &n.to_string()],
        );
    }
    // Dividing row lengths, and an empty buffer, are fine.
    assert!(op.run(&elems::<T>(6), &mut elems::<T>(6), 3).is_ok());
    assert!(op.run(&[], &mut [], 3).is_ok());
}

/// The invalid scales: not finite or not > 0.
const BAD_SCALES: [f32; 7] = [
    f32::NAN,
    f32::INFINITY,
    f32::NEG_INFINITY,
    0.0,
    -0.0,
    -0.05,
    -f32::MIN_POSITIVE,
];

fn bad_input_scale<T: QuantElem>(kind: Kind, scale: f32) {
    let err = build::<T>(
        kind,
        qp(scale, valid_input::<T>().zero_point),
        BETA,
        kind.valid_output::<T>(),
    )
    .err()
    .unwrap_or_else(|| panic!("input scale {scale} accepted"));
    assert!(
        matches!(err, Error::Scale { what: "input scale", value } if value.to_bits() == (scale as f64).to_bits()),
        "{err:?}"
    );
    assert_names(&err, &["input scale"]);
}

fn bad_output_scale<T: QuantElem>(kind: Kind, scale: f32) {
    let out = qp(scale, kind.valid_output::<T>().zero_point);
    let err = build::<T>(kind, valid_input::<T>(), BETA, out)
        .err()
        .unwrap_or_else(|| panic!("output scale {scale} accepted"));
    assert!(
        matches!(err, Error::Scale { what: "output scale", value } if value.to_bits() == (scale as f64).to_bits()),
        "{err:?}"
    );
    assert_names(&err, &["output scale"]);
}

/// A positive subnormal input scale is finite and > 0, so it is accepted
/// (its multiplier flushes to zero: every input maps to the function at 0).
fn subnormal_input_scale_is_accepted<T: QuantElem>(kind: Kind) {
    for scale in [
        f32::from_bits(1),
        f32::MIN_POSITIVE / 2.0,
        f32::MIN_POSITIVE,
    ] {
        let input = qp(scale, valid_input::<T>().zero_point);
        let op = build::<T>(kind, input, BETA, kind.valid_output::<T>())
            .unwrap_or_else(|e| panic!("input scale {scale:e} rejected: {e}"));
        let x = elems::<T>(8);
        let mut y = vec![T::default(); 8];
        op.run(&x, &mut y, 4).unwrap();
        // Every element is (numerically) equal to the zero point, so the outputs agree.
        assert!(y.windows(2).all(|w| w[0] == w[1]), "{y:?}");
    }
}

/// Every accepted input scale (and, for softmax, beta), from the smallest
/// subnormal to `f32::MAX`, gives the same outputs on rows whose elements are
/// all equal (or equal to the zero point, for logistic/tanh): the differences
/// are 0, so the scale cannot matter. Catches edge scales whose prepared
/// multipliers or shifts break the kernels (a panic, or a wrong output).
fn accepted_scales_agree_on_constant_rows<T: QuantElem>(kind: Kind) {
    let zp = valid_input::<T>().zero_point;
    let x = vec![T::from_i32(zp); 8];
    let reference = {
        let mut y = vec![T::default(); 8];
        valid::<T>(kind).run(&x, &mut y, 4).unwrap();
        y
    };
    let mut scales: Vec<f32> = (-149..=127).map(|k| 2f64.powi(k) as f32).collect();
    scales.extend((-149..=126).map(|k| (2f64.powi(k) * 1.75) as f32));
    scales.extend([
        f32::MAX,
        f32::MIN_POSITIVE,
        f32::from_bits(1),
        f32::from_bits(0x7fffff),
    ]);
    let betas: &[f32] = if kind == Kind::Softmax {
        &[1.0, 1e-30, 1e30, f32::MAX, f32::from_bits(1)]
    } else {
        &[1.0]
    };
    let mut failures = Vec::new();
    for &scale in &scales {
        for &beta in betas {
            let op = build::<T>(kind, qp(scale, zp), beta, kind.valid_output::<T>())
                .unwrap_or_else(|e| panic!("scale {scale:e} beta {beta:e} rejected: {e}"));
            let mut y = vec![T::default(); 8];
            let r =
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| op.run(&x, &mut y, 4)));
            match r {
                Ok(Ok(())) if y == reference => {}
                Ok(Ok(())) => failures.push(format!(
                    "scale {scale:e} beta {beta:e}: {y:?} instead of {reference:?}"
                )),
                Ok(Err(e)) => failures.push(format!("scale {scale:e} beta {beta:e}: error {e}")),
                Err(_) => failures.push(format!("scale {scale:e} beta {beta:e}: panicked")),
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} {}: {} failures:\n{}",
        kind.op(),
        T::NAME,
        failures.len(),
        failures.join("\n")
    );
}

/// A subnormal *output* scale is a valid scale but not TFLite's.
fn subnormal_output_scale_is_wrong_quantization<T: QuantElem>(kind: Kind) {
    let out = qp(f32::from_bits(1), kind.valid_output::<T>().zero_point);
    let err = build::<T>(kind, valid_input::<T>(), BETA, out)
        .err()
        .expect("accepted");
    assert!(matches!(err, Error::OutputQuantization { .. }), "{err:?}");
}

fn bad_zero_points<T: QuantElem>(kind: Kind) {
    let bad = [T::MIN - 1, T::MAX + 1, i32::MIN, i32::MAX];
    for zp in bad {
        let input = qp(valid_input::<T>().scale, zp);
        let err = build::<T>(kind, input, BETA, kind.valid_output::<T>())
            .err()
            .expect("accepted");
        assert!(
            matches!(err, Error::ZeroPoint { what: "input zero point", value, min, max }
                if value == zp && min == T::MIN && max == T::MAX),
            "{err:?}"
        );
        assert_names(
            &err,
            &[
                "input zero point",
                &zp.to_string(),
                &T::MIN.to_string(),
                &T::MAX.to_string(),
            ],
        );

        let output = qp(kind.valid_output::<T>().scale, zp);
        let err = build::<T>(kind, valid_input::<T>(), BETA, output)
            .err()
            .expect("accepted");
        assert!(
            matches!(err, Error::ZeroPoint { what: "output zero point", value, min, max }
                if value == zp && min == T::MIN && max == T::MAX),
            "{err:?}"
        );
        assert_names(&err, &["output zero point"]);
    }
    // The extremes of the range are fine for the input.
    for zp in [T::MIN, T::MAX] {
        assert!(build::<T>(kind, qp(0.05, zp), BETA, kind.valid_output::<T>()).is_ok());
    }
}

/// Output quantization TFLite's `Prepare` rejects.
fn wrong_output_quantization<T: QuantElem>(kind: Kind, output: QuantParams) {
    let valid = kind.valid_output::<T>();
    let err = build::<T>(kind, valid_input::<T>(), BETA, output)
        .err()
        .unwrap_or_else(|| panic!("{output:?} accepted for {} {}", kind.op(), T::NAME));
    assert!(
        matches!(err, Error::OutputQuantization { op, dtype, expected_scale, expected_zero_point, scale, zero_point }
            if op == kind.op() && dtype == T::NAME
                && expected_scale == valid.scale as f64 && expected_zero_point == valid.zero_point
                && scale == output.scale as f64 && zero_point == output.zero_point),
        "{err:?}"
    );
    assert_names(
        &err,
        &[
            kind.op(),
            T::NAME,
            "output quantization",
            &valid.zero_point.to_string(),
        ],
    );
}

fn bad_beta<T: QuantElem>(beta: f32) {
    let err = build::<T>(
        Kind::Softmax,
        valid_input::<T>(),
        beta,
        Kind::Softmax.valid_output::<T>(),
    )
    .err()
    .unwrap_or_else(|| panic!("beta {beta} accepted"));
    assert!(
        matches!(err, Error::Beta { value } if value.to_bits() == (beta as f64).to_bits()),
        "{err:?}"
    );
    assert_names(&err, &["beta"]);
}

/// Methods that are not implemented yet. When a later issue implements one,
/// move it out of this list (and, if only for some ops or types, refine
/// `implemented`); the method tests then expect success instead.
const NOT_YET_IMPLEMENTED: &[Method] = &[];

fn implemented(method: Method, kind: Kind, dtype: &str) -> bool {
    match method {
        // `Method::Lut` (needs `std`, which the tests have): 8-bit softmax,
        // log-softmax, logistic and tanh, and int16 softmax, logistic and
        // tanh (TFLite's int16 kernels; log-softmax has no int16 at all).
        // `Method::LutFixedPoint`: 8-bit logistic and tanh only.
        Method::Lut => true,
        Method::LutFixedPoint => matches!(kind, Kind::Logistic | Kind::Tanh) && dtype != "int16",
        m => !NOT_YET_IMPLEMENTED.contains(&m),
    }
}

fn method<T: QuantElem>(kind: Kind, method: Method) {
    let r = Op::<T>::new(
        kind,
        valid_input::<T>(),
        BETA,
        kind.valid_output::<T>(),
        method,
    );
    if implemented(method, kind, T::NAME) {
        let op = r.unwrap_or_else(|e| panic!("{method:?}: {e}"));
        let x = elems::<T>(8);
        op.run(&x, &mut [T::default(); 8], 4).unwrap();
    } else {
        let Err(err) = r else {
            panic!("an unimplemented method was accepted")
        };
        assert!(
            matches!(err, Error::Unsupported { op, dtype, reason }
                if op == kind.op() && dtype == T::NAME && reason.contains(&format!("{method:?}"))),
            "{err:?}"
        );
        assert_names(&err, &[kind.op(), T::NAME, &format!("{method:?}")]);
    }
}

fn neon_backend<T: QuantElem>(kind: Kind) {
    let op = valid::<T>(kind);
    let x = elems::<T>(12);
    let mut y = vec![T::default(); 12];
    let r = op.run_with(Backend::Neon, &x, &mut y, 4);
    if Backend::Neon.is_available() {
        r.expect("NEON is available, so run_with(Neon) must succeed");
        let mut reference = vec![T::default(); 12];
        op.run_with(Backend::Scalar, &x, &mut reference, 4).unwrap();
        assert_eq!(y, reference, "a backend never changes a byte");
    } else {
        let err = r.unwrap_err();
        assert!(
            matches!(err, Error::BackendUnavailable { backend: "neon" }),
            "{err:?}"
        );
        assert_names(&err, &["neon"]);
        assert!(!Backend::available().any(|b| b == Backend::Neon));
    }
    // The scalar backend is always there.
    assert!(op.run_with(Backend::Scalar, &x, &mut y, 4).is_ok());
}

macro_rules! common_tests {
    ($kind:expr, $t:ty) => {
        use super::*;
        const KIND: Kind = $kind;

        #[test]
        fn length_mismatch() {
            super::length_mismatch::<$t>(KIND);
        }
        #[test]
        fn input_scale_nan() {
            bad_input_scale::<$t>(KIND, f32::NAN);
        }
        #[test]
        fn input_scale_infinite() {
            bad_input_scale::<$t>(KIND, f32::INFINITY);
            bad_input_scale::<$t>(KIND, f32::NEG_INFINITY);
        }
        #[test]
        fn input_scale_zero() {
            bad_input_scale::<$t>(KIND, 0.0);
            bad_input_scale::<$t>(KIND, -0.0);
        }
        #[test]
        fn input_scale_negative() {
            bad_input_scale::<$t>(KIND, -0.05);
            bad_input_scale::<$t>(KIND, -f32::MIN_POSITIVE);
            bad_input_scale::<$t>(KIND, -f32::from_bits(1));
        }
        #[test]
        fn input_scale_subnormal_positive_is_accepted() {
            super::subnormal_input_scale_is_accepted::<$t>(KIND);
        }
        #[test]
        fn accepted_scales_agree_on_constant_rows() {
            super::accepted_scales_agree_on_constant_rows::<$t>(KIND);
        }
        #[test]
        fn output_scale_invalid() {
            for s in BAD_SCALES {
                bad_output_scale::<$t>(KIND, s);
            }
        }
        #[test]
        fn output_scale_subnormal_is_wrong_quantization() {
            super::subnormal_output_scale_is_wrong_quantization::<$t>(KIND);
        }
        #[test]
        fn zero_points_out_of_range() {
            bad_zero_points::<$t>(KIND);
        }
        #[test]
        fn method_lut() {
            super::method::<$t>(KIND, Method::Lut);
        }

        #[test]
        fn method_lut_fixed_point() {
            super::method::<$t>(KIND, Method::LutFixedPoint);
        }
        #[test]
        fn method_dequant_f32() {
            super::method::<$t>(KIND, Method::DequantF32);
        }
        #[test]
        fn method_fixed_point_works() {
            super::method::<$t>(KIND, Method::FixedPoint);
        }
        #[test]
        fn neon_backend() {
            super::neon_backend::<$t>(KIND);
        }
    };
}

macro_rules! rowwise_tests {
    () => {
        #[test]
        fn row_len_zero() {
            super::row_len_zero::<T>(KIND);
        }
        #[test]
        fn row_len_not_dividing() {
            super::row_len_not_dividing::<T>(KIND);
        }
    };
}

fn f32_next_up(x: f32) -> f32 {
    f32::from_bits(x.to_bits() + 1)
}
fn f32_next_down(x: f32) -> f32 {
    f32::from_bits(x.to_bits() - 1)
}

mod softmax_i8 {
    type T = i8;
    common_tests!(Kind::Softmax, T);
    rowwise_tests!();

    #[test]
    fn output_zero_point_minus_127() {
        wrong_output_quantization::<T>(KIND, qp(1.0 / 256.0, -127));
    }
    #[test]
    fn output_zero_point_0() {
        wrong_output_quantization::<T>(KIND, qp(1.0 / 256.0, 0));
    }
    #[test]
    fn output_scale_1_over_255() {
        wrong_output_quantization::<T>(KIND, qp(1.0 / 255.0, -128));
    }
    #[test]
    fn output_scale_within_tflite_tolerance_is_accepted() {
        // TF_LITE_ENSURE_NEAR(scale, 1/256, 0.001/256): 0.09% off is fine, 0.11% is not.
        assert!(build::<T>(KIND, valid_input::<T>(), BETA, qp(1.0009 / 256.0, -128)).is_ok());
        assert!(build::<T>(KIND, valid_input::<T>(), BETA, qp(0.9991 / 256.0, -128)).is_ok());
        wrong_output_quantization::<T>(KIND, qp(1.0011 / 256.0, -128));
        wrong_output_quantization::<T>(KIND, qp(0.9989 / 256.0, -128));
    }
    #[test]
    fn beta_nan() {
        bad_beta::<T>(f32::NAN);
    }
    #[test]
    fn beta_infinite() {
        bad_beta::<T>(f32::INFINITY);
        bad_beta::<T>(f32::NEG_INFINITY);
    }
    #[test]
    fn beta_zero() {
        bad_beta::<T>(0.0);
        bad_beta::<T>(-0.0);
    }
    #[test]
    fn beta_negative() {
        bad_beta::<T>(-1.0);
        bad_beta::<T>(-f32::from_bits(1));
    }
    #[test]
    fn beta_subnormal_positive_is_accepted() {
        assert!(build::<T>(
            KIND,
            valid_input::<T>(),
            f32::from_bits(1),
            KIND.valid_output::<T>()
        )
        .is_ok());
    }
}

mod softmax_u8 {
    type T = u8;
    common_tests!(Kind::Softmax, T);
    rowwise_tests!();

    #[test]
    fn output_zero_point_1() {
        wrong_output_quantization::<T>(KIND, qp(1.0 / 256.0, 1));
    }
    #[test]
    fn output_zero_point_128() {
        wrong_output_quantization::<T>(KIND, qp(1.0 / 256.0, 128));
    }
    #[test]
    fn output_scale_1_over_255() {
        wrong_output_quantization::<T>(KIND, qp(1.0 / 255.0, 0));
    }
    #[test]
    fn beta_nan() {
        bad_beta::<T>(f32::NAN);
    }
    #[test]
    fn beta_negative() {
        bad_beta::<T>(-0.5);
    }
}

mod softmax_i16 {
    type T = i16;
    common_tests!(Kind::Softmax, T);
    rowwise_tests!();

    #[test]
    fn output_zero_point_minus_32768() {
        wrong_output_quantization::<T>(KIND, qp(1.0 / 32768.0, -32768));
    }
    #[test]
    fn output_scale_1_over_65536() {
        wrong_output_quantization::<T>(KIND, qp(1.0 / 65536.0, 0));
    }
    #[test]
    fn beta_infinite() {
        bad_beta::<T>(f32::INFINITY);
    }
    #[test]
    fn beta_zero() {
        bad_beta::<T>(0.0);
    }
}

mod log_softmax_i8 {
    type T = i8;
    common_tests!(Kind::LogSoftmax, T);
    rowwise_tests!();

    #[test]
    fn output_scale_slightly_off() {
        // TFLite compares the scale exactly: one f32 ulp either way is rejected.
        wrong_output_quantization::<T>(KIND, qp(f32_next_up(16.0 / 256.0), 127));
        wrong_output_quantization::<T>(KIND, qp(f32_next_down(16.0 / 256.0), 127));
    }
    /// Minimal case found by `no_panic_log_softmax_i8`: input scales in
    /// [2^-58, 2^-56) are accepted, and running panics in debug builds.
    #[test]
    fn tiny_input_scale_does_not_panic() {
        let op = LogSoftmax::<T>::new(
            qp(2f32.powi(-57), 0),
            qp(16.0 / 256.0, 127),
            Method::FixedPoint,
        )
        .unwrap();
        let mut y = [0i8; 1];
        assert!(
            std::panic::catch_unwind(move || op.run(&[0], &mut y, 1).map(|()| y))
                .is_ok_and(|r| r == Ok([127]))
        );
    }
    #[test]
    fn output_zero_point_126() {
        wrong_output_quantization::<T>(KIND, qp(16.0 / 256.0, 126));
    }
    #[test]
    fn output_softmax_quantization() {
        wrong_output_quantization::<T>(KIND, qp(1.0 / 256.0, -128));
    }
}

mod log_softmax_u8 {
    type T = u8;
    common_tests!(Kind::LogSoftmax, T);
    rowwise_tests!();

    #[test]
    fn output_scale_slightly_off() {
        wrong_output_quantization::<T>(KIND, qp(f32_next_up(16.0 / 256.0), 255));
    }
    #[test]
    fn output_zero_point_254() {
        wrong_output_quantization::<T>(KIND, qp(16.0 / 256.0, 254));
    }
}

mod log_softmax_i16 {
    use super::*;
    type T = i16;

    fn expect_unsupported(r: Result<LogSoftmax<T>, Error>) {
        let Err(err) = r else {
            panic!("LogSoftmax<i16> accepted")
        };
        assert!(
            matches!(
                err,
                Error::Unsupported {
                    op: "log_softmax",
                    dtype: "int16",
                    ..
                }
            ),
            "{err:?}"
        );
        assert_names(&err, &["log_softmax", "int16"]);
    }

    #[test]
    fn is_unsupported() {
        // Whatever the quantization and method: the type itself is the problem.
        expect_unsupported(LogSoftmax::<T>::new(
            qp(0.05, 0),
            qp(16.0 / 256.0, 0),
            Method::FixedPoint,
        ));
        expect_unsupported(LogSoftmax::<T>::new(
            qp(0.05, 0),
            qp(1.0 / 32768.0, 0),
            Method::FixedPoint,
        ));
        expect_unsupported(LogSoftmax::<T>::new(
            qp(0.05, 0),
            qp(16.0 / 256.0, 0),
            Method::Lut,
        ));
        expect_unsupported(LogSoftmax::<T>::new(
            qp(0.05, 0),
            qp(16.0 / 256.0, 0),
            Method::DequantF32,
        ));
    }
}

mod logistic_i8 {
    type T = i8;
    common_tests!(Kind::Logistic, T);

    #[test]
    fn output_zero_point_0() {
        wrong_output_quantization::<T>(KIND, qp(1.0 / 256.0, 0));
    }
    #[test]
    fn output_scale_1_over_128() {
        wrong_output_quantization::<T>(KIND, qp(1.0 / 128.0, -128));
    }
    #[test]
    fn output_scale_slightly_off() {
        // Compared exactly, unlike softmax.
        wrong_output_quantization::<T>(KIND, qp(f32_next_up(1.0 / 256.0), -128));
    }
}

mod logistic_u8 {
    type T = u8;
    common_tests!(Kind::Logistic, T);

    #[test]
    fn output_zero_point_128() {
        wrong_output_quantization::<T>(KIND, qp(1.0 / 256.0, 128));
    }
    #[test]
    fn output_scale_1_over_255() {
        wrong_output_quantization::<T>(KIND, qp(1.0 / 255.0, 0));
    }
}

mod logistic_i16 {
    type T = i16;
    common_tests!(Kind::Logistic, T);

    #[test]
    fn output_zero_point_1() {
        wrong_output_quantization::<T>(KIND, qp(1.0 / 32768.0, 1));
    }
    #[test]
    fn output_scale_1_over_32767() {
        wrong_output_quantization::<T>(KIND, qp(1.0 / 32767.0, 0));
    }
}

mod tanh_i8 {
    type T = i8;
    common_tests!(Kind::Tanh, T);

    #[test]
    fn output_zero_point_1() {
        wrong_output_quantization::<T>(KIND, qp(1.0 / 128.0, 1));
    }
    #[test]
    fn output_zero_point_minus_128() {
        wrong_output_quantization::<T>(KIND, qp(1.0 / 128.0, -128));
    }
    #[test]
    fn output_scale_1_over_256() {
        wrong_output_quantization::<T>(KIND, qp(1.0 / 256.0, 0));
    }
}

mod tanh_u8 {
    type T = u8;
    common_tests!(Kind::Tanh, T);

    #[test]
    fn output_zero_point_0() {
        wrong_output_quantization::<T>(KIND, qp(1.0 / 128.0, 0));
    }
    #[test]
    fn output_zero_point_127() {
        wrong_output_quantization::<T>(KIND, qp(1.0 / 128.0, 127));
    }
}

mod tanh_i16 {
    type T = i16;
    common_tests!(Kind::Tanh, T);

    #[test]
    fn output_zero_point_minus_1() {
        wrong_output_quantization::<T>(KIND, qp(1.0 / 32768.0, -1));
    }
    #[test]
    fn output_scale_1_over_16384() {
        wrong_output_quantization::<T>(KIND, qp(1.0 / 16384.0, 0));
    }
}

// ---------------------------------------------------------------------------
// q31.
// ---------------------------------------------------------------------------

mod q31_ops {
    use super::*;

    #[test]
    fn softmax_length_mismatch() {
        let err = q31::softmax(&[0i32; 4], 5, &mut [0i32; 3], 2).unwrap_err();
        assert!(
            matches!(
                err,
                Error::LengthMismatch {
                    op: "q31 softmax",
                    input: 4,
                    output: 3
                }
            ),
            "{err:?}"
        );
        assert_names(&err, &["q31 softmax", "input", "output"]);
    }

    #[test]
    fn logistic_length_mismatch() {
        let err = q31::logistic(&[0i32; 4], 5, &mut [0i32; 5]).unwrap_err();
        assert!(
            matches!(
                err,
                Error::LengthMismatch {
                    op: "q31 logistic",
                    input: 4,
                    output: 5
                }
            ),
            "{err:?}"
        );
        assert_names(&err, &["q31 logistic", "input", "output"]);
    }

    #[test]
    fn tanh_length_mismatch() {
        let err = q31::tanh(&[0i32; 1], 5, &mut [0i32; 0]).unwrap_err();
        assert!(
            matches!(
                err,
                Error::LengthMismatch {
                    op: "q31 tanh",
                    input: 1,
                    output: 0
                }
            ),
            "{err:?}"
        );
        assert_names(&err, &["q31 tanh", "input", "output"]);
    }

    #[test]
    fn softmax_row_len_zero() {
        let err = q31::softmax(&[0i32; 4], 5, &mut [0i32; 4], 0).unwrap_err();
        assert!(
            matches!(
                err,
                Error::RowLength {
                    op: "q31 softmax",
                    len: 4,
                    row: 0
                }
            ),
            "{err:?}"
        );
        assert_names(&err, &["q31 softmax", "row_len"]);
    }

    #[test]
    fn softmax_row_len_not_dividing() {
        let err = q31::softmax(&[0i32; 6], 5, &mut [0i32; 6], 4).unwrap_err();
        assert!(
            matches!(
                err,
                Error::RowLength {
                    op: "q31 softmax",
                    len: 6,
                    row: 4
                }
            ),
            "{err:?}"
        );
        assert_names(&err, &["q31 softmax", "row_len", "4", "6"]);
    }

    fn expect_integer_bits(err: Error, op: &str, bits: u32) {
        assert!(
            matches!(err, Error::IntegerBits { op: o, value, max } if o == op && value == bits && max == q31::MAX_INTEGER_BITS),
            "{err:?}"
        );
        assert_eq!(q31::MAX_INTEGER_BITS, 28);
        assert_names(&err, &[op, "integer_bits", &bits.to_string(), "28"]);
    }

    #[test]
    fn integer_bits_29() {
        let (x, mut y) = ([0i32; 4], [0i32; 4]);
        expect_integer_bits(
            q31::softmax(&x, 29, &mut y, 4).unwrap_err(),
            "q31 softmax",
            29,
        );
        expect_integer_bits(
            q31::logistic(&x, 29, &mut y).unwrap_err(),
            "q31 logistic",
            29,
        );
        expect_integer_bits(q31::tanh(&x, 29, &mut y).unwrap_err(), "q31 tanh", 29);
    }

    #[test]
    fn integer_bits_u32_max() {
        let (x, mut y) = ([0i32; 4], [0i32; 4]);
        expect_integer_bits(
            q31::softmax(&x, u32::MAX, &mut y, 4).unwrap_err(),
            "q31 softmax",
            u32::MAX,
        );
        expect_integer_bits(
            q31::logistic(&x, u32::MAX, &mut y).unwrap_err(),
            "q31 logistic",
            u32::MAX,
        );
        expect_integer_bits(
            q31::tanh(&x, u32::MAX, &mut y).unwrap_err(),
            "q31 tanh",
            u32::MAX,
        );
    }

    #[test]
    fn integer_bits_0_to_28_are_accepted() {
        let x = [i32::MIN, -1, 0, 1, i32::MAX, 12345];
        let mut y = [0i32; 6];
        for bits in 0..=28 {
            q31::softmax(&x, bits, &mut y, 3).unwrap();
            q31::logistic(&x, bits, &mut y).unwrap();
            q31::tanh(&x, bits, &mut y).unwrap();
        }
    }

    fn expect_fraction_bits(err: Error, op: &str) {
        assert!(
            matches!(err, Error::Unsupported { op: o, dtype: "q31", .. } if o == op),
            "{err:?}"
        );
        assert_names(&err, &[op, "fraction bits"]);
    }

    #[test]
    fn fixed_input_fraction_bits_disagree_with_integer_bits() {
        // I6F26 is Q5.26: integer_bits must be 5.
        let x = [I6F26::from_bits(0); 4];
        let mut y = [I1F31::from_bits(0); 4];
        expect_fraction_bits(q31::softmax(&x, 4, &mut y, 4).unwrap_err(), "q31 softmax");
        expect_fraction_bits(q31::logistic(&x, 6, &mut y).unwrap_err(), "q31 logistic");
        expect_fraction_bits(q31::tanh(&x, 0, &mut y).unwrap_err(), "q31 tanh");
        // I5F27 with integer_bits 5 is one off the other way.
        let x = [I5F27::from_bits(0); 4];
        expect_fraction_bits(q31::softmax(&x, 5, &mut y, 4).unwrap_err(), "q31 softmax");
        // The matching count works, with fixed or raw output.
        q31::softmax(&x, 4, &mut y, 4).unwrap();
        q31::tanh(&[I6F26::from_bits(1 << 26); 4], 5, &mut [0i32; 4]).unwrap();
    }

    #[test]
    fn fixed_output_must_be_q0_31() {
        let x = [0i32; 4];
        let mut y = [I2F30::from_bits(0); 4];
        for err in [
            q31::softmax(&x, 5, &mut y, 4).unwrap_err(),
            q31::logistic(&x, 5, &mut y).unwrap_err(),
            q31::tanh(&x, 5, &mut y).unwrap_err(),
        ] {
            assert!(
                matches!(err, Error::Unsupported { dtype: "q31", .. }),
                "{err:?}"
            );
            assert_names(&err, &["Q0.31"]);
        }
    }

    #[test]
    fn integer_bits_are_checked_before_the_fixed_type() {
        let x = [I6F26::from_bits(0); 4];
        let err = q31::logistic(&x, 29, &mut [0i32; 4]).unwrap_err();
        assert!(
            matches!(err, Error::IntegerBits { value: 29, .. }),
            "{err:?}"
        );
    }

    #[test]
    fn neon_backend() {
        let x = [i32::MIN, -5 << 26, -1, 0, 1, 3 << 26, i32::MAX, 7];
        let mut y = [0i32; 8];
        let results = [
            q31::softmax_with(Backend::Neon, &x, 5, &mut y, 4),
            q31::logistic_with(Backend::Neon, &x, 5, &mut y),
            q31::tanh_with(Backend::Neon, &x, 5, &mut y),
        ];
        for r in results {
            if Backend::Neon.is_available() {
                r.expect("NEON is available, so q31 *_with(Neon) must succeed");
            } else {
                let err = r.unwrap_err();
                assert!(
                    matches!(err, Error::BackendUnavailable { backend: "neon" }),
                    "{err:?}"
                );
                assert_names(&err, &["neon"]);
            }
        }
        if Backend::Neon.is_available() {
            let (mut a, mut b) = ([0i32; 8], [0i32; 8]);
            q31::softmax_with(Backend::Neon, &x, 5, &mut a, 4).unwrap();
            q31::softmax_with(Backend::Scalar, &x, 5, &mut b, 4).unwrap();
            assert_eq!(a, b);
        }
    }
}

// ---------------------------------------------------------------------------
// No bad input panics.
// ---------------------------------------------------------------------------

fn config(cases: u32) -> Config {
    Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    }
}

/// Any `f32`, biased toward the awkward ones.
fn any_scale() -> impl Strategy<Value = f32> {
    let specials = vec![
        f32::NAN,
        -f32::NAN,
        f32::INFINITY,
        f32::NEG_INFINITY,
        0.0,
        -0.0,
        f32::from_bits(1),
        f32::MIN_POSITIVE,
        f32::MIN_POSITIVE / 4.0,
        f32::MAX,
        f32::MIN,
        f32::EPSILON,
        -1.0,
        1.0,
        1.0 / 256.0,
        1.0 / 128.0,
        16.0 / 256.0,
        1.0 / 32768.0,
        0.05,
        4.0,
        8.0,
        16.0,
        32.0,
        1e-9,
        1e9,
        2f32.powi(-25),
        2f32.powi(-26),
        2f32.powi(-27),
        2f32.powi(-30),
        2f32.powi(-56),
        2f32.powi(-57),
        2f32.powi(-58),
        2f32.powi(-59),
    ];
    prop_oneof![
        2 => proptest::sample::select(specials),
        2 => any::<u32>().prop_map(f32::from_bits),
        // Log-uniform over the whole positive range.
        3 => (-149i32..=127, 1.0f64..2.0).prop_map(|(e, m)| (m * 2f64.powi(e)) as f32),
    ]
}

fn any_zero_point() -> impl Strategy<Value = i32> {
    prop_oneof![
        4 => proptest::sample::select(vec![-128, -1, 0, 1, 127, 128, 255]),
        4 => -129i32..=256,
        1 => any::<i32>(),
        1 => proptest::sample::select(vec![i32::MIN, i32::MAX, -32769, -32768, 32767, 32768, 65535]),
    ]
}

#[derive(Debug, Clone)]
struct Fuzz {
    input: QuantParams,
    beta: f32,
    /// `None`: TFLite's valid output quantization for the op and type.
    output: Option<QuantParams>,
    method: Method,
    backend: Backend,
    data: Vec<i32>,
    output_len_delta: i8,
    row_len: usize,
}

fn fuzz() -> impl Strategy<Value = Fuzz> {
    (
        (any_scale(), any_zero_point()).prop_map(|(s, z)| qp(s, z)),
        any_scale(),
        prop_oneof![4 => Just(None), 1 => (any_scale(), any_zero_point()).prop_map(|(s, z)| Some(qp(s, z)))],
        prop_oneof![
            8 => Just(Method::FixedPoint),
            1 => Just(Method::Lut),
            1 => Just(Method::LutFixedPoint),
            1 => Just(Method::DequantF32)
        ],
        prop_oneof![Just(Backend::Scalar), Just(Backend::Neon)],
        proptest::collection::vec(any::<i32>(), 0..24),
        prop_oneof![6 => Just(0i8), 1 => -2i8..=2],
        0usize..10,
    )
        .prop_map(|(input, beta, output, method, backend, data, output_len_delta, row_len)| Fuzz {
            input,
            beta,
            output,
            method,
            backend,
            data,
            output_len_delta,
            row_len,
        })
}

/// Constructs and, if that succeeds, runs `kind` for `T`; any panic fails the test.
fn fuzz_one<T: QuantElem>(kind: Kind, f: &Fuzz) {
    let output = f.output.unwrap_or(kind.valid_output::<T>());
    let Ok(op) = Op::<T>::new(kind, f.input, f.beta, output, f.method) else {
        return;
    };
    let x: Vec<T> = f
        .data
        .iter()
        .map(|&v| T::from_i32(v.rem_euclid(T::MAX - T::MIN + 1) + T::MIN))
        .collect();
    let n = (x.len() as i64 + f.output_len_delta as i64).max(0) as usize;
    let mut y = vec![T::default(); n];
    let r = op.run_with(f.backend, &x, &mut y, f.row_len);
    if r.is_ok() {
        assert_eq!(x.len(), y.len());
        if kind.rowwise() {
            assert!(f.row_len > 0 && x.len().is_multiple_of(f.row_len));
        }
    }
}

macro_rules! no_panic {
    ($name:ident, $kind:expr, $t:ty) => {
        proptest! {
            #![proptest_config(config(1500))]
            #[test]
            fn $name(f in fuzz()) {
                fuzz_one::<$t>($kind, &f);
            }
        }
    };
}

no_panic!(no_panic_softmax_i8, Kind::Softmax, i8);
no_panic!(no_panic_softmax_u8, Kind::Softmax, u8);
no_panic!(no_panic_softmax_i16, Kind::Softmax, i16);
no_panic!(no_panic_log_softmax_i8, Kind::LogSoftmax, i8);
no_panic!(no_panic_log_softmax_u8, Kind::LogSoftmax, u8);
no_panic!(no_panic_log_softmax_i16, Kind::LogSoftmax, i16);
no_panic!(no_panic_logistic_i8, Kind::Logistic, i8);
no_panic!(no_panic_logistic_u8, Kind::Logistic, u8);
no_panic!(no_panic_logistic_i16, Kind::Logistic, i16);
no_panic!(no_panic_tanh_i8, Kind::Tanh, i8);
no_panic!(no_panic_tanh_u8, Kind::Tanh, u8);
no_panic!(no_panic_tanh_i16, Kind::Tanh, i16);

proptest! {
    #![proptest_config(config(1500))]

    #[test]
    fn no_panic_q31(
        bits in prop_oneof![4 => 0u32..=30, 1 => any::<u32>()],
        data in proptest::collection::vec(
            prop_oneof![any::<i32>(), proptest::sample::select(vec![i32::MIN, i32::MIN + 1, -1, 0, 1, i32::MAX])],
            0..24,
        ),
        output_len_delta in prop_oneof![6 => Just(0i64), 1 => -2i64..=2],
        row_len in 0usize..10,
        neon in any::<bool>(),
    ) {
        let backend = if neon { Backend::Neon } else { Backend::Scalar };
        let n = (data.len() as i64 + output_len_delta).max(0) as usize;
        let mut y = vec![0i32; n];
        let _ = q31::softmax_with(backend, &data, bits, &mut y, row_len);
        let _ = q31::logistic_with(backend, &data, bits, &mut y);
        let _ = q31::tanh_with(backend, &data, bits, &mut y);
    }
}
