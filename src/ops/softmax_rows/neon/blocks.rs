//! 64-byte block walking for the 8-bit NEON softmax kernels (and the
//! thresholded softmax's passes): whole blocks by
//! pointer (the tail through [`read_tail`]), the post-incremented load, the
//! lane masks of a row's last block, and the row maximum (and minimum).

use crate::simd::tail::read_tail;
use core::arch::aarch64::*;

/// Bytes per loop iteration.
pub(crate) const STEP: usize = 64;
/// Iterations after which the u16 sums are widened: each lane gains at most
/// 2 * 255 per `uadalp`, two `uadalp`s per iteration, and 64 * 1020 < 65536.
pub(crate) const FLUSH_EVERY: usize = 64;
/// `t[0]`: exp(0) in units of 2^-16. Lanes masked off in a full-table block
/// read it (d = 0), and the row's sum drops it again.
pub(crate) const T0: u64 = 65535;

/// Four registers of bytes.
pub(crate) type Block = uint8x16x4_t;

/// `ptr`, hidden from the optimizer, so that loads through it stay where
/// they are written: LLVM would otherwise hoist loop-invariant table loads
/// out of the loops into more registers than there are, and spill them.
#[inline(always)]
pub(crate) fn opaque<T>(ptr: *const T) -> *const T {
    // As an address: the asm does not dereference it.
    let mut addr = ptr as usize;
    // SAFETY: an empty asm that claims to rewrite one general register; it
    // touches no memory, stack or flags.
    unsafe {
        core::arch::asm!("/* {0} */", inout(reg) addr, options(nomem, nostack, preserves_flags));
    }
    addr as *const T
}

/// The row's bytes in 64-byte blocks: whole blocks straight from the slice,
/// then the tail copied into a buffer filled with `pad` first.
#[inline(always)]
pub(crate) fn for_each_block(row: &[u8], pad: u8, mut f: impl FnMut(Block)) {
    let whole = row.len() - row.len() % STEP;
    for_each_whole_block(&row[..whole], &mut f);
    if whole < row.len() {
        read_tail::<STEP, u8, ()>(
            &row[whole..],
            pad,
            #[inline(always)]
            |buf| {
                // SAFETY: read_tail hands out STEP readable bytes.
                f(unsafe { vld1q_u8_x4(buf) })
            },
        );
    }
}

/// The whole 64-byte blocks of a row (the tail is the caller's).
#[inline(always)]
pub(crate) fn for_each_whole_block(row: &[u8], mut f: impl FnMut(Block)) {
    let mut src = row.as_ptr();
    let mut blocks = row.len() / STEP;
    while blocks > 0 {
        // SAFETY: src points `(row.len() / STEP - blocks) * STEP` bytes into
        // row, so the next STEP bytes are in bounds.
        unsafe {
            f(vld1q_u8_x4(src));
            src = src.add(STEP);
        }
        blocks -= 1;
    }
}

/// Maximum byte of a non-empty row, signed (int8) or unsigned (uint8), as
/// the raw byte. Rows of at least 64 bytes end with an overlapping block (a
/// repeated byte cannot change the maximum); shorter ones are padded with
/// their first byte.
#[inline(always)]
pub(crate) fn row_max<const SIGNED: bool>(row: &[u8]) -> u8 {
    // SAFETY: register arithmetic; NEON is a compile-time target feature
    // (the cfg on this module).
    let mut acc = unsafe { vdupq_n_u8(if SIGNED { 0x80 } else { 0 }) };
    // SAFETY: as above.
    let mut fold = |b: Block| unsafe {
        if SIGNED {
            let s = |v| vreinterpretq_s8_u8(v);
            let m01 = vmaxq_s8(s(b.0), s(b.1));
            let m23 = vmaxq_s8(s(b.2), s(b.3));
            acc = vreinterpretq_u8_s8(vmaxq_s8(s(acc), vmaxq_s8(m01, m23)));
        } else {
            acc = vmaxq_u8(acc, vmaxq_u8(vmaxq_u8(b.0, b.1), vmaxq_u8(b.2, b.3)));
        }
    };
    if row.len() >= STEP {
        for_each_whole_block(row, &mut fold);
        if !row.len().is_multiple_of(STEP) {
            // SAFETY: row.len() >= STEP, so the last STEP bytes are in bounds.
            fold(unsafe { vld1q_u8_x4(row.as_ptr().add(row.len() - STEP)) });
        }
    } else {
        for_each_block(row, row[0], fold);
    }
    // SAFETY: register arithmetic.
    unsafe {
        if SIGNED {
            vmaxvq_s8(vreinterpretq_s8_u8(acc)) as u8
        } else {
            vmaxvq_u8(acc)
        }
    }
}

