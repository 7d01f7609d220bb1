//! Whole 8 x 8 tiles of one weight block in a single assembly loop, for
//! the output stage LiteRT's optimized CONV_2D and FULLY_CONNECTED take most
//! often: single rounding with every channel shifting right (see
//! `requantize_single_right` in [`super`]). The panel steps are
//! [`super::dot_panel`]'s; the stage is `store_tile_with`'s, instruction for
//! instruction, so the bytes are the same.

use core::arch::aarch64::*;

/// The output stage of rows `a`/`b` (one row: channels 0-3, 4-7) and
/// `c`/`d` (the next row) in `requantize_single_right`'s form, as
/// `store_tile_with` computes it (`sqdmulh`, `srshl`, saturating narrows to
/// 16 bits, the zero point added with saturation, a saturating narrow to 8
/// bits, with `clamp` the activation bounds), through `t`/`u`, then the two
/// rows stored 8 bytes each, stepping `{out}` by `{stride}`. Multipliers in
/// v0-v1, negated right shifts in v2-v3, the zero point in v4, the bounds in
/// v5-v6.
macro_rules! stage_pair {
    ($clamp:ident, $a:literal, $b:literal, $c:literal, $d:literal, $t:literal, $u:literal) => {
        concat!(
            "sqdmulh v",
            $a,
            ".4s, v",
            $a,
            ".4s, v0.4s\n",
            "sqdmulh v",
            $b,
            ".4s, v",
            $b,
            ".4s, v1.4s\n",
            "sqdmulh v",
            $c,
            ".4s, v",
            $c,
            ".4s, v0.4s\n",
            "sqdmulh v",
            $d,
            ".4s, v",
            $d,
            ".4s, v1.4s\n",
            "srshl v",
            $a,
            ".4s, v",
            $a,
            ".4s, v2.4s\n",
            "srshl v",
            $b,
            ".4s, v",
            $b,
            ".4s, v3.4s\n",
            "srshl v",
            $c,
            ".4s, v",
            $c,
            ".4s, v2.4s\n",
            "srshl v",
            $d,
            ".4s, v",
            $d,
            ".4s, v3.4s\n",
            "sqxtn v",
            $t,
            ".4h, v",
            $a,
            ".4s\n",
            "sqxtn v",
            $u,
            ".4h, v",
            $c,
            ".4s\n",
            "sqxtn2 v",
            $t,
            ".8h, v",
            $b,
            ".4s\n",
            "sqxtn2 v",
            $u,
            ".8h, v",
            $d,
            ".4s\n",
            "sqadd v",
            $t,
            ".8h, v",
            $t,
            ".8h, v4.8h\n",
            "sqadd v",
            $u,
            ".8h, v",
            $u,
            ".8h, v4.8h\n",
            "sqxtn v",
            $t,
            ".8b, v",
            $t,
            ".8h\n",
            "sqxtn2 v",
            $t,
            ".16b, v",
            $u,
            ".8h\n",
            clamp_lines!($clamp, $t),
            "st1 {{v",
            $t,
            ".d}}[0], [{out}], {stride}\n",
            "st1 {{v",
            $t,
            ".d}}[1], [{out}], {stride}\n",
        )
    };
}

/// The activation clamp of one register of 16 outputs (bounds in v5, v6):
/// both sides, one side, or nothing. A bound at int8's own end needs no
/// instruction (the saturating narrow already stops there): RELU6 with an
/// output zero point of -128 clamps above only.
macro_rules! clamp_lines {
    (clamp, $t:literal) => {
        concat!(clamp_lines!(lower, $t), clamp_lines!(upper, $t))
    };
    (lower, $t:literal) => {
        concat!("smax v", $t, ".16b, v", $t, ".16b, v5.16b\n")
    };
    (upper, $t:literal) => {
        concat!("smin v", $t, ".16b, v", $t, ".16b, v6.16b\n")
    };
    (no_clamp, $t:literal) => {
        ""
    };
}

