//! `Method::Lut` for int16: the kernels TFLite's interpreter runs for int16
//! softmax, logistic and tanh with its default (optimized) op resolver,
//! bit for bit.
//!
//! **Softmax** (TFLite's `SoftmaxInt16`, identical in the reference and the
//! optimized resolver). `new()` fills two [`Table513`]s the way TFLite's
//! `LUTPopulate` does in `f64`: `exp(x)` for `x` in `[-10, 0]` and
//! `1 / (1 + x)` for `x` in `[0, 1]`, both on a symmetric output range
//! (entry `32768` would be 1.0). It also quantizes the input rescaling
//! `scale * beta / (10 / 65535)` (the product `scale * beta` taken in `f32`, as
//! the C++ does), so an input difference of `-65535` steps lands on `-10`.
//! Per row:
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
//! **Logistic and tanh.** What TFLite runs depends on the input scale
//! (`Prepare` decides once):
//!
//! * Input scale `2^-12` (logistic, tanh) or `2^-11` (tanh), as TFLite's
//!   `CheckedLog2` sees it (within `1e-3` in log2): gemmlowp's 16-bit
//!   fixed-point `logistic` / `tanh` on the raw input read as Q3.12 (for tanh at
//!   `2^-11` first doubled, saturating). See [`gemmlowp16`].
//! * Every other scale: TFLite's `sigmoid_table_uint16` (256 entries of
//!   `sigmoid(i / 24)` in unsigned Q0.16) with linear interpolation; the input
//!   is rescaled by an integer multiplier `floor(scale * 3 * 4096 * 2^shift)`
//!   (the smallest `shift` making it exceed 16383.5, at most 31) and a rounding
//!   right shift. tanh reads the table at twice the argument
//!   (`tanh(x) = 2 sigmoid(2x) - 1`).
//!
//! **TFLite's overflows are reproduced.** For input scales above about 16/3
//! (logistic, tanh) or `scale * beta` above about 5.0001 (softmax) TFLite's
//! input rescaling overflows `int32`; its outputs there are garbage, and so
//! are qneon's, deliberately the same bytes (wrapping arithmetic, x86-64
//! conversion semantics). Use `Method::FixedPoint` for meaningful results at
//! such scales.
//!
//! The table filling and the `CheckedLog2` test need `std` (`f64::exp`,
//! `f32::ln`); without it `Method::Lut` for int16 is `Error::Unsupported`.
//!
//! Backends: the kernels are scalar; the NEON backend runs the same code
//! (the per-element gathers dominate, see the op docs).

// Without `std` nothing prepares these kernels (`new()` returns Unsupported).
#![cfg_attr(not(feature = "std"), allow(dead_code))]

use super::{Activation, QuantElem};
use crate::arch::Backend;
use crate::error::{Error, Result};
#[cfg(feature = "std")]
use crate::quant::quantize_multiplier;

