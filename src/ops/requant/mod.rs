//! Requantization shared by the layer operators ([`Gemm`](super::Gemm),
//! [`Add`](super::Add), [`NoNorm`](super::NoNorm)): fused activations and
//! per-channel quantized multipliers.
//!
//! A per-channel multiplier is TFLite's `MultiplyByQuantizedMultiplier` with
//! the shift split into its two halves, so that every lane of a vector can
//! hold another channel:
//!
//! ```text
//! left  = max(shift, 0), right = max(-shift, 0)
//! y     = rounding_divide_by_pot(srdhm(x << left, multiplier), right)
//! ```
//!
//! For one channel this is exactly [`multiply_by_quantized_multiplier`]
//! (`rounding_divide_by_pot` by 0 is the identity); the [`ChannelLane`] methods
//! are [`Lane::shl`] and [`Lane::rounding_divide_by_pot`] with a per-lane
//! amount, and the `i32` implementation calls those very methods.
//!
//! [`multiply_by_quantized_multiplier`]: crate::quant::multiply_by_quantized_multiplier

// Per-channel requantization serves the operators that own per-channel
// arrays (`Gemm`, `NoNorm`), which need `alloc`.
#![cfg_attr(not(feature = "alloc"), allow(dead_code, unused_imports))]

#[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
pub(crate) mod neon;

use crate::checks::check_scale;
use crate::error::{Error, Result};
use crate::fixedpoint::{libm_round, Lane};
use crate::quant::{
    requantize_gemv_ties_upward, requantize_real_f64, requantize_xnnpack_f32, round_ties_even_f32,
    QuantParams, QuantizedMultiplier, Requantization, Rounding,
};

/// XNNPACK refuses a GEMM or convolution requantization scale at or above
/// this (`requantization scale ... is greater or equal to 256.0`).
pub(crate) const XNNPACK_MAX_SCALE: f32 = 256.0;

/// An activation fused into an operator's output requantization, as TFLite
/// fuses it: a clamp of the quantized output to the activation's range.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum FusedActivation {
    /// No clamp beyond the int8 range.
    #[default]
    None,
    /// `max(x, 0)`: outputs below the output zero point are clamped to it.
    Relu,
    /// `min(max(x, 0), 6)`.
    Relu6,
}

impl FusedActivation {
    /// The quantized output range `[min, max]` for int8 outputs, as TFLite's
    /// `CalculateActivationRangeQuantized` computes it: the real bounds
    /// quantized as `zero_point + round(bound / scale)` (`f32` division,
    /// rounded half away from zero), intersected with `[-128, 127]`.
    /// `output.scale` must be finite and `> 0` (checked by the operators).
    pub fn range_i8(self, output: QuantParams) -> (i32, i32) {
        let quantize = |real: f32| -> i32 {
            // TFLite divides in f32 and rounds the f32 quotient; rounding it
            // in f64 gives the same integer (the quotient is exact in f64).
            let steps = libm_round((real / output.scale) as f64);
            (output.zero_point as f64 + steps).clamp(i32::MIN as f64, i32::MAX as f64) as i32
        };
        let (qmin, qmax) = (i8::MIN as i32, i8::MAX as i32);
        match self {
            FusedActivation::None => (qmin, qmax),
            FusedActivation::Relu => (qmin.max(quantize(0.0)), qmax),
            FusedActivation::Relu6 => (qmin.max(quantize(0.0)), qmax.min(quantize(6.0))),
        }
    }

    /// The int8 output range the XNNPACK delegate gives its operators: the
    /// real bounds (RELU `[0, inf)`, RELU6 `[0, 6]`) quantized as
    /// `lrintf(clamp(bound / scale + zero_point, -128, 127))`, all in `f32`
    /// (ties to even). `output.scale` must be finite and `> 0`.
    pub fn range_i8_xnnpack(self, output: QuantParams) -> (i32, i32) {
        let quantize = |real: f32| -> i32 {
            let q = (real / output.scale + output.zero_point as f32).clamp(-128.0, 127.0);
            round_ties_even_f32(q) as i32
        };
        match self {
            FusedActivation::None => (-128, 127),
            FusedActivation::Relu => (quantize(0.0), 127),
            FusedActivation::Relu6 => (quantize(0.0), quantize(6.0)),
        }
    }

