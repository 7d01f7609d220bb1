//! ARG_MAX and ARG_MIN, as TFLite computes them: along one axis, the index
//! of the largest (smallest) stored value, the first one on ties (TFLite
//! replaces its running best only on a strict `>` / `<`). Stored values
//! order as the real values do (a positive scale), so no quantization
//! enters; float input compares the same way (a NaN never replaces the
//! running best, and a NaN first stays).
//!
//! ```text
//! out[o, i] = min { k : x[o, k, i] is extreme over k }    (o outer, i inner)
//! ```
//!
//! A scalar loop only: an op at the end of a classifier, run once per
//! inference on a few thousand values at most.

use crate::error::{Error, Result};

/// Which extreme the op finds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ArgKind {
    /// TFLite's ARG_MAX.
    Max,
    /// TFLite's ARG_MIN.
    Min,
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for i32 {}
    impl Sealed for i64 {}
}

/// The index types TFLite's ARG_MAX / ARG_MIN write: `i32` and `i64`.
pub trait ArgIndex: sealed::Sealed + Copy {
    /// Largest index the type holds.
    const MAX_INDEX: usize;
    /// `i` (at most [`Self::MAX_INDEX`]).
    fn from_index(i: usize) -> Self;
}

impl ArgIndex for i32 {
    const MAX_INDEX: usize = i32::MAX as usize;
    fn from_index(i: usize) -> Self {
        i as i32
    }
}

impl ArgIndex for i64 {
    const MAX_INDEX: usize = i64::MAX as usize;
    fn from_index(i: usize) -> Self {
        i as i64
    }
}

/// ARG_MAX or ARG_MIN over the middle axis of an `[outer, axis, inner]`
/// view of the input. Tiles: any range of `outer` (the same bytes).
/// `run()` allocates nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ArgMinMax {
    kind: ArgKind,
    outer: usize,
    axis: usize,
    inner: usize,
}

impl ArgMinMax {
    /// Prepares the op over an input viewed as `[outer, axis, inner]`.
    /// Errors: an empty axis (no index to give), sizes whose product
    /// overflows.
    pub fn new(kind: ArgKind, outer: usize, axis: usize, inner: usize) -> Result<Self> {
        if axis == 0 {
            return Err(Error::ZeroDimension {
                op: "arg_min_max",
                what: "axis",
            });
        }
        let total = outer.checked_mul(axis).and_then(|n| n.checked_mul(inner));
        if total.is_none() {
            return Err(Error::OutOfDomain {
                op: "arg_min_max",
                what: "input elements",
                value: outer as f64 * axis as f64 * inner as f64,
                requirement: "at most usize::MAX",
            });
        }
        Ok(ArgMinMax {
            kind,
            outer,
            axis,
            inner,
        })
    }

    /// Input elements.
    pub fn input_len(&self) -> usize {
        self.outer * self.axis * self.inner
    }

    /// Output elements.
    pub fn output_len(&self) -> usize {
        self.outer * self.inner
    }

    /// The index of the extreme of each `[o, :, i]` into `output[o, i]`.
    /// Errors if a buffer's length does not fit the shape or an index
    /// does not fit `O`.
    pub fn run<T: PartialOrd + Copy, O: ArgIndex>(
        &self,
        input: &[T],
        output: &mut [O],
    ) -> Result<()> {
        let length = |what, expected: usize, got: usize| {
            if expected == got {
                Ok(())
            } else {
                Err(Error::Length {
                    op: "arg_min_max",
                    what,
                    expected,
                    got,
                })
            }
        };
        length("input", self.input_len(), input.len())?;
        length("output", self.output_len(), output.len())?;
        if self.axis - 1 > O::MAX_INDEX {
            return Err(Error::Unsupported {
                op: "arg_min_max",
                dtype: "index",
                reason: "the axis is longer than the output type indexes",
            });
        }
        let better = |a: T, b: T| match self.kind {
            ArgKind::Max => a > b,
            ArgKind::Min => a < b,
        };
        let (axis, inner) = (self.axis, self.inner);
        for (o, out) in output.chunks_exact_mut(inner.max(1)).enumerate() {
            let block = &input[o * axis * inner..(o + 1) * axis * inner];
            for (i, slot) in out.iter_mut().enumerate() {
                let mut best = block[i];
                let mut at = 0;
                for k in 1..axis {
                    let v = block[k * inner + i];
                    if better(v, best) {
                        best = v;
                        at = k;
                    }
                }
                *slot = O::from_index(at);
            }
        }
        Ok(())
    }
}
