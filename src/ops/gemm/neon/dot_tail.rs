//! The `sdot` kernels of the last row tile of a panel group when it has
//! fewer than 8 rows (small-M layers: a CNN's 6 x 6, 3 x 3 or 7 x 7 output
//! pixels): 4, 2 or 1 rows of the tile's panel against the block's 8
//! channels, so that a tail of `r` rows costs about `r / 8` of an 8 x 8
//! tile instead of a whole one. The panel is `dot_panel`'s (step `i` of
//! tile row `r` at `128 i + 16 r`); a kernel reads its rows of each step
//! and steps on by 128 bytes. Weights in v0-v7 and rows from v8 as
//! `dot_panel` keeps them, row `r`'s accumulators in v(16 + 2r),
//! v(17 + 2r).

use super::dot::PanelTiles;
use super::dot_tail4::tail4_group;
use super::{initial_acc, StoreTile};
use core::arch::aarch64::*;
use core::mem::MaybeUninit;

/// `chunks` whole steps of 16 depth bytes, then with `half` a half step
/// (depth groups 0 and 1 only, as `dot_panel_half`), on 4 rows x 8
/// channels: per step two 4-register loads of weights and one of the 4
/// rows, 32 `sdot`s (37 instructions with the loop against the 8 x 8
/// tile's 70).
///
/// # Safety
/// The CPU must have dotprod; `x` must be valid for reading
/// `128 (chunks + half) - 16 (4)` bytes (a tile's panel from its row
/// `r0`, `r0 + 4 <= 8`) and `w` for `128 (chunks + half)`.
#[inline(always)]
pub(super) unsafe fn dot_tail_rows4(
    acc: &mut [[int32x4_t; 2]; 4],
    x: *const i8,
    w: *const i8,
    chunks: usize,
    half: bool,
) {
    // SAFETY: reads 64 bytes at x + 128 i for each step i and 128 (a
    // half step: 64) at w + 128 i (the caller's guarantee); sdot needs
    // dotprod, which every caller (`gemm_dot`) enables. No stack, no
    // writes to memory.
    unsafe {
        core::arch::asm!(
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

            w = inout(reg) w => _,
            x = inout(reg) x => _,
            chunks = inout(reg) chunks => _,
            half = in(reg) usize::from(half),
            step = in(reg) 128usize,
            inout("v16") acc[0][0],
            inout("v17") acc[0][1],
            inout("v18") acc[1][0],
            inout("v19") acc[1][1],
            inout("v20") acc[2][0],
            inout("v21") acc[2][1],
            inout("v22") acc[3][0],
            inout("v23") acc[3][1],
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
            options(readonly, nostack),
        );
    }
}

/// [`dot_tail_rows4`] on 2 rows: per step two 4-register loads of weights,
/// one 2-register load of rows, 16 `sdot`s.
///
/// # Safety
/// The CPU must have dotprod; `x` must be valid for reading
/// `128 (chunks + half) - 16 (6)` bytes (a tile's panel from its row
/// `r0`, `r0 + 2 <= 8`) and `w` for `128 (chunks + half)`.
#[inline(always)]
pub(super) unsafe fn dot_tail_rows2(
    acc: &mut [[int32x4_t; 2]; 2],
    x: *const i8,
    w: *const i8,
    chunks: usize,
    half: bool,
) {
    // SAFETY: reads 32 bytes at x + 128 i for each step i and 128 (a
    // half step: 64) at w + 128 i (the caller's guarantee); sdot needs
    // dotprod, which every caller (`gemm_dot`) enables. No stack, no
    // writes to memory.
    unsafe {
        core::arch::asm!(
            "cbz {chunks}, 5f",
            "2:",
            "ld1 {{v0.16b, v1.16b, v2.16b, v3.16b}}, [{w}], #64",
            "ld1 {{v4.16b, v5.16b, v6.16b, v7.16b}}, [{w}], #64",
            "ld1 {{v8.16b, v9.16b}}, [{x}], {step}",
            "sdot v16.4s, v0.16b, v8.4b[0]",
            "sdot v17.4s, v1.16b, v8.4b[0]",
            "sdot v18.4s, v0.16b, v9.4b[0]",
            "sdot v19.4s, v1.16b, v9.4b[0]",
            "sdot v16.4s, v2.16b, v8.4b[1]",
            "sdot v17.4s, v3.16b, v8.4b[1]",
            "sdot v18.4s, v2.16b, v9.4b[1]",
            "sdot v19.4s, v3.16b, v9.4b[1]",
            "sdot v16.4s, v4.16b, v8.4b[2]",
            "sdot v17.4s, v5.16b, v8.4b[2]",
            "sdot v18.4s, v4.16b, v9.4b[2]",
            "sdot v19.4s, v5.16b, v9.4b[2]",
            "sdot v16.4s, v6.16b, v8.4b[3]",
            "sdot v17.4s, v7.16b, v8.4b[3]",
            "sdot v18.4s, v6.16b, v9.4b[3]",
            "sdot v19.4s, v7.16b, v9.4b[3]",
            "subs {chunks}, {chunks}, #1",
            "b.ne 2b",
            "5:",
            "cbz {half}, 6f",
            "ld1 {{v0.16b, v1.16b, v2.16b, v3.16b}}, [{w}]",
            "ld1 {{v8.16b, v9.16b}}, [{x}]",
            "sdot v16.4s, v0.16b, v8.4b[0]",
            "sdot v17.4s, v1.16b, v8.4b[0]",
            "sdot v18.4s, v0.16b, v9.4b[0]",
            "sdot v19.4s, v1.16b, v9.4b[0]",
            "sdot v16.4s, v2.16b, v8.4b[1]",
            "sdot v17.4s, v3.16b, v8.4b[1]",
            "sdot v18.4s, v2.16b, v9.4b[1]",
            "sdot v19.4s, v3.16b, v9.4b[1]",
            "6:",

            w = inout(reg) w => _,
            x = inout(reg) x => _,
            chunks = inout(reg) chunks => _,
            half = in(reg) usize::from(half),
            step = in(reg) 128usize,
            inout("v16") acc[0][0],
            inout("v17") acc[0][1],
            inout("v18") acc[1][0],
            inout("v19") acc[1][1],
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
            options(readonly, nostack),
        );
    }
}

