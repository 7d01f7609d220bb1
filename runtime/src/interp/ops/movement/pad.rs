//! PAD and PADV2: the output filled with the pad value (PAD: the zero point
//! of a quantized type, else 0; PADV2: its one-element constant value
//! tensor, quantized as the output), then the input copied into its
//! interior.

use qneon_tflite::{BuiltinOp, Tensor, TensorType};

use std::ops::Range;

use super::bands::RowBands;
use crate::error::Result;
use crate::interp::ops::kernel::PreparedOp;
use crate::interp::ops::op::Op;
use crate::interp::ops::strided_copy::{contiguous_strides, signed, StridedCopy};

/// TFLite's `Prepare` of PAD and PADV2: constant non-negative paddings, the
/// padded output shape, and the pad value.
pub(crate) fn prepare(op: &Op<'_, '_>) -> Result<PreparedOp> {
    if op.builtin == BuiltinOp::PADV2 {
        op.input_count(3, 3)?;
    } else {
        op.input_count(2, 2)?;
    }
    op.output_count(1)?;
    let (input, output) = (op.input(0)?, op.output(0)?);
    if input.dtype() != output.dtype() {
        return Err(op.unsupported_types());
    }
    let elem = op.elem(input)?;
    let rank = input.shape().len();
    let paddings = op.constant_ints(op.input(1)?, "paddings")?;
    if paddings.len() != 2 * rank || paddings.iter().any(|&p| p < 0) {
        return Err(op.invalid(format!(
            "paddings {paddings:?} are not {rank} non-negative (before, after) pairs"
        )));
    }
    let before: Vec<usize> = (0..rank).map(|d| paddings[2 * d] as usize).collect();
    let expected: Vec<usize> = (0..rank)
        .map(|d| input.shape()[d] + before[d] + paddings[2 * d + 1] as usize)
        .collect();
    op.expect_shape(output, &expected)?;
    let quantized = matches!(
        input.dtype(),
        TensorType::Int8 | TensorType::Uint8 | TensorType::Int16
    );
    if quantized {
        op.quantization_equal(input, output)?;
    }
    let fill: Vec<u8> = match op.optional_input(2) {
        Some(value) if op.builtin == BuiltinOp::PADV2 => pad_value(op, value, output, elem)?,
        // PAD: the output zero point for quantized types, else 0.
        _ if quantized => {
            let zero_point = op.per_tensor(output, "output")?.zero_point;
            match input.dtype() {
                TensorType::Int16 => (zero_point as i16).to_le_bytes().to_vec(),
                _ => vec![zero_point as u8],
            }
        }
        _ => vec![0; elem],
    };
    let bands = pad_bands(input.shape(), &before, output.shape(), elem, fill)
        .map_err(|e| op.copy_error(e))?;
    Ok(PreparedOp::elements(bands, output.element_count()))
}

/// PADV2's pad value, one element's bytes: TFLite requires one element of
/// the input's type and, for quantized types, the output's scale and zero
/// point (the stored value is then copied as it is).
fn pad_value(
    op: &Op<'_, '_>,
    value: &Tensor<'_>,
    output: &Tensor<'_>,
    elem: usize,
) -> Result<Vec<u8>> {
    if value.dtype() != output.dtype() {
        return Err(op.invalid(format!(
            "constant value has dtype {}, the input's is {} (TFLite requires them equal)",
            value.dtype().name(),
            output.dtype().name()
        )));
    }
    if value.element_count() != 1 {
        return Err(op.invalid(format!(
            "constant value has {} elements, TFLite requires 1",
            value.element_count()
        )));
    }
    if matches!(
        output.dtype(),
        TensorType::Int8 | TensorType::Uint8 | TensorType::Int16
    ) {
        let (v, o) = (
            op.per_tensor(value, "constant value")?,
            op.per_tensor(output, "output")?,
        );
        if v != o {
            return Err(op.invalid(format!(
                "constant value quantization {v:?} differs from the output's {o:?} (TFLite \
                 requires them equal)"
            )));
        }
    }
    if !value.is_constant() {
        return Err(op.unsupported("constant value must be constant (dynamic pad value)"));
    }
    match value.data() {
        Some(bytes) if bytes.len() == elem => Ok(bytes.to_vec()),
        _ => Err(op.invalid("constant value has no data of one element")),
    }
}

/// PAD with the pad value `fill` (one element's bytes), cut into bands of
/// output rows for threads ([`RowBands`]): each band filled, then the input
/// rows that land in it copied.
pub(crate) fn pad_bands(
    input_shape: &[usize],
    before: &[usize],
    output_shape: &[usize],
    elem: usize,
    fill: Vec<u8>,
) -> Result<RowBands, String> {
    let whole = pad(input_shape, before, output_shape, elem)?;
    RowBands::new(whole, output_shape, elem, Some(fill), |dim, rows| {
        // Output row r holds input row r - before[dim], where there is one.
        let (skip, rows_in) = (before[dim], input_shape[dim]);
        let first = rows.start.saturating_sub(skip).min(rows_in);
        let last = rows.end.saturating_sub(skip).min(rows_in);
        if first == last {
            return Ok(None);
        }
        pad_rows(input_shape, before, output_shape, elem, (dim, first..last)).map(Some)
    })
}

/// PAD: the input copied into the interior of the output; the caller fills
/// the output with the pad value first.
pub fn pad(
    input_shape: &[usize],
    before: &[usize],
    output_shape: &[usize],
    elem: usize,
) -> Result<StridedCopy, String> {
    let rows = 0..input_shape.first().copied().unwrap_or(1);
    pad_rows(input_shape, before, output_shape, elem, (0, rows))
}

/// The part of PAD's copy that reads indices `rows` of input dimension
/// `dim` (all of the other dimensions).
fn pad_rows(
    input_shape: &[usize],
    before: &[usize],
    output_shape: &[usize],
    elem: usize,
    (dim, rows): (usize, Range<usize>),
) -> Result<StridedCopy, String> {
    let out_strides = contiguous_strides(output_shape, elem);
    let in_strides = contiguous_strides(input_shape, elem);
    let mut dst_start: usize = before.iter().zip(&out_strides).map(|(&b, &s)| b * s).sum();
    let mut shape = input_shape.to_vec();
    let mut src_start = 0;
    if let Some(n) = shape.get_mut(dim) {
        *n = rows.len();
        src_start = (in_strides[dim] * rows.start) as isize;
        dst_start += out_strides[dim] * rows.start;
    }
    StridedCopy::new(
        &shape,
        src_start,
        &signed(&in_strides),
        input_shape.iter().product::<usize>() * elem,
        dst_start,
        &out_strides,
        output_shape.iter().product::<usize>() * elem,
        elem,
    )
}
