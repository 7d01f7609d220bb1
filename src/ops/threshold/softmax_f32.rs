//! [`ThresholdedSoftmaxF32`]: [`crate::f32::softmax`] with a probability
//! threshold and/or top-k per row.
//!
//! Per row: the maximum and the sum of exps of the two-pass softmax (the
//! same lanes and order on each backend, so the same `f64`), and its
//! reciprocal `inv`. An element's output is `exp(x - max) * inv`; it can
//! reach `t` only if `x - max >= ln(t / inv)`, so the scan compares the raw
//! input against `max + ln(t / inv)` widened by a margin far beyond the
//! rounding of the subtraction, `exp` (1 ulp) and the product, and the
//! candidates get their exact output and the check `y >= t`.

use super::topk::keep;
use super::{check_index_range, check_threshold, scan_f32, RowHit, Sink};
use crate::backend::{unavailable, Backend};
use crate::checks::check_rows;
use crate::error::Result;
use crate::f32::{exp_kernel, ln_f64, row_max, softmax_reciprocal, sum_of_exps_row};

/// The op's name in errors.
const OP: &str = "thresholded f32 softmax";

/// `f32` softmax keeping, per row, the outputs at or above a probability
/// threshold and/or the `k` largest, as `(row, index, value)` hits.
///
/// The hits are exactly those of [`crate::f32::softmax_with`] (same
/// backend) followed by the filter: `y >= threshold` (NaN never passes;
/// without a threshold every non-NaN output passes), and top-k keeps the
/// `k` largest outputs of a row, the lower index first among equal ones.
/// Hits come in row order, then index order. Special rows follow
/// [`crate::f32::softmax`]: a single `+inf` gives 1 there and 0 elsewhere;
/// rows with NaN, two `+inf` or only `-inf` are NaN and keep nothing.
#[derive(Clone, Copy, Debug)]
pub struct ThresholdedSoftmaxF32 {
    threshold: Option<f32>,
    top_k: Option<usize>,
    backend: Backend,
}

impl ThresholdedSoftmaxF32 {
    /// Checks the threshold (a probability in `[0, 1]`, NaN refused).
    pub fn new(threshold: Option<f32>, top_k: Option<usize>) -> Result<Self> {
        let threshold = threshold.map(|t| check_threshold(OP, t)).transpose()?;
        Ok(ThresholdedSoftmaxF32 {
            threshold,
            top_k,
            backend: Backend::best(),
        })
    }

    /// The backend [`run`](Self::run) uses.
    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// Writes the hits of every `row_len`-long row into `hits` and returns
    /// their number, with the best backend ([`Error::Capacity`](crate::Error::Capacity) if they do
    /// not fit).
    pub fn run(&self, input: &[f32], row_len: usize, hits: &mut [RowHit<f32>]) -> Result<usize> {
        self.run_with(self.backend, input, row_len, hits)
    }

    /// [`run`](Self::run) on the given backend; the same hits as
    /// [`crate::f32::softmax_with`] on that backend and the filter.
    pub fn run_with(
        &self,
        backend: Backend,
        input: &[f32],
        row_len: usize,
        hits: &mut [RowHit<f32>],
    ) -> Result<usize> {
        check_rows(OP, input.len(), input.len(), row_len)?;
        check_index_range(OP, input.len())?;
        let mut sink = Sink::new(hits);
        for (r, row) in input.chunks_exact(row_len).enumerate() {
            let (mx, sum) = match backend {
                Backend::Scalar => {
                    let mx = row_max::<f32, 16>(row);
                    (mx, sum_of_exps_row::<f32, 16, 4>(row, mx))
                }
                #[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
                Backend::Neon => {
                    use core::arch::aarch64::float32x4_t;
                    let mx = row_max::<float32x4_t, 4>(row);
                    (mx, sum_of_exps_row::<float32x4_t, 4, 1>(row, mx))
                }
                #[allow(unreachable_patterns)]
                b => return Err(unavailable(b)),
            };
            self.row_hits(backend, r as u32, row, mx, sum, &mut sink)?;
        }
        sink.finish(OP)
    }

    /// With the `alloc` feature: the hits as a vector.
    #[cfg(feature = "alloc")]
    pub fn run_to_vec(
        &self,
        input: &[f32],
        row_len: usize,
    ) -> Result<alloc::vec::Vec<RowHit<f32>>> {
        let needed = match self.run(input, row_len, &mut []) {
            Ok(n) => n,
            Err(crate::Error::Capacity { needed, .. }) => needed,
            Err(e) => return Err(e),
        };
        let mut hits = alloc::vec![RowHit::default(); needed];
        let n = self.run(input, row_len, &mut hits)?;
        hits.truncate(n);
        Ok(hits)
    }

    /// The input bound of a row: no element below it can reach `t`.
    fn input_bound(&self, mx: f32, inv: f32) -> f32 {
        let t = match self.threshold {
            Some(t) if t > 0.0 => t,
            _ => return f32::NEG_INFINITY,
        };
        let delta = ln_f64(t as f64 / inv as f64);
        // Below about -80 exp's results are subnormal, with less relative
        // precision than the margin assumes: scan everything.
        if delta < -80.0 {
            return f32::NEG_INFINITY;
        }
        // Margin: 1e-4 in the log domain (exp's error is 1 ulp, 1.2e-7),
        // and a relative 1e-5 for the rounding of x - max (2^-24).
        let bound = mx as f64 + (delta - 1e-4) * (1.0 + 1e-5) - 1e-5 * (mx as f64).abs();
        let b = bound as f32;
        // Rounded down, so that no input at or above the real bound is lost.
        if b as f64 > bound {
            f32::from_bits(if b > 0.0 {
                b.to_bits() - 1
            } else {
                b.to_bits() + 1
            })
        } else {
            b
        }
    }

    /// The hits of one row of maximum `mx` and sum of exps `sum`.
    fn row_hits(
        &self,
        backend: Backend,
        r: u32,
        row: &[f32],
        mx: f32,
        sum: f64,
        sink: &mut Sink<RowHit<f32>>,
    ) -> Result<()> {
        if self.top_k == Some(0) {
            return Ok(());
        }
        let passes = |v: f32| match self.threshold {
            Some(t) => v >= t,
            None => !v.is_nan(),
        };
        let hit = |i: usize, v: f32| RowHit {
            row: r,
            index: i as u32,
            value: v,
        };
        let mut at_inf = None;
        if mx == f32::INFINITY {
            // The limit softmax takes: one-hot at a single +inf, NaN (nothing
            // kept) for more.
            let mut infs = row.iter().enumerate().filter(|(_, &x)| x == f32::INFINITY);
            match (infs.next(), infs.next()) {
                (Some((at, _)), None) => at_inf = Some(at),
                _ => return Ok(()),
            }
        }
        let inv = softmax_reciprocal(sum);
        if at_inf.is_none() && inv.is_nan() {
            return Ok(());
        }
        let bound = self.input_bound(mx, inv);
        let each = |f: &mut dyn FnMut(usize, f32)| match at_inf {
            Some(at) => (0..row.len()).for_each(|i| f(i, if i == at { 1.0 } else { 0.0 })),
            None => scan_f32(backend, row, bound, |i, x| f(i, exp_kernel(x - mx) * inv)),
        };
        keep(self.top_k, each, passes, hit, sink);
        Ok(())
    }
}