/// [`dot_tail_rows4`] on 1 row (`acc`: its channels 0-3, 4-7): per step
/// two 4-register loads of weights, one row load, 8 `sdot`s.
///
/// # Safety
/// The CPU must have dotprod; `x` must be valid for reading
/// `128 (chunks + half) - 16 (7)` bytes (a tile's panel from its row
/// `r0`, `r0 + 1 <= 8`) and `w` for `128 (chunks + half)`.
#[inline(always)]
pub(super) unsafe fn dot_tail_rows1(
    acc: &mut [int32x4_t; 2],
    x: *const i8,
    w: *const i8,
    chunks: usize,
    half: bool,
) {
    // SAFETY: reads 16 bytes at x + 128 i for each step i and 128 (a
    // half step: 64) at w + 128 i (the caller's guarantee); sdot needs
    // dotprod, which every caller (`gemm_dot`) enables. No stack, no
    // writes to memory.
    unsafe {
        core::arch::asm!(
            "cbz {chunks}, 5f",
            "2:",
            "ld1 {{v0.16b, v1.16b, v2.16b, v3.16b}}, [{w}], #64",
            "ld1 {{v4.16b, v5.16b, v6.16b, v7.16b}}, [{w}], #64",
            "ld1 {{v8.16b}}, [{x}], {step}",
            "sdot v16.4s, v0.16b, v8.4b[0]",
            "sdot v17.4s, v1.16b, v8.4b[0]",
            "sdot v16.4s, v2.16b, v8.4b[1]",
            "sdot v17.4s, v3.16b, v8.4b[1]",
            "sdot v16.4s, v4.16b, v8.4b[2]",
            "sdot v17.4s, v5.16b, v8.4b[2]",
            "sdot v16.4s, v6.16b, v8.4b[3]",
            "sdot v17.4s, v7.16b, v8.4b[3]",
            "subs {chunks}, {chunks}, #1",
            "b.ne 2b",
            "5:",
            "cbz {half}, 6f",
            "ld1 {{v0.16b, v1.16b, v2.16b, v3.16b}}, [{w}]",
            "ld1 {{v8.16b}}, [{x}]",
            "sdot v16.4s, v0.16b, v8.4b[0]",
            "sdot v17.4s, v1.16b, v8.4b[0]",
            "sdot v16.4s, v2.16b, v8.4b[1]",
            "sdot v17.4s, v3.16b, v8.4b[1]",
            "6:",

            w = inout(reg) w => _,
            x = inout(reg) x => _,
            chunks = inout(reg) chunks => _,
            half = in(reg) usize::from(half),
            step = in(reg) 128usize,
            inout("v16") acc[0],
            inout("v17") acc[1],
            out("v0") _,
            out("v1") _,
            out("v2") _,
            out("v3") _,
            out("v4") _,
            out("v5") _,
            out("v6") _,
            out("v7") _,
            out("v8") _,
            options(readonly, nostack),
        );
    }
}

