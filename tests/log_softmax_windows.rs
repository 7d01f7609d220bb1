//! The NEON log-softmax kernels read and write rows shorter than 64 bytes
//! through 64-byte windows of the buffers where the window fits (its bytes
//! past the row are later rows' outputs, rewritten in order), and through
//! padded copies where it does not: both give the scalar reference's bytes.
//!
//! For [`Method::FixedPoint`] and `Method::Lut`, int8 and uint8, input
//! scales where the outputs spread and where they saturate: every row length
//! `1..=70`, `1..=13` rows per call (so that the last rows of a call take the
//! copy path and the first ones the window), buffers starting at offsets
//! `0..=3`, rows of one value, narrow and full spreads. Also checked: every
//! output byte is written (a second run over random output bytes gives the
//! same), and the input is left as it was.
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

/// The ops to compare: both table-driven methods where they can be built.
fn ops<T: QuantElem>(scale: f32, zero_point: i32) -> Vec<(Method, LogSoftmax<T>)> {
    [Method::FixedPoint, Method::Lut]
        .into_iter()
        .filter_map(|m| {
            LogSoftmax::<T>::new(QuantParams::new(scale, zero_point), out_quant::<T>(), m)
                .ok()
                .map(|op| (m, op))
        })
        .collect()
}

/// A row around a random centre, values within `spread` of it.
fn random_row<T: QuantElem>(rng: &mut Rng, n: usize, spread: i32) -> Vec<T> {
    let centre = rng.below(256) as i32 + T::MIN;
    (0..n)
        .map(|_| {
            let off = rng.below(2 * spread as u64 + 1) as i32 - spread;
            T::from_i32((centre + off).clamp(T::MIN, T::MAX))
        })
        .collect()
}

fn windows<T: QuantElem + std::fmt::Debug>(seed: u64) {
    assert!(Backend::Neon.is_available());
    let mut rng = Rng(seed);
    let mut failures = Vec::new();
    let mut cases = 0;
    for &scale in &[1e-5f32, 0.03, 0.1, 0.7, 8.0] {
        for zp in [T::MIN, T::MAX] {
            let ops = ops::<T>(scale, zp);
            assert!(!ops.is_empty());
            for (method, op) in ops {
                for row_len in 1..=70usize {
                    for rows in 1..=13usize {
                        let offset = rng.below(4) as usize;
                        let mut buf = vec![T::from_i32(T::MIN); offset + rows * row_len];
                        for r in 0..rows {
                            let spread = [0, 2, 30, 255][rng.below(4) as usize];
                            let row = random_row::<T>(&mut rng, row_len, spread);
                            let s = offset + r * row_len;
                            buf[s..s + row_len].copy_from_slice(&row);
                        }
                        let input = &buf[offset..];
                        let kept = input.to_vec();
                        // Both start from the same fill: a byte NEON leaves
                        // unwritten differs wherever scalar wrote another
                        // value (the dirty run below catches the rest).
                        let fill = T::from_i32(T::MIN + 1);
                        let mut scalar = vec![fill; input.len()];
                        let mut neon = vec![fill; input.len()];
                        op.run_with(Backend::Scalar, input, &mut scalar, row_len)
                            .unwrap();
                        op.run_with(Backend::Neon, input, &mut neon, row_len)
                            .unwrap();
                        assert_eq!(input, &kept[..]);
                        if let Some(i) = scalar.iter().zip(&neon).position(|(a, b)| a != b) {
                            failures.push(format!(
                                "{} {method:?} scale {scale:e} zp {zp} len {row_len} rows \
                                 {rows} offset {offset}: element {i}: input {:?}, scalar \
                                 {:?}, neon {:?}",
                                T::NAME,
                                input[i],
                                scalar[i],
                                neon[i]
                            ));
                        }
                        // A second run over a dirty output: windows rewrite
                        // whatever the buffer held.
                        let mut dirty: Vec<T> = (0..input.len())
                            .map(|_| T::from_i32(rng.below(256) as i32 + T::MIN))
                            .collect();
                        op.run_with(Backend::Neon, input, &mut dirty, row_len)
                            .unwrap();
                        if dirty != scalar {
                            failures.push(format!(
                                "{} {method:?} scale {scale:e} len {row_len} rows {rows}: \
                                 dirty output differs",
                                T::NAME
                            ));
                        }
                        cases += 1;
                    }
                }
            }
        }
    }
    assert!(cases >= 5 * 2 * 70 * 13, "{cases}");
    assert!(
        failures.is_empty(),
        "{} failures, first: {:#?}",
        failures.len(),
        &failures[..failures.len().min(5)]
    );
}

#[test]
fn int8_short_rows_through_windows() {
    windows::<i8>(0x1057_0101);
}

#[test]
fn uint8_short_rows_through_windows() {
    windows::<u8>(0x1057_0102);
}
