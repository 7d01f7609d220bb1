//! The thresholded softmax's per-`d` model of an element's output, and the
//! per-row bound on `d = max - x` beyond which no element passes.
//!
//! For a row of sum `s`, `pass(d)` says that the output at the suffix
//! maximum `W(d) = max(w(d..))` of the method's exps reaches the code bound.
//! The output does not decrease with the exp, so `pass` holds on a prefix
//! `0..=D` of the `d`s, and `D` (clamped to the row's `d_limit`) is the
//! bound the scan needs. Two ways to find `D`:
//!
//! ```text
//! sum bounds (new()): B[d] = largest s with pass(d) for a row of sum s   (0: none)
//! per row:            g = largest d with B[d] >= s      (8 branchless bisection steps)
//!                     D = g if pass(g) and not pass(g + 1)  (two outputs evaluated)
//!                     else the search on the row's outputs below
//! ```
//! A larger sum gives a smaller reciprocal and smaller outputs (for the
//! methods' requantizations), so `B` does not increase with `d` and the
//! guess is `D`; but the check makes the answer exact whether or not that
//! holds: `pass(g) && !pass(g + 1)` with `pass` a prefix is `D` itself.
//! The fallback (taken by none of the rows `model_tests.rs` tries at
//! every sum bound and at random sums, and by `f32` rows, whose sums are not
//! integers) inverts the requantization to estimate the
//! smallest passing exp, settles it by evaluating outputs, and bisects the
//! suffix maxima.

use crate::elem::QuantElem;
use crate::error::{Error, Result};
use crate::f32::{exp_kernel, Lane};
use crate::fixedpoint::Q0_31;
use crate::ops::dequant_f32::round_half_away;
use crate::ops::softmax_rows::{SoftmaxExact, SoftmaxF32, SoftmaxLut, SoftmaxParams};
use crate::ops::Method;
use crate::quant::QuantParams;

/// What an element's output is made of, per method, for every `d`.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug)]
pub(super) enum Model {
    /// [`Method::FixedPoint`]: the exact softmax kernel's tables (the
    /// reference's exps `e(d)`, Q0.31, in `exact.exp`, and the byte planes
    /// of its sum terms for the NEON maximum and sum pass), and the sum
    /// terms (Q12.19) as integers for rows too short for that pass.
    Fixed {
        p: SoftmaxParams,
        exact: SoftmaxExact,
        term: [u32; 256],
        suffix_max: [i32; 256],
        sum_bound: [u64; 256],
    },
    /// [`Method::Lut`]: TFLite's table `t(d)` (units of 2^-16).
    #[cfg_attr(not(feature = "std"), allow(dead_code))]
    Lut {
        lut: SoftmaxLut,
        suffix_max: [u16; 256],
        sum_bound: [u64; 256],
    },
    /// [`Method::DequantF32`]: `exp(-d * c)` as the kernel computes it.
    F32 {
        k: SoftmaxF32,
        exp: [f32; 256],
        suffix_max: [f32; 256],
    },
}

/// A row's reciprocal of its sum, per method.
#[derive(Clone, Copy, Debug)]
pub(super) enum RowScale {
    /// Q0.31 scale and output exponent (`SoftmaxParams::reciprocal`), and
    /// the row's sum of terms (Q12.19) they came from.
    Fixed(i32, u32, u64),
    /// Q0.31 multiplier and shift (`SoftmaxLut::row_multiplier`), and the
    /// row's sum of `t` (units of 2^-16) they came from.
    Lut(i32, i32, u64),
    /// `(1 / output_scale) / sum`.
    F32(f32),
}

/// Suffix maxima of `w` (`s[d] = max(w[d..])`).
fn suffix_max<W: Copy + PartialOrd>(w: &[W; 256]) -> [W; 256] {
    let mut s = *w;
    for d in (0..255).rev() {
        if s[d + 1] > s[d] {
            s[d] = s[d + 1];
        }
    }
    s
}

impl Model {
    /// The output code of `T` at `d` in a row of reciprocal `scale`.
    #[inline(always)]
    pub(super) fn out<T: QuantElem>(&self, scale: RowScale, d: usize) -> i32 {
        let q = match (self, scale) {
            (Model::Fixed { p, exact, .. }, RowScale::Fixed(r, n, _)) => {
                p.output(Q0_31::from_raw(exact.exp[d]), r, n)
            }
            (Model::Lut { lut, .. }, RowScale::Lut(m, shift, _)) => {
                lut.output(lut.exp[d], m, shift)
            }
            (Model::F32 { k, exp, .. }, RowScale::F32(r)) => {
                round_half_away(exp[d] * r).saturating_add(k.output_zero_point)
            }
            _ => unreachable_scale(),
        };
        T::saturate(q).to_i32()
    }
}

