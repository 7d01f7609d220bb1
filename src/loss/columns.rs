//! The kernels for logits `[N, C, d1, ...]` with the class axis second,
//! read in place: for one sample, a slab of `C` rows of `inner = d1 * ...`
//! contiguous positions, each position a column over the classes. The lanes
//! run across neighbouring columns (contiguous in memory), the loops over the
//! classes, so no transpose is needed and every column's sums are formed in
//! the same order (class by class, in `f64`) whatever the backend: the
//! scalar backend (one column per lane) and NEON (four) agree bit for bit.

use super::rows::GradRow;
use crate::f32::{exp_kernel, Lane};

/// Lanes of the widest backend: the per-column results of one group.
pub(crate) const GROUP: usize = 4;

/// What a loss needs of one column.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct ColumnSums {
    /// The column's maximum.
    pub max: f32,
    /// `sum e^(x - max)`.
    pub sum: f64,
    /// `sum w_c (max - x_c)` (weights 1 without class weights), when asked.
    pub gaps: f64,
}

/// Columns `j .. j + L::WIDTH` of `slab` (`classes` rows of `inner`): their
/// [`ColumnSums`] into `out[..L::WIDTH]`.
///
/// The caller guarantees `j + L::WIDTH <= inner` and `slab.len() ==
/// classes * inner` (checked here in debug builds).
#[inline(always)]
pub(crate) fn column_sums<L: Lane>(
    slab: &[f32],
    inner: usize,
    j: usize,
    weights: Option<&[f32]>,
    gaps: bool,
    out: &mut [ColumnSums; GROUP],
) {
    let classes = slab.len() / inner;
    debug_assert!(j + L::WIDTH <= inner && slab.len() == classes * inner);
    debug_assert!(weights.is_none_or(|w| w.len() == classes));
    let p = slab[j..].as_ptr();
    let load = |c: usize| {
        // SAFETY: `c * inner + j + WIDTH <= classes * inner`, the slab's length.
        unsafe { L::load(p.add(c * inner)) }
    };
    let mut m = L::splat(f32::NEG_INFINITY);
    for c in 0..classes {
        m = m.max(load(c));
    }
    let (mut s, mut g) = (L::wide_zero(), L::wide_zero());
    for c in 0..classes {
        let d = load(c).sub(m);
        s = L::wide_add(s, exp_kernel(d).widen());
        if gaps {
            let dw = d.widen();
            g = L::wide_add(
                g,
                match weights {
                    None => dw,
                    Some(w) => L::wide_mul(dw, L::splat(w[c]).widen()),
                },
            );
        }
    }
    let (mut max, mut sum, mut gap) = ([0f32; GROUP], [0f64; GROUP], [0f64; GROUP]);
    // SAFETY: WIDTH <= GROUP lanes into arrays of GROUP.
    unsafe {
        m.store(max.as_mut_ptr());
        L::wide_store(s, sum.as_mut_ptr());
        L::wide_store(g, gap.as_mut_ptr());
    }
    for l in 0..L::WIDTH {
        out[l] = ColumnSums {
            max: max[l],
            sum: sum[l],
            gaps: -gap[l],
        };
    }
}

/// Writes the gradient of columns `j .. j + L::WIDTH` of `slab` into the
/// same positions of `grad`: `e^(x - max) scale + b` per column's [`GradRow`] (`rows[l]`
/// for column `j + l`), `b` times `w_c` with class weights.
#[inline(always)]
pub(crate) fn column_grads<L: Lane>(
    slab: &[f32],
    inner: usize,
    j: usize,
    weights: Option<&[f32]>,
    rows: &[GradRow; GROUP],
    grad: &mut [f32],
) {
    let classes = slab.len() / inner;
    debug_assert!(j + L::WIDTH <= inner && slab.len() == classes * inner);
    debug_assert!(grad.len() == slab.len());
    let lanes = |f: fn(&GradRow) -> f32| {
        let v: [f32; GROUP] = core::array::from_fn(|l| f(&rows[l]));
        // SAFETY: WIDTH <= GROUP readable lanes.
        unsafe { L::load(v.as_ptr()) }
    };
    let (m, scale, b) = (lanes(|r| r.max), lanes(|r| r.scale), lanes(|r| r.b));
    let (xp, gp) = (slab[j..].as_ptr(), grad[j..].as_mut_ptr());
    for c in 0..classes {
        let bc = match weights {
            None => b,
            Some(w) => b.mul(L::splat(w[c])),
        };
        // SAFETY: `c * inner + j + WIDTH <= classes * inner`, both buffers' length.
        unsafe {
            let x = L::load(xp.add(c * inner));
            exp_kernel(x.sub(m)).fma(scale, bc).store(gp.add(c * inner));
        }
    }
}
