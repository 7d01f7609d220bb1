//! A DEPTHWISE_CONV_2D by ranges of output channels
//! ([`DepthwiseChannelBlocks::run_channels`]): every output pixel, some
//! channels, into a tile of their own. How threads share a depthwise layer
//! with few output rows and many channels (person_detect's last layers:
//! 6x6 and 3x3 pixels, up to 256 channels), which bands of output rows cut
//! into at most 6 or 3 shares.
//!
//! A depthwise output channel reads one input channel (`c /
//! depth_multiplier`), so the layer's channels fall apart into independent
//! layers: blocks of `grain` output channels, each a [`DepthwiseConv2d`] of
//! its own over the input channels it reads, prepared once from the
//! whole layer's weights, bias and per-channel scales. A run gathers each
//! block's input channels out of the NHWC input into a caller's scratch
//! (the block's input is a contiguous NHWC tensor), runs the block's
//! kernel, and writes its channels into the tile:
//!
//! ```text
//! for each block b in the range (channels b*grain .. b*grain + width):
//!     scratch_in[p][i]  = input[p][b*grain/depth_multiplier + i]   every input pixel p
//!     out_b             = block b's run over scratch_in            pixels x width
//!     tile[p][b*grain - start ..][..width] = out_b[p]              every output pixel p
//! ```
//!
//! (a range of one block runs straight into the tile). The bytes are the
//! whole layer's: each channel's accumulation and output stage are the
//! same whatever the channels around it. For
//! [`ConvRequantization::TiesUpwardInBlocksOf8`](super::ConvRequantization::TiesUpwardInBlocksOf8) (LiteRT's blocks of 8
//! channels, the last `channels % 8` rounded otherwise) the grain is a
//! multiple of 8 and every block but the last is whole, so each channel
//! keeps its place in LiteRT's blocks of 8.

use alloc::vec::Vec;
use core::ops::Range;

use super::depthwise_conv2d::{check_depthwise, DepthwiseConv2d, DEPTHWISE};
use super::geometry::ConvGeometry;
use super::params::ConvQuantization;
use crate::backend::Backend;
use crate::checks::check_length;
use crate::error::{Error, Result};
use crate::ops::requant::try_filled;

/// Output channels of the NEON kernel's widest block (16 lanes of int8)
/// and of its narrow one (8): a block's width is a multiple of one, so the
/// kernel has no channel tail but the layer's own.
const WIDE: usize = 16;
const NARROW: usize = 8;

/// Blocks below which the grain narrows from [`WIDE`] to [`NARROW`]:
/// enough blocks for 8 threads.
const ENOUGH_BLOCKS: usize = 8;

/// A DEPTHWISE_CONV_2D prepared as blocks of output channels, each a
/// [`DepthwiseConv2d`] of its own (see the [module](self)).
#[derive(Clone, Debug)]
pub struct DepthwiseChannelBlocks {
    geometry: ConvGeometry,
    depth_multiplier: usize,
    grain: usize,
    /// Block `b`: output channels `b * grain ..` (`grain` of them, the last
    /// block the rest).
    blocks: Vec<DepthwiseConv2d>,
    /// The largest block's input (`batch * input_height * input_width *
    /// grain / depth_multiplier`).
    gather_len: usize,
    /// A block's output (`pixels * grain`) when a range may hold several
    /// blocks; 0 with one block.
    block_out_len: usize,
}