/// The starting accumulators of `R` rows (2 or 4) without row offsets,
/// every row `bias` (`[b0, b1, b0, b1]`), loaded straight into the
/// registers the kernels above keep them in (as `bias_accumulators`).
#[inline(always)]
fn bias_rows<const R: usize>(bias: &[int32x4_t; 4]) -> [[int32x4_t; 2]; R] {
    debug_assert!(R == 2 || R == 4);
    // SAFETY: neon is a compile-time target feature (cfg on this module).
    let zero = unsafe { vdupq_n_s32(0) };
    if R == 4 {
        let mut acc = [[zero; 2]; 4];
        // SAFETY: reads the 64 bytes of `bias`; no stack, no writes to memory.
        unsafe {
            core::arch::asm!(
                "ld1 {{v16.4s, v17.4s, v18.4s, v19.4s}}, [{b}]",
                "ld1 {{v20.4s, v21.4s, v22.4s, v23.4s}}, [{b}]",
                b = in(reg) bias.as_ptr(),
                out("v16") acc[0][0],
                out("v17") acc[0][1],
                out("v18") acc[1][0],
                out("v19") acc[1][1],
                out("v20") acc[2][0],
                out("v21") acc[2][1],
                out("v22") acc[3][0],
                out("v23") acc[3][1],
                options(readonly, nostack, preserves_flags),
            );
        }
        core::array::from_fn(|r| acc[r])
    } else {
        let mut acc = [[zero; 2]; 2];
        // SAFETY: reads the 64 bytes of `bias`; no stack, no writes to memory.
        unsafe {
            core::arch::asm!(
                "ld1 {{v16.4s, v17.4s, v18.4s, v19.4s}}, [{b}]",
                b = in(reg) bias.as_ptr(),
                out("v16") acc[0][0],
                out("v17") acc[0][1],
                out("v18") acc[1][0],
                out("v19") acc[1][1],
                options(readonly, nostack, preserves_flags),
            );
        }
        core::array::from_fn(|r| acc[r.min(1)])
    }
}

impl<const IN_PLACE: bool, const TAIL: bool> PanelTiles<'_, IN_PLACE, TAIL> {
    /// The group's last tile when it has `mr` rows, `mr` in `1..=6`, from
    /// its panel `x`: its rows as 4, 2 and 1-row pieces (`mr`'s binary
    /// digits), each multiplied by its kernel above and stored through the
    /// block's stage (a 1-row piece as a 2-row tile storing one). Seven
    /// rows take the whole 8 x 8 tile (4 + 2 + 1 would save 5 instructions
    /// a step and add two stages).
    ///
    /// # Safety
    /// The CPU must have dotprod (`gemm_dot` only builds a `PanelTiles`);
    /// `x` holds the tile's `128 (chunks + half)` written bytes and the
    /// block `w` as many; `chunks + half >= 1`.
    ///
    /// Inlined into the loop of the tail group's tiles only (`TAIL`): in
    /// the loop of whole tiles its code made the register allocation worse
    /// for every tile.
    #[inline(always)]
    pub(super) unsafe fn tail<S: StoreTile>(
        &mut self,
        store: S,
        x: &[MaybeUninit<i8>],
        bias: &[int32x4_t; 4],
        out_row: usize,
        mr: usize,
    ) {
        debug_assert!((1..=6).contains(&mr));
        let (chunks, half) = self.steps;
        debug_assert!(x.len() >= 128 * (chunks + usize::from(half)));
        debug_assert!(self.w.len() >= 128 * (chunks + usize::from(half)));
        let (out_col, nr) = self.cols;
        let first_row = self.rows.0;
        let (x, w) = (x.as_ptr().cast::<i8>(), self.w.as_ptr());
        let mut r0 = 0;
        for piece in [4, 2, 1] {
            if mr & piece == 0 {
                continue;
            }
            let row = first_row + out_row + r0;
            // SAFETY: (all pieces) r0 + piece <= mr <= 6 < 8, so the
            // piece's rows of each step lie within the tile's panel; the
            // caller's guarantees for the rest.
            unsafe {
                let xr = x.add(16 * r0);
                if piece == 4 {
                    let mut acc = match self.row_offsets {
                        None => bias_rows::<4>(bias),
                        Some(_) => initial_acc::<4>(self.p.bias, self.row_offsets, row, 4),
                    };
                    dot_tail_rows4(&mut acc, xr, w, chunks, half);
                    let at = out_row + r0;
                    store.store::<4>(&acc, self.p, self.output, self.stride, at, 4, out_col, nr);
                } else {
                    let mut acc = match self.row_offsets {
                        None => bias_rows::<2>(bias),
                        Some(_) => initial_acc::<2>(self.p.bias, self.row_offsets, row, piece),
                    };
                    if piece == 2 {
                        dot_tail_rows2(&mut acc, xr, w, chunks, half);
                    } else {
                        dot_tail_rows1(&mut acc[0], xr, w, chunks, half);
                    }
                    let at = out_row + r0;
                    store.store::<2>(
                        &acc,
                        self.p,
                        self.output,
                        self.stride,
                        at,
                        piece,
                        out_col,
                        nr,
                    );
                }
            }
            r0 += piece;
        }
    }
}
