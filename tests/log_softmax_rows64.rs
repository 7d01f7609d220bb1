//! Rows of exactly 64 bytes take their own NEON path in
//! [`Method::FixedPoint`] (four rows at once: maxima and minima across the
//! four, the sums' planes reduced together, the four logarithms on NEON
//! lanes, the output tables built straight-line), with the general kernel
//! for the last `rows % 4` rows and for groups where a row falls outside
//! the floor formula. All must give the scalar reference's bytes:
//!
//! * every `d = max - x` for every maximum of the type: rows holding the
//!   maximum and a window of 63 consecutive differences (windows starting
//!   at 0, 63, 126, 189 and 193, so that every `d` up to 255 is seen and
//!   the four rows of a group reach into different table chunks), on input
//!   scales from a zero multiplier to scales where every difference is cut;
//! * random rows, each of its own spread (one value, narrow, across the
//!   saturation point, the whole type), so that a group's rows need
//!   different chunk counts; 1..=13 rows and 4 k + r rows (every remainder
//!   of the four-row groups), buffers at offsets 0..=3;
//! * groups mixing rows that the floor formula covers with rows it does not
//!   (a lone maximum at a large scale: log-sum 0; wide rows at large scales:
//!   the cut-off inside the reach);
//! * int8 and uint8.
//!
//! NEON exists only on aarch64; elsewhere this file has no tests.
#![cfg(target_arch = "aarch64")]

mod common;
use common::Rng;
use qneon::{Backend, LogSoftmax, Method, QuantElem, QuantParams};

const ROW: usize = 64;

/// The output quantization TFLite requires.
fn out_quant<T: QuantElem>() -> QuantParams {
    QuantParams::new(16.0 / 256.0, if T::MIN == -128 { 127 } else { 255 })
}

/// Input scales: a zero multiplier, a right-shift multiplier, the usual
/// range (0.1: outputs saturate at about 150 steps), and scales where
/// nearly everything is cut.
const SCALES: [f32; 16] = [
    1e-12, 1e-9, 2e-8, 1e-6, 1e-4, 0.001, 0.01, 0.03, 0.0625, 0.1, 0.25, 1.0, 3.0, 16.0, 200.0, 1e6,
];

fn op<T: QuantElem>(scale: f32) -> LogSoftmax<T> {
    LogSoftmax::<T>::new(
        QuantParams::new(scale, 0),
        out_quant::<T>(),
        Method::FixedPoint,
    )
    .expect("FixedPoint log-softmax for an 8-bit type")
}

/// Runs `op` on both backends over `input` (rows of 64) placed at `offset`
/// into its buffer, and describes the first difference. The outputs start
/// as different bytes, so that an unwritten byte shows.
fn compare<T: QuantElem + std::fmt::Debug>(
    op: &LogSoftmax<T>,
    input: &[T],
    offset: usize,
    what: &str,
) -> Result<(), String> {
    let mut buf = vec![T::from_i32(0); offset + input.len()];
    buf[offset..].copy_from_slice(input);
    let input = &buf[offset..];
    let mut scalar = vec![T::from_i32(T::MIN + 7); offset + input.len()];
    let mut neon = vec![T::from_i32(T::MAX - 3); offset + input.len()];
    op.run_with(Backend::Scalar, input, &mut scalar[offset..], ROW)
        .map_err(|e| format!("{what}: scalar: {e}"))?;
    op.run_with(Backend::Neon, input, &mut neon[offset..], ROW)
        .map_err(|e| format!("{what}: neon: {e}"))?;
    let (scalar, neon) = (&scalar[offset..], &neon[offset..]);
    match scalar.iter().zip(neon).position(|(a, b)| a != b) {
        None => Ok(()),
        Some(i) => Err(format!(
            "{what}: element {i} (row {}, column {}): input {:?}, scalar {:?}, neon {:?}",
            i / ROW,
            i % ROW,
            input[i],
            scalar[i],
            neon[i]
        )),
    }
}

