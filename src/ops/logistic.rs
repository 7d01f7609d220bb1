//! Quantized logistic (sigmoid) and tanh.
//!
//! ```text
//! x      = q - input_zero_point
//! x <= -radius        -> the op's lower limit, quantized (logistic 0, tanh -1)
//! x >=  radius        -> the op's upper limit, quantized (clamped)
//! else v = x * input_multiplier * 2^input_shift     in Q4.27 (Q5.26 for int16)
//!      y = logistic(v) or tanh(v)                   in Q0.31 (gemmlowp polynomial)
//!      q = rounding_divide_by_pot(y, 31 - output_fraction_bits) + output_zero_point, clamped
//! ```
//! For int8 this is TFLite Micro's `reference_integer_ops::Logistic` / `Tanh`
//! (and its `Prepare`: multiplier from `frexp(scale * 2^27)`, radius from
//! `CalculateInputRadius`), bit for bit. uint8 uses the same arithmetic with
//! TFLite's uint8 output quantization.
//!
//! Where TFLite Micro is wrong, qneon is not: for input scales >= 4 TFLite
//! Micro's radius rounds down to one step (logistic) or zero steps (both ops; at
//! scale >= 8 `logistic(0)` comes out -128). qneon widens the radius just enough
//! that every input it clamps is saturated in exact arithmetic, which matches
//! TFLite's correctly rounded reference there.
//!
//! For int16 there is no integer-only reference to match (TFLite interpolates a
//! sigmoid table; `Method::Lut` reproduces it, see `lut16`). qneon's
//! FixedPoint int16 path rescales to Q5.26 instead of Q4.27: the
//! TFLite-style radius then covers `|v| >= 15.5`, beyond which logistic and tanh
//! round to the saturated int16 value, so clamping there loses nothing.

use super::dequant_f32::{self, ActivationF32};
use super::lut::{self, Table256};
use super::lut16::{self, Activation16};
use super::{check_lengths, check_quantization, unsupported_method, Method, QuantElem};
use crate::arch::{self, Backend};
use crate::error::Result;
use crate::fixedpoint::{self, FixedPoint, Lane};
use crate::quant::{calculate_input_radius, frexp, multiply_by_quantized_multiplier, QuantParams};
use core::marker::PhantomData;

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
        let (expected_scale, expected_zero_point, output_fraction_bits) =
            match (activation, T::NAME) {
                (Activation::Logistic, "int8") => (1.0 / 256.0, -128, 8),
                (Activation::Logistic, "uint8") => (1.0 / 256.0, 0, 8),
                (Activation::Logistic, _) => (1.0 / 32768.0, 0, 15),
                (Activation::Tanh, "int8") => (1.0 / 128.0, 0, 7),
                (Activation::Tanh, "uint8") => (1.0 / 128.0, 128, 7),
                (Activation::Tanh, _) => (1.0 / 32768.0, 0, 15),
            };
        // TFLite compares the logistic output scale exactly (tanh it does not check;
        // its kernel assumes these values).
        let input_scale =
            check_quantization::<T>(op, input, output, expected_scale, expected_zero_point, 0.0)?;

        let input_integer_bits = if T::NAME == "int16" { 5 } else { 4 };
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
        let radius = calculate_input_radius(input_integer_bits, input_shift, 31);
        let step_one_needed = activation == Activation::Logistic || T::NAME == "int16";
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

/// What `Logistic::new` / `Tanh::new` prepared for their method, beyond
/// [`ActivationParams`].
// The tables live inline (prepared once, no allocation, `Copy`); the size
// difference to the table-less variants is intended.
#[allow(clippy::large_enum_variant)]
#[cfg_attr(not(feature = "std"), allow(dead_code))]
#[derive(Clone, Copy, Debug)]
enum ActivationKernel {
    /// [`Method::FixedPoint`]: everything is in the params.
    FixedPoint,
    /// 8-bit [`Method::Lut`] or [`Method::LutFixedPoint`]: one byte lookup.
    Table256(Table256),
    /// int16 [`Method::Lut`]: TFLite's int16 kernel for the input scale.
    Lut16(Activation16),
    /// [`Method::DequantF32`]: the `f32` scales.
    DequantF32(ActivationF32),
}

