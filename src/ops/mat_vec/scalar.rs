//! The packed mat-vec, scalar: the reference the NEON loops equal.

use super::{output_one, row_block, GemvView};
use core::ops::Range;

/// Row `r`'s dot product with `x` (`cols` bytes), the weights in the packed
/// layout of [`pack_rows`](super::pack_rows) (rows of `stride` bytes), in
/// int32 (wrapping, as the C++ sum does past `2^31`; exact for any `cols`
/// below 2^17).
#[inline(always)]
fn row_dot(weights: &[i8], rows: usize, stride: usize, x: &[i8], r: usize) -> i32 {
    let (first, n) = row_block(r, rows);
    let base = first * stride + (r - first) * 16;
    let mut acc = 0i32;
    for (k, xk) in x.chunks(16).enumerate() {
        let w = &weights[base + k * n * 16..][..xk.len()];
        acc = w
            .iter()
            .zip(xk)
            .fold(acc, |a, (&w, &x)| a.wrapping_add(w as i32 * x as i32));
    }
    acc
}

/// `dots[b * rows + r] = sum_c w[r][c] * x[b * cols + c]` for every batch
/// row `b` of `x` ([`row_dot`] for each).
pub(crate) fn mat_vec_packed(
    weights: &[i8],
    rows: usize,
    cols: usize,
    stride: usize,
    x: &[i8],
    dots: &mut [i32],
) {
    for (xb, db) in x.chunks_exact(cols).zip(dots.chunks_exact_mut(rows)) {
        for (r, d) in db.iter_mut().enumerate() {
            *d = row_dot(weights, rows, stride, xb, r);
        }
    }
}

/// [`Gemv`](super::Gemv)'s channels `channels` of `x` into `output` (one
/// byte per channel of the range; lengths checked by the caller).
pub(crate) fn gemv(g: &GemvView<'_>, x: &[i8], output: &mut [i8], channels: Range<usize>) {
    for (c, out) in channels.zip(output.iter_mut()) {
        let dot = row_dot(g.packed, g.n, g.stride, x, c);
        *out = output_one(g, c, dot);
    }
}
