//! The reference scans: every element compared in order.

use crate::elem::QuantElem;

/// Calls `f(i, x)` for every element `x = row[i]` with `x >= bound`, in
/// index order.
#[inline(always)]
pub(crate) fn scan_at_least<T: QuantElem>(row: &[T], bound: i32, mut f: impl FnMut(usize, T)) {
    for (i, &x) in row.iter().enumerate() {
        if x.to_i32() >= bound {
            f(i, x);
        }
    }
}

/// Calls `f(i, x)` for every `x = row[i]` with `x >= bound` (so never for
/// NaN), in index order.
#[inline(always)]
pub(crate) fn scan_at_least_f32(row: &[f32], bound: f32, mut f: impl FnMut(usize, f32)) {
    for (i, &x) in row.iter().enumerate() {
        if x >= bound {
            f(i, x);
        }
    }
}
