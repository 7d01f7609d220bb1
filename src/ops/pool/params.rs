//! The geometry and arithmetic both pooling backends share: the window of
//! each output pixel, TFLite's rounded average, the exact reciprocal the
//! NEON kernel divides with, and the fused activation's range.

use crate::elem::QuantElem;
use crate::error::{Error, Result};
use crate::fixedpoint::libm_round;
use crate::ops::window::Padding;
use crate::ops::FusedActivation;
use crate::quant::QuantParams;

/// The shape of a 2-D pooling over NHWC data: input and output sizes, the
/// window, the strides and the padding before the first row and column (the
/// padding after follows from the output size).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Pool2dShape {
    /// Images (N).
    pub batch: usize,
    /// Input rows (H).
    pub input_height: usize,
    /// Input columns (W).
    pub input_width: usize,
    /// Channels (C), the same in input and output.
    pub channels: usize,
    /// Window rows.
    pub filter_height: usize,
    /// Window columns.
    pub filter_width: usize,
    /// Rows between the windows of consecutive output rows.
    pub stride_height: usize,
    /// Columns between the windows of consecutive output columns.
    pub stride_width: usize,
    /// Padding rows above the input (the first window starts this far above).
    pub pad_top: usize,
    /// Padding columns left of the input.
    pub pad_left: usize,
    /// Output rows.
    pub output_height: usize,
    /// Output columns.
    pub output_width: usize,
}

impl Pool2dShape {
    /// The shape TFLite's `Prepare` computes for `padding`: output size and
    /// padding offsets as its `ComputePaddingHeightWidth` (dilation 1).
    /// `filter` and `stride` are `(height, width)`. Errors on a zero
    /// dimension, filter or stride, and on a VALID window larger than the
    /// input (no output); [`AveragePool2d::new`](super::AveragePool2d::new)
    /// checks the rest.
    pub fn with_padding(
        [batch, input_height, input_width, channels]: [usize; 4],
        filter: (usize, usize),
        stride: (usize, usize),
        padding: Padding,
    ) -> Result<Pool2dShape> {
        let op = "pool2d";
        for (value, what) in [
            (stride.0, "stride height"),
            (stride.1, "stride width"),
            (filter.0, "filter height"),
            (filter.1, "filter width"),
        ] {
            if value == 0 {
                return Err(Error::ZeroDimension { op, what });
            }
        }
        let rows = padding.axis(op, input_height, filter.0, stride.0, 1)?;
        let columns = padding.axis(op, input_width, filter.1, stride.1, 1)?;
        let shape = Pool2dShape {
            batch,
            input_height,
            input_width,
            channels,
            filter_height: filter.0,
            filter_width: filter.1,
            stride_height: stride.0,
            stride_width: stride.1,
            pad_top: rows.before,
            pad_left: columns.before,
            output_height: rows.output,
            output_width: columns.output,
        };
        shape.validate(op)?;
        Ok(shape)
    }

    /// Elements of the input (`N * H * W * C`), `None` on overflow.
    pub fn input_len(&self) -> Option<usize> {
        [self.input_height, self.input_width, self.channels]
            .iter()
            .try_fold(self.batch, |n, &d| n.checked_mul(d))
    }

    /// Elements of the output, `None` on overflow.
    pub fn output_len(&self) -> Option<usize> {
        [self.output_height, self.output_width, self.channels]
            .iter()
            .try_fold(self.batch, |n, &d| n.checked_mul(d))
    }

