//! Natural logarithm of values `>= 1` (TFLite's `log_x_for_x_greater_than_or_equal_to_1`).
//!
//! ```text
//! x = z * 2^p with z normalised into [sqrt(1/2), sqrt(2)) (two candidate
//!     normalisations, with and without a factor sqrt(1/2), keep the one in range)
//! log(x) = p * ln 2 + log(z)
//! log(z): with r = z, q = 2 (r - 2^-1/4), a rational approximation
//!         num / (1 + denom_minus_one) whose constants are below (Q0.31)
//! ```
//! The input has a run-time number of integer bits so that a 64-bit sum can be
//! normalised into 32 bits first (see [`crate::ops::LogSoftmax`]); with 12 it is
//! TFLite's instantiation for log-softmax, bit for bit. The output is Q5.26,
//! accumulated in Q6.25 because `p * ln 2` may saturate otherwise.

use super::recip::one_over_one_plus_x_for_x_in_0_1;
use super::{Lane, Q0_31};

/// `ln 2`, Q0.31.
pub const LN_2: i32 = 1_488_522_236;
/// `(1/2)^(1/4)`, Q0.31.
pub const SQRT_SQRT_HALF: i32 = 1_805_811_301;
/// `sqrt(1/2)`, Q0.31.
pub const SQRT_HALF: i32 = 1_518_500_250;
/// `1/4`, Q0.31.
pub const ONE_QUARTER: i32 = 536_870_912;
/// `11/240 * 2^(1/4)`, Q0.31: numerator coefficient.
pub const LOG_ALPHA_N: i32 = 117_049_297;
/// `1/20 * 2^(1/4)`, Q0.31: denominator coefficient of `q^2`.
pub const LOG_ALPHA_D: i32 = 127_690_142;
/// `2 * 2^(-1/4) - 2^(1/4)`, Q0.31: denominator constant term.
pub const LOG_ALPHA_I: i32 = 1_057_819_769;
/// `1/4 * 2^(1/4)`, Q0.31: denominator coefficient of `q`.
pub const LOG_ALPHA_F: i32 = 638_450_708;

/// Integer bits of the accumulator: output bits (5) plus one.
pub(crate) const ACCUM_INTEGER_BITS: u32 = 6;

/// `x * 2^exponent` for `exponent >= 0`, saturating (TFLite's
/// `SaturatingRoundingMultiplyByPOTParam`, left shifts only).
#[inline(always)]
fn saturating_shift_left(x: i32, exponent: i32) -> i32 {
    debug_assert!((0..=31).contains(&exponent));
    x.saturating_rounding_multiply_by_pot(exponent)
}

