//! The arithmetic of TFLite's quantized RELU family and LEAKY_RELU, one
//! element at a time: the scalar oracle both backends follow (the NEON
//! one through a 256-entry table built from it).

use crate::checks::{check_scale, check_zero_point};
use crate::elem::QuantElem;
use crate::error::{Error, Result};
use crate::fixedpoint::libm_round;
use crate::quant::{QuantParams, QuantizedMultiplier, Rounding};

/// Which clamp of TFLite's `ReluX` a [`Relu`](super::Relu) applies.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReluKind {
    /// `RELU`: `max(x, 0)`.
    Relu,
    /// `RELU6`: `min(max(x, 0), 6)`.
    Relu6,
    /// `RELU_N1_TO_1`: `min(max(x, -1), 1)`.
    ReluN1To1,
}

impl ReluKind {
    /// The real bounds `[lower, upper]` (`upper` infinite for RELU).
    fn bounds(self) -> (f32, f32) {
        match self {
            ReluKind::Relu => (0.0, f32::INFINITY),
            ReluKind::Relu6 => (0.0, 6.0),
            ReluKind::ReluN1To1 => (-1.0, 1.0),
        }
    }
}

/// Checks the quantization of an 8-bit element-wise activation.
fn check<T: QuantElem>(op: &'static str, input: QuantParams, output: QuantParams) -> Result<()> {
    if T::NAME == "int16" {
        return Err(Error::Unsupported {
            op,
            dtype: T::NAME,
            reason: "built for int8 and uint8",
        });
    }
    check_scale("input scale", input.scale)?;
    check_zero_point::<T>("input zero point", input.zero_point)?;
    check_scale("output scale", output.scale)?;
    check_zero_point::<T>("output zero point", output.zero_point)?;
    Ok(())
}

/// TFLite's quantized `ReluX`: `clamp(zp_out + multiply(x - zp_in))` with
/// the multiplier of `f32(s_in / s_out)` and the clamp
/// `[max(T::MIN, zp_out + roundf(lower / s_out)), min(T::MAX, zp_out +
/// roundf(upper / s_out))]`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct ReluParams {
    pub input_zero_point: i32,
    pub output_zero_point: i32,
    pub multiplier: QuantizedMultiplier,
    pub min: i32,
    pub max: i32,
}

impl ReluParams {
    pub(crate) fn new<T: QuantElem>(
        kind: ReluKind,
        input: QuantParams,
        output: QuantParams,
    ) -> Result<Self> {
        check::<T>("relu", input, output)?;
        // TFLite divides the scales in f32 and widens the quotient.
        let ratio = input.scale / output.scale;
        let multiplier = Rounding::Double.quantize_multiplier(ratio as f64)?;
        let (lower, upper) = kind.bounds();
        // roundf of the f32 quotient (exact in f64), half away from zero.
        let steps = |real: f32| libm_round((real / output.scale) as f64);
        let clamp_i32 = |x: f64| x.clamp(i32::MIN as f64, i32::MAX as f64) as i32;
        let min = T::MIN.max(clamp_i32(output.zero_point as f64 + steps(lower)));
        let max = if upper.is_infinite() {
            T::MAX
        } else {
            T::MAX.min(clamp_i32(output.zero_point as f64 + steps(upper)))
        };
        Ok(ReluParams {
            input_zero_point: input.zero_point,
            output_zero_point: output.zero_point,
            multiplier,
            min,
            max,
        })
    }

    /// The output of one input value.
    #[inline(always)]
    pub(crate) fn apply(&self, x: i32) -> i32 {
        let scaled = Rounding::Double.multiply(x - self.input_zero_point, self.multiplier);
        // min before max as TFLite (`max(min_q, .)` then `min(max_q, .)`),
        // so an empty range gives max_q.
        scaled
            .saturating_add(self.output_zero_point)
            .max(self.min)
            .min(self.max)
    }
}

/// Quantized `LEAKY_RELU` in one of two arithmetics:
///
/// * TFLite's: `x - zp_in` times the identity multiplier `f32(s_in /
///   s_out)` where it is at least 0, times the alpha multiplier
///   `f32(s_in * alpha / s_out)` below, plus `zp_out`, saturated;
/// * XNNPACK's (its `qs8` / `qu8` `vlrelu`): 8 fractional bits,
///   `((x - zp_in) * m + 128) >> 8` plus `zp_out`, saturated, with
///   `m = lrintf(256 * r)` for `r = f32(s_in / s_out)` where `x - zp_in >=
///   0` and `r = f32(f32(s_in / s_out) * alpha)` below.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct LeakyReluParams {
    pub input_zero_point: i32,
    pub output_zero_point: i32,
    pub slopes: LeakySlopes,
}

