//! The `smmla` path of the NEON GEMM (FEAT_I8MM): the 8 x 8 tile of int32
//! accumulators as 16 blocks of 2 rows x 2 channels, one `smmla` each per 8
//! depth bytes (32 MACs, twice an `sdot`'s 16).
//!
//! `smmla` multiplies a 2 x 8 matrix of int8 (two rows of 8 bytes in one
//! register) by the transpose of another and adds the 2 x 2 int32 product
//! to its accumulator, lanes `(row 0, column 0), (0, 1), (1, 0), (1, 1)`.
//! The rows are copied into a stack panel of row pairs (per 8 depth bytes,
//! rows `2i` and `2i + 1` side by side: one `zip1`/`zip2` of 64-bit lanes
//! per pair and 16 bytes); the weights stay in the GEMM's packed layout
//! (shared with `sdot`, the widening path, the scalar reference and the
//! batch matrix product) and are paired in registers: a 4-byte `zip` of
//! two depth groups gives two channels' 8 depth bytes. At the end, 64-bit
//! `zip`s turn the 2 x 2 blocks back into the rows of 8 channels the shared
//! output stage takes. The blocks start from the bias (in their lanes);
//! row offsets (the batch matrix product's) are added after the zips (the
//! sum wraps, so the order of the additions does not change it): the bytes
//! of every other path.
//! Whole tiles whose channels all shift right (single rounding, LiteRT's
//! optimized CONV_2D and FULLY_CONNECTED, or double, its BATCH_MATMUL)
//! skip the `zip`s: [`super::mmla_tiles`] runs them in one assembly loop,
//! the blocks started from the bias and row offsets, the stage on the
//! blocks and the rows sorted out after the narrows.
//!
//! A group's last tile of 1 to 7 rows multiplies only its `ceil(mr / 2)`
//! row pairs ([`super::mmla_tail`]) on the block's weights paired once.
//!
//! Depths past [`PANEL_DEPTH`] run the `sdot` kernel (rows read in place).

use super::dense::DenseRows;
use super::dot::{gemm_dot, PanelGroup};
use super::dot_tiles::{clamp_kind, CLAMP_BOTH, CLAMP_LOWER, CLAMP_NONE, CLAMP_UPPER};
use super::mmla_panel::{mmla_panel, mmla_panel_half};
use super::mmla_tail::mmla_tail_pairs;
pub(crate) use super::mmla_tiles::pair_blocks;
use super::mmla_tiles::{mmla_tiles_right, pair_weights, paired, PairedRightStage};
use super::source::PanelRows;
use super::{initial_acc, tile_origin, with_stage, BlockParams, BlockTiles, StoreTile};
use crate::ops::gemm::pack::{KC, NR};
use crate::ops::gemm::params::{GemmView, Tile};
use core::arch::aarch64::*;
use core::mem::MaybeUninit;

/// The deepest input (in bytes, a multiple of 16) copied into the stack
/// panel of row pairs (8 KiB, as the `sdot` path's).
const PANEL_DEPTH: usize = 1024;

/// Whether the `smmla` kernel reads a [`Gemm`](crate::Gemm) of depth `k`
/// (`k_padded` packed) from its panel, and so takes its weights paired
/// ([`pair_blocks`]): depths past [`PANEL_DEPTH`] and a depth of exactly 8
/// run [`gemm_dot`] on the packed weights.
pub(crate) fn pre_pairs(k: usize, k_padded: usize) -> bool {
    k_padded <= PANEL_DEPTH && k != 8
}

