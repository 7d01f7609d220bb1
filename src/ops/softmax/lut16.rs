//! int16 softmax, `Method::Lut`: TFLite's `SoftmaxInt16` (identical in the
//! reference and the optimized resolver), bit for bit wherever it computes
//! softmax (see below for where it does not).
//!
//! `new()` fills two [`Table513`]s the way TFLite's `LUTPopulate` does in
//! `f64`: `exp(x)` for `x` in `[-10, 0]` and `1 / (1 + x)` for `x` in
//! `[0, 1]`, both on a symmetric output range (entry `32768` would be 1.0).
//! It also quantizes the input rescaling `scale * beta / (10 / 65535)` (the
//! product `scale * beta` taken in `f32`, as the C++ does), so an input
//! difference of `-65535` steps lands on `-10`. Per row:
//!
//! ```text
//! max   = max(q)
//! e     = exp_lut[clamp(mbqm(q - max) + 32767)]          Q0.15, interpolated
//! sum   = sum(e)                                          Q16.15
//! n     = clz(sum)   (sum normalised to [2^30, 2^31))
//! s     = round((sum << (n - 1)) / 2^14) - 98304          1/(1 + x) table input
//! r     = recip_lut[clamp(s)]                             Q0.15
//! out   = clamp((e * r + 2^(30 - n)) >> (31 - n), 0, 32767)
//! ```
//!
//! A [`Table513`] lookup takes the top 9 bits of the (symmetric) input as the
//! index and interpolates linearly with the low 7 bits, rounding half up.
//! TFLite's sum is an `i32`; qneon sums in `i64`, which is the same for rows
//! below 65,539 elements and keeps longer rows meaningful.
//!
//!
//! Where TFLite's kernel overflows, qneon refuses rather than differ from
//! TFLite's bytes without a word: `scale * beta` of about 5.0 and more (a
//! left shift of 16 or more in the input rescaling, so that a difference of
//! 65535 times it passes `2^31`) is `Error::OutOfDomain` naming the limit;
//! `Method::FixedPoint` and `Method::DequantF32` take such rows and give the
//! right answer.
//!
//! The table filling needs `std` (`f64::exp`); without it `Method::Lut` for
//! int16 is `Error::Unsupported`. This file is the scalar backend (and the
//! oracle); the NEON backend gathers the exps from a 65,536-entry table of
//! this file's `exp` (128 KiB per op, see `lut16_neon.rs`) and vectorizes the
//! max, the sum and the output multiply.

// Without `std` nothing prepares this kernel (`new()` returns Unsupported).
#![cfg_attr(not(feature = "std"), allow(dead_code))]

#[cfg(feature = "std")]
use crate::error::{Error, Result};
#[cfg(feature = "std")]
use crate::quant::quantize_multiplier;
#[cfg(all(target_arch = "aarch64", target_feature = "neon", feature = "std"))]
use alloc::{sync::Arc, vec::Vec};

/// A 513-entry int16 table over the whole int16 input range: entry `i`
/// (`0..=512`) is the function at input `-32768 + 128 i`, in the table's
/// output quantization; lookups interpolate between neighbours.
#[derive(Clone, Copy, PartialEq, Eq)]
#[repr(C, align(64))]
pub(crate) struct Table513(pub(crate) [i16; 513]);

impl core::fmt::Debug for Table513 {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_tuple("Table513").field(&&self.0[..]).finish()
    }
}

