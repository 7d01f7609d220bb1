//! int16 logistic and tanh, `Method::Lut`: the kernels TFLite's interpreter
//! runs with its default (optimized) op resolver, bit for bit wherever they
//! compute the function (see below for the scales where they do not).
//!
//! **Logistic and tanh.** What TFLite runs depends on the input scale
//! (`Prepare` decides once):
//!
//! * Input scale `2^-12` (logistic, tanh) or `2^-11` (tanh), as TFLite's
//!   `CheckedLog2` sees it (within `1e-3` in log2): gemmlowp's 16-bit
//!   fixed-point `logistic` / `tanh` on the raw input read as Q3.12 (for tanh at
//!   `2^-11` first doubled, saturating). See [`crate::fixedpoint::gemmlowp16`].
//! * Every other scale: TFLite's `sigmoid_table_uint16` (256 entries of
//!   `sigmoid(i / 24)` in unsigned Q0.16) with linear interpolation; the input
//!   is rescaled by an integer multiplier `floor(scale * 3 * 4096 * 2^shift)`
//!   (the smallest `shift` making it exceed 16383.5, at most 31) and a rounding
//!   right shift. tanh reads the table at twice the argument
//!   (`tanh(x) = 2 sigmoid(2x) - 1`).
//!
//! Where TFLite's kernel is wrong, qneon computes what the table method
//! means instead (and so differs from TFLite's bytes there):
//!
//! * Input scales above about 16/3: TFLite's `q * multiplier` overflows
//!   `int32` and its outputs are garbage. qneon forms the product in 64 bits
//!   (the same value wherever TFLite's fits) and saturates it, so large
//!   inputs read the table's saturated end.
//! * Scales whose multiplier is 0 (below about 3.8e-14) or does not fit
//!   `int32` (above about 175,000): TFLite falls back to the gemmlowp kernel,
//!   which reads the raw input as Q3.12, i.e. computes as if the scale were
//!   2^-12 (logistic(-32768 * 1e-30) came out 11 instead of 16384). qneon
//!   stays on the table: a zero multiplier reads every input as 0 (the exact
//!   answer rounds to 0.5 and 0 there), a huge one saturates every nonzero
//!   input.
//!
//! Preparing needs `std` (`f32::ln` for `CheckedLog2`); without it
//! `Method::Lut` for int16 is `Error::Unsupported`. This file is the scalar
//! backend and the oracle; the NEON backend gathers from a table of this
//! kernel's output for all 65,536 inputs, filled by `new()` (128 KiB per op,
//! see `lut16_neon.rs`).

// Without `std` nothing prepares this kernel (`new()` returns Unsupported).
#![cfg_attr(not(feature = "std"), allow(dead_code))]

use super::params::Activation;
use crate::fixedpoint::gemmlowp16;

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

/// The int16 logistic/tanh kernel TFLite's optimized resolver runs for the
/// prepared input scale.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Activation16 {
    /// `reference_integer_ops::Logistic` / `Tanh`: `x = (q * multiplier +
    /// round) >> shift` (wrapping `i32`), then [`SIGMOID_TABLE_U16`] with
    /// linear interpolation.
    SigmoidTable {
        /// Rescales the input to the table's units (`x / 2^9` indexes the
        /// logistic table, `x / 2^8` the tanh one); `0..2^16` (0 for input
        /// scales below about 3.8e-14: every input reads the table at 0).
        multiplier: i32,
        /// The right shift after multiplying, `0..=31`.
        shift: u32,
        /// `2^(shift - 1)`, or 0 for shift 0.
        round: i32,
    },
    /// [`SIGMOID_TABLE_U16`] for multipliers of `2^16` or more (input scales
    /// above about 16/3, shift 0): `x = q * multiplier` formed in 64 bits and
    /// saturated to `i32` (TFLite's product wraps).
    WideTable {
        /// Rescales the input to the table's units; `>= 2^16`.
        multiplier: i32,
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
        if multiplier >= 65536.0 {
            // Then shift == 0, and `q * multiplier` may leave int32 (TFLite's
            // wraps): the product is formed in 64 bits and saturated. A
            // multiplier beyond int32 saturates every nonzero input either way.
            return Activation16::WideTable {
                multiplier: multiplier.min(i32::MAX as f64) as i32,
            };
        }
        // Truncation, as TFLite; 0 for scales below about 3.8e-14, where
        // every input then reads the table at 0 (TFLite reads the raw input
        // as Q3.12 there instead).
        Activation16::SigmoidTable {
            multiplier: multiplier as i32,
            shift,
            round: if shift > 0 { 1 << (shift - 1) } else { 0 },
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
                // |q * multiplier + round| < 2^31: a shifted multiplier is
                // below 2^15 (round <= 2^30), an unshifted one below 2^16
                // (round 0). TFLite's wrapping product equals this here.
                let x = ((q as i32) * multiplier + round) >> shift;
                table_activation(activation, x)
            }
            (Activation16::WideTable { multiplier }, _) => {
                let wide = q as i64 * multiplier as i64;
                table_activation(
                    activation,
                    wide.clamp(i32::MIN as i64, i32::MAX as i64) as i32,
                )
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
    /// common length is written): the scalar backend, and the filling of
    /// the NEON backend's output table.
    pub(crate) fn run(&self, activation: Activation, input: &[i16], output: &mut [i16]) {
        // Monomorphize the per-element branch out of the loop.
        match activation {
            Activation::Logistic => self.run_for(Activation::Logistic, input, output),
            Activation::Tanh => self.run_for(Activation::Tanh, input, output),
        }
    }

    #[inline(always)]
    fn run_for(&self, activation: Activation, input: &[i16], output: &mut [i16]) {
        for (x, y) in input.iter().zip(output.iter_mut()) {
            *y = self.apply(activation, *x);
        }
    }
}

/// Logistic or tanh from the rescaled input `x`.
#[inline(always)]
fn table_activation(activation: Activation, x: i32) -> i16 {
    match activation {
        Activation::Logistic => logistic_table(x),
        Activation::Tanh => tanh_table(x),
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
}
