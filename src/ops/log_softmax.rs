//! Quantized log-softmax over the last axis (int8 and uint8).
//!
//! ```text
//! per row:
//!   max = max(q);  d = q - max
//!   sum = sum over d >= diff_min of exp(d * scale) rescaled to Q12.19   (as softmax, beta = 1)
//!   log_sum = ln(sum)                                                   Q5.26
//!   cut = max(diff_min - 1, (log_sum - 32) / scale in input steps)
//!   out = d > cut ? rounding_divide_by_pot(d * scale - log_sum, 22) + zero_point : type minimum
//! ```
//! Output quantization is fixed by TFLite: scale 16/256 (real range `[-16, 0]`),
//! zero point 127 (int8) or 255 (uint8). This is TFLite's
//! `reference_integer_ops::LogSoftmax` (int8; TFLite Micro runs the same code)
//! and `reference_ops::LogSoftmax` (uint8), bit for bit, with their `Prepare`
//! (`PreprocessLogSoftmaxScalingExp`).
//!
//! Where the references are wrong, qneon is right: their Q12.19 `i32` sum wraps
//! once a row holds 4096 or more values equal to its maximum, which corrupts the
//! output by up to 255 steps. qneon sums in `i64` and, for sums that need more
//! than 12 integer bits, takes the logarithm of the top 32 bits with a matching
//! integer-bit count; below 4096 nothing changes.

use super::dequant_f32::{self, LogSoftmaxF32};
use super::softmax::{ACCUMULATION_INTEGER_BITS, SCALED_DIFF_INTEGER_BITS};
use super::{check_quantization, check_rows, unsupported_method, Method, QuantElem};
use crate::arch::{self, Backend};
use crate::error::{Error, Result};
use crate::fixedpoint::{
    exp_on_negative_values, log_x_for_x_greater_than_or_equal_to_1, FixedPoint, Lane,
};
use crate::quant::{
    calculate_input_radius, multiply_by_quantized_multiplier, pow2, preprocess_softmax_scaling,
    quantize_multiplier, QuantParams,
};
use core::marker::PhantomData;

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
    log_sum: i32,
    /// Differences `<=` this give the type minimum.
    adjusted_diff_min: i32,
}

impl LogSoftmaxParams {
    /// Validates and prepares log-softmax for element type `T` (int8 or uint8).
    pub fn new<T: QuantElem>(input: QuantParams, output: QuantParams) -> Result<Self> {
        let expected_zero_point = match T::NAME {
            "int8" => 127,
            "uint8" => 255,
            _ => {
                return Err(Error::Unsupported {
                    op: "log_softmax",
                    dtype: T::NAME,
                    reason: "log-softmax is defined for int8 and uint8 (as in TFLite)",
                })
            }
        };
        // TFLite compares the output scale with 16/256 exactly.
        let input_scale = check_quantization::<T>(
            "log_softmax",
            input,
            output,
            16.0 / 256.0,
            expected_zero_point,
            0.0,
        )?;
        let m = preprocess_softmax_scaling(1.0, input_scale, SCALED_DIFF_INTEGER_BITS)?;
        let (input_multiplier, input_shift) = if m.shift < -31 {
            (0, 0)
        } else {
            (m.multiplier, m.shift)
        };
        let radius = calculate_input_radius(SCALED_DIFF_INTEGER_BITS, input_shift, 31);
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
    fn scaled_diff<L: Lane>(&self, diff: L) -> L {
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
        // Beyond i32 (4096 in real terms), drop low bits and count them as
        // integer bits instead; the logarithm is then still exact to Q5.26.
        let excess = (64 - sum_of_exps.leading_zeros() as i32 - 31).max(0);
        let raw = (sum_of_exps >> excess) as i32;
        let log_sum =
            log_x_for_x_greater_than_or_equal_to_1(raw, ACCUMULATION_INTEGER_BITS as i32 + excess);
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

/// Quantized log-softmax over rows of the last axis, int8 or uint8.
///
/// Output quantization (TFLite's): scale 16/256, zero point 127 (int8) or 255
/// (uint8). [`Method::FixedPoint`] is bit-exact with TFLite's reference kernels
/// and TFLite Micro, and exact where their accumulator overflows.
#[derive(Clone, Copy, Debug)]
pub struct LogSoftmax<T: QuantElem> {
    params: LogSoftmaxParams,
    kernel: LogSoftmaxKernel,
    backend: Backend,
    _type: PhantomData<T>,
}

impl<T: QuantElem> LogSoftmax<T> {
    /// Validates (scale finite and > 0, zero points in range, output
    /// quantization as TFLite requires, int8 or uint8) and prepares the op.
    pub fn new(input: QuantParams, output: QuantParams, method: Method) -> Result<Self> {
        let params = LogSoftmaxParams::new::<T>(input, output)?;
        let kernel = match method {
            Method::FixedPoint => LogSoftmaxKernel::FixedPoint,
            Method::DequantF32 => LogSoftmaxKernel::DequantF32(LogSoftmaxF32::new(input, output)),
            _ => return Err(unsupported_method::<T>("log_softmax", method)),
        };
        Ok(LogSoftmax {
            params,
            kernel,
            backend: Backend::best(),
            _type: PhantomData,
        })
    }

    /// The prepared method's kernel on rows already checked.
    fn run_kernel(
        &self,
        backend: Backend,
        input: &[T],
        output: &mut [T],
        row_len: usize,
    ) -> Result<()> {
        match &self.kernel {
            LogSoftmaxKernel::FixedPoint => {
                arch::log_softmax(backend, &self.params, input, output, row_len)
            }
            LogSoftmaxKernel::DequantF32(k) => {
                dequant_f32::log_softmax(backend, k, input, output, row_len)
            }
        }
    }
}

/// What `LogSoftmax::new` prepared for its method, beyond [`LogSoftmaxParams`].
#[derive(Clone, Copy, Debug)]
enum LogSoftmaxKernel {
    /// [`Method::FixedPoint`]: everything is in the params.
    FixedPoint,
    /// [`Method::DequantF32`]: the `f32` multipliers.
    DequantF32(LogSoftmaxF32),
}

row_op_methods!(LogSoftmax, LogSoftmaxParams, "log_softmax", "Log-softmax");
