//! Quantization parameters and TFLite's multiplier arithmetic.
//!
//! A real multiplier `M > 0` is stored as a Q0.31 `multiplier` in `[2^30, 2^31)`
//! and a power-of-two `shift`: `M = multiplier * 2^(shift - 31)`. TFLite has
//! two builds that apply it differently ([`Rounding`]): gemmlowp's double
//! rounding (a saturating rounding doubling high multiply, then a rounding
//! divide by `2^-shift`, ties away from zero; TensorFlow's bundled TFLite,
//! TFLite Micro) and single rounding (one 64-bit product, one rounding shift,
//! ties upward; LiteRT). The activation kernels (softmax, logistic, tanh)
//! follow the double-rounding arithmetic, which is what every TFLite build
//! uses inside them; the layer operators take a [`Rounding`] at prepare time.

use crate::error::{Error, Result};
use crate::fixedpoint::{libm_round, Lane};

/// Per-tensor affine quantization: `real = scale * (q - zero_point)`.
///
/// `scale` is `f32` because that is what a `.tflite` file stores; TFLite widens
/// it to `f64` before computing multipliers, and so does qneon.
///
/// [`quantize`](QuantParams::quantize) and [`dequantize`](QuantParams::dequantize)
/// convert `f32` slices to a [`QuantElem`](crate::QuantElem) type and back, as
/// TFLite's `QUANTIZE` and `DEQUANTIZE`; each op's required output
/// quantization is its `output_quantization()` (e.g.
/// [`Softmax::output_quantization`](crate::Softmax::output_quantization)).
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

/// How a requantizing operator applies a [`QuantizedMultiplier`]: the two
/// builds of TFLite, which give different bytes on ties and near the
/// extremes. Chosen at prepare time; the default is [`Rounding::Single`], as
/// LiteRT (TFLite's current runtime) is built.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Rounding {
    /// `TFLITE_SINGLE_ROUNDING`: `(x * multiplier + 2^(30 - shift)) >> (31 - shift)`
    /// in 64 bits (ties toward +infinity), shifts clamped to `-31..=30` when the
    /// multiplier is quantized. LiteRT 2.x, its reference and optimized
    /// kernels and XNNPACK's requantization of fully connected layers.
    #[default]
    Single,
    /// gemmlowp: `rounding_divide_by_pot(srdhm(x << max(shift, 0), multiplier),
    /// max(-shift, 0))` (ties away from zero). TensorFlow 2.19's bundled TFLite
    /// and TFLite Micro.
    Double,
}

impl Rounding {
    /// `"single"` or `"double"`.
    pub const fn name(self) -> &'static str {
        match self {
            Rounding::Single => "single",
            Rounding::Double => "double",
        }
    }

    /// TFLite's `QuantizeMultiplier` in this build: [`quantize_multiplier`],
    /// and for [`Rounding::Single`] shifts above 30 saturated to
    /// `(2^31 - 1, 30)` (the single-rounding product needs `31 - shift >= 1`).
    ///
    /// Errors for a multiplier that is negative or not finite.
    pub fn quantize_multiplier(self, real: f64) -> Result<QuantizedMultiplier> {
        let q = quantize_multiplier(real)?;
        Ok(match self {
            Rounding::Single if q.shift > 30 => QuantizedMultiplier {
                multiplier: i32::MAX,
                shift: 30,
            },
            _ => q,
        })
    }

    /// TFLite's `MultiplyByQuantizedMultiplier` of one `int32` in this build:
    /// the scalar reference every vector kernel is tested against.
    ///
    /// Single rounding keeps the exact 64-bit result and saturates it to
    /// `i32` (TFLite's cast would wrap; the two agree whenever the result
    /// fits, which TFLite asserts). Double rounding saturates its left shift
    /// (TFLite's overflows there, undefined in the C++; the two agree
    /// whenever `|x| * 2^shift < 2^31`).
    #[inline(always)]
    pub fn multiply(self, x: i32, q: QuantizedMultiplier) -> i32 {
        match self {
            Rounding::Single => multiply_by_quantized_multiplier_single(x, q.multiplier, q.shift),
            Rounding::Double if q.shift > 0 => {
                let shifted = (x as i64) << q.shift.min(32);
                let saturated = shifted.clamp(i32::MIN as i64, i32::MAX as i64) as i32;
                multiply_by_quantized_multiplier(saturated, q.multiplier, 0)
            }
            Rounding::Double => multiply_by_quantized_multiplier(x, q.multiplier, q.shift),
        }
    }
}

