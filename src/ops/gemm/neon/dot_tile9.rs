//! The last whole 8 x 8 tile of a panel group together with the one row
//! after it (a group of `8 t + 1` rows: a CNN's 3 x 3 output pixels), one
//! weight block, in one assembly kernel with the single-rounding stage of
//! [`super::dot_tiles`]: the ninth row's 8 `sdot`s a step share the tile's
//! weight loads, where a 1-row piece of its own (`dot_tail_rows1`) loaded
//! them again and ran the loop and the stage for one row.

use super::dot_tail4::tail4_group;
use super::dot_tiles::{clamp_asm, clamp_lines, stage_pair, SingleRightStage};
use core::arch::aarch64::*;

/// [`tile9_single_right`]'s kernel, with or without the clamp. Registers
/// as `panel_tiles_single_right`'s (weights v0-v7, rows 0-7 accumulated in
/// v16-v31) except that rows 0-3 and then rows 4-7 of a step are loaded
/// into v8-v11, the ninth row into v14, its accumulators in v12-v13; the
/// stage narrows through v8-v11.
macro_rules! tile9_asm {
    ($clamp:ident, $x:expr, $x9:expr, $w:expr, $chunks:expr, $half:expr, $bias:expr, $stage:expr, $out:expr, $stride:expr) => {
        core::arch::asm!(
            "ld1 {{v16.4s, v17.4s, v18.4s, v19.4s}}, [{bias}]",
            "ld1 {{v20.4s, v21.4s, v22.4s, v23.4s}}, [{bias}]",
            "ld1 {{v24.4s, v25.4s, v26.4s, v27.4s}}, [{bias}]",
            "ld1 {{v28.4s, v29.4s, v30.4s, v31.4s}}, [{bias}]",
            "ld1 {{v12.4s, v13.4s}}, [{bias}]",
            "cbz {chunks}, 5f",
            "2:",
            "ld1 {{v0.16b, v1.16b, v2.16b, v3.16b}}, [{w}], #64",
            "ld1 {{v4.16b, v5.16b, v6.16b, v7.16b}}, [{w}], #64",
            "ld1 {{v8.16b, v9.16b, v10.16b, v11.16b}}, [{x}], #64",
            tail4_group!(0, 0, 1),
            tail4_group!(1, 2, 3),
            tail4_group!(2, 4, 5),
            tail4_group!(3, 6, 7),
            "ld1 {{v8.16b, v9.16b, v10.16b, v11.16b}}, [{x}], #64",
            "sdot v24.4s, v0.16b, v8.4b[0]",
            "sdot v25.4s, v1.16b, v8.4b[0]",
            "sdot v26.4s, v0.16b, v9.4b[0]",
            "sdot v27.4s, v1.16b, v9.4b[0]",
            "sdot v28.4s, v0.16b, v10.4b[0]",
            "sdot v29.4s, v1.16b, v10.4b[0]",
            "sdot v30.4s, v0.16b, v11.4b[0]",
            "sdot v31.4s, v1.16b, v11.4b[0]",
            "sdot v24.4s, v2.16b, v8.4b[1]",
            "sdot v25.4s, v3.16b, v8.4b[1]",
            "sdot v26.4s, v2.16b, v9.4b[1]",
            "sdot v27.4s, v3.16b, v9.4b[1]",
            "sdot v28.4s, v2.16b, v10.4b[1]",
            "sdot v29.4s, v3.16b, v10.4b[1]",
            "sdot v30.4s, v2.16b, v11.4b[1]",
            "sdot v31.4s, v3.16b, v11.4b[1]",
            "sdot v24.4s, v4.16b, v8.4b[2]",
            "sdot v25.4s, v5.16b, v8.4b[2]",
            "sdot v26.4s, v4.16b, v9.4b[2]",
            "sdot v27.4s, v5.16b, v9.4b[2]",
            "sdot v28.4s, v4.16b, v10.4b[2]",
            "sdot v29.4s, v5.16b, v10.4b[2]",
            "sdot v30.4s, v4.16b, v11.4b[2]",
            "sdot v31.4s, v5.16b, v11.4b[2]",
            "sdot v24.4s, v6.16b, v8.4b[3]",
            "sdot v25.4s, v7.16b, v8.4b[3]",
            "sdot v26.4s, v6.16b, v9.4b[3]",
            "sdot v27.4s, v7.16b, v9.4b[3]",
            "sdot v28.4s, v6.16b, v10.4b[3]",
            "sdot v29.4s, v7.16b, v10.4b[3]",
            "sdot v30.4s, v6.16b, v11.4b[3]",
            "sdot v31.4s, v7.16b, v11.4b[3]",
            "ld1 {{v14.16b}}, [{x9}], {step}",
            "sdot v12.4s, v0.16b, v14.4b[0]",
            "sdot v13.4s, v1.16b, v14.4b[0]",
            "sdot v12.4s, v2.16b, v14.4b[1]",
            "sdot v13.4s, v3.16b, v14.4b[1]",
            "sdot v12.4s, v4.16b, v14.4b[2]",
            "sdot v13.4s, v5.16b, v14.4b[2]",
            "sdot v12.4s, v6.16b, v14.4b[3]",
            "sdot v13.4s, v7.16b, v14.4b[3]",
            "subs {chunks}, {chunks}, #1",
            "b.ne 2b",
            "5:",
            "cbz {half}, 6f",
            "ld1 {{v0.16b, v1.16b, v2.16b, v3.16b}}, [{w}]",
            "ld1 {{v8.16b, v9.16b, v10.16b, v11.16b}}, [{x}], #64",
            tail4_group!(0, 0, 1),
            tail4_group!(1, 2, 3),
            "ld1 {{v8.16b, v9.16b, v10.16b, v11.16b}}, [{x}]",
            "sdot v24.4s, v0.16b, v8.4b[0]",
            "sdot v25.4s, v1.16b, v8.4b[0]",
            "sdot v26.4s, v0.16b, v9.4b[0]",
            "sdot v27.4s, v1.16b, v9.4b[0]",
            "sdot v28.4s, v0.16b, v10.4b[0]",
            "sdot v29.4s, v1.16b, v10.4b[0]",
            "sdot v30.4s, v0.16b, v11.4b[0]",
            "sdot v31.4s, v1.16b, v11.4b[0]",
            "sdot v24.4s, v2.16b, v8.4b[1]",
            "sdot v25.4s, v3.16b, v8.4b[1]",
            "sdot v26.4s, v2.16b, v9.4b[1]",
            "sdot v27.4s, v3.16b, v9.4b[1]",
            "sdot v28.4s, v2.16b, v10.4b[1]",
            "sdot v29.4s, v3.16b, v10.4b[1]",
            "sdot v30.4s, v2.16b, v11.4b[1]",
            "sdot v31.4s, v3.16b, v11.4b[1]",
            "ld1 {{v14.16b}}, [{x9}]",
            "sdot v12.4s, v0.16b, v14.4b[0]",
            "sdot v13.4s, v1.16b, v14.4b[0]",
            "sdot v12.4s, v2.16b, v14.4b[1]",
            "sdot v13.4s, v3.16b, v14.4b[1]",
            "6:",
            "ld1 {{v0.4s, v1.4s, v2.4s, v3.4s}}, [{stage}]",
            "ldp q4, q5, [{stage}, #64]",
            "ldr q6, [{stage}, #96]",
            stage_pair!($clamp, 16, 17, 18, 19, 8, 9),
            stage_pair!($clamp, 20, 21, 22, 23, 10, 11),
            stage_pair!($clamp, 24, 25, 26, 27, 8, 9),
            stage_pair!($clamp, 28, 29, 30, 31, 10, 11),
            // The ninth row: the stage of one row, lane for lane the pair's.
            "sqdmulh v12.4s, v12.4s, v0.4s",
            "sqdmulh v13.4s, v13.4s, v1.4s",
            "srshl v12.4s, v12.4s, v2.4s",
            "srshl v13.4s, v13.4s, v3.4s",
            "sqxtn v8.4h, v12.4s",
            "sqxtn2 v8.8h, v13.4s",
            "sqadd v8.8h, v8.8h, v4.8h",
            "sqxtn v8.8b, v8.8h",
            clamp_lines!($clamp, 8),
            "st1 {{v8.d}}[0], [{out}]",
            x = inout(reg) $x => _,
            x9 = inout(reg) $x9 => _,
            w = inout(reg) $w => _,
            chunks = inout(reg) $chunks => _,
            half = in(reg) $half,
            bias = in(reg) $bias,
            stage = in(reg) $stage,
            out = inout(reg) $out => _,
            stride = in(reg) $stride,
            step = in(reg) 128usize,
            out("v0") _, out("v1") _, out("v2") _, out("v3") _,
            out("v4") _, out("v5") _, out("v6") _, out("v7") _,
            out("v8") _, out("v9") _, out("v10") _, out("v11") _,
            out("v12") _, out("v13") _, out("v14") _,
            out("v16") _, out("v17") _, out("v18") _, out("v19") _,
            out("v20") _, out("v21") _, out("v22") _, out("v23") _,
            out("v24") _, out("v25") _, out("v26") _, out("v27") _,
            out("v28") _, out("v29") _, out("v30") _, out("v31") _,
            options(nostack),
        )
    };
}

