//! TFLite's window padding (`SAME` / `VALID`), shared by the operators that
//! slide a window over an image: convolution, depthwise convolution and
//! pooling. A leaf: it imports only the error leaf.

use crate::error::{Error, Result};

/// TFLite's padding schemes (`Padding` in the model schema).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Padding {
    /// Output size `ceil(input / stride)`; the window is centred by padding
    /// `total / 2` before the image and the rest after it.
    Same,
    /// No padding: only windows that lie inside the image.
    Valid,
}

/// One spatial axis as TFLite's `ComputePaddingHeightWidth` derives it: the
/// output size and the padding before the first input element.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AxisPadding {
    /// Number of output positions.
    pub output: usize,
    /// Padding before the image (top or left).
    pub before: usize,
}

impl Padding {
    /// TFLite's output size and leading padding for an axis of `input`
    /// elements, a kernel of `kernel` taps `dilation` apart and `stride`:
    /// with `effective = (kernel - 1) * dilation + 1`,
    ///
    /// ```text
    /// SAME:  output = ceil(input / stride)
    /// VALID: output = floor((input - effective) / stride) + 1
    /// total  = max((output - 1) * stride + effective - input, 0)
    /// before = total / 2
    /// ```
    ///
    /// Errors ([`Error::ZeroDimension`]) for a zero `input`, `kernel`,
    /// `stride` or `dilation`, and for a `VALID` window larger than the
    /// input (no output position: TFLite would make an empty tensor, which
    /// no model runs); [`Error::OutOfDomain`] when the window's extent
    /// overflows.
    pub fn axis(
        self,
        op: &'static str,
        input: usize,
        kernel: usize,
        stride: usize,
        dilation: usize,
    ) -> Result<AxisPadding> {
        for (value, what) in [
            (input, "input size"),
            (kernel, "kernel size"),
            (stride, "stride"),
            (dilation, "dilation"),
        ] {
            if value == 0 {
                return Err(Error::ZeroDimension { op, what });
            }
        }
        let effective = effective_extent(op, kernel, dilation)?;
        let output = match self {
            Padding::Same => input.div_ceil(stride),
            Padding::Valid if effective > input => {
                return Err(Error::ZeroDimension {
                    op,
                    what: "output size (the VALID window is larger than the input)",
                })
            }
            Padding::Valid => (input - effective) / stride + 1,
        };
        // (output - 1) * stride <= input - 1 for both schemes, so this fits.
        let reach = (output - 1) * stride + effective;
        let before = reach.saturating_sub(input) / 2;
        Ok(AxisPadding { output, before })
    }
}

/// `(kernel - 1) * dilation + 1`: the input span one window covers.
pub(crate) fn effective_extent(op: &'static str, kernel: usize, dilation: usize) -> Result<usize> {
    (kernel - 1)
        .checked_mul(dilation)
        .and_then(|s| s.checked_add(1))
        .ok_or(Error::OutOfDomain {
            op,
            what: "kernel extent (kernel - 1) * dilation + 1",
            value: kernel as f64 * dilation as f64,
            requirement: "representable in usize",
        })
}
