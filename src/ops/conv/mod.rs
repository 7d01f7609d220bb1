//! int8 2-D convolution (TFLite's CONV_2D) and depthwise convolution
//! (DEPTHWISE_CONV_2D) over NHWC tensors, per-tensor or per-channel
//! weights, in the arithmetic of each of TFLite's kernel paths.
//!
//! Output `(b, oy, ox, c)` of both, as TFLite's
//! `reference_integer_ops::ConvPerChannel` / `DepthwiseConvPerChannel`
//! compute it:
//!
//! ```text
//! acc = bias[c] + sum over taps (ky, kx) inside the image, input channels i of c:
//!         (x[b][oy*sh - pad_top + ky*dh][ox*sw - pad_left + kx*dw][i] - input_zero_point)
//!         * w[c][ky][kx][i]                                          int32, wrapping
//! out = clamp(requantize_c(acc) + output_zero_point, act_min, act_max)      int8
//! ```
//!
//! where a CONV_2D's output channel `c` reads the `filter depth` input
//! channels of its group (`groups = input channels / filter depth`, each
//! group `output channels / groups` filters wide) and a DEPTHWISE_CONV_2D's
//! reads input channel `c / depth_multiplier` alone. Taps in the padding
//! contribute nothing (as the input zero point would). `requantize_c` is
//! one of [`ConvRequantization`]'s three paths: the quantized multiplier of
//! `input_scale * weight_scale[c] / output_scale` (in `f64`, TFLite's
//! `PopulateConvolutionQuantizationParams`) in double or single rounding,
//! or XNNPACK's `f32` scale.
//!
//! [`Backend::Scalar`] runs the scalar loops, the oracle every faster
//! kernel equals byte for byte. On NEON, a pointwise CONV_2D (1x1 kernel,
//! stride 1, no padding, one group) under a quantized multiplier runs
//! through [`Gemm`] (it is a fully connected layer over the
//! pixels, with the same per-channel arithmetic); every other CONV_2D
//! under a quantized multiplier runs as an implicit GEMM (`igemm`: the
//! windows of a few pixels gathered into a bounded scratch, then the same
//! GEMM), and the XNNPACK path and depthwise layers run the scalar loops.
//! Work splits by output rows ([`Conv2d::run_rows`]): every output element
//! depends on its own window only; [`Conv2d::run_band`] and
//! [`DepthwiseConv2d::run_band`] write some rows into a slice of their own
//! (a thread's band).

mod band;
pub mod depthwise;
mod geometry;
mod igemm;
mod origin;
mod params;
mod scalar;

use alloc::boxed::Box;
use alloc::vec::Vec;
use core::ops::Range;

pub use self::geometry::{AxisPadding, ConvGeometry, Padding};
use self::igemm::Implicit;
use self::origin::{FirstRow, Whole};
pub use self::params::ConvRequantization;
pub(crate) use self::params::OutputStage;
use self::scalar::Layer;
use super::gemm::Gemm;
use super::requant::{try_filled, FusedActivation};
use crate::backend::Backend;
use crate::checks::check_length;
use crate::error::{Error, Result};
use crate::quant::QuantParams;

/// The quantization of a convolution: input and output per tensor, the
/// weights' scales (one, or one per output channel; weights are symmetric,
/// zero point 0, as TFLite requires of int8 filters), the fused
/// activation and the requantization path.
#[derive(Clone, Copy, Debug)]
pub struct ConvQuantization<'a> {
    /// Input scale and zero point.
    pub input: QuantParams,
    /// One scale for every output channel, or one per output channel.
    pub weight_scales: &'a [f32],
    /// Output scale and zero point.
    pub output: QuantParams,
    /// Fused into the output clamp.
    pub activation: FusedActivation,
    /// Which TFLite kernel path's arithmetic to reproduce.
    pub requantization: ConvRequantization,
}

/// What both convolutions prepare.
#[derive(Clone, Debug)]
struct Prepared {
    geometry: ConvGeometry,
    /// Input channels per output channel.
    depth: usize,
    outputs_per_group: usize,
    /// `[output channel][ky][kx][depth]`.
    weights: Vec<i8>,
    bias: Vec<i32>,
    input_zero_point: i32,
    stage: OutputStage,
    input_len: usize,
    output_len: usize,
}

