//! RESHAPE, SQUEEZE and EXPAND_DIMS: the output is the input's bytes (an
//! alias in the arena plan), so only the shapes are checked and nothing
//! runs.

use qneon_tflite::Options as OpOptions;

use crate::error::Result;
use crate::interp::ops::buffers::element_size;
use crate::interp::ops::kernel::{Nop, PreparedOp};
use crate::interp::ops::op::Op;

/// TFLite's `Prepare` of RESHAPE: same dtype and element count, and a
/// shape input or option that agrees with the declared output shape.
pub(crate) fn prepare(op: &Op<'_, '_>) -> Result<PreparedOp> {
    op.input_count(1, 2)?;
    op.output_count(1)?;
    let (input, output) = (op.input(0)?, op.output(0)?);
    if input.dtype() != output.dtype() || element_size(input.dtype()).is_none() {
        return Err(op.unsupported_types());
    }
    if input.element_count() != output.element_count() {
        return Err(op.invalid(format!(
            "reshapes {} elements {:?} into {} {:?}",
            input.element_count(),
            input.shape(),
            output.element_count(),
            output.shape()
        )));
    }
    // The output shape is the declared one (static shapes); a shape input or
    // option must agree with it.
    let declared: Option<Vec<i64>> = match op.optional_input(1) {
        Some(shape) if shape.is_constant() => Some(op.constant_ints(shape, "shape")?),
        _ => match op.operator.options() {
            OpOptions::Builtin(qneon_tflite::schema::BuiltinOptions::ReshapeOptions(r)) => r
                .new_shape
                .as_ref()
                .map(|s| s.iter().map(|&x| x as i64).collect()),
            _ => None,
        },
    };
    if let Some(shape) = declared {
        let known: Vec<usize> = output.shape().to_vec();
        let fits = shape.len() == known.len()
            && shape
                .iter()
                .zip(&known)
                .all(|(&s, &k)| s == -1 || s == k as i64);
        // A scalar output may be given as [] or [1]-like shapes; only refuse
        // clear disagreement.
        if !(fits || shape.is_empty() || known.is_empty()) {
            return Err(op.invalid(format!(
                "shape input {shape:?} disagrees with the output shape {known:?}"
            )));
        }
    }
    Ok(alias())
}

/// An op whose output aliases its input: nothing runs.
fn alias() -> PreparedOp {
    PreparedOp {
        kernel: Box::new(Nop),
        work: 0,
        unit: "element",
        scratch_bytes: 0,
        alias: true,
        state_inputs: Vec::new(),
    }
}

/// Input and output of the same dtype, as every aliasing op needs.
fn same_dtype(op: &Op<'_, '_>) -> Result<()> {
    let (input, output) = (op.input(0)?, op.output(0)?);
    if input.dtype() != output.dtype() || element_size(input.dtype()).is_none() {
        return Err(op.unsupported_types());
    }
    Ok(())
}

/// TFLite's `Prepare` of SQUEEZE: at most 8 axes; each listed axis (none
/// listed: every axis of size 1) in range and of size 1; the output shape is
/// the input's without them.
pub(crate) fn prepare_squeeze(op: &Op<'_, '_>) -> Result<PreparedOp> {
    op.input_count(1, 1)?;
    op.output_count(1)?;
    same_dtype(op)?;
    let shape = op.input(0)?.shape();
    if shape.len() > 8 {
        return Err(op.unsupported(format!("rank {} (at most 8)", shape.len())));
    }
    let listed: Vec<i64> = match op.operator.options() {
        OpOptions::Builtin(qneon_tflite::schema::BuiltinOptions::SqueezeOptions(o)) => o
            .squeeze_dims
            .as_ref()
            .map(|d| d.iter().map(|&x| x as i64).collect())
            .unwrap_or_default(),
        _ => Vec::new(),
    };
    let mut squeezed = vec![listed.is_empty(); shape.len()];
    for &axis in &listed {
        let a = op.normalize_axis(axis, shape.len())?;
        squeezed[a] = true;
    }
    for (a, (&size, &gone)) in shape.iter().zip(&squeezed).enumerate() {
        if gone && size != 1 && !listed.is_empty() {
            return Err(op.invalid(format!(
                "squeezes axis {a} of size {size} (only size-1 axes can go)"
            )));
        }
    }
    let expected: Vec<usize> = shape
        .iter()
        .zip(&squeezed)
        .filter(|&(&size, &gone)| !(gone && size == 1))
        .map(|(&size, _)| size)
        .collect();
    op.expect_shape(op.output(0)?, &expected)?;
    Ok(alias())
}

/// TFLite's `Prepare` of EXPAND_DIMS: a constant axis tensor of one element
/// in `-(rank + 1)..=rank`; the output shape is the input's with a 1
/// inserted there.
pub(crate) fn prepare_expand_dims(op: &Op<'_, '_>) -> Result<PreparedOp> {
    op.input_count(2, 2)?;
    op.output_count(1)?;
    same_dtype(op)?;
    let shape = op.input(0)?.shape();
    let &[axis] = op.constant_ints(op.input(1)?, "axis")?.as_slice() else {
        return Err(op.invalid("the axis tensor does not hold exactly one value"));
    };
    let at = op.normalize_axis(axis, shape.len() + 1)?;
    let mut expected = shape.to_vec();
    expected.insert(at, 1);
    op.expect_shape(op.output(0)?, &expected)?;
    Ok(alias())
}
