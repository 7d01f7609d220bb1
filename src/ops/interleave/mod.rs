//! Planes to pixels and back, for bytes: the transposes between a planar
//! layout (NCHW: each channel's pixels together) and an interleaved one
//! (NHWC: each pixel's channels together) when there are 2 to 4 channels,
//! as an image's RGB input has.
//!
//! ```text
//! interleave:   output[p * planes + j] = input[j * plane_stride + p]
//! deinterleave: output[j * plane_stride + p] = input[p * planes + j]
//! ```
//!
//! [`Backend::Scalar`] moves byte by byte (the oracle); [`Backend::Neon`]
//! moves 16 pixels per step with one structured store (`st2` / `st3` /
//! `st4`) or load (`ld2` / `ld3` / `ld4`), the rest byte by byte. A strided
//! copy that steps over one byte per element costs a dozen instructions
//! per byte (MobileNetV2's NCHW input: 150,528 bytes, 1.96 M instructions);
//! these cost under half an instruction.
//!
//! * `neon.rs`: the structured loads and stores.

#[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
mod neon;

use crate::backend::{unavailable, Backend};
use crate::error::{Error, Result};

const INTERLEAVE: &str = "interleave_planes";
const DEINTERLEAVE: &str = "deinterleave_planes";

/// Channels the structured loads and stores take.
pub const INTERLEAVED_PLANES: core::ops::RangeInclusive<usize> = 2..=4;

/// The span of `planes` planes of `pixels` bytes, `plane_stride` bytes
/// apart: `(planes - 1) * plane_stride + pixels`, checked against `len`;
/// and `pixels * planes` against `pixels_len`.
fn check(
    op: &'static str,
    planes: usize,
    plane_stride: usize,
    (pixels, pixels_len): (usize, usize),
    planar_len: usize,
) -> Result<()> {
    if !INTERLEAVED_PLANES.contains(&planes) {
        return Err(Error::Unsupported {
            op,
            dtype: "bytes",
            reason: "2, 3 or 4 planes",
        });
    }
    if pixels.checked_mul(planes) != Some(pixels_len) {
        return Err(Error::Length {
            op,
            what: "interleaved bytes (pixels x planes)",
            expected: pixels.saturating_mul(planes),
            got: pixels_len,
        });
    }
    let span = (planes - 1)
        .checked_mul(plane_stride)
        .and_then(|s| s.checked_add(pixels));
    if plane_stride < pixels || span.is_none_or(|s| s > planar_len) {
        return Err(Error::Length {
            op,
            what: "planar bytes ((planes - 1) x plane stride + pixels, planes apart)",
            expected: span.unwrap_or(usize::MAX),
            got: planar_len,
        });
    }
    Ok(())
}

/// `output[p * planes + j] = input[j * plane_stride + p]` for every pixel
/// `p` of `output.len() / planes`, with the best backend. Errors: `planes`
/// outside 2..=4, an `output` that is not whole pixels, planes that overlap
/// (`plane_stride` under the pixels) or run past `input`.
pub fn interleave_planes(
    input: &[u8],
    plane_stride: usize,
    output: &mut [u8],
    planes: usize,
) -> Result<()> {
    interleave_planes_with(Backend::best(), input, plane_stride, output, planes)
}

/// [`interleave_planes`] with `backend` (an error if it is not available
/// here); every backend gives the same bytes.
pub fn interleave_planes_with(
    backend: Backend,
    input: &[u8],
    plane_stride: usize,
    output: &mut [u8],
    planes: usize,
) -> Result<()> {
    let pixels = output.len() / planes.max(1);
    check(
        INTERLEAVE,
        planes,
        plane_stride,
        (pixels, output.len()),
        input.len(),
    )?;
    if !backend.is_available() {
        return Err(unavailable(backend));
    }
    #[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
    if backend == Backend::Neon {
        neon::interleave(input, plane_stride, output, planes);
        return Ok(());
    }
    interleave_scalar(input, plane_stride, output, planes, 0);
    Ok(())
}

/// `output[j * plane_stride + p] = input[p * planes + j]` for every pixel
/// `p` of `input.len() / planes`, with the best backend; the bytes of
/// `output` between the planes are left as they are. Errors as
/// [`interleave_planes`], the roles of `input` and `output` swapped.
pub fn deinterleave_planes(
    input: &[u8],
    output: &mut [u8],
    plane_stride: usize,
    planes: usize,
) -> Result<()> {
    deinterleave_planes_with(Backend::best(), input, output, plane_stride, planes)
}

