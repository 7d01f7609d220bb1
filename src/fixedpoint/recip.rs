//! Reciprocals by Newton-Raphson, and the logistic and tanh functions built on them.
//!
//! ```text
//! 1/(1+x), x in [0, 1), Q0.31 in and out:
//!   d  = (x + 1) / 2                     in [1/2, 1), Q0.31 (rounding half sum)
//!   y0 = 48/17 - 32/17 * d               Q2.29, the minimax linear seed for 1/d
//!   3 times:  y = y + y * (1 - d * y)    Q2.29 (error squares each step)
//!   result = y / 2                       = 1/(1+x), back to Q0.31 (saturating)
//! ```
//! `logistic(a) = 1 / (1 + exp(-|a|))`, mirrored for negative `a`;
//! `tanh(a) = (1 - exp(-2|a|)) / (1 + exp(-2|a|))`, odd in `a`.

use super::constants::{FORTY_EIGHT_OVER_SEVENTEEN, NEG_THIRTY_TWO_OVER_SEVENTEEN};
use super::exp::exp_on_negative_values;
use super::{FixedPoint, Lane, Q0_31, Q2_29};

/// The Newton-Raphson iterate `y ~ 1/d` for `d = (1 + a)/2`, Q2.29.
#[inline(always)]
fn newton_raphson_reciprocal_of_half_denominator<L: Lane>(a: Q0_31<L>) -> Q2_29<L> {
    let half_denominator = Q0_31::from_raw(a.raw().rounding_half_sum(Q0_31::<L>::one().raw()));
    let seed_offset = Q2_29::<L>::from_scalar_raw(FORTY_EIGHT_OVER_SEVENTEEN);
    let seed_slope = Q2_29::<L>::from_scalar_raw(NEG_THIRTY_TWO_OVER_SEVENTEEN);
    let seed: Q2_29<L> = half_denominator.mul(seed_slope);
    let mut x = seed_offset.add(seed);
    for _ in 0..3 {
        let half_denominator_times_x: Q2_29<L> = half_denominator.mul(x);
        let one_minus_half_denominator_times_x = Q2_29::one().sub(half_denominator_times_x);
        // Q2.29 * Q2.29 = Q4.27, back to Q2.29 with a saturating left shift.
        let correction: FixedPoint<L, 4> = x.mul(one_minus_half_denominator_times_x);
        x = x.add(correction.rescale::<2>());
    }
    x
}

/// `1 / (1 + a)` for `a` in `[0, 1)`; Q0.31 in and out.
#[inline(always)]
pub fn one_over_one_plus_x_for_x_in_0_1<L: Lane>(a: Q0_31<L>) -> Q0_31<L> {
    let x = newton_raphson_reciprocal_of_half_denominator(a);
    // x ~ 1/d = 2/(1+a); halving it is a reinterpretation as Q1.30.
    x.exact_mul_by_pot::<1>().rescale::<0>()
}

/// `(1 - a) / (1 + a)` for `a` in `[0, 1)`; Q0.31 in and out.
#[inline(always)]
pub fn one_minus_x_over_one_plus_x_for_x_in_0_1<L: Lane>(a: Q0_31<L>) -> Q0_31<L> {
    let x = newton_raphson_reciprocal_of_half_denominator(a);
    // 2/(1+a) - 1 = (1-a)/(1+a).
    x.sub(Q2_29::one()).rescale::<0>()
}

/// The logistic function `1 / (1 + exp(-a))`; input with `I` integer bits
/// (`I <= 29`), Q0.31 result. `logistic(0)` is exactly 1/2.
#[inline(always)]
pub fn logistic<L: Lane, const I: u32>(a: FixedPoint<L, I>) -> Q0_31<L> {
    let mask_if_positive = a.raw().mask_if_greater_than(L::splat(0));
    let mask_if_zero = a.raw().mask_if_zero();
    // -i32::MIN wraps to itself, as in the C++ reference.
    let minus_abs = FixedPoint::select(mask_if_positive, a.neg(), a);
    let result_if_positive = one_over_one_plus_x_for_x_in_0_1(exp_on_negative_values(minus_abs));
    let result_if_negative = Q0_31::one().sub(result_if_positive);
    let one_half = Q0_31::<L>::constant_pot(-1);
    Q0_31::select(
        mask_if_zero,
        one_half,
        Q0_31::select(mask_if_positive, result_if_positive, result_if_negative),
    )
}

/// The hyperbolic tangent; input with `I` integer bits, Q0.31 result.
///
/// `I_PLUS_1` must be `I + 1` (checked at compile time): `exp(-2|a|)` is
/// evaluated on the same raw value read with one more integer bit, so `I <= 28`.
#[inline(always)]
pub fn tanh<L: Lane, const I: u32, const I_PLUS_1: u32>(a: FixedPoint<L, I>) -> Q0_31<L> {
    const { assert!(I + 1 == I_PLUS_1, "I_PLUS_1 must be I + 1") };
    let mask_if_negative = a.raw().mask_if_less_than(L::splat(0));
    let mask_if_zero = a.raw().mask_if_zero();
    let minus_abs = FixedPoint::select(mask_if_negative, a, a.neg());
    let minus_two_abs = minus_abs.exact_mul_by_pot::<I_PLUS_1>();
    let t = one_minus_x_over_one_plus_x_for_x_in_0_1(exp_on_negative_values(minus_two_abs));
    Q0_31::select(
        mask_if_zero,
        Q0_31::zero(),
        Q0_31::select(mask_if_negative, t.neg(), t),
    )
}

/// TFLite's `GetReciprocal`, widened to 64-bit sums.
///
/// `sum > 0` has `x_integer_digits` integer bits (raw value `sum`, scale
/// `2^-(31 - x_integer_digits)`). Returns `(scale, num_bits_over_unit)` with
/// `scale` in Q0.31 such that `1/sum ~ scale * 2^-num_bits_over_unit`
/// (in real units). For `sum <= i32::MAX` this is TFLite's function bit for bit;
/// larger sums, where TFLite's 32-bit accumulator has already overflowed, keep
/// the top 32 bits of the sum (truncating the rest, under 2^-31 relative).
pub fn get_reciprocal(sum: i64, x_integer_digits: i32) -> (i32, i32) {
    get_reciprocal_splat::<i32>(sum, x_integer_digits)
}

/// [`get_reciprocal`] with the scale splat across the lanes of `L`: vector
/// kernels run the Newton-Raphson steps on vector registers (one instruction
/// per multiply instead of a scalar 64-bit emulation) and use the result as is.
#[inline(always)]
pub(crate) fn get_reciprocal_splat<L: Lane>(sum: i64, x_integer_digits: i32) -> (L, i32) {
    debug_assert!(sum > 0);
    // Leading zeros the sum would have as a u32 (negative once it needs more).
    let headroom_plus_one = sum.leading_zeros() as i32 - 32;
    let normalized: u32 = if headroom_plus_one >= 0 {
        ((sum as u64) << headroom_plus_one) as u32
    } else {
        ((sum as u64) >> -headroom_plus_one) as u32
    };
    let num_bits_over_unit = x_integer_digits - headroom_plus_one;
    let shifted_sum_minus_one = normalized.wrapping_sub(1 << 31) as i32;
    let scale =
        one_over_one_plus_x_for_x_in_0_1(Q0_31::<L>::from_scalar_raw(shifted_sum_minus_one));
    (scale.raw(), num_bits_over_unit)
}