impl Prepared {
    fn new(
        op: &'static str,
        geometry: ConvGeometry,
        depth: usize,
        outputs_per_group: usize,
        bias: Option<&[i32]>,
        q: &ConvQuantization<'_>,
    ) -> Result<Prepared> {
        let (input_len, output_len) = geometry.validate(op)?;
        let channels = geometry.output_channels;
        if let Some(b) = bias {
            check_length(op, "bias", Some(channels), b.len())?;
        }
        let stage = OutputStage::new(
            op,
            channels,
            q.input,
            q.weight_scales,
            q.output,
            q.activation,
            q.requantization,
        )?;
        let bias = match bias {
            Some(b) => {
                let mut v = try_filled(op, "bias", 0, channels)?;
                v.copy_from_slice(b);
                v
            }
            None => try_filled(op, "bias", 0, channels)?,
        };
        Ok(Prepared {
            geometry,
            depth,
            outputs_per_group,
            weights: Vec::new(),
            bias,
            input_zero_point: q.input.zero_point,
            stage,
            input_len,
            output_len,
        })
    }

    fn rows(&self) -> usize {
        self.geometry.batch * self.geometry.output_height
    }

    /// Checks a run's backend, buffers and rows.
    fn check(
        &self,
        op: &'static str,
        backend: Backend,
        input: &[i8],
        output: &[i8],
        rows: &Range<usize>,
    ) -> Result<()> {
        if !backend.is_available() {
            return Err(Error::BackendUnavailable {
                backend: backend.name(),
            });
        }
        check_length(op, "input", Some(self.input_len), input.len())?;
        check_length(op, "output", Some(self.output_len), output.len())?;
        if rows.start > rows.end || rows.end > self.rows() {
            return Err(Error::Tile {
                op,
                what: "output rows",
                start: rows.start,
                end: rows.end,
                limit: self.rows(),
                grain: 1,
            });
        }
        Ok(())
    }

    /// The scalar loops over output rows `rows` (checked) into `output`
    /// holding the rows from `first` on.
    fn run_scalar<F: FirstRow>(&self, input: &[i8], output: (&mut [i8], F), rows: Range<usize>) {
        let layer = Layer {
            geometry: &self.geometry,
            depth: self.depth,
            weights: &self.weights,
            bias: &self.bias,
            input_zero_point: self.input_zero_point,
            stage: &self.stage,
            outputs_per_group: self.outputs_per_group,
        };
        scalar::conv(&layer, input, output, rows);
    }
}

/// The public methods both convolutions share.
macro_rules! conv_methods {
    ($op:ident, $name:literal) => {
        impl $op {
            /// The geometry given to `new`.
            pub fn geometry(&self) -> &ConvGeometry {
                &self.prepared.geometry
            }

            /// The backend [`run`](Self::run) uses: [`Backend::best`].
            pub fn backend(&self) -> Backend {
                self.backend
            }

            /// Output rows in the batch (`batch * output_height`): the
            /// units [`run_rows`](Self::run_rows) splits the work into.
            pub fn rows(&self) -> usize {
                self.prepared.rows()
            }

            /// The whole convolution of the NHWC `input` into the NHWC
            /// `output`. Errors ([`Error::Length`]) unless both have the
            /// geometry's element counts. Allocates nothing.
            pub fn run(&self, input: &[i8], output: &mut [i8]) -> Result<()> {
                self.run_rows(self.backend, input, output, 0..self.rows())
            }

            /// Only output rows `rows` (row `r` is image `r / output_height`,
            /// row `r % output_height`) of the whole `output`, with
            /// `backend`: exactly the bytes [`run`](Self::run) writes there,
            /// whatever the split. [`Error::Tile`] for rows past
            /// [`rows`](Self::rows) or reversed;
            /// [`Error::BackendUnavailable`] for a backend not here.
            pub fn run_rows(
                &self,
                backend: Backend,
                input: &[i8],
                output: &mut [i8],
                rows: Range<usize>,
            ) -> Result<()> {
                self.prepared.check($name, backend, input, output, &rows)?;
                self.dispatch(backend, input, (output, Whole), rows)
            }
        }
    };
}

/// A prepared int8 CONV_2D (see the [module](self) for the arithmetic).
#[derive(Clone, Debug)]
#[cfg_attr(docsrs, doc(cfg(feature = "alloc")))]
pub struct Conv2d {
    prepared: Prepared,
    backend: Backend,
    /// A pointwise layer (1x1 kernel, stride 1, no padding, one group)
    /// under a quantized multiplier: the same arithmetic as a fully
    /// connected layer over the pixels, so the GEMM's NEON kernels run it.
    pointwise: Option<Box<Gemm>>,
    /// Any other layer under a quantized multiplier: an implicit GEMM over
    /// a scratch of a few pixels' windows.
    implicit: Option<Box<Implicit>>,
}

