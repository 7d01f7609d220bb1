//! PAD and PADV2: the output filled with the pad value (PAD: the zero point
//! of a quantized type, else 0; PADV2: its one-element constant value
//! tensor, quantized as the output), then the input copied into its
//! interior.

use qneon_tflite::{BuiltinOp, Tensor, TensorType};

use crate::error::Result;
use std::ops::Range;

use qneon::Backend;

use crate::interp::ops::buffers::Io;
use crate::interp::ops::kernel::{Kernel, PreparedOp};
use crate::interp::ops::op::Op;
use crate::interp::ops::strided_copy::{contiguous_strides, signed, StridedCopy};

/// A prepared PAD.
#[derive(Debug)]
pub(crate) struct Pad {
    /// The input into the output's interior.
    copy: StridedCopy,
    /// One element's bytes of the pad value.
    fill: Vec<u8>,
}

impl Kernel for Pad {
    /// Fills the output, then copies the input into its interior.
    fn run_tiles(&self, _: Backend, _: Range<usize>, io: &mut Io<'_>) -> Result<(), String> {
        let output = &mut *io.outs[0];
        fill_with(output, &self.fill);
        self.copy.run(io.ins[0], output);
        Ok(())
    }
}

/// `output` filled with copies of `pattern` (one element), whole ones only:
/// a memset for one-byte elements, else the pattern then copies of what is
/// already filled, doubling (element by element it cost MobileNetV2's 18
/// PADs 63% of the model's instructions, 32 per element).
fn fill_with(output: &mut [u8], pattern: &[u8]) {
    if let [byte] = pattern {
        output.fill(*byte);
        return;
    }
    let whole = output.len() / pattern.len().max(1) * pattern.len();
    let output = &mut output[..whole];
    if output.is_empty() {
        return;
    }
    output[..pattern.len()].copy_from_slice(pattern);
    let mut filled = pattern.len();
    while filled < output.len() {
        let take = filled.min(output.len() - filled);
        output.copy_within(..take, filled);
        filled += take;
    }
}

/// TFLite's `Prepare` of PAD and PADV2: constant non-negative paddings, the
/// padded output shape, and the pad value.
pub(crate) fn prepare(op: &Op<'_, '_>) -> Result<PreparedOp> {
    if op.builtin == BuiltinOp::PADV2 {
        op.input_count(3, 3)?;
    } else {
        op.input_count(2, 2)?;
    }
    op.output_count(1)?;
    let (input, output) = (op.input(0)?, op.output(0)?);
    if input.dtype() != output.dtype() {
        return Err(op.unsupported_types());
    }
    let elem = op.elem(input)?;
    let rank = input.shape().len();
    let paddings = op.constant_ints(op.input(1)?, "paddings")?;
    if paddings.len() != 2 * rank || paddings.iter().any(|&p| p < 0) {
        return Err(op.invalid(format!(
            "paddings {paddings:?} are not {rank} non-negative (before, after) pairs"
        )));
    }
    let before: Vec<usize> = (0..rank).map(|d| paddings[2 * d] as usize).collect();
    let expected: Vec<usize> = (0..rank)
        .map(|d| input.shape()[d] + before[d] + paddings[2 * d + 1] as usize)
        .collect();
    op.expect_shape(output, &expected)?;
    let quantized = matches!(
        input.dtype(),
        TensorType::Int8 | TensorType::Uint8 | TensorType::Int16
    );
    if quantized {
        op.quantization_equal(input, output)?;
    }
    let fill: Vec<u8> = match op.optional_input(2) {
        Some(value) if op.builtin == BuiltinOp::PADV2 => pad_value(op, value, output, elem)?,
        // PAD: the output zero point for quantized types, else 0.
        _ if quantized => {
            let zero_point = op.per_tensor(output, "output")?.zero_point;
            match input.dtype() {
                TensorType::Int16 => (zero_point as i16).to_le_bytes().to_vec(),
                _ => vec![zero_point as u8],
            }
        }
        _ => vec![0; elem],
    };
    let copy = pad(input.shape(), &before, output.shape(), elem).map_err(|e| op.copy_error(e))?;
    Ok(PreparedOp::elements(
        Pad { copy, fill },
        output.element_count(),
    ))
}

/// PADV2's pad value, one element's bytes: TFLite requires one element of
/// the input's type and, for quantized types, the output's scale and zero
/// point (the stored value is then copied as it is).
fn pad_value(
    op: &Op<'_, '_>,
    value: &Tensor<'_>,
    output: &Tensor<'_>,
    elem: usize,
) -> Result<Vec<u8>> {
    if value.dtype() != output.dtype() {
        return Err(op.invalid(format!(
            "constant value has dtype {}, the input's is {} (TFLite requires them equal)",
            value.dtype().name(),
            output.dtype().name()
        )));
    }
    if value.element_count() != 1 {
        return Err(op.invalid(format!(
            "constant value has {} elements, TFLite requires 1",
            value.element_count()
        )));
    }
    if matches!(
        output.dtype(),
        TensorType::Int8 | TensorType::Uint8 | TensorType::Int16
    ) {
        let (v, o) = (
            op.per_tensor(value, "constant value")?,
            op.per_tensor(output, "output")?,
        );
        if v != o {
            return Err(op.invalid(format!(
                "constant value quantization {v:?} differs from the output's {o:?} (TFLite \
                 requires them equal)"
            )));
        }
    }
    if !value.is_constant() {
        return Err(op.unsupported("constant value must be constant (dynamic pad value)"));
    }
    match value.data() {
        Some(bytes) if bytes.len() == elem => Ok(bytes.to_vec()),
        _ => Err(op.invalid("constant value has no data of one element")),
    }
}

/// PAD: the input copied into the interior of the output; the caller fills
/// the output with the pad value first.
pub fn pad(
    input_shape: &[usize],
    before: &[usize],
    output_shape: &[usize],
    elem: usize,
) -> Result<StridedCopy, String> {
    let out_strides = contiguous_strides(output_shape, elem);
    let dst_start = before.iter().zip(&out_strides).map(|(&b, &s)| b * s).sum();
    let in_strides = contiguous_strides(input_shape, elem);
    StridedCopy::new(
        input_shape,
        0,
        &signed(&in_strides),
        input_shape.iter().product::<usize>() * elem,
        dst_start,
        &out_strides,
        output_shape.iter().product::<usize>() * elem,
        elem,
    )
}

#[cfg(test)]
mod tests {
    use super::fill_with;

    #[test]
    fn fill_repeats_the_element_over_whole_elements_only() {
        for (len, pattern) in [(7, &[9u8][..]), (10, &[1, 2][..]), (13, &[5, 6, 7, 8][..])] {
            let mut out = vec![0xEE; len];
            fill_with(&mut out, pattern);
            let whole = len / pattern.len() * pattern.len();
            for (i, &b) in out.iter().enumerate() {
                let expected = if i < whole {
                    pattern[i % pattern.len()]
                } else {
                    0xEE
                };
                assert_eq!(b, expected, "{len} {pattern:?} at {i}");
            }
        }
    }
}
