//! `log_x_for_x_greater_than_or_equal_to_1` of four rows at once, on
//! `int32x4_t` lanes, each lane with its own number of integer bits: the
//! scalar function in `fixedpoint::log`, step for step (the same operations
//! through [`Lane`], and NEON's per-lane `clz` and saturating `sqshl` where
//! the scalar code counts leading zeros and shifts by them). The NEON
//! log-softmax kernels take the log-sums of four rows with it: the scalar
//! function costs about 300 instructions per row, a quarter of a 64-element
//! row's budget.
//!
//! The constants are `fixedpoint::log`'s own (checked against their real
//! values there). Tested equal to the scalar function on every raw value of
//! a dense sweep and on every integer-bit count used (`12..=31`), below.

use crate::fixedpoint::log::{
    ACCUM_INTEGER_BITS, LN_2, LOG_ALPHA_D, LOG_ALPHA_F, LOG_ALPHA_I, LOG_ALPHA_N, ONE_QUARTER,
    SQRT_HALF, SQRT_SQRT_HALF,
};
use crate::fixedpoint::{one_over_one_plus_x_for_x_in_0_1, Lane, Q0_31};
use core::arch::aarch64::*;

/// `ln(x)` in Q5.26 of four raw values, lane `i` with `integer_bits[i]`
/// integer bits (`12..=31`); each raw at least `2^19` and at least 1 in its
/// format, as the scalar function requires.
#[inline(always)]
pub(crate) fn log_x_for_x_greater_than_or_equal_to_1_x4(
    raw: int32x4_t,
    integer_bits: int32x4_t,
) -> int32x4_t {
    let splat = <int32x4_t as Lane>::splat;
    let srdhm = |a: int32x4_t, b: int32x4_t| a.saturating_rounding_doubling_high_mul(b);
    // SAFETY: register arithmetic; NEON is a compile-time target feature.
    let clz = |x: int32x4_t| unsafe { vclzq_s32(x) };
    // x * 2^n per lane, saturating (n >= 0): the scalar
    // `saturating_rounding_multiply_by_pot` for non-negative exponents.
    // Shift counts are 0..=31 (headrooms of values >= 2^19 are at most 12).
    // SAFETY: register arithmetic; NEON is a compile-time target feature.
    let shl = |x: int32x4_t, n: int32x4_t| unsafe { vqshlq_s32(x, n) };
    let accum_frac_bits = 31 - ACCUM_INTEGER_BITS as i32;
    let shifted_quarter = ONE_QUARTER.rounding_divide_by_pot(ACCUM_INTEGER_BITS);
    let one = splat(1);

    let z_a = raw;
    let z_a_headroom_plus_1 = clz(z_a);
    let r_a_tmp = shl(z_a, z_a_headroom_plus_1.sub(one));
    let r_a = srdhm(r_a_tmp, splat(SQRT_HALF)).saturating_rounding_multiply_by_pot(1);
    let z_a_pow_2_adj = integer_bits
        .sub(z_a_headroom_plus_1)
        .saturating_rounding_multiply_by_pot(accum_frac_bits)
        .saturating_add(splat(shifted_quarter));

    let z_b = srdhm(z_a, splat(SQRT_HALF));
    let z_b_headroom = clz(z_b).sub(one);
    let r_b = shl(z_a, z_b_headroom);
    let z_b_pow_2_adj = integer_bits
        .sub(z_b_headroom)
        .saturating_rounding_multiply_by_pot(accum_frac_bits)
        .saturating_sub(splat(shifted_quarter));

    let r = r_a.lane_min(r_b);
    let z_pow_2_adj = z_a_pow_2_adj.lane_max(z_b_pow_2_adj);

    let p = r.rounding_half_sum(splat(SQRT_SQRT_HALF));
    let q = r.sub(splat(SQRT_SQRT_HALF));
    let q = q.add(q);
    let common_sq = srdhm(q, q);
    let num = srdhm(q, r).add(srdhm(srdhm(q, common_sq), splat(LOG_ALPHA_N)));
    let denom_minus_one = srdhm(
        p,
        splat(LOG_ALPHA_I)
            .add(q)
            .add(srdhm(splat(LOG_ALPHA_D), common_sq)),
    )
    .add(srdhm(splat(LOG_ALPHA_F), q));
    let recip_denom = one_over_one_plus_x_for_x_in_0_1(Q0_31::from_raw(denom_minus_one)).raw();

    let num_scaled = num.rounding_divide_by_pot(ACCUM_INTEGER_BITS);
    let sum = srdhm(z_pow_2_adj, splat(LN_2)).add(srdhm(num_scaled, recip_denom));
    sum.saturating_rounding_multiply_by_pot(1)
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use crate::fixedpoint::log_x_for_x_greater_than_or_equal_to_1;
    use std::vec::Vec;

    /// Equal to the scalar function lane by lane: raw values from the
    /// smallest allowed to `i32::MAX` in steps of 1009 (12 integer bits, the
    /// common case) or 65,537 (13..=31), and the ends; lanes mixed.
    #[test]
    fn equals_the_scalar_log() {
        let mut checked = 0u64;
        for bits in 12..=31i32 {
            let lowest = (1i64 << 19).max(1i64 << (31 - bits)) as i32;
            let mut raws: Vec<i32> = (lowest as i64..=i32::MAX as i64)
                .step_by(if bits == 12 { 1009 } else { 65_537 })
                .map(|r| r as i32)
                .collect();
            raws.extend([lowest, lowest + 1, i32::MAX - 1, i32::MAX]);
            for chunk in raws.chunks(4) {
                let mut lanes = [lowest; 4];
                lanes[..chunk.len()].copy_from_slice(chunk);
                // Mixed integer bits across lanes: lane 3 uses 31 when valid.
                let mut b = [bits; 4];
                if lanes[3] as i64 >= 1 << 19 {
                    b[3] = 31;
                }
                // SAFETY: loads of local arrays of four.
                let (r, n) = unsafe { (vld1q_s32(lanes.as_ptr()), vld1q_s32(b.as_ptr())) };
                let got = log_x_for_x_greater_than_or_equal_to_1_x4(r, n);
                let mut out = [0i32; 4];
                // SAFETY: a store into a local array of four.
                unsafe { vst1q_s32(out.as_mut_ptr(), got) };
                for i in 0..4 {
                    let want = log_x_for_x_greater_than_or_equal_to_1(lanes[i], b[i]);
                    assert_eq!(out[i], want, "raw {} bits {}", lanes[i], b[i]);
                    checked += 1;
                }
            }
        }
        assert!(checked > 2_000_000, "{checked}");
    }
}
