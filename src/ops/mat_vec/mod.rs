//! Matrix times one vector, int8: the row-packed weight layout the LSTM's
//! gate products and [`Gemv`] (batch-1 FULLY_CONNECTED) share, the raw int32
//! dot products over it (`scalar.rs` the reference, `neon.rs` with `sdot`
//! or widening multiplies), and [`Gemv`]'s requantized int8 output.
//!
//! Why a second layout next to the GEMM's: the GEMM packs four depths of
//! eight channels per group, the operand of a lane-indexed `sdot` against
//! four bytes of one input row; with a single input row that reads each
//! input word again for every block and fills a whole tile for one row.
//! Here one 16-byte input vector meets 16 depths of each of eight rows
//! (one `sdot` per row), and the four partial sums of each row are reduced
//! once at the end, so a mat-vec costs about `rows * k / 16` `sdot`s plus a
//! fixed reduction per block of rows.
//!
//! Layout ([`pack_rows`]): each row padded with zeros to `stride` bytes
//! (`cols` rounded up to 16; the zeros add nothing to any sum), the rows in
//! blocks of eight (then one of four, then single rows), each block stored
//! 16 bytes of depth at a time for all its rows, so that the kernel reads a
//! block as one contiguous stream.

#[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
pub(crate) mod neon;
pub(crate) mod scalar;
#[cfg(test)]
mod tests;

use super::gemm::DenseLayer;
use super::requant::{output_stage, ChannelMultipliers, FusedActivation};
use crate::backend::{unavailable, Backend};
use crate::checks::check_length;
use crate::error::{Error, Result};
use crate::quant::{QuantParams, Requantization};
use alloc::vec::Vec;
use core::ops::Range;

const OP: &str = "gemv";

/// Output channels per step of [`Gemv`]'s output stage. A step starts at a
/// multiple of 8, so the per-channel arrays are padded to `n` rounded up to
/// 8, plus `CHUNK - 8`: a step's vector loads never run past them.
pub(crate) const CHUNK: usize = 16;

/// The block of the packed layout that row `r` of `rows` belongs to: its
/// first row and its number of rows (8, then 4, then 1, the order in which
/// the NEON kernel takes them).
#[inline(always)]
pub(crate) fn row_block(r: usize, rows: usize) -> (usize, usize) {
    let eights = rows / 8 * 8;
    if r < eights {
        (r / 8 * 8, 8)
    } else if rows - eights >= 4 && r < eights + 4 {
        (eights, 4)
    } else {
        (r, 1)
    }
}

/// `weights` (`rows x cols`, row-major) in the packed layout (module docs),
/// and the padded row length: row `r`'s 16 bytes of depth block `k` are at
/// `first * stride + k * n * 16 + (r - first) * 16`, where `(first, n)` is
/// [`row_block`]`(r, rows)`.
pub(crate) fn pack_rows(weights: &[i8], rows: usize, cols: usize) -> (Vec<i8>, usize) {
    let stride = cols.div_ceil(16) * 16;
    let mut packed = alloc::vec![0i8; rows * stride];
    for (r, row) in weights.chunks_exact(cols).take(rows).enumerate() {
        let (first, n) = row_block(r, rows);
        let base = first * stride + (r - first) * 16;
        for (k, chunk) in row.chunks(16).enumerate() {
            let at = base + k * n * 16;
            packed[at..at + chunk.len()].copy_from_slice(chunk);
        }
    }
    (packed, stride)
}

/// A prepared int8 fully connected layer for one input row: the same
/// arithmetic as [`Gemm`](crate::Gemm) (TFLite's per-channel int8
/// `FullyConnected`) with `m = 1`, and the same bytes for the same
/// arguments, computed as a matrix-vector product:
///
/// ```text
/// acc = sum_k (x[k] - input_zero_point) * w[n][k] + bias[n]   int32, wrapping
/// y   = the Requantization of acc for channel n               (as Gemm)
/// out = clamp(y + output_zero_point, act_min, act_max)         int8
/// ```
///
/// The weights are packed once by [`new`](Self::new) in the row layout of
/// this module (blocks of eight rows, 16 depth bytes at a time) and the
/// input zero point is folded into the bias (`bias[n] - input_zero_point *
/// sum_k w[n][k]`, equal modulo 2^32), so the kernels multiply raw int8
/// values. The output stage takes 16 channels at a time. On aarch64 NEON the
/// products use `sdot` (dotprod, detected at run time) or widening
/// multiplies, and the requantization the vector forms the GEMM's output
/// stage uses, bit-exact with the scalar ones.
///
/// The work splits by output channels ([`run_channels_with`](Self::run_channels_with)):
/// a range of channels starting at a multiple of 8 and ending at one or at
/// `n` is computed alone, with the same bytes as in a whole run.
#[derive(Clone, Debug)]
pub struct Gemv {
    n: usize,
    k: usize,
    stride: usize,
    packed: Vec<i8>,
    /// `bias - input_zero_point * sum_k w`, padded with zeros as
    /// [`CHUNK`] says.
    folded_bias: Vec<i32>,
    multipliers: ChannelMultipliers,
    output_zero_point: i32,
    act_min: i32,
    act_max: i32,
    backend: Backend,
}

