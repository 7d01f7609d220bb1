//! The one data-movement primitive: a [`StridedCopy`] planned at load, its
//! byte ranges checked against the tensors' declared sizes there, so the
//! copy itself indexes in bounds. Bytes move in elements of the tensor's
//! size, so one implementation serves every dtype. Also the broadcast of an
//! operand to an output shape as a copy, TFLite's broadcast output shape
//! and the row-major strides every plan starts from.

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
    /// One past the last destination byte written (0 for an empty copy).
    dst_end: usize,
    /// The two innermost dimensions move 2 to 4 byte planes to pixels or
    /// back ([`Planes`]): run by the library's structured loads and stores.
    planes: Option<Planes>,
}

/// A copy whose two innermost dimensions are `count` planes of bytes,
/// `stride` bytes apart on the planar side, and the pixels that hold one
/// byte of each (NCHW <-> NHWC with 2 to 4 channels).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Planes {
    count: usize,
    stride: usize,
    /// Planes to pixels (the source is planar), or back.
    to_pixels: bool,
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
            dst_end: 0,
            planes: None,
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
        plan.dst_end = (dst_hi + elem as i128) as usize;
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
        plan.longest_inside();
        plan.planes = plan.find_planes();
        Ok(plan)
    }

    /// [`Planes`] when the two innermost dimensions are `[k, n]` bytes with
    /// 2 <= k <= 4: source strides `[P, 1]` and destination `[1, k]`
    /// (planes to pixels), or source `[1, k]` and destination `[P, 1]`.
    fn find_planes(&self) -> Option<Planes> {
        let rank = self.shape.len();
        if self.elem != 1 || rank < 2 {
            return None;
        }
        let (k, n) = (self.shape[rank - 2], self.shape[rank - 1]);
        let (s, d) = (&self.src_strides[rank - 2..], &self.dst_strides[rank - 2..]);
        if !qneon::ops::INTERLEAVED_PLANES.contains(&k) || n < 16 {
            return None;
        }
        let planar = |stride: isize| usize::try_from(stride).ok().filter(|&p| p >= n);
        if s[1] == 1 && d == [1, k] {
            let stride = planar(s[0])?;
            return Some(Planes {
                count: k,
                stride,
                to_pixels: true,
            });
        }
        if s == [1, k as isize] && d[1] == 1 {
            let stride = planar(d[0] as isize)?;
            return Some(Planes {
                count: k,
                stride,
                to_pixels: false,
            });
        }
        None
    }

    /// Makes the longest dimension the innermost when the innermost is a
    /// short strided run (a transpose of NCHW's 3 channels to NHWC: 3
    /// elements per odometer step, then 224): the odometer's cost is per
    /// run, and every element is still copied once (source and
    /// destination are different tensors, so the order changes no byte).
    /// Of equal lengths, the one reading the source with the smallest
    /// stride.
    fn longest_inside(&mut self) {
        let rank = self.shape.len();
        if rank < 2 {
            return;
        }
        let last = rank - 1;
        let contiguous =
            self.src_strides[last] == self.elem as isize && self.dst_strides[last] == self.elem;
        if contiguous || self.shape[last] >= 16 {
            return;
        }
        let longest = (0..rank)
            .max_by_key(|&d| {
                (
                    self.shape[d],
                    core::cmp::Reverse(self.src_strides[d].unsigned_abs()),
                )
            })
            .unwrap_or(last);
        if self.shape[longest] <= self.shape[last] {
            return;
        }
        let n = self.shape.remove(longest);
        let s = self.src_strides.remove(longest);
        let d = self.dst_strides.remove(longest);
        self.shape.push(n);
        self.src_strides.push(s);
        self.dst_strides.push(d);
    }

    /// Whether the copy moves byte planes to pixels or back ([`Planes`]).
    #[cfg(test)]
    pub(crate) fn moves_planes(&self) -> bool {
        self.planes.is_some()
    }

    /// Runs the copy (bounds checked by [`new`](Self::new)).
    pub fn run(&self, src: &[u8], dst: &mut [u8]) {
        self.run_from(src, dst, self.dst_start);
    }

    /// Runs the copy into `band`, which holds the destination's bytes from
    /// byte `band_start` on (a thread's band of an output); an error, and
    /// nothing written, when the copy writes outside it.
    pub fn run_in_band(
        &self,
        src: &[u8],
        band: &mut [u8],
        band_start: usize,
    ) -> Result<(), String> {
        if self.dst_end == 0 {
            return Ok(()); // Nothing to copy.
        }
        let start = self.dst_start.checked_sub(band_start);
        let end = self.dst_end.checked_sub(band_start);
        match (start, end) {
            (Some(start), Some(end)) if end <= band.len() => {
                self.run_from(src, band, start);
                Ok(())
            }
            _ => Err(format!(
                "a copy writing bytes {}..{} runs into the {} bytes from {band_start}",
                self.dst_start,
                self.dst_end,
                band.len()
            )),
        }
    }

    /// The copy with the destination's first byte at `dst_start` of `dst`.
    #[inline(always)]
    fn run_from(&self, src: &[u8], dst: &mut [u8], dst_start: usize) {
        if let Some(planes) = self.planes {
            if self.run_planes(planes, src, dst, dst_start).is_some() {
                return;
            }
        }
        let elem = self.elem;
        let rank = self.shape.len();
        if rank == 0 {
            let s = self.src_start as usize;
            dst[dst_start..dst_start + elem].copy_from_slice(&src[s..s + elem]);
            return;
        }
        if self.shape.contains(&0) {
            return;
        }
        let inner = self.shape[rank - 1];
        let (inner_s, inner_d) = (self.src_strides[rank - 1], self.dst_strides[rank - 1]);
        let contiguous = inner_s == elem as isize && inner_d == elem;
        // The odometer lives on the stack for every rank TFLite uses.
        let mut index: smallvec::SmallVec<[usize; 8]> = smallvec::smallvec![0; rank - 1];
        let (mut src_at, mut dst_at) = (self.src_start, dst_start);
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
            } else if elem == 1 && inner_s > 0 && inner_d > 0 {
                // Bytes at both strides (a transpose's innermost axis):
                // the run's two spans sliced once.
                let s = src_at as usize;
                let from = &src[s..s + (inner - 1) * inner_s as usize + 1];
                let to = &mut dst[dst_at..dst_at + (inner - 1) * inner_d + 1];
                let pairs = to.iter_mut().step_by(inner_d);
                for (o, &i) in pairs.zip(from.iter().step_by(inner_s as usize)) {
                    *o = i;
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

impl StridedCopy {
    /// A copy of [`Planes`]: every step of the outer dimensions moves its
    /// planes through the library. `None` if a call refused its slices
    /// (never, after `new`'s bounds: the caller then copies element by
    /// element).
    fn run_planes(
        &self,
        planes: Planes,
        src: &[u8],
        dst: &mut [u8],
        dst_start: usize,
    ) -> Option<()> {
        let rank = self.shape.len();
        let outer = rank - 2;
        let n = self.shape[rank - 1];
        let (pixels, planar) = (n * planes.count, (planes.count - 1) * planes.stride + n);
        let mut index: smallvec::SmallVec<[usize; 8]> = smallvec::smallvec![0; outer];
        let (mut src_at, mut dst_at) = (self.src_start, dst_start);
        loop {
            let s = usize::try_from(src_at).ok()?;
            if planes.to_pixels {
                let (from, to) = (
                    src.get(s..s + planar)?,
                    dst.get_mut(dst_at..dst_at + pixels)?,
                );
                qneon::interleave_planes(from, planes.stride, to, planes.count).ok()?;
            } else {
                let (from, to) = (
                    src.get(s..s + pixels)?,
                    dst.get_mut(dst_at..dst_at + planar)?,
                );
                qneon::deinterleave_planes(from, to, planes.stride, planes.count).ok()?;
            }
            // Odometer over the outer dimensions.
            let mut axis = outer;
            loop {
                if axis == 0 {
                    return Some(());
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

/// The same strides as a source copy takes them (signed: a source stride
/// may be negative).
pub fn signed(strides: &[usize]) -> Vec<isize> {
    strides.iter().map(|&s| s as isize).collect()
}

/// The broadcast of an operand of shape `shape` to `output_shape` (TFLite's
/// rule: shapes aligned at the last dimension, each dimension equal or 1)
/// as a copy. The binary ops broadcast without copying (`binary.rs`); this
/// stays for an op that needs the operand materialized.
#[allow(dead_code)]
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

/// The copy into a fresh `dst_len`-byte buffer of `0xEE` bytes, so that
/// bytes it does not write show.
#[cfg(test)]
pub(crate) fn copied(copy: &StridedCopy, src: &[u8], dst_len: usize) -> Vec<u8> {
    let mut dst = vec![0xEE; dst_len];
    copy.run(src, &mut dst);
    dst
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn out_of_bounds_plans_are_refused() {
        assert!(StridedCopy::new(&[4], 0, &[1], 3, 0, &[1], 4, 1).is_err());
        assert!(StridedCopy::new(&[4], 0, &[-1], 4, 0, &[1], 4, 1).is_err());
        assert!(StridedCopy::new(&[4], 0, &[1], 4, 1, &[1], 4, 1).is_err());
    }
}
