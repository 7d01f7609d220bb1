//! `QuantParams::{quantize, dequantize}` for i8, u8 and i16:
//!
//! * against an oracle written independently here (std's `f32::round`,
//!   which rounds half away from zero, and `f64` arithmetic for the zero
//!   point and the clamp, as TFLite's reference kernel), on every tie
//!   `(k + 1/2) * scale` of the type's range and its neighbours, on
//!   infinities, NaN, signed zeros, subnormals and huge values;
//! * dequantize against TFLite's reference arithmetic (an `f64` product
//!   rounded to `f32`) on every value of every type;
//! * every available backend bit for bit against the scalar one on lengths
//!   0..=70 at every offset 0..16 of the input and the output, with the
//!   bytes around the output watched;
//! * errors: lengths, scales, zero points, unavailable backends, and the
//!   output left untouched on error.

use proptest::prelude::*;
use qneon::{Backend, Error, QuantElem, QuantParams};

/// The oracle of `quantize`: `clamp(round_half_away(x / scale) + zp)`,
/// NaN to `zp`.
fn quantize_oracle<T: QuantElem>(q: QuantParams, x: f32) -> i32 {
    let d = x / q.scale;
    if d.is_nan() {
        return q.zero_point;
    }
    // std's round: half away from zero. f64 holds the sum exactly (or
    // saturates to infinity, which the clamp handles).
    let r = d.round() as f64 + q.zero_point as f64;
    r.clamp(T::MIN as f64, T::MAX as f64) as i32
}

/// TFLite's reference dequantize: `static_cast<float>(double(scale) * (q - zp))`.
fn dequantize_oracle(q: QuantParams, v: i32) -> f32 {
    (q.scale as f64 * (v - q.zero_point) as f64) as f32
}

/// Quantization parameters that exercise each type: unusual scales
/// (subnormal, tiny, huge, not powers of two) and zero points at both ends.
fn params<T: QuantElem>() -> Vec<QuantParams> {
    let mid = (T::MIN + T::MAX + 1) / 2;
    let zps = [
        T::MIN,
        mid,
        T::MAX,
        0.clamp(T::MIN, T::MAX),
        (mid + 3).min(T::MAX),
    ];
    let scales = [
        1.0,
        0.1,
        1.0 / 256.0,
        0.0234375,
        3.0e-7,
        1.7e-39, // subnormal
        1.0e-45, // the smallest subnormal
        12345.678,
        3.0e38,
    ];
    let mut out = Vec::new();
    for &s in &scales {
        for &z in &zps {
            out.push(QuantParams::new(s, z));
        }
    }
    out
}

/// Inputs for `q`: every tie `(k + 1/2) * scale` over the type's range (and
/// a little beyond), the f32 next to it either side, the integers, and the
/// special values.
fn inputs<T: QuantElem>(q: QuantParams) -> Vec<f32> {
    let mut xs = vec![
        0.0,
        -0.0,
        f32::NAN,
        -f32::NAN,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::MAX,
        f32::MIN,
        f32::MIN_POSITIVE,
        -f32::MIN_POSITIVE,
        1.0e-45,
        -1.0e-45,
        2.0e9,
        -2.0e9,
        3.0e9,
        -3.0e9,
    ];
    let range = (T::MAX - T::MIN) as i64;
    let step = if range > 1000 { 97 } else { 1 };
    let mut k = -(range + 2);
    while k <= range + 2 {
        for real in [k as f64, k as f64 + 0.5] {
            let x = (real * q.scale as f64) as f32;
            if x.is_finite() {
                xs.push(x);
                xs.push(f32::from_bits(x.to_bits().wrapping_add(1)));
                xs.push(f32::from_bits(x.to_bits().wrapping_sub(1)));
            }
        }
        k += step;
    }
    xs
}