/// How a fully connected layer turns its int32 accumulator into output
/// units. TFLite's kernels differ here: every build's optimized kernels and
/// TensorFlow 2.19's reference kernels apply the quantized multiplier (in
/// the build's [`Rounding`]), while LiteRT's reference `FULLY_CONNECTED`
/// (since April 2025) multiplies by the unquantized real multiplier in `f64`.
/// The two differ on values within about 2^-31 of a rounding tie.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Requantization {
    /// [`Rounding::multiply`] by the [`QuantizedMultiplier`] of the real
    /// multiplier.
    Multiplier(Rounding),
    /// `round(f64(acc) * real)` with `real = f64(input_scale) *
    /// f64(weight_scale) / f64(output_scale)` (each operation rounded in
    /// `f64`, in that order), `round` to nearest with ties away from zero, the
    /// result saturated to `i32` (where the C++ cast would be undefined).
    /// LiteRT's reference `FULLY_CONNECTED`.
    RealF64,
    /// The XNNPACK delegate's `fp32` requantization (its qs8 / qc8w GEMM):
    /// `f32(acc) * scale` with `scale = f32(input_scale) *
    /// f32(weight_scale) / f32(output_scale)` (each operation rounded in
    /// `f32`), rounded to nearest with ties to even, saturated to `i32`
    /// ([`requantize_xnnpack_f32`]). Its fused activation's bounds are
    /// quantized as XNNPACK does
    /// ([`FusedActivation::range_i8_xnnpack`](crate::ops::requant::FusedActivation::range_i8_xnnpack)).
    XnnpackF32,
    /// LiteRT's aarch64 custom GEMV (its optimized FULLY_CONNECTED on one
    /// input row, at least 4 output channels and 8 inputs):
    /// `srshl(sqrdmulh(acc << left, multiplier), -right)` with the
    /// [`QuantizedMultiplier`] of the real multiplier
    /// ([`requantize_gemv_ties_upward`]): two roundings, the last one's ties
    /// toward +infinity, the left shift wrapping.
    GemvTiesUpward,
}

impl Default for Requantization {
    /// `Multiplier(Rounding::Single)`.
    fn default() -> Self {
        Requantization::Multiplier(Rounding::Single)
    }
}

impl From<Rounding> for Requantization {
    fn from(rounding: Rounding) -> Self {
        Requantization::Multiplier(rounding)
    }
}

impl Requantization {
    /// `"single"`, `"double"`, `"real-f64"`, `"xnnpack-f32"` or
    /// `"gemv-ties-upward"`.
    pub const fn name(self) -> &'static str {
        match self {
            Requantization::Multiplier(r) => r.name(),
            Requantization::RealF64 => "real-f64",
            Requantization::XnnpackF32 => "xnnpack-f32",
            Requantization::GemvTiesUpward => "gemv-ties-upward",
        }
    }
}

/// [`Requantization::RealF64`] of one accumulator: `round(f64(acc) * real)`,
/// ties away from zero, saturated to `i32`. `real` must be finite (the
/// product then is too: `|acc| < 2^31`).
#[inline(always)]
pub fn requantize_real_f64(acc: i32, real: f64) -> i32 {
    let y = libm_round(acc as f64 * real);
    // `as` saturates (and the product is never NaN for a finite `real`).
    y as i32
}

