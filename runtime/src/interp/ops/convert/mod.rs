//! Type conversions: CAST (int32 -> float32), DEQUANTIZE (int8, uint8,
//! int16 -> float32), QUANTIZE (float32 -> int8, uint8, int16, and the int8
//! requantize), with the float arithmetic of TFLite's reference kernels or,
//! for DEQUANTIZE, of its aarch64 optimized kernels ([`TfliteKernels`]).

use std::ops::Range;

use qneon::Backend;
use qneon_tflite::{BuiltinOp, TensorType};

use super::buffers::{tile_elements, view, view_mut, Io};
use super::kernel::{Kernel, PreparedOp, Registration, CHUNK};
use super::op::Op;
use crate::error::Result;
use crate::interp::options::{Rounding, TfliteKernels};

/// The ops this family prepares.
pub(crate) const OPS: &[Registration] = &[
    // The XNNPACK delegate leaves CAST to the builtin kernels; it takes
    // DEQUANTIZE (qs8 -> f32: `f32(q - zero_point) * scale`, one f32
    // product, which is the reference kernel's f64 product rounded once to
    // f32: the same bytes) and QUANTIZE (its own f32 scaling, not built).
    Registration::new(BuiltinOp::CAST, "CAST", cast).left_by_xnnpack(),
    Registration::new(BuiltinOp::DEQUANTIZE, "DEQUANTIZE", dequantize)
        .xnnpack()
        .arithmetic(describe),
    Registration::new(BuiltinOp::QUANTIZE, "QUANTIZE", quantize),
];

