//! Data movement: RESHAPE, TRANSPOSE, GATHER, STRIDED_SLICE, PAD,
//! CONCATENATION, SPLIT, and the broadcast of an operand to an output shape.
//! No arithmetic: bytes are copied in elements of the tensor's size, so one
//! implementation serves every dtype.
//!
//! Every copy is planned at load ([`StridedCopy`]): the byte ranges it can
//! touch are checked against the tensors' declared sizes there, so the copy
//! itself indexes in bounds.

/// A copy from a strided source to a strided destination over `shape`
/// (element `idx` goes from `src_start + sum idx[d] * src_strides[d]` to
/// `dst_start + sum idx[d] * dst_strides[d]`, offsets in bytes). The source
/// stride may be negative (a reversed slice) or zero (a broadcast).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StridedCopy {
    shape: Vec<usize>,
    src_start: isize,
    src_strides: Vec<isize>,
    dst_start: usize,
    dst_strides: Vec<usize>,
    elem: usize,
}

impl StridedCopy {
    /// Plans the copy; `problem` unless every touched byte lies inside
    /// `src_len` and `dst_len`. Dimensions of size 1 are dropped and
    /// contiguous trailing dimensions merged, so the inner loop copies runs
    /// as long as possible.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        shape: &[usize],
        src_start: isize,
        src_strides: &[isize],
        src_len: usize,
        dst_start: usize,
        dst_strides: &[usize],
        dst_len: usize,
        elem: usize,
    ) -> Result<StridedCopy, String> {
        debug_assert!(shape.len() == src_strides.len() && shape.len() == dst_strides.len());
        let count: usize = shape.iter().product();
        let mut plan = StridedCopy {
            shape: Vec::new(),
            src_start,
            src_strides: Vec::new(),
            dst_start,
            dst_strides: Vec::new(),
            elem,
        };
        if count == 0 {
            return Ok(plan);
        }
        // Bounds of the touched bytes, in i128 so that nothing overflows.
        let (mut src_lo, mut src_hi) = (src_start as i128, src_start as i128);
        let mut dst_hi = dst_start as i128;
        for ((&n, &s), &d) in shape.iter().zip(src_strides).zip(dst_strides) {
            let span = (n as i128 - 1) * s as i128;
            if span < 0 {
                src_lo += span;
            } else {
                src_hi += span;
            }
            dst_hi += (n as i128 - 1) * d as i128;
        }
        if src_lo < 0 || src_hi + elem as i128 > src_len as i128 {
            return Err(format!(
                "reads bytes {src_lo}..{} of a {src_len}-byte tensor",
                src_hi + elem as i128
            ));
        }
        if dst_hi + elem as i128 > dst_len as i128 {
            return Err(format!(
                "writes up to byte {} of a {dst_len}-byte tensor",
                dst_hi + elem as i128
            ));
        }
        for ((&n, &s), &d) in shape.iter().zip(src_strides).zip(dst_strides) {
            if n == 1 {
                continue;
            }
            // Merge into the previous dimension when that one steps exactly
            // over this whole dimension on both sides.
            if let (Some(&last_s), Some(&last_d)) =
                (plan.src_strides.last(), plan.dst_strides.last())
            {
                let (ls, ld) = (last_s, last_d);
                if ls == s * n as isize && ld == d * n && plan.shape.last().is_some() {
                    let merged = plan.shape.pop().unwrap() * n;
                    plan.shape.push(merged);
                    *plan.src_strides.last_mut().unwrap() = s;
                    *plan.dst_strides.last_mut().unwrap() = d;
                    continue;
                }
            }
            plan.shape.push(n);
            plan.src_strides.push(s);
            plan.dst_strides.push(d);
        }
        Ok(plan)
    }

    /// Runs the copy (bounds checked by [`new`](Self::new)).
    pub fn run(&self, src: &[u8], dst: &mut [u8]) {
        let elem = self.elem;
        let rank = self.shape.len();
        if rank == 0 {
            let s = self.src_start as usize;
            dst[self.dst_start..self.dst_start + elem].copy_from_slice(&src[s..s + elem]);
            return;
        }
        if self.shape.contains(&0) {
            return;
        }
        let inner = self.shape[rank - 1];
        let (inner_s, inner_d) = (self.src_strides[rank - 1], self.dst_strides[rank - 1]);
        let contiguous = inner_s == elem as isize && inner_d == elem;
        let mut index = vec![0usize; rank - 1];
        let (mut src_at, mut dst_at) = (self.src_start, self.dst_start);
        loop {
            if contiguous {
                let s = src_at as usize;
                let bytes = inner * elem;
                dst[dst_at..dst_at + bytes].copy_from_slice(&src[s..s + bytes]);
            } else if elem == 1 && inner_d == 1 {
                // The common int8 case: a strided gather into a run.
                let out = &mut dst[dst_at..dst_at + inner];
                let mut s = src_at;
                for o in out {
                    *o = src[s as usize];
                    s += inner_s;
                }
            } else {
                let (mut s, mut d) = (src_at, dst_at);
                for _ in 0..inner {
                    let su = s as usize;
                    dst[d..d + elem].copy_from_slice(&src[su..su + elem]);
                    s += inner_s;
                    d += inner_d;
                }
            }
            // Odometer over the outer dimensions.
            let mut axis = rank - 1;
            loop {
                if axis == 0 {
                    return;
                }
                axis -= 1;
                index[axis] += 1;
                src_at += self.src_strides[axis];
                dst_at += self.dst_strides[axis];
                if index[axis] < self.shape[axis] {
                    break;
                }
                src_at -= self.src_strides[axis] * self.shape[axis] as isize;
                dst_at -= self.dst_strides[axis] * self.shape[axis];
                index[axis] = 0;
            }
        }
    }
}

