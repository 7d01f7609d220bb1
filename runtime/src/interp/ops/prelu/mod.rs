//! PRELU: TFLite's `Prepare` rules (input, alpha and output of one type,
//! int8 or uint8 quantized per tensor; alpha broadcast to the input, at
//! most rank 4 when it is) and the library's PRELU (its two quantized
//! multipliers) over the broadcast walk. LiteRT runs the same reference
//! arithmetic for int8 / uint8 PRELU in its reference and optimized kernel
//! sets, and its XNNPACK delegate leaves quantized PRELU to them.

use qneon::{Backend, BroadcastOperand, Prelu, QuantElem};
use qneon_tflite::{BuiltinOp, TensorType};

use super::broadcast_walk::{BroadcastWalk, PairOp, WalkNode};
use super::kernel::{Kernel, PreparedOp, Registration};
use super::op::Op;
use super::strided_copy::broadcast_shape;
use crate::error::Result;
use crate::interp::options::Options;

/// The ops this family prepares.
pub(crate) const OPS: &[Registration] = &[Registration::new(BuiltinOp::PRELU, "PRELU", prepare)
    .left_by_xnnpack()
    .arithmetic(describe)];

/// Most dimensions of a broadcasting PRELU (TFLite's `BroadcastPrelu4DSlow`).
const MAX_BROADCAST_RANK: usize = 4;

/// What inspect says.
fn describe(_: &Options, _: BuiltinOp) -> String {
    "two quantized multipliers (x >= 0, alpha), double rounding".to_string()
}

impl<T: QuantElem + Send + Sync> PairOp<T> for Prelu<T> {
    fn run_pair(
        &self,
        backend: Backend,
        input: BroadcastOperand<'_, T>,
        alpha: BroadcastOperand<'_, T>,
        output: &mut [T],
    ) -> qneon::Result<()> {
        self.run_with(backend, input, alpha, output)
    }
}

fn node<T: QuantElem + bytemuck::Pod + Send + Sync>(
    op: &Op<'_, '_>,
    walk: BroadcastWalk,
) -> Result<Box<dyn Kernel>> {
    let (input, alpha, output) = (op.input(0)?, op.input(1)?, op.output(0)?);
    let prelu = Prelu::<T>::new(
        op.per_tensor(input, "input")?,
        op.per_tensor(alpha, "alpha")?,
        op.per_tensor(output, "output")?,
    )
    .map_err(|e| op.kernel_error(e))?;
    Ok(Box::new(WalkNode::new(prelu, walk)))
}

/// TFLite's `Prepare` of PRELU on quantized data.
fn prepare(op: &Op<'_, '_>) -> Result<PreparedOp> {
    op.input_count(2, 2)?;
    op.output_count(1)?;
    let (input, alpha, output) = (op.input(0)?, op.input(1)?, op.output(0)?);
    if alpha.dtype() != input.dtype() || output.dtype() != input.dtype() {
        return Err(op.invalid(format!(
            "input, alpha and output types {} differ (TFLite requires one type)",
            op.signature()
        )));
    }
    let shape = if input.shape() == alpha.shape() {
        input.shape().to_vec()
    } else {
        let shape = broadcast_shape(input.shape(), alpha.shape()).map_err(|e| op.invalid(e))?;
        if shape.len() > MAX_BROADCAST_RANK {
            return Err(op.unsupported(format!(
                "rank {} broadcast (TFLite's kernel takes at most {MAX_BROADCAST_RANK})",
                shape.len()
            )));
        }
        shape
    };
    op.expect_shape(output, &shape)?;
    let walk =
        BroadcastWalk::new(input.shape(), alpha.shape(), &shape).map_err(|e| op.invalid(e))?;
    let kernel = match input.dtype() {
        TensorType::Int8 => node::<i8>(op, walk)?,
        TensorType::Uint8 => node::<u8>(op, walk)?,
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
