//! The scalar reference of the GEMM, one `i32` lane at a time, written as
//! TFLite's reference kernel states the arithmetic (the input zero point
//! subtracted in the inner loop, the original bias), not in the folded form
//! the NEON kernels use.

use super::params::GemmParams;
use crate::ops::requant::output_stage;

/// `output = input * weights^T`, requantized; lengths were checked by the caller.
pub(crate) fn gemm(g: &GemmParams, input: &[i8], output: &mut [i8], m: usize) {
    debug_assert!(input.len() == m * g.k && output.len() == m * g.n);
    for (x, y) in input.chunks_exact(g.k).zip(output.chunks_exact_mut(g.n)) {
        for (c, out) in y.iter_mut().enumerate() {
            let mut acc = g.bias[c];
            for (d, &xv) in x.iter().enumerate() {
                let term = (xv as i32 - g.input_zero_point).wrapping_mul(g.weight(c, d) as i32);
                acc = acc.wrapping_add(term);
            }
            let r = g.multipliers.requantize(c, acc);
            *out = output_stage(r, g.output_zero_point, g.act_min, g.act_max) as i8;
        }
    }
}