/// TFLite's `sigmoid_table_uint16`: `sigmoid(i / 24)` in unsigned Q0.16,
/// `i = 0..=255`, the last entry `65535`. The values are TFLite's constants as
/// shipped (not all of them are the nearest rounding of the formula: they lie
/// from 0.49 below to 1.11 above it, which a unit test checks, with their
/// order).
pub(crate) const SIGMOID_TABLE_U16: [u16; 256] = [
    32768, 33451, 34133, 34813, 35493, 36169, 36843, 37513, 38180, 38841, 39498, 40149, 40794,
    41432, 42064, 42688, 43304, 43912, 44511, 45102, 45683, 46255, 46817, 47369, 47911, 48443,
    48964, 49475, 49975, 50464, 50942, 51409, 51865, 52311, 52745, 53169, 53581, 53983, 54374,
    54755, 55125, 55485, 55834, 56174, 56503, 56823, 57133, 57433, 57724, 58007, 58280, 58544,
    58800, 59048, 59288, 59519, 59743, 59959, 60168, 60370, 60565, 60753, 60935, 61110, 61279,
    61441, 61599, 61750, 61896, 62036, 62172, 62302, 62428, 62549, 62666, 62778, 62886, 62990,
    63090, 63186, 63279, 63368, 63454, 63536, 63615, 63691, 63765, 63835, 63903, 63968, 64030,
    64090, 64148, 64204, 64257, 64308, 64357, 64405, 64450, 64494, 64536, 64576, 64614, 64652,
    64687, 64721, 64754, 64786, 64816, 64845, 64873, 64900, 64926, 64950, 64974, 64997, 65019,
    65039, 65060, 65079, 65097, 65115, 65132, 65149, 65164, 65179, 65194, 65208, 65221, 65234,
    65246, 65258, 65269, 65280, 65291, 65301, 65310, 65319, 65328, 65337, 65345, 65352, 65360,
    65367, 65374, 65381, 65387, 65393, 65399, 65404, 65410, 65415, 65420, 65425, 65429, 65433,
    65438, 65442, 65445, 65449, 65453, 65456, 65459, 65462, 65465, 65468, 65471, 65474, 65476,
    65479, 65481, 65483, 65485, 65488, 65489, 65491, 65493, 65495, 65497, 65498, 65500, 65501,
    65503, 65504, 65505, 65507, 65508, 65509, 65510, 65511, 65512, 65513, 65514, 65515, 65516,
    65517, 65517, 65518, 65519, 65520, 65520, 65521, 65522, 65522, 65523, 65523, 65524, 65524,
    65525, 65525, 65526, 65526, 65526, 65527, 65527, 65528, 65528, 65528, 65529, 65529, 65529,
    65529, 65530, 65530, 65530, 65530, 65531, 65531, 65531, 65531, 65531, 65532, 65532, 65532,
    65532, 65532, 65532, 65533, 65533, 65533, 65533, 65533, 65533, 65533, 65533, 65534, 65534,
    65534, 65534, 65534, 65534, 65534, 65534, 65534, 65534, 65535,
];

// ---------------------------------------------------------------------------
// gemmlowp's fixed point on 16-bit raw values.
// ---------------------------------------------------------------------------

/// gemmlowp's `FixedPoint<int16_t, I>` arithmetic and its `logistic` / `tanh`,
/// scalar. The C++ does `+`, `-` and negation in `int` and stores the result
/// back into `int16_t`, so they wrap; multiplication is the 16-bit
/// saturating rounding doubling high multiply (NEON `sqrdmulh.8h`). The
/// algorithm is the one of [`crate::fixedpoint`] (exp by a Taylor polynomial on
/// `[-1/4, 0)` and a barrel shifter, Newton-Raphson reciprocal), with each
/// 32-bit constant rounded to 16 bits (gemmlowp's `RescaleConstantInitializer`:
/// a rounding divide by `2^16`).
pub(crate) mod gemmlowp16 {
    /// `a * b / 2^15` rounded to nearest (ties away from zero), `-1 * -1`
    /// saturated: gemmlowp's 16-bit `SaturatingRoundingDoublingHighMul`.
    #[inline(always)]
    pub(crate) fn srdhm(a: i16, b: i16) -> i16 {
        if a == i16::MIN && b == i16::MIN {
            return i16::MAX;
        }
        let ab = a as i32 * b as i32;
        let nudge = if ab >= 0 { 1 << 14 } else { 1 - (1 << 14) };
        // `/` truncates toward zero, as the C++.
        ((ab + nudge) / (1 << 15)) as i16
    }

    /// `x / 2^e` rounded to nearest, ties away from zero (`e` in `0..=15`).
    #[inline(always)]
    pub(crate) fn rounding_divide_by_pot(x: i16, e: u32) -> i16 {
        let mask = ((1i32 << e) - 1) as i16;
        let remainder = x & mask;
        let threshold = (mask >> 1) + (x < 0) as i16;
        (x >> e) + (remainder > threshold) as i16
    }

    /// `x * 2^e` for `e` in `1..=15`, saturating (gemmlowp's
    /// `SaturatingRoundingMultiplyByPOT` with a positive exponent).
    #[inline(always)]
    pub(crate) fn saturating_shl(x: i16, e: u32) -> i16 {
        let threshold = ((1i32 << (15 - e)) - 1) as i16;
        if x > threshold {
            i16::MAX
        } else if x < -threshold {
            i16::MIN
        } else {
            x << e
        }
    }

    /// `(a + b) / 2` rounded half away from zero (computed in 32 bits).
    #[inline(always)]
    fn rounding_half_sum(a: i16, b: i16) -> i16 {
        let sum = a as i32 + b as i32;
        let sign = if sum >= 0 { 1 } else { -1 };
        ((sum + sign) / 2) as i16
    }

