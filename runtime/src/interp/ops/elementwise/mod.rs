//! RELU, RELU6, RELU_N1_TO_1, LEAKY_RELU and HARD_SWISH on int8 and uint8: TFLite's
//! `Prepare` rules (one input, one output of the same type and shape, per
//! tensor quantization) and the library's element-wise kernels, which
//! requantize when the input and output scales differ, in tiles of
//! [`CHUNK`] elements.
//!
//! Under `--kernels xnnpack`: LEAKY_RELU takes XNNPACK's arithmetic (its
//! Q8 slopes), or TFLite's where XNNPACK refuses the scale ratios (as the
//! delegate then leaves the op); the RELU family and HARD_SWISH run as the
//! builtin kernels do (the delegate's HARD_SWISH is float-only; measured:
//! LiteRT 2.3 with its default delegate gives the builtin bytes on every
//! input of the single-op RELU, RELU6, RELU_N1_TO_1 and HARD_SWISH models,
//! whose input and output scales differ).

use std::ops::Range;

use qneon::{Backend, HardSwish, LeakyRelu, QuantElem, Relu, ReluKind};
use qneon_tflite::schema::BuiltinOptions;
use qneon_tflite::{BuiltinOp, Options as OpOptions, TensorType};

use super::buffers::{output_band, view, Io};
use super::kernel::{Kernel, PreparedOp, Registration, CHUNK};
use super::op::Op;
use crate::error::Result;
use crate::interp::options::{Options, TfliteKernels};

/// The ops this family prepares.
pub(crate) const OPS: &[Registration] = &[
    Registration::new(BuiltinOp::RELU, "RELU", prepare).left_by_xnnpack(),
    Registration::new(BuiltinOp::RELU6, "RELU6", prepare).left_by_xnnpack(),
    Registration::new(BuiltinOp::RELU_N1_TO_1, "RELU_N1_TO_1", prepare).left_by_xnnpack(),
    Registration::new(BuiltinOp::LEAKY_RELU, "LEAKY_RELU", prepare)
        .arithmetic(describe)
        .xnnpack(),
    Registration::new(BuiltinOp::HARD_SWISH, "HARD_SWISH", prepare).left_by_xnnpack(),
];

/// What inspect says of LEAKY_RELU.
fn describe(options: &Options, _: BuiltinOp) -> String {
    if options.kernels == TfliteKernels::Xnnpack {
        "XNNPACK's Q8 slopes (TFLite's arithmetic where XNNPACK refuses the scale ratios)".into()
    } else {
        "TFLite's two multipliers, double rounding".into()
    }
}

/// One of the library's prepared element-wise ops.
#[derive(Debug)]
enum Clamp<T: QuantElem> {
    Relu(Relu<T>),
    Leaky(LeakyRelu<T>),
    HardSwish(HardSwish<T>),
}

/// A prepared node: input 0 into output 0, element-wise.
#[derive(Debug)]
struct ReluNode<T: QuantElem> {
    op: Clamp<T>,
    len: usize,
}

impl<T: QuantElem + bytemuck::Pod + Send + Sync> Kernel for ReluNode<T> {
    fn tiles(&self) -> usize {
        self.len.div_ceil(CHUNK)
    }

    fn split(&self) -> Option<usize> {
        Some(1)
    }

    fn band(&self, tiles: Range<usize>) -> Range<usize> {
        let size = std::mem::size_of::<T>();
        (tiles.start * CHUNK).min(self.len) * size..(tiles.end * CHUNK).min(self.len) * size
    }

    fn run_tiles(
        &self,
        backend: Backend,
        tiles: Range<usize>,
        io: &mut Io<'_>,
    ) -> Result<(), String> {
        let input: &[T] = view(io.ins[0])?;
        let band = (tiles.start * CHUNK).min(self.len)..(tiles.end * CHUNK).min(self.len);
        let Some(input) = input.get(band.clone()) else {
            return Err(format!("input shorter than elements {band:?}"));
        };
        let output = output_band::<T>(io.outs[0], io.out_start, band)?;
        match &self.op {
            Clamp::Relu(r) => r.run_with(backend, input, output),
            Clamp::Leaky(l) => l.run_with(backend, input, output),
            Clamp::HardSwish(h) => h.run_with(backend, input, output),
        }
        .map_err(|e| e.to_string())
    }
}

fn kernel<T: QuantElem + bytemuck::Pod + Send + Sync>(op: &Op<'_, '_>) -> Result<PreparedOp> {
    let (input, output) = (op.input(0)?, op.output(0)?);
    let in_q = op.per_tensor(input, "input")?;
    let out_q = op.per_tensor(output, "output")?;
    let e = |err: qneon::Error| op.kernel_error(err);
    let relu = |kind| {
        Relu::<T>::new(kind, in_q, out_q)
            .map(Clamp::Relu)
            .map_err(e)
    };
    let clamp = match op.builtin {
        BuiltinOp::RELU => relu(ReluKind::Relu)?,
        BuiltinOp::RELU6 => relu(ReluKind::Relu6)?,
        BuiltinOp::RELU_N1_TO_1 => relu(ReluKind::ReluN1To1)?,
        BuiltinOp::HARD_SWISH => Clamp::HardSwish(HardSwish::<T>::new(in_q, out_q).map_err(e)?),
        _ => {
            let alpha = match op.operator.options() {
                OpOptions::Builtin(BuiltinOptions::LeakyReluOptions(o)) => o.alpha,
                // The schema's default.
                _ => 0.0,
            };
            let xnnpack = if op.options.kernels == TfliteKernels::Xnnpack {
                LeakyRelu::<T>::new_xnnpack(alpha, in_q, out_q)
            } else {
                Err(qneon::Error::Unsupported {
                    op: "leaky_relu",
                    dtype: T::NAME,
                    reason: "not XNNPACK",
                })
            };
            match xnnpack {
                Ok(leaky) => Clamp::Leaky(leaky),
                // Outside XNNPACK's ratios the delegate leaves the op to
                // TFLite, whose arithmetic follows.
                Err(qneon::Error::Unsupported { .. }) => {
                    Clamp::Leaky(LeakyRelu::<T>::new(alpha, in_q, out_q).map_err(e)?)
                }
                Err(err) => return Err(e(err)),
            }
        }
    };
    let len = output.element_count();
    Ok(PreparedOp::elements(ReluNode { op: clamp, len }, len))
}

/// TFLite's `Prepare` of the five ops on quantized 8-bit data.
fn prepare(op: &Op<'_, '_>) -> Result<PreparedOp> {
    op.input_count(1, 1)?;
    op.output_count(1)?;
    let (input, output) = (op.input(0)?, op.output(0)?);
    if input.dtype() != output.dtype() {
        return Err(op.unsupported_types());
    }
    op.same_shape(input, output)?;
    match input.dtype() {
        TensorType::Int8 => kernel::<i8>(op),
        TensorType::Uint8 => kernel::<u8>(op),
        _ => Err(op.unsupported_types()),
    }
}