/// int16 [`Method::Lut`]: TFLite's `Prepare` checks (input zero point 0) and
/// its choice of kernel; needs `std`.
#[allow(unused_variables)]
fn lut16_kernel(
    op: &'static str,
    activation: Activation,
    input: QuantParams,
) -> Result<ActivationKernel> {
    #[cfg(feature = "std")]
    {
        lut16::check_input_zero_point(input.zero_point)?;
        Ok(ActivationKernel::Lut16(Activation16::prepare(
            activation,
            input.scale,
        )))
    }
    #[cfg(not(feature = "std"))]
    {
        Err(crate::error::Error::Unsupported {
            op,
            dtype: "int16",
            reason: "Method::Lut for int16 needs the `std` feature (f64::exp, f32::ln while \
                     preparing); use Method::FixedPoint",
        })
    }
}

macro_rules! activation_op {
    ($name:ident, $activation:expr, $opname:literal, $doc:literal) => {
        #[doc = $doc]
        #[derive(Clone, Copy, Debug)]
        pub struct $name<T: QuantElem> {
            params: ActivationParams,
            kernel: ActivationKernel,
            backend: Backend,
            _type: PhantomData<T>,
        }

        impl<T: QuantElem> $name<T> {
            /// Validates the quantization (input scale finite and > 0, zero points
            /// in range, output quantization as TFLite requires) and prepares the op.
            pub fn new(input: QuantParams, output: QuantParams, method: Method) -> Result<Self> {
                let params = ActivationParams::new::<T>($activation, input, output)?;
                let kernel = match method {
                    Method::FixedPoint => ActivationKernel::FixedPoint,
                    Method::Lut if T::NAME == "int16" => lut16_kernel($opname, $activation, input)?,
                    Method::DequantF32 => {
                        ActivationKernel::DequantF32(ActivationF32::new($activation, input, output))
                    }
                    _ => match Table256::for_method::<T>(method, &params, input, output) {
                        Some(table) => ActivationKernel::Table256(table),
                        None => return Err(unsupported_method::<T>($opname, method)),
                    },
                };
                Ok($name {
                    params,
                    kernel,
                    backend: Backend::best(),
                    _type: PhantomData,
                })
            }

            /// The prepared parameters.
            pub fn params(&self) -> &ActivationParams {
                &self.params
            }

            /// The backend [`run`](Self::run) uses.
            pub fn backend(&self) -> Backend {
                self.backend
            }

            /// Applies the function element-wise with the best backend.
            /// Errors if the lengths differ.
            pub fn run(&self, input: &[T], output: &mut [T]) -> Result<()> {
                self.run_with(self.backend, input, output)
            }

            /// Applies the function with the given backend (an error if it is not
            /// available here). Every backend gives the same bytes.
            pub fn run_with(&self, backend: Backend, input: &[T], output: &mut [T]) -> Result<()> {
                check_lengths($opname, input.len(), output.len())?;
                match &self.kernel {
                    ActivationKernel::Table256(table) => lut::lookup(backend, table, input, output),
                    ActivationKernel::Lut16(kernel) => match lut16::as_i16(input, output) {
                        Some((input, output)) => kernel.run(backend, $activation, input, output),
                        None => Err(lut16::not_int16()),
                    },
                    ActivationKernel::FixedPoint => {
                        arch::activation(backend, &self.params, input, output)
                    }
                    ActivationKernel::DequantF32(k) => {
                        dequant_f32::activation(backend, k, input, output)
                    }
                }
            }
        }
    };
}

activation_op!(
    Logistic,
    Activation::Logistic,
    "logistic",
    "Quantized logistic (sigmoid), `1 / (1 + exp(-x))`.\n\n\
     Output quantization (TFLite's): int8 scale 1/256 zero point -128; uint8 1/256 and 0; \
     int16 1/32768 and 0. [`Method::FixedPoint`] is bit-exact with TFLite Micro's int8 kernel \
     (and correct where TFLite Micro saturates too early, input scales >= 4). [`Method::Lut`] \
     is bit-exact with the TFLite interpreter's int8, uint8 and int16 kernels (int16: input \
     zero point 0, as TFLite requires)."
);
activation_op!(
    Tanh,
    Activation::Tanh,
    "tanh",
    "Quantized hyperbolic tangent.\n\n\
     Output quantization (TFLite's): int8 scale 1/128 zero point 0; uint8 1/128 and 128; \
     int16 1/32768 and 0. [`Method::FixedPoint`] is bit-exact with TFLite Micro's int8 kernel. \
     [`Method::Lut`] is bit-exact with the TFLite interpreter's int8, uint8 and int16 kernels \
     (int16: input zero point 0, as TFLite requires)."
);
