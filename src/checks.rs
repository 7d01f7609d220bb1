//! Argument checks shared by every operator's `new()` and `run()`: scales,
//! zero points, TFLite's fixed output quantizations, buffer lengths.
//!
//! A leaf: it imports only the error, element and quantization leaves.

use crate::elem::QuantElem;
use crate::error::{Error, Result};
use crate::quant::QuantParams;

/// Checks a scale: finite and `> 0`.
pub(crate) fn check_scale(what: &'static str, scale: f32) -> Result<f64> {
    if scale.is_finite() && scale > 0.0 {
        Ok(scale as f64)
    } else {
        Err(Error::Scale {
            what,
            value: scale as f64,
        })
    }
}

/// Checks a zero point against the element type's range.
pub(crate) fn check_zero_point<T: QuantElem>(what: &'static str, zero_point: i32) -> Result<()> {
    if (T::MIN..=T::MAX).contains(&zero_point) {
        Ok(())
    } else {
        Err(Error::ZeroPoint {
            what,
            value: zero_point,
            min: T::MIN,
            max: T::MAX,
        })
    }
}

/// The ops whose output quantization TFLite's `Prepare` fixes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FixedOutputOp {
    Softmax,
    LogSoftmax,
    Logistic,
    Tanh,
}

/// TFLite's required output quantization of `op` on `T`, and how closely
/// its `Prepare` compares the scale (relative; 0 is `==`): the one table
/// behind each op's `output_quantization()` and `new()` checks. `None` where
/// TFLite does not define the op for the type (log-softmax on int16).
///
/// Softmax and logistic map `[0, 1)` onto the type (scale 1/256, or 1/32768
/// for int16), tanh maps `[-1, 1)` (1/128, or 1/32768), log-softmax `[-16, 0]`
/// (16/256, the zero point at the top of the range).
pub(crate) const fn required_output<T: QuantElem>(op: FixedOutputOp) -> Option<(QuantParams, f64)> {
    use crate::elem::ElemKind::{I16, I8, U8};
    let (scale, zero_point, tolerance) = match (op, T::KIND) {
        // TF_LITE_ENSURE_NEAR(scale, expected, 0.001 * expected).
        (FixedOutputOp::Softmax, I8) => (1.0 / 256.0, -128, 0.001),
        (FixedOutputOp::Softmax, U8) => (1.0 / 256.0, 0, 0.001),
        (FixedOutputOp::Softmax, I16) => (1.0 / 32768.0, 0, 0.001),
        (FixedOutputOp::LogSoftmax, I8) => (16.0 / 256.0, 127, 0.0),
        (FixedOutputOp::LogSoftmax, U8) => (16.0 / 256.0, 255, 0.0),
        (FixedOutputOp::LogSoftmax, I16) => return None,
        (FixedOutputOp::Logistic, I8) => (1.0 / 256.0, -128, 0.0),
        (FixedOutputOp::Logistic, U8) => (1.0 / 256.0, 0, 0.0),
        (FixedOutputOp::Logistic, I16) => (1.0 / 32768.0, 0, 0.0),
        (FixedOutputOp::Tanh, I8) => (1.0 / 128.0, 0, 0.0),
        (FixedOutputOp::Tanh, U8) => (1.0 / 128.0, 128, 0.0),
        (FixedOutputOp::Tanh, I16) => (1.0 / 32768.0, 0, 0.0),
    };
    Some((QuantParams::new(scale, zero_point), tolerance))
}

/// Validates input and output quantization, and that the output matches the
/// fixed quantization TFLite's `Prepare` demands for this op: the zero point
/// exactly and the scale within `relative_tolerance` (TFLite's softmax uses
/// `TF_LITE_ENSURE_NEAR(scale, expected, 0.001 * expected)`, other ops `==`).
pub(crate) fn check_quantization<T: QuantElem>(
    op: &'static str,
    input: QuantParams,
    output: QuantParams,
    expected_scale: f64,
    expected_zero_point: i32,
    relative_tolerance: f64,
) -> Result<f64> {
    let in_scale = check_scale("input scale", input.scale)?;
    check_zero_point::<T>("input zero point", input.zero_point)?;
    let out_scale = check_scale("output scale", output.scale)?;
    check_zero_point::<T>("output zero point", output.zero_point)?;
    let diff = out_scale - expected_scale;
    let near = diff.abs() <= relative_tolerance * expected_scale;
    if !near || output.zero_point != expected_zero_point {
        return Err(Error::OutputQuantization {
            op,
            dtype: T::NAME,
            expected_scale,
            expected_zero_point,
            scale: out_scale,
            zero_point: output.zero_point,
        });
    }
    Ok(in_scale)
}

/// Checks buffer lengths for a row-wise op; returns the number of rows.
pub(crate) fn check_rows(
    op: &'static str,
    input: usize,
    output: usize,
    row_len: usize,
) -> Result<usize> {
    if input != output {
        return Err(Error::LengthMismatch { op, input, output });
    }
    if row_len == 0 || !input.is_multiple_of(row_len) {
        return Err(Error::RowLength {
            op,
            len: input,
            row: row_len,
        });
    }
    Ok(input / row_len)
}

/// Checks buffer lengths for an element-wise op.
pub(crate) fn check_lengths(op: &'static str, input: usize, output: usize) -> Result<()> {
    if input != output {
        return Err(Error::LengthMismatch { op, input, output });
    }
    Ok(())
}

/// Checks `len` against a shape's `expected` length (`None` when the shape's
/// element count overflows `usize`).
pub(crate) fn check_length(
    op: &'static str,
    what: &'static str,
    expected: Option<usize>,
    got: usize,
) -> Result<()> {
    match expected {
        Some(e) if e == got => Ok(()),
        _ => Err(Error::Length {
            op,
            what,
            expected: expected.unwrap_or(usize::MAX),
            got,
        }),
    }
}

/// The input check TFLite's int16 `Prepare` adds for its table kernels
/// (`Method::Lut`): the input zero point must be 0.
#[cfg(feature = "std")]
pub(crate) fn check_input_zero_point_is_zero(zero_point: i32) -> Result<()> {
    if zero_point == 0 {
        Ok(())
    } else {
        Err(Error::ZeroPoint {
            what: "input zero point",
            value: zero_point,
            min: 0,
            max: 0,
        })
    }
}

/// The error for a non-int16 type reaching an int16 kernel (`new()` never
/// prepares one for other types; this keeps `run()` panic-free regardless).
pub(crate) fn not_int16() -> Error {
    Error::Unsupported {
        op: "int16 lookup table",
        dtype: "non-int16",
        reason: "the int16 Method::Lut kernels only run on int16 data",
    }
}
