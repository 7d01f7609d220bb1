//! Quantized softmax over the last axis.
//!
//! ```text
//! per row:
//!   max  = max(q)
//!   d    = q - max                              (<= 0, input steps)
//!   e(d) = exp_on_negative_values(d * beta * scale)   d rescaled to Q5.26, e in Q0.31
//!          only for d >= diff_min (smaller d would not fit Q5.26; their exp is 0)
//!   sum  = sum of e(d) rescaled to Q12.19       (TFLite: i32; qneon: i64;
//!                                               int16: exact Q0.31 sum)
//!   (r, n) = get_reciprocal(sum)                1/sum = r * 2^-n, r in Q0.31
//!   out  = rounding_divide_by_pot(r * e(d), n + 31 - output_bits) + zero_point, clamped
//! ```
//! This is TFLite's `reference_ops::Softmax` for int8/uint8 (and TFLite Micro's,
//! which is the same), with its `Prepare`: `PreprocessSoftmaxScaling` with 5
//! integer bits and `diff_min = -CalculateInputRadius(5, shift)`.
//!
//! Where the references fail, qneon answers correctly:
//! * TFLite's accumulator is a Q12.19 `i32`; once a row's sum of exps reaches
//!   512 its output shift passes 31 and the process aborts on a failed check
//!   (and at 4096 the sum itself overflows). qneon accumulates in `i64`, extends
//!   [`get_reciprocal`](crate::fixedpoint::get_reciprocal) to 64-bit sums and
//!   rounds shifts beyond 31 to zero; for sums below 512 nothing changes.
//! * TFLite aborts when `beta * scale * 2^26 <= 1`; qneon then uses a right-shift
//!   multiplier. `beta <= 0` is an [`Error`](crate::Error).
//!
//! On NEON, 8-bit `Method::FixedPoint` runs no per-element fixed-point math:
//! every per-element value above depends only on `d = max - x` (256 values),
//! so `new()` computes `e(d)` and its Q12.19 sum term for every `d` with the
//! reference's own code (`ops/softmax_rows/exact.rs`), and the kernel (`lut_neon/fixed.rs`,
//! `lut_neon/fixed_short.rs`) sums the terms by table lookups over their
//! byte planes (an exact integer sum, as the reference's `i64` one), takes
//! the reference's reciprocal of that same sum, and maps each row through
//! its outputs by `d`. It computes the reference's values, not
//! approximations of them, so it is bit-exact by construction (and tested
//! on every `d`).
//!
//! int16 `Method::FixedPoint` uses the same fixed-point algorithm with output
//! scale 1/32768 and an exact Q0.31 sum of exps. TFLite itself uses two
//! interpolated lookup tables for int16; `Method::Lut` reproduces that kernel
//! bit for bit (see `lut16.rs`), and is less accurate (its exps are Q0.15 and
//! floored at `exp(-10)`).

mod f32;
mod lut;
mod lut16;
#[cfg(all(target_arch = "aarch64", target_feature = "neon", feature = "std"))]
mod lut16_neon;
#[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
mod lut_neon;
#[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
mod neon;
mod scalar;
mod widening;

use self::lut16::SoftmaxLut16;
pub use self::widening::SoftmaxI8ToI16;
use super::method::{unsupported_method, Method};
use super::softmax_rows::{SoftmaxExact, SoftmaxF32, SoftmaxLut, SoftmaxParams};
use crate::backend::{unavailable, Backend};
use crate::checks::check_rows;
use crate::elem::{view, ElemKind, QuantElem};
#[cfg(not(feature = "std"))]
use crate::error::Error;
use crate::error::Result;
use crate::quant::QuantParams;
use core::marker::PhantomData;