/// One whole 8 x 8 tile and the row after it (9 rows), one weight block,
/// with the single-rounding output stage of a block whose channels all
/// shift right (`requantize_single_right`, as `panel_tiles_single_right`)
/// and no row offsets: `chunks` whole steps of 16 depth bytes, then with
/// `half` a half step (depth groups 0 and 1). The tile's panel is at `x`
/// (step `i` of row `r` at `128 i + 16 r`), the ninth row's at `x9` (the
/// next tile's panel: its row 0), the 9 output rows at `out + r stride`.
///
/// # Safety
/// The CPU must have dotprod; `chunks + half >= 1`; `x` and `w` must each
/// be valid for reading `128 (chunks + half)` bytes, `x9` for
/// `128 (chunks + half) - 112`, `bias` for 64 (`[b0, b1, b0, b1]`), and
/// the 8 bytes at `out + r stride` for writing for every `r < 9`.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub(super) unsafe fn tile9_single_right<const CLAMP: u8>(
    x: *const i8,
    x9: *const i8,
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
    // SAFETY: reads and writes only what the caller guarantees (16 bytes
    // of the ninth row per step, 128 of the tile's rows and of weights per
    // step, 64 of them for a half step; 64 bytes of `bias`; the 112 of
    // `stage`; 8 bytes of each of the 9 rows); sdot needs dotprod, which
    // every caller (`gemm_dot`) enables. No stack.
    unsafe {
        clamp_asm!(
            CLAMP,
            tile9_asm!(x, x9, w, chunks, half, bias, stage, out, stride)
        )
    }
}
