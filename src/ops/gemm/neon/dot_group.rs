//! A panel group's tiles of one weight block whose channels all shift
//! right, with the block's bias and single-rounding stage made at `new()`
//! (`GemmParams::single_right`): the whole 8 x 8 tiles in
//! [`panel_tiles_single_right`]'s loop and the group's last rows, when they
//! are 4 or a ninth row, in the assembly kernels of [`super::dot_tail4`] and
//! [`super::dot_tile9`]. No per-channel loads, no copies, no compiled stage.

use super::dot_tail4::tail4_single_right;
use super::dot_tile9::tile9_single_right;
use super::dot_tiles::{panel_tiles_single_right, with_clamp, SingleRightStage};
use crate::ops::gemm::params::SingleRightBlock;
use core::arch::aarch64::*;
use core::mem::MaybeUninit;

const MR: usize = 8;
const NR: usize = 8;

/// Whether [`single_right_group`] runs a group of `rows` output rows: whole
/// tiles, then none, 4, or (after at least one whole tile) 1 row.
#[inline(always)]
pub(super) fn group_runs_made(rows: usize) -> bool {
    match rows % MR {
        0 | 4 => true,
        1 => rows > MR,
        _ => false,
    }
}

/// Every row of a panel group (`tile_bytes` per tile in `panel`) of one
/// block whose channels all shift right, with its bias and stage `made`:
/// the block's weights `w`, its steps of 16 depth bytes, the group's output
/// rows `group..group_end` (as [`group_runs_made`] allows), (output stride,
/// the block's first column), the clamp kind. Without `TAIL` the group is
/// whole tiles only (the last-rows kernels are not built into the caller's
/// loop of whole-tile groups: they made it slower for every block).
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub(super) fn single_right_group<const TAIL: bool>(
    panel: &[MaybeUninit<i8>],
    tile_bytes: usize,
    w: &[i8],
    made: &SingleRightBlock,
    steps: (usize, bool),
    (group, group_end): (usize, usize),
    (stride, out_col): (usize, usize),
    kind: u8,
    output: &mut [i8],
) {
    let rows = group_end - group;
    debug_assert!(rows > 0 && group_runs_made(rows));
    let (chunks, half) = steps;
    debug_assert_eq!(tile_bytes, 128 * (chunks + usize::from(half)));
    // The group's last rows: none, 4 (the tile after the whole ones), or a
    // ninth row run with the last whole tile.
    debug_assert!(TAIL || rows.is_multiple_of(MR));
    let (whole, rest) = (rows / MR, if TAIL { rows % MR } else { 0 });
    let nine = usize::from(rest == 1);
    let looped = whole - nine;
    let tiles = whole + usize::from(rest > 0);
    // One check for every read and store of the kernels: the tiles'
    // panels, the block's weights, the last row's bytes.
    let panel = &panel[..tiles * tile_bytes];
    let w = &w[..tile_bytes];
    let last = (group_end - 1) * stride + out_col;
    let _last = &output[last..last + NR];
    // `SingleRightBlock` is the bias (64 bytes) then the stage in
    // `SingleRightStage`'s layout, both 16-byte aligned.
    const _: () = assert!(
        core::mem::size_of::<SingleRightBlock>() == 64 + core::mem::size_of::<SingleRightStage>()
            && core::mem::align_of::<SingleRightBlock>() >= 16
    );
    let base = core::ptr::from_ref(made).cast::<u8>();
    // SAFETY: the CPU has dotprod (called from `gemm_dot` only); every
    // panel tile holds 128 (chunks + half) written bytes (k >= 1; a last
    // tile of 4 rows or the ninth row's tile at least those rows of each
    // step), as does the block (sliced above); the output rows
    // group..group_end of the columns out_col..out_col + 8 end at or before
    // the last one's end, within `output` (sliced above); `made` is 16-byte
    // aligned, its first 64 bytes 4 vectors of i32, the rest laid out as
    // `SingleRightStage` (repr(C), asserted sizes).
    unsafe {
        let bias = &*base.cast::<[int32x4_t; 4]>();
        let st = &*base.add(64).cast::<SingleRightStage>();
        let out = output.as_mut_ptr().add(group * stride + out_col);
        let (x, w) = (panel.as_ptr().cast::<i8>(), w.as_ptr());
        if looped > 0 {
            with_clamp!(
                kind,
                panel_tiles_single_right(x, w, chunks, half, bias, st, out, stride, looped)
            )
        }
        let (x, out) = (x.add(looped * tile_bytes), out.add(looped * MR * stride));
        if nine == 1 {
            let x9 = x.add(tile_bytes);
            with_clamp!(
                kind,
                tile9_single_right(x, x9, w, steps, bias, st, out, stride)
            )
        } else if rest == 4 {
            with_clamp!(kind, tail4_single_right(x, w, steps, bias, st, out, stride))
        }
    }
}
