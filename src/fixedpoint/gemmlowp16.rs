//! gemmlowp's `FixedPoint<int16_t, I>` arithmetic and its `logistic` / `tanh`,
//! scalar: the 16-bit fixed point TFLite's int16 logistic and tanh run at
//! input scales `2^-12` and `2^-11`. The C++ does `+`, `-` and negation in
//! `int` and stores the result back into `int16_t`, so they wrap;
//! multiplication is the 16-bit saturating rounding doubling high multiply
//! (NEON `sqrdmulh.8h`). The functions are written once over [`Lane16`]
//! (`lane16.rs`): a scalar `i16`, or eight NEON lanes. The algorithm is the one of this module's 32-bit
//! lanes (exp by a Taylor polynomial on `[-1/4, 0)` and a barrel shifter,
//! Newton-Raphson reciprocal), with each 32-bit constant rounded to 16 bits
//! (gemmlowp's `RescaleConstantInitializer`: a rounding divide by `2^16`).

use super::lane16::Lane16;
pub(crate) use super::lane16::{saturating_shl, srdhm};

/// A gemmlowp constant given as a 32-bit raw value, in 16 bits.
const fn c(raw32: i32) -> i16 {
    // Rounding divide by 2^16, ties away from zero (all constants here are
    // far from ties; the sign matters for the negative one).
    let q = raw32 >> 16;
    let remainder = raw32 & 0xffff;
    let threshold = 0x7fff + (raw32 < 0) as i32;
    (q + (remainder > threshold) as i32) as i16
}

/// 1.0 in Q0.15 (saturated), and in Q2.13.
const ONE_Q0: i16 = i16::MAX;
const ONE_Q2: i16 = 1 << 13;

/// `exp(a)` for `a` in `[-1/4, 0)`, Q0.15 in and out.
#[inline(always)]
fn exp_on_interval_between_negative_one_quarter_and_0_excl<L: Lane16>(a: L) -> L {
    // exp(-1/8) and 1/3.
    let constant_term = L::splat(c(1_895_147_668));
    let constant_1_over_3 = L::splat(c(715_827_883));
    // Taylor expansion around -1/8: x = a + 1/8.
    let x = a.add(L::splat(1 << 12));
    let x2 = x.srdhm(x);
    let x3 = x2.srdhm(x);
    let x4 = x2.srdhm(x2);
    let x4_over_4 = x4.rounding_divide_by_pot(2);
    let poly = x4_over_4
        .add(x3)
        .srdhm(constant_1_over_3)
        .add(x2)
        .rounding_divide_by_pot(1);
    constant_term.saturating_add(constant_term.srdhm(x.add(poly)))
}

/// `exp(a)` for `a <= 0` in Q`int_bits`.(15 - `int_bits`) (`int_bits` in
/// `1..=7`), result Q0.15.
#[inline(always)]
fn exp_on_negative_values<L: Lane16>(a: L, int_bits: u32) -> L {
    let frac_bits = 15 - int_bits;
    let one_quarter: i16 = 1 << (frac_bits - 2);
    let a_mod_quarter_minus_one_quarter =
        a.and(L::splat(one_quarter - 1)).sub(L::splat(one_quarter));
    let mut result = exp_on_interval_between_negative_one_quarter_and_0_excl(
        a_mod_quarter_minus_one_quarter.saturating_shl(int_bits),
    );
    let remainder = a_mod_quarter_minus_one_quarter.sub(a);
    // exp(-2^k) for k = -2..=4, as gemmlowp's 32-bit raw constants.
    const BARREL: [(i32, i32); 7] = [
        (-2, 1_672_461_947),
        (-1, 1_302_514_674),
        (0, 790_015_084),
        (1, 290_630_308),
        (2, 39_332_535),
        (3, 720_401),
        (4, 242),
    ];
    for (exponent, multiplier) in BARREL {
        if int_bits as i32 > exponent {
            let bit = (frac_bits as i32 + exponent) as u32;
            let set = remainder.mask_if_any_bit_set(L::splat((1u16 << bit) as i16));
            result = L::select(set, result.srdhm(L::splat(c(multiplier))), result);
        }
    }
    // Beyond 5 integer bits the barrel stops at exp(-16): gemmlowp sends every
    // input below -32 to 0 instead (its constant `-(1 << (36 - bits))`,
    // rounded to 16 bits, is -32 in every format).
    if int_bits > 5 {
        let below = a.mask_if_less_than(L::splat(-(32i32 << frac_bits) as i16));
        result = L::select(below, L::splat(0), result);
    }
    L::select(a.mask_if_zero(), L::splat(ONE_Q0), result)
}

