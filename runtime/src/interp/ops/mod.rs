//! Prepared operators: what `invoke` runs for each node.
//!
//! A node's kernel is one variant of the closed enum [`Kernel`] rather than
//! a `Box<dyn Kernel>`: the set of ops is fixed by this runtime, a `match`
//! dispatches without a vtable, and inspect and the profiler can name every
//! kind. The arithmetic of each requantizing op is the library's (the
//! [`ElementwiseInt8`] adapter is where the library's binary kernels plug
//! in); the data movement and the float conversions are here.

pub mod movement;

use qneon::Backend;

use movement::{Gather, StridedCopy};

/// The element type views a kernel needs, cast in place from arena bytes
/// (every arena buffer is 64-byte aligned and constant data is copied to
/// aligned memory at load, so the casts cannot fail on a planned model).
pub(crate) fn view<T: bytemuck::Pod>(bytes: &[u8]) -> Result<&[T], String> {
    bytemuck::try_cast_slice(bytes).map_err(|e| format!("tensor data not viewable: {e}"))
}

pub(crate) fn view_mut<T: bytemuck::Pod>(bytes: &mut [u8]) -> Result<&mut [T], String> {
    bytemuck::try_cast_slice_mut(bytes).map_err(|e| format!("tensor data not viewable: {e}"))
}

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

/// The buffers of one node: inputs in operator order (an omitted optional
/// input is empty), outputs, and the node's scratch.
pub(crate) struct Io<'b> {
    pub ins: Vec<&'b [u8]>,
    pub outs: Vec<&'b mut [u8]>,
    pub scratch: &'b mut [u8],
}

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
    fn run(&self, backend: Backend, input: &[u8], output: &mut [u8]) -> Result<(), String> {
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

/// The integer output types of QUANTIZE.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum IntType {
    I8,
    U8,
    I16,
}

impl IntType {
    fn range(self) -> (f64, f64) {
        match self {
            IntType::I8 => (i8::MIN as f64, i8::MAX as f64),
            IntType::U8 => (0.0, u8::MAX as f64),
            IntType::I16 => (i16::MIN as f64, i16::MAX as f64),
        }
    }
}

/// A prepared node's kernel.
#[derive(Debug)]
pub(crate) enum Kernel {
    /// Nothing to do: the output shares its input's bytes (an aliased
    /// RESHAPE) or constant data.
    Nop,
    /// Input 0 to output 0 through a planned copy (RESHAPE without alias,
    /// TRANSPOSE, STRIDED_SLICE).
    Copy(StridedCopy),
    /// PAD: fill with one element's bytes, then copy the interior.
    Pad { copy: StridedCopy, fill: Vec<u8> },
    /// GATHER: params input 0, int32 indices input 1.
    Gather(Gather),
    /// CONCATENATION: input `i` through copy `i` into output 0.
    Concat(Vec<StridedCopy>),
    /// SPLIT: the data (input 1) through copy `i` into output `i`.
    Split(Vec<StridedCopy>),
    /// CAST int32 -> float32: `static_cast<float>`, round to nearest even.
    CastI32F32,
    /// DEQUANTIZE to float32: `(float)(scale * (q - zero_point))` with the
    /// product in f64, as TFLite's reference kernel.
    Dequantize {
        from: IntType,
        scale: f64,
        zero_point: i32,
    },
    /// QUANTIZE float32 -> integer: `round(x / scale)` (the quotient in
    /// f32, rounded half away from zero), `+ zero_point` and clamped in f64,
    /// as TFLite's `AffineQuantize`.
    Quantize {
        to: IntType,
        scale: f32,
        zero_point: i32,
    },
    /// QUANTIZE int8 -> int8 (double rounding): TFLite's `Requantize`.
    RequantizeI8 {
        multiplier: i32,
        shift: i32,
        input_zero_point: i32,
        output_zero_point: i32,
    },
    /// An activation of the library.
    Activation(Box<Activation>),
    /// FULLY_CONNECTED: `m` rows through the library's GEMM.
    FullyConnected { gemm: Box<qneon::Gemm>, m: usize },
    /// A binary int8 element-wise op; an operand that needs broadcasting
    /// is expanded into scratch first (`a` at scratch 0, `b` after it).
    Binary {
        kernel: Box<dyn ElementwiseInt8>,
        expand_a: Option<StridedCopy>,
        expand_b: Option<StridedCopy>,
        count: usize,
    },
}

