//! Element-wise int8 layer operators: quantized add with rescale, NoNorm
//! (`x * gamma + beta` per channel) and the attention-head transposes.
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
//! **NoNorm** (MobileBert's normalization, `y = x * gamma + beta` with one
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
//! **Heads**: [`split_heads`] turns `[seq, heads * head_dim]` into
//! `[heads, seq, head_dim]`, [`merge_heads`] back.

use super::requant::{check_length, FusedActivation};
#[cfg(feature = "alloc")]
use super::requant::{
    output_stage, requantize_lanes, ChannelLane, ChannelMultiplier, ChannelMultipliers,
};
use super::{check_scale, check_zero_point};
use crate::arch::Backend;
use crate::error::{Error, Result};
use crate::fixedpoint::Lane;
use crate::quant::{multiply_by_quantized_multiplier, quantize_multiplier, QuantParams};

/// TFLite's left shift of 8-bit add inputs: 255 << 20 still fits an `i32`
/// with room for the sum.
pub const ADD_LEFT_SHIFT: u32 = 20;

/// Everything the add kernels need, computed once by [`Add::new`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AddParams {
    /// `-zero_point` of input a.
    pub input1_offset: i32,
    /// `-zero_point` of input b.
    pub input2_offset: i32,
    /// Q0.31 mantissa of `scale_a / (2 max(scale_a, scale_b))`.
    pub input1_multiplier: i32,
    /// Its exponent (`<= 0`, a right shift).
    pub input1_shift: i32,
    /// Q0.31 mantissa of `scale_b / (2 max(scale_a, scale_b))`.
    pub input2_multiplier: i32,
    /// Its exponent (`<= 0`).
    pub input2_shift: i32,
    /// Q0.31 mantissa of `2 max(scale_a, scale_b) / (2^20 scale_out)`.
    pub output_multiplier: i32,
    /// Its exponent (`<= 0`).
    pub output_shift: i32,
    /// Output zero point.
    pub output_offset: i32,
    /// Lowest output (activation range).
    pub act_min: i32,
    /// Highest output (activation range).
    pub act_max: i32,
}

impl AddParams {
    /// The whole per-element computation on already-widened inputs, shared by
    /// every backend: the output, within `[act_min, act_max]`.
    #[inline(always)]
    pub(crate) fn lanes<L: Lane>(&self, a: L, b: L) -> L {
        // |a - zp| <= 255, so the shifted values stay below 2^28.
        let a = a.add(L::splat(self.input1_offset)).shl(ADD_LEFT_SHIFT);
        let b = b.add(L::splat(self.input2_offset)).shl(ADD_LEFT_SHIFT);
        let a = multiply_by_quantized_multiplier(a, self.input1_multiplier, self.input1_shift);
        let b = multiply_by_quantized_multiplier(b, self.input2_multiplier, self.input2_shift);
        let sum =
            multiply_by_quantized_multiplier(a.add(b), self.output_multiplier, self.output_shift);
        sum.add(L::splat(self.output_offset))
            .lane_max(L::splat(self.act_min))
            .lane_min(L::splat(self.act_max))
    }
}

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

/// The add of [`AddParams::lanes`] rewritten with fewer vector operations,
/// equal to it for every pair of int8 inputs:
///
/// * The input with the larger scale ("exact" side) has the real multiplier
///   `scale / (2 scale) = 1/2` exactly, quantized as mantissa 2^30 and shift
///   0, and `srdhm(d << 20, 2^30) = floor((2 d 2^20 2^30 + 2^31) / 2^32) =
///   floor(d 2^19 + 1/2) = d << 19` exactly: that side needs no multiply at
///   all, only `(x - zp) << 19`.
/// * A rounding divide by `2^r` rounds ties away from zero; a vector rounding
///   shift (`srshl`) rounds them up. The two differ only on negative values
///   whose low `r` bits are exactly one half. Each input side takes 256
///   values and the output stage sees the 65,536 sums, so [`Add::new`] checks
///   all of them: the other side's fix-up is dropped when no tie of it
///   changes any output byte, the output's when no sum the kernel forms
///   lands on a tie.
#[derive(Clone, Copy, Debug)]
#[cfg_attr(
    not(all(target_arch = "aarch64", target_feature = "neon")),
    allow(dead_code)
)]
pub(crate) struct AddFast {
    /// The exact side is input b (inputs are swapped; the sum commutes).
    pub swap: bool,
    /// Zero point of the exact side.
    pub exact_zero_point: i32,
    /// Zero point of the other side.
    pub other_zero_point: i32,
    /// The other side's Q0.31 mantissa.
    pub other_multiplier: i32,
    /// The other side's exponent (`<= 0`).
    pub other_shift: i32,
    /// Some input of the other side is a negative tie of its rounding divide.
    pub other_fixup: bool,
    /// Some input pair is a negative tie of the output's rounding divide.
    pub output_fixup: bool,
}

