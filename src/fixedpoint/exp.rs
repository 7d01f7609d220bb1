//! `exp` on non-positive fixed-point values (gemmlowp's algorithm).
//!
//! ```text
//! exp(a), a <= 0, a in Q(I).(31-I):
//!   r   = (a mod 1/4) - 1/4            in [-1/4, 0), as Q0.31
//!   e   = exp(r)                       4th-order Taylor polynomial around -1/8
//!   for each bit b of the input worth 2^k, k = -2 ..= 4 (k < I):
//!       if the bit of (r - a) worth 2^k is set:  e *= exp(-2^k)
//!   a < -32 (only representable when I > 5)  -> 0
//!   a == 0                                   -> 1 (the largest Q0.31 value)
//! ```
//! `r - a` is a non-negative multiple of 1/4 whose bits pick the factors. It
//! equals `!a` with the bits below 1/4 cleared (two's complement identity
//! `(a & m) - 1/4 - a == !a & !m` for `m = 1/4 - 1`), so a bit of `r - a` is
//! set exactly when the same bit of `a` is clear; the code tests `a` directly.
//! Results are Q0.31, accurate to about 500 LSB near 0; the contract is
//! bit-exactness with gemmlowp, not closeness.

use super::constants::{EXP_BARREL_SHIFTER, EXP_NEG_ONE_EIGHTH, ONE_THIRD};
use super::{FixedPoint, Lane, Q0_31};

/// `exp(a)` for `a` in `[-1/4, 0)`, Q0.31 in and out.
///
/// The Taylor expansion is around `-1/8`: with `x = a + 1/8`,
/// `exp(a) = exp(-1/8) * (1 + x + x^2/2 + x^3/6 + x^4/24)`.
#[inline(always)]
pub fn exp_on_interval_between_negative_one_quarter_and_0_excl<L: Lane>(a: Q0_31<L>) -> Q0_31<L> {
    let constant_term = Q0_31::<L>::from_scalar_raw(EXP_NEG_ONE_EIGHTH);
    let one_third = Q0_31::<L>::from_scalar_raw(ONE_THIRD);
    let x = a.add(Q0_31::constant_pot(-3));
    let x2: Q0_31<L> = x.mul(x);
    let x3: Q0_31<L> = x2.mul(x);
    let x4: Q0_31<L> = x2.mul(x2);
    // x^4 is a product of two non-negative values, so it is non-negative.
    let x4_over_4 = Q0_31::from_raw(x4.raw().rounding_divide_by_pot_non_negative(2));
    // (x^4/4 + x^3) / 3 + x^2 >= x^2 (1 - |x|/3) >= 0 for |x| <= 1/8; the
    // rounded version stays non-negative too (checked exhaustively by a test).
    let inner: Q0_31<L> = x4_over_4.add(x3).mul(one_third);
    let poly = inner.add(x2);
    let x4_over_24_plus_x3_over_6_plus_x2_over_2 =
        Q0_31::from_raw(poly.raw().rounding_divide_by_pot_non_negative(1));
    // gemmlowp's AddSaturatingIf16Bit is a plain add for 32-bit lanes.
    let tail: Q0_31<L> = constant_term.mul(x.add(x4_over_24_plus_x3_over_6_plus_x2_over_2));
    constant_term.add(tail)
}

/// `exp(a)` for `a <= 0` with `I` integer bits (`I <= 29`); Q0.31 result.
///
/// Positive inputs are outside the contract (the result is meaningless but
/// deterministic and identical across lane types).
#[inline(always)]
pub fn exp_on_negative_values<L: Lane, const I: u32>(a: FixedPoint<L, I>) -> Q0_31<L> {
    const {
        assert!(
            I <= 29,
            "exp_on_negative_values needs at least 2 fractional bits"
        )
    };
    let frac_bits = FixedPoint::<L, I>::FRAC_BITS;
    // gemmlowp computes r = (a mod 1/4) - 1/4 in the input format, then
    // rescales it to Q0.31 (a left shift by I that cannot saturate, since r is
    // in [-1/4, 0)). The same bits in one step: shift a's bits below 1/4 up by
    // I and set every bit from 1/4 up (1/4 is bit 29 in Q0.31). A plain shift
    // and a bitwise or also avoid the register copy a destructive `orr`
    // immediate on the unshifted value would need.
    let quarter_and_above = L::splat(!((1 << 29) - 1));
    let r = Q0_31::from_raw(a.raw().shl(I).or(quarter_and_above));
    let mut result = exp_on_interval_between_negative_one_quarter_and_0_excl(r);

    for (exponent, multiplier) in EXP_BARREL_SHIFTER {
        if (I as i32) > exponent {
            let bit = L::splat(1 << (frac_bits as i32 + exponent));
            // The remainder's bit is set exactly when the input's is clear.
            let input_bit_set = a.raw().mask_if_any_bit_set(bit);
            let scaled: Q0_31<L> = result.mul(Q0_31::from_scalar_raw(multiplier));
            result = Q0_31::select(input_bit_set, result, scaled);
        }
    }

    if I > 5 {
        // Below -32 every factor has already driven the result to 0 in exact
        // math; gemmlowp clamps explicitly since the bits above 2^4 are not used.
        let clamp = L::splat(-(1 << (36 - I)));
        result = Q0_31::select(a.raw().mask_if_less_than(clamp), Q0_31::zero(), result);
    }

    // exp(0) is the largest Q0.31 value, `i32::MAX`. Every result above is
    // non-negative (products of non-negative values, or 0), so or-ing in
    // `mask & i32::MAX` selects exactly like gemmlowp's SelectUsingMask, in one
    // instruction fewer than the compiler's lowering of that select.
    let zero_mask = a.raw().mask_if_zero();
    Q0_31::from_raw(result.raw().or(zero_mask.and(L::splat(i32::MAX))))
}