/// Quantized softmax over rows of the last axis.
///
/// Output quantization (TFLite's): int8 scale 1/256 zero point -128, uint8 1/256
/// and 0, int16 1/32768 and 0. [`Method::FixedPoint`] is bit-exact with TFLite's
/// reference kernel and TFLite Micro for int8 and uint8, including rows where
/// they abort (see the module docs). [`Method::Lut`] (int16, with `std`) is
/// TFLite's int16 kernel bit for bit (it requires input zero point 0, as TFLite
/// does); its NEON backend gathers the exps from a 128 KiB table of them
/// (so the op is `Clone`, not `Copy`).
#[derive(Clone, Debug)]
pub struct Softmax<T: QuantElem> {
    params: SoftmaxParams,
    kernel: SoftmaxKernel,
    backend: Backend,
    _type: PhantomData<T>,
}

impl<T: QuantElem> Softmax<T> {
    /// Validates (scales finite and > 0, zero points in range, `beta` finite and
    /// > 0, output quantization as TFLite requires) and prepares the op.
    pub fn new(input: QuantParams, beta: f32, output: QuantParams, method: Method) -> Result<Self> {
        let params = SoftmaxParams::new::<T>(input, beta, output)?;
        let kernel = match method {
            Method::FixedPoint
                if T::MAX - T::MIN == 255
                    && cfg!(all(target_arch = "aarch64", target_feature = "neon")) =>
            {
                SoftmaxKernel::FixedExact(SoftmaxExact::new(&params))
            }
            Method::FixedPoint => SoftmaxKernel::FixedPoint,
            #[cfg(feature = "std")]
            Method::Lut if T::MAX - T::MIN == 255 => {
                SoftmaxKernel::Lut(SoftmaxLut::new::<T>(input.scale, beta, output))
            }
            Method::Lut if T::KIND == ElemKind::I16 => lut16_kernel(input, beta)?,
            Method::DequantF32 => SoftmaxKernel::DequantF32(SoftmaxF32::new(input, beta, output)),
            _ => return Err(unsupported_method::<T>("softmax", method)),
        };
        Ok(Softmax {
            params,
            kernel,
            backend: Backend::best(),
            _type: PhantomData,
        })
    }

    /// The prepared method's kernel on rows already checked: the one place
    /// that matches method and backend.
    fn run_kernel(
        &self,
        backend: Backend,
        input: &[T],
        output: &mut [T],
        row_len: usize,
    ) -> Result<()> {
        // An empty buffer has no rows whatever `row_len` says (`check_rows`
        // accepts any `row_len >= 1` there): no kernel runs, so none sizes
        // scratch or tables from a `row_len` the data does not back.
        if input.is_empty() {
            return if backend.is_available() {
                Ok(())
            } else {
                Err(unavailable(backend))
            };
        }
        match (&self.kernel, backend) {
            (SoftmaxKernel::FixedPoint, Backend::Scalar) => {
                scalar::softmax(&self.params, input, output, row_len)
            }
            #[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
            (SoftmaxKernel::FixedPoint, Backend::Neon) => match view(input, output).i16() {
                Some((i, o)) => neon::softmax_i16(&self.params, i, o, row_len),
                None => return Err(crate::checks::not_int16()),
            },
            (SoftmaxKernel::FixedExact(_), Backend::Scalar) => {
                scalar::softmax(&self.params, input, output, row_len)
            }
            #[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
            (SoftmaxKernel::FixedExact(table), Backend::Neon) => {
                match view(input, output).bytes() {
                    Some((i, o)) if T::MIN == -128 => {
                        lut_neon::softmax_exact_i8(&self.params, table, i, o, row_len)
                    }
                    Some((i, o)) => lut_neon::softmax_exact_u8(&self.params, table, i, o, row_len),
                    None => return Err(lut::not_8bit::<T>()),
                }
            }
            (SoftmaxKernel::Lut(lut), Backend::Scalar) => {
                lut::softmax_scalar(lut, input, output, row_len)
            }
            #[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
            (SoftmaxKernel::Lut(lut), Backend::Neon) => match view(input, output).bytes() {
                Some((i, o)) => lut_neon::softmax(lut, T::MIN == -128, i, o, row_len),
                None => return Err(lut::not_8bit::<T>()),
            },
            (SoftmaxKernel::Lut16(kernel), Backend::Scalar) => {
                lut16_rows(kernel, input, output, row_len)?
            }
            #[cfg(all(target_arch = "aarch64", target_feature = "neon", feature = "std"))]
            (SoftmaxKernel::Lut16(kernel), Backend::Neon) => match view(input, output).i16() {
                Some((i, o)) => lut16_neon::softmax(kernel, i, o, row_len),
                None => return Err(crate::checks::not_int16()),
            },
            (SoftmaxKernel::DequantF32(k), Backend::Scalar) => {
                f32::softmax_scalar(k, input, output, row_len)
            }
            #[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
            (SoftmaxKernel::DequantF32(k), Backend::Neon) => {
                f32::softmax_neon(k, input, output, row_len)
            }
            #[allow(unreachable_patterns)]
            (_, b) => return Err(unavailable(b)),
        }
        Ok(())
    }
}