/// For every maximum: rows of the maximum and the differences
/// `start..start + 63` (clamped to the type), for five starts.
fn every_d<T: QuantElem + std::fmt::Debug>() {
    assert!(Backend::Neon.is_available());
    let mut failures = Vec::new();
    for scale in SCALES {
        let op = op::<T>(scale);
        let mut input = Vec::new();
        for max in T::MIN..=T::MAX {
            for start in [0, 63, 126, 189, 193] {
                input.push(T::from_i32(max));
                for d in start..start + ROW as i32 - 1 {
                    input.push(T::from_i32((max - d).max(T::MIN)));
                }
            }
        }
        // 1280 rows: 320 groups, no remainder; then the same less one row
        // (a remainder of three) at an offset.
        if let Err(e) = compare(&op, &input, 0, &format!("scale {scale:e}")) {
            failures.push(e);
        }
        let less = &input[ROW..];
        if let Err(e) = compare(&op, less, 3, &format!("scale {scale:e}, one row less")) {
            failures.push(e);
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn int8_every_difference_in_rows_of_64() {
    every_d::<i8>();
}

#[test]
fn uint8_every_difference_in_rows_of_64() {
    every_d::<u8>();
}

/// A row around a random centre, values within `spread` of it (clamped),
/// the centre itself somewhere in it.
fn random_row<T: QuantElem>(rng: &mut Rng, spread: i32) -> Vec<T> {
    let centre = rng.below(256) as i32 + T::MIN;
    let mut row: Vec<T> = (0..ROW)
        .map(|_| {
            let off = rng.below(2 * spread as u64 + 1) as i32 - spread;
            T::from_i32((centre + off).clamp(T::MIN, T::MAX))
        })
        .collect();
    row[rng.below(ROW as u64) as usize] = T::from_i32(centre);
    row
}

/// Random rows, each of its own spread, in calls of every row count
/// `1..=13` and `4 k + r` up to 4 * 24 + 3, at offsets 0..=3.
fn random_rows<T: QuantElem + std::fmt::Debug>(seed: u64) {
    assert!(Backend::Neon.is_available());
    let mut rng = Rng(seed);
    let mut failures = Vec::new();
    let mut cases = 0;
    let spreads = [0, 1, 5, 20, 31, 32, 33, 60, 64, 70, 90, 127, 128, 200, 255];
    let counts: Vec<usize> = (1..=13)
        .chain((4..=24).flat_map(|k| (0..4).map(move |r| 4 * k + r)))
        .collect();
    for scale in SCALES {
        let op = op::<T>(scale);
        for &rows in &counts {
            let offset = rng.below(4) as usize;
            let input: Vec<T> = (0..rows)
                .flat_map(|_| {
                    let spread = spreads[rng.below(spreads.len() as u64) as usize];
                    random_row::<T>(&mut rng, spread)
                })
                .collect();
            let what = format!("scale {scale:e} rows {rows} offset {offset}");
            if let Err(e) = compare(&op, &input, offset, &what) {
                failures.push(e);
            }
            cases += 1;
        }
    }
    assert!(cases > 1000, "{cases}");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn int8_random_rows_of_64() {
    random_rows::<i8>(0x0640_0001);
}

#[test]
fn uint8_random_rows_of_64() {
    random_rows::<u8>(0x0640_0002);
}

/// Groups where some rows are outside the floor formula: a lone maximum
/// with every other value far below it (at scale 16 its terms are zero,
/// the log-sum 0), rows of one value, and wide rows whose cut-off lies
/// inside their reach, in every position of a group of four.
fn mixed_groups<T: QuantElem + std::fmt::Debug>(seed: u64) {
    assert!(Backend::Neon.is_available());
    let mut rng = Rng(seed);
    let mut failures = Vec::new();
    for scale in [0.1f32, 1.0, 3.0, 16.0, 200.0] {
        let op = op::<T>(scale);
        for lone_at in 0..4 {
            let mut input = Vec::new();
            for r in 0..8 {
                let row: Vec<T> = if r % 4 == lone_at {
                    let mut row = vec![T::from_i32(T::MIN); ROW];
                    row[rng.below(ROW as u64) as usize] = T::from_i32(T::MAX);
                    row
                } else if r % 4 == (lone_at + 1) % 4 {
                    vec![T::from_i32(rng.below(256) as i32 + T::MIN); ROW]
                } else {
                    random_row::<T>(&mut rng, 127)
                };
                input.extend(row);
            }
            let what = format!("scale {scale} lone maximum in row {lone_at} of each group");
            if let Err(e) = compare(&op, &input, lone_at, &what) {
                failures.push(e);
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn int8_mixed_groups_of_64() {
    mixed_groups::<i8>(0x0640_0003);
}

#[test]
fn uint8_mixed_groups_of_64() {
    mixed_groups::<u8>(0x0640_0004);
}
