//! The NEON output stage of the layer ops ([`Gemm`](crate::Gemm),
//! [`NoNorm`](crate::NoNorm), [`Add`](crate::Add)): [`ChannelLane`] on
//! `int32x4_t` (four channels, bit-exact with the `i32` reference), the
//! per-block specialised [`requantize`], and the zero point, clamp and
//! saturating narrows of [`narrow_store`].

use super::{requantize_lanes, ChannelLane, ChannelMultiplier};
use crate::fixedpoint::Lane;
use core::arch::aarch64::*;

impl ChannelLane for int32x4_t {
    #[inline(always)]
    fn shl_lanes(self, n: Self) -> Self {
        // SAFETY: neon is a compile-time target feature (cfg on this module).
        unsafe { vshlq_s32(self, n) }
    }
    #[inline(always)]
    fn rounding_divide_by_pot_lanes(self, neg_exponent: Self) -> Self {
        // The lane-vector form of `Lane::rounding_divide_by_pot` for int32x4_t:
        // -1 (saturating) on negative lanes with a non-zero exponent turns
        // `srshl`'s ties toward +inf into ties away from zero.
        // SAFETY: neon is a compile-time target feature (cfg on this module).
        unsafe {
            let fixup = vshrq_n_s32::<31>(vandq_s32(self, neg_exponent));
            vrshlq_s32(vqaddq_s32(self, fixup), neg_exponent)
        }
    }
    #[inline(always)]
    fn wrapping_mul(self, b: Self) -> Self {
        // SAFETY: neon is a compile-time target feature (cfg on this module).
        unsafe { vmulq_s32(self, b) }
    }
}

/// `requantize_lanes` for one vector of 4 channels, specialised per block:
/// without the left shift when no channel of the block has one (shifting by
/// 0 is the identity), and, when every channel shifts right by at least 1,
/// with the sign fix-up of the rounding divide as one `ssra` (`x + (x >> 31)`)
/// instead of `and` + `sshr` + `sqadd`: the same values, because the
/// fix-up's `and` with a negative shift keeps the sign bit, and the saturation
/// of `sqadd` never acts (`sqrdmulh` by a multiplier below 2^31 cannot give
/// `i32::MIN`, so adding -1 cannot overflow).
/// Shared by the GEMM and NoNorm kernels.
#[inline(always)]
pub(crate) fn requantize<const LEFT: bool, const FAST: bool>(
    acc: int32x4_t,
    m: &ChannelMultiplier<int32x4_t>,
) -> int32x4_t {
    if LEFT && !FAST {
        return requantize_lanes(acc, m);
    }
    let x = if LEFT {
        acc.shl_lanes(m.left_shift)
    } else {
        acc
    };
    let x = x.saturating_rounding_doubling_high_mul(m.multiplier);
    if FAST {
        // SAFETY: neon is a compile-time target feature (cfg on this module).
        unsafe { vrshlq_s32(vsraq_n_s32::<31>(x, x), m.neg_right_shift) }
    } else {
        x.rounding_divide_by_pot_lanes(m.neg_right_shift)
    }
}

/// The output stage of 16 requantized values: add the output zero point and
/// clamp, as `output_stage`, with the clamp to `[-128, 127]` done by the
/// saturating narrows. Saturating `i32 -> i16` first and then adding the zero
/// point (`|zp| <= 128`) with `i16` saturation gives the same int8 as the
/// `i32` saturating add: a value outside `i16` stays outside `i8` on the same
/// side after adding the zero point. `CLAMP`: the activation range is
/// narrower than `[-128, 127]`.
#[inline(always)]
pub(crate) fn narrow_store<const CLAMP: bool>(
    v: [int32x4_t; 4],
    zp: int16x8_t,
    min: int8x16_t,
    max: int8x16_t,
    po: *mut i8,
) {
    // SAFETY: neon is a compile-time target feature (cfg on this module); the
    // caller guarantees 16 writable bytes at `po`.
    unsafe {
        let lo = vqaddq_s16(vqmovn_high_s32(vqmovn_s32(v[0]), v[1]), zp);
        let hi = vqaddq_s16(vqmovn_high_s32(vqmovn_s32(v[2]), v[3]), zp);
        let mut o = vqmovn_high_s16(vqmovn_s16(lo), hi);
        if CLAMP {
            o = vminq_s8(vmaxq_s8(o, min), max);
        }
        vst1q_s8(po, o);
    }
}