impl Model {
    /// The per-`d` tables of `method` (validated as `Softmax::new` does
    /// it), with the sum bounds for the output code bound `c`.
    pub(super) fn new<T: QuantElem>(
        op: &'static str,
        input: QuantParams,
        beta: f32,
        output: QuantParams,
        method: Method,
        c: i32,
    ) -> Result<Self> {
        let passes = |q: i32| T::saturate(q).to_i32() >= c;
        Ok(match method {
            Method::FixedPoint => {
                let p = SoftmaxParams::new::<T>(input, beta, output)?;
                // The reference's exps, by its own code (softmax_rows/exact.rs).
                let exact = SoftmaxExact::new(&p);
                let term = exact.exp.map(|e| p.sum_term(Q0_31::from_raw(e)) as u32);
                let suffix_max = suffix_max(&exact.exp);
                // Every row's sum holds its maximum's term; the reference
                // sums in i64.
                let sum_bound = sum_bounds(&suffix_max, term[0] as u64, i64::MAX as u64, |e, s| {
                    let (r, n) = p.reciprocal::<i32>(s as i64);
                    passes(p.output(Q0_31::from_raw(e), r, n))
                });
                Model::Fixed {
                    p,
                    exact,
                    term,
                    suffix_max,
                    sum_bound,
                }
            }
            #[cfg(feature = "std")]
            Method::Lut => {
                let lut = SoftmaxLut::new::<T>(input.scale, beta, output);
                let suffix_max = suffix_max(&lut.exp);
                // t[0] = 65535 is in every row's sum.
                let sum_bound = sum_bounds(&suffix_max, 65535, u64::MAX, |t, s| {
                    let (m, shift) = lut.row_multiplier(s);
                    passes(lut.output(t, m, shift))
                });
                Model::Lut {
                    lut,
                    suffix_max,
                    sum_bound,
                }
            }
            Method::DequantF32 => {
                let k = SoftmaxF32::new(input, beta, output);
                let mut exp = [0f32; 256];
                for (d, e) in exp.iter_mut().enumerate() {
                    // As exp_block: (q - max) as f32, times c, exp_kernel.
                    *e = exp_kernel((-(d as i32) as f32).mul(k.input_multiplier));
                }
                let suffix_max = suffix_max(&exp);
                Model::F32 { k, exp, suffix_max }
            }
            _ => {
                return Err(Error::Unsupported {
                    op,
                    dtype: T::NAME,
                    reason: "no thresholded kernel for this method",
                })
            }
        })
    }

    /// The largest `d <= d_limit` for which some `d' >= d` passes (an
    /// output code of at least `c`), or `None` if not even `d = 0` passes:
    /// from the sum bounds when their guess checks out, else searched.
    #[inline(always)]
    pub(super) fn d_max<T: QuantElem>(
        &self,
        scale: RowScale,
        c: i32,
        d_limit: usize,
    ) -> Option<usize> {
        let settled = match (self, scale) {
            (
                Model::Fixed {
                    p,
                    suffix_max,
                    sum_bound,
                    ..
                },
                RowScale::Fixed(r, n, sum),
            ) => checked_guess(sum_bound, sum, |d| {
                T::saturate(p.output(Q0_31::from_raw(suffix_max[d]), r, n)).to_i32() >= c
            }),
            (
                Model::Lut {
                    lut,
                    suffix_max,
                    sum_bound,
                },
                RowScale::Lut(m, shift, sum),
            ) => checked_guess(sum_bound, sum, |d| {
                T::saturate(lut.output(suffix_max[d], m, shift)).to_i32() >= c
            }),
            _ => None,
        };
        match settled {
            Some(d) => d.map(|d| d.min(d_limit)),
            None => self.d_max_searched::<T>(scale, c, d_limit),
        }
    }
}

