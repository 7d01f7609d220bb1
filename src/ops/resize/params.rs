//! The geometry both resize ops share: the shape, the coordinate
//! convention, and for every output row and column the source index (nearest
//! neighbour) or the two source indices and the fraction between them
//! (bilinear), each in the arithmetic of the TFLite or XNNPACK kernel it
//! reproduces. All of it is computed once, in `new()`; the kernels only
//! read these tables.

use alloc::vec::Vec;

use crate::error::{Error, Result};
use crate::quant::{round_ties_even_f32, Rounding};

/// Largest input or output height and width accepted: TFLite computes the
/// bilinear source coordinates as `int32` with 10 fractional bits
/// (`1024 * size` must not overflow) and XNNPACK's as `f32` (exact below
/// 2^24); 2^20 keeps both exact.
pub const MAX_RESIZE_SIZE: usize = 1 << 20;

/// The shape of a 2-D resize of NHWC data: only height and width change.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ResizeShape {
    /// Images (N).
    pub batch: usize,
    /// Input rows (H).
    pub input_height: usize,
    /// Input columns (W).
    pub input_width: usize,
    /// Output rows (TFLite's `size[0]`).
    pub output_height: usize,
    /// Output columns (TFLite's `size[1]`).
    pub output_width: usize,
    /// Channels (C), the same in input and output.
    pub channels: usize,
}

impl ResizeShape {
    /// `[batch, height, width, channels]` resized to `(height, width)`.
    /// Errors: a zero dimension ([`Error::ZeroDimension`]), a height or
    /// width above [`MAX_RESIZE_SIZE`] or element counts that overflow
    /// `usize` ([`Error::OutOfDomain`]).
    pub fn new(
        [batch, input_height, input_width, channels]: [usize; 4],
        (output_height, output_width): (usize, usize),
    ) -> Result<ResizeShape> {
        let op = "resize";
        for (value, what) in [
            (batch, "batch"),
            (input_height, "input height"),
            (input_width, "input width"),
            (output_height, "output height"),
            (output_width, "output width"),
            (channels, "channels"),
        ] {
            if value == 0 {
                return Err(Error::ZeroDimension { op, what });
            }
            if what != "batch" && what != "channels" && value > MAX_RESIZE_SIZE {
                return Err(Error::OutOfDomain {
                    op,
                    what,
                    value: value as f64,
                    requirement: "at most 2^20",
                });
            }
        }
        let shape = ResizeShape {
            batch,
            input_height,
            input_width,
            output_height,
            output_width,
            channels,
        };
        if shape.input_len().is_none() || shape.output_len().is_none() {
            return Err(Error::OutOfDomain {
                op,
                what: "element count",
                value: f64::INFINITY,
                requirement: "fits usize",
            });
        }
        Ok(shape)
    }

    /// Input elements, `None` on overflow.
    pub fn input_len(&self) -> Option<usize> {
        self.batch
            .checked_mul(self.input_height)?
            .checked_mul(self.input_width)?
            .checked_mul(self.channels)
    }

    /// Output elements, `None` on overflow.
    pub fn output_len(&self) -> Option<usize> {
        self.batch
            .checked_mul(self.output_height)?
            .checked_mul(self.output_width)?
            .checked_mul(self.channels)
    }
}

/// TFLite's two coordinate options (`ResizeBilinearOptions`,
/// `ResizeNearestNeighborOptions`); both false is TensorFlow 1's legacy
/// convention `source = output * input_size / output_size`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct ResizeCoordinates {
    /// Corner pixels of input and output line up: the scale is
    /// `(input - 1) / (output - 1)` (when the output has more than 1 pixel).
    pub align_corners: bool,
    /// Pixels are sampled at their centres: `source = (output + 0.5) *
    /// scale` (then `- 0.5` for bilinear).
    pub half_pixel_centers: bool,
}

