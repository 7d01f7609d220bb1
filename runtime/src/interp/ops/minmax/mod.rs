//! MAXIMUM and MINIMUM: TFLite's `Prepare` rules (two inputs of one type,
//! the output of that type, shapes that broadcast, at most rank 5 where
//! they differ) and the
//! library's raw comparison on int8, uint8 and int16 over the broadcast
//! walk. Every kernel set compares the stored values, whatever the
//! quantization (TFLite checks none; its converter quantizes both inputs
//! and the output alike), so one arithmetic serves reference, optimized
//! and XNNPACK (the `litert_xnnpack` references of the MAXIMUM / MINIMUM
//! cases equal the builtin ones).

use qneon::{Backend, BroadcastOperand, MinMax, MinMaxKind, QuantElem};
use qneon_tflite::{BuiltinOp, TensorType};

use super::broadcast_walk::{BroadcastWalk, PairOp, WalkNode};
use super::kernel::{Kernel, PreparedOp, Registration};
use super::op::Op;
use super::strided_copy::broadcast_shape;
use crate::error::Result;
use crate::interp::options::Options;

/// The ops this family prepares.
pub(crate) const OPS: &[Registration] = &[
    Registration::new(BuiltinOp::MAXIMUM, "MAXIMUM", prepare)
        .xnnpack()
        .arithmetic(describe),
    Registration::new(BuiltinOp::MINIMUM, "MINIMUM", prepare)
        .xnnpack()
        .arithmetic(describe),
];

/// Most dimensions of a broadcast (TFLite's `MaximumMinimumBroadcastSlow`;
/// equal shapes it runs element by element).
const MAX_RANK: usize = 5;

/// What inspect says.
fn describe(_: &Options, _: BuiltinOp) -> String {
    "raw comparison of the stored values (every kernel set)".to_string()
}

impl<T: QuantElem + Send + Sync> PairOp<T> for MinMax<T> {
    fn run_pair(
        &self,
        backend: Backend,
        a: BroadcastOperand<'_, T>,
        b: BroadcastOperand<'_, T>,
        output: &mut [T],
    ) -> qneon::Result<()> {
        self.run_with(backend, a, b, output)
    }
}

fn node<T: QuantElem + bytemuck::Pod + Send + Sync>(
    kind: MinMaxKind,
    walk: BroadcastWalk,
) -> Box<dyn Kernel> {
    Box::new(WalkNode::new(MinMax::<T>::new(kind), walk))
}

/// TFLite's `Prepare` of MAXIMUM and MINIMUM.
fn prepare(op: &Op<'_, '_>) -> Result<PreparedOp> {
    op.input_count(2, 2)?;
    op.output_count(1)?;
    let (a, b, output) = (op.input(0)?, op.input(1)?, op.output(0)?);
    if a.dtype() != b.dtype() || output.dtype() != a.dtype() {
        return Err(op.invalid(format!(
            "input and output types {} differ (TFLite requires one type)",
            op.signature()
        )));
    }
    let shape = broadcast_shape(a.shape(), b.shape()).map_err(|e| op.invalid(e))?;
    // Equal shapes go element by element at any rank.
    if a.shape() != b.shape() && shape.len() > MAX_RANK {
        return Err(op.unsupported(format!(
            "rank {} broadcast (TFLite's kernel takes at most {MAX_RANK})",
            shape.len()
        )));
    }
    op.expect_shape(output, &shape)?;
    let walk = BroadcastWalk::new(a.shape(), b.shape(), &shape).map_err(|e| op.invalid(e))?;
    let kind = if op.builtin == BuiltinOp::MAXIMUM {
        MinMaxKind::Maximum
    } else {
        MinMaxKind::Minimum
    };
    let kernel = match a.dtype() {
        TensorType::Int8 => node::<i8>(kind, walk),
        TensorType::Uint8 => node::<u8>(kind, walk),
        TensorType::Int16 => node::<i16>(kind, walk),
        _ => return Err(op.unsupported_types()),
    };
    Ok(PreparedOp {
        kernel,
        work: output.element_count() as u64,
        unit: "element",
        scratch_bytes: 0,
        alias: false,
        state_inputs: Vec::new(),
    })
}
