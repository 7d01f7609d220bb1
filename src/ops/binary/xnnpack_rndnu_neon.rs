//! NEON kernel of [`XnnpackMulRndnu`]: 16 elements per block through the
//! binary family's block loop (`neon::drive_operands`), each lane equal to
//! the scalar `element` bit for bit.
//!
//! The offset inputs widened to `i16` (`ssubl`), their products in `i32`
//! (`smull`, exact), the left pre-shift (`sqshl`, which never saturates
//! here: `|p| << 9 < 2^26`), the saturating doubling high multiply by the
//! Q31 multiplier (`sqdmulh`: the floored high half), the rounding right
//! post-shift (`srshl` by its negation: ties up, no overflow), then the
//! family's saturating narrow with the zero point and clamp.

use super::neon::{drive_operands, narrow};
use super::operand::Operand;
use super::xnnpack_neon::offset_products;
use super::xnnpack_rndnu::XnnpackMulRndnu;
use core::arch::aarch64::*;

/// `output = a * b` for XNNPACK's ARM MUL; slice operands as long as
/// `output` (checked by the caller).
pub(super) fn mul(p: &XnnpackMulRndnu, a: Operand<'_>, b: Operand<'_>, output: &mut [i8]) {
    let (a_zero_point, b_zero_point, pre_shift, multiplier, post_shift, zero_point, lo, hi) =
        p.parts();
    // SAFETY: neon is a compile-time target feature (cfg on this module).
    let (zpa, zpb, pre, m, neg_post, zp, min, max) = unsafe {
        (
            vdupq_n_s8(a_zero_point as i8),
            vdupq_n_s8(b_zero_point as i8),
            vdupq_n_s32(pre_shift as i32),
            vdupq_n_s32(multiplier),
            vdupq_n_s32(-(post_shift as i32)),
            vdupq_n_s16(zero_point as i16),
            vdupq_n_s8(lo as i8),
            vdupq_n_s8(hi as i8),
        )
    };
    let block = |a: int8x16_t, b: int8x16_t| -> int8x16_t {
        // SAFETY: register arithmetic; neon is a compile-time target feature.
        unsafe {
            let products = offset_products(a, b, zpa, zpb);
            let q = |j: usize| {
                let x = vqshlq_s32(products[j], pre);
                vrshlq_s32(vqdmulhq_s32(x, m), neg_post)
            };
            narrow::<true>([q(0), q(1), q(2), q(3)], zp, min, max)
        }
    };
    drive_operands(a, b, output, block);
}
