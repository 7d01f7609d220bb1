//! The per-row kernels of the losses, written once over the `f32` lanes
//! (`f32` itself with 16 per block on the scalar backend, `float32x4_t` with
//! four vectors per block on NEON), for rows that are contiguous (`[N, C]`
//! logits, the class axis last).
//!
//! Every reduction runs in one fixed order on both backends, so that they
//! agree bit for bit: the whole 16-element blocks into four `f64`
//! accumulators (block position `p` into accumulator `p % 4`, as the `f32`
//! softmax does), those four summed as `(a0 + a2) + (a1 + a3)`, then the
//! remaining elements (fewer than 16) one at a time, in `f64`, by the same
//! lane code instantiated with `f32`.

use crate::f32::{exp_kernel, expm1_lanes, tree, Lane, BLOCK};

/// Walks the whole blocks of `len` elements at `p` (calling `f(k, lanes)` for
/// each of the `N` lane groups of a block) and returns where the tail starts.
///
/// # Safety
/// `p` must be readable for `len` `f32`s.
#[inline(always)]
unsafe fn whole_blocks<L: Lane, const N: usize>(
    p: *const f32,
    len: usize,
    mut f: impl FnMut(usize, usize, L),
) -> usize {
    debug_assert_eq!(N * L::WIDTH, BLOCK);
    let whole = len - len % BLOCK;
    let mut i = 0;
    while i < whole {
        for k in 0..N {
            // SAFETY: `i + BLOCK <= whole <= len` and `k * WIDTH + WIDTH <= BLOCK`.
            f(i, k, unsafe { L::load(p.add(i + k * L::WIDTH)) });
        }
        i += BLOCK;
    }
    whole
}

/// `e^(x - max)`, and `x - max` itself (the negated gap).
#[inline(always)]
fn exp_term<L: Lane>(x: L, max: L) -> (L, L) {
    let d = x.sub(max);
    (exp_kernel(d), d)
}

/// Adds the `N = 4M` lane groups of one block into the `M` wide
/// accumulators: group `m + iM` (`i` in 0..4) into accumulator `m`, summed
/// first in `f32` as `(g_m + g_{m+M}) + (g_{m+2M} + g_{m+3M})` and widened
/// once (four terms of at most 1 lose at most two `f32` roundings, and the
/// `f64` accumulation then keeps the row's error from growing with its
/// length). The same order on both backends: element `p` of a block is in
/// accumulator `p % 4` with elements `p + 4`, `p + 8`, `p + 12`.
#[inline(always)]
fn add_block<L: Lane, const N: usize, const M: usize>(acc: &mut [L::Wide; M], g: &[L; N]) {
    debug_assert_eq!(N, 4 * M);
    for m in 0..M {
        let partial = g[m].add(g[m + M]).add(g[m + 2 * M].add(g[m + 3 * M]));
        acc[m] = L::wide_add(acc[m], partial.widen());
    }
}

/// The row's `sum e^(x - max)` and, if `GAPS`, `sum (max - x)`, both
/// accumulated in `f64` from `f32` partial sums of four (see [`add_block`]).
/// `x - max` is rounded to `f32` before the `exp` (as in the `f32` softmax).
#[inline(always)]
pub(crate) fn sums<L: Lane, const N: usize, const M: usize, const GAPS: bool>(
    x: &[f32],
    max: f32,
) -> (f64, f64) {
    let mv = L::splat(max);
    let mut s = [L::wide_zero(); M];
    let mut g = [L::wide_zero(); M];
    let mut e = [L::splat(0.0); N];
    let mut d = [L::splat(0.0); N];
    // SAFETY: `x` is readable for its length.
    let whole = unsafe {
        whole_blocks::<L, N>(
            x.as_ptr(),
            x.len(),
            #[inline(always)]
            |_, k, v| {
                (e[k], d[k]) = exp_term(v, mv);
                if k == N - 1 {
                    add_block::<L, N, M>(&mut s, &e);
                    if GAPS {
                        add_block::<L, N, M>(&mut g, &d);
                    }
                }
            },
        )
    };
    let mut sum = L::wide_reduce_add(tree(s, L::wide_add));
    let mut gaps = -L::wide_reduce_add(tree(g, L::wide_add));
    for &v in &x[whole..] {
        let (e, d) = exp_term(v, max);
        sum += e as f64;
        if GAPS {
            gaps -= d as f64;
        }
    }
    (sum, gaps)
}

/// `sum w_c (max - x_c)` in `f64` (each product exact there).
#[inline(always)]
pub(crate) fn weighted_gaps<L: Lane, const N: usize, const M: usize>(
    x: &[f32],
    w: &[f32],
    max: f32,
) -> f64 {
    debug_assert_eq!(x.len(), w.len());
    let mv = L::splat(max);
    let wp = w.as_ptr();
    let mut g = [L::wide_zero(); M];
    // SAFETY: `x` is readable for its length, `w` has the same length.
    let whole = unsafe {
        whole_blocks::<L, N>(
            x.as_ptr(),
            x.len(),
            #[inline(always)]
            |i, k, v| {
                // SAFETY: the same offset into `w`, which is as long as `x`.
                let wv = L::load(wp.add(i + k * L::WIDTH));
                let d = v.sub(mv);
                g[k % M] = L::wide_add(g[k % M], L::wide_mul(d.widen(), wv.widen()));
            },
        )
    };
    let mut gaps = -L::wide_reduce_add(tree(g, L::wide_add));
    for (&v, &wc) in x[whole..].iter().zip(&w[whole..]) {
        gaps -= (v - max) as f64 * wc as f64;
    }
    gaps
}

