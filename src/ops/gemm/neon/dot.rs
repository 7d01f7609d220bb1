//! The `sdot` path of the NEON GEMM (FEAT_DotProd): an 8 x 8 tile of int32
//! accumulators over a stack panel of interleaved rows, or over the rows in
//! place for depths beyond the panel.

use super::dense::DenseRows;
use super::dot_depth8::depth8_tiles_single_right;
use super::dot_group::{group_runs_made, single_right_group};
use super::dot_panel::{bias_accumulators, dot_panel_steps, dot_rows_depth8};
use super::dot_rows::gemm_dot_rows;
use super::dot_tile9::tile9_single_right;
use super::dot_tiles::{
    clamp_kind, panel_tiles_single_right, with_clamp, SingleRightStage, CLAMP_NONE,
};
use super::source::PanelRows;
use super::{initial_acc, tile_origin, with_stage, BlockParams, BlockTiles, StoreTile};
use crate::ops::gemm::pack::{KC, NR};
use crate::ops::gemm::params::{GemmView, Tile};
use core::arch::aarch64::*;
use core::mem::MaybeUninit;

/// The deepest input (in bytes, a multiple of 16) that [`gemm_dot`] copies
/// into a packed panel on the stack (8 KiB); deeper inputs are read in place.
pub(crate) const PANEL_DEPTH: usize = 1024;

/// The `sdot` path on the tile `t` (the whole output when `Gemm::run`
/// calls it): the rows are copied into a packed panel (when the depth fits
/// [`PANEL_DEPTH`]) 8 at a time, as many 8-row tiles at once as the panel
/// holds, and every weight block of the tile runs over those, its
/// parameters loaded once per group rather than once per 8 rows.
///
/// The rows come from `source` (see [`PanelRows`]): only dense rows (an
/// `m x k` matrix) may be deeper than the panel.
///
/// # Safety
/// The CPU must have the dotprod extension. `source` holds rows
/// `0..rows.end` (dense rows: the whole `m x k` input, `rows.end <= m`),
/// and `output` the tile, as `Gemm::run_tile` checks (see [`Tile`]); with
/// `AT_ORIGIN` the tile starts at row 0 and channel 0 (see `tile_origin`).
#[target_feature(enable = "dotprod")]
#[inline(never)]
pub(crate) unsafe fn gemm_dot<const AT_ORIGIN: bool>(
    g: &GemmView<'_>,
    input: &[i8],
    output: &mut [i8],
    t: &Tile,
) {
    debug_assert!(input.len() >= t.rows.end * g.k);
    let rows = DenseRows { input, k: g.k };
    // SAFETY: the caller's guarantees.
    unsafe { gemm_dot_from::<AT_ORIGIN, _>(g, &rows, output, t) }
}

/// [`gemm_dot`] over the `m` rows a [`PanelRows`] other than a matrix
/// builds in the panel (a convolution's windows), the tile at the origin:
/// a function of its own (the same loops), so that the machine-code checks
/// tell it from the matrix's.
///
/// # Safety
/// As [`gemm_dot`]; the depth fits the panel ([`PANEL_DEPTH`]).
#[target_feature(enable = "dotprod")]
#[inline(never)]
pub(crate) unsafe fn gemm_dot_panel_rows<S: PanelRows>(
    g: &GemmView<'_>,
    source: &S,
    output: &mut [i8],
    t: &Tile,
) {
    debug_assert!(g.k_padded <= PANEL_DEPTH && source.dense().is_none());
    // SAFETY: the caller's guarantees.
    unsafe { gemm_dot_from::<true, S>(g, source, output, t) }
}

