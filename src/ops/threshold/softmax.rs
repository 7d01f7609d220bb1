//! [`ThresholdedSoftmax`]: 8-bit softmax with a probability threshold and/or
//! top-k per row, emitting only the kept elements.
//!
//! Per row the maximum and the sum are those of [`Softmax::run`] for the
//! method (the same code: the reference's exp and sum terms for
//! [`Method::FixedPoint`], TFLite's exp table and the NEON kernel's own sum
//! pass for [`Method::Lut`], the shared `f32` sum of exps for
//! [`Method::DequantF32`]). An element's output is then a function of
//! `d = max - x` alone, `v(d) = out(w(d))` with `w` the method's exp
//! (prepared for every `d` in `new()`) and `out` non-decreasing for the
//! row's reciprocal. `w` itself is not assumed monotone: `new()` keeps its
//! suffix maxima `W(d) = max(w(d..))`, and `out(W(d)) < c` proves that no
//! `d' >= d` passes. Per row, the smallest passing exp `w_c` is estimated
//! by inverting the requantization and settled by evaluating the output
//! (two evaluations when the estimate is right); the largest `d` with
//! `W(d) >= w_c` bounds the input: elements below `max - d_max` are skipped
//! by the scan, the others get their exact output and the check.

use super::topk::keep;
use super::{check_index_range, check_threshold, code_bound, scan, RowHit, Sink};
use crate::backend::Backend;
use crate::checks::check_rows;
use crate::elem::{ElemKind, QuantElem};
use crate::error::{Error, Result};
use crate::f32::{exp_kernel, Lane, BLOCK};
use crate::fixedpoint::Q0_31;
use crate::ops::dequant_f32::{round_half_away, sum_of_exps, QuantLanes};
use crate::ops::softmax::f32::SoftmaxF32;
use crate::ops::softmax::lut::SoftmaxLut;
use crate::ops::softmax::params::SoftmaxParams;
use crate::ops::{Method, Softmax};
use crate::quant::QuantParams;

/// The op's name in errors.
const OP: &str = "thresholded softmax";

