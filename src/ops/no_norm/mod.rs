//! int8 NoNorm (MobileBert's normalization, `y = x * gamma + beta` with one
//! gamma and beta per channel of the last axis) is quantized like a 1x1
//! depthwise convolution with per-channel weights, i.e. TFLite's
//! `reference_integer_ops::DepthwiseConvPerChannel` with a 1x1 filter and
//! depth multiplier 1 (one rounding instead of a `MUL` followed by an `ADD`):
//!
//! ```text
//! gamma[c] = gamma_scale[c] * gamma_q[c]          int8, symmetric, per channel
//! beta[c]  = scale_x * gamma_scale[c] * beta_q[c] int32
//! acc = (x - zp_x) * gamma_q[c] + beta_q[c]
//! out = clamp(MBQM(acc, scale_x * gamma_scale[c] / scale_out) + zp_out, act_min, act_max)
//! ```
//!
//! [`NoNorm::from_f32`] quantizes real gammas and betas that way (gamma exactly
//! `+-127` steps of its own scale).
//!

#[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
mod neon;
mod params;
mod scalar;

use self::params::{NoNormParams, NO_NORM_PAD};
use super::requant::{ChannelMultipliers, FusedActivation};
use crate::backend::{unavailable, Backend};
use crate::checks::{check_length, check_rows, check_scale, check_zero_point};
use crate::error::{Error, Result};
use crate::fixedpoint::libm_round;
use crate::quant::QuantParams;
use crate::quant::Rounding;

/// The largest quantized beta: `|x - zp_x| <= 255` and `|gamma| <= 128`, so
/// the accumulator `(x - zp_x) * gamma + beta` stays within `int32`.
const BETA_LIMIT: f64 = (i32::MAX - 255 * 128) as f64;

/// Checks a quantized beta (in accumulator units) against [`BETA_LIMIT`].
fn check_beta(beta_q: f64) -> Result<()> {
    if beta_q.abs() <= BETA_LIMIT {
        Ok(())
    } else {
        Err(Error::OutOfDomain {
            op: "no_norm",
            what: "beta",
            value: beta_q,
            requirement: "within +-(2^31 - 1 - 255 * 128) steps of input scale * gamma scale \
                          (the int32 accumulator)",
        })
    }
}

/// Prepared int8 NoNorm (MobileBert's normalization), `y = x * gamma + beta`
/// per channel of the last axis, quantized as a 1x1 depthwise convolution with
/// per-channel weights (TFLite's `DepthwiseConvPerChannel`, one rounding):
///
/// ```text
/// gamma[c] = gamma_scale[c] * gamma_q[c]            int8, symmetric, per channel
/// beta[c]  = scale_x * gamma_scale[c] * beta_q[c]   int32
/// acc = (x - zp_x) * gamma_q[c] + beta_q[c]
/// out = clamp(MBQM(acc, scale_x * gamma_scale[c] / scale_out) + zp_out, act_min, act_max)
/// ```
#[derive(Clone, Debug)]
#[cfg_attr(docsrs, doc(cfg(feature = "alloc")))]
pub struct NoNorm {
    params: NoNormParams,
    backend: Backend,
}

impl NoNorm {
    /// Validates and prepares NoNorm over `gamma.len()` channels.
    ///
    /// * `gamma`: int8 per channel, symmetric, scale `gamma_scales[c]`;
    /// * `beta`: int32 per channel in units of `input.scale * gamma_scales[c]`;
    /// * `input`, `output`: per-tensor int8 quantization.
    ///
    /// Errors: no channels ([`Error::ZeroDimension`]), `beta` or `gamma_scales`
    /// not `gamma.len()` long ([`Error::Length`]), scales not finite and `> 0`
    /// ([`Error::Scale`]), zero points out of range ([`Error::ZeroPoint`]), an
    /// effective scale of 2^30 or more ([`Error::Unsupported`]), a beta
    /// beyond `±(2^31 - 1 - 255 * 128)`, where the accumulator
    /// `(x - zp_x) * gamma + beta` could overflow `int32`
    /// ([`Error::OutOfDomain`]).
    pub fn new(
        gamma: &[i8],
        gamma_scales: &[f32],
        beta: &[i32],
        input: QuantParams,
        output: QuantParams,
        activation: FusedActivation,
    ) -> Result<NoNorm> {
        const OP: &str = "no_norm";
        let channels = gamma.len();
        if channels == 0 {
            return Err(Error::ZeroDimension {
                op: OP,
                what: "channels",
            });
        }
        check_length(OP, "gamma scales", Some(channels), gamma_scales.len())?;
        check_length(OP, "beta", Some(channels), beta.len())?;
        let input_scale = check_scale("input scale", input.scale)?;
        check_zero_point::<i8>("input zero point", input.zero_point)?;
        let output_scale = check_scale("output scale", output.scale)?;
        check_zero_point::<i8>("output zero point", output.zero_point)?;
        let padded = channels.div_ceil(NO_NORM_PAD) * NO_NORM_PAD;
        let multipliers = ChannelMultipliers::new(
            OP,
            "gamma scale",
            "the effective output scale, input scale * gamma scale / output scale, must be \
             below 2^30",
            input_scale,
            gamma_scales,
            output_scale,
            padded,
            // NoNorm keeps gemmlowp's arithmetic (its kernels apply the
            // double-rounding lanes); it is not a TFLite op of its own.
            Rounding::Double,
        )?;
        for &b in beta {
            check_beta(b as f64)?;
        }
        let mut g = alloc::vec![0i32; padded];
        let mut b = alloc::vec![0i32; padded];
        for c in 0..channels {
            g[c] = gamma[c] as i32;
            b[c] = beta[c];
        }
        let (act_min, act_max) = activation.range_i8(output);
        Ok(NoNorm {
            params: NoNormParams {
                gamma: g,
                beta: b,
                multipliers,
                channels,
                input_zero_point: input.zero_point,
                output_zero_point: output.zero_point,
                act_min,
                act_max,
            },
            backend: Backend::best(),
        })
    }

