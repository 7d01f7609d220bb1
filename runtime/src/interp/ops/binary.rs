//! Binary int8 element-wise ops (ADD today; SUB and MUL once the library
//! has them): TFLite's broadcasting, then the library's kernel on operands
//! of equal length.

use qneon::Backend;
use qneon_tflite::options::FusedActivation as TfActivation;
use qneon_tflite::{BuiltinOp, Options as OpOptions, Tensor, TensorType};

use super::buffers::{view, view_mut};
use super::op::{Op, PreparedOp};
use super::strided_copy::{broadcast, broadcast_shape, StridedCopy};
use crate::error::Result;

/// A binary int8 element-wise kernel of the library on same-length
/// operands: the slot for ADD today and SUB and MUL once the library has
/// them. Broadcasting is the node's business (it expands an operand into
/// scratch first), so a kernel only sees equal lengths.
pub(crate) trait ElementwiseInt8: std::fmt::Debug {
    fn run(&self, backend: Backend, a: &[i8], b: &[i8], output: &mut [i8]) -> qneon::Result<()>;
}

impl ElementwiseInt8 for qneon::Add {
    fn run(&self, backend: Backend, a: &[i8], b: &[i8], output: &mut [i8]) -> qneon::Result<()> {
        self.run_with(backend, a, b, output)
    }
}

/// A prepared binary op; an operand that needs broadcasting is expanded
/// into scratch first (`a` at scratch 0, `b` after it).
#[derive(Debug)]
pub(crate) struct Binary {
    kernel: Box<dyn ElementwiseInt8>,
    expand_a: Option<StridedCopy>,
    expand_b: Option<StridedCopy>,
    count: usize,
}

impl Binary {
    /// `output = a op b`, an operand broadcast through `scratch` first.
    pub(crate) fn run(
        &self,
        backend: Backend,
        input_a: &[u8],
        input_b: &[u8],
        scratch: &mut [u8],
        output: &mut [u8],
    ) -> Result<(), String> {
        let (scratch_a, scratch_b) = scratch.split_at_mut(if self.expand_a.is_some() {
            self.count
        } else {
            0
        });
        let a: &[u8] = match &self.expand_a {
            Some(copy) => {
                copy.run(input_a, scratch_a);
                scratch_a
            }
            None => input_a,
        };
        let b: &[u8] = match &self.expand_b {
            Some(copy) => {
                let scratch_b = &mut scratch_b[..self.count];
                copy.run(input_b, scratch_b);
                scratch_b
            }
            None => input_b,
        };
        self.kernel
            .run(backend, view(a)?, view(b)?, view_mut(output)?)
            .map_err(|e| e.to_string())
    }
}

/// TFLite's `Prepare` of ADD, SUB and MUL: int8 operands that broadcast to
/// the output shape (rank at most 6), per-tensor quantization; the library's
/// kernel built, an operand's broadcast planned.
pub(crate) fn prepare(op: &Op<'_, '_>, builtin: BuiltinOp) -> Result<PreparedOp<Binary>> {
    op.input_count(2, 2)?;
    op.output_count(1)?;
    let (a, b, output) = (op.input(0)?, op.input(1)?, op.output(0)?);
    if a.dtype() != TensorType::Int8
        || b.dtype() != TensorType::Int8
        || output.dtype() != TensorType::Int8
    {
        return Err(op.unsupported_types());
    }
    let shape = broadcast_shape(a.shape(), b.shape()).map_err(|e| op.invalid(e))?;
    if shape.len() > 6 {
        return Err(op.unsupported(format!("rank {} broadcast (at most 6)", shape.len())));
    }
    op.expect_shape(output, &shape)?;
    let fused = match op.operator.options() {
        OpOptions::Add(o) | OpOptions::Sub(o) => o.fused_activation,
        OpOptions::Mul(o) => o.fused_activation,
        _ => TfActivation::None,
    };
    let activation = op.activation(fused)?;
    let (qa, qb, qo) = (
        op.per_tensor(a, "input 1")?,
        op.per_tensor(b, "input 2")?,
        op.per_tensor(output, "output")?,
    );
    let kernel: Box<dyn ElementwiseInt8> = match builtin {
        BuiltinOp::ADD => {
            op.needs_double_rounding("ADD")?;
            Box::new(qneon::Add::new(qa, qb, qo, activation).map_err(|e| op.kernel_error(e))?)
        }
        _ => {
            return Err(op.unsupported(format!(
                "int8 {} needs the library's {} kernel (pending in qneon)",
                op.name, op.name
            )))
        }
    };
    let count = output.element_count();
    let expand = |t: &Tensor<'_>| -> Result<Option<StridedCopy>> {
        if t.shape() == shape.as_slice() {
            return Ok(None);
        }
        broadcast(t.shape(), &shape, 1)
            .map(Some)
            .map_err(|e| op.copy_error(e))
    };
    let (expand_a, expand_b) = (expand(a)?, expand(b)?);
    let scratch_bytes = count * (expand_a.is_some() as usize + expand_b.is_some() as usize);
    Ok(PreparedOp {
        kernel: Binary {
            kernel,
            expand_a,
            expand_b,
            count,
        },
        work: count as u64,
        unit: "element",
        scratch_bytes,
        alias: false,
    })
}
