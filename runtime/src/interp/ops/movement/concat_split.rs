//! CONCATENATION and SPLIT: one copy per part between each part and its
//! columns of the joined tensor. A uint8 CONCATENATION of inputs quantized
//! apart from the output maps those inputs' bytes through the library's
//! [`ConcatRescale`] table instead (TFLite's `ConcatenationWithScaling`);
//! TFLite refuses int8 and int16 inputs quantized apart from the output.

use qneon_tflite::options::FusedActivation as TfActivation;
use qneon_tflite::Options as OpOptions;

use crate::error::Result;
use std::ops::Range;

use qneon::{Backend, ConcatRescale, RescaleFloat};
use qneon_tflite::TensorType;

use crate::interp::ops::buffers::Io;
use crate::interp::ops::kernel::{Kernel, PreparedOp};
use crate::interp::ops::op::Op;
use crate::interp::ops::strided_copy::StridedCopy;
use crate::interp::options::{Options, TfliteKernels};

/// A prepared CONCATENATION: input `i` through copy `i` into the output.
#[derive(Debug)]
pub(crate) struct Concat(Vec<StridedCopy>);

impl Kernel for Concat {
    /// Copies every input into its columns of the output.
    fn run_tiles(&self, _: Backend, _: Range<usize>, io: &mut Io<'_>) -> Result<(), String> {
        for (copy, input) in self.0.iter().zip(&io.ins) {
            copy.run(input, io.outs[0]);
        }
        Ok(())
    }
}

/// One input of a rescaling CONCATENATION: its rows of `row` bytes go to
/// column `column` of the output's rows, rescaled where the input is
/// quantized apart from the output.
#[derive(Debug)]
struct RescaledPart {
    row: usize,
    column: usize,
    rescale: Option<ConcatRescale>,
}

/// A prepared uint8 CONCATENATION with rescaled inputs.
#[derive(Debug)]
pub(crate) struct ConcatRescaled {
    outer: usize,
    joined_row: usize,
    parts: Vec<RescaledPart>,
}

impl Kernel for ConcatRescaled {
    /// Every input row into its columns of the output, rescaled or copied.
    fn run_tiles(&self, _: Backend, _: Range<usize>, io: &mut Io<'_>) -> Result<(), String> {
        let output = &mut *io.outs[0];
        for (part, input) in self.parts.iter().zip(&io.ins) {
            if input.len() != self.outer * part.row || output.len() != self.outer * self.joined_row
            {
                return Err(format!(
                    "concatenation buffers of {} and {} bytes for {} rows",
                    input.len(),
                    output.len(),
                    self.outer
                ));
            }
            for o in 0..self.outer {
                let src = &input[o * part.row..(o + 1) * part.row];
                let at = o * self.joined_row + part.column;
                let dst = &mut output[at..at + part.row];
                match &part.rescale {
                    Some(rescale) => rescale.run(src, dst).map_err(|e| e.to_string())?,
                    None => dst.copy_from_slice(src),
                }
            }
        }
        Ok(())
    }
}

/// How the kernel set evaluates `x * scale + bias` in its uint8 rescaling:
/// LiteRT's aarch64 build (the target of the optimized and XNNPACK paths;
/// the delegate leaves a rescaling CONCATENATION to the builtin kernels)
/// contracts it into one fused multiply-add; its x86-64 build, whose
/// reference kernels the reference path's references come from, rounds
/// twice (measured on `concat_uint8_rescale_tie`: the aarch64 XNNPACK
/// run's bytes are the fused ones, 2 of 352 off the x86 run's).
pub(crate) fn rescale_float(options: &Options) -> RescaleFloat {
    match options.kernels {
        TfliteKernels::Optimized | TfliteKernels::Xnnpack => RescaleFloat::Fused,
        TfliteKernels::Reference => RescaleFloat::Separate,
    }
}

/// What inspect says of CONCATENATION under `options`.
pub(crate) fn describe_concatenation(options: &Options, _: qneon_tflite::BuiltinOp) -> String {
    let float = match rescale_float(options) {
        RescaleFloat::Fused => "product and sum fused, as LiteRT's aarch64 build",
        RescaleFloat::Separate => "product and sum rounded apart, as LiteRT's x86-64 build",
    };
    format!("byte copies; uint8 inputs quantized apart from the output rescaled in f32 ({float})")
}

/// A prepared SPLIT: the data through copy `i` into output `i`.
#[derive(Debug)]
pub(crate) struct Split(Vec<StridedCopy>);

impl Kernel for Split {
    /// Copies the columns of the data (input 1) into every output.
    fn run_tiles(&self, _: Backend, _: Range<usize>, io: &mut Io<'_>) -> Result<(), String> {
        for (copy, output) in self.0.iter().zip(io.outs.iter_mut()) {
            copy.run(io.ins[1], output);
        }
        Ok(())
    }
}

