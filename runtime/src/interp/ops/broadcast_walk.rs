//! TFLite's broadcasting of two operands to an output, walked as runs for
//! the library's [`BroadcastOperand`] kernels (MAXIMUM, MINIMUM, PRELU) on
//! any element type: the output is cut into contiguous runs; along the
//! dimensions outside a run each operand advances by its element stride (0
//! where it is broadcast), and inside a run it is a slice, one repeated
//! value or a repeated row. No operand is expanded in memory.
//!
//! [`WalkNode`] is the kernel of every such op: the library op of a family
//! ([`PairOp`]) run over the walk of its node's two inputs.

use std::marker::PhantomData;
use std::ops::Range;

use qneon::{Backend, BroadcastOperand, QuantElem};

use super::buffers::{view, view_mut, Io};
use super::kernel::Kernel;

/// Most dimensions outside a run (the odometer lives on the stack: invoke
/// allocates nothing). Merging leaves at most one less than the output's
/// rank, and TFLite broadcasts these ops to rank 5 at most.
const MAX_OUTER: usize = 8;

/// How an operand appears inside each run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Form {
    /// It advances with the output.
    Slice,
    /// One element repeats.
    Scalar,
    /// A row of this many elements repeats down the run (a row-constant
    /// operand: PRELU's per-channel alpha, NoNorm's gamma).
    Row(usize),
}

/// The planned walk of two operands' broadcast to an output shape.
///
/// The plan is also ADD / SUB / MUL's (`binary::BroadcastRuns` is made
/// from it), but the walks stay two: this one hands out whole runs of any
/// element type for ops that run as one tile, `BroadcastRuns` walks int8
/// runs cut to an element range (the tiles and bands of a split node).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct BroadcastWalk {
    /// Sizes of the dimensions outside a run, outermost first.
    pub(super) outer: Vec<usize>,
    /// Each operand's element stride along them.
    pub(super) strides: [Vec<usize>; 2],
    /// Elements per run.
    pub(super) inner: usize,
    /// Each operand inside a run.
    pub(super) forms: [Form; 2],
    /// Elements of operand 1, operand 2 and the output.
    pub(super) counts: [usize; 3],
}

impl BroadcastWalk {
    /// Plans the broadcast of shapes `a` and `b` to `output` (the shape
    /// TFLite's broadcast gives them).
    pub(crate) fn new(a: &[usize], b: &[usize], output: &[usize]) -> Result<Self, String> {
        let rank = output.len();
        if a.len() > rank || b.len() > rank {
            return Err(format!(
                "shapes {a:?} and {b:?} do not broadcast to {output:?}"
            ));
        }
        // Element strides over the output's dimensions, 0 where broadcast.
        let strides = |shape: &[usize]| -> Result<Vec<usize>, String> {
            let pad = rank - shape.len();
            let mut strides = vec![0; rank];
            let mut step = 1usize;
            for d in (0..rank).rev() {
                let size = if d < pad { 1 } else { shape[d - pad] };
                if size == output[d] && size != 1 {
                    strides[d] = step;
                } else if size != 1 {
                    return Err(format!("shape {shape:?} does not broadcast to {output:?}"));
                }
                step = step.saturating_mul(size);
            }
            Ok(strides)
        };
        let (sa, sb) = (strides(a)?, strides(b)?);
        // Size-1 dimensions dropped; a dimension joins the one outside it
        // where both operands step on contiguously.
        let mut dims: Vec<(usize, usize, usize)> = Vec::new();
        for d in 0..rank {
            let n = output[d];
            if n == 1 {
                continue;
            }
            match dims.last_mut() {
                Some(last) if last.1 == sa[d] * n && last.2 == sb[d] * n => {
                    *last = (last.0 * n, sa[d], sb[d]);
                }
                _ => dims.push((n, sa[d], sb[d])),
            }
        }
        let form = |stride: usize| {
            if stride == 1 {
                Form::Slice
            } else {
                Form::Scalar
            }
        };
        let (mut inner, mut forms) = match dims.pop() {
            Some((n, x, y)) => (n, [form(x), form(y)]),
            None => (1, [Form::Slice, Form::Slice]),
        };
        // A run repeating along the next dimension out while the other
        // operand steps on contiguously: that dimension joins the run, the
        // repeating operand as a row (PRELU's per-channel alpha).
        if let (Some(&(n, x, y)), [Form::Slice, Form::Slice]) = (dims.last(), forms) {
            if x == 0 && y == inner {
                forms[0] = Form::Row(inner);
            } else if y == 0 && x == inner {
                forms[1] = Form::Row(inner);
            }
            if forms != [Form::Slice, Form::Slice] {
                dims.pop();
                inner *= n;
            }
        }
        if dims.len() > MAX_OUTER {
            return Err(format!(
                "shapes {a:?} and {b:?} to {output:?}: more than {MAX_OUTER} broadcast dimensions"
            ));
        }
        let count = |s: &[usize]| s.iter().product::<usize>();
        Ok(BroadcastWalk {
            outer: dims.iter().map(|d| d.0).collect(),
            strides: [
                dims.iter().map(|d| d.1).collect(),
                dims.iter().map(|d| d.2).collect(),
            ],
            inner,
            forms,
            counts: [count(a), count(b), count(output)],
        })
    }

