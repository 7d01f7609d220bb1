//! What an adopter reaches for first: each op's required output quantization
//! (`output_quantization()`), `Method` and `Backend` names (`FromStr` /
//! `Display`), and errors that give the cause first and what to use
//! instead. Also runs without the `std` feature
//! (`cargo test -p qneon --no-default-features --test adoption_api`), where
//! `Method::Lut` must fail at `new()` because `std` is missing and
//! `CpuFeatures::detect()` reports what the build targets.

use qneon::{
    Backend, CpuFeatures, Error, LogSoftmax, Logistic, Method, QuantElem, QuantParams, Softmax,
    Tanh,
};

const METHODS: [Method; 4] = [
    Method::FixedPoint,
    Method::Lut,
    Method::LutFixedPoint,
    Method::DequantF32,
];

fn input<T: QuantElem>() -> QuantParams {
    QuantParams::new(0.05, if T::MIN < 0 { 0 } else { 128 })
}

/// A nearby but wrong output quantization: the zero point moved by one.
fn off_by_one<T: QuantElem>(q: QuantParams) -> QuantParams {
    let zp = if q.zero_point > T::MIN {
        q.zero_point - 1
    } else {
        q.zero_point + 1
    };
    QuantParams::new(q.scale, zp)
}

/// `new()` accepts the advertised output quantization and rejects a
/// neighbour with an error that carries the same numbers.
fn check_output_quantization<T: QuantElem>() {
    let check = |op: &str, q: QuantParams, err: Error| match err {
        Error::OutputQuantization {
            expected_scale,
            expected_zero_point,
            ..
        } => {
            assert_eq!(expected_scale, q.scale as f64, "{op} {}", T::NAME);
            assert_eq!(expected_zero_point, q.zero_point, "{op} {}", T::NAME);
        }
        e => panic!("{op} {}: {e:?}", T::NAME),
    };
    let q = Softmax::<T>::output_quantization();
    Softmax::<T>::new(input::<T>(), 1.0, q, Method::FixedPoint).unwrap();
    let e =
        Softmax::<T>::new(input::<T>(), 1.0, off_by_one::<T>(q), Method::FixedPoint).unwrap_err();
    check("softmax", q, e);

    let q = Logistic::<T>::output_quantization();
    Logistic::<T>::new(input::<T>(), q, Method::FixedPoint).unwrap();
    let e = Logistic::<T>::new(input::<T>(), off_by_one::<T>(q), Method::FixedPoint).unwrap_err();
    check("logistic", q, e);

    let q = Tanh::<T>::output_quantization();
    Tanh::<T>::new(input::<T>(), q, Method::FixedPoint).unwrap();
    let e = Tanh::<T>::new(input::<T>(), off_by_one::<T>(q), Method::FixedPoint).unwrap_err();
    check("tanh", q, e);

    match LogSoftmax::<T>::output_quantization() {
        Ok(q) => {
            LogSoftmax::<T>::new(input::<T>(), q, Method::FixedPoint).unwrap();
            let e = LogSoftmax::<T>::new(input::<T>(), off_by_one::<T>(q), Method::FixedPoint)
                .unwrap_err();
            check("log_softmax", q, e);
        }
        Err(e) => {
            // The same error `new()` gives, whatever the output.
            let from_new = LogSoftmax::<T>::new(
                input::<T>(),
                QuantParams::new(16.0 / 256.0, 0),
                Method::FixedPoint,
            )
            .unwrap_err();
            assert_eq!(e, from_new);
            assert!(matches!(
                e,
                Error::Unsupported {
                    op: "log_softmax",
                    ..
                }
            ));
        }
    }
}

#[test]
fn output_quantization_is_what_new_requires() {
    check_output_quantization::<i8>();
    check_output_quantization::<u8>();
    check_output_quantization::<i16>();
}

