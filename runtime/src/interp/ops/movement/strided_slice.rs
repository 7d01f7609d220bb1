//! STRIDED_SLICE as TFLite computes the range of each axis, one strided
//! copy (negative strides read backwards).

use qneon_tflite::Options as OpOptions;

use crate::error::Result;
use crate::interp::ops::kernel::PreparedOp;
use crate::interp::ops::op::Op;
use crate::interp::ops::strided_copy::{contiguous_strides, StridedCopy};

/// TFLite's `Prepare` of STRIDED_SLICE: constant begin, end and strides,
/// no ellipsis or new axes, the output shape after shrinking.
pub(crate) fn prepare(op: &Op<'_, '_>) -> Result<PreparedOp> {
    op.input_count(4, 4)?;
    op.output_count(1)?;
    let (input, output) = (op.input(0)?, op.output(0)?);
    if input.dtype() != output.dtype() {
        return Err(op.unsupported_types());
    }
    let elem = op.elem(input)?;
    let o = match op.operator.options() {
        OpOptions::Builtin(qneon_tflite::schema::BuiltinOptions::StridedSliceOptions(o)) => {
            (**o).clone()
        }
        _ => Default::default(),
    };
    if o.ellipsis_mask != 0 || o.new_axis_mask != 0 || o.offset {
        return Err(op.unsupported(format!(
            "ellipsis_mask {}, new_axis_mask {}, offset {} (only 0, 0, false)",
            o.ellipsis_mask, o.new_axis_mask, o.offset
        )));
    }
    let rank = input.shape().len();
    let ints = |i: usize, what: &str| -> Result<Vec<i32>> {
        let v = op.constant_ints(op.input(i)?, what)?;
        v.iter()
            .map(|&x| i32::try_from(x).map_err(|_| op.invalid(format!("{what} {x} overflows"))))
            .collect()
    };
    let (begin, end, strides) = (ints(1, "begin")?, ints(2, "end")?, ints(3, "strides")?);
    if begin.len() != end.len() || begin.len() != strides.len() || begin.len() > rank {
        return Err(op.invalid(format!(
            "begin, end and strides have {}, {} and {} entries for a rank-{rank} input",
            begin.len(),
            end.len(),
            strides.len()
        )));
    }
    let (copy, shape) = strided_slice(
        input.shape(),
        &begin,
        &end,
        &strides,
        o.begin_mask,
        o.end_mask,
        o.shrink_axis_mask,
        elem,
    )
    .map_err(|e| op.invalid(e))?;
    let expected: Vec<usize> = shape
        .iter()
        .enumerate()
        .filter(|&(axis, _)| axis >= 32 || o.shrink_axis_mask & (1 << axis) == 0)
        .map(|(_, &n)| n)
        .collect();
    op.expect_shape(output, &expected)?;
    op.quantization_equal(input, output)?;
    Ok(PreparedOp::elements(copy, output.element_count()))
}

/// STRIDED_SLICE as TFLite computes the range of each axis (begin, end and
/// shrink masks; negative indices count from the end; clamping). Returns the
/// copy and the output shape before shrinking.
#[allow(clippy::too_many_arguments)]
pub fn strided_slice(
    input_shape: &[usize],
    begin: &[i32],
    end: &[i32],
    strides: &[i32],
    begin_mask: i32,
    end_mask: i32,
    shrink_mask: i32,
    elem: usize,
) -> Result<(StridedCopy, Vec<usize>), String> {
    let rank = input_shape.len();
    let in_strides = contiguous_strides(input_shape, elem);
    let mut shape = Vec::with_capacity(rank);
    let mut src_strides = Vec::with_capacity(rank);
    let mut start_offset = 0isize;
    for axis in 0..rank {
        let size = input_shape[axis] as i64;
        // Axes past the given vectors are taken whole.
        let (b, e, s) = if axis < begin.len() {
            (begin[axis] as i64, end[axis] as i64, strides[axis] as i64)
        } else {
            (0, size, 1)
        };
        let bit = |mask: i32| axis < 32 && mask & (1 << axis) != 0;
        if s == 0 {
            return Err(format!("stride 0 on axis {axis}"));
        }
        let (start, stop, step) = if bit(shrink_mask) {
            // One element at `begin`, whatever `end`, stride and masks say.
            let start = if b < 0 { b + size } else { b };
            if !(0..size).contains(&start) {
                return Err(format!("shrunk axis {axis} index {b} is outside 0..{size}"));
            }
            (start, start + 1, 1)
        } else {
            let mut start = if bit(begin_mask) {
                if s > 0 {
                    0
                } else {
                    size - 1
                }
            } else if b < 0 {
                b + size
            } else {
                b
            };
            let mut stop = if bit(end_mask) {
                if s > 0 {
                    size
                } else {
                    -1
                }
            } else if e < 0 {
                e + size
            } else {
                e
            };
            if s > 0 {
                start = start.clamp(0, size);
                stop = stop.clamp(0, size);
            } else {
                start = start.clamp(-1, size - 1);
                stop = stop.clamp(-1, size - 1);
            }
            (start, stop, s)
        };
        let count = if step > 0 {
            if stop > start {
                (stop - start + step - 1) / step
            } else {
                0
            }
        } else if start > stop {
            (start - stop + (-step) - 1) / (-step)
        } else {
            0
        };
        shape.push(count as usize);
        if count > 0 {
            start_offset += start as isize * in_strides[axis] as isize;
        }
        src_strides.push(step as isize * in_strides[axis] as isize);
    }
    let in_bytes = input_shape.iter().product::<usize>() * elem;
    let out_bytes = shape.iter().product::<usize>() * elem;
    let copy = StridedCopy::new(
        &shape,
        start_offset,
        &src_strides,
        in_bytes,
        0,
        &contiguous_strides(&shape, elem),
        out_bytes,
        elem,
    )?;
    Ok((copy, shape))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::interp::ops::strided_copy::copied as run;

    #[test]
    fn strided_slice_reverses_and_shrinks() {
        let src: Vec<u8> = (0..12).collect();
        // x[1, ::-1] of [3, 4]: shrink axis 0, reverse axis 1.
        let (copy, shape) = strided_slice(&[3, 4], &[1, 0], &[2, 0], &[1, -1], 2, 2, 1, 1).unwrap();
        assert_eq!(shape, vec![1, 4]);
        assert_eq!(run(&copy, &src, 4), vec![7, 6, 5, 4]);
        // x[:, 1:4:2]
        let (copy, shape) = strided_slice(&[3, 4], &[0, 1], &[0, 4], &[1, 2], 1, 1, 0, 1).unwrap();
        assert_eq!(shape, vec![3, 2]);
        assert_eq!(run(&copy, &src, 6), vec![1, 3, 5, 7, 9, 11]);
    }
}
