//! Q31 softmax, logistic and tanh, scalar: the reference loops, one `i32`
//! lane at a time.

use super::params::Q31Row;
use crate::fixedpoint::{self, get_reciprocal, FixedPoint, Lane};

/// Q31 softmax: input Q(I).(31-I), output Q0.31, per `row_len`-long row.
pub(crate) fn softmax_q31<const I: u32>(input: &[i32], output: &mut [i32], row_len: usize) {
    for (row_in, row_out) in input
        .chunks_exact(row_len)
        .zip(output.chunks_exact_mut(row_len))
    {
        let min = row_in.iter().fold(i32::MAX, |m, &x| m.min(x));
        let max = row_in.iter().fold(i32::MIN, |m, &x| m.max(x));
        let row = Q31Row::new(min, max);
        let exp = |x: i32| match row.threshold {
            None => row.exp_in_range::<i32, I>(x),
            Some(t) => row.exp_wide::<i32, I>(x, t),
        };
        // Q0.31 raw, exact: at most row_len * 2^31.
        let sum_of_exps: i64 = row_in.iter().map(|&x| exp(x) as i64).sum();
        let (scale, num_bits_over_unit) = get_reciprocal(sum_of_exps, 0);
        for (&x, y) in row_in.iter().zip(row_out.iter_mut()) {
            let product = exp(x).saturating_rounding_doubling_high_mul(scale);
            *y = scale_by_pot(product, num_bits_over_unit);
        }
    }
}

/// `x * 2^-n`: a saturating left shift for `n <= 0`, a rounding right shift
/// otherwise; `x >= 0`, so shifts past 31 give 0.
#[inline(always)]
pub(crate) fn scale_by_pot(x: i32, n: i32) -> i32 {
    if n <= 0 {
        x.saturating_rounding_multiply_by_pot(-n)
    } else if n <= 31 {
        x.rounding_divide_by_pot(n as u32)
    } else {
        0
    }
}

/// Q31 logistic: input Q(I).(31-I), output Q0.31.
pub(crate) fn logistic_q31<const I: u32>(input: &[i32], output: &mut [i32]) {
    for (&x, y) in input.iter().zip(output.iter_mut()) {
        *y = fixedpoint::logistic(FixedPoint::<i32, I>::from_raw(x)).raw();
    }
}

/// Q31 tanh: input Q(I).(31-I), output Q0.31.
pub(crate) fn tanh_q31<const I: u32, const I_PLUS_1: u32>(input: &[i32], output: &mut [i32]) {
    for (&x, y) in input.iter().zip(output.iter_mut()) {
        *y = fixedpoint::tanh::<i32, I, I_PLUS_1>(FixedPoint::from_raw(x)).raw();
    }
}