impl DepthwiseChannelBlocks {
    /// Validates and prepares the depthwise convolution of
    /// [`DepthwiseConv2d::new`] (the same arguments, the same errors) as
    /// blocks of [`grain`](Self::grain) output channels. The grain is a
    /// multiple of the depth multiplier and of 16 (of 8 when 16 gives
    /// fewer than 8 blocks).
    pub fn new(
        geometry: ConvGeometry,
        depth_multiplier: usize,
        weights: &[i8],
        bias: Option<&[i32]>,
        quantization: &ConvQuantization<'_>,
    ) -> Result<DepthwiseChannelBlocks> {
        let input_len = check_depthwise(&geometry, depth_multiplier, weights)?;
        let channels = geometry.output_channels;
        let taps = geometry.kernel_height * geometry.kernel_width;
        if let Some(b) = bias {
            check_length(DEPTHWISE, "bias", Some(channels), b.len())?;
        }
        let scales = quantization.weight_scales;
        if scales.len() != 1 {
            check_length(DEPTHWISE, "weight scales", Some(channels), scales.len())?;
        }
        let grain = grain_for(channels, depth_multiplier)?;
        let input_pixels = input_len / geometry.input_channels;
        let pixels = geometry.batch * geometry.output_height * geometry.output_width;
        let count = channels.div_ceil(grain);
        let mut blocks = Vec::new();
        blocks
            .try_reserve_exact(count)
            .map_err(|_| Error::Allocation {
                op: DEPTHWISE,
                what: "channel blocks",
                bytes: count.saturating_mul(core::mem::size_of::<DepthwiseConv2d>()),
            })?;
        let mut block_weights =
            try_filled(DEPTHWISE, "block weights", 0i8, taps * grain.min(channels))?;
        for start in (0..channels).step_by(grain) {
            let width = grain.min(channels - start);
            let block_geometry = ConvGeometry {
                input_channels: width / depth_multiplier,
                output_channels: width,
                ..geometry
            };
            // TFLite's [tap][channel] order, the block's channels only.
            let w = &mut block_weights[..taps * width];
            for (t, row) in w.chunks_exact_mut(width).enumerate() {
                row.copy_from_slice(&weights[t * channels + start..][..width]);
            }
            let block_scales = if scales.len() == 1 {
                scales
            } else {
                &scales[start..start + width]
            };
            let q = ConvQuantization {
                weight_scales: block_scales,
                ..*quantization
            };
            let block_bias = bias.map(|b| &b[start..start + width]);
            blocks.push(DepthwiseConv2d::new(
                block_geometry,
                depth_multiplier,
                w,
                block_bias,
                &q,
            )?);
        }
        let block_out_len = if count > 1 { pixels * grain } else { 0 };
        Ok(DepthwiseChannelBlocks {
            geometry,
            depth_multiplier,
            grain,
            blocks,
            gather_len: input_pixels * grain.min(channels) / depth_multiplier,
            block_out_len,
        })
    }

    /// The geometry given to `new` (the whole layer's).
    pub fn geometry(&self) -> &ConvGeometry {
        &self.geometry
    }

    /// Output channels per input channel.
    pub fn depth_multiplier(&self) -> usize {
        self.depth_multiplier
    }

    /// Channel ranges of [`run_channels`](Self::run_channels) start at
    /// multiples of this and end at one or at the output channels.
    pub fn grain(&self) -> usize {
        self.grain
    }

    /// Output pixels of the batch (`batch * output_height *
    /// output_width`): a tile's rows.
    pub fn pixels(&self) -> usize {
        let g = &self.geometry;
        g.batch * g.output_height * g.output_width
    }

    /// Bytes of scratch [`run_channels`](Self::run_channels) needs: a
    /// block's gathered input, and (with more than one block) a block's
    /// output on its way into a tile of several blocks.
    pub fn scratch_len(&self) -> usize {
        self.gather_len + self.block_out_len
    }

