//! NEON quantized add: the lane arithmetic of the scalar reference
//! (`AddParams::lanes`) on `int32x4_t`, or its [`AddFast`] form, 16 elements
//! per block; the remainder goes through the tail helper's stack buffers.

use super::params::{AddFast, AddParams};
use crate::ops::requant::neon::narrow_store;
use crate::simd::neon::NeonElem;
use crate::simd::tail::{map_tail, read_tail, BLOCK};
use core::arch::aarch64::*;

/// 16 elements of `a + b`.
///
/// # Safety
/// `pa` and `pb` must be valid for reading 16 bytes, `po` for writing 16.
#[inline(always)]
unsafe fn add_block(p: &AddParams, pa: *const i8, pb: *const i8, po: *mut i8) {
    // SAFETY: the caller's guarantee.
    unsafe {
        let (x, y) = (i8::load_block(pa), i8::load_block(pb));
        // Written out: `array::from_fn` is not always inlined.
        let f = |j: usize| p.lanes::<int32x4_t>(x[j], y[j]);
        let out = [f(0), f(1), f(2), f(3)];
        // Results are within [act_min, act_max]: the narrows do not saturate.
        i8::store_block(po, out);
    }
}

/// 16 elements of the add in the form of [`AddFast`]: `e` the exact side, `o`
/// the other one.
///
/// # Safety
/// `pe` and `po` must be valid for reading 16 bytes, `out` for writing 16.
#[inline(always)]
unsafe fn add_fast_block<const FIX_OTHER: bool, const FIX_OUT: bool, const CLAMP: bool>(
    k: &AddConsts,
    pe: *const i8,
    po: *const i8,
    out: *mut i8,
) {
    // SAFETY: the caller's guarantee for the pointers; neon is a compile-time
    // target feature (cfg on this module).
    unsafe {
        let (e, o) = (vld1q_s8(pe), vld1q_s8(po));
        // The other side: (x - zp) << 20 as `(x - zp) * 16` in i16 (|.| <=
        // 4080) moved to the upper half of i32 lanes by `shll #16`.
        let d_lo = vshlq_n_s16::<4>(vsubl_s8(vget_low_s8(o), vget_low_s8(k.other_zp)));
        let d_hi = vshlq_n_s16::<4>(vsubl_high_s8(o, k.other_zp));
        let x = [
            vshll_n_s16::<16>(vget_low_s16(d_lo)),
            vshll_high_n_s16::<16>(d_lo),
            vshll_n_s16::<16>(vget_low_s16(d_hi)),
            vshll_high_n_s16::<16>(d_hi),
        ];
        // `rounding_divide_by_pot`: `srshl` rounds ties up; the `ssra`
        // (`y - 1` on negative lanes) makes negative ties round down, the
        // same values as `and` + `sshr` + `sqadd` when the shift is not 0
        // (`sqrdmulh` by a multiplier below 2^31 never gives i32::MIN).
        let divide = |y: int32x4_t, fix: bool, neg_shift: int32x4_t| -> int32x4_t {
            let y = if fix { vsraq_n_s32::<31>(y, y) } else { y };
            vrshlq_s32(y, neg_shift)
        };
        let other = |j: usize| {
            divide(
                vqrdmulhq_s32(x[j], k.other_multiplier),
                FIX_OTHER,
                k.other_neg_shift,
            )
        };
        // The exact side: sum = other + ((x - zp) * 32) * 2^14, the product
        // exact (|(x - zp) * 32| <= 8160 fits i16) and `smlal` wrapping like
        // the reference's i32 sum (which never overflows: both terms are
        // below 2^28 in magnitude).
        let e_lo = vshlq_n_s16::<5>(vsubl_s8(vget_low_s8(e), vget_low_s8(k.exact_zp)));
        let e_hi = vshlq_n_s16::<5>(vsubl_high_s8(e, k.exact_zp));
        let c = k.two_pow_14;
        // By element: with a vector operand LLVM extracts high halves first.
        let sum = [
            vmlal_laneq_s16::<0>(other(0), vget_low_s16(e_lo), c),
            vmlal_high_laneq_s16::<0>(other(1), e_lo, c),
            vmlal_laneq_s16::<0>(other(2), vget_low_s16(e_hi), c),
            vmlal_high_laneq_s16::<0>(other(3), e_hi, c),
        ];
        let q = |j: usize| {
            divide(
                vqrdmulhq_s32(sum[j], k.output_multiplier),
                FIX_OUT,
                k.output_neg_shift,
            )
        };
        narrow_store::<CLAMP>([q(0), q(1), q(2), q(3)], k.output_zp, k.min, k.max, out);
    }
}

/// [`AddFast`] as vectors.
#[derive(Clone, Copy)]
struct AddConsts {
    exact_zp: int8x16_t,
    other_zp: int8x16_t,
    other_multiplier: int32x4_t,
    other_neg_shift: int32x4_t,
    output_multiplier: int32x4_t,
    output_neg_shift: int32x4_t,
    output_zp: int16x8_t,
    min: int8x16_t,
    max: int8x16_t,
    /// 2^14 in every lane.
    two_pow_14: int16x8_t,
}

