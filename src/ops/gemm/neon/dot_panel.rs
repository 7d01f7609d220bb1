//! The `sdot` tile kernels of [`super::dot`]: an 8 x 8 tile of int32
//! accumulators in v16-v31, written in assembly so that every register
//! stays where the next kernel expects it (the bias loads, the panel steps,
//! the in-place depth 8).

use core::arch::aarch64::*;

/// `chunks` steps of 16 depth bytes on the 8 x 8 tile from a packed panel
/// (see `dot::fill_panel`): per step two 4-register loads of weights and two of
/// input rows, 64 `sdot`s.
///
/// # Safety
/// The CPU must have dotprod; `chunks >= 1`; `x` and `w` must each be valid
/// for reading `128 chunks` bytes.
#[inline(always)]
pub(super) unsafe fn dot_panel(
    acc: &mut [[int32x4_t; 2]; 8],
    x: *const i8,
    w: *const i8,
    chunks: usize,
) {
    debug_assert!(chunks >= 1);
    // One step per iteration: two 4-register loads of weights (v0-v7, vector
    // 2g + h = depth group g, channels 4h..4h + 4), then rows 0-3 (v8-v11)
    // and 4-7 (v12-v15), each row's 4 depth groups in its 4 lanes; row r's
    // accumulators are v(16 + 2r), v(17 + 2r). Written in assembly because
    // the compiler splits 4-register loads into pairs (75 instructions a step
    // instead of 70).
    // SAFETY: reads 128 chunks bytes at each of x and w (the caller's
    // guarantee), chunks >= 1; sdot needs dotprod, which every caller
    // (`gemm_dot`) enables. No stack, no writes to memory.
    unsafe {
        core::arch::asm!(
            "2:",
            "ld1 {{v0.16b, v1.16b, v2.16b, v3.16b}}, [{w}], #64",
            "ld1 {{v4.16b, v5.16b, v6.16b, v7.16b}}, [{w}], #64",
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
            "subs {chunks}, {chunks}, #1",
            "b.ne 2b",
            w = inout(reg) w => _,
            x = inout(reg) x => _,
            chunks = inout(reg) chunks => _,
            inout("v16") acc[0][0],
            inout("v17") acc[0][1],
            inout("v18") acc[1][0],
            inout("v19") acc[1][1],
            inout("v20") acc[2][0],
            inout("v21") acc[2][1],
            inout("v22") acc[3][0],
            inout("v23") acc[3][1],
            inout("v24") acc[4][0],
            inout("v25") acc[4][1],
            inout("v26") acc[5][0],
            inout("v27") acc[5][1],
            inout("v28") acc[6][0],
            inout("v29") acc[6][1],
            inout("v30") acc[7][0],
            inout("v31") acc[7][1],
            out("v0") _,
            out("v1") _,
            out("v2") _,
            out("v3") _,
            out("v4") _,
            out("v5") _,
            out("v6") _,
            out("v7") _,
            out("v8") _,
            out("v9") _,
            out("v10") _,
            out("v11") _,
            out("v12") _,
            out("v13") _,
            out("v14") _,
            out("v15") _,
            options(readonly, nostack),
        );
    }
}

