//! The gate matrix products, scalar: the reference the NEON loops equal.

/// `dots[b * rows + r] = sum_c weights[r * cols + c] * x[b * cols + c]` for
/// every batch row `b` of `x`, in int32 (wrapping, as the C++ sum does past
/// `2^31`; exact for any `cols` below 2^17).
pub(crate) fn mat_vec(weights: &[i8], rows: usize, cols: usize, x: &[i8], dots: &mut [i32]) {
    for (xb, db) in x.chunks_exact(cols).zip(dots.chunks_exact_mut(rows)) {
        for (d, w) in db.iter_mut().zip(weights.chunks_exact(cols)) {
            *d = w
                .iter()
                .zip(xb)
                .fold(0i32, |acc, (&w, &x)| acc.wrapping_add(w as i32 * x as i32));
        }
    }
}