/// The 2 x 2 blocks as `R` rows of 8 channels (`R <= 8`; row `2i` from the
/// low halves of row pair `i`'s blocks, row `2i + 1` from the high
/// halves), each added to `init` (the row offsets) when there is one (the
/// blocks started from the bias, see [`paired_bias`]).
#[inline(always)]
fn unpair<const R: usize>(
    blocks: &[[int32x4_t; 4]; 4],
    init: Option<&[[int32x4_t; 2]; R]>,
) -> [[int32x4_t; 2]; R] {
    // An explicit array and loop, not `core::array::from_fn`: that one
    // was left out of line (a call and the rows through memory per tile).
    // SAFETY: neon is a compile-time target feature (cfg on this module).
    let mut rows = [[unsafe { vdupq_n_s32(0) }; 2]; R];
    for (r, out) in rows.iter_mut().enumerate() {
        let b = &blocks[r / 2];
        // SAFETY: as above.
        let join = |lo: int32x4_t, hi: int32x4_t| unsafe {
            let (lo, hi) = (vreinterpretq_s64_s32(lo), vreinterpretq_s64_s32(hi));
            vreinterpretq_s32_s64(if r % 2 == 0 {
                vzip1q_s64(lo, hi)
            } else {
                vzip2q_s64(lo, hi)
            })
        };
        let row = [join(b[0], b[1]), join(b[2], b[3])];
        *out = match init {
            // SAFETY: as above.
            Some(init) => unsafe { [vaddq_s32(init[r][0], row[0]), vaddq_s32(init[r][1], row[1])] },
            None => row,
        };
    }
    rows
}

/// A block's bias in the lanes of the 2 x 2 blocks (see [`paired`]).
/// Blocks that start from it need no addition after `smmla` (the int32
/// sums wrap, so adding the bias first gives the same values).
#[inline(always)]
fn paired_bias(bias: &[int32x4_t; 2]) -> [int32x4_t; 4] {
    paired(bias)
}

/// The 16 accumulators of a tile's four blocks, each `start`: four
/// 4-register loads straight into the registers [`mmla_panel`] keeps them
/// in (the compiler copies `start`'s four registers into the other twelve
/// one by one).
#[inline(always)]
fn start_blocks(start: &[int32x4_t; 4]) -> [[int32x4_t; 4]; 4] {
    // Every value is overwritten by the loads (the zeros compile to nothing).
    // SAFETY: neon is a compile-time target feature (cfg on this module).
    let mut acc = [[unsafe { vdupq_n_s32(0) }; 4]; 4];
    // SAFETY: reads the 64 bytes of `start`; no stack, no writes to memory.
    unsafe {
        core::arch::asm!(
            "ld1 {{v16.4s, v17.4s, v18.4s, v19.4s}}, [{s}]",
            "ld1 {{v20.4s, v21.4s, v22.4s, v23.4s}}, [{s}]",
            "ld1 {{v24.4s, v25.4s, v26.4s, v27.4s}}, [{s}]",
            "ld1 {{v28.4s, v29.4s, v30.4s, v31.4s}}, [{s}]",
            s = in(reg) start.as_ptr(),
            out("v16") acc[0][0],
            out("v17") acc[0][1],
            out("v18") acc[0][2],
            out("v19") acc[0][3],
            out("v20") acc[1][0],
            out("v21") acc[1][1],
            out("v22") acc[1][2],
            out("v23") acc[1][3],
            out("v24") acc[2][0],
            out("v25") acc[2][1],
            out("v26") acc[2][2],
            out("v27") acc[2][3],
            out("v28") acc[3][0],
            out("v29") acc[3][1],
            out("v30") acc[3][2],
            out("v31") acc[3][3],
            options(readonly, nostack, preserves_flags),
        );
    }
    acc
}

/// The `smmla` path on the tile `t` (the whole output when `Gemm::run`
/// calls it): the rows are copied into a panel of row pairs 8 at a time, as
/// many 8-row tiles at once as the panel holds, and every weight block of
/// the tile runs over those (its parameters loaded once per group). Depths
/// past [`PANEL_DEPTH`], and a depth of exactly 8, run [`gemm_dot`].
///
/// The rows come from `source` (see [`PanelRows`]): only dense rows (an
/// `m x k` matrix) may be deeper than the panel.
///
/// # Safety
/// The CPU must have the i8mm and dotprod extensions. `source` holds rows
/// `0..rows.end` (dense rows: the whole `m x k` input, `rows.end <= m`),
/// and `output` the tile, as `Gemm::run_tile` checks (see [`Tile`]); with
/// `AT_ORIGIN` the tile starts at row 0 and channel 0 (see `tile_origin`).
#[target_feature(enable = "dotprod,i8mm")]
#[inline(never)]
pub(crate) unsafe fn gemm_mmla<const AT_ORIGIN: bool>(
    g: &GemmView<'_>,
    input: &[i8],
    output: &mut [i8],
    t: &Tile,
) {
    debug_assert!(input.len() >= t.rows.end * g.k);
    let rows = DenseRows { input, k: g.k };
    // SAFETY: the caller's guarantees.
    unsafe { gemm_mmla_from::<AT_ORIGIN, _>(g, &rows, output, t) }
}

