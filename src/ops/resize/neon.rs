//! The NEON bilinear loops ([`Backend::Neon`](crate::Backend::Neon)) of the
//! two integer arithmetics on 8-bit data: per output pixel, channels in
//! blocks of 8 widened to `int16x8_t`, the weighted sums in `int32x4_t`. A
//! partial last block is the last 8 channels (overlapping the block before,
//! written twice with the same bytes), or with fewer than 8 channels goes
//! through stack buffers, so nothing outside the slices is touched.
//!
//! TFLite's Q10 sum `Σ v * wy * wx` is taken as `wy0 * (v00 * wx0 + v01 *
//! wx1) + wy1 * (v10 * wx0 + v11 * wx1)`: the same integer, every term
//! inside `i32` (`|v * wx|` sums at most 128 * 2048, times a row weight of
//! at most 1536). Its two roundings of the Q20 sum are `vrshrq` (add 2^19,
//! shift: single rounding) and, for half away from zero, the same after
//! adding -1 to negative sums. XNNPACK's Q11 steps are its own integers.

use core::arch::aarch64::*;
use core::ops::Range;

use super::params::Tap;
use super::scalar::source_rows;
use super::BilinearParams;
use crate::quant::Rounding;

/// Channels per block.
const LANES: usize = 8;

/// An 8-bit element type: widening loads and narrowing stores of 8 lanes.
trait Byte: Copy + Default {
    /// Loads 8 values widened to `i16`.
    ///
    /// # Safety
    /// `p` must be valid for reading 8 elements.
    unsafe fn load(p: *const Self) -> int16x8_t;
    /// Stores 8 `i16` values (inside the type's range) narrowed.
    ///
    /// # Safety
    /// `p` must be valid for writing 8 elements.
    unsafe fn store(p: *mut Self, v: int16x8_t);
}

impl Byte for i8 {
    #[inline(always)]
    unsafe fn load(p: *const i8) -> int16x8_t {
        // SAFETY: the caller's bound on `p`; neon is a target feature.
        unsafe { vmovl_s8(vld1_s8(p)) }
    }

    #[inline(always)]
    unsafe fn store(p: *mut i8, v: int16x8_t) {
        // SAFETY: the caller's bound on `p`; neon is a target feature.
        unsafe { vst1_s8(p, vqmovn_s16(v)) }
    }
}

impl Byte for u8 {
    #[inline(always)]
    unsafe fn load(p: *const u8) -> int16x8_t {
        // SAFETY: the caller's bound on `p`; neon is a target feature.
        unsafe { vreinterpretq_s16_u16(vmovl_u8(vld1_u8(p))) }
    }

    #[inline(always)]
    unsafe fn store(p: *mut u8, v: int16x8_t) {
        // SAFETY: the caller's bound on `p`; neon is a target feature.
        unsafe { vst1_u8(p, vqmovun_s16(v)) }
    }
}

/// One output pixel's arithmetic on 8 channels of its four source pixels
/// (top left, top right, bottom left, bottom right, widened).
trait Interpolate: Copy {
    fn block(self, tl: int16x8_t, tr: int16x8_t, bl: int16x8_t, br: int16x8_t) -> int16x8_t;
}

/// TFLite's Q10 arithmetic for one pixel: column weights `wx0 = 1024 -
/// fx`, `wx1 = fx` (within `[-512, 1536]`: `i16`), row weights likewise.
#[derive(Clone, Copy)]
struct Q10 {
    wx0: i16,
    wx1: i16,
    wy0: i32,
    wy1: i32,
    /// Half away from zero (TFLite's double-rounding build) rather than
    /// half up.
    away: bool,
}

impl Q10 {
    #[inline(always)]
    fn half(self, v0: int16x4_t, v1: int16x4_t) -> int32x4_t {
        // SAFETY: neon is a compile-time target feature (cfg on this module).
        unsafe { vmlal_n_s16(vmull_n_s16(v0, self.wx0), v1, self.wx1) }
    }

    #[inline(always)]
    fn finish(self, top: int32x4_t, bottom: int32x4_t) -> int32x4_t {
        // SAFETY: neon is a compile-time target feature (cfg on this module).
        unsafe {
            // Q20.
            let mut acc = vmlaq_n_s32(vmulq_n_s32(top, self.wy0), bottom, self.wy1);
            if self.away {
                // -1 on negative sums turns the half-up shift into half
                // away from zero.
                acc = vaddq_s32(acc, vshrq_n_s32::<31>(acc));
            }
            vrshrq_n_s32::<20>(acc)
        }
    }
}

impl Interpolate for Q10 {
    #[inline(always)]
    fn block(self, tl: int16x8_t, tr: int16x8_t, bl: int16x8_t, br: int16x8_t) -> int16x8_t {
        // SAFETY: neon is a compile-time target feature (cfg on this module).
        unsafe {
            let lo = self.finish(
                self.half(vget_low_s16(tl), vget_low_s16(tr)),
                self.half(vget_low_s16(bl), vget_low_s16(br)),
            );
            let hi = self.finish(
                self.half(vget_high_s16(tl), vget_high_s16(tr)),
                self.half(vget_high_s16(bl), vget_high_s16(br)),
            );
            vcombine_s16(vmovn_s32(lo), vmovn_s32(hi))
        }
    }
}

/// XNNPACK's Q11 arithmetic for one pixel.
#[derive(Clone, Copy)]
struct Q11 {
    ax: i16,
    ay: i32,
}