/// The body of [`gemm_dot`] and [`gemm_dot_panel_rows`].
///
/// # Safety
/// As [`gemm_dot`]; inlined into those only (their dotprod feature).
#[inline(always)]
unsafe fn gemm_dot_from<const AT_ORIGIN: bool, S: PanelRows>(
    g: &GemmView<'_>,
    source: &S,
    output: &mut [i8],
    t: &Tile,
) {
    const MR: usize = 8;
    debug_assert!(!t.rows.is_empty());
    debug_assert!(output.len() >= (t.rows.len() - 1) * t.stride + t.cols.len());
    if g.k_padded > PANEL_DEPTH {
        let input = source
            .dense()
            .expect("only dense rows are deeper than the panel");
        debug_assert!(input.len() >= t.rows.end * g.k);
        // SAFETY: the caller's guarantees.
        return unsafe { gemm_dot_rows::<AT_ORIGIN>(g, input, output, t) };
    }
    let k = g.k;
    // Whole steps of 16 depth bytes, and whether a half step ends the depth.
    let half = matches!(k % KC, 1..=8);
    let chunks = g.k_padded / KC - usize::from(half);
    let block_bytes = NR * g.k_padded;
    // The tile in locals (positions in the output are tile-relative: rows
    // from 0, channels from 0 at the first block).
    let (first_row, first_block, end_block) = tile_origin::<AT_ORIGIN>(t);
    let (rows, width, stride) = (
        t.rows.end - first_row,
        t.cols.end - first_block * NR,
        t.stride,
    );
    let weights = &g.packed[first_block * block_bytes..end_block * block_bytes];
    let mut group = 0;
    if let (8, true, Some(input)) = (k, rows >= MR, source.dense()) {
        // Whole 8-row tiles read in place (`dot_rows_depth8`); the rows
        // after the last whole tile go through the panel below.
        group = rows - rows % MR;
        let whole = (first_row, group);
        let blocks = (first_block, width, stride);
        // SAFETY: the caller's guarantees (dotprod; `input` holds the rows).
        unsafe { depth8_in_place(g, input, weights, blocks, whole, output) };
    }
    if group < rows {
        let blocks = (first_block, width, stride);
        // SAFETY: the caller's guarantees (dotprod, the rows and the tile).
        unsafe {
            dot_groups(
                g,
                source,
                weights,
                blocks,
                (first_row, group, rows),
                (chunks, half),
                output,
            )
        };
    }
}

/// Output rows `group..rows` (from the tile's `first_row`) of [`gemm_dot`]
/// or [`gemm_dot_panel_rows`] through the panel: groups of row tiles filled
/// from `source`, each group's weight blocks ([`Blocks`]). A function per
/// kind of rows, not per tile origin: its loops inlined into each of the
/// callers' instances made a third of the aarch64 library's build time (a
/// trait object for `source`, one function for both, cost person_detect
/// 0.4% more instructions: a call per filled tile).
///
/// # Safety
/// The CPU must have dotprod; `source` holds the rows and `output` the
/// tile, as [`gemm_dot`] requires; the depth fits the panel.
#[target_feature(enable = "dotprod")]
#[inline(never)]
unsafe fn dot_groups<S: PanelRows>(
    g: &GemmView<'_>,
    source: &S,
    weights: &[i8],
    (first_block, width, stride): (usize, usize, usize),
    (first_row, group, rows): (usize, usize, usize),
    (chunks, half): (usize, bool),
    output: &mut [i8],
) {
    const MR: usize = 8;
    debug_assert!(g.k_padded <= PANEL_DEPTH);
    let block_bytes = NR * g.k_padded;
    // Not zeroed: `fill_panel` writes every byte the kernels then read (an
    // 8 KiB `memset` per call was about 550 instructions, as many as a
    // layer's few late tiles).
    let mut panel = [MaybeUninit::<i8>::uninit(); 8 * PANEL_DEPTH];
    // Bytes of one row tile's panel, and rows of the tiles the panel holds
    // at once (a multiple of MR, at least MR).
    let tile_bytes = MR * g.k_padded;
    let group_rows = MR * (PANEL_DEPTH / g.k_padded);
    let mut group = group;
    while group < rows {
        let group_end = rows.min(group + group_rows);
        for (t, out_row) in (group..group_end).step_by(MR).enumerate() {
            let (row, mr) = (first_row + out_row, MR.min(group_end - out_row));
            source.fill_dot(&mut panel[t * tile_bytes..], row, mr);
        }
        // Blocks outside, row tiles inside: a block's parameters are
        // loaded once for the group's tiles. Only the last group may end
        // in a tile of 1 to 6 rows: its blocks run a loop of their own
        // (`TAIL`), so that the pieces of that tile cost nothing to the
        // loops of groups of whole tiles.
        let tiles = PanelGroup {
            weights,
            block_bytes,
            first_block,
            width,
            panel: &panel,
            tile_bytes,
            stride,
            rows: (first_row, group, group_end),
            steps: (chunks, half),
        };
        if matches!((group_end - group) % MR, 1..=6) {
            tiles.run::<true>(g, output);
        } else {
            tiles.run::<false>(g, output);
        }
        group = group_end;
    }
}

