//! The row kernels, generic over the lanes (`N` lanes per 16-element block):
//! block walking through the crate's one tail helper, maxima, sums, and the
//! softmax, log-softmax and sigmoid-backward rows both backends instantiate.

use super::{exp_kernel, exp_wide, ln_f32, ln_to_f32, sigmoid_backward_lanes, Lane};
use crate::simd::tail::{self, map_blocks_raw};

/// Elements per block in every backend.
pub(crate) const BLOCK: usize = 16;

/// Calls `f` with a pointer to each 16-element block of `x`; the last
/// partial block is copied into a buffer padded with `pad` (the crate's one
/// tail helper).
#[inline(always)]
fn read_blocks(x: &[f32], pad: f32, mut f: impl FnMut(*const f32)) {
    tail::read_blocks::<BLOCK, f32>(
        x,
        pad,
        #[inline(always)]
        |p, _, _| f(p),
    )
}

/// Calls `f(s, d)` for each 16-element block of `src[..len]`/`dst[..len]`
/// (they may be the same buffer); the tail goes through stack buffers, input
/// padded with `pad`, and only `len` elements are written (the crate's one
/// tail helper).
///
/// # Safety
/// `src` must be valid for reading and `dst` for writing `len` elements;
/// `src` and `dst` are either equal or do not overlap.
#[inline(always)]
unsafe fn map_blocks(
    src: *const f32,
    dst: *mut f32,
    len: usize,
    pad: f32,
    f: impl FnMut(*const f32, *mut f32),
) {
    // SAFETY: forwarded from the caller.
    unsafe { map_blocks_raw::<BLOCK, f32>(src, dst, len, pad, f) }
}

/// Pairwise tree over `N` (a power of two) lanes: element `k` with `k + N/2`.
#[inline(always)]
pub(crate) fn tree<T: Copy, const N: usize>(mut v: [T; N], op: impl Fn(T, T) -> T) -> T {
    let mut n = N;
    while n > 1 {
        n /= 2;
        for k in 0..n {
            v[k] = op(v[k], v[k + n]);
        }
    }
    v[0]
}

/// Element-wise map over `N` lanes per 16-element block (`N * L::WIDTH == 16`).
///
/// # Safety
/// `src`/`dst` as for [`map_blocks`].
#[inline(always)]
pub(crate) unsafe fn map<L: Lane, const N: usize>(
    src: *const f32,
    dst: *mut f32,
    len: usize,
    f: impl Fn(L) -> L,
) {
    debug_assert_eq!(N * L::WIDTH, BLOCK);
    // SAFETY: forwarded from the caller; the closure gets whole blocks.
    unsafe {
        map_blocks(src, dst, len, 0.0, |s, d| {
            for k in 0..N {
                // SAFETY: the block has BLOCK = N * WIDTH elements.
                let (s, d) = (s.add(k * L::WIDTH), d.add(k * L::WIDTH));
                f(L::load(s)).store(d);
            }
        })
    }
}

/// `dx = y (1 - y) dy`, `N` lanes per block.
#[inline(always)]
pub(crate) fn sigmoid_backward_row<L: Lane, const N: usize>(y: &[f32], dy: &[f32], dx: &mut [f32]) {
    let len = dx.len();
    let dyp = dy.as_ptr();
    let mut off = 0usize;
    // The dy stream is walked alongside y with the same block layout.
    let whole = len - len % BLOCK;
    // SAFETY: y, dy, dx all have `len` elements (checked by the caller); whole
    // blocks stay below `whole <= len`, the tail goes through `map_blocks`'s
    // buffers, and `dy`'s tail is copied into a local buffer.
    unsafe {
        map_blocks(y.as_ptr(), dx.as_mut_ptr(), len, 0.0, |s, d| {
            let mut dbuf = [0.0f32; BLOCK];
            let dyb = if off < whole {
                dyp.add(off)
            } else {
                core::ptr::copy_nonoverlapping(dyp.add(off), dbuf.as_mut_ptr(), len - off);
                dbuf.as_ptr()
            };
            for k in 0..N {
                let o = k * L::WIDTH;
                sigmoid_backward_lanes(L::load(s.add(o)), L::load(dyb.add(o))).store(d.add(o));
            }
            off += BLOCK;
        })
    }
}