impl Table513 {
    /// TFLite's `LUTPopulate` for int16 in `f64`: the function sampled at the
    /// 512 steps of the input range (`input` quantization over
    /// `[-32768, 32767]`), each sample corrected by half the interpolation
    /// error TFLite measures at the step's midpoint, and the function at the
    /// top of the range as entry 512. Rounding is half away from zero.
    #[cfg(feature = "std")]
    pub(crate) fn from_fn(input: (f64, i32), output: (f64, i32), f: impl Fn(f64) -> f64) -> Self {
        let (in_scale, in_zp) = input;
        let (out_scale, out_zp) = output;
        let input_min = in_scale * (i16::MIN as i32 - in_zp) as f64;
        let input_max = in_scale * (i16::MAX as i32 - in_zp) as f64;
        let output_min = out_scale * (i16::MIN as i32 - out_zp) as f64;
        let output_max = out_scale * (i16::MAX as i32 - out_zp) as f64;
        const STEPS: i32 = 512;
        let step = (input_max - input_min) / STEPS as f64;
        let half_step = step / 2.0;
        let output_scaling_inv = 65536.0 / (output_max - output_min);
        let (table_min, table_max) = (i16::MIN as f64, i16::MAX as f64);
        let mut table = [0i16; 513];
        for i in 0..STEPS {
            let val = f(input_min + i as f64 * step);
            let val_midpoint = f(input_min + i as f64 * step + half_step);
            let val_next = f(input_min + (i + 1) as f64 * step);
            let sample_val = (val * output_scaling_inv).round();
            let midpoint_interp_val =
                ((val_next * output_scaling_inv + (val * output_scaling_inv).round()) / 2.0)
                    .round();
            let midpoint_val = (val_midpoint * output_scaling_inv).round();
            let midpoint_err = midpoint_interp_val - midpoint_val;
            let bias = (midpoint_err / 2.0).round();
            table[i as usize] = (sample_val - bias).clamp(table_min, table_max) as i16;
        }
        table[STEPS as usize] = (f(input_max) * output_scaling_inv)
            .round()
            .clamp(table_min, table_max) as i16;
        Table513(table)
    }

    /// The interpolated value at `value`: entry `256 + (value >> 7)` plus the
    /// slope to the next entry times the low 7 bits, `/ 128` rounded half up
    /// (TFLite's `generic_int16_table_lookup`).
    #[inline(always)]
    pub(crate) fn lookup(&self, value: i16) -> i16 {
        // value >> 7 is in [-256, 255]: the index is in [0, 511].
        let index = (256 + (value as i32 >> 7)) as usize;
        let offset = (value & 0x7f) as i32;
        let base = self.0[index];
        // int16 in the C++ (the tables here never step by 2^15 or more).
        let slope = self.0[index + 1].wrapping_sub(base);
        let delta = (slope as i32 * offset + 64) >> 7;
        (base as i32 + delta) as i16
    }
}

/// The NEON kernel's gather table (`lut16_neon.rs`), filled here by the
/// scalar `exp` (so the NEON file imports this one and not the reverse):
/// `exp(d)` in Q0.15 for every input difference `d = q - max` in
/// `-65535..=0`, entry `d + 65535` (65,536 entries, 128 KiB): the scalar
/// kernel's `exp`, evaluated once.
#[cfg(all(target_arch = "aarch64", target_feature = "neon", feature = "std"))]
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct ExpByDiff(pub(super) Option<Arc<[i16; 65536]>>);

#[cfg(all(target_arch = "aarch64", target_feature = "neon", feature = "std"))]
impl core::fmt::Debug for ExpByDiff {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("ExpByDiff(65536 exps)")
    }
}

#[cfg(all(target_arch = "aarch64", target_feature = "neon", feature = "std"))]
impl ExpByDiff {
    /// Not filled yet (while `lut` is being built).
    pub(crate) fn empty() -> ExpByDiff {
        ExpByDiff(None)
    }

    /// `lut`'s scalar exp on every difference.
    pub(crate) fn new(lut: &SoftmaxLut16) -> ExpByDiff {
        // Difference d = q - max with max = 32767 and q = d + 32767.
        let exps: Vec<i16> = (i16::MIN..=i16::MAX)
            .map(|q| lut.exp(q, i16::MAX))
            .collect();
        let table: Arc<[i16]> = exps.into();
        ExpByDiff(table.try_into().ok())
    }
}

