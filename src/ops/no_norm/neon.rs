//! NEON NoNorm: [`NoNormParams::lanes`] in folded form on groups of 16
//! channels (`smull` by gamma, the input zero point folded into the bias,
//! the shared NEON output stage), each group's parameters kept in registers
//! while the rows stream through.

use super::params::NoNormParams;
use crate::fixedpoint::Lane;
use crate::ops::requant::neon::{narrow_store, requantize};
use crate::ops::requant::{ChannelLane, ChannelMultiplier};
use crate::simd::tail::{map_tail, BLOCK};
use core::arch::aarch64::*;

/// The per-channel parameters of one group of 16 channels, loaded once and
/// kept in registers while the rows stream through.
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

impl NoNormGroup {
    /// Channels `c..c + 16` (`c` a multiple of 16 below the channel count:
    /// the per-channel arrays are padded to whole groups).
    #[inline(always)]
    fn load(p: &NoNormParams, c: usize) -> NoNormGroup {
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

/// NoNorm of one group of 16 channels over `rows` rows: `x` at `px + r *
/// stride`, the output at `po + r * stride`.
///
/// # Safety
/// For every `r < rows`, `px + r * stride` must be valid for reading 16 bytes
/// and `po + r * stride` for writing 16.
#[inline(always)]
unsafe fn no_norm_group<const LEFT: bool, const FAST: bool, const CLAMP: bool>(
    p: &NoNormParams,
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
unsafe fn no_norm_group_any(
    p: &NoNormParams,
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
#[inline(never)]
pub(crate) fn no_norm(p: &NoNormParams, input: &[i8], output: &mut [i8]) {
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
            map_tail::<BLOCK, i8>(
                &input[at..at + rest],
                &mut output[at..at + rest],
                0,
                #[inline(always)]
                |x, y| {
                    // SAFETY: the tail helper hands out two 16-byte buffers, one row.
                    unsafe { no_norm_group_any(p, &g, x, y, 1, 0) }
                },
            );
        }
    }
}