    /// A gemmlowp constant given as a 32-bit raw value, in 16 bits.
    const fn c(raw32: i32) -> i16 {
        // Rounding divide by 2^16, ties away from zero (all constants here are
        // far from ties; the sign matters for the negative one).
        let q = raw32 >> 16;
        let remainder = raw32 & 0xffff;
        let threshold = 0x7fff + (raw32 < 0) as i32;
        (q + (remainder > threshold) as i32) as i16
    }

    /// 1.0 in Q0.15 (saturated), and in Q2.13.
    const ONE_Q0: i16 = i16::MAX;
    const ONE_Q2: i16 = 1 << 13;

    /// `exp(a)` for `a` in `[-1/4, 0)`, Q0.15 in and out.
    fn exp_on_interval_between_negative_one_quarter_and_0_excl(a: i16) -> i16 {
        // exp(-1/8) and 1/3.
        let constant_term = c(1_895_147_668);
        let constant_1_over_3 = c(715_827_883);
        // Taylor expansion around -1/8: x = a + 1/8.
        let x = a.wrapping_add(1 << 12);
        let x2 = srdhm(x, x);
        let x3 = srdhm(x2, x);
        let x4 = srdhm(x2, x2);
        let x4_over_4 = rounding_divide_by_pot(x4, 2);
        let poly = rounding_divide_by_pot(
            srdhm(x4_over_4.wrapping_add(x3), constant_1_over_3).wrapping_add(x2),
            1,
        );
        constant_term.saturating_add(srdhm(constant_term, x.wrapping_add(poly)))
    }

    /// `exp(a)` for `a <= 0` in Q`int_bits`.(15 - `int_bits`), result Q0.15.
    fn exp_on_negative_values(a: i16, int_bits: u32) -> i16 {
        let frac_bits = 15 - int_bits;
        let one_quarter: i16 = 1 << (frac_bits - 2);
        let mask = one_quarter - 1;
        let a_mod_quarter_minus_one_quarter = (a & mask).wrapping_sub(one_quarter);
        let mut result = exp_on_interval_between_negative_one_quarter_and_0_excl(saturating_shl(
            a_mod_quarter_minus_one_quarter,
            int_bits,
        ));
        let remainder = a_mod_quarter_minus_one_quarter.wrapping_sub(a);
        // exp(-2^k) for k = -2..=4, as gemmlowp's 32-bit raw constants.
        const BARREL: [(i32, i32); 7] = [
            (-2, 1_672_461_947),
            (-1, 1_302_514_674),
            (0, 790_015_084),
            (1, 290_630_308),
            (2, 39_332_535),
            (3, 720_401),
            (4, 242),
        ];
        for (exponent, multiplier) in BARREL {
            if int_bits as i32 > exponent {
                let bit = (frac_bits as i32 + exponent) as u32;
                if remainder & (1 << bit) != 0 {
                    result = srdhm(result, c(multiplier));
                }
            }
        }
        if a == 0 {
            ONE_Q0
        } else {
            result
        }
    }

    /// Newton-Raphson on `1 / (1 + a)` (Q2.13 iterate), `a` in `(0, 1)` Q0.15.
    fn newton_raphson_one_over_one_plus_x(a: i16) -> i16 {
        let half_denominator = rounding_half_sum(a, ONE_Q0);
        // 48/17 and -32/17 in Q2.13.
        let constant_48_over_17 = c(1_515_870_810);
        let constant_neg_32_over_17 = c(-1_010_580_540);
        let mut x =
            constant_48_over_17.wrapping_add(srdhm(half_denominator, constant_neg_32_over_17));
        for _ in 0..3 {
            let half_denominator_times_x = srdhm(half_denominator, x);
            let one_minus_half_denominator_times_x = ONE_Q2.wrapping_sub(half_denominator_times_x);
            // Q2.13 * Q2.13 = Q4.11, back to Q2.13.
            x = x.wrapping_add(saturating_shl(
                srdhm(x, one_minus_half_denominator_times_x),
                2,
            ));
        }
        x
    }

