//! Rows of uniform full-range values (every value of the type equally
//! likely) through the fast NEON paths of the table-driven kernels: every
//! such row spreads across the whole type, so it touches every table chunk,
//! and (log-softmax) its cut-off falls inside it, which sends the 64-wide
//! four-row path through its cut-off variant. NEON must give the scalar
//! backend's bytes for:
//!
//! * [`Method::FixedPoint`] softmax, int8 and uint8: rows of 384 (the
//!   general kernel), 64 (`rows64`) and 16 (the short-row kernels);
//! * [`Method::FixedPoint`] log-softmax, int8 and uint8: rows of 384 and 64,
//!   1..=9 rows of 64 (every remainder of the four-row groups);
//! * [`Method::Lut`] log-softmax, int8 and uint8, and [`Method::Lut`]
//!   softmax, int16: rows of 384 and 64;
//! * log-softmax, both methods, int8 and uint8, rows of lengths that are
//!   no multiple of 64 (or below 64) whose values span a random part of the
//!   type: the cut-off and the saturation point fall anywhere in the reach,
//!   so the general kernel's clamped lookups (the table built up to where
//!   the outputs reach the minimum) meet every chunk count and tail;
//!
//! on input scales from one where nothing is cut to one where most is.
//!
//! NEON exists only on aarch64; elsewhere this file has no tests.
#![cfg(target_arch = "aarch64")]

mod common;
use common::Rng;
use qneon::{Backend, LogSoftmax, Method, QuantElem, QuantParams, Softmax};

/// `n` values with every value of `T` equally likely.
fn full_range<T: QuantElem>(rng: &mut Rng, n: usize) -> Vec<T> {
    let span = (T::MAX - T::MIN + 1) as u64;
    (0..n)
        .map(|_| T::from_i32(T::MIN + rng.below(span) as i32))
        .collect()
}

/// One op on one backend, input to output.
type Run<'a, T> = &'a dyn Fn(Backend, &[T], &mut [T]) -> qneon::Result<()>;

