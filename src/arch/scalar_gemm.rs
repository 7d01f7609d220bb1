//! The scalar reference of the layer kernels (GEMM, quantized add, NoNorm),
//! one `i32` lane at a time, written as TFLite's reference kernels state the
//! arithmetic (the input zero point subtracted in the inner loop, the original
//! bias), not in the folded form the NEON kernels use.

#[cfg(feature = "alloc")]
use crate::ops::requant::{output_stage, requantize_lanes};
use crate::ops::AddParams;
#[cfg(feature = "alloc")]
use crate::ops::{Gemm, NoNorm};

#[cfg(feature = "alloc")]
/// `output = input * weights^T`, requantized; lengths were checked by the caller.
pub(crate) fn gemm(g: &Gemm, input: &[i8], output: &mut [i8], m: usize) {
    debug_assert!(input.len() == m * g.k && output.len() == m * g.n);
    for (x, y) in input.chunks_exact(g.k).zip(output.chunks_exact_mut(g.n)) {
        for (c, out) in y.iter_mut().enumerate() {
            let mut acc = g.bias[c];
            for (d, &xv) in x.iter().enumerate() {
                let term = (xv as i32 - g.input_zero_point).wrapping_mul(g.weight(c, d) as i32);
                acc = acc.wrapping_add(term);
            }
            let r = requantize_lanes(acc, &g.multipliers.channel(c));
            *out = output_stage(r, g.output_zero_point, g.act_min, g.act_max) as i8;
        }
    }
}

/// Quantized add, element-wise; lengths were checked by the caller.
pub(crate) fn add(p: &AddParams, a: &[i8], b: &[i8], output: &mut [i8]) {
    for ((&x, &y), out) in a.iter().zip(b).zip(output.iter_mut()) {
        *out = p.lanes(x as i32, y as i32) as i8;
    }
}

#[cfg(feature = "alloc")]
/// NoNorm over rows of `channels` values; lengths were checked by the caller.
pub(crate) fn no_norm(p: &NoNorm, input: &[i8], output: &mut [i8]) {
    let channels = p.channels();
    for (x, y) in input
        .chunks_exact(channels)
        .zip(output.chunks_exact_mut(channels))
    {
        for (c, (&xv, out)) in x.iter().zip(y.iter_mut()).enumerate() {
            let m = p.multipliers.channel(c);
            *out = p.lanes(xv as i32, p.gamma[c], p.beta[c], &m) as i8;
        }
    }
}
