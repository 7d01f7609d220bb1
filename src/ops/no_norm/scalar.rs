//! The scalar reference of NoNorm: [`NoNormParams::lanes`] on `i32`, one
//! channel at a time.

use super::params::NoNormParams;

/// NoNorm over rows of `channels` values; lengths were checked by the caller.
pub(crate) fn no_norm(p: &NoNormParams, input: &[i8], output: &mut [i8]) {
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
