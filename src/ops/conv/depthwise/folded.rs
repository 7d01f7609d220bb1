//! The zero-point-folded layout of a depthwise layer ([`Folded`]),
//! prepared once by `DepthwiseConv2d::new` for the pair kernel
//! (`super::pairs`).
//!
//! A window's accumulator is
//!
//! ```text
//! bias[c] + sum over taps inside the image: (x - zp) * w[c][tap]
//!   = (bias[c] - zp * sum over those taps of w[c][tap])
//!     + sum over those taps: x * w[c][tap]
//! ```
//!
//! so the kernel multiplies raw input bytes and starts from a bias that
//! depends only on which taps of the window are inside the image: a
//! rectangle of kernel rows `ys` by kernel columns `xs`. The output rows
//! take a few distinct `ys` (the top and bottom edges and the full window),
//! the columns a few distinct `xs`, so every (row class, column class)
//! pair's bias is computed here, once. Sums wrap modulo 2^32 as the scalar
//! loops' do, so the fold is exact for any bias.
//!
//! The products are 8-bit by 8-bit into 16 bits, two taps per 16-bit sum:
//! `|x * w| <= 128 * 127` when no weight is -128, and two such products
//! fit (`-32,512..=32,512`). A layer with a weight of -128 keeps the
//! widening kernel (`super::neon`).

use alloc::vec::Vec;
use core::ops::Range;

use super::super::geometry::ConvGeometry;
use super::pack::BLOCK;
use crate::error::Result;
use crate::ops::requant::try_filled;

/// At most this many (row class, column class) biases per layer (the
/// usual layers have at most 9: 3 row classes by 3 column classes; only
/// windows far wider than the image have more). Beyond it the layer keeps
/// the widening kernel.
const MAX_CLASSES: usize = 64;

/// A depthwise layer's 8-bit weights and folded biases, for depth
/// multiplier 1 and a channel count that is a multiple of 8.
#[derive(Clone, Debug)]
pub(crate) struct Folded {
    /// `[block][tap][16 lanes]`; a last block of 8 channels repeats its
    /// 8 weights in lanes 8 to 15 (two pixels side by side share them).
    pub(super) weights: Vec<i8>,
    /// `[row class][column class][block * 16 + lane]`, the bias less the
    /// zero point times the weights of the taps inside the image; lanes 8
    /// to 15 of a last block of 8 repeat lanes 0 to 7.
    pub(super) biases: Vec<i32>,
    /// The class of each output row (`oy`) and column (`ox`).
    pub(super) row_class: Vec<u16>,
    pub(super) column_class: Vec<u16>,
    pub(super) column_classes: usize,
    /// Lanes per class (`blocks * 16`).
    pub(super) padded: usize,
    /// The `sdot` kernel's weights of each block of 16 channels (and a
    /// last 8: `super::dot::pack_block`, one after the other), empty where
    /// that kernel does not take the layer.
    pub(super) dot_weights: Vec<i8>,
    /// [`Folded::dot_weights`] one kernel row lower (`[0, w0, w1, w2]` per
    /// channel and kernel column) for a 3x3 layer of stride and dilation 1
    /// in height, else empty: `super::rows3` lays out the four input rows
    /// of two neighbouring output rows once, and the lower row's weights
    /// skip the first of them as the upper row's skip the fourth.
    pub(super) dot_weights_low: Vec<i8>,
    /// One input channel read by every output channel (a first layer of
    /// `1 x M` filters, `M > 1`): only the `sdot` kernel runs it
    /// ([`Folded::runs`]).
    pub(super) broadcast: bool,
    /// A row's output columns as runs of one class, `[class * padded,
    /// pixels]` (`super::dot3::run`'s), empty where the `sdot` kernel does
    /// not take the layer or a row has more than `super::dot3::RUNS`.
    pub(super) runs3: Vec<[usize; 2]>,
    /// A broadcast 3x3 layer of 8 channels: `super::first3`'s weights
    /// (`[ky][channel][kx]`), else empty.
    pub(super) first_weights: Vec<i8>,
}

