//! The scalar loops of both convolutions: the oracle every faster kernel
//! is to equal byte for byte. Accumulators wrap modulo 2^32 as TFLite's
//! `int32_t` sums do in practice (exact for any layer whose sum fits).

use core::ops::Range;

use super::geometry::ConvGeometry;
use super::origin::FirstRow;
use super::params::OutputStage;

/// The prepared data of one convolution, borrowed by the loops.
pub(crate) struct Layer<'a> {
    pub geometry: &'a ConvGeometry,
    /// Input channels each output channel reads (the filter's depth, or 1
    /// for depthwise).
    pub depth: usize,
    /// Weights `[output channel][ky][kx][depth]`.
    pub weights: &'a [i8],
    /// One per output channel.
    pub bias: &'a [i32],
    pub input_zero_point: i32,
    pub stage: &'a OutputStage,
    /// Consecutive output channels that read the same `depth` input
    /// channels: output channel `c` reads input channels from
    /// `(c / outputs_per_group) * depth` (a grouped convolution's group,
    /// or a depthwise convolution's multiplier).
    pub outputs_per_group: usize,
}

/// Output channels `channels` of output rows `rows` (numbered over the
/// batch: row `r` is image `r / output_height`, row `r % output_height`)
/// of the convolution. `input` is the whole NHWC tensor, `output` its rows
/// from row `first` on (the whole tensor when `first` is 0), both checked
/// by the caller; the other channels of those rows are left as they are.
pub(crate) fn conv<F: FirstRow>(
    layer: &Layer<'_>,
    input: &[i8],
    (output, first): (&mut [i8], F),
    (rows, channels): (Range<usize>, Range<usize>),
) {
    let g = layer.geometry;
    let (kh, kw, depth) = (g.kernel_height, g.kernel_width, layer.depth);
    let in_row = g.input_width * g.input_channels;
    let out_row = g.output_width * g.output_channels;
    for r in rows {
        let (b, oy) = (r / g.output_height, r % g.output_height);
        let (y0, ys) = ConvGeometry::taps(
            oy,
            g.stride_height,
            g.pad_top,
            g.dilation_height,
            kh,
            g.input_height,
        );
        let image = &input[b * g.input_height * in_row..][..g.input_height * in_row];
        let out = &mut output[(r - first.row()) * out_row..][..out_row];
        for ox in 0..g.output_width {
            let (x0, xs) = ConvGeometry::taps(
                ox,
                g.stride_width,
                g.pad_left,
                g.dilation_width,
                kw,
                g.input_width,
            );
            for c in channels.clone() {
                let ic = (c / layer.outputs_per_group) * depth;
                let filter = &layer.weights[c * kh * kw * depth..][..kh * kw * depth];
                let mut acc = layer.bias[c];
                for ky in ys.clone() {
                    // In the image: taps() kept only such rows.
                    let iy = (y0 + (ky * g.dilation_height) as isize) as usize;
                    for kx in xs.clone() {
                        let ix = (x0 + (kx * g.dilation_width) as isize) as usize;
                        let pixel = &image[iy * in_row + ix * g.input_channels + ic..][..depth];
                        let taps = &filter[(ky * kw + kx) * depth..][..depth];
                        for (&x, &w) in pixel.iter().zip(taps) {
                            let term = (x as i32 - layer.input_zero_point) * w as i32;
                            acc = acc.wrapping_add(term);
                        }
                    }
                }
                out[ox * g.output_channels + c] = layer.stage.finish(c, acc);
            }
        }
    }
}
