//! The prepared CONV_2D ([`Conv2d`]): its validation, the kernel `new`
//! picks for it (the GEMM for a pointwise layer, the implicit GEMM for any
//! other under an output stage the GEMM has, else the scalar loops) and a run's
//! dispatch to that kernel.

use alloc::boxed::Box;
use alloc::vec::Vec;
use core::ops::Range;

use super::geometry::ConvGeometry;
use super::igemm::Implicit;
use super::origin::{FirstRow, Whole};
use super::params::{ConvQuantization, ConvRequantization};
use super::prepared::Prepared;
use crate::backend::Backend;
use crate::checks::check_length;
use crate::error::{Error, Result};
use crate::ops::gemm::Gemm;
use crate::ops::requant::try_filled;
use crate::quant::Requantization;

/// A prepared int8 CONV_2D (see the [module](super) for the arithmetic).
#[derive(Clone, Debug)]
#[cfg_attr(docsrs, doc(cfg(feature = "alloc")))]
pub struct Conv2d {
    pub(super) prepared: Prepared,
    pub(super) backend: Backend,
    /// A pointwise layer (1x1 kernel, stride 1, no padding, one group)
    /// under a quantized multiplier or XNNPACK's `f32` scale: the same
    /// arithmetic as a fully connected layer over the pixels, so the GEMM's
    /// NEON kernels run it.
    pub(super) pointwise: Option<Box<Gemm>>,
    /// Any other layer under those output stages: an implicit GEMM over a
    /// scratch of a few pixels' windows.
    pub(super) implicit: Option<Box<Implicit>>,
}

/// The scratch [`Conv2d::run_rows`] keeps on the stack for the implicit
/// GEMM; a layer whose one pixel's window is larger runs the scalar loops
/// there (and the implicit GEMM through
/// [`Conv2d::run_rows_with_scratch`]).
const STACK_SCRATCH: usize = 4096;

pub(super) const CONV: &str = "conv_2d";

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
        let gemm_stage = gemm_requantization(quantization.requantization);
        let pointwise = match gemm_stage {
            Some(requantization) if is_pointwise(&geometry, filter_depth) => {
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
                    requantization,
                )?))
            }
            _ => None,
        };
        let implicit = match gemm_stage {
            Some(requantization) if pointwise.is_none() => Some(Box::new(Implicit::new(
                &geometry,
                filter_depth,
                weights,
                bias,
                quantization,
                requantization,
            )?)),
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
    /// pointwise layer, LiteRT's reference stages).
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
    /// rows through the GEMM on NEON, other layers under an output stage the GEMM has
    /// through the implicit GEMM over [`STACK_SCRATCH`] bytes of
    /// stack (when one pixel's window fits), every other layer (and
    /// [`Backend::Scalar`]) the scalar loops.
    pub(super) fn dispatch<F: FirstRow>(
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
                    let channels = 0..self.prepared.geometry.output_channels;
                    self.prepared
                        .run_scalar(input, (output, first), (rows, channels));
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

/// The GEMM output stage that gives `requantization`'s bytes, if the GEMM
/// has one: the quantized multiplier in either rounding (the same
/// per-channel multipliers as the scalar loops' `OutputStage`), and
/// XNNPACK's `f32` scale. XNNPACK's scalar stage clamps `acc * scale` to the
/// activation range less the zero point, then rounds to even and adds the
/// zero point; the GEMM's rounds to even (saturating), adds the zero point
/// and clamps. The bounds are integers and rounding is monotone, so
/// clamping before or after it gives the same value; the scale is the same
/// `f32` product `input * weight / output` and the range XNNPACK's in both.
/// LiteRT's reference stages with ties upward stay on the scalar loops.
fn gemm_requantization(requantization: ConvRequantization) -> Option<Requantization> {
    match requantization {
        ConvRequantization::Multiplier(rounding) => Some(rounding.into()),
        ConvRequantization::XnnpackF32 => Some(Requantization::XnnpackF32),
        ConvRequantization::DoubleTiesUpward | ConvRequantization::TiesUpwardInBlocksOf8 => None,
    }
}

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
