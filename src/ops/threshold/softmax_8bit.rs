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
//! `d' >= d` passes. Per row, the largest `d` that can pass bounds the
//! input (`model.rs`: looked up from the row's sum in bounds `new()`
//! prepared, checked with two outputs, else searched): elements below
//! `max - d_max` are skipped by the scan, the others get their exact output
//! and the check.

#[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
use super::model::lut_value;
use super::model::{Model, RowScale};
use super::topk::keep;
use super::{check_index_range, check_threshold, code_bound, scan, RowHit, Sink};
use crate::backend::Backend;
use crate::checks::check_rows;
use crate::elem::{ElemKind, QuantElem};
use crate::error::{Error, Result};
use crate::f32::BLOCK;
use crate::ops::dequant_f32::{sum_of_exps, QuantLanes};
#[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
use crate::ops::softmax_rows::SoftmaxLut;
use crate::ops::{Method, Softmax};
use crate::quant::QuantParams;

/// The op's name in errors.
const OP: &str = "thresholded softmax";

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
        let model = Model::new::<T>(OP, input, beta, output, method, code_bound)?;
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
        #[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
        if backend == Backend::Neon && self.top_k.is_none() {
            if let Model::Lut { lut, .. } = &self.model {
                return self.run_lut_neon(lut, input, row_len, hits);
            }
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
                    RowScale::Fixed(r, n, sum as u64)
                }
                Model::Lut { lut, .. } => {
                    let sum: u64 = row
                        .iter()
                        .map(|x| lut.exp[(max - x.to_i32()) as usize] as u64)
                        .sum();
                    let (m, shift) = lut.row_multiplier(sum);
                    RowScale::Lut(m, shift, sum)
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

    /// [`Method::Lut`] on NEON without top-k: per row the kernel's own
    /// maximum and sum, the bound from the sum bounds, and a scan that
    /// writes the hits itself (`neon::hits_bytes`), the value of each
    /// candidate requantized as `Softmax::run` does it and checked.
    #[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
    fn run_lut_neon(
        &self,
        lut: &SoftmaxLut,
        input: &[T],
        row_len: usize,
        hits: &mut [RowHit<T>],
    ) -> Result<usize> {
        use crate::elem::view;
        let Some((bytes, _)) = view(input, &mut []).bytes() else {
            return Err(crate::checks::not_int16());
        };
        let count = if T::KIND == ElemKind::I8 {
            self.lut_hits::<true>(lut, bytes, row_len, hits)
        } else {
            self.lut_hits::<false>(lut, bytes, row_len, hits)
        };
        if count <= hits.len() {
            Ok(count)
        } else {
            Err(Error::Capacity {
                op: OP,
                capacity: hits.len(),
                needed: count,
            })
        }
    }

    /// The hits of `run_lut_neon`, counted (written while `hits` has room).
    // Out of line: `run_with` is generic, so it is compiled into the
    // caller's crate and inlined into whatever calls it; this row loop (the
    // 12 table registers of the sum pass, the bound, the scan) then shared
    // its registers with the caller's code and got spills that depended on
    // the caller (qneon-bench's case closure: +0.75 instructions per
    // element on rows of 16 when that closure changed). On its own it keeps
    // one register allocation whoever calls it.
    #[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
    #[inline(never)]
    fn lut_hits<const SIGNED: bool>(
        &self,
        lut: &SoftmaxLut,
        bytes: &[u8],
        row_len: usize,
        hits: &mut [RowHit<T>],
    ) -> usize {
        use crate::ops::softmax_rows::neon::rows_max_sum;
        let mut count = 0;
        rows_max_sum::<SIGNED>(lut, bytes, row_len, |r, max_byte, sum| {
            let row = &bytes[r * row_len..(r + 1) * row_len];
            let (m, shift) = lut.row_multiplier(sum);
            let zp = lut.output_zero_point;
            let scale = RowScale::Lut(m, shift, sum);
            count = if shift < 0 {
                // Every row but those whose multiplier is flushed to 0
                // (shift 0), beyond a shift of -31.
                let e = shift.unsigned_abs().min(62);
                let value = |t: u16| T::saturate(lut_value(t, m, e, zp));
                self.lut_row::<SIGNED>(row, r, max_byte, scale, value, hits, count)
            } else {
                let value = |t: u16| T::saturate(lut.output(t, m, shift));
                self.lut_row::<SIGNED>(row, r, max_byte, scale, value, hits, count)
            };
        });
        count
    }

    /// The hits of one row of `lut_hits` (the count after them), `value`
    /// the row's output of a table entry `t`.
    #[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn lut_row<const SIGNED: bool>(
        &self,
        row: &[u8],
        r: usize,
        max_byte: u8,
        scale: RowScale,
        value: impl Fn(u16) -> T,
        hits: &mut [RowHit<T>],
        mut count: usize,
    ) -> usize {
        let Model::Lut { lut, .. } = &self.model else {
            return count;
        };
        let c = self.code_bound;
        let max = if SIGNED {
            max_byte as i8 as i32
        } else {
            max_byte as i32
        };
        let d_limit = (max - T::MIN) as usize;
        let pass = |t: u16| value(t).to_i32() >= c;
        let d_max = match self.model.lut_bound(scale, pass) {
            Some(d) => d.map(|d| d.min(d_limit)),
            None => self.model.d_max::<T>(scale, c, d_limit),
        };
        let Some(d_max) = d_max else {
            return count;
        };
        let bound = max - d_max as i32;
        // d = max - x as bytes (the same for int8 and uint8).
        let make = |i: usize, x: u8| {
            let v = value(lut.exp[max_byte.wrapping_sub(x) as usize]);
            (v.to_i32() >= c).then_some(RowHit {
                row: r as u32,
                index: i as u32,
                value: v,
            })
        };
        if bound > T::MIN {
            super::neon::hits_bytes::<_, SIGNED, true>(row, bound as u8, hits, count, make)
        } else {
            // Every element is a candidate (the scan's padding could not be
            // told from the row).
            for (i, &x) in row.iter().enumerate() {
                if let Some(hit) = make(i, x) {
                    if let Some(slot) = hits.get_mut(count) {
                        *slot = hit;
                    }
                    count += 1;
                }
            }
            count
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
        use crate::f32::Lane;
        use crate::ops::softmax_rows::neon::exact_sums::exact_row_max_sum;
        use crate::ops::softmax_rows::neon::rows_max_sum;
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
                    f(r, row_of(r), widen(max), RowScale::Lut(m, shift, sum))
                };
                if signed {
                    rows_max_sum::<true>(lut, bytes, row_len, &mut g)
                } else {
                    rows_max_sum::<false>(lut, bytes, row_len, &mut g)
                }
            }
            Model::Fixed { p, exact, term, .. } => {
                for (r, row) in bytes.chunks_exact(row_len).enumerate() {
                    // Rows of a 64-byte block or more: the exact softmax
                    // kernel's own maximum and sum passes (byte-plane tables
                    // of the reference's terms). Shorter rows: the terms
                    // one by one (the block passes would pad each row to 64
                    // bytes and cost more than the row).
                    let (max, sum) = match (row_len >= 64, signed) {
                        (true, true) => exact_row_max_sum::<true>(exact, row),
                        (true, false) => exact_row_max_sum::<false>(exact, row),
                        (false, _) => {
                            let max = if signed {
                                row.iter().map(|&x| x as i8).max().map_or(0, |m| m as u8)
                            } else {
                                row.iter().copied().max().unwrap_or(0)
                            };
                            let sum = row
                                .iter()
                                .map(|&x| term[max.wrapping_sub(x) as usize] as u64)
                                .sum();
                            (max, sum)
                        }
                    };
                    let (rr, n) = p.reciprocal::<i32>(sum as i64);
                    f(r, row_of(r), widen(max), RowScale::Fixed(rr, n, sum));
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
