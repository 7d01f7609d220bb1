//! NEON kernels of the binary ops: 16 elements per block, 64 per loop
//! iteration, the remainder through 16-byte stack buffers. An operand is a
//! run as long as the output or one value splatted into a register, so a
//! broadcast operand is never expanded in memory; work that depends only on
//! a splatted operand is loop-invariant and hoisted by the compiler.
//!
//! Each multiplier is applied by one of the [`StageMode`] sequences, chosen
//! at prepare time so that the lanes equal the scalar reference
//! ([`AddParams::element`], [`MulParams::element`]) bit for bit in either
//! rounding mode.

use super::operand::{for_each_row, Operand};
use super::params::{AddFast, AddParams, MulParams, StageMode};
use crate::simd::tail::BLOCK;
use core::arch::aarch64::*;

/// [`StageMode::High`].
const HIGH: u8 = 0;
/// [`StageMode::Round`].
const ROUND: u8 = 1;
/// [`StageMode::RoundFix`].
const ROUND_FIX: u8 = 2;
/// [`StageMode::Floor`].
const FLOOR: u8 = 3;
/// Multiply only: a left shift by the (positive) exponent, then
/// [`StageMode::High`].
const LEFT_HIGH: u8 = 4;

/// Runs `$body` with `$M` a `const` of the mode's number.
macro_rules! with_mode {
    ($mode:expr, $M:ident => $body:expr) => {
        match $mode {
            StageMode::High => {
                const $M: u8 = HIGH;
                $body
            }
            StageMode::Round => {
                const $M: u8 = ROUND;
                $body
            }
            StageMode::RoundFix => {
                const $M: u8 = ROUND_FIX;
                $body
            }
            StageMode::Floor => {
                const $M: u8 = FLOOR;
                $body
            }
        }
    };
}

/// `x` times the multiplier `(m, -neg_r)` in mode `MODE` (`LEFT_HIGH`: `neg_r`
/// holds the left shift).
#[inline(always)]
fn apply<const MODE: u8>(x: int32x4_t, m: int32x4_t, neg_r: int32x4_t) -> int32x4_t {
    // SAFETY: register arithmetic; neon is a compile-time target feature
    // (cfg on this module).
    unsafe {
        match MODE {
            HIGH => vqrdmulhq_s32(x, m),
            ROUND => vrshlq_s32(vqrdmulhq_s32(x, m), neg_r),
            ROUND_FIX => {
                // `srshl` rounds ties up; adding -1 to negative lanes first
                // makes their ties round down (away from zero), as
                // `RoundingDivideByPOT`. `sqrdmulh` by a multiplier of
                // magnitude below 2^31 never gives i32::MIN, so the add
                // does not wrap.
                let y = vqrdmulhq_s32(x, m);
                vrshlq_s32(vsraq_n_s32::<31>(y, y), neg_r)
            }
            FLOOR => vrshlq_s32(vqdmulhq_s32(x, m), neg_r),
            _ => vqrdmulhq_s32(vshlq_s32(x, neg_r), m),
        }
    }
}

/// Adds the output zero point to 16 requantized values and narrows them to
/// int8, clamped to the activation range: saturating `i32 -> i16`, then the
/// zero point (`|zp| <= 128`) with `i16` saturation, then saturating to
/// int8 gives the int8 clamp of the `i32` sum (a value outside `i16` stays
/// outside `i8` on the same side). `CLAMP`: the activation range is
/// narrower than `[-128, 127]`.
#[inline(always)]
pub(super) fn narrow<const CLAMP: bool>(
    v: [int32x4_t; 4],
    zp: int16x8_t,
    min: int8x16_t,
    max: int8x16_t,
) -> int8x16_t {
    // SAFETY: register arithmetic; neon is a compile-time target feature.
    unsafe {
        let lo = vqaddq_s16(vqmovn_high_s32(vqmovn_s32(v[0]), v[1]), zp);
        let hi = vqaddq_s16(vqmovn_high_s32(vqmovn_s32(v[2]), v[3]), zp);
        let o = vqmovn_high_s16(vqmovn_s16(lo), hi);
        if CLAMP {
            vminq_s8(vmaxq_s8(o, min), max)
        } else {
            o
        }
    }
}