/// What an element's output is made of, per method, for every `d`.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug)]
enum Model {
    /// [`Method::FixedPoint`]: the reference's exps `e(d)` (Q0.31) and sum
    /// terms (Q12.19).
    Fixed {
        p: SoftmaxParams,
        exp: [i32; 256],
        term: [u32; 256],
        suffix_max: [i32; 256],
    },
    /// [`Method::Lut`]: TFLite's table `t(d)` (units of 2^-16).
    #[cfg_attr(not(feature = "std"), allow(dead_code))]
    Lut {
        lut: SoftmaxLut,
        suffix_max: [u16; 256],
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
enum RowScale {
    /// Q0.31 scale and output exponent (`SoftmaxParams::reciprocal`).
    Fixed(i32, u32),
    /// Q0.31 multiplier and shift (`SoftmaxLut::row_multiplier`).
    Lut(i32, i32),
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
    fn out<T: QuantElem>(&self, scale: RowScale, d: usize) -> i32 {
        let q = match (self, scale) {
            (Model::Fixed { p, exp, .. }, RowScale::Fixed(r, n)) => {
                p.output(Q0_31::from_raw(exp[d]), r, n)
            }
            (Model::Lut { lut, .. }, RowScale::Lut(m, shift)) => lut.output(lut.exp[d], m, shift),
            (Model::F32 { k, exp, .. }, RowScale::F32(r)) => {
                round_half_away(exp[d] * r).saturating_add(k.output_zero_point)
            }
            _ => unreachable_scale(),
        };
        T::saturate(q).to_i32()
    }
}

impl Model {
    /// The largest `d <= d_limit` for which some `d' >= d` passes (an
    /// output code of at least `c`), or `None` if not even `d = 0` passes.
    ///
    /// The output is non-decreasing in the exp `w` for a fixed row, so the
    /// passing exps are those from the smallest passing one, `w_c`; it is
    /// estimated by inverting the requantization and settled exactly by
    /// evaluating the output at the estimate and below it (usually two
    /// evaluations). Then `d` passes-or-beyond iff `suffix_max[d] >= w_c`,
    /// found by bisecting the suffix maxima (which do not increase).
    #[inline(always)]
    fn d_max<T: QuantElem>(&self, scale: RowScale, c: i32, d_limit: usize) -> Option<usize> {
        match (self, scale) {
            (Model::Fixed { p, suffix_max, .. }, RowScale::Fixed(r, n)) => {
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
            (Model::Lut { lut, suffix_max }, RowScale::Lut(m, shift)) => {
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

/// Quantized int8/uint8 softmax keeping, per row, the outputs at or above a
/// probability threshold and/or the `k` largest, as `(row, index, value)`
/// hits.
///
/// The hits are exactly those of [`Softmax::run`] (same method) followed by
/// the filter: an output `q` passes the threshold when `(q - zero_point) *
/// scale >= threshold`; top-k keeps the `k` largest outputs of a row, the
/// lower index first among equal ones, and with a threshold both must hold.
/// Hits come in row order, then index order. int16 is
/// [`Error::Unsupported`].
#[derive(Clone, Debug)]
pub struct ThresholdedSoftmax<T: QuantElem> {
    op: Softmax<T>,
    model: Model,
    threshold: Option<f32>,
    top_k: Option<usize>,
    /// The smallest kept output code (`T::MIN` without a threshold).
    code_bound: i32,
    backend: Backend,
}

impl<T: QuantElem> ThresholdedSoftmax<T> {
    /// Validates as [`Softmax::new`] does, and the threshold (a probability
    /// in `[0, 1]`, NaN refused), and prepares the per-`d` tables. Neither
    /// a threshold nor `top_k` keeps every element.
    pub fn new(
        input: QuantParams,
        beta: f32,
        output: QuantParams,
        method: Method,
        threshold: Option<f32>,
        top_k: Option<usize>,
    ) -> Result<Self> {
        let op = Softmax::<T>::new(input, beta, output, method)?;
        if T::KIND == ElemKind::I16 {
            return Err(Error::Unsupported {
                op: OP,
                dtype: T::NAME,
                reason: "the thresholded softmax is for int8 and uint8",
            });
        }
        let threshold = threshold.map(|t| check_threshold(OP, t)).transpose()?;
        let code_bound = threshold.map_or(T::MIN, |t| code_bound::<T>(output, t));
        let model = match method {
            Method::FixedPoint => {
                let p = SoftmaxParams::new::<T>(input, beta, output)?;
                let mut exp = [0i32; 256];
                let mut term = [0u32; 256];
                for d in 0..256 {
                    let diff = -(d as i32);
                    // The reference's condition and functions (softmax/scalar.rs).
                    if diff >= p.diff_min {
                        exp[d] = p.exp_of_diff(diff).raw();
                    }
                    term[d] = p.sum_term(Q0_31::from_raw(exp[d])) as u32;
                }
                let suffix_max = suffix_max(&exp);
                Model::Fixed {
                    p,
                    exp,
                    term,
                    suffix_max,
                }
            }
            #[cfg(feature = "std")]
            Method::Lut => {
                let lut = SoftmaxLut::new::<T>(input.scale, beta, output);
                let suffix_max = suffix_max(&lut.exp);
                Model::Lut { lut, suffix_max }
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
                    op: OP,
                    dtype: T::NAME,
                    reason: "no thresholded kernel for this method",
                })
            }
        };
        Ok(ThresholdedSoftmax {
            op,
            model,
            threshold,
            top_k,
            code_bound,
            backend: Backend::best(),
        })
    }

    /// The wrapped op (what `run` equals when followed by the filter).
    pub fn softmax(&self) -> &Softmax<T> {
        &self.op
    }

    /// The threshold `new()` was given.
    pub fn threshold(&self) -> Option<f32> {
        self.threshold
    }

    /// The `k` of top-k.
    pub fn top_k(&self) -> Option<usize> {
        self.top_k
    }

    /// The smallest output code kept (`T::MIN` without a threshold,
    /// `T::MAX + 1` when nothing can pass).
    pub fn code_bound(&self) -> i32 {
        self.code_bound
    }

    /// The backend [`run`](Self::run) uses.
    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// Writes the hits of every `row_len`-long row of `input` into `hits`
    /// and returns their number, with the best backend. Errors: `row_len`
    /// 0 or not dividing the length; a buffer too small
    /// ([`Error::Capacity`], with the number needed).
    pub fn run(&self, input: &[T], row_len: usize, hits: &mut [RowHit<T>]) -> Result<usize> {
        self.run_with(self.backend, input, row_len, hits)
    }

    /// [`run`](Self::run) on the given backend (an error if it is not
    /// available here). Every backend gives the same hits.
    pub fn run_with(
        &self,
        backend: Backend,
        input: &[T],
        row_len: usize,
        hits: &mut [RowHit<T>],
    ) -> Result<usize> {
        check_rows(OP, input.len(), input.len(), row_len)?;
        check_index_range(OP, input.len())?;
        if !backend.is_available() {
            return Err(crate::backend::unavailable(backend));
        }
        let mut sink = Sink::new(hits);
        let mut result = Ok(());
        self.rows(backend, input, row_len, |r, row, max, scale| {
            if result.is_ok() {
                result = self.row_hits(backend, r as u32, row, max, scale, &mut sink);
            }
        });
        result?;
        sink.finish(OP)
    }

    /// With the `alloc` feature: the hits as a vector (sized by a first
    /// pass that counts them).
    #[cfg(feature = "alloc")]
    pub fn run_to_vec(&self, input: &[T], row_len: usize) -> Result<alloc::vec::Vec<RowHit<T>>> {
        let needed = match self.run(input, row_len, &mut []) {
            Ok(n) => n,
            Err(Error::Capacity { needed, .. }) => needed,
            Err(e) => return Err(e),
        };
        let mut hits = alloc::vec![RowHit::default(); needed];
        let n = self.run(input, row_len, &mut hits)?;
        hits.truncate(n);
        Ok(hits)
    }

    /// `f(row index, row, max, reciprocal)` for every row, the maximum and
    /// the sum computed as `Softmax::run` computes them on `backend`.
    fn rows(
        &self,
        backend: Backend,
        input: &[T],
        row_len: usize,
        mut f: impl FnMut(usize, &[T], i32, RowScale),
    ) {
        #[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
        if backend == Backend::Neon {
            return self.rows_neon(input, row_len, f);
        }
        let _ = backend;
        for (r, row) in input.chunks_exact(row_len).enumerate() {
            let max = row.iter().fold(T::MIN, |m, x| m.max(x.to_i32()));
            let scale = match &self.model {
                Model::Fixed { p, term, .. } => {
                    let sum: i64 = row
                        .iter()
                        .map(|x| term[(max - x.to_i32()) as usize] as i64)
                        .sum();
                    let (r, n) = p.reciprocal::<i32>(sum);
                    RowScale::Fixed(r, n)
                }
                Model::Lut { lut, .. } => {
                    let sum: u64 = row
                        .iter()
                        .map(|x| lut.exp[(max - x.to_i32()) as usize] as u64)
                        .sum();
                    let (m, shift) = lut.row_multiplier(sum);
                    RowScale::Lut(m, shift)
                }
                Model::F32 { k, .. } => {
                    let max = <f32 as QuantLanes<T, BLOCK>>::row_max(row);
                    let sum = sum_of_exps::<f32, T, BLOCK>(row, max, k.input_multiplier, None);
                    RowScale::F32(k.inv_output_scale / sum)
                }
            };
            f(r, row, max, scale);
        }
    }

    /// `rows` on NEON: the kernels' own maximum and sum passes.
    #[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
    fn rows_neon(
        &self,
        input: &[T],
        row_len: usize,
        mut f: impl FnMut(usize, &[T], i32, RowScale),
    ) {
        use crate::elem::{view, Slices};
        use crate::ops::softmax::lut_neon::{row_max_byte, rows_max_sum};
        use core::arch::aarch64::float32x4_t;
        let signed = T::KIND == ElemKind::I8;
        let widen = |b: u8| if signed { b as i8 as i32 } else { b as i32 };
        let Some((bytes, _)) = view(input, &mut []).bytes() else {
            return;
        };
        let row_of = |r: usize| &input[r * row_len..(r + 1) * row_len];
        match &self.model {
            Model::Lut { lut, .. } => {
                let mut g = |r: usize, max: u8, sum: u64| {
                    let (m, shift) = lut.row_multiplier(sum);
                    f(r, row_of(r), widen(max), RowScale::Lut(m, shift))
                };
                if signed {
                    rows_max_sum::<true>(lut, bytes, row_len, &mut g)
                } else {
                    rows_max_sum::<false>(lut, bytes, row_len, &mut g)
                }
            }
            Model::Fixed { p, term, .. } => {
                for (r, row) in bytes.chunks_exact(row_len).enumerate() {
                    let max = if signed {
                        row_max_byte::<true>(row)
                    } else {
                        row_max_byte::<false>(row)
                    };
                    // The exact integer sum of the reference's terms (any
                    // order gives it).
                    let sum: i64 = row
                        .iter()
                        .map(|&x| term[max.wrapping_sub(x) as usize] as i64)
                        .sum();
                    let (rr, n) = p.reciprocal::<i32>(sum);
                    f(r, row_of(r), widen(max), RowScale::Fixed(rr, n));
                }
            }
            Model::F32 { k, .. } => {
                let c = <float32x4_t as Lane>::splat(k.input_multiplier);
                for (r, row) in input.chunks_exact(row_len).enumerate() {
                    let (max, sum) = match view(row, &mut []) {
                        Slices::I8(x, _) => {
                            let max = <float32x4_t as QuantLanes<i8, 4>>::row_max(x);
                            (max, sum_of_exps::<float32x4_t, i8, 4>(x, max, c, None))
                        }
                        Slices::U8(x, _) => {
                            let max = <float32x4_t as QuantLanes<u8, 4>>::row_max(x);
                            (max, sum_of_exps::<float32x4_t, u8, 4>(x, max, c, None))
                        }
                        Slices::I16(..) => return,
                    };
                    f(r, row, max, RowScale::F32(k.inv_output_scale / sum));
                }
            }
        }
    }

    /// The hits of one row.
    fn row_hits(
        &self,
        backend: Backend,
        r: u32,
        row: &[T],
        max: i32,
        scale: RowScale,
        sink: &mut Sink<RowHit<T>>,
    ) -> Result<()> {
        let c = self.code_bound;
        let model = &self.model;
        let d_limit = (max - T::MIN) as usize;
        if self.top_k == Some(0) {
            return Ok(());
        }
        let Some(lo) = model.d_max::<T>(scale, c, d_limit) else {
            return Ok(());
        };
        let bound = max - lo as i32;
        let value = |x: T| model.out::<T>(scale, (max - x.to_i32()) as usize);
        let hit = |i: usize, v: T| RowHit {
            row: r,
            index: i as u32,
            value: v,
        };
        if self.top_k.is_none() {
            // The common case without the indirection of `keep`.
            return scan(backend, row, bound, |i, x| {
                let v = value(x);
                if v >= c {
                    sink.push(hit(i, T::from_i32(v)));
                }
            });
        }
        let each = |f: &mut dyn FnMut(usize, T)| {
            // The backend was checked by `run_with`: the scan cannot fail.
            let _ = scan(backend, row, bound, |i, x| f(i, T::from_i32(value(x))));
        };
        keep(self.top_k, each, |v: T| v.to_i32() >= c, hit, sink);
        Ok(())
    }
}