/// [`gemm_mmla`] over the `m` rows a [`PanelRows`] other than a matrix
/// builds in the panel (a convolution's windows), the tile at the origin:
/// a function of its own (the same loops), so that the machine-code checks
/// tell it from the matrix's.
///
/// # Safety
/// As [`gemm_mmla`]; the depth fits the panel ([`PANEL_DEPTH`]).
#[target_feature(enable = "dotprod,i8mm")]
#[inline(never)]
pub(crate) unsafe fn gemm_mmla_panel_rows<S: PanelRows>(
    g: &GemmView<'_>,
    source: &S,
    output: &mut [i8],
    t: &Tile,
) {
    debug_assert!(g.k_padded <= PANEL_DEPTH && source.dense().is_none());
    // SAFETY: the caller's guarantees.
    unsafe { gemm_mmla_from::<true, S>(g, source, output, t) }
}

/// The body of [`gemm_mmla`] and [`gemm_mmla_panel_rows`].
///
/// # Safety
/// As [`gemm_mmla`]; inlined into those only (their features).
#[inline(always)]
unsafe fn gemm_mmla_from<const AT_ORIGIN: bool, S: PanelRows>(
    g: &GemmView<'_>,
    source: &S,
    output: &mut [i8],
    t: &Tile,
) {
    const MR: usize = 8;
    debug_assert!(!t.rows.is_empty());
    debug_assert!(output.len() >= (t.rows.len() - 1) * t.stride + t.cols.len());
    // A depth of exactly 8 too: `gemm_dot` reads its rows in place, two
    // per register, where this path would copy them into row pairs (on
    // person_detect's depth-8 layer 84 K instructions against 164 K).
    if let (Some(input), true) = (source.dense(), g.k_padded > PANEL_DEPTH || g.k == 8) {
        // SAFETY: the caller's guarantees (dotprod included).
        return unsafe { gemm_dot::<AT_ORIGIN>(g, input, output, t) };
    }
    debug_assert!(g.k_padded <= PANEL_DEPTH);
    let k = g.k;
    // Whole steps of 16 depth bytes, and whether a half step ends the depth.
    let half = matches!(k % KC, 1..=8);
    let chunks = g.k_padded / KC - usize::from(half);
    let block_bytes = NR * g.k_padded;
    let (first_row, first_block, end_block) = tile_origin::<AT_ORIGIN>(t);
    let (rows, width, stride) = (
        t.rows.end - first_row,
        t.cols.end - first_block * NR,
        t.stride,
    );
    let weights = &g.packed[first_block * block_bytes..end_block * block_bytes];
    // The blocks paired when the weights were set, when they were.
    let paired = (g.paired.len() == g.packed.len())
        .then(|| &g.paired[first_block * block_bytes..end_block * block_bytes]);
    // Not zeroed: `fill_pairs` writes every byte the kernels then read.
    let mut panel = [MaybeUninit::<i8>::uninit(); 8 * PANEL_DEPTH];
    // Bytes of one row tile's panel, and rows of the tiles the panel holds
    // at once (a multiple of MR, at least MR).
    let tile_bytes = MR * g.k_padded;
    let group_rows = MR * (PANEL_DEPTH / g.k_padded);
    let mut group = 0;
    while group < rows {
        let group_end = rows.min(group + group_rows);
        for (t, out_row) in (group..group_end).step_by(MR).enumerate() {
            let (row, mr) = (first_row + out_row, MR.min(group_end - out_row));
            source.fill_pairs(&mut panel[t * tile_bytes..], row, mr);
        }
        let blocks = MmlaGroup {
            group: PanelGroup {
                weights,
                block_bytes,
                first_block,
                width,
                panel: &panel,
                tile_bytes,
                stride,
                rows: (first_row, group, group_end),
                steps: (chunks, half),
            },
            paired,
        };
        // SAFETY: the caller's guarantees (dotprod and i8mm); every tile of
        // the group was filled above.
        unsafe { blocks.run(g, output) };
        group = group_end;
    }
}