/// Everything int16 `Method::Lut` softmax needs: TFLite's two tables and the
/// input rescaling, prepared once; for the NEON backend also every exp
/// (see `lut16_neon.rs`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct SoftmaxLut16 {
    /// `exp(x)` for `x` in `[-10, 0]` (input `-32768..=32767`), output `2^15 = 1.0`.
    exp_lut: Table513,
    /// `1 / (1 + x)` for `x` in `[0, 1]`, output `2^15 = 1.0`.
    one_over_one_plus_x_lut: Table513,
    /// Q0.31 mantissa of `scale * beta / (10 / 65535)`.
    input_multiplier: i32,
    /// Its power-of-two exponent (a left shift when positive).
    input_shift: i32,
    /// `exp(q - max)` for every difference, the NEON kernel's gather table.
    #[cfg(all(target_arch = "aarch64", target_feature = "neon", feature = "std"))]
    pub(crate) exp_by_diff: ExpByDiff,
}

/// The first left shift of the input rescaling at which TFLite's int16
/// softmax overflows 32 bits: `65535 * 2^16 > 2^31`.
#[cfg(feature = "std")]
const LUT16_MAX_SHIFT: i32 = 16;

impl SoftmaxLut16 {
    /// TFLite's int16 `SoftmaxPrepare`. `input_scale` and `beta` are validated
    /// (finite, `> 0`); their product may overflow `f32` (see the module docs).
    #[cfg(feature = "std")]
    pub(crate) fn new(input_scale: f32, beta: f32) -> Result<Self> {
        let range = (i16::MAX as i32 - i16::MIN as i32) as f64;
        let exp_lut =
            Table513::from_fn((10.0 / range, i16::MAX as i32), (2.0 / range, 0), f64::exp);
        let one_over_one_plus_x_lut =
            Table513::from_fn((1.0 / range, i16::MIN as i32), (2.0 / range, 0), |x| {
                1.0 / (1.0 + x)
            });
        // `input->params.scale * params->beta` is a float product in the C++.
        // From 2^16 on every nonzero difference lands below the table's -10
        // (-65535 after rescaling), so larger multipliers (and an infinite
        // product) are capped there.
        let real = (input_scale * beta) as f64 / (10.0 / 65535.0);
        let m = quantize_multiplier(real.min(65536.0))?;
        // TFLite rescales a difference of up to 65535 by this multiplier in
        // 32 bits: from a left shift of 16 on (`scale * beta` of about 5.0
        // and more) the product overflows, and TFLite's bytes are the
        // wrapped value of whichever build's rounding ran (single: the 64-bit
        // product truncated to 32 bits; double: `x << shift` wrapped), up to
        // 30,000 steps from the right answer. Refused rather than reproduced.
        if m.shift >= LUT16_MAX_SHIFT {
            return Err(Error::OutOfDomain {
                op: "softmax",
                what: "input scale * beta",
                value: input_scale as f64 * beta as f64,
                requirement: "below 2^15 * 10 / 65535 (about 5.0) for int16 Method::Lut \
                              (TFLite's input rescaling overflows its 32-bit integers \
                              beyond); use Method::FixedPoint or Method::DequantF32",
            });
        }
        #[allow(unused_mut)]
        let mut lut = SoftmaxLut16 {
            exp_lut,
            one_over_one_plus_x_lut,
            input_multiplier: m.multiplier,
            input_shift: m.shift,
            #[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
            exp_by_diff: ExpByDiff::empty(),
        };
        #[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
        {
            lut.exp_by_diff = ExpByDiff::new(&lut);
        }
        Ok(lut)
    }

    /// TFLite's `MultiplyByQuantizedMultiplier` (`new()` refused the left
    /// shifts at which it overflows: `input_shift` is at most 15 here).
    #[inline(always)]
    fn rescale_diff(&self, diff: i32) -> i32 {
        use crate::fixedpoint::Lane;
        if self.input_shift > 0 {
            // |diff| <= 65535 and the shift <= 15: inside i32.
            (diff << self.input_shift).saturating_rounding_doubling_high_mul(self.input_multiplier)
        } else {
            diff.saturating_rounding_doubling_high_mul(self.input_multiplier)
                .rounding_divide_by_pot(self.input_shift.unsigned_abs())
        }
    }