impl Folded {
    /// The folded layout of `weights` (`[channel][tap]`), or `None` where
    /// the pair kernel does not apply: a depth multiplier other than 1,
    /// channels not a multiple of 8, a weight of -128, or more than
    /// [`MAX_CLASSES`] biases.
    pub(crate) fn new(
        op: &'static str,
        g: &ConvGeometry,
        depth_multiplier: usize,
        weights: &[i8],
        bias: &[i32],
        input_zero_point: i32,
    ) -> Result<Option<Folded>> {
        let channels = g.output_channels;
        let broadcast = depth_multiplier != 1 && g.input_channels == 1;
        if (depth_multiplier != 1 && !broadcast)
            || !channels.is_multiple_of(8)
            || weights.contains(&i8::MIN)
        {
            return Ok(None);
        }
        if broadcast && !super::dot::takes(g) {
            return Ok(None);
        }
        let (rows, row_class) = classes(op, g.output_height, |o| {
            ConvGeometry::taps(
                o,
                g.stride_height,
                g.pad_top,
                g.dilation_height,
                g.kernel_height,
                g.input_height,
            )
            .1
        })?;
        let (columns, column_class) = classes(op, g.output_width, |o| {
            ConvGeometry::taps(
                o,
                g.stride_width,
                g.pad_left,
                g.dilation_width,
                g.kernel_width,
                g.input_width,
            )
            .1
        })?;
        if rows.len() * columns.len() > MAX_CLASSES {
            return Ok(None);
        }
        let (kw, taps) = (g.kernel_width, g.kernel_height * g.kernel_width);
        let blocks = channels.div_ceil(BLOCK);
        let padded = blocks * BLOCK;
        // The lane of channel `c`, and of its copy in a last block of 8.
        let lanes_of = |c: usize| {
            let lane = c % BLOCK;
            let copy = (channels - c + lane <= 8).then_some(lane + 8);
            (c - lane, lane, copy)
        };
        let mut w = try_filled(op, "packed weights", 0i8, padded * taps)?;
        for c in 0..channels {
            let (c0, lane, copy) = lanes_of(c);
            for t in 0..taps {
                let at = (c0 * taps) + t * BLOCK;
                w[at + lane] = weights[c * taps + t];
                if let Some(l) = copy {
                    w[at + l] = weights[c * taps + t];
                }
            }
        }
        let size = rows.len() * columns.len() * padded;
        let mut biases = try_filled(op, "folded biases", 0i32, size)?;
        for (yc, ys) in rows.iter().enumerate() {
            for (xc, xs) in columns.iter().enumerate() {
                let class = &mut biases[(yc * columns.len() + xc) * padded..][..padded];
                for c in 0..channels {
                    let filter = &weights[c * taps..][..taps];
                    let inside: i64 = ys
                        .clone()
                        .flat_map(|ky| xs.clone().map(move |kx| ky * kw + kx))
                        .map(|t| filter[t] as i64)
                        .sum();
                    // Modulo 2^32, as the scalar loops' sums.
                    let folded = (bias[c] as i64 - input_zero_point as i64 * inside) as i32;
                    let (c0, lane, copy) = lanes_of(c);
                    class[c0 + lane] = folded;
                    if let Some(l) = copy {
                        class[c0 + l] = folded;
                    }
                }
            }
        }
        // Whole blocks of 16, then a last block of 8.
        let dot_weights = if super::dot::takes(g) {
            let size = g.kernel_width * g.kernel_height.div_ceil(4) * 4;
            let mut d = try_filled(op, "packed weights", 0i8, channels * size)?;
            for c0 in (0..channels).step_by(BLOCK) {
                let lanes = (channels - c0).min(BLOCK);
                super::dot::pack_block(g, weights, c0, lanes, &mut d[c0 * size..]);
            }
            d
        } else {
            Vec::new()
        };
        let dot_weights_low = if !dot_weights.is_empty()
            && !broadcast
            && g.kernel_height == 3
            && g.stride_height == 1
            && g.dilation_height == 1
        {
            let mut d = try_filled(op, "packed weights", 0i8, dot_weights.len())?;
            for (low, w) in d.chunks_exact_mut(4).zip(dot_weights.chunks_exact(4)) {
                debug_assert_eq!(w[3], 0);
                low[1..].copy_from_slice(&w[..3]);
            }
            d
        } else {
            Vec::new()
        };
        let runs3 = if dot_weights.is_empty() {
            Vec::new()
        } else {
            column_runs(op, &column_class, padded)?
        };
        let first_weights = if broadcast && super::first3::shape(g) {
            let mut v = try_filled(op, "packed weights", 0i8, 96)?;
            super::first3::pack(weights, &mut v);
            v
        } else {
            Vec::new()
        };
        Ok(Some(Folded {
            first_weights,
            runs3,
            dot_weights,
            dot_weights_low,
            broadcast,
            weights: w,
            biases,
            row_class,
            column_class,
            column_classes: columns.len(),
            padded,
        }))
    }
}

impl Folded {
    /// Whether the pair or `sdot` kernel runs the layer on this CPU: a
    /// broadcast layer only on the `sdot` kernel (the pair kernel reads
    /// input channel `c` for output channel `c`); it otherwise keeps the
    /// widening kernel, whose weights `new()` then packs too.
    pub(crate) fn runs(&self) -> bool {
        !self.broadcast || crate::backend::CpuFeatures::detect().dotprod
    }

    /// Whether every output channel reads the one input channel.
    pub(crate) fn broadcast(&self) -> bool {
        self.broadcast
    }
}

/// `column_class` as runs of one class, `[class * padded, pixels]`, or
/// none past `super::dot3::RUNS` runs.
fn column_runs(op: &'static str, column_class: &[u16], padded: usize) -> Result<Vec<[usize; 2]>> {
    let mut runs = [[0usize; 2]; super::dot3::RUNS];
    let mut count = 0;
    for (ox, &class) in column_class.iter().enumerate() {
        if ox > 0 && class == column_class[ox - 1] {
            runs[count - 1][1] += 1;
        } else if count < runs.len() {
            runs[count] = [class as usize * padded, 1];
            count += 1;
        } else {
            return Ok(Vec::new());
        }
    }
    let mut v = try_filled(op, "column runs", [0usize; 2], count)?;
    v.copy_from_slice(&runs[..count]);
    Ok(v)
}

/// The distinct tap ranges of `count` outputs, in order of first use, and
/// each output's index among them.
fn classes(
    op: &'static str,
    count: usize,
    range: impl Fn(usize) -> Range<usize>,
) -> Result<(Vec<Range<usize>>, Vec<u16>)> {
    let mut distinct: Vec<Range<usize>> = Vec::new();
    let mut class = try_filled(op, "folded classes", 0u16, count)?;
    for (o, slot) in class.iter_mut().enumerate() {
        let r = range(o);
        let i = match distinct.iter().position(|d| *d == r) {
            Some(i) => i,
            None => {
                if distinct.len() > MAX_CLASSES {
                    // Enough to refuse the layer; stop growing the list.
                    return Ok((distinct, class));
                }
                distinct.push(r);
                distinct.len() - 1
            }
        };
        *slot = i as u16;
    }
    Ok((distinct, class))
}
