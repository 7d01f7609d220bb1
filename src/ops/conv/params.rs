//! The quantization a convolution is given ([`ConvQuantization`]) and the
//! output stage it prepares from it: each channel's requantization of the
//! int32 accumulator in one of TFLite's three kernel paths, the output
//! zero point and the fused activation's clamp.

use alloc::vec::Vec;

use super::super::requant::{try_filled, ChannelLane, ChannelMultipliers, FusedActivation};
use crate::checks::{check_length, check_scale, check_zero_point};
use crate::error::{Error, Result};
use crate::fixedpoint::Lane;
use crate::quant::{rounding_shift_ties_upward, QuantParams, Rounding};

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

/// How a convolution scales its int32 accumulator to output units: the
/// arithmetic of one of TFLite's kernel paths.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ConvRequantization {
    /// TFLite's `MultiplyByQuantizedMultiplier` with the quantized
    /// per-channel multiplier in this [`Rounding`]. Measured on LiteRT 2.3:
    /// its reference CONV_2D and DEPTHWISE_CONV_2D and its optimized
    /// DEPTHWISE_CONV_2D round twice ([`Rounding::Double`]), its optimized
    /// CONV_2D once ([`Rounding::Single`]).
    Multiplier(Rounding),
    /// The XNNPACK delegate's `fp32` requantization: the channel's scale
    /// `input_scale * weight_scale / output_scale` computed in `f32`, the
    /// product `f32(acc) * scale` clamped to the output range less the zero
    /// point, rounded to nearest with ties to even (`lrintf`), then the
    /// zero point added. The fused activation's bounds are quantized as
    /// XNNPACK does (`lrintf(bound / scale + zero_point)`, in `f32`).
    XnnpackF32,
    /// LiteRT's aarch64 optimized 3x3 depthwise kernel
    /// (`DepthwiseConvOutputRounding::kUpward`): double rounding whose final
    /// power-of-two divide rounds ties toward +infinity (a bare rounding
    /// shift, `srshl`) instead of away from zero. TFLite takes that kernel
    /// for the layers [`DepthwiseConv2d::litert_aarch64_requantization`]
    /// names.
    ///
    /// [`DepthwiseConv2d::litert_aarch64_requantization`]: super::DepthwiseConv2d::litert_aarch64_requantization
    DoubleTiesUpward,
    /// LiteRT's aarch64 optimized general depthwise kernel: its output stage
    /// (`optimized_ops::Quantize`) requantizes the channels in whole blocks
    /// of 8 (channel `c < 8 * (channels / 8)`) in NEON, with the shift
    /// split as `right = min(shift, -1)`, `left = shift - right`:
    /// `srshl(sqrdmulh(acc << left, multiplier), right)`, ties of both
    /// roundings toward +infinity (for `shift <= -1` this is
    /// [`DoubleTiesUpward`](Self::DoubleTiesUpward)); the last
    /// `channels % 8` one by one with double rounding.
    TiesUpwardInBlocksOf8,
}

impl From<Rounding> for ConvRequantization {
    fn from(rounding: Rounding) -> Self {
        ConvRequantization::Multiplier(rounding)
    }
}

impl ConvRequantization {
    /// `"double"`, `"single"` or `"xnnpack-f32"`.
    pub const fn name(self) -> &'static str {
        match self {
            ConvRequantization::Multiplier(r) => r.name(),
            ConvRequantization::XnnpackF32 => "xnnpack-f32",
            ConvRequantization::DoubleTiesUpward => "double-ties-upward",
            ConvRequantization::TiesUpwardInBlocksOf8 => "ties-upward-in-blocks-of-8",
        }
    }
}

/// XNNPACK refuses a requantization scale at or above this (its qs8
/// convolution's `requantization scale ... is greater or equal to 256.0`).
const XNNPACK_MAX_SCALE: f32 = 256.0;

/// Adding then subtracting 1.5 * 2^23 rounds an `f32` of magnitude below
/// 2^22 to an integer, ties to even (the FPU's default rounding): what
/// `lrintf` gives on values that small.
const ROUND_TO_EVEN_MAGIC: f32 = 12_582_912.0;

/// `lrintf` of an `f32` within `[-2^22, 2^22]`.
#[inline(always)]
pub(crate) fn round_ties_even_small(x: f32) -> f32 {
    debug_assert!(x.abs() <= 4_194_304.0);
    (x + ROUND_TO_EVEN_MAGIC) - ROUND_TO_EVEN_MAGIC
}

/// Each channel's scale to output units.
#[derive(Clone, Debug)]
pub(crate) enum ChannelScales {
    /// Quantized multipliers (double or single rounding).
    Fixed(ChannelMultipliers),
    /// XNNPACK's `f32` scales.
    F32(Vec<f32>),
    /// Double-rounding multipliers whose final divide rounds ties upward.
    TiesUpward(ChannelMultipliers),
    /// Channels below `block_channels`: `blocks`' shifts split for
    /// [`ConvRequantization::TiesUpwardInBlocksOf8`] (every right shift at
    /// least 1), rounded as [`ChannelScales::TiesUpward`]; the rest
    /// `double` (each array holds every channel).
    TiesUpwardInBlocksOf8 {
        blocks: ChannelMultipliers,
        double: ChannelMultipliers,
        block_channels: usize,
    },
}

