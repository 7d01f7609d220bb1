//! SOFTMAX, LOG_SOFTMAX, LOGISTIC and TANH: the library's kernels, one
//! generic [`Activation`] kernel over them and the element types, with the
//! method the caller chose; `thresholded.rs`: LOGISTIC and SOFTMAX fused
//! with the options' probability threshold.

mod thresholded;

pub use thresholded::HitSlice;
pub(crate) use thresholded::{prepare as prepare_thresholded, Fused, HitStore};

use std::ops::Range;

use qneon::{Backend, Method, QuantElem};
use qneon_tflite::{BuiltinOp, Options as OpOptions, TensorType};

use super::buffers::{output_band, tile_elements, view, Io};
use super::kernel::{Kernel, PreparedOp, Registration, CHUNK};
use super::op::Op;
use crate::error::Result;
use crate::interp::options::TfliteKernels;

/// The ops this family prepares.
pub(crate) const OPS: &[Registration] = &[
    // LiteRT 2.3's XNNPACK delegate takes only float SOFTMAX and has no
    // LOG_SOFTMAX: the quantized ones run in the builtin kernels. It takes
    // int8 and uint8 LOGISTIC and TANH (with a table of its own) and leaves
    // int16 ones to the builtin kernels.
    Registration::new(BuiltinOp::SOFTMAX, "SOFTMAX", prepare)
        .left_by_xnnpack()
        .arithmetic(describe),
    Registration::new(BuiltinOp::LOG_SOFTMAX, "LOG_SOFTMAX", prepare)
        .left_by_xnnpack()
        .arithmetic(describe),
    Registration::new(BuiltinOp::LOGISTIC, "LOGISTIC", prepare)
        .xnnpack()
        .arithmetic(describe),
    Registration::new(BuiltinOp::TANH, "TANH", prepare)
        .xnnpack()
        .arithmetic(describe),
];

/// What inspect says: the method the caller chose, which these ops run
/// (but see [`activation_method`]'s int16 exception, which depends on the
/// tensor and so is named rather than decided here).
fn describe(options: &crate::interp::options::Options, builtin: BuiltinOp) -> String {
    let requested = options.softmax_method;
    if options.kernels == TfliteKernels::Xnnpack {
        // SOFTMAX and LOG_SOFTMAX are left by the delegate (described with
        // the optimized kernels' options), so only these two come here.
        let int16 = activation_method(builtin, TensorType::Int16, requested);
        return format!("int8/uint8: XNNPACK's table; int16 (builtin): method {int16}");
    }
    let int16 = activation_method(builtin, TensorType::Int16, requested);
    if int16 == requested {
        format!("method {requested}")
    } else {
        format!("method {requested} (int16: {int16})")
    }
}

/// One of the library's activations over a whole number of rows (SOFTMAX,
/// LOG_SOFTMAX) or any run of elements (LOGISTIC, TANH): what lets one
/// kernel serve every op and element type.
pub(crate) trait LibraryActivation: std::fmt::Debug + Send + Sync + 'static {
    type Elem: bytemuck::Pod;
    /// Whether the op works on rows of the innermost dimension.
    const ROW_WISE: bool;
    /// The op on `input` (whole rows of `row` elements when row-wise).
    fn apply(
        &self,
        backend: Backend,
        input: &[Self::Elem],
        output: &mut [Self::Elem],
        row: usize,
    ) -> qneon::Result<()>;
}

macro_rules! library_activation {
    (rows $($op:ident),*) => {$(
        impl<T: QuantElem + bytemuck::Pod + Send + Sync> LibraryActivation for qneon::$op<T> {
            type Elem = T;
            const ROW_WISE: bool = true;
            fn apply(&self, backend: Backend, input: &[T], output: &mut [T], row: usize)
                -> qneon::Result<()> {
                self.run_with(backend, input, output, row)
            }
        }
    )*};
    (elements $($op:ident),*) => {$(
        impl<T: QuantElem + bytemuck::Pod + Send + Sync> LibraryActivation for qneon::$op<T> {
            type Elem = T;
            const ROW_WISE: bool = false;
            fn apply(&self, backend: Backend, input: &[T], output: &mut [T], _row: usize)
                -> qneon::Result<()> {
                self.run_with(backend, input, output)
            }
        }
    )*};
}