    /// `1 / (1 + a)` for `a` in `(0, 1)`, Q0.15.
    fn one_over_one_plus_x_for_x_in_0_1(a: i16) -> i16 {
        // x / 2 in Q2.13 is x in Q1.14; rescale to Q0.15.
        saturating_shl(newton_raphson_one_over_one_plus_x(a), 1)
    }

    /// `(1 - a) / (1 + a)` for `a` in `(0, 1)`, Q0.15.
    fn one_minus_x_over_one_plus_x_for_x_in_0_1(a: i16) -> i16 {
        // 2 / (1 + a) - 1 = (1 - a) / (1 + a), Q2.13 to Q0.15.
        saturating_shl(
            newton_raphson_one_over_one_plus_x(a).wrapping_sub(ONE_Q2),
            2,
        )
    }

    /// gemmlowp's `logistic` for a Q3.12 input, Q0.15 output.
    pub(crate) fn logistic_q3_12(a: i16) -> i16 {
        let positive = a > 0;
        let abs_input = if positive { a } else { a.wrapping_neg() };
        let result_if_positive =
            one_over_one_plus_x_for_x_in_0_1(exp_on_negative_values(abs_input.wrapping_neg(), 3));
        let result_if_negative = ONE_Q0.wrapping_sub(result_if_positive);
        if a == 0 {
            c(1 << 30)
        } else if positive {
            result_if_positive
        } else {
            result_if_negative
        }
    }

    /// gemmlowp's `tanh` for a Q3.12 input, Q0.15 output.
    pub(crate) fn tanh_q3_12(a: i16) -> i16 {
        let negative = a < 0;
        let n = if negative { a } else { a.wrapping_neg() };
        // -tanh(n) for n <= 0: exp(2n), with 2n read as Q4.11.
        let t = one_minus_x_over_one_plus_x_for_x_in_0_1(exp_on_negative_values(n, 4));
        if a == 0 {
            0
        } else if negative {
            t.wrapping_neg()
        } else {
            t
        }
    }
}

// ---------------------------------------------------------------------------
// Logistic and tanh.
// ---------------------------------------------------------------------------

/// The int16 logistic/tanh kernel TFLite's optimized resolver runs for the
/// prepared input scale.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Activation16 {
    /// `reference_integer_ops::Logistic` / `Tanh`: `x = (q * multiplier +
    /// round) >> shift` (wrapping `i32`), then [`SIGMOID_TABLE_U16`] with
    /// linear interpolation.
    SigmoidTable {
        /// Rescales the input to the table's units (`x / 2^9` indexes the
        /// logistic table, `x / 2^8` the tanh one); positive.
        multiplier: i32,
        /// The right shift after multiplying, `0..=31`.
        shift: u32,
        /// `2^(shift - 1)`, or 0 for shift 0.
        round: i32,
    },
    /// gemmlowp's 16-bit fixed point on the raw input read as Q3.12,
    /// first doubled (saturating) when `double_input` (tanh only).
    Gemmlowp {
        /// Multiply the input by 2 first (tanh at input scale `2^-11`).
        double_input: bool,
    },
}

/// TFLite's `CheckedLog2` (in `f32`): `(round(log2(x)), |frac| < 1e-3)`.
#[cfg(feature = "std")]
fn checked_log2(x: f32) -> (i32, bool) {
    // `1.0f / std::log(2.0f)` is folded at compile time from ln 2 rounded to f32.
    let x_log2 = x.ln() * (1.0f32 / core::f32::consts::LN_2);
    let rounded = x_log2.round();
    let frac = x_log2 - rounded;
    (rounded as i32, frac.abs() < 1e-3)
}

/// `static_cast<int32_t>(double)` as x86-64 computes it (`cvttsd2si`):
/// truncation, and `i32::MIN` for values out of range (the C++ is undefined
/// there; this is what TFLite's x86-64 build does).
#[cfg(feature = "std")]
fn x86_cvtt_i32(x: f64) -> i32 {
    if x.is_nan() || x >= 2_147_483_648.0 || x <= -2_147_483_649.0 {
        i32::MIN
    } else {
        x as i32
    }
}