/// Loads the 64-byte block at `*src` and advances `src` past it: one
/// post-incremented four-register `ld1` (LLVM emits two `ldp` and an `add`
/// for the intrinsic and the pointer step).
///
/// # Safety
/// `*src` must be valid for reading 64 bytes.
#[inline(always)]
pub(crate) unsafe fn load_post(src: &mut *const u8) -> Block {
    let (b0, b1, b2, b3);
    // SAFETY: the caller guarantees 64 readable bytes at *src; the asm reads
    // only them and writes its outputs and the pointer.
    unsafe {
        core::arch::asm!(
            "ld1 {{v0.16b-v3.16b}}, [{src}], #64",
            src = inout(reg) *src,
            out("v0") b0, out("v1") b1, out("v2") b2, out("v3") b3,
            options(readonly, nostack, preserves_flags),
        );
    }
    uint8x16x4_t(b0, b1, b2, b3)
}

/// Lane masks for a row's last block, computed once per call.
pub(crate) struct Masks {
    /// 0x80 in the masked lanes (split tables: `d | 0x80` adds 0).
    pub(crate) skip: [u8; STEP],
    /// 0 in the masked lanes, 0xff elsewhere (full tables: `d & 0` reads `t[0]`).
    pub(crate) keep: [u8; STEP],
    /// Number of masked lanes.
    pub(crate) masked: usize,
}

impl Masks {
    /// For rows of `row_len` bytes: rows of at least 64 end with a block
    /// whose first `64 - row_len % 64` lanes (if not all) overlap the block
    /// before; shorter rows are read as one 64-byte window whose lanes from
    /// `row_len` on belong to the next rows.
    pub(crate) fn new(row_len: usize) -> Self {
        let mut skip = [0u8; STEP];
        let mut keep = [0xffu8; STEP];
        let masked = if row_len >= STEP {
            let overlap = (STEP - row_len % STEP) % STEP;
            skip[..overlap].fill(0x80);
            keep[..overlap].fill(0);
            overlap
        } else {
            skip[row_len..].fill(0x80);
            keep[row_len..].fill(0);
            STEP - row_len
        };
        Masks { skip, keep, masked }
    }
}

/// Maximum and minimum bytes of a row of at least 64 bytes, signed (int8)
/// or unsigned (uint8), as raw bytes (an overlapping last block, as in
/// `row_max`).
#[inline(always)]
pub(crate) fn row_max_min<const SIGNED: bool>(row: &[u8]) -> (u8, u8) {
    debug_assert!(row.len() >= STEP);
    // SAFETY: the caller passes rows of at least STEP bytes (full_rows is
    // only called for them), so the first 16 are in bounds.
    let first = unsafe { vld1q_u8(row.as_ptr()) };
    let (mut hi, mut lo) = (first, first);
    // SAFETY: register arithmetic; NEON is a compile-time target feature.
    let mut fold = |b: Block| unsafe {
        if SIGNED {
            let s = |v| vreinterpretq_s8_u8(v);
            let u = |v| vreinterpretq_u8_s8(v);
            let m = vmaxq_s8(vmaxq_s8(s(b.0), s(b.1)), vmaxq_s8(s(b.2), s(b.3)));
            let n = vminq_s8(vminq_s8(s(b.0), s(b.1)), vminq_s8(s(b.2), s(b.3)));
            hi = u(vmaxq_s8(s(hi), m));
            lo = u(vminq_s8(s(lo), n));
        } else {
            hi = vmaxq_u8(hi, vmaxq_u8(vmaxq_u8(b.0, b.1), vmaxq_u8(b.2, b.3)));
            lo = vminq_u8(lo, vminq_u8(vminq_u8(b.0, b.1), vminq_u8(b.2, b.3)));
        }
    };
    let mut src = row.as_ptr();
    for _ in 0..row.len() / STEP {
        // SAFETY: src points at one of the row's whole 64-byte blocks.
        fold(unsafe { load_post(&mut src) });
    }
    if !row.len().is_multiple_of(STEP) {
        // SAFETY: row.len() >= STEP, so the last STEP bytes are in bounds.
        fold(unsafe { vld1q_u8_x4(row.as_ptr().add(row.len() - STEP)) });
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

/// Maximum of a short row read as a 64-byte window: the lanes `masks`
/// marks (past the row) count as the type's minimum.
#[inline(always)]
pub(crate) fn window_max<const SIGNED: bool>(window: &[u8], masks: &Masks) -> u8 {
    debug_assert!(window.len() == STEP);
    // SAFETY: the window and the mask are STEP bytes; the rest is register
    // arithmetic.
    unsafe {
        let b = vld1q_u8_x4(window.as_ptr());
        let keep = vld1q_u8_x4(opaque(masks.keep.as_ptr()));
        let fill = vdupq_n_u8(if SIGNED { 0x80 } else { 0 });
        let m = |x, k| vbslq_u8(k, x, fill);
        let (a, b, c, d) = (
            m(b.0, keep.0),
            m(b.1, keep.1),
            m(b.2, keep.2),
            m(b.3, keep.3),
        );
        if SIGNED {
            let s = |v| vreinterpretq_s8_u8(v);
            vmaxvq_s8(vmaxq_s8(vmaxq_s8(s(a), s(b)), vmaxq_s8(s(c), s(d)))) as u8
        } else {
            vmaxvq_u8(vmaxq_u8(vmaxq_u8(a, b), vmaxq_u8(c, d)))
        }
    }
}