// For the depth-8 loop of `super::dot_depth8`, the same stage.
pub(super) use {clamp_lines, stage_pair};

/// [`panel_tiles_single_right`]'s loop, with or without the clamp.
macro_rules! panel_tiles_asm {
    ($clamp:ident, $x:expr, $w:expr, $chunks:expr, $half:expr, $bias:expr, $stage:expr, $out:expr, $stride:expr, $tiles:expr) => {
        core::arch::asm!(
            "3:",
            "ld1 {{v16.4s, v17.4s, v18.4s, v19.4s}}, [{bias}]",
            "ld1 {{v20.4s, v21.4s, v22.4s, v23.4s}}, [{bias}]",
            "ld1 {{v24.4s, v25.4s, v26.4s, v27.4s}}, [{bias}]",
            "ld1 {{v28.4s, v29.4s, v30.4s, v31.4s}}, [{bias}]",
            "mov {wp}, {w}",
            "cbz {chunks}, 5f",
            "mov {n}, {chunks}",
            "2:",
            "ld1 {{v0.16b, v1.16b, v2.16b, v3.16b}}, [{wp}], #64",
            "ld1 {{v4.16b, v5.16b, v6.16b, v7.16b}}, [{wp}], #64",
            "ld1 {{v8.16b, v9.16b, v10.16b, v11.16b}}, [{x}], #64",
            "sdot v16.4s, v0.16b, v8.4b[0]",
            "sdot v17.4s, v1.16b, v8.4b[0]",
            "sdot v18.4s, v0.16b, v9.4b[0]",
            "sdot v19.4s, v1.16b, v9.4b[0]",
            "sdot v20.4s, v0.16b, v10.4b[0]",
            "sdot v21.4s, v1.16b, v10.4b[0]",
            "sdot v22.4s, v0.16b, v11.4b[0]",
            "sdot v23.4s, v1.16b, v11.4b[0]",
            "sdot v16.4s, v2.16b, v8.4b[1]",
            "sdot v17.4s, v3.16b, v8.4b[1]",
            "sdot v18.4s, v2.16b, v9.4b[1]",
            "sdot v19.4s, v3.16b, v9.4b[1]",
            "sdot v20.4s, v2.16b, v10.4b[1]",
            "sdot v21.4s, v3.16b, v10.4b[1]",
            "sdot v22.4s, v2.16b, v11.4b[1]",
            "sdot v23.4s, v3.16b, v11.4b[1]",
            "sdot v16.4s, v4.16b, v8.4b[2]",
            "sdot v17.4s, v5.16b, v8.4b[2]",
            "sdot v18.4s, v4.16b, v9.4b[2]",
            "sdot v19.4s, v5.16b, v9.4b[2]",
            "sdot v20.4s, v4.16b, v10.4b[2]",
            "sdot v21.4s, v5.16b, v10.4b[2]",
            "sdot v22.4s, v4.16b, v11.4b[2]",
            "sdot v23.4s, v5.16b, v11.4b[2]",
            "sdot v16.4s, v6.16b, v8.4b[3]",
            "sdot v17.4s, v7.16b, v8.4b[3]",
            "sdot v18.4s, v6.16b, v9.4b[3]",
            "sdot v19.4s, v7.16b, v9.4b[3]",
            "sdot v20.4s, v6.16b, v10.4b[3]",
            "sdot v21.4s, v7.16b, v10.4b[3]",
            "sdot v22.4s, v6.16b, v11.4b[3]",
            "sdot v23.4s, v7.16b, v11.4b[3]",
            "ld1 {{v12.16b, v13.16b, v14.16b, v15.16b}}, [{x}], #64",
            "sdot v24.4s, v0.16b, v12.4b[0]",
            "sdot v25.4s, v1.16b, v12.4b[0]",
            "sdot v26.4s, v0.16b, v13.4b[0]",
            "sdot v27.4s, v1.16b, v13.4b[0]",
            "sdot v28.4s, v0.16b, v14.4b[0]",
            "sdot v29.4s, v1.16b, v14.4b[0]",
            "sdot v30.4s, v0.16b, v15.4b[0]",
            "sdot v31.4s, v1.16b, v15.4b[0]",
            "sdot v24.4s, v2.16b, v12.4b[1]",
            "sdot v25.4s, v3.16b, v12.4b[1]",
            "sdot v26.4s, v2.16b, v13.4b[1]",
            "sdot v27.4s, v3.16b, v13.4b[1]",
            "sdot v28.4s, v2.16b, v14.4b[1]",
            "sdot v29.4s, v3.16b, v14.4b[1]",
            "sdot v30.4s, v2.16b, v15.4b[1]",
            "sdot v31.4s, v3.16b, v15.4b[1]",
            "sdot v24.4s, v4.16b, v12.4b[2]",
            "sdot v25.4s, v5.16b, v12.4b[2]",
            "sdot v26.4s, v4.16b, v13.4b[2]",
            "sdot v27.4s, v5.16b, v13.4b[2]",
            "sdot v28.4s, v4.16b, v14.4b[2]",
            "sdot v29.4s, v5.16b, v14.4b[2]",
            "sdot v30.4s, v4.16b, v15.4b[2]",
            "sdot v31.4s, v5.16b, v15.4b[2]",
            "sdot v24.4s, v6.16b, v12.4b[3]",
            "sdot v25.4s, v7.16b, v12.4b[3]",
            "sdot v26.4s, v6.16b, v13.4b[3]",
            "sdot v27.4s, v7.16b, v13.4b[3]",
            "sdot v28.4s, v6.16b, v14.4b[3]",
            "sdot v29.4s, v7.16b, v14.4b[3]",
            "sdot v30.4s, v6.16b, v15.4b[3]",
            "sdot v31.4s, v7.16b, v15.4b[3]",
            "subs {n}, {n}, #1",
            "b.ne 2b",
            "5:",
            "cbz {half}, 6f",
            "ld1 {{v0.16b, v1.16b, v2.16b, v3.16b}}, [{wp}]",
            "ld1 {{v8.16b, v9.16b, v10.16b, v11.16b}}, [{x}], #64",
            "ld1 {{v12.16b, v13.16b, v14.16b, v15.16b}}, [{x}], #64",
            "sdot v16.4s, v0.16b, v8.4b[0]",
            "sdot v17.4s, v1.16b, v8.4b[0]",
            "sdot v18.4s, v0.16b, v9.4b[0]",
            "sdot v19.4s, v1.16b, v9.4b[0]",
            "sdot v20.4s, v0.16b, v10.4b[0]",
            "sdot v21.4s, v1.16b, v10.4b[0]",
            "sdot v22.4s, v0.16b, v11.4b[0]",
            "sdot v23.4s, v1.16b, v11.4b[0]",
            "sdot v24.4s, v0.16b, v12.4b[0]",
            "sdot v25.4s, v1.16b, v12.4b[0]",
            "sdot v26.4s, v0.16b, v13.4b[0]",
            "sdot v27.4s, v1.16b, v13.4b[0]",
            "sdot v28.4s, v0.16b, v14.4b[0]",
            "sdot v29.4s, v1.16b, v14.4b[0]",
            "sdot v30.4s, v0.16b, v15.4b[0]",
            "sdot v31.4s, v1.16b, v15.4b[0]",
            "sdot v16.4s, v2.16b, v8.4b[1]",
            "sdot v17.4s, v3.16b, v8.4b[1]",
            "sdot v18.4s, v2.16b, v9.4b[1]",
            "sdot v19.4s, v3.16b, v9.4b[1]",
            "sdot v20.4s, v2.16b, v10.4b[1]",
            "sdot v21.4s, v3.16b, v10.4b[1]",
            "sdot v22.4s, v2.16b, v11.4b[1]",
            "sdot v23.4s, v3.16b, v11.4b[1]",
            "sdot v24.4s, v2.16b, v12.4b[1]",
            "sdot v25.4s, v3.16b, v12.4b[1]",
            "sdot v26.4s, v2.16b, v13.4b[1]",
            "sdot v27.4s, v3.16b, v13.4b[1]",
            "sdot v28.4s, v2.16b, v14.4b[1]",
            "sdot v29.4s, v3.16b, v14.4b[1]",
            "sdot v30.4s, v2.16b, v15.4b[1]",
            "sdot v31.4s, v3.16b, v15.4b[1]",
            "6:",
            "ld1 {{v0.4s, v1.4s, v2.4s, v3.4s}}, [{stage}]",
            "ldp q4, q5, [{stage}, #64]",
            "ldr q6, [{stage}, #96]",
            stage_pair!($clamp, 16, 17, 18, 19, 8, 9),
            stage_pair!($clamp, 20, 21, 22, 23, 10, 11),
            stage_pair!($clamp, 24, 25, 26, 27, 12, 13),
            stage_pair!($clamp, 28, 29, 30, 31, 14, 15),
            "subs {tiles}, {tiles}, #1",
            "b.ne 3b",
            x = inout(reg) $x => _,
            w = in(reg) $w,
            wp = out(reg) _,
            n = out(reg) _,
            chunks = in(reg) $chunks,
            half = in(reg) $half,
            bias = in(reg) $bias,
            stage = in(reg) $stage,
            out = inout(reg) $out => _,
            stride = in(reg) $stride,
            tiles = inout(reg) $tiles => _,
            out("v0") _, out("v1") _, out("v2") _, out("v3") _,
            out("v4") _, out("v5") _, out("v6") _, out("v7") _,
            out("v8") _, out("v9") _, out("v10") _, out("v11") _,
            out("v12") _, out("v13") _, out("v14") _, out("v15") _,
            out("v16") _, out("v17") _, out("v18") _, out("v19") _,
            out("v20") _, out("v21") _, out("v22") _, out("v23") _,
            out("v24") _, out("v25") _, out("v26") _, out("v27") _,
            out("v28") _, out("v29") _, out("v30") _, out("v31") _,
            options(nostack),
        )
    };
}