/// The last, half step of a depth whose tail is at most 8 bytes (`k % 16`
/// in `1..=8`): its depth groups 2 and 3 are zero padding in both the
/// panel and the weights, so only groups 0 and 1 are multiplied: one
/// 4-register load of weights, two of rows, 32 `sdot`s (35 instructions
/// instead of a whole step's 70). A depth of 8 (a pointwise layer after an
/// 8-channel one) is this step alone; 24 is one whole step and this one.
///
/// # Safety
/// The CPU must have dotprod; `x` must be valid for reading 128 bytes and
/// `w` for 64.
#[inline(always)]
pub(super) unsafe fn dot_panel_half(acc: &mut [[int32x4_t; 2]; 8], x: *const i8, w: *const i8) {
    // Registers as in `dot_panel`: weights of groups 0 and 1 in v0-v3,
    // rows 0-3 in v8-v11 and 4-7 in v12-v15 (lanes 2 and 3 unused).
    // SAFETY: reads 128 bytes at x and 64 at w (the caller's guarantee);
    // sdot needs dotprod, which every caller (`gemm_dot`) enables. No
    // stack, no writes to memory.
    unsafe {
        core::arch::asm!(
            "ld1 {{v0.16b, v1.16b, v2.16b, v3.16b}}, [{w}]",
            "ld1 {{v8.16b, v9.16b, v10.16b, v11.16b}}, [{x}], #64",
            "ld1 {{v12.16b, v13.16b, v14.16b, v15.16b}}, [{x}]",
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
            w = in(reg) w,
            x = inout(reg) x => _,
            inout("v16") acc[0][0],
            inout("v17") acc[0][1],
            inout("v18") acc[1][0],
            inout("v19") acc[1][1],
            inout("v20") acc[2][0],
            inout("v21") acc[2][1],
            inout("v22") acc[3][0],
            inout("v23") acc[3][1],
            inout("v24") acc[4][0],
            inout("v25") acc[4][1],
            inout("v26") acc[5][0],
            inout("v27") acc[5][1],
            inout("v28") acc[6][0],
            inout("v29") acc[6][1],
            inout("v30") acc[7][0],
            inout("v31") acc[7][1],
            out("v0") _,
            out("v1") _,
            out("v2") _,
            out("v3") _,
            out("v8") _,
            out("v9") _,
            out("v10") _,
            out("v11") _,
            out("v12") _,
            out("v13") _,
            out("v14") _,
            out("v15") _,
            options(readonly, nostack),
        );
    }
}

/// The accumulators of an 8 x 8 tile without row offsets, every row
/// `bias` (`[b0, b1, b0, b1]`: two rows of the block's bias): four
/// 4-register loads, straight into the registers [`dot_panel`] keeps them
/// in (the compiler copies one pair of bias registers into the other 14
/// accumulators, 15 instructions or more).
#[inline(always)]
pub(super) fn bias_accumulators(bias: &[int32x4_t; 4]) -> [[int32x4_t; 2]; 8] {
    // Every value is overwritten by the loads (the zeros compile to nothing).
    // SAFETY: neon is a compile-time target feature (cfg on this module).
    let mut acc = [[unsafe { vdupq_n_s32(0) }; 2]; 8];
    // SAFETY: reads the 64 bytes of `bias`; no stack, no writes to memory.
    unsafe {
        core::arch::asm!(
            "ld1 {{v16.4s, v17.4s, v18.4s, v19.4s}}, [{b}]",
            "ld1 {{v20.4s, v21.4s, v22.4s, v23.4s}}, [{b}]",
            "ld1 {{v24.4s, v25.4s, v26.4s, v27.4s}}, [{b}]",
            "ld1 {{v28.4s, v29.4s, v30.4s, v31.4s}}, [{b}]",
            b = in(reg) bias.as_ptr(),
            out("v16") acc[0][0],
            out("v17") acc[0][1],
            out("v18") acc[1][0],
            out("v19") acc[1][1],
            out("v20") acc[2][0],
            out("v21") acc[2][1],
            out("v22") acc[3][0],
            out("v23") acc[3][1],
            out("v24") acc[4][0],
            out("v25") acc[4][1],
            out("v26") acc[5][0],
            out("v27") acc[5][1],
            out("v28") acc[6][0],
            out("v29") acc[6][1],
            out("v30") acc[7][0],
            out("v31") acc[7][1],
            options(readonly, nostack, preserves_flags),
        );
    }
    acc
}

