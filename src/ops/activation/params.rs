//! [`ActivationParams`]: what `Logistic::new` / `Tanh::new` prepare for
//! [`Method::FixedPoint`](crate::Method::FixedPoint), and
//! [`activation_lanes`], the per-element math every backend runs on it
//! (written once over [`Lane`]).

use crate::checks::{check_quantization, required_output, FixedOutputOp};
use crate::elem::{ElemKind, QuantElem};
use crate::error::{Error, Result};
use crate::fixedpoint::{self, FixedPoint, Lane};
use crate::quant::{calculate_input_radius, frexp, multiply_by_quantized_multiplier, QuantParams};

/// Which activation an [`ActivationParams`] computes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Activation {
    /// `1 / (1 + exp(-x))`.
    Logistic,
    /// `tanh(x)`.
    Tanh,
}

/// Everything the logistic/tanh kernels need, computed once by `new()`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ActivationParams {
    /// Which function.
    pub activation: Activation,
    /// Integer bits of the rescaled input: 4 (Q4.27) for 8-bit types, 5 (Q5.26) for int16.
    pub input_integer_bits: u32,
    /// Input zero point.
    pub input_zero_point: i32,
    /// Inputs with `|q - zero_point| >= radius` saturate without computing.
    pub input_range_radius: i32,
    /// Q0.31 mantissa of `scale * 2^(31 - input_integer_bits)`.
    pub input_multiplier: i32,
    /// Its power-of-two exponent (a left shift when positive).
    pub input_shift: i32,
    /// `31 - output fraction bits`: 23 for scale 1/256, 24 for 1/128, 16 for 1/32768.
    pub output_shift: u32,
    /// Output zero point.
    pub output_zero_point: i32,
    /// Quantized lower limit of the function (clamped to the type).
    pub saturated_low: i32,
    /// Quantized upper limit of the function (clamped to the type).
    pub saturated_high: i32,
}

