//! The gate matrix products, scalar: the reference the NEON loops equal.

use super::params::MatVec;

/// `dots[b * rows + r] = sum_c weights[r * stride + c] * x[b * cols + c]`
/// (`c < cols`) for every batch row `b` of `x`, in int32 (wrapping, as the
/// C++ sum does past `2^31`; exact for any `cols` below 2^17).
pub(crate) fn mat_vec_strided(
    weights: &[i8],
    rows: usize,
    cols: usize,
    stride: usize,
    x: &[i8],
    dots: &mut [i32],
) {
    for (xb, db) in x.chunks_exact(cols).zip(dots.chunks_exact_mut(rows)) {
        for (d, w) in db.iter_mut().zip(weights.chunks_exact(stride)) {
            *d = w[..cols]
                .iter()
                .zip(xb)
                .fold(0i32, |acc, (&w, &x)| acc.wrapping_add(w as i32 * x as i32));
        }
    }
}

/// The products of `m` with each row of `x` (`m.cols` bytes a row) into
/// `dots` (`m.rows` a row).
pub(crate) fn mat_vec(m: &MatVec, x: &[i8], dots: &mut [i32]) {
    mat_vec_strided(&m.weights, m.rows, m.cols, m.stride, x, dots)
}