impl Kernel {
    /// Runs the kernel on its buffers; an error (a message) only for data
    /// TFLite would refuse at run time too (a GATHER index out of range).
    pub(crate) fn run(&self, backend: Backend, io: Io<'_>) -> Result<(), String> {
        let Io {
            ins,
            mut outs,
            scratch,
        } = io;
        match self {
            Kernel::Nop => {}
            Kernel::Copy(copy) => copy.run(ins[0], outs[0]),
            Kernel::Pad { copy, fill } => {
                for chunk in outs[0].chunks_exact_mut(fill.len()) {
                    chunk.copy_from_slice(fill);
                }
                copy.run(ins[0], outs[0]);
            }
            Kernel::Gather(gather) => gather.run(ins[0], view(ins[1])?, outs[0])?,
            Kernel::Concat(copies) => {
                for (copy, input) in copies.iter().zip(&ins) {
                    copy.run(input, outs[0]);
                }
            }
            Kernel::Split(copies) => {
                for (copy, output) in copies.iter().zip(outs.iter_mut()) {
                    copy.run(ins[1], output);
                }
            }
            Kernel::CastI32F32 => {
                let input: &[i32] = view(ins[0])?;
                let output: &mut [f32] = view_mut(outs[0])?;
                for (o, &x) in output.iter_mut().zip(input) {
                    *o = x as f32;
                }
            }
            Kernel::Dequantize {
                from,
                scale,
                zero_point,
            } => {
                let output: &mut [f32] = view_mut(outs[0])?;
                let f = |q: i32| (scale * (q - zero_point) as f64) as f32;
                match from {
                    IntType::I8 => {
                        let input: &[i8] = view(ins[0])?;
                        output
                            .iter_mut()
                            .zip(input)
                            .for_each(|(o, &q)| *o = f(q as i32));
                    }
                    IntType::U8 => {
                        let input: &[u8] = ins[0];
                        output
                            .iter_mut()
                            .zip(input)
                            .for_each(|(o, &q)| *o = f(q as i32));
                    }
                    IntType::I16 => {
                        let input: &[i16] = view(ins[0])?;
                        output
                            .iter_mut()
                            .zip(input)
                            .for_each(|(o, &q)| *o = f(q as i32));
                    }
                }
            }
            Kernel::Quantize {
                to,
                scale,
                zero_point,
            } => {
                let input: &[f32] = view(ins[0])?;
                let (lo, hi) = to.range();
                // `f32::round` rounds half away from zero, as `std::round`;
                // NaN stays NaN through max/min and converts to 0.
                let q = |x: f32| {
                    ((x / scale).round() as f64 + *zero_point as f64)
                        .max(lo)
                        .min(hi)
                };
                match to {
                    IntType::I8 => {
                        let output: &mut [i8] = view_mut(outs[0])?;
                        output
                            .iter_mut()
                            .zip(input)
                            .for_each(|(o, &x)| *o = q(x) as i8);
                    }
                    IntType::U8 => {
                        let output: &mut [u8] = outs[0];
                        output
                            .iter_mut()
                            .zip(input)
                            .for_each(|(o, &x)| *o = q(x) as u8);
                    }
                    IntType::I16 => {
                        let output: &mut [i16] = view_mut(outs[0])?;
                        output
                            .iter_mut()
                            .zip(input)
                            .for_each(|(o, &x)| *o = q(x) as i16);
                    }
                }
            }
            Kernel::RequantizeI8 {
                multiplier,
                shift,
                input_zero_point,
                output_zero_point,
            } => {
                let input: &[i8] = view(ins[0])?;
                let output: &mut [i8] = view_mut(outs[0])?;
                for (o, &x) in output.iter_mut().zip(input) {
                    let scaled = qneon::quant::multiply_by_quantized_multiplier(
                        x as i32 - input_zero_point,
                        *multiplier,
                        *shift,
                    );
                    *o = (scaled + output_zero_point).clamp(-128, 127) as i8;
                }
            }
            Kernel::Activation(activation) => activation.run(backend, ins[0], outs[0])?,
            Kernel::FullyConnected { gemm, m } => gemm
                .run_with(backend, view(ins[0])?, view_mut(outs[0])?, *m)
                .map_err(|e| e.to_string())?,
            Kernel::Binary {
                kernel,
                expand_a,
                expand_b,
                count,
            } => {
                let (scratch_a, scratch_b) =
                    scratch.split_at_mut(if expand_a.is_some() { *count } else { 0 });
                let a: &[u8] = match expand_a {
                    Some(copy) => {
                        copy.run(ins[0], scratch_a);
                        scratch_a
                    }
                    None => ins[0],
                };
                let b: &[u8] = match expand_b {
                    Some(copy) => {
                        let scratch_b = &mut scratch_b[..*count];
                        copy.run(ins[1], scratch_b);
                        scratch_b
                    }
                    None => ins[1],
                };
                kernel
                    .run(backend, view(a)?, view(b)?, view_mut(outs[0])?)
                    .map_err(|e| e.to_string())?;
            }
        }
        Ok(())
    }
}