fn check_quantize<T: QuantElem>() {
    for q in params::<T>() {
        let xs = inputs::<T>(q);
        for backend in Backend::available() {
            let mut out = vec![T::default(); xs.len()];
            q.quantize_with(backend, &xs, &mut out).unwrap();
            for (&x, &y) in xs.iter().zip(&out) {
                assert_eq!(
                    y.to_i32(),
                    quantize_oracle::<T>(q, x),
                    "{} {backend:?} {q:?} x {x:e}",
                    T::NAME
                );
            }
        }
    }
}

#[test]
fn quantize_i8_matches_the_oracle_on_ties_and_special_values() {
    check_quantize::<i8>();
}

#[test]
fn quantize_u8_matches_the_oracle_on_ties_and_special_values() {
    check_quantize::<u8>();
}

#[test]
fn quantize_i16_matches_the_oracle_on_ties_and_special_values() {
    check_quantize::<i16>();
}

#[test]
fn quantize_rounds_ties_away_from_zero_and_nan_to_the_zero_point() {
    let q = QuantParams::new(1.0, 0);
    let xs = [
        0.5f32,
        -0.5,
        1.5,
        -1.5,
        2.5,
        -2.5,
        0.49999997,
        -0.49999997,
        f32::NAN,
    ];
    let mut out = [0i8; 9];
    for backend in Backend::available() {
        q.quantize_with(backend, &xs, &mut out).unwrap();
        assert_eq!(out, [1, -1, 2, -2, 3, -3, 0, 0, 0], "{backend:?}");
    }
    // The zero point is added after rounding, and NaN gives it.
    let q = QuantParams::new(0.5, 10);
    let mut out = [0u8; 4];
    q.quantize(&[0.25, -0.25, f32::NAN, -1e30], &mut out)
        .unwrap();
    assert_eq!(out, [11, 9, 10, 0]);
}

/// The division is in `f32`, as TFLite's: `x / scale`, not `x * (1 / scale)`.
#[test]
fn quantize_divides_in_f32() {
    // Find an x where the two disagree after rounding, so the test can fail.
    let scale = 0.1f32;
    let inv = 1.0 / scale;
    let x = (0..30_000)
        .flat_map(|k| {
            let tie = (k as f32 + 0.5) * scale;
            (-4i32..=4).map(move |d| f32::from_bits(tie.to_bits().wrapping_add_signed(d)))
        })
        .find(|&x| (x / scale).round() != (x * inv).round())
        .expect("a value where dividing and multiplying by the reciprocal differ");
    let mut out = [0i16; 1];
    for backend in Backend::available() {
        QuantParams::new(scale, 0)
            .quantize_with(backend, &[x], &mut out)
            .unwrap();
        assert_eq!(out[0] as f32, (x / scale).round().clamp(-32768.0, 32767.0));
    }
}

fn check_dequantize<T: QuantElem>() {
    let values: Vec<T> = (T::MIN..=T::MAX).map(T::from_i32).collect();
    for q in params::<T>() {
        for backend in Backend::available() {
            let mut out = vec![f32::NAN; values.len()];
            q.dequantize_with(backend, &values, &mut out).unwrap();
            for (&v, &y) in values.iter().zip(&out) {
                let want = dequantize_oracle(q, v.to_i32());
                assert_eq!(y.to_bits(), want.to_bits(), "{backend:?} {q:?} q {v:?}");
            }
        }
    }
}

#[test]
fn dequantize_i8_is_tflites_reference_on_every_value() {
    check_dequantize::<i8>();
}

#[test]
fn dequantize_u8_is_tflites_reference_on_every_value() {
    check_dequantize::<u8>();
}

#[test]
fn dequantize_i16_is_tflites_reference_on_every_value() {
    check_dequantize::<i16>();
}

