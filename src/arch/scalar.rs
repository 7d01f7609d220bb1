//! The scalar backend: the reference loops, one `i32` lane at a time.

use crate::fixedpoint::{self, get_reciprocal, FixedPoint, Lane};
use crate::ops::logistic::activation_lanes;
use crate::ops::{Activation, ActivationParams, LogSoftmaxParams, QuantElem, SoftmaxParams};
use crate::q31::Q31Row;

/// Softmax of every `row_len`-long row; lengths were checked by the caller.
pub(crate) fn softmax<T: QuantElem>(
    p: &SoftmaxParams,
    input: &[T],
    output: &mut [T],
    row_len: usize,
) {
    for (row_in, row_out) in input
        .chunks_exact(row_len)
        .zip(output.chunks_exact_mut(row_len))
    {
        let max = row_in.iter().fold(i32::MIN, |m, x| m.max(x.to_i32()));
        // Q12.19 (or Q0.31) raw; i64 so that wide rows cannot overflow (TFLite's is i32).
        let mut sum_of_exps: i64 = 0;
        for x in row_in {
            let diff = x.to_i32() - max;
            if diff >= p.diff_min {
                sum_of_exps += p.sum_term(p.exp_of_diff(diff));
            }
        }
        let (scale, exponent) = p.reciprocal::<i32>(sum_of_exps);
        for (x, y) in row_in.iter().zip(row_out.iter_mut()) {
            let diff = x.to_i32() - max;
            let q = if diff >= p.diff_min {
                p.output(p.exp_of_diff(diff), scale, exponent)
            } else {
                p.output_zero_point
            };
            *y = T::saturate(q);
        }
    }
}

/// Log-softmax of every `row_len`-long row; lengths were checked by the caller.
pub(crate) fn log_softmax<T: QuantElem>(
    p: &LogSoftmaxParams,
    input: &[T],
    output: &mut [T],
    row_len: usize,
) {
    for (row_in, row_out) in input
        .chunks_exact(row_len)
        .zip(output.chunks_exact_mut(row_len))
    {
        let max = row_in.iter().fold(i32::MIN, |m, x| m.max(x.to_i32()));
        let mut sum_of_exps: i64 = 0;
        for x in row_in {
            sum_of_exps += p.exp_term::<i32>(x.to_i32() - max) as i64;
        }
        let row = p.row_constants(sum_of_exps);
        for (x, y) in row_in.iter().zip(row_out.iter_mut()) {
            *y = T::saturate(p.output::<i32>(x.to_i32() - max, &row));
        }
    }
}

/// Logistic or tanh, element-wise; lengths were checked by the caller.
pub(crate) fn activation<T: QuantElem>(p: &ActivationParams, input: &[T], output: &mut [T]) {
    match (p.input_integer_bits, p.activation) {
        (4, Activation::Logistic) => activation_loop::<T, 4, 5, false>(p, input, output),
        (4, Activation::Tanh) => activation_loop::<T, 4, 5, true>(p, input, output),
        (_, Activation::Logistic) => activation_loop::<T, 5, 6, false>(p, input, output),
        (_, Activation::Tanh) => activation_loop::<T, 5, 6, true>(p, input, output),
    }
}

fn activation_loop<T: QuantElem, const I: u32, const I_PLUS_1: u32, const TANH: bool>(
    p: &ActivationParams,
    input: &[T],
    output: &mut [T],
) {
    for (x, y) in input.iter().zip(output.iter_mut()) {
        *y = T::saturate(activation_lanes::<i32, I, I_PLUS_1, TANH>(x.to_i32(), p));
    }
}

/// Q31 softmax: input Q(I).(31-I), output Q0.31, per `row_len`-long row.
pub(crate) fn q31_softmax<const I: u32>(input: &[i32], output: &mut [i32], row_len: usize) {
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
            *y = q31_scale_by_pot(product, num_bits_over_unit);
        }
    }
}

/// `x * 2^-n`: a saturating left shift for `n <= 0`, a rounding right shift
/// otherwise; `x >= 0`, so shifts past 31 give 0.
#[inline(always)]
pub(crate) fn q31_scale_by_pot(x: i32, n: i32) -> i32 {
    if n <= 0 {
        x.saturating_rounding_multiply_by_pot(-n)
    } else if n <= 31 {
        x.rounding_divide_by_pot(n as u32)
    } else {
        0
    }
}

/// Q31 logistic: input Q(I).(31-I), output Q0.31.
pub(crate) fn q31_logistic<const I: u32>(input: &[i32], output: &mut [i32]) {
    for (&x, y) in input.iter().zip(output.iter_mut()) {
        *y = fixedpoint::logistic(FixedPoint::<i32, I>::from_raw(x)).raw();
    }
}

/// Q31 tanh: input Q(I).(31-I), output Q0.31.
pub(crate) fn q31_tanh<const I: u32, const I_PLUS_1: u32>(input: &[i32], output: &mut [i32]) {
    for (&x, y) in input.iter().zip(output.iter_mut()) {
        *y = fixedpoint::tanh::<i32, I, I_PLUS_1>(FixedPoint::from_raw(x)).raw();
    }
}