library_activation!(rows Softmax, LogSoftmax);
library_activation!(elements Logistic, Tanh);

/// A prepared activation: the library's op on input 0 into output 0, in
/// tiles of one row (row-wise ops) or [`CHUNK`] elements.
#[derive(Debug)]
pub(crate) struct Activation<A> {
    op: A,
    /// Elements of the innermost dimension (a row of SOFTMAX).
    row: usize,
    /// Elements per tile.
    grain: usize,
    /// Elements of the tensor.
    len: usize,
}

impl<A: LibraryActivation> Activation<A> {
    fn new(op: A, row: usize, len: usize) -> Activation<A> {
        let grain = if A::ROW_WISE { row } else { CHUNK };
        Activation {
            op,
            row,
            grain,
            len,
        }
    }
}

impl<A: LibraryActivation> Kernel for Activation<A> {
    fn tiles(&self) -> usize {
        self.len.div_ceil(self.grain)
    }

    fn split(&self) -> Option<usize> {
        Some(1)
    }

    fn band(&self, tiles: Range<usize>) -> Range<usize> {
        let elements = tile_elements(tiles, self.grain, self.len);
        let size = std::mem::size_of::<A::Elem>();
        elements.start * size..elements.end * size
    }

    fn run_tiles(
        &self,
        backend: Backend,
        tiles: Range<usize>,
        io: &mut Io<'_>,
    ) -> Result<(), String> {
        let input: &[A::Elem] = view(io.ins[0])?;
        if input.len() != self.len {
            return Err(format!(
                "input of {} elements for {}",
                input.len(),
                self.len
            ));
        }
        let range = tile_elements(tiles, self.grain, self.len);
        let output = output_band::<A::Elem>(io.outs[0], io.out_start, range.clone())?;
        self.op
            .apply(backend, &input[range], output, self.row)
            .map_err(|e| e.to_string())
    }
}

/// XNNPACK's table kernel of LOGISTIC or TANH on 8-bit elements `T`.
fn xnnpack_kernel<T: QuantElem + bytemuck::Pod + Send + Sync>(
    op: &Op<'_, '_>,
    len: usize,
) -> Result<Box<dyn Kernel>> {
    let (in_q, out_q) = (
        op.per_tensor(op.input(0)?, "input")?,
        op.per_tensor(op.output(0)?, "output")?,
    );
    let e = |err: qneon::Error| op.kernel_error(err);
    Ok(match op.builtin {
        BuiltinOp::LOGISTIC => {
            let logistic = qneon::Logistic::<T>::new_xnnpack(in_q, out_q).map_err(e)?;
            Box::new(Activation::new(logistic, len, len))
        }
        BuiltinOp::TANH => {
            let tanh = qneon::Tanh::<T>::new_xnnpack(in_q, out_q).map_err(e)?;
            Box::new(Activation::new(tanh, len, len))
        }
        _ => return Err(op.unsupported_types()),
    })
}

/// The kernel of `builtin` on elements of type `T`.
fn kernel<T: QuantElem + bytemuck::Pod + Send + Sync>(
    op: &Op<'_, '_>,
    method: Method,
    row: usize,
    len: usize,
) -> Result<Box<dyn Kernel>> {
    let (input, output) = (op.input(0)?, op.output(0)?);
    let (in_q, out_q) = (
        op.per_tensor(input, "input")?,
        op.per_tensor(output, "output")?,
    );
    let e = |err: qneon::Error| op.kernel_error(err);
    Ok(match op.builtin {
        BuiltinOp::SOFTMAX => {
            let beta = match op.operator.options() {
                OpOptions::Builtin(qneon_tflite::schema::BuiltinOptions::SoftmaxOptions(s)) => {
                    s.beta
                }
                _ => 1.0,
            };
            let softmax = qneon::Softmax::<T>::new(in_q, beta, out_q, method).map_err(e)?;
            Box::new(Activation::new(softmax, row, len))
        }
        // TFLite has no int16 LOG_SOFTMAX.
        BuiltinOp::LOG_SOFTMAX if T::NAME != "int16" => {
            let log_softmax = qneon::LogSoftmax::<T>::new(in_q, out_q, method).map_err(e)?;
            Box::new(Activation::new(log_softmax, row, len))
        }
        BuiltinOp::LOGISTIC => {
            let logistic = qneon::Logistic::<T>::new(in_q, out_q, method).map_err(e)?;
            Box::new(Activation::new(logistic, row, len))
        }
        BuiltinOp::TANH => {
            let tanh = qneon::Tanh::<T>::new(in_q, out_q, method).map_err(e)?;
            Box::new(Activation::new(tanh, row, len))
        }
        _ => return Err(op.unsupported_types()),
    })
}

