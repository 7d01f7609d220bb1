//! The accuracy bound of Q31 softmax against exact `f64` softmax: derived
//! below, checked on adversarial and random rows at every `integer_bits`.
//!
//! # Derivation
//!
//! `exp_on_negative_values` (gemmlowp's arithmetic, bit-exact by contract)
//! reduces `a = x - max` to `r = (a mod 1/4) - 1/4` in `[-1/4, 0)` and
//! evaluates `exp(r) = exp(-1/8) exp(u)`, `u = r + 1/8` in `[-1/8, 1/8)`, by
//! the degree-4 Taylor polynomial `P(u)`; the barrel shifter then multiplies
//! by `exp(-2^k)` for the bits of `a` at and above 1/4. The polynomial's
//! relative error `P(u) exp(-u) - 1` decreases with `u` (its derivative is
//! `-u^4/24 exp(-u)`), so it lies between
//!
//! * `DELTA_HI = P(-1/8) exp(1/8) - 1 = +2.82e-7` (`a` a multiple of 1/4:
//!   `r = -1/4`) and
//! * `DELTA_LO = P(1/8) exp(-1/8) - 1 = -2.29e-7` (`a` one step below a
//!   multiple of 1/4: `r` just below 0).
//!
//! Every other step (the Q0.31 constants, each rounding multiply) adds
//! absolute errors of about half an LSB. Rows whose differences fall below
//! the format's range (`x - max < -2^I`, only for `integer_bits <= 4` with a
//! nonzero result) take `exp(-2^I) exp(rest)`: two polynomial factors, so
//! up to `(1 + DELTA_HI)^2 - 1` above; the maximum itself is exact (`exp(0)`
//! is `i32::MAX`).
//!
//! With `e_j` the exact exps, `e'_j = e_j (1 + d_j) + alpha_j` the computed
//! ones and `p_j` the exact probabilities, the output is `2^31 e'_i / sum e'`
//! up to the reciprocal's error (at most 8 LSB, measured by the row sum test
//! in `tests/invariants.rs`) and one LSB of final rounding. To first order
//! its error is `2^31 p_i (d_i - sum_j p_j d_j)`. The maximum's `d` is 0 and
//! its probability `q` is the largest. With `d` in `[-l, h]` elsewhere:
//!
//! * for the maximum, `q (1 - q) max(h, l) <= max(h, l) / 4`;
//! * for another element, `d_i - mean <= (1 - p) h + r l` where `r = 1 - q
//!   - p <= 1 - 2p` is the weight of the rest, so the error is at most
//!   `(h + l) p - (h + 2l) p^2`, largest at `p = (h + l) / (2 (h + 2l))`:
//!   `g(h, l) = (h + l)^2 / (4 (h + 2l))` (and `g(l, h)` the other way
//!   round). `g(a, b) >= a / 4`, so `max(g(h, l), g(l, h))` covers all.
//!
//! That is 189.6 LSB for rows within the format's range (`h = DELTA_HI`,
//! `l = -DELTA_LO`) and 330.7 LSB with the wide split (`h = (1 +
//! DELTA_HI)^2 - 1`; it only matters at `integer_bits` 0 and 1, where
//! `exp(-2^I)` is not small, and is kept for 2..=4 where long rows of split
//! terms could still weigh). The absolute errors `alpha_j` of the other
//! `n - 1` terms move the sum by up to about half an LSB each (measured by
//! the `[0, d, d, ...]` sweeps in `tests/invariants.rs`). Bound: `2^31
//! max(g(h, l), g(l, h)) + 16 + (n - 1)/2`, 16 LSB covering the reciprocal,
//! the final rounding and the element's own `alpha` (one rounding per
//! multiply, at most 8 multiplies): 205.6 + (n - 1)/2 LSB, or
//! 346.7 + (n - 1)/2 for `integer_bits <= 4`. Measured worst (below):
//! 178.6 and 308.2 LSB.
//!
//! The earlier bound `256 + (n - 1)/2` came from rows `[0, d, d, ...]` at
//! `integer_bits` 5, where no difference is split: at `integer_bits` 0 and
//! 1 a split term carries two polynomial errors, and the fuzzer found 262
//! LSB on a 6-element row at `integer_bits` 0 (kept below as
//! `fuzz_row_integer_bits_0`).

use qneon::fixedpoint::{exp_on_negative_values, FixedPoint};
use qneon::q31;

/// The degree-4 Taylor polynomial of `exp` at 0, in `f64`.
fn taylor4(u: f64) -> f64 {
    1.0 + u + u * u / 2.0 + u * u * u / 6.0 + u * u * u * u / 24.0
}