impl Model {
    /// [`Method::Lut`]: `D` from the sum bounds for a row of `scale`, with
    /// `pass(t)` saying whether the row's output of the table entry `t`
    /// passes (`Some(None)`: no `d` does; `None`: the guess did not check
    /// out, or not a `Lut` model, and [`d_max`](Self::d_max) must search).
    /// Not clamped to the row's `d_limit`.
    #[cfg_attr(
        not(all(target_arch = "aarch64", target_feature = "neon")),
        allow(dead_code)
    )]
    #[inline(always)]
    pub(super) fn lut_bound(
        &self,
        scale: RowScale,
        pass: impl Fn(u16) -> bool,
    ) -> Option<Option<usize>> {
        match (self, scale) {
            (
                Model::Lut {
                    suffix_max,
                    sum_bound,
                    ..
                },
                RowScale::Lut(_, _, sum),
            ) => checked_guess(sum_bound, sum, |d| pass(suffix_max[d])),
            _ => None,
        }
    }
}

/// [`Method::Lut`]'s output `lut.output(t, m, -e)` (before the clamp to
/// the element type) for a row shift `-e` below 0: `t * m` rounded to
/// Q0.31 (`t < 2^16` and `m < 2^31` cannot saturate), then rounded right
/// by `e` (at most 62; from 17 on every `t` gives 0). Checked against
/// `SoftmaxLut::output` for every `t` by `model_tests.rs`.
#[cfg_attr(
    not(all(target_arch = "aarch64", target_feature = "neon")),
    allow(dead_code)
)]
#[inline(always)]
pub(super) fn lut_value(t: u16, m: i32, e: u32, zero_point: i32) -> i32 {
    let high = (t as i64 * m as i64 + (1 << 30)) >> 31;
    ((high + (1i64 << (e - 1))) >> e) as i32 + zero_point
}

/// For every `d`, the largest row sum in `lo..=hi` with `passes(s[d], sum)`
/// (by bisection, which takes `passes` to be false from some sum on), or 0
/// when `lo` fails already. Equal suffix maxima share the search.
fn sum_bounds<W: Copy + PartialEq>(
    s: &[W; 256],
    lo: u64,
    hi: u64,
    passes: impl Fn(W, u64) -> bool,
) -> [u64; 256] {
    let mut bound = [0u64; 256];
    for d in 0..256 {
        if d > 0 && s[d] == s[d - 1] {
            bound[d] = bound[d - 1];
            continue;
        }
        let w = s[d];
        bound[d] = if !passes(w, lo) {
            0
        } else if passes(w, hi) {
            hi
        } else {
            // a passes, z fails.
            let (mut a, mut z) = (lo, hi);
            while z - a > 1 {
                let mid = a + (z - a) / 2;
                if passes(w, mid) {
                    a = mid;
                } else {
                    z = mid;
                }
            }
            a
        };
    }
    bound
}

/// `D` from the sum bounds: `Some(Some(D))`, `Some(None)` when not even
/// `d = 0` passes, or `None` when the guess fails its check (then `pass`
/// is not what the bounds say for this sum, and the caller searches).
/// `pass` must hold on a prefix of `0..=255`.
#[inline(always)]
pub(super) fn checked_guess(
    bound: &[u64; 256],
    sum: u64,
    pass: impl Fn(usize) -> bool,
) -> Option<Option<usize>> {
    if bound[0] < sum {
        return (!pass(0)).then_some(None);
    }
    // bound[g] >= sum throughout; the steps add up to 255.
    let mut g = 0;
    for step in [128, 64, 32, 16, 8, 4, 2, 1] {
        if bound[g + step] >= sum {
            g += step;
        }
    }
    (pass(g) && (g == 255 || !pass(g + 1))).then_some(Some(g))
}

