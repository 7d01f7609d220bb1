//! PRELU on int8 and uint8, as TFLite's kernels compute it: two quantized
//! multipliers, one for non-negative inputs and one for the product of a
//! negative input with its alpha (see `params.rs`).
//!
//! ```text
//! y = zp_out + (x - zp_in >= 0 ? M1(x - zp_in) : M2((x - zp_in) * (a - zp_alpha)))
//! ```
//!
//! LiteRT runs the reference arithmetic for int8 and uint8 PRELU in every
//! kernel set (its optimized kernels cover float only), so one arithmetic
//! serves all. Each operand is a [`BroadcastOperand`] along the run (the
//! alpha of `tf.keras.layers.PReLU(shared_axes=[1, 2])` is a row of one
//! value per channel). [`Backend::Scalar`] runs `params.rs` on `i32`
//! element by element (the oracle); [`Backend::Neon`] the same lane math on
//! `int32x4_t`, 16 elements a block.
//!
//! * `params.rs`: the multipliers and the lane math.
//! * `neon.rs`: the vector loop.

#[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
mod neon;
pub(crate) mod params;

use core::marker::PhantomData;

use super::broadcast::BroadcastOperand;
use crate::backend::{unavailable, Backend};
use crate::elem::QuantElem;
use crate::error::Result;
use crate::quant::QuantParams;
use params::PreluParams;

/// Quantized PRELU on int8 or uint8, bit-exact with TFLite's. Element-wise:
/// any range of a run's elements is a tile (a row alpha: a range of whole
/// rows). `run()` allocates nothing.
#[derive(Clone, Debug)]
pub struct Prelu<T: QuantElem> {
    params: PreluParams,
    backend: Backend,
    _type: PhantomData<T>,
}

impl<T: QuantElem> Prelu<T> {
    /// Prepares PRELU from the `input`, `alpha` and `output` quantizations.
    /// Errors: scales not finite and `> 0`, zero points outside the type,
    /// int16 ([`Error::Unsupported`](crate::Error::Unsupported)).
    pub fn new(input: QuantParams, alpha: QuantParams, output: QuantParams) -> Result<Self> {
        Ok(Prelu {
            params: PreluParams::new::<T>(input, alpha, output)?,
            backend: Backend::best(),
            _type: PhantomData,
        })
    }

    /// The backend [`run`](Self::run) uses.
    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// The quantized multipliers `(identity, alpha)` as (Q0.31 mantissa,
    /// exponent) pairs.
    pub fn multipliers(&self) -> ((i32, i32), (i32, i32)) {
        let (a, b) = (self.params.identity, self.params.alpha);
        ((a.multiplier, a.shift), (b.multiplier, b.shift))
    }

    /// PRELU of `input` with `alpha` along one run, with the best backend.
    /// Errors if a slice operand's length differs from the output's or a
    /// row does not divide it.
    pub fn run(
        &self,
        input: BroadcastOperand<'_, T>,
        alpha: BroadcastOperand<'_, T>,
        output: &mut [T],
    ) -> Result<()> {
        self.run_with(self.backend, input, alpha, output)
    }

    /// [`run`](Self::run) with the given backend (an error if it is not
    /// available here). Every backend gives the same bytes.
    pub fn run_with(
        &self,
        backend: Backend,
        input: BroadcastOperand<'_, T>,
        alpha: BroadcastOperand<'_, T>,
        output: &mut [T],
    ) -> Result<()> {
        input.check("prelu", output.len())?;
        alpha.check("prelu", output.len())?;
        if !backend.is_available() {
            return Err(unavailable(backend));
        }
        let p = &self.params;
        match (input, alpha) {
            (BroadcastOperand::Slice(x), BroadcastOperand::Slice(a)) => {
                slices(backend, p, x, Ok(a), output)
            }
            (BroadcastOperand::Slice(x), BroadcastOperand::Scalar(a)) => {
                slices(backend, p, x, Err(a), output)
            }
            (BroadcastOperand::Slice(x), BroadcastOperand::Row(row)) => {
                let rows = x
                    .chunks_exact(row.len())
                    .zip(output.chunks_exact_mut(row.len()));
                for (x, out) in rows {
                    slices(backend, p, x, Ok(row), out);
                }
            }
            // The input itself repeats (alpha larger than the input, or
            // both broadcast): element by element, no hot path.
            (x, a) => {
                let at = |o: &BroadcastOperand<'_, T>, i: usize| match *o {
                    BroadcastOperand::Slice(s) => s[i],
                    BroadcastOperand::Scalar(v) => v,
                    BroadcastOperand::Row(r) => r[i % r.len()],
                };
                for (i, out) in output.iter_mut().enumerate() {
                    *out = T::from_i32(p.apply(at(&x, i).to_i32(), at(&a, i).to_i32()));
                }
            }
        }
        Ok(())
    }
}

/// One run: alphas a slice as long as `x` (`Ok`) or one value (`Err`), on
/// `backend` (available).
fn slices<T: QuantElem>(
    backend: Backend,
    p: &PreluParams,
    x: &[T],
    alphas: core::result::Result<&[T], T>,
    output: &mut [T],
) {
    match backend {
        #[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
        Backend::Neon => neon::dispatch(p, x, alphas, output),
        _ => {
            for (i, (o, &v)) in output.iter_mut().zip(x).enumerate() {
                let a = match alphas {
                    Ok(a) => a[i],
                    Err(a) => a,
                };
                *o = T::from_i32(p.apply(v.to_i32(), a.to_i32()));
            }
        }
    }
}
