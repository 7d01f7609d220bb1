//! The NEON pooling loops ([`Backend::Neon`](crate::Backend::Neon)): per
//! output pixel, channels in blocks of 16 widened to four `int32x4_t`; the
//! last partial block of channels goes through the stack buffers of
//! [`crate::simd::tail`], so nothing outside the slices is touched.
//!
//! The average divides by the window's count with [`Divisor`] (a multiply
//! and shifts, exact for every sum; NEON has no integer division), so the
//! bytes are the scalar kernel's.

use core::arch::aarch64::*;

use super::params::{Divisor, PoolParams, Window};
use super::scalar::pixels;
use crate::elem::QuantElem;
use crate::simd::neon::{Block, NeonElem};
use crate::simd::tail::{read_tail_raw, BLOCK};

/// What one window reduces 16 channels to, and how it finishes them.
trait Reduce: Copy {
    /// The accumulator before the first element.
    fn start(self) -> Block;
    /// `acc` with one window element's 16 channels taken in.
    fn take(self, acc: Block, v: Block) -> Block;
    /// The output values (inside the type's range) of the accumulator.
    fn finish(self, acc: Block) -> Block;
}

/// The rounded average of a window of `count` elements, clamped.
#[derive(Clone, Copy)]
struct Average {
    multiplier: uint32x4_t,
    /// `-shift`: `ushl` by a negative amount shifts right.
    neg_shift: int32x4_t,
    half: uint32x4_t,
    min: int32x4_t,
    max: int32x4_t,
}

impl Average {
    #[inline(always)]
    fn new(p: &PoolParams, count: usize) -> Average {
        let d = Divisor::new(count as u32);
        // SAFETY: neon is a compile-time target feature (cfg on this module).
        unsafe {
            Average {
                multiplier: vdupq_n_u32(d.multiplier),
                neg_shift: vdupq_n_s32(-(d.shift as i32)),
                half: vdupq_n_u32(count as u32 / 2),
                min: vdupq_n_s32(p.act_min),
                max: vdupq_n_s32(p.act_max),
            }
        }
    }
}

impl Reduce for Average {
    #[inline(always)]
    fn start(self) -> Block {
        // SAFETY: neon is a compile-time target feature (cfg on this module).
        unsafe { [vdupq_n_s32(0); 4] }
    }

    #[inline(always)]
    fn take(self, acc: Block, v: Block) -> Block {
        // SAFETY: neon is a compile-time target feature (cfg on this module).
        unsafe {
            [
                vaddq_s32(acc[0], v[0]),
                vaddq_s32(acc[1], v[1]),
                vaddq_s32(acc[2], v[2]),
                vaddq_s32(acc[3], v[3]),
            ]
        }
    }

    /// [`Divisor::rounded_average`] lane by lane, then the clamp.
    #[inline(always)]
    fn finish(self, acc: Block) -> Block {
        acc.map(|sum| {
            // SAFETY: neon is a compile-time target feature (cfg on this module).
            unsafe {
                // |sum| + count / 2 < 2^31 (checked in `new()`), doubled < 2^32.
                let n = vaddq_u32(vreinterpretq_u32_s32(vabsq_s32(sum)), self.half);
                let n2 = vshlq_n_u32::<1>(n);
                let lo = vmull_u32(vget_low_u32(n2), vget_low_u32(self.multiplier));
                let hi = vmull_high_u32(n2, self.multiplier);
                let high = vuzp2q_u32(vreinterpretq_u32_u64(lo), vreinterpretq_u32_u64(hi));
                let q = vreinterpretq_s32_u32(vshlq_u32(high, self.neg_shift));
                let negative = vcltzq_s32(sum);
                let signed = vbslq_s32(negative, vnegq_s32(q), q);
                vmaxq_s32(vminq_s32(signed, self.max), self.min)
            }
        })
    }
}

/// The window's largest element, clamped.
#[derive(Clone, Copy)]
struct Max {
    min: int32x4_t,
    max: int32x4_t,
}

impl Reduce for Max {
    #[inline(always)]
    fn start(self) -> Block {
        // SAFETY: neon is a compile-time target feature (cfg on this module).
        unsafe { [vdupq_n_s32(i32::MIN); 4] }
    }

    #[inline(always)]
    fn take(self, acc: Block, v: Block) -> Block {
        // SAFETY: neon is a compile-time target feature (cfg on this module).
        unsafe {
            [
                vmaxq_s32(acc[0], v[0]),
                vmaxq_s32(acc[1], v[1]),
                vmaxq_s32(acc[2], v[2]),
                vmaxq_s32(acc[3], v[3]),
            ]
        }
    }