/// The scratch [`Conv2d::run_rows`] keeps on the stack for the implicit
/// GEMM; a layer whose one pixel's window is larger runs the scalar loops
/// there (and the implicit GEMM through
/// [`Conv2d::run_rows_with_scratch`]).
const STACK_SCRATCH: usize = 4096;

const CONV: &str = "conv_2d";
const DEPTHWISE: &str = "depthwise_conv_2d";

impl Conv2d {
    /// Validates and prepares a convolution.
    ///
    /// * `geometry`: sizes, strides, dilations, padding;
    /// * `filter_depth`: input channels each filter reads; below
    ///   `input_channels` the convolution is grouped (`input_channels /
    ///   filter_depth` groups, which must divide both channel counts, as
    ///   TFLite requires);
    /// * `weights`: OHWI, `output_channels x kernel_height x kernel_width x
    ///   filter_depth`;
    /// * `bias`: one int32 per output channel in units of `input_scale *
    ///   weight_scale[c]`, or `None` for zeros.
    ///
    /// Errors: a zero size, stride or dilation ([`Error::ZeroDimension`]),
    /// counts that overflow ([`Error::OutOfDomain`]), a filter depth that
    /// does not divide the channels or buffers of the wrong length
    /// ([`Error::Length`]), scales and zero points out of their domains
    /// ([`Error::Scale`], [`Error::ZeroPoint`]), and a scale the chosen
    /// path cannot represent ([`Error::Unsupported`]: with double rounding
    /// an effective scale of 2^30 or more, with XNNPACK's one of 256 or
    /// more).
    pub fn new(
        geometry: ConvGeometry,
        filter_depth: usize,
        weights: &[i8],
        bias: Option<&[i32]>,
        quantization: &ConvQuantization<'_>,
    ) -> Result<Conv2d> {
        geometry.validate(CONV)?;
        if filter_depth == 0 {
            return Err(Error::ZeroDimension {
                op: CONV,
                what: "filter depth",
            });
        }
        if !geometry.input_channels.is_multiple_of(filter_depth) {
            return Err(Error::Length {
                op: CONV,
                what: "input channels (a multiple of the filter depth)",
                expected: geometry.input_channels.div_ceil(filter_depth) * filter_depth,
                got: geometry.input_channels,
            });
        }
        let groups = geometry.input_channels / filter_depth;
        if !geometry.output_channels.is_multiple_of(groups) {
            return Err(Error::Length {
                op: CONV,
                what: "output channels (a multiple of the groups, input channels / filter depth)",
                expected: geometry.output_channels.div_ceil(groups) * groups,
                got: geometry.output_channels,
            });
        }
        let len = [
            geometry.output_channels,
            geometry.kernel_height,
            geometry.kernel_width,
            filter_depth,
        ]
        .iter()
        .try_fold(1usize, |a, &d| a.checked_mul(d));
        check_length(CONV, "weights", len, weights.len())?;
        let mut prepared = Prepared::new(
            CONV,
            geometry,
            filter_depth,
            geometry.output_channels / groups,
            bias,
            quantization,
        )?;
        // OHWI is already the loops' order.
        let mut w = try_filled(CONV, "weights", 0i8, weights.len())?;
        w.copy_from_slice(weights);
        prepared.weights = w;
        let pointwise = match quantization.requantization {
            ConvRequantization::Multiplier(rounding) if is_pointwise(&geometry, filter_depth) => {
                // OHWI with a 1x1 kernel is the GEMM's n x k row-major.
                let per_channel: Vec<f32> = match quantization.weight_scales {
                    [s] => alloc::vec![*s; geometry.output_channels],
                    scales => scales.to_vec(),
                };
                Some(Box::new(Gemm::new(
                    weights,
                    geometry.output_channels,
                    filter_depth,
                    bias,
                    quantization.input,
                    &per_channel,
                    quantization.output,
                    quantization.activation,
                    rounding,
                )?))
            }
            _ => None,
        };
        let implicit = match quantization.requantization {
            ConvRequantization::Multiplier(rounding) if pointwise.is_none() => {
                Some(Box::new(Implicit::new(
                    &geometry,
                    filter_depth,
                    weights,
                    bias,
                    quantization,
                    rounding,
                )?))
            }
            _ => None,
        };
        Ok(Conv2d {
            prepared,
            backend: Backend::best(),
            pointwise,
            implicit,
        })
    }

