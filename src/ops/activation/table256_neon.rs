//! NEON 256-entry byte table lookup (`Method::Lut` on 8-bit data).
//!
//! The whole table lives in 16 registers, as four 64-byte `uint8x16x4_t`
//! quarters. `tbl` with four registers looks up indices 0..64 and gives 0 for
//! the rest; `tbx` looks up 0..64 and leaves its accumulator alone for the
//! rest. For an input byte `v`, quarter `k` is looked up with `v - 64k`
//! (wrapping): exactly one of `v, v - 64, v - 128, v - 192` is below 64, the
//! one of `v`'s quarter, so exactly one of the four lookups hits, for every
//! byte. Per 16 bytes: three `sub`s and four table instructions; 64 bytes per
//! iteration with one `ld1`/`st1` of four registers. The remainder goes
//! through a 64-byte stack buffer, so nothing outside the caller's slices is
//! read or written.

use super::table256::Table256;
use crate::simd::tail::map_tail;
use core::arch::aarch64::*;

/// Bytes per loop iteration.
const STEP: usize = 64;

/// The table in registers.
type Quarters = [uint8x16x4_t; 4];

/// One table quarter lookup of 16 bytes: the output byte for each input byte.
#[inline(always)]
fn lookup16(t: &Quarters, step: uint8x16_t, v: uint8x16_t) -> uint8x16_t {
    // SAFETY: plain register arithmetic; NEON is enabled for this module
    // (target_feature = "neon", checked by the cfg on `mod table256_neon`).
    unsafe {
        let v1 = vsubq_u8(v, step);
        let v2 = vsubq_u8(v1, step);
        let v3 = vsubq_u8(v2, step);
        let r = vqtbl4q_u8(t[0], v);
        let r = vqtbx4q_u8(r, t[1], v1);
        let r = vqtbx4q_u8(r, t[2], v2);
        vqtbx4q_u8(r, t[3], v3)
    }
}

/// Looks up 64 bytes.
///
/// # Safety
/// `src` must be valid for 64 byte reads and `dst` for 64 byte writes.
#[inline(always)]
unsafe fn block64(t: &Quarters, step: uint8x16_t, src: *const u8, dst: *mut u8) {
    // SAFETY: the caller guarantees 64 readable bytes at src and 64 writable
    // bytes at dst; u8 loads and stores need no alignment.
    unsafe {
        let x = vld1q_u8_x4(src);
        let y = uint8x16x4_t(
            lookup16(t, step, x.0),
            lookup16(t, step, x.1),
            lookup16(t, step, x.2),
            lookup16(t, step, x.3),
        );
        vst1q_u8_x4(dst, y);
    }
}

/// `output[i] = table[input[i]]`, 64 bytes per iteration.
/// `input.len() == output.len()` (checked by the caller; only the common
/// length is touched).
#[inline(never)]
pub(crate) fn lookup_u8(table: &Table256, input: &[u8], output: &mut [u8]) {
    debug_assert_eq!(input.len(), output.len());
    let n = input.len().min(output.len());
    let whole = n - n % STEP;
    let p = table.0.as_ptr();
    // SAFETY: the table is 256 bytes: the four 64-byte loads at offsets 0,
    // 64, 128 and 192 are in bounds; u8 loads need no alignment.
    let (t, step) = unsafe {
        (
            [
                vld1q_u8_x4(p),
                vld1q_u8_x4(p.add(64)),
                vld1q_u8_x4(p.add(128)),
                vld1q_u8_x4(p.add(192)),
            ],
            vdupq_n_u8(64),
        )
    };
    // Counts down whole blocks and bumps the pointers, so the loop needs no
    // index arithmetic besides the post-incremented loads and stores.
    let (mut src, mut dst) = (input.as_ptr(), output.as_mut_ptr());
    let mut blocks = whole / STEP;
    while blocks > 0 {
        // SAFETY: src and dst point `whole - blocks * STEP` bytes into input
        // and output, and whole <= n <= both lengths, so the STEP bytes at
        // each are in bounds; afterwards they point at most `whole` bytes in
        // (one past the end at most, which `add` allows).
        unsafe {
            block64(&t, step, src, dst);
            src = src.add(STEP);
            dst = dst.add(STEP);
        }
        blocks -= 1;
    }
    if whole < n {
        map_tail::<STEP, u8>(
            &input[whole..n],
            &mut output[whole..n],
            0,
            #[inline(always)]
            |s, d| {
                // SAFETY: map_tail hands out STEP = 64 readable and writable bytes.
                unsafe { block64(&t, step, s, d) }
            },
        );
    }
}