    /// Output channels `channels` of every output pixel of the NHWC
    /// `input`'s depthwise convolution, with `backend`, into `tile`: pixel
    /// `p`'s channel `c` at `p * channels.len() + (c - channels.start)`.
    /// The bytes [`DepthwiseConv2d::run`] of the whole layer writes there,
    /// on every backend. `scratch` holds at least
    /// [`scratch_len`](Self::scratch_len) bytes. Allocates nothing.
    ///
    /// Errors: an unavailable backend ([`Error::BackendUnavailable`]); an
    /// input of the wrong length, a tile other than pixels x channels or a
    /// short scratch ([`Error::Length`]); channels reversed, past the
    /// output channels or off the grain ([`Error::Tile`]).
    pub fn run_channels(
        &self,
        backend: Backend,
        input: &[i8],
        tile: &mut [i8],
        channels: Range<usize>,
        scratch: &mut [i8],
    ) -> Result<()> {
        if !backend.is_available() {
            return Err(Error::BackendUnavailable {
                backend: backend.name(),
            });
        }
        let g = &self.geometry;
        let all = g.output_channels;
        let on_grain = |c: usize| c.is_multiple_of(self.grain) || c == all;
        if channels.start > channels.end
            || channels.end > all
            || !on_grain(channels.start)
            || !on_grain(channels.end)
        {
            return Err(Error::Tile {
                op: DEPTHWISE,
                what: "output channels",
                start: channels.start,
                end: channels.end,
                limit: all,
                grain: self.grain,
            });
        }
        let input_pixels = g.batch * g.input_height * g.input_width;
        check_length(
            DEPTHWISE,
            "input",
            input_pixels.checked_mul(g.input_channels),
            input.len(),
        )?;
        let pixels = self.pixels();
        check_length(
            DEPTHWISE,
            "channel tile (pixels x channels)",
            pixels.checked_mul(channels.len()),
            tile.len(),
        )?;
        if scratch.len() < self.scratch_len() {
            return Err(Error::Length {
                op: DEPTHWISE,
                what: "scratch (at least scratch_len())",
                expected: self.scratch_len(),
                got: scratch.len(),
            });
        }
        if channels.is_empty() {
            return Ok(());
        }
        let (gathered, block_out) = scratch.split_at_mut(self.gather_len);
        let rows = g.batch * g.output_height;
        let first = channels.start / self.grain;
        let last = channels.end.div_ceil(self.grain);
        let whole_tile = last - first == 1;
        for (b, block) in self.blocks[first..last].iter().enumerate() {
            let start = (first + b) * self.grain;
            let width = block.geometry().output_channels;
            // The block's input channels out of every input pixel.
            let in_width = width / self.depth_multiplier;
            let in_start = start / self.depth_multiplier;
            let block_in = &mut gathered[..input_pixels * in_width];
            match in_width {
                WIDE => gather::<WIDE>(block_in, input, in_start, g.input_channels),
                NARROW => gather::<NARROW>(block_in, input, in_start, g.input_channels),
                _ => gather_any(block_in, input, in_start, g.input_channels, in_width),
            }
            if whole_tile {
                block.run_rows(backend, block_in, tile, 0..rows)?;
                continue;
            }
            let out = &mut block_out[..pixels * width];
            block.run_rows(backend, block_in, out, 0..rows)?;
            let from = start - channels.start;
            match width {
                WIDE => scatter::<WIDE>(tile, out, from, channels.len()),
                NARROW => scatter::<NARROW>(tile, out, from, channels.len()),
                _ => scatter_any(tile, out, from, channels.len(), width),
            }
        }
        Ok(())
    }
}

/// Channels `from..from + W` of every `channels`-channel pixel of
/// `input` into `block`, `W` per pixel. `W` a constant, so that each
/// pixel's copy is a load and a store, not a `memcpy` call.
#[inline(always)]
fn gather<const W: usize>(block: &mut [i8], input: &[i8], from: usize, channels: usize) {
    let (block, _) = block.as_chunks_mut::<W>();
    for (dst, src) in block.iter_mut().zip(input.chunks_exact(channels)) {
        if let Some(src) = src.get(from..).and_then(|s| s.first_chunk::<W>()) {
            *dst = *src;
        }
    }
}

/// [`gather`] of a width known only at run time (a block's tail, or a
/// grain of a depth multiplier other than a power of two).
fn gather_any(block: &mut [i8], input: &[i8], from: usize, channels: usize, width: usize) {
    for (dst, src) in block
        .chunks_exact_mut(width)
        .zip(input.chunks_exact(channels))
    {
        dst.copy_from_slice(&src[from..from + width]);
    }
}

/// Every pixel's `W` channels of `out` into `tile`'s pixels of
/// `tile_width` channels, from channel `from` on. `W` a constant, as in
/// [`gather`].
#[inline(always)]
fn scatter<const W: usize>(tile: &mut [i8], out: &[i8], from: usize, tile_width: usize) {
    let (out, _) = out.as_chunks::<W>();
    for (dst, src) in tile.chunks_exact_mut(tile_width).zip(out) {
        if let Some(dst) = dst.get_mut(from..).and_then(|d| d.first_chunk_mut::<W>()) {
            *dst = *src;
        }
    }
}

/// [`scatter`] of a width known only at run time.
fn scatter_any(tile: &mut [i8], out: &[i8], from: usize, tile_width: usize, width: usize) {
    for (dst, src) in tile
        .chunks_exact_mut(tile_width)
        .zip(out.chunks_exact(width))
    {
        dst[from..from + width].copy_from_slice(src);
    }
}

