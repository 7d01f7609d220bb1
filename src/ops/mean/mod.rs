//! MEAN over given axes of int8, uint8 and int16 data, as TFLite's
//! requantizing `MEAN` computes it, in each of its two kernel paths.
//!
//! ```text
//! for each output element (the input's kept indices):
//!     sum = the wrapping i32 sum of the n inputs its reduced indices reach
//!     reference (QuantizedMeanOrSum, every shape):
//!         (m, s) = QuantizeMultiplier(s_in / s_out)           (f64)
//!         k      = min(floor(log2 n), 32, 31 + s)
//!         m'     = (m << k) / n,  s' = s - k                  (1/n folded in)
//!         y      = MultiplyByQuantizedMultiplier(sum - zp_in * n, m', s') + zp_out
//!     optimized height-width (int8, keep_dims, rank 4, axes {1, 2}):
//!         (m, s) = QuantizeMultiplier(s_in / (n * s_out))     (f32 operands)
//!         bias   = zp_out - round_away(zp_in * s_in / s_out)  (f32)
//!         y      = MultiplyByQuantizedMultiplier(sum, m, s) + bias
//!     saturate y to the type's range
//! ```
//!
//! `MultiplyByQuantizedMultiplier` is the build's [`Rounding`]. TFLite's
//! aarch64 height-width kernel requantizes channels 16 at a time with a
//! NEON helper whose double-rounding form rounds the last shift half up;
//! with single rounding (LiteRT) it equals the scalar one. The other
//! optimized MEAN kernels call the reference arithmetic.
//!
//! * `params.rs`: the axes (TFLite's `ResolveAxis`), the merged layout,
//!   the output shape and both arithmetics, [`MeanKernels`].
//! * `scalar.rs`: [`Backend::Scalar`], the reference loops.
//! * `neon.rs`: [`Backend::Neon`], 16 inner elements (channels) at a time.

#[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
mod neon;
pub(crate) mod params;
mod scalar;

use core::marker::PhantomData;

use crate::backend::{unavailable, Backend};
use crate::checks::check_length;
use crate::elem::QuantElem;
use crate::error::Result;
use crate::quant::{QuantParams, Rounding};
pub use params::MeanKernels;
use params::MeanParams;

/// A prepared quantized MEAN, bit-exact with TFLite's `MEAN` on the chosen
/// kernels and rounding. `run()` allocates nothing; input and output are
/// distinct slices.
#[derive(Clone, Debug)]
pub struct Mean<T: QuantElem> {
    params: MeanParams,
    backend: Backend,
    _type: PhantomData<T>,
}

impl<T: QuantElem> Mean<T> {
    /// Prepares the mean of an input of shape `dims` over `axes` (negative
    /// ones count from the end, duplicates count once, no axes copies
    /// with requantization), keeping the reduced axes as 1s with
    /// `keep_dims`. `kernels` and `rounding` choose TFLite's arithmetic.
    ///
    /// Errors (TFLite's `Prepare` rules, and what this library refuses):
    /// an axis outside `-rank..rank` or a rank above 8
    /// ([`Error::OutOfDomain`](crate::Error::OutOfDomain)), a dimension of 0
    /// ([`Error::ZeroDimension`](crate::Error::ZeroDimension)), an element
    /// count that overflows `usize`, scales not finite and `> 0`, zero
    /// points outside the type (int16: not 0), the optimized height-width
    /// kernel on uint8 (TFLite's is another, not built here:
    /// [`Error::Unsupported`](crate::Error::Unsupported)).
    pub fn new(
        dims: &[usize],
        axes: &[i32],
        keep_dims: bool,
        input: QuantParams,
        output: QuantParams,
        kernels: MeanKernels,
        rounding: Rounding,
    ) -> Result<Self> {
        Ok(Mean {
            params: MeanParams::new::<T>(dims, axes, keep_dims, input, output, kernels, rounding)?,
            backend: Backend::best(),
            _type: PhantomData,
        })
    }

    /// The output shape TFLite's `Prepare` gives: reduced axes as 1 with
    /// `keep_dims`, removed without.
    pub fn output_dims(&self) -> &[usize] {
        self.params.output_dims()
    }

    /// Input elements.
    pub fn input_len(&self) -> usize {
        self.params.layout.inputs
    }

    /// Output elements.
    pub fn output_len(&self) -> usize {
        self.params.layout.outputs
    }

    /// Whether the optimized 4-D height-width kernel's arithmetic was
    /// chosen (else the reference `QuantizedMeanOrSum`).
    pub fn is_height_width(&self) -> bool {
        self.params.path == params::Path::HeightWidth
    }

    /// The backend [`run`](Self::run) uses.
    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// The mean of `input` into `output` with the best backend. Errors if a
    /// length differs from the shape's.
    pub fn run(&self, input: &[T], output: &mut [T]) -> Result<()> {
        self.run_with(self.backend, input, output)
    }

    /// [`run`](Self::run) with the given backend (an error if it is not
    /// available here). Every backend gives the same bytes.
    pub fn run_with(&self, backend: Backend, input: &[T], output: &mut [T]) -> Result<()> {
        let p = &self.params;
        check_length("mean", "input", Some(p.layout.inputs), input.len())?;
        check_length("mean", "output", Some(p.layout.outputs), output.len())?;
        match backend {
            Backend::Scalar => {
                scalar::mean(p, input, output);
                Ok(())
            }
            #[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
            Backend::Neon => {
                use crate::elem::{view, Slices};
                match view(input, output) {
                    Slices::I8(i, o) => neon::mean_i8(p, i, o),
                    Slices::U8(i, o) => neon::mean_u8(p, i, o),
                    Slices::I16(i, o) => scalar::mean(p, i, o),
                }
                Ok(())
            }
            #[allow(unreachable_patterns)]
            b => Err(unavailable(b)),
        }
    }
}

#[cfg(test)]
mod tests;
