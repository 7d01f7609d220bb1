//! The geometry of a 2-D convolution window over an NHWC image, shared by
//! convolution and depthwise convolution: sizes, strides, dilations and the
//! padding in front of the image (TFLite's `SAME` / `VALID` rules are the
//! [`window`](crate::ops::window) leaf's).

use crate::error::{Error, Result};
use crate::ops::window::effective_extent;
pub use crate::ops::window::{AxisPadding, Padding};

/// Where a convolution window sits: NHWC input and output sizes, the
/// kernel, strides, dilations and the padding before the image. Output
/// position `(oy, ox)` reads input rows `oy * stride_height - pad_top +
/// ky * dilation_height` for `ky` in `0..kernel_height` (columns alike);
/// taps outside the image read nothing (TFLite skips them, which equals
/// reading the input zero point).
///
/// The channel counts are the operator's: [`Conv2d`](crate::ops::Conv2d)
/// takes its filter depth apart, [`DepthwiseConv2d`](crate::ops::DepthwiseConv2d)
/// its depth multiplier.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ConvGeometry {
    /// Images in the batch.
    pub batch: usize,
    /// Input rows.
    pub input_height: usize,
    /// Input columns.
    pub input_width: usize,
    /// Input channels.
    pub input_channels: usize,
    /// Output rows.
    pub output_height: usize,
    /// Output columns.
    pub output_width: usize,
    /// Output channels.
    pub output_channels: usize,
    /// Kernel rows.
    pub kernel_height: usize,
    /// Kernel columns.
    pub kernel_width: usize,
    /// Input rows between consecutive output rows.
    pub stride_height: usize,
    /// Input columns between consecutive output columns.
    pub stride_width: usize,
    /// Input rows between consecutive kernel rows.
    pub dilation_height: usize,
    /// Input columns between consecutive kernel columns.
    pub dilation_width: usize,
    /// Padding rows above the image.
    pub pad_top: usize,
    /// Padding columns left of the image.
    pub pad_left: usize,
}

impl ConvGeometry {
    /// A geometry with TFLite's output size and padding for `padding`
    /// ([`Padding::axis`] on each axis), unit dilation unless changed.
    #[allow(clippy::too_many_arguments)]
    pub fn tflite(
        op: &'static str,
        padding: Padding,
        [batch, input_height, input_width, input_channels]: [usize; 4],
        output_channels: usize,
        [kernel_height, kernel_width]: [usize; 2],
        [stride_height, stride_width]: [usize; 2],
        [dilation_height, dilation_width]: [usize; 2],
    ) -> Result<ConvGeometry> {
        let rows = padding.axis(
            op,
            input_height,
            kernel_height,
            stride_height,
            dilation_height,
        )?;
        let cols = padding.axis(op, input_width, kernel_width, stride_width, dilation_width)?;
        Ok(ConvGeometry {
            batch,
            input_height,
            input_width,
            input_channels,
            output_height: rows.output,
            output_width: cols.output,
            output_channels,
            kernel_height,
            kernel_width,
            stride_height,
            stride_width,
            dilation_height,
            dilation_width,
            pad_top: rows.before,
            pad_left: cols.before,
        })
    }

    /// Checks every size (all but the paddings at least 1) and that the
    /// element counts and the window's reach fit in `usize`; returns the
    /// input and output element counts.
    pub(crate) fn validate(&self, op: &'static str) -> Result<(usize, usize)> {
        for (value, what) in [
            (self.batch, "batch"),
            (self.input_height, "input height"),
            (self.input_width, "input width"),
            (self.input_channels, "input channels"),
            (self.output_height, "output height"),
            (self.output_width, "output width"),
            (self.output_channels, "output channels"),
            (self.kernel_height, "kernel height"),
            (self.kernel_width, "kernel width"),
            (self.stride_height, "stride height"),
            (self.stride_width, "stride width"),
            (self.dilation_height, "dilation height"),
            (self.dilation_width, "dilation width"),
        ] {
            if value == 0 {
                return Err(Error::ZeroDimension { op, what });
            }
        }
        let overflow = |what| Error::OutOfDomain {
            op,
            what,
            value: f64::INFINITY,
            requirement: "representable in usize",
        };
        let count = |dims: [usize; 4]| dims.iter().try_fold(1usize, |a, &d| a.checked_mul(d));
        let input = count([
            self.batch,
            self.input_height,
            self.input_width,
            self.input_channels,
        ])
        .ok_or(overflow("input element count"))?;
        let output = count([
            self.batch,
            self.output_height,
            self.output_width,
            self.output_channels,
        ])
        .ok_or(overflow("output element count"))?;
        // The last window's far edge, in padded coordinates: every index the
        // loops form stays below it.
        for (out, stride, kernel, dilation, pad, what) in [
            (
                self.output_height,
                self.stride_height,
                self.kernel_height,
                self.dilation_height,
                self.pad_top,
                "window reach (rows)",
            ),
            (
                self.output_width,
                self.stride_width,
                self.kernel_width,
                self.dilation_width,
                self.pad_left,
                "window reach (columns)",
            ),
        ] {
            let reach = (out - 1)
                .checked_mul(stride)
                .and_then(|r| r.checked_add(effective_extent(op, kernel, dilation).ok()?))
                .and_then(|r| r.checked_add(pad));
            if reach.is_none_or(|r| r > isize::MAX as usize) {
                return Err(overflow(what));
            }
        }
        Ok((input, output))
    }

    /// The output columns whose window of `kernel_width` taps lies wholly
    /// inside the image: from the first whose first tap is at or after
    /// column 0 to the last whose last tap is before the image's end
    /// (`end <= start` when none). Used by the NEON depthwise kernels.
    #[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
    #[inline(always)]
    pub(crate) fn inside_columns(&self, kernel_width: usize) -> (usize, usize) {
        let reach = (kernel_width - 1) * self.dilation_width;
        let first = self.pad_left.div_ceil(self.stride_width);
        let end = if self.input_width + self.pad_left > reach {
            ((self.input_width - 1 + self.pad_left - reach) / self.stride_width + 1)
                .min(self.output_width)
        } else {
            0
        };
        (first, end)
    }

    /// The kernel taps `0..kernel` of one axis that land inside the image
    /// for output position `out`, and the input index of tap 0 (possibly
    /// negative: in the padding).
    #[inline(always)]
    pub(crate) fn taps(
        out: usize,
        stride: usize,
        pad: usize,
        dilation: usize,
        kernel: usize,
        input: usize,
    ) -> (isize, core::ops::Range<usize>) {
        let origin = (out * stride) as isize - pad as isize;
        // First tap at or after the image start, last before its end.
        let first = if origin >= 0 {
            0
        } else {
            (origin.unsigned_abs()).div_ceil(dilation)
        };
        let end = if origin >= input as isize {
            0
        } else {
            let room = input as isize - 1 - origin; // >= 0: the last index a tap may take
            (room as usize / dilation + 1).min(kernel)
        };
        (origin, first.min(end)..end)
    }
}
