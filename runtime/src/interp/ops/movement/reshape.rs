//! RESHAPE: the output is the input's bytes (an alias in the arena plan),
//! so only the shapes are checked and nothing runs.

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
    Ok(PreparedOp {
        kernel: Box::new(Nop),
        work: 0,
        unit: "element",
        scratch_bytes: 0,
        alias: true,
        state_inputs: Vec::new(),
    })
}