/// int16 [`Method::Lut`] on int16 rows (`new()` prepares it for no other type;
/// the check keeps `run()` panic-free regardless).
fn lut16_rows<T: QuantElem>(
    kernel: &SoftmaxLut16,
    input: &[T],
    output: &mut [T],
    row_len: usize,
) -> Result<()> {
    match view(input, output).i16() {
        Some((input, output)) => {
            lut16::softmax_scalar(kernel, input, output, row_len);
            Ok(())
        }
        None => Err(crate::checks::not_int16()),
    }
}

/// What `Softmax::new` prepared for its method, beyond [`SoftmaxParams`].
// The tables live inline (prepared once, no allocation, `Copy`); the size
// difference to the table-less variants is intended.
#[allow(clippy::large_enum_variant)]
#[cfg_attr(not(feature = "std"), allow(dead_code))]
#[derive(Clone, Debug)]
enum SoftmaxKernel {
    /// int16 [`Method::FixedPoint`]: everything is in the params.
    FixedPoint,
    /// 8-bit [`Method::FixedPoint`]: the reference's exps, sum terms (and,
    /// per row, outputs) by `d = max - x` (see `softmax_rows/exact.rs`); the scalar
    /// backend runs the reference loop on the params. NEON targets only.
    #[cfg_attr(
        not(all(target_arch = "aarch64", target_feature = "neon")),
        allow(dead_code)
    )]
    FixedExact(SoftmaxExact),
    /// 8-bit [`Method::Lut`]: TFLite's aarch64 exp table (see `softmax_rows/lut.rs`).
    Lut(SoftmaxLut),
    /// int16 [`Method::Lut`]: TFLite's two 513-entry tables and input rescaling.
    Lut16(SoftmaxLut16),
    /// [`Method::DequantF32`]: the `f32` multipliers.
    DequantF32(SoftmaxF32),
}

/// int16 [`Method::Lut`]: TFLite's `Prepare` checks (input zero point 0) and
/// tables; needs `std`. `input` and `beta` are already validated.
#[allow(unused_variables)]
fn lut16_kernel(input: QuantParams, beta: f32) -> Result<SoftmaxKernel> {
    #[cfg(feature = "std")]
    {
        crate::checks::check_input_zero_point_is_zero(input.zero_point)?;
        Ok(SoftmaxKernel::Lut16(SoftmaxLut16::new(input.scale, beta)?))
    }
    #[cfg(not(feature = "std"))]
    {
        Err(Error::Unsupported {
            op: "softmax",
            dtype: "int16",
            reason: "Method::Lut for int16 needs the `std` feature (f64::exp while filling \
                     its tables); use Method::FixedPoint",
        })
    }
}

op_methods!(rows Softmax, SoftmaxParams, "softmax", "Softmax");
