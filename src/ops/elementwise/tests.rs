//! The element-wise activations against the real functions they quantize
//! (within one output step), their clamp bounds, and the NEON table
//! against the scalar arithmetic on every input byte.

extern crate std;
use std::vec::Vec;

use super::*;
use crate::Error;

/// Every int8 value, three times over and a tail (not a multiple of 64).
fn all_i8() -> Vec<i8> {
    (0..3 * 256 + 37).map(|i| (i % 256) as u8 as i8).collect()
}

fn real(q: QuantParams, x: i32) -> f64 {
    (x - q.zero_point) as f64 * q.scale as f64
}

fn quantize(q: QuantParams, r: f64, lo: i32, hi: i32) -> f64 {
    (r / q.scale as f64 + q.zero_point as f64).clamp(lo as f64, hi as f64)
}

#[test]
fn relus_follow_the_real_clamp_and_backends_agree() {
    let qin = QuantParams::new(0.05, -10);
    for (kind, lo, hi) in [
        (ReluKind::Relu, 0.0, f64::INFINITY),
        (ReluKind::Relu6, 0.0, 6.0),
        (ReluKind::ReluN1To1, -1.0, 1.0),
    ] {
        for qout in [
            qin,
            QuantParams::new(0.03, -128),
            QuantParams::new(0.011, 5),
        ] {
            let relu = Relu::<i8>::new(kind, qin, qout).unwrap();
            let input = all_i8();
            let mut scalar = std::vec![0i8; input.len()];
            relu.run_with(Backend::Scalar, &input, &mut scalar).unwrap();
            for (&x, &y) in input.iter().zip(&scalar) {
                let r = real(qin, x as i32).clamp(lo, hi);
                let ideal = quantize(qout, r, -128, 127);
                assert!(
                    (y as f64 - ideal).abs() <= 0.5 + 1e-9,
                    "{kind:?} {x} -> {y}, ideal {ideal}"
                );
            }
            let mut best = std::vec![0i8; input.len()];
            relu.run_with(Backend::best(), &input, &mut best).unwrap();
            assert_eq!(best, scalar, "{kind:?}");
        }
    }
    // Same scales: RELU6 of int8 with scale 0.05 and zero point -10 clamps
    // at -10 and -10 + 120 = 110, and copies the rest.
    let relu6 = Relu::<i8>::new(ReluKind::Relu6, qin, qin).unwrap();
    assert_eq!(relu6.output_range(), (-10, 110));
    let mut out = [0i8; 4];
    relu6
        .run_with(Backend::Scalar, &[-128, -10, 50, 127], &mut out)
        .unwrap();
    assert_eq!(out, [-10, -10, 50, 110]);
}

#[test]
fn leaky_relu_follows_the_real_function_and_backends_agree() {
    let qin = QuantParams::new(0.04, 3);
    for alpha in [0.0f32, 0.1, 0.2, 1.5] {
        for qout in [qin, QuantParams::new(0.02, -20)] {
            let leaky = LeakyRelu::<i8>::new(alpha, qin, qout).unwrap();
            let input = all_i8();
            let mut scalar = std::vec![0i8; input.len()];
            leaky
                .run_with(Backend::Scalar, &input, &mut scalar)
                .unwrap();
            for (&x, &y) in input.iter().zip(&scalar) {
                let r = real(qin, x as i32);
                let r = if r >= 0.0 { r } else { alpha as f64 * r };
                let ideal = quantize(qout, r, -128, 127);
                // Double rounding: the high multiply's rounding (at most a
                // quarter step after a shift of 1 or more) adds to the final one.
                assert!(
                    (y as f64 - ideal).abs() <= 0.75 + 1e-6,
                    "alpha {alpha}: {x} -> {y}, ideal {ideal}"
                );
            }
            let mut best = std::vec![0i8; input.len()];
            leaky.run_with(Backend::best(), &input, &mut best).unwrap();
            assert_eq!(best, scalar, "alpha {alpha}");
        }
    }
}

#[test]
fn uint8_tables_equal_the_scalar_arithmetic() {
    let qin = QuantParams::new(0.05, 128);
    let qout = QuantParams::new(0.04, 100);
    let input: Vec<u8> = (0..300).map(|i| (i % 256) as u8).collect();
    let relu = Relu::<u8>::new(ReluKind::Relu6, qin, qout).unwrap();
    let leaky = LeakyRelu::<u8>::new(0.3, qin, qout).unwrap();
    let (mut a, mut b) = (std::vec![0u8; 300], std::vec![0u8; 300]);
    relu.run_with(Backend::Scalar, &input, &mut a).unwrap();
    relu.run_with(Backend::best(), &input, &mut b).unwrap();
    assert_eq!(a, b);
    // RELU6 on uint8: 6 / 0.04 = 150 steps above zero point 100.
    assert_eq!(relu.output_range(), (100, 250));
    leaky.run_with(Backend::Scalar, &input, &mut a).unwrap();
    leaky.run_with(Backend::best(), &input, &mut b).unwrap();
    assert_eq!(a, b);
}