    /// The output range under `requantization`: XNNPACK's
    /// ([`FusedActivation::range_i8_xnnpack`]) for its arithmetic, TFLite's
    /// ([`FusedActivation::range_i8`]) otherwise.
    pub fn range_i8_for(self, output: QuantParams, requantization: Requantization) -> (i32, i32) {
        match requantization {
            Requantization::XnnpackF32 => self.range_i8_xnnpack(output),
            _ => self.range_i8(output),
        }
    }
}

/// [`Lane`] operations with a separate amount per lane, for per-channel
/// requantization. Implemented for `i32` (one channel, the reference) and NEON
/// `int32x4_t` (four channels, in [`neon`]), bit-exact with each other.
pub(crate) trait ChannelLane: Lane {
    /// `self * 2^n` (each `n` in `0..=31`) lane by lane, saturated to `i32`
    /// (NEON `sqshl`). TFLite's shift overflows there (undefined in the C++,
    /// wrapping in practice, so garbage); wherever it does not, the two agree.
    fn shl_lanes(self, n: Self) -> Self;
    /// [`Lane::rounding_divide_by_pot`] lane by lane; `neg_exponent` holds the
    /// *negated* exponents (each in `-31..=0`), the form NEON's shifts take.
    fn rounding_divide_by_pot_lanes(self, neg_exponent: Self) -> Self;
    /// Wrapping multiplication (NEON `mul`).
    fn wrapping_mul(self, b: Self) -> Self;
}

impl ChannelLane for i32 {
    #[inline(always)]
    fn shl_lanes(self, n: i32) -> i32 {
        debug_assert!((0..=31).contains(&n));
        ((self as i64) << n).clamp(i32::MIN as i64, i32::MAX as i64) as i32
    }
    #[inline(always)]
    fn rounding_divide_by_pot_lanes(self, neg_exponent: i32) -> i32 {
        debug_assert!((-31..=0).contains(&neg_exponent));
        Lane::rounding_divide_by_pot(self, neg_exponent.unsigned_abs())
    }
    #[inline(always)]
    fn wrapping_mul(self, b: i32) -> i32 {
        i32::wrapping_mul(self, b)
    }
}

/// One lane's worth of channels' multipliers, split for [`requantize_lanes`].
#[derive(Clone, Copy, Debug)]
pub(crate) struct ChannelMultiplier<L> {
    /// `max(shift, 0)`.
    pub left_shift: L,
    /// Q0.31 mantissa.
    pub multiplier: L,
    /// `-max(-shift, 0)`, i.e. `min(shift, 0)`.
    pub neg_right_shift: L,
}

/// TFLite's `MultiplyByQuantizedMultiplier` of an int32 accumulator, with each
/// lane's own multiplier: `rounding_divide_by_pot(srdhm(acc << left, m), right)`.
/// The left shift saturates where TFLite's overflows (an effective scale
/// above 1 on a large accumulator): the output then saturates too, as the
/// exact result does.
#[inline(always)]
pub(crate) fn requantize_lanes<L: ChannelLane>(acc: L, m: &ChannelMultiplier<L>) -> L {
    acc.shl_lanes(m.left_shift)
        .saturating_rounding_doubling_high_mul(m.multiplier)
        .rounding_divide_by_pot_lanes(m.neg_right_shift)
}

/// The int8 output stage after requantization: add the output zero point
/// (saturating, so that even a wild multiplier cannot wrap around) and clamp
/// to the activation range `[min, max]` (within `[-128, 127]`).
///
/// TFLite adds the zero point with a plain `int32` add; the two agree unless
/// the requantized value is within 128 of the `i32` limits (an effective scale
/// near 2^30), where TFLite's add overflows.
#[inline(always)]
pub(crate) fn output_stage<L: Lane>(r: L, zero_point: i32, min: i32, max: i32) -> L {
    r.saturating_add(L::splat(zero_point))
        .lane_max(L::splat(min))
        .lane_min(L::splat(max))
}