    #[inline(always)]
    fn finish(self, acc: Block) -> Block {
        // SAFETY: neon is a compile-time target feature (cfg on this module).
        acc.map(|m| unsafe { vmaxq_s32(vminq_s32(m, self.max), self.min) })
    }
}

/// One output pixel: the window `w` of image `b` reduced by `r` into `out`
/// (its `channels` outputs).
#[inline(always)]
fn pixel<T: QuantElem + NeonElem, R: Reduce>(
    p: &PoolParams,
    r: R,
    input: &[T],
    b: usize,
    w: Window,
    out: &mut [T],
) {
    let s = p.shape;
    let c = s.channels;
    debug_assert_eq!(out.len(), c);
    let whole = c - c % BLOCK;
    // The offset in `input` of channel 0 of window element (y, x).
    let at = |y: usize, x: usize| ((b * s.input_height + y) * s.input_width + x) * c;
    for ch in (0..whole).step_by(BLOCK) {
        let acc = reduce(r, w, |y, x| {
            let offset = at(y, x) + ch;
            debug_assert!(offset + BLOCK <= input.len());
            // SAFETY: `offset + ch + 16 <= offset of the pixel + c` stays
            // inside the input (its length is checked against the shape
            // and the window is clipped to the input).
            unsafe { T::load_block(input.as_ptr().add(offset)) }
        });
        // SAFETY: `ch + 16 <= whole <= out.len()`.
        unsafe { T::store_block(out.as_mut_ptr().add(ch), acc) };
    }
    let rest = c - whole;
    if rest > 0 {
        let acc = reduce(r, w, |y, x| {
            let offset = at(y, x) + whole;
            debug_assert!(offset + rest <= input.len());
            // SAFETY: `q` is a buffer of 16 elements.
            let load = |q: *const T| unsafe { T::load_block(q) };
            // SAFETY: the `rest` channels from `offset` are the last ones of
            // a window element inside the input.
            unsafe {
                read_tail_raw::<BLOCK, T, Block>(
                    input.as_ptr().add(offset),
                    rest,
                    T::default(),
                    load,
                )
            }
        });
        let mut buf = [T::default(); BLOCK];
        // SAFETY: `buf` holds 16 elements.
        unsafe { T::store_block(buf.as_mut_ptr(), acc) };
        out[whole..].copy_from_slice(&buf[..rest]);
    }
}

/// The window `w` reduced by `r`, `load(y, x)` giving an element's 16 channels.
#[inline(always)]
fn reduce<R: Reduce>(r: R, w: Window, load: impl Fn(usize, usize) -> Block) -> Block {
    let mut acc = r.start();
    for y in w.y0..w.y1 {
        for x in w.x0..w.x1 {
            acc = r.take(acc, load(y, x));
        }
    }
    r.finish(acc)
}

/// Every output pixel of the average pool (lengths checked by the caller).
#[inline(always)]
fn average_pool<T: QuantElem + NeonElem>(p: &PoolParams, input: &[T], output: &mut [T]) {
    let c = p.shape.channels;
    for (out, (b, oy, ox)) in output.chunks_exact_mut(c).zip(pixels(p)) {
        let w = p.shape.window(oy, ox);
        pixel(p, Average::new(p, w.count()), input, b, w, out);
    }
}

/// Every output pixel of the max pool (lengths checked by the caller).
#[inline(always)]
fn max_pool<T: QuantElem + NeonElem>(p: &PoolParams, input: &[T], output: &mut [T]) {
    // SAFETY: neon is a compile-time target feature (cfg on this module).
    let r = unsafe {
        Max {
            min: vdupq_n_s32(p.act_min),
            max: vdupq_n_s32(p.act_max),
        }
    };
    let c = p.shape.channels;
    for (out, (b, oy, ox)) in output.chunks_exact_mut(c).zip(pixels(p)) {
        pixel(p, r, input, b, p.shape.window(oy, ox), out);
    }
}

macro_rules! entry_points {
    ($($avg:ident, $max:ident: $t:ty;)*) => {$(
        /// Average pool over this element type (the asm checks name it).
        #[inline(never)]
        pub(crate) fn $avg(p: &PoolParams, input: &[$t], output: &mut [$t]) {
            average_pool(p, input, output)
        }

        /// Max pool over this element type (the asm checks name it).
        #[inline(never)]
        pub(crate) fn $max(p: &PoolParams, input: &[$t], output: &mut [$t]) {
            max_pool(p, input, output)
        }
    )*};
}

entry_points! {
    average_pool_i8, max_pool_i8: i8;
    average_pool_u8, max_pool_u8: u8;
    average_pool_i16, max_pool_i16: i16;
}