impl Activation16 {
    /// TFLite's `SigmoidPrepare` / `TanhPrepare` for int16 and its choice of
    /// kernel in `Eval` (optimized resolver). `input_scale` is validated.
    #[cfg(feature = "std")]
    pub(crate) fn prepare(activation: Activation, input_scale: f32) -> Activation16 {
        const INPUT_INTEGER_BITS: i32 = 3;
        let (log2, mut pot) = checked_log2(input_scale);
        let pot_shift = (15 - INPUT_INTEGER_BITS).wrapping_add(log2);
        pot &= match activation {
            Activation::Logistic => pot_shift == 0,
            Activation::Tanh => pot_shift == 0 || pot_shift == 1,
        };
        if pot {
            // input_multiplier stays 0: Eval takes the gemmlowp path.
            return Activation16::Gemmlowp {
                double_input: pot_shift == 1,
            };
        }
        // Rescale to 1/(3 * 4096) per unit: +-2^17 is +-10.7 (scale * 4096 * 3,
        // left to right in f64, doubled until above 16383.5 or 31 doublings).
        let mut multiplier = input_scale as f64 * 4096.0 * 3.0;
        let mut shift = 0u32;
        while multiplier <= 32767.0 / 2.0 && shift <= 30 {
            shift += 1;
            multiplier *= 2.0;
        }
        let multiplier = x86_cvtt_i32(multiplier);
        if multiplier > 0 {
            Activation16::SigmoidTable {
                multiplier,
                shift,
                round: if shift > 0 { 1 << (shift - 1) } else { 0 },
            }
        } else {
            // A multiplier of 0 (scales below ~4e-14) or one that does not fit
            // (scales above ~175,000): TFLite then runs the gemmlowp kernel,
            // whose tanh doubles its input for any non-zero shift.
            Activation16::Gemmlowp {
                double_input: shift != 0,
            }
        }
    }

    /// One element.
    #[inline(always)]
    pub(crate) fn apply(&self, activation: Activation, q: i16) -> i16 {
        match (*self, activation) {
            (
                Activation16::SigmoidTable {
                    multiplier,
                    shift,
                    round,
                },
                _,
            ) => {
                let x = (q as i32).wrapping_mul(multiplier).wrapping_add(round) >> shift;
                match activation {
                    Activation::Logistic => logistic_table(x),
                    Activation::Tanh => tanh_table(x),
                }
            }
            (Activation16::Gemmlowp { .. }, Activation::Logistic) => gemmlowp16::logistic_q3_12(q),
            (Activation16::Gemmlowp { double_input }, Activation::Tanh) => {
                let a = if double_input {
                    gemmlowp16::saturating_shl(q, 1)
                } else {
                    q
                };
                gemmlowp16::tanh_q3_12(a)
            }
        }
    }

    /// Element-wise over a slice (lengths checked by the caller; only the
    /// common length is written). Every backend runs this scalar loop.
    pub(crate) fn run(
        &self,
        backend: Backend,
        activation: Activation,
        input: &[i16],
        output: &mut [i16],
    ) -> Result<()> {
        check_backend(backend)?;
        // Monomorphize the per-element branch out of the loop.
        match activation {
            Activation::Logistic => self.run_for(Activation::Logistic, input, output),
            Activation::Tanh => self.run_for(Activation::Tanh, input, output),
        }
        Ok(())
    }

    #[inline(always)]
    fn run_for(&self, activation: Activation, input: &[i16], output: &mut [i16]) {
        for (x, y) in input.iter().zip(output.iter_mut()) {
            *y = self.apply(activation, *x);
        }
    }
}

/// Logistic from the rescaled input `x` (`|x| / 2^9` indexes the table).
#[inline(always)]
fn logistic_table(x: i32) -> i16 {
    let abs = x.unsigned_abs();
    let uh = abs >> 9;
    // Interpolated sigmoid(|x|) in Q0.25 (unsigned).
    let result = if uh >= 255 {
        0x7fff << 10
    } else {
        let ua = SIGMOID_TABLE_U16[uh as usize] as u32;
        let ub = SIGMOID_TABLE_U16[uh as usize + 1] as u32;
        let ut = abs & 0x1ff;
        (ua << 9) + ut * (ub - ua)
    };
    // sigmoid(-x) = 1 - sigmoid(x); then Q0.25 to Q0.15, rounding.
    let result = if x >= 0 {
        result + (1 << 9)
    } else {
        (1 << 25) - result + (1 << 9) - 1
    };
    (result >> 10) as i16
}

