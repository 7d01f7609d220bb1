//! The LSTM's two layer-norm arithmetics (TFLite's portable code and
//! LiteRT's aarch64 NEON code): different functions, and NEON equal to the
//! scalar code in both.

use super::*;

/// The two layer-norm arithmetics are different functions: on random gate
/// rows (wide and narrow values, 20 and 36 cells: whole blocks of 16 and a
/// tail) they disagree on some values of the blocks, by a step at a time,
/// and never past the last whole block (where both run the portable code).
/// One value pinned by hand: a tie of the division by 1024 on the negative
/// side, which the portable code rounds away from zero and the NEON code up.
#[test]
fn lstm_i8_layer_norm_portable_and_aarch64_differ() {
    let mut rng = Rng(0x1a7e);
    let mut differing = 0;
    for &n_cell in &[20usize, 36] {
        let norm = params::LayerNorm {
            weights: rng.i16s(n_cell, 32767),
            bias: rng.i32s(n_cell, 1 << 20),
            multiplier: Rounding::Double
                .quantize_multiplier(LN_SCALE as f64)
                .unwrap(),
            variance_guard: ((10000.0 * LN_SCALE) as i32).max(1),
        };
        for range in [300, 6000, 32767] {
            let gate = rng.i16s(8 * n_cell, range);
            let (mut portable, mut neon) = (gate.clone(), gate.clone());
            norm.apply(
                &mut portable,
                n_cell,
                Rounding::Double,
                LstmLayerNorm::Portable,
            );
            norm.apply(
                &mut neon,
                n_cell,
                Rounding::Double,
                LstmLayerNorm::Aarch64Neon,
            );
            for (k, (p, a)) in portable.iter().zip(&neon).enumerate() {
                if p != a {
                    // Squares of values within 23170 sum to under 2^31 in
                    // fours, so both compute the same statistics and the
                    // tails agree; full-range rows may wrap the NEON sums.
                    assert!(
                        range == 32767 || k % n_cell < n_cell / 16 * 16,
                        "tail value {k} differs"
                    );
                    differing += 1;
                }
            }
        }
    }
    assert!(differing > 0);

    // r * w + b = -1536 (1.5 steps of 1024 below zero): -2 away from zero,
    // -1 up. A unit multiplier (0.5 * 2^1) leaves r and the rounded value
    // as they are.
    let unit = QuantizedMultiplier {
        multiplier: 1 << 30,
        shift: 1,
    };
    let (v, w, b, mean) = (3, 1, -1536 - 3 * 1024, 0);
    assert_eq!(
        params::normalize_portable(v, w, b, mean, unit, unit, Rounding::Double),
        -2
    );
    assert_eq!(params::normalize_neon(v, w, b, mean, unit, unit), -1);
}

/// The layer normalization's NEON lanes equal the scalar code in both
/// arithmetics and roundings, on rows of 1 to 40 cells (blocks of 16, lanes
/// of 4 and scalar tails) with narrow, wide and full-range values, full-range
/// coefficients and biases, and coefficient scales whose `+ 12` shift is
/// negative or positive.
#[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
#[test]
fn lstm_i8_layer_norm_neon_equals_scalar() {
    let mut rng = Rng(0x9e37);
    for n_cell in 1..=40 {
        for scale in [LN_SCALE, 3.1e-5, 0.02] {
            let norm = params::LayerNorm {
                weights: rng.i16s(n_cell, 32767),
                bias: rng.i32s(n_cell, 1 << 30),
                multiplier: Rounding::Double.quantize_multiplier(scale as f64).unwrap(),
                variance_guard: ((10000.0 * scale) as i32).max(1),
            };
            for range in [40, 6000, 32767] {
                let gate = rng.i16s(3 * n_cell, range);
                for rounding in [Rounding::Single, Rounding::Double] {
                    for arithmetic in [LstmLayerNorm::Portable, LstmLayerNorm::Aarch64Neon] {
                        let (mut scalar, mut lanes) = (gate.clone(), gate.clone());
                        norm.apply(&mut scalar, n_cell, rounding, arithmetic);
                        neon::layer_norm(&norm, &mut lanes, n_cell, rounding, arithmetic);
                        assert_eq!(
                            scalar, lanes,
                            "{n_cell} cells, scale {scale}, range {range}, {rounding:?}, {arithmetic:?}"
                        );
                    }
                }
            }
        }
    }
}
