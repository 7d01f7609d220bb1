//! The NEON pooling loops ([`Backend::Neon`](crate::Backend::Neon)): per
//! output pixel, channels in blocks of 16 widened to four `int32x4_t`; a
//! partial last block is the last 16 channels (overlapping the one before,
//! written twice with the same bytes), or with fewer than 16 channels goes
//! through the stack buffers of [`crate::simd::tail`], so nothing outside
//! the slices is touched.
//!
//! The average divides by the window's count with [`Divisor`] (a multiply
//! and shifts, exact for every sum; NEON has no integer division), so the
//! bytes are the scalar kernel's.

use core::arch::aarch64::*;
use core::ops::Range;

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
    // A block of the 16 channels from `ch` (`ch + 16 <= c`).
    let block = |ch: usize, out: &mut [T]| {
        let acc = reduce(r, w, |y, x| {
            let offset = at(y, x) + ch;
            debug_assert!(offset + BLOCK <= input.len());
            // SAFETY: `ch + 16 <= c`, so the 16 channels lie inside one
            // window element, inside the input (its length is checked
            // against the shape and the window is clipped to the input).
            unsafe { T::load_block(input.as_ptr().add(offset)) }
        });
        debug_assert!(ch + BLOCK <= out.len());
        // SAFETY: `ch + 16 <= c == out.len()`.
        unsafe { T::store_block(out.as_mut_ptr().add(ch), acc) };
    };
    for ch in (0..whole).step_by(BLOCK) {
        block(ch, out);
    }
    if whole < c && c >= BLOCK {
        // The last 16 channels again, overlapping the previous block: the
        // overlap is written twice with the same values (out of place), and
        // no tail goes through the stack.
        block(c - BLOCK, out);
        return;
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
fn average_pool<T: QuantElem + NeonElem>(
    p: &PoolParams,
    rows: Range<usize>,
    input: &[T],
    output: &mut [T],
) {
    let c = p.shape.channels;
    for (out, (b, oy, ox)) in output.chunks_exact_mut(c).zip(pixels(p, rows)) {
        let w = p.shape.window(oy, ox);
        pixel(p, Average::new(p, w.count()), input, b, w, out);
    }
}

/// Every output pixel of the max pool (lengths checked by the caller).
#[inline(always)]
fn max_pool<T: QuantElem + NeonElem>(
    p: &PoolParams,
    rows: Range<usize>,
    input: &[T],
    output: &mut [T],
) {
    // SAFETY: neon is a compile-time target feature (cfg on this module).
    let r = unsafe {
        Max {
            min: vdupq_n_s32(p.act_min),
            max: vdupq_n_s32(p.act_max),
        }
    };
    let c = p.shape.channels;
    for (out, (b, oy, ox)) in output.chunks_exact_mut(c).zip(pixels(p, rows)) {
        pixel(p, r, input, b, p.shape.window(oy, ox), out);
    }
}

/// An 8-bit type in its own 16 lanes: a maximum needs no widening, so the
/// 8-bit max pool compares whole `int8x16_t` / `uint8x16_t` vectors.
trait Lanes16: QuantElem + NeonElem {
    type V: Copy;
    /// # Safety
    /// `p` must be valid for reading 16 elements.
    unsafe fn load16(p: *const Self) -> Self::V;
    /// # Safety
    /// `p` must be valid for writing 16 elements.
    unsafe fn store16(p: *mut Self, v: Self::V);
    fn max16(a: Self::V, b: Self::V) -> Self::V;
    fn min16(a: Self::V, b: Self::V) -> Self::V;
    /// `x` (inside the type's range) in every lane.
    fn splat16(x: i32) -> Self::V;
    /// Window sums of 16 channels in 16-bit lanes (exact for windows of at
    /// most [`NARROW_SUM_AREA`] elements).
    type Sum: Copy;
    fn sum_zero() -> Self::Sum;
    /// `sum + v`, widening `v` (`saddw` / `uaddw`).
    fn sum_add(sum: Self::Sum, v: Self::V) -> Self::Sum;
    /// The sums widened to `i32`.
    fn sum_widen(sum: Self::Sum) -> Block;
}

/// The largest window whose 8-bit sums fit 16-bit lanes: `128 * 255` fits
/// `i16`, `255 * 255` fits `u16`.
const NARROW_SUM_AREA: usize = 255;

macro_rules! lanes16 {
    ($t:ty, $v:ty, $ld:ident, $st:ident, $max:ident, $min:ident, $dup:ident,
     $sum:ty, $zero:expr, $addw:ident, $addw_high:ident, $low:ident, $widen:expr) => {
        impl Lanes16 for $t {
            type V = $v;
            type Sum = [$sum; 2];
            #[inline(always)]
            fn sum_zero() -> [$sum; 2] {
                // SAFETY: neon is a compile-time target feature (cfg on this module).
                unsafe { [$zero; 2] }
            }
            #[inline(always)]
            fn sum_add(sum: [$sum; 2], v: $v) -> [$sum; 2] {
                // SAFETY: neon is a compile-time target feature (cfg on this module).
                unsafe { [$addw(sum[0], $low(v)), $addw_high(sum[1], v)] }
            }
            #[inline(always)]
            fn sum_widen(sum: [$sum; 2]) -> Block {
                let widen = $widen;
                let (a, b) = (widen(sum[0]), widen(sum[1]));
                [a.0, a.1, b.0, b.1]
            }
            #[inline(always)]
            unsafe fn load16(p: *const $t) -> $v {
                // SAFETY: the caller guarantees 16 readable elements at p.
                unsafe { $ld(p) }
            }
            #[inline(always)]
            unsafe fn store16(p: *mut $t, v: $v) {
                // SAFETY: the caller guarantees 16 writable elements at p.
                unsafe { $st(p, v) }
            }
            #[inline(always)]
            fn max16(a: $v, b: $v) -> $v {
                // SAFETY: neon is a compile-time target feature (cfg on this module).
                unsafe { $max(a, b) }
            }
            #[inline(always)]
            fn min16(a: $v, b: $v) -> $v {
                // SAFETY: neon is a compile-time target feature (cfg on this module).
                unsafe { $min(a, b) }
            }
            #[inline(always)]
            fn splat16(x: i32) -> $v {
                debug_assert!((<$t>::MIN as i32..=<$t>::MAX as i32).contains(&x));
                // SAFETY: neon is a compile-time target feature (cfg on this module).
                unsafe { $dup(x as $t) }
            }
        }
    };
}

lanes16!(
    i8,
    int8x16_t,
    vld1q_s8,
    vst1q_s8,
    vmaxq_s8,
    vminq_s8,
    vdupq_n_s8,
    int16x8_t,
    vdupq_n_s16(0),
    vaddw_s8,
    vaddw_high_s8,
    vget_low_s8,
    // SAFETY: neon is a compile-time target feature (cfg on this module).
    |x: int16x8_t| unsafe { (vmovl_s16(vget_low_s16(x)), vmovl_high_s16(x)) }
);
lanes16!(
    u8,
    uint8x16_t,
    vld1q_u8,
    vst1q_u8,
    vmaxq_u8,
    vminq_u8,
    vdupq_n_u8,
    uint16x8_t,
    vdupq_n_u16(0),
    vaddw_u8,
    vaddw_high_u8,
    vget_low_u8,
    // SAFETY: neon is a compile-time target feature (cfg on this module).
    |x: uint16x8_t| unsafe {
        (
            vreinterpretq_s32_u32(vmovl_u16(vget_low_u16(x))),
            vreinterpretq_s32_u32(vmovl_high_u16(x)),
        )
    }
);

/// The average pool of an 8-bit type with window sums in 16-bit lanes
/// (one widening add per 16 channels and window element); windows over
/// [`NARROW_SUM_AREA`] elements and fewer than 16 channels take the
/// `i32` path.
#[inline(always)]
fn average_pool_own_lanes<T: Lanes16>(
    p: &PoolParams,
    rows: Range<usize>,
    input: &[T],
    output: &mut [T],
) {
    let s = p.shape;
    let c = s.channels;
    if c < BLOCK || s.filter_height * s.filter_width > NARROW_SUM_AREA {
        return average_pool(p, rows, input, output);
    }
    let whole = c - c % BLOCK;
    for (out, (b, oy, ox)) in output.chunks_exact_mut(c).zip(pixels(p, rows)) {
        let w = s.window(oy, ox);
        let average = Average::new(p, w.count());
        let at = |y: usize, x: usize| ((b * s.input_height + y) * s.input_width + x) * c;
        let block = |ch: usize, out: &mut [T]| {
            let mut sum = T::sum_zero();
            for y in w.y0..w.y1 {
                for x in w.x0..w.x1 {
                    let offset = at(y, x) + ch;
                    debug_assert!(offset + BLOCK <= input.len());
                    // SAFETY: `ch + 16 <= c`: the 16 channels lie inside
                    // one window element, inside the input.
                    sum = T::sum_add(sum, unsafe { T::load16(input.as_ptr().add(offset)) });
                }
            }
            let result = average.finish(T::sum_widen(sum));
            debug_assert!(ch + BLOCK <= out.len());
            // SAFETY: `ch + 16 <= c == out.len()`.
            unsafe { T::store_block(out.as_mut_ptr().add(ch), result) };
        };
        for ch in (0..whole).step_by(BLOCK) {
            block(ch, out);
        }
        if whole < c {
            // The last 16 channels, overlapping the block before.
            block(c - BLOCK, out);
        }
    }
}

/// The max pool of an 8-bit type in its own lanes; fewer than 16 channels
/// take the widened path (its stack-buffer tail).
#[inline(always)]
fn max_pool_own_lanes<T: Lanes16>(
    p: &PoolParams,
    rows: Range<usize>,
    input: &[T],
    output: &mut [T],
) {
    let s = p.shape;
    let c = s.channels;
    if c < BLOCK {
        return max_pool(p, rows, input, output);
    }
    let (lo, hi) = (T::splat16(p.act_min), T::splat16(p.act_max));
    let whole = c - c % BLOCK;
    for (out, (b, oy, ox)) in output.chunks_exact_mut(c).zip(pixels(p, rows)) {
        let w = s.window(oy, ox);
        let at = |y: usize, x: usize| ((b * s.input_height + y) * s.input_width + x) * c;
        let block = |ch: usize, out: &mut [T]| {
            let mut m = T::splat16(T::MIN);
            for y in w.y0..w.y1 {
                for x in w.x0..w.x1 {
                    let offset = at(y, x) + ch;
                    debug_assert!(offset + BLOCK <= input.len());
                    // SAFETY: `ch + 16 <= c`: the 16 channels lie inside
                    // one window element, inside the input (length checked
                    // against the shape, window clipped to the input).
                    m = T::max16(m, unsafe { T::load16(input.as_ptr().add(offset)) });
                }
            }
            debug_assert!(ch + BLOCK <= out.len());
            // SAFETY: `ch + 16 <= c == out.len()`.
            unsafe { T::store16(out.as_mut_ptr().add(ch), T::min16(T::max16(m, lo), hi)) };
        };
        for ch in (0..whole).step_by(BLOCK) {
            block(ch, out);
        }
        if whole < c {
            // The last 16 channels, overlapping the block before (the same
            // bytes written twice, out of place).
            block(c - BLOCK, out);
        }
    }
}

macro_rules! entry_points {
    ($($avg:ident, $avg_loop:ident, $max:ident, $max_loop:ident: $t:ty;)*) => {$(
        /// Average pool over this element type (the asm checks name it).
        #[inline(never)]
        pub(crate) fn $avg(p: &PoolParams, rows: Range<usize>, input: &[$t], output: &mut [$t]) {
            $avg_loop(p, rows, input, output)
        }

        /// Max pool over this element type (the asm checks name it).
        #[inline(never)]
        pub(crate) fn $max(p: &PoolParams, rows: Range<usize>, input: &[$t], output: &mut [$t]) {
            $max_loop(p, rows, input, output)
        }
    )*};
}

entry_points! {
    average_pool_i8, average_pool_own_lanes, max_pool_i8, max_pool_own_lanes: i8;
    average_pool_u8, average_pool_own_lanes, max_pool_u8, max_pool_own_lanes: u8;
    average_pool_i16, average_pool, max_pool_i16, max_pool: i16;
}
