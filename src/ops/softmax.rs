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
//! int16 `Method::FixedPoint` uses the same fixed-point algorithm with output
//! scale 1/32768 and an exact Q0.31 sum of exps. TFLite itself uses two
//! interpolated lookup tables for int16; `Method::Lut` reproduces that kernel
//! bit for bit (see `lut16`), and is less accurate (its exps are Q0.15 and
//! floored at `exp(-10)`).

use super::dequant_f32::{self, SoftmaxF32};
use super::lut16::{self, SoftmaxLut16};
use super::softmax_lut::{self, SoftmaxLut};
use super::{check_quantization, check_rows, unsupported_method, Method, QuantElem};
use crate::arch::{self, Backend};
use crate::error::{Error, Result};
use crate::fixedpoint::{exp_on_negative_values, get_reciprocal_splat, FixedPoint, Lane, Q0_31};
use crate::quant::{
    calculate_input_radius, multiply_by_quantized_multiplier, preprocess_softmax_scaling,
    QuantParams,
};
use core::marker::PhantomData;

/// Integer bits of the scaled input difference (Q5.26), as in TFLite.
pub(crate) const SCALED_DIFF_INTEGER_BITS: u32 = 5;
/// Integer bits of the sum of exps (Q12.19), as in TFLite.
pub(crate) const ACCUMULATION_INTEGER_BITS: u32 = 12;

/// Everything the softmax kernels need, computed once by `new()`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SoftmaxParams {
    /// Q0.31 mantissa of `beta * scale * 2^26` (capped at `2^31 - 1`).
    pub input_multiplier: i32,
    /// Its power-of-two exponent (a left shift when positive).
    pub input_shift: i32,
    /// Differences below this (in input steps) contribute exp = 0.
    pub diff_min: i32,
    /// Fraction bits of the output: 8 (scale 1/256) or 15 (scale 1/32768).
    pub output_bits: u32,
    /// Integer bits of the sum of exps: 12 (TFLite's Q12.19, each exp rounded
    /// to 2^-19) for 8-bit types; 0 for int16, whose sum is exact (Q0.31 in 64
    /// bits) because the per-term rounding would cost up to `(n - 1)/32`
    /// output steps at 15-bit output precision.
    pub accumulation_integer_bits: u32,
    /// Output zero point (the quantized probability 0).
    pub output_zero_point: i32,
}

impl SoftmaxParams {
    /// Validates and prepares softmax for element type `T`.
    pub fn new<T: QuantElem>(input: QuantParams, beta: f32, output: QuantParams) -> Result<Self> {
        let (expected_scale, expected_zero_point, output_bits) = match T::NAME {
            "int8" => (1.0 / 256.0, -128, 8),
            "uint8" => (1.0 / 256.0, 0, 8),
            _ => (1.0 / 32768.0, 0, 15),
        };
        let input_scale = check_quantization::<T>(
            "softmax",
            input,
            output,
            expected_scale,
            expected_zero_point,
            0.001,
        )?;
        if !(beta.is_finite() && beta > 0.0) {
            return Err(Error::Beta { value: beta as f64 });
        }
        let m = preprocess_softmax_scaling(beta as f64, input_scale, SCALED_DIFF_INTEGER_BITS)?;
        let (input_multiplier, input_shift) = if m.shift < -31 {
            (0, 0)
        } else {
            (m.multiplier, m.shift)
        };
        let radius = calculate_input_radius(SCALED_DIFF_INTEGER_BITS, input_shift, 31);
        Ok(SoftmaxParams {
            input_multiplier,
            input_shift,
            diff_min: -radius,
            output_bits,
            accumulation_integer_bits: if output_bits == 8 {
                ACCUMULATION_INTEGER_BITS
            } else {
                0
            },
            output_zero_point: output.zero_point,
        })
    }

    /// `exp(d * beta * scale)` in Q0.31 for input differences `d <= 0` with
    /// `d >= diff_min` (other lanes give garbage the caller masks).
    #[inline(always)]
    pub(crate) fn exp_of_diff<L: Lane>(&self, diff: L) -> Q0_31<L> {
        let scaled =
            multiply_by_quantized_multiplier(diff, self.input_multiplier, self.input_shift);
        exp_on_negative_values(FixedPoint::<L, SCALED_DIFF_INTEGER_BITS>::from_raw(scaled))
    }

