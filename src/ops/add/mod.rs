//! int8 quantized add with rescale.
//!
//! **Add** is TFLite's int8 `ADD` (`reference_integer_ops::AddElementwise`,
//! `Prepare` in `add.cc`), bit for bit:
//!
//! ```text
//! twice_max = 2 * max(scale_a, scale_b)
//! m_a = scale_a / twice_max, m_b = scale_b / twice_max         (<= 1/2, quantized, shift <= 0)
//! m_out = twice_max / (2^20 * scale_out)                       (< 1, quantized, shift <= 0)
//! a' = MBQM((a - zp_a) << 20, m_a), b' = MBQM((b - zp_b) << 20, m_b)
//! out = clamp(MBQM(a' + b', m_out) + zp_out, act_min, act_max)
//! ```
//!
#[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
mod neon;
pub(crate) mod params;
mod scalar;

use self::params::{AddFast, AddParams, ADD_LEFT_SHIFT};
use super::requant::FusedActivation;
use crate::backend::{unavailable, Backend};
use crate::checks::{check_scale, check_zero_point};
use crate::error::{Error, Result};
use crate::quant::{quantize_multiplier, QuantParams};

/// Prepared int8 quantized add of two same-shape tensors: TFLite's int8 `ADD`
/// (`reference_integer_ops::AddElementwise`) bit for bit:
///
/// ```text
/// twice_max = 2 * max(scale_a, scale_b)
/// m_a = scale_a / twice_max, m_b = scale_b / twice_max      (quantized, shift <= 0)
/// m_out = twice_max / (2^20 * scale_out)                    (quantized, < 1)
/// a' = MBQM((a - zp_a) << 20, m_a), b' = MBQM((b - zp_b) << 20, m_b)
/// out = clamp(MBQM(a' + b', m_out) + zp_out, act_min, act_max)
/// ```
#[derive(Clone, Copy, Debug)]
pub struct Add {
    params: AddParams,
    /// The cheaper form of the same arithmetic for the vector kernels, when
    /// one input has the exact-half multiplier (always, see [`AddFast`]).
    #[cfg_attr(
        not(all(target_arch = "aarch64", target_feature = "neon")),
        allow(dead_code)
    )]
    fast: Option<AddFast>,
    backend: Backend,
}

impl Add {
    /// Validates and prepares `out = a + b` with the activation fused.
    ///
    /// Errors: a scale not finite and `> 0` ([`Error::Scale`]), a zero point
    /// outside `-128..=127` ([`Error::ZeroPoint`]), and an output scale so
    /// small that `2 max(scale_a, scale_b) / (2^20 scale_out)` is not below 1
    /// ([`Error::Unsupported`]; TFLite's `Prepare` aborts there).
    pub fn new(
        a: QuantParams,
        b: QuantParams,
        output: QuantParams,
        activation: FusedActivation,
    ) -> Result<Add> {
        check_scale("input a scale", a.scale)?;
        check_zero_point::<i8>("input a zero point", a.zero_point)?;
        check_scale("input b scale", b.scale)?;
        check_zero_point::<i8>("input b zero point", b.zero_point)?;
        check_scale("output scale", output.scale)?;
        check_zero_point::<i8>("output zero point", output.zero_point)?;
        // As TFLite: the maximum and its doubling in f32 (both exact), the
        // quotients in f64.
        let twice_max = (2.0 * a.scale.max(b.scale)) as f64;
        let smaller_than_one = |real: f64| -> Result<(i32, i32)> {
            let q = quantize_multiplier(real)?;
            if q.shift > 0 {
                return Err(Error::Unsupported {
                    op: "add",
                    dtype: "int8",
                    reason: "the output scale must exceed 2 * max(input scales) / 2^20 \
                             (TFLite's output multiplier must be below 1)",
                });
            }
            Ok((q.multiplier, q.shift))
        };
        let (input1_multiplier, input1_shift) = smaller_than_one(a.scale as f64 / twice_max)?;
        let (input2_multiplier, input2_shift) = smaller_than_one(b.scale as f64 / twice_max)?;
        let out_denominator = ((1u32 << ADD_LEFT_SHIFT) as f32 * output.scale) as f64;
        let (output_multiplier, output_shift) = smaller_than_one(twice_max / out_denominator)?;
        let (act_min, act_max) = activation.range_i8(output);
        let params = AddParams {
            input1_offset: -a.zero_point,
            input2_offset: -b.zero_point,
            input1_multiplier,
            input1_shift,
            input2_multiplier,
            input2_shift,
            output_multiplier,
            output_shift,
            output_offset: output.zero_point,
            act_min,
            act_max,
        };
        Ok(Add {
            params,
            // Only the vector kernels use it; the checks cost 65,536 steps.
            fast: if cfg!(all(target_arch = "aarch64", target_feature = "neon")) {
                AddFast::new(&params)
            } else {
                None
            },
            backend: Backend::best(),
        })
    }

    /// The prepared parameters.
    pub fn params(&self) -> &AddParams {
        &self.params
    }

    /// The backend [`run`](Self::run) uses.
    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// `output = a + b` element-wise, with the best backend. Errors if the three
    /// lengths differ.
    pub fn run(&self, a: &[i8], b: &[i8], output: &mut [i8]) -> Result<()> {
        self.run_with(self.backend, a, b, output)
    }

    /// [`run`](Self::run) with the given backend (an error if not available
    /// here). Every backend gives the same bytes.
    pub fn run_with(&self, backend: Backend, a: &[i8], b: &[i8], output: &mut [i8]) -> Result<()> {
        for len in [b.len(), output.len()] {
            if len != a.len() {
                return Err(Error::LengthMismatch {
                    op: "add",
                    input: a.len(),
                    output: len,
                });
            }
        }
        match backend {
            Backend::Scalar => {
                scalar::add(&self.params, a, b, output);
                Ok(())
            }
            #[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
            Backend::Neon => {
                neon::add(&self.params, self.fast.as_ref(), a, b, output);
                Ok(())
            }
            #[allow(unreachable_patterns)]
            b => Err(unavailable(b)),
        }
    }
}