    /// [`new`](Self::new) from real gammas and betas: each gamma its own scale
    /// `|gamma| / 127` and quantized value `+-127` (a zero gamma: scale 1, value
    /// 0), each beta `round(beta / (input.scale * gamma_scale))` (half away from
    /// zero). Errors as `new` (including [`Error::OutOfDomain`] for a beta
    /// whose quantized value exceeds the accumulator's range, about 2^31
    /// steps of `input.scale * |gamma| / 127`), and [`Error::Length`] if the
    /// betas are not as many as the gammas, [`Error::OutOfDomain`] for a gamma
    /// or beta that is not finite (any finite value is valid, negative or zero).
    pub fn from_f32(
        gamma: &[f32],
        beta: &[f32],
        input: QuantParams,
        output: QuantParams,
        activation: FusedActivation,
    ) -> Result<NoNorm> {
        check_length("no_norm", "beta", Some(gamma.len()), beta.len())?;
        let input_scale = check_scale("input scale", input.scale)?;
        let mut gamma_q = alloc::vec::Vec::with_capacity(gamma.len());
        let mut scales = alloc::vec::Vec::with_capacity(gamma.len());
        let mut beta_q = alloc::vec::Vec::with_capacity(gamma.len());
        for (&g, &b) in gamma.iter().zip(beta) {
            // Any finite gamma and beta is valid (negative and zero too).
            for (what, value) in [("gamma", g), ("beta", b)] {
                if !value.is_finite() {
                    return Err(Error::OutOfDomain {
                        op: "no_norm",
                        what,
                        value: value as f64,
                        requirement: "finite",
                    });
                }
            }
            let s = g.abs() / 127.0;
            // A gamma so small that its scale underflows is zero in int8.
            let (q, s) = if s == 0.0 {
                (0i8, 1.0f32)
            } else {
                (if g > 0.0 { 127 } else { -127 }, s)
            };
            let real = b as f64 / (input_scale * s as f64);
            // A beta beyond int32 in these units is refused (saturating it
            // would silently change the result).
            let r = libm_round(real);
            check_beta(r)?;
            gamma_q.push(q);
            scales.push(s);
            beta_q.push(r as i32);
        }
        NoNorm::new(&gamma_q, &scales, &beta_q, input, output, activation)
    }

    /// Channels per row.
    pub fn channels(&self) -> usize {
        self.params.channels
    }

    /// The backend [`run`](Self::run) uses.
    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// NoNorm of every `channels`-long row of `input` into `output`, with the
    /// best backend. Errors if the lengths differ or are not a multiple of
    /// `channels`.
    pub fn run(&self, input: &[i8], output: &mut [i8]) -> Result<()> {
        self.run_with(self.backend, input, output)
    }

    /// [`run`](Self::run) with the given backend (an error if not available
    /// here). Every backend gives the same bytes.
    pub fn run_with(&self, backend: Backend, input: &[i8], output: &mut [i8]) -> Result<()> {
        check_rows("no_norm", input.len(), output.len(), self.params.channels)?;
        match backend {
            Backend::Scalar => {
                scalar::no_norm(&self.params, input, output);
                Ok(())
            }
            #[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
            Backend::Neon => {
                neon::no_norm(&self.params, input, output);
                Ok(())
            }
            #[allow(unreachable_patterns)]
            b => Err(unavailable(b)),
        }
    }
}
