//! MEAN: TFLite's `Prepare` rules (two inputs, a constant int32 axis
//! tensor, axes inside the rank, the output shape `keep_dims` gives, int16
//! zero points of 0) and the library's requantizing mean on int8, uint8
//! and int16, in the arithmetic of the chosen kernels: the reference
//! `QuantizedMeanOrSum`, or the optimized builtin kernels (their 4-D
//! height-and-width int8 kernel where it applies, the reference arithmetic
//! elsewhere), or XNNPACK's 8-bit mean (the delegate takes every int8 and
//! uint8 MEAN with constant axes; it leaves int16 ones to the builtin
//! kernels).

use std::ops::Range;

use qneon::{Backend, Mean, MeanKernels, QuantElem, Rounding};
use qneon_tflite::schema::BuiltinOptions;
use qneon_tflite::{BuiltinOp, Options as OpOptions, TensorType};

use super::buffers::{view, view_mut, Io};
use super::kernel::{Kernel, PreparedOp, Registration};
use super::op::Op;
use crate::error::Result;
use crate::interp::options::{Options, TfliteKernels};

/// The ops this family prepares.
pub(crate) const OPS: &[Registration] = &[Registration::new(BuiltinOp::MEAN, "MEAN", prepare)
    .arithmetic(describe)
    .xnnpack()];

/// Which of TFLite's MEAN kernels the options choose, and their rounding:
/// double in every build measured, whatever the options' rounding (LiteRT
/// 2.3's reference MEAN matches MobileNetV2's 1,280 means with double
/// rounding and 31 of them differ with single; its builtin height-width
/// kernel matches with the NEON helper's double rounding, ties upward in
/// the final shift, on all 1,280 channels). TF 2.19's bundled TFLite rounds
/// twice everywhere.
/// Under XNNPACK, 8-bit means take XNNPACK's arithmetic (measured: the
/// 7,620 output bytes of the five single-op MEAN models on 20 random
/// inputs each equal LiteRT 2.3's with its default delegate, which differs
/// from its reference kernel in 1,384 of them) and int16 ones the
/// optimized builtin kernels', which the delegate leaves them to.
fn arithmetic(options: &Options, dtype: TensorType) -> (MeanKernels, Rounding) {
    let kernels = match options.kernels {
        TfliteKernels::Xnnpack if dtype != TensorType::Int16 => MeanKernels::Xnnpack,
        TfliteKernels::Optimized | TfliteKernels::Xnnpack => MeanKernels::Optimized,
        TfliteKernels::Reference => MeanKernels::Reference,
    };
    (kernels, Rounding::Double)
}

/// What inspect says.
fn describe(options: &Options, _: BuiltinOp) -> String {
    let (kernels, rounding) = arithmetic(options, TensorType::Int8);
    match kernels {
        MeanKernels::Reference => format!("reference mean, {} rounding", rounding.name()),
        MeanKernels::Optimized => format!(
            "optimized mean (height-width int8 kernel where it applies), {} rounding",
            rounding.name()
        ),
        MeanKernels::Xnnpack => "XNNPACK's 8-bit mean: f32(sum) * scale + zero, ties to even \
                                 (int16: left to the builtin kernels)"
            .to_string(),
    }
}

/// A prepared MEAN node: input 0 into output 0, one tile.
#[derive(Debug)]
struct MeanNode<T: QuantElem> {
    mean: Mean<T>,
}

impl<T: QuantElem + bytemuck::Pod + Send + Sync> Kernel for MeanNode<T> {
    fn run_tiles(
        &self,
        backend: Backend,
        tiles: Range<usize>,
        io: &mut Io<'_>,
    ) -> Result<(), String> {
        if tiles.is_empty() {
            return Ok(());
        }
        let input: &[T] = view(io.ins[0])?;
        let output: &mut [T] = view_mut(io.outs[0])?;
        self.mean
            .run_with(backend, input, output)
            .map_err(|e| e.to_string())
    }
}

fn kernel<T: QuantElem + bytemuck::Pod + Send + Sync>(
    op: &Op<'_, '_>,
    axes: &[i32],
    keep_dims: bool,
) -> Result<(Box<dyn Kernel>, usize)> {
    let (input, output) = (op.input(0)?, op.output(0)?);
    let in_q = op.per_tensor(input, "input")?;
    let out_q = op.per_tensor(output, "output")?;
    let (kernels, rounding) = arithmetic(op.options, input.dtype());
    let mean = Mean::<T>::new(
        input.shape(),
        axes,
        keep_dims,
        in_q,
        out_q,
        kernels,
        rounding,
    )
    .map_err(|e| op.kernel_error(e))?;
    op.expect_shape(output, mean.output_dims())?;
    let work = mean.input_len();
    Ok((Box::new(MeanNode { mean }), work))
}

/// TFLite's `Prepare` of MEAN on quantized data.
fn prepare(op: &Op<'_, '_>) -> Result<PreparedOp> {
    op.input_count(2, 2)?;
    op.output_count(1)?;
    let (input, axis, output) = (op.input(0)?, op.input(1)?, op.output(0)?);
    if input.dtype() != output.dtype() {
        return Err(op.unsupported_types());
    }
    if axis.dtype() != TensorType::Int32 {
        return Err(op.invalid(format!(
            "axis tensor has dtype {}, TFLite requires int32",
            axis.dtype().name()
        )));
    }
    let values = op.constant_ints(axis, "axis")?;
    let rank = input.shape().len();
    let mut axes = Vec::with_capacity(values.len());
    for v in values {
        // Range-checked here so the message names the tensor's value.
        op.normalize_axis(v, rank)?;
        axes.push(v as i32);
    }
    let keep_dims = match op.operator.options() {
        OpOptions::Builtin(BuiltinOptions::ReducerOptions(o)) => o.keep_dims,
        // TFLite's default when the options table is absent.
        _ => false,
    };
    let (kernel, work) = match input.dtype() {
        TensorType::Int8 => kernel::<i8>(op, &axes, keep_dims)?,
        TensorType::Uint8 => kernel::<u8>(op, &axes, keep_dims)?,
        TensorType::Int16 => kernel::<i16>(op, &axes, keep_dims)?,
        _ => return Err(op.unsupported_types()),
    };
    Ok(PreparedOp {
        kernel,
        work: work as u64,
        unit: "element",
        scratch_bytes: 0,
        alias: false,
        state_inputs: Vec::new(),
    })
}
