//! NEON kernels of the XNNPACK arithmetic ([`XnnpackAdd`], [`XnnpackMul`]):
//! 16 elements per block through the binary family's block loop
//! (`neon::drive_operands`), each lane equal to the scalar `element` bit
//! for bit.
//!
//! ADD: the inputs widened to `i32`, `bias + a * a_multiplier + b *
//! b_multiplier` with wrapping multiply-adds (`mla`, as the scalar wrapping
//! sum), an arithmetic right shift (`sshl` by the negated shift,
//! truncating as `>>`), then the family's saturating narrow with the zero
//! point and clamp. MUL: the offset product in `i32` (exact), `scvtf`,
//! `fmul` by the scale, the clamp in `f32`, `fcvtns` (ties to even), the
//! zero point added by the narrow.

use super::neon::{drive_operands, narrow};
use super::operand::Operand;
use super::xnnpack::{XnnpackAdd, XnnpackMul};
use core::arch::aarch64::*;

/// `output = a op b` for XNNPACK's ADD / SUB; slice operands as long as
/// `output` (checked by the caller).
pub(super) fn add(p: &XnnpackAdd, a: Operand<'_>, b: Operand<'_>, output: &mut [i8]) {
    let (a_multiplier, b_multiplier, bias, shift, zero_point, act_min, act_max) = p.parts();
    // SAFETY: neon is a compile-time target feature (cfg on this module).
    let (ma, mb, vbias, neg_shift, zp, min, max) = unsafe {
        (
            vdupq_n_s32(a_multiplier),
            vdupq_n_s32(b_multiplier),
            vdupq_n_s32(bias),
            vdupq_n_s32(-(shift as i32)),
            vdupq_n_s16(zero_point as i16),
            vdupq_n_s8(act_min as i8),
            vdupq_n_s8(act_max as i8),
        )
    };
    let block = |a: int8x16_t, b: int8x16_t| -> int8x16_t {
        // SAFETY: register arithmetic; neon is a compile-time target feature.
        unsafe {
            let widen = |v: int8x16_t| -> [int32x4_t; 4] {
                let (lo, hi) = (vmovl_s8(vget_low_s8(v)), vmovl_high_s8(v));
                [
                    vmovl_s16(vget_low_s16(lo)),
                    vmovl_high_s16(lo),
                    vmovl_s16(vget_low_s16(hi)),
                    vmovl_high_s16(hi),
                ]
            };
            let (wa, wb) = (widen(a), widen(b));
            let q = |j: usize| {
                let acc = vmlaq_s32(vmlaq_s32(vbias, wa[j], ma), wb[j], mb);
                vshlq_s32(acc, neg_shift)
            };
            narrow::<true>([q(0), q(1), q(2), q(3)], zp, min, max)
        }
    };
    drive_operands(a, b, output, block);
}

/// `output = a * b` for XNNPACK's MUL; slice operands as long as `output`
/// (checked by the caller).
pub(super) fn mul(p: &XnnpackMul, a: Operand<'_>, b: Operand<'_>, output: &mut [i8]) {
    let (a_zero_point, b_zero_point, scale, zero_point, lo, hi) = p.parts();
    // SAFETY: neon is a compile-time target feature (cfg on this module).
    let (zpa, zpb, vscale, zp, vlo, vhi, unused) = unsafe {
        (
            vdupq_n_s8(a_zero_point as i8),
            vdupq_n_s8(b_zero_point as i8),
            vdupq_n_f32(scale),
            vdupq_n_s16(zero_point as i16),
            vdupq_n_f32(lo),
            vdupq_n_f32(hi),
            vdupq_n_s8(0),
        )
    };
    let block = |a: int8x16_t, b: int8x16_t| -> int8x16_t {
        // SAFETY: register arithmetic; neon is a compile-time target feature.
        unsafe {
            let p = offset_products(a, b, zpa, zpb);
            let q = |j: usize| {
                let y = vmulq_f32(vcvtq_f32_s32(p[j]), vscale);
                vcvtnq_s32_f32(vminq_f32(vmaxq_f32(y, vlo), vhi))
            };
            // The f32 clamp keeps every value inside the activation range
            // once the zero point is added: no byte clamp.
            narrow::<false>([q(0), q(1), q(2), q(3)], zp, unused, unused)
        }
    };
    drive_operands(a, b, output, block);
}

/// The 16 products `(a - a_zero_point) * (b - b_zero_point)` of a block,
/// in four `i32` vectors in lane order: the offset inputs widened to `i16`
/// (`ssubl`, |.| <= 255), their products exact in `i32` (`smull`, |.| <=
/// 65,025). Both XNNPACK MULs (fp32 here, rndnu in
/// `xnnpack_rndnu_neon`) start from them; inlined into their blocks.
#[inline(always)]
pub(super) fn offset_products(
    a: int8x16_t,
    b: int8x16_t,
    a_zero_point: int8x16_t,
    b_zero_point: int8x16_t,
) -> [int32x4_t; 4] {
    // SAFETY: register arithmetic; neon is a compile-time target feature
    // (cfg on this module).
    unsafe {
        let a_lo = vsubl_s8(vget_low_s8(a), vget_low_s8(a_zero_point));
        let a_hi = vsubl_high_s8(a, a_zero_point);
        let b_lo = vsubl_s8(vget_low_s8(b), vget_low_s8(b_zero_point));
        let b_hi = vsubl_high_s8(b, b_zero_point);
        [
            vmull_s16(vget_low_s16(a_lo), vget_low_s16(b_lo)),
            vmull_high_s16(a_lo, b_lo),
            vmull_s16(vget_low_s16(a_hi), vget_low_s16(b_hi)),
            vmull_high_s16(a_hi, b_hi),
        ]
    }
}