/// Both backends on `input` in rows of `row_len`; the first difference.
fn compare<T: QuantElem + std::fmt::Debug>(
    run: Run<'_, T>,
    input: &[T],
    row_len: usize,
    what: &str,
) -> Result<(), String> {
    // Different starting bytes, so that an unwritten output shows.
    let mut scalar = vec![T::from_i32(T::MIN + 7); input.len()];
    let mut neon = vec![T::from_i32(T::MAX - 3); input.len()];
    run(Backend::Scalar, input, &mut scalar).map_err(|e| format!("{what}: scalar: {e}"))?;
    run(Backend::Neon, input, &mut neon).map_err(|e| format!("{what}: neon: {e}"))?;
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

/// Input scales of the 8-bit types: little cut (0.01), the bench's 0.1,
/// and larger ones where most of a full-range row is cut.
const SCALES: [f32; 5] = [0.01, 0.05, 0.1, 0.3, 2.0];

fn zero_point<T: QuantElem>() -> i32 {
    if T::MIN == 0 {
        128
    } else {
        0
    }
}

fn softmax_fixed<T: QuantElem + std::fmt::Debug>(seed: u64) {
    assert!(Backend::Neon.is_available());
    let mut rng = Rng(seed);
    let mut failures = Vec::new();
    let q_out = QuantParams::new(1.0 / 256.0, T::MIN);
    for scale in SCALES {
        let q_in = QuantParams::new(scale, zero_point::<T>());
        let op = Softmax::<T>::new(q_in, 1.0, q_out, Method::FixedPoint).unwrap();
        for (row_len, rows) in [(384, 12), (64, 37), (16, 130)] {
            let input = full_range::<T>(&mut rng, row_len * rows);
            let run = |b, x: &[T], y: &mut [T]| op.run_with(b, x, y, row_len);
            let what = format!("{} softmax scale {scale} rows of {row_len}", T::NAME);
            if let Err(e) = compare(&run, &input, row_len, &what) {
                failures.push(e);
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn softmax_int8_fixed_point_neon_equals_scalar_full_range() {
    softmax_fixed::<i8>(0xf011);
}

#[test]
fn softmax_uint8_fixed_point_neon_equals_scalar_full_range() {
    softmax_fixed::<u8>(0xf012);
}

fn log_softmax<T: QuantElem + std::fmt::Debug>(method: Method, seed: u64) {
    assert!(Backend::Neon.is_available());
    let mut rng = Rng(seed);
    let mut failures = Vec::new();
    let q_out = QuantParams::new(16.0 / 256.0, T::MAX);
    let mut shapes = vec![(384, 8), (64, 40)];
    shapes.extend((1..=9).map(|rows| (64, rows)));
    for scale in SCALES {
        let q_in = QuantParams::new(scale, zero_point::<T>());
        let op = LogSoftmax::<T>::new(q_in, q_out, method).unwrap();
        for &(row_len, rows) in &shapes {
            let input = full_range::<T>(&mut rng, row_len * rows);
            let run = |b, x: &[T], y: &mut [T]| op.run_with(b, x, y, row_len);
            let what = format!(
                "{} log-softmax {method:?} scale {scale}, {rows} rows of {row_len}",
                T::NAME
            );
            if let Err(e) = compare(&run, &input, row_len, &what) {
                failures.push(e);
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn log_softmax_int8_fixed_point_neon_equals_scalar_full_range() {
    log_softmax::<i8>(Method::FixedPoint, 0x1f01);
}

#[test]
fn log_softmax_uint8_fixed_point_neon_equals_scalar_full_range() {
    log_softmax::<u8>(Method::FixedPoint, 0x1f02);
}

#[test]
fn log_softmax_int8_lut_neon_equals_scalar_full_range() {
    log_softmax::<i8>(Method::Lut, 0x1f03);
}

#[test]
fn log_softmax_uint8_lut_neon_equals_scalar_full_range() {
    log_softmax::<u8>(Method::Lut, 0x1f04);
}

/// Rows whose values span `lo..=lo + width` for a random `lo` and width.
fn spans<T: QuantElem>(rng: &mut Rng, row_len: usize, rows: usize) -> Vec<T> {
    let span = (T::MAX - T::MIN + 1) as u64;
    let mut out = Vec::with_capacity(row_len * rows);
    for _ in 0..rows {
        let width = 1 + rng.below(span - 1);
        let lo = T::MIN + rng.below(span - width) as i32;
        out.extend((0..row_len).map(|_| T::from_i32(lo + rng.below(width + 1) as i32)));
    }
    out
}

fn log_softmax_spans<T: QuantElem + std::fmt::Debug>(seed: u64) {
    assert!(Backend::Neon.is_available());
    let mut rng = Rng(seed);
    let mut failures = Vec::new();
    let q_out = QuantParams::new(16.0 / 256.0, T::MAX);
    for method in [Method::FixedPoint, Method::Lut] {
        for scale in SCALES {
            let q_in = QuantParams::new(scale, zero_point::<T>());
            let op = LogSoftmax::<T>::new(q_in, q_out, method).unwrap();
            for (row_len, rows) in [(100, 24), (200, 12), (37, 30), (1000, 4)] {
                let input = spans::<T>(&mut rng, row_len, rows);
                let run = |b, x: &[T], y: &mut [T]| op.run_with(b, x, y, row_len);
                let what = format!(
                    "{} log-softmax {method:?} scale {scale}, {rows} part-range rows of {row_len}",
                    T::NAME
                );
                if let Err(e) = compare(&run, &input, row_len, &what) {
                    failures.push(e);
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn log_softmax_int8_neon_equals_scalar_part_range() {
    log_softmax_spans::<i8>(0x1f05);
}

#[test]
fn log_softmax_uint8_neon_equals_scalar_part_range() {
    log_softmax_spans::<u8>(0x1f06);
}

#[test]
fn softmax_int16_lut_neon_equals_scalar_full_range() {
    assert!(Backend::Neon.is_available());
    let mut rng = Rng(0x1f16);
    let mut failures = Vec::new();
    let q_out = QuantParams::new(1.0 / 32768.0, 0);
    for scale in [1.0 / 4096.0, 1.0 / 2048.0, 1.0 / 256.0] {
        let q_in = QuantParams::new(scale, 0);
        let op = Softmax::<i16>::new(q_in, 1.0, q_out, Method::Lut).unwrap();
        for (row_len, rows) in [(384, 8), (64, 20), (16, 40)] {
            let input = full_range::<i16>(&mut rng, row_len * rows);
            let run = |b, x: &[i16], y: &mut [i16]| op.run_with(b, x, y, row_len);
            let what = format!("int16 softmax Lut scale {scale} rows of {row_len}");
            if let Err(e) = compare(&run, &input, row_len, &what) {
                failures.push(e);
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
