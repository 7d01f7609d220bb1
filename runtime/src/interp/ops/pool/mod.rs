//! AVERAGE_POOL_2D and MAX_POOL_2D: TFLite's `Prepare` rules (rank 4,
//! strides and filter at least 1, the SAME / VALID output shape, input and
//! output quantized alike) and the library's pooling kernels on int8, uint8
//! and int16, in tiles of output rows.

use std::ops::Range;

use qneon::{AveragePool2d, Backend, MaxPool2d, Padding, Pool2dShape, QuantElem};
use qneon_tflite::options::FusedActivation as TfActivation;
use qneon_tflite::schema::BuiltinOptions;
use qneon_tflite::{BuiltinOp, Options as OpOptions, TensorType};

use super::buffers::{output_band, view, Io};
use super::kernel::{Kernel, PreparedOp, Registration};
use super::op::Op;
use crate::error::Result;
use crate::interp::options::{Options, TfliteKernels};

/// The ops this family prepares. Under XNNPACK (see [`xnnpack_takes`]) the
/// delegate leaves int8 AVERAGE_POOL_2D to TFLite, whose arithmetic this is,
/// and takes MAX_POOL_2D, whose maximum is exact in every kernel set.
pub(crate) const OPS: &[Registration] = &[
    Registration::new(BuiltinOp::AVERAGE_POOL_2D, "AVERAGE_POOL_2D", prepare)
        .xnnpack()
        .arithmetic(describe),
    Registration::new(BuiltinOp::MAX_POOL_2D, "MAX_POOL_2D", prepare)
        .xnnpack()
        .arithmetic(describe),
];

/// What inspect says: whose arithmetic the op runs in.
fn describe(options: &Options, builtin: BuiltinOp) -> String {
    match (options.kernels == TfliteKernels::Xnnpack, builtin) {
        (true, BuiltinOp::AVERAGE_POOL_2D) => {
            "left to the builtin kernels by XNNPACK (int8, int16): TFLite's rounded average".into()
        }
        (true, _) => {
            "XNNPACK's max pooling (int8: its own quantized activation bounds, ties to even)".into()
        }
        (false, BuiltinOp::AVERAGE_POOL_2D) => "TFLite's rounded average".into(),
        (false, _) => "TFLite's max pooling".into(),
    }
}

/// Under `TfliteKernels::Xnnpack`, the cases whose bytes are XNNPACK's or
/// TFLite's alike; the others are refused by name. LiteRT 2.3's delegate
/// leaves int8 and int16 AVERAGE_POOL_2D to TFLite and takes uint8 (its own
/// qu8 average, not built here). It leaves int16 MAX_POOL_2D to TFLite and
/// takes the 8-bit ones: the maximum is exact, and the activation bounds
/// it quantizes itself (`lrintf(clamp(bound / scale + zero_point))` in
/// `f32`, [`qneon::FusedActivation::range_i8_xnnpack`]) equal TFLite's for
/// NONE and RELU (bound 0 is the zero point either way) and may part on a
/// tie for RELU6: int8 max pools take XNNPACK's bounds; uint8 RELU6 ones
/// are refused (XNNPACK's uint8 bounds are not built).
fn xnnpack_takes(op: &Op<'_, '_>, dtype: TensorType, activation: TfActivation) -> Result<()> {
    match (op.builtin, dtype, activation) {
        (BuiltinOp::AVERAGE_POOL_2D, TensorType::Uint8, _) => Err(op.unsupported(
            "uint8 AVERAGE_POOL_2D in XNNPACK's arithmetic (its qu8 average is not built)",
        )),
        (BuiltinOp::AVERAGE_POOL_2D, _, _) => Ok(()),
        // int16 is left to TFLite.
        (_, TensorType::Int16, _) => Ok(()),
        (_, _, TfActivation::None | TfActivation::Relu) => Ok(()),
        (_, TensorType::Int8, TfActivation::Relu6) => Ok(()),
        (_, _, other) => Err(op.unsupported(format!(
            "MAX_POOL_2D with fused {other} in XNNPACK's arithmetic (its bound rounding is not built)"
        ))),
    }
}

/// One of the library's two pooling ops.
#[derive(Debug)]
enum Pooling<T: QuantElem> {
    Average(AveragePool2d<T>),
    Max(MaxPool2d<T>),
}

/// A prepared pooling node: input 0 into output 0, one tile per output row
/// (rows numbered across the images).
#[derive(Debug)]
struct Pool<T: QuantElem> {
    op: Pooling<T>,
    /// `batch * output_height`.
    rows: usize,
    /// Elements of one output row: `output_width * channels`.
    row_len: usize,
}

impl<T: QuantElem + bytemuck::Pod + Send + Sync> Kernel for Pool<T> {
    fn tiles(&self) -> usize {
        self.rows
    }

    fn split(&self) -> Option<usize> {
        Some(1)
    }

    fn band(&self, tiles: Range<usize>) -> Range<usize> {
        let row_bytes = self.row_len * std::mem::size_of::<T>();
        tiles.start * row_bytes..tiles.end * row_bytes
    }