/// The fast add over whole blocks and the tail; `e` and `o` as in
/// [`add_fast_block`], all three slices `n` long (checked by the caller).
#[inline(always)]
fn add_fast<const FIX_OTHER: bool, const FIX_OUT: bool, const CLAMP: bool>(
    k: &AddConsts,
    e: &[i8],
    o: &[i8],
    output: &mut [i8],
) {
    let n = e.len().min(o.len()).min(output.len());
    let whole = n - n % BLOCK;
    let quads = n - n % (4 * BLOCK);
    let mut i = 0;
    // Four blocks per iteration: the loop overhead (pointer updates, compare
    // and branch) is shared by 64 elements.
    while i < quads {
        // SAFETY: i + 64 <= quads <= n, the length of all three slices.
        unsafe {
            for j in [i, i + BLOCK, i + 2 * BLOCK, i + 3 * BLOCK] {
                add_fast_block::<FIX_OTHER, FIX_OUT, CLAMP>(
                    k,
                    e.as_ptr().add(j),
                    o.as_ptr().add(j),
                    output.as_mut_ptr().add(j),
                )
            }
        };
        i += 4 * BLOCK;
    }
    while i < whole {
        // SAFETY: i + 16 <= whole <= n, the length of all three slices.
        unsafe {
            add_fast_block::<FIX_OTHER, FIX_OUT, CLAMP>(
                k,
                e.as_ptr().add(i),
                o.as_ptr().add(i),
                output.as_mut_ptr().add(i),
            )
        };
        i += BLOCK;
    }
    if whole < n {
        // The other side's tail through its own buffer, then the exact side
        // and the output through the tail helper's.
        read_tail::<BLOCK, i8, ()>(
            &o[whole..n],
            0,
            #[inline(always)]
            |y| {
                map_tail::<BLOCK, i8>(
                    &e[whole..n],
                    &mut output[whole..n],
                    0,
                    #[inline(always)]
                    |x, z| {
                        // SAFETY: the tail helper hands out three 16-byte buffers.
                        unsafe { add_fast_block::<FIX_OTHER, FIX_OUT, CLAMP>(k, x, y, z) }
                    },
                )
            },
        );
    }
}

/// Quantized add; `a`, `b` and `output` have the same length (checked by the
/// caller). With `fast` (always given by `Add::new`), the [`AddFast`] form.
#[inline(never)]
pub(crate) fn add(p: &AddParams, fast: Option<&AddFast>, a: &[i8], b: &[i8], output: &mut [i8]) {
    debug_assert!(a.len() == b.len() && a.len() == output.len());
    if let Some(f) = fast {
        // SAFETY: neon is a compile-time target feature (cfg on this module).
        let k = unsafe {
            AddConsts {
                // Zero points are int8 (checked by `Add::new`).
                exact_zp: vdupq_n_s8(f.exact_zero_point as i8),
                other_zp: vdupq_n_s8(f.other_zero_point as i8),
                other_multiplier: vdupq_n_s32(f.other_multiplier),
                other_neg_shift: vdupq_n_s32(f.other_shift),
                output_multiplier: vdupq_n_s32(p.output_multiplier),
                output_neg_shift: vdupq_n_s32(p.output_shift),
                output_zp: vdupq_n_s16(p.output_offset as i16),
                min: vdupq_n_s8(p.act_min as i8),
                max: vdupq_n_s8(p.act_max as i8),
                two_pow_14: vdupq_n_s16(1 << 14),
            }
        };
        // Hidden from the optimiser: seeing splats, LLVM turns the
        // multiply-accumulate by 2^14 into a shift and an add, and the
        // high-half widening subtractions into `ext` + `ssubl`.
        let k = core::hint::black_box(k);
        let (e, o) = if f.swap { (b, a) } else { (a, b) };
        let clamp = p.act_min > i8::MIN as i32 || p.act_max < i8::MAX as i32;
        match (f.other_fixup, f.output_fixup, clamp) {
            (false, false, false) => add_fast::<false, false, false>(&k, e, o, output),
            (false, false, true) => add_fast::<false, false, true>(&k, e, o, output),
            (false, true, false) => add_fast::<false, true, false>(&k, e, o, output),
            (false, true, true) => add_fast::<false, true, true>(&k, e, o, output),
            (true, false, false) => add_fast::<true, false, false>(&k, e, o, output),
            (true, false, true) => add_fast::<true, false, true>(&k, e, o, output),
            (true, true, false) => add_fast::<true, true, false>(&k, e, o, output),
            (true, true, true) => add_fast::<true, true, true>(&k, e, o, output),
        }
        return;
    }
    let n = a.len().min(b.len()).min(output.len());
    let whole = n - n % BLOCK;
    let mut i = 0;
    while i < whole {
        // SAFETY: i + 16 <= whole <= n, the length of all three slices.
        unsafe {
            add_block(
                p,
                a.as_ptr().add(i),
                b.as_ptr().add(i),
                output.as_mut_ptr().add(i),
            )
        };
        i += BLOCK;
    }
    if whole < n {
        read_tail::<BLOCK, i8, ()>(
            &b[whole..n],
            0,
            #[inline(always)]
            |y| {
                map_tail::<BLOCK, i8>(
                    &a[whole..n],
                    &mut output[whole..n],
                    0,
                    #[inline(always)]
                    |x, z| {
                        // SAFETY: the tail helper hands out three 16-byte buffers.
                        unsafe { add_block(p, x, y, z) }
                    },
                )
            },
        );
    }
}
