//! The `smmla` steps (FEAT_I8MM) of [`super::mmla`]'s 8 x 8 tile: whole
//! steps of 16 depth bytes and the half step of 8 that ends a depth of
//! `16 n + 8`, on 2 x 2 blocks of row pairs and channel pairs held in
//! v16-v31. A leaf: inlined into the kernels of [`super::mmla`], whose
//! i8mm feature the `smmla`s need.

use core::arch::aarch64::*;

/// `chunks` steps of 16 depth bytes on the 8 x 8 tile, `acc[i][j]` the
/// 2 x 2 block of row pair `i` and channel pair `j`, from a panel of row
/// pairs (see `dense::fill_pairs`) and a packed weight block: per step two
/// 4-register loads of weights and two of row pairs, 8 `zip`s pairing the
/// weights' channels, 32 `smmla`s.
///
/// # Safety
/// The CPU must have i8mm; `chunks >= 1`; `x` and `w` must each be valid
/// for reading `128 chunks` bytes.
#[inline(always)]
pub(super) unsafe fn mmla_panel(
    acc: &mut [[int32x4_t; 4]; 4],
    x: *const i8,
    w: *const i8,
    chunks: usize,
) {
    debug_assert!(chunks >= 1);
    // Weights: v0-v7 = packed vectors 2g + h (depth group g of 4 bytes,
    // channels 4h..4h + 4); zip1/zip2 of groups (0, 1) then (2, 3), .4s,
    // give channel pairs (0, 1), (2, 3) from h = 0 and (4, 5), (6, 7) from
    // h = 1 in v12-v15. Row pairs in v8-v11; acc[i][j] in v(16 + 4i + j).
    // Written in assembly: `smmla` has no stable intrinsic.
    // SAFETY: reads 128 chunks bytes at each of x and w (the caller's
    // guarantee), chunks >= 1; smmla needs i8mm, which every caller
    // (`gemm_mmla`) enables. No stack, no writes to memory.
    unsafe {
        core::arch::asm!(
            "2:",
            "ld1 {{v0.16b, v1.16b, v2.16b, v3.16b}}, [{w}], #64",
            "ld1 {{v4.16b, v5.16b, v6.16b, v7.16b}}, [{w}], #64",
            "ld1 {{v8.16b, v9.16b, v10.16b, v11.16b}}, [{x}], #64",
            "zip1 v12.4s, v0.4s, v2.4s",
            "zip2 v13.4s, v0.4s, v2.4s",
            "zip1 v14.4s, v1.4s, v3.4s",
            "zip2 v15.4s, v1.4s, v3.4s",
            "smmla v16.4s, v8.16b, v12.16b",
            "smmla v17.4s, v8.16b, v13.16b",
            "smmla v18.4s, v8.16b, v14.16b",
            "smmla v19.4s, v8.16b, v15.16b",
            "smmla v20.4s, v9.16b, v12.16b",
            "smmla v21.4s, v9.16b, v13.16b",
            "smmla v22.4s, v9.16b, v14.16b",
            "smmla v23.4s, v9.16b, v15.16b",
            "smmla v24.4s, v10.16b, v12.16b",
            "smmla v25.4s, v10.16b, v13.16b",
            "smmla v26.4s, v10.16b, v14.16b",
            "smmla v27.4s, v10.16b, v15.16b",
            "smmla v28.4s, v11.16b, v12.16b",
            "smmla v29.4s, v11.16b, v13.16b",
            "smmla v30.4s, v11.16b, v14.16b",
            "smmla v31.4s, v11.16b, v15.16b",
            "ld1 {{v8.16b, v9.16b, v10.16b, v11.16b}}, [{x}], #64",
            "zip1 v12.4s, v4.4s, v6.4s",
            "zip2 v13.4s, v4.4s, v6.4s",
            "zip1 v14.4s, v5.4s, v7.4s",
            "zip2 v15.4s, v5.4s, v7.4s",
            "smmla v16.4s, v8.16b, v12.16b",
            "smmla v17.4s, v8.16b, v13.16b",
            "smmla v18.4s, v8.16b, v14.16b",
            "smmla v19.4s, v8.16b, v15.16b",
            "smmla v20.4s, v9.16b, v12.16b",
            "smmla v21.4s, v9.16b, v13.16b",
            "smmla v22.4s, v9.16b, v14.16b",
            "smmla v23.4s, v9.16b, v15.16b",
            "smmla v24.4s, v10.16b, v12.16b",
            "smmla v25.4s, v10.16b, v13.16b",
            "smmla v26.4s, v10.16b, v14.16b",
            "smmla v27.4s, v10.16b, v15.16b",
            "smmla v28.4s, v11.16b, v12.16b",
            "smmla v29.4s, v11.16b, v13.16b",
            "smmla v30.4s, v11.16b, v14.16b",
            "smmla v31.4s, v11.16b, v15.16b",
            "subs {chunks}, {chunks}, #1",
            "b.ne 2b",
            w = inout(reg) w => _,
            x = inout(reg) x => _,
            chunks = inout(reg) chunks => _,
            inout("v16") acc[0][0],
            inout("v17") acc[0][1],
            inout("v18") acc[0][2],
            inout("v19") acc[0][3],
            inout("v20") acc[1][0],
            inout("v21") acc[1][1],
            inout("v22") acc[1][2],
            inout("v23") acc[1][3],
            inout("v24") acc[2][0],
            inout("v25") acc[2][1],
            inout("v26") acc[2][2],
            inout("v27") acc[2][3],
            inout("v28") acc[3][0],
            inout("v29") acc[3][1],
            inout("v30") acc[3][2],
            inout("v31") acc[3][3],
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
/// in `1..=8`): the step's second 64 bytes of row pairs (depths 8 to 16)
/// and its weight groups 2 and 3 are zero padding, so only the first half
/// of a [`mmla_panel`] step runs: one 4-register load of weights, one of
/// row pairs, 4 `zip`s, 16 `smmla`s (22 instructions instead of 42).
///
/// # Safety
/// The CPU must have i8mm; `x` and `w` must each be valid for reading 64
/// bytes.
#[inline(always)]
pub(super) unsafe fn mmla_panel_half(acc: &mut [[int32x4_t; 4]; 4], x: *const i8, w: *const i8) {
    // Registers as in `mmla_panel`'s first half.
    // SAFETY: reads 64 bytes at each of x and w (the caller's guarantee);
    // smmla needs i8mm, which every caller (`gemm_mmla`) enables. No
    // stack, no writes to memory.
    unsafe {
        core::arch::asm!(
            "ld1 {{v0.16b, v1.16b, v2.16b, v3.16b}}, [{w}]",
            "ld1 {{v8.16b, v9.16b, v10.16b, v11.16b}}, [{x}]",
            "zip1 v12.4s, v0.4s, v2.4s",
            "zip2 v13.4s, v0.4s, v2.4s",
            "zip1 v14.4s, v1.4s, v3.4s",
            "zip2 v15.4s, v1.4s, v3.4s",
            "smmla v16.4s, v8.16b, v12.16b",
            "smmla v17.4s, v8.16b, v13.16b",
            "smmla v18.4s, v8.16b, v14.16b",
            "smmla v19.4s, v8.16b, v15.16b",
            "smmla v20.4s, v9.16b, v12.16b",
            "smmla v21.4s, v9.16b, v13.16b",
            "smmla v22.4s, v9.16b, v14.16b",
            "smmla v23.4s, v9.16b, v15.16b",
            "smmla v24.4s, v10.16b, v12.16b",
            "smmla v25.4s, v10.16b, v13.16b",
            "smmla v26.4s, v10.16b, v14.16b",
            "smmla v27.4s, v10.16b, v15.16b",
            "smmla v28.4s, v11.16b, v12.16b",
            "smmla v29.4s, v11.16b, v13.16b",
            "smmla v30.4s, v11.16b, v14.16b",
            "smmla v31.4s, v11.16b, v15.16b",
            w = in(reg) w,
            x = in(reg) x,
            inout("v16") acc[0][0],
            inout("v17") acc[0][1],
            inout("v18") acc[0][2],
            inout("v19") acc[0][3],
            inout("v20") acc[1][0],
            inout("v21") acc[1][1],
            inout("v22") acc[1][2],
            inout("v23") acc[1][3],
            inout("v24") acc[2][0],
            inout("v25") acc[2][1],
            inout("v26") acc[2][2],
            inout("v27") acc[2][3],
            inout("v28") acc[3][0],
            inout("v29") acc[3][1],
            inout("v30") acc[3][2],
            inout("v31") acc[3][3],
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