    fn run_tiles(
        &self,
        backend: Backend,
        tiles: Range<usize>,
        io: &mut Io<'_>,
    ) -> Result<(), String> {
        let input: &[T] = view(io.ins[0])?;
        let elements = tiles.start * self.row_len..tiles.end * self.row_len;
        let output = output_band::<T>(io.outs[0], io.out_start, elements)?;
        match &self.op {
            Pooling::Average(p) => p.run_rows_with(backend, input, output, tiles),
            Pooling::Max(p) => p.run_rows_with(backend, input, output, tiles),
        }
        .map_err(|e| e.to_string())
    }
}

/// The pooling options, TFLite's defaults (all zero) when the operator has
/// none: the stride check then refuses it, as TFLite's `Prepare` does.
fn options(op: &Op<'_, '_>) -> qneon_tflite::schema::Pool2DOptions {
    match op.operator.options() {
        OpOptions::Builtin(BuiltinOptions::Pool2DOptions(o)) => (**o).clone(),
        _ => Default::default(),
    }
}

/// TFLite's output size along one axis (`ComputeOutSize`, dilation 1), as
/// a signed number: a VALID window larger than the input gives 0 or less.
fn out_size(padding: Padding, input: i64, filter: i64, stride: i64) -> i64 {
    match padding {
        Padding::Same => (input + stride - 1) / stride,
        Padding::Valid => (input + stride - filter) / stride,
    }
}

/// The kernel of `builtin` on elements of type `T`.
fn kernel<T: QuantElem + bytemuck::Pod + Send + Sync>(
    op: &Op<'_, '_>,
    shape: Pool2dShape,
    activation: qneon::FusedActivation,
) -> Result<Box<dyn Kernel>> {
    let (input, output) = (op.input(0)?, op.output(0)?);
    let in_q = op.per_tensor(input, "input")?;
    let out_q = op.per_tensor(output, "output")?;
    let e = |err: qneon::Error| op.kernel_error(err);
    let pooling = if op.builtin == BuiltinOp::AVERAGE_POOL_2D {
        Pooling::Average(AveragePool2d::<T>::new(shape, in_q, out_q, activation).map_err(e)?)
    } else {
        let max = MaxPool2d::<T>::new(shape, in_q, out_q, activation).map_err(e)?;
        if op.options.kernels == TfliteKernels::Xnnpack && T::NAME == "int8" {
            let (lo, hi) = activation.range_i8_xnnpack(out_q);
            Pooling::Max(max.with_activation_range(lo, hi).map_err(e)?)
        } else {
            Pooling::Max(max)
        }
    };
    Ok(Box::new(Pool {
        op: pooling,
        rows: shape.batch * shape.output_height,
        row_len: shape.output_width * shape.channels,
    }))
}

/// TFLite's `Prepare` of AVERAGE_POOL_2D and MAX_POOL_2D.
fn prepare(op: &Op<'_, '_>) -> Result<PreparedOp> {
    op.input_count(1, 1)?;
    op.output_count(1)?;
    let (input, output) = (op.input(0)?, op.output(0)?);
    if input.dtype() != output.dtype()
        || !matches!(
            input.dtype(),
            TensorType::Int8 | TensorType::Uint8 | TensorType::Int16
        )
    {
        return Err(op.unsupported_types());
    }
    let &[batch, height, width, channels] = input.shape() else {
        return Err(op.invalid(format!(
            "input shape {:?} is not rank 4 (NHWC)",
            input.shape()
        )));
    };
    let o = options(op);
    let (stride_h, stride_w) = (o.stride_h as i64, o.stride_w as i64);
    let (filter_h, filter_w) = (o.filter_height as i64, o.filter_width as i64);
    for (value, what) in [
        (stride_h, "stride height"),
        (stride_w, "stride width"),
        (filter_h, "filter height"),
        (filter_w, "filter width"),
    ] {
        if value <= 0 {
            return Err(op.invalid(format!("{what} is {value}, must be at least 1")));
        }
    }
    let padding = match o.padding {
        0 => Padding::Same,
        1 => Padding::Valid,
        other => return Err(op.invalid(format!("padding code {other} is neither SAME nor VALID"))),
    };
    let tf_activation = TfActivation::from_code(o.fused_activation_function);
    if op.options.kernels == TfliteKernels::Xnnpack {
        xnnpack_takes(op, input.dtype(), tf_activation)?;
    }
    let activation = op.activation(tf_activation)?;
    let out_h = out_size(padding, height as i64, filter_h, stride_h);
    let out_w = out_size(padding, width as i64, filter_w, stride_w);
    if out_h <= 0 || out_w <= 0 {
        return Err(op.invalid(format!(
            "a {filter_h}x{filter_w} VALID window does not fit the {height}x{width} input"
        )));
    }
    op.expect_shape(output, &[batch, out_h as usize, out_w as usize, channels])?;
    let shape = Pool2dShape::with_padding(
        [batch, height, width, channels],
        (filter_h as usize, filter_w as usize),
        (stride_h as usize, stride_w as usize),
        padding,
    )
    .map_err(|e| op.kernel_error(e))?;
    let kernel = match input.dtype() {
        TensorType::Int8 => kernel::<i8>(op, shape, activation)?,
        TensorType::Uint8 => kernel::<u8>(op, shape, activation)?,
        _ => kernel::<i16>(op, shape, activation)?,
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