/// The block loop over `output`: `block(a, b)` gives 16 outputs from 16
/// elements of each operand (a splatted register for a
/// [`Operand::Scalar`], selected by `A_SPLAT` / `B_SPLAT`). Slice operands
/// are as long as `output` (checked by the caller).
#[inline(always)]
fn drive<const A_SPLAT: bool, const B_SPLAT: bool>(
    a: Operand<'_>,
    b: Operand<'_>,
    output: &mut [i8],
    block: &impl Fn(int8x16_t, int8x16_t) -> int8x16_t,
) {
    let n = output.len();
    // Rows were split into slices by `drive_operands`.
    let (a_slice, a_value) = match a {
        Operand::Slice(s) | Operand::Row(s) => (s, 0),
        Operand::Scalar(v) => (&[][..], v),
    };
    let (b_slice, b_value) = match b {
        Operand::Slice(s) | Operand::Row(s) => (s, 0),
        Operand::Scalar(v) => (&[][..], v),
    };
    debug_assert!(A_SPLAT || a_slice.len() == n);
    debug_assert!(B_SPLAT || b_slice.len() == n);
    if (!A_SPLAT && a_slice.len() < n) || (!B_SPLAT && b_slice.len() < n) {
        return;
    }
    // SAFETY: neon is a compile-time target feature.
    let (a_splat, b_splat) = unsafe { (vdupq_n_s8(a_value), vdupq_n_s8(b_value)) };
    let (pa, pb, po) = (a_slice.as_ptr(), b_slice.as_ptr(), output.as_mut_ptr());
    // Called with `i + 16 <= n` only.
    let load_a = |i: usize| {
        if A_SPLAT {
            a_splat
        } else {
            // SAFETY: `i + 16 <= n`, the slice's length (checked above).
            unsafe { vld1q_s8(pa.add(i)) }
        }
    };
    let load_b = |i: usize| {
        if B_SPLAT {
            b_splat
        } else {
            // SAFETY: `i + 16 <= n`, the slice's length (checked above).
            unsafe { vld1q_s8(pb.add(i)) }
        }
    };
    let whole = n - n % BLOCK;
    let quads = n - n % (4 * BLOCK);
    let mut i = 0;
    // Four blocks per iteration: the loop overhead is shared by 64 elements.
    while i < quads {
        for j in [i, i + BLOCK, i + 2 * BLOCK, i + 3 * BLOCK] {
            let v = block(load_a(j), load_b(j));
            // SAFETY: j + 16 <= quads <= n = output.len().
            unsafe { vst1q_s8(po.add(j), v) };
        }
        i += 4 * BLOCK;
    }
    while i < whole {
        let v = block(load_a(i), load_b(i));
        // SAFETY: i + 16 <= whole <= n = output.len().
        unsafe { vst1q_s8(po.add(i), v) };
        i += BLOCK;
    }
    if whole < n {
        let rem = n - whole;
        let (mut ta, mut tb, mut to) = ([0i8; BLOCK], [0i8; BLOCK], [0i8; BLOCK]);
        if !A_SPLAT {
            ta[..rem].copy_from_slice(&a_slice[whole..n]);
        }
        if !B_SPLAT {
            tb[..rem].copy_from_slice(&b_slice[whole..n]);
        }
        // SAFETY: three 16-byte stack buffers.
        unsafe {
            let va = if A_SPLAT {
                a_splat
            } else {
                vld1q_s8(ta.as_ptr())
            };
            let vb = if B_SPLAT {
                b_splat
            } else {
                vld1q_s8(tb.as_ptr())
            };
            vst1q_s8(to.as_mut_ptr(), block(va, vb));
        }
        output[whole..n].copy_from_slice(&to[..rem]);
    }
}

/// Runs `drive` with the splat flags of the operands, row by row for a
/// [`Operand::Row`].
#[inline(always)]
pub(super) fn drive_operands(
    a: Operand<'_>,
    b: Operand<'_>,
    output: &mut [i8],
    block: impl Fn(int8x16_t, int8x16_t) -> int8x16_t,
) {
    // Rows: the constants stay in registers across them, each row one
    // pass of the block loop.
    for_each_row(
        a,
        b,
        output,
        #[inline(always)]
        |a, b, output| match (a, b) {
            (Operand::Scalar(x), Operand::Scalar(y)) => {
                // One value: the block on the two splats, its first lane.
                // SAFETY: register arithmetic; neon is a compile-time feature.
                let v = unsafe { vgetq_lane_s8::<0>(block(vdupq_n_s8(x), vdupq_n_s8(y))) };
                output.fill(v);
            }
            (Operand::Scalar(_), _) => drive::<true, false>(a, b, output, &block),
            (_, Operand::Scalar(_)) => drive::<false, true>(a, b, output, &block),
            _ => drive::<false, false>(a, b, output, &block),
        },
    )
}