    /// Every dimension at least 1, lengths that fit `usize`, and every
    /// window overlapping the input (TFLite's average pool fails at run time
    /// on an empty window; here `new()` refuses the shape).
    pub(crate) fn validate(&self, op: &'static str) -> Result<()> {
        for (value, what) in [
            (self.batch, "batch"),
            (self.input_height, "input height"),
            (self.input_width, "input width"),
            (self.channels, "channels"),
            (self.filter_height, "filter height"),
            (self.filter_width, "filter width"),
            (self.stride_height, "stride height"),
            (self.stride_width, "stride width"),
            (self.output_height, "output height"),
            (self.output_width, "output width"),
        ] {
            if value == 0 {
                return Err(Error::ZeroDimension { op, what });
            }
        }
        let too_large = |what| Error::OutOfDomain {
            op,
            what,
            value: f64::INFINITY,
            requirement: "a length that fits in usize",
        };
        self.input_len().ok_or(too_large("input elements"))?;
        self.output_len().ok_or(too_large("output elements"))?;
        // Every position of a window (up to the last window's end) must be
        // addressable without overflow.
        let reach = |out: usize, stride: usize, filter: usize| {
            (out - 1)
                .checked_mul(stride)
                .and_then(|r| r.checked_add(filter))
        };
        if reach(self.output_height, self.stride_height, self.filter_height).is_none()
            || reach(self.output_width, self.stride_width, self.filter_width).is_none()
        {
            return Err(too_large("window reach"));
        }
        // The first window must reach below the top padding and the last
        // must start above the input's end (windows in between lie between
        // them); likewise for columns.
        let overlaps = |pad: usize, filter: usize, stride: usize, out: usize, size: usize| {
            filter > pad && (out - 1) * stride < pad.saturating_add(size)
        };
        if !overlaps(
            self.pad_top,
            self.filter_height,
            self.stride_height,
            self.output_height,
            self.input_height,
        ) || !overlaps(
            self.pad_left,
            self.filter_width,
            self.stride_width,
            self.output_width,
            self.input_width,
        ) {
            return Err(Error::OutOfDomain {
                op,
                what: "padding",
                value: self.pad_top.max(self.pad_left) as f64,
                requirement: "such that every window overlaps the input",
            });
        }
        Ok(())
    }

    /// The input rows `y0..y1` and columns `x0..x1` of output pixel
    /// `(oy, ox)`'s window, clipped to the input (never empty after
    /// [`validate`](Self::validate)).
    #[inline(always)]
    pub(crate) fn window(&self, oy: usize, ox: usize) -> Window {
        let clip = |o: usize, stride: usize, pad: usize, filter: usize, size: usize| {
            let start = o * stride;
            let lo = start.saturating_sub(pad);
            let hi = (start + filter).saturating_sub(pad).min(size);
            (lo, hi)
        };
        let (y0, y1) = clip(
            oy,
            self.stride_height,
            self.pad_top,
            self.filter_height,
            self.input_height,
        );
        let (x0, x1) = clip(
            ox,
            self.stride_width,
            self.pad_left,
            self.filter_width,
            self.input_width,
        );
        Window { y0, y1, x0, x1 }
    }
}

/// The input rows `y0..y1` and columns `x0..x1` one output pixel pools.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Window {
    pub y0: usize,
    pub y1: usize,
    pub x0: usize,
    pub x1: usize,
}

impl Window {
    /// In-bounds elements per channel: the divisor of the average.
    #[inline(always)]
    pub(crate) fn count(&self) -> usize {
        (self.y1 - self.y0) * (self.x1 - self.x0)
    }
}

/// What both pooling ops prepare: the shape and the clamp.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct PoolParams {
    /// The validated shape.
    pub shape: Pool2dShape,
    /// Smallest output value (the activation's, within the type).
    pub act_min: i32,
    /// Largest output value.
    pub act_max: i32,
}

impl PoolParams {
    /// Validates the shape and the quantization (input and output equal, as
    /// TFLite's pooling `Prepare` requires) and computes the clamp.
    pub(crate) fn new<T: QuantElem>(
        op: &'static str,
        shape: Pool2dShape,
        input: QuantParams,
        output: QuantParams,
        activation: FusedActivation,
    ) -> Result<PoolParams> {
        shape.validate(op)?;
        crate::checks::check_scale("input scale", input.scale)?;
        crate::checks::check_zero_point::<T>("input zero point", input.zero_point)?;
        crate::checks::check_scale("output scale", output.scale)?;
        crate::checks::check_zero_point::<T>("output zero point", output.zero_point)?;
        // TFLite: |scale_in - scale_out| <= 1e-6 and equal zero points (int16:
        // both 0, which its quantization rules already give).
        let scale_diff = (input.scale as f64 - output.scale as f64).abs();
        let int16_zero = T::MIN == i16::MIN as i32 && input.zero_point != 0;
        if scale_diff > 1e-6 || input.zero_point != output.zero_point || int16_zero {
            return Err(Error::OutputQuantization {
                op,
                dtype: T::NAME,
                expected_scale: input.scale as f64,
                expected_zero_point: if int16_zero { 0 } else { input.zero_point },
                scale: output.scale as f64,
                zero_point: output.zero_point,
            });
        }
        // The window sum must fit in i32 with the rounding half added.
        let area = shape.filter_height.saturating_mul(shape.filter_width);
        let largest = T::MIN.unsigned_abs().max(T::MAX as u32) as u64;
        let bound = (area as u64)
            .saturating_mul(largest)
            .saturating_add(area as u64 / 2);
        if bound > i32::MAX as u64 {
            return Err(Error::OutOfDomain {
                op,
                what: "filter area",
                value: area as f64,
                requirement: "small enough that a window's sum fits in i32",
            });
        }
        let (act_min, act_max) = activation_range::<T>(activation, output);
        Ok(PoolParams {
            shape,
            act_min,
            act_max,
        })
    }
}