    /// The scratch bytes [`run_rows_with_scratch`](Self::run_rows_with_scratch)
    /// needs: the im2col rows of a few output pixels (at most 256, at
    /// least 8, about 16 KiB), or 0 for a layer that needs none (a
    /// pointwise layer, the XNNPACK path).
    pub fn scratch_bytes(&self) -> usize {
        self.implicit.as_ref().map_or(0, |i| i.scratch_bytes())
    }

    /// [`run_rows`](Self::run_rows) with a caller's `scratch` of at least
    /// [`scratch_bytes`](Self::scratch_bytes) bytes (its contents do not
    /// matter, and are overwritten), so that no layer falls back to the
    /// scalar loops for want of stack scratch. The same bytes as `run_rows`.
    /// [`Error::Length`] for a shorter scratch.
    pub fn run_rows_with_scratch(
        &self,
        backend: Backend,
        input: &[i8],
        output: &mut [i8],
        rows: Range<usize>,
        scratch: &mut [i8],
    ) -> Result<()> {
        self.prepared.check(CONV, backend, input, output, &rows)?;
        if scratch.len() < self.scratch_bytes() {
            return Err(Error::Length {
                op: CONV,
                what: "scratch (at least scratch_bytes())",
                expected: self.scratch_bytes(),
                got: scratch.len(),
            });
        }
        match &self.implicit {
            Some(implicit) if backend != Backend::Scalar => implicit.run(
                &self.prepared.geometry,
                backend,
                input,
                (output, Whole),
                rows,
                scratch,
            ),
            _ => self.dispatch(backend, input, (output, Whole), rows),
        }
    }

    /// Output rows `rows` (checked) into `output`, which holds the rows from
    /// row `first` on (0: the whole output), with `backend`: a pointwise layer's
    /// rows through the GEMM on NEON, other layers under a quantized
    /// multiplier through the implicit GEMM over [`STACK_SCRATCH`] bytes of
    /// stack (when one pixel's window fits), every other layer (and
    /// [`Backend::Scalar`]) the scalar loops.
    fn dispatch<F: FirstRow>(
        &self,
        backend: Backend,
        input: &[i8],
        (output, first): (&mut [i8], F),
        rows: Range<usize>,
    ) -> Result<()> {
        match &self.pointwise {
            Some(gemm) if backend != Backend::Scalar => {
                let g = &self.prepared.geometry;
                // Stride 1 and no padding: output row r reads input row r.
                let pixels = g.output_width;
                let (k, n) = (g.input_channels, g.output_channels);
                gemm.run_with(
                    backend,
                    &input[rows.start * pixels * k..rows.end * pixels * k],
                    &mut output[(rows.start - first.row()) * pixels * n
                        ..(rows.end - first.row()) * pixels * n],
                    rows.len() * pixels,
                )
            }
            _ => match &self.implicit {
                Some(implicit) if backend != Backend::Scalar && self.scratch_fits_stack() => {
                    let mut scratch = [0i8; STACK_SCRATCH];
                    let g = &self.prepared.geometry;
                    implicit.run(g, backend, input, (output, first), rows, &mut scratch)
                }
                _ => {
                    self.prepared.run_scalar(input, (output, first), rows);
                    Ok(())
                }
            },
        }
    }

    /// One pixel's im2col row fits [`STACK_SCRATCH`].
    fn scratch_fits_stack(&self) -> bool {
        let g = &self.prepared.geometry;
        g.kernel_height * g.kernel_width * self.prepared.depth <= STACK_SCRATCH
    }

    /// Input channels each filter reads.
    pub fn filter_depth(&self) -> usize {
        self.prepared.depth
    }
}

conv_methods!(Conv2d, "conv_2d");

/// A 1x1 kernel at stride 1 without padding over all input channels: each
/// output pixel is its input pixel times the weight matrix.
fn is_pointwise(g: &ConvGeometry, filter_depth: usize) -> bool {
    g.kernel_height == 1
        && g.kernel_width == 1
        && g.stride_height == 1
        && g.stride_width == 1
        && g.pad_top == 0
        && g.pad_left == 0
        && g.output_height == g.input_height
        && g.output_width == g.input_width
        && filter_depth == g.input_channels
}

