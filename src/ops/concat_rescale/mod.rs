//! The uint8 rescaling of TFLite's CONCATENATION
//! (`ConcatenationWithScaling`): an input quantized apart from the output
//! is mapped to the output's quantization in `f32`, rounded half away from
//! zero, then clamped.
//!
//! ```text
//! scale = f32(s_in) * (1 / f32(s_out))          (f32)
//! bias  = f32(-zp_in) * scale                    (f32)
//! y     = clamp(round(f32(x) * scale + bias) + zp_out, 0, 255)
//! ```
//!
//! `x * scale + bias` is two `f32` roundings in one build and one (a fused
//! multiply-add) in another: [`RescaleFloat`] names which. One input byte
//! gives one output byte, so `new()` builds the 256 outputs and `run` is a
//! table lookup: no float at run time.

use crate::checks::{check_scale, check_zero_point};
use crate::error::{Error, Result};
use crate::quant::QuantParams;

/// How `f32(x) * scale + bias` is evaluated.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RescaleFloat {
    /// The product rounded to `f32`, then the sum rounded (a build that
    /// does not contract them: x86-64 without FMA).
    Separate,
    /// One rounding of the exact `x * scale + bias` (`fmadd`: a build that
    /// contracts them, as aarch64 compilers do by default).
    Fused,
}

/// One uint8 input's rescaling to the output's quantization.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConcatRescale {
    table: [u8; 256],
}

/// `v` rounded half away from zero (C's `roundf`), as an `i32` (saturating;
/// the callers' values are far inside).
fn round_half_away(v: f32) -> i32 {
    let t = v as i32;
    // Exact: below 2^23 the fraction is representable; above, v is whole.
    let frac = v - t as f32;
    if frac >= 0.5 {
        t.saturating_add(1)
    } else if frac <= -0.5 {
        t.saturating_sub(1)
    } else {
        t
    }
}

impl ConcatRescale {
    /// Prepares the map from `input` to `output` quantization (uint8),
    /// evaluated as `float`. Errors: scales not finite and `> 0`, zero
    /// points outside uint8.
    pub fn new(input: QuantParams, output: QuantParams, float: RescaleFloat) -> Result<Self> {
        check_scale("input scale", input.scale)?;
        check_zero_point::<u8>("input zero point", input.zero_point)?;
        check_scale("output scale", output.scale)?;
        check_zero_point::<u8>("output zero point", output.zero_point)?;
        let scale = input.scale * (1.0 / output.scale);
        let bias = (-input.zero_point) as f32 * scale;
        if !(scale.is_finite() && bias.is_finite()) {
            return Err(Error::Scale {
                what: "input / output scale ratio",
                value: scale as f64,
            });
        }
        let mut table = [0u8; 256];
        for (x, out) in table.iter_mut().enumerate() {
            let v = match float {
                RescaleFloat::Separate => x as f32 * scale + bias,
                // The exact product (8 x 24 bits) plus the bias spans at
                // most 33 bits here, so the f64 sum is exact and its one
                // rounding to f32 is the fused multiply-add's.
                RescaleFloat::Fused => (x as f64 * scale as f64 + bias as f64) as f32,
            };
            let y = round_half_away(v).saturating_add(output.zero_point);
            *out = y.clamp(0, 255) as u8;
        }
        Ok(ConcatRescale { table })
    }

    /// The output byte of each input byte.
    pub fn table(&self) -> &[u8; 256] {
        &self.table
    }

    /// Rescales `input` into `output`. Errors if the lengths differ.
    pub fn run(&self, input: &[u8], output: &mut [u8]) -> Result<()> {
        crate::checks::check_lengths("concat_rescale", input.len(), output.len())?;
        for (o, &x) in output.iter_mut().zip(input) {
            *o = self.table[x as usize];
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_half_away_matches_roundf_on_ties_and_near_them() {
        for (v, r) in [
            (0.5f32, 1),
            (-0.5, -1),
            (1.5, 2),
            (2.5, 3),
            (-2.5, -3),
            (0.49999997, 0),
            (-0.49999997, 0),
            (254.5, 255),
            (0.0, 0),
            (-0.0, 0),
        ] {
            assert_eq!(round_half_away(v), r, "{v}");
        }
    }
}
