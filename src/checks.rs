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