/// Sets `y` to the limit of softmax for a row whose maximum is `+inf`:
/// one-hot at a single infinity; NaN everywhere for two or more (the limit
/// depends on how they grow: the convention of ONNX's reference, PyTorch and
/// numpy, where `inf - inf` makes the row NaN).
fn one_hot(x: &[f32], y: &mut [f32]) {
    let k = x.iter().filter(|&&v| v == f32::INFINITY).count();
    for (o, &v) in y.iter_mut().zip(x) {
        *o = match (k, v == f32::INFINITY) {
            (1, true) => 1.0,
            (1, false) => 0.0,
            _ => f32::NAN,
        };
    }
}

/// Row maximum with `N` accumulators (`-inf` for an empty row).
#[inline(always)]
pub(crate) fn row_max<L: Lane, const N: usize>(x: &[f32]) -> f32 {
    let mut m = [L::splat(f32::NEG_INFINITY); N];
    // SAFETY: `x` is readable for its length.
    unsafe {
        read_blocks(x, f32::NEG_INFINITY, |p| {
            for (k, mk) in m.iter_mut().enumerate() {
                // SAFETY: the block has N * WIDTH elements.
                *mk = mk.max(L::load(p.add(k * L::WIDTH)));
            }
        })
    }
    tree(m, L::max).reduce_max()
}

/// `y = s * y` in place.
#[inline(always)]
fn scale_in_place<L: Lane, const N: usize>(y: &mut [f32], s: f32) {
    let sv = L::splat(s);
    let p = y.as_mut_ptr();
    // SAFETY: in place over `y`'s own length.
    unsafe { map::<L, N>(p, p, y.len(), |v| v.mul(sv)) }
}

/// `1 / sum` in `f32`: the `f64` division is correctly rounded, and rounding
/// it again to `f32` is within half an ulp plus `2^-29` ulp.
#[inline(always)]
fn reciprocal(sum: f64) -> f32 {
    (1.0 / sum) as f32
}

/// Two-pass softmax of one row: max; `e^(x - max)` stored and summed; scale.
///
/// The sum is kept in `M` wide (`f64`) accumulators, `N = 4M` lanes per
/// block, four `f64` lanes in all: the element at block position `p` is
/// added to lane `p % 4` in both backends (scalar: `M = 4` accumulators of
/// one lane, `N = 16`; NEON: `M = 1` pair of `float64x2_t`, lane `l` of each
/// of the `N = 4` vectors into lane `l`). In `f64` four accumulators are
/// plenty for accuracy, and they leave the NEON loop's registers to `exp`.
#[inline(always)]
pub(crate) fn softmax_two_pass_row<L: Lane, const N: usize, const M: usize>(
    x: &[f32],
    y: &mut [f32],
) {
    debug_assert_eq!(N, 4 * M);
    let mx = row_max::<L, N>(x);
    if mx == f32::INFINITY {
        return one_hot(x, y);
    }
    let mv = L::splat(mx);
    let mut s = [L::wide_zero(); M];
    // SAFETY: x and y have the same length (checked by the caller) and are
    // distinct borrows.
    unsafe {
        map_blocks(
            x.as_ptr(),
            y.as_mut_ptr(),
            x.len(),
            f32::NEG_INFINITY,
            |src, dst| {
                for k in 0..N {
                    let o = k * L::WIDTH;
                    // SAFETY: the blocks have N * WIDTH elements.
                    let e = exp_kernel(L::load(src.add(o)).sub(mv));
                    e.store(dst.add(o));
                    s[k % M] = L::wide_add(s[k % M], e.widen());
                }
            },
        )
    }
    let sum = L::wide_reduce_add(tree(s, L::wide_add));
    scale_in_place::<L, N>(y, reciprocal(sum));
}