/// `ln(x)` in Q5.26 for `x >= 1` given as a raw value with
/// `input_integer_bits` integer bits (`12..=31`), where the value is at least 1
/// (`raw >= 2^(31 - input_integer_bits)`) **and** `raw >= 2^19`.
///
/// The second condition is the algorithm's, not TFLite's choice of format:
/// for raws with fewer than 20 significant bits the `sqrt(1/2)`-scaled
/// candidate loses its leading bit to rounding and the wrong normalisation
/// wins (e.g. raw 1 with 31 integer bits gives 0.16 instead of 0). TFLite
/// only calls it with 12 integer bits (so raw >= 2^19), and log-softmax here
/// only with raw >= 2^19 too.
pub fn log_x_for_x_greater_than_or_equal_to_1(raw: i32, input_integer_bits: i32) -> i32 {
    debug_assert!(raw >= 1 << 19 && (raw as i64) >= 1i64 << (31 - input_integer_bits));
    let srdhm = |a: i32, b: i32| a.saturating_rounding_doubling_high_mul(b);
    let accum_frac_bits = 31 - ACCUM_INTEGER_BITS as i32;
    let shifted_quarter = ONE_QUARTER.rounding_divide_by_pot(ACCUM_INTEGER_BITS);

    // Normalisation a: z_a = raw * 2^(headroom_a - 1), exponent p_a - 3/4 ...
    let z_a = raw;
    let z_a_headroom_plus_1 = (z_a as u32).leading_zeros() as i32;
    let r_a_tmp = saturating_shift_left(z_a, z_a_headroom_plus_1 - 1);
    let r_a = saturating_shift_left(srdhm(r_a_tmp, SQRT_HALF), 1);
    let z_a_pow_2_adj =
        saturating_shift_left(input_integer_bits - z_a_headroom_plus_1, accum_frac_bits)
            .saturating_add(shifted_quarter);

    // ... and b: the same after a factor sqrt(1/2), exponent p_b - 1/4.
    let z_b = srdhm(z_a, SQRT_HALF);
    let z_b_headroom = (z_b as u32).leading_zeros() as i32 - 1;
    let r_b = saturating_shift_left(z_a, z_b_headroom);
    let z_b_pow_2_adj = saturating_shift_left(input_integer_bits - z_b_headroom, accum_frac_bits)
        .saturating_sub(shifted_quarter);

    // Whichever normalisation lands in [sqrt(1/2), sqrt(2)) wins.
    let r = r_a.min(r_b);
    let z_pow_2_adj = z_a_pow_2_adj.max(z_b_pow_2_adj);

    let p = r.rounding_half_sum(SQRT_SQRT_HALF);
    let q = r.wrapping_sub(SQRT_SQRT_HALF);
    let q = q.wrapping_add(q);
    let common_sq = srdhm(q, q);
    let num = srdhm(q, r).wrapping_add(srdhm(srdhm(q, common_sq), LOG_ALPHA_N));
    let denom_minus_one = srdhm(
        p,
        LOG_ALPHA_I
            .wrapping_add(q)
            .wrapping_add(srdhm(LOG_ALPHA_D, common_sq)),
    )
    .wrapping_add(srdhm(LOG_ALPHA_F, q));
    let recip_denom =
        one_over_one_plus_x_for_x_in_0_1(Q0_31::<i32>::from_raw(denom_minus_one)).raw();

    // Q6.25: p ln 2 + num / denom, then one saturating shift to Q5.26.
    let num_scaled = num.rounding_divide_by_pot(ACCUM_INTEGER_BITS);
    let sum = srdhm(z_pow_2_adj, LN_2).wrapping_add(srdhm(num_scaled, recip_denom));
    saturating_shift_left(sum, 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_constants_match_their_real_values() {
        let raw = |x: f64| (x * 2f64.powi(31)).round() as i64;
        let fourth_root_2 = 2f64.powf(0.25);
        assert_eq!(LN_2 as i64, raw(2f64.ln()));
        assert_eq!(SQRT_SQRT_HALF as i64, raw(0.5f64.sqrt().sqrt()));
        assert_eq!(SQRT_HALF as i64, raw(0.5f64.sqrt()));
        assert_eq!(ONE_QUARTER as i64, raw(0.25));
        assert_eq!(LOG_ALPHA_N as i64, raw(11.0 / 240.0 * fourth_root_2));
        assert_eq!(LOG_ALPHA_D as i64, raw(1.0 / 20.0 * fourth_root_2));
        assert_eq!(LOG_ALPHA_I as i64, raw(2.0 / fourth_root_2 - fourth_root_2));
        assert_eq!(LOG_ALPHA_F as i64, raw(0.25 * fourth_root_2));
    }

    #[test]
    #[cfg_attr(
        miri,
        ignore = "a sweep of the Q12 range: too slow under Miri; the constants test runs"
    )]
    fn log_is_close_to_f64_over_the_q12_range() {
        // Every 4097th raw value from 1.0 to just below 4096.0 in Q12.19.
        let mut worst = 0f64;
        let mut raw = 1i32 << 19;
        while raw > 0 {
            let got = log_x_for_x_greater_than_or_equal_to_1(raw, 12) as f64 / 2f64.powi(26);
            let want = (raw as f64 / 2f64.powi(19)).ln();
            worst = worst.max((got - want).abs());
            raw = raw.saturating_add(4097);
            if raw == i32::MAX {
                break;
            }
        }
        // Measured: about 3e-8 (a few Q5.26 LSBs); output steps of log-softmax are 1/16.
        assert!(worst < 1e-6, "worst error {worst}");
    }
}
