//! int8 element-wise binary ops with rescale: ADD, SUB and MUL, as TFLite's
//! int8 kernels (`add.cc`, `sub.cc`, `mul.cc` with
//! `reference_integer_ops::AddFunc` / `MulElementwise`), bit for bit in
//! either [`Rounding`] mode.
//!
//! ```text
//! ADD, SUB:
//!   twice_max = 2 * max(scale_1, scale_2)                   (f32, exact)
//!   m_1 = scale_1 / twice_max, m_2 = +-scale_2 / twice_max  (<= 1/2; SUB negates m_2)
//!   m_out = twice_max / (2^20 * scale_out)                  (must be < 1)
//!   s_i = MBQM((x_i - zp_i) << 20, m_i)
//!   out = clamp(MBQM(s_1 + s_2, m_out) + zp_out, act_min, act_max)
//! MUL:
//!   m = scale_1 * scale_2 / scale_out                       (f32 arithmetic)
//!   out = clamp(MBQM((x_1 - zp_1) * (x_2 - zp_2), m) + zp_out, act_min, act_max)
//! ```
//!
//! `MBQM` is TFLite's `MultiplyByQuantizedMultiplier` of the build:
//! [`Rounding::multiply`], with multipliers quantized by
//! [`Rounding::quantize_multiplier`].
//!
//! An operand is an [`Operand`]: a slice as long as the output, or one
//! value repeated (a broadcast scalar, or a row-constant operand driven by
//! the caller's outer loop); the kernels never expand it in memory.

#[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
mod neon;
pub(crate) mod params;
mod scalar;

use self::params::{AddFast, AddParams, MulParams, StageMode, ADD_LEFT_SHIFT};
use super::requant::FusedActivation;
use crate::backend::{unavailable, Backend};
use crate::checks::{check_scale, check_zero_point};
use crate::error::{Error, Result};
use crate::quant::{QuantParams, Rounding};

/// One operand of a binary op: a run as long as the output, or one value
/// standing for every element (broadcast).
#[derive(Clone, Copy, Debug)]
pub enum Operand<'a> {
    /// One element per output element.
    Slice(&'a [i8]),
    /// The same element for every output element.
    Scalar(i8),
}

/// Checks the three quantizations (int8 zero points, finite positive scales).
fn check_quantizations(a: QuantParams, b: QuantParams, output: QuantParams) -> Result<()> {
    check_scale("input 1 scale", a.scale)?;
    check_zero_point::<i8>("input 1 zero point", a.zero_point)?;
    check_scale("input 2 scale", b.scale)?;
    check_zero_point::<i8>("input 2 zero point", b.zero_point)?;
    check_scale("output scale", output.scale)?;
    check_zero_point::<i8>("output zero point", output.zero_point)?;
    Ok(())
}

/// Checks that each slice operand is as long as the output.
fn check_lengths(op: &'static str, a: Operand<'_>, b: Operand<'_>, output: usize) -> Result<()> {
    for operand in [a, b] {
        if let Operand::Slice(s) = operand {
            if s.len() != output {
                return Err(Error::LengthMismatch {
                    op,
                    input: s.len(),
                    output,
                });
            }
        }
    }
    Ok(())
}

/// The shared prepared state of ADD and SUB.
#[derive(Clone, Copy, Debug)]
struct AddSub {
    params: AddParams,
    /// The vector form (see [`AddFast`]); computed on NEON targets only
    /// (its checks cost 65,536 steps).
    #[cfg_attr(
        not(all(target_arch = "aarch64", target_feature = "neon")),
        allow(dead_code)
    )]
    fast: Option<AddFast>,
    backend: Backend,
}