impl Model {
    /// [`d_max`](Self::d_max) by a search on the row's own outputs, for
    /// rows whose sum the sum bounds did not settle (and `f32` rows).
    ///
    /// The output is non-decreasing in the exp `w` for a fixed row, so the
    /// passing exps are those from the smallest passing one, `w_c`; it is
    /// estimated by inverting the requantization and settled exactly by
    /// evaluating the output at the estimate and below it (usually two
    /// evaluations). Then `d` passes-or-beyond iff `suffix_max[d] >= w_c`,
    /// found by bisecting the suffix maxima (which do not increase).
    #[inline(never)]
    fn d_max_searched<T: QuantElem>(
        &self,
        scale: RowScale,
        c: i32,
        d_limit: usize,
    ) -> Option<usize> {
        match (self, scale) {
            (Model::Fixed { p, suffix_max, .. }, RowScale::Fixed(r, n, _)) => {
                let out = |e: i32| T::saturate(p.output(Q0_31::from_raw(e), r, n)).to_i32();
                // out(e) ~ e r 2^-(31 + n) + zp: e >= (k - 1/2) 2^(31 + n) / r.
                let k = (c - p.output_zero_point) as i128;
                let estimate = if k <= 0 || n > 40 {
                    0
                } else {
                    (((2 * k - 1) << (30 + n)) / r.max(1) as i128).clamp(0, i32::MAX as i128) as i32
                };
                let w_c = settle(estimate as u64, i32::MAX as u64, |e| out(e as i32) >= c)? as i32;
                last_at_least(suffix_max, w_c, d_limit)
            }
            (
                Model::Lut {
                    lut, suffix_max, ..
                },
                RowScale::Lut(m, shift, _),
            ) => {
                let out = |t: u16| T::saturate(lut.output(t, m, shift)).to_i32();
                // out(t) ~ t m 2^(shift - 31) + zp: t >= (k - 1/2) 2^(31 - shift) / m.
                // In f64 (the method computes its row multiplier in f32
                // anyway): an i128 division would cost more than the search.
                let k = c - lut.output_zero_point;
                let estimate = if k <= 0 {
                    0
                } else {
                    let e = (2 * k - 1) as f64 * pow2(30 - shift) / m.max(1) as f64;
                    e.clamp(0.0, 65535.0) as u16
                };
                let w_c = settle(estimate as u64, 65535, |t| out(t as u16) >= c)? as u16;
                last_at_least(suffix_max, w_c, d_limit)
            }
            (Model::F32 { k, suffix_max, .. }, RowScale::F32(r)) => {
                let out = |e: f32| {
                    T::saturate(round_half_away(e * r).saturating_add(k.output_zero_point)).to_i32()
                };
                // out(e) ~ e r + zp: e >= (c - zp - 1/2) / r (exps are >= 0).
                let estimate = ((c - k.output_zero_point) as f32 - 0.5) / r;
                let estimate = if estimate.is_finite() {
                    estimate.max(0.0)
                } else {
                    0.0
                };
                // Non-negative floats order as their bits.
                let rank = |w: u64| f32::from_bits(w as u32);
                let max = f32::MAX.to_bits() as u64;
                let w_c = rank(settle(estimate.to_bits() as u64, max, |w| {
                    out(rank(w)) >= c
                })?);
                last_at_least(suffix_max, w_c, d_limit)
            }
            _ => None,
        }
    }
}

/// `2^e` for `e` in `-1022..=1023` (exact, from the exponent bits).
#[inline(always)]
fn pow2(e: i32) -> f64 {
    f64::from_bits(((e.clamp(-1022, 1023) + 1023) as u64) << 52)
}

/// The smallest rank `w` in `0..=max` with `passes(w)` (monotone: false,
/// then true), or `None`: from an estimate, doubling steps down or up until
/// the answer is bracketed, then bisection (two evaluations when the
/// estimate is right).
#[inline(always)]
fn settle(estimate: u64, max: u64, passes: impl Fn(u64) -> bool) -> Option<u64> {
    let e = estimate.min(max);
    // lo fails (or is "below 0"), hi passes.
    let (mut lo, mut hi);
    let mut step = 1;
    if passes(e) {
        hi = e;
        loop {
            if hi == 0 {
                return Some(0);
            }
            let probe = hi.saturating_sub(step);
            if passes(probe) {
                hi = probe;
                step *= 2;
            } else {
                lo = probe;
                break;
            }
        }
    } else {
        lo = e;
        loop {
            if lo == max {
                return None;
            }
            let probe = lo.saturating_add(step).min(max);
            if passes(probe) {
                hi = probe;
                break;
            }
            lo = probe;
            step *= 2;
        }
    }
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if passes(mid) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    Some(hi)
}

/// The largest `d <= d_limit` with `s[d] >= w` (`s` non-increasing), or
/// `None` if `s[0] < w`.
#[inline(always)]
fn last_at_least<W: Copy + PartialOrd>(s: &[W; 256], w: W, d_limit: usize) -> Option<usize> {
    if s[0].partial_cmp(&w).is_none_or(|o| o.is_lt()) {
        return None;
    }
    // s[lo] >= w; hi fails or is past the limit.
    let (mut lo, mut hi) = (0usize, d_limit.min(255) + 1);
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if s[mid] >= w {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    Some(lo)
}

/// A row scale of another method than the model's: `rows` makes none.
#[cold]
fn unreachable_scale() -> i32 {
    debug_assert!(false, "row scale of another method");
    i32::MIN
}