/// Tanh from the rescaled input `x` (`|x| / 2^8` indexes the table).
#[inline(always)]
fn tanh_table(x: i32) -> i16 {
    let abs = x.unsigned_abs();
    let uh = abs >> 8;
    let result = if uh >= 255 {
        0xffff << 8
    } else {
        let ua = SIGMOID_TABLE_U16[uh as usize] as u32;
        let ub = SIGMOID_TABLE_U16[uh as usize + 1] as u32;
        let ut = abs & 0xff;
        ((ua << 8) + ut * (ub - ua)) as i32
    };
    // tanh(x) = 2 sigmoid(2x) - 1, rounded from Q0.24 to Q0.15.
    let result = if x >= 0 {
        result - (1 << 23) + (1 << 7)
    } else {
        -result + (1 << 23) + (1 << 7) - 1
    };
    (result >> 8) as i16
}

// ---------------------------------------------------------------------------
// 513-entry tables and softmax.
// ---------------------------------------------------------------------------

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

/// Everything int16 `Method::Lut` softmax needs: TFLite's two tables and the
/// input rescaling, prepared once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SoftmaxLut16 {
    /// `exp(x)` for `x` in `[-10, 0]` (input `-32768..=32767`), output `2^15 = 1.0`.
    exp_lut: Table513,
    /// `1 / (1 + x)` for `x` in `[0, 1]`, output `2^15 = 1.0`.
    one_over_one_plus_x_lut: Table513,
    /// Q0.31 mantissa of `scale * beta / (10 / 65535)`.
    input_multiplier: i32,
    /// Its power-of-two exponent (a left shift when positive).
    input_shift: i32,
}

impl SoftmaxLut16 {
    /// TFLite's int16 `SoftmaxPrepare`. `input_scale` and `beta` are validated
    /// (finite, `> 0`); errors only if `scale * beta` overflows `f32`.
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
        let real = (input_scale * beta) as f64 / (10.0 / 65535.0);
        let m = quantize_multiplier(real)?;
        Ok(SoftmaxLut16 {
            exp_lut,
            one_over_one_plus_x_lut,
            input_multiplier: m.multiplier,
            input_shift: m.shift,
        })
    }

    /// TFLite's `MultiplyByQuantizedMultiplier` as its x86-64 build computes
    /// it: the left shift wraps (and, like `shl`, uses the shift count mod 32).
    #[inline(always)]
    fn rescale_diff(&self, diff: i32) -> i32 {
        use crate::fixedpoint::Lane;
        if self.input_shift > 0 {
            diff.wrapping_shl(self.input_shift as u32)
                .saturating_rounding_doubling_high_mul(self.input_multiplier)
        } else {
            diff.saturating_rounding_doubling_high_mul(self.input_multiplier)
                .rounding_divide_by_pot(self.input_shift.unsigned_abs())
        }
    }

    /// `exp(q - max)` in Q0.15 (TFLite's `SoftMaxCalculateExp`).
    #[inline(always)]
    fn exp(&self, q: i16, max: i16) -> i16 {
        let scaled = self.rescale_diff(q as i32 - max as i32);
        // Re-centre [-65535, 0] on the table's [-32768, 32767].
        let symmetric = scaled.wrapping_add(32767).clamp(-32768, 32767);
        self.exp_lut.lookup(symmetric as i16)
    }

    /// Softmax of each `row_len`-long row (lengths checked by the caller).
    /// The exps are cached in `output` between the two passes, as TFLite does.
    pub(crate) fn run(
        &self,
        backend: Backend,
        input: &[i16],
        output: &mut [i16],
        row_len: usize,
    ) -> Result<()> {
        check_backend(backend)?;
        for (row, out) in input
            .chunks_exact(row_len)
            .zip(output.chunks_exact_mut(row_len))
        {
            self.row(row, out);
        }
        Ok(())
    }

    fn row(&self, row: &[i16], out: &mut [i16]) {
        let max = row.iter().copied().max().unwrap_or(i16::MIN);
        // Q16.15 in TFLite's i32; exps are in [0, 32767], so i64 cannot overflow.
        let mut sum: i64 = 0;
        for (x, e) in row.iter().zip(out.iter_mut()) {
            *e = self.exp(*x, max);
            sum += *e as i64;
        }
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
        let round = 1i64 << (right_shift - 1);
        for e in out.iter_mut() {
            let result = (*e as i64 * reciprocal + round) >> right_shift;
            *e = result.clamp(0, 32767) as i16;
        }
    }
}