impl AddSub {
    /// TFLite's `Prepare` of int8 ADD (`negate_b`: SUB, whose input 2
    /// multiplier is negated and which then runs the add kernel).
    fn new(
        op: &'static str,
        a: QuantParams,
        b: QuantParams,
        output: QuantParams,
        activation: FusedActivation,
        rounding: Rounding,
        negate_b: bool,
    ) -> Result<AddSub> {
        check_quantizations(a, b, output)?;
        // As TFLite: the maximum and its doubling in f32 (both exact), the
        // quotients in f64.
        let twice_max = (2.0 * a.scale.max(b.scale)) as f64;
        // `QuantizeMultiplierSmallerThanOneExp`: TFLite aborts unless the
        // real multiplier is below 1 and quantizes with a shift <= 0.
        let smaller_than_one = |real: f64| -> Result<(i32, i32)> {
            let q = rounding.quantize_multiplier(real)?;
            if real >= 1.0 || q.shift > 0 {
                return Err(Error::Unsupported {
                    op,
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
            input2_multiplier: if negate_b {
                -input2_multiplier
            } else {
                input2_multiplier
            },
            input2_shift,
            output_multiplier,
            output_shift,
            output_offset: output.zero_point,
            act_min,
            act_max,
            rounding,
        };
        Ok(AddSub {
            params,
            fast: if cfg!(all(target_arch = "aarch64", target_feature = "neon")) {
                AddFast::new(&params)
            } else {
                None
            },
            backend: Backend::best(),
        })
    }

    fn run_with(
        &self,
        op: &'static str,
        backend: Backend,
        a: Operand<'_>,
        b: Operand<'_>,
        output: &mut [i8],
    ) -> Result<()> {
        check_lengths(op, a, b, output.len())?;
        let p = &self.params;
        if let (Operand::Scalar(x), Operand::Scalar(y)) = (a, b) {
            if backend.is_available() {
                output.fill(p.element(x, y));
                return Ok(());
            }
        }
        match backend {
            Backend::Scalar => {
                scalar::map(|x, y| p.element(x, y), a, b, output);
                Ok(())
            }
            #[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
            Backend::Neon => {
                match &self.fast {
                    Some(fast) => neon::add(p, fast, a, b, output),
                    None => scalar::map(|x, y| p.element(x, y), a, b, output),
                }
                Ok(())
            }
            #[allow(unreachable_patterns)]
            b => Err(unavailable(b)),
        }
    }
}

/// The methods ADD and SUB share.
macro_rules! add_sub_methods {
    ($op:ident, $name:literal, $sign:literal, $negate:literal) => {
        impl $op {
            #[doc = concat!("Validates and prepares `out = a ", $sign, " b` with the activation fused")]
            /// and every multiplier applied in `rounding`.
            ///
            /// Errors: a scale not finite and `> 0` ([`Error::Scale`]), a zero
            /// point outside `-128..=127` ([`Error::ZeroPoint`]), and an output
            /// scale so small that `2 max(scale_1, scale_2) / (2^20 scale_out)`
            /// is not below 1 ([`Error::Unsupported`]; TFLite's `Prepare`
            /// aborts there).
            pub fn new(
                a: QuantParams,
                b: QuantParams,
                output: QuantParams,
                activation: FusedActivation,
                rounding: Rounding,
            ) -> Result<$op> {
                AddSub::new($name, a, b, output, activation, rounding, $negate).map($op)
            }

            /// The prepared parameters.
            pub fn params(&self) -> &AddParams {
                &self.0.params
            }

            /// The backend [`run`](Self::run) uses.
            pub fn backend(&self) -> Backend {
                self.0.backend
            }

            #[doc = concat!("`output = a ", $sign, " b` element-wise, with the best backend. Errors if")]
            /// the three lengths differ.
            pub fn run(&self, a: &[i8], b: &[i8], output: &mut [i8]) -> Result<()> {
                self.run_with(self.0.backend, a, b, output)
            }

            /// [`run`](Self::run) with the given backend (an error if not
            /// available here). Every backend gives the same bytes.
            pub fn run_with(
                &self,
                backend: Backend,
                a: &[i8],
                b: &[i8],
                output: &mut [i8],
            ) -> Result<()> {
                self.0
                    .run_with($name, backend, Operand::Slice(a), Operand::Slice(b), output)
            }

            /// [`run_with`](Self::run_with) where either operand may be one
            /// repeated value. Errors if a slice operand's length differs
            /// from the output's.
            pub fn run_operands(
                &self,
                backend: Backend,
                a: Operand<'_>,
                b: Operand<'_>,
                output: &mut [i8],
            ) -> Result<()> {
                self.0.run_with($name, backend, a, b, output)
            }
        }
    };
}

/// Prepared int8 quantized add: TFLite's int8 `ADD` bit for bit in the
/// chosen [`Rounding`] (see the [module docs](self) for the arithmetic).
#[derive(Clone, Copy, Debug)]
pub struct Add(AddSub);

/// Prepared int8 quantized subtract: TFLite's int8 `SUB`, which is its
/// `ADD` with input 2's multiplier negated, bit for bit in the chosen
/// [`Rounding`].
#[derive(Clone, Copy, Debug)]
pub struct Sub(AddSub);

add_sub_methods!(Add, "add", "+", false);
add_sub_methods!(Sub, "sub", "-", true);

/// Prepared int8 quantized multiply: TFLite's int8 `MUL` bit for bit in
/// the chosen [`Rounding`]:
/// `clamp(MBQM((a - zp_a) (b - zp_b), scale_a scale_b / scale_out) + zp_out)`.
#[derive(Clone, Copy, Debug)]
pub struct Mul {
    params: MulParams,
    #[cfg_attr(
        not(all(target_arch = "aarch64", target_feature = "neon")),
        allow(dead_code)
    )]
    mode: StageMode,
    backend: Backend,
}

impl Mul {
    /// Validates and prepares `out = a * b` with the activation fused and
    /// the multiplier applied in `rounding`.
    ///
    /// Errors: a scale not finite and `> 0` ([`Error::Scale`]), a zero
    /// point outside `-128..=127` ([`Error::ZeroPoint`]), a multiplier
    /// `scale_a scale_b / scale_out` that is not finite in `f32`
    /// ([`Error::Multiplier`]), and one so large (at least about 2^14 for
    /// the widest zero points) that a product of inputs overflows TFLite's
    /// `int32` arithmetic ([`Error::Unsupported`]).
    pub fn new(
        a: QuantParams,
        b: QuantParams,
        output: QuantParams,
        activation: FusedActivation,
        rounding: Rounding,
    ) -> Result<Mul> {
        check_quantizations(a, b, output)?;
        // As TFLite: the product and quotient of the f32 scales in f32,
        // widened to f64 for the quantization.
        let real = (a.scale * b.scale / output.scale) as f64;
        let q = rounding.quantize_multiplier(real)?;
        // The widest offset input of each side, and so the widest product.
        let widest = |zp: i32| (127 - zp).max(zp + 128) as i64;
        let max_product = widest(a.zero_point) * widest(b.zero_point);
        // Both roundings then stay in i32: double rounding shifts the
        // product left by a positive exponent first, and single rounding's
        // 64-bit result is cast back (TFLite asserts it fits).
        let fits = if q.shift > 0 {
            q.shift < 20 && (max_product << q.shift) <= 1 << 30
        } else {
            let right = 31 - q.shift;
            ((max_product * q.multiplier as i64) >> right) < 1 << 30
        };
        if !fits {
            return Err(Error::Unsupported {
                op: "mul",
                dtype: "int8",
                reason: "scale_a * scale_b / scale_out is so large that a product of inputs \
                         overflows TFLite's int32 arithmetic",
            });
        }
        let (act_min, act_max) = activation.range_i8(output);
        let params = MulParams {
            input1_offset: -a.zero_point,
            input2_offset: -b.zero_point,
            output_multiplier: q.multiplier,
            output_shift: q.shift,
            output_offset: output.zero_point,
            act_min,
            act_max,
            rounding,
        };
        Ok(Mul {
            params,
            mode: if cfg!(all(target_arch = "aarch64", target_feature = "neon")) {
                params::mul_stage_mode(&params)
            } else {
                StageMode::High
            },
            backend: Backend::best(),
        })
    }