/// Every value survives dequantize then quantize (for scales whose products
/// stay normal and finite).
fn check_round_trip<T: QuantElem>() {
    let values: Vec<T> = (T::MIN..=T::MAX).map(T::from_i32).collect();
    for q in params::<T>() {
        if !(1e-30..=1e30).contains(&q.scale) {
            continue;
        }
        let mut real = vec![0f32; values.len()];
        let mut back = vec![T::default(); values.len()];
        q.dequantize(&values, &mut real).unwrap();
        q.quantize(&real, &mut back).unwrap();
        assert_eq!(back, values, "{q:?}");
    }
}

#[test]
fn dequantize_then_quantize_is_the_identity() {
    check_round_trip::<i8>();
    check_round_trip::<u8>();
    check_round_trip::<i16>();
}

/// Every available backend against the scalar one on every short length and
/// alignment, with the bytes around the output watched.
fn check_lengths<T: QuantElem + PartialEq>(sentinel: T) {
    let q = QuantParams::new(0.37, (T::MIN + T::MAX) / 2);
    let source: Vec<f32> = (0..96)
        .map(|i| match i % 11 {
            0 => f32::NAN,
            1 => f32::INFINITY,
            2 => -1e9,
            _ => ((i * 7919) % 1000) as f32 * 0.37 * if i % 2 == 0 { 1.0 } else { -0.3 },
        })
        .collect();
    let quantized: Vec<T> = (0..96)
        .map(|i| T::from_i32(T::MIN + (i * 37) % (T::MAX - T::MIN + 1)))
        .collect();
    for backend in Backend::available() {
        for len in 0..=70 {
            for offset_in in 0..16 {
                let mut want_q = vec![T::default(); len];
                q.quantize_with(
                    Backend::Scalar,
                    &source[offset_in..offset_in + len],
                    &mut want_q,
                )
                .unwrap();
                let mut want_f = vec![0f32; len];
                q.dequantize_with(
                    Backend::Scalar,
                    &quantized[offset_in..offset_in + len],
                    &mut want_f,
                )
                .unwrap();
                for offset_out in [0, 1, 3, 7, 8, 15] {
                    let mut buf = vec![sentinel; offset_out + len + 32];
                    q.quantize_with(
                        backend,
                        &source[offset_in..offset_in + len],
                        &mut buf[offset_out..offset_out + len],
                    )
                    .unwrap();
                    assert_eq!(&buf[offset_out..offset_out + len], &want_q[..]);
                    assert!(buf[..offset_out].iter().all(|&v| v == sentinel));
                    assert!(buf[offset_out + len..].iter().all(|&v| v == sentinel));

                    let mut fbuf = vec![-7.25f32; offset_out + len + 32];
                    q.dequantize_with(
                        backend,
                        &quantized[offset_in..offset_in + len],
                        &mut fbuf[offset_out..offset_out + len],
                    )
                    .unwrap();
                    let got: Vec<u32> = fbuf[offset_out..offset_out + len]
                        .iter()
                        .map(|v| v.to_bits())
                        .collect();
                    let want: Vec<u32> = want_f.iter().map(|v| v.to_bits()).collect();
                    assert_eq!(got, want, "{backend:?} len {len}");
                    assert!(fbuf[..offset_out].iter().all(|&v| v == -7.25));
                    assert!(fbuf[offset_out + len..].iter().all(|&v| v == -7.25));
                }
            }
        }
    }
}

#[test]
fn every_backend_equals_scalar_on_every_length_and_offset() {
    // The sentinels fill the margins, which must survive; the written part
    // is compared with the scalar result on fresh, exactly sized buffers.
    check_lengths::<i8>(0x55);
    check_lengths::<u8>(0xaa);
    check_lengths::<i16>(0x5555);
}