    /// Calls `f(a_run, b_run, output_run)` for every run, in output order.
    pub(crate) fn for_each<'a, T: Copy, E: From<String>>(
        &self,
        a: &'a [T],
        b: &'a [T],
        output: &mut [T],
        mut f: impl FnMut(BroadcastOperand<'a, T>, BroadcastOperand<'a, T>, &mut [T]) -> Result<(), E>,
    ) -> Result<(), E> {
        let [na, nb, no] = self.counts;
        if a.len() != na || b.len() != nb || output.len() != no {
            return Err(E::from(format!(
                "buffers of {}, {} and {} elements for {na}, {nb} and {no}",
                a.len(),
                b.len(),
                output.len()
            )));
        }
        if no == 0 {
            return Ok(());
        }
        let inner = self.inner;
        let operand =
            |data: &'a [T], at: usize, form: Form| -> Result<BroadcastOperand<'a, T>, E> {
                let take = |len: usize| {
                    data.get(at..at + len).ok_or_else(|| {
                        E::from(format!("broadcast walk outside an operand at {at}"))
                    })
                };
                Ok(match form {
                    Form::Slice => BroadcastOperand::Slice(take(inner)?),
                    Form::Scalar => BroadcastOperand::Scalar(take(1)?[0]),
                    Form::Row(row) => BroadcastOperand::Row(take(row)?),
                })
            };
        let rank = self.outer.len();
        let mut index = [0usize; MAX_OUTER];
        let (mut at_a, mut at_b) = (0usize, 0usize);
        for out in output.chunks_exact_mut(inner) {
            f(
                operand(a, at_a, self.forms[0])?,
                operand(b, at_b, self.forms[1])?,
                out,
            )?;
            // Odometer over the outer dimensions.
            for d in (0..rank).rev() {
                index[d] += 1;
                at_a += self.strides[0][d];
                at_b += self.strides[1][d];
                if index[d] < self.outer[d] {
                    break;
                }
                at_a -= self.strides[0][d] * self.outer[d];
                at_b -= self.strides[1][d] * self.outer[d];
                index[d] = 0;
            }
        }
        Ok(())
    }
}

/// A library op of two broadcast operands into an output (MAXIMUM /
/// MINIMUM's `MinMax`, PRELU's `Prelu`), as [`WalkNode`] runs it.
pub(crate) trait PairOp<T>: std::fmt::Debug + Send + Sync {
    /// The op on one run: `a` and `b` as the walk presents them.
    fn run_pair(
        &self,
        backend: Backend,
        a: BroadcastOperand<'_, T>,
        b: BroadcastOperand<'_, T>,
        output: &mut [T],
    ) -> qneon::Result<()>;
}

/// A prepared node of a [`PairOp`]: inputs 0 and 1 into output 0 over the
/// planned walk, one tile.
#[derive(Debug)]
pub(crate) struct WalkNode<T, O> {
    op: O,
    walk: BroadcastWalk,
    _type: PhantomData<fn() -> T>,
}

impl<T, O> WalkNode<T, O> {
    pub(crate) fn new(op: O, walk: BroadcastWalk) -> WalkNode<T, O> {
        WalkNode {
            op,
            walk,
            _type: PhantomData,
        }
    }
}