/// The grain of a layer of `channels` output channels: a multiple of the
/// depth multiplier (a block reads whole input channels) and of [`WIDE`],
/// or of [`NARROW`] when [`WIDE`] leaves fewer than [`ENOUGH_BLOCKS`]
/// blocks.
fn grain_for(channels: usize, depth_multiplier: usize) -> Result<usize> {
    let lcm = |lanes: usize| {
        let mut a = depth_multiplier;
        let mut b = lanes;
        while b != 0 {
            (a, b) = (b, a % b);
        }
        (depth_multiplier / a).checked_mul(lanes)
    };
    let overflow = Error::OutOfDomain {
        op: DEPTHWISE,
        what: "channel block (depth multiplier's multiple of 16)",
        value: depth_multiplier as f64,
        requirement: "small enough that 16 of its multiples fit in usize",
    };
    let wide = lcm(WIDE).ok_or(overflow)?;
    if channels.div_ceil(wide) >= ENOUGH_BLOCKS {
        return Ok(wide);
    }
    // At most `wide`: 8 divides 16.
    Ok(lcm(NARROW).unwrap_or(wide))
}

#[cfg(test)]
mod tests {
    //! Every cut of a layer's channels into ranges on the grain gives the
    //! whole layer's bytes of those channels, on every backend, for depth
    //! multipliers 1, 2 and 8, strides 1 and 2, both paddings, one weight
    //! scale or one per channel, and every requantization.

    extern crate std;
    use std::format;
    use std::vec;
    use std::vec::Vec;

    use super::*;
    use crate::ops::conv::{ConvRequantization, Padding};
    use crate::ops::requant::FusedActivation;
    use crate::quant::{QuantParams, Rounding};

