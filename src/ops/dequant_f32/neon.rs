//! The NEON lanes of [`Method::DequantF32`](crate::Method::DequantF32):
//! [`QuantLanes`] for `float32x4_t` (four vectors per 16-element block), on
//! which each op's `f32.rs` instantiates its lane-generic row code.
//!
//! Only the conversions live here: a block of 16 elements is loaded, has the
//! row maximum (or zero point) subtracted while widening to `i32`
//! (`LoadOffset`), and becomes `f32` with `scvtf`; results
//! are rounded half away from zero with `fcvtas` (saturating, NaN to 0, as the
//! scalar [`round_half_away`](crate::ops::dequant_f32::round_half_away)), get
//! the zero point with a saturating add, and narrow with saturation
//! ([`NeonElem::store_block`]).

use super::QuantLanes;
use crate::elem::QuantElem;
use crate::simd::neon::NeonElem;
use core::arch::aarch64::*;

/// Loads 16 elements minus an offset (a value of the type), widened to `i32`.
trait LoadOffset: NeonElem {
    /// # Safety
    /// `p` must be valid for reading 16 elements.
    unsafe fn load_offset_i32(p: *const Self, offset: i32) -> [int32x4_t; 4];
}

impl LoadOffset for i8 {
    #[inline(always)]
    unsafe fn load_offset_i32(p: *const i8, offset: i32) -> [int32x4_t; 4] {
        // q - offset is in [-255, 255]: subtract while widening to i16 (one
        // `ssubl`/`ssubl2` pair instead of four 32-bit subtractions).
        // SAFETY: the caller guarantees 16 readable bytes at p.
        unsafe {
            let m = vdupq_n_s8(offset as i8);
            let v = vld1q_s8(p);
            let lo = vsubl_s8(vget_low_s8(v), vget_low_s8(m));
            let hi = vsubl_high_s8(v, m);
            [
                vmovl_s16(vget_low_s16(lo)),
                vmovl_high_s16(lo),
                vmovl_s16(vget_low_s16(hi)),
                vmovl_high_s16(hi),
            ]
        }
    }
}

impl LoadOffset for u8 {
    #[inline(always)]
    unsafe fn load_offset_i32(p: *const u8, offset: i32) -> [int32x4_t; 4] {
        // SAFETY: forwarded from the caller (the u8 version subtracts while
        // widening, its wrapping u16 difference read as i16 is exact for
        // |q - offset| <= 255).
        unsafe { <u8 as NeonElem>::load_diff_block(p, offset) }
    }
}

impl LoadOffset for i16 {
    #[inline(always)]
    unsafe fn load_offset_i32(p: *const i16, offset: i32) -> [int32x4_t; 4] {
        // SAFETY: forwarded from the caller; |q - offset| <= 65535 fits i32.
        unsafe { <i16 as NeonElem>::load_diff_block(p, offset) }
    }
}

impl<T: QuantElem + LoadOffset> QuantLanes<T, 4> for float32x4_t {
    #[inline(always)]
    unsafe fn load_offset(p: *const T, offset: i32) -> [float32x4_t; 4] {
        // SAFETY: the caller guarantees 16 readable elements at p. The
        // difference (|q - offset| <= 65535) is exact in i32 and in f32.
        unsafe {
            let d = T::load_offset_i32(p, offset);
            [
                vcvtq_f32_s32(d[0]),
                vcvtq_f32_s32(d[1]),
                vcvtq_f32_s32(d[2]),
                vcvtq_f32_s32(d[3]),
            ]
        }
    }
    #[inline(always)]
    unsafe fn store_requantized(p: *mut T, v: [float32x4_t; 4], zero_point: i32) {
        // SAFETY: the caller guarantees 16 writable elements at p; the rest is
        // register arithmetic (NEON is baseline on aarch64).
        unsafe {
            let z = vdupq_n_s32(zero_point);
            let q = [
                vqaddq_s32(vcvtaq_s32_f32(v[0]), z),
                vqaddq_s32(vcvtaq_s32_f32(v[1]), z),
                vqaddq_s32(vcvtaq_s32_f32(v[2]), z),
                vqaddq_s32(vcvtaq_s32_f32(v[3]), z),
            ];
            // Saturating narrows: the scalar reference's clamp to the type.
            T::store_block(p, q);
        }
    }
    #[inline(always)]
    fn row_max(row: &[T]) -> i32 {
        T::slice_max(row)
    }
}
