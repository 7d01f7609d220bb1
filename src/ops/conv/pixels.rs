//! A pointwise CONV_2D by ranges of output pixels
//! ([`Conv2d::run_pixels`]): some pixels, every channel, into a slice
//! holding those pixels only. How threads share a pointwise layer whose
//! output rows are not a whole number of the GEMM's row blocks (person_detect's
//! 12x12 layers: a band of one output row is 12 pixels, a block and a half
//! of 8): cut at multiples of [`Conv2d::pixel_grain`] pixels, no thread
//! computes a partial block that the next one computes again.

use core::ops::Range;

use super::conv2d::{Conv2d, CONV};
use crate::backend::Backend;
use crate::checks::check_length;
use crate::error::{Error, Result};

impl Conv2d {
    /// The grain of [`run_pixels`](Self::run_pixels): pixel ranges that
    /// start at multiples of it (or end at the last pixel) run only whole
    /// row blocks of the GEMM but the last, so together they cost what one
    /// [`run`](Self::run) costs; other cuts give the same bytes and
    /// recompute a partial block. `None` for a layer that does not run by
    /// pixels: only a pointwise layer (as
    /// [`channel_grain`](Self::channel_grain)) does.
    pub fn pixel_grain(&self) -> Option<usize> {
        self.pointwise.as_ref().map(|gemm| gemm.tile_grain().0)
    }

    /// Output pixels `pixels` (of the batch's `rows() * output_width`,
    /// row-major) of the NHWC `input`'s convolution, with `backend`, into
    /// `band`, which holds those pixels only, every output channel of
    /// each: the bytes [`run`](Self::run) writes there, on every backend.
    /// Allocates nothing.
    ///
    /// Errors: a layer without a [`pixel_grain`](Self::pixel_grain)
    /// ([`Error::Unsupported`]); an unavailable backend
    /// ([`Error::BackendUnavailable`]); an input of the wrong length or a
    /// band other than pixels x channels ([`Error::Length`]); pixels
    /// reversed or past the output's ([`Error::Tile`]).
    pub fn run_pixels(
        &self,
        backend: Backend,
        input: &[i8],
        band: &mut [i8],
        pixels: Range<usize>,
    ) -> Result<()> {
        let Some(gemm) = &self.pointwise else {
            return Err(Error::Unsupported {
                op: CONV,
                dtype: "int8",
                reason: "only a pointwise layer under a quantized multiplier runs by pixels",
            });
        };
        check_length(CONV, "input", Some(self.prepared.input_len), input.len())?;
        let n = self.prepared.geometry.output_channels;
        check_length(
            CONV,
            "pixel band (pixels x channels)",
            pixels.len().checked_mul(n),
            band.len(),
        )?;
        let k = self.prepared.geometry.input_channels;
        let all = self.prepared.rows() * self.prepared.geometry.output_width;
        if pixels.start > pixels.end || pixels.end > all {
            return Err(Error::Tile {
                op: CONV,
                what: "output pixels",
                start: pixels.start,
                end: pixels.end,
                limit: all,
                grain: 1,
            });
        }
        if pixels.is_empty() {
            return Ok(());
        }
        // Stride 1 and no padding: output pixel p reads input pixel p. The
        // band's input rows alone, as a whole GEMM of its own (the GEMM's
        // kernels specialize a call that starts at its first row).
        let rows = &input[pixels.start * k..pixels.end * k];
        gemm.run_with(backend, rows, band, pixels.len())
    }
}

#[cfg(test)]
mod tests {
    use std::vec;
    use std::vec::Vec;

    use super::*;
    use crate::ops::conv::{ConvGeometry, ConvQuantization, ConvRequantization, Padding};
    use crate::ops::requant::FusedActivation;
    use crate::quant::{QuantParams, Rounding};

    /// A pointwise layer of `h x w` pixels, `k` -> `n` channels, with
    /// weights, bias and input covering the int8 range's edges.
    fn layer(h: usize, w: usize, k: usize, n: usize, rounding: Rounding) -> (Conv2d, Vec<i8>) {
        let g = ConvGeometry::tflite(
            "conv_2d",
            Padding::Valid,
            [1, h, w, k],
            n,
            [1, 1],
            [1, 1],
            [1, 1],
        )
        .unwrap();
        let edge = [-128i8, 127, 0, -1, 1, 63, -64];
        let weights: Vec<i8> = (0..n * k)
            .map(|i| {
                if i % 5 == 0 {
                    edge[i % 7]
                } else {
                    (i * 37 % 255) as i8
                }
            })
            .collect();
        let bias: Vec<i32> = (0..n as i32).map(|c| (c - 7) * 911).collect();
        let scales: Vec<f32> = (0..n).map(|c| 0.002 + 0.0003 * c as f32).collect();
        let q = ConvQuantization {
            input: QuantParams::new(0.05, -3),
            weight_scales: &scales,
            output: QuantParams::new(0.11, 5),
            activation: FusedActivation::None,
            requantization: ConvRequantization::Multiplier(rounding),
        };
        let op = Conv2d::new(g, k, &weights, Some(&bias), &q).unwrap();
        let input: Vec<i8> = (0..h * w * k)
            .map(|i| {
                if i % 3 == 0 {
                    edge[i % 7]
                } else {
                    (i * 101 % 256) as i8
                }
            })
            .collect();
        (op, input)
    }

    #[test]
    fn every_cut_of_the_pixels_gives_the_whole_runs_bytes() {
        for (h, w, k, n) in [
            (12, 12, 32, 64),
            (6, 6, 64, 24),
            (3, 3, 16, 8),
            (5, 7, 8, 16),
        ] {
            for rounding in [Rounding::Single, Rounding::Double] {
                let (op, input) = layer(h, w, k, n, rounding);
                assert!(op.pixel_grain().is_some());
                let mut whole = vec![0i8; h * w * n];
                op.run_rows(Backend::Scalar, &input, &mut whole, 0..op.rows())
                    .unwrap();
                let pixels = h * w;
                for backend in Backend::available() {
                    for parts in [1, 2, 3, 4, 5, 8, pixels] {
                        for i in 0..parts {
                            let cut = i * pixels / parts..(i + 1) * pixels / parts;
                            let mut band = vec![0x5Au8 as i8; cut.len() * n];
                            op.run_pixels(backend, &input, &mut band, cut.clone())
                                .unwrap();
                            assert_eq!(
                                band,
                                whole[cut.start * n..cut.end * n],
                                "{h}x{w}x{k}->{n} {rounding:?} {} {cut:?}",
                                backend.name()
                            );
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn a_wrong_band_or_range_is_an_error() {
        let (op, input) = layer(3, 3, 16, 8, Rounding::Single);
        let mut band = vec![0i8; 2 * 8];
        assert!(op
            .run_pixels(Backend::Scalar, &input, &mut band, 0..2)
            .is_ok());
        assert!(op
            .run_pixels(Backend::Scalar, &input, &mut band, 0..3)
            .is_err());
        assert!(op
            .run_pixels(Backend::Scalar, &input, &mut band, 8..10)
            .is_err());
        assert!(op
            .run_pixels(Backend::Scalar, &input[1..], &mut band, 0..2)
            .is_err());
        assert!(op
            .run_pixels(Backend::Scalar, &input, &mut [], 4..4)
            .is_ok());
    }
}
