//! The scalar reference of the quantized add: [`AddParams::lanes`] on `i32`.

use super::params::AddParams;

/// Quantized add, element-wise; lengths were checked by the caller.
pub(crate) fn add(p: &AddParams, a: &[i8], b: &[i8], output: &mut [i8]) {
    for ((&x, &y), out) in a.iter().zip(b).zip(output.iter_mut()) {
        *out = p.lanes(x as i32, y as i32) as i8;
    }
}