/// The whole product of a depth of exactly 8 on an 8 x 8 tile, its 8 rows
/// read in place: 8 rows of 8 bytes are 64 contiguous input bytes, one
/// 4-register load, two rows per register (row `2i` in lanes 0 and 1 of
/// register `i`, row `2i + 1` in lanes 2 and 3). One 4-register load of
/// weights (depth groups 0 and 1), 32 `sdot`s: no panel copy, 34
/// instructions against [`dot_panel_half`]'s 35 after a copy of the rows.
///
/// # Safety
/// The CPU must have dotprod; `x` must be valid for reading 64 bytes and
/// `w` for 64.
#[inline(always)]
pub(super) unsafe fn dot_rows_depth8(acc: &mut [[int32x4_t; 2]; 8], x: *const i8, w: *const i8) {
    // Weights as in `dot_panel`: group 0 in v0-v1, group 1 in v2-v3
    // (channels 0-3, 4-7); rows 0-7 in v8-v11 by pairs.
    // SAFETY: reads 64 bytes at each of x and w (the caller's guarantee);
    // sdot needs dotprod, which every caller (`gemm_dot`) enables. No
    // stack, no writes to memory.
    unsafe {
        core::arch::asm!(
            "ld1 {{v0.16b, v1.16b, v2.16b, v3.16b}}, [{w}]",
            "ld1 {{v8.16b, v9.16b, v10.16b, v11.16b}}, [{x}]",
            "sdot v16.4s, v0.16b, v8.4b[0]",
            "sdot v17.4s, v1.16b, v8.4b[0]",
            "sdot v18.4s, v0.16b, v8.4b[2]",
            "sdot v19.4s, v1.16b, v8.4b[2]",
            "sdot v20.4s, v0.16b, v9.4b[0]",
            "sdot v21.4s, v1.16b, v9.4b[0]",
            "sdot v22.4s, v0.16b, v9.4b[2]",
            "sdot v23.4s, v1.16b, v9.4b[2]",
            "sdot v24.4s, v0.16b, v10.4b[0]",
            "sdot v25.4s, v1.16b, v10.4b[0]",
            "sdot v26.4s, v0.16b, v10.4b[2]",
            "sdot v27.4s, v1.16b, v10.4b[2]",
            "sdot v28.4s, v0.16b, v11.4b[0]",
            "sdot v29.4s, v1.16b, v11.4b[0]",
            "sdot v30.4s, v0.16b, v11.4b[2]",
            "sdot v31.4s, v1.16b, v11.4b[2]",
            "sdot v16.4s, v2.16b, v8.4b[1]",
            "sdot v17.4s, v3.16b, v8.4b[1]",
            "sdot v18.4s, v2.16b, v8.4b[3]",
            "sdot v19.4s, v3.16b, v8.4b[3]",
            "sdot v20.4s, v2.16b, v9.4b[1]",
            "sdot v21.4s, v3.16b, v9.4b[1]",
            "sdot v22.4s, v2.16b, v9.4b[3]",
            "sdot v23.4s, v3.16b, v9.4b[3]",
            "sdot v24.4s, v2.16b, v10.4b[1]",
            "sdot v25.4s, v3.16b, v10.4b[1]",
            "sdot v26.4s, v2.16b, v10.4b[3]",
            "sdot v27.4s, v3.16b, v10.4b[3]",
            "sdot v28.4s, v2.16b, v11.4b[1]",
            "sdot v29.4s, v3.16b, v11.4b[1]",
            "sdot v30.4s, v2.16b, v11.4b[3]",
            "sdot v31.4s, v3.16b, v11.4b[3]",
            w = in(reg) w,
            x = in(reg) x,
            inout("v16") acc[0][0],
            inout("v17") acc[0][1],
            inout("v18") acc[1][0],
            inout("v19") acc[1][1],
            inout("v20") acc[2][0],
            inout("v21") acc[2][1],
            inout("v22") acc[3][0],
            inout("v23") acc[3][1],
            inout("v24") acc[4][0],
            inout("v25") acc[4][1],
            inout("v26") acc[5][0],
            inout("v27") acc[5][1],
            inout("v28") acc[6][0],
            inout("v29") acc[6][1],
            inout("v30") acc[7][0],
            inout("v31") acc[7][1],
            out("v0") _,
            out("v1") _,
            out("v2") _,
            out("v3") _,
            out("v8") _,
            out("v9") _,
            out("v10") _,
            out("v11") _,
            options(readonly, nostack, preserves_flags),
        );
    }
}

/// `chunks` whole steps then, with `half`, one [`dot_panel_half`].
///
/// # Safety
/// The CPU must have dotprod; `chunks + half >= 1`; `x` and `w` must each
/// be valid for reading `128 (chunks + half)` bytes.
#[inline(always)]
pub(super) unsafe fn dot_panel_steps(
    acc: &mut [[int32x4_t; 2]; 8],
    x: *const i8,
    w: *const i8,
    chunks: usize,
    half: bool,
) {
    // SAFETY: the caller's guarantees, step by step.
    unsafe {
        if chunks > 0 {
            dot_panel(acc, x, w, chunks);
        }
        if half {
            dot_panel_half(acc, x.add(128 * chunks), w.add(128 * chunks));
        }
    }
}
