//! The XNNPACK delegate's int8 ADD, SUB and MUL (its `qs8` `vadd` and
//! `vmul` micro-kernels as its x86 build configures them), bit for bit.
//!
//! ADD and SUB are one fixed-point sum. Each input's scale relative to the
//! output, `a / out` and `b / out` in `f32` (SUB negates `b`'s), becomes an
//! integer multiplier at a common shift: the shift is `20 - e`, with `e` the
//! `f32` exponent of the larger magnitude, so that the larger multiplier
//! lies in `[2^20, 2^21)`; each multiplier is `lrintf(|scale| * 2^shift)`
//! (the exponent raised by `shift`, so exact before the rounding), its sign
//! restored. Per element:
//!
//! ```text
//! acc = bias + a * a_multiplier + b * b_multiplier     (wrapping i32)
//! bias = 2^(shift - 1) - a_zero_point * a_multiplier - b_zero_point * b_multiplier
//! y   = clamp((acc >> shift) + output_zero_point, min, max)   (arithmetic shift)
//! ```
//!
//! MUL is `fp32`: `f32((a - a_zp) * (b - b_zp)) * scale` with
//! `scale = (a_scale * b_scale) / out_scale` in `f32`, clamped to the output
//! range less the zero point, rounded to nearest with ties to even, the
//! zero point added. This is the MUL of XNNPACK's x86 and scalar builds;
//! its ARM builds configure a fixed-point `rndnu` one instead
//! ([`XnnpackMulRndnu`](super::XnnpackMulRndnu)), which `--kernels xnnpack`
//! follows.
//!
//! The delegate refuses scale ratios outside XNNPACK's limits (ADD / SUB:
//! each `|input / output|` in `[2^-10, 2^8)`; MUL: the product ratio in
//! `[2^-16, 2^8)`); so does `new`. The fused activation's bounds are
//! quantized as XNNPACK does
//! ([`FusedActivation::range_i8_xnnpack`]).

use super::check_lengths;
use super::operand::Operand;
use crate::backend::{unavailable, Backend};
use crate::checks::{check_scale, check_zero_point};
use crate::error::{Error, Result};
use crate::ops::requant::FusedActivation;
use crate::quant::{round_ties_even_f32, QuantParams};

/// The larger multiplier of XNNPACK's ADD lies in `[2^20, 2^21)`.
const ADD_MULTIPLIER_BITS: i32 = 20;

/// Prepared XNNPACK int8 ADD or SUB (its `qs8` `vadd`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct XnnpackAdd {
    a_multiplier: i32,
    b_multiplier: i32,
    bias: i32,
    shift: u32,
    output_zero_point: i32,
    act_min: i32,
    act_max: i32,
}

impl XnnpackAdd {
    /// `a + b` (`subtract`: `a - b`) in XNNPACK's arithmetic. Errors: a
    /// scale not finite and `> 0` ([`Error::Scale`]), a zero point outside
    /// int8 ([`Error::ZeroPoint`]), an input-to-output scale ratio outside
    /// `[2^-10, 2^8)` ([`Error::Unsupported`], where the delegate leaves the
    /// op to the builtin kernels).
    pub fn new(
        a: QuantParams,
        b: QuantParams,
        output: QuantParams,
        activation: FusedActivation,
        subtract: bool,
    ) -> Result<XnnpackAdd> {
        let op = if subtract {
            "xnnpack sub"
        } else {
            "xnnpack add"
        };
        check(a, b, output)?;
        let a_ratio = a.scale / output.scale;
        let b_ratio = if subtract { -b.scale } else { b.scale } / output.scale;
        for r in [a_ratio, b_ratio] {
            if !(1.0 / 1024.0..256.0).contains(&r.abs()) {
                return Err(Error::Unsupported {
                    op,
                    dtype: "int8",
                    reason: "XNNPACK takes input / output scale ratios in [2^-10, 2^8) only",
                });
            }
        }
        let larger = a_ratio.abs().max(b_ratio.abs());
        // The unbiased f32 exponent of a normal value (the range above keeps
        // it normal): the stored exponent bits less 127.
        let exponent = (larger.to_bits() >> 23) as i32 - 127;
        // In [12, 30] for ratios in [2^-10, 2^8).
        let shift = (ADD_MULTIPLIER_BITS - exponent) as u32;
        let multiplier = |ratio: f32| -> i32 {
            // |ratio| * 2^shift exactly (the exponent raised), then rounded.
            let scaled = f32::from_bits(ratio.abs().to_bits() + (shift << 23));
            let m = round_ties_even_f32(scaled) as i32;
            if ratio.is_sign_negative() {
                -m
            } else {
                m
            }
        };
        let (a_multiplier, b_multiplier) = (multiplier(a_ratio), multiplier(b_ratio));
        let bias = (1i32 << (shift - 1))
            .wrapping_sub(a_multiplier.wrapping_mul(a.zero_point))
            .wrapping_sub(b_multiplier.wrapping_mul(b.zero_point));
        let (act_min, act_max) = activation.range_i8_xnnpack(output);
        Ok(XnnpackAdd {
            a_multiplier,
            b_multiplier,
            bias,
            shift,
            output_zero_point: output.zero_point,
            act_min,
            act_max,
        })
    }

