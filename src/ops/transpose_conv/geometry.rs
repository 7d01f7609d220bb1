//! Where a transposed convolution's taps land: the sizes, strides and
//! padding of TFLite's TRANSPOSE_CONV, and for each output position the
//! input positions and kernel taps that reach it.

use core::ops::Range;

use crate::error::{Error, Result};
use crate::ops::window::Padding;

/// The shape of a transposed convolution over NHWC tensors. Input pixel
/// `(iy, ix)` spreads its kernel over output rows `iy * stride_height -
/// pad_top + ky` for `ky` in `0..kernel_height` (columns alike); taps that
/// land outside the output are dropped, as TFLite drops them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TransposeConvGeometry {
    /// Images in the batch.
    pub batch: usize,
    /// Input rows.
    pub input_height: usize,
    /// Input columns.
    pub input_width: usize,
    /// Input channels (the filter's depth).
    pub input_channels: usize,
    /// Output rows.
    pub output_height: usize,
    /// Output columns.
    pub output_width: usize,
    /// Output channels (the filter's count).
    pub output_channels: usize,
    /// Kernel rows.
    pub kernel_height: usize,
    /// Kernel columns.
    pub kernel_width: usize,
    /// Output rows between the kernels of consecutive input rows.
    pub stride_height: usize,
    /// Output columns between the kernels of consecutive input columns.
    pub stride_width: usize,
    /// Kernel rows cut off above the output.
    pub pad_top: usize,
    /// Kernel columns cut off left of the output.
    pub pad_left: usize,
}

impl TransposeConvGeometry {
    /// TFLite's geometry for an output of `[output_height, output_width]`:
    /// the padding is the one a convolution of the same kernel, stride and
    /// `padding` would put around the *output* ([`Padding::axis`] on the
    /// output size), and that convolution's output size must be the input
    /// size, as TFLite's `Prepare` requires. Several output sizes map to
    /// one input size (SAME: `(input - 1) * stride < output <= input *
    /// stride`; VALID: the `(output - kernel) % stride` rows past the last
    /// kernel, an `output_padding`).
    ///
    /// Errors: a zero size, kernel or stride ([`Error::ZeroDimension`]),
    /// an input size that does not follow from the output's
    /// ([`Error::Length`], naming the axis).
    pub fn tflite(
        op: &'static str,
        padding: Padding,
        [batch, input_height, input_width, input_channels]: [usize; 4],
        [output_height, output_width, output_channels]: [usize; 3],
        [kernel_height, kernel_width]: [usize; 2],
        [stride_height, stride_width]: [usize; 2],
    ) -> Result<TransposeConvGeometry> {
        let rows = padding.axis(op, output_height, kernel_height, stride_height, 1)?;
        let cols = padding.axis(op, output_width, kernel_width, stride_width, 1)?;
        if rows.output != input_height {
            return Err(Error::Length {
                op,
                what: "input height (the convolution output size of the output height)",
                expected: rows.output,
                got: input_height,
            });
        }
        if cols.output != input_width {
            return Err(Error::Length {
                op,
                what: "input width (the convolution output size of the output width)",
                expected: cols.output,
                got: input_width,
            });
        }
        let g = TransposeConvGeometry {
            batch,
            input_height,
            input_width,
            input_channels,
            output_height,
            output_width,
            output_channels,
            kernel_height,
            kernel_width,
            stride_height,
            stride_width,
            pad_top: rows.before,
            pad_left: cols.before,
        };
        g.validate(op)?;
        Ok(g)
    }

    /// Checks that no size is zero and that the element counts fit
    /// `usize`; returns the input's, output's and weights' element counts.
    pub(crate) fn validate(&self, op: &'static str) -> Result<(usize, usize, usize)> {
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
        ] {
            if value == 0 {
                return Err(Error::ZeroDimension { op, what });
            }
        }
        let product = |dims: &[usize], what: &'static str| {
            dims.iter()
                .try_fold(1usize, |a, &d| a.checked_mul(d))
                .ok_or(Error::OutOfDomain {
                    op,
                    what,
                    value: f64::INFINITY,
                    requirement: "an element count that fits usize",
                })
        };
        let input = product(
            &[
                self.batch,
                self.input_height,
                self.input_width,
                self.input_channels,
            ],
            "input shape",
        )?;
        let output = product(
            &[
                self.batch,
                self.output_height,
                self.output_width,
                self.output_channels,
            ],
            "output shape",
        )?;
        let weights = product(
            &[
                self.output_channels,
                self.kernel_height,
                self.kernel_width,
                self.input_channels,
            ],
            "weights shape",
        )?;
        // The taps' positions are computed in isize.
        product(
            &[
                self.input_height.max(self.output_height),
                self.stride_height,
            ],
            "output rows",
        )?;
        product(
            &[self.input_width.max(self.output_width), self.stride_width],
            "output columns",
        )?;
        Ok((input, output, weights))
    }

    /// The output rows in the batch (`batch * output_height`).
    pub fn rows(&self) -> usize {
        self.batch * self.output_height
    }
}

/// The taps that reach output position `out` along one axis, as `(kernel
/// tap, input position)` pairs: `out + pad = input * stride + tap` with
/// the tap inside the kernel and the input position inside the image.
/// The gather form of TFLite's scatter: each output element reads the
/// same products TFLite adds into it, in another order (the sums wrap
/// modulo 2^32 alike).
#[inline(always)]
pub(crate) fn taps(
    out: usize,
    pad: usize,
    stride: usize,
    kernel: usize,
    inputs: usize,
) -> impl Iterator<Item = (usize, usize)> + Clone {
    let at = out + pad;
    let first = at % stride;
    let last = kernel.min(at + 1);
    let taps: Range<usize> = first.min(last)..last;
    taps.step_by(stride)
        .map(move |k| (k, (at - k) / stride))
        .filter(move |&(_, i)| i < inputs)
}
