//! NEON quantized add and NoNorm: the same lane-generic arithmetic as the
//! scalar reference (`AddParams::lanes`, `NoNorm::lanes`) on `int32x4_t`, 16
//! elements per block; the remainder goes through stack buffers.

use super::neon::NeonElem;
#[cfg(feature = "alloc")]
use super::neon_gemm::requantize;
use super::tail::BLOCK;
#[cfg(feature = "alloc")]
use crate::fixedpoint::Lane;
use crate::ops::{elementwise::AddFast, AddParams};
#[cfg(feature = "alloc")]
use crate::ops::{
    requant::{ChannelLane, ChannelMultiplier},
    NoNorm,
};
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
        let rest = n - whole;
        let (mut x, mut y, mut z) = ([0i8; BLOCK], [0i8; BLOCK], [0i8; BLOCK]);
        x[..rest].copy_from_slice(&e[whole..n]);
        y[..rest].copy_from_slice(&o[whole..n]);
        // SAFETY: three 16-byte stack buffers.
        unsafe {
            add_fast_block::<FIX_OTHER, FIX_OUT, CLAMP>(k, x.as_ptr(), y.as_ptr(), z.as_mut_ptr())
        };
        output[whole..n].copy_from_slice(&z[..rest]);
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
        let rest = n - whole;
        let (mut x, mut y, mut z) = ([0i8; BLOCK], [0i8; BLOCK], [0i8; BLOCK]);
        x[..rest].copy_from_slice(&a[whole..n]);
        y[..rest].copy_from_slice(&b[whole..n]);
        // SAFETY: three 16-byte stack buffers.
        unsafe { add_block(p, x.as_ptr(), y.as_ptr(), z.as_mut_ptr()) };
        output[whole..n].copy_from_slice(&z[..rest]);
    }
}

/// The per-channel parameters of one group of 16 channels, loaded once and
/// kept in registers while the rows stream through.
#[cfg(feature = "alloc")]
#[derive(Clone, Copy)]
struct NoNormGroup {
    /// `gamma_q` of the 16 channels.
    gamma: int8x16_t,
    /// `beta_q - zp_x * gamma_q` (wrapping): the input zero point folded into
    /// the bias, so that the product needs no widened `x - zp_x`.
    beta: [int32x4_t; 4],
    mult: [ChannelMultiplier<int32x4_t>; 4],
    /// Some channel of the group shifts left (an effective scale >= 1/2).
    any_left_shift: bool,
    /// Every channel of the group shifts right by at least 1.
    all_right_shift: bool,
}

#[cfg(feature = "alloc")]
impl NoNormGroup {
    /// Channels `c..c + 16` (`c` a multiple of 16 below the channel count:
    /// the per-channel arrays are padded to whole groups).
    #[inline(always)]
    fn load(p: &NoNorm, c: usize) -> NoNormGroup {
        let m = &p.multipliers;
        let v = |a: &[i32], j: usize| -> int32x4_t {
            let s = &a[c + 4 * j..c + 4 * j + 4];
            // SAFETY: `s` holds 4 i32 (sliced just above).
            unsafe { vld1q_s32(s.as_ptr()) }
        };
        let mult = |j| ChannelMultiplier {
            left_shift: v(&m.left_shift, j),
            multiplier: v(&m.multiplier, j),
            neg_right_shift: v(&m.neg_right_shift, j),
        };
        let g = |j| v(&p.gamma, j);
        // gamma_q is an i8 widened to i32: the narrows are exact.
        // SAFETY: neon is a compile-time target feature (cfg on this module).
        let gamma = unsafe {
            let lo = vmovn_high_s32(vmovn_s32(g(0)), g(1));
            let hi = vmovn_high_s32(vmovn_s32(g(2)), g(3));
            vmovn_high_s16(vmovn_s16(lo), hi)
        };
        // (x - zp) * gamma + beta == x * gamma + (beta - zp * gamma) modulo
        // 2^32, and the reference's products and sum wrap modulo 2^32.
        let zp = int32x4_t::splat(p.input_zero_point);
        let b = |j| v(&p.beta, j).sub(zp.wrapping_mul(g(j)));
        let channels = c..c + BLOCK;
        NoNormGroup {
            gamma,
            beta: [b(0), b(1), b(2), b(3)],
            mult: [mult(0), mult(1), mult(2), mult(3)],
            any_left_shift: m.left_shift[channels.clone()].iter().any(|&s| s != 0),
            all_right_shift: m.neg_right_shift[channels].iter().all(|&s| s < 0),
        }
    }
}

/// The output stage of 16 requantized values: add the output zero point and
/// clamp, as `output_stage`, with the clamp to `[-128, 127]` done by the
/// saturating narrows. Saturating `i32 -> i16` first and then adding the zero
/// point (`|zp| <= 128`) with `i16` saturation gives the same int8 as the
/// `i32` saturating add: a value outside `i16` stays outside `i8` on the same
/// side after adding the zero point. `CLAMP`: the activation range is
/// narrower than `[-128, 127]`.
#[inline(always)]
fn narrow_store<const CLAMP: bool>(
    v: [int32x4_t; 4],
    zp: int16x8_t,
    min: int8x16_t,
    max: int8x16_t,
    po: *mut i8,
) {
    // SAFETY: neon is a compile-time target feature (cfg on this module); the
    // caller guarantees 16 writable bytes at `po`.
    unsafe {
        let lo = vqaddq_s16(vqmovn_high_s32(vqmovn_s32(v[0]), v[1]), zp);
        let hi = vqaddq_s16(vqmovn_high_s32(vqmovn_s32(v[2]), v[3]), zp);
        let mut o = vqmovn_high_s16(vqmovn_s16(lo), hi);
        if CLAMP {
            o = vminq_s8(vmaxq_s8(o, min), max);
        }
        vst1q_s8(po, o);
    }
}