/// Rounds an `f32` to the nearest integer, ties to even (C's `rintf` in
/// the default rounding mode, NEON `frintn`), as an `f32`.
#[inline(always)]
pub fn round_ties_even_f32(x: f32) -> f32 {
    /// 2^23: from here up every `f32` is an integer, and adding it to a
    /// magnitude below it leaves exactly the integer part plus the rounding.
    const INTEGRAL: f32 = 8_388_608.0;
    let magnitude = x.abs();
    if magnitude >= INTEGRAL {
        return x;
    }
    // |x| + 2^23 lies in [2^23, 2^24), where the spacing is 1: the addition
    // rounds |x| to an integer, ties to even (2^23 is even).
    let rounded = (magnitude + INTEGRAL) - INTEGRAL;
    if x.is_sign_negative() {
        -rounded
    } else {
        rounded
    }
}

/// [`Requantization::XnnpackF32`] of one accumulator: `f32(acc) * scale`
/// rounded to nearest, ties to even, saturated to `i32` (NEON `fcvtns`).
/// `scale` must be finite.
#[inline(always)]
pub fn requantize_xnnpack_f32(acc: i32, scale: f32) -> i32 {
    // `as` saturates (the product is finite: |acc| < 2^31, scale finite).
    round_ties_even_f32(acc as f32 * scale) as i32
}

/// [`Requantization::GemvTiesUpward`] of one accumulator, the multiplier's
/// `shift` in `-31..=30`: `acc` shifted left by `max(shift, 0)` (wrapping,
/// NEON `shl`), the rounding doubling high product with `multiplier`
/// (saturating), then shifted right by `max(-shift, 0)` rounding to nearest
/// with ties toward +infinity (NEON `srshl`).
#[inline(always)]
pub fn requantize_gemv_ties_upward(acc: i32, multiplier: i32, shift: i32) -> i32 {
    let shift = shift.clamp(-31, 30);
    let x = acc.wrapping_shl(shift.max(0) as u32);
    let high = crate::fixedpoint::Lane::saturating_rounding_doubling_high_mul(x, multiplier);
    rounding_shift_ties_upward(high, shift.min(0))
}

/// `x / 2^-neg_exponent` rounded to nearest with ties toward +infinity
/// (NEON `srshl` by a negative amount, in `-31..=0`).
#[inline(always)]
pub(crate) fn rounding_shift_ties_upward(x: i32, neg_exponent: i32) -> i32 {
    debug_assert!((-31..=0).contains(&neg_exponent));
    if neg_exponent == 0 {
        return x;
    }
    let n = neg_exponent.unsigned_abs();
    ((x as i64 + (1i64 << (n - 1))) >> n) as i32
}