impl<T: QuantElem + bytemuck::Pod + Send + Sync, O: PairOp<T>> Kernel for WalkNode<T, O> {
    fn run_tiles(
        &self,
        backend: Backend,
        tiles: Range<usize>,
        io: &mut Io<'_>,
    ) -> Result<(), String> {
        if tiles.is_empty() {
            return Ok(());
        }
        let (a, b): (&[T], &[T]) = (view(io.ins[0])?, view(io.ins[1])?);
        self.walk
            .for_each(a, b, view_mut(io.outs[0])?, |a, b, out| {
                self.op
                    .run_pair(backend, a, b, out)
                    .map_err(|e| e.to_string())
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::interp::ops::strided_copy::broadcast_shape;

    /// The pairs of element indices TFLite's broadcast reads for every
    /// output element: broadcast dimensions pinned to 0.
    fn naive(a: &[usize], b: &[usize], out: &[usize]) -> Vec<(usize, usize)> {
        let rank = out.len();
        let index_of = |shape: &[usize], idx: &[usize]| -> usize {
            let pad = rank - shape.len();
            shape.iter().enumerate().fold(0, |at, (d, &n)| {
                at * n + if n == 1 { 0 } else { idx[d + pad] }
            })
        };
        let count: usize = out.iter().product();
        (0..count)
            .map(|mut flat| {
                let mut idx = vec![0; rank];
                for d in (0..rank).rev() {
                    idx[d] = flat % out[d];
                    flat /= out[d];
                }
                (index_of(a, &idx), index_of(b, &idx))
            })
            .collect()
    }

    fn walked(a: &[usize], b: &[usize], out: &[usize]) -> Vec<(usize, usize)> {
        let walk = BroadcastWalk::new(a, b, out).unwrap();
        let count = |s: &[usize]| s.iter().product::<usize>();
        let da: Vec<u32> = (0..count(a) as u32).collect();
        let db: Vec<u32> = (0..count(b) as u32).collect();
        let mut output = vec![0u32; count(out)];
        let mut seen = Vec::new();
        walk.for_each::<u32, String>(&da, &db, &mut output, |x, y, o| {
            let pick = |op: &BroadcastOperand<'_, u32>, i: usize| match *op {
                BroadcastOperand::Slice(s) => s[i] as usize,
                BroadcastOperand::Scalar(v) => v as usize,
                BroadcastOperand::Row(r) => r[i % r.len()] as usize,
            };
            for i in 0..o.len() {
                seen.push((pick(&x, i), pick(&y, i)));
            }
            Ok(())
        })
        .unwrap();
        seen
    }

    #[test]
    fn walk_visits_the_elements_tflite_broadcasting_pairs() {
        let cases: &[(&[usize], &[usize])] = &[
            (&[1, 7, 7, 19], &[1, 7, 7, 19]),
            (&[2, 1, 5, 7], &[1, 3, 1, 7]),
            (&[1, 5, 6, 19], &[19]),
            (&[3, 37], &[]),
            (&[], &[1, 4, 4, 21]),
            (&[2, 1, 3, 1, 5], &[1, 2, 1, 4, 5]),
            (&[1, 6, 5, 7], &[1, 1, 7]),
            (&[2, 3, 45], &[3, 1]),
            (&[2, 7, 9, 13], &[1, 1, 13]),
            (&[1, 5, 6, 7], &[5, 6, 7]),
            (&[1, 1, 7], &[1, 6, 5, 7]),
            (&[1], &[1]),
            (&[4, 1], &[1, 8]),
        ];
        for &(a, b) in cases {
            let out = broadcast_shape(a, b).unwrap();
            assert_eq!(walked(a, b, &out), naive(a, b, &out), "{a:?} {b:?}");
        }
        // A per-channel operand becomes one run of rows.
        let walk = BroadcastWalk::new(&[2, 7, 9, 13], &[1, 1, 13], &[2, 7, 9, 13]).unwrap();
        assert_eq!((walk.outer.len(), walk.forms[1]), (0, Form::Row(13)));
    }

    #[test]
    fn walk_refuses_shapes_and_buffers_that_do_not_match() {
        assert!(BroadcastWalk::new(&[3], &[4], &[4]).is_err());
        let walk = BroadcastWalk::new(&[2, 3], &[3], &[2, 3]).unwrap();
        let mut out = [0i8; 6];
        let short = walk.for_each::<i8, String>(&[0; 5], &[0; 3], &mut out, |_, _, _| Ok(()));
        assert!(short.is_err());
    }
}