#[test]
fn neon_is_available_on_aarch64() {
    assert_eq!(Backend::Neon.is_available(), cfg!(target_arch = "aarch64"));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Random scales, zero points and inputs (every f32 bit pattern): every
    /// backend equals the oracle.
    #[test]
    fn quantize_i8_random(scale_bits in 1u32..0x7f80_0000, zp in -128i32..=127,
                          xs in proptest::collection::vec(any::<u32>(), 0..40)) {
        let q = QuantParams::new(f32::from_bits(scale_bits), zp);
        let xs: Vec<f32> = xs.into_iter().map(f32::from_bits).collect();
        for backend in Backend::available() {
            let mut out = vec![0i8; xs.len()];
            q.quantize_with(backend, &xs, &mut out).unwrap();
            for (&x, &y) in xs.iter().zip(&out) {
                prop_assert_eq!(y as i32, quantize_oracle::<i8>(q, x), "x {:e}", x);
            }
        }
    }

    #[test]
    fn quantize_i16_random(scale_bits in 1u32..0x7f80_0000, zp in -32768i32..=32767,
                           xs in proptest::collection::vec(any::<u32>(), 0..40)) {
        let q = QuantParams::new(f32::from_bits(scale_bits), zp);
        let xs: Vec<f32> = xs.into_iter().map(f32::from_bits).collect();
        for backend in Backend::available() {
            let mut out = vec![0i16; xs.len()];
            q.quantize_with(backend, &xs, &mut out).unwrap();
            for (&x, &y) in xs.iter().zip(&out) {
                prop_assert_eq!(y as i32, quantize_oracle::<i16>(q, x), "x {:e}", x);
            }
        }
    }
}

#[test]
fn errors_name_the_cause_and_leave_the_output_untouched() {
    let good = QuantParams::new(0.5, 0);
    let mut out = [9i8; 3];
    let err = good.quantize(&[1.0, 2.0], &mut out).unwrap_err();
    assert_eq!(
        err,
        Error::LengthMismatch {
            op: "quantize",
            input: 2,
            output: 3
        }
    );
    assert_eq!(out, [9; 3]);
    let mut fout = [9.0f32; 3];
    let err = good.dequantize(&[1i8, 2], &mut fout).unwrap_err();
    assert_eq!(
        err,
        Error::LengthMismatch {
            op: "dequantize",
            input: 2,
            output: 3
        }
    );
    assert_eq!(fout, [9.0; 3]);

    for scale in [0.0, -1.0, f32::NAN, f32::INFINITY, -0.0] {
        let q = QuantParams::new(scale, 0);
        let err = q.quantize(&[1.0], &mut [0u8]).unwrap_err();
        assert!(matches!(err, Error::Scale { what: "scale", .. }), "{err:?}");
        let err = q.dequantize(&[1u8], &mut [0.0]).unwrap_err();
        assert!(matches!(err, Error::Scale { what: "scale", .. }), "{err:?}");
        assert!(err.to_string().contains("scale"));
    }

    // The zero point must be a value of the type.
    let q = QuantParams::new(1.0, 128);
    assert!(matches!(
        q.quantize(&[1.0], &mut [0i8]),
        Err(Error::ZeroPoint {
            value: 128,
            min: -128,
            max: 127,
            ..
        })
    ));
    assert!(q.quantize(&[1.0], &mut [0u8]).is_ok());
    let q = QuantParams::new(1.0, -1);
    assert!(matches!(
        q.dequantize(&[1u8], &mut [0.0]),
        Err(Error::ZeroPoint {
            value: -1,
            min: 0,
            max: 255,
            ..
        })
    ));
    let q = QuantParams::new(1.0, 40000);
    assert!(matches!(
        q.dequantize(&[1i16], &mut [0.0]),
        Err(Error::ZeroPoint { value: 40000, .. })
    ));

    // An unavailable backend is an error, not a panic.
    for backend in [Backend::Scalar, Backend::Neon] {
        let r = good.quantize_with(backend, &[1.0], &mut [0i8]);
        if backend.is_available() {
            r.unwrap();
        } else {
            assert_eq!(r, Err(Error::BackendUnavailable { backend: "neon" }));
        }
    }
}
