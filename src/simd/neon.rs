//! NEON element plumbing shared by every NEON kernel: blocks of 16 elements
//! loaded and widened to four `int32x4_t` ([`NeonElem`]), narrowed and stored
//! with saturation, the row maximum in the type's own lanes, the exact sum of
//! non-negative lanes ([`SumOfExps`]) and the per-row scratch buffer.
//!
//! Only loading, widening, narrowing and storing live here; the arithmetic is
//! [`crate::fixedpoint`]'s, instantiated with `int32x4_t`.

use super::tail::BLOCK;
use super::Vector;
use crate::fixedpoint::Lane;
use core::arch::aarch64::*;

/// Instantiates the loop twice, for input multipliers with a left shift
/// (TFLite's usual case) and with a right shift, so that the shift direction
/// is known inside each loop and the unused half of the rescale disappears.
macro_rules! unswitch_on_shift {
    ($p:expr, |$q:ident| $call:expr) => {{
        let params = *$p;
        if params.input_shift >= 0 {
            let $q = &params;
            $call
        } else {
            let $q = &params;
            $call
        }
    }};
}

pub(crate) use unswitch_on_shift;

/// Four vectors: one block of 16 elements widened to `i32`.
pub(crate) type Block = [int32x4_t; 4];

/// Element types the NEON loops can load and store (i8, u8, i16, and raw i32).
pub(crate) trait NeonElem: Copy + 'static {
    /// Loads 16 elements and widens them to `i32`.
    ///
    /// # Safety
    /// `p` must be valid for reading 16 elements.
    unsafe fn load_block(p: *const Self) -> Block;

    /// Narrows 16 `i32` values (already within the type's range) and stores them.
    ///
    /// # Safety
    /// `p` must be valid for writing 16 elements.
    unsafe fn store_block(p: *mut Self, v: Block);

    /// The maximum of a slice, computed in the type's own lanes.
    fn slice_max(x: &[Self]) -> i32;

    /// Loads 16 elements minus `max` (a value of the type), widened to `i32`.
    ///
    /// # Safety
    /// `p` must be valid for reading 16 elements.
    #[inline(always)]
    unsafe fn load_diff_block(p: *const Self, max: i32) -> Block {
        // SAFETY: forwarded from the caller.
        let x = unsafe { Self::load_block(p) };
        let m = int32x4_t::splat(max);
        map4(
            x,
            #[inline(always)]
            |v| v.sub(m),
        )
    }
}

/// Whole 16-element chunks of `x` by pointer, then the remainder by value.
macro_rules! native_max {
    ($x:expr, $t:ty, $init:expr, $load:ident, $max:ident, $reduce:ident, $step:literal) => {{
        let x: &[$t] = $x;
        // Two blocks per iteration into two accumulators: the loop overhead
        // is then shared by 32 elements (this pass is a sizeable part of a
        // softmax row's cost).
        let pairs = x.len() - x.len() % (2 * BLOCK);
        let whole = x.len() - x.len() % BLOCK;
        // SAFETY: neon is a compile-time target feature on aarch64.
        let (mut m0, mut m1) = unsafe { ($init, $init) };
        let mut i = 0;
        while i < pairs {
            // SAFETY: i + 32 <= pairs <= x.len(): the 32 elements read are in bounds.
            unsafe {
                let mut j = 0;
                while j < BLOCK {
                    m0 = $max(m0, $load(x.as_ptr().add(i + j)));
                    m1 = $max(m1, $load(x.as_ptr().add(i + BLOCK + j)));
                    j += $step;
                }
            }
            i += 2 * BLOCK;
        }
        if i < whole {
            // SAFETY: i + 16 <= whole <= x.len().
            unsafe {
                let mut j = 0;
                while j < BLOCK {
                    m0 = $max(m0, $load(x.as_ptr().add(i + j)));
                    j += $step;
                }
            }
        }
        // SAFETY: neon is a compile-time target feature on aarch64.
        let vector_max = unsafe { $reduce($max(m0, m1)) } as i32;
        x[whole..].iter().fold(vector_max, |a, &b| a.max(b as i32))
    }};
}

impl NeonElem for i8 {
    #[inline(always)]
    unsafe fn load_block(p: *const i8) -> Block {
        // SAFETY: the caller guarantees 16 readable bytes at p.
        unsafe {
            let v = vld1q_s8(p);
            let lo = vmovl_s8(vget_low_s8(v));
            let hi = vmovl_high_s8(v);
            [
                vmovl_s16(vget_low_s16(lo)),
                vmovl_high_s16(lo),
                vmovl_s16(vget_low_s16(hi)),
                vmovl_high_s16(hi),
            ]
        }
    }
    #[inline(always)]
    unsafe fn store_block(p: *mut i8, v: Block) {
        // SAFETY: the caller guarantees 16 writable bytes at p.
        unsafe {
            let lo = vqmovn_high_s32(vqmovn_s32(v[0]), v[1]);
            let hi = vqmovn_high_s32(vqmovn_s32(v[2]), v[3]);
            vst1q_s8(p, vqmovn_high_s16(vqmovn_s16(lo), hi));
        }
    }
    #[inline(always)]
    fn slice_max(x: &[i8]) -> i32 {
        native_max!(
            x,
            i8,
            vdupq_n_s8(i8::MIN),
            vld1q_s8,
            vmaxq_s8,
            vmaxvq_s8,
            16
        )
    }
}

