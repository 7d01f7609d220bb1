//! MAXIMUM and MINIMUM on int8, uint8 and int16, as TFLite computes them:
//! the larger (smaller) of the two stored values, element by element. The
//! quantization parameters play no part (TFLite's kernel compares raw
//! values, and its converter gives both operands and the output one
//! quantization), so there is no arithmetic to prepare.
//!
//! ```text
//! maximum: y[i] = max(a[i], b[i])     minimum: y[i] = min(a[i], b[i])
//! ```
//!
//! Each operand is a [`BroadcastOperand`] along the run: a slice, one
//! repeated value, or a repeated row. [`Backend::Scalar`] compares element
//! by element (the oracle); [`Backend::Neon`] runs `smax` / `smin` (`umax`
//! / `umin` for uint8) over whole vectors, a repeated value duplicated into
//! a register once per run.
//!
//! * `neon.rs`: the vector loops.

#[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
mod neon;

use core::marker::PhantomData;

use super::broadcast::BroadcastOperand;
use crate::backend::{unavailable, Backend};
use crate::elem::QuantElem;
use crate::error::Result;

/// Which extreme the op keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MinMaxKind {
    /// TFLite's MAXIMUM: the larger value.
    Maximum,
    /// TFLite's MINIMUM: the smaller value.
    Minimum,
}

impl MinMaxKind {
    /// The op's name in messages.
    pub const fn name(self) -> &'static str {
        match self {
            MinMaxKind::Maximum => "maximum",
            MinMaxKind::Minimum => "minimum",
        }
    }
}

/// MAXIMUM or MINIMUM on int8, uint8 or int16, bit-exact with TFLite's
/// (reference and optimized kernels alike). Element-wise: any range of a
/// run's elements is a tile. `run()` allocates nothing.
#[derive(Clone, Copy, Debug)]
pub struct MinMax<T: QuantElem> {
    kind: MinMaxKind,
    backend: Backend,
    _type: PhantomData<T>,
}

impl<T: QuantElem> MinMax<T> {
    /// The op of `kind` (nothing to validate: any two values compare).
    pub fn new(kind: MinMaxKind) -> Self {
        MinMax {
            kind,
            backend: Backend::best(),
            _type: PhantomData,
        }
    }

    /// Which extreme the op keeps.
    pub fn kind(&self) -> MinMaxKind {
        self.kind
    }

    /// The backend [`run`](Self::run) uses.
    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// `output[i] = max(a, b)` (or `min`) along one run, with the best
    /// backend. Errors if a slice operand's length differs from the
    /// output's or a row does not divide it.
    pub fn run(
        &self,
        a: BroadcastOperand<'_, T>,
        b: BroadcastOperand<'_, T>,
        output: &mut [T],
    ) -> Result<()> {
        self.run_with(self.backend, a, b, output)
    }

    /// [`run`](Self::run) with the given backend (an error if it is not
    /// available here). Every backend gives the same bytes.
    pub fn run_with(
        &self,
        backend: Backend,
        a: BroadcastOperand<'_, T>,
        b: BroadcastOperand<'_, T>,
        output: &mut [T],
    ) -> Result<()> {
        let op = self.kind.name();
        a.check(op, output.len())?;
        b.check(op, output.len())?;
        if !backend.is_available() {
            return Err(unavailable(backend));
        }
        let max = self.kind == MinMaxKind::Maximum;
        // Both ops are commutative: a scalar or row operand goes second.
        let (a, b) = match (a, b) {
            (BroadcastOperand::Slice(_), _) => (a, b),
            (_, BroadcastOperand::Slice(_)) => (b, a),
            _ => (a, b),
        };
        match (a, b) {
            (BroadcastOperand::Slice(x), BroadcastOperand::Slice(y)) => {
                slices(backend, max, x, y, output)
            }
            (BroadcastOperand::Slice(x), BroadcastOperand::Scalar(v)) => {
                scalar(backend, max, x, v, output)
            }
            (BroadcastOperand::Slice(x), BroadcastOperand::Row(row)) => {
                let rows = x
                    .chunks_exact(row.len())
                    .zip(output.chunks_exact_mut(row.len()));
                for (x, out) in rows {
                    slices(backend, max, x, row, out);
                }
            }
            // Neither operand runs along the output: the same value or
            // rows repeat, computed element by element (no hot path).
            (a, b) => {
                let at = |o: &BroadcastOperand<'_, T>, i: usize| match *o {
                    BroadcastOperand::Slice(s) => s[i],
                    BroadcastOperand::Scalar(v) => v,
                    BroadcastOperand::Row(r) => r[i % r.len()],
                };
                for (i, out) in output.iter_mut().enumerate() {
                    *out = pick(max, at(&a, i), at(&b, i));
                }
            }
        }
        Ok(())
    }
}

/// The kept one of two values.
#[inline(always)]
fn pick<T: QuantElem>(max: bool, a: T, b: T) -> T {
    let (x, y) = (a.to_i32(), b.to_i32());
    if max == (x >= y) {
        a
    } else {
        b
    }
}

/// Two slices as long as `output`, on `backend` (available).
fn slices<T: QuantElem>(backend: Backend, max: bool, a: &[T], b: &[T], output: &mut [T]) {
    match backend {
        #[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
        Backend::Neon => neon::slices(max, a, b, output),
        _ => {
            for ((o, &x), &y) in output.iter_mut().zip(a).zip(b) {
                *o = pick(max, x, y);
            }
        }
    }
}

/// A slice and one repeated value, on `backend` (available).
fn scalar<T: QuantElem>(backend: Backend, max: bool, a: &[T], v: T, output: &mut [T]) {
    match backend {
        #[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
        Backend::Neon => neon::scalar(max, a, v, output),
        _ => {
            for (o, &x) in output.iter_mut().zip(a) {
                *o = pick(max, x, v);
            }
        }
    }
}