#[test]
fn bad_parameters_are_errors() {
    let q = QuantParams::new(0.1, 0);
    assert!(matches!(
        LeakyRelu::<i8>::new(-0.1, q, q),
        Err(Error::OutOfDomain { what: "alpha", .. })
    ));
    assert!(LeakyRelu::<i8>::new(f32::NAN, q, q).is_err());
    assert!(matches!(
        Relu::<i16>::new(ReluKind::Relu, q, q),
        Err(Error::Unsupported { .. })
    ));
    assert!(Relu::<i8>::new(ReluKind::Relu, QuantParams::new(0.0, 0), q).is_err());
    assert!(Relu::<i8>::new(ReluKind::Relu, q, QuantParams::new(0.1, 200)).is_err());
    let relu = Relu::<i8>::new(ReluKind::Relu, q, q).unwrap();
    assert!(relu.run(&[0; 3], &mut [0; 4]).is_err());
}

#[test]
fn hard_swish_follows_the_real_function_and_backends_agree() {
    let hard_swish = |r: f64| r * (r + 3.0).clamp(0.0, 6.0) / 6.0;
    for (qin, qout) in [
        (QuantParams::new(0.05, -10), QuantParams::new(0.03, -100)),
        (QuantParams::new(0.1, 0), QuantParams::new(0.1, 0)),
        (QuantParams::new(0.02, 30), QuantParams::new(0.004, -128)),
    ] {
        let op = HardSwish::<i8>::new(qin, qout).unwrap();
        let input = all_i8();
        let mut scalar = std::vec![0i8; input.len()];
        op.run_with(Backend::Scalar, &input, &mut scalar).unwrap();
        for (&x, &y) in input.iter().zip(&scalar) {
            let ideal = quantize(qout, hard_swish(real(qin, x as i32)), -128, 127);
            // 16-bit fixed point: the reluish factor carries about 2^-15
            // relative error and the product truncates; one step covers it.
            assert!((y as f64 - ideal).abs() <= 1.0, "{x} -> {y}, ideal {ideal}");
        }
        let mut best = std::vec![0i8; input.len()];
        op.run_with(Backend::best(), &input, &mut best).unwrap();
        assert_eq!(best, scalar);
    }
    // The output exponent must be at most 0: s_in / 128 >= s_out refused.
    let q = QuantParams::new(1.0, 0);
    assert!(matches!(
        HardSwish::<i8>::new(q, QuantParams::new(1.0 / 256.0, 0)),
        Err(Error::OutOfDomain { .. })
    ));
}

/// XNNPACK's LEAKY_RELU: within one step of the real function (its Q8
/// multipliers are off by at most half of 2^-8 of the ratio, times at most
/// 255, plus the final rounding), backends equal, a hand-computed case
/// exact, and the ratios XNNPACK refuses refused.
#[test]
fn xnnpack_leaky_relu_q8_slopes() {
    let qin = QuantParams::new(0.04, 3);
    for alpha in [0.01f32, 0.2, 1.5] {
        for qout in [qin, QuantParams::new(0.02, -20)] {
            let leaky = LeakyRelu::<i8>::new_xnnpack(alpha, qin, qout).unwrap();
            let input = all_i8();
            let mut scalar = std::vec![0i8; input.len()];
            leaky
                .run_with(Backend::Scalar, &input, &mut scalar)
                .unwrap();
            for (&x, &y) in input.iter().zip(&scalar) {
                let r = real(qin, x as i32);
                let r = if r >= 0.0 { r } else { alpha as f64 * r };
                let ideal = quantize(qout, r, -128, 127);
                assert!(
                    (y as f64 - ideal).abs() <= 1.0,
                    "alpha {alpha}: {x} -> {y}, ideal {ideal}"
                );
            }
            let mut best = std::vec![0i8; input.len()];
            leaky.run_with(Backend::best(), &input, &mut best).unwrap();
            assert_eq!(best, scalar, "alpha {alpha}");
        }
    }
    // Equal scales, alpha 1/2: multipliers 256 and 128, so y = v for v >= 0
    // and floor((v + 1) / 2) below (TFLite's rounds -1/2 to 0 as well, but
    // -3/2 to -1 where this gives floor(-1) = -1 and -5/2 to -2).
    let q = QuantParams::new(0.5, 0);
    let leaky = LeakyRelu::<i8>::new_xnnpack(0.5, q, q).unwrap();
    let mut out = [0i8; 6];
    leaky
        .run_with(Backend::Scalar, &[-128, -5, -3, -1, 0, 127], &mut out)
        .unwrap();
    assert_eq!(out, [-64, -2, -1, 0, 0, 127]);
    for (alpha, qout) in [
        (0.0f32, q),                        // negative ratio 0
        (0.001, q),                         // below 2^-8
        (0.5, QuantParams::new(0.001, 0)),  // 500 > 2^7
        (0.5, QuantParams::new(1000.0, 0)), // 2^-11 < 2^-8
    ] {
        assert!(
            matches!(
                LeakyRelu::<i8>::new_xnnpack(alpha, q, qout),
                Err(crate::Error::Unsupported { .. })
            ),
            "alpha {alpha}, {qout:?}"
        );
    }
}
