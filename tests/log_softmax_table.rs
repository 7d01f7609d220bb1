//! The table-driven NEON log-softmax kernels give the scalar reference's
//! bytes, for [`Method::FixedPoint`] (and `Method::Lut`, where built):
//!
//! * every `d = max - x` of the tables: for every maximum of the type, the
//!   row holding every value from the maximum down to the type's minimum
//!   (each length 1..=256), on a grid of input scales from a zero
//!   multiplier to scales where every difference is cut, and zero points at
//!   both extremes;
//! * rows of every length `0..=70` at offsets 0..=3 into the buffers, one to
//!   three rows per call, random values of several spreads;
//! * rows of 383..=385 and 32,768 elements, and long rows whose sums pass 32
//!   bits (every element at the maximum: 32,768 * 2^19 = 2^34);
//! * int8 and uint8.
//!
//! NEON exists only on aarch64; elsewhere this file has no tests.
#![cfg(target_arch = "aarch64")]

mod common;
use common::Rng;
use qneon::{Backend, LogSoftmax, Method, QuantElem, QuantParams};

/// The output quantization TFLite requires.
fn out_quant<T: QuantElem>() -> QuantParams {
    QuantParams::new(16.0 / 256.0, if T::MIN == -128 { 127 } else { 255 })
}

/// Input scales: a zero multiplier (below 2^-31 of 2^26), a right-shift
/// multiplier, the usual range, and scales where nearly everything is cut.
const SCALES: [f32; 16] = [
    1e-12, 1e-9, 2e-8, 1e-6, 1e-4, 0.001, 0.01, 0.03, 0.0625, 0.1, 0.25, 1.0, 3.0, 16.0, 200.0, 1e6,
];

/// The methods whose NEON kernels are table-driven.
fn methods() -> Vec<Method> {
    let mut m = vec![Method::FixedPoint];
    if cfg!(feature = "std") {
        m.push(Method::Lut);
    }
    m
}

/// Runs `op` on both backends over `input` (rows of `row_len`) and returns a
/// description of the first difference.
fn compare<T: QuantElem + std::fmt::Debug>(
    op: &LogSoftmax<T>,
    input: &[T],
    row_len: usize,
    what: &str,
) -> Result<(), String> {
    let fill = T::from_i32(T::MIN + 7);
    let mut scalar = vec![fill; input.len()];
    let mut neon = vec![fill; input.len()];
    op.run_with(Backend::Scalar, input, &mut scalar, row_len)
        .map_err(|e| format!("{what}: scalar: {e}"))?;
    op.run_with(Backend::Neon, input, &mut neon, row_len)
        .map_err(|e| format!("{what}: neon: {e}"))?;
    match scalar.iter().zip(&neon).position(|(a, b)| a != b) {
        None => Ok(()),
        Some(i) => Err(format!(
            "{what}: element {i} (row {}, column {}): input {:?}, scalar {:?}, neon {:?}",
            i / row_len,
            i % row_len,
            input[i],
            scalar[i],
            neon[i]
        )),
    }
}

fn ops<T: QuantElem>(scale: f32, zero_point: i32) -> Vec<(Method, LogSoftmax<T>)> {
    methods()
        .into_iter()
        .filter_map(|m| {
            LogSoftmax::<T>::new(QuantParams::new(scale, zero_point), out_quant::<T>(), m)
                .ok()
                .map(|op| (m, op))
        })
        .collect()
}

fn every_d<T: QuantElem + std::fmt::Debug>() {
    assert!(Backend::Neon.is_available());
    let mut failures = Vec::new();
    let mut cases = 0;
    for &scale in &SCALES {
        for zp in [T::MIN, (T::MIN + T::MAX) / 2, T::MAX] {
            for (method, op) in ops::<T>(scale, zp) {
                for max in T::MIN..=T::MAX {
                    // Every value from max down to the minimum: d = 0..=max - MIN.
                    let row: Vec<T> = (T::MIN..=max).rev().map(T::from_i32).collect();
                    let what = format!("{} {method:?} scale {scale:e} zp {zp} max {max}", T::NAME);
                    if let Err(e) = compare(&op, &row, row.len(), &what) {
                        failures.push(e);
                    }
                    cases += 1;
                }
            }
        }
    }
    assert!(cases >= 16 * 3 * 256, "{cases}");
    assert!(
        failures.is_empty(),
        "{} failures, first: {:#?}",
        failures.len(),
        &failures[..failures.len().min(5)]
    );
}

#[test]
fn int8_every_difference() {
    every_d::<i8>();
}

#[test]
fn uint8_every_difference() {
    every_d::<u8>();
}

