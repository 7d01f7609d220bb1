//! [`Lane16`] for NEON `int16x8_t`: eight `i16` lanes, bit-exact with the
//! `i16` reference on every input.
//!
//! Why the instructions agree with the scalar rules:
//! * `sqrdmulh.8h` is gemmlowp's 16-bit rounding doubling high multiply
//!   (ties toward +inf, `MIN * MIN` saturated).
//! * `srshl` by `-e` rounds ties toward +inf; adding -1 (saturating) to the
//!   negative lanes first turns that into ties away from zero.
//! * `sqshl` saturates exactly as gemmlowp's compare-and-select left shift.
//! * `srhadd` rounds ties toward +inf and `shadd` floors; the away-from-zero
//!   half sum is the floor one exactly when the sum is negative.

use super::lane16::Lane16;
use core::arch::aarch64::*;

impl Lane16 for int16x8_t {
    #[inline(always)]
    fn splat(x: i16) -> Self {
        // SAFETY: neon is a compile-time target feature (cfg on this module).
        unsafe { vdupq_n_s16(x) }
    }
    #[inline(always)]
    fn add(self, b: Self) -> Self {
        // SAFETY: neon is a compile-time target feature (cfg on this module).
        unsafe { vaddq_s16(self, b) }
    }
    #[inline(always)]
    fn sub(self, b: Self) -> Self {
        // SAFETY: neon is a compile-time target feature (cfg on this module).
        unsafe { vsubq_s16(self, b) }
    }
    #[inline(always)]
    fn neg(self) -> Self {
        // SAFETY: neon is a compile-time target feature (cfg on this module).
        unsafe { vnegq_s16(self) }
    }
    #[inline(always)]
    fn and(self, b: Self) -> Self {
        // SAFETY: neon is a compile-time target feature (cfg on this module).
        unsafe { vandq_s16(self, b) }
    }
    #[inline(always)]
    fn saturating_add(self, b: Self) -> Self {
        // SAFETY: neon is a compile-time target feature (cfg on this module).
        unsafe { vqaddq_s16(self, b) }
    }
    #[inline(always)]
    fn srdhm(self, b: Self) -> Self {
        // SAFETY: neon is a compile-time target feature (cfg on this module).
        unsafe { vqrdmulhq_s16(self, b) }
    }
    #[inline(always)]
    fn rounding_divide_by_pot(self, e: u32) -> Self {
        debug_assert!(e <= 15);
        if e == 0 {
            return self;
        }
        // SAFETY: neon is a compile-time target feature (cfg on this module).
        unsafe {
            // -1 in the negative lanes: ties then round away from zero.
            let fixup = vshrq_n_s16::<15>(self);
            vrshlq_s16(vqaddq_s16(self, fixup), vdupq_n_s16(-(e as i16)))
        }
    }
    #[inline(always)]
    fn saturating_shl(self, e: u32) -> Self {
        debug_assert!((1..=15).contains(&e));
        // SAFETY: neon is a compile-time target feature (cfg on this module).
        unsafe { vqshlq_s16(self, vdupq_n_s16(e as i16)) }
    }
    #[inline(always)]
    fn rounding_half_sum(self, b: Self) -> Self {
        // SAFETY: neon is a compile-time target feature (cfg on this module).
        unsafe {
            let floor_half = vhaddq_s16(self, b);
            let ceil_half = vrhaddq_s16(self, b);
            vbslq_s16(vcltzq_s16(floor_half), floor_half, ceil_half)
        }
    }
    #[inline(always)]
    fn mask_if_zero(self) -> Self {
        // SAFETY: neon is a compile-time target feature (cfg on this module).
        unsafe { vreinterpretq_s16_u16(vceqzq_s16(self)) }
    }
    #[inline(always)]
    fn mask_if_less_than(self, b: Self) -> Self {
        // SAFETY: neon is a compile-time target feature (cfg on this module).
        unsafe { vreinterpretq_s16_u16(vcltq_s16(self, b)) }
    }
    #[inline(always)]
    fn mask_if_greater_than(self, b: Self) -> Self {
        // SAFETY: neon is a compile-time target feature (cfg on this module).
        unsafe { vreinterpretq_s16_u16(vcgtq_s16(self, b)) }
    }
    #[inline(always)]
    fn mask_if_any_bit_set(self, b: Self) -> Self {
        // SAFETY: neon is a compile-time target feature (cfg on this module).
        unsafe { vreinterpretq_s16_u16(vtstq_s16(self, b)) }
    }
    #[inline(always)]
    fn select(mask: Self, a: Self, b: Self) -> Self {
        // SAFETY: neon is a compile-time target feature (cfg on this module).
        unsafe { vbslq_s16(vreinterpretq_u16_s16(mask), a, b) }
    }
}

/// `f` over a slice in place, eight lanes at a time; the last partial
/// vector goes through a zero-padded copy, so every element takes the lane
/// code (the padding lanes are discarded).
// Used by the LSTM, which needs `alloc`.
#[cfg_attr(not(feature = "alloc"), allow(dead_code))]
#[inline(always)]
pub(crate) fn map_in_place(values: &mut [i16], f: impl Fn(int16x8_t) -> int16x8_t) {
    let mut chunks = values.chunks_exact_mut(8);
    for chunk in &mut chunks {
        // SAFETY: `chunk` holds exactly 8 `i16`, one vector load and store.
        unsafe { vst1q_s16(chunk.as_mut_ptr(), f(vld1q_s16(chunk.as_ptr()))) }
    }
    let rest = chunks.into_remainder();
    if !rest.is_empty() {
        let mut padded = [0i16; 8];
        padded[..rest.len()].copy_from_slice(rest);
        // SAFETY: `padded` holds exactly 8 `i16`.
        unsafe { vst1q_s16(padded.as_mut_ptr(), f(vld1q_s16(padded.as_ptr()))) }
        rest.copy_from_slice(&padded[..rest.len()]);
    }
}

#[cfg(test)]
mod tests {
    use super::super::gemmlowp16::{logistic_q3_12, logistic_q3_12_lanes, tanh_q, tanh_q_lanes};
    use super::*;
    use alloc::vec::Vec;

    /// Every int16 value, in order.
    fn all_inputs() -> Vec<i16> {
        (i16::MIN..=i16::MAX).collect()
    }

    #[test]
    #[cfg_attr(miri, ignore = "sweeps all 65,536 inputs eight times")]
    fn logistic_and_tanh_lanes_equal_scalar_on_every_input() {
        let inputs = all_inputs();
        let mut got = inputs.clone();
        map_in_place(&mut got, logistic_q3_12_lanes);
        for (&a, &g) in inputs.iter().zip(&got) {
            assert_eq!(g, logistic_q3_12(a), "logistic({a})");
        }
        for bits in 0..=6u32 {
            let mut got = inputs.clone();
            map_in_place(&mut got, |v| tanh_q_lanes(v, bits));
            for (&a, &g) in inputs.iter().zip(&got) {
                assert_eq!(g, tanh_q(a, bits), "tanh({a}) at {bits} integer bits");
            }
        }
    }

    #[test]
    fn map_in_place_covers_partial_vectors() {
        for len in 0..20usize {
            let inputs: Vec<i16> = (0..len as i16).map(|i| i * 997 - 9000).collect();
            let mut got = inputs.clone();
            map_in_place(&mut got, logistic_q3_12_lanes);
            let want: Vec<i16> = inputs.iter().map(|&a| logistic_q3_12(a)).collect();
            assert_eq!(got, want, "length {len}");
        }
    }
}