impl AddFast {
    /// The fast form of `p`, or `None` if no input has the exact-half
    /// multiplier (cannot happen with `Add::new`'s parameters; kept as a
    /// guard so that the kernels never rely on it unchecked).
    fn new(p: &AddParams) -> Option<AddFast> {
        const HALF: i32 = 1 << 30;
        let (swap, ze, zo, m, shift) = if p.input1_multiplier == HALF && p.input1_shift == 0 {
            (
                false,
                -p.input1_offset,
                -p.input2_offset,
                p.input2_multiplier,
                p.input2_shift,
            )
        } else if p.input2_multiplier == HALF && p.input2_shift == 0 {
            (
                true,
                -p.input2_offset,
                -p.input1_offset,
                p.input1_multiplier,
                p.input1_shift,
            )
        } else {
            return None;
        };
        // `x / 2^r` rounded half up, as `srshl` by `-r` does.
        let half_up = |x: i32, r: u32| -> i32 {
            if r == 0 {
                x
            } else {
                ((x as i64 + (1i64 << (r - 1))) >> r) as i32
            }
        };
        let r_other = shift.unsigned_abs();
        let r_out = p.output_shift.unsigned_abs();
        let mut exact = [0i32; 256];
        let mut other = [0i32; 256];
        let mut other_half_up = [0i32; 256];
        for x in i8::MIN..=i8::MAX {
            let i = (x as i32 + 128) as usize;
            exact[i] = (x as i32 - ze) << 19;
            let y = ((x as i32 - zo) << ADD_LEFT_SHIFT).saturating_rounding_doubling_high_mul(m);
            other[i] = y.rounding_divide_by_pot(r_other);
            other_half_up[i] = half_up(y, r_other);
        }
        // Without its fix-up the other side is 1 too high on its negative
        // ties, which moves the sum by 1 in 2^19 of an input step: the output
        // rarely changes. The fix-up is dropped when, for every such input
        // and every input of the exact side, the reference output stage
        // gives the same int8 for both sums.
        let output = |s: i32| -> i32 {
            s.saturating_rounding_doubling_high_mul(p.output_multiplier)
                .rounding_divide_by_pot(r_out)
                .wrapping_add(p.output_offset)
                .clamp(p.act_min, p.act_max)
        };
        let other_fixup = other.iter().zip(&other_half_up).any(|(&o, &h)| {
            o != h
                && exact
                    .iter()
                    .any(|&e| output(e.wrapping_add(o)) != output(e.wrapping_add(h)))
        });
        // The sums the kernel forms.
        let other = if other_fixup { other } else { other_half_up };
        // The output stage: srdhm(s, m) = (s m + 2^30) >> 31 for every sum s
        // (|s| < 2^29, so the i32::MIN saturation never acts), and the
        // rounding divide of that `y` differs from rounding half up exactly
        // when `y < 0` and its low `r` bits are one half. `s m` is split as
        // `e m + o m` so that the 65,536 pairs cost one add each.
        let mut output_fixup = false;
        if r_out > 0 {
            let m_out = p.output_multiplier as i64;
            let (mask, half) = ((1i64 << r_out) - 1, 1i64 << (r_out - 1));
            let other_m = other.map(|o| o as i64 * m_out);
            for &e in &exact {
                let em = e as i64 * m_out + (1 << 30);
                let mut tie = false;
                for &om in &other_m {
                    let v = em + om;
                    // v >> 31 is y, and y < 0 exactly when v < 0.
                    tie |= (v < 0) & ((v >> 31) & mask == half);
                }
                if tie {
                    output_fixup = true;
                    break;
                }
            }
        }
        Some(AddFast {
            swap,
            exact_zero_point: ze,
            other_zero_point: zo,
            other_multiplier: m,
            other_shift: shift,
            other_fixup,
            output_fixup,
        })
    }
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
                crate::arch::scalar_gemm::add(&self.params, a, b, output);
                Ok(())
            }
            #[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
            Backend::Neon => {
                crate::arch::neon_elementwise::add(&self.params, self.fast.as_ref(), a, b, output);
                Ok(())
            }
            #[allow(unreachable_patterns)]
            b => Err(Error::BackendUnavailable { backend: b.name() }),
        }
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
#[cfg(feature = "alloc")]
#[derive(Clone, Debug)]
pub struct NoNorm {
    /// `gamma_q` widened, padded with zeros to a multiple of 16 channels.
    pub(crate) gamma: alloc::vec::Vec<i32>,
    /// `beta_q`, padded likewise.
    pub(crate) beta: alloc::vec::Vec<i32>,
    pub(crate) multipliers: ChannelMultipliers,
    pub(crate) channels: usize,
    pub(crate) input_zero_point: i32,
    pub(crate) output_zero_point: i32,
    pub(crate) act_min: i32,
    pub(crate) act_max: i32,
    backend: Backend,
}

/// Vector kernels read per-channel parameters 16 channels at a time.
#[cfg(feature = "alloc")]
const NO_NORM_PAD: usize = 16;

