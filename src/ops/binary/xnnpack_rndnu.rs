//! The XNNPACK delegate's int8 MUL as its aarch64 (and 32-bit ARM NEON)
//! build configures it: the `qs8` `vmul` / `vmulc` micro-kernels with
//! fixed-point "rndnu" requantization, bit for bit. (Its x86 and scalar
//! builds use `fp32` requantization instead: [`XnnpackMul`](super::XnnpackMul).
//! The two differ by one step where the product lands near a half.)
//!
//! Prepare: `scale = (a_scale * b_scale) / out_scale` in `f32` (the same
//! value the `fp32` kernel multiplies by), limited to `[2^-16, 2^8)`. Its
//! 24-bit significand (implicit bit included) shifted left by 7 is the Q31
//! multiplier `m` in `[2^30, 2^31 - 2^7]`; with `e` the stored exponent
//! bits, `shift = 126 - e` in `[-8, 15]`, so that
//! `scale = m * 2^-(31 + shift)` exactly. The shift is split into a left
//! pre-shift and a rounding right post-shift of at least 1:
//!
//! ```text
//! post = max(shift, 1)         in [1, 15]
//! pre  = post - shift          in [0, 9]   (left)
//! ```
//!
//! Per element:
//!
//! ```text
//! p = (a - a_zp) * (b - b_zp)                 (i32, |p| <= 65,025)
//! x = p << pre                                (|x| < 2^26: never saturates)
//! h = floor(x * m / 2^31)                     (saturating doubling high multiply)
//! r = floor((h + 2^(post - 1)) / 2^post)      (rounding shift: ties go up)
//! y = clamp(r + out_zp, act_min, act_max)
//! ```
//!
//! The kernel's narrowing (`i32 -> i16` saturating, the zero point added
//! with `i16` saturation, `i16 -> i8` saturating, then the bounds) equals
//! the clamp of the exact sum: a value outside `i16` stays outside `i8` on
//! the same side. The activation's bounds are quantized as XNNPACK does
//! ([`FusedActivation::range_i8_xnnpack`]).
//!
//! # Audit: XNNPACK's aarch64 and x86-64 arithmetic, per op of `--kernels xnnpack`
//!
//! Read from XNNPACK's `src/configs/*.c` and kernel templates (commit
//! `75db3c0`, 2026-08-21: LiteRT 2.3 does not say which commit it pins; the
//! kernel file names compiled into its aarch64 wheel, e.g.
//! `qs8-vmul-minmax-rndnu-neon-ld64-u16.c` and
//! `qs8-qc8w-gemm-4x16c4-minmax-fp32-neondot.c`, match these configs) and
//! checked against outputs: every single-op case and generated net with x86
//! `litert_xnnpack` references, run on LiteRT 2.3's aarch64 build with
//! XNNPACK under `qemu-aarch64 -cpu neoverse-n1`, gives the x86 bytes, but
//! MobileBert 24 layers (its MULs; the small MUL cases hit no tie).
//!
//! | qneon op (int8 unless said) | XNNPACK config | aarch64 kernel, params init | x86-64 kernel, params init | same bytes |
//! |---|---|---|---|---|
//! | FULLY_CONNECTED, BATCH_MATMUL, CONV_2D, TRANSPOSE_CONV (per-tensor weights go the per-channel way, the scale repeated) | `qs8_qc8w` gemm / igemm | `..._fp32_ukernel_*__neondot` / `__neoni8mm` / `__neonv8_mlal`, `xnn_init_qs8_qc8w_conv_minmax_fp32_neonv8_params` | `..._fp32_ukernel_*__avx2` / `avx512*` / `sse41`, `..._fp32_scalar_params` | yes: `f32(acc) * scale` rounded to nearest even (`fcvtns` after `fmul`; `cvtps2dq` under the default rounding mode; the "magic"-bias `fp32` kernels of other builds and `lrintf` give the same bytes, which qneon's scalar oracle relies on), the clamp before or after the narrowing alike |
//! | DEPTHWISE_CONV_2D | `qs8_qc8w` dwconv | `..._fp32_ukernel_{3p16c,9p16c,25p16c}__neonv8_mla8_*`, `..._fp32_neonv8_params` | `..._fp32_ukernel_*__avx2_mul32` / `avx512skx`, `..._fp32_scalar_params` | yes (as above; the wheel also holds `qs8-dwconv-*-rndnu` kernels, but the convolution operator takes the `qs8_qc8w` config for per-tensor int8 too: `depthwise_relu_per_tensor` gives the x86 bytes) |
//! | ADD, SUB | `qs8` vadd / vaddc | `xnn_qs8_vadd(c)_minmax_ukernel__neon_ld64_u32`, `xnn_init_qs8_add_minmax_scalar_params` | `__avx512skx_mul32_ld128_u16` / `__avx2_mul32_ld64_u16` / `sse41`, the same init | yes: NEON sums `(a - a_zp) * a_m + (b - b_zp) * b_m` and shifts with rounding (`srshl`, ties up), x86 adds a bias holding `2^(shift-1)` and the zero-point terms and shifts arithmetically: the same integer ([`XnnpackAdd`](super::XnnpackAdd)) |
//! | **MUL** | `qs8` vmul / vmulc | `xnn_qs8_vmul(c)_minmax_rndnu_ukernel__neon_ld64_u16`, `xnn_init_qs8_mul_minmax_rndnu_neon_params` | `xnn_qs8_vmul(c)_minmax_fp32_ukernel__avx_mul16_ld64_u16` / `sse41` / `sse2`, `xnn_init_qs8_mul_minmax_scalar_params` | **no**: rndnu (this module) against `f32` rounded to even ([`XnnpackMul`](super::XnnpackMul)); `--kernels xnnpack` takes rndnu |
//! | LEAKY_RELU (int8, uint8) | `qs8` / `qu8` vlrelu | `..._vlrelu_ukernel__neon_u32` | `__avx2_u32` / `sse41` / `ssse3` | yes: `(zp - x) << 7` times the negated Q8 slope, rounding doubling high half (`sqrdmulh` / `pmulhrsw`; the one input where they part, `-2^15 * -2^15`, is out of reach), zero point added saturating |
//! | QUANTIZE int8 -> int8, uint8 -> uint8 | `qs8` / `qu8` vcvt | `..._vcvt_ukernel__neon_u32` | `__avx2_u32` / `sse4` / `ssse3` | yes: the same `sqrdmulh` / `pmulhrsw` formula |
//! | QUANTIZE float -> int8 / uint8 | `f32_qs8` / `f32_qu8` vcvt | `__neonv8_u32` (`fcvtns`) | `__avx512skx_u128` / `avx2_u64` / `avx_u32` / `sse41_u32` (`cvtps2dq`) | yes: `x * (1 / scale)` in `f32`, rounded to nearest even either way |
//! | DEQUANTIZE | `qs8_f32` / `qu8_f32` vcvt | `__neon_u32` | `__avx2` / `sse41` | yes: `f32(x - zp) * scale`, one rounding |
//! | LOGISTIC, TANH (int8, uint8) | vunary LUT (`x8_lut`) | 256-entry table built once from `f32` math in portable C, `tbl` lookup | the same table, `vpshufb` / scalar lookup | yes: the lookup is exact, the table the same (checked on `logistic_*`, `tanh_*`) |
//! | MEAN (int8, uint8) | `qs8` / `qu8` rsum, rdsum | `qs8_rsum_ukernel__neondot_u32_acc2` / `__neon_u32_acc2`, `qs8_rdsum_ukernel_7p7x__neon_u32` (the wheel's: `qs8-rdsum-7p7x-minmax-fp32-neon-u32`) | `__avx512vnni` / `avxvnni` / `avx256skx` / ... | yes: the integer sum is exact, then an `f32` scale rounded to nearest even |
//! | MAX_POOL_2D (int8, uint8) | `s8` / `u8` maxpool | `..._maxpool_minmax_ukernel_9p__neon_u16` | `__sse41_u16` / `sse2` | yes: the maximum is exact |
//! | RESIZE_BILINEAR (int8, uint8) | `s8` / `u8` ibilinear | `..._ibilinear_ukernel__neon_u16` | `__sse41_u16` | yes: Q11 weights, integer blend with the same rounding |
//! | data movers (RESHAPE, TRANSPOSE, PAD, GATHER, SPLIT, SQUEEZE, CONCATENATION of equal quantization, MAXIMUM, MINIMUM) | copy / `x8` transpose / pad / min-max | NEON | SSE / AVX | yes: bytes moved or compared |
//!
//! Left to the builtin kernels by the delegate: int8 SOFTMAX and
//! LOG_SOFTMAX, uint8 CONCATENATION of differently quantized inputs,
//! AVERAGE_POOL_2D int8 / int16, HARD_SWISH, RELU, RELU6, RELU_N1_TO_1,
//! PRELU, int16 activations, CAST, BATCH_MATMUL with a non-zero input-2
//! zero point. These run the build's own builtin kernels, so on aarch64
//! those of `--kernels optimized`; two part from x86 on the single-op
//! cases: int8 SOFTMAX (aarch64's table method, `--softmax lut`:
//! `softmax_int8_beta`) and the uint8 CONCATENATION rescale (fused on
//! aarch64: `concat_uint8_rescale_tie`); `--kernels xnnpack` takes the
//! aarch64 ones. Not reproduced under
//! `--kernels xnnpack` (refused by name): uint8 AVERAGE_POOL_2D (XNNPACK's
//! `qu8` average). XNNPACK's `qu8` GEMM and depthwise kernels are `rndnu`
//! on aarch64 too, but qneon's convolutions and FULLY_CONNECTED take int8
//! only, so no uint8 one reaches them.