/// How RESIZE_NEAREST_NEIGHBOR finds a source index.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum NearestIndexing {
    /// TFLite's reference `GetNearestNeighbor`, in `f32`: `scale = input /
    /// output` (or `(input - 1) / (output - 1)` with align_corners),
    /// `floor((o + offset) * scale)` (or `round`, half away from zero, with
    /// align_corners), `offset` 0.5 with half_pixel_centers, clamped to the
    /// input. Every type under the reference kernels; int16 and the 8-bit
    /// types with either option under the optimized ones.
    Float,
    /// LiteRT's optimized 8-bit kernel without options: `(o * ((input <<
    /// 16) / output + 1)) >> 16`, clamped to the input. TFLite's comment
    /// says it may part from the reference for some sizes.
    Fixed16,
}

/// A float's floor as an integer, for the `|x| < 2^31` values of resize
/// coordinates (no `libm` in `no_std`).
fn floor_f32(x: f32) -> i64 {
    let t = x as i64;
    if (t as f32) > x {
        t - 1
    } else {
        t
    }
}

/// A float's ceiling as an integer (see [`floor_f32`]).
fn ceil_f32(x: f32) -> i64 {
    let t = x as i64;
    if (t as f32) < x {
        t + 1
    } else {
        t
    }
}

/// C's `roundf`: to nearest, ties away from zero. `x - trunc(x)` is exact.
fn round_half_away_f32(x: f32) -> i64 {
    let a = x.abs();
    let whole = a as i64;
    let r = if a - whole as f32 >= 0.5 {
        whole + 1
    } else {
        whole
    };
    if x < 0.0 {
        -r
    } else {
        r
    }
}

/// TFLite's `f32` scale of one axis: `input / output`, or with
/// align_corners and more than one output pixel `(input - 1) / (output -
/// 1)`.
fn tflite_scale(input: usize, output: usize, align_corners: bool) -> f32 {
    if align_corners && output > 1 {
        (input - 1) as f32 / (output - 1) as f32
    } else {
        input as f32 / output as f32
    }
}

/// The source index of every output position of one axis.
pub(crate) fn nearest_indices(
    indexing: NearestIndexing,
    input: usize,
    output: usize,
    c: ResizeCoordinates,
) -> Vec<u32> {
    let last = input as i64 - 1;
    match indexing {
        NearestIndexing::Float => {
            let scale = tflite_scale(input, output, c.align_corners);
            let offset = if c.half_pixel_centers { 0.5f32 } else { 0.0 };
            (0..output)
                .map(|o| {
                    let x = (o as f32 + offset) * scale;
                    let i = if c.align_corners {
                        round_half_away_f32(x)
                    } else {
                        floor_f32(x)
                    };
                    let mut i = i.min(last);
                    if c.half_pixel_centers {
                        i = i.max(0);
                    }
                    i as u32
                })
                .collect()
        }
        NearestIndexing::Fixed16 => {
            // Q16 scale, rounded down then raised by one unit (so that a
            // scale below 1/65536 is not 0).
            let scale = ((input as i64) << 16) / output as i64 + 1;
            (0..output)
                .map(|o| ((o as i64 * scale) >> 16).min(last) as u32)
                .collect()
        }
    }
}

