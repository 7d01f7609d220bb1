//! TRANSPOSE: output dimension `d` is input dimension `perm[d]`, one
//! strided copy.

use std::ops::Range;

use super::bands::RowBands;
use crate::error::Result;
use crate::interp::ops::kernel::PreparedOp;
use crate::interp::ops::op::Op;
use crate::interp::ops::strided_copy::{contiguous_strides, StridedCopy};

/// TFLite's `Prepare` of TRANSPOSE: a constant permutation of at most 6
/// axes, and the output shape it gives.
pub(crate) fn prepare(op: &Op<'_, '_>) -> Result<PreparedOp> {
    op.input_count(2, 2)?;
    op.output_count(1)?;
    let (input, output) = (op.input(0)?, op.output(0)?);
    if input.dtype() != output.dtype() {
        return Err(op.unsupported_types());
    }
    let elem = op.elem(input)?;
    let rank = input.shape().len();
    if rank > 6 {
        return Err(op.unsupported(format!("rank {rank} (at most 6)")));
    }
    let perm = op.constant_ints(op.input(1)?, "permutation")?;
    let mut seen = vec![false; rank];
    let perm: Vec<usize> = perm
        .iter()
        .map(|&p| {
            let p = if p < 0 { p + rank as i64 } else { p };
            usize::try_from(p)
                .ok()
                .filter(|&p| p < rank && !std::mem::replace(&mut seen[p], true))
        })
        .collect::<Option<Vec<usize>>>()
        .filter(|p| p.len() == rank)
        .ok_or_else(|| op.invalid(format!("{perm:?} is not a permutation of {rank} axes")))?;
    let expected: Vec<usize> = perm.iter().map(|&p| input.shape()[p]).collect();
    op.expect_shape(output, &expected)?;
    let bands = transpose_bands(input.shape(), &perm, output.shape(), elem)
        .map_err(|e| op.copy_error(e))?;
    Ok(PreparedOp::elements(bands, output.element_count()))
}

/// TRANSPOSE cut into bands of output rows for threads ([`RowBands`]).
pub(crate) fn transpose_bands(
    input_shape: &[usize],
    perm: &[usize],
    output_shape: &[usize],
    elem: usize,
) -> Result<RowBands, String> {
    let whole = transpose(input_shape, perm, output_shape, elem)?;
    RowBands::new(whole, output_shape, elem, None, |dim, rows| {
        transpose_rows(input_shape, perm, output_shape, elem, (dim, rows)).map(Some)
    })
}

/// TRANSPOSE: output dimension `d` is input dimension `perm[d]`.
pub fn transpose(
    input_shape: &[usize],
    perm: &[usize],
    output_shape: &[usize],
    elem: usize,
) -> Result<StridedCopy, String> {
    let rows = 0..output_shape.first().copied().unwrap_or(1);
    transpose_rows(input_shape, perm, output_shape, elem, (0, rows))
}

/// The part of TRANSPOSE that writes indices `rows` of output dimension
/// `dim` (all of the other dimensions).
fn transpose_rows(
    input_shape: &[usize],
    perm: &[usize],
    output_shape: &[usize],
    elem: usize,
    (dim, rows): (usize, Range<usize>),
) -> Result<StridedCopy, String> {
    let in_strides = contiguous_strides(input_shape, elem);
    let src: Vec<isize> = perm.iter().map(|&p| in_strides[p] as isize).collect();
    let dst = contiguous_strides(output_shape, elem);
    let bytes = |shape: &[usize]| shape.iter().product::<usize>() * elem;
    let mut shape = output_shape.to_vec();
    let (mut src_start, mut dst_start) = (0, 0);
    if let Some(n) = shape.get_mut(dim) {
        *n = rows.len();
        src_start = src[dim] * rows.start as isize;
        dst_start = dst[dim] * rows.start;
    }
    StridedCopy::new(
        &shape,
        src_start,
        &src,
        bytes(input_shape),
        dst_start,
        &dst,
        bytes(output_shape),
        elem,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::interp::ops::strided_copy::copied as run;

    #[test]
    fn transpose_rank2_and_rank4() {
        let src: Vec<u8> = (0..6).collect();
        let copy = transpose(&[2, 3], &[1, 0], &[3, 2], 1).unwrap();
        assert_eq!(run(&copy, &src, 6), vec![0, 3, 1, 4, 2, 5]);
        // [1, 2, 3, 2] -> perm [0, 2, 1, 3] -> [1, 3, 2, 2]
        let src: Vec<u8> = (0..12).collect();
        let copy = transpose(&[1, 2, 3, 2], &[0, 2, 1, 3], &[1, 3, 2, 2], 1).unwrap();
        assert_eq!(
            run(&copy, &src, 12),
            vec![0, 1, 6, 7, 2, 3, 8, 9, 4, 5, 10, 11]
        );
    }

    /// NCHW to NHWC with few channels (MobileNetV2's input: the copy runs
    /// along the width, not the 3 channels) and other permutations whose
    /// innermost axis is short, against the index arithmetic, for 1- and
    /// 2-byte elements.
    #[test]
    fn transpose_short_innermost_axis() {
        // The last flag: bytes of 2 to 4 planes and at least 16 pixels, which
        // run through the library's structured loads and stores.
        let cases: [([usize; 4], [usize; 4], bool); 9] = [
            ([1, 3, 5, 20], [0, 2, 3, 1], true),
            ([2, 3, 7, 17], [0, 2, 3, 1], true),
            ([4, 18, 2, 3], [2, 0, 3, 1], false),
            ([1, 20, 19, 2], [0, 3, 2, 1], false),
            ([1, 4, 6, 9], [0, 2, 3, 1], true),
            ([2, 2, 5, 7], [0, 2, 3, 1], true),
            ([1, 2, 3, 5], [0, 2, 3, 1], false),
            ([1, 6, 9, 3], [0, 3, 1, 2], true),
            ([2, 5, 7, 4], [0, 3, 1, 2], true),
        ];
        for (shape, perm, planes) in cases {
            for elem in [1, 2] {
                let n: usize = shape.iter().product();
                let src: Vec<u8> = (0..n * elem).map(|i| (i * 7 % 251) as u8).collect();
                let out_shape: Vec<usize> = perm.iter().map(|&p| shape[p]).collect();
                let copy = transpose(&shape, &perm, &out_shape, elem).unwrap();
                assert_eq!(
                    copy.moves_planes(),
                    planes && elem == 1,
                    "{shape:?} {perm:?}"
                );
                let got = run(&copy, &src, n * elem);
                let mut want = vec![0u8; n * elem];
                let in_strides = contiguous_strides(&shape, 1);
                let mut o = 0;
                for a in 0..out_shape[0] {
                    for b in 0..out_shape[1] {
                        for c in 0..out_shape[2] {
                            for d in 0..out_shape[3] {
                                let idx = [a, b, c, d];
                                let i: usize = (0..4).map(|k| idx[k] * in_strides[perm[k]]).sum();
                                want[o * elem..][..elem].copy_from_slice(&src[i * elem..][..elem]);
                                o += 1;
                            }
                        }
                    }
                }
                assert_eq!(got, want, "{shape:?} {perm:?} elem {elem}");
            }
        }
    }
}
