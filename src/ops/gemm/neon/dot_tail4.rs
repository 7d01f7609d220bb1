//! The 4-row kernel of a group's last tile with the single-rounding stage
//! made at `new()` (a group of `8 t + 4` rows), and the step of 16 depth
//! bytes on 4 panel rows that it and `super::dot_tail`'s 4-row piece share.

use super::dot_tiles::{clamp_asm, clamp_lines, stage_pair, SingleRightStage};
use core::arch::aarch64::*;

/// Depth group `g` of a step on the 4 rows in v8-v11 (lane `g` of each)
/// against the weights of channels 0-3 and 4-7 in `va`, `vb`.
macro_rules! tail4_group {
    ($g:literal, $va:literal, $vb:literal) => {
        concat!(
            "sdot v16.4s, v",
            $va,
            ".16b, v8.4b[",
            $g,
            "]\n",
            "sdot v17.4s, v",
            $vb,
            ".16b, v8.4b[",
            $g,
            "]\n",
            "sdot v18.4s, v",
            $va,
            ".16b, v9.4b[",
            $g,
            "]\n",
            "sdot v19.4s, v",
            $vb,
            ".16b, v9.4b[",
            $g,
            "]\n",
            "sdot v20.4s, v",
            $va,
            ".16b, v10.4b[",
            $g,
            "]\n",
            "sdot v21.4s, v",
            $vb,
            ".16b, v10.4b[",
            $g,
            "]\n",
            "sdot v22.4s, v",
            $va,
            ".16b, v11.4b[",
            $g,
            "]\n",
            "sdot v23.4s, v",
            $vb,
            ".16b, v11.4b[",
            $g,
            "]\n",
        )
    };
}

pub(super) use tail4_group;

/// [`tail4_single_right`]'s kernel, with or without the clamp: the bias
/// into v16-v23, the steps of `super::dot_tail::dot_tail_rows4`, the stage
/// of `dot_tiles` on the 4 rows (narrowing through v8-v9), the 4 row stores.
macro_rules! tail4_asm {
    ($clamp:ident, $x:expr, $w:expr, $chunks:expr, $half:expr, $bias:expr, $stage:expr, $out:expr, $stride:expr) => {
        core::arch::asm!(
            "ld1 {{v16.4s, v17.4s, v18.4s, v19.4s}}, [{bias}]",
            "ld1 {{v20.4s, v21.4s, v22.4s, v23.4s}}, [{bias}]",
            "cbz {chunks}, 5f",
            "2:",
            "ld1 {{v0.16b, v1.16b, v2.16b, v3.16b}}, [{w}], #64",
            "ld1 {{v4.16b, v5.16b, v6.16b, v7.16b}}, [{w}], #64",
            "ld1 {{v8.16b, v9.16b, v10.16b, v11.16b}}, [{x}], {step}",
            tail4_group!(0, 0, 1),
            tail4_group!(1, 2, 3),
            tail4_group!(2, 4, 5),
            tail4_group!(3, 6, 7),
            "subs {chunks}, {chunks}, #1",
            "b.ne 2b",
            "5:",
            "cbz {half}, 6f",
            "ld1 {{v0.16b, v1.16b, v2.16b, v3.16b}}, [{w}]",
            "ld1 {{v8.16b, v9.16b, v10.16b, v11.16b}}, [{x}]",
            tail4_group!(0, 0, 1),
            tail4_group!(1, 2, 3),
            "6:",
            "ld1 {{v0.4s, v1.4s, v2.4s, v3.4s}}, [{stage}]",
            "ldp q4, q5, [{stage}, #64]",
            "ldr q6, [{stage}, #96]",
            stage_pair!($clamp, 16, 17, 18, 19, 8, 9),
            stage_pair!($clamp, 20, 21, 22, 23, 10, 11),
            x = inout(reg) $x => _,
            w = inout(reg) $w => _,
            chunks = inout(reg) $chunks => _,
            half = in(reg) $half,
            step = in(reg) 128usize,
            bias = in(reg) $bias,
            stage = in(reg) $stage,
            out = inout(reg) $out => _,
            stride = in(reg) $stride,
            out("v0") _, out("v1") _, out("v2") _, out("v3") _,
            out("v4") _, out("v5") _, out("v6") _, out("v7") _,
            out("v8") _, out("v9") _, out("v10") _, out("v11") _,
            out("v16") _, out("v17") _, out("v18") _, out("v19") _,
            out("v20") _, out("v21") _, out("v22") _, out("v23") _,
            options(nostack),
        )
    };
}

/// The 4 rows of a group's last tile (a group of `8 t + 4` rows: a CNN's
/// 6 x 6 or 14 x 14 output pixels), one weight block, with the
/// single-rounding output stage of a block whose channels all shift right
/// (`requantize_single_right`, as `panel_tiles_single_right`) and no row
/// offsets, in one assembly kernel: the bias, `dot_tail_rows4`'s steps,
/// the stage and the 4 row stores, where the compiled tail went through
/// the block's loaded parameters and a 4-row store of its own.
///
/// # Safety
/// The CPU must have dotprod; `chunks + half >= 1`; `x` (the tile's panel)
/// must be valid for reading `128 (chunks + half) - 64` bytes, `w` for
/// `128 (chunks + half)`, `bias` for 64 (`[b0, b1, b0, b1]`), and the 8
/// bytes at `out + r stride` for writing for every `r < 4`.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub(super) unsafe fn tail4_single_right<const CLAMP: u8>(
    x: *const i8,
    w: *const i8,
    (chunks, half): (usize, bool),
    bias: &[int32x4_t; 4],
    stage: &SingleRightStage,
    out: *mut i8,
    stride: usize,
) {
    debug_assert!(chunks + usize::from(half) >= 1);
    let half = usize::from(half);
    let (bias, stage) = (bias.as_ptr(), core::ptr::from_ref(stage));
    // SAFETY: reads and writes only what the caller guarantees (64 bytes of
    // the tile's rows 0-3 and 128 of weights per step, 64 of each for a half
    // step; 64 bytes of `bias`; the 112 of `stage`; 8 bytes of each of the
    // 4 rows); sdot needs dotprod, which every caller (`gemm_dot`) enables.
    // No stack.
    unsafe {
        clamp_asm!(
            CLAMP,
            tail4_asm!(x, w, chunks, half, bias, stage, out, stride)
        )
    }
}
