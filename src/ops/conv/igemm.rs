//! CONV_2D as an implicit GEMM: the windows of a few output pixels are
//! gathered (im2col) into a bounded scratch, one row of `kernel_height *
//! kernel_width * filter_depth` bytes per pixel in the filter's `[ky][kx][i]`
//! order, and the int8 [`Gemm`] multiplies them by the OHWI weights, which
//! are already that GEMM's `n x k` row-major matrix (one per group).
//!
//! Taps in the padding are filled with the input zero point: the GEMM folds
//! `-input_zero_point * sum w` into the bias, so such a tap adds
//! `(zero_point - zero_point) * w = 0`, as the scalar loops' skipped tap does.
//! Every accumulator is then the oracle's sum modulo 2^32 (the same terms,
//! wrapping), and the GEMM's output stage is the same per-channel
//! requantization, so the bytes are the scalar loops'.
//!
//! A layer of one group whose window is a few bytes (`patch_rows`: a
//! first layer's) skips the scratch on the `sdot` and `smmla` paths: its
//! rows are built in the GEMM's panel straight from the image.
//!
//! The scratch never holds more than [`MAX_TILE_PIXELS`] pixels (at least
//! [`MIN_TILE_PIXELS`] when the depth is large): a few rows of the layer,
//! never its whole im2col copy.

use alloc::vec::Vec;
use core::ops::Range;

use super::geometry::ConvGeometry;
use super::origin::FirstRow;
use super::params::ConvQuantization;
#[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
use super::patch_rows::{PatchPlan, PatchRows};
use crate::backend::Backend;
use crate::error::Result;
use crate::ops::gemm::Gemm;
use crate::quant::Requantization;

/// Pixels per GEMM call at most: enough to amortize a call's set-up over
/// the small depths of a first layer (27 bytes for 3x3x3) and a multiple of
/// every GEMM kernel's row block (8, 4, 1).
pub(crate) const MAX_TILE_PIXELS: usize = 256;
/// Pixels per GEMM call at least, whatever the depth: the `sdot` kernel's
/// row block.
pub(crate) const MIN_TILE_PIXELS: usize = 8;
/// The scratch a tile aims at: the tile has `SCRATCH_TARGET / depth`
/// pixels within the bounds above.
const SCRATCH_TARGET: usize = 16 * 1024;

/// A prepared implicit-GEMM convolution: one [`Gemm`] per group.
#[derive(Clone, Debug)]
pub(crate) struct Implicit {
    /// Group `g`'s GEMM: output channels `g * n..(g + 1) * n`, depth
    /// `kernel_height * kernel_width * filter_depth`.
    gemms: Vec<Gemm>,
    /// The im2col row of one pixel: `kernel_height * kernel_width * depth`.
    patch: usize,
    /// Input channels per filter.
    depth: usize,
    input_zero_point: i8,
    /// Pixels per GEMM call with a scratch of [`Implicit::scratch_bytes`].
    tile_pixels: usize,
    /// A small window (one group): its rows are built in the GEMM's panel
    /// from the image, all pixels in one GEMM call, no scratch.
    #[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
    small: Option<PatchPlan>,
}

impl Implicit {
    /// One GEMM per group over the OHWI `weights` (`outputs_per_group`
    /// filters of `patch` bytes each per group).
    pub(crate) fn new(
        geometry: &ConvGeometry,
        depth: usize,
        weights: &[i8],
        bias: Option<&[i32]>,
        q: &ConvQuantization<'_>,
        requantization: Requantization,
    ) -> Result<Implicit> {
        let patch = geometry.kernel_height * geometry.kernel_width * depth;
        let channels = geometry.output_channels;
        let groups = geometry.input_channels / depth;
        let n = channels / groups;
        let scale = |c: usize| match q.weight_scales {
            [s] => *s,
            scales => scales[c],
        };
        let mut gemms = Vec::with_capacity(groups);
        for g in 0..groups {
            let columns = g * n..(g + 1) * n;
            let scales: Vec<f32> = columns.clone().map(scale).collect();
            gemms.push(Gemm::new(
                &weights[columns.start * patch..columns.end * patch],
                n,
                patch,
                bias.map(|b| &b[columns.clone()]),
                q.input,
                &scales,
                q.output,
                q.activation,
                requantization,
            )?);
        }
        let tile_pixels = (SCRATCH_TARGET / patch / MIN_TILE_PIXELS * MIN_TILE_PIXELS)
            .clamp(MIN_TILE_PIXELS, MAX_TILE_PIXELS);
        Ok(Implicit {
            gemms,
            patch,
            depth,
            // The caller checked the zero point's range.
            input_zero_point: q.input.zero_point as i8,
            tile_pixels,
            #[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
            small: PatchPlan::new(geometry, depth),
        })
    }

