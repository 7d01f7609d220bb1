//! NEON quantized add and NoNorm: the same lane-generic arithmetic as the
//! scalar reference (`AddParams::lanes`, `NoNorm::lanes`) on `int32x4_t`, 16
//! elements per block; the remainder goes through stack buffers.

use super::neon::NeonElem;
use super::tail::BLOCK;
use crate::ops::AddParams;
#[cfg(feature = "alloc")]
use crate::ops::{requant::ChannelMultiplier, NoNorm};
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

/// Quantized add; `a`, `b` and `output` have the same length (checked by the caller).
#[inline(never)]
pub(crate) fn add(p: &AddParams, a: &[i8], b: &[i8], output: &mut [i8]) {
    debug_assert!(a.len() == b.len() && a.len() == output.len());
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

/// NoNorm of 16 elements of channels `c..c + 16`.
///
/// # Safety
/// `px` must be valid for reading 16 bytes and `po` for writing 16;
/// `c + 16` must not exceed the padded per-channel arrays (a multiple of 16
/// channels, so any `c` below the channel count that is a multiple of 16).
#[cfg(feature = "alloc")]
#[inline(always)]
unsafe fn no_norm_block(p: &NoNorm, c: usize, px: *const i8, po: *mut i8) {
    let m = &p.multipliers;
    // One bounds check per array and block.
    let params = [
        &m.left_shift[c..c + BLOCK],
        &m.multiplier[c..c + BLOCK],
        &m.neg_right_shift[c..c + BLOCK],
        &p.gamma[c..c + BLOCK],
        &p.beta[c..c + BLOCK],
    ];
    let v = |a: usize, j: usize| -> int32x4_t {
        // SAFETY: every `params` slice holds 16 i32 and j < 4.
        unsafe { vld1q_s32(params[a].as_ptr().add(4 * j)) }
    };
    // SAFETY: the caller's guarantee for px and po.
    unsafe {
        let x = i8::load_block(px);
        let f = |j: usize| {
            let mult = ChannelMultiplier {
                left_shift: v(0, j),
                multiplier: v(1, j),
                neg_right_shift: v(2, j),
            };
            p.lanes::<int32x4_t>(x[j], v(3, j), v(4, j), &mult)
        };
        // Written out: `array::from_fn` is not always inlined.
        let out = [f(0), f(1), f(2), f(3)];
        i8::store_block(po, out);
    }
}

/// NoNorm over rows of `p.channels()` values; lengths were checked by the caller.
#[cfg(feature = "alloc")]
#[inline(never)]
pub(crate) fn no_norm(p: &NoNorm, input: &[i8], output: &mut [i8]) {
    let channels = p.channels();
    let whole = channels - channels % BLOCK;
    for (x, y) in input
        .chunks_exact(channels)
        .zip(output.chunks_exact_mut(channels))
    {
        let mut c = 0;
        while c < whole {
            // SAFETY: c + 16 <= whole <= channels, the length of both rows;
            // c is a multiple of 16.
            unsafe { no_norm_block(p, c, x.as_ptr().add(c), y.as_mut_ptr().add(c)) };
            c += BLOCK;
        }
        if whole < channels {
            let rest = channels - whole;
            let (mut bx, mut by) = ([0i8; BLOCK], [0i8; BLOCK]);
            bx[..rest].copy_from_slice(&x[whole..]);
            // SAFETY: two 16-byte stack buffers; whole is a multiple of 16.
            unsafe { no_norm_block(p, whole, bx.as_ptr(), by.as_mut_ptr()) };
            y[whole..].copy_from_slice(&by[..rest]);
        }
    }
}
