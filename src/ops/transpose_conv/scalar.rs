//! The scalar loops: the oracle the NEON kernel equals byte for byte. Each
//! output element gathers the products TFLite's reference kernel scatters
//! into it; the `int32` sums wrap modulo 2^32, as TFLite's do in practice,
//! so the order of the terms does not change a bit.

use core::ops::Range;

use super::geometry::{taps, TransposeConvGeometry};
use crate::ops::conv::OutputStage;

/// The prepared data of a transposed convolution, borrowed by the loops.
pub(crate) struct Layer<'a> {
    pub geometry: &'a TransposeConvGeometry,
    /// OHWI: `[output channel][ky][kx][input channel]`.
    pub weights: &'a [i8],
    /// One per output channel.
    pub bias: &'a [i32],
    pub input_zero_point: i32,
    pub stage: &'a OutputStage,
}

/// Output rows `rows` (row `r` is image `r / output_height`, row
/// `r % output_height`) of the whole NHWC `output`; `input` is the whole
/// NHWC input. Lengths and rows are checked by the caller.
pub(crate) fn transpose_conv(
    layer: &Layer<'_>,
    input: &[i8],
    output: &mut [i8],
    rows: Range<usize>,
) {
    let g = layer.geometry;
    let (kh, kw, depth) = (g.kernel_height, g.kernel_width, g.input_channels);
    let in_row = g.input_width * depth;
    let out_row = g.output_width * g.output_channels;
    for r in rows {
        let (b, oy) = (r / g.output_height, r % g.output_height);
        let image = &input[b * g.input_height * in_row..][..g.input_height * in_row];
        let out = &mut output[r * out_row..][..out_row];
        let ys = taps(oy, g.pad_top, g.stride_height, kh, g.input_height);
        for ox in 0..g.output_width {
            let xs = taps(ox, g.pad_left, g.stride_width, kw, g.input_width);
            for c in 0..g.output_channels {
                let filter = &layer.weights[c * kh * kw * depth..][..kh * kw * depth];
                let mut acc = layer.bias[c];
                for (ky, iy) in ys.clone() {
                    for (kx, ix) in xs.clone() {
                        let pixel = &image[iy * in_row + ix * depth..][..depth];
                        let tap = &filter[(ky * kw + kx) * depth..][..depth];
                        for (&x, &w) in pixel.iter().zip(tap) {
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
