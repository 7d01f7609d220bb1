//! ARG_MAX and ARG_MIN: TFLite's `Prepare` rules (a one-element int32 or
//! int64 axis inside the input's rank, constant here; the output type the
//! options name, int32 or int64; the output shape without the axis) and
//! the library's [`ArgMinMax`] on int8, uint8, int32 and float32 input (the
//! first index on ties). Every kernel set finds the same indices, and the
//! XNNPACK delegate leaves the ops to the builtin kernels.

use std::ops::Range;

use qneon::{ArgIndex, ArgKind, ArgMinMax, Backend};
use qneon_tflite::schema::BuiltinOptions;
use qneon_tflite::{BuiltinOp, Options as OpOptions, TensorType};

use super::buffers::{view, view_mut, Io};
use super::kernel::{Kernel, PreparedOp, Registration};
use super::op::Op;
use crate::error::Result;
use crate::interp::options::Options;

/// The ops this family prepares.
pub(crate) const OPS: &[Registration] = &[
    Registration::new(BuiltinOp::ARG_MAX, "ARG_MAX", prepare)
        .left_by_xnnpack()
        .arithmetic(describe),
    Registration::new(BuiltinOp::ARG_MIN, "ARG_MIN", prepare)
        .left_by_xnnpack()
        .arithmetic(describe),
];

/// What inspect says.
fn describe(_: &Options, _: BuiltinOp) -> String {
    "raw comparison, first index on ties".to_string()
}

/// A prepared node: input element type `T`, index type `O`, one tile.
#[derive(Debug)]
struct ArgNode<T, O> {
    op: ArgMinMax,
    _types: std::marker::PhantomData<fn(T) -> O>,
}

impl<T, O> Kernel for ArgNode<T, O>
where
    T: bytemuck::Pod + PartialOrd + std::fmt::Debug,
    O: bytemuck::Pod + ArgIndex + std::fmt::Debug,
{
    fn run_tiles(&self, _: Backend, tiles: Range<usize>, io: &mut Io<'_>) -> Result<(), String> {
        if tiles.is_empty() {
            return Ok(());
        }
        let input: &[T] = view(io.ins[0])?;
        let output: &mut [O] = view_mut(io.outs[0])?;
        self.op.run(input, output).map_err(|e| e.to_string())
    }
}

fn node<T>(op: ArgMinMax, index: TensorType) -> Box<dyn Kernel>
where
    T: bytemuck::Pod + PartialOrd + std::fmt::Debug,
{
    use std::marker::PhantomData;
    if index == TensorType::Int64 {
        Box::new(ArgNode::<T, i64> {
            op,
            _types: PhantomData,
        })
    } else {
        Box::new(ArgNode::<T, i32> {
            op,
            _types: PhantomData,
        })
    }
}

/// TFLite's `Prepare` of ARG_MAX and ARG_MIN.
fn prepare(op: &Op<'_, '_>) -> Result<PreparedOp> {
    op.input_count(2, 2)?;
    op.output_count(1)?;
    let (input, axis, output) = (op.input(0)?, op.input(1)?, op.output(0)?);
    let values = match axis.dtype() {
        TensorType::Int32 | TensorType::Int64 => op.constant_ints(axis, "axis")?,
        other => {
            return Err(op.invalid(format!(
                "axis tensor has dtype {}, TFLite requires int32 or int64",
                other.name()
            )))
        }
    };
    let [axis] = values[..] else {
        return Err(op.invalid(format!(
            "axis tensor has {} elements, TFLite requires 1",
            values.len()
        )));
    };
    let rank = input.shape().len();
    let axis = op.normalize_axis(axis, rank)?;
    let output_type = match op.operator.options() {
        OpOptions::Builtin(BuiltinOptions::ArgMaxOptions(o)) => o.output_type,
        OpOptions::Builtin(BuiltinOptions::ArgMinOptions(o)) => o.output_type,
        // TFLite's default when the options table is absent: float32,
        // which its `Prepare` refuses below.
        _ => TensorType::Float32 as i8,
    };
    let index = match TensorType::from_code(output_type) {
        Some(t @ (TensorType::Int32 | TensorType::Int64)) => t,
        _ => return Err(op.invalid(format!("output_type {output_type} is not int32 or int64"))),
    };
    if output.dtype() != index {
        return Err(op.invalid(format!(
            "output has dtype {}, the options' output_type is {}",
            output.dtype().name(),
            index.name()
        )));
    }
    let shape = input.shape();
    let expected: Vec<usize> = (0..rank).filter(|&d| d != axis).map(|d| shape[d]).collect();
    op.expect_shape(output, &expected)?;
    let kind = if op.builtin == BuiltinOp::ARG_MAX {
        ArgKind::Max
    } else {
        ArgKind::Min
    };
    let outer: usize = shape[..axis].iter().product();
    let inner: usize = shape[axis + 1..].iter().product();
    let arg = ArgMinMax::new(kind, outer, shape[axis], inner).map_err(|e| op.kernel_error(e))?;
    let kernel = match input.dtype() {
        TensorType::Int8 => node::<i8>(arg, index),
        TensorType::Uint8 => node::<u8>(arg, index),
        TensorType::Int32 => node::<i32>(arg, index),
        TensorType::Float32 => node::<f32>(arg, index),
        _ => return Err(op.unsupported_types()),
    };
    Ok(PreparedOp {
        kernel,
        work: input.element_count() as u64,
        unit: "element",
        scratch_bytes: 0,
        alias: false,
        state_inputs: Vec::new(),
    })
}