/// NoNorm of one group of 16 channels over `rows` rows: `x` at `px + r *
/// stride`, the output at `po + r * stride`.
///
/// # Safety
/// For every `r < rows`, `px + r * stride` must be valid for reading 16 bytes
/// and `po + r * stride` for writing 16.
#[cfg(feature = "alloc")]
#[inline(always)]
unsafe fn no_norm_group<const LEFT: bool, const FAST: bool, const CLAMP: bool>(
    p: &NoNorm,
    g: &NoNormGroup,
    px: *const i8,
    po: *mut i8,
    rows: usize,
    stride: usize,
) {
    // SAFETY: neon is a compile-time target feature (cfg on this module).
    let (zp, min, max) = unsafe {
        (
            vdupq_n_s16(p.output_zero_point as i16),
            vdupq_n_s8(p.act_min as i8),
            vdupq_n_s8(p.act_max as i8),
        )
    };
    for r in 0..rows {
        // SAFETY: the caller's guarantee for row r.
        unsafe {
            let x = vld1q_s8(px.add(r * stride));
            // |x * gamma| <= 128 * 128: exact in i16.
            let lo = vmull_s8(vget_low_s8(x), vget_low_s8(g.gamma));
            let hi = vmull_high_s8(x, g.gamma);
            let acc = [
                vaddw_s16(g.beta[0], vget_low_s16(lo)),
                vaddw_high_s16(g.beta[1], lo),
                vaddw_s16(g.beta[2], vget_low_s16(hi)),
                vaddw_high_s16(g.beta[3], hi),
            ];
            let q = |j: usize| requantize::<LEFT, FAST>(acc[j], &g.mult[j]);
            narrow_store::<CLAMP>([q(0), q(1), q(2), q(3)], zp, min, max, po.add(r * stride));
        }
    }
}

/// [`no_norm_group`] with the specialisation chosen by the group's shifts and
/// the activation range.
///
/// # Safety
/// As [`no_norm_group`].
#[cfg(feature = "alloc")]
unsafe fn no_norm_group_any(
    p: &NoNorm,
    g: &NoNormGroup,
    px: *const i8,
    po: *mut i8,
    rows: usize,
    stride: usize,
) {
    let clamp = p.act_min > i8::MIN as i32 || p.act_max < i8::MAX as i32;
    // SAFETY: forwarded from the caller.
    unsafe {
        match (g.any_left_shift, g.all_right_shift, clamp) {
            (false, true, false) => no_norm_group::<false, true, false>(p, g, px, po, rows, stride),
            (false, true, true) => no_norm_group::<false, true, true>(p, g, px, po, rows, stride),
            (false, false, false) => {
                no_norm_group::<false, false, false>(p, g, px, po, rows, stride)
            }
            (false, false, true) => no_norm_group::<false, false, true>(p, g, px, po, rows, stride),
            (true, true, false) => no_norm_group::<true, true, false>(p, g, px, po, rows, stride),
            (true, true, true) => no_norm_group::<true, true, true>(p, g, px, po, rows, stride),
            (true, false, false) => no_norm_group::<true, false, false>(p, g, px, po, rows, stride),
            (true, false, true) => no_norm_group::<true, false, true>(p, g, px, po, rows, stride),
        }
    }
}

/// NoNorm over rows of `p.channels()` values; lengths were checked by the
/// caller. Channel groups outside, rows inside: a group's parameters stay in
/// registers for the whole column.
#[cfg(feature = "alloc")]
#[inline(never)]
pub(crate) fn no_norm(p: &NoNorm, input: &[i8], output: &mut [i8]) {
    let channels = p.channels();
    let n = input.len().min(output.len());
    let rows = n / channels;
    let whole = channels - channels % BLOCK;
    let mut c = 0;
    while c < whole {
        let g = NoNormGroup::load(p, c);
        // SAFETY: row r reads and writes bytes r * channels + c ..
        // r * channels + c + 16 <= (rows - 1) * channels + channels <= n, the
        // length of both slices.
        unsafe {
            no_norm_group_any(
                p,
                &g,
                input.as_ptr().add(c),
                output.as_mut_ptr().add(c),
                rows,
                channels,
            )
        };
        c += BLOCK;
    }
    if whole < channels {
        // The last, partial group: row by row through 16-byte buffers (the
        // padded channels have gamma, beta and multiplier 0).
        let g = NoNormGroup::load(p, whole);
        let rest = channels - whole;
        for r in 0..rows {
            let at = r * channels + whole;
            let (mut bx, mut by) = ([0i8; BLOCK], [0i8; BLOCK]);
            bx[..rest].copy_from_slice(&input[at..at + rest]);
            // SAFETY: two 16-byte stack buffers, one row.
            unsafe { no_norm_group_any(p, &g, bx.as_ptr(), by.as_mut_ptr(), 1, 0) };
            output[at..at + rest].copy_from_slice(&by[..rest]);
        }
    }
}