/// Newton-Raphson on `1 / (1 + a)` (Q2.13 iterate), `a` in `(0, 1)` Q0.15.
#[inline(always)]
fn newton_raphson_one_over_one_plus_x<L: Lane16>(a: L) -> L {
    let half_denominator = a.rounding_half_sum(L::splat(ONE_Q0));
    // 48/17 and -32/17 in Q2.13.
    let constant_48_over_17 = L::splat(c(1_515_870_810));
    let constant_neg_32_over_17 = L::splat(c(-1_010_580_540));
    let mut x = constant_48_over_17.add(half_denominator.srdhm(constant_neg_32_over_17));
    for _ in 0..3 {
        let half_denominator_times_x = half_denominator.srdhm(x);
        let one_minus_half_denominator_times_x = L::splat(ONE_Q2).sub(half_denominator_times_x);
        // Q2.13 * Q2.13 = Q4.11, back to Q2.13.
        x = x.add(
            x.srdhm(one_minus_half_denominator_times_x)
                .saturating_shl(2),
        );
    }
    x
}

/// `1 / (1 + a)` for `a` in `(0, 1)`, Q0.15.
#[inline(always)]
fn one_over_one_plus_x_for_x_in_0_1<L: Lane16>(a: L) -> L {
    // x / 2 in Q2.13 is x in Q1.14; rescale to Q0.15.
    newton_raphson_one_over_one_plus_x(a).saturating_shl(1)
}

/// `(1 - a) / (1 + a)` for `a` in `(0, 1)`, Q0.15.
#[inline(always)]
fn one_minus_x_over_one_plus_x_for_x_in_0_1<L: Lane16>(a: L) -> L {
    // 2 / (1 + a) - 1 = (1 - a) / (1 + a), Q2.13 to Q0.15.
    newton_raphson_one_over_one_plus_x(a)
        .sub(L::splat(ONE_Q2))
        .saturating_shl(2)
}

/// gemmlowp's `logistic` for a Q3.12 input, Q0.15 output, on any lanes.
#[inline(always)]
pub(crate) fn logistic_q3_12_lanes<L: Lane16>(a: L) -> L {
    let zero = L::splat(0);
    let positive = a.mask_if_greater_than(zero);
    let abs_input = L::select(positive, a, a.neg());
    let result_if_positive =
        one_over_one_plus_x_for_x_in_0_1(exp_on_negative_values(abs_input.neg(), 3));
    let result_if_negative = L::splat(ONE_Q0).sub(result_if_positive);
    let result = L::select(positive, result_if_positive, result_if_negative);
    L::select(a.mask_if_zero(), L::splat(c(1 << 30)), result)
}

/// gemmlowp's `tanh` for an input with `int_bits` integer bits (`0..=6`),
/// Q0.15 output, on any lanes.
#[inline(always)]
pub(crate) fn tanh_q_lanes<L: Lane16>(a: L, int_bits: u32) -> L {
    debug_assert!(int_bits <= 6);
    let negative = a.mask_if_less_than(L::splat(0));
    let n = L::select(negative, a, a.neg());
    // -tanh(n) for n <= 0: exp(2n), the same raw value read with one more
    // integer bit.
    let t = one_minus_x_over_one_plus_x_for_x_in_0_1(exp_on_negative_values(n, int_bits + 1));
    let t = L::select(negative, t.neg(), t);
    L::select(a.mask_if_zero(), L::splat(0), t)
}

/// gemmlowp's `logistic` for a Q3.12 input, Q0.15 output.
pub(crate) fn logistic_q3_12(a: i16) -> i16 {
    logistic_q3_12_lanes(a)
}

/// gemmlowp's `tanh` for a Q3.12 input, Q0.15 output.
pub(crate) fn tanh_q3_12(a: i16) -> i16 {
    tanh_q_lanes(a, 3)
}

