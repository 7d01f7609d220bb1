//! The two 16-byte int8 dot-product steps the mat-vec kernels share (the
//! LSTM's gate products, SVDF's feature filters): four 32-bit lanes each
//! gaining the sum of four products, with `sdot` where the CPU has
//! FEAT_DotProd and with widening multiplies where it does not. The lanes
//! gain different groupings of the 16 products (`sdot`: bytes 4i..4i+3;
//! widening: pairs), so a caller reduces all four lanes before it uses
//! them.

use core::arch::aarch64::*;

/// `acc += dot4(w, x)` per 32-bit lane: `sdot`. The feature is on the
/// function itself so that the assembler takes `sdot` in every build (a
/// bare-metal target's default features lack it).
///
/// # Safety
/// The CPU must have FEAT_DotProd (callers detect it before they choose
/// this path).
#[inline]
#[target_feature(enable = "dotprod")]
pub(crate) unsafe fn sdot(acc: int32x4_t, w: int8x16_t, x: int8x16_t) -> int32x4_t {
    let mut acc = acc;
    // SAFETY: `sdot` on vector registers has no memory, stack or flag
    // effects; the function requires dotprod, so the instruction exists
    // (the intrinsic is not stable, hence the asm).
    unsafe {
        core::arch::asm!(
            "sdot {acc:v}.4s, {w:v}.16b, {x:v}.16b",
            acc = inout(vreg) acc,
            w = in(vreg) w,
            x = in(vreg) x,
            options(pure, nomem, nostack, preserves_flags),
        );
    }
    acc
}

/// `acc += pairwise sums of w * x` (16 products into 4 lanes) without
/// dotprod: `smull` + `sadalp`.
#[inline(always)]
pub(crate) fn widening(acc: int32x4_t, w: int8x16_t, x: int8x16_t) -> int32x4_t {
    // SAFETY: register-only NEON arithmetic (NEON is a target feature of
    // every build that compiles this module).
    unsafe {
        let acc = vpadalq_s16(acc, vmull_s8(vget_low_s8(w), vget_low_s8(x)));
        vpadalq_s16(acc, vmull_high_s8(w, x))
    }
}
