//! int8 element-wise binary ops with rescale: ADD, SUB and MUL, as TFLite's
//! int8 kernels (`add.cc`, `sub.cc`, `mul.cc` with
//! `reference_integer_ops::AddFunc` / `MulElementwise`), bit for bit in
//! either [`Rounding`] mode.
//!
//! ```text
//! ADD, SUB:
//!   twice_max = 2 * max(scale_1, scale_2)                   (f32, exact)
//!   m_1 = scale_1 / twice_max, m_2 = scale_2 / twice_max    (<= 1/2)
//!   m_out = twice_max / (2^20 * scale_out)                  (must be < 1)
//!   s_i = MBQM((x_i - zp_i) << 20, m_i)
//!   out = clamp(MBQM(s_1 +- s_2, m_out) + zp_out, act_min, act_max)
//! MUL:
//!   m = scale_1 * scale_2 / scale_out                       (f32 arithmetic)
//!   out = clamp(MBQM((x_1 - zp_1) * (x_2 - zp_2), m) + zp_out, act_min, act_max)
//! ```
//!
//! `MBQM` is TFLite's `MultiplyByQuantizedMultiplier` of the build:
//! [`Rounding::multiply`], with multipliers quantized by
//! [`Rounding::quantize_multiplier`].
//!
//! An operand is an [`Operand`]: a slice as long as the output, one value
//! repeated (a broadcast scalar), or one row repeated down the output (a
//! row-constant operand); the kernels never expand it in memory.

#[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
mod neon;
mod operand;
pub(crate) mod params;
mod scalar;
mod xnnpack;
#[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
mod xnnpack_neon;
mod xnnpack_rndnu;
#[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
mod xnnpack_rndnu_neon;

pub use self::operand::Operand;
use self::params::{AddFast, AddParams, MulParams, StageMode, ADD_LEFT_SHIFT};
pub use self::xnnpack::{XnnpackAdd, XnnpackMul};
pub use self::xnnpack_rndnu::XnnpackMulRndnu;
use super::requant::FusedActivation;
use crate::backend::{unavailable, Backend};
use crate::checks::{check_scale, check_zero_point};
use crate::error::{Error, Result};
use crate::quant::{QuantParams, Rounding};

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

/// Checks that each slice operand is as long as the output and that each
/// row operand is not empty and divides it (two rows: of one length).
fn check_lengths(op: &'static str, a: Operand<'_>, b: Operand<'_>, output: usize) -> Result<()> {
    for operand in [a, b] {
        match operand {
            Operand::Slice(s) if s.len() != output => {
                return Err(Error::LengthMismatch {
                    op,
                    input: s.len(),
                    output,
                })
            }
            Operand::Row(r) if r.is_empty() || !output.is_multiple_of(r.len()) => {
                return Err(Error::RowLength {
                    op,
                    len: output,
                    row: r.len(),
                })
            }
            _ => {}
        }
    }
    if let (Operand::Row(x), Operand::Row(y)) = (a, b) {
        if x.len() != y.len() {
            return Err(Error::LengthMismatch {
                op,
                input: y.len(),
                output: x.len(),
            });
        }
    }
    Ok(())
}

