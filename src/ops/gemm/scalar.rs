//! The scalar reference of the GEMM, one `i32` lane at a time, written as
//! TFLite's reference kernel states the arithmetic (the input zero point
//! subtracted in the inner loop, the original bias), not in the folded form
//! the NEON kernels use.

use super::params::{GemmParams, Tile};
use crate::ops::requant::output_stage;

/// The tile `t` of `output = input * weights^T`, requantized (`input` the
/// whole `m x k` input, `output` the tile's; lengths were checked by the
/// caller).
pub(crate) fn gemm(g: &GemmParams, input: &[i8], output: &mut [i8], t: &Tile) {
    let width = t.cols.len();
    debug_assert!(input.len() >= t.rows.end * g.k);
    debug_assert!(output.len() >= (t.rows.len() - 1) * t.stride + width);
    for (i, row) in t.rows.clone().enumerate() {
        let x = &input[row * g.k..(row + 1) * g.k];
        let y = &mut output[i * t.stride..i * t.stride + width];
        for (c, out) in t.cols.clone().zip(y.iter_mut()) {
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
