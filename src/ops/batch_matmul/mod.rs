//! int8 matrix product of two run-time operands (TFLite's int8
//! `BATCH_MATMUL`, one matrix of the batch; the caller walks the batch).
//!
//! For an `m x k` left-hand side `x` and a `k x n` right-hand side `y`, both
//! asymmetric (any zero points), output element `(r, c)` is
//!
//! ```text
//! acc = sum_d (x[r][d] - lhs_zero_point) * (y[d][c] - rhs_zero_point)   int32, wrapping
//! out = clamp(MultiplyByQuantizedMultiplier(acc, M) + output_zero_point, -128, 127)
//! ```
//!
//! with `M` the quantized `lhs_scale * rhs_scale / output_scale` (in `f64`,
//! TFLite's `GetQuantizedConvolutionMultipler`) in the chosen [`Rounding`].
//! `adj_x`: the left-hand side is stored transposed (`k x m`); `adj_y`: the
//! right-hand side is (`n x k`, as attention's keys in `Q K^T`).
//!
//! It is the [`Gemm`](super::Gemm)'s kernel with a right-hand side packed at
//! run time: the same `smmla` / `sdot` / widening micro-kernels and output
//! stages run over `y` packed into the GEMM's weight layout on every call (a
//! `k x n` `y` is transposed by the packing itself), with both zero points
//! folded out of the inner loop:
//!
//! ```text
//! acc = sum_d x y  -  lhs_zp * sum_d y[d][c]  -  rhs_zp * sum_d x[r][d]  +  k lhs_zp rhs_zp
//!                     \_______ per column (the GEMM's folded bias) ____/   \_ per row _/
//! ```
//!
//! all modulo 2^32, so equal to the reference's wrapping sum. `run` needs a
//! caller's scratch ([`scratch_bytes`](MatMul::scratch_bytes) bytes and
//! [`scratch_words`](MatMul::scratch_words) `i32`s) and allocates nothing.
//!
//! Tiles: a batch (BATCH_MATMUL's batch and head dimensions, flattened) is
//! split by output matrix. [`MatMul::run_batch_tile`] runs a range of
//! output matrices, each given as the pair of operand matrices it
//! multiplies (a broadcast operand repeats its index). The matrices share
//! nothing but the prepared `MatMul`: the scratch is rewritten from scratch
//! by every matrix (the right-hand side packed, its sums, the left-hand
//! side's row sums), so one scratch serves a tile of any size, and tiles
//! running at the same time need one scratch each.

#[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
mod neon;
mod scalar;

use super::gemm::block_shifts;
use super::gemm::kernels::{KC, NR};
use super::gemm::GemmPath;
use super::requant::{try_filled, ChannelMultipliers};
use crate::backend::{Backend, CpuFeatures};
use crate::checks::{check_length, check_scale, check_zero_point};
use crate::error::{Error, Result};
use crate::quant::{QuantParams, Requantization, Rounding};
use alloc::vec::Vec;

const OP: &str = "batch_matmul";

/// A prepared int8 matrix product of two run-time operands (see the module
/// documentation for the arithmetic and the scratch it needs).
#[derive(Clone, Debug)]
#[cfg_attr(docsrs, doc(cfg(feature = "alloc")))]
pub struct MatMul {
    m: usize,
    n: usize,
    k: usize,
    adj_x: bool,
    adj_y: bool,
    k_padded: usize,
    n_padded: usize,
    lhs_zero_point: i32,
    rhs_zero_point: i32,
    output_zero_point: i32,
    /// One multiplier repeated for every (padded) column, so that the GEMM's
    /// per-channel output stages apply it.
    multipliers: ChannelMultipliers,
    #[cfg_attr(not(target_arch = "aarch64"), allow(dead_code))]
    block_shifts: Vec<(bool, bool)>,
    backend: Backend,
    path: GemmPath,
}

