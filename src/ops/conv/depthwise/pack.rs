//! The depthwise convolution's weights, bias and per-channel output
//! stage in the NEON kernel's layout ([`Packed`]), prepared once by
//! `DepthwiseConv2d::new`: weights as 16-bit values in blocks of 16
//! output channels, every per-channel array padded to whole blocks.

use alloc::vec::Vec;

use super::super::geometry::ConvGeometry;
use super::super::params::{ChannelScales, OutputStage};
use crate::error::Result;
use crate::ops::requant::try_filled;

/// Output channels per block (the widest kernel's lanes).
pub(super) const BLOCK: usize = super::super::depthwise_conv2d::CHANNEL_BLOCK;

/// How a block's lanes find their input bytes.
#[derive(Clone, Debug)]
pub(super) enum Gather {
    /// Depth multiplier 1: lane `k` of block `c0` reads channel `c0 + k`.
    Direct,
    /// One input channel: every lane reads it.
    Broadcast,
    /// Lane `k` of block `b` reads byte `table[b][k]` of the 16 from
    /// channel `start[b]`.
    Table {
        start: Vec<usize>,
        table: Vec<[u8; 16]>,
    },
}

/// Which arithmetic the output stage runs (see [`ChannelScales`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub(super) enum Stage {
    Double,
    Single,
    TiesUpward,
    TiesUpwardInBlocksOf8,
    F32,
}

/// The per-channel arrays of the output stage, padded to whole blocks
/// (padding lanes: multiplier 0, scale 0; never stored).
#[derive(Clone, Debug)]
pub(super) struct LaneStage {
    pub(super) stage: Stage,
    pub(super) multiplier: Vec<i32>,
    pub(super) left_shift: Vec<i32>,
    pub(super) neg_right_shift: Vec<i32>,
    /// Single rounding's `-(31 - shift)`.
    pub(super) neg_total_shift: Vec<i64>,
    /// [`Stage::TiesUpwardInBlocksOf8`]: -1 on the channels of whole
    /// blocks of 8, their split shifts.
    pub(super) block_lanes: Vec<i32>,
    pub(super) block_left_shift: Vec<i32>,
    pub(super) block_neg_right_shift: Vec<i32>,
    pub(super) scales: Vec<f32>,
    pub(super) zero_point: i16,
    pub(super) act_min: i8,
    pub(super) act_max: i8,
    /// [`Stage::TiesUpward`] with no channel shifting left (the `sdot`
    /// kernel's 3x3 asm loop over a call's rows: `super::rows3`).
    pub(super) right_only: bool,
}

/// A depthwise layer's weights, bias and output stage in the kernel's
/// layout, prepared once.
#[derive(Clone, Debug)]
pub(crate) struct Packed {
    /// Taps per filter (`kernel_height * kernel_width`).
    pub(super) taps: usize,
    /// `[block][tap][16 lanes]`, zero past the last channel (empty when
    /// the layer runs the pair kernel, which reads its own 8-bit weights).
    pub(super) weights: Vec<i16>,
    /// Padded to whole blocks.
    pub(super) bias: Vec<i32>,
    pub(super) gather: Gather,
    pub(super) stage: LaneStage,
    /// The input zero point in every lane, loaded as a vector (a splat
    /// the compiler cannot see, so the high halves widen with `ssubl2`
    /// rather than an `ext` and `ssubl`).
    pub(super) input_zero_point: [i8; BLOCK],
}

impl Packed {
    /// Packs `weights` (`[channel][tap]`, the scalar loops' order), the
    /// 16-bit weights only when `widening` (the layer runs this kernel).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        op: &'static str,
        g: &ConvGeometry,
        depth_multiplier: usize,
        weights: &[i8],
        bias: &[i32],
        input_zero_point: i32,
        stage: &OutputStage,
        widening: bool,
    ) -> Result<Packed> {
        let channels = g.output_channels;
        let taps = g.kernel_height * g.kernel_width;
        let blocks = channels.div_ceil(BLOCK);
        let padded = blocks * BLOCK;
        let wide = if widening { padded * taps } else { 0 };
        let mut w = try_filled(op, "packed weights", 0i16, wide)?;
        for c in (0..channels).filter(|_| widening) {
            let (b, lane) = (c / BLOCK, c % BLOCK);
            for t in 0..taps {
                w[(b * taps + t) * BLOCK + lane] = weights[c * taps + t] as i16;
            }
        }
        let mut padded_bias = try_filled(op, "packed bias", 0i32, padded)?;
        padded_bias[..channels].copy_from_slice(bias);
        let gather = if depth_multiplier == 1 {
            Gather::Direct
        } else if g.input_channels == 1 {
            Gather::Broadcast
        } else {
            let m = depth_multiplier;
            let mut start = try_filled(op, "gather table", 0usize, blocks)?;
            let mut table = try_filled(op, "gather table", [0u8; 16], blocks)?;
            for b in 0..blocks {
                let c0 = b * BLOCK;
                start[b] = c0 / m;
                // (c0 + k) / m - c0 / m <= k < 16.
                table[b] = core::array::from_fn(|k| ((c0 + k) / m - c0 / m) as u8);
            }
            Gather::Table { start, table }
        };
        Ok(Packed {
            taps,
            weights: w,
            bias: padded_bias,
            gather,
            stage: LaneStage::new(op, stage, channels, padded)?,
            input_zero_point: [input_zero_point as i8; BLOCK],
        })
    }
}