/// What inspect says of DEQUANTIZE: which kernel set's float arithmetic
/// it takes (the choice `dequantize` makes).
fn describe(options: &crate::interp::options::Options, _: BuiltinOp) -> String {
    if options.kernels == TfliteKernels::Xnnpack {
        "f32 product (XNNPACK: equal to the reference kernels' f64 product rounded to f32)"
            .to_string()
    } else if options.kernels == TfliteKernels::Optimized {
        "int8/uint8: f32 fma in blocks of 8 (optimized kernels)".to_string()
    } else {
        "f64 product rounded to f32 (reference kernels)".to_string()
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
    fn size(self) -> usize {
        match self {
            IntType::I8 | IntType::U8 => 1,
            IntType::I16 => 2,
        }
    }

    fn range(self) -> (f64, f64) {
        match self {
            IntType::I8 => (i8::MIN as f64, i8::MAX as f64),
            IntType::U8 => (0.0, u8::MAX as f64),
            IntType::I16 => (i16::MIN as f64, i16::MAX as f64),
        }
    }
}

/// A prepared conversion.
#[derive(Debug)]
pub(crate) enum Convert {
    /// CAST int32 -> float32: `static_cast<float>`, round to nearest even.
    CastI32F32,
    /// DEQUANTIZE to float32: `(float)(scale * (q - zero_point))` with the
    /// product in f64, as TFLite's reference kernel; with `fma_blocks`, the
    /// optimized kernel's blocks of 8 (see [`dequantize_optimized`]).
    Dequantize {
        from: IntType,
        scale: f64,
        zero_point: i32,
        fma_blocks: bool,
    },
    /// QUANTIZE float32 -> integer: `round(x / scale)` (the quotient in
    /// f32, rounded half away from zero), `+ zero_point` and clamped in f64,
    /// as TFLite's `AffineQuantize`.
    Quantize {
        to: IntType,
        scale: f32,
        zero_point: i32,
    },
    /// QUANTIZE int8 -> int8: TFLite's `Requantize`,
    /// `clamp(MultiplyByQuantizedMultiplier(x - input_zero_point) + output_zero_point)`
    /// in `rounding`.
    RequantizeI8 {
        multiplier: qneon::quant::QuantizedMultiplier,
        rounding: Rounding,
        input_zero_point: i32,
        output_zero_point: i32,
    },
}

/// A prepared conversion of `len` elements, in tiles of [`CHUNK`]
/// elements (a multiple of DEQUANTIZE's blocks of 8, so a tile boundary
/// never moves where the optimized kernel's last partial block starts).
#[derive(Debug)]
pub(crate) struct Converter {
    convert: Convert,
    len: usize,
}

impl Kernel for Converter {
    fn tiles(&self) -> usize {
        self.len.div_ceil(CHUNK)
    }

    fn run_tiles(&self, _: Backend, tiles: Range<usize>, io: &mut Io<'_>) -> Result<(), String> {
        let (from, to) = self.convert.element_sizes();
        let (input, output) = (io.ins[0], &mut *io.outs[0]);
        if input.len() != self.len * from || output.len() != self.len * to {
            return Err(format!(
                "buffers of {} and {} bytes for {} elements",
                input.len(),
                output.len(),
                self.len
            ));
        }
        let elements = tile_elements(tiles, CHUNK, self.len);
        self.convert.run(
            &input[elements.start * from..elements.end * from],
            &mut output[elements.start * to..elements.end * to],
        )
    }
}

impl Convert {
    /// Bytes of an input and of an output element.
    fn element_sizes(&self) -> (usize, usize) {
        match self {
            Convert::CastI32F32 => (4, 4),
            Convert::Dequantize { from, .. } => (from.size(), 4),
            Convert::Quantize { to, .. } => (4, to.size()),
            Convert::RequantizeI8 { .. } => (1, 1),
        }
    }

    /// A kernel converting `len` elements.
    fn kernel(self, len: usize) -> PreparedOp {
        PreparedOp::elements(Converter { convert: self, len }, len)
    }

    /// Converts `input_bytes` into `output_bytes`.
    fn run(&self, input_bytes: &[u8], output_bytes: &mut [u8]) -> Result<(), String> {
        match self {
            Convert::CastI32F32 => {
                let input: &[i32] = view(input_bytes)?;
                let output: &mut [f32] = view_mut(output_bytes)?;
                for (o, &x) in output.iter_mut().zip(input) {
                    *o = x as f32;
                }
            }
            Convert::Dequantize {
                from,
                scale,
                zero_point,
                fma_blocks,
            } => {
                let output: &mut [f32] = view_mut(output_bytes)?;
                let f = |q: i32| (scale * (q - zero_point) as f64) as f32;
                match from {
                    IntType::I8 if *fma_blocks => {
                        let input: &[i8] = view(input_bytes)?;
                        dequantize_optimized(input, output, *scale, *zero_point);
                    }
                    IntType::U8 if *fma_blocks => {
                        dequantize_optimized(input_bytes, output, *scale, *zero_point);
                    }
                    IntType::I8 => {
                        let input: &[i8] = view(input_bytes)?;
                        output
                            .iter_mut()
                            .zip(input)
                            .for_each(|(o, &q)| *o = f(q as i32));
                    }
                    IntType::U8 => {
                        let input: &[u8] = input_bytes;
                        output
                            .iter_mut()
                            .zip(input)
                            .for_each(|(o, &q)| *o = f(q as i32));
                    }
                    IntType::I16 => {
                        let input: &[i16] = view(input_bytes)?;
                        output
                            .iter_mut()
                            .zip(input)
                            .for_each(|(o, &q)| *o = f(q as i32));
                    }
                }
            }
            Convert::Quantize {
                to,
                scale,
                zero_point,
            } => {
                let input: &[f32] = view(input_bytes)?;
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
                        let output: &mut [i8] = view_mut(output_bytes)?;
                        output
                            .iter_mut()
                            .zip(input)
                            .for_each(|(o, &x)| *o = q(x) as i8);
                    }
                    IntType::U8 => {
                        let output: &mut [u8] = output_bytes;
                        output
                            .iter_mut()
                            .zip(input)
                            .for_each(|(o, &x)| *o = q(x) as u8);
                    }
                    IntType::I16 => {
                        let output: &mut [i16] = view_mut(output_bytes)?;
                        output
                            .iter_mut()
                            .zip(input)
                            .for_each(|(o, &x)| *o = q(x) as i16);
                    }
                }
            }
            Convert::RequantizeI8 {
                multiplier,
                rounding,
                input_zero_point,
                output_zero_point,
            } => {
                let input: &[i8] = view(input_bytes)?;
                let output: &mut [i8] = view_mut(output_bytes)?;
                for (o, &x) in output.iter_mut().zip(input) {
                    let scaled = rounding.multiply(x as i32 - input_zero_point, *multiplier);
                    *o = scaled.saturating_add(*output_zero_point).clamp(-128, 127) as i8;
                }
            }
        }
        Ok(())
    }
}