/// The weight blocks of one filled panel group, as [`gemm_mmla_from`] runs
/// them: each block's [`MmlaTiles`] with its stage.
struct MmlaGroup<'a> {
    group: PanelGroup<'a>,
    /// The group's weights paired when they were set, if they were.
    paired: Option<&'a [i8]>,
}

impl MmlaGroup<'_> {
    /// Every block over the group's tiles. Blocks outside, row tiles
    /// inside: a block's parameters are loaded once for the group's tiles.
    /// Out of line (once per group): inlined, its loops were compiled again
    /// into each of `gemm_mmla`'s instances and `gemm_mmla_panel_rows`.
    ///
    /// # Safety
    /// The CPU must have dotprod and i8mm; the panel holds the group's
    /// tiles, all written (`fill_pairs`).
    #[target_feature(enable = "dotprod,i8mm")]
    #[inline(never)]
    unsafe fn run(&self, g: &GemmView<'_>, output: &mut [i8]) {
        let group = &self.group;
        let block_bytes = group.block_bytes;
        for (i, w) in group.weights.chunks_exact(block_bytes).enumerate() {
            let p = BlockParams::load(g, group.first_block + i);
            let out_col = i * NR;
            let tiles = MmlaTiles {
                panel: group.panel,
                tile_bytes: group.tile_bytes,
                w,
                pre_paired: self
                    .paired
                    .map(|paired| &paired[i * block_bytes..(i + 1) * block_bytes]),
                p: &p,
                row_offsets: g.row_offsets,
                output: &mut *output,
                stride: group.stride,
                rows: group.rows,
                cols: (out_col, NR.min(group.width - out_col)),
                steps: group.steps,
            };
            // The stage is chosen once for the block's tiles of the group.
            with_stage(&p, tiles);
        }
    }
}

/// One weight block over the row tiles of a filled panel group, as
/// [`gemm_mmla`] runs it; built there only, so the CPU has i8mm.
struct MmlaTiles<'a> {
    /// The group's panel of row pairs: tile `t` at `t * tile_bytes`, all
    /// written by `fill_pairs`.
    panel: &'a [MaybeUninit<i8>],
    tile_bytes: usize,
    /// The block's packed weights (`128 (chunks + half)` bytes or more).
    w: &'a [i8],
    /// `w` paired ([`pair_weights`]) when the weights were set, if they were.
    pre_paired: Option<&'a [i8]>,
    p: &'a BlockParams,
    row_offsets: Option<&'a [i32]>,
    output: &'a mut [i8],
    stride: usize,
    /// (the tile's first row, the group's first and end output rows).
    rows: (usize, usize, usize),
    /// (the block's first output column, its channels stored).
    cols: (usize, usize),
    /// (whole steps of 16 depth bytes, a half step after them).
    steps: (usize, bool),
}