/// gemmlowp's `tanh` for an input with `int_bits` integer bits (`0..=6`,
/// Q`int_bits`.(15 - `int_bits`)), Q0.15 output: TFLite's `ApplyTanh` of
/// its integer LSTM (gates at Q3.12, the cell state at `15 + log2(scale)`
/// integer bits). `tanh_q(a, 3)` is [`tanh_q3_12`].
// Used by the LSTM, which needs `alloc`.
#[cfg_attr(not(feature = "alloc"), allow(dead_code))]
pub(crate) fn tanh_q(a: i16, int_bits: u32) -> i16 {
    tanh_q_lanes(a, int_bits)
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::super::lane16::rounding_divide_by_pot;
    use super::*;

    #[cfg(feature = "std")]
    #[test]
    fn gemmlowp16_constants() {
        use crate::fixedpoint::Lane;
        // gemmlowp's rounding of a 32-bit raw constant to 16 bits, against the
        // real values in Q0.15 / Q2.13.
        let c = |raw: i32| raw.rounding_divide_by_pot(16) as i16;
        let q15 = |c: i16, v: f64| assert!((c as f64 / 32768.0 - v).abs() <= 0.5 / 32768.0);
        q15(c(1_895_147_668), (-0.125f64).exp());
        q15(c(715_827_883), 1.0 / 3.0);
        let q13 = |c: i16, v: f64| assert!((c as f64 / 8192.0 - v).abs() <= 0.5 / 8192.0);
        q13(c(1_515_870_810), 48.0 / 17.0);
        q13(c(-1_010_580_540), -32.0 / 17.0);
    }

    #[cfg(feature = "std")]
    #[test]
    #[cfg_attr(miri, ignore = "sweeps all 65,536 inputs seven times")]
    fn tanh_q_is_tanh_q3_12_at_three_bits_and_near_tanh_at_every_width() {
        let mut worst = [0.0f64; 7];
        for a in i16::MIN..=i16::MAX {
            assert_eq!(tanh_q(a, 3), tanh_q3_12(a), "{a}");
            for bits in 0..=6u32 {
                let x = a as f64 / (1u32 << (15 - bits)) as f64;
                let got = tanh_q(a, bits) as f64 / 32768.0;
                // gemmlowp's 16-bit tanh is within a few Q0.15 steps.
                let err = (got - x.tanh()).abs() * 32768.0;
                worst[bits as usize] = worst[bits as usize].max(err);
            }
        }
        // gemmlowp's 16-bit Newton-Raphson leaves up to 12.05 Q0.15 steps
        // (measured: 11.7 to 12.05 across the widths).
        for (bits, err) in worst.iter().enumerate() {
            assert!(*err < 12.5, "{bits} integer bits: {err} steps");
        }
    }

    #[test]
    #[cfg_attr(
        miri,
        ignore = "sweeps: over two minutes under Miri; gemmlowp16_constants runs"
    )]
    fn gemmlowp16_primitives_match_wide_math() {
        for a in (i16::MIN..=i16::MAX).step_by(7) {
            for b in [
                i16::MIN,
                -32767,
                -12345,
                -1,
                0,
                1,
                3,
                16384,
                23130,
                i16::MAX,
            ] {
                let exact = (a as f64 * b as f64) / 32768.0;
                let got = srdhm(a, b) as f64;
                if !(a == i16::MIN && b == i16::MIN) {
                    assert!((got - exact).abs() <= 0.5, "{a} * {b}");
                }
            }
            for e in 0..=15 {
                let exact = a as f64 / (1u32 << e) as f64;
                let got = rounding_divide_by_pot(a, e) as f64;
                assert!((got - exact).abs() <= 0.5, "{a} / 2^{e}");
                // Ties away from zero.
                if (exact - exact.trunc()).abs() == 0.5 {
                    assert_eq!(got, exact + 0.5 * exact.signum(), "{a} / 2^{e}");
                }
            }
            for e in 1..=15 {
                let exact = (a as i32) << e;
                assert_eq!(saturating_shl(a, e) as i32, exact.clamp(-32768, 32767));
            }
        }
    }
}