/// The single-rounding `MultiplyByQuantizedMultiplier`:
/// `(x * multiplier + 2^(30 - shift)) >> (31 - shift)` in `i64`, saturated to
/// `i32`. `shift` must be in `-31..=30` (what [`Rounding::quantize_multiplier`]
/// gives); out-of-range shifts are clamped into it so the shift amount stays
/// defined.
#[inline(always)]
pub fn multiply_by_quantized_multiplier_single(x: i32, multiplier: i32, shift: i32) -> i32 {
    let total_shift = (31 - shift.clamp(-31, 30)) as u32; // 1..=62
    let round = 1i64 << (total_shift - 1);
    let result = (x as i64 * multiplier as i64 + round) >> total_shift;
    result.clamp(i32::MIN as i64, i32::MAX as i64) as i32
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
///
/// `total_signed_bits` is the fixed-point format's bits without the sign
/// (31 for `int32`, 15 for `int16`) and must be at most 31, `input_integer_bits`
/// at most `total_signed_bits` ([`Error::OutOfDomain`], [`Error::IntegerBits`]).
/// Any `input_left_shift` is accepted.
pub fn calculate_input_radius(
    input_integer_bits: u32,
    input_left_shift: i32,
    total_signed_bits: u32,
) -> Result<i32> {
    const OP: &str = "calculate_input_radius";
    if total_signed_bits > 31 {
        return Err(Error::OutOfDomain {
            op: OP,
            what: "total_signed_bits",
            value: total_signed_bits as f64,
            requirement: "at most 31",
        });
    }
    if input_integer_bits > total_signed_bits {
        return Err(Error::IntegerBits {
            op: OP,
            value: input_integer_bits,
            max: total_signed_bits,
        });
    }
    let max_input_rescaled = ((1u64 << input_integer_bits) - 1) as f64
        * (1u64 << (total_signed_bits - input_integer_bits)) as f64
        / pow2(input_left_shift);
    let floored = floor(max_input_rescaled);
    Ok(if floored >= i32::MAX as f64 {
        i32::MAX
    } else {
        floored as i32
    })
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
///
/// Errors: `beta` not finite and `> 0` ([`Error::Beta`]), `input_scale` not
/// finite and `> 0` ([`Error::Scale`]), `input_integer_bits` above 31
/// ([`Error::IntegerBits`]). A product that overflows `f64` is capped like
/// any other above `2^31 - 1`.
pub fn preprocess_softmax_scaling(
    beta: f64,
    input_scale: f64,
    input_integer_bits: u32,
) -> Result<QuantizedMultiplier> {
    if !(beta.is_finite() && beta > 0.0) {
        return Err(Error::Beta { value: beta });
    }
    if !(input_scale.is_finite() && input_scale > 0.0) {
        return Err(Error::Scale {
            what: "input scale",
            value: input_scale,
        });
    }
    if input_integer_bits > 31 {
        return Err(Error::IntegerBits {
            op: "preprocess_softmax_scaling",
            value: input_integer_bits,
            max: 31,
        });
    }
    let max_real_multiplier = ((1u64 << 31) - 1) as f64;
    let real = beta * input_scale * (1u64 << (31 - input_integer_bits)) as f64;
    // `min` also caps an infinite product (both factors finite, so never NaN).
    quantize_multiplier(real.min(max_real_multiplier))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `round_half_up(x * multiplier / 2^(31 - shift))` in exact `i128`
    /// arithmetic: what single rounding must equal.
    fn exact_half_up(x: i32, multiplier: i32, shift: i32) -> i128 {
        let p = x as i128 * multiplier as i128;
        let d = 1i128 << (31 - shift);
        (2 * p + d).div_euclid(2 * d)
    }

    #[test]
    fn single_rounding_is_the_exact_product_rounded_half_up() {
        let xs = [
            0,
            1,
            -1,
            2,
            -2,
            3,
            -3,
            1 << 20,
            -(1 << 20),
            i32::MAX,
            i32::MIN,
            12345,
            -98765,
        ];
        let ms = [0, 1, 1 << 30, (1 << 30) + 1, i32::MAX, 1_518_500_250];
        for &x in &xs {
            for &m in &ms {
                for shift in -31..=30 {
                    let expect =
                        exact_half_up(x, m, shift).clamp(i32::MIN as i128, i32::MAX as i128) as i32;
                    let q = QuantizedMultiplier {
                        multiplier: m,
                        shift,
                    };
                    assert_eq!(
                        Rounding::Single.multiply(x, q),
                        expect,
                        "x {x} m {m} s {shift}"
                    );
                }
            }
        }
    }

    #[test]
    fn single_and_double_rounding_differ_on_negative_ties_of_the_right_shift() {
        // 0.25 = 2^30 * 2^(-1 - 31): -6 * 0.25 = -1.5 is a tie.
        let quarter = QuantizedMultiplier {
            multiplier: 1 << 30,
            shift: -1,
        };
        assert_eq!(Rounding::Single.multiply(6, quarter), 2);
        assert_eq!(Rounding::Double.multiply(6, quarter), 2);
        // Single rounds the tie up; double's rounding divide rounds it away from zero.
        assert_eq!(Rounding::Single.multiply(-6, quarter), -1);
        assert_eq!(Rounding::Double.multiply(-6, quarter), -2);
    }

    #[test]
    fn single_rounding_build_caps_large_shifts() {
        let big = 2f64.powi(40);
        assert_eq!(quantize_multiplier(big).unwrap().shift, 41);
        let q = Rounding::Single.quantize_multiplier(big).unwrap();
        assert_eq!((q.multiplier, q.shift), (i32::MAX, 30));
        assert_eq!(Rounding::Double.quantize_multiplier(big).unwrap().shift, 41);
        let tiny = Rounding::Single
            .quantize_multiplier(2f64.powi(-40))
            .unwrap();
        assert_eq!((tiny.multiplier, tiny.shift), (0, 0));
    }
}
