//! BATCH_MATMUL: checked as TFLite checks it, then refused until the
//! library has a GEMM with a run-time right-hand side.

use std::convert::Infallible;

use qneon_tflite::{Options as OpOptions, TensorType};

use super::op::Op;
use super::strided_copy::broadcast_shape;
use crate::error::Result;

/// TFLite's `Prepare` of BATCH_MATMUL (int8, `adj_x`, `adj_y`, broadcast
/// batch dimensions), then the refusal: there is no kernel to build yet, so
/// it never returns `Ok`.
pub(crate) fn prepare(op: &Op<'_, '_>) -> Result<Infallible> {
    op.input_count(2, 2)?;
    op.output_count(1)?;
    let (a, b, output) = (op.input(0)?, op.input(1)?, op.output(0)?);
    if a.dtype() != TensorType::Int8
        || b.dtype() != TensorType::Int8
        || output.dtype() != TensorType::Int8
    {
        return Err(op.unsupported_types());
    }
    let o = match op.operator.options() {
        OpOptions::BatchMatMul(o) => *o,
        _ => Default::default(),
    };
    let (sa, sb) = (a.shape(), b.shape());
    if sa.len() < 2 || sb.len() < 2 {
        return Err(op.invalid("inputs of rank below 2"));
    }
    let (rows, depth_a) = if o.adj_x {
        (sa[sa.len() - 1], sa[sa.len() - 2])
    } else {
        (sa[sa.len() - 2], sa[sa.len() - 1])
    };
    let (depth_b, cols) = if o.adj_y {
        (sb[sb.len() - 1], sb[sb.len() - 2])
    } else {
        (sb[sb.len() - 2], sb[sb.len() - 1])
    };
    if depth_a != depth_b {
        return Err(op.invalid(format!("depths {depth_a} and {depth_b} differ")));
    }
    let batch =
        broadcast_shape(&sa[..sa.len() - 2], &sb[..sb.len() - 2]).map_err(|e| op.invalid(e))?;
    let mut expected = batch;
    expected.extend([rows, cols]);
    op.expect_shape(output, &expected)?;
    op.per_tensor(a, "input 1")?;
    op.per_tensor(b, "input 2")?;
    op.per_tensor(output, "output")?;
    Err(op.unsupported(
        "int8 BATCH_MATMUL needs the library's GEMM with a run-time right-hand side and a \
         non-zero right-hand zero point (pending in qneon)",
    ))
}