/// DEQUANTIZE as TFLite's aarch64 optimized kernel computes it (measured
/// against LiteRT 2.3's own aarch64 build: every output of the committed
/// MobileBert's two DEQUANTIZE ops): whole blocks of 8 elements as
/// `fma(f32(q), f32(scale), f32(-zero_point * scale))`, one rounding of the
/// exact `q * scale + offset` (the offset is the exact product rounded once
/// to f32, `zero_point` having 8 bits and `scale` 24); the last `len % 8`
/// elements as the reference kernel does.
fn dequantize_optimized<Q: Copy + Into<i32>>(
    input: &[Q],
    output: &mut [f32],
    scale: f64,
    zero_point: i32,
) {
    let scale_f32 = scale as f32;
    let offset = (-(zero_point as f64) * scale) as f32;
    let blocked = input.len().min(output.len()) / 8 * 8;
    let (head_in, tail_in) = input.split_at(blocked);
    let (head_out, tail_out) = output.split_at_mut(blocked);
    for (o, &q) in head_out.iter_mut().zip(head_in) {
        *o = (q.into() as f32).mul_add(scale_f32, offset);
    }
    for (o, &q) in tail_out.iter_mut().zip(tail_in) {
        *o = (scale * (q.into() - zero_point) as f64) as f32;
    }
}

/// TFLite's `Prepare` of CAST: int32 to float32.
fn cast(op: &Op<'_, '_>) -> Result<PreparedOp> {
    op.input_count(1, 1)?;
    op.output_count(1)?;
    let (input, output) = (op.input(0)?, op.output(0)?);
    op.same_shape(input, output)?;
    match (input.dtype(), output.dtype()) {
        (TensorType::Int32, TensorType::Float32) => {
            Ok(Convert::CastI32F32.kernel(output.element_count()))
        }
        _ => Err(op.unsupported_types()),
    }
}

fn int_type(dtype: TensorType) -> Option<IntType> {
    match dtype {
        TensorType::Int8 => Some(IntType::I8),
        TensorType::Uint8 => Some(IntType::U8),
        TensorType::Int16 => Some(IntType::I16),
        _ => None,
    }
}

fn dequantize(op: &Op<'_, '_>) -> Result<PreparedOp> {
    op.input_count(1, 1)?;
    op.output_count(1)?;
    let (input, output) = (op.input(0)?, op.output(0)?);
    op.same_shape(input, output)?;
    let from = int_type(input.dtype())
        .filter(|_| output.dtype() == TensorType::Float32)
        .ok_or_else(|| op.unsupported_types())?;
    let q = op.per_tensor(input, "input")?;
    Ok(Convert::Dequantize {
        from,
        scale: q.scale as f64,
        zero_point: q.zero_point,
        fma_blocks: op.options.kernels == TfliteKernels::Optimized,
    }
    .kernel(output.element_count()))
}

fn quantize(op: &Op<'_, '_>) -> Result<PreparedOp> {
    op.input_count(1, 1)?;
    op.output_count(1)?;
    let (input, output) = (op.input(0)?, op.output(0)?);
    op.same_shape(input, output)?;
    let to = int_type(output.dtype()).ok_or_else(|| op.unsupported_types())?;
    let out_q = op.per_tensor(output, "output")?;
    match input.dtype() {
        TensorType::Float32 => Ok(Convert::Quantize {
            to,
            scale: out_q.scale,
            zero_point: out_q.zero_point,
        }
        .kernel(output.element_count())),
        TensorType::Int8 if to == IntType::I8 => {
            let in_q = op.per_tensor(input, "input")?;
            let real = in_q.scale as f64 / out_q.scale as f64;
            let rounding = op.options.rounding;
            let m = rounding
                .quantize_multiplier(real)
                .map_err(|e| op.kernel_error(e))?;
            // Double rounding shifts `x - input_zero_point` (9 bits) left by
            // the shift first; beyond 2^22 it would leave int32 (single
            // rounding caps the shift at 30 and multiplies in 64 bits).
            if rounding == Rounding::Double && m.shift > 22 {
                return Err(op.unsupported(format!(
                    "int8 requantize by {real:e} (input scale / output scale at or above 2^22)"
                )));
            }
            Ok(Convert::RequantizeI8 {
                multiplier: m,
                rounding,
                input_zero_point: in_q.zero_point,
                output_zero_point: out_q.zero_point,
            }
            .kernel(output.element_count()))
        }
        _ => Err(op.unsupported_types()),
    }
}