/// TFLite's `CalculateActivationRangeQuantized` for any element type: the
/// activation's real bounds quantized as `zero_point + round(bound / scale)`
/// (`f32` division, ties away from zero), intersected with the type's range.
pub(crate) fn activation_range<T: QuantElem>(
    activation: FusedActivation,
    output: QuantParams,
) -> (i32, i32) {
    let quantize = |real: f32| -> i32 {
        let steps = libm_round((real / output.scale) as f64);
        (output.zero_point as f64 + steps).clamp(i32::MIN as f64, i32::MAX as f64) as i32
    };
    let (lo, hi) = (T::MIN, T::MAX);
    match activation {
        FusedActivation::None => (lo, hi),
        FusedActivation::Relu => (lo.max(quantize(0.0)), hi),
        FusedActivation::Relu6 => (lo.max(quantize(0.0)), hi.min(quantize(6.0))),
    }
}

/// TFLite's int8/int16 average of a window: the sum divided by the count,
/// rounded half away from zero (`(sum ± count / 2) / count` with C's
/// truncating division). For uint8 sums (never negative) it is TFLite's
/// `(sum + count / 2) / count` too.
#[inline(always)]
pub(crate) fn rounded_average(sum: i32, count: i32) -> i32 {
    if sum > 0 {
        (sum + count / 2) / count
    } else {
        (sum - count / 2) / count
    }
}

/// `floor(n / d)` for every `n < 2^31` as a multiply and shifts, the form
/// the NEON kernel divides by a window's count with (NEON has no integer
/// division): `floor(2n * multiplier / 2^32) >> shift`.
///
/// With `2^shift >= d > 2^(shift - 1)` and `multiplier = ceil(2^(31 + shift) / d)`
/// (below `2^32`), `n * multiplier / 2^(31 + shift)` overshoots `n / d` by
/// `n * e / (d * 2^(31 + shift))` with `e = multiplier * d - 2^(31 + shift) < d`;
/// since `n * e < 2^31 * d <= 2^(31 + shift)` the overshoot is below `1 / d`,
/// too little to reach the next integer (`n mod d <= d - 1`). So the floor is
/// exact.
// Only the NEON kernel divides this way; the tests check it everywhere.
#[cfg_attr(
    not(all(target_arch = "aarch64", target_feature = "neon")),
    allow(dead_code)
)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Divisor {
    /// `ceil(2^(31 + shift) / d)`, in `(2^31, 2^32)` or `2^31` for powers of two.
    pub multiplier: u32,
    /// `ceil(log2(d))`.
    pub shift: u32,
}

#[cfg_attr(
    not(all(target_arch = "aarch64", target_feature = "neon")),
    allow(dead_code)
)]
impl Divisor {
    /// The divisor for `d` in `1..2^31`.
    #[inline(always)]
    pub(crate) fn new(d: u32) -> Divisor {
        debug_assert!((1..1 << 31).contains(&d));
        let shift = 32 - (d - 1).leading_zeros();
        let multiplier = ((1u64 << (31 + shift)).div_ceil(d as u64)) as u32;
        Divisor { multiplier, shift }
    }

    /// `floor(n / d)` for `n < 2^31`: the lane arithmetic of the NEON kernel
    /// (`umull` of `2n`, the high half, `ushl` right by `shift`).
    #[cfg_attr(not(test), allow(dead_code))]
    #[inline(always)]
    pub(crate) fn divide(self, n: u32) -> u32 {
        debug_assert!(n < 1 << 31);
        let high = ((2 * n) as u64 * self.multiplier as u64) >> 32;
        (high as u32) >> self.shift
    }