/// What the kernels read of a [`Gemv`] (borrowed, for the backend files).
pub(crate) struct GemvView<'a> {
    pub(crate) n: usize,
    #[cfg_attr(not(target_arch = "aarch64"), allow(dead_code))]
    pub(crate) k: usize,
    pub(crate) stride: usize,
    pub(crate) packed: &'a [i8],
    pub(crate) folded_bias: &'a [i32],
    pub(crate) multipliers: &'a ChannelMultipliers,
    pub(crate) output_zero_point: i32,
    pub(crate) act_min: i32,
    pub(crate) act_max: i32,
}

/// The channels Gemv's per-channel arrays hold for `n`: whole blocks of 8
/// and room for the last chunk's reads.
fn padded_channels(n: usize) -> usize {
    n.div_ceil(8) * 8 + CHUNK - 8
}

impl Gemv {
    /// Validates and prepares the layer: the arguments and errors of
    /// [`Gemm::new`](crate::Gemm::new) (`n x k` weights, symmetric, one
    /// scale per output channel; `n` int32 biases or `None`; per-tensor
    /// input and output; the fused activation; the requantization).
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        weights: &[i8],
        n: usize,
        k: usize,
        bias: Option<&[i32]>,
        input: QuantParams,
        weight_scales: &[f32],
        output: QuantParams,
        activation: FusedActivation,
        requantization: impl Into<Requantization>,
    ) -> Result<Gemv> {
        let layer = DenseLayer {
            weights,
            n,
            k,
            bias,
            input,
            weight_scales,
            output,
        };
        let multipliers = layer.multipliers(OP, padded_channels, requantization.into())?;
        let padded = padded_channels(n);
        let (act_min, act_max) = activation.range_i8_for(output, multipliers.requantization);
        let (packed, stride) = pack_rows(weights, n, k);
        let mut folded_bias = alloc::vec![0i32; padded];
        for (c, (row, folded)) in weights.chunks_exact(k).zip(&mut folded_bias).enumerate() {
            let sum = row.iter().fold(0i32, |s, &w| s.wrapping_add(w as i32));
            let b = bias.map_or(0, |b| b[c]);
            *folded = b.wrapping_sub(input.zero_point.wrapping_mul(sum));
        }
        Ok(Gemv {
            n,
            k,
            stride,
            packed,
            folded_bias,
            multipliers,
            output_zero_point: output.zero_point,
            act_min,
            act_max,
            backend: Backend::best(),
        })
    }

    /// Output channels (`n`).
    pub fn n(&self) -> usize {
        self.n
    }

    /// Depth (`k`).
    pub fn k(&self) -> usize {
        self.k
    }

    /// How the accumulators are requantized.
    pub fn requantization(&self) -> Requantization {
        self.multipliers.requantization
    }

    /// The backend [`run`](Self::run) uses.
    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// `output (n) = weights * input (k) + bias`, requantized, with the best
    /// backend. Errors if `input` is not `k` or `output` not `n` long.
    pub fn run(&self, input: &[i8], output: &mut [i8]) -> Result<()> {
        self.run_channels_with(self.backend, input, output, 0..self.n)
    }

    /// [`run`](Self::run) with the given backend (an error if not available
    /// here). Every backend gives the same bytes.
    pub fn run_with(&self, backend: Backend, input: &[i8], output: &mut [i8]) -> Result<()> {
        self.run_channels_with(backend, input, output, 0..self.n)
    }

    /// Output channels `channels` alone into `output` (`channels.len()`
    /// bytes), the bytes a whole run gives there. `channels` must start at
    /// a multiple of 8 and end at one or at `n` ([`Error::Tile`]); `input`
    /// must be `k` long and `output` as long as the range
    /// ([`Error::Length`]). An empty range computes nothing.
    pub fn run_channels_with(
        &self,
        backend: Backend,
        input: &[i8],
        output: &mut [i8],
        channels: Range<usize>,
    ) -> Result<()> {
        check_length(OP, "input", Some(self.k), input.len())?;
        let off_grain = |v: usize| !v.is_multiple_of(8) && v != self.n;
        if channels.start > channels.end
            || channels.end > self.n
            || off_grain(channels.start)
            || off_grain(channels.end)
        {
            return Err(Error::Tile {
                op: OP,
                what: "channels",
                start: channels.start,
                end: channels.end,
                limit: self.n,
                grain: 8,
            });
        }
        check_length(OP, "output", Some(channels.len()), output.len())?;
        if channels.is_empty() {
            return Ok(());
        }
        let view = self.view();
        match backend {
            Backend::Scalar => {
                scalar::gemv(&view, input, output, channels);
                Ok(())
            }
            #[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
            Backend::Neon => {
                neon::gemv(&view, input, output, channels);
                Ok(())
            }
            #[allow(unreachable_patterns)]
            b => Err(unavailable(b)),
        }
    }

    fn view(&self) -> GemvView<'_> {
        GemvView {
            n: self.n,
            k: self.k,
            stride: self.stride,
            packed: &self.packed,
            folded_bias: &self.folded_bias,
            multipliers: &self.multipliers,
            output_zero_point: self.output_zero_point,
            act_min: self.act_min,
            act_max: self.act_max,
        }
    }
}

/// The int8 output of channel `c` from its raw dot product: the folded
/// bias, the channel's requantization, the zero point and the clamp (the
/// scalar reference of the NEON output stage).
#[inline(always)]
pub(crate) fn output_one(g: &GemvView<'_>, c: usize, dot: i32) -> i8 {
    let acc = dot.wrapping_add(g.folded_bias[c]);
    let y = g.multipliers.requantize(c, acc);
    output_stage(y, g.output_zero_point, g.act_min, g.act_max) as i8
}