/// Row-major byte strides of `shape` for elements of `elem` bytes.
pub fn contiguous_strides(shape: &[usize], elem: usize) -> Vec<usize> {
    let mut strides = vec![0; shape.len()];
    let mut step = elem;
    for d in (0..shape.len()).rev() {
        strides[d] = step;
        step *= shape[d];
    }
    strides
}

fn signed(strides: &[usize]) -> Vec<isize> {
    strides.iter().map(|&s| s as isize).collect()
}

/// TRANSPOSE: output dimension `d` is input dimension `perm[d]`.
pub fn transpose(
    input_shape: &[usize],
    perm: &[usize],
    output_shape: &[usize],
    elem: usize,
) -> Result<StridedCopy, String> {
    let in_strides = contiguous_strides(input_shape, elem);
    let src: Vec<isize> = perm.iter().map(|&p| in_strides[p] as isize).collect();
    let bytes = |shape: &[usize]| shape.iter().product::<usize>() * elem;
    StridedCopy::new(
        output_shape,
        0,
        &src,
        bytes(input_shape),
        0,
        &contiguous_strides(output_shape, elem),
        bytes(output_shape),
        elem,
    )
}

/// The broadcast of an operand of shape `shape` to `output_shape` (TFLite's
/// rule: shapes aligned at the last dimension, each dimension equal or 1).
pub fn broadcast(
    shape: &[usize],
    output_shape: &[usize],
    elem: usize,
) -> Result<StridedCopy, String> {
    let rank = output_shape.len();
    let pad = rank - shape.len();
    let strides = contiguous_strides(shape, elem);
    let src: Vec<isize> = (0..rank)
        .map(|d| {
            if d < pad || shape[d - pad] == 1 {
                0
            } else {
                strides[d - pad] as isize
            }
        })
        .collect();
    let count = |s: &[usize]| s.iter().product::<usize>() * elem;
    StridedCopy::new(
        output_shape,
        0,
        &src,
        count(shape),
        0,
        &contiguous_strides(output_shape, elem),
        count(output_shape),
        elem,
    )
}