/// How RESIZE_BILINEAR weighs its four source pixels.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BilinearArithmetic {
    /// TFLite's `ResizeBilinearInteger` (int8 under both kernel sets, int16):
    /// source coordinates in Q10 (`scale_10 = (1024 * input + output / 2) /
    /// output`), each pixel weighted by the product of the two Q10
    /// fractions, the Q20 sum rounded to an integer with `rounding`:
    /// `Double` rounds half away from zero (TFLite's default build: LiteRT
    /// 2.3 and TensorFlow 2.19 as measured), `Single` adds 2^19 and shifts
    /// (a `TFLITE_SINGLE_ROUNDING` build).
    Integer10 {
        /// The build's rounding of the Q20 sum.
        rounding: Rounding,
    },
    /// TFLite's reference `ResizeBilinear<uint8_t>`: `f32` coordinates and
    /// weights, `v00 * (1 - dy) * (1 - dx) + v10 * dy * (1 - dx) + v01 *
    /// (1 - dy) * dx + v11 * dy * dx + 0.5`, evaluated left to right and
    /// truncated.
    Float,
    /// LiteRT's optimized `ResizeBilinearGenericSmallChannel<uint8_t>`: the
    /// same coordinates, the four weights multiplied first (`(1 - dy) * (1
    /// - dx)`, `(1 - dy) * dx`, `dy * (1 - dx)`, `dy * dx`), then `v00 * w0
    /// + v01 * w1 + v10 * w2 + v11 * w3 + 0.5`, truncated.
    FloatWeights {
        /// The compiler's contraction of LiteRT's aarch64 build (as
        /// measured on the uint8 single-op models, every byte): the
        /// half-pixel coordinate `fma(o + 0.5, scale, -0.5)`, the sum
        /// `fma(v11, w3, fma(v10, w2, fma(v00, w0, v01 * w1)))` (one
        /// rounding per step), then `+ 0.5`. Needs the `std` feature (a
        /// fused multiply-add).
        fused: bool,
    },
    /// XNNPACK's `ibilinear` (the delegate's int8 and uint8): `f32` source
    /// coordinates, each fraction `lrintf(alpha * 2048)` (Q11), then in
    /// integers `top = (tl << 11) + (tr - tl) * ax`, the same for the
    /// bottom, `acc = (top << 11) + (bottom - top) * ay`, output `(acc +
    /// 2^21) >> 22`.
    XnnpackQ11,
}

/// One output position of one axis: the two source positions and where
/// between them it lies.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Tap {
    /// The first source index.
    pub lo: u32,
    /// The second source index (equal to `lo` at the edges).
    pub hi: u32,
    /// The integer fraction: Q10 for [`BilinearArithmetic::Integer10`]
    /// (negative before the first pixel with half_pixel_centers), Q11 for
    /// [`BilinearArithmetic::XnnpackQ11`], 0 for the float ones.
    pub frac: i32,
    /// The `f32` source coordinate of the float arithmetics.
    pub pos: f32,
}

/// The taps of one axis of `input` pixels resized to `output`. Errors
/// where a source index falls past the input: TFLite's Q10 scale is
/// rounded to nearest, so for upscaling by large factors (1 pixel to 1500,
/// say) its last taps would read beyond the input.
pub(crate) fn bilinear_taps(
    arithmetic: BilinearArithmetic,
    input: usize,
    output: usize,
    c: ResizeCoordinates,
) -> Result<Vec<Tap>> {
    let taps = axis_taps(arithmetic, input, output, c);
    if taps
        .iter()
        .any(|t| t.lo as usize >= input || t.hi as usize >= input)
    {
        return Err(Error::OutOfDomain {
            op: "resize_bilinear",
            what: "upscaling factor",
            value: output as f64 / input as f64,
            requirement: "source coordinates inside the input (TFLite's Q10 scale reads past it)",
        });
    }
    Ok(taps)
}