    /// One exp's contribution to the sum, in the accumulation format
    /// (rounded to Q12.19, or the exact Q0.31 value).
    #[inline(always)]
    pub(crate) fn sum_term(&self, exp: Q0_31<i32>) -> i64 {
        // exp >= 0, so the rounding needs no sign fix-up.
        exp.raw()
            .rounding_divide_by_pot_non_negative(self.accumulation_integer_bits) as i64
    }

    /// The reciprocal of a row's sum of exps (raw, `accumulation_integer_bits`
    /// integer bits; at least 1 in real terms):
    /// `(scale in Q0.31, output rounding exponent)`.
    #[inline(always)]
    pub(crate) fn reciprocal<L: Lane>(&self, sum_of_exps: i64) -> (L, u32) {
        let (scale, num_bits_over_unit) =
            get_reciprocal_splat::<L>(sum_of_exps, self.accumulation_integer_bits as i32);
        // num_bits_over_unit >= 0 since the row's maximum contributes exp(0) = 1.
        let exponent = num_bits_over_unit + 31 - self.output_bits as i32;
        debug_assert!(exponent >= 0);
        (scale, exponent as u32)
    }

    /// Quantized output for one exp value: `exp * scale / 2^exponent`, shifted
    /// by the zero point, before saturation to the element type. Exponents above 31 (only reached by sums
    /// TFLite cannot represent) round a value below 2^31 to 0.
    #[inline(always)]
    pub(crate) fn output<L: Lane>(&self, exp: Q0_31<L>, scale: L, exponent: u32) -> L {
        // exp >= 0 and scale > 0, so the product is non-negative.
        let product = exp.raw().saturating_rounding_doubling_high_mul(scale);
        let unsat = if exponent <= 31 {
            product.rounding_divide_by_pot_non_negative(exponent)
        } else {
            L::splat(0)
        };
        // Not clamped: saturating to the element type is the store's job (the
        // scalar store clamps, NEON narrows with saturation; the same values).
        unsat.add(L::splat(self.output_zero_point))
    }
}

/// Quantized softmax over rows of the last axis.
///
/// Output quantization (TFLite's): int8 scale 1/256 zero point -128, uint8 1/256
/// and 0, int16 1/32768 and 0. [`Method::FixedPoint`] is bit-exact with TFLite's
/// reference kernel and TFLite Micro for int8 and uint8, including rows where
/// they abort (see the module docs). [`Method::Lut`] (int16, with `std`) is
/// TFLite's int16 kernel bit for bit (it requires input zero point 0, as TFLite
/// does); it runs the same scalar code on every backend.
#[derive(Clone, Copy, Debug)]
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
            Method::FixedPoint => SoftmaxKernel::FixedPoint,
            #[cfg(feature = "std")]
            Method::Lut if T::MAX - T::MIN == 255 => {
                SoftmaxKernel::Lut(SoftmaxLut::new::<T>(input.scale, beta, output))
            }
            Method::Lut if T::NAME == "int16" => lut16_kernel(input, beta)?,
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

    /// The prepared method's kernel on rows already checked.
    fn run_kernel(
        &self,
        backend: Backend,
        input: &[T],
        output: &mut [T],
        row_len: usize,
    ) -> Result<()> {
        match &self.kernel {
            SoftmaxKernel::FixedPoint => {
                arch::softmax(backend, &self.params, input, output, row_len)
            }
            SoftmaxKernel::Lut(lut) => softmax_lut::softmax(backend, lut, input, output, row_len),
            SoftmaxKernel::Lut16(kernel) => match lut16::as_i16(input, output) {
                Some((input, output)) => kernel.run(backend, input, output, row_len),
                None => Err(lut16::not_int16()),
            },
            SoftmaxKernel::DequantF32(k) => {
                dequant_f32::softmax(backend, k, input, output, row_len)
            }
        }
    }
}

/// What `Softmax::new` prepared for its method, beyond [`SoftmaxParams`].
// The tables live inline (prepared once, no allocation, `Copy`); the size
// difference to the table-less variants is intended.
#[allow(clippy::large_enum_variant)]
#[cfg_attr(not(feature = "std"), allow(dead_code))]
#[derive(Clone, Copy, Debug)]
enum SoftmaxKernel {
    /// [`Method::FixedPoint`]: everything is in the params.
    FixedPoint,
    /// 8-bit [`Method::Lut`]: TFLite's aarch64 exp table (see `softmax_lut`).
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
        lut16::check_input_zero_point(input.zero_point)?;
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

row_op_methods!(Softmax, SoftmaxParams, "softmax", "Softmax");
