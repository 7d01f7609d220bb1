//! int8 transposed convolution (TFLite's TRANSPOSE_CONV) over NHWC
//! tensors, per-tensor or per-channel weights, in the arithmetic of each of
//! TFLite's kernel paths.
//!
//! TFLite's reference kernel scatters: every input pixel times the kernel
//! is added into an `int32` scratch the size of the output, at rows
//! `iy * stride_height - pad_top + ky` (columns alike), taps outside the
//! output dropped; then each element gets its bias and is requantized.
//! Here each output element gathers the same products instead:
//!
//! ```text
//! acc = bias[c] + sum over (ky, iy), (kx, ix) with oy + pad_top = iy * stride_height + ky,
//!                                             ox + pad_left = ix * stride_width + kx,
//!                                             both inside the kernel and the input,
//!       and input channels i:
//!         (x[b][iy][ix][i] - input_zero_point) * w[c][ky][kx][i]      int32, wrapping
//! out = clamp(requantize_c(acc) + output_zero_point, act_min, act_max)     int8
//! ```
//!
//! The sum is the scatter's, term for term; wrapping addition does not
//! depend on the order. `requantize_c` is one of [`ConvRequantization`]'s
//! paths, on that same accumulator: LiteRT's reference kernel uses
//! `MultiplyByQuantizedMultiplier` with double rounding; its optimized
//! kernel (a GEMM of the input by the `HWOI` weights, `col2im`, bias, then
//! `optimized_ops::Quantize`) rounds as
//! [`ConvRequantization::TiesUpwardInBlocksOf8`] on aarch64; the XNNPACK
//! delegate's deconvolution scales in `f32`
//! ([`ConvRequantization::XnnpackF32`]).
//!
//! [`Backend::Scalar`] runs the scalar loops, the oracle; on NEON an
//! output-stationary kernel keeps 16 output channels in its lanes and
//! allocates nothing (no scratch: each output pixel's accumulators live in
//! registers). Work splits by output rows ([`TransposeConv2d::run_rows`]).

mod geometry;
#[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
mod neon;
mod scalar;
#[cfg(test)]
mod tests;

use alloc::vec::Vec;
use core::ops::Range;

pub use self::geometry::TransposeConvGeometry;
#[cfg(doc)]
use super::conv::ConvRequantization;
use super::conv::{ConvQuantization, OutputStage};
use super::requant::try_filled;
use crate::backend::Backend;
use crate::checks::check_length;
use crate::error::{Error, Result};

const OP: &str = "transpose_conv";

/// Output channels in the NEON kernel's lanes.
#[cfg_attr(
    not(all(target_arch = "aarch64", target_feature = "neon")),
    allow(dead_code)
)]
const BLOCK: usize = 16;

/// The NEON kernel's weights and bias: per block of [`BLOCK`] output
/// channels, `[ky][kx][input channel][16 channels]` weights widened to
/// `i16`, and 16 biases; channels past the last are zero.
#[derive(Clone, Debug)]
#[cfg_attr(
    not(all(target_arch = "aarch64", target_feature = "neon")),
    allow(dead_code)
)]
struct Packed {
    weights: Vec<i16>,
    bias: Vec<i32>,
}

impl Packed {
    fn new(g: &TransposeConvGeometry, ohwi: &[i8], bias: &[i32]) -> Result<Packed> {
        let blocks = g.output_channels.div_ceil(BLOCK);
        let taps = g.kernel_height * g.kernel_width * g.input_channels;
        let len = blocks
            .checked_mul(taps)
            .and_then(|n| n.checked_mul(BLOCK))
            .ok_or(Error::OutOfDomain {
                op: OP,
                what: "packed weights",
                value: f64::INFINITY,
                requirement: "an element count that fits usize",
            })?;
        let mut weights = try_filled(OP, "packed weights", 0i16, len)?;
        let mut padded_bias = try_filled(OP, "packed bias", 0i32, blocks * BLOCK)?;
        for (c, filter) in ohwi.chunks_exact(taps).enumerate() {
            let (block, lane) = (c / BLOCK, c % BLOCK);
            let base = block * taps * BLOCK + lane;
            // OHWI's taps are [ky][kx][i], the packed order's too.
            for (t, &w) in filter.iter().enumerate() {
                weights[base + t * BLOCK] = w as i16;
            }
            padded_bias[c] = bias[c];
        }
        Ok(Packed {
            weights,
            bias: padded_bias,
        })
    }
}

/// A prepared int8 TRANSPOSE_CONV (see the [module](self) for the
/// arithmetic).
#[derive(Clone, Debug)]
#[cfg_attr(docsrs, doc(cfg(feature = "alloc")))]
pub struct TransposeConv2d {
    geometry: TransposeConvGeometry,
    /// OHWI, as given.
    weights: Vec<i8>,
    bias: Vec<i32>,
    input_zero_point: i32,
    stage: OutputStage,
    #[cfg_attr(
        not(all(target_arch = "aarch64", target_feature = "neon")),
        allow(dead_code)
    )]
    packed: Packed,
    input_len: usize,
    output_len: usize,
    backend: Backend,
}

