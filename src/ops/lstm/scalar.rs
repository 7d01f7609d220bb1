//! The gate matrix products, scalar: the reference the NEON loops equal.

use super::params::{row_block, MatVec};

/// `dots[b * rows + r] = sum_c w[r][c] * x[b * cols + c]` for every batch
/// row `b` of `x`, with `weights` in the packed layout of
/// [`pack_rows`](super::params::pack_rows) (rows of `stride` bytes), in
/// int32 (wrapping, as the C++ sum does past `2^31`; exact for any `cols`
/// below 2^17).
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
            let (first, n) = row_block(r, rows);
            let base = first * stride + (r - first) * 16;
            let mut acc = 0i32;
            for (k, xk) in xb.chunks(16).enumerate() {
                let w = &weights[base + k * n * 16..][..xk.len()];
                acc = w
                    .iter()
                    .zip(xk)
                    .fold(acc, |a, (&w, &x)| a.wrapping_add(w as i32 * x as i32));
            }
            *d = acc;
        }
    }
}

/// The products of `m` with each row of `x` (`m.cols` bytes a row) into
/// `dots` (`m.rows` a row).
pub(crate) fn mat_vec(m: &MatVec, x: &[i8], dots: &mut [i32]) {
    mat_vec_packed(&m.weights, m.rows, m.cols, m.stride, x, dots)
}