    /// One output element.
    #[inline(always)]
    pub fn element(&self, a: i8, b: i8) -> i8 {
        let acc = self
            .bias
            .wrapping_add((a as i32).wrapping_mul(self.a_multiplier))
            .wrapping_add((b as i32).wrapping_mul(self.b_multiplier));
        let y = (acc >> self.shift) + self.output_zero_point;
        y.clamp(self.act_min, self.act_max) as i8
    }

    /// The prepared values, for the NEON kernel: `(a_multiplier,
    /// b_multiplier, bias, shift, output_zero_point, act_min, act_max)`.
    #[cfg_attr(not(target_arch = "aarch64"), allow(dead_code))]
    pub(super) fn parts(&self) -> (i32, i32, i32, u32, i32, i32, i32) {
        (
            self.a_multiplier,
            self.b_multiplier,
            self.bias,
            self.shift,
            self.output_zero_point,
            self.act_min,
            self.act_max,
        )
    }

    /// `output = a op b` over the operands' elements on `backend` (the
    /// same bytes on each).
    pub fn run_operands(
        &self,
        backend: Backend,
        a: Operand<'_>,
        b: Operand<'_>,
        output: &mut [i8],
    ) -> Result<()> {
        checked(backend, "xnnpack add", a, b, output)?;
        match backend {
            #[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
            Backend::Neon => super::xnnpack_neon::add(self, a, b, output),
            _ => scalar(a, b, output, |x, y| self.element(x, y)),
        }
        Ok(())
    }
}

/// Prepared XNNPACK int8 MUL (its `qs8` `vmul`, `fp32` requantization).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct XnnpackMul {
    a_zero_point: i32,
    b_zero_point: i32,
    scale: f32,
    output_zero_point: i32,
    /// The activation range less the output zero point, as `f32`.
    lo: f32,
    hi: f32,
}

impl XnnpackMul {
    /// `a * b` in XNNPACK's arithmetic. Errors as [`XnnpackAdd::new`], the
    /// ratio `a_scale * b_scale / output_scale` limited to `[2^-16, 2^8)`.
    pub fn new(
        a: QuantParams,
        b: QuantParams,
        output: QuantParams,
        activation: FusedActivation,
    ) -> Result<XnnpackMul> {
        check(a, b, output)?;
        let scale = a.scale * b.scale / output.scale;
        if !(1.0 / 65536.0..256.0).contains(&scale) {
            return Err(Error::Unsupported {
                op: "xnnpack mul",
                dtype: "int8",
                reason: "XNNPACK takes product / output scale ratios in [2^-16, 2^8) only",
            });
        }
        let (act_min, act_max) = activation.range_i8_xnnpack(output);
        Ok(XnnpackMul {
            a_zero_point: a.zero_point,
            b_zero_point: b.zero_point,
            scale,
            output_zero_point: output.zero_point,
            lo: (act_min - output.zero_point) as f32,
            hi: (act_max - output.zero_point) as f32,
        })
    }

    /// One output element.
    #[inline(always)]
    pub fn element(&self, a: i8, b: i8) -> i8 {
        let product = (a as i32 - self.a_zero_point) * (b as i32 - self.b_zero_point);
        // Clamping before rounding equals rounding first (integer bounds)
        // and keeps the value small.
        let y = (product as f32 * self.scale).clamp(self.lo, self.hi);
        (round_ties_even_f32(y) as i32 + self.output_zero_point) as i8
    }

    /// The prepared values, for the NEON kernel: `(a_zero_point,
    /// b_zero_point, scale, output_zero_point, lo, hi)`.
    #[cfg_attr(not(target_arch = "aarch64"), allow(dead_code))]
    pub(super) fn parts(&self) -> (i32, i32, f32, i32, f32, f32) {
        (
            self.a_zero_point,
            self.b_zero_point,
            self.scale,
            self.output_zero_point,
            self.lo,
            self.hi,
        )
    }

