//! Quantization parameters and TFLite's multiplier arithmetic.
//!
//! A real multiplier `M > 0` is stored as a Q0.31 `multiplier` in `[2^30, 2^31)`
//! and a power-of-two `shift`: `M = multiplier * 2^(shift - 31)`. Applying it
//! rounds twice, as TFLite's default build does: a saturating rounding doubling
//! high multiply, then a rounding divide by `2^-shift` (ties away from zero).
//! ruy's single-rounding variant gives different bytes and is not used.

use crate::error::{Error, Result};
use crate::fixedpoint::{libm_round, Lane};

/// Per-tensor affine quantization: `real = scale * (q - zero_point)`.
///
/// `scale` is `f32` because that is what a `.tflite` file stores; TFLite widens
/// it to `f64` before computing multipliers, and so does qneon.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct QuantParams {
    /// Real value of one quantization step; finite and `> 0`.
    pub scale: f32,
    /// The quantized value that represents real zero; within the element type's range.
    pub zero_point: i32,
}

impl QuantParams {
    /// Shorthand constructor.
    pub const fn new(scale: f32, zero_point: i32) -> Self {
        QuantParams { scale, zero_point }
    }
}

/// A real multiplier as TFLite stores it: `multiplier * 2^(shift - 31)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QuantizedMultiplier {
    /// Q0.31 mantissa in `[2^30, 2^31)`, or 0 for a zero multiplier.
    pub multiplier: i32,
    /// Power-of-two exponent; positive means a left shift.
    pub shift: i32,
}

/// `frexp` without `std`: `x = m * 2^e` with `|m|` in `[0.5, 1)`; `(0, 0)` for 0.
/// Only called on finite values.
pub(crate) fn frexp(x: f64) -> (f64, i32) {
    if x == 0.0 || !x.is_finite() {
        return (x, 0);
    }
    let bits = x.to_bits();
    let exp_field = ((bits >> 52) & 0x7ff) as i32;
    if exp_field == 0 {
        // Subnormal: scale into the normal range first.
        let (m, e) = frexp(x * (1u64 << 54) as f64);
        return (m, e - 54);
    }
    let e = exp_field - 1022;
    let m = f64::from_bits((bits & !(0x7ffu64 << 52)) | (1022u64 << 52));
    (m, e)
}

/// TFLite's `QuantizeMultiplier` (default, double-rounding build): the Q0.31
/// mantissa rounded half away from zero, renormalised when rounding reaches
/// `2^31`; multipliers below `2^-32` become zero. Shifts are not capped (only
/// TFLite's single-rounding build caps them at 30).
///
/// Errors for a multiplier that is negative or not finite.
pub fn quantize_multiplier(real: f64) -> Result<QuantizedMultiplier> {
    if !real.is_finite() || real < 0.0 {
        return Err(Error::Multiplier { value: real });
    }
    if real == 0.0 {
        return Ok(QuantizedMultiplier {
            multiplier: 0,
            shift: 0,
        });
    }
    let (q, mut shift) = frexp(real);
    let mut q_fixed = libm_round(q * (1u64 << 31) as f64) as i64;
    debug_assert!(q_fixed <= 1 << 31);
    if q_fixed == 1 << 31 {
        q_fixed /= 2;
        shift += 1;
    }
    if shift < -31 {
        shift = 0;
        q_fixed = 0;
    }
    Ok(QuantizedMultiplier {
        multiplier: q_fixed as i32,
        shift,
    })
}