impl TransposeConv2d {
    /// Validates and prepares a transposed convolution.
    ///
    /// * `geometry`: sizes, strides, padding
    ///   ([`TransposeConvGeometry::tflite`] derives TFLite's);
    /// * `weights`: OHWI, `output_channels x kernel_height x kernel_width x
    ///   input_channels` (TFLite's layout);
    /// * `bias`: one int32 per output channel in units of `input_scale *
    ///   weight_scale[c]`, or `None` for zeros;
    /// * `quantization`: input and output per tensor, one weight scale or
    ///   one per output channel, the fused activation and the path.
    ///
    /// Errors: a zero size or stride ([`Error::ZeroDimension`]), counts
    /// that overflow ([`Error::OutOfDomain`]), buffers of the wrong length
    /// ([`Error::Length`]), scales and zero points out of their domains
    /// ([`Error::Scale`], [`Error::ZeroPoint`]), a weight scale count that
    /// is neither 1 nor the output channels ([`Error::Length`]), and a
    /// scale the path cannot represent ([`Error::Unsupported`]).
    pub fn new(
        geometry: TransposeConvGeometry,
        weights: &[i8],
        bias: Option<&[i32]>,
        quantization: &ConvQuantization<'_>,
    ) -> Result<TransposeConv2d> {
        let (input_len, output_len, weights_len) = geometry.validate(OP)?;
        check_length(OP, "weights", Some(weights_len), weights.len())?;
        let channels = geometry.output_channels;
        if let Some(b) = bias {
            check_length(OP, "bias", Some(channels), b.len())?;
        }
        let stage = OutputStage::new(
            OP,
            channels,
            quantization.input,
            quantization.weight_scales,
            quantization.output,
            quantization.activation,
            quantization.requantization,
        )?;
        let mut bias_values = try_filled(OP, "bias", 0i32, channels)?;
        if let Some(b) = bias {
            bias_values.copy_from_slice(b);
        }
        let mut w = try_filled(OP, "weights", 0i8, weights.len())?;
        w.copy_from_slice(weights);
        let packed = Packed::new(&geometry, weights, &bias_values)?;
        Ok(TransposeConv2d {
            geometry,
            weights: w,
            bias: bias_values,
            input_zero_point: quantization.input.zero_point,
            stage,
            packed,
            input_len,
            output_len,
            backend: Backend::best(),
        })
    }

    /// The geometry given to `new`.
    pub fn geometry(&self) -> &TransposeConvGeometry {
        &self.geometry
    }

    /// The backend [`run`](Self::run) uses: [`Backend::best`].
    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// Output rows in the batch (`batch * output_height`): the units
    /// [`run_rows`](Self::run_rows) splits the work into.
    pub fn rows(&self) -> usize {
        self.geometry.rows()
    }

    /// The whole transposed convolution of the NHWC `input` into the NHWC
    /// `output`. Errors ([`Error::Length`]) unless both have the
    /// geometry's element counts. Allocates nothing.
    pub fn run(&self, input: &[i8], output: &mut [i8]) -> Result<()> {
        self.run_rows(self.backend, input, output, 0..self.rows())
    }

    /// Only output rows `rows` (row `r` is image `r / output_height`, row
    /// `r % output_height`) of the whole `output`, with `backend`: exactly
    /// the bytes [`run`](Self::run) writes there, whatever the split.
    /// [`Error::Tile`] for rows past [`rows`](Self::rows) or reversed;
    /// [`Error::BackendUnavailable`] for a backend not here.
    pub fn run_rows(
        &self,
        backend: Backend,
        input: &[i8],
        output: &mut [i8],
        rows: Range<usize>,
    ) -> Result<()> {
        if !backend.is_available() {
            return Err(Error::BackendUnavailable {
                backend: backend.name(),
            });
        }
        check_length(OP, "input", Some(self.input_len), input.len())?;
        check_length(OP, "output", Some(self.output_len), output.len())?;
        if rows.start > rows.end || rows.end > self.rows() {
            return Err(Error::Tile {
                op: OP,
                what: "output rows",
                start: rows.start,
                end: rows.end,
                limit: self.rows(),
                grain: 1,
            });
        }
        #[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
        if backend == Backend::Neon {
            neon::transpose_conv(
                &self.geometry,
                &self.packed,
                self.input_zero_point,
                &self.stage,
                input,
                output,
                rows,
            );
            return Ok(());
        }
        let layer = scalar::Layer {
            geometry: &self.geometry,
            weights: &self.weights,
            bias: &self.bias,
            input_zero_point: self.input_zero_point,
            stage: &self.stage,
        };
        scalar::transpose_conv(&layer, input, output, rows);
        Ok(())
    }
}