/// A prepared int8 DEPTHWISE_CONV_2D (see the [module](self) for the
/// arithmetic).
#[derive(Clone, Debug)]
#[cfg_attr(docsrs, doc(cfg(feature = "alloc")))]
pub struct DepthwiseConv2d {
    prepared: Prepared,
    backend: Backend,
    /// The NEON kernel's layout of the weights and output stage.
    #[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
    packed: Box<depthwise::Packed>,
}

impl DepthwiseConv2d {
    /// Validates and prepares a depthwise convolution.
    ///
    /// * `geometry`: sizes, strides, dilations, padding; `output_channels`
    ///   must be `input_channels * depth_multiplier`;
    /// * `weights`: TFLite's `1 x kernel_height x kernel_width x
    ///   output_channels` (output channel `c` filters input channel
    ///   `c / depth_multiplier`);
    /// * `bias`: one int32 per output channel, or `None` for zeros.
    ///
    /// Errors as [`Conv2d::new`], and [`Error::Length`] for output channels
    /// that are not `input_channels * depth_multiplier`.
    pub fn new(
        geometry: ConvGeometry,
        depth_multiplier: usize,
        weights: &[i8],
        bias: Option<&[i32]>,
        quantization: &ConvQuantization<'_>,
    ) -> Result<DepthwiseConv2d> {
        geometry.validate(DEPTHWISE)?;
        if depth_multiplier == 0 {
            return Err(Error::ZeroDimension {
                op: DEPTHWISE,
                what: "depth multiplier",
            });
        }
        let channels = geometry.output_channels;
        check_length(
            DEPTHWISE,
            "output channels (input channels * depth multiplier)",
            geometry.input_channels.checked_mul(depth_multiplier),
            channels,
        )?;
        let taps = geometry.kernel_height * geometry.kernel_width;
        check_length(
            DEPTHWISE,
            "weights",
            taps.checked_mul(channels),
            weights.len(),
        )?;
        let mut prepared =
            Prepared::new(DEPTHWISE, geometry, 1, depth_multiplier, bias, quantization)?;
        // [tap][channel] -> [channel][tap]: each output channel's taps
        // side by side, as the loops read them.
        let mut w = try_filled(DEPTHWISE, "weights", 0i8, weights.len())?;
        for (t, row) in weights.chunks_exact(channels).enumerate() {
            for (c, &v) in row.iter().enumerate() {
                w[c * taps + t] = v;
            }
        }
        prepared.weights = w;
        #[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
        let packed = Box::new(depthwise::Packed::new(
            DEPTHWISE,
            &geometry,
            depth_multiplier,
            &prepared.weights,
            &prepared.bias,
            prepared.input_zero_point,
            &prepared.stage,
        )?);
        Ok(DepthwiseConv2d {
            prepared,
            backend: Backend::best(),
            #[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
            packed,
        })
    }

    /// The requantization LiteRT's aarch64 optimized kernels apply to a
    /// layer of this geometry and multiplier (see
    /// [`depthwise::litert_aarch64_requantization`]).
    pub fn litert_aarch64_requantization(
        geometry: &ConvGeometry,
        depth_multiplier: usize,
    ) -> ConvRequantization {
        depthwise::litert_aarch64_requantization(geometry, depth_multiplier)
    }

    /// Output rows `rows` (checked) into `output` from row `first` on (as
    /// [`Conv2d`]'s): the NEON kernel, or the scalar loops for
    /// [`Backend::Scalar`].
    fn dispatch<F: FirstRow>(
        &self,
        backend: Backend,
        input: &[i8],
        output: (&mut [i8], F),
        rows: Range<usize>,
    ) -> Result<()> {
        #[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
        if backend == Backend::Neon {
            depthwise::neon::depthwise_rows(
                &self.packed,
                &self.prepared.geometry,
                input,
                output,
                rows,
            );
            return Ok(());
        }
        let _ = backend;
        self.prepared.run_scalar(input, output, rows);
        Ok(())
    }

    /// Output channels per input channel.
    pub fn depth_multiplier(&self) -> usize {
        self.prepared.outputs_per_group
    }
}

conv_methods!(DepthwiseConv2d, "depthwise_conv_2d");
#[cfg(test)]
mod tests;