/// `e^(x - max)` with the rounding error of `x - max` put back: `x - max =
/// hi + lo` exactly (TwoSum), the term `e^hi (1 + lo)` (one `fma`). Zero
/// where `x` is not below `max`, or `x - max` overflows to `-inf`.
#[inline(always)]
fn precise_term<L: Lane>(x: L, max: L, neg_max: L) -> L {
    let hi = x.sub(max);
    let bb = hi.sub(x);
    let lo = x.sub(hi.sub(bb)).add(neg_max.sub(bb));
    let e = exp_kernel(hi);
    let t = e.fma(lo, e);
    L::select(x.lt(max), t, L::splat(0.0)).zero_where(hi.lt(L::splat(-f32::MAX)))
}

/// `sum e^(x - max)` over the elements below `max`, each term correct to
/// about one `f32` rounding of itself (see [`precise_term`]), in `f64`:
/// the row's sum less its maximal term(s), for the rows whose loss is
/// `ln(1 + rest)` with a small `rest`.
#[inline(always)]
pub(crate) fn rest_below_max<L: Lane, const N: usize, const M: usize>(x: &[f32], max: f32) -> f64 {
    let (mv, nm) = (L::splat(max), L::splat(-max));
    let mut s = [L::wide_zero(); M];
    // SAFETY: `x` is readable for its length.
    let whole = unsafe {
        whole_blocks::<L, N>(
            x.as_ptr(),
            x.len(),
            #[inline(always)]
            |_, k, v| {
                s[k % M] = L::wide_add(s[k % M], precise_term(v, mv, nm).widen());
            },
        )
    };
    let mut rest = L::wide_reduce_add(tree(s, L::wide_add));
    for &v in &x[whole..] {
        rest += precise_term(v, max, -max) as f64;
    }
    rest
}

/// The same [`precise_term`] sum over a strided column (element `c` at
/// `x[c * stride]`), one element at a time in `f64`.
pub(crate) fn rest_below_max_strided(x: &[f32], stride: usize, classes: usize, max: f32) -> f64 {
    (0..classes)
        .map(|c| precise_term(x[c * stride], max, -max) as f64)
        .sum()
}

/// What the gradient of one row is made of: `grad_c = p_c a + b_c`, with
/// `p_c = e^(x_c - max) / sum` and `b_c = b` (or `b w_c` with class
/// weights), computed as `e^(x_c - max) scale + b_c` with `scale = a / sum`
/// rounded once (one multiply per element fewer than forming `p_c`).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct GradRow {
    pub max: f32,
    pub scale: f32,
    pub b: f32,
}

/// `e^(x - max) scale + b` for one lane group.
#[inline(always)]
fn grad_term<L: Lane>(x: L, max: L, scale: L, b: L) -> L {
    exp_kernel(x.sub(max)).fma(scale, b)
}

/// Writes `grad_c = p_c a + b_c` over a contiguous row (`weights`: `b_c = b
/// w_c`, the product rounded once).
#[inline(always)]
pub(crate) fn grad_row<L: Lane>(
    x: &[f32],
    weights: Option<&[f32]>,
    row: GradRow,
    grad: &mut [f32],
) {
    debug_assert_eq!(x.len(), grad.len());
    let (mv, scale, b) = (L::splat(row.max), L::splat(row.scale), L::splat(row.b));
    let (xp, gp) = (x.as_ptr(), grad.as_mut_ptr());
    // Two vectors per step on NEON, not a block's four: each output is its
    // own, so the grouping changes no bit, and the exp's dozen constants
    // plus two vectors' temporaries fit the registers (four spilled and
    // copied: `cross_entropy_bwd f32` at 1x32768, 6.04 -> 5.67 instructions
    // per element). The scalar lanes keep a block per step.
    let groups = if L::WIDTH == 1 { BLOCK } else { 2 };
    let step = groups * L::WIDTH;
    let whole = x.len() - x.len() % step;
    let mut i = 0;
    while i < whole {
        for k in 0..groups {
            let o = i + k * L::WIDTH;
            // SAFETY: `o + WIDTH <= whole <= len` for `x` and `grad` (the same
            // length, distinct borrows), and for `weights`, when given
            // (checked by the caller).
            unsafe {
                let v = L::load(xp.add(o));
                let bw = match weights {
                    None => b,
                    Some(w) => L::load(w.as_ptr().add(o)).mul(b),
                };
                grad_term(v, mv, scale, bw).store(gp.add(o));
            }
        }
        i += step;
    }
    for c in whole..x.len() {
        let bc = weights.map_or(row.b, |w| w[c] * row.b);
        grad[c] = grad_term(x[c], row.max, row.scale, bc);
    }
}

/// The gradient at the target class, where `p - 1` is formed without
/// cancellation: `a_t (p - 1) + p a_s + b_t`, `p - 1 = expm1(x - max -
/// ln_sum)` (exact to an ulp of itself, also when `p` is within an ulp of 1).
/// `a = a_t + a_s` is the coefficient of `p` in [`GradRow`].
pub(crate) fn grad_at_target(
    x: f32,
    max: f32,
    ln_sum: f64,
    inv_sum: f32,
    a_t: f32,
    a_s: f32,
    b: f32,
) -> f32 {
    let z = (((x - max) as f64 - ln_sum) as f32).max(-88.0);
    let p = exp_kernel(x - max) * inv_sum;
    (a_t as f64 * expm1_lanes(z) as f64 + a_s as f64 * p as f64 + b as f64) as f32
}