    /// Whether NEON's `sdot` and `smmla` paths build this layer's rows in
    /// the GEMM's panel from the image (a small window, `patch_rows`).
    #[cfg(test)]
    pub(crate) fn small_window(&self) -> bool {
        #[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
        return self.small.is_some();
        #[cfg(not(all(target_arch = "aarch64", target_feature = "neon")))]
        false
    }

    /// The scratch [`run`](Self::run) fills at most: a tile of pixels'
    /// im2col rows.
    pub(crate) fn scratch_bytes(&self) -> usize {
        self.tile_pixels * self.patch
    }

    /// Output rows `rows` (checked by the caller; numbered over the batch)
    /// into `output`, which holds the output's rows from row `first` on (all
    /// of them when `first` is 0), with `backend` (not scalar), gathering as many pixels per GEMM call
    /// as `scratch` holds, up to [`MAX_TILE_PIXELS`]. `scratch` holds at
    /// least one pixel's row.
    pub(crate) fn run<F: FirstRow>(
        &self,
        g: &ConvGeometry,
        backend: Backend,
        input: &[i8],
        (output, first): (&mut [i8], F),
        rows: Range<usize>,
        scratch: &mut [i8],
    ) -> Result<()> {
        let channels = g.output_channels;
        let pixels = rows.start * g.output_width..rows.end * g.output_width;
        let skipped = first.row() * g.output_width;
        #[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
        if let (Some(plan), [gemm]) = (&self.small, &self.gemms[..]) {
            let source = PatchRows {
                plan,
                g,
                input,
                pixel0: pixels.start,
                zero_point: self.input_zero_point,
            };
            let out = &mut output[(pixels.start - skipped) * channels..];
            if gemm.run_panel_rows(backend, &source, pixels.len(), out, channels)? {
                return Ok(());
            }
        }
        let tile = (scratch.len() / self.patch).min(MAX_TILE_PIXELS);
        debug_assert!(tile >= 1);
        let mut start = pixels.start;
        while start < pixels.end {
            let end = (start + tile).min(pixels.end);
            let m = end - start;
            for (group, gemm) in self.gemms.iter().enumerate() {
                let im2col = &mut scratch[..m * self.patch];
                self.gather(g, input, im2col, start..end, group * self.depth);
                let n = gemm.n();
                let out = &mut output[(start - skipped) * channels + group * n..];
                gemm.run_tile_with(backend, im2col, out, channels, 0..m, 0..n)?;
            }
            start = end;
        }
        Ok(())
    }

