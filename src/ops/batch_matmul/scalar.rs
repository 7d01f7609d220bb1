//! The scalar reference of [`MatMul`](super::MatMul), written as TFLite's
//! reference kernel states the arithmetic: both zero points subtracted in
//! the inner loop, the raw (unpacked) operands, no scratch.

use super::MatMul;
use crate::ops::requant::output_stage;

/// `output = lhs * rhs`, requantized; lengths were checked by the caller.
pub(super) fn matmul(p: &MatMul, lhs: &[i8], rhs: &[i8], output: &mut [i8]) {
    let (m, n, k) = (p.m, p.n, p.k);
    debug_assert!(lhs.len() == m * k && rhs.len() == k * n && output.len() == m * n);
    // Element (r, d) of the m x k left-hand side and (d, c) of the k x n
    // right-hand side, whichever way each is stored.
    let x = |r: usize, d: usize| lhs[if p.adj_x { d * m + r } else { r * k + d }] as i32;
    let y = |d: usize, c: usize| rhs[if p.adj_y { c * k + d } else { d * n + c }] as i32;
    for r in 0..m {
        for c in 0..n {
            let mut acc = 0i32;
            for d in 0..k {
                let term = (x(r, d) - p.lhs_zero_point).wrapping_mul(y(d, c) - p.rhs_zero_point);
                acc = acc.wrapping_add(term);
            }
            let requantized = p.multipliers.requantize(c, acc);
            output[r * n + c] = output_stage(requantized, p.output_zero_point, -128, 127) as i8;
        }
    }
}