/// [`panel_tiles_single_right`]'s activation clamp: none (the range is
/// int8's), both bounds, or only the one not at int8's end.
pub(super) const CLAMP_NONE: u8 = 0;
pub(super) const CLAMP_BOTH: u8 = 1;
pub(super) const CLAMP_LOWER: u8 = 2;
pub(super) const CLAMP_UPPER: u8 = 3;

/// `kernel::<CLAMP>(args)` with the clamp kind `kind` (a run-time value, one
/// of the `CLAMP_*` above) as its const parameter: the one dispatch of the
/// single-rounding kernels from the kind [`clamp_kind`] found.
macro_rules! with_clamp {
    ($kind:expr, $kernel:ident($($arg:expr),* $(,)?)) => {
        match $kind {
            super::dot_tiles::CLAMP_BOTH => $kernel::<{ super::dot_tiles::CLAMP_BOTH }>($($arg),*),
            super::dot_tiles::CLAMP_LOWER => {
                $kernel::<{ super::dot_tiles::CLAMP_LOWER }>($($arg),*)
            }
            super::dot_tiles::CLAMP_UPPER => {
                $kernel::<{ super::dot_tiles::CLAMP_UPPER }>($($arg),*)
            }
            _ => $kernel::<{ super::dot_tiles::CLAMP_NONE }>($($arg),*),
        }
    };
}

