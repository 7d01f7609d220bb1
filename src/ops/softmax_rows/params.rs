//! [`SoftmaxParams`]: what `Softmax::new` prepares for
//! [`Method::FixedPoint`](crate::Method::FixedPoint), and the per-lane math
//! every backend runs on it (written once over [`Lane`]). Log-softmax shares
//! its two format constants.

use crate::checks::{check_quantization, required_output, FixedOutputOp};
use crate::elem::{ElemKind, QuantElem};
use crate::error::{Error, Result};
use crate::fixedpoint::{exp_on_negative_values, get_reciprocal_splat, FixedPoint, Lane, Q0_31};
use crate::quant::{
    calculate_input_radius, multiply_by_quantized_multiplier, preprocess_softmax_scaling,
    QuantParams,
};

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
        let output_bits = match T::KIND {
            ElemKind::I8 | ElemKind::U8 => 8,
            ElemKind::I16 => 15,
        };
        // TFLite's output quantization (scale 2^-output_bits, within 0.1%),
        // from the one table every op's `output_quantization()` reads.
        let Some((required, tolerance)) = required_output::<T>(FixedOutputOp::Softmax) else {
            return Err(Error::Unsupported {
                op: "softmax",
                dtype: T::NAME,
                reason: "no output quantization is defined for this type",
            });
        };
        debug_assert_eq!(required.scale, 1.0 / (1u32 << output_bits) as f32);
        let input_scale = check_quantization::<T>(
            "softmax",
            input,
            output,
            required.scale as f64,
            required.zero_point,
            tolerance,
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
        let radius = calculate_input_radius(SCALED_DIFF_INTEGER_BITS, input_shift, 31)?;
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
