//! NEON quantized add and NoNorm: the same lane-generic arithmetic as the
//! scalar reference (`AddParams::lanes`, `NoNorm::lanes`) on `int32x4_t`, 16
//! elements per block; the remainder goes through stack buffers.

use super::neon::NeonElem;
use super::tail::BLOCK;
use crate::ops::AddParams;
#[cfg(feature = "alloc")]
use crate::ops::{requant::ChannelMultiplier, NoNorm};
use core::arch::aarch64::*;

/// Quantized add; `a`, `b` and `output` have the same length (checked by the caller).
pub(crate) fn add(p: &AddParams, a: &[i8], b: &[i8], output: &mut [i8]) {
    debug_assert!(a.len() == b.len() && a.len() == output.len());
    let n = a.len().min(b.len()).min(output.len());
    let whole = n - n % BLOCK;
    let block = |pa: *const i8, pb: *const i8, po: *mut i8| {
        // SAFETY: the callers below pass pointers to 16 readable (pa, pb) and
        // 16 writable (po) bytes.
        unsafe {
            let (x, y) = (i8::load_block(pa), i8::load_block(pb));
            let out = core::array::from_fn(|j| p.lanes::<int32x4_t>(x[j], y[j]));
            // Results are within [act_min, act_max]: the narrows do not saturate.
            i8::store_block(po, out);
        }
    };
    let mut i = 0;
    while i < whole {
        // SAFETY: i + 16 <= whole <= n, the length of all three slices.
        unsafe {
            block(
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
        block(x.as_ptr(), y.as_ptr(), z.as_mut_ptr());
        output[whole..n].copy_from_slice(&z[..rest]);
    }
}

/// NoNorm over rows of `p.channels()` values; lengths were checked by the caller.
#[cfg(feature = "alloc")]
pub(crate) fn no_norm(p: &NoNorm, input: &[i8], output: &mut [i8]) {
    let channels = p.channels();
    let whole = channels - channels % BLOCK;
    // Per-channel parameters are padded to a multiple of 16 channels.
    let block = |c: usize, px: *const i8, po: *mut i8| {
        let v = |arr: &[i32], j: usize| -> int32x4_t {
            let s = &arr[c + 4 * j..c + 4 * j + 4];
            // SAFETY: `s` holds 4 i32 (sliced just above).
            unsafe { vld1q_s32(s.as_ptr()) }
        };
        let m = &p.multipliers;
        // SAFETY: the callers below pass pointers to 16 readable (px) and 16
        // writable (po) bytes.
        unsafe {
            let x = i8::load_block(px);
            let out = core::array::from_fn(|j| {
                let mult = ChannelMultiplier {
                    left_shift: v(&m.left_shift, j),
                    multiplier: v(&m.multiplier, j),
                    neg_right_shift: v(&m.neg_right_shift, j),
                };
                p.lanes::<int32x4_t>(x[j], v(&p.gamma, j), v(&p.beta, j), &mult)
            });
            i8::store_block(po, out);
        }
    };
    for (x, y) in input
        .chunks_exact(channels)
        .zip(output.chunks_exact_mut(channels))
    {
        let mut c = 0;
        while c < whole {
            // SAFETY: c + 16 <= whole <= channels, the length of both rows.
            unsafe { block(c, x.as_ptr().add(c), y.as_mut_ptr().add(c)) };
            c += BLOCK;
        }
        if whole < channels {
            let rest = channels - whole;
            let (mut bx, mut by) = ([0i8; BLOCK], [0i8; BLOCK]);
            bx[..rest].copy_from_slice(&x[whole..]);
            block(whole, bx.as_ptr(), by.as_mut_ptr());
            y[whole..].copy_from_slice(&by[..rest]);
        }
    }
}
