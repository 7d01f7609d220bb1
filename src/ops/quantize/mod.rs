//! [`QuantParams::quantize`] and [`QuantParams::dequantize`]: real values to
//! a quantized type and back, as TFLite's `QUANTIZE` and `DEQUANTIZE`
//! reference kernels compute them, for `i8`, `u8` and `i16`.
//!
//! ```text
//! quantize:    q = saturate_T(round_half_away(x / scale) + zero_point)
//!              x / scale one f32 division; the i32 conversion saturates
//!              (NaN -> 0); the zero point added with i32 saturation
//! dequantize:  x = (q - zero_point) * scale      one f32 multiply (exact
//!              difference, so the exact product rounded once)
//! ```
//!
//! # Special values
//!
//! `+inf` and `-inf` (and any value beyond the type's range) saturate to the
//! type's largest and smallest value. **NaN quantizes to `zero_point`** (real
//! 0). TFLite's reference kernel converts the rounded NaN to `int32` with a
//! C++ cast, which is undefined behaviour; on aarch64 the cast is `fcvtzs`,
//! which gives 0 and so `zero_point`, and that is what qneon gives on every
//! target (on x86 the same C++ gives `0x80000000` and so the type's
//! minimum). Where TFLite's `int32` addition of the zero point would
//! overflow (a rounded value near `2^31`), qneon saturates, so large values
//! still clamp to the type's maximum.
//!
//! # Layout
//!
//! `blocks.rs` holds the block math once, over the `f32` lanes of
//! `Method::DequantF32` (which already quantize the same way);
//! `scalar.rs` and `neon.rs` instantiate it (16 scalar `f32`s, or four
//! `float32x4_t` per block). NEON and scalar give the same bits: the
//! division and multiply are correctly rounded `f32` operations in both, and
//! `fcvtas` is the scalar rounding (half away from zero, saturating, NaN to 0).

mod blocks;
#[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
mod neon;
mod scalar;

use crate::backend::{unavailable, Backend};
use crate::checks::{check_lengths, check_scale, check_zero_point};
use crate::elem::QuantElem;
use crate::error::Result;
use crate::quant::QuantParams;

impl QuantParams {
    /// Quantizes `input` into `output` with the best backend:
    /// `output[i] = clamp(round(input[i] / scale) + zero_point)`, rounding
    /// half away from zero, as TFLite's `QUANTIZE`. `x / scale` is one `f32`
    /// division (as TFLite divides); infinities and values beyond the type
    /// saturate. NaN gives `zero_point` (real 0): TFLite's own C++ cast of
    /// NaN is undefined behaviour, which on aarch64 gives `zero_point` too
    /// (on x86, the type's minimum).
    ///
    /// Errors: a scale that is not finite and `> 0` ([`Error::Scale`]), a
    /// zero point outside `T`'s range ([`Error::ZeroPoint`]), lengths that
    /// differ ([`Error::LengthMismatch`]).
    ///
    /// ```
    /// use qneon::QuantParams;
    /// let q = QuantParams::new(0.5, -3);
    /// let mut out = [0i8; 5];
    /// q.quantize(&[0.0, 0.25, -0.25, 1e9, f32::NAN], &mut out)?;
    /// assert_eq!(out, [-3, -2, -4, 127, -3]);
    /// # Ok::<(), qneon::Error>(())
    /// ```
    ///
    /// [`Error::Scale`]: crate::Error::Scale
    /// [`Error::ZeroPoint`]: crate::Error::ZeroPoint
    /// [`Error::LengthMismatch`]: crate::Error::LengthMismatch
    pub fn quantize<T: QuantElem>(&self, input: &[f32], output: &mut [T]) -> Result<()> {
        self.quantize_with(Backend::best(), input, output)
    }

    /// [`quantize`](Self::quantize) with the given backend (an error if it is
    /// not available here). Every backend gives the same bytes.
    pub fn quantize_with<T: QuantElem>(
        &self,
        backend: Backend,
        input: &[f32],
        output: &mut [T],
    ) -> Result<()> {
        self.check::<T>("quantize", input.len(), output.len())?;
        match backend {
            Backend::Scalar => scalar::quantize(self.scale, self.zero_point, input, output),
            #[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
            Backend::Neon => neon::quantize(self.scale, self.zero_point, input, output),
            #[allow(unreachable_patterns)]
            b => return Err(unavailable(b)),
        }
        Ok(())
    }

    /// Dequantizes `input` into `output` with the best backend:
    /// `output[i] = scale * (input[i] - zero_point)` in `f32`, as TFLite's
    /// `DEQUANTIZE` (the exact product rounded once to `f32`).
    ///
    /// Errors as [`quantize`](Self::quantize).
    ///
    /// ```
    /// use qneon::QuantParams;
    /// let q = QuantParams::new(0.5, -3);
    /// let mut out = [0f32; 3];
    /// q.dequantize(&[-3i8, -2, 127], &mut out)?;
    /// assert_eq!(out, [0.0, 0.5, 65.0]);
    /// # Ok::<(), qneon::Error>(())
    /// ```
    pub fn dequantize<T: QuantElem>(&self, input: &[T], output: &mut [f32]) -> Result<()> {
        self.dequantize_with(Backend::best(), input, output)
    }

    /// [`dequantize`](Self::dequantize) with the given backend (an error if
    /// it is not available here). Every backend gives the same bits.
    pub fn dequantize_with<T: QuantElem>(
        &self,
        backend: Backend,
        input: &[T],
        output: &mut [f32],
    ) -> Result<()> {
        self.check::<T>("dequantize", input.len(), output.len())?;
        match backend {
            Backend::Scalar => scalar::dequantize(self.scale, self.zero_point, input, output),
            #[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
            Backend::Neon => neon::dequantize(self.scale, self.zero_point, input, output),
            #[allow(unreachable_patterns)]
            b => return Err(unavailable(b)),
        }
        Ok(())
    }

    /// The parameters for `T` (scale finite and `> 0`, zero point in range),
    /// then the lengths.
    fn check<T: QuantElem>(&self, op: &'static str, input: usize, output: usize) -> Result<()> {
        check_scale("scale", self.scale)?;
        check_zero_point::<T>("zero point", self.zero_point)?;
        check_lengths(op, input, output)
    }
}