/// The whole 8-row tiles of a depth of exactly 8, read in place
/// (`dot_rows_depth8`): output rows `first_row..first_row + group` of every
/// weight block in `weights` (blocks `first_block..`, `width` output
/// channels, output `stride`), each block with its stage. Out of line so
/// that `gemm_dot`'s two instances share one copy of its loops.
///
/// # Safety
/// The CPU must have dotprod; `input` holds the `m x 8` matrix's rows
/// `0..first_row + group`, `output` the tile, as [`gemm_dot`] requires.
#[target_feature(enable = "dotprod")]
#[inline(never)]
unsafe fn depth8_in_place(
    g: &GemmView<'_>,
    input: &[i8],
    weights: &[i8],
    (first_block, width, stride): (usize, usize, usize),
    (first_row, group): (usize, usize),
    output: &mut [i8],
) {
    const MR: usize = 8;
    let (k, block_bytes) = (g.k, NR * g.k_padded);
    // The input rows of those tiles, as the panel's type.
    let x = &input[first_row * k..(first_row + group) * k];
    // SAFETY: `MaybeUninit<i8>` has the layout of `i8`, and an
    // initialized `i8` is a valid `MaybeUninit<i8>`; the view is only read.
    let x = unsafe { core::slice::from_raw_parts(x.as_ptr().cast(), x.len()) };
    for (i, w) in weights.chunks_exact(block_bytes).enumerate() {
        let p = BlockParams::load(g, first_block + i);
        let out_col = i * NR;
        let tiles = PanelTiles::<true, false> {
            panel: x,
            tile_bytes: MR * k,
            w,
            p: &p,
            row_offsets: g.row_offsets,
            output: &mut *output,
            stride,
            rows: (first_row, 0, group),
            cols: (out_col, NR.min(width - out_col)),
            steps: (0, true),
        };
        with_stage(&p, tiles);
    }
}

/// The weight blocks of one filled panel group: as [`dot_groups`] runs
/// them (each block's [`PanelTiles`] with its stage), and the `smmla`
/// path's groups (`super::mmla`, with its paired weights beside).
pub(super) struct PanelGroup<'a> {
    /// The blocks' packed weights, `block_bytes` each.
    pub(super) weights: &'a [i8],
    pub(super) block_bytes: usize,
    /// The first block's index in the whole filter.
    pub(super) first_block: usize,
    /// Output channels of the tile from its first block.
    pub(super) width: usize,
    /// The group's panel: tile `t` at `t * tile_bytes`, all written.
    pub(super) panel: &'a [MaybeUninit<i8>],
    pub(super) tile_bytes: usize,
    /// Output row stride.
    pub(super) stride: usize,
    /// (the tile's first row, the group's first and end output rows).
    pub(super) rows: (usize, usize, usize),
    /// (whole steps of 16 depth bytes, a half step after them).
    pub(super) steps: (usize, bool),
}

impl PanelGroup<'_> {
    /// Every block over the group's tiles; with `TAIL` the group's last
    /// tile has 1 to 6 rows, without it none has. A loop of its own for
    /// each: the tail's pieces, inlined into the loop of whole tiles, made
    /// that loop's register allocation worse for every tile, and a call to
    /// them out of line cost every loop its registers across the call.
    ///
    /// Inlined into [`dot_groups`], whose dotprod feature the `sdot`s need.
    ///
    /// # Safety
    /// The CPU must have dotprod; the panel holds the group's tiles, all
    /// written (`fill_dot`).
    #[inline(always)]
    fn run<const TAIL: bool>(&self, g: &GemmView<'_>, output: &mut [i8]) {
        const MR: usize = 8;
        let (_, group, group_end) = self.rows;
        // Groups without row offsets whose last rows `single_right_group`
        // takes run the blocks whose channels all shift right from their
        // stage made at `new()` (`GemmParams::single_right`): no
        // per-channel loads, no copies.
        let made = g.row_offsets.is_none()
            && g.single_right.len() * NR == g.folded_bias.len()
            && group_runs_made(group_end - group);
        // SAFETY: neon is a compile-time target feature (cfg on this module).
        let kind = unsafe { clamp_kind(vdupq_n_s8(g.act_min as i8), vdupq_n_s8(g.act_max as i8)) };
        for (i, w) in self.weights.chunks_exact(self.block_bytes).enumerate() {
            let block = self.first_block + i;
            let out_col = i * NR;
            if made && g.block_shifts[block].1 && self.width - out_col >= NR {
                let (panel, tile_bytes) = (self.panel, self.tile_bytes);
                let (rows, at) = ((group, group_end), (self.stride, out_col));
                let made = &g.single_right[block];
                let steps = self.steps;
                single_right_group::<TAIL>(
                    panel, tile_bytes, w, made, steps, rows, at, kind, output,
                );
                continue;
            }
            let p = BlockParams::load(g, self.first_block + i);
            let tiles = PanelTiles::<false, TAIL> {
                panel: self.panel,
                tile_bytes: self.tile_bytes,
                w,
                p: &p,
                row_offsets: g.row_offsets,
                output: &mut *output,
                stride: self.stride,
                rows: self.rows,
                cols: (out_col, NR.min(self.width - out_col)),
                steps: self.steps,
            };
            debug_assert!(TAIL == matches!((self.rows.2 - self.rows.1) % MR, 1..=6));
            // The stage is chosen once for the block's tiles of the group.
            with_stage(&p, tiles);
        }
    }
}