/// MUL's real multiplier `scale_a * scale_b / scale_out`: as TFLite, the
/// product and quotient of the `f32` scales in `f32`, widened to `f64`,
/// wherever that is within two `f32` roundings of the exact value. Where the
/// `f32` arithmetic overflows (an infinite or NaN multiplier, which TFLite
/// turns into garbage) or underflows into subnormals or zero (losing the
/// value), the exact quotient in `f64` (finite and nonzero for any valid
/// scales).
fn mul_multiplier(a: f32, b: f32, output: f32) -> f64 {
    let tflite = (a * b / output) as f64;
    let exact = a as f64 * b as f64 / output as f64;
    // Two f32 roundings of normal values: relative error below 2^-23.
    if (tflite - exact).abs() <= exact * crate::quant::pow2(-22) {
        tflite
    } else {
        exact
    }
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
    /// TFLite's `Prepare` of int8 ADD and SUB (`subtract`), which share
    /// their multipliers.
    fn new(
        op: &'static str,
        a: QuantParams,
        b: QuantParams,
        output: QuantParams,
        activation: FusedActivation,
        rounding: Rounding,
        subtract: bool,
    ) -> Result<AddSub> {
        check_quantizations(a, b, output)?;
        // As TFLite: the maximum and its doubling (exact in f32, so taken in
        // f64, which also holds it when the f32 doubling would overflow:
        // scales above f32::MAX / 2), the quotients in f64.
        let twice_max = 2.0 * a.scale.max(b.scale) as f64;
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
        // TFLite's f32 product by 2^20 is exact unless it overflows f32
        // (output scales above 2^108); in f64 it is always exact.
        let out_denominator = (1u32 << ADD_LEFT_SHIFT) as f64 * output.scale as f64;
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
            rounding,
            subtract,
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
                scalar::add(p, a, b, output);
                Ok(())
            }
            #[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
            Backend::Neon => {
                match &self.fast {
                    Some(fast) => neon::add(p, fast, a, b, output),
                    None => scalar::add(p, a, b, output),
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
    ($op:ident, $name:literal, $sign:literal, $subtract:literal) => {
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
                AddSub::new($name, a, b, output, activation, rounding, $subtract).map($op)
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
/// chosen [`Rounding`] (the arithmetic is described in `src/ops/binary/mod.rs`).
#[derive(Clone, Copy, Debug)]
pub struct Add(AddSub);

/// Prepared int8 quantized subtract: TFLite's int8 `SUB` (ADD's
/// multipliers, the rescaled inputs subtracted) bit for bit in the chosen
/// [`Rounding`]. TFLite accepts an output multiplier of 1 or more for SUB
/// (a very narrow output range); `new` refuses it as for ADD.
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
    /// point outside `-128..=127` ([`Error::ZeroPoint`]), and a multiplier
    /// `scale_a scale_b / scale_out` so large (at least about 2^14 for the
    /// widest zero points) that a product of inputs overflows TFLite's
    /// `int32` arithmetic ([`Error::Unsupported`]). The multiplier is
    /// TFLite's `f32` product and quotient wherever those are accurate, and
    /// the `f64` value where they overflow or underflow `f32`.
    pub fn new(
        a: QuantParams,
        b: QuantParams,
        output: QuantParams,
        activation: FusedActivation,
        rounding: Rounding,
    ) -> Result<Mul> {
        check_quantizations(a, b, output)?;
        let q = rounding.quantize_multiplier(mul_multiplier(a.scale, b.scale, output.scale))?;
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
                reason: "input 1 scale * input 2 scale / output scale is so large that a \
                         product of inputs overflows TFLite's int32 arithmetic",
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
                scalar::mul(p, a, b, output);
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Scale triples from a small seeded generator: `(scale_1, scale_2,
    /// scale_out)` with inputs up to 2^8 apart.
    fn scale_triples(n: usize, out_range: f64) -> impl Iterator<Item = (f32, f32, f32)> {
        let mut s = 0x2545_f491_4f6c_dd1du64;
        let mut unit = move || {
            s = s
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (s >> 11) as f64 / (1u64 << 53) as f64
        };
        (0..n).map(move |_| {
            let big = 0.01 * (1.0 + unit());
            // A quarter of the smaller scales within a factor 2 of the
            // larger: a halving divide, where half of the values are ties.
            let small = if unit() < 0.25 {
                big * (0.5 + 0.5 * unit())
            } else {
                big * 2f64.powf(-8.0 * unit())
            };
            let out = big * out_range.powf(2.0 * unit() - 1.0);
            (big as f32, small as f32, out as f32)
        })
    }

    /// The vector kernels' specialisations are all reachable from `new`:
    /// each stage mode of the add's other side and output, and of the
    /// multiply, occurs for some quantization in each rounding it belongs to.
    #[test]
    #[cfg_attr(miri, ignore = "searches quantizations: too slow under Miri")]
    fn every_stage_mode_is_chosen_for_some_quantization() {
        let none = FusedActivation::None;
        let mut add_modes = [[false; 4]; 2];
        let mut mul_modes = [false; 4];
        let index = |m: StageMode| m as usize;
        for (i, (big, small, out)) in scale_triples(400, 256.0).enumerate() {
            // Zero points over the int8 range.
            let zp = |k: usize| ((i * k) % 256) as i32 - 128;
            for rounding in [Rounding::Single, Rounding::Double] {
                let (a, b) = (
                    QuantParams::new(big, zp(37)),
                    QuantParams::new(small, zp(101)),
                );
                let o = QuantParams::new(out, zp(59));
                let add = AddSub::new("add", a, b, o, none, rounding, false).unwrap();
                let fast = AddFast::new(&add.params).expect("an exact side");
                add_modes[0][index(fast.other_mode)] = true;
                add_modes[1][index(fast.output_mode)] = true;
                if rounding == Rounding::Single {
                    assert!(![fast.other_mode, fast.output_mode]
                        .iter()
                        .any(|m| matches!(m, StageMode::Round | StageMode::RoundFix)));
                }
                let mo = QuantParams::new(big * small / out * 0.01, -1);
                let mul = Mul::new(a, b, mo, none, rounding).unwrap();
                mul_modes[index(params::mul_stage_mode(&mul.params))] = true;
            }
        }
        // Equal scales: the other side has the exact half too.
        let q = QuantParams::new(0.1, 0);
        let equal = AddSub::new("add", q, q, q, none, Rounding::Double, false).unwrap();
        add_modes[0][index(AddFast::new(&equal.params).unwrap().other_mode)] = true;
        // An output scale just above TFLite's floor: output multiplier in
        // [1/2, 1), no right shift.
        let fine = QuantParams::new(3.0 * 0.1 / (1u32 << 20) as f32, 0);
        let near_floor = AddSub::new("add", q, q, fine, none, Rounding::Single, false).unwrap();
        add_modes[1][index(AddFast::new(&near_floor.params).unwrap().output_mode)] = true;
        assert_eq!(add_modes, [[true; 4]; 2], "add modes seen");
        assert_eq!(mul_modes, [true; 4], "mul modes seen");
    }
}