/// TFLite's broadcast output shape of two operands, or why there is none.
pub fn broadcast_shape(a: &[usize], b: &[usize]) -> Result<Vec<usize>, String> {
    let rank = a.len().max(b.len());
    let dim = |s: &[usize], d: usize| -> usize {
        let pad = rank - s.len();
        if d < pad {
            1
        } else {
            s[d - pad]
        }
    };
    (0..rank)
        .map(|d| {
            let (x, y) = (dim(a, d), dim(b, d));
            if x == y || y == 1 {
                Ok(x)
            } else if x == 1 {
                Ok(y)
            } else {
                Err(format!("shapes {a:?} and {b:?} do not broadcast"))
            }
        })
        .collect()
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

/// A prepared GATHER (TFLite's `axis` and `batch_dims`).
#[derive(Clone, Debug)]
pub struct Gather {
    /// Product of the batch dimensions.
    pub batch: usize,
    /// Product of the dimensions between the batch ones and `axis`.
    pub outer: usize,
    /// Size of the gathered axis (indices must lie in `0..axis_size`).
    pub axis_size: usize,
    /// Indices per batch.
    pub coords: usize,
    /// Bytes of one gathered slice (the dimensions after `axis`).
    pub inner_bytes: usize,
}

impl Gather {
    /// Copies the slices `indices` pick; an error naming the first index
    /// outside `0..axis_size` (TFLite fails the same way at run time).
    pub fn run(&self, params: &[u8], indices: &[i32], output: &mut [u8]) -> Result<(), String> {
        let n = self.inner_bytes;
        for b in 0..self.batch {
            for o in 0..self.outer {
                let table = (b * self.outer + o) * self.axis_size;
                for c in 0..self.coords {
                    let raw = indices[b * self.coords + c];
                    let index = usize::try_from(raw)
                        .ok()
                        .filter(|&i| i < self.axis_size)
                        .ok_or_else(|| {
                            format!(
                                "index {raw} (position {}) is outside 0..{}",
                                b * self.coords + c,
                                self.axis_size
                            )
                        })?;
                    let src = (table + index) * n;
                    let dst = ((b * self.outer + o) * self.coords + c) * n;
                    output[dst..dst + n].copy_from_slice(&params[src..src + n]);
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(copy: &StridedCopy, src: &[u8], dst_len: usize) -> Vec<u8> {
        let mut dst = vec![0xEE; dst_len];
        copy.run(src, &mut dst);
        dst
    }

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

    #[test]
    fn pad_broadcast_and_join() {
        let copy = pad(&[2, 2], &[1, 0], &[3, 3], 1).unwrap();
        let out = run(&copy, &[1, 2, 3, 4], 9);
        assert_eq!(out, vec![0xEE, 0xEE, 0xEE, 1, 2, 0xEE, 3, 4, 0xEE]);
        let copy = broadcast(&[3], &[2, 3], 1).unwrap();
        assert_eq!(run(&copy, &[1, 2, 3], 6), vec![1, 2, 3, 1, 2, 3]);
        let copy = broadcast(&[2, 1], &[2, 3], 1).unwrap();
        assert_eq!(run(&copy, &[1, 2], 6), vec![1, 1, 1, 2, 2, 2]);
        assert!(broadcast_shape(&[2, 3], &[4, 3]).is_err());
        assert_eq!(broadcast_shape(&[1, 4, 1], &[3]).unwrap(), vec![1, 4, 3]);
        let parts = join_parts(2, 1, &[1, 2], true).unwrap();
        let mut joined = vec![0; 6];
        parts[0].run(&[1, 2], &mut joined);
        parts[1].run(&[3, 4, 5, 6], &mut joined);
        assert_eq!(joined, vec![1, 3, 4, 2, 5, 6]);
    }

    #[test]
    fn out_of_bounds_plans_are_refused() {
        assert!(StridedCopy::new(&[4], 0, &[1], 3, 0, &[1], 4, 1).is_err());
        assert!(StridedCopy::new(&[4], 0, &[-1], 4, 0, &[1], 4, 1).is_err());
        assert!(StridedCopy::new(&[4], 0, &[1], 4, 1, &[1], 4, 1).is_err());
    }

    #[test]
    fn gather_refuses_out_of_range_indices() {
        let g = Gather {
            batch: 1,
            outer: 1,
            axis_size: 3,
            coords: 2,
            inner_bytes: 2,
        };
        let mut out = vec![0; 4];
        g.run(&[1, 2, 3, 4, 5, 6], &[2, 0], &mut out).unwrap();
        assert_eq!(out, vec![5, 6, 1, 2]);
        assert!(g.run(&[1, 2, 3, 4, 5, 6], &[3, 0], &mut out).is_err());
        assert!(g.run(&[1, 2, 3, 4, 5, 6], &[-1, 0], &mut out).is_err());
    }
}
