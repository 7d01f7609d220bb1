//! `QuantParams::{quantize, dequantize}` for int8, uint8 and int16 on any
//! `f32` values (NaN, infinities, subnormals), any quantization and any
//! lengths, every backend.
//!
//! Checked against the module's formula, written here in `f64`:
//! * `quantize`: `saturate_T(round_half_away(f32(x / scale)) + zero_point)`,
//!   NaN giving `zero_point`;
//! * `dequantize`: `(q - zero_point) * scale` rounded once to `f32`;
//! * a bad scale, zero point or length is an error, on every backend;
//! * every backend gives the scalar backend's bytes and bits, and
//!   dequantizing then quantizing returns every code when the scale is
//!   normal and the product stays finite.

#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use qneon::QuantElem;
use qneon_fuzz::*;

#[derive(Arbitrary, Debug)]
struct Case {
    elem: ElemType,
    quant: Quant,
    /// Real values, as bits, as `v / 64` steps, or from a scale multiple.
    values: Vec<(u8, u32)>,
    codes: Vec<u8>,
    out_delta: Option<i8>,
}

fuzz_target!(|case: Case| match case.elem {
    ElemType::I8 => check::<i8>(&case),
    ElemType::U8 => check::<u8>(&case),
    ElemType::I16 => check::<i16>(&case),
});

fn same_bits(a: &f32, b: &f32) -> bool {
    a.to_bits() == b.to_bits()
}

fn check<T: QuantElem + std::fmt::Debug>(case: &Case) {
    let q = case.quant.get::<T>();
    let params_ok =
        q.scale.is_finite() && q.scale > 0.0 && (T::MIN..=T::MAX).contains(&q.zero_point);
    let delta = case.out_delta.unwrap_or(0) as isize;

    // Quantize.
    let x: Vec<f32> = case
        .values
        .iter()
        .take(100)
        .map(|&(kind, bits)| match kind % 4 {
            0 => f32::from_bits(bits),
            1 => (bits as i32 as f32) / 64.0,
            // Near a rounding boundary of this scale: (k + 1/2) * scale.
            2 => ((bits as i16) as f32 + 0.5) * q.scale,
            _ => (bits as i16) as f32 * q.scale,
        })
        .collect();
    let out_len = (x.len() as isize + delta).max(0) as usize;
    let (result, codes) = on_every_backend(
        out_len,
        T::from_i32(T::MAX),
        |a, b| a == b,
        |b, out| match b {
            None => q.quantize(&x, out),
            Some(b) => q.quantize_with(b, &x, out),
        },
    );
    assert_eq!(
        result.is_ok(),
        params_ok && out_len == x.len(),
        "quantize {q:?}: {result:?}"
    );
    if result.is_ok() {
        for (&v, &c) in x.iter().zip(&codes) {
            let want = if v.is_nan() {
                q.zero_point
            } else {
                // One f32 division, then round half away from zero and
                // saturate to i32, add the zero point with i32 saturation.
                let steps = (v / q.scale).round();
                let steps = if steps >= 2147483648.0 {
                    i32::MAX
                } else if steps < -2147483648.0 {
                    i32::MIN
                } else {
                    steps as i32
                };
                steps.saturating_add(q.zero_point).clamp(T::MIN, T::MAX)
            };
            assert_eq!(c.to_i32(), want, "quantize({v:e}) with {q:?}");
        }
    }

    // Dequantize.
    let codes_in: Vec<T> = elements::<T>(&case.codes);
    let out_len = (codes_in.len() as isize + delta).max(0) as usize;
    let (result, y) = on_every_backend(
        out_len,
        f32::from_bits(0x7fc0_dead),
        same_bits,
        |b, out| match b {
            None => q.dequantize(&codes_in, out),
            Some(b) => q.dequantize_with(b, &codes_in, out),
        },
    );
    assert_eq!(
        result.is_ok(),
        params_ok && out_len == codes_in.len(),
        "dequantize {q:?}: {result:?}"
    );
    if result.is_err() {
        return;
    }
    for (&c, &v) in codes_in.iter().zip(&y) {
        let want = ((c.to_i32() - q.zero_point) as f64 * q.scale as f64) as f32;
        assert!(
            same_bits(&v, &want),
            "dequantize({c:?}) with {q:?}: {v:e}, want {want:e}"
        );
    }
    // The round trip returns each code while `(q - zp) * scale` is exact
    // enough to divide back: a normal scale and a finite, normal product.
    if q.scale >= f32::MIN_POSITIVE {
        let mut back = vec![T::from_i32(0); y.len()];
        q.quantize(&y, &mut back).unwrap();
        for ((&c, &v), &b) in codes_in.iter().zip(&y).zip(&back) {
            if v.is_finite() && (v == 0.0 || v.abs() >= f32::MIN_POSITIVE) {
                assert_eq!(
                    b.to_i32(),
                    c.to_i32(),
                    "round trip of {c:?} through {v:e} with {q:?}"
                );
            }
        }
    }
}
