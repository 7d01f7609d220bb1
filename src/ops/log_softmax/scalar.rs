//! Log-softmax, [`Method::FixedPoint`](crate::Method::FixedPoint), scalar:
//! the reference loop, one `i32` lane at a time.

use super::params::LogSoftmaxParams;
use crate::elem::QuantElem;

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
