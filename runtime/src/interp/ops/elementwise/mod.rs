//! RELU, RELU6, RELU_N1_TO_1, LEAKY_RELU and HARD_SWISH on int8 and uint8: TFLite's
//! `Prepare` rules (one input, one output of the same type and shape, per
//! tensor quantization) and the library's element-wise kernels, which
//! requantize when the input and output scales differ, in tiles of
//! [`CHUNK`] elements. XNNPACK's versions are not built (refused by name).

use std::ops::Range;

use qneon::{Backend, HardSwish, LeakyRelu, QuantElem, Relu, ReluKind};
use qneon_tflite::schema::BuiltinOptions;
use qneon_tflite::{BuiltinOp, Options as OpOptions, TensorType};

use super::buffers::{view, view_mut, Io};
use super::kernel::{Kernel, PreparedOp, Registration, CHUNK};
use super::op::Op;
use crate::error::Result;

/// The ops this family prepares.
pub(crate) const OPS: &[Registration] = &[
    Registration::new(BuiltinOp::RELU, "RELU", prepare),
    Registration::new(BuiltinOp::RELU6, "RELU6", prepare),
    Registration::new(BuiltinOp::RELU_N1_TO_1, "RELU_N1_TO_1", prepare),
    Registration::new(BuiltinOp::LEAKY_RELU, "LEAKY_RELU", prepare),
    Registration::new(BuiltinOp::HARD_SWISH, "HARD_SWISH", prepare),
];

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

    fn run_tiles(
        &self,
        backend: Backend,
        tiles: Range<usize>,
        io: &mut Io<'_>,
    ) -> Result<(), String> {
        let input: &[T] = view(io.ins[0])?;
        let output: &mut [T] = view_mut(io.outs[0])?;
        let band = (tiles.start * CHUNK).min(self.len)..(tiles.end * CHUNK).min(self.len);
        let (Some(input), Some(output)) = (input.get(band.clone()), output.get_mut(band.clone()))
        else {
            return Err(format!("buffers shorter than elements {band:?}"));
        };
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
            Clamp::Leaky(LeakyRelu::<T>::new(alpha, in_q, out_q).map_err(e)?)
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
