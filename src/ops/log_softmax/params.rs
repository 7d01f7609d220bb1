//! [`LogSoftmaxParams`]: what `LogSoftmax::new` prepares for
//! [`Method::FixedPoint`](crate::Method::FixedPoint), and the per-lane math
//! every backend runs on it (written once over [`Lane`]).

use crate::checks::{check_quantization, required_output, FixedOutputOp};
use crate::elem::QuantElem;
use crate::error::{Error, Result};
use crate::fixedpoint::{
    exp_on_negative_values, log_x_for_x_greater_than_or_equal_to_1, FixedPoint, Lane,
};
use crate::ops::softmax_rows::params::{ACCUMULATION_INTEGER_BITS, SCALED_DIFF_INTEGER_BITS};
use crate::quant::{
    calculate_input_radius, multiply_by_quantized_multiplier, pow2, preprocess_softmax_scaling,
    quantize_multiplier, QuantParams,
};

/// Integer bits of the output: real range `[-16, 0]`.
const OUTPUT_INTEGER_BITS: u32 = 4;

/// Everything the log-softmax kernels need, computed once by `new()`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LogSoftmaxParams {
    /// Q0.31 mantissa of `scale * 2^26` (capped at `2^31 - 1`).
    pub input_multiplier: i32,
    /// Its power-of-two exponent.
    pub input_shift: i32,
    /// Mantissa of the reverse scaling `2^(31 - shift) / multiplier`, or 0 when
    /// the scale is so small that no difference is ever cut (the factor is 1
    /// or more).
    pub reverse_multiplier: i32,
    /// Its exponent (TFLite's `-reverse_scaling_right_shift`).
    pub reverse_shift: i32,
    /// Differences below this (in input steps) contribute exp = 0.
    pub diff_min: i32,
    /// Output zero point (127 for int8, 255 for uint8).
    pub output_zero_point: i32,
    /// Smallest output value of the type.
    pub output_min: i32,
}

/// Per-row values of log-softmax.
#[derive(Clone, Copy, Debug)]
pub(crate) struct LogSoftmaxRow {
    /// `ln(sum of exps)`, Q5.26.
    pub(crate) log_sum: i32,
    /// Differences `<=` this give the type minimum.
    pub(crate) adjusted_diff_min: i32,
}

impl LogSoftmaxParams {
    /// Validates and prepares log-softmax for element type `T` (int8 or uint8).
    pub fn new<T: QuantElem>(input: QuantParams, output: QuantParams) -> Result<Self> {
        // TFLite's output quantization (scale 16/256 compared exactly, zero
        // point at the top of the type), from the one table every op's
        // `output_quantization()` reads; none for int16.
        let Some((required, tolerance)) = required_output::<T>(FixedOutputOp::LogSoftmax) else {
            return Err(Error::Unsupported {
                op: "log_softmax",
                dtype: T::NAME,
                reason: "log-softmax is defined for int8 and uint8 (as in TFLite)",
            });
        };
        let input_scale = check_quantization::<T>(
            "log_softmax",
            input,
            output,
            required.scale as f64,
            required.zero_point,
            tolerance,
        )?;
        let m = preprocess_softmax_scaling(1.0, input_scale, SCALED_DIFF_INTEGER_BITS)?;
        let (input_multiplier, input_shift) = if m.shift < -31 {
            (0, 0)
        } else {
            (m.multiplier, m.shift)
        };
        let radius = calculate_input_radius(SCALED_DIFF_INTEGER_BITS, input_shift, 31)?;
        // TFLite: 2^(31 - shift) / multiplier, the factor from Q5.26 back to input steps.
        // A reverse factor of 1 or more (shift > 0, input scales below about
        // 2^-26, where TFLite aborts) maps `log_sum - 32` below i32::MIN input
        // steps: no difference is ever cut, as with a zero multiplier.
        let (reverse_multiplier, reverse_shift) = if input_multiplier == 0 {
            (0, 0)
        } else {
            let r = quantize_multiplier(pow2(31 - input_shift) / input_multiplier as f64)?;
            if r.shift > 0 {
                (0, 0)
            } else {
                (r.multiplier, r.shift)
            }
        };
        Ok(LogSoftmaxParams {
            input_multiplier,
            input_shift,
            reverse_multiplier,
            reverse_shift,
            diff_min: -radius,
            output_zero_point: output.zero_point,
            output_min: T::MIN,
        })
    }

