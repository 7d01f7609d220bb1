//! The public quantization helpers outside their domain: an `Error` naming
//! the parameter, never an arithmetic overflow or a silent answer.
//!
//! `quant::calculate_input_radius` and `quant::preprocess_softmax_scaling`
//! are TFLite's `Prepare` helpers whose results fill the public
//! `SoftmaxParams`, `LogSoftmaxParams` and `ActivationParams`; they once
//! shifted by `total_signed_bits - input_integer_bits` and
//! `31 - input_integer_bits` unchecked (a panic with overflow checks, garbage
//! without) and turned a NaN `beta` into the largest multiplier.

use qneon::quant::{self, calculate_input_radius, preprocess_softmax_scaling};
use qneon::Error;

/// Whether `e`'s message contains `name` (the parameter it must name).
fn names(e: &Error, name: &str) -> bool {
    e.to_string().contains(name)
}

#[test]
fn calculate_input_radius_rejects_bits_outside_its_domain() {
    // (input_integer_bits, input_left_shift, total_signed_bits, the parameter named)
    for (integer_bits, shift, total, what) in [
        (32u32, 0i32, 31u32, "integer_bits"),
        (5, 0, 4, "integer_bits"),
        (64, 0, 70, "total_signed_bits"),
        (0, 0, 64, "total_signed_bits"),
        (0, 0, 32, "total_signed_bits"),
        (u32::MAX, 0, u32::MAX, "total_signed_bits"),
        (u32::MAX, i32::MIN, 31, "integer_bits"),
        (16, 0, 15, "integer_bits"),
    ] {
        let got = calculate_input_radius(integer_bits, shift, total);
        let e = got.expect_err(&format!(
            "({integer_bits}, {shift}, {total}) must be an error"
        ));
        assert!(names(&e, what), "({integer_bits}, {shift}, {total}): {e}");
    }
}

#[test]
fn calculate_input_radius_accepts_its_whole_domain() {
    // Every bit count in the domain, with extreme shifts: a value, no panic.
    for total in 0..=31u32 {
        for integer_bits in 0..=total {
            for shift in [i32::MIN, -1000, -64, -1, 0, 1, 31, 64, 1000, i32::MAX] {
                let r = calculate_input_radius(integer_bits, shift, total).unwrap();
                assert!(r >= 0, "({integer_bits}, {shift}, {total}) = {r}");
                if integer_bits == 0 || shift >= 64 {
                    assert_eq!(r, 0, "({integer_bits}, {shift}, {total})");
                }
                if integer_bits > 0 && shift <= -64 {
                    assert_eq!(r, i32::MAX, "({integer_bits}, {shift}, {total})");
                }
            }
        }
    }
    assert_eq!(calculate_input_radius(31, 0, 31), Ok(i32::MAX));
    assert_eq!(calculate_input_radius(15, 0, 15), Ok(32767));
}

#[test]
fn preprocess_softmax_scaling_rejects_parameters_outside_its_domain() {
    let e = preprocess_softmax_scaling(1.0, 0.1, 32).unwrap_err();
    assert!(
        matches!(
            e,
            Error::IntegerBits {
                value: 32,
                max: 31,
                ..
            }
        ) && names(&e, "integer_bits"),
        "{e:?}"
    );
    let e = preprocess_softmax_scaling(1.0, 0.1, u32::MAX).unwrap_err();
    assert!(names(&e, "integer_bits"), "{e}");
    for beta in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY, 0.0, -0.0, -1.0] {
        let e = preprocess_softmax_scaling(beta, 1.0, 5).unwrap_err();
        assert!(
            matches!(e, Error::Beta { .. }) && names(&e, "beta"),
            "beta {beta}: {e:?}"
        );
    }
    for scale in [f64::NAN, f64::INFINITY, 0.0, -1e-30, -f64::MAX] {
        let e = preprocess_softmax_scaling(1.0, scale, 5).unwrap_err();
        assert!(
            matches!(e, Error::Scale { .. }) && names(&e, "input scale"),
            "scale {scale}: {e:?}"
        );
    }
}

#[test]
fn preprocess_softmax_scaling_caps_and_underflows_within_its_domain() {
    let cap = quant::quantize_multiplier(((1u64 << 31) - 1) as f64).unwrap();
    // Products beyond f64 (infinite) are capped like any product above 2^31 - 1.
    for (beta, scale) in [(f64::MAX, f64::MAX), (1e200, 1e200), (1.0, 1e10)] {
        assert_eq!(
            preprocess_softmax_scaling(beta, scale, 5),
            Ok(cap),
            "{beta} * {scale}"
        );
    }
    // Products that underflow are a zero multiplier.
    let zero = preprocess_softmax_scaling(f64::MIN_POSITIVE, f64::MIN_POSITIVE, 5).unwrap();
    assert_eq!(zero.multiplier, 0);
    for bits in 0..=31 {
        let m = preprocess_softmax_scaling(0.5, 0.25, bits).unwrap();
        // 0.125 * 2^(31 - bits) = 2^30 * 2^(shift - 31) with mantissa 2^30.
        assert_eq!(
            (m.multiplier, m.shift),
            (1 << 30, 29 - bits as i32),
            "bits {bits}"
        );
    }
}
