//! The reference pooling loops ([`Backend::Scalar`](crate::Backend::Scalar)):
//! TFLite's reference kernels element by element.

use core::ops::Range;

use super::params::{rounded_average, PoolParams};
use crate::elem::QuantElem;

/// `(image, row, column)` of every output pixel of the output rows `rows`
/// (numbered across the images: row `r` is row `r % output_height` of
/// image `r / output_height`), in output order.
pub(crate) fn pixels(
    p: &PoolParams,
    rows: Range<usize>,
) -> impl Iterator<Item = (usize, usize, usize)> {
    let s = p.shape;
    rows.flat_map(move |r| {
        let (b, oy) = (r / s.output_height, r % s.output_height);
        (0..s.output_width).map(move |ox| (b, oy, ox))
    })
}

/// Average pooling: per channel, the in-bounds window's sum divided by its
/// count (rounded half away from zero), clamped to the activation range.
/// `output` holds the rows `rows`; lengths are checked by the caller.
pub(crate) fn average_pool<T: QuantElem>(
    p: &PoolParams,
    rows: Range<usize>,
    input: &[T],
    output: &mut [T],
) {
    let s = p.shape;
    let c = s.channels;
    for (out, (b, oy, ox)) in output.chunks_exact_mut(c).zip(pixels(p, rows)) {
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
/// to the activation range. `output` holds the rows `rows`; lengths are
/// checked by the caller.
pub(crate) fn max_pool<T: QuantElem>(
    p: &PoolParams,
    rows: Range<usize>,
    input: &[T],
    output: &mut [T],
) {
    let s = p.shape;
    let c = s.channels;
    for (out, (b, oy, ox)) in output.chunks_exact_mut(c).zip(pixels(p, rows)) {
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