/// [`AddFast`] and the output stage as vectors.
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
    /// `2^14`, or `-2^14` when the exact side is subtracted, in every lane.
    exact_factor: int16x8_t,
}

/// 16 elements of the add in the form of [`AddFast`]: `e` the exact side,
/// `o` the other one.
#[inline(always)]
fn add_block<const OTHER: u8, const OUT: u8, const NEG_OTHER: bool, const CLAMP: bool>(
    k: &AddConsts,
    e: int8x16_t,
    o: int8x16_t,
) -> int8x16_t {
    // SAFETY: register arithmetic; neon is a compile-time target feature.
    unsafe {
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
        let other = |j: usize| {
            let o = apply::<OTHER>(x[j], k.other_multiplier, k.other_neg_shift);
            // SUB's input 2: negated after its rounding, as the reference
            // subtracts the rounded value.
            if NEG_OTHER {
                vnegq_s32(o)
            } else {
                o
            }
        };
        // The exact side: sum = other +- ((x - zp) * 32) * 2^14, the product
        // exact (|(x - zp) * 32| <= 8160 fits i16) and the sum the
        // reference's (both terms are below 2^27 in magnitude).
        let e_lo = vshlq_n_s16::<5>(vsubl_s8(vget_low_s8(e), vget_low_s8(k.exact_zp)));
        let e_hi = vshlq_n_s16::<5>(vsubl_high_s8(e, k.exact_zp));
        let c = k.exact_factor;
        // By element: with a vector operand LLVM extracts high halves first.
        let sum = [
            vmlal_laneq_s16::<0>(other(0), vget_low_s16(e_lo), c),
            vmlal_high_laneq_s16::<0>(other(1), e_lo, c),
            vmlal_laneq_s16::<0>(other(2), vget_low_s16(e_hi), c),
            vmlal_high_laneq_s16::<0>(other(3), e_hi, c),
        ];
        let q = |j: usize| apply::<OUT>(sum[j], k.output_multiplier, k.output_neg_shift);
        narrow::<CLAMP>([q(0), q(1), q(2), q(3)], k.output_zp, k.min, k.max)
    }
}

#[inline(never)]
fn add_run<const OTHER: u8, const OUT: u8, const NEG_OTHER: bool, const CLAMP: bool>(
    k: &AddConsts,
    e: Operand<'_>,
    o: Operand<'_>,
    output: &mut [i8],
) {
    drive_operands(e, o, output, |e, o| {
        add_block::<OTHER, OUT, NEG_OTHER, CLAMP>(k, e, o)
    });
}

/// Quantized add or subtract in the form of `fast`; slice operands as long
/// as `output` (checked by the caller).
pub(crate) fn add(
    p: &AddParams,
    fast: &AddFast,
    a: Operand<'_>,
    b: Operand<'_>,
    output: &mut [i8],
) {
    // SAFETY: neon is a compile-time target feature.
    let k = unsafe {
        AddConsts {
            // Zero points are int8 (checked by `new`).
            exact_zp: vdupq_n_s8(fast.exact_zero_point as i8),
            other_zp: vdupq_n_s8(fast.other_zero_point as i8),
            other_multiplier: vdupq_n_s32(fast.other_multiplier),
            other_neg_shift: vdupq_n_s32(fast.other_shift),
            output_multiplier: vdupq_n_s32(p.output_multiplier),
            output_neg_shift: vdupq_n_s32(p.output_shift),
            output_zp: vdupq_n_s16(p.output_offset as i16),
            min: vdupq_n_s8(p.act_min as i8),
            max: vdupq_n_s8(p.act_max as i8),
            exact_factor: vdupq_n_s16(if fast.exact_negated {
                -(1 << 14)
            } else {
                1 << 14
            }),
        }
    };
    // Hidden from the optimiser: seeing splats, LLVM turns the
    // multiply-accumulate by 2^14 into a shift and an add, and the
    // high-half widening subtractions into `ext` + `ssubl`.
    let k = core::hint::black_box(k);
    let (e, o) = if fast.swap { (b, a) } else { (a, b) };
    let clamp = p.act_min > i8::MIN as i32 || p.act_max < i8::MAX as i32;
    with_mode!(fast.other_mode, OTHER => with_mode!(fast.output_mode, OUT => {
        match (fast.other_negated, clamp) {
            (false, false) => add_run::<OTHER, OUT, false, false>(&k, e, o, output),
            (false, true) => add_run::<OTHER, OUT, false, true>(&k, e, o, output),
            (true, false) => add_run::<OTHER, OUT, true, false>(&k, e, o, output),
            (true, true) => add_run::<OTHER, OUT, true, true>(&k, e, o, output),
        }
    }))
}