/// `len` copies of `value`, or [`Error::Allocation`] when the allocator
/// refuses (instead of aborting): the per-channel arrays are sized by a
/// dimension the caller gives before any data backs it (a [`MatMul`]'s `n`).
///
/// [`MatMul`]: crate::MatMul
#[cfg(feature = "alloc")]
pub(crate) fn try_filled<T: Clone>(
    op: &'static str,
    what: &'static str,
    value: T,
    len: usize,
) -> Result<alloc::vec::Vec<T>> {
    let mut v = alloc::vec::Vec::new();
    v.try_reserve_exact(len).map_err(|_| Error::Allocation {
        op,
        what,
        bytes: len.saturating_mul(core::mem::size_of::<T>()),
    })?;
    v.resize(len, value);
    Ok(v)
}

/// Per-channel multipliers, each array padded to `padded_len` with unused
/// entries (multiplier 0) so that vector kernels can load whole
/// vectors past the last channel, and the [`Requantization`] that applies
/// them.
#[cfg(feature = "alloc")]
#[derive(Clone, Debug)]
pub(crate) struct ChannelMultipliers {
    pub requantization: Requantization,
    /// The rounding the quantized arrays below were made for
    /// ([`Rounding::Single`] under [`Requantization::RealF64`], whose
    /// kernels read `real` instead).
    pub rounding: Rounding,
    /// [`Requantization::RealF64`]: each channel's
    /// `f64(input_scale) * f64(channel_scale) / f64(output_scale)` (0 for
    /// padding). Empty otherwise.
    #[cfg_attr(not(target_arch = "aarch64"), allow(dead_code))]
    pub real: alloc::vec::Vec<f64>,
    /// [`Requantization::XnnpackF32`]: each channel's
    /// `f32(input_scale) * f32(channel_scale) / f32(output_scale)` (0 for
    /// padding). Empty otherwise.
    pub scale_f32: alloc::vec::Vec<f32>,
    /// Q0.31 mantissas.
    pub multiplier: alloc::vec::Vec<i32>,
    /// `max(shift, 0)` (double rounding's left shift; 0 for single rounding
    /// too, whose shift lives in `neg_total_shift`).
    pub left_shift: alloc::vec::Vec<i32>,
    /// `min(shift, 0)` (double rounding's negated right shift).
    pub neg_right_shift: alloc::vec::Vec<i32>,
    /// Single rounding: `-(31 - shift)` (in `-62..=-1`), the negated right
    /// shift of the 64-bit product `acc * multiplier` (NEON `srshl` on
    /// `int64x2_t`). Empty for double rounding.
    #[cfg_attr(not(target_arch = "aarch64"), allow(dead_code))]
    pub neg_total_shift: alloc::vec::Vec<i64>,
}