/// Everything a convolution's output stage needs, prepared once.
#[derive(Clone, Debug)]
pub(crate) struct OutputStage {
    pub scales: ChannelScales,
    pub zero_point: i32,
    /// The activation range, in output units `[-128, 127]`.
    pub act_min: i32,
    pub act_max: i32,
}

impl OutputStage {
    /// Validates the quantization (scales finite and `> 0`, zero points in
    /// range, one weight scale or one per channel) and computes each
    /// channel's scale in `requantization`'s arithmetic.
    pub fn new(
        op: &'static str,
        channels: usize,
        input: QuantParams,
        weight_scales: &[f32],
        output: QuantParams,
        activation: FusedActivation,
        requantization: ConvRequantization,
    ) -> Result<OutputStage> {
        check_scale("input scale", input.scale)?;
        check_zero_point::<i8>("input zero point", input.zero_point)?;
        check_scale("output scale", output.scale)?;
        check_zero_point::<i8>("output zero point", output.zero_point)?;
        if weight_scales.len() != 1 {
            check_length(op, "weight scales", Some(channels), weight_scales.len())?;
        }
        for &s in weight_scales {
            check_scale("weight scale", s)?;
        }
        let scale_of = |c: usize| weight_scales[if weight_scales.len() == 1 { 0 } else { c }];
        let multipliers = |rounding: Rounding| {
            let per_channel: Vec<f32> = (0..channels).map(scale_of).collect();
            ChannelMultipliers::new(
                op,
                "weight scale",
                "with double rounding the effective output scale, input scale * weight \
                 scale / output scale, must be below 2^30",
                input.scale as f64,
                &per_channel,
                output.scale as f64,
                channels,
                rounding,
            )
        };
        let (scales, (act_min, act_max)) = match requantization {
            ConvRequantization::Multiplier(rounding) => (
                ChannelScales::Fixed(multipliers(rounding)?),
                activation.range_i8(output),
            ),
            ConvRequantization::DoubleTiesUpward => (
                ChannelScales::TiesUpward(multipliers(Rounding::Double)?),
                activation.range_i8(output),
            ),
            ConvRequantization::TiesUpwardInBlocksOf8 => {
                let double = multipliers(Rounding::Double)?;
                let mut blocks = double.clone();
                for c in 0..channels {
                    let shift = blocks.left_shift[c] + blocks.neg_right_shift[c];
                    let right = shift.min(-1);
                    // At most 31: double rounding's shifts are at most 30.
                    blocks.left_shift[c] = shift - right;
                    blocks.neg_right_shift[c] = right;
                }
                (
                    ChannelScales::TiesUpwardInBlocksOf8 {
                        blocks,
                        double,
                        block_channels: channels / 8 * 8,
                    },
                    activation.range_i8(output),
                )
            }
            ConvRequantization::XnnpackF32 => {
                let mut scales = try_filled(op, "scales", 0.0f32, channels)?;
                for (c, s) in scales.iter_mut().enumerate() {
                    *s = input.scale * scale_of(c) / output.scale;
                    if !s.is_finite() || *s >= XNNPACK_MAX_SCALE {
                        return Err(Error::Unsupported {
                            op,
                            dtype: "int8",
                            reason: "XNNPACK's requantization scale, input scale * weight scale \
                                     / output scale in f32, must be below 256",
                        });
                    }
                }
                (
                    ChannelScales::F32(scales),
                    activation.range_i8_xnnpack(output),
                )
            }
        };
        Ok(OutputStage {
            scales,
            zero_point: output.zero_point,
            act_min,
            act_max,
        })
    }

    /// Channel `c`'s output byte for accumulator `acc`.
    #[inline(always)]
    pub fn finish(&self, c: usize, acc: i32) -> i8 {
        match &self.scales {
            ChannelScales::Fixed(m) => self.finish_fixed(m.requantize(c, acc)),
            ChannelScales::TiesUpward(m) => self.finish_fixed(ties_upward(m, c, acc)),
            ChannelScales::TiesUpwardInBlocksOf8 {
                blocks,
                double,
                block_channels,
            } => self.finish_fixed(if c < *block_channels {
                ties_upward(blocks, c, acc)
            } else {
                double.requantize(c, acc)
            }),
            ChannelScales::F32(scales) => {
                // Clamp before rounding: the bounds are integers, so this
                // equals rounding first, and keeps the value small.
                let lo = (self.act_min - self.zero_point) as f32;
                let hi = (self.act_max - self.zero_point) as f32;
                let y = (acc as f32 * scales[c]).clamp(lo, hi);
                (round_ties_even_small(y) as i32 + self.zero_point) as i8
            }
        }
    }
}

impl OutputStage {
    /// A requantized value's output byte: the zero point added (saturating)
    /// and the activation's clamp.
    #[inline(always)]
    fn finish_fixed(&self, y: i32) -> i8 {
        y.saturating_add(self.zero_point)
            .clamp(self.act_min, self.act_max) as i8
    }
}

/// Channel `c`'s `srshl(sqrdmulh(acc << left, multiplier), right)`: both
/// roundings' ties toward +infinity, the left shift saturating.
#[inline(always)]
fn ties_upward(m: &ChannelMultipliers, c: usize, acc: i32) -> i32 {
    let q = m.channel(c);
    let x = acc
        .shl_lanes(q.left_shift)
        .saturating_rounding_doubling_high_mul(q.multiplier);
    rounding_shift_ties_upward(x, q.neg_right_shift)
}