    /// The difference `d` (input steps) rescaled to Q5.26.
    #[inline(always)]
    pub(crate) fn scaled_diff<L: Lane>(&self, diff: L) -> L {
        multiply_by_quantized_multiplier(diff, self.input_multiplier, self.input_shift)
    }

    /// Each element's contribution to the sum of exps: Q12.19 raw, 0 below `diff_min`.
    #[inline(always)]
    pub(crate) fn exp_term<L: Lane>(&self, diff: L) -> L {
        let e = exp_on_negative_values(FixedPoint::<L, SCALED_DIFF_INTEGER_BITS>::from_raw(
            self.scaled_diff(diff),
        ));
        // exp >= 0, so the rescale's rounding needs no sign fix-up.
        let term = e
            .raw()
            .rounding_divide_by_pot_non_negative(ACCUMULATION_INTEGER_BITS);
        L::select(
            diff.mask_if_less_than(L::splat(self.diff_min)),
            L::splat(0),
            term,
        )
    }

    /// The row's log-sum and cut-off from its sum of exps (raw Q12.19, >= 2^19).
    pub(crate) fn row_constants(&self, sum_of_exps: i64) -> LogSoftmaxRow {
        let (raw, integer_bits) = Self::log_input(sum_of_exps);
        self.row_constants_from_log(log_x_for_x_greater_than_or_equal_to_1(raw, integer_bits))
    }

    /// The logarithm's input for a sum of exps: beyond i32 (4096 in real
    /// terms), low bits dropped and counted as integer bits instead; the
    /// logarithm is then still exact to Q5.26. `(raw, integer bits)`.
    #[inline(always)]
    pub(crate) fn log_input(sum_of_exps: i64) -> (i32, i32) {
        let excess = (64 - sum_of_exps.leading_zeros() as i32 - 31).max(0);
        let raw = (sum_of_exps >> excess) as i32;
        (raw, ACCUMULATION_INTEGER_BITS as i32 + excess)
    }

    /// The row's constants once its log-sum (Q5.26) is known.
    #[inline(always)]
    pub(crate) fn row_constants_from_log(&self, log_sum: i32) -> LogSoftmaxRow {
        let cut = if self.reverse_multiplier == 0 {
            i32::MIN
        } else {
            // log_sum - 32 in Q5.26, mapped back to input steps.
            let shifted_log_sum = log_sum.wrapping_add(i32::MIN);
            multiply_by_quantized_multiplier(
                shifted_log_sum,
                self.reverse_multiplier,
                self.reverse_shift,
            )
        };
        LogSoftmaxRow {
            log_sum,
            adjusted_diff_min: (self.diff_min.saturating_sub(1)).max(cut),
        }
    }

    /// Quantized output for input differences `diff` (lanes), before saturation
    /// to the element type (the store's job: the scalar store clamps, NEON
    /// narrows with saturation; the same values).
    #[inline(always)]
    pub(crate) fn output<L: Lane>(&self, diff: L, row: &LogSoftmaxRow) -> L {
        let keep = diff.mask_if_greater_than(L::splat(row.adjusted_diff_min));
        let shift = 31 - SCALED_DIFF_INTEGER_BITS - OUTPUT_INTEGER_BITS;
        let out = self
            .scaled_diff(diff)
            .sub(L::splat(row.log_sum))
            .rounding_divide_by_pot(shift)
            .add(L::splat(self.output_zero_point));
        L::select(keep, out, L::splat(self.output_min))
    }
}