    /// The prepared parameters.
    pub fn params(&self) -> &MulParams {
        &self.params
    }

    /// The backend [`run`](Self::run) uses.
    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// `output = a * b` element-wise, with the best backend. Errors if the
    /// three lengths differ.
    pub fn run(&self, a: &[i8], b: &[i8], output: &mut [i8]) -> Result<()> {
        self.run_with(self.backend, a, b, output)
    }

    /// [`run`](Self::run) with the given backend (an error if not available
    /// here). Every backend gives the same bytes.
    pub fn run_with(&self, backend: Backend, a: &[i8], b: &[i8], output: &mut [i8]) -> Result<()> {
        self.run_operands(backend, Operand::Slice(a), Operand::Slice(b), output)
    }

    /// [`run_with`](Self::run_with) where either operand may be one
    /// repeated value. Errors if a slice operand's length differs from the
    /// output's.
    pub fn run_operands(
        &self,
        backend: Backend,
        a: Operand<'_>,
        b: Operand<'_>,
        output: &mut [i8],
    ) -> Result<()> {
        check_lengths("mul", a, b, output.len())?;
        let p = &self.params;
        if let (Operand::Scalar(x), Operand::Scalar(y)) = (a, b) {
            if backend.is_available() {
                output.fill(p.element(x, y));
                return Ok(());
            }
        }
        match backend {
            Backend::Scalar => {
                scalar::map(|x, y| p.element(x, y), a, b, output);
                Ok(())
            }
            #[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
            Backend::Neon => {
                neon::mul(p, self.mode, a, b, output);
                Ok(())
            }
            #[allow(unreachable_patterns)]
            b => Err(unavailable(b)),
        }
    }
}