    /// `output = a * b` over the operands' elements on `backend` (the
    /// same bytes on each).
    pub fn run_operands(
        &self,
        backend: Backend,
        a: Operand<'_>,
        b: Operand<'_>,
        output: &mut [i8],
    ) -> Result<()> {
        checked(backend, "xnnpack mul", a, b, output)?;
        match backend {
            #[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
            Backend::Neon => super::xnnpack_neon::mul(self, a, b, output),
            _ => scalar(a, b, output, |x, y| self.element(x, y)),
        }
        Ok(())
    }
}

/// The quantization checks both ops share.
pub(super) fn check(a: QuantParams, b: QuantParams, output: QuantParams) -> Result<()> {
    check_scale("input 1 scale", a.scale)?;
    check_zero_point::<i8>("input 1 zero point", a.zero_point)?;
    check_scale("input 2 scale", b.scale)?;
    check_zero_point::<i8>("input 2 zero point", b.zero_point)?;
    check_scale("output scale", output.scale)?;
    check_zero_point::<i8>("output zero point", output.zero_point)?;
    Ok(())
}

/// The backend is available and the operands' lengths fit `output`.
pub(super) fn checked(
    backend: Backend,
    op: &'static str,
    a: Operand<'_>,
    b: Operand<'_>,
    output: &[i8],
) -> Result<()> {
    if !backend.is_available() {
        return Err(unavailable(backend));
    }
    check_lengths(op, a, b, output.len())
}