impl ActivationParams {
    /// Validates and prepares logistic or tanh for element type `T`.
    pub fn new<T: QuantElem>(
        activation: Activation,
        input: QuantParams,
        output: QuantParams,
    ) -> Result<Self> {
        let op = match activation {
            Activation::Logistic => "logistic",
            Activation::Tanh => "tanh",
        };
        // TFLite's output quantization: [0, 1) or [-1, 1) over the type's range.
        let fixed_op = match activation {
            Activation::Logistic => FixedOutputOp::Logistic,
            Activation::Tanh => FixedOutputOp::Tanh,
        };
        let Some((required, tolerance)) = required_output::<T>(fixed_op) else {
            return Err(Error::Unsupported {
                op,
                dtype: T::NAME,
                reason: "no output quantization is defined for this type",
            });
        };
        // The scale is 2^-bits (1/256, 1/128 or 1/32768): bits from its exponent field.
        let output_fraction_bits = (127 - (required.scale.to_bits() >> 23) as i32) as u32;
        debug_assert_eq!(required.scale, 1.0 / (1u32 << output_fraction_bits) as f32);
        // TFLite compares the logistic output scale exactly (tanh it does not check;
        // its kernel assumes these values).
        let input_scale = check_quantization::<T>(
            op,
            input,
            output,
            required.scale as f64,
            required.zero_point,
            tolerance,
        )?;

        let input_integer_bits = if T::KIND == ElemKind::I16 { 5 } else { 4 };
        // TFLite Micro's Prepare: frexp of the real multiplier, mantissa rounded
        // half away from zero (no renormalisation: the mantissa is < 1 - 2^-32
        // for every f32 scale, so it never rounds up to 2^31).
        let real = input_scale * (1u64 << (31 - input_integer_bits)) as f64;
        let (mantissa, input_shift) = frexp(real);
        let input_multiplier = fixedpoint::libm_round(mantissa * (1u64 << 31) as f64) as i64;
        debug_assert!(input_multiplier < 1 << 31);
        let (input_multiplier, input_shift) = if input_shift < -31 {
            // Scales below 2^-58: every rescaled input rounds to 0 anyway, and
            // the divide by 2^-shift would not fit an i32 shift.
            (0, 0)
        } else {
            (input_multiplier as i32, input_shift)
        };

        // The TFLite radius, floor((2^I - 1) 2^(31-I) / 2^shift), rounds down to
        // 1 step at shift 30 and 0 steps from shift 31 on, and then clamps
        // inputs that are not saturated, or even zero (TFLite Micro's int8
        // bug at input scales >= 4). Step 1 (|v| in [2^(I-1), 2^I)) must be
        // computed when it does not round to the limit: logistic(4) is 0.982
        // for 8-bit types, and for int16 neither function saturates below
        // |v| = 11.1. From step 2 on (|v| >= 2^I) everything saturates. Both
        // steps fit the shift without overflow (|x| * 2^30 < 2^31). Elsewhere
        // the radius covers |v| >= (2^I - 1)/2, which saturates logistic and
        // tanh in 8 bits (I = 4) and in 16 bits (I = 5).
        let radius = calculate_input_radius(input_integer_bits, input_shift, 31)?;
        let step_one_needed = activation == Activation::Logistic || T::KIND == ElemKind::I16;
        let needed = match input_shift {
            30 if step_one_needed => 2,
            s if s >= 30 => 1,
            _ => 0,
        };
        let radius = radius.max(needed);

        // Shifts past 31 (input scales >= 16 for 8-bit types) leave only
        // x == 0 inside the radius, whose rescaled value is 0 for any
        // multiplier; cap the shift so the (discarded) other lanes stay
        // well-defined shifts.
        let input_shift = input_shift.min(31);

        let output_shift = 31 - output_fraction_bits;
        let clamp = |x: i64| x.clamp(T::MIN as i64, T::MAX as i64) as i32;
        let one = 1i64 << output_fraction_bits;
        let low = match activation {
            Activation::Logistic => 0,
            Activation::Tanh => -one,
        };
        Ok(ActivationParams {
            activation,
            input_integer_bits,
            input_zero_point: input.zero_point,
            input_range_radius: radius,
            input_multiplier,
            input_shift,
            output_shift,
            output_zero_point: output.zero_point,
            saturated_low: clamp(output.zero_point as i64 + low),
            saturated_high: clamp(output.zero_point as i64 + one),
        })
    }
}

/// Logistic (`TANH == false`) or tanh of already-widened inputs, `L::LANES` at
/// a time: the whole per-element algorithm, shared by every backend. The
/// function is a const parameter so each kernel loop holds one of them.
#[inline(always)]
pub(crate) fn activation_lanes<L: Lane, const I: u32, const I_PLUS_1: u32, const TANH: bool>(
    q: L,
    p: &ActivationParams,
) -> L {
    debug_assert_eq!(TANH, p.activation == Activation::Tanh);
    let x = q.sub(L::splat(p.input_zero_point));
    let saturate_low = x.mask_if_less_than(L::splat(1 - p.input_range_radius));
    let saturate_high = x.mask_if_greater_than(L::splat(p.input_range_radius - 1));
    // Lanes that saturate may wrap here; their result is discarded below.
    let v = FixedPoint::<L, I>::from_raw(multiply_by_quantized_multiplier(
        x,
        p.input_multiplier,
        p.input_shift,
    ));
    let y = if TANH {
        fixedpoint::tanh::<L, I, I_PLUS_1>(v)
    } else {
        fixedpoint::logistic(v)
    };
    // Not clamped: saturating to the element type is the store's job (the
    // scalar store clamps, NEON narrows with saturation; the same values).
    let out = y
        .raw()
        .rounding_divide_by_pot(p.output_shift)
        .add(L::splat(p.output_zero_point));
    L::select(
        saturate_low,
        L::splat(p.saturated_low),
        L::select(saturate_high, L::splat(p.saturated_high), out),
    )
}
