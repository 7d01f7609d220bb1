//! The NEON backend: the same lane-generic arithmetic as the scalar reference,
//! instantiated with `int32x4_t`, 16 elements per block.
//!
//! Only loading, widening, narrowing, storing and row walking live here.
//! Kernels with stable names (`softmax_i8`, `logistic_u8`, ...) are
//! `#[inline(never)]` so `asm_tests/` can find and inspect them.

use super::tail::{for_each_block, BLOCK};
use crate::fixedpoint::{get_reciprocal_splat, FixedPoint, Lane};
use crate::ops::logistic::activation_lanes;
use crate::ops::softmax::ACCUMULATION_INTEGER_BITS;
use crate::ops::{Activation, ActivationParams, LogSoftmaxParams, QuantElem, SoftmaxParams};
use crate::q31::Q31Row;
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

/// Four vectors: one block of 16 elements widened to `i32`.
type Block = [int32x4_t; 4];

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
fn map4(b: Block, mut f: impl FnMut(int32x4_t) -> int32x4_t) -> Block {
    [f(b[0]), f(b[1]), f(b[2]), f(b[3])]
}

/// Widens two vectors of 8 `i16` to a block of 16 `i32`.
#[inline(always)]
fn widen_i16_block(lo: int16x8_t, hi: int16x8_t) -> Block {
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
unsafe fn load_block_i32(p: *const i32) -> Block {
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
unsafe fn store_block_i32(p: *mut i32, v: Block) {
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

// ---------------------------------------------------------------------------
// Logistic and tanh.

#[inline(always)]
fn activation_rows<T: NeonElem + QuantElem, const I: u32, const I_PLUS_1: u32, const TANH: bool>(
    p: &ActivationParams,
    input: &[T],
    output: &mut [T],
) {
    unswitch_on_shift!(p, |p| activation_rows_inner::<T, I, I_PLUS_1, TANH>(
        p, input, output
    ))
}

#[inline(always)]
fn activation_rows_inner<
    T: NeonElem + QuantElem,
    const I: u32,
    const I_PLUS_1: u32,
    const TANH: bool,
>(
    p: &ActivationParams,
    input: &[T],
    output: &mut [T],
) {
    let pad = T::from_i32(p.input_zero_point);
    for_each_block(
        input,
        output,
        pad,
        #[inline(always)]
        |src, dst| {
            // SAFETY: for_each_block hands out pointers to 16 valid elements each.
            unsafe {
                let x = T::load_block(src);
                T::store_block(
                    dst,
                    map4(
                        x,
                        #[inline(always)]
                        |v| activation_lanes::<int32x4_t, I, I_PLUS_1, TANH>(v, p),
                    ),
                );
            }
        },
    );
}

macro_rules! activation_kernels {
    ($($name:ident: $t:ty, $i:literal, $i1:literal, $tanh:literal;)*) => {$(
        #[doc = concat!("`", stringify!($name), "`: Q", $i, " rescaled input, 16 elements per iteration.")]
        #[inline(never)]
        pub(crate) fn $name(p: &ActivationParams, input: &[$t], output: &mut [$t]) {
            activation_rows::<$t, $i, $i1, $tanh>(p, input, output)
        }
    )*};
}

activation_kernels! {
    logistic_i8: i8, 4, 5, false;
    logistic_u8: u8, 4, 5, false;
    logistic_i16: i16, 5, 6, false;
    tanh_i8: i8, 4, 5, true;
    tanh_u8: u8, 4, 5, true;
    tanh_i16: i16, 5, 6, true;
}

/// Logistic or tanh, element-wise; lengths were checked by the caller.
pub(crate) fn activation<T: QuantElem>(p: &ActivationParams, input: &[T], output: &mut [T]) {
    match p.activation {
        Activation::Logistic => dispatch_type!(
            T,
            input,
            output,
            |i, o| logistic_i8(p, i, o),
            |i, o| logistic_u8(p, i, o),
            |i, o| logistic_i16(p, i, o)
        ),
        Activation::Tanh => {
            dispatch_type!(
                T,
                input,
                output,
                |i, o| tanh_i8(p, i, o),
                |i, o| tanh_u8(p, i, o),
                |i, o| tanh_i16(p, i, o)
            )
        }
    }
}

// ---------------------------------------------------------------------------
// Softmax.

/// Exps cached per row on the stack up to this row length; longer rows use a
/// heap buffer (with `alloc`) or recompute the exps in the output pass.
const STACK_CACHE: usize = 1024;

/// Sums of Q12.19 exps: `u32` lanes, flushed into `u64` before they can overflow.
struct SumOfExps {
    lanes: uint32x4_t,
    wide: uint64x2_t,
    blocks: u32,
}

impl SumOfExps {
    /// Blocks a `u32` lane can take: each adds at most 4 * 2^19.
    const FLUSH_EVERY: u32 = 1 << 10;

    #[inline(always)]
    fn new() -> Self {
        // SAFETY: neon is a compile-time target feature on aarch64.
        unsafe {
            SumOfExps {
                lanes: vdupq_n_u32(0),
                wide: vdupq_n_u64(0),
                blocks: 0,
            }
        }
    }

    /// Adds a block of Q0.31 exps (each `>= 0`), each rescaled to Q12.19 with
    /// the rounding shift fused into the accumulate (`srsra`): the same value as
    /// `rounding_divide_by_pot(e, 12)` for non-negative `e`.
    #[inline(always)]
    fn add_q0_31(&mut self, v: Block) {
        // SAFETY: neon is a compile-time target feature on aarch64.
        unsafe {
            let mut acc = vreinterpretq_s32_u32(self.lanes);
            for e in v {
                acc = vrsraq_n_s32::<{ ACCUMULATION_INTEGER_BITS as i32 }>(acc, e);
            }
            self.lanes = vreinterpretq_u32_s32(acc);
        }
        self.blocks += 1;
        if self.blocks == Self::FLUSH_EVERY {
            self.flush();
        }
    }

    /// Adds a block of Q0.31 exps exactly (into the 64-bit lanes).
    #[inline(always)]
    fn add_exact(&mut self, v: Block) {
        // SAFETY: neon is a compile-time target feature on aarch64.
        unsafe {
            for e in v {
                self.wide = vpadalq_u32(self.wide, vreinterpretq_u32_s32(e));
            }
        }
    }

    /// Adds a block of Q12.19 values (each in `[0, 2^19]`).
    #[inline(always)]
    fn add(&mut self, v: Block) {
        // SAFETY: neon is a compile-time target feature on aarch64.
        unsafe {
            let s = vaddq_s32(vaddq_s32(v[0], v[1]), vaddq_s32(v[2], v[3]));
            self.lanes = vaddq_u32(self.lanes, vreinterpretq_u32_s32(s));
        }
        self.blocks += 1;
        if self.blocks == Self::FLUSH_EVERY {
            self.flush();
        }
    }

    #[inline(always)]
    fn flush(&mut self) {
        // SAFETY: neon is a compile-time target feature on aarch64.
        unsafe {
            self.wide = vpadalq_u32(self.wide, self.lanes);
            self.lanes = vdupq_n_u32(0);
        }
        self.blocks = 0;
    }

    #[inline(always)]
    fn total(mut self) -> i64 {
        self.flush();
        // SAFETY: neon is a compile-time target feature on aarch64.
        unsafe { vaddvq_u64(self.wide) as i64 }
    }
}

/// Zeroes the lanes of a block at index `>= valid` (tail padding must not count).
#[inline(always)]
fn keep_first(v: Block, valid: usize) -> Block {
    let mut a = [0i32; BLOCK];
    // SAFETY: `a` holds exactly 16 i32.
    unsafe { store_block_i32(a.as_mut_ptr(), v) };
    for x in a.iter_mut().skip(valid) {
        *x = 0;
    }
    // SAFETY: `a` holds exactly 16 i32.
    unsafe { load_block_i32(a.as_ptr()) }
}

/// Calls `f(block, start, valid)` for each 16-element block of `row`: whole
/// blocks straight from the slice (`valid == 16`), then the last partial block
/// from a buffer padded with `pad`. Always inlined, so `valid` is a constant in
/// the main loop.
#[inline(always)]
fn for_each_row_block<T: NeonElem>(row: &[T], pad: T, f: impl FnMut(Block, usize, usize)) {
    for_each_row_block_with(
        row,
        pad,
        #[inline(always)]
        |p| {
            // SAFETY: for_each_row_block_with passes pointers to 16 readable elements.
            unsafe { T::load_block(p) }
        },
        f,
    )
}

/// [`for_each_row_block`] with a custom block loader, called with pointers to
/// 16 readable elements.
#[inline(always)]
fn for_each_row_block_with<T: NeonElem>(
    row: &[T],
    pad: T,
    load: impl Fn(*const T) -> Block,
    mut f: impl FnMut(Block, usize, usize),
) {
    let n = row.len();
    let whole = n - n % BLOCK;
    let mut start = 0;
    while start < whole {
        // SAFETY: start + 16 <= whole <= row.len().
        let b = load(unsafe { row.as_ptr().add(start) });
        f(b, start, BLOCK);
        start += BLOCK;
    }
    if whole < n {
        let mut buf = [pad; BLOCK];
        buf[..n - whole].copy_from_slice(&row[whole..]);
        f(load(buf.as_ptr()), whole, n - whole);
    }
}

/// `exp(diff)` for a block of differences from the row maximum, 0 where the
/// difference is below `diff_min`.
#[inline(always)]
fn softmax_exp_block(p: &SoftmaxParams, diff: Block) -> Block {
    map4(
        diff,
        #[inline(always)]
        |d| {
            let e = p.exp_of_diff(d).raw();
            <int32x4_t as Lane>::select(
                d.mask_if_less_than(int32x4_t::splat(p.diff_min)),
                int32x4_t::splat(0),
                e,
            )
        },
    )
}

#[inline(always)]
fn softmax_row<T: NeonElem + QuantElem>(
    p: &SoftmaxParams,
    row_in: &[T],
    row_out: &mut [T],
    cache: Option<&mut [i32]>,
) {
    let n = row_in.len();
    let max = T::slice_max(row_in);
    let pad = T::from_i32(T::MIN);
    let mut sum = SumOfExps::new();
    let cache_ptr = cache.map(|c| {
        debug_assert!(c.len() >= n.div_ceil(BLOCK) * BLOCK);
        c.as_mut_ptr()
    });
    for_each_row_block_with(
        row_in,
        pad,
        #[inline(always)]
        |ptr| {
            // SAFETY: for_each_row_block_with passes pointers to 16 readable elements.
            unsafe { T::load_diff_block(ptr, max) }
        },
        #[inline(always)]
        |diff, start, valid| {
            let mut e = softmax_exp_block(p, diff);
            if valid < BLOCK {
                e = keep_first(e, valid);
            }
            if size_of::<T>() == 2 {
                // int16: the exact Q0.31 sum (accumulation_integer_bits == 0).
                sum.add_exact(e);
            } else {
                sum.add_q0_31(e);
            }
            if let Some(c) = cache_ptr {
                // SAFETY: the cache holds n rounded up to whole blocks of i32.
                unsafe { store_block_i32(c.add(start), e) };
            }
        },
    );
    debug_assert_eq!(p.accumulation_integer_bits == 0, size_of::<T>() == 2);
    let (scale, exponent) = p.reciprocal::<int32x4_t>(sum.total());
    // Two copies of the output loop: in each the compiler knows which side of
    // 31 the exponent is on, and drops the other case from the loop body.
    #[allow(clippy::if_same_then_else)]
    if exponent <= 31 {
        softmax_output_pass(p, row_in, row_out, cache_ptr, max, scale, exponent);
    } else {
        softmax_output_pass(p, row_in, row_out, cache_ptr, max, scale, exponent);
    }
}

/// Writes a row's outputs from the cached exps (or recomputed ones without a cache).
#[inline(always)]
fn softmax_output_pass<T: NeonElem + QuantElem>(
    p: &SoftmaxParams,
    row_in: &[T],
    row_out: &mut [T],
    cache_ptr: Option<*mut i32>,
    max: i32,
    scale: int32x4_t,
    exponent: u32,
) {
    let pad = T::from_i32(T::MIN);
    let mut start = 0;
    for_each_block(
        row_in,
        row_out,
        pad,
        #[inline(always)]
        |src, dst| {
            let e = match cache_ptr {
                // SAFETY: the cache holds the row rounded up to whole blocks of i32.
                Some(c) => unsafe { load_block_i32(c.add(start)) },
                // SAFETY: for_each_block hands out pointers to 16 valid elements.
                None => softmax_exp_block(p, unsafe { T::load_diff_block(src, max) }),
            };
            let y = map4(
                e,
                #[inline(always)]
                |v| p.output(FixedPoint::<int32x4_t, 0>::from_raw(v), scale, exponent),
            );
            // SAFETY: for_each_block hands out pointers to 16 valid elements.
            unsafe { T::store_block(dst, y) };
            start += BLOCK;
        },
    );
}

#[inline(always)]
fn softmax_rows<T: NeonElem + QuantElem>(
    p: &SoftmaxParams,
    input: &[T],
    output: &mut [T],
    row_len: usize,
) {
    unswitch_on_shift!(p, |p| softmax_rows_inner::<T>(p, input, output, row_len))
}

#[inline(always)]
fn softmax_rows_inner<T: NeonElem + QuantElem>(
    p: &SoftmaxParams,
    input: &[T],
    output: &mut [T],
    row_len: usize,
) {
    with_exp_cache(
        row_len,
        #[inline(always)]
        |cache| {
            for (row_in, row_out) in input
                .chunks_exact(row_len)
                .zip(output.chunks_exact_mut(row_len))
            {
                softmax_row(p, row_in, row_out, cache.as_deref_mut());
            }
        },
    )
}

/// Runs `f` with a scratch buffer of `row_len` rounded up to whole blocks of
/// `i32`: on the stack when small, on the heap with `alloc`, else none.
#[inline(always)]
fn with_exp_cache<R>(row_len: usize, f: impl FnOnce(&mut Option<&mut [i32]>) -> R) -> R {
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

macro_rules! softmax_kernels {
    ($($name:ident: $t:ty;)*) => {$(
        #[doc = concat!("Softmax rows of `", stringify!($t), "`.")]
        #[inline(never)]
        pub(crate) fn $name(p: &SoftmaxParams, input: &[$t], output: &mut [$t], row_len: usize) {
            softmax_rows::<$t>(p, input, output, row_len)
        }
    )*};
}

softmax_kernels! {
    softmax_i8: i8;
    softmax_u8: u8;
    softmax_i16: i16;
}

/// Softmax of every `row_len`-long row; lengths were checked by the caller.
pub(crate) fn softmax<T: QuantElem>(
    p: &SoftmaxParams,
    input: &[T],
    output: &mut [T],
    row_len: usize,
) {
    dispatch_type!(
        T,
        input,
        output,
        |i, o| softmax_i8(p, i, o, row_len),
        |i, o| softmax_u8(p, i, o, row_len),
        |i, o| softmax_i16(p, i, o, row_len)
    )
}

// ---------------------------------------------------------------------------
// Log-softmax.

#[inline(always)]
fn log_softmax_rows<T: NeonElem + QuantElem>(
    p: &LogSoftmaxParams,
    input: &[T],
    output: &mut [T],
    row_len: usize,
) {
    unswitch_on_shift!(p, |p| log_softmax_rows_inner::<T>(
        p, input, output, row_len
    ))
}

#[inline(always)]
fn log_softmax_rows_inner<T: NeonElem + QuantElem>(
    p: &LogSoftmaxParams,
    input: &[T],
    output: &mut [T],
    row_len: usize,
) {
    let pad = T::from_i32(T::MIN);
    for (row_in, row_out) in input
        .chunks_exact(row_len)
        .zip(output.chunks_exact_mut(row_len))
    {
        let max = int32x4_t::splat(T::slice_max(row_in));
        let mut sum = SumOfExps::new();
        for_each_row_block(
            row_in,
            pad,
            #[inline(always)]
            |x, _, valid| {
                let mut e = map4(
                    x,
                    #[inline(always)]
                    |v| p.exp_term(v.sub(max)),
                );
                if valid < BLOCK {
                    e = keep_first(e, valid);
                }
                sum.add(e);
            },
        );
        let row = p.row_constants(sum.total());
        for_each_block(
            row_in,
            row_out,
            pad,
            #[inline(always)]
            |src, dst| {
                // SAFETY: for_each_block hands out pointers to 16 valid elements.
                unsafe {
                    let x = T::load_block(src);
                    T::store_block(
                        dst,
                        map4(
                            x,
                            #[inline(always)]
                            |v| p.output(v.sub(max), &row),
                        ),
                    );
                }
            },
        );
    }
}

macro_rules! log_softmax_kernels {
    ($($name:ident: $t:ty;)*) => {$(
        #[doc = concat!("Log-softmax rows of `", stringify!($t), "`.")]
        #[inline(never)]
        pub(crate) fn $name(p: &LogSoftmaxParams, input: &[$t], output: &mut [$t], row_len: usize) {
            log_softmax_rows::<$t>(p, input, output, row_len)
        }
    )*};
}

log_softmax_kernels! {
    log_softmax_i8: i8;
    log_softmax_u8: u8;
}

/// Log-softmax of every `row_len`-long row; lengths were checked by the caller.
pub(crate) fn log_softmax<T: QuantElem>(
    p: &LogSoftmaxParams,
    input: &[T],
    output: &mut [T],
    row_len: usize,
) {
    dispatch_type!(
        T,
        input,
        output,
        |i, o| log_softmax_i8(p, i, o, row_len),
        |i, o| log_softmax_u8(p, i, o, row_len),
        |i: &[i16], o: &mut [i16]| log_softmax_rows::<i16>(p, i, o, row_len) // never constructed
    )
}

// ---------------------------------------------------------------------------
// Q31.

/// Q31 softmax: input Q(I).(31-I), output Q0.31, per `row_len`-long row.
#[inline(never)]
pub(crate) fn q31_softmax<const I: u32>(input: &[i32], output: &mut [i32], row_len: usize) {
    with_exp_cache(
        row_len,
        #[inline(always)]
        |cache| {
            for (row_in, row_out) in input
                .chunks_exact(row_len)
                .zip(output.chunks_exact_mut(row_len))
            {
                let (min, max) = i32_min_max(row_in);
                let row = Q31Row::new(min, max);
                let cache = cache.as_deref_mut();
                // Rows whose differences all fit the format (the usual case) take
                // the one-exp loop.
                match row.threshold {
                    None => q31_softmax_row(
                        row_in,
                        row_out,
                        cache,
                        #[inline(always)]
                        |v| row.exp_in_range::<int32x4_t, I>(v),
                    ),
                    Some(t) => q31_softmax_row(
                        row_in,
                        row_out,
                        cache,
                        #[inline(always)]
                        |v| row.exp_wide::<int32x4_t, I>(v, t),
                    ),
                }
            }
        },
    )
}

/// Minimum and maximum of a slice of `i32`, 16 per iteration.
#[inline(always)]
fn i32_min_max(x: &[i32]) -> (i32, i32) {
    let whole = x.len() - x.len() % BLOCK;
    // SAFETY: neon is a compile-time target feature on aarch64.
    let (mut lo, mut hi) = unsafe { (vdupq_n_s32(i32::MAX), vdupq_n_s32(i32::MIN)) };
    let mut i = 0;
    while i < whole {
        // SAFETY: i + 16 <= whole <= x.len().
        unsafe {
            let b = load_block_i32(x.as_ptr().add(i));
            lo = vminq_s32(lo, vminq_s32(vminq_s32(b[0], b[1]), vminq_s32(b[2], b[3])));
            hi = vmaxq_s32(hi, vmaxq_s32(vmaxq_s32(b[0], b[1]), vmaxq_s32(b[2], b[3])));
        }
        i += BLOCK;
    }
    // SAFETY: neon is a compile-time target feature on aarch64.
    let (lo, hi) = unsafe { (vminvq_s32(lo), vmaxvq_s32(hi)) };
    x[whole..]
        .iter()
        .fold((lo, hi), |(l, h), &v| (l.min(v), h.max(v)))
}

#[inline(always)]
fn q31_softmax_row(
    row_in: &[i32],
    row_out: &mut [i32],
    cache: Option<&mut [i32]>,
    exp: impl Fn(int32x4_t) -> int32x4_t,
) {
    #[inline(always)]
    fn exp_block_with(exp: &impl Fn(int32x4_t) -> int32x4_t, x: Block) -> Block {
        // The explicit, always-inlined closure keeps `exp` inlined in the
        // loop (passing `exp` itself measured 0.4 instructions/element more).
        #[allow(clippy::redundant_closure)]
        map4(
            x,
            #[inline(always)]
            |v| exp(v),
        )
    }
    let exp_block = move |x: Block| exp_block_with(&exp, x);
    // Exact Q0.31 sum in u64 lanes (each exp is below 2^31).
    // SAFETY: neon is a compile-time target feature on aarch64.
    let mut wide = unsafe { vdupq_n_u64(0) };
    let cache_ptr = cache.map(|c| c.as_mut_ptr());
    for_each_row_block(
        row_in,
        i32::MIN,
        #[inline(always)]
        |x, start, valid| {
            let mut e = exp_block(x);
            if valid < BLOCK {
                e = keep_first(e, valid);
            }
            // SAFETY: neon is a compile-time target feature on aarch64.
            unsafe {
                for v in e {
                    wide = vpadalq_u32(wide, vreinterpretq_u32_s32(v));
                }
            }
            if let Some(c) = cache_ptr {
                // SAFETY: the cache holds the row rounded up to whole blocks of i32.
                unsafe { store_block_i32(c.add(start), e) };
            }
        },
    );
    // SAFETY: neon is a compile-time target feature on aarch64.
    let total = unsafe { vaddvq_u64(wide) } as i64;
    let (scale, num_bits_over_unit) = get_reciprocal_splat::<int32x4_t>(total, 0);
    // One loop per shift direction; exp * scale >= 0, so the right shift needs
    // no sign fix-up (the same value as the scalar kernel's rounding divide).
    match num_bits_over_unit {
        n if n <= 0 => q31_output_pass(
            row_in,
            row_out,
            cache_ptr,
            &exp_block,
            #[inline(always)]
            |e| {
                e.saturating_rounding_doubling_high_mul(scale)
                    .saturating_rounding_multiply_by_pot(-n)
            },
        ),
        n if n <= 31 => q31_output_pass(
            row_in,
            row_out,
            cache_ptr,
            &exp_block,
            #[inline(always)]
            |e| {
                e.saturating_rounding_doubling_high_mul(scale)
                    .rounding_divide_by_pot_non_negative(n as u32)
            },
        ),
        _ => q31_output_pass(
            row_in,
            row_out,
            cache_ptr,
            &exp_block,
            #[inline(always)]
            |_| int32x4_t::splat(0),
        ),
    }
}

/// Writes `f(exp)` for the row, exps from the cache (or recomputed without one).
#[inline(always)]
fn q31_output_pass(
    row_in: &[i32],
    row_out: &mut [i32],
    cache_ptr: Option<*mut i32>,
    exp_block: &impl Fn(Block) -> Block,
    f: impl Fn(int32x4_t) -> int32x4_t,
) {
    let mut start = 0;
    for_each_block(
        row_in,
        row_out,
        i32::MIN,
        #[inline(always)]
        |src, dst| {
            let e = match cache_ptr {
                // SAFETY: the cache holds the row rounded up to whole blocks of i32.
                Some(c) => unsafe { load_block_i32(c.add(start)) },
                // SAFETY: for_each_block hands out pointers to 16 valid elements.
                None => exp_block(unsafe { load_block_i32(src) }),
            };
            // SAFETY: for_each_block hands out pointers to 16 valid elements.
            unsafe {
                store_block_i32(
                    dst,
                    #[allow(clippy::redundant_closure)]
                    map4(
                        e,
                        #[inline(always)]
                        |v| f(v),
                    ),
                )
            };
            start += BLOCK;
        },
    );
}

/// Q31 logistic: input Q(I).(31-I), output Q0.31.
#[inline(never)]
pub(crate) fn q31_logistic<const I: u32>(input: &[i32], output: &mut [i32]) {
    for_each_block(
        input,
        output,
        0,
        #[inline(always)]
        |src, dst| {
            // SAFETY: for_each_block hands out pointers to 16 valid elements.
            unsafe {
                let x = load_block_i32(src);
                store_block_i32(
                    dst,
                    map4(
                        x,
                        #[inline(always)]
                        |v| {
                            crate::fixedpoint::logistic(FixedPoint::<int32x4_t, I>::from_raw(v))
                                .raw()
                        },
                    ),
                );
            }
        },
    );
}

/// Q31 tanh: input Q(I).(31-I), output Q0.31.
#[inline(never)]
pub(crate) fn q31_tanh<const I: u32, const I_PLUS_1: u32>(input: &[i32], output: &mut [i32]) {
    for_each_block(
        input,
        output,
        0,
        #[inline(always)]
        |src, dst| {
            // SAFETY: for_each_block hands out pointers to 16 valid elements.
            unsafe {
                let x = load_block_i32(src);
                store_block_i32(
                    dst,
                    map4(
                        x,
                        #[inline(always)]
                        |v| {
                            crate::fixedpoint::tanh::<int32x4_t, I, I_PLUS_1>(FixedPoint::from_raw(
                                v,
                            ))
                            .raw()
                        },
                    ),
                );
            }
        },
    );
}