impl MatMul {
    /// Validates and prepares `output (m x n) = lhs (m x k) * rhs (k x n)`,
    /// `lhs` stored `k x m` when `adj_x`, `rhs` stored `n x k` when `adj_y`.
    ///
    /// Errors: a zero dimension ([`Error::ZeroDimension`]), sizes whose
    /// products overflow ([`Error::Unsupported`]), a scale that is not finite and
    /// `> 0` ([`Error::Scale`]), a zero point outside int8
    /// ([`Error::ZeroPoint`]), with double rounding an effective scale of 2^30
    /// or more ([`Error::Unsupported`]), and an `n` whose per-column
    /// multipliers (about 20 bytes each) the allocator refuses
    /// ([`Error::Allocation`]; nothing aborts).
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        m: usize,
        n: usize,
        k: usize,
        adj_x: bool,
        adj_y: bool,
        lhs: QuantParams,
        rhs: QuantParams,
        output: QuantParams,
        requantization: impl Into<Requantization>,
    ) -> Result<MatMul> {
        for (dim, what) in [(m, "m (rows)"), (n, "n (columns)"), (k, "k (depth)")] {
            if dim == 0 {
                return Err(Error::ZeroDimension { op: OP, what });
            }
        }
        let lhs_scale = check_scale("lhs scale", lhs.scale)?;
        check_zero_point::<i8>("lhs zero point", lhs.zero_point)?;
        let rhs_scale = check_scale("rhs scale", rhs.scale)?;
        check_zero_point::<i8>("rhs zero point", rhs.zero_point)?;
        let output_scale = check_scale("output scale", output.scale)?;
        check_zero_point::<i8>("output zero point", output.zero_point)?;
        let k_padded = k.checked_next_multiple_of(KC);
        let n_padded = n.checked_next_multiple_of(NR);
        let sizes = k_padded
            .zip(n_padded)
            .filter(|&(kp, np)| {
                kp.checked_mul(np).is_some()
                    && m.checked_mul(kp).is_some()
                    && m.checked_mul(n).is_some()
                    && np.checked_add(m).is_some()
            })
            .ok_or(Error::Unsupported {
                op: OP,
                dtype: "int8",
                reason: "the sizes of m, n and k overflow usize",
            })?;
        let (k_padded, n_padded) = sizes;
        // TFLite multiplies the two input scales in f64 and divides by the
        // output scale: the per-channel form with one channel scale.
        let multipliers = ChannelMultipliers::new(
            OP,
            "rhs scale",
            "with double rounding the effective output scale, lhs scale * rhs scale / output \
             scale, must be below 2^30",
            lhs_scale,
            &try_filled(OP, "channel scales", rhs_scale as f32, n)?,
            output_scale,
            n_padded,
            requantization,
        )?;
        let block_shifts = block_shifts(OP, &multipliers, n_padded / NR)?;
        let path = GemmPath::for_cpu(&CpuFeatures::detect());
        Ok(MatMul {
            m,
            n,
            k,
            adj_x,
            adj_y,
            k_padded,
            n_padded,
            lhs_zero_point: lhs.zero_point,
            rhs_zero_point: rhs.zero_point,
            output_zero_point: output.zero_point,
            multipliers,
            block_shifts,
            backend: Backend::best(),
            path,
        })
    }

    /// `(m, n, k)`.
    pub fn shape(&self) -> (usize, usize, usize) {
        (self.m, self.n, self.k)
    }

    /// How the multiplier is applied.
    pub fn rounding(&self) -> Rounding {
        self.multipliers.rounding
    }

    /// The backend [`run`](Self::run) uses.
    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// Scratch bytes `run` needs: the packed right-hand side (`n` rounded up
    /// to 8 by `k` rounded up to 16) and, with `adj_x`, the left-hand side
    /// transposed (`m k`).
    pub fn scratch_bytes(&self) -> usize {
        self.n_padded * self.k_padded + if self.adj_x { self.m * self.k } else { 0 }
    }

    /// Scratch `i32`s `run` needs: one folded bias per padded column and one
    /// offset per row.
    pub fn scratch_words(&self) -> usize {
        self.n_padded + self.m
    }

    /// `output = lhs * rhs`, requantized, with the best backend.
    pub fn run(
        &self,
        lhs: &[i8],
        rhs: &[i8],
        output: &mut [i8],
        scratch_bytes: &mut [i8],
        scratch_words: &mut [i32],
    ) -> Result<()> {
        self.run_with(self.backend, lhs, rhs, output, scratch_bytes, scratch_words)
    }

    /// [`run`](Self::run) with the given backend (an error if not available
    /// here); every backend gives the same bytes. Errors: `lhs`, `rhs` or
    /// `output` not `m k`, `k n`, `m n` long, or scratch shorter than
    /// [`scratch_bytes`](Self::scratch_bytes) /
    /// [`scratch_words`](Self::scratch_words) ([`Error::Length`]).
    pub fn run_with(
        &self,
        backend: Backend,
        lhs: &[i8],
        rhs: &[i8],
        output: &mut [i8],
        scratch_bytes: &mut [i8],
        scratch_words: &mut [i32],
    ) -> Result<()> {
        match backend {
            Backend::Scalar => {
                self.check(lhs, rhs, output, scratch_bytes, scratch_words)?;
                scalar::matmul(self, lhs, rhs, output);
                Ok(())
            }
            _ => self.run_neon_path(self.path, lhs, rhs, output, scratch_bytes, scratch_words),
        }
    }

    /// [`run_with`](Self::run_with)`(Backend::Neon, ..)` on the given NEON
    /// path; [`Error::BackendUnavailable`] if this CPU lacks it. For tests and
    /// benchmarks.
    #[doc(hidden)]
    #[allow(unused_variables)]
    pub fn run_neon_path(
        &self,
        path: GemmPath,
        lhs: &[i8],
        rhs: &[i8],
        output: &mut [i8],
        scratch_bytes: &mut [i8],
        scratch_words: &mut [i32],
    ) -> Result<()> {
        self.check(lhs, rhs, output, scratch_bytes, scratch_words)?;
        #[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
        {
            let cpu = CpuFeatures::detect();
            match path {
                GemmPath::Dot if !cpu.dotprod => {
                    return Err(Error::BackendUnavailable {
                        backend: "neon (sdot)",
                    })
                }
                GemmPath::Mmla if !(cpu.i8mm && cpu.dotprod) => {
                    return Err(Error::BackendUnavailable {
                        backend: "neon (smmla)",
                    })
                }
                _ => {}
            }
            neon::matmul(self, path, lhs, rhs, output, scratch_bytes, scratch_words);
            return Ok(());
        }
        #[allow(unreachable_code)]
        Err(Error::BackendUnavailable { backend: "neon" })
    }

    /// A tile of a batch: output matrix `i` of `output` is the product of
    /// left-hand matrix `pairs[i].0` of `lhs` and right-hand matrix
    /// `pairs[i].1` of `rhs`, the bytes of one [`run_with`](Self::run_with)
    /// on them. `lhs` and `rhs` hold the whole operands, matrices back to
    /// back (`m k` and `k n` elements each); `output` holds this tile's
    /// matrices alone (`pairs.len() m n` elements). A batch split into
    /// tiles (ranges of `pairs` and the matching parts of the output) gives
    /// the same bytes in any order; the scratch is that of `run`, one per
    /// tile running at the same time (see the module documentation).
    ///
    /// Errors: an operand that is not a whole number of matrices
    /// ([`Error::RowLength`]), an operand index past the operand's matrices
    /// ([`Error::Tile`]), an `output` not `pairs.len() m n` long or scratch
    /// too short ([`Error::Length`]).
    #[allow(clippy::too_many_arguments)]
    pub fn run_batch_tile(
        &self,
        backend: Backend,
        lhs: &[i8],
        rhs: &[i8],
        pairs: &[(usize, usize)],
        output: &mut [i8],
        scratch_bytes: &mut [i8],
        scratch_words: &mut [i32],
    ) -> Result<()> {
        let (m, n, k) = (self.m, self.n, self.k);
        // new() checked that these products fit.
        let (lhs_len, rhs_len, out_len) = (m * k, k * n, m * n);
        for (len, matrix) in [(lhs.len(), lhs_len), (rhs.len(), rhs_len)] {
            if !len.is_multiple_of(matrix) {
                return Err(Error::RowLength {
                    op: OP,
                    len,
                    row: matrix,
                });
            }
        }
        let counts = (lhs.len() / lhs_len, rhs.len() / rhs_len);
        for &(a, b) in pairs {
            for (what, index, count) in [("lhs matrix", a, counts.0), ("rhs matrix", b, counts.1)] {
                if index >= count {
                    return Err(Error::Tile {
                        op: OP,
                        what,
                        start: index,
                        end: index + 1,
                        limit: count,
                        grain: 1,
                    });
                }
            }
        }
        check_length(OP, "output", pairs.len().checked_mul(out_len), output.len())?;
        for (out, &(a, b)) in output.chunks_exact_mut(out_len).zip(pairs) {
            self.run_with(
                backend,
                &lhs[a * lhs_len..(a + 1) * lhs_len],
                &rhs[b * rhs_len..(b + 1) * rhs_len],
                out,
                scratch_bytes,
                scratch_words,
            )?;
        }
        Ok(())
    }

    fn check(
        &self,
        lhs: &[i8],
        rhs: &[i8],
        output: &[i8],
        scratch_bytes: &[i8],
        scratch_words: &[i32],
    ) -> Result<()> {
        let (m, n, k) = (self.m, self.n, self.k);
        check_length(OP, "lhs", m.checked_mul(k), lhs.len())?;
        check_length(OP, "rhs", k.checked_mul(n), rhs.len())?;
        check_length(OP, "output", m.checked_mul(n), output.len())?;
        if scratch_bytes.len() < self.scratch_bytes() {
            return Err(Error::Length {
                op: OP,
                what: "scratch bytes",
                expected: self.scratch_bytes(),
                got: scratch_bytes.len(),
            });
        }
        if scratch_words.len() < self.scratch_words() {
            return Err(Error::Length {
                op: OP,
                what: "scratch words",
                expected: self.scratch_words(),
                got: scratch_words.len(),
            });
        }
        Ok(())
    }
}
