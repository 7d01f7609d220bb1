//! Type conversions: CAST (int32 -> float32), DEQUANTIZE (int8, uint8,
//! int16 -> float32), QUANTIZE (float32 -> int8, uint8, int16, and the
//! int8 -> int8, int16 -> int8 and int16 -> int32 requantizes), with the float arithmetic of TFLite's reference kernels or,
//! for DEQUANTIZE, of its aarch64 optimized kernels ([`TfliteKernels`]).

use std::ops::Range;

use qneon::Backend;
use qneon_tflite::{BuiltinOp, TensorType};

use super::buffers::{output_band, tile_elements, view, view_mut, Io};
use super::kernel::{Kernel, PreparedOp, Registration, CHUNK};
use super::op::Op;
use crate::error::Result;
use crate::interp::options::{Rounding, TfliteKernels};

/// The ops this family prepares.
pub(crate) const OPS: &[Registration] = &[
    // The XNNPACK delegate leaves CAST to the builtin kernels; it takes
    // DEQUANTIZE (qs8 -> f32: `f32(q - zero_point) * scale`, one f32
    // product, which is the reference kernel's f64 product rounded once to
    // f32: the same bytes) and int8 / uint8 QUANTIZE (its own arithmetic,
    // `Convert::XnnpackQuantize` and `Convert::XnnpackRequantizeI8`).
    Registration::new(BuiltinOp::CAST, "CAST", cast).left_by_xnnpack(),
    Registration::new(BuiltinOp::DEQUANTIZE, "DEQUANTIZE", dequantize)
        .xnnpack()
        .arithmetic(describe),
    Registration::new(BuiltinOp::QUANTIZE, "QUANTIZE", quantize)
        .xnnpack()
        .arithmetic(describe_quantize),
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

/// What inspect says of QUANTIZE: the arithmetic `quantize` chooses.
fn describe_quantize(options: &crate::interp::options::Options, _: BuiltinOp) -> String {
    if options.kernels == TfliteKernels::Xnnpack {
        "XNNPACK: float -> int8/uint8 x * f32(1 / scale) rounded to even; int8 -> int8 a \
         multiplier of 8 fraction bits (ratios in [2^-8, 2^7]); otherwise the builtin kernels'"
            .to_string()
    } else {
        format!(
            "float: round(x / scale) half away from zero; int8 -> int8: rounding {}",
            options.rounding.name()
        )
    }
}

/// XNNPACK's int8 -> int8 convert takes input / output scale ratios in
/// `[2^-8, 2^7]` only (the delegate leaves others to the builtin kernel).
const XNNPACK_REQUANTIZE_RATIOS: (f32, f32) = (1.0 / 256.0, 128.0);

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
    /// QUANTIZE int16 -> int8 or int32: TFLite's `Requantize` as for int8,
    /// clamped to the output type (`wide`: int32).
    RequantizeI16 {
        multiplier: qneon::quant::QuantizedMultiplier,
        rounding: Rounding,
        input_zero_point: i32,
        output_zero_point: i32,
        wide: bool,
    },
    /// QUANTIZE float32 -> int8 / uint8 as XNNPACK's `f32 -> qs8 / qu8`
    /// convert: `x * inverse_scale` (`inverse_scale = f32(1 / scale)`,
    /// rounded once) clamped to the type less the zero point, rounded to
    /// nearest with ties to even, plus the zero point. NaN gives the zero
    /// point here (XNNPACK's x86 kernels' NaN byte depends on the kernel).
    XnnpackQuantize {
        to: IntType,
        inverse_scale: f32,
        zero_point: i32,
    },
    /// QUANTIZE int8 -> int8 as XNNPACK's `qs8` convert: `multiplier =
    /// lrintf(256 * f32(input_scale / output_scale))`, then per element
    /// `clamp((bias + x * multiplier) >> 8, -128, 127)` with `bias =
    /// (output_zero_point << 8) - multiplier * input_zero_point + 128`.
    XnnpackRequantizeI8 { multiplier: i32, bias: i32 },
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

    fn split(&self) -> Option<usize> {
        Some(1)
    }

    fn band(&self, tiles: Range<usize>) -> Range<usize> {
        let (_, to) = self.convert.element_sizes();
        let elements = tile_elements(tiles, CHUNK, self.len);
        elements.start * to..elements.end * to
    }

    fn run_tiles(&self, _: Backend, tiles: Range<usize>, io: &mut Io<'_>) -> Result<(), String> {
        let (from, to) = self.convert.element_sizes();
        let input = io.ins[0];
        if input.len() != self.len * from {
            return Err(format!(
                "input of {} bytes for {} elements",
                input.len(),
                self.len
            ));
        }
        let elements = tile_elements(tiles, CHUNK, self.len);
        let bytes = elements.start * to..elements.end * to;
        let output = output_band::<u8>(io.outs[0], io.out_start, bytes)?;
        self.convert
            .run(&input[elements.start * from..elements.end * from], output)
    }
}

