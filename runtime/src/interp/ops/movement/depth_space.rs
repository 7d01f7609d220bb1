//! SPACE_TO_DEPTH and DEPTH_TO_SPACE: one rank-6 transpose each. With block
//! `b`, SPACE_TO_DEPTH reads the NHWC input as `[N, H/b, b, W/b, b, C]` and
//! writes `[N, H/b, W/b, b, b, C]`, which is the output `[N, H/b, W/b,
//! b b C]` in memory; DEPTH_TO_SPACE reads `[N, H, W, b, b, C']` and writes
//! `[N, H, b, W, b, C']`, the output `[N, H b, W b, C']` (TFLite's
//! depth-column-row order: channel `(i b + j) C' + c` goes to row `i`,
//! column `j` of the block). Bytes only, so every dtype and kernel set.

use qneon_tflite::schema::BuiltinOptions;
use qneon_tflite::Options as OpOptions;

use super::transpose::transpose;
use crate::error::Result;
use crate::interp::ops::kernel::PreparedOp;
use crate::interp::ops::op::Op;

/// The two directions.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Direction {
    SpaceToDepth,
    DepthToSpace,
}

/// The block exchange's axes, read as six: both directions swap axes 2 and 3.
const SWAP_MIDDLE: [usize; 6] = [0, 1, 3, 2, 4, 5];

/// TFLite's `Prepare` of SPACE_TO_DEPTH.
pub(crate) fn prepare_space_to_depth(op: &Op<'_, '_>) -> Result<PreparedOp> {
    prepare(op, Direction::SpaceToDepth)
}

/// TFLite's `Prepare` of DEPTH_TO_SPACE.
pub(crate) fn prepare_depth_to_space(op: &Op<'_, '_>) -> Result<PreparedOp> {
    prepare(op, Direction::DepthToSpace)
}

/// The checks TFLite makes (rank 4, equal types, a block size above 0 that
/// divides the height and width, or for DEPTH_TO_SPACE the depth by its
/// square), the output shape they give, and the copy.
fn prepare(op: &Op<'_, '_>, direction: Direction) -> Result<PreparedOp> {
    op.input_count(1, 1)?;
    op.output_count(1)?;
    let (input, output) = (op.input(0)?, op.output(0)?);
    if input.dtype() != output.dtype() {
        return Err(op.unsupported_types());
    }
    let elem = op.elem(input)?;
    let block = match (direction, op.operator.options()) {
        (Direction::SpaceToDepth, OpOptions::Builtin(BuiltinOptions::SpaceToDepthOptions(o))) => {
            o.block_size
        }
        (Direction::DepthToSpace, OpOptions::Builtin(BuiltinOptions::DepthToSpaceOptions(o))) => {
            o.block_size
        }
        _ => 0,
    };
    let b = usize::try_from(block)
        .ok()
        .filter(|&b| b > 0)
        .ok_or_else(|| op.invalid(format!("block size {block} (must be > 0)")))?;
    let &[n, h, w, c] = input.shape() else {
        return Err(op.invalid(format!(
            "input shape {:?} is not rank 4 (NHWC)",
            input.shape()
        )));
    };
    let (view, expected) = match direction {
        Direction::SpaceToDepth => {
            if h % b != 0 || w % b != 0 {
                return Err(op.invalid(format!(
                    "block size {b} does not divide the input's height {h} and width {w}"
                )));
            }
            let depth = c
                .checked_mul(b * b)
                .ok_or_else(|| op.invalid("output depth overflows"))?;
            ([n, h / b, b, w / b, b, c], [n, h / b, w / b, depth])
        }
        Direction::DepthToSpace => {
            let square = b
                .checked_mul(b)
                .ok_or_else(|| op.invalid("block size overflows"))?;
            if c % square != 0 {
                return Err(op.invalid(format!(
                    "block size {b} squared does not divide the input's depth {c}"
                )));
            }
            let (hb, wb) = match (h.checked_mul(b), w.checked_mul(b)) {
                (Some(hb), Some(wb)) => (hb, wb),
                _ => return Err(op.invalid("output height or width overflows")),
            };
            ([n, h, w, b, b, c / square], [n, hb, wb, c / square])
        }
    };
    op.expect_shape(output, &expected)?;
    let swapped: Vec<usize> = SWAP_MIDDLE.iter().map(|&a| view[a]).collect();
    let copy = transpose(&view, &SWAP_MIDDLE, &swapped, elem).map_err(|e| op.copy_error(e))?;
    Ok(PreparedOp::elements(copy, output.element_count()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::interp::ops::strided_copy::copied as run;

    /// The element formulas of the two ops, written out per index.
    fn space_to_depth_naive(src: &[u8], [n, h, w, c]: [usize; 4], b: usize) -> Vec<u8> {
        let (oh, ow, oc) = (h / b, w / b, c * b * b);
        let mut out = vec![0; src.len()];
        for i in 0..n {
            for y in 0..h {
                for x in 0..w {
                    for k in 0..c {
                        let oc_index = ((y % b) * b + x % b) * c + k;
                        let o = ((i * oh + y / b) * ow + x / b) * oc + oc_index;
                        out[o] = src[((i * h + y) * w + x) * c + k];
                    }
                }
            }
        }
        out
    }

    #[test]
    fn both_directions_match_the_element_formula_and_invert_each_other() {
        for (shape, b) in [([1, 4, 6, 3], 2), ([2, 6, 3, 1], 3), ([1, 2, 2, 5], 1)] {
            let [n, h, w, c] = shape;
            let len = n * h * w * c;
            let src: Vec<u8> = (0..len).map(|i| (i * 7 % 251) as u8).collect();
            let view = [n, h / b, b, w / b, b, c];
            let swapped: Vec<usize> = SWAP_MIDDLE.iter().map(|&a| view[a]).collect();
            let s2d = transpose(&view, &SWAP_MIDDLE, &swapped, 1).unwrap();
            let packed = run(&s2d, &src, len);
            assert_eq!(packed, space_to_depth_naive(&src, shape, b));
            let back_view = [n, h / b, w / b, b, b, c];
            let back_swapped: Vec<usize> = SWAP_MIDDLE.iter().map(|&a| back_view[a]).collect();
            let d2s = transpose(&back_view, &SWAP_MIDDLE, &back_swapped, 1).unwrap();
            assert_eq!(run(&d2s, &packed, len), src, "{shape:?} block {b}");
        }
    }
}