/// TFLite's `Prepare` of SOFTMAX, LOG_SOFTMAX, LOGISTIC and TANH: same shape
/// and dtype, per-tensor quantization, the library's kernel built.
fn prepare(op: &Op<'_, '_>) -> Result<PreparedOp> {
    op.input_count(1, 1)?;
    op.output_count(1)?;
    let (input, output) = (op.input(0)?, op.output(0)?);
    op.same_shape(input, output)?;
    if op.builtin == BuiltinOp::SOFTMAX
        && (input.dtype(), output.dtype()) == (TensorType::Int8, TensorType::Int16)
    {
        return widening_softmax(op);
    }
    if input.dtype() != output.dtype() {
        return Err(op.unsupported_types());
    }
    let method = activation_method(op.builtin, input.dtype(), op.options.softmax_method);
    op.per_tensor(input, "input")?;
    op.per_tensor(output, "output")?;
    let row = input.shape().last().copied().unwrap_or(1);
    let len = input.element_count();
    if row == 0 || len == 0 {
        return Err(op.invalid("empty input"));
    }
    let xnnpack = op.options.kernels == TfliteKernels::Xnnpack
        && matches!(op.builtin, BuiltinOp::LOGISTIC | BuiltinOp::TANH);
    let kernel = match input.dtype() {
        TensorType::Int8 if xnnpack => xnnpack_kernel::<i8>(op, len)?,
        TensorType::Uint8 if xnnpack => xnnpack_kernel::<u8>(op, len)?,
        TensorType::Int8 => kernel::<i8>(op, method, row, len)?,
        TensorType::Uint8 => kernel::<u8>(op, method, row, len)?,
        TensorType::Int16 => kernel::<i16>(op, method, row, len)?,
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

/// SOFTMAX int8 -> int16 (keyword spotters' last op): TFLite runs its
/// reference fixed-point softmax with a 16-bit output stage on every path
/// (the XNNPACK delegate takes no quantized SOFTMAX), whatever the method.
#[derive(Debug)]
struct WideningSoftmax {
    op: qneon::SoftmaxI8ToI16,
    row: usize,
    len: usize,
}

impl Kernel for WideningSoftmax {
    fn tiles(&self) -> usize {
        self.len / self.row
    }

    fn split(&self) -> Option<usize> {
        Some(1)
    }

    fn band(&self, tiles: Range<usize>) -> Range<usize> {
        let elements = tile_elements(tiles, self.row, self.len);
        elements.start * 2..elements.end * 2
    }

    fn run_tiles(
        &self,
        _backend: Backend,
        tiles: Range<usize>,
        io: &mut Io<'_>,
    ) -> Result<(), String> {
        let input: &[i8] = view(io.ins[0])?;
        if input.len() != self.len {
            return Err(format!(
                "input of {} elements for {}",
                input.len(),
                self.len
            ));
        }
        let range = tile_elements(tiles, self.row, self.len);
        let output = output_band::<i16>(io.outs[0], io.out_start, range.clone())?;
        self.op
            .run(&input[range], output, self.row)
            .map_err(|e| e.to_string())
    }
}

fn widening_softmax(op: &Op<'_, '_>) -> Result<PreparedOp> {
    let (input, output) = (op.input(0)?, op.output(0)?);
    let beta = match op.operator.options() {
        OpOptions::Builtin(qneon_tflite::schema::BuiltinOptions::SoftmaxOptions(s)) => s.beta,
        _ => 1.0,
    };
    let row = input.shape().last().copied().unwrap_or(1);
    let len = input.element_count();
    if row == 0 || len == 0 {
        return Err(op.invalid("empty input"));
    }
    let softmax = qneon::SoftmaxI8ToI16::new(
        op.per_tensor(input, "input")?,
        beta,
        op.per_tensor(output, "output")?,
    )
    .map_err(|e| op.kernel_error(e))?;
    Ok(PreparedOp::elements(
        WideningSoftmax {
            op: softmax,
            row,
            len,
        },
        len,
    ))
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
