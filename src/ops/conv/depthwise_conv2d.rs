//! The prepared DEPTHWISE_CONV_2D ([`DepthwiseConv2d`]): its validation,
//! the weights reordered for the scalar loops and packed for the NEON
//! kernel, and a run's dispatch to one of them.

#[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
use alloc::boxed::Box;
use core::ops::Range;

use super::depthwise;
use super::geometry::ConvGeometry;
use super::origin::FirstRow;
use super::params::{ConvQuantization, ConvRequantization};
use super::prepared::Prepared;
use crate::backend::Backend;
use crate::checks::check_length;
use crate::error::{Error, Result};
use crate::ops::requant::try_filled;

pub(super) const DEPTHWISE: &str = "depthwise_conv_2d";

/// Output channels of the kernels' blocks: every kernel computes a layer
/// 16 channels at a time (a last block the rest), so a range of whole
/// blocks ([`DepthwiseConv2d::run_band_channels`]) costs what those blocks
/// cost in a run of every channel.
pub const CHANNEL_BLOCK: usize = 16;

/// A prepared int8 DEPTHWISE_CONV_2D (see the [module](super) for the
/// arithmetic).
#[derive(Clone, Debug)]
#[cfg_attr(docsrs, doc(cfg(feature = "alloc")))]
pub struct DepthwiseConv2d {
    pub(super) prepared: Prepared,
    pub(super) backend: Backend,
    /// The NEON kernel's layout of the weights and output stage.
    #[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
    pub(super) packed: Box<depthwise::Packed>,
    /// The pair kernel's layout, for the layers it takes.
    #[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
    pub(super) folded: Option<Box<depthwise::Folded>>,
}

/// The checks of a depthwise layer's shape every prepared form makes: the
/// geometry, a depth multiplier of at least 1, output channels of
/// `input_channels * depth_multiplier`, `weights` of `taps * channels`.
/// Returns the input's length in bytes.
pub(super) fn check_depthwise(
    geometry: &ConvGeometry,
    depth_multiplier: usize,
    weights: &[i8],
) -> Result<usize> {
    let (input_len, _) = geometry.validate(DEPTHWISE)?;
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
    Ok(input_len)
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
    /// Errors as [`Conv2d::new`](super::Conv2d::new), and [`Error::Length`] for output channels
    /// that are not `input_channels * depth_multiplier`.
    pub fn new(
        geometry: ConvGeometry,
        depth_multiplier: usize,
        weights: &[i8],
        bias: Option<&[i32]>,
        quantization: &ConvQuantization<'_>,
    ) -> Result<DepthwiseConv2d> {
        check_depthwise(&geometry, depth_multiplier, weights)?;
        let channels = geometry.output_channels;
        let taps = geometry.kernel_height * geometry.kernel_width;
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
        let folded = depthwise::Folded::new(
            DEPTHWISE,
            &geometry,
            depth_multiplier,
            &prepared.weights,
            &prepared.bias,
            prepared.input_zero_point,
        )?
        .map(Box::new);
        #[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
        let packed = Box::new(depthwise::Packed::new(
            DEPTHWISE,
            &geometry,
            depth_multiplier,
            &prepared.weights,
            &prepared.bias,
            prepared.input_zero_point,
            &prepared.stage,
            folded.as_ref().is_none_or(|f| f.broadcast()),
        )?);
        Ok(DepthwiseConv2d {
            prepared,
            backend: Backend::best(),
            #[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
            packed,
            #[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
            folded,
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
    pub(super) fn dispatch<F: FirstRow>(
        &self,
        backend: Backend,
        input: &[i8],
        output: (&mut [i8], F),
        rows: Range<usize>,
    ) -> Result<()> {
        let blocks = 0..self
            .prepared
            .geometry
            .output_channels
            .div_ceil(CHANNEL_BLOCK);
        self.dispatch_blocks(backend, input, output, (rows, blocks))
    }

    /// [`dispatch`](Self::dispatch) of the output channels of blocks
    /// `blocks` (checked) of [`CHANNEL_BLOCK`] channels only: every kernel
    /// runs its blocks of channels one after the other, each the same
    /// whatever the others.
    pub(super) fn dispatch_blocks<F: FirstRow>(
        &self,
        backend: Backend,
        input: &[i8],
        output: (&mut [i8], F),
        (rows, blocks): (Range<usize>, Range<usize>),
    ) -> Result<()> {
        let rows = (rows, blocks);
        #[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
        if backend == Backend::Neon {
            if let Some(folded) = self.folded.as_ref().filter(|f| f.runs()) {
                depthwise::pairs::depthwise_rows(
                    &self.packed,
                    folded,
                    &self.prepared.geometry,
                    input,
                    output,
                    rows,
                );
                return Ok(());
            }
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
        let (rows, blocks) = rows;
        let channels = self.prepared.geometry.output_channels;
        let channels = (blocks.start * CHANNEL_BLOCK).min(channels)
            ..(blocks.end * CHANNEL_BLOCK).min(channels);
        self.prepared.run_scalar(input, output, (rows, channels));
        Ok(())
    }

    /// Output channels per input channel.
    pub fn depth_multiplier(&self) -> usize {
        self.prepared.outputs_per_group
    }
}
