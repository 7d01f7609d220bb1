//! Whole 8 x 8 tiles of a depth of exactly 8 read in place (a pointwise
//! layer after an 8-channel one), one weight block, in a single assembly
//! loop with the single-rounding stage of [`super::dot_tiles`]. The block's
//! 64 weight bytes and the stage's parameters are loaded once for all the
//! tiles: with a depth of 8 they fit beside the accumulators and one tile's
//! rows, so a tile costs its bias loads, one row load, 32 `sdot`s, the stage
//! and the loop (about 30 instructions less than each tile through the
//! compiled stage).

use super::dot_tiles::{clamp_asm, clamp_lines, stage_pair, SingleRightStage};
use core::arch::aarch64::*;

/// [`depth8_tiles_single_right`]'s loop, with or without the clamp.
/// Registers: stage parameters v0-v6 (as `stage_pair` expects), weights
/// v7-v10 (depth group 0 in v7-v8, group 1 in v9-v10, channels 0-3 and
/// 4-7), the tile's 8 rows in v11-v14 (row `2i` in lanes 0-1 of
/// `v(11 + i)`, row `2i + 1` in lanes 2-3, as `dot_rows_depth8`), row `r`'s
/// accumulators in v(16 + 2r), v(17 + 2r); the stage narrows through
/// v11-v14 once the rows are used.
macro_rules! depth8_tiles_asm {
    ($clamp:ident, $x:expr, $w:expr, $bias:expr, $stage:expr, $out:expr, $stride:expr, $tiles:expr) => {
        core::arch::asm!(
            "ld1 {{v0.4s, v1.4s, v2.4s, v3.4s}}, [{stage}]",
            "ldp q4, q5, [{stage}, #64]",
            "ldr q6, [{stage}, #96]",
            "ld1 {{v7.16b, v8.16b, v9.16b, v10.16b}}, [{w}]",
            "3:",
            "ld1 {{v16.4s, v17.4s, v18.4s, v19.4s}}, [{bias}]",
            "ld1 {{v20.4s, v21.4s, v22.4s, v23.4s}}, [{bias}]",
            "ld1 {{v24.4s, v25.4s, v26.4s, v27.4s}}, [{bias}]",
            "ld1 {{v28.4s, v29.4s, v30.4s, v31.4s}}, [{bias}]",
            "ld1 {{v11.16b, v12.16b, v13.16b, v14.16b}}, [{x}], #64",
            "sdot v16.4s, v7.16b, v11.4b[0]",
            "sdot v17.4s, v8.16b, v11.4b[0]",
            "sdot v18.4s, v7.16b, v11.4b[2]",
            "sdot v19.4s, v8.16b, v11.4b[2]",
            "sdot v20.4s, v7.16b, v12.4b[0]",
            "sdot v21.4s, v8.16b, v12.4b[0]",
            "sdot v22.4s, v7.16b, v12.4b[2]",
            "sdot v23.4s, v8.16b, v12.4b[2]",
            "sdot v24.4s, v7.16b, v13.4b[0]",
            "sdot v25.4s, v8.16b, v13.4b[0]",
            "sdot v26.4s, v7.16b, v13.4b[2]",
            "sdot v27.4s, v8.16b, v13.4b[2]",
            "sdot v28.4s, v7.16b, v14.4b[0]",
            "sdot v29.4s, v8.16b, v14.4b[0]",
            "sdot v30.4s, v7.16b, v14.4b[2]",
            "sdot v31.4s, v8.16b, v14.4b[2]",
            "sdot v16.4s, v9.16b, v11.4b[1]",
            "sdot v17.4s, v10.16b, v11.4b[1]",
            "sdot v18.4s, v9.16b, v11.4b[3]",
            "sdot v19.4s, v10.16b, v11.4b[3]",
            "sdot v20.4s, v9.16b, v12.4b[1]",
            "sdot v21.4s, v10.16b, v12.4b[1]",
            "sdot v22.4s, v9.16b, v12.4b[3]",
            "sdot v23.4s, v10.16b, v12.4b[3]",
            "sdot v24.4s, v9.16b, v13.4b[1]",
            "sdot v25.4s, v10.16b, v13.4b[1]",
            "sdot v26.4s, v9.16b, v13.4b[3]",
            "sdot v27.4s, v10.16b, v13.4b[3]",
            "sdot v28.4s, v9.16b, v14.4b[1]",
            "sdot v29.4s, v10.16b, v14.4b[1]",
            "sdot v30.4s, v9.16b, v14.4b[3]",
            "sdot v31.4s, v10.16b, v14.4b[3]",
            stage_pair!($clamp, 16, 17, 18, 19, 11, 12),
            stage_pair!($clamp, 20, 21, 22, 23, 13, 14),
            stage_pair!($clamp, 24, 25, 26, 27, 11, 12),
            stage_pair!($clamp, 28, 29, 30, 31, 13, 14),
            "subs {tiles}, {tiles}, #1",
            "b.ne 3b",
            x = inout(reg) $x => _,
            w = in(reg) $w,
            bias = in(reg) $bias,
            stage = in(reg) $stage,
            out = inout(reg) $out => _,
            stride = in(reg) $stride,
            tiles = inout(reg) $tiles => _,
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

/// `tiles` whole 8 x 8 tiles of a depth of exactly 8, one weight block,
/// with the single-rounding output stage of a block whose channels all
/// shift right (`requantize_single_right`, as `panel_tiles_single_right`)
/// and no row offsets. Tile `t`'s 8 input rows are the 64 bytes at
/// `x + 64 t` (read in place), its output rows start at `out + 8 t stride`.
///
/// # Safety
/// The CPU must have dotprod; `tiles >= 1`; `x` must be valid for reading
/// `64 tiles` bytes, `w` for 64 (depth groups 0 and 1 of the block's
/// packed step), `bias` for 64 (`[b0, b1, b0, b1]`), and the 8 bytes at
/// `out + r stride` for writing for every `r < 8 tiles`.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub(super) unsafe fn depth8_tiles_single_right<const CLAMP: u8>(
    x: *const i8,
    w: *const i8,
    bias: &[int32x4_t; 4],
    stage: &SingleRightStage,
    out: *mut i8,
    stride: usize,
    tiles: usize,
) {
    debug_assert!(tiles >= 1);
    let (bias, stage) = (bias.as_ptr(), core::ptr::from_ref(stage));
    // SAFETY: reads and writes only what the caller guarantees (64 bytes
    // of rows per tile, 64 of weights, 64 of `bias`, the 112 of `stage`, 8
    // bytes of each of the tiles' rows); sdot needs dotprod, which every
    // caller (`gemm_dot`) enables. No stack.
    unsafe {
        clamp_asm!(
            CLAMP,
            depth8_tiles_asm!(x, w, bias, stage, out, stride, tiles)
        )
    }
}
