//! The reference pooling loops ([`Backend::Scalar`](crate::Backend::Scalar)):
//! TFLite's reference kernels element by element.

use super::params::{rounded_average, PoolParams};
use crate::elem::QuantElem;

/// `(image, row, column)` of every output pixel, in output order.
pub(crate) fn pixels(p: &PoolParams) -> impl Iterator<Item = (usize, usize, usize)> {
    let s = p.shape;
    (0..s.batch).flat_map(move |b| {
        (0..s.output_height).flat_map(move |oy| (0..s.output_width).map(move |ox| (b, oy, ox)))
    })
}

/// Average pooling: per channel, the in-bounds window's sum divided by its
/// count (rounded half away from zero), clamped to the activation range.
/// Lengths are checked by the caller.
pub(crate) fn average_pool<T: QuantElem>(p: &PoolParams, input: &[T], output: &mut [T]) {
    let s = p.shape;
    let c = s.channels;
    for (out, (b, oy, ox)) in output.chunks_exact_mut(c).zip(pixels(p)) {
        let w = s.window(oy, ox);
        let count = w.count() as i32;
        for (ch, o) in out.iter_mut().enumerate() {
            let mut sum = 0i32;
            for y in w.y0..w.y1 {
                let row = (b * s.input_height + y) * s.input_width;
                for x in w.x0..w.x1 {
                    sum += input[(row + x) * c + ch].to_i32();
                }
            }
            let avg = rounded_average(sum, count).clamp(p.act_min, p.act_max);
            *o = T::from_i32(avg);
        }
    }
}

/// Max pooling: per channel, the largest in-bounds window element, clamped
/// to the activation range. Lengths are checked by the caller.
pub(crate) fn max_pool<T: QuantElem>(p: &PoolParams, input: &[T], output: &mut [T]) {
    let s = p.shape;
    let c = s.channels;
    for (out, (b, oy, ox)) in output.chunks_exact_mut(c).zip(pixels(p)) {
        let w = s.window(oy, ox);
        for (ch, o) in out.iter_mut().enumerate() {
            let mut max = i32::MIN;
            for y in w.y0..w.y1 {
                let row = (b * s.input_height + y) * s.input_width;
                for x in w.x0..w.x1 {
                    max = max.max(input[(row + x) * c + ch].to_i32());
                }
            }
            *o = T::from_i32(max.clamp(p.act_min, p.act_max));
        }
    }
}