#[test]
fn output_quantization_values_are_tflites() {
    // The README's table "Output quantization and bad input".
    let q = |s: f32, z: i32| QuantParams::new(s, z);
    assert_eq!(Softmax::<i8>::output_quantization(), q(1.0 / 256.0, -128));
    assert_eq!(Softmax::<u8>::output_quantization(), q(1.0 / 256.0, 0));
    assert_eq!(Softmax::<i16>::output_quantization(), q(1.0 / 32768.0, 0));
    assert_eq!(Logistic::<i8>::output_quantization(), q(1.0 / 256.0, -128));
    assert_eq!(Logistic::<u8>::output_quantization(), q(1.0 / 256.0, 0));
    assert_eq!(Logistic::<i16>::output_quantization(), q(1.0 / 32768.0, 0));
    assert_eq!(Tanh::<i8>::output_quantization(), q(1.0 / 128.0, 0));
    assert_eq!(Tanh::<u8>::output_quantization(), q(1.0 / 128.0, 128));
    assert_eq!(Tanh::<i16>::output_quantization(), q(1.0 / 32768.0, 0));
    assert_eq!(
        LogSoftmax::<i8>::output_quantization(),
        Ok(q(16.0 / 256.0, 127))
    );
    assert_eq!(
        LogSoftmax::<u8>::output_quantization(),
        Ok(q(16.0 / 256.0, 255))
    );
    assert!(LogSoftmax::<i16>::output_quantization().is_err());
    // Usable in constants.
    const Q: QuantParams = Softmax::<i8>::output_quantization();
    assert_eq!(Q.zero_point, -128);
}

#[test]
fn method_names_round_trip_and_accept_natural_spellings() {
    for m in METHODS {
        assert_eq!(m.to_string(), m.name());
        assert_eq!(m.name().parse::<Method>(), Ok(m));
        assert_eq!(m.name().to_uppercase().parse::<Method>(), Ok(m));
        // The variant's own name, as written in Rust.
        assert_eq!(format!("{m:?}").parse::<Method>(), Ok(m));
    }
    for (s, m) in [
        ("fixed-point", Method::FixedPoint),
        ("fixed_point", Method::FixedPoint),
        ("Fixed-Point", Method::FixedPoint),
        ("LUT", Method::Lut),
        ("lut_fixed", Method::LutFixedPoint),
        ("lut-fixed-point", Method::LutFixedPoint),
        ("dequant_f32", Method::DequantF32),
        ("F32", Method::DequantF32),
    ] {
        assert_eq!(s.parse::<Method>(), Ok(m), "{s}");
    }
    for bad in [
        "",
        "fix",
        "lutfixed-",
        "f64",
        "fixed point",
        "lut-",
        "dequant",
    ] {
        let err = bad.parse::<Method>().unwrap_err();
        assert!(
            matches!(err, Error::UnknownName { what: "method", .. }),
            "{bad}"
        );
        let msg = err.to_string();
        assert!(msg.starts_with("unknown method name"), "{msg}");
        for m in METHODS {
            assert!(msg.contains(m.name()), "{msg} lacks {}", m.name());
        }
    }
}

#[test]
fn backend_names_round_trip() {
    for b in [Backend::Scalar, Backend::Neon] {
        assert_eq!(b.to_string(), b.name());
        assert_eq!(b.name().parse::<Backend>(), Ok(b));
        assert_eq!(b.name().to_uppercase().parse::<Backend>(), Ok(b));
        assert_eq!(Backend::from_name(b.name()), Some(b));
    }
    for bad in ["", "sse", "neon ", "all"] {
        let err = bad.parse::<Backend>().unwrap_err();
        assert!(
            matches!(
                err,
                Error::UnknownName {
                    what: "backend",
                    ..
                }
            ),
            "{bad}"
        );
        let msg = err.to_string();
        assert!(
            msg.starts_with("unknown backend name")
                && msg.contains("scalar")
                && msg.contains("neon")
        );
    }
}

/// `new()` for `op` on `T` with `method`, valid otherwise.
fn try_new<T: QuantElem>(op: &str, method: Method) -> Result<(), Error> {
    let i = input::<T>();
    match op {
        "softmax" => {
            Softmax::<T>::new(i, 1.0, Softmax::<T>::output_quantization(), method).map(drop)
        }
        "log_softmax" => {
            let o = LogSoftmax::<T>::output_quantization()?;
            LogSoftmax::<T>::new(i, o, method).map(drop)
        }
        "logistic" => Logistic::<T>::new(i, Logistic::<T>::output_quantization(), method).map(drop),
        "tanh" => Tanh::<T>::new(i, Tanh::<T>::output_quantization(), method).map(drop),
        _ => unreachable!(),
    }
}