#[cfg(feature = "alloc")]
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
    /// effective scale of 2^30 or more ([`Error::Unsupported`]).
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
            input_scale,
            gamma_scales,
            output_scale,
            padded,
        )?;
        let mut g = alloc::vec![0i32; padded];
        let mut b = alloc::vec![0i32; padded];
        for c in 0..channels {
            g[c] = gamma[c] as i32;
            b[c] = beta[c];
        }
        let (act_min, act_max) = activation.range_i8(output);
        Ok(NoNorm {
            gamma: g,
            beta: b,
            multipliers,
            channels,
            input_zero_point: input.zero_point,
            output_zero_point: output.zero_point,
            act_min,
            act_max,
            backend: Backend::best(),
        })
    }

    /// [`new`](Self::new) from real gammas and betas: each gamma its own scale
    /// `|gamma| / 127` and quantized value `+-127` (a zero gamma: scale 1, value
    /// 0), each beta `round(beta / (input.scale * gamma_scale))` (half away from
    /// zero, saturated to `i32`). Errors as `new`, and [`Error::Length`] if the
    /// betas are not as many as the gammas, [`Error::Scale`] for a gamma or beta
    /// that is not finite (reported as its scale).
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
            if !g.is_finite() {
                return Err(Error::Scale {
                    what: "gamma",
                    value: g as f64,
                });
            }
            if !b.is_finite() {
                return Err(Error::Scale {
                    what: "beta",
                    value: b as f64,
                });
            }
            let s = g.abs() / 127.0;
            // A gamma so small that its scale underflows is zero in int8.
            let (q, s) = if s == 0.0 {
                (0i8, 1.0f32)
            } else {
                (if g > 0.0 { 127 } else { -127 }, s)
            };
            let real = b as f64 / (input_scale * s as f64);
            let r = crate::fixedpoint::libm_round(real).clamp(i32::MIN as f64, i32::MAX as f64);
            gamma_q.push(q);
            scales.push(s);
            beta_q.push(r as i32);
        }
        NoNorm::new(&gamma_q, &scales, &beta_q, input, output, activation)
    }

    /// Channels per row.
    pub fn channels(&self) -> usize {
        self.channels
    }

    /// The backend [`run`](Self::run) uses.
    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// The whole per-element computation for `L::LANES` channels, shared by
    /// every backend; the output within `[act_min, act_max]`.
    #[inline(always)]
    pub(crate) fn lanes<L: ChannelLane>(
        &self,
        x: L,
        gamma: L,
        beta: L,
        m: &ChannelMultiplier<L>,
    ) -> L {
        let acc = x
            .sub(L::splat(self.input_zero_point))
            .wrapping_mul(gamma)
            .add(beta);
        output_stage(
            requantize_lanes(acc, m),
            self.output_zero_point,
            self.act_min,
            self.act_max,
        )
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
        super::check_rows("no_norm", input.len(), output.len(), self.channels)?;
        match backend {
            Backend::Scalar => {
                crate::arch::scalar_gemm::no_norm(self, input, output);
                Ok(())
            }
            #[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
            Backend::Neon => {
                crate::arch::neon_elementwise::no_norm(self, input, output);
                Ok(())
            }
            #[allow(unreachable_patterns)]
            b => Err(Error::BackendUnavailable { backend: b.name() }),
        }
    }
}

fn check_heads(
    op: &'static str,
    input: usize,
    output: usize,
    seq: usize,
    heads: usize,
    head_dim: usize,
) -> Result<()> {
    if heads == 0 {
        return Err(Error::ZeroDimension { op, what: "heads" });
    }
    if head_dim == 0 {
        return Err(Error::ZeroDimension {
            op,
            what: "head_dim",
        });
    }
    let len = seq.checked_mul(heads).and_then(|x| x.checked_mul(head_dim));
    check_length(op, "input", len, input)?;
    check_length(op, "output", len, output)
}

/// `[seq, heads * head_dim]` (row-major) to `[heads, seq, head_dim]`: the
/// per-head layout attention multiplies. Errors if `heads` or `head_dim` is 0
/// or a length is not `seq * heads * head_dim`.
pub fn split_heads<T: Copy>(
    input: &[T],
    output: &mut [T],
    seq: usize,
    heads: usize,
    head_dim: usize,
) -> Result<()> {
    check_heads(
        "split_heads",
        input.len(),
        output.len(),
        seq,
        heads,
        head_dim,
    )?;
    for (s, row) in input.chunks_exact(heads * head_dim).enumerate() {
        for (h, piece) in row.chunks_exact(head_dim).enumerate() {
            let at = (h * seq + s) * head_dim;
            output[at..at + head_dim].copy_from_slice(piece);
        }
    }
    Ok(())
}

/// `[heads, seq, head_dim]` back to `[seq, heads * head_dim]`, the inverse of
/// [`split_heads`]. Errors as it does.
pub fn merge_heads<T: Copy>(
    input: &[T],
    output: &mut [T],
    seq: usize,
    heads: usize,
    head_dim: usize,
) -> Result<()> {
    check_heads(
        "merge_heads",
        input.len(),
        output.len(),
        seq,
        heads,
        head_dim,
    )?;
    for (s, row) in output.chunks_exact_mut(heads * head_dim).enumerate() {
        for (h, piece) in row.chunks_exact_mut(head_dim).enumerate() {
            let at = (h * seq + s) * head_dim;
            piece.copy_from_slice(&input[at..at + head_dim]);
        }
    }
    Ok(())
}