/// TFLite's `Prepare` of CONCATENATION: inputs that match the output off
/// the axis and add up along it, quantized as the output.
pub(crate) fn prepare_concatenation(op: &Op<'_, '_>) -> Result<PreparedOp> {
    let n = op.operator.inputs().len();
    op.input_count(1, usize::MAX)?;
    op.output_count(1)?;
    let output = op.output(0)?;
    let elem = op.elem(output)?;
    let (axis, activation) = match op.operator.options() {
        OpOptions::Builtin(qneon_tflite::schema::BuiltinOptions::ConcatenationOptions(c)) => (
            c.axis as i64,
            TfActivation::from_code(c.fused_activation_function),
        ),
        _ => (0, TfActivation::None),
    };
    if activation != TfActivation::None {
        return Err(op.unsupported(format!("fused activation {activation}")));
    }
    let rank = output.shape().len();
    let axis = op.normalize_axis(axis, rank)?;
    let mut parts = Vec::with_capacity(n);
    let mut rescaled: Vec<(usize, ConcatRescale)> = Vec::new();
    for i in 0..n {
        let input = op.input(i)?;
        if input.dtype() != output.dtype() {
            return Err(op.unsupported_types());
        }
        let s = input.shape();
        if s.len() != rank || (0..rank).any(|d| d != axis && s[d] != output.shape()[d]) {
            return Err(op.invalid(format!(
                "input {i} shape {s:?} does not match the output {:?} off axis {axis}",
                output.shape()
            )));
        }
        // int8 and int16: TFLite requires every input quantized as the
        // output (no rescaling kernel); uint8 rescales the others.
        if output.dtype() == TensorType::Uint8 {
            let (q, out_q) = (
                op.per_tensor(input, &format!("input {i}"))?,
                op.per_tensor(output, "output")?,
            );
            if q != out_q {
                let rescale = ConcatRescale::new(q, out_q, rescale_float(op.options))
                    .map_err(|e| op.kernel_error(e))?;
                rescaled.push((i, rescale));
            }
        } else {
            op.quantization_equal(input, output)?;
        }
        parts.push(s[axis]);
    }
    if parts.iter().sum::<usize>() != output.shape()[axis] {
        return Err(op.invalid("the inputs' axis sizes do not add up to the output's"));
    }
    let outer: usize = output.shape()[..axis].iter().product();
    let inner: usize = output.shape()[axis + 1..].iter().product::<usize>() * elem;
    if !rescaled.is_empty() {
        let joined_row = output.shape()[axis] * inner;
        let mut column = 0;
        let mut kernel_parts = Vec::with_capacity(n);
        for (i, &part) in parts.iter().enumerate() {
            let rescale = rescaled.iter().position(|(j, _)| *j == i);
            kernel_parts.push(RescaledPart {
                row: part * inner,
                column,
                rescale: rescale.map(|k| rescaled[k].1.clone()),
            });
            column += part * inner;
        }
        let kernel = ConcatRescaled {
            outer,
            joined_row,
            parts: kernel_parts,
        };
        return Ok(PreparedOp::elements(kernel, output.element_count()));
    }
    let copies = join_parts(outer, inner, &parts, true).map_err(|e| op.copy_error(e))?;
    Ok(PreparedOp::elements(Concat(copies), output.element_count()))
}

/// TFLite's `Prepare` of SPLIT: a constant axis that `num_splits` outputs
/// divide evenly.
pub(crate) fn prepare_split(op: &Op<'_, '_>) -> Result<PreparedOp> {
    op.input_count(2, 2)?;
    let (axis_tensor, input) = (op.input(0)?, op.input(1)?);
    let axis = op.constant_ints(axis_tensor, "axis")?;
    let [axis] = axis[..] else {
        return Err(op.invalid("axis is not one value"));
    };
    let rank = input.shape().len();
    let axis = op.normalize_axis(axis, rank)?;
    let splits = match op.operator.options() {
        OpOptions::Builtin(qneon_tflite::schema::BuiltinOptions::SplitOptions(s)) => s.num_splits,
        _ => 0,
    };
    let n = op.operator.outputs().len();
    if splits <= 0 || splits as usize != n || input.shape()[axis] % n != 0 {
        return Err(op.invalid(format!(
            "num_splits {splits} with {n} outputs does not divide axis {axis} of {:?}",
            input.shape()
        )));
    }
    let elem = op.elem(input)?;
    let part = input.shape()[axis] / n;
    let mut expected = input.shape().to_vec();
    expected[axis] = part;
    for i in 0..n {
        let output = op.output(i)?;
        if output.dtype() != input.dtype() {
            return Err(op.unsupported_types());
        }
        op.expect_shape(output, &expected)?;
    }
    let outer: usize = input.shape()[..axis].iter().product();
    let inner: usize = input.shape()[axis + 1..].iter().product::<usize>() * elem;
    let copies = join_parts(outer, inner, &vec![part; n], false).map_err(|e| op.copy_error(e))?;
    Ok(PreparedOp::elements(Split(copies), input.element_count()))
}

/// CONCATENATION along `axis` (inputs to the output) or SPLIT (the input to
/// outputs): one copy per part, each part `[outer, part_axis * inner]`
/// placed at its column of the joined `[outer, total_axis * inner]`.
pub fn join_parts(
    outer: usize,
    inner_bytes: usize,
    part_axes: &[usize],
    into_joined: bool,
) -> Result<Vec<StridedCopy>, String> {
    let total: usize = part_axes.iter().sum();
    let joined_row = total * inner_bytes;
    let mut column = 0;
    let mut copies = Vec::with_capacity(part_axes.len());
    for &part in part_axes {
        let part_row = part * inner_bytes;
        let shape = [outer, part_row];
        let copy = if into_joined {
            StridedCopy::new(
                &shape,
                0,
                &[part_row as isize, 1],
                outer * part_row,
                column,
                &[joined_row, 1],
                outer * joined_row,
                1,
            )?
        } else {
            StridedCopy::new(
                &shape,
                column as isize,
                &[joined_row as isize, 1],
                outer * joined_row,
                0,
                &[part_row, 1],
                outer * part_row,
                1,
            )?
        };
        copies.push(copy);
        column += part_row;
    }
    Ok(copies)
}
