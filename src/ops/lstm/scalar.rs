//! The gate matrix products, scalar: the reference the NEON loops equal
//! (the packed mat-vec of `ops/mat_vec/`).

use super::params::MatVec;
pub(crate) use crate::ops::mat_vec::scalar::mat_vec_packed;

/// The products of `m` with each row of `x` (`m.cols` bytes a row) into
/// `dots` (`m.rows` a row).
pub(crate) fn mat_vec(m: &MatVec, x: &[i8], dots: &mut [i32]) {
    mat_vec_packed(&m.weights, m.rows, m.cols, m.stride, x, dots)
}