/// The reason of an `Unsupported` error (the part after `unsupported: `).
fn reason(err: Error) -> &'static str {
    match err {
        Error::Unsupported { reason, .. } => reason,
        e => panic!("expected Unsupported, got {e:?}"),
    }
}

fn check_causes<T: QuantElem>() {
    // LutFixedPoint on softmax and log-softmax: the cause is the row, not
    // any int16 table size.
    for op in ["softmax", "log_softmax"] {
        if op == "log_softmax" && T::NAME == "int16" {
            continue;
        }
        let r = reason(try_new::<T>(op, Method::LutFixedPoint).unwrap_err());
        assert!(
            r.starts_with("Method::LutFixedPoint is a per-element table"),
            "{op}: {r}"
        );
        assert!(!r.contains("int16") && !r.contains("65,536"), "{op}: {r}");
        assert!(r.contains("use Method::FixedPoint"), "{r}");
    }
    // LutFixedPoint on int16 logistic/tanh: the table size is the cause.
    if T::NAME == "int16" {
        for op in ["logistic", "tanh"] {
            let r = reason(try_new::<T>(op, Method::LutFixedPoint).unwrap_err());
            assert!(
                r.starts_with("Method::LutFixedPoint is not provided for int16"),
                "{r}"
            );
        }
    }
    // Lut on 8-bit log-softmax (TFLite's optimized kernel): available with
    // `std`; without it the missing feature comes first.
    if T::NAME != "int16" {
        let r = try_new::<T>("log_softmax", Method::Lut);
        if cfg!(feature = "std") {
            r.unwrap_or_else(|e| panic!("log_softmax {}: {e}", T::NAME));
        } else {
            let r = reason(r.unwrap_err());
            assert!(
                r.starts_with("Method::Lut") && r.contains("needs the `std` feature"),
                "{r}"
            );
        }
    }
    // Lut on softmax, logistic and tanh: available with `std`; without it,
    // the missing feature is the first thing the error says.
    for op in ["softmax", "logistic", "tanh"] {
        let r = try_new::<T>(op, Method::Lut);
        if cfg!(feature = "std") {
            r.unwrap_or_else(|e| panic!("{op} {}: {e}", T::NAME));
        } else {
            let err = r.unwrap_err();
            let r = reason(err);
            assert!(
                r.starts_with("Method::Lut") && r.contains("needs the `std` feature"),
                "{r}"
            );
            let cause = r.find("`std`").unwrap();
            let instead = r.find("use Method::").unwrap();
            assert!(cause < instead, "{r}");
            // The message names the op and the type, then the cause.
            let msg = err.to_string();
            assert!(
                msg.starts_with(&format!("{op} {}: unsupported: Method::Lut", T::NAME)),
                "{msg}"
            );
        }
    }
}

#[test]
fn unsupported_methods_say_the_cause_first() {
    check_causes::<i8>();
    check_causes::<u8>();
    check_causes::<i16>();
}

#[test]
fn cpu_features_without_std_are_the_compiled_ones() {
    let compiled = CpuFeatures::compiled();
    assert_eq!(
        compiled.dotprod,
        cfg!(all(target_arch = "aarch64", target_feature = "dotprod"))
    );
    assert_eq!(
        compiled.i8mm,
        cfg!(all(target_arch = "aarch64", target_feature = "i8mm"))
    );
    let detected = CpuFeatures::detect();
    if !cfg!(feature = "std") || !cfg!(target_arch = "aarch64") {
        assert_eq!(detected, compiled);
    } else {
        // Run-time detection can only add to what the build requires.
        assert!(detected.dotprod || !compiled.dotprod);
        assert!(detected.i8mm || !compiled.i8mm);
    }
}