    /// A small deterministic generator (64-bit LCG, high bits).
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u32 {
            self.0 = self
                .0
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (self.0 >> 33) as u32
        }
        fn below(&mut self, n: usize) -> usize {
            self.next() as usize % n
        }
        fn i8s(&mut self, n: usize) -> Vec<i8> {
            (0..n).map(|_| self.next() as u8 as i8).collect()
        }
    }

    const REQUANTIZATIONS: [ConvRequantization; 5] = [
        ConvRequantization::Multiplier(Rounding::Double),
        ConvRequantization::Multiplier(Rounding::Single),
        ConvRequantization::XnnpackF32,
        ConvRequantization::DoubleTiesUpward,
        ConvRequantization::TiesUpwardInBlocksOf8,
    ];

    /// A layer and its data: the whole layer's output is the oracle.
    struct Layer {
        geometry: ConvGeometry,
        multiplier: usize,
        weights: Vec<i8>,
        bias: Vec<i32>,
        scales: Vec<f32>,
        input: Vec<i8>,
    }

    impl Layer {
        #[allow(clippy::too_many_arguments)]
        fn random(
            rng: &mut Rng,
            padding: Padding,
            [batch, height, width]: [usize; 3],
            input_channels: usize,
            multiplier: usize,
            kernel: usize,
            stride: usize,
            per_channel: bool,
        ) -> Layer {
            let channels = input_channels * multiplier;
            let geometry = ConvGeometry::tflite(
                "test",
                padding,
                [batch, height, width, input_channels],
                channels,
                [kernel, kernel],
                [stride, stride],
                [1, 1],
            )
            .unwrap();
            let scales = if per_channel {
                (0..channels)
                    .map(|_| 0.001 + rng.below(1000) as f32 * 1e-5)
                    .collect()
            } else {
                vec![0.004]
            };
            let bias = (0..channels)
                .map(|_| rng.below(4001) as i32 - 2000)
                .collect();
            Layer {
                geometry,
                multiplier,
                weights: rng.i8s(kernel * kernel * channels),
                bias,
                scales,
                input: rng.i8s(batch * height * width * input_channels),
            }
        }

        fn quantization(&self, requantization: ConvRequantization) -> ConvQuantization<'_> {
            ConvQuantization {
                input: QuantParams::new(0.05, -3),
                weight_scales: &self.scales,
                output: QuantParams::new(0.09, 4),
                activation: FusedActivation::Relu6,
                requantization,
            }
        }
    }

    /// The cuts of `channels` on `grain` a split meets: the whole, halves,
    /// thirds, every block, pairs of blocks, and empty ranges.
    fn cuts(channels: usize, grain: usize) -> Vec<Vec<Range<usize>>> {
        let blocks = channels.div_ceil(grain);
        let at = |b: usize| (b * grain).min(channels);
        let mut all = vec![vec![0..channels], vec![0..0, channels..channels]];
        for parts in [2, 3] {
            all.push(
                (0..parts)
                    .map(|i| at(i * blocks / parts)..at((i + 1) * blocks / parts))
                    .collect(),
            );
        }
        all.push((0..blocks).map(|b| at(b)..at(b + 1)).collect());
        all.push((0..blocks).step_by(2).map(|b| at(b)..at(b + 2)).collect());
        all
    }

    /// Checks every cut of `layer` under every requantization against the
    /// whole layer's run, on every backend.
    fn check(layer: &Layer, label: &str) {
        let g = &layer.geometry;
        let channels = g.output_channels;
        let pixels = g.batch * g.output_height * g.output_width;
        for requantization in REQUANTIZATIONS {
            let q = layer.quantization(requantization);
            let whole_layer =
                DepthwiseConv2d::new(*g, layer.multiplier, &layer.weights, Some(&layer.bias), &q)
                    .unwrap();
            let blocks = DepthwiseChannelBlocks::new(
                *g,
                layer.multiplier,
                &layer.weights,
                Some(&layer.bias),
                &q,
            )
            .unwrap();
            let grain = blocks.grain();
            assert_eq!(grain % layer.multiplier, 0, "{label}");
            assert!(grain.is_multiple_of(8), "{label}: grain {grain}");
            assert_eq!(blocks.pixels(), pixels);
            let mut whole = vec![0i8; pixels * channels];
            whole_layer
                .run_rows(
                    Backend::Scalar,
                    &layer.input,
                    &mut whole,
                    0..whole_layer.rows(),
                )
                .unwrap();
            let mut scratch = vec![0x5Au8 as i8; blocks.scratch_len()];
            for backend in Backend::available() {
                let mut by_backend = vec![0i8; whole.len()];
                whole_layer
                    .run_rows(
                        backend,
                        &layer.input,
                        &mut by_backend,
                        0..whole_layer.rows(),
                    )
                    .unwrap();
                assert_eq!(by_backend, whole, "{label}: the whole layer's backends");
                for cut in cuts(channels, grain) {
                    for range in cut {
                        // Poisoned, so an unwritten byte shows.
                        let mut tile = vec![0x44u8 as i8; pixels * range.len()];
                        blocks
                            .run_channels(
                                backend,
                                &layer.input,
                                &mut tile,
                                range.clone(),
                                &mut scratch,
                            )
                            .unwrap();
                        let expected: Vec<i8> = (0..pixels)
                            .flat_map(|p| whole[p * channels..][range.clone()].iter().copied())
                            .collect();
                        let what = format!(
                            "{label} {} {} channels {range:?} of {channels} (grain {grain})",
                            requantization.name(),
                            backend.name()
                        );
                        assert_eq!(tile, expected, "{what}");
                    }
                }
            }
        }
    }

    #[test]
    fn depthwise_channel_blocks_equal_the_whole_layer_random_shapes() {
        let mut rng = Rng(29);
        for multiplier in [1, 2, 8] {
            for stride in [1, 2] {
                for padding in [Padding::Same, Padding::Valid] {
                    for per_channel in [true, false] {
                        // Channel counts around the grains: a tail of a
                        // few channels, exactly 8 blocks of 16, blocks of 8.
                        let input_channels = match (multiplier, rng.below(3)) {
                            (1, 0) => 128,
                            (1, 1) => 36,
                            (1, _) => 133,
                            (2, 0) => 13,
                            (2, _) => 72,
                            (_, 0) => 3,
                            (_, _) => 17,
                        };
                        let size = [1 + rng.below(2), 3 + rng.below(5), 3 + rng.below(5)];
                        let kernel = [3, 3, 5][rng.below(3)].min(size[1]).min(size[2]);
                        let layer = Layer::random(
                            &mut rng,
                            padding,
                            size,
                            input_channels,
                            multiplier,
                            kernel,
                            stride,
                            per_channel,
                        );
                        let label = format!(
                            "x{multiplier} stride {stride} {padding:?} {size:?} {input_channels} \
                             channels {kernel}x{kernel} per-channel {per_channel}"
                        );
                        check(&layer, &label);
                    }
                }
            }
        }
    }

    #[test]
    fn depthwise_channel_grain_is_16_with_8_blocks_else_8() {
        assert_eq!(grain_for(128, 1).unwrap(), 16);
        assert_eq!(grain_for(113, 1).unwrap(), 16);
        assert_eq!(grain_for(112, 1).unwrap(), 8);
        assert_eq!(grain_for(256, 2).unwrap(), 16);
        assert_eq!(grain_for(24, 8).unwrap(), 8);
        assert_eq!(grain_for(384, 3).unwrap(), 48);
        assert_eq!(grain_for(240, 3).unwrap(), 24);
        assert_eq!(grain_for(96, 3).unwrap(), 24);
        assert_eq!(grain_for(12, 12).unwrap(), 24);
    }

    #[test]
    fn depthwise_channel_blocks_bad_ranges_and_lengths_are_errors() {
        let mut rng = Rng(7);
        let layer = Layer::random(&mut rng, Padding::Same, [1, 4, 5], 20, 2, 3, 1, true);
        let q = layer.quantization(ConvRequantization::Multiplier(Rounding::Double));
        let g = layer.geometry;
        let blocks =
            DepthwiseChannelBlocks::new(g, 2, &layer.weights, Some(&layer.bias), &q).unwrap();
        assert_eq!(blocks.grain(), 8);
        let pixels = blocks.pixels();
        let mut scratch = vec![0i8; blocks.scratch_len()];
        let input = &layer.input;
        let run = |tile: &mut [i8], range: Range<usize>, scratch: &mut [i8], input: &[i8]| {
            blocks.run_channels(Backend::Scalar, input, tile, range, scratch)
        };
        let mut tile = vec![0i8; pixels * 8];
        assert!(run(&mut tile, 8..16, &mut scratch, input).is_ok());
        // Off the grain, past the channels, reversed.
        for range in [4..12, 8..12, 40..48, 36..44] {
            let mut t = vec![0i8; pixels * range.len()];
            let err = run(&mut t, range.clone(), &mut scratch, input);
            assert!(matches!(err, Err(Error::Tile { .. })), "{range:?}: {err:?}");
        }
        #[allow(clippy::reversed_empty_ranges)]
        let err = run(&mut tile, 16..8, &mut scratch, input);
        assert!(matches!(err, Err(Error::Tile { .. })), "{err:?}");
        // The last block ends at the channels, off the grain: fine.
        let mut last = vec![0i8; pixels * 8];
        assert!(run(&mut last, 32..40, &mut scratch, input).is_ok());
        // A tile, an input or a scratch of the wrong length.
        let mut long = vec![0i8; pixels * 8 + 1];
        let err = run(&mut long, 8..16, &mut scratch, input);
        assert!(matches!(err, Err(Error::Length { .. })), "{err:?}");
        let err = run(&mut tile, 8..16, &mut scratch, &input[1..]);
        assert!(matches!(err, Err(Error::Length { .. })), "{err:?}");
        let short = blocks.scratch_len() - 1;
        let err = run(&mut tile, 8..16, &mut scratch[..short], input);
        assert!(matches!(err, Err(Error::Length { .. })), "{err:?}");
        // `new`'s checks are DepthwiseConv2d's.
        let bad = DepthwiseChannelBlocks::new(g, 2, &layer.weights[1..], None, &q);
        assert!(matches!(bad, Err(Error::Length { .. })), "{bad:?}");
        let bad = DepthwiseChannelBlocks::new(g, 2, &layer.weights, Some(&layer.bias[1..]), &q);
        assert!(matches!(bad, Err(Error::Length { .. })), "{bad:?}");
        let bad = DepthwiseChannelBlocks::new(g, 3, &layer.weights, None, &q);
        assert!(matches!(bad, Err(Error::Length { .. })), "{bad:?}");
        let bad = DepthwiseChannelBlocks::new(g, 0, &layer.weights, None, &q);
        assert!(matches!(bad, Err(Error::ZeroDimension { .. })), "{bad:?}");
        let two_scales = [0.01f32, 0.02];
        let q2 = ConvQuantization {
            weight_scales: &two_scales,
            ..q
        };
        let bad = DepthwiseChannelBlocks::new(g, 2, &layer.weights, None, &q2);
        assert!(matches!(bad, Err(Error::Length { .. })), "{bad:?}");
        let unavailable = [Backend::Scalar, Backend::Neon]
            .into_iter()
            .find(|b| !b.is_available());
        if let Some(backend) = unavailable {
            let err = blocks.run_channels(backend, input, &mut tile, 8..16, &mut scratch);
            assert!(
                matches!(err, Err(Error::BackendUnavailable { .. })),
                "{err:?}"
            );
        }
    }
}