/// The multiply's constants as vectors.
#[derive(Clone, Copy)]
struct MulConsts {
    zp1: int8x16_t,
    zp2: int8x16_t,
    multiplier: int32x4_t,
    /// `-r` for a right shift, the left shift for `LEFT_HIGH`.
    shift: int32x4_t,
    output_zp: int16x8_t,
    min: int8x16_t,
    max: int8x16_t,
}

/// 16 elements of `a * b`.
#[inline(always)]
fn mul_block<const MODE: u8, const CLAMP: bool>(
    k: &MulConsts,
    a: int8x16_t,
    b: int8x16_t,
) -> int8x16_t {
    // SAFETY: register arithmetic; neon is a compile-time target feature.
    unsafe {
        // Offset inputs in i16 (|.| <= 255), their products in i32 exactly
        // (|.| <= 65,025).
        let a_lo = vsubl_s8(vget_low_s8(a), vget_low_s8(k.zp1));
        let a_hi = vsubl_high_s8(a, k.zp1);
        let b_lo = vsubl_s8(vget_low_s8(b), vget_low_s8(k.zp2));
        let b_hi = vsubl_high_s8(b, k.zp2);
        let p = [
            vmull_s16(vget_low_s16(a_lo), vget_low_s16(b_lo)),
            vmull_high_s16(a_lo, b_lo),
            vmull_s16(vget_low_s16(a_hi), vget_low_s16(b_hi)),
            vmull_high_s16(a_hi, b_hi),
        ];
        let q = |j: usize| apply::<MODE>(p[j], k.multiplier, k.shift);
        narrow::<CLAMP>([q(0), q(1), q(2), q(3)], k.output_zp, k.min, k.max)
    }
}

#[inline(never)]
fn mul_run<const MODE: u8, const CLAMP: bool>(
    k: &MulConsts,
    a: Operand<'_>,
    b: Operand<'_>,
    output: &mut [i8],
) {
    drive_operands(a, b, output, |a, b| mul_block::<MODE, CLAMP>(k, a, b));
}

/// Quantized multiply with the output stage in `mode`; slice operands as
/// long as `output` (checked by the caller).
pub(crate) fn mul(
    p: &MulParams,
    mode: StageMode,
    a: Operand<'_>,
    b: Operand<'_>,
    output: &mut [i8],
) {
    let left = p.output_shift > 0;
    // SAFETY: neon is a compile-time target feature.
    let k = unsafe {
        MulConsts {
            // Zero points are int8 (checked by `new`).
            zp1: vdupq_n_s8((-p.input1_offset) as i8),
            zp2: vdupq_n_s8((-p.input2_offset) as i8),
            multiplier: vdupq_n_s32(p.output_multiplier),
            shift: vdupq_n_s32(p.output_shift),
            output_zp: vdupq_n_s16(p.output_offset as i16),
            min: vdupq_n_s8(p.act_min as i8),
            max: vdupq_n_s8(p.act_max as i8),
        }
    };
    let k = core::hint::black_box(k);
    let clamp = p.act_min > i8::MIN as i32 || p.act_max < i8::MAX as i32;
    if left {
        if clamp {
            mul_run::<LEFT_HIGH, true>(&k, a, b, output)
        } else {
            mul_run::<LEFT_HIGH, false>(&k, a, b, output)
        }
        return;
    }
    with_mode!(mode, MODE => {
        if clamp {
            mul_run::<MODE, true>(&k, a, b, output)
        } else {
            mul_run::<MODE, false>(&k, a, b, output)
        }
    })
}