/// One weight block over the row tiles of a filled panel group, as
/// [`gemm_dot`] runs it; built there only, so the CPU has dotprod. With
/// `IN_PLACE` (a depth of exactly 8) the "panel" is the input rows
/// themselves, 64 bytes per tile, every tile whole. With `TAIL` the last
/// tile has 1 to 6 rows and runs as pieces ([`PanelTiles::tail`], inlined
/// into this loop only); without it every tile has 7 or 8 rows.
pub(super) struct PanelTiles<'a, const IN_PLACE: bool, const TAIL: bool> {
    /// The group's panel: tile `t` at `t * tile_bytes`, all written.
    pub(super) panel: &'a [MaybeUninit<i8>],
    pub(super) tile_bytes: usize,
    /// The block's packed weights (`128 (chunks + half)` bytes or more).
    pub(super) w: &'a [i8],
    pub(super) p: &'a BlockParams,
    pub(super) row_offsets: Option<&'a [i32]>,
    pub(super) output: &'a mut [i8],
    pub(super) stride: usize,
    /// (the tile's first row, the group's first and end output rows).
    pub(super) rows: (usize, usize, usize),
    /// (the block's first output column, its channels stored).
    pub(super) cols: (usize, usize),
    /// (whole steps of 16 depth bytes, a half step after them).
    pub(super) steps: (usize, bool),
}