impl NeonElem for u8 {
    #[inline(always)]
    unsafe fn load_block(p: *const u8) -> Block {
        // SAFETY: the caller guarantees 16 readable bytes at p.
        unsafe {
            let v = vld1q_u8(p);
            let lo = vreinterpretq_s16_u16(vmovl_u8(vget_low_u8(v)));
            let hi = vreinterpretq_s16_u16(vmovl_high_u8(v));
            [
                vmovl_s16(vget_low_s16(lo)),
                vmovl_high_s16(lo),
                vmovl_s16(vget_low_s16(hi)),
                vmovl_high_s16(hi),
            ]
        }
    }
    #[inline(always)]
    unsafe fn store_block(p: *mut u8, v: Block) {
        // SAFETY: the caller guarantees 16 writable bytes at p.
        unsafe {
            let lo = vqmovn_high_s32(vqmovn_s32(v[0]), v[1]);
            let hi = vqmovn_high_s32(vqmovn_s32(v[2]), v[3]);
            vst1q_u8(p, vqmovun_high_s16(vqmovun_s16(lo), hi));
        }
    }
    #[inline(always)]
    fn slice_max(x: &[u8]) -> i32 {
        native_max!(x, u8, vdupq_n_u8(0), vld1q_u8, vmaxq_u8, vmaxvq_u8, 16)
    }
    #[inline(always)]
    unsafe fn load_diff_block(p: *const u8, max: i32) -> Block {
        // x - max is in [-255, 0]: the wrapping u16 difference read as i16.
        // SAFETY: the caller guarantees 16 readable bytes at p.
        unsafe {
            let m = vdupq_n_u8(max as u8);
            let v = vld1q_u8(p);
            let lo = vreinterpretq_s16_u16(vsubl_u8(vget_low_u8(v), vget_low_u8(m)));
            let hi = vreinterpretq_s16_u16(vsubl_high_u8(v, m));
            widen_i16_block(lo, hi)
        }
    }
}

impl NeonElem for i16 {
    #[inline(always)]
    unsafe fn load_block(p: *const i16) -> Block {
        // SAFETY: the caller guarantees 16 readable i16 at p.
        unsafe {
            let lo = vld1q_s16(p);
            let hi = vld1q_s16(p.add(8));
            [
                vmovl_s16(vget_low_s16(lo)),
                vmovl_high_s16(lo),
                vmovl_s16(vget_low_s16(hi)),
                vmovl_high_s16(hi),
            ]
        }
    }
    #[inline(always)]
    unsafe fn store_block(p: *mut i16, v: Block) {
        // SAFETY: the caller guarantees 16 writable i16 at p.
        unsafe {
            vst1q_s16(p, vqmovn_high_s32(vqmovn_s32(v[0]), v[1]));
            vst1q_s16(p.add(8), vqmovn_high_s32(vqmovn_s32(v[2]), v[3]));
        }
    }
    #[inline(always)]
    fn slice_max(x: &[i16]) -> i32 {
        native_max!(
            x,
            i16,
            vdupq_n_s16(i16::MIN),
            vld1q_s16,
            vmaxq_s16,
            vmaxvq_s16,
            8
        )
    }
}

/// Applies `f` to each vector of a block (always inlined, unlike `array::map`,
/// so constants stay in registers across the loop).
#[inline(always)]
pub(crate) fn map4(b: Block, mut f: impl FnMut(int32x4_t) -> int32x4_t) -> Block {
    [f(b[0]), f(b[1]), f(b[2]), f(b[3])]
}

/// Widens two vectors of 8 `i16` to a block of 16 `i32`.
#[inline(always)]
pub(crate) fn widen_i16_block(lo: int16x8_t, hi: int16x8_t) -> Block {
    // SAFETY: neon is a compile-time target feature on aarch64.
    unsafe {
        [
            vmovl_s16(vget_low_s16(lo)),
            vmovl_high_s16(lo),
            vmovl_s16(vget_low_s16(hi)),
            vmovl_high_s16(hi),
        ]
    }
}