/// The two slopes of a [`LeakyReluParams`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum LeakySlopes {
    /// TFLite's `MultiplyByQuantizedMultiplier` pair (double rounding).
    Tflite {
        identity: QuantizedMultiplier,
        alpha: QuantizedMultiplier,
    },
    /// XNNPACK's multipliers with 8 fractional bits (Q8).
    Xnnpack { positive: i32, negative: i32 },
}

impl LeakyReluParams {
    pub(crate) fn new<T: QuantElem>(
        alpha: f32,
        input: QuantParams,
        output: QuantParams,
    ) -> Result<Self> {
        check_alpha::<T>(alpha, input, output)?;
        // In f32, in TFLite's order: s_in * alpha / s_out.
        let alpha_real = input.scale * alpha / output.scale;
        let identity_real = input.scale / output.scale;
        Ok(LeakyReluParams {
            input_zero_point: input.zero_point,
            output_zero_point: output.zero_point,
            slopes: LeakySlopes::Tflite {
                identity: Rounding::Double.quantize_multiplier(identity_real as f64)?,
                alpha: Rounding::Double.quantize_multiplier(alpha_real as f64)?,
            },
        })
    }

    /// XNNPACK's arithmetic. Errors beyond [`new`](Self::new)'s: the ratios
    /// XNNPACK refuses ([`Error::Unsupported`]; the delegate then leaves
    /// the op to TFLite): `s_in / s_out` outside `[2^-8, 2^7]`, the
    /// negative ratio above `2^7` or below `2^-8` in magnitude (alpha 0
    /// among them).
    pub(crate) fn new_xnnpack<T: QuantElem>(
        alpha: f32,
        input: QuantParams,
        output: QuantParams,
    ) -> Result<Self> {
        check_alpha::<T>(alpha, input, output)?;
        // Each an f32 operation, in XNNPACK's order.
        let positive = input.scale / output.scale;
        let negative = positive * alpha;
        let limits = |r: f32| (1.0f32 / 256.0..=128.0).contains(&r);
        if !limits(positive) || !limits(negative) {
            return Err(Error::Unsupported {
                op: "leaky_relu",
                dtype: T::NAME,
                reason: "XNNPACK takes input/output scale ratios (and their product with alpha) \
                         in [2^-8, 2^7] only",
            });
        }
        // Both products are exact (a power-of-two factor); `round_ties_even`
        // is lrintf's default rounding.
        let q8 = |r: f32| crate::quant::round_ties_even_f32(256.0 * r) as i32;
        Ok(LeakyReluParams {
            input_zero_point: input.zero_point,
            output_zero_point: output.zero_point,
            slopes: LeakySlopes::Xnnpack {
                positive: q8(positive),
                negative: q8(negative),
            },
        })
    }

    /// The output of one input value, before the saturation to the type.
    #[inline(always)]
    pub(crate) fn apply(&self, x: i32) -> i32 {
        let v = x - self.input_zero_point;
        match self.slopes {
            LeakySlopes::Tflite { identity, alpha } => {
                let m = if v >= 0 { identity } else { alpha };
                Rounding::Double
                    .multiply(v, m)
                    .saturating_add(self.output_zero_point)
            }
            LeakySlopes::Xnnpack { positive, negative } => {
                // |v| <= 255 and |m| <= 2^15: no overflow.
                let m = if v >= 0 { positive } else { negative };
                ((v * m + 128) >> 8) + self.output_zero_point
            }
        }
    }
}

/// Checks a LEAKY_RELU's quantization and alpha.
fn check_alpha<T: QuantElem>(alpha: f32, input: QuantParams, output: QuantParams) -> Result<()> {
    check::<T>("leaky_relu", input, output)?;
    if !(alpha.is_finite() && alpha >= 0.0) {
        return Err(Error::OutOfDomain {
            op: "leaky_relu",
            what: "alpha",
            value: alpha as f64,
            requirement: "finite and >= 0 (a negative one has no quantized multiplier)",
        });
    }
    Ok(())
}

/// The 256 outputs of an 8-bit op, indexed by the input's bit pattern
/// (an int8 `x` at `x as u8`), from its scalar arithmetic.
pub(crate) fn table<T: QuantElem>(f: impl Fn(i32) -> i32) -> [u8; 256] {
    let mut t = [0u8; 256];
    for x in T::MIN..=T::MAX {
        // The low byte of the saturated output is its bit pattern in T.
        t[(x & 0xff) as usize] = (f(x).clamp(T::MIN, T::MAX) & 0xff) as u8;
    }
    t
}

