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

/// TFLite's quantized `LEAKY_RELU`: `x - zp_in` times the identity
/// multiplier `f32(s_in / s_out)` where it is at least 0, times the alpha
/// multiplier `f32(s_in * alpha / s_out)` below, plus `zp_out`, saturated
/// to the type.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct LeakyReluParams {
    pub input_zero_point: i32,
    pub output_zero_point: i32,
    pub identity: QuantizedMultiplier,
    pub alpha: QuantizedMultiplier,
}

impl LeakyReluParams {
    pub(crate) fn new<T: QuantElem>(
        alpha: f32,
        input: QuantParams,
        output: QuantParams,
    ) -> Result<Self> {
        check::<T>("leaky_relu", input, output)?;
        if !(alpha.is_finite() && alpha >= 0.0) {
            return Err(Error::OutOfDomain {
                op: "leaky_relu",
                what: "alpha",
                value: alpha as f64,
                requirement: "finite and >= 0 (a negative one has no quantized multiplier)",
            });
        }
        // In f32, in TFLite's order: s_in * alpha / s_out.
        let alpha_real = input.scale * alpha / output.scale;
        let identity_real = input.scale / output.scale;
        Ok(LeakyReluParams {
            input_zero_point: input.zero_point,
            output_zero_point: output.zero_point,
            identity: Rounding::Double.quantize_multiplier(identity_real as f64)?,
            alpha: Rounding::Double.quantize_multiplier(alpha_real as f64)?,
        })
    }

    /// The output of one input value, before the saturation to the type.
    #[inline(always)]
    pub(crate) fn apply(&self, x: i32) -> i32 {
        let v = x - self.input_zero_point;
        let m = if v >= 0 { self.identity } else { self.alpha };
        Rounding::Double
            .multiply(v, m)
            .saturating_add(self.output_zero_point)
    }
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