impl<const IN_PLACE: bool, const TAIL: bool> BlockTiles for PanelTiles<'_, IN_PLACE, TAIL> {
    // Inlined into `gemm_dot` and `Blocks::run`, whose dotprod feature the
    // `sdot`s need.
    #[inline(always)]
    fn run<S: StoreTile>(mut self, store: S) {
        const MR: usize = 8;
        let (first_row, group, group_end) = self.rows;
        let (out_col, nr) = self.cols;
        let (chunks, half) = self.steps;
        // The block's bias as the first four accumulators, for
        // `bias_accumulators` (in memory: it is read by address).
        let [b0, b1] = self.p.bias;
        let bias = [b0, b1, b0, b1];
        // Whole tiles of the single-rounding stage whose channels all shift
        // right run in one assembly loop; the rest, tile by tile below.
        let mut skip = 0;
        if let (Some(clamp), None, NR) = (S::SINGLE_RIGHT, self.row_offsets, nr) {
            let whole = (group_end - group) / MR;
            if whole > 0 {
                let p = self.p;
                // The bounds at int8's own ends need no instruction.
                let kind = if clamp {
                    clamp_kind(p.min, p.max)
                } else {
                    CLAMP_NONE
                };
                let stage = SingleRightStage {
                    multiplier: [p.mult[0].multiplier, p.mult[1].multiplier],
                    neg_right_shift: [p.mult[0].neg_right_shift, p.mult[1].neg_right_shift],
                    zero_point: p.zero_point,
                    min: p.min,
                    max: p.max,
                };
                if IN_PLACE {
                    // A depth of 8: each tile is its 64 input bytes, the
                    // block's first 64 bytes its weights.
                    debug_assert_eq!(self.tile_bytes, 64);
                    let x = &self.panel[..whole * 64];
                    let w = &self.w[..64];
                    let last = (group + whole * MR - 1) * self.stride + out_col;
                    let _last = &mut self.output[last..last + NR];
                    // SAFETY: the CPU has dotprod (built in `gemm_dot`
                    // only); the tiles' rows and the block's 64 bytes are
                    // sliced above; the output rows group..group + 8 whole
                    // of the columns out_col..out_col + 8 end at or before
                    // the last one's end, within `output` (sliced above).
                    unsafe {
                        let out = self.output.as_mut_ptr().add(group * self.stride + out_col);
                        let (x, w, stride) = (x.as_ptr().cast(), w.as_ptr(), self.stride);
                        with_clamp!(
                            kind,
                            depth8_tiles_single_right(x, w, &bias, &stage, out, stride, whole)
                        )
                    }
                    skip = whole;
                } else {
                    debug_assert_eq!(self.tile_bytes, 128 * (chunks + usize::from(half)));
                    // A group of 8 t + 1 rows: its last whole tile and the
                    // row after it run as 9 rows (`tile9_single_right`),
                    // the tiles before them in the loop.
                    let nine = usize::from(TAIL && (group_end - group) % MR == 1);
                    let looped = whole - nine;
                    // One check for every read and store of the loop: the
                    // tiles' panels, the block's weights, the last row's bytes.
                    let panel = &self.panel[..(whole + nine) * self.tile_bytes];
                    let w = &self.w[..self.tile_bytes];
                    let last = (group + whole * MR + nine - 1) * self.stride + out_col;
                    let _last = &mut self.output[last..last + NR];
                    // SAFETY: the CPU has dotprod (built in `gemm_dot` only);
                    // every panel tile holds 128 (chunks + half) written bytes
                    // (k >= 1: chunks + half >= 1), as does the block (sliced
                    // above), and the ninth row's tile its row 0 of each
                    // step; the output rows group..group + 8 whole + nine of
                    // the columns out_col..out_col + 8 end at or before the
                    // last one's end, within `output` (sliced above), so the
                    // first row's offset is within it too.
                    unsafe {
                        let out = self.output.as_mut_ptr().add(group * self.stride + out_col);
                        let (x, w, stride) = (panel.as_ptr().cast(), w.as_ptr(), self.stride);
                        if looped > 0 {
                            with_clamp!(
                                kind,
                                panel_tiles_single_right(
                                    x, w, chunks, half, &bias, &stage, out, stride, looped
                                )
                            )
                        }
                        if nine == 1 {
                            let x = x.add(looped * self.tile_bytes);
                            let x9 = x.add(self.tile_bytes);
                            let out = out.add(looped * MR * stride);
                            let steps = (chunks, half);
                            with_clamp!(
                                kind,
                                tile9_single_right(x, x9, w, steps, &bias, &stage, out, stride)
                            )
                        }
                    }
                    skip = whole + nine;
                }
            }
        }
        // The tiles left (all of them when the loop above did not run).
        let panel = &self.panel[skip * self.tile_bytes..];
        for (x, out_row) in panel
            .chunks_exact(self.tile_bytes)
            .zip((group + skip * MR..group_end).step_by(MR))
        {
            let (row, mr) = (first_row + out_row, MR.min(group_end - out_row));
            if TAIL && mr < MR - 1 {
                // SAFETY: as below (the tile's panel and the block each
                // hold 128 (chunks + half) bytes).
                unsafe { self.tail(store, x, &bias, out_row, mr) };
                continue;
            }
            let mut acc = match self.row_offsets {
                None => bias_accumulators(&bias),
                Some(_) => initial_acc::<MR>(self.p.bias, self.row_offsets, row, mr),
            };
            // SAFETY: the tile's panel holds 8 k_padded = 128 (chunks +
            // half) bytes, all written by `fill_panel`, the block as many;
            // k >= 1 gives chunks + half >= 1; in place, the tile is 64
            // input bytes and the block 128; the CPU has dotprod (built
            // in `gemm_dot` only).
            unsafe {
                if IN_PLACE {
                    // The tile's 8 input rows are its 64 bytes of `x`; the
                    // block holds 128 bytes (k_padded = 16).
                    dot_rows_depth8(&mut acc, x.as_ptr().cast(), self.w.as_ptr());
                } else {
                    dot_panel_steps(&mut acc, x.as_ptr().cast(), self.w.as_ptr(), chunks, half);
                }
            }
            store.store::<MR>(
                &acc,
                self.p,
                self.output,
                self.stride,
                out_row,
                mr,
                out_col,
                nr,
            );
        }
    }
}