/// `asm_kernel!(lines, args)` with the asm lines of the clamp `CLAMP` (a
/// const parameter: one `CLAMP_*`) as its first argument ([`clamp_lines`]:
/// `clamp`, `lower`, `upper`, `no_clamp`): the kernels' one choice of their
/// loop's clamp instructions.
macro_rules! clamp_asm {
    ($clamp:expr, $asm_kernel:ident!($($arg:tt)*)) => {
        match $clamp {
            super::dot_tiles::CLAMP_BOTH => $asm_kernel!(clamp, $($arg)*),
            super::dot_tiles::CLAMP_LOWER => $asm_kernel!(lower, $($arg)*),
            super::dot_tiles::CLAMP_UPPER => $asm_kernel!(upper, $($arg)*),
            _ => $asm_kernel!(no_clamp, $($arg)*),
        }
    };
}

// For the kernels of `dot_depth8`, `dot_tail4`, `dot_tile9` and their callers.
pub(super) use {clamp_asm, with_clamp};

/// Which [`panel_tiles_single_right`] clamp the bounds `min`, `max` (every
/// lane alike) need.
#[inline(always)]
pub(super) fn clamp_kind(min: int8x16_t, max: int8x16_t) -> u8 {
    // SAFETY: neon is a compile-time target feature (cfg on this module).
    let (lo, hi) = unsafe { (vgetq_lane_s8::<0>(min), vgetq_lane_s8::<0>(max)) };
    match (lo > i8::MIN, hi < i8::MAX) {
        (true, true) => CLAMP_BOTH,
        (true, false) => CLAMP_LOWER,
        (false, true) => CLAMP_UPPER,
        (false, false) => CLAMP_NONE,
    }
}