/// Loads 16 `i32`.
///
/// # Safety
/// `p` must be valid for reading 16 `i32`.
#[inline(always)]
pub(crate) unsafe fn load_block_i32(p: *const i32) -> Block {
    // SAFETY: the caller guarantees 16 readable i32 at p.
    unsafe {
        [
            vld1q_s32(p),
            vld1q_s32(p.add(4)),
            vld1q_s32(p.add(8)),
            vld1q_s32(p.add(12)),
        ]
    }
}

/// Stores 16 `i32`.
///
/// # Safety
/// `p` must be valid for writing 16 `i32`.
#[inline(always)]
pub(crate) unsafe fn store_block_i32(p: *mut i32, v: Block) {
    // SAFETY: the caller guarantees 16 writable i32 at p.
    unsafe {
        vst1q_s32(p, v[0]);
        vst1q_s32(p.add(4), v[1]);
        vst1q_s32(p.add(8), v[2]);
        vst1q_s32(p.add(12), v[3]);
    }
}

impl NeonElem for i32 {
    #[inline(always)]
    unsafe fn load_block(p: *const i32) -> Block {
        // SAFETY: the caller guarantees 16 readable i32 at p.
        unsafe { load_block_i32(p) }
    }
    #[inline(always)]
    unsafe fn store_block(p: *mut i32, v: Block) {
        // SAFETY: the caller guarantees 16 writable i32 at p.
        unsafe { store_block_i32(p, v) }
    }
    #[inline(always)]
    fn slice_max(x: &[i32]) -> i32 {
        native_max!(
            x,
            i32,
            vdupq_n_s32(i32::MIN),
            vld1q_s32,
            vmaxq_s32,
            vmaxvq_s32,
            4
        )
    }
}

/// Exps cached per row on the stack up to this row length; longer rows use a
/// heap buffer (with `alloc`) or recompute the exps in the output pass.
pub(crate) const STACK_CACHE: usize = 1024;

/// Exact sums of non-negative Q0.31 exps (the int16 softmax's rows) in
/// `u64` lanes.
pub(crate) struct SumOfExps {
    wide: uint64x2_t,
}

impl SumOfExps {
    #[inline(always)]
    pub(crate) fn new() -> Self {
        // SAFETY: neon is a compile-time target feature on aarch64.
        unsafe {
            SumOfExps {
                wide: vdupq_n_u64(0),
            }
        }
    }

    /// Adds a block of Q0.31 exps exactly (into the 64-bit lanes).
    #[inline(always)]
    pub(crate) fn add_exact(&mut self, v: Block) {
        // SAFETY: neon is a compile-time target feature on aarch64.
        unsafe {
            for e in v {
                self.wide = vpadalq_u32(self.wide, vreinterpretq_u32_s32(e));
            }
        }
    }

    #[inline(always)]
    pub(crate) fn total(self) -> i64 {
        // SAFETY: neon is a compile-time target feature on aarch64.
        unsafe { vaddvq_u64(self.wide) as i64 }
    }
}

/// Runs `f` with a scratch buffer of `row_len` rounded up to whole blocks of
/// `i32`: on the stack when small, on the heap with `alloc`, else none.
#[inline(always)]
pub(crate) fn with_exp_cache<R>(row_len: usize, f: impl FnOnce(&mut Option<&mut [i32]>) -> R) -> R {
    let padded = row_len.div_ceil(BLOCK) * BLOCK;
    if padded <= STACK_CACHE {
        let mut buf = [0i32; STACK_CACHE];
        return f(&mut Some(&mut buf[..padded]));
    }
    #[cfg(feature = "alloc")]
    {
        let mut heap = alloc::vec![0i32; padded];
        f(&mut Some(&mut heap[..]))
    }
    #[cfg(not(feature = "alloc"))]
    {
        f(&mut None)
    }
}

impl Vector for int32x4_t {
    type Elem = i32;
    const ZERO: i32 = 0;
    const ELEMS: usize = 4;
    #[inline(always)]
    unsafe fn load_elems(p: *const i32) -> Self {
        // SAFETY: the caller guarantees 4 readable i32 at p.
        unsafe { vld1q_s32(p) }
    }
    #[inline(always)]
    unsafe fn store_elems(self, p: *mut i32) {
        // SAFETY: the caller guarantees 4 writable i32 at p.
        unsafe { vst1q_s32(p, self) }
    }
}

impl Vector for float32x4_t {
    type Elem = f32;
    const ZERO: f32 = 0.0;
    const ELEMS: usize = 4;
    #[inline(always)]
    unsafe fn load_elems(p: *const f32) -> Self {
        // SAFETY: the caller guarantees 4 readable f32 at p.
        unsafe { vld1q_f32(p) }
    }
    #[inline(always)]
    unsafe fn store_elems(self, p: *mut f32) {
        // SAFETY: the caller guarantees 4 writable f32 at p.
        unsafe { vst1q_f32(p, self) }
    }
}