impl BlockTiles for MmlaTiles<'_> {
    // Inlined into `gemm_mmla`, whose i8mm feature the `smmla`s need.
    #[inline(always)]
    fn run<S: StoreTile>(mut self, store: S) {
        const MR: usize = 8;
        let (first_row, group, group_end) = self.rows;
        let (out_col, nr) = self.cols;
        let (chunks, half) = self.steps;
        let steps = chunks + usize::from(half);
        debug_assert_eq!(self.tile_bytes, 128 * steps);
        // Whole 8-row tiles, and the rows of a last tile of 1 to 7.
        let (whole, tail) = ((group_end - group) / MR, (group_end - group) % MR);
        // The blocks start from the bias; the row offsets, when there are,
        // are added in the assembly loop's start or after the `zip`s.
        let start = paired_bias(&self.p.bias);
        let right = match (S::SINGLE_RIGHT, S::DOUBLE_RIGHT) {
            (Some(clamp), _) => Some((clamp, false)),
            (None, Some(clamp)) => Some((clamp, true)),
            (None, None) => None,
        }
        .filter(|_| nr == NR && whole > 0);
        // The block's channels are paired once here (128 bytes per step: 2
        // loads, 8 `zip`s, 2 stores) when two tiles or more read them (8
        // `zip`s a step each otherwise), or a last tile of 1 to 7 rows
        // does: its row pairs alone are multiplied (`mmla_tail_pairs`).
        // Weights paired when they were set need neither.
        let mut paired_w = [MaybeUninit::<i8>::uninit(); 8 * PANEL_DEPTH];
        let pair = self.pre_paired.is_some() || tail > 0 || (right.is_some() && whole >= 2);
        let pw = match self.pre_paired {
            Some(paired) => paired[..128 * steps].as_ptr(),
            None => {
                if pair {
                    pair_weights(self.w, &mut paired_w, steps);
                }
                paired_w.as_ptr().cast::<i8>()
            }
        };
        // Whole tiles of the single-rounding stage whose channels all shift
        // right run in one assembly loop (their blocks started from the
        // bias and the row offsets there); the rest, tile by tile below.
        let mut skip = 0;
        if let Some((clamp, double)) = right {
            let p = self.p;
            // Only the bounds not at int8's ends (RELU6 at zero point -128
            // clamps above only): the saturating narrow stops at those.
            let clamp = if clamp {
                clamp_kind(p.min, p.max)
            } else {
                CLAMP_NONE
            };
            // The whole tiles' row offsets, checked once.
            let offsets = self.row_offsets.map(|o| {
                let at = first_row + group;
                o[at..at + whole * MR].as_ptr()
            });
            let stage = PairedRightStage {
                multiplier: paired(&[p.mult[0].multiplier, p.mult[1].multiplier]),
                neg_right_shift: paired(&[p.mult[0].neg_right_shift, p.mult[1].neg_right_shift]),
                zero_point: p.zero_point,
                min: p.min,
                max: p.max,
            };
            // One check for every read and store of the loop: the
            // tiles' panels, the block's weights, the last row's bytes.
            let panel = &self.panel[..whole * self.tile_bytes];
            let w = &self.w[..self.tile_bytes];
            let last = (group + whole * MR - 1) * self.stride + out_col;
            let _last = &mut self.output[last..last + NR];
            macro_rules! tiles {
                ($paired:literal, $clamp:expr, $w:expr) => {
                    if double {
                        tiles!($paired, $clamp, true, $w)
                    } else {
                        tiles!($paired, $clamp, false, $w)
                    }
                };
                ($paired:literal, $clamp:expr, $double:literal, $w:expr) => {
                    mmla_tiles_right::<$paired, $clamp, $double>(
                        panel.as_ptr().cast(),
                        $w,
                        chunks,
                        half,
                        &start,
                        offsets,
                        &stage,
                        self.output.as_mut_ptr().add(group * self.stride + out_col),
                        self.stride,
                        whole,
                    )
                };
            }
            // SAFETY: the CPU has i8mm (built in `gemm_mmla` only);
            // every panel tile holds 128 (chunks + half) bytes written
            // by `fill_pairs` (k >= 1: chunks + half >= 1), as does the
            // block (sliced above) and, when paired, its copy (all
            // written by `pair_weights`); the row offsets, when there
            // are, hold 8 values per tile (sliced above); the output
            // rows group..group + 8 whole of the columns out_col..out_col
            // + 8 end at or before the last one's end, within `output`
            // (sliced above), so the first row's offset is within it too.
            unsafe {
                match (pair, clamp) {
                    (true, CLAMP_BOTH) => tiles!(true, CLAMP_BOTH, pw),
                    (true, CLAMP_LOWER) => tiles!(true, CLAMP_LOWER, pw),
                    (true, CLAMP_UPPER) => tiles!(true, CLAMP_UPPER, pw),
                    (true, _) => tiles!(true, CLAMP_NONE, pw),
                    (false, CLAMP_BOTH) => tiles!(false, CLAMP_BOTH, w.as_ptr()),
                    (false, CLAMP_LOWER) => tiles!(false, CLAMP_LOWER, w.as_ptr()),
                    (false, CLAMP_UPPER) => tiles!(false, CLAMP_UPPER, w.as_ptr()),
                    (false, _) => tiles!(false, CLAMP_NONE, w.as_ptr()),
                }
            }
            skip = whole;
        }
        // The whole tiles left (all of them when the loop above did not run).
        let panel = &self.panel[skip * self.tile_bytes..];
        for (x, out_row) in panel
            .chunks_exact(self.tile_bytes)
            .zip((group + skip * MR..group + whole * MR).step_by(MR))
        {
            let row = first_row + out_row;
            let mut blocks = start_blocks(&start);
            let x = x.as_ptr().cast::<i8>();
            // SAFETY: the tile's panel holds 8 k_padded = 128 (chunks +
            // half) bytes, all written by `fill_pairs`, the block as many;
            // the CPU has i8mm (built in `gemm_mmla` only).
            unsafe {
                if chunks > 0 {
                    mmla_panel(&mut blocks, x, self.w.as_ptr(), chunks);
                }
                if half {
                    let at = 128 * chunks;
                    mmla_panel_half(&mut blocks, x.add(at), self.w.as_ptr().add(at));
                }
            }
            let acc = self.offsets::<MR>(&blocks, row, MR);
            store.store::<MR>(
                &acc,
                self.p,
                self.output,
                self.stride,
                out_row,
                MR,
                out_col,
                nr,
            );
        }
        if tail > 0 {
            let x = &self.panel[whole * self.tile_bytes..][..self.tile_bytes];
            let x = x.as_ptr().cast::<i8>();
            let out_row = group + whole * MR;
            // SAFETY: the tail tile's panel holds 128 (chunks + half) bytes
            // written by `fill_pairs` (sliced above), the paired block as
            // many (written by `pair_weights`: `pair` holds with a tail).
            unsafe {
                match tail.div_ceil(2) {
                    1 => self.tail::<S, 2>(store, x, pw, &start, out_row, tail),
                    2 => self.tail::<S, 4>(store, x, pw, &start, out_row, tail),
                    3 => self.tail::<S, 6>(store, x, pw, &start, out_row, tail),
                    _ => self.tail::<S, 8>(store, x, pw, &start, out_row, tail),
                }
            }
        }
    }
}