#[cfg(feature = "alloc")]
impl ChannelMultipliers {
    /// TFLite's per-channel `PopulateConvolutionQuantizationParams`: for each
    /// channel the real multiplier `input_scale * channel_scale / output_scale`
    /// (in `f64`), quantized with `rounding`'s
    /// [`quantize_multiplier`](Rounding::quantize_multiplier) (single rounding
    /// caps shifts at 30, as TFLite's single-rounding build does), or kept
    /// as is for [`Requantization::RealF64`]. Errors for a channel scale
    /// that is not finite and `> 0` (`what` names it), and, for double
    /// rounding, for an effective scale of 2^30 or more (the left shift
    /// would overflow; `too_large` is that error's reason, naming the
    /// operator's scales).
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        op: &'static str,
        what: &'static str,
        too_large: &'static str,
        input_scale: f64,
        channel_scales: &[f32],
        output_scale: f64,
        padded_len: usize,
        requantization: impl Into<Requantization>,
    ) -> Result<Self> {
        debug_assert!(padded_len >= channel_scales.len());
        let requantization = requantization.into();
        let rounding = match requantization {
            Requantization::Multiplier(r) => r,
            // LiteRT's multipliers (its GEMV is in its single-rounding build).
            Requantization::RealF64
            | Requantization::XnnpackF32
            | Requantization::GemvTiesUpward => Rounding::Single,
        };
        let mut real = match requantization {
            Requantization::RealF64 => try_filled(op, "multipliers", 0.0, padded_len)?,
            _ => alloc::vec::Vec::new(),
        };
        let mut scale_f32 = match requantization {
            Requantization::XnnpackF32 => try_filled(op, "multipliers", 0.0f32, padded_len)?,
            _ => alloc::vec::Vec::new(),
        };
        let mut multiplier = try_filled(op, "multipliers", 0, padded_len)?;
        let mut left_shift = try_filled(op, "multipliers", 0, padded_len)?;
        // Padded channels (never stored) shift right by 1, so that a last,
        // partial block can take the same specialised NEON output stage as
        // the others.
        let mut neg_right_shift = try_filled(op, "multipliers", -1, padded_len)?;
        let mut neg_total_shift = match rounding {
            Rounding::Single => try_filled(op, "multipliers", -32, padded_len)?,
            Rounding::Double => alloc::vec::Vec::new(),
        };
        for (c, &s) in channel_scales.iter().enumerate() {
            let s = check_scale(what, s)?;
            let effective = input_scale * s / output_scale;
            if let Some(r) = real.get_mut(c) {
                *r = effective;
            }
            if let Some(f) = scale_f32.get_mut(c) {
                // The scales are f32 values: the f64 arguments hold them exactly.
                *f = input_scale as f32 * s as f32 / output_scale as f32;
                if !f.is_finite() || *f >= XNNPACK_MAX_SCALE {
                    return Err(Error::Unsupported {
                        op,
                        dtype: "int8",
                        reason: "XNNPACK's requantization scale, input scale * weight scale \
                                 / output scale in f32, must be below 256",
                    });
                }
            }
            let q = rounding.quantize_multiplier(effective)?;
            if q.shift > 30 {
                return Err(Error::Unsupported {
                    op,
                    dtype: "int8",
                    reason: too_large,
                });
            }
            // quantize_multiplier gives shifts >= -31 (smaller multipliers are 0).
            debug_assert!(q.shift >= -31);
            multiplier[c] = q.multiplier;
            left_shift[c] = q.shift.max(0);
            neg_right_shift[c] = q.shift.min(0);
            if let Some(total) = neg_total_shift.get_mut(c) {
                *total = -(31 - q.shift as i64);
            }
        }
        Ok(ChannelMultipliers {
            requantization,
            rounding,
            real,
            scale_f32,
            multiplier,
            left_shift,
            neg_right_shift,
            neg_total_shift,
        })
    }

    /// Channel `c`'s multiplier as TFLite stores it.
    #[inline(always)]
    pub fn quantized(&self, c: usize) -> QuantizedMultiplier {
        QuantizedMultiplier {
            multiplier: self.multiplier[c],
            shift: self.left_shift[c] + self.neg_right_shift[c],
        }
    }

    /// TFLite's `MultiplyByQuantizedMultiplier(acc, multiplier[c], shift[c])`
    /// in this rounding, or LiteRT's `f64` requantization: the scalar
    /// reference of the vector output stages.
    #[inline(always)]
    pub fn requantize(&self, c: usize, acc: i32) -> i32 {
        match self.requantization {
            Requantization::RealF64 => requantize_real_f64(acc, self.real[c]),
            Requantization::XnnpackF32 => requantize_xnnpack_f32(acc, self.scale_f32[c]),
            Requantization::GemvTiesUpward => {
                let q = self.quantized(c);
                requantize_gemv_ties_upward(acc, q.multiplier, q.shift)
            }
            Requantization::Multiplier(Rounding::Double) => requantize_lanes(acc, &self.channel(c)),
            Requantization::Multiplier(Rounding::Single) => {
                Rounding::Single.multiply(acc, self.quantized(c))
            }
        }
    }

    /// Channel `c`'s multiplier as one `i32` lane.
    #[inline(always)]
    pub fn channel(&self, c: usize) -> ChannelMultiplier<i32> {
        ChannelMultiplier {
            left_shift: self.left_shift[c],
            multiplier: self.multiplier[c],
            neg_right_shift: self.neg_right_shift[c],
        }
    }
}