/// [`quantize_multiplier`] of a positive normal `f32`, straight from its
/// bits: an `f32` mantissa has 24 bits, so its Q0.31 form is exact (no
/// rounding, never `2^31`) and equals what the `f64` path computes.
/// `None` for zero, subnormals, infinities, NaN and negative values.
#[inline(always)]
pub(crate) fn quantize_multiplier_f32(x: f32) -> Option<QuantizedMultiplier> {
    let bits = x.to_bits();
    // The sign bit is part of the field here, so negative values land >= 256.
    let exp_field = (bits >> 23) as i32;
    if exp_field == 0 || exp_field >= 255 {
        return None;
    }
    // x = 1.m * 2^(E - 127) = (1.m / 2) * 2^(E - 126), and 1.m / 2 in Q0.31
    // is the 24-bit mantissa shifted left by 7.
    let shift = exp_field - 126;
    if shift < -31 {
        return Some(QuantizedMultiplier {
            multiplier: 0,
            shift: 0,
        });
    }
    Some(QuantizedMultiplier {
        multiplier: (((bits & 0x7f_ffff) | 0x80_0000) << 7) as i32,
        shift,
    })
}

/// TFLite's `MultiplyByQuantizedMultiplier` (double rounding):
/// `rounding_divide_by_pot(srdhm(x * 2^left, multiplier), right)`.
///
/// The left shift wraps like the C++ (which assumes it does not overflow);
/// callers keep `|x| * 2^shift < 2^31`.
#[inline(always)]
pub fn multiply_by_quantized_multiplier<L: Lane>(x: L, multiplier: i32, shift: i32) -> L {
    if shift >= 0 {
        // The rounding divide by 2^0 is the identity; skipping it keeps the
        // vector loops free of four dead instructions (the branch is loop-invariant).
        x.shl(shift as u32)
            .saturating_rounding_doubling_high_mul(L::splat(multiplier))
    } else {
        x.saturating_rounding_doubling_high_mul(L::splat(multiplier))
            .rounding_divide_by_pot(shift.unsigned_abs())
    }
}

/// TFLite's `MultiplyByQuantizedMultiplierGreaterThanOne`: `srdhm(x * 2^left_shift, multiplier)`.
#[inline(always)]
pub fn multiply_by_quantized_multiplier_greater_than_one<L: Lane>(
    x: L,
    multiplier: i32,
    left_shift: u32,
) -> L {
    x.shl(left_shift)
        .saturating_rounding_doubling_high_mul(L::splat(multiplier))
}

/// TFLite's `CalculateInputRadius`: the largest input difference (in input
/// quantization steps) whose rescaled value still fits `input_integer_bits`,
/// `floor((2^I - 1) * 2^(total_signed_bits - I) / 2^input_left_shift)`,
/// saturated to `i32::MAX` (the C++ cast would overflow for tiny scales).
pub fn calculate_input_radius(
    input_integer_bits: u32,
    input_left_shift: i32,
    total_signed_bits: u32,
) -> i32 {
    let max_input_rescaled = ((1u64 << input_integer_bits) - 1) as f64
        * (1u64 << (total_signed_bits - input_integer_bits)) as f64
        / pow2(input_left_shift);
    let floored = floor(max_input_rescaled);
    if floored >= i32::MAX as f64 {
        i32::MAX
    } else {
        floored as i32
    }
}

/// `2^e` as `f64`, exact for the exponents used here.
pub(crate) fn pow2(e: i32) -> f64 {
    f64::from_bits(((1023 + e.clamp(-1022, 1023)) as u64) << 52)
}

/// `floor` without `std`, for non-negative finite values below 2^63.
fn floor(x: f64) -> f64 {
    debug_assert!(x >= 0.0);
    (x as u64) as f64
}

/// The softmax-style input scaling TFLite computes in `Prepare`
/// (`PreprocessSoftmaxScaling`): `beta * input_scale * 2^(31 - input_integer_bits)`
/// capped at `2^31 - 1`, quantized. The product `diff * multiplier` then is the
/// scaled difference `beta * scale * diff` in Q(input_integer_bits).
pub fn preprocess_softmax_scaling(
    beta: f64,
    input_scale: f64,
    input_integer_bits: u32,
) -> Result<QuantizedMultiplier> {
    let max_real_multiplier = ((1u64 << 31) - 1) as f64;
    let real = beta * input_scale * (1u64 << (31 - input_integer_bits)) as f64;
    let real = if real < max_real_multiplier {
        real
    } else {
        max_real_multiplier
    };
    quantize_multiplier(real)
}