impl MmlaTiles<'_> {
    /// The blocks' first `R` rows (see [`unpair`]) plus the row offsets of
    /// rows `row..row + mr` when there are (the bias is in the blocks).
    #[inline(always)]
    fn offsets<const R: usize>(
        &self,
        blocks: &[[int32x4_t; 4]; 4],
        row: usize,
        mr: usize,
    ) -> [[int32x4_t; 2]; R] {
        match self.row_offsets {
            None => unpair::<R>(blocks, None),
            Some(_) => {
                // SAFETY: neon is a compile-time target feature (cfg on this module).
                let zero = [unsafe { vdupq_n_s32(0) }; 2];
                let init = initial_acc::<R>(zero, self.row_offsets, row, mr);
                unpair::<R>(blocks, Some(&init))
            }
        }
    }

    /// The group's last tile when it has `mr` rows (1 to 7, `R` of them
    /// rounded up to a whole row pair): its `R / 2` row pairs from its
    /// panel `x` against the paired block `pw` ([`mmla_tail_pairs`]), then
    /// its `mr` rows stored through the block's stage.
    ///
    /// # Safety
    /// The CPU must have i8mm; `x` and `pw` must each be valid for reading
    /// `128 (chunks + half)` written bytes.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    unsafe fn tail<S: StoreTile, const R: usize>(
        &mut self,
        store: S,
        x: *const i8,
        pw: *const i8,
        start: &[int32x4_t; 4],
        out_row: usize,
        mr: usize,
    ) {
        debug_assert!(mr <= R && R <= mr + 1);
        let (chunks, half) = self.steps;
        let (out_col, nr) = self.cols;
        let mut blocks = [*start; 4];
        // SAFETY: the caller's guarantees; 1 <= R / 2 <= 4.
        unsafe { mmla_tail_pairs(&mut blocks, R / 2, x, pw, chunks, half) };
        let acc = self.offsets::<R>(&blocks, self.rows.0 + out_row, mr);
        store.store::<R>(
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