/// The int16 table kernels are scalar on every backend; this only checks
/// that the requested backend exists here.
fn check_backend(backend: Backend) -> Result<()> {
    if backend.is_available() {
        Ok(())
    } else {
        Err(Error::BackendUnavailable {
            backend: backend.name(),
        })
    }
}

/// The input checks TFLite's int16 `Prepare` adds for these kernels: the
/// input zero point must be 0.
pub(crate) fn check_input_zero_point(zero_point: i32) -> Result<()> {
    if zero_point == 0 {
        Ok(())
    } else {
        Err(Error::ZeroPoint {
            what: "input zero point",
            value: zero_point,
            min: 0,
            max: 0,
        })
    }
}

/// The error for a non-int16 type reaching an int16 kernel (`new()` never
/// prepares one for other types; this keeps `run()` panic-free regardless).
pub(crate) fn not_int16() -> Error {
    Error::Unsupported {
        op: "int16 lookup table",
        dtype: "non-int16",
        reason: "the int16 Method::Lut kernels only run on int16 data",
    }
}

/// Views `T` slices as `i16` when `T` is `i16`; `None` for other types.
pub(crate) fn as_i16<'a, T: QuantElem>(
    input: &'a [T],
    output: &'a mut [T],
) -> Option<(&'a [i16], &'a mut [i16])> {
    super::cast_same::<T, i16>(input, output)
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;

    #[cfg(feature = "std")]
    #[test]
    fn sigmoid_table_is_sigmoid_of_i_over_24() {
        for (i, &v) in SIGMOID_TABLE_U16.iter().enumerate() {
            let exact = 65536.0 / (1.0 + (-(i as f64) / 24.0).exp());
            // TFLite's entries are up to 1.11 above the formula (entry 35).
            assert!((v as f64 - exact).abs() < 1.12, "entry {i}: {v} vs {exact}");
        }
        assert!(SIGMOID_TABLE_U16.windows(2).all(|w| w[0] <= w[1]));
    }

    #[cfg(feature = "std")]
    #[test]
    fn gemmlowp16_constants() {
        use crate::fixedpoint::Lane;
        // gemmlowp's rounding of a 32-bit raw constant to 16 bits, against the
        // real values in Q0.15 / Q2.13.
        let c = |raw: i32| raw.rounding_divide_by_pot(16) as i16;
        let q15 = |c: i16, v: f64| assert!((c as f64 / 32768.0 - v).abs() <= 0.5 / 32768.0);
        q15(c(1_895_147_668), (-0.125f64).exp());
        q15(c(715_827_883), 1.0 / 3.0);
        let q13 = |c: i16, v: f64| assert!((c as f64 / 8192.0 - v).abs() <= 0.5 / 8192.0);
        q13(c(1_515_870_810), 48.0 / 17.0);
        q13(c(-1_010_580_540), -32.0 / 17.0);
    }

    #[test]
    fn gemmlowp16_primitives_match_wide_math() {
        use gemmlowp16::*;
        for a in (i16::MIN..=i16::MAX).step_by(7) {
            for b in [
                i16::MIN,
                -32767,
                -12345,
                -1,
                0,
                1,
                3,
                16384,
                23130,
                i16::MAX,
            ] {
                let exact = (a as f64 * b as f64) / 32768.0;
                let got = srdhm(a, b) as f64;
                if !(a == i16::MIN && b == i16::MIN) {
                    assert!((got - exact).abs() <= 0.5, "{a} * {b}");
                }
            }
            for e in 0..=15 {
                let exact = a as f64 / (1u32 << e) as f64;
                let got = rounding_divide_by_pot(a, e) as f64;
                assert!((got - exact).abs() <= 0.5, "{a} / 2^{e}");
                // Ties away from zero.
                if (exact - exact.trunc()).abs() == 0.5 {
                    assert_eq!(got, exact + 0.5 * exact.signum(), "{a} / 2^{e}");
                }
            }
            for e in 1..=15 {
                let exact = (a as i32) << e;
                assert_eq!(saturating_shl(a, e) as i32, exact.clamp(-32768, 32767));
            }
        }
    }

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