    /// The im2col rows of output pixels `pixels` (numbered over the batch:
    /// pixel `p` is output row `p / output_width`, column `p %
    /// output_width`) into `dst`, input channels from `channel` on: taps
    /// outside the image hold the input zero point. The rows' taps are
    /// found once per output row, the columns' once per pixel.
    // Inlined into each `run` (one per `FirstRow`), as it was into the
    // single `run` before bands: its short copies stay in the loop.
    #[inline(always)]
    fn gather(
        &self,
        g: &ConvGeometry,
        input: &[i8],
        dst: &mut [i8],
        pixels: Range<usize>,
        channel: usize,
    ) {
        let (kh, kw, depth, cin) = (
            g.kernel_height,
            g.kernel_width,
            self.depth,
            g.input_channels,
        );
        let in_row = g.input_width * cin;
        let image_len = g.input_height * in_row;
        // A whole row of taps is one contiguous run of the input when the
        // columns are adjacent and each pixel's channels are all read.
        let runs = g.dilation_width == 1 && depth == cin;
        let mut patches = dst.chunks_exact_mut(self.patch);
        let mut p = pixels.start;
        while p < pixels.end {
            let (row, first) = (p / g.output_width, p % g.output_width);
            let end = g.output_width.min(first + (pixels.end - p));
            let (b, oy) = (row / g.output_height, row % g.output_height);
            let image = &input[b * image_len..][..image_len];
            let (y0, ys) = ConvGeometry::taps(
                oy,
                g.stride_height,
                g.pad_top,
                g.dilation_height,
                kh,
                g.input_height,
            );
            // Every row of taps in the image and whole runs: a pixel whose
            // columns are in the image too is `kernel_height` copies of
            // `kernel_width * depth` bytes, found without the taps' search.
            let inner = runs && ys.len() == kh;
            let run = kw * depth;
            // Every pixel of the segment inside the image (the interior of
            // a layer, all of a VALID one): consecutive pixels' windows
            // start `stride_width * cin` bytes apart, found without
            // per-pixel tests (the general loop below keeps a first
            // layer's few bytes per pixel behind its bookkeeping).
            let x_first = (first * g.stride_width) as isize - g.pad_left as isize;
            let x_last = ((end - 1) * g.stride_width) as isize - g.pad_left as isize;
            if inner && x_first >= 0 && x_last as usize + kw <= g.input_width {
                let step = g.stride_width * cin;
                let row_step = g.dilation_height * in_row;
                let mut at = y0 as usize * in_row + x_first as usize * cin;
                for patch in (&mut patches).take(end - first) {
                    let mut src = at;
                    for taps in patch.chunks_exact_mut(run) {
                        copy_small(taps, &image[src..src + run]);
                        src += row_step;
                    }
                    at += step;
                }
                p += end - first;
                continue;
            }
            for (ox, patch) in (first..end).zip(&mut patches) {
                let x0 = (ox * g.stride_width) as isize - g.pad_left as isize;
                if inner && x0 >= 0 && x0 as usize + kw <= g.input_width {
                    let at = y0 as usize * in_row + x0 as usize * cin;
                    for (ky, taps) in patch.chunks_exact_mut(run).enumerate() {
                        let src = at + ky * g.dilation_height * in_row;
                        copy_small(taps, &image[src..src + run]);
                    }
                    continue;
                }
                let (x0, xs) = ConvGeometry::taps(
                    ox,
                    g.stride_width,
                    g.pad_left,
                    g.dilation_width,
                    kw,
                    g.input_width,
                );
                if ys.len() < kh || xs.len() < kw {
                    patch.fill(self.input_zero_point);
                }
                for ky in ys.clone() {
                    // In the image: taps() kept only such rows and columns.
                    let iy = (y0 + (ky * g.dilation_height) as isize) as usize;
                    let line = &image[iy * in_row..][..in_row];
                    let taps = &mut patch[ky * kw * depth..][..kw * depth];
                    if runs {
                        let ix = (x0 + xs.start as isize) as usize;
                        copy_small(
                            &mut taps[xs.start * depth..xs.end * depth],
                            &line[ix * cin..][..xs.len() * cin],
                        );
                    } else {
                        for kx in xs.clone() {
                            let ix = (x0 + (kx * g.dilation_width) as isize) as usize;
                            copy_small(
                                &mut taps[kx * depth..][..depth],
                                &line[ix * cin + channel..][..depth],
                            );
                        }
                    }
                }
            }
            p += end - first;
        }
    }
}

/// `dst.copy_from_slice(src)` (equal lengths). Below 16 bytes, two
/// overlapping 8- or 4-byte moves (or single bytes below 4): a first
/// layer's runs are a few bytes long (9 for 3 taps of 3 channels), where a
/// call to `memcpy` costs more than the copy.
#[inline(always)]
fn copy_small(dst: &mut [i8], src: &[i8]) {
    let n = src.len();
    debug_assert_eq!(dst.len(), n);
    if n >= 16 {
        dst.copy_from_slice(src);
    } else if n >= 8 {
        dst[..8].copy_from_slice(&src[..8]);
        dst[n - 8..n].copy_from_slice(&src[n - 8..]);
    } else if n >= 4 {
        dst[..4].copy_from_slice(&src[..4]);
        dst[n - 4..n].copy_from_slice(&src[n - 4..]);
    } else {
        for (d, &s) in dst.iter_mut().zip(src) {
            *d = s;
        }
    }
}