impl LaneStage {
    fn new(op: &'static str, s: &OutputStage, channels: usize, padded: usize) -> Result<Self> {
        let mut l = LaneStage {
            stage: Stage::Double,
            multiplier: try_filled(op, "multipliers", 0, padded)?,
            left_shift: try_filled(op, "multipliers", 0, padded)?,
            neg_right_shift: try_filled(op, "multipliers", 0, padded)?,
            neg_total_shift: Vec::new(),
            block_lanes: Vec::new(),
            block_left_shift: Vec::new(),
            block_neg_right_shift: Vec::new(),
            scales: Vec::new(),
            zero_point: s.zero_point as i16,
            act_min: s.act_min as i8,
            act_max: s.act_max as i8,
            right_only: false,
        };
        let fixed = |l: &mut LaneStage, m: &crate::ops::requant::ChannelMultipliers| {
            l.multiplier[..channels].copy_from_slice(&m.multiplier[..channels]);
            l.left_shift[..channels].copy_from_slice(&m.left_shift[..channels]);
            l.neg_right_shift[..channels].copy_from_slice(&m.neg_right_shift[..channels]);
        };
        let total = |l: &mut LaneStage, m: &crate::ops::requant::ChannelMultipliers| {
            let mut v = try_filled(op, "multipliers", -32i64, padded)?;
            v[..channels].copy_from_slice(&m.neg_total_shift[..channels]);
            l.neg_total_shift = v;
            Ok::<(), crate::error::Error>(())
        };
        match &s.scales {
            ChannelScales::Fixed(m) => {
                fixed(&mut l, m);
                if m.rounding == crate::quant::Rounding::Single {
                    // Single rounding reads the multiplier and total shift.
                    l.stage = Stage::Single;
                    total(&mut l, m)?;
                }
            }
            ChannelScales::TiesUpward(m) => {
                fixed(&mut l, m);
                l.stage = Stage::TiesUpward;
            }
            ChannelScales::TiesUpwardInBlocksOf8 {
                blocks,
                double,
                block_channels,
            } if *block_channels == channels => {
                // Every channel is in a whole block of 8: the blocks' stage
                // alone (the double rounding it would select against is
                // never taken).
                l.multiplier[..channels].copy_from_slice(&double.multiplier[..channels]);
                l.left_shift[..channels].copy_from_slice(&blocks.left_shift[..channels]);
                l.neg_right_shift[..channels].copy_from_slice(&blocks.neg_right_shift[..channels]);
                l.stage = Stage::TiesUpward;
            }
            ChannelScales::TiesUpwardInBlocksOf8 {
                blocks,
                double,
                block_channels,
            } => {
                fixed(&mut l, double);
                let padded_copy = |v: &[i32]| {
                    let mut p = try_filled(op, "multipliers", 0i32, padded)?;
                    p[..channels].copy_from_slice(&v[..channels]);
                    Ok::<_, crate::error::Error>(p)
                };
                l.block_left_shift = padded_copy(&blocks.left_shift)?;
                l.block_neg_right_shift = padded_copy(&blocks.neg_right_shift)?;
                let mut lanes = try_filled(op, "multipliers", 0i32, padded)?;
                lanes[..*block_channels].fill(-1);
                l.block_lanes = lanes;
                l.stage = Stage::TiesUpwardInBlocksOf8;
            }
            ChannelScales::F32(scales) => {
                let mut v = try_filled(op, "scales", 0.0f32, padded)?;
                v[..channels].copy_from_slice(&scales[..channels]);
                l.scales = v;
                l.stage = Stage::F32;
            }
        }
        l.right_only = l.stage == Stage::TiesUpward && l.left_shift.iter().all(|&v| v == 0);
        Ok(l)
    }
}