use super::operand::Operand;
use super::xnnpack::{check, checked, scalar};
use crate::backend::Backend;
use crate::error::{Error, Result};
use crate::ops::requant::FusedActivation;
use crate::quant::QuantParams;

/// Prepared XNNPACK int8 MUL in its ARM arithmetic (`qs8` `vmul`,
/// `rndnu` requantization).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct XnnpackMulRndnu {
    a_zero_point: i32,
    b_zero_point: i32,
    /// Left shift of the product before the multiply, in `[0, 9]`.
    pre_shift: u32,
    /// Q31 multiplier in `[2^30, 2^31 - 2^7]`.
    multiplier: i32,
    /// Rounding right shift after the multiply, in `[1, 15]`.
    post_shift: u32,
    output_zero_point: i32,
    act_min: i32,
    act_max: i32,
}

impl XnnpackMulRndnu {
    /// `a * b` in XNNPACK's ARM arithmetic. Errors: a scale not finite and
    /// `> 0` ([`Error::Scale`]), a zero point outside int8
    /// ([`Error::ZeroPoint`]), the ratio `a_scale * b_scale / output_scale`
    /// outside `[2^-16, 2^8)` ([`Error::Unsupported`], where the delegate
    /// leaves the op to the builtin kernels).
    pub fn new(
        a: QuantParams,
        b: QuantParams,
        output: QuantParams,
        activation: FusedActivation,
    ) -> Result<XnnpackMulRndnu> {
        check(a, b, output)?;
        let scale = a.scale * b.scale / output.scale;
        if !(1.0 / 65536.0..256.0).contains(&scale) {
            return Err(Error::Unsupported {
                op: "xnnpack mul",
                dtype: "int8",
                reason: "XNNPACK takes product / output scale ratios in [2^-16, 2^8) only",
            });
        }
        let bits = scale.to_bits();
        // The range above keeps `scale` normal and positive: the implicit
        // bit is set and the sign bit clear.
        let multiplier = (((bits & 0x007f_ffff) | 0x0080_0000) << 7) as i32;
        let shift = 126 - (bits >> 23) as i32;
        let post_shift = shift.max(1);
        let pre_shift = post_shift - shift;
        let (act_min, act_max) = activation.range_i8_xnnpack(output);
        Ok(XnnpackMulRndnu {
            a_zero_point: a.zero_point,
            b_zero_point: b.zero_point,
            pre_shift: pre_shift as u32,
            multiplier,
            post_shift: post_shift as u32,
            output_zero_point: output.zero_point,
            act_min,
            act_max,
        })
    }

