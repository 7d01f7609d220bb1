//! Block plumbing of the 8-bit NEON log-softmax kernels (`neon.rs` for
//! `Method::FixedPoint`, `lut_neon.rs` for `Method::Lut`): 64-byte loads,
//! the lane masks of a row's partial block, the chunk lookups, the row's
//! maximum and minimum, and the window a short row is read and written
//! through.

use crate::simd::tail::read_tail;
use core::arch::aarch64::*;

/// Bytes per iteration.
pub(super) const STEP: usize = 64;

/// Four registers of bytes.
pub(super) type Block = [uint8x16_t; 4];

/// 64 zero bytes then 64 `0xff`: the 64 bytes at `64 - m` keep all lanes
/// from `m` on (a long row's last block, whose first `m` lanes were summed).
pub(super) static KEEP_FROM: [u8; 2 * STEP] = {
    let mut a = [0u8; 2 * STEP];
    let mut i = STEP;
    while i < 2 * STEP {
        a[i] = 0xff;
        i += 1;
    }
    a
};
/// 64 `0xff` then 64 zero bytes: the 64 bytes at `64 - n` keep the first
/// `n` lanes (a short row in a padded block).
pub(super) static KEEP_TO: [u8; 2 * STEP] = {
    let mut a = [0u8; 2 * STEP];
    let mut i = 0;
    while i < STEP {
        a[i] = 0xff;
        i += 1;
    }
    a
};

/// Loads 64 bytes.
///
/// # Safety
/// `ptr` must be valid for reading 64 bytes.
#[inline(always)]
pub(super) unsafe fn load(ptr: *const u8) -> Block {
    // SAFETY: as the caller guarantees.
    let b = unsafe { vld1q_u8_x4(ptr) };
    [b.0, b.1, b.2, b.3]
}

/// Maximum and minimum bytes of a non-empty row in the type's order
/// (signed for int8), as raw bytes, of the row's first `len` bytes: `row`
/// holds exactly them, or is a 64-byte window (`len < 64`) whose lanes past
/// `len` are replaced by the first byte. Rows of at least 64 bytes end with
/// an overlapping block; shorter ones without a window are padded with
/// their first byte.
#[inline(always)]
pub(super) fn row_max_min<const SIGNED: bool>(row: &[u8], len: usize) -> (u8, u8) {
    // SAFETY: register arithmetic; NEON is a compile-time target feature.
    let (mut hi, mut lo) = unsafe { (vdupq_n_u8(row[0]), vdupq_n_u8(row[0])) };
    // SAFETY: as above.
    let mut fold = |b: Block| unsafe {
        if SIGNED {
            let s = |v| vreinterpretq_s8_u8(v);
            let u = |v| vreinterpretq_u8_s8(v);
            let m = vmaxq_s8(vmaxq_s8(s(b[0]), s(b[1])), vmaxq_s8(s(b[2]), s(b[3])));
            let n = vminq_s8(vminq_s8(s(b[0]), s(b[1])), vminq_s8(s(b[2]), s(b[3])));
            hi = u(vmaxq_s8(s(hi), m));
            lo = u(vminq_s8(s(lo), n));
        } else {
            hi = vmaxq_u8(hi, vmaxq_u8(vmaxq_u8(b[0], b[1]), vmaxq_u8(b[2], b[3])));
            lo = vminq_u8(lo, vminq_u8(vminq_u8(b[0], b[1]), vminq_u8(b[2], b[3])));
        }
    };
    if len < STEP && row.len() >= STEP {
        // SAFETY: the window holds STEP bytes; KEEP_TO holds 128 bytes and
        // 64 - len + 64 <= 128.
        unsafe {
            let keep = load(KEEP_TO.as_ptr().add(STEP - len));
            let first = vdupq_n_u8(row[0]);
            let b = load(row.as_ptr());
            fold(core::array::from_fn(|j| vbslq_u8(keep[j], b[j], first)));
        }
    } else if len >= STEP {
        let row = &row[..len];
        let mut src = row.as_ptr();
        for _ in 0..row.len() / STEP {
            // SAFETY: src points at one of the row's whole 64-byte blocks.
            unsafe {
                fold(load(src));
                src = src.add(STEP);
            }
        }
        if !row.len().is_multiple_of(STEP) {
            // SAFETY: row.len() >= STEP, so the last STEP bytes are in bounds.
            fold(unsafe { load(row.as_ptr().add(row.len() - STEP)) });
        }
    } else {
        read_tail::<STEP, u8, ()>(&row[..len], row[0], |buf| {
            // SAFETY: read_tail hands out STEP readable bytes.
            fold(unsafe { load(buf) })
        });
    }
    // SAFETY: register arithmetic.
    unsafe {
        if SIGNED {
            (
                vmaxvq_s8(vreinterpretq_s8_u8(hi)) as u8,
                vminvq_s8(vreinterpretq_s8_u8(lo)) as u8,
            )
        } else {
            (vmaxvq_u8(hi), vminvq_u8(lo))
        }
    }
}

/// Bytes a row at `at` is read and written through: a 64-byte window
/// where the row is shorter and the window lies in both buffers (`n`
/// bytes), so that no copy pads it; its bytes past the row are later rows'
/// outputs, rewritten when those rows are done (rows go in order). Else
/// the row itself.
#[inline(always)]
pub(super) fn span(at: usize, row_len: usize, n: usize) -> usize {
    if row_len < STEP && at + STEP <= n {
        STEP
    } else {
        row_len
    }
}