/// The parameters of [`panel_tiles_single_right`]'s output stage, in the
/// order it loads them: the block's multipliers (Q0.31, channels 0-3 and
/// 4-7), negated right shifts (`-r`, `r >= 1`), the output zero point as 8
/// int16 lanes, the activation bounds as 16 int8 lanes.
#[repr(C, align(16))]
pub(super) struct SingleRightStage {
    pub(super) multiplier: [int32x4_t; 2],
    pub(super) neg_right_shift: [int32x4_t; 2],
    pub(super) zero_point: int16x8_t,
    pub(super) min: int8x16_t,
    pub(super) max: int8x16_t,
}

/// `tiles` whole 8 x 8 tiles of one weight block, one after another, with
/// the single-rounding output stage of a block whose channels all shift
/// right (`requantize_single_right`) and no row offsets: per tile the bias
/// loads, `chunks` whole steps and with `half` a half step of
/// `dot_panel_steps`, the stage and the 8 row stores, all in one loop
/// (the accumulators never leave v16-v31 and nothing is spilled: about 12
/// instructions of loop and set-up per tile instead of some 45 when each
/// tile went through the compiled stage). The tiles' panels follow one
/// another (`128 (chunks + half)` bytes each) and so do their output rows
/// (tile `t` at `out + 8 t stride`).
///
/// # Safety
/// The CPU must have dotprod; `tiles >= 1`; `chunks + half >= 1`; `x` must
/// be valid for reading `128 (chunks + half) tiles` bytes, `w` for
/// `128 (chunks + half)`, `bias` for 64 (`[b0, b1, b0, b1]`), and the 8 bytes
/// at `out + r stride` for writing for every `r < 8 tiles`.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub(super) unsafe fn panel_tiles_single_right<const CLAMP: u8>(
    x: *const i8,
    w: *const i8,
    chunks: usize,
    half: bool,
    bias: &[int32x4_t; 4],
    stage: &SingleRightStage,
    out: *mut i8,
    stride: usize,
    tiles: usize,
) {
    debug_assert!(tiles >= 1 && chunks + usize::from(half) >= 1);
    let half = usize::from(half);
    let (bias, stage) = (bias.as_ptr(), core::ptr::from_ref(stage));
    // SAFETY: reads and writes only what the caller guarantees (the
    // panel and weights as `dot_panel_steps` reads them, per tile; 64
    // bytes of `bias`; the 112 bytes of `stage`; 8 bytes of each of the
    // 8 tiles rows); sdot needs dotprod, which every caller (`gemm_dot`)
    // enables. No stack.
    unsafe {
        clamp_asm!(
            CLAMP,
            panel_tiles_asm!(x, w, chunks, half, bias, stage, out, stride, tiles)
        )
    }
}
