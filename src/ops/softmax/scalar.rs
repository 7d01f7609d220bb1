//! Softmax, [`Method::FixedPoint`](crate::Method::FixedPoint), scalar: the
//! reference loop, one `i32` lane at a time.

use crate::elem::QuantElem;
use crate::ops::softmax_rows::SoftmaxParams;

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