/// The scalar kernel: `f` over every element pair of the operands.
pub(super) fn scalar(a: Operand<'_>, b: Operand<'_>, output: &mut [i8], f: impl Fn(i8, i8) -> i8) {
    let at = |o: Operand<'_>, i: usize| -> i8 {
        match o {
            Operand::Slice(s) => s[i],
            Operand::Scalar(v) => v,
            Operand::Row(r) => r[i % r.len()],
        }
    };
    for (i, out) in output.iter_mut().enumerate() {
        *out = f(at(a, i), at(b, i));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(scale: f32, zero_point: i32) -> QuantParams {
        QuantParams { scale, zero_point }
    }

    /// The multipliers sit at XNNPACK's shift: the larger in `[2^20,
    /// 2^21]`, and each equals the scale ratio times `2^shift`, rounded.
    #[test]
    fn xnnpack_add_multipliers_follow_the_larger_ratio() {
        let add = XnnpackAdd::new(
            q(0.02, 3),
            q(0.005, -7),
            q(0.03, 1),
            FusedActivation::None,
            false,
        )
        .unwrap();
        let larger = add.a_multiplier.max(add.b_multiplier);
        assert!((1 << 20..=1 << 21).contains(&larger), "{larger}");
        let exact = |ratio: f64| (ratio * (1u64 << add.shift) as f64).round() as i32;
        assert_eq!(add.a_multiplier, exact(0.02f32 as f64 / 0.03f32 as f64));
        let sub = XnnpackAdd::new(
            q(0.02, 3),
            q(0.005, -7),
            q(0.03, 1),
            FusedActivation::None,
            true,
        )
        .unwrap();
        assert_eq!(sub.b_multiplier, -add.b_multiplier);
        assert_eq!(sub.a_multiplier, add.a_multiplier);
    }

    /// Every element pair against the real sum, rounded: the fixed-point
    /// result is within one step of it, and equal where it is not near a
    /// half.
    #[test]
    fn xnnpack_add_is_within_a_step_of_the_real_sum() {
        let (qa, qb, qo) = (q(0.031, -5), q(0.017, 20), q(0.05, -3));
        let add = XnnpackAdd::new(qa, qb, qo, FusedActivation::None, false).unwrap();
        for a in i8::MIN..=i8::MAX {
            for b in i8::MIN..=i8::MAX {
                let real = ((a as i32 - qa.zero_point) as f64 * qa.scale as f64
                    + (b as i32 - qb.zero_point) as f64 * qb.scale as f64)
                    / qo.scale as f64;
                let expected = (real.round() + qo.zero_point as f64).clamp(-128.0, 127.0);
                let got = add.element(a, b) as f64;
                assert!(
                    (got - expected).abs() <= 1.0,
                    "{a} + {b}: {got} vs {expected}"
                );
                if (real - real.floor() - 0.5).abs() > 1e-3 {
                    assert_eq!(got, expected, "{a} + {b}");
                }
            }
        }
    }

    /// MUL rounds its f32 product to even: a product landing on exactly
    /// 2.5 steps gives 2, not TFLite's 3.
    #[test]
    fn xnnpack_mul_rounds_ties_to_even() {
        let mul = XnnpackMul::new(q(0.5, 0), q(0.5, 0), q(0.5, 0), FusedActivation::None).unwrap();
        // (5 * 1) * 0.5 = 2.5 -> 2; (7 * 1) * 0.5 = 3.5 -> 4.
        assert_eq!(mul.element(5, 1), 2);
        assert_eq!(mul.element(7, 1), 4);
        assert_eq!(mul.element(-5, 1), -2);
        assert_eq!(mul.element(127, 127), 127);
    }

    /// Every backend gives the scalar kernel's bytes: random quantizations
    /// (ratios across XNNPACK's limits), activations, slice, scalar and row
    /// operands, lengths off the 16-element block.
    #[test]
    fn xnnpack_binary_backends_equal_scalar() {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let mut compared = 0usize;
        for round in 0..400 {
            let mut scale = |lo: i32, span: u64| {
                2f32.powi(lo + (next() % span) as i32) * (1.0 + (next() % 1000) as f32 / 1000.0)
            };
            let (sa, sb, so) = (scale(-9, 6), scale(-9, 6), scale(-8, 5));
            let mut zp = || (next() % 256) as i32 - 128;
            let (qa, qb, qo) = (q(sa, zp()), q(sb, zp()), q(so, zp()));
            let activation = match round % 3 {
                0 => FusedActivation::None,
                1 => FusedActivation::Relu,
                _ => FusedActivation::Relu6,
            };
            let n = 1 + (next() % 70) as usize;
            let x: alloc::vec::Vec<i8> = (0..n).map(|_| next() as i8).collect();
            let y: alloc::vec::Vec<i8> = (0..n).map(|_| next() as i8).collect();
            let row = &y[..n.min(5)];
            let len_for_row = row.len() * (n / row.len());
            let cases: [(Operand<'_>, Operand<'_>, usize); 4] = [
                (Operand::Slice(&x), Operand::Slice(&y), n),
                (Operand::Slice(&x), Operand::Scalar(y[0]), n),
                (Operand::Scalar(x[0]), Operand::Slice(&y), n),
                (
                    Operand::Slice(&x[..len_for_row]),
                    Operand::Row(row),
                    len_for_row,
                ),
            ];
            let add = XnnpackAdd::new(qa, qb, qo, activation, round % 2 == 1);
            let mul = XnnpackMul::new(qa, qb, qo, activation);
            for (a, b, len) in cases {
                let mut want = alloc::vec![0i8; len];
                let mut got = alloc::vec![0i8; len];
                for backend in Backend::available() {
                    if let Ok(op) = &add {
                        op.run_operands(Backend::Scalar, a, b, &mut want).unwrap();
                        op.run_operands(backend, a, b, &mut got).unwrap();
                        assert_eq!(got, want, "add {backend:?} {qa:?} {qb:?} {qo:?}");
                        compared += 1;
                    }
                    if let Ok(op) = &mul {
                        op.run_operands(Backend::Scalar, a, b, &mut want).unwrap();
                        op.run_operands(backend, a, b, &mut got).unwrap();
                        assert_eq!(got, want, "mul {backend:?} {qa:?} {qb:?} {qo:?}");
                        compared += 1;
                    }
                }
            }
        }
        assert!(compared > 1000, "{compared}");
    }

    #[test]
    fn xnnpack_binary_refuses_scale_ratios_xnnpack_refuses() {
        let none = FusedActivation::None;
        assert!(XnnpackAdd::new(q(1.0, 0), q(1.0, 0), q(1e-3, 0), none, false).is_err());
        assert!(XnnpackAdd::new(q(1e-4, 0), q(1.0, 0), q(1.0, 0), none, false).is_err());
        assert!(XnnpackMul::new(q(1e-3, 0), q(1e-3, 0), q(1.0, 0), none).is_err());
        assert!(XnnpackMul::new(q(f32::NAN, 0), q(1.0, 0), q(1.0, 0), none).is_err());
        let run = XnnpackAdd::new(q(1.0, 0), q(1.0, 0), q(1.0, 0), none, false).unwrap();
        let mut out = [0i8; 3];
        assert!(run
            .run_operands(
                Backend::Scalar,
                Operand::Slice(&[1, 2]),
                Operand::Scalar(1),
                &mut out
            )
            .is_err());
    }
}