impl Q11 {
    #[inline(always)]
    fn half(self, tl: int16x4_t, td: int16x4_t, bl: int16x4_t, bd: int16x4_t) -> int32x4_t {
        // SAFETY: neon is a compile-time target feature (cfg on this module).
        unsafe {
            let top = vmlal_n_s16(vshll_n_s16::<11>(tl), td, self.ax);
            let bottom = vmlal_n_s16(vshll_n_s16::<11>(bl), bd, self.ax);
            let acc = vmlaq_n_s32(vshlq_n_s32::<11>(top), vsubq_s32(bottom, top), self.ay);
            vrshrq_n_s32::<22>(acc)
        }
    }
}

impl Interpolate for Q11 {
    #[inline(always)]
    fn block(self, tl: int16x8_t, tr: int16x8_t, bl: int16x8_t, br: int16x8_t) -> int16x8_t {
        // SAFETY: neon is a compile-time target feature (cfg on this module).
        unsafe {
            let td = vsubq_s16(tr, tl);
            let bd = vsubq_s16(br, bl);
            let lo = self.half(
                vget_low_s16(tl),
                vget_low_s16(td),
                vget_low_s16(bl),
                vget_low_s16(bd),
            );
            let hi = self.half(
                vget_high_s16(tl),
                vget_high_s16(td),
                vget_high_s16(bl),
                vget_high_s16(bd),
            );
            vcombine_s16(vmovn_s32(lo), vmovn_s32(hi))
        }
    }
}

/// Every pixel of the rows `rows`, `weights` giving each pixel's arithmetic
/// from its row and column taps.
#[inline(always)]
fn resize_rows<T: Byte, I: Interpolate>(
    p: &BilinearParams,
    rows: Range<usize>,
    input: &[T],
    output: &mut [T],
    weights: impl Fn(Tap, Tap) -> I,
) {
    let c = p.shape.channels;
    let row_len = p.shape.output_width * c;
    for (r, out_row) in rows.zip(output.chunks_exact_mut(row_len)) {
        let (top, bottom, ty) = source_rows(p, input, r);
        for (out, tx) in out_row.chunks_exact_mut(c).zip(&p.columns) {
            let (l, h) = (tx.lo as usize * c, tx.hi as usize * c);
            let corners = [
                &top[l..l + c],
                &top[h..h + c],
                &bottom[l..l + c],
                &bottom[h..h + c],
            ];
            pixel(corners, out, weights(ty, *tx));
        }
    }
}

/// One pixel's `c` channels: whole blocks, then the last 8 channels again
/// or, below 8 channels, one block through stack buffers.
#[inline(always)]
fn pixel<T: Byte, I: Interpolate>(corners: [&[T]; 4], out: &mut [T], f: I) {
    let c = out.len();
    let block = |at: usize, out: &mut [T]| {
        debug_assert!(at + LANES <= c);
        // SAFETY: every corner slice and `out` hold `c` elements, and a
        // block reads or writes 8 of them from `at <= c - 8` (both callers
        // below); neon is a compile-time target feature.
        unsafe {
            let [a, b, d, e] = corners.map(|s| T::load(s.as_ptr().add(at)));
            T::store(out.as_mut_ptr().add(at), f.block(a, b, d, e));
        }
    };
    if c >= LANES {
        let mut at = 0;
        while at + LANES <= c {
            block(at, out);
            at += LANES;
        }
        if at < c {
            block(c - LANES, out);
        }
    } else {
        let mut buffers = [[T::default(); LANES]; 4];
        for (buffer, corner) in buffers.iter_mut().zip(corners) {
            buffer[..c].copy_from_slice(corner);
        }
        let mut result = [T::default(); LANES];
        // SAFETY: the stack buffers hold 8 elements each; neon is a
        // compile-time target feature.
        unsafe {
            let [a, b, d, e] = buffers.map(|s| T::load(s.as_ptr()));
            T::store(result.as_mut_ptr(), f.block(a, b, d, e));
        }
        out.copy_from_slice(&result[..c]);
    }
}

/// TFLite's `ResizeBilinearInteger` on int8 (Q10, `rounding` of the Q20
/// sum), rows `rows` into `output`.
#[inline(never)]
pub(crate) fn resize_bilinear_q10_i8(
    p: &BilinearParams,
    rounding: Rounding,
    rows: Range<usize>,
    input: &[i8],
    output: &mut [i8],
) {
    let away = rounding == Rounding::Double;
    resize_rows(p, rows, input, output, |ty, tx| Q10 {
        wx0: (1024 - tx.frac) as i16,
        wx1: tx.frac as i16,
        wy0: 1024 - ty.frac,
        wy1: ty.frac,
        away,
    });
}

/// XNNPACK's `s8-ibilinear` (Q11), rows `rows` into `output`.
#[inline(never)]
pub(crate) fn resize_bilinear_q11_i8(
    p: &BilinearParams,
    rows: Range<usize>,
    input: &[i8],
    output: &mut [i8],
) {
    resize_rows(p, rows, input, output, |ty, tx| Q11 {
        ax: tx.frac as i16,
        ay: ty.frac,
    });
}

/// XNNPACK's `u8-ibilinear` (Q11), rows `rows` into `output`.
#[inline(never)]
pub(crate) fn resize_bilinear_q11_u8(
    p: &BilinearParams,
    rows: Range<usize>,
    input: &[u8],
    output: &mut [u8],
) {
    resize_rows(p, rows, input, output, |ty, tx| Q11 {
        ax: tx.frac as i16,
        ay: ty.frac,
    });
}