    /// [`rounded_average`] through the divisor: `sign(sum) * floor((|sum| +
    /// d / 2) / d)`, with `half = d / 2`.
    #[cfg_attr(not(test), allow(dead_code))]
    #[inline(always)]
    pub(crate) fn rounded_average(self, sum: i32, half: u32) -> i32 {
        let q = self.divide(sum.unsigned_abs() + half) as i32;
        if sum < 0 {
            -q
        } else {
            q
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn divisor_equals_division_over_small_counts_and_edge_numerators() {
        for d in 1u32..=4096 {
            let div = Divisor::new(d);
            let edges = [
                0,
                1,
                d - 1,
                d,
                d + 1,
                2 * d - 1,
                (1 << 31) - 1,
                (1 << 31) - d,
            ];
            for n in (0..4 * d + 3).chain(edges) {
                assert_eq!(div.divide(n), n / d, "{n} / {d}");
            }
        }
        for d in [
            65_535u32,
            65_536,
            65_537,
            1 << 20,
            (1 << 30) + 1,
            (1 << 31) - 1,
        ] {
            let div = Divisor::new(d);
            for n in [0, 1, d - 1, d, (1 << 31) - 1, (1 << 31) - 2, (1 << 31) - d] {
                assert_eq!(div.divide(n), n / d, "{n} / {d}");
            }
        }
    }

    #[test]
    fn divisor_rounded_average_equals_tflite_formula() {
        for d in 1i32..=300 {
            let div = Divisor::new(d as u32);
            for sum in -128 * d..=128 * d {
                assert_eq!(
                    div.rounded_average(sum, (d / 2) as u32),
                    rounded_average(sum, d),
                    "{sum} / {d}"
                );
            }
        }
    }

    #[test]
    fn rounded_average_ties_go_away_from_zero() {
        // 3 / 2 = 1.5 -> 2, -3 / 2 -> -2, 5 / 4 = 1.25 -> 1, -6 / 4 -> -2.
        assert_eq!(rounded_average(3, 2), 2);
        assert_eq!(rounded_average(-3, 2), -2);
        assert_eq!(rounded_average(5, 4), 1);
        assert_eq!(rounded_average(-6, 4), -2);
        assert_eq!(rounded_average(0, 9), 0);
    }

    #[test]
    fn same_and_valid_shapes_follow_tflite() {
        // 9 x 11 input, 3x3 stride 2 SAME: 5 x 6 outputs, total padding
        // (5-1)*2+3-9 = 2 -> 1 before; (6-1)*2+3-11 = 2 -> 1 before.
        let s = Pool2dShape::with_padding([1, 9, 11, 4], (3, 3), (2, 2), Padding::Same).unwrap();
        assert_eq!(
            (s.output_height, s.output_width, s.pad_top, s.pad_left),
            (5, 6, 1, 1)
        );
        // 10 x 8, 3x3 stride 2 SAME: 5 x 4, total 1 -> 0 before (the odd one after).
        let s = Pool2dShape::with_padding([1, 10, 8, 4], (3, 3), (2, 2), Padding::Same).unwrap();
        assert_eq!(
            (s.output_height, s.output_width, s.pad_top, s.pad_left),
            (5, 4, 0, 0)
        );
        // VALID 9 x 10, 3x3 stride 2: 4 x 4, no padding.
        let s = Pool2dShape::with_padding([1, 9, 10, 4], (3, 3), (2, 2), Padding::Valid).unwrap();
        assert_eq!(
            (s.output_height, s.output_width, s.pad_top, s.pad_left),
            (4, 4, 0, 0)
        );
        // A VALID window larger than the input has no output.
        assert!(matches!(
            Pool2dShape::with_padding([1, 2, 9, 4], (3, 3), (1, 1), Padding::Valid),
            Err(Error::ZeroDimension {
                what: "output size (the VALID window is larger than the input)",
                ..
            })
        ));
        assert!(matches!(
            Pool2dShape::with_padding([1, 2, 9, 4], (3, 3), (0, 1), Padding::Same),
            Err(Error::ZeroDimension {
                what: "stride height",
                ..
            })
        ));
    }
}