fn random_row<T: QuantElem>(rng: &mut Rng, n: usize, spread: i32) -> Vec<T> {
    let centre = rng.below(256) as i32 + T::MIN;
    (0..n)
        .map(|_| {
            let off = if spread == 0 {
                0
            } else {
                rng.below(2 * spread as u64 + 1) as i32 - spread
            };
            T::from_i32((centre + off).clamp(T::MIN, T::MAX))
        })
        .collect()
}

fn lengths_and_offsets<T: QuantElem + std::fmt::Debug>(seed: u64) {
    assert!(Backend::Neon.is_available());
    let mut rng = Rng(seed);
    let mut failures = Vec::new();
    let mut cases = 0;
    for &scale in &[1e-6f32, 0.01, 0.1, 0.5, 16.0] {
        for zp in [T::MIN, 0.clamp(T::MIN, T::MAX), T::MAX] {
            for (method, op) in ops::<T>(scale, zp) {
                for row_len in 0..=70usize {
                    for offset in 0..=3usize {
                        for rows in 1..=3usize {
                            let spread = [0, 3, 40, 255][rng.below(4) as usize];
                            let mut buf =
                                random_row::<T>(&mut rng, offset + rows * row_len, spread);
                            // Rows of their own: each row's own maximum.
                            for r in 0..rows {
                                let s = offset + r * row_len;
                                let row = random_row::<T>(&mut rng, row_len, spread);
                                buf[s..s + row_len].copy_from_slice(&row);
                            }
                            let input = &buf[offset..];
                            let what = format!(
                                "{} {method:?} scale {scale:e} zp {zp} len {row_len} offset {offset} rows {rows}",
                                T::NAME
                            );
                            let r = if row_len == 0 {
                                // Nothing to run: an error on both backends.
                                let mut y = vec![T::from_i32(0); input.len()];
                                assert!(op.run_with(Backend::Neon, input, &mut y, 0).is_err());
                                Ok(())
                            } else {
                                compare(&op, input, row_len, &what)
                            };
                            if let Err(e) = r {
                                failures.push(e);
                            }
                            cases += 1;
                        }
                    }
                }
            }
        }
    }
    assert!(cases >= 5 * 3 * 71 * 4 * 3, "{cases}");
    assert!(
        failures.is_empty(),
        "{} failures, first: {:#?}",
        failures.len(),
        &failures[..failures.len().min(5)]
    );
}

#[test]
fn int8_lengths_and_offsets() {
    lengths_and_offsets::<i8>(0x1057_0001);
}

#[test]
fn uint8_lengths_and_offsets() {
    lengths_and_offsets::<u8>(0x1057_0002);
}

fn long_rows<T: QuantElem + std::fmt::Debug>(seed: u64) {
    assert!(Backend::Neon.is_available());
    let mut rng = Rng(seed);
    let mut failures = Vec::new();
    for &scale in &[1e-9f32, 1e-4, 0.02, 0.1, 1.0, 16.0] {
        for zp in [T::MIN, T::MAX] {
            for (method, op) in ops::<T>(scale, zp) {
                let mut check = |input: Vec<T>, row_len: usize, what: &str| {
                    let what = format!("{} {method:?} scale {scale:e} zp {zp} {what}", T::NAME);
                    if let Err(e) = compare(&op, &input, row_len, &what) {
                        failures.push(e);
                    }
                };
                for row_len in 383..=385 {
                    for spread in [0, 5, 60, 255] {
                        let input: Vec<T> = (0..3)
                            .flat_map(|_| random_row::<T>(&mut rng, row_len, spread))
                            .collect();
                        check(input, row_len, &format!("len {row_len} spread {spread}"));
                    }
                }
                // Sums past 32 bits: every element at the maximum, of
                // several maxima; and half at the maximum, half spread.
                for max in [T::MIN, 0, T::MAX] {
                    check(
                        vec![T::from_i32(max); 32768],
                        32768,
                        &format!("32768 x {max}"),
                    );
                }
                let mut half = random_row::<T>(&mut rng, 32768, 255);
                let top = half.iter().map(|x| x.to_i32()).max().unwrap();
                for x in half.iter_mut().step_by(2) {
                    *x = T::from_i32(top);
                }
                check(half, 32768, "32768 half at max");
                check(
                    random_row::<T>(&mut rng, 32768, 40),
                    32768,
                    "32768 spread 40",
                );
                // Two long rows (the sums restart) of a length not a multiple of 64.
                check(
                    random_row::<T>(&mut rng, 2 * 20_001, 20),
                    20_001,
                    "2 x 20001",
                );
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} failures, first: {:#?}",
        failures.len(),
        &failures[..failures.len().min(5)]
    );
}

#[test]
fn int8_long_rows() {
    long_rows::<i8>(0x1057_0003);
}

#[test]
fn uint8_long_rows() {
    long_rows::<u8>(0x1057_0004);
}
