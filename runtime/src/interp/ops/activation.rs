//! SOFTMAX, LOG_SOFTMAX, LOGISTIC and TANH: the library's kernels, one per
//! op and element type, with the method the caller chose.

use qneon::{Backend, Method};
use qneon_tflite::{BuiltinOp, Options as OpOptions, TensorType};

use super::buffers::{view, view_mut};
use super::op::{Op, PreparedOp};
use crate::error::Result;

/// SOFTMAX, LOG_SOFTMAX, LOGISTIC and TANH of each element type.
#[derive(Debug)]
pub(crate) enum Activation {
    SoftmaxI8(qneon::Softmax<i8>, usize),
    SoftmaxU8(qneon::Softmax<u8>, usize),
    SoftmaxI16(qneon::Softmax<i16>, usize),
    LogSoftmaxI8(qneon::LogSoftmax<i8>, usize),
    LogSoftmaxU8(qneon::LogSoftmax<u8>, usize),
    LogisticI8(qneon::Logistic<i8>),
    LogisticU8(qneon::Logistic<u8>),
    LogisticI16(qneon::Logistic<i16>),
    TanhI8(qneon::Tanh<i8>),
    TanhU8(qneon::Tanh<u8>),
    TanhI16(qneon::Tanh<i16>),
}

impl Activation {
    pub(crate) fn run(
        &self,
        backend: Backend,
        input: &[u8],
        output: &mut [u8],
    ) -> Result<(), String> {
        let e = |e: qneon::Error| e.to_string();
        match self {
            Activation::SoftmaxI8(op, row) => op
                .run_with(backend, view(input)?, view_mut(output)?, *row)
                .map_err(e),
            Activation::SoftmaxU8(op, row) => op
                .run_with(backend, view(input)?, view_mut(output)?, *row)
                .map_err(e),
            Activation::SoftmaxI16(op, row) => op
                .run_with(backend, view(input)?, view_mut(output)?, *row)
                .map_err(e),
            Activation::LogSoftmaxI8(op, row) => op
                .run_with(backend, view(input)?, view_mut(output)?, *row)
                .map_err(e),
            Activation::LogSoftmaxU8(op, row) => op
                .run_with(backend, view(input)?, view_mut(output)?, *row)
                .map_err(e),
            Activation::LogisticI8(op) => op
                .run_with(backend, view(input)?, view_mut(output)?)
                .map_err(e),
            Activation::LogisticU8(op) => op
                .run_with(backend, view(input)?, view_mut(output)?)
                .map_err(e),
            Activation::LogisticI16(op) => op
                .run_with(backend, view(input)?, view_mut(output)?)
                .map_err(e),
            Activation::TanhI8(op) => op
                .run_with(backend, view(input)?, view_mut(output)?)
                .map_err(e),
            Activation::TanhU8(op) => op
                .run_with(backend, view(input)?, view_mut(output)?)
                .map_err(e),
            Activation::TanhI16(op) => op
                .run_with(backend, view(input)?, view_mut(output)?)
                .map_err(e),
        }
    }
}

/// TFLite's `Prepare` of SOFTMAX, LOG_SOFTMAX, LOGISTIC and TANH: same shape
/// and dtype, per-tensor quantization, the library's kernel built.
pub(crate) fn prepare(op: &Op<'_, '_>, builtin: BuiltinOp) -> Result<PreparedOp<Activation>> {
    op.input_count(1, 1)?;
    op.output_count(1)?;
    let (input, output) = (op.input(0)?, op.output(0)?);
    op.same_shape(input, output)?;
    if input.dtype() != output.dtype() {
        return Err(op.unsupported_types());
    }
    let method = activation_method(builtin, input.dtype(), op.options.softmax_method);
    let (in_q, out_q) = (
        op.per_tensor(input, "input")?,
        op.per_tensor(output, "output")?,
    );
    let row = input.shape().last().copied().unwrap_or(1);
    if row == 0 || input.element_count() == 0 {
        return Err(op.invalid("empty input"));
    }
    let e = |err: qneon::Error| op.kernel_error(err);
    let beta = match op.operator.options() {
        OpOptions::Builtin(qneon_tflite::schema::BuiltinOptions::SoftmaxOptions(s)) => s.beta,
        _ => 1.0,
    };
    let dtype = input.dtype();
    let a = match (builtin, dtype) {
        (BuiltinOp::SOFTMAX, TensorType::Int8) => Activation::SoftmaxI8(
            qneon::Softmax::new(in_q, beta, out_q, method).map_err(e)?,
            row,
        ),
        (BuiltinOp::SOFTMAX, TensorType::Uint8) => Activation::SoftmaxU8(
            qneon::Softmax::new(in_q, beta, out_q, method).map_err(e)?,
            row,
        ),
        (BuiltinOp::SOFTMAX, TensorType::Int16) => Activation::SoftmaxI16(
            qneon::Softmax::new(in_q, beta, out_q, method).map_err(e)?,
            row,
        ),
        (BuiltinOp::LOG_SOFTMAX, TensorType::Int8) => {
            Activation::LogSoftmaxI8(qneon::LogSoftmax::new(in_q, out_q, method).map_err(e)?, row)
        }
        (BuiltinOp::LOG_SOFTMAX, TensorType::Uint8) => {
            Activation::LogSoftmaxU8(qneon::LogSoftmax::new(in_q, out_q, method).map_err(e)?, row)
        }
        (BuiltinOp::LOGISTIC, TensorType::Int8) => {
            Activation::LogisticI8(qneon::Logistic::new(in_q, out_q, method).map_err(e)?)
        }
        (BuiltinOp::LOGISTIC, TensorType::Uint8) => {
            Activation::LogisticU8(qneon::Logistic::new(in_q, out_q, method).map_err(e)?)
        }
        (BuiltinOp::LOGISTIC, TensorType::Int16) => {
            Activation::LogisticI16(qneon::Logistic::new(in_q, out_q, method).map_err(e)?)
        }
        (BuiltinOp::TANH, TensorType::Int8) => {
            Activation::TanhI8(qneon::Tanh::new(in_q, out_q, method).map_err(e)?)
        }
        (BuiltinOp::TANH, TensorType::Uint8) => {
            Activation::TanhU8(qneon::Tanh::new(in_q, out_q, method).map_err(e)?)
        }
        (BuiltinOp::TANH, TensorType::Int16) => {
            Activation::TanhI16(qneon::Tanh::new(in_q, out_q, method).map_err(e)?)
        }
        _ => return Err(op.unsupported_types()),
    };
    Ok(PreparedOp::elements(a, output.element_count()))
}

/// The library method that gives TFLite's bytes for the requested one.
/// TFLite's int16 SOFTMAX, LOGISTIC and TANH exist only as the table kernels
/// (its reference resolver runs them too), so `FixedPoint` (the reference
/// kernels' bytes) means [`Method::Lut`] there: measured on `models/ops`,
/// the library's int16 fixed-point kernels differ from both TFLite
/// references and its `Lut` kernels equal them.
fn activation_method(builtin: BuiltinOp, dtype: TensorType, requested: Method) -> Method {
    let int16_table_op = matches!(
        builtin,
        BuiltinOp::SOFTMAX | BuiltinOp::LOGISTIC | BuiltinOp::TANH
    );
    if dtype == TensorType::Int16 && int16_table_op && requested == Method::FixedPoint {
        Method::Lut
    } else {
        requested
    }
}