    /// `exp(q - max)` in Q0.15 (TFLite's `SoftMaxCalculateExp`).
    #[inline(always)]
    pub(crate) fn exp(&self, q: i16, max: i16) -> i16 {
        let scaled = self.rescale_diff(q as i32 - max as i32);
        // Re-centre [-65535, 0] on the table's [-32768, 32767].
        let symmetric = scaled.wrapping_add(32767).clamp(-32768, 32767);
        self.exp_lut.lookup(symmetric as i16)
    }

    fn row(&self, row: &[i16], out: &mut [i16]) {
        let max = row.iter().copied().max().unwrap_or(i16::MIN);
        // Q16.15 in TFLite's i32; exps are in [0, 32767], so i64 cannot overflow.
        let mut sum: i64 = 0;
        for (x, e) in row.iter().zip(out.iter_mut()) {
            *e = self.exp(*x, max);
            sum += *e as i64;
        }
        let (reciprocal, right_shift) = self.reciprocal(sum);
        for e in out.iter_mut() {
            *e = scale_exp(*e, reciprocal, right_shift);
        }
    }

    /// The row's `1 / sum` as `(reciprocal, right_shift)`: the output is
    /// `e * reciprocal / 2^right_shift` ([`scale_exp`]). `reciprocal` is
    /// the `1 / (1 + x)` table's Q0.15 value (`>= 0`), `right_shift` is
    /// `31 - clz32(sum)`-ish: 14 for sums below `2^15`, at least 15 above.
    #[inline]
    pub(crate) fn reciprocal(&self, sum: i64) -> (i64, u32) {
        // The maximum contributes about 1.0, so sum >= 2^14.
        debug_assert!(sum > 0);
        // TFLite: headroom_plus_one = clz32(sum) >= 1 for sums below 2^31;
        // qneon continues below 1 for longer rows (normalising by a right shift).
        let headroom_plus_one = (sum as u64).leading_zeros() as i32 - 32;
        let normalised = if headroom_plus_one >= 1 {
            sum << (headroom_plus_one - 1)
        } else {
            sum >> (1 - headroom_plus_one)
        };
        // sum / 2^k in [1, 2) as 65536..=131072, minus 1 and re-centred on [-32768, 32767].
        let shifted_sum = (normalised + (1 << 13)) >> 14;
        let symmetric = (shifted_sum - ((1 << 15) + (1 << 16))).clamp(-32768, 32767);
        let reciprocal = self.one_over_one_plus_x_lut.lookup(symmetric as i16) as i64;
        let right_shift = (31 - headroom_plus_one) as u32;
        (reciprocal, right_shift)
    }
}

/// int16 `Method::Lut` softmax, scalar backend: each `row_len`-long row
/// (lengths checked by the caller). The exps are cached in `output` between
/// the two passes, as TFLite does.
pub(crate) fn softmax_scalar(
    lut: &SoftmaxLut16,
    input: &[i16],
    output: &mut [i16],
    row_len: usize,
) {
    for (row, out) in input
        .chunks_exact(row_len)
        .zip(output.chunks_exact_mut(row_len))
    {
        lut.row(row, out);
    }
}

/// One output, Q0.15: `e * reciprocal / 2^right_shift` rounded half up and
/// clamped to `[0, 32767]` (`e` Q0.15, from [`SoftmaxLut16::reciprocal`]).
#[inline(always)]
pub(crate) fn scale_exp(e: i16, reciprocal: i64, right_shift: u32) -> i16 {
    let round = 1i64 << (right_shift - 1);
    let result = (e as i64 * reciprocal + round) >> right_shift;
    result.clamp(0, 32767) as i16
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table513_lookup_at_the_knots_is_the_entry() {
        let mut t = [0i16; 513];
        for (i, v) in t.iter_mut().enumerate() {
            *v = (i as i32 * 97 - 20000) as i16;
        }
        let t = Table513(t);
        for i in 0..512 {
            let value = (-32768 + 128 * i as i32) as i16;
            assert_eq!(t.lookup(value), t.0[i]);
            // Half-way: base + slope / 2 rounded half up.
            let mid = t.lookup(value + 64);
            assert_eq!(mid as i32, t.0[i] as i32 + ((97 * 64 + 64) >> 7));
        }
    }
}