impl Convert {
    /// Bytes of an input and of an output element.
    fn element_sizes(&self) -> (usize, usize) {
        match self {
            Convert::CastI32F32 => (4, 4),
            Convert::Dequantize { from, .. } => (from.size(), 4),
            Convert::Quantize { to, .. } => (4, to.size()),
            Convert::RequantizeI8 { .. } | Convert::XnnpackRequantizeI8 { .. } => (1, 1),
            Convert::RequantizeI16 { wide, .. } => (2, if *wide { 4 } else { 1 }),
            Convert::XnnpackQuantize { to, .. } => (4, to.size()),
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
            Convert::RequantizeI16 {
                multiplier,
                rounding,
                input_zero_point,
                output_zero_point,
                wide,
            } => {
                let input: &[i16] = view(input_bytes)?;
                let scaled = input.iter().map(|&x| {
                    rounding
                        .multiply(x as i32 - input_zero_point, *multiplier)
                        .saturating_add(*output_zero_point)
                });
                if *wide {
                    let output: &mut [i32] = view_mut(output_bytes)?;
                    for (o, y) in output.iter_mut().zip(scaled) {
                        *o = y;
                    }
                } else {
                    let output: &mut [i8] = view_mut(output_bytes)?;
                    for (o, y) in output.iter_mut().zip(scaled) {
                        *o = y.clamp(-128, 127) as i8;
                    }
                }
            }
            Convert::XnnpackQuantize {
                to,
                inverse_scale,
                zero_point,
            } => {
                let input: &[f32] = view(input_bytes)?;
                let (lo, hi) = to.range();
                let (lo, hi) = (
                    (lo as i32 - zero_point) as f32,
                    (hi as i32 - zero_point) as f32,
                );
                // Clamping before rounding equals rounding first (integer
                // bounds); NaN stays NaN through `clamp` and converts to 0.
                let q = |x: f32| {
                    qneon::quant::round_ties_even_f32((x * inverse_scale).clamp(lo, hi)) as i32
                        + zero_point
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
                    IntType::I16 => return Err("XNNPACK has no int16 QUANTIZE".to_string()),
                }
            }
            Convert::XnnpackRequantizeI8 { multiplier, bias } => {
                let input: &[i8] = view(input_bytes)?;
                let output: &mut [i8] = view_mut(output_bytes)?;
                for (o, &x) in output.iter_mut().zip(input) {
                    let acc = bias.wrapping_add((x as i32).wrapping_mul(*multiplier));
                    *o = (acc >> 8).clamp(-128, 127) as i8;
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

/// QUANTIZE in XNNPACK's arithmetic, where its delegate takes the op:
/// float32 to int8 / uint8, and int8 to int8 at scale ratios XNNPACK
/// accepts; `None` where the builtin kernel runs it.
fn xnnpack_quantize(
    op: &Op<'_, '_>,
    from: TensorType,
    to: IntType,
    out_q: qneon::QuantParams,
) -> Result<Option<Convert>> {
    Ok(match (from, to) {
        (TensorType::Float32, IntType::I8 | IntType::U8) => Some(Convert::XnnpackQuantize {
            to,
            inverse_scale: 1.0 / out_q.scale,
            zero_point: out_q.zero_point,
        }),
        (TensorType::Int8, IntType::I8) => {
            let in_q = op.per_tensor(op.input(0)?, "input")?;
            let ratio = in_q.scale / out_q.scale;
            let (lo, hi) = XNNPACK_REQUANTIZE_RATIOS;
            if !(ratio >= lo && ratio <= hi) {
                return Ok(None);
            }
            let multiplier = qneon::quant::round_ties_even_f32(256.0 * ratio) as i32;
            let bias = (out_q.zero_point << 8) - multiplier * in_q.zero_point + 0x80;
            Some(Convert::XnnpackRequantizeI8 { multiplier, bias })
        }
        _ => None,
    })
}

fn quantize(op: &Op<'_, '_>) -> Result<PreparedOp> {
    op.input_count(1, 1)?;
    op.output_count(1)?;
    let (input, output) = (op.input(0)?, op.output(0)?);
    op.same_shape(input, output)?;
    if input.dtype() == TensorType::Int16 {
        return requantize_i16(op);
    }
    let to = int_type(output.dtype()).ok_or_else(|| op.unsupported_types())?;
    let out_q = op.per_tensor(output, "output")?;
    if op.options.kernels == TfliteKernels::Xnnpack {
        if let Some(convert) = xnnpack_quantize(op, input.dtype(), to, out_q)? {
            return Ok(convert.kernel(output.element_count()));
        }
    }
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

/// QUANTIZE int16 -> int8 or int32 (keyword spotters' input and output
/// stages): TFLite's `Requantize` by `input_scale / output_scale`. The
/// XNNPACK delegate takes no int16 QUANTIZE, so every path runs this.
fn requantize_i16(op: &Op<'_, '_>) -> Result<PreparedOp> {
    let (input, output) = (op.input(0)?, op.output(0)?);
    let wide = match output.dtype() {
        TensorType::Int8 => false,
        TensorType::Int32 => true,
        _ => return Err(op.unsupported_types()),
    };
    let in_q = op.per_tensor(input, "input")?;
    let out_q = op.per_tensor(output, "output")?;
    let real = in_q.scale as f64 / out_q.scale as f64;
    let multiplier = op
        .options
        .rounding
        .quantize_multiplier(real)
        .map_err(|e| op.kernel_error(e))?;
    Ok(Convert::RequantizeI16 {
        multiplier,
        rounding: op.options.rounding,
        input_zero_point: in_q.zero_point,
        output_zero_point: out_q.zero_point,
        wide,
    }
    .kernel(output.element_count()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run_f32_to_i8(convert: &Convert, input: &[f32]) -> Vec<i8> {
        let bytes: Vec<u8> = input.iter().flat_map(|x| x.to_ne_bytes()).collect();
        let mut out = vec![0u8; input.len()];
        convert.run(&bytes, &mut out).unwrap();
        out.into_iter().map(|b| b as i8).collect()
    }

    /// XNNPACK's QUANTIZE rounds ties to even where TFLite's rounds them
    /// away from zero: 2.5 and -2.5 steps give 2 and -2 (TFLite: 3, -3).
    #[test]
    fn xnnpack_quantize_rounds_ties_to_even_and_saturates() {
        let xnn = Convert::XnnpackQuantize {
            to: IntType::I8,
            inverse_scale: 1.0 / 0.5,
            zero_point: 1,
        };
        let tflite = Convert::Quantize {
            to: IntType::I8,
            scale: 0.5,
            zero_point: 1,
        };
        let input = [1.25f32, -1.25, 1.75, 1000.0, -1000.0, f32::NAN];
        assert_eq!(run_f32_to_i8(&xnn, &input), [3, -1, 5, 127, -128, 1]);
        assert_eq!(run_f32_to_i8(&tflite, &input)[..5], [4, -2, 5, 127, -128]);
    }

    /// XNNPACK's int8 requantize: 8 fraction bits, the 128 of the bias
    /// rounding half up; within one step of the real value everywhere.
    #[test]
    fn xnnpack_requantize_is_within_a_step_of_the_real_value() {
        let (in_scale, in_zp, out_scale, out_zp) = (0.03f32, -7, 0.05f32, 3);
        let ratio = in_scale / out_scale;
        let multiplier = qneon::quant::round_ties_even_f32(256.0 * ratio) as i32;
        assert_eq!(multiplier, 154); // 256 * 0.6 = 153.6
        let bias = (out_zp << 8) - multiplier * in_zp + 0x80;
        let convert = Convert::XnnpackRequantizeI8 { multiplier, bias };
        let input: Vec<u8> = (i8::MIN..=i8::MAX).map(|x| x as u8).collect();
        let mut out = vec![0u8; 256];
        convert.run(&input, &mut out).unwrap();
        for (&x, &y) in input.iter().zip(&out) {
            let real = (x as i8 as i32 - in_zp) as f64 * ratio as f64 + out_zp as f64;
            let y = y as i8 as f64;
            assert!(
                (y - real.clamp(-128.0, 127.0)).abs() <= 1.0,
                "{x}: {y} vs {real}"
            );
        }
        // x = 8: (768 + 1078 + 128 + 1232) >> 8 = 3206 >> 8 = 12.
        assert_eq!(out[136] as i8, 12); // input 8 (byte 136 of the sweep)
    }
}