/// Online softmax of one row: one pass keeping a running maximum and a sum
/// rescaled whenever the maximum grows, per lane (`M` state vectors, `N = 4M`
/// lanes per block; the sums in `f64`), then one pass `y = e^(x - max) / sum`.
#[inline(always)]
pub(crate) fn softmax_online_row<L: Lane, const N: usize, const M: usize>(
    x: &[f32],
    y: &mut [f32],
) {
    debug_assert_eq!(N, 4 * M);
    // Starting at -MAX (not -inf) keeps `m_old - m_new` free of `-inf - -inf`.
    let mut m = [L::splat(-f32::MAX); M];
    let mut s = [L::wide_zero(); M];
    // SAFETY: `x` is readable for its length.
    unsafe {
        read_blocks(x, f32::NEG_INFINITY, |p| {
            for j in 0..M {
                // SAFETY: the block has N * WIDTH elements; j + 3M < N.
                let v = [
                    L::load(p.add(j * L::WIDTH)),
                    L::load(p.add((j + M) * L::WIDTH)),
                    L::load(p.add((j + 2 * M) * L::WIDTH)),
                    L::load(p.add((j + 3 * M) * L::WIDTH)),
                ];
                let bm = v[0].max(v[1]).max(v[2].max(v[3]));
                let mn = m[j].max(bm);
                let e = [
                    exp_kernel(v[0].sub(mn)),
                    exp_kernel(v[1].sub(mn)),
                    exp_kernel(v[2].sub(mn)),
                    exp_kernel(v[3].sub(mn)),
                ];
                let es = L::wide_add(
                    L::wide_add(e[0].widen(), e[2].widen()),
                    L::wide_add(e[1].widen(), e[3].widen()),
                );
                let rescale = exp_wide(m[j].sub(mn));
                s[j] = L::wide_add(L::wide_mul(s[j], rescale), es);
                m[j] = mn;
            }
        })
    }
    let g = tree(m, L::max).reduce_max();
    if g == f32::INFINITY {
        return one_hot(x, y);
    }
    let gv = L::splat(g);
    let mut w = s;
    for j in 0..M {
        w[j] = L::wide_mul(s[j], exp_wide(m[j].sub(gv)));
    }
    let inv = L::splat(reciprocal(L::wide_reduce_add(tree(w, L::wide_add))));
    // SAFETY: x and y have the same length and are distinct borrows.
    unsafe {
        map::<L, N>(x.as_ptr(), y.as_mut_ptr(), x.len(), |v| {
            exp_kernel(v.sub(gv)).mul(inv)
        })
    }
}

/// Log-softmax of one row: max; sum of `e^(x - max)` (in `f64`, `M` wide
/// accumulators as in [`softmax_two_pass_row`]); `(x - max) - ln(sum)`.
#[inline(always)]
pub(crate) fn log_softmax_row<L: Lane, const N: usize, const M: usize>(x: &[f32], y: &mut [f32]) {
    debug_assert_eq!(N, 4 * M);
    let mx = row_max::<L, N>(x);
    if mx == f32::INFINITY {
        one_hot(x, y);
        for v in y.iter_mut() {
            *v = ln_f32(*v);
        }
        return;
    }
    let mv = L::splat(mx);
    let lse = L::splat(ln_to_f32(sum_of_exps_row::<L, N, M>(x, mx)));
    // SAFETY: x and y have the same length and are distinct borrows.
    unsafe { map::<L, N>(x.as_ptr(), y.as_mut_ptr(), x.len(), |v| v.sub(mv).sub(lse)) }
}

/// The sum of `e^(x - mx)` over a row as [`softmax_two_pass_row`] forms it
/// (the same blocks, lanes and `M` wide accumulators, so the same `f64`),
/// without storing the exps: for log-softmax, and for the thresholded
/// softmax, which computes outputs only where they are kept.
#[inline(always)]
pub(crate) fn sum_of_exps_row<L: Lane, const N: usize, const M: usize>(x: &[f32], mx: f32) -> f64 {
    debug_assert_eq!(N, 4 * M);
    let mv = L::splat(mx);
    let mut s = [L::wide_zero(); M];
    // SAFETY: `x` is readable for its length.
    unsafe {
        read_blocks(x, f32::NEG_INFINITY, |p| {
            for k in 0..N {
                // SAFETY: the block has N * WIDTH elements.
                let e = exp_kernel(L::load(p.add(k * L::WIDTH)).sub(mv));
                s[k % M] = L::wide_add(s[k % M], e.widen());
            }
        })
    }
    L::wide_reduce_add(tree(s, L::wide_add))
}

/// `1 / sum` as [`softmax_two_pass_row`] scales by it.
#[inline(always)]
pub(crate) fn softmax_reciprocal(sum: f64) -> f32 {
    reciprocal(sum)
}
