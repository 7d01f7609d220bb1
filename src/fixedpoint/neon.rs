//! [`Lane`] for NEON `int32x4_t`: four `i32` lanes, bit-exact with the `i32`
//! reference on every input.
//!
//! Instruction choices and why they agree with the scalar specification:
//! * `sqrdmulh` rounds ties toward +inf and saturates `MIN * MIN`, exactly as
//!   gemmlowp's `SaturatingRoundingDoublingHighMul`; `sqdmulh` likewise for the
//!   non-rounding multiply.
//! * `srshl` by a negative amount rounds ties toward +inf; round-half-away-from-zero
//!   needs the sign fix-up first: add -1 (saturating) to negative lanes when the
//!   exponent is positive. For operands known to be non-negative the fix-up is
//!   dropped and the shift can fuse (`srshr`, `srsra`).
//! * `srhadd` rounds ties toward +inf, the scalar half-sum away from zero; the two
//!   differ for negative odd sums, where the floor half-sum (`shadd`) is right.
//! * Saturating left shifts are `sqshl`, identical to gemmlowp's compare-and-select.

use super::Lane;
use core::arch::aarch64::*;

impl Lane for int32x4_t {
    const LANES: usize = 4;

    #[inline(always)]
    fn splat(x: i32) -> Self {
        // SAFETY: neon is a compile-time target feature (cfg on this module).
        unsafe { vdupq_n_s32(x) }
    }
    #[inline(always)]
    fn add(self, b: Self) -> Self {
        // SAFETY: neon is a compile-time target feature (cfg on this module).
        unsafe { vaddq_s32(self, b) }
    }
    #[inline(always)]
    fn sub(self, b: Self) -> Self {
        // SAFETY: neon is a compile-time target feature (cfg on this module).
        unsafe { vsubq_s32(self, b) }
    }
    #[inline(always)]
    fn neg(self) -> Self {
        // SAFETY: neon is a compile-time target feature (cfg on this module).
        unsafe { vnegq_s32(self) }
    }
    #[inline(always)]
    fn and(self, b: Self) -> Self {
        // SAFETY: neon is a compile-time target feature (cfg on this module).
        unsafe { vandq_s32(self, b) }
    }
    #[inline(always)]
    fn or(self, b: Self) -> Self {
        // SAFETY: neon is a compile-time target feature (cfg on this module).
        unsafe { vorrq_s32(self, b) }
    }
    #[inline(always)]
    fn xor(self, b: Self) -> Self {
        // SAFETY: neon is a compile-time target feature (cfg on this module).
        unsafe { veorq_s32(self, b) }
    }
    #[inline(always)]
    fn not(self) -> Self {
        // SAFETY: neon is a compile-time target feature (cfg on this module).
        unsafe { vmvnq_s32(self) }
    }
    #[inline(always)]
    fn shl(self, n: u32) -> Self {
        debug_assert!(n <= 31);
        // SAFETY: neon is a compile-time target feature (cfg on this module).
        unsafe { vshlq_s32(self, vdupq_n_s32(n as i32)) }
    }
    #[inline(always)]
    fn shr(self, n: u32) -> Self {
        debug_assert!(n <= 31);
        // SAFETY: neon is a compile-time target feature (cfg on this module).
        unsafe { vshlq_s32(self, vdupq_n_s32(-(n as i32))) }
    }
    #[inline(always)]
    fn lane_min(self, b: Self) -> Self {
        // SAFETY: neon is a compile-time target feature (cfg on this module).
        unsafe { vminq_s32(self, b) }
    }
    #[inline(always)]
    fn lane_max(self, b: Self) -> Self {
        // SAFETY: neon is a compile-time target feature (cfg on this module).
        unsafe { vmaxq_s32(self, b) }
    }
    #[inline(always)]
    fn mask_if_zero(self) -> Self {
        // SAFETY: neon is a compile-time target feature (cfg on this module).
        unsafe { vreinterpretq_s32_u32(vceqzq_s32(self)) }
    }
    #[inline(always)]
    fn mask_if_non_zero(self) -> Self {
        // SAFETY: neon is a compile-time target feature (cfg on this module).
        unsafe { vreinterpretq_s32_u32(vtstq_s32(self, self)) }
    }
    #[inline(always)]
    fn mask_if_less_than(self, b: Self) -> Self {
        // SAFETY: neon is a compile-time target feature (cfg on this module).
        unsafe { vreinterpretq_s32_u32(vcltq_s32(self, b)) }
    }
    #[inline(always)]
    fn mask_if_greater_than(self, b: Self) -> Self {
        // SAFETY: neon is a compile-time target feature (cfg on this module).
        unsafe { vreinterpretq_s32_u32(vcgtq_s32(self, b)) }
    }
    #[inline(always)]
    fn mask_if_any_bit_set(self, b: Self) -> Self {
        // LLVM rewrites `vtstq_s32` followed by a bit-select into and + cmeq +
        // an inverted select, two extra instructions per barrel-shifter step;
        // the one-instruction asm keeps `cmtst`. Cross-checked against the
        // scalar lane by the NEON tests.
        let mask: int32x4_t;
        // SAFETY: `cmtst` on two vector registers has no memory, stack or flag
        // effects; neon is a compile-time target feature (cfg on this module).
        unsafe {
            core::arch::asm!(
                "cmtst {mask:v}.4s, {a:v}.4s, {b:v}.4s",
                mask = lateout(vreg) mask,
                a = in(vreg) self,
                b = in(vreg) b,
                options(pure, nomem, nostack, preserves_flags),
            );
        }
        mask
    }
    #[inline(always)]
    fn select(mask: Self, a: Self, b: Self) -> Self {
        // SAFETY: neon is a compile-time target feature (cfg on this module).
        unsafe { vbslq_s32(vreinterpretq_u32_s32(mask), a, b) }
    }
    #[inline(always)]
    fn rounding_half_sum(self, b: Self) -> Self {
        // SAFETY: neon is a compile-time target feature (cfg on this module).
        unsafe {
            // floor((a+b)/2) is the away-from-zero answer exactly when the
            // sum is negative, which is when the floor half-sum is.
            let floor_half = vhaddq_s32(self, b);
            let ceil_half = vrhaddq_s32(self, b);
            vbslq_s32(vcltzq_s32(floor_half), floor_half, ceil_half)
        }
    }
    #[inline(always)]
    fn saturating_add(self, b: Self) -> Self {
        // SAFETY: neon is a compile-time target feature (cfg on this module).
        unsafe { vqaddq_s32(self, b) }
    }
    #[inline(always)]
    fn saturating_sub(self, b: Self) -> Self {
        // SAFETY: neon is a compile-time target feature (cfg on this module).
        unsafe { vqsubq_s32(self, b) }
    }
    #[inline(always)]
    fn saturating_rounding_doubling_high_mul(self, b: Self) -> Self {
        // SAFETY: neon is a compile-time target feature (cfg on this module).
        unsafe { vqrdmulhq_s32(self, b) }
    }
    #[inline(always)]
    fn saturating_doubling_high_mul(self, b: Self) -> Self {
        // SAFETY: neon is a compile-time target feature (cfg on this module).
        unsafe { vqdmulhq_s32(self, b) }
    }
    #[inline(always)]
    fn rounding_divide_by_pot(self, exponent: u32) -> Self {
        debug_assert!(exponent <= 31);
        // SAFETY: neon is a compile-time target feature (cfg on this module).
        unsafe {
            let shift = vdupq_n_s32(-(exponent as i32));
            // -1 in lanes that are negative when the exponent is positive: the
            // sign bit of (x & -exponent).
            let fixup = vshrq_n_s32::<31>(vandq_s32(self, shift));
            vrshlq_s32(vqaddq_s32(self, fixup), shift)
        }
    }
    #[inline(always)]
    fn rounding_divide_by_pot_non_negative(self, exponent: u32) -> Self {
        debug_assert!(exponent <= 31);
        // SAFETY: neon is a compile-time target feature (cfg on this module).
        unsafe { vrshlq_s32(self, vdupq_n_s32(-(exponent as i32))) }
    }
    #[inline(always)]
    fn saturating_rounding_multiply_by_pot(self, exponent: i32) -> Self {
        debug_assert!((-31..=31).contains(&exponent));
        if exponent > 0 {
            // SAFETY: neon is a compile-time target feature (cfg on this module).
            unsafe { vqshlq_s32(self, vdupq_n_s32(exponent)) }
        } else {
            self.rounding_divide_by_pot(exponent.unsigned_abs())
        }
    }
}