/// Largest relative error of the exp polynomial (at `u = -1/8`).
fn delta_hi() -> f64 {
    taylor4(-0.125) * 0.125f64.exp() - 1.0
}

/// Smallest relative error of the exp polynomial (at `u = 1/8`).
fn delta_lo() -> f64 {
    taylor4(0.125) * (-0.125f64).exp() - 1.0
}

/// The first-order error bound `2^31 max(g(h, l), g(l, h))` for exps'
/// relative errors in `[-l, h]` (the maximum's exact), in raw LSB.
fn first_order(h: f64, l: f64) -> f64 {
    let g = |a: f64, b: f64| (a + b) * (a + b) / (4.0 * (a + 2.0 * b));
    2f64.powi(31) * g(h, l).max(g(l, h))
}

/// The largest relative error of an exp at `integer_bits`: two polynomial
/// factors where the wide split applies.
fn high(integer_bits: u32) -> f64 {
    if integer_bits <= 4 {
        (1.0 + delta_hi()).powi(2) - 1.0
    } else {
        delta_hi()
    }
}

/// The derived bound on `|y - p 2^31|` (raw Q0.31 LSB) for a row of `n` at
/// `integer_bits` (the same formula as the `q31` fuzz target's).
fn bound(n: usize, integer_bits: u32) -> f64 {
    first_order(high(integer_bits), -delta_lo()) + 16.0 + (n as f64 - 1.0) / 2.0
}

/// `exp_on_negative_values` on a raw input of `integer_bits`, raw Q0.31 out.
fn exp_raw(integer_bits: u32, x: i32) -> i32 {
    macro_rules! arms {
        ($($n:literal)*) => {
            match integer_bits {
                $($n => exp_on_negative_values(FixedPoint::<i32, $n>::from_raw(x)).raw(),)*
                _ => unreachable!(),
            }
        };
    }
    arms!(0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28)
}

/// Largest `|y_i - p_i 2^31|` of the row (every backend gives the same
/// bytes: `tests/neon_equals_scalar.rs`).
fn row_error(row: &[i32], integer_bits: u32) -> f64 {
    let mut y = vec![0i32; row.len()];
    q31::softmax(row, integer_bits, &mut y, row.len()).unwrap();
    let max = *row.iter().max().unwrap() as i64;
    let unit = 2f64.powi(31 - integer_bits as i32);
    let e: Vec<f64> = row
        .iter()
        .map(|&x| ((x as i64 - max) as f64 / unit).exp())
        .collect();
    let sum: f64 = e.iter().sum();
    e.iter()
        .zip(&y)
        .map(|(&e, &y)| (y as f64 - e / sum * 2f64.powi(31)).abs())
        .fold(0.0, f64::max)
}

/// The polynomial's relative error stays within the derived constants: at
/// multiples of 1/4 and one step below them, and on a dense scan, for
/// every `integer_bits`, counting the roundings' absolute error (4 LSB).
#[test]
fn exp_relative_error_within_the_polynomial_bounds() {
    let (hi, lo) = (delta_hi(), delta_lo());
    assert!((2.8e-7..2.9e-7).contains(&hi) && (-2.35e-7..-2.25e-7).contains(&lo));
    for bits in 0..=q31::MAX_INTEGER_BITS {
        let quarter = 1i64 << (29 - bits);
        let (mut seen_hi, mut seen_lo) = (f64::MIN, f64::MAX);
        let mut check = |a: i64| {
            if a < i32::MIN as i64 || a > 0 {
                return;
            }
            let exact = (a as f64 / 2f64.powi(31 - bits as i32)).exp() * 2f64.powi(31);
            if exact < 2f64.powi(24) {
                return;
            }
            let got = exp_raw(bits, a as i32) as f64;
            let slack = 4.0 / exact;
            let d = got / exact - 1.0;
            assert!(
                d <= hi + slack && d >= lo - slack,
                "integer_bits {bits}: exp({a}) relative error {d:e} outside [{lo:e}, {hi:e}]"
            );
            seen_hi = seen_hi.max(d);
            seen_lo = seen_lo.min(d);
        };
        for j in 1..=20i64 {
            check(-j * quarter);
            check(-j * quarter - 1);
            check(-j * quarter + quarter / 2);
        }
        let step = (1i64 << 31) / 200_000;
        let mut a = 0i64;
        while a >= i32::MIN as i64 {
            check(a);
            a -= step;
        }
        // Both ends are reached (within the roundings) where the input
        // step is fine enough to come near u = 1/8: the spread is real.
        assert!(
            bits > 19 || (seen_hi > 0.9 * hi && seen_lo < 0.9 * lo),
            "integer_bits {bits}: seen [{seen_lo:e}, {seen_hi:e}]"
        );
    }
}