    /// One output element.
    #[inline(always)]
    pub fn element(&self, a: i8, b: i8) -> i8 {
        let product = (a as i32 - self.a_zero_point) * (b as i32 - self.b_zero_point);
        // |product| <= 65,025 and pre_shift <= 9: exact in i32.
        let x = product << self.pre_shift;
        // The high half of the doubled product: floor(x * m / 2^31). It
        // saturates only for i32::MIN * i32::MIN, which a positive
        // multiplier rules out.
        let high = ((x as i64 * self.multiplier as i64) >> 31) as i32;
        let rounded = (high + (1 << (self.post_shift - 1))) >> self.post_shift;
        (rounded + self.output_zero_point).clamp(self.act_min, self.act_max) as i8
    }

    /// The prepared values, for the NEON kernel: `(a_zero_point,
    /// b_zero_point, pre_shift, multiplier, post_shift, output_zero_point,
    /// act_min, act_max)`.
    #[cfg_attr(not(target_arch = "aarch64"), allow(dead_code))]
    #[allow(clippy::type_complexity)]
    pub(super) fn parts(&self) -> (i32, i32, u32, i32, u32, i32, i32, i32) {
        (
            self.a_zero_point,
            self.b_zero_point,
            self.pre_shift,
            self.multiplier,
            self.post_shift,
            self.output_zero_point,
            self.act_min,
            self.act_max,
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
            Backend::Neon => super::xnnpack_rndnu_neon::mul(self, a, b, output),
            _ => scalar(a, b, output, |x, y| self.element(x, y)),
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::binary::XnnpackMul;

    fn q(scale: f32, zero_point: i32) -> QuantParams {
        QuantParams { scale, zero_point }
    }

    /// The rndnu result written from its definition with wide integers:
    /// the Q31 multiplier and total shift found by doubling the f32 scale
    /// (exact in f64) until it lies in `[2^30, 2^31)`, the shift split into
    /// a left pre-shift and a post-shift of at least 1, the high multiply
    /// floored, the post-shift rounded half up, then zero point and
    /// clamp.
    fn rndnu_formula(
        a: i8,
        b: i8,
        (qa, qb, qo): (QuantParams, QuantParams, QuantParams),
        (lo, hi): (i32, i32),
    ) -> i8 {
        let scale = (qa.scale * qb.scale / qo.scale) as f64;
        // scale = m * 2^-(31 + shift) with m in [2^30, 2^31).
        let mut shift = -31i32;
        let mut m = scale;
        while m < (1u64 << 30) as f64 {
            m *= 2.0;
            shift += 1;
        }
        while m >= (1u64 << 31) as f64 {
            m /= 2.0;
            shift -= 1;
        }
        assert_eq!(m.fract(), 0.0, "an f32 significand times 2^7 is whole");
        let m = m as i128;
        let post = shift.max(1);
        let pre = post - shift;
        let p = (a as i128 - qa.zero_point as i128) * (b as i128 - qb.zero_point as i128);
        let x = p * (1i128 << pre);
        let h = (x * m).div_euclid(1i128 << 31);
        let r = (h + (1i128 << (post - 1))).div_euclid(1i128 << post);
        (r + qo.zero_point as i128).clamp(lo as i128, hi as i128) as i8
    }

    /// Every element pair, on scales across the whole accepted range
    /// (both ends, both sides of the pre-shift boundary at a ratio of 1/2,
    /// odd significands), zero points at both ends, each activation:
    /// `element` equals the formula.
    #[test]
    fn xnnpack_mul_rndnu_equals_its_definition_exhaustively() {
        let scales: [(f32, f32, f32); 9] = [
            (1.0 / 256.0, 1.0 / 256.0, 1.0),      // 2^-16, the smallest
            (0.0123, 0.0456, 0.0789),             // shift 5
            (0.5, 1.0, 1.0),                      // shift 1, no pre-shift
            (0.75, 1.0, 1.0),                     // shift 0: pre-shift 1
            (1.0, 1.0, 1.0),                      // shift 0
            (2.0, 50.0, 1.0),                     // 100: pre-shift 8
            (15.99, 15.99, 1.0),                  // just below 2^8: pre 9
            (0.031_731_8, 0.008_137_9, 0.036_64), // MobileBert-like
            (0.1, 0.1, 0.3),
        ];
        let settings = [
            ((0, 0, 0), FusedActivation::None),
            ((-128, 127, -7), FusedActivation::Relu),
            ((127, -128, 127), FusedActivation::None),
            ((13, -50, -128), FusedActivation::Relu6),
        ];
        for (sa, sb, so) in scales {
            for ((za, zb, zo), activation) in settings {
                {
                    let qs = (q(sa, za), q(sb, zb), q(so, zo));
                    let mul = XnnpackMulRndnu::new(qs.0, qs.1, qs.2, activation).unwrap();
                    let range = activation.range_i8_xnnpack(qs.2);
                    for a in i8::MIN..=i8::MAX {
                        for b in i8::MIN..=i8::MAX {
                            assert_eq!(
                                mul.element(a, b),
                                rndnu_formula(a, b, qs, range),
                                "{a} * {b} {qs:?} {activation:?}"
                            );
                        }
                    }
                }
            }
        }
    }

    /// Random quantizations over the accepted range: the formula holds on
    /// random pairs, and the result is within one step of the `fp32`
    /// kernel's (the two only round differently).
    #[test]
    fn xnnpack_mul_rndnu_random_scales_follow_the_definition() {
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let mut checked_pairs = 0usize;
        for _ in 0..3000 {
            let mut scale = || {
                2f32.powi((next() % 12) as i32 - 8) * (1.0 + (next() % 100_000) as f32 / 100_000.0)
            };
            let (sa, sb, so) = (scale(), scale(), scale());
            let mut zp = || (next() % 256) as i32 - 128;
            let qs = (q(sa, zp()), q(sb, zp()), q(so, zp()));
            let none = FusedActivation::None;
            let Ok(mul) = XnnpackMulRndnu::new(qs.0, qs.1, qs.2, none) else {
                // Refused exactly where the ratio leaves XNNPACK's range.
                let ratio = sa * sb / so;
                assert!(!(1.0 / 65536.0..256.0).contains(&ratio), "{qs:?}");
                continue;
            };
            let fp32 = XnnpackMul::new(qs.0, qs.1, qs.2, none).unwrap();
            for _ in 0..64 {
                let (a, b) = (next() as i8, next() as i8);
                let got = mul.element(a, b);
                assert_eq!(
                    got,
                    rndnu_formula(a, b, qs, (-128, 127)),
                    "{a} * {b} {qs:?}"
                );
                let other = fp32.element(a, b);
                assert!((got as i32 - other as i32).abs() <= 1, "{a} * {b} {qs:?}");
                checked_pairs += 1;
            }
        }
        assert!(checked_pairs > 50_000, "{checked_pairs}");
    }

    /// Ties go up, not to even: a product landing on exactly 2.5 steps
    /// gives 3 where the `fp32` kernel gives 2, and -2.5 gives -2.
    #[test]
    fn xnnpack_mul_rndnu_rounds_ties_up() {
        let (qa, qb, qo) = (q(0.5, 0), q(0.5, 0), q(0.5, 0));
        let none = FusedActivation::None;
        let mul = XnnpackMulRndnu::new(qa, qb, qo, none).unwrap();
        let fp32 = XnnpackMul::new(qa, qb, qo, none).unwrap();
        assert_eq!(mul.element(5, 1), 3);
        assert_eq!(fp32.element(5, 1), 2);
        assert_eq!(mul.element(-5, 1), -2);
        assert_eq!(mul.element(7, 1), 4);
        assert_eq!(mul.element(127, 127), 127);
        assert_eq!(mul.element(-128, 127), -128);
    }

    /// Every backend gives the scalar kernel's bytes: random quantizations
    /// across the accepted range, activations, slice, scalar and row
    /// operands, lengths off the 16-element block.
    #[test]
    fn xnnpack_mul_rndnu_backends_equal_scalar() {
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
            let (sa, sb, so) = (scale(-9, 10), scale(-9, 10), scale(-8, 6));
            let mut zp = || (next() % 256) as i32 - 128;
            let (qa, qb, qo) = (q(sa, zp()), q(sb, zp()), q(so, zp()));
            let activation = match round % 3 {
                0 => FusedActivation::None,
                1 => FusedActivation::Relu,
                _ => FusedActivation::Relu6,
            };
            let Ok(mul) = XnnpackMulRndnu::new(qa, qb, qo, activation) else {
                continue;
            };
            let n = 1 + (next() % 70) as usize;
            let x: alloc::vec::Vec<i8> = (0..n).map(|_| next() as i8).collect();
            let y: alloc::vec::Vec<i8> = (0..n).map(|_| next() as i8).collect();
            let row = &y[..n.min(5)];
            let len_for_row = row.len() * (n / row.len());
            let cases: [(Operand<'_>, Operand<'_>, usize); 5] = [
                (Operand::Slice(&x), Operand::Slice(&y), n),
                (Operand::Slice(&x), Operand::Scalar(y[0]), n),
                (Operand::Scalar(x[0]), Operand::Slice(&y), n),
                (
                    Operand::Slice(&x[..len_for_row]),
                    Operand::Row(row),
                    len_for_row,
                ),
                (
                    Operand::Row(row),
                    Operand::Slice(&x[..len_for_row]),
                    len_for_row,
                ),
            ];
            for (a, b, len) in cases {
                let mut want = alloc::vec![0i8; len];
                let mut got = alloc::vec![0i8; len];
                mul.run_operands(Backend::Scalar, a, b, &mut want).unwrap();
                for backend in Backend::available() {
                    got.fill(0);
                    mul.run_operands(backend, a, b, &mut got).unwrap();
                    assert_eq!(got, want, "{backend:?} {qa:?} {qb:?} {qo:?} {activation:?}");
                    compared += 1;
                }
            }
        }
        assert!(compared > 1000, "{compared}");
    }

    #[test]
    fn xnnpack_mul_rndnu_refuses_what_xnnpack_refuses() {
        let none = FusedActivation::None;
        assert!(matches!(
            XnnpackMulRndnu::new(q(1e-3, 0), q(1e-3, 0), q(1.0, 0), none),
            Err(Error::Unsupported { .. })
        ));
        assert!(matches!(
            XnnpackMulRndnu::new(q(16.0, 0), q(16.0, 0), q(1.0, 0), none),
            Err(Error::Unsupported { .. })
        ));
        assert!(XnnpackMulRndnu::new(q(f32::NAN, 0), q(1.0, 0), q(1.0, 0), none).is_err());
        assert!(XnnpackMulRndnu::new(q(1.0, 200), q(1.0, 0), q(1.0, 0), none).is_err());
        let run = XnnpackMulRndnu::new(q(1.0, 0), q(1.0, 0), q(1.0, 0), none).unwrap();
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