/// TFLite's quantized `HARD_SWISH` (`x * relu6(x + 3) / 6`) in its 16-bit
/// fixed point: the input difference on a "hires" scale `s_in / 128`, the
/// "reluish" factor (the input on a scale where 3.0 is 2^15, saturated,
/// moved to `[0, 1]`), their product by a truncating doubling high
/// multiply, then the output shift. Both multipliers are Q0.31 ones
/// rounded to Q0.15 (`DownScaleInt32ToInt16Multiplier`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct HardSwishParams {
    pub input_zero_point: i32,
    pub output_zero_point: i32,
    /// Q0.15 multiplier of `f32(s_in / 128 / s_out)`; its exponent is at
    /// most 0 (TFLite's `Prepare` rule).
    pub output_multiplier: i16,
    pub output_exponent: i32,
    /// Q0.15 multiplier of `f32(s_in / 128 / (3 / 32768))`.
    pub reluish_multiplier: i16,
    pub reluish_exponent: i32,
}

/// A Q0.31 multiplier rounded to Q0.15, saturating near 2^31.
fn q15(m: i32) -> i16 {
    const OFFSET: i32 = 1 << 15;
    if m >= i32::MAX - OFFSET {
        return i16::MAX;
    }
    ((m + OFFSET) >> 16) as i16
}

/// `value * 2^amount` saturated to `i16` (`amount` at most 30 here).
fn saturating_left_shift(value: i16, amount: i32) -> i16 {
    let r = (value as i64) << amount;
    r.clamp(i16::MIN as i64, i16::MAX as i64) as i16
}

/// `a * b / 2^15` truncated toward zero, `MIN * MIN` saturated (NEON
/// `sqdmulh.8h`).
fn saturating_doubling_high_mul(a: i16, b: i16) -> i16 {
    if a == i16::MIN && b == i16::MIN {
        return i16::MAX;
    }
    ((a as i32 * b as i32) / (1 << 15)) as i16
}

/// gemmlowp's rounding divide by `2^e` (ties away from zero) of a 16-bit
/// value, computed in `int` as the C++ promotes it (`e` up to 31).
fn rounding_divide_by_pot16(x: i16, e: i32) -> i16 {
    use crate::fixedpoint::Lane;
    Lane::rounding_divide_by_pot(x as i32, e as u32) as i16
}

impl HardSwishParams {
    pub(crate) fn new<T: QuantElem>(input: QuantParams, output: QuantParams) -> Result<Self> {
        check::<T>("hard_swish", input, output)?;
        // In f32, as TFLite's Prepare.
        let hires_scale = (1.0f32 / 128.0) * input.scale;
        let reluish_scale = 3.0f32 / 32768.0;
        let out = Rounding::Double.quantize_multiplier((hires_scale / output.scale) as f64)?;
        let reluish = Rounding::Double.quantize_multiplier((hires_scale / reluish_scale) as f64)?;
        if out.shift > 0 {
            return Err(Error::OutOfDomain {
                op: "hard_swish",
                what: "input scale / (128 * output scale)",
                value: (hires_scale / output.scale) as f64,
                requirement: "below 1 (TFLite requires an output exponent of at most 0)",
            });
        }
        if !(-31..=31).contains(&reluish.shift) || out.shift < -31 {
            return Err(Error::OutOfDomain {
                op: "hard_swish",
                what: "input scale",
                value: input.scale as f64,
                requirement: "with a reluish exponent in -31..=31",
            });
        }
        Ok(HardSwishParams {
            input_zero_point: input.zero_point,
            output_zero_point: output.zero_point,
            output_multiplier: q15(out.multiplier),
            output_exponent: out.shift,
            reluish_multiplier: q15(reluish.multiplier),
            reluish_exponent: reluish.shift,
        })
    }

    /// The output of one input value, before the saturation to the type.
    pub(crate) fn apply(&self, x: i32) -> i32 {
        use crate::fixedpoint::gemmlowp16::srdhm;
        // |x - zp| <= 255: exact in i16, and so is 128 times it.
        let v = (x - self.input_zero_point) as i16;
        let hires = v.wrapping_mul(128);
        let preshift_output = srdhm(hires, self.output_multiplier);
        let mut reluish = hires;
        let e = self.reluish_exponent;
        if e > 0 {
            reluish = saturating_left_shift(reluish, e - 1);
        }
        reluish = srdhm(reluish, self.reluish_multiplier);
        if e > 0 {
            reluish = saturating_left_shift(reluish, 1);
        }
        if e < 0 {
            reluish = rounding_divide_by_pot16(reluish, -e);
        }
        // [-1, 1] to [0, 1] in Q0.15, in int as the C++.
        let reluish = ((reluish as i32 + (1 << 15)) >> 1) as i16;
        let preshift = saturating_doubling_high_mul(reluish, preshift_output);
        let y = rounding_divide_by_pot16(preshift, -self.output_exponent);
        // The C++ adds in int and stores into int16 before the clamp.
        (y as i32 + self.output_zero_point) as i16 as i32
    }
}