/// The row the fuzzer found (`fuzz/regressions/q31`): 262 LSB, above the
/// former `256 + (n - 1)/2` and within the derived bound.
#[test]
fn fuzz_row_integer_bits_0() {
    let row = [
        1627215634,
        -1044266655,
        -1044266559,
        -1044266559,
        -1044266559,
        -1044266559,
    ];
    let err = row_error(&row, 0);
    assert!(err > 256.0 + 2.5, "{err}");
    assert!(
        err <= bound(row.len(), 0),
        "{err} > {}",
        bound(row.len(), 0)
    );
}

/// Adversarial rows: the maximum plus `k1` copies of one difference and
/// `k2` of another, the differences at both ends of the polynomial's error
/// (multiples of 1/4 and one step below, within the range and split by the
/// wide path), at every `integer_bits`. Reports the worst per format and
/// checks that the worst in-range and wide rows come near their parts of
/// the bound (the derivation is not loose by much).
#[test]
fn adversarial_rows_within_the_bound() {
    let max = i32::MAX;
    let mut worst_in_range: f64 = 0.0;
    let mut worst_wide: f64 = 0.0;
    for bits in 0..=q31::MAX_INTEGER_BITS {
        let quarter = 1i64 << (29 - bits);
        let mut offsets: Vec<i64> = vec![-1];
        for j in 1..=12i64 {
            for base in [0, -(1i64 << 31)] {
                offsets.push(base - j * quarter);
                offsets.push(base - j * quarter - 1);
            }
        }
        // x = max + offset must be an i32.
        offsets.retain(|&d| max as i64 + d >= i32::MIN as i64);
        let mut worst: f64 = 0.0;
        let mut row = Vec::with_capacity(16);
        for (i1, &d1) in offsets.iter().enumerate() {
            for &d2 in &offsets[i1..] {
                for k1 in [1, 2, 3, 5, 8] {
                    for k2 in [0, 1, 2, 3, 5] {
                        row.clear();
                        row.push(max);
                        row.extend(std::iter::repeat_n((max as i64 + d1) as i32, k1));
                        row.extend(std::iter::repeat_n((max as i64 + d2) as i32, k2));
                        let err = row_error(&row, bits);
                        let b = bound(row.len(), bits);
                        assert!(
                            err <= b,
                            "integer_bits {bits}: row {row:?} off by {err} > {b}"
                        );
                        worst = worst.max(err);
                        let wide = d1 < -(1i64 << 31) || (k2 > 0 && d2 < -(1i64 << 31));
                        if wide && bits <= 4 {
                            worst_wide = worst_wide.max(err);
                        } else {
                            worst_in_range = worst_in_range.max(err);
                        }
                    }
                }
            }
        }
        println!(
            "integer_bits {bits}: worst {worst:.1} LSB (bound at n 2: {:.1})",
            bound(2, bits)
        );
    }
    println!("worst in range {worst_in_range:.1}, wide {worst_wide:.1}");
    // The first-order terms are what set the bound: rows reach most of
    // them, and the wide split's goes past the former 256 + (n - 1)/2.
    let in_range_part = first_order(delta_hi(), -delta_lo());
    let wide_part = first_order(high(0), -delta_lo());
    assert!(worst_in_range > 0.9 * in_range_part, "{worst_in_range}");
    assert!(worst_wide > 0.9 * wide_part, "{worst_wide}");
    assert!(worst_wide > 256.0 + 1.0, "{worst_wide}");
}

/// Random rows of 1 to 64 elements at every `integer_bits`, over spreads
/// from a few LSB to the whole `i32` range.
#[test]
fn random_rows_within_the_bound() {
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for bits in 0..=q31::MAX_INTEGER_BITS {
        let mut worst: f64 = 0.0;
        for _ in 0..400 {
            let n = 1 + (next() % 64) as usize;
            let spread = 1u64 << (next() % 33);
            let base = next() as i64 % (1i64 << 31);
            let row: Vec<i32> = (0..n)
                .map(|_| {
                    (base - (next() % spread) as i64).clamp(i32::MIN as i64, i32::MAX as i64) as i32
                })
                .collect();
            let err = row_error(&row, bits);
            let b = bound(n, bits);
            assert!(
                err <= b,
                "integer_bits {bits}: row {row:?} off by {err} > {b}"
            );
            worst = worst.max(err);
        }
        println!("integer_bits {bits}: random worst {worst:.1} LSB");
    }
}