/// [`deinterleave_planes`] with `backend` (an error if it is not available
/// here); every backend gives the same bytes.
pub fn deinterleave_planes_with(
    backend: Backend,
    input: &[u8],
    output: &mut [u8],
    plane_stride: usize,
    planes: usize,
) -> Result<()> {
    let pixels = input.len() / planes.max(1);
    check(
        DEINTERLEAVE,
        planes,
        plane_stride,
        (pixels, input.len()),
        output.len(),
    )?;
    if !backend.is_available() {
        return Err(unavailable(backend));
    }
    #[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
    if backend == Backend::Neon {
        neon::deinterleave(input, output, plane_stride, planes);
        return Ok(());
    }
    deinterleave_scalar(input, output, plane_stride, planes, 0);
    Ok(())
}

/// The oracle from pixel `first` on (checked by the callers).
fn interleave_scalar(
    input: &[u8],
    plane_stride: usize,
    output: &mut [u8],
    planes: usize,
    first: usize,
) {
    for (p, pixel) in output.chunks_exact_mut(planes).enumerate().skip(first) {
        for (j, byte) in pixel.iter_mut().enumerate() {
            *byte = input[j * plane_stride + p];
        }
    }
}

/// The oracle from pixel `first` on (checked by the callers).
fn deinterleave_scalar(
    input: &[u8],
    output: &mut [u8],
    plane_stride: usize,
    planes: usize,
    first: usize,
) {
    for (p, pixel) in input.chunks_exact(planes).enumerate().skip(first) {
        for (j, &byte) in pixel.iter().enumerate() {
            output[j * plane_stride + p] = byte;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn backends() -> impl Iterator<Item = Backend> {
        [Backend::Scalar, Backend::Neon]
            .into_iter()
            .filter(|b| b.is_available())
    }

    /// Every plane count, pixel counts around the 16-pixel step, strides
    /// with gaps between the planes: both directions against the formula,
    /// and back again.
    #[test]
    fn planes_and_pixels_round_trip_on_every_backend() {
        for planes in INTERLEAVED_PLANES {
            for pixels in [0, 1, 15, 16, 17, 31, 33, 50, 224] {
                for gap in [0, 5] {
                    let stride = pixels + gap;
                    let input: alloc::vec::Vec<u8> = (0..(planes - 1) * stride + pixels)
                        .map(|i| (i * 7 + 3) as u8)
                        .collect();
                    for backend in backends() {
                        let mut pixels_out = alloc::vec![0u8; pixels * planes];
                        interleave_planes_with(backend, &input, stride, &mut pixels_out, planes)
                            .unwrap();
                        for p in 0..pixels {
                            for j in 0..planes {
                                assert_eq!(
                                    pixels_out[p * planes + j],
                                    input[j * stride + p],
                                    "{backend:?} {planes} planes, {pixels} pixels, ({p}, {j})"
                                );
                            }
                        }
                        let mut back = alloc::vec![0xEEu8; input.len()];
                        deinterleave_planes_with(backend, &pixels_out, &mut back, stride, planes)
                            .unwrap();
                        for (i, (&b, &x)) in back.iter().zip(&input).enumerate() {
                            let in_a_plane = i % stride < pixels;
                            assert_eq!(b, if in_a_plane { x } else { 0xEE }, "byte {i}");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn bad_shapes_are_errors() {
        let input = [0u8; 48];
        let mut output = [0u8; 48];
        // 5 planes; an output of partial pixels; overlapping planes; planes
        // past the input.
        assert!(interleave_planes(&input, 16, &mut output[..40], 5).is_err());
        assert!(interleave_planes(&input, 16, &mut output[..47], 3).is_err());
        assert!(interleave_planes(&input, 8, &mut output[..48], 3).is_err());
        assert!(interleave_planes(&input[..47], 16, &mut output[..48], 3).is_err());
        assert!(deinterleave_planes(&input[..48], &mut output[..47], 16, 3).is_err());
        assert!(deinterleave_planes(&input[..48], &mut output[..48], usize::MAX, 3).is_err());
        assert!(interleave_planes(&input, 16, &mut output[..48], 3).is_ok());
        assert!(deinterleave_planes(&input[..48], &mut output[..48], 16, 3).is_ok());
    }
}