fn axis_taps(
    arithmetic: BilinearArithmetic,
    input: usize,
    output: usize,
    c: ResizeCoordinates,
) -> Vec<Tap> {
    let last = input as i64 - 1;
    match arithmetic {
        BilinearArithmetic::Integer10 { .. } => {
            // Rounded Q10 scale, in int32 as TFLite (sizes <= 2^20 fit).
            let (num, den) = if c.align_corners && output > 1 {
                (input as i64 - 1, output as i64 - 1)
            } else {
                (input as i64, output as i64)
            };
            let scale = (1024 * num + den / 2) / den;
            (0..output as i64)
                .map(|o| {
                    let s = if c.half_pixel_centers {
                        o * scale + scale / 2 - 512
                    } else {
                        o * scale
                    };
                    // Rust's `/` truncates like C's: s in [-512, 0) gives 0.
                    let lo = (s / 1024).max(0);
                    let hi = ((s + 1023) / 1024).min(last);
                    Tap {
                        lo: lo as u32,
                        hi: hi as u32,
                        frac: (s - 1024 * lo) as i32,
                        pos: 0.0,
                    }
                })
                .collect()
        }
        BilinearArithmetic::Float | BilinearArithmetic::FloatWeights { .. } => {
            let fused = arithmetic == BilinearArithmetic::FloatWeights { fused: true };
            let scale = tflite_scale(input, output, c.align_corners);
            (0..output)
                .map(|o| {
                    let pos = if c.half_pixel_centers && fused {
                        mul_add(o as f32 + 0.5, scale, -0.5)
                    } else if c.half_pixel_centers {
                        (o as f32 + 0.5) * scale - 0.5
                    } else {
                        o as f32 * scale
                    };
                    let lo = floor_f32(pos).max(0);
                    let hi = ceil_f32(pos).min(last);
                    Tap {
                        lo: lo as u32,
                        hi: hi as u32,
                        frac: 0,
                        pos,
                    }
                })
                .collect()
        }
        BilinearArithmetic::XnnpackQ11 => {
            let adjust = usize::from(c.align_corners && output != 1);
            let scale = (input - adjust) as f32 / (output - adjust) as f32;
            let max = last as f32;
            // Half-pixel centres: XNNPACK folds the two half-pixel shifts
            // into one offset added to `o * scale` (not `(o + 0.5) * scale
            // - 0.5`: the f32 roundings differ).
            let half_pixel = !c.align_corners && c.half_pixel_centers;
            let offset = 0.5 * scale - 0.5;
            (0..output)
                .map(|o| {
                    let pos = if half_pixel {
                        (o as f32 * scale + offset).max(0.0).min(max)
                    } else {
                        (o as f32 * scale).min(max)
                    };
                    let lo = pos as u32;
                    let hi = (lo + 1).min(last as u32);
                    let alpha = pos - lo as f32;
                    Tap {
                        lo,
                        hi,
                        frac: round_ties_even_f32(alpha * 2048.0) as i32,
                        pos,
                    }
                })
                .collect()
        }
    }
}

/// `a * b + c` rounded once (a fused multiply-add). Without `std` (no
/// `fmaf`) `new()` refuses the arithmetic that calls it, so the unfused
/// fallback never runs.
#[inline(always)]
pub(crate) fn mul_add(a: f32, b: f32, c: f32) -> f32 {
    #[cfg(feature = "std")]
    {
        a.mul_add(b, c)
    }
    #[cfg(not(feature = "std"))]
    {
        a * b + c
    }
}

/// TFLite's integer rounding of a Q20 weighted sum to an integer.
#[inline(always)]
pub(crate) fn round_q20(acc: i64, rounding: Rounding) -> i64 {
    match rounding {
        Rounding::Single => (acc + (1 << 19)) >> 20,
        // Half away from zero, then C's truncating division.
        Rounding::Double => {
            let half = if acc > 0 { 1 << 19 } else { -(1 << 19) };
            (acc + half) / (1 << 20)
        }
    }
}

/// XNNPACK's Q11 x Q11 interpolation of one channel (`tl`, `tr`: top
/// left and right; `bl`, `br`: bottom), exact in `i32` for 8-bit values.
#[inline(always)]
pub(crate) fn xnnpack_q11(tl: i32, tr: i32, bl: i32, br: i32, ax: i32, ay: i32) -> i32 {
    let top = (tl << 11) + (tr - tl) * ax;
    let bottom = (bl << 11) + (br - bl) * ax;
    let acc = (top << 11) + (bottom - top) * ay;
    (acc + (1 << 21)) >> 22
}
