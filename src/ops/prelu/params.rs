//! PRELU's prepared arithmetic, written once over [`Lane`]: TFLite's two
//! quantized multipliers (one for `x >= 0`, one for the product with alpha)
//! and its output stage.

use crate::checks::{check_scale, check_zero_point};
use crate::elem::QuantElem;
use crate::error::{Error, Result};
use crate::fixedpoint::Lane;
use crate::quant::{multiply_by_quantized_multiplier, QuantParams, QuantizedMultiplier, Rounding};

/// TFLite's int8 / uint8 PRELU:
///
/// ```text
/// v = x - zp_in                       (int32)
/// y = v >= 0 ? M1(v) : M2(v * (a - zp_alpha))
/// out = clamp(zp_out + y, T::MIN, T::MAX)
/// M1 of f32(s_in / s_out), M2 of f32(s_in * s_alpha / s_out)
/// ```
///
/// `M(.)` is `MultiplyByQuantizedMultiplier` with double rounding (the
/// reference kernel's, which every LiteRT kernel set runs for int8 PRELU);
/// its left shift wraps as the C++'s does, on every backend alike.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct PreluParams {
    pub input_zero_point: i32,
    pub alpha_zero_point: i32,
    pub output_zero_point: i32,
    /// `f32(s_in / s_out)`: the multiplier of non-negative inputs.
    pub identity: QuantizedMultiplier,
    /// `f32(s_in * s_alpha / s_out)`: the multiplier of the product.
    pub alpha: QuantizedMultiplier,
    pub min: i32,
    pub max: i32,
}

impl PreluParams {
    pub(crate) fn new<T: QuantElem>(
        input: QuantParams,
        alpha: QuantParams,
        output: QuantParams,
    ) -> Result<Self> {
        if T::NAME == "int16" {
            return Err(Error::Unsupported {
                op: "prelu",
                dtype: T::NAME,
                reason: "TFLite's PRELU has int8 and uint8 kernels only",
            });
        }
        check_scale("input scale", input.scale)?;
        check_zero_point::<T>("input zero point", input.zero_point)?;
        check_scale("alpha scale", alpha.scale)?;
        check_zero_point::<T>("alpha zero point", alpha.zero_point)?;
        check_scale("output scale", output.scale)?;
        check_zero_point::<T>("output zero point", output.zero_point)?;
        // In f32, in TFLite's order, then widened for QuantizeMultiplier.
        let identity = input.scale / output.scale;
        let product = input.scale * alpha.scale / output.scale;
        let quantize = |real: f32, what: &'static str| {
            let q = Rounding::Double.quantize_multiplier(real as f64)?;
            // TFLite shifts left by `1 << shift` in int32: 30 at most.
            if q.shift > 30 {
                return Err(Error::OutOfDomain {
                    op: "prelu",
                    what,
                    value: real as f64,
                    requirement: "below 2^30 (a left shift of at most 30 bits)",
                });
            }
            Ok(q)
        };
        Ok(PreluParams {
            input_zero_point: input.zero_point,
            alpha_zero_point: alpha.zero_point,
            output_zero_point: output.zero_point,
            identity: quantize(identity, "input / output scale ratio")?,
            alpha: quantize(product, "input * alpha / output scale ratio")?,
            min: T::MIN,
            max: T::MAX,
        })
    }

    /// The output of `v = x - zp_in` and `product = v * (a - zp_alpha)`
    /// (the backend forms the product: `i32` lanes have no multiply in
    /// [`Lane`]), inside the type's range.
    #[inline(always)]
    pub(crate) fn finish<L: Lane>(&self, v: L, product: L) -> L {
        let (m1, m2) = (self.identity, self.alpha);
        let positive = multiply_by_quantized_multiplier(v, m1.multiplier, m1.shift);
        let negative = multiply_by_quantized_multiplier(product, m2.multiplier, m2.shift);
        let y = L::select(v.mask_if_less_than(L::splat(0)), negative, positive);
        y.add(L::splat(self.output_zero_point))
            .lane_max(L::splat(self.min))
            .lane_min(L::splat(self.max))
    }

    /// One element: the scalar oracle.
    #[inline(always)]
    pub(crate) fn apply(&self, x: i32, a: i32) -> i32 {
        let v = x - self.input_zero_point;
        self.finish(v, v.wrapping_mul(a - self.alpha_zero_point))
    }
}
