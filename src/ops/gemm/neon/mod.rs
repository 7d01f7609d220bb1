//! NEON int8 GEMM micro-kernels, bit-exact with the scalar reference (`super::scalar::gemm`).
//!
//! Both paths read the weights packed by `Gemm::new` (blocks of 8 output
//! channels, depth in groups of 4 bytes). Accumulators start from the folded
//! bias, so the inner loops multiply raw int8 values; int32 sums wrap like the
//! reference's.
//!
//! * [`dot::gemm_dot`]: `sdot` by element on an 8 x 8 tile (16 accumulators). As
//!   many tiles of 8 input rows as fit an 8 KiB stack panel (64 at depth 16,
//!   one at 1024) are copied into it, each interleaved by 16 depth bytes
//!   (depths up to `PANEL_DEPTH`), and every weight block runs over all of
//!   them, its bias and multipliers loaded once for the group:
//!   per 16 bytes of depth, two 4-register loads of weights and two of rows,
//!   64 `sdot`s (1024 MACs). Deeper inputs are read in place
//!   (`gemm_dot_rows`: 8 row loads and 4 weight pair loads per step). A
//!   depth of exactly 8 reads whole 8-row tiles in place, two rows per
//!   register (64 contiguous bytes, no panel copy). A last tile of 1 to 6
//!   rows runs as pieces of 4, 2 and 1 rows (`dot_tail`; in place,
//!   `dot_rows_piece`), about `r / 8` of a tile's instructions.
//! * [`mmla::gemm_mmla`]: `smmla` (FEAT_I8MM) on the same 8 x 8 tile as 16
//!   blocks of 2 x 2, over a stack panel of row pairs (grouped as `sdot`'s): per 16 bytes of
//!   depth 32 `smmla`s, 8 `zip`s pairing the packed weights' channels and
//!   four 4-register loads (1024 MACs). Deeper inputs and a depth of 8 run `gemm_dot`.
//!   Whole tiles of the single-rounding, right-shift stage run in one
//!   assembly loop ([`mmla_tiles`]), as `sdot`'s do ([`dot_tiles`]).
//!   A last tile of 1 to 7 rows multiplies only its row pairs, on the
//!   block's weights paired once for the group ([`mmla_tail`]).
//! * [`widening::gemm_widening`]: `smull`/`smull2` to 16 bits and `sadalp` into 32 bits
//!   on a 4 x 8 tile (a product of two int8 fits 16 bits, -128 * -128
//!   included, and `sadalp` widens before adding: nothing can overflow). The
//!   accumulators hold two partial sums per channel, added pairwise at the end.
//!
//! Edge tiles: rows past the tile's last row re-read it (their results are not
//! stored), channels past `n` have zero weights, the depth past the last
//! multiple of 16 is read from a zero-padded stack copy of the rows, and
//! partial tiles are stored through a stack buffer. Nothing outside the
//! caller's slices is read or written.
//!
//! The output stage is the scalar reference's `requantize_lanes` on
//! `int32x4_t` lanes (one channel per lane), then saturating narrows to 16
//! bits, the zero point added with saturation in 16 bits, a saturating narrow
//! to 8 bits and the activation clamp: the same bytes as the reference's
//! 32-bit saturating add and clamp (a value beyond the 16-bit range saturates
//! the 8-bit result either way).

pub(crate) mod dense;
pub(crate) mod dot;
mod dot_depth8;
mod dot_group;
mod dot_panel;
mod dot_rows;
mod dot_tail;
mod dot_tail4;
mod dot_tile9;
mod dot_tiles;
pub(crate) mod mmla;
mod mmla_panel;
mod mmla_tail;
mod mmla_tiles;
pub(crate) mod pack;
pub(crate) mod source;
pub(crate) mod widening;

use super::pack::{KC, NR};
use super::params::{GemmView, Tile};
use crate::ops::requant::neon::{
    requantize, requantize_gemv_ties_upward, requantize_real_f64, requantize_single,
    requantize_xnnpack_f32,
};
use crate::ops::requant::ChannelMultiplier;
use crate::quant::{Requantization, Rounding};
use core::arch::aarch64::*;

/// [`BlockParams::stage`]: gemmlowp's double rounding.
const STAGE_DOUBLE: u8 = 0;
/// [`BlockParams::stage`]: single rounding of the 64-bit product.
const STAGE_SINGLE: u8 = 1;
/// [`BlockParams::stage`]: the real multiplier in `f64`.
const STAGE_REAL_F64: u8 = 2;
/// [`BlockParams::stage`]: XNNPACK's `f32` scale, rounded to even.
const STAGE_XNNPACK_F32: u8 = 3;
/// [`BlockParams::stage`]: LiteRT's aarch64 GEMV, ties of the last shift up.
const STAGE_GEMV_TIES_UPWARD: u8 = 4;

/// The 8 channels of one weight block: bias and multipliers as two vectors.
#[derive(Clone, Copy)]
pub(super) struct BlockParams {
    /// Some channel of the block shifts left (an effective scale >= 1/2).
    any_left_shift: bool,
    /// Every channel of the block shifts right by at least 1.
    all_right_shift: bool,
    /// The activation range is narrower than int8's (otherwise the
    /// saturating narrow to int8 is the clamp).
    clamp: bool,
    /// Which output stage: [`STAGE_DOUBLE`], [`STAGE_SINGLE`]
    /// (`requantize_single` with `neg_total_shift`) or [`STAGE_REAL_F64`]
    /// (`requantize_real_f64` with `real`).
    stage: u8,
    bias: [int32x4_t; 2],
    mult: [ChannelMultiplier<int32x4_t>; 2],
    /// Each channel's 64-bit parameter of the stage, two per vector: single
    /// rounding, `-(31 - shift)`; real multipliers, the `f64` multiplier
    /// (its bits); double rounding, unused (zeros). One field for both, so
    /// that the stages that do not use it cost no extra register set-up.
    wide: [int64x2_t; 4],
    zero_point: int16x8_t,
    min: int8x16_t,
    max: int8x16_t,
}

impl BlockParams {
    #[inline(always)]
    pub(super) fn load(g: &GemmView<'_>, block: usize) -> BlockParams {
        let c = block * NR;
        let m = &g.multipliers;
        // Every per-channel array is padded to whole blocks; one check for
        // all of them.
        let padded = g.packed.len() / g.k_padded;
        assert!(
            c + NR <= padded
                && g.folded_bias.len() == padded
                && m.left_shift.len() == padded
                && m.multiplier.len() == padded
                && m.neg_right_shift.len() == padded
        );
        let v = |a: &[i32], j: usize| -> int32x4_t {
            // SAFETY: c + 4 j + 4 <= c + 8 <= a.len() (asserted above).
            unsafe { vld1q_s32(a.as_ptr().add(c + 4 * j)) }
        };
        let mult = |j| ChannelMultiplier {
            left_shift: v(&m.left_shift, j),
            multiplier: v(&m.multiplier, j),
            neg_right_shift: v(&m.neg_right_shift, j),
        };
        // SAFETY: neon is a compile-time target feature (cfg on this module).
        let (zero_point, min, max) = unsafe {
            (
                vdupq_n_s16(g.output_zero_point as i16),
                vdupq_n_s8(g.act_min as i8),
                vdupq_n_s8(g.act_max as i8),
            )
        };
        let (any_left_shift, all_right_shift) = g.block_shifts[block];
        let stage = match m.requantization {
            Requantization::Multiplier(Rounding::Double) => STAGE_DOUBLE,
            Requantization::Multiplier(Rounding::Single) => STAGE_SINGLE,
            Requantization::RealF64 => STAGE_REAL_F64,
            Requantization::XnnpackF32 => STAGE_XNNPACK_F32,
            Requantization::GemvTiesUpward => STAGE_GEMV_TIES_UPWARD,
        };
        let wide: [int64x2_t; 4] = match stage {
            STAGE_SINGLE => {
                let t = &m.neg_total_shift[c..c + NR];
                // SAFETY: t holds 8 values (sliced above); 2 h + 2 <= 8.
                core::array::from_fn(|h| unsafe { vld1q_s64(t.as_ptr().add(2 * h)) })
            }
            STAGE_REAL_F64 => {
                let t = &m.real[c..c + NR];
                // SAFETY: t holds 8 values (sliced above); 2 h + 2 <= 8.
                core::array::from_fn(|h| unsafe {
                    vreinterpretq_s64_f64(vld1q_f64(t.as_ptr().add(2 * h)))
                })
            }
            STAGE_XNNPACK_F32 => {
                let t = &m.scale_f32[c..c + NR];
                // SAFETY: t holds 8 values (sliced above); 4 h + 4 <= 8. The
                // 8 f32 scales take the first two vectors, as bits.
                let s: [int64x2_t; 2] = core::array::from_fn(|h| unsafe {
                    vreinterpretq_s64_f32(vld1q_f32(t.as_ptr().add(4 * h)))
                });
                // SAFETY: neon is a compile-time target feature (cfg on this module).
                [s[0], s[1], unsafe { vdupq_n_s64(0) }, unsafe {
                    vdupq_n_s64(0)
                }]
            }
            // SAFETY: neon is a compile-time target feature (cfg on this module).
            _ => [unsafe { vdupq_n_s64(0) }; 4],
        };
        BlockParams {
            any_left_shift,
            all_right_shift,
            clamp: g.act_min > i8::MIN as i32 || g.act_max < i8::MAX as i32,
            stage,
            bias: [v(g.folded_bias, 0), v(g.folded_bias, 1)],
            mult: [mult(0), mult(1)],
            wide,
            zero_point,
            min,
            max,
        }
    }
}

/// `(first row, first weight block, end weight block)` of the tile `t`.
/// With `AT_ORIGIN` (the tile starts at row 0 and channel 0, as the whole
/// output of `Gemm::run` does) both starts are the constant 0, so that the
/// kernels compile to the loops of a whole output: tile-relative positions
/// then cost almost nothing (measured on the one-layer MobileBert under
/// qemu: FULLY_CONNECTED +0.39% and BATCH_MATMUL +0.76% instructions
/// without it, +0.16% and +0.19% with it).
#[inline(always)]
pub(super) fn tile_origin<const AT_ORIGIN: bool>(t: &Tile) -> (usize, usize, usize) {
    debug_assert!(!AT_ORIGIN || (t.rows.start == 0 && t.cols.start == 0));
    let end_block = t.cols.end.div_ceil(NR);
    if AT_ORIGIN {
        (0, 0, end_block)
    } else {
        (t.rows.start, t.cols.start / NR, end_block)
    }
}

/// An output stage fixed at compile time: [`store_tile_with`]'s parameters
/// as a type, so that a block's loop over its row tiles can be
/// monomorphized for it ([`with_stage`]) rather than choosing the stage
/// again for every tile.
pub(super) trait StoreTile: Copy {
    /// `Some(clamp)` for the single-rounding stage of a block whose channels
    /// all shift right (`requantize_single_right`), which whole tiles may
    /// run in one assembly loop (`dot_tiles::panel_tiles_single_right`);
    /// `None` for every other stage.
    const SINGLE_RIGHT: Option<bool>;

    /// `Some(clamp)` for the double-rounding stage of a block whose
    /// channels all shift right (`requant::neon::requantize::<false,
    /// true>`), which the `smmla` path's whole tiles run in its assembly
    /// loop (`mmla_tiles::mmla_tiles_right`); `None` for every other stage.
    const DOUBLE_RIGHT: Option<bool>;

    /// [`store_tile`] in this stage.
    #[allow(clippy::too_many_arguments)]
    fn store<const R: usize>(
        self,
        acc: &[[int32x4_t; 2]; R],
        p: &BlockParams,
        output: &mut [i8],
        stride: usize,
        row: usize,
        mr: usize,
        col: usize,
        nr: usize,
    );
}

/// The [`StoreTile`] of `store_tile_with::<_, LEFT, FAST, CLAMP, STAGE>`.
#[derive(Clone, Copy)]
pub(super) struct Stage<const LEFT: bool, const FAST: bool, const CLAMP: bool, const STAGE: u8>;

impl<const LEFT: bool, const FAST: bool, const CLAMP: bool, const STAGE: u8> StoreTile
    for Stage<LEFT, FAST, CLAMP, STAGE>
{
    const SINGLE_RIGHT: Option<bool> = if STAGE == STAGE_SINGLE && FAST && !LEFT {
        Some(CLAMP)
    } else {
        None
    };
    const DOUBLE_RIGHT: Option<bool> = if STAGE == STAGE_DOUBLE && FAST && !LEFT {
        Some(CLAMP)
    } else {
        None
    };

    #[inline(always)]
    fn store<const R: usize>(
        self,
        acc: &[[int32x4_t; 2]; R],
        p: &BlockParams,
        output: &mut [i8],
        stride: usize,
        row: usize,
        mr: usize,
        col: usize,
        nr: usize,
    ) {
        store_tile_with::<R, LEFT, FAST, CLAMP, STAGE>(acc, p, output, stride, row, mr, col, nr)
    }
}

/// Work over the row tiles of one weight block, generic over the block's
/// output stage.
pub(super) trait BlockTiles {
    /// Runs the work, storing every tile with `store`.
    fn run<S: StoreTile>(self, store: S);
}

/// Runs `work` with the output stage of the block `p` (chosen here, once).
#[inline(always)]
pub(super) fn with_stage<B: BlockTiles>(p: &BlockParams, work: B) {
    macro_rules! go {
        ($left:literal, $fast:literal, $clamp:literal, $stage:ident) => {
            work.run(Stage::<$left, $fast, $clamp, $stage>)
        };
        (stage $stage:ident, $left:literal) => {
            if p.clamp {
                go!($left, false, true, $stage)
            } else {
                go!($left, false, false, $stage)
            }
        };
    }
    match p.stage {
        // Every channel shifts right: the 32-bit form, FAST selects it.
        STAGE_SINGLE if p.all_right_shift => {
            if p.clamp {
                go!(false, true, true, STAGE_SINGLE)
            } else {
                go!(false, true, false, STAGE_SINGLE)
            }
        }
        STAGE_SINGLE if p.any_left_shift => go!(stage STAGE_SINGLE, true),
        STAGE_SINGLE => go!(stage STAGE_SINGLE, false),
        STAGE_REAL_F64 => go!(stage STAGE_REAL_F64, false),
        STAGE_XNNPACK_F32 => go!(stage STAGE_XNNPACK_F32, false),
        STAGE_GEMV_TIES_UPWARD => go!(stage STAGE_GEMV_TIES_UPWARD, false),
        _ => match (p.any_left_shift, p.all_right_shift, p.clamp) {
            (false, true, false) => go!(false, true, false, STAGE_DOUBLE),
            (false, true, true) => go!(false, true, true, STAGE_DOUBLE),
            (false, false, false) => go!(false, false, false, STAGE_DOUBLE),
            (false, false, true) => go!(false, false, true, STAGE_DOUBLE),
            (true, true, false) => go!(true, true, false, STAGE_DOUBLE),
            (true, true, true) => go!(true, true, true, STAGE_DOUBLE),
            (true, false, false) => go!(true, false, false, STAGE_DOUBLE),
            (true, false, true) => go!(true, false, true, STAGE_DOUBLE),
        },
    }
}

/// Requantizes an `R x 8` tile of accumulators and stores its first `mr`
/// rows and `nr` channels at rows `row..row + mr`, columns `col..col + nr`
/// of the output, whose rows are `stride` apart (positions relative to the
/// caller's [`Tile`](crate::ops::gemm::params::Tile)), choosing the block's
/// output stage for this one tile.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(super) fn store_tile<const R: usize>(
    acc: &[[int32x4_t; 2]; R],
    p: &BlockParams,
    output: &mut [i8],
    stride: usize,
    row: usize,
    mr: usize,
    col: usize,
    nr: usize,
) {
    struct One<'a, const R: usize> {
        acc: &'a [[int32x4_t; 2]; R],
        p: &'a BlockParams,
        output: &'a mut [i8],
        at: [usize; 5],
    }
    impl<const R: usize> BlockTiles for One<'_, R> {
        #[inline(always)]
        fn run<S: StoreTile>(self, store: S) {
            let [stride, row, mr, col, nr] = self.at;
            store.store::<R>(self.acc, self.p, self.output, stride, row, mr, col, nr)
        }
    }
    with_stage(
        p,
        One {
            acc,
            p,
            output,
            at: [stride, row, mr, col, nr],
        },
    )
}

#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn store_tile_with<
    const R: usize,
    const LEFT: bool,
    const FAST: bool,
    const CLAMP: bool,
    const STAGE: u8,
>(
    acc: &[[int32x4_t; 2]; R],
    p: &BlockParams,
    output: &mut [i8],
    stride: usize,
    row: usize,
    mr: usize,
    col: usize,
    nr: usize,
) {
    debug_assert!(R.is_multiple_of(2));
    // Rows r and r + 1 of the tile as one vector of 16 int8 (8 channels each).
    let pair = |r: usize| -> int8x16_t {
        let half = |r: usize| -> int16x8_t {
            let t = &p.wide;
            let (lo, hi) = if STAGE == STAGE_SINGLE && FAST {
                (
                    requantize_single_right(acc[r][0], &p.mult[0]),
                    requantize_single_right(acc[r][1], &p.mult[1]),
                )
            } else if STAGE == STAGE_SINGLE && LEFT {
                (
                    requantize_single(acc[r][0], p.mult[0].multiplier, &[t[0], t[1]]),
                    requantize_single(acc[r][1], p.mult[1].multiplier, &[t[2], t[3]]),
                )
            } else if STAGE == STAGE_SINGLE {
                (
                    requantize_single_in_range(acc[r][0], p.mult[0].multiplier, &[t[0], t[1]]),
                    requantize_single_in_range(acc[r][1], p.mult[1].multiplier, &[t[2], t[3]]),
                )
            } else if STAGE == STAGE_REAL_F64 {
                // SAFETY: neon is a compile-time target feature (cfg on this
                // module); the lanes hold f64 bits (`load`).
                let real: [float64x2_t; 4] =
                    core::array::from_fn(|h| unsafe { vreinterpretq_f64_s64(t[h]) });
                (
                    requantize_real_f64(acc[r][0], &[real[0], real[1]]),
                    requantize_real_f64(acc[r][1], &[real[2], real[3]]),
                )
            } else if STAGE == STAGE_GEMV_TIES_UPWARD {
                (
                    requantize_gemv_ties_upward(acc[r][0], &p.mult[0]),
                    requantize_gemv_ties_upward(acc[r][1], &p.mult[1]),
                )
            } else if STAGE == STAGE_XNNPACK_F32 {
                // SAFETY: neon is a compile-time target feature (cfg on this
                // module); the first two vectors hold f32 bits (`load`).
                let scale: [float32x4_t; 2] =
                    core::array::from_fn(|h| unsafe { vreinterpretq_f32_s64(t[h]) });
                (
                    requantize_xnnpack_f32(acc[r][0], scale[0]),
                    requantize_xnnpack_f32(acc[r][1], scale[1]),
                )
            } else {
                (
                    requantize::<LEFT, FAST>(acc[r][0], &p.mult[0]),
                    requantize::<LEFT, FAST>(acc[r][1], &p.mult[1]),
                )
            };
            // SAFETY: neon is a compile-time target feature (cfg on this module).
            unsafe { vqaddq_s16(vqmovn_high_s32(vqmovn_s32(lo), hi), p.zero_point) }
        };
        let (h0, h1) = (half(r), half(r + 1));
        // SAFETY: neon is a compile-time target feature (cfg on this module).
        unsafe {
            let b = vqmovn_high_s16(vqmovn_s16(h0), h1);
            if CLAMP {
                vminq_s8(vmaxq_s8(b, p.min), p.max)
            } else {
                b
            }
        }
    };
    if mr == R && nr == NR {
        // A whole tile: rows row..row + R, channels col..col + 8, all inside
        // the caller's tile.
        let last = (row + R - 1) * stride + col;
        let _last = &mut output[last..last + NR];
        // One pointer stepped down the rows by the stores themselves: the
        // row addresses are not kept (spilled) one per row.
        // SAFETY: the first row's 8 bytes start within `output` (sliced
        // just above).
        let mut at = unsafe { output.as_mut_ptr().add(row * stride + col) };
        for r in (0..R).step_by(2) {
            let b = pair(r);
            // SAFETY: rows row + r and row + r + 1 <= row + R - 1, channels
            // col..col + 8: each 8 bytes end at or before the last row's
            // end, within the slice checked just above. `at` points at row
            // row + r and moves on by two rows.
            unsafe { store_row_pair(&mut at, b, stride) };
        }
    } else {
        let mut buf = [0i8; 64];
        debug_assert!(R * NR <= buf.len());
        for r in (0..R).step_by(2) {
            // SAFETY: buf holds 64 bytes and r * 8 + 16 <= R * 8 <= 64.
            unsafe { vst1q_s8(buf.as_mut_ptr().add(r * NR), pair(r)) };
        }
        for r in 0..mr {
            let at = (row + r) * stride + col;
            output[at..at + nr].copy_from_slice(&buf[r * NR..r * NR + nr]);
        }
    }
}

/// Stores the low 8 bytes of `b` at `*at` and the high 8 at `*at + stride`,
/// leaving `*at` two rows on: two `st1`s of a lane that step the pointer
/// themselves (written in assembly: the compiler keeps every row's address
/// apart, spilled, and moves the high half out first, about 19
/// instructions per tile's stores instead of 8).
///
/// # Safety
/// `*at` and `*at + stride` must each be valid for writing 8 bytes.
#[inline(always)]
unsafe fn store_row_pair(at: &mut *mut i8, b: int8x16_t, stride: usize) {
    // SAFETY: writes 8 bytes at each of the two rows (the caller's
    // guarantee); no stack, no flags.
    unsafe {
        core::arch::asm!(
            "st1 {{{b:v}.d}}[0], [{at}], {stride}",
            "st1 {{{b:v}.d}}[1], [{at}], {stride}",
            at = inout(reg) *at,
            b = in(vreg) b,
            stride = in(reg) stride,
            options(nostack, preserves_flags),
        );
    }
}

/// `requantize_single` for a block whose channels all shift right
/// (`shift <= 0`: an effective scale below 1, as the padded channels' zero
/// multiplier too): the 64-bit product `acc * multiplier` (`|acc| <= 2^31`,
/// `0 <= multiplier < 2^31`) is below `2^62` in magnitude and the rounding
/// shift divides it by at least `2^31`, so every result lies within
/// `[-(2^31 - 1), 2^31 - 1]`. The saturating narrow to 32 bits would change
/// nothing: the low halves are taken as they are, one `uzp1` for four lanes
/// instead of `sqxtn` and `sqxtn2`.
#[inline(always)]
fn requantize_single_in_range(
    acc: int32x4_t,
    multiplier: int32x4_t,
    neg_total_shift: &[int64x2_t; 2],
) -> int32x4_t {
    // SAFETY: neon is a compile-time target feature (cfg on this module).
    unsafe {
        let lo = vrshlq_s64(
            vmull_s32(vget_low_s32(acc), vget_low_s32(multiplier)),
            neg_total_shift[0],
        );
        let hi = vrshlq_s64(mull_high(acc, multiplier), neg_total_shift[1]);
        // Lanes 0 and 2 of each are the low halves of its two products.
        vuzp1q_s32(vreinterpretq_s32_s64(lo), vreinterpretq_s32_s64(hi))
    }
}

/// `requantize_single` for a block whose channels all shift right by at
/// least 1 (`shift = -r`, `r >= 1`; the padded channels' `-1` too), in
/// 32 bits: `srshl(sqdmulh(acc, multiplier), -r)`, two instructions for
/// four lanes instead of five.
///
/// Exact: with `x = acc * multiplier`, the reference is
/// `floor((x + 2^(30 + r)) / 2^(31 + r))`. `sqdmulh` gives `q =
/// floor(x / 2^31)` (the high half of `2x`; it saturates only for both
/// operands `-2^31`, and multipliers are `>= 0`), and the rounding shift
/// gives `floor((q + 2^(r - 1)) / 2^r)`. For an integer `a = 2^(r - 1)`
/// and `n = 2^r`, `floor((y + a) / n) = floor((floor(y) + a) / n)`, so the
/// two agree for `y = x / 2^31`. `srshl`'s rounding add is defined on the
/// unbounded value (no lane overflows), `|q| < 2^31`, and the result lies
/// within `[-2^30, 2^30]` (the reference's clamp to `i32` never acts here).
#[inline(always)]
fn requantize_single_right(acc: int32x4_t, m: &ChannelMultiplier<int32x4_t>) -> int32x4_t {
    // SAFETY: neon is a compile-time target feature (cfg on this module).
    unsafe { vrshlq_s32(vqdmulhq_s32(acc, m.multiplier), m.neg_right_shift) }
}

/// `vmull_high_s32` as one `smull2`. With the multipliers kept in
/// registers across a group's row tiles, the compiler hoists their high
/// halves out of the loop and then splits every product of the
/// accumulators' high halves into `ext` + `smull`: 16 more instructions
/// per 8 x 8 tile.
#[inline(always)]
fn mull_high(a: int32x4_t, b: int32x4_t) -> int64x2_t {
    let product: int64x2_t;
    // SAFETY: `smull2` on vector registers has no memory, stack or flag
    // effects; neon is a compile-time target feature (cfg on this module).
    unsafe {
        core::arch::asm!(
            "smull2 {p:v}.2d, {a:v}.4s, {b:v}.4s",
            p = lateout(vreg) product,
            a = in(vreg) a,
            b = in(vreg) b,
            options(pure, nomem, nostack, preserves_flags),
        );
    }
    product
}

/// The starting accumulators of an `R x 8` tile at rows `row..row + mr`:
/// the block's folded bias, plus each row's offset when there are row
/// offsets (rows past `mr` take the last row's, as their input does).
#[inline(always)]
pub(super) fn initial_acc<const R: usize>(
    bias: [int32x4_t; 2],
    row_offsets: Option<&[i32]>,
    row: usize,
    mr: usize,
) -> [[int32x4_t; 2]; R] {
    match row_offsets {
        None => [bias; R],
        Some(offsets) => {
            let rows = &offsets[row..row + mr];
            core::array::from_fn(|r| {
                // SAFETY: neon is a compile-time target feature (cfg on this module).
                unsafe {
                    let o = vdupq_n_s32(rows[r.min(mr - 1)]);
                    [vaddq_s32(bias[0], o), vaddq_s32(bias[1], o)]
                }
            })
        }
    }
}

/// Pointers to rows `row..row + R` of the `k`-deep input, rows past
/// `row + mr` replaced by row `row + mr - 1` (`input` holds at least
/// `(row + mr) * k` bytes).
#[inline(always)]
pub(super) fn row_pointers<const R: usize>(
    input: &[i8],
    k: usize,
    row: usize,
    mr: usize,
) -> [*const i8; R] {
    // One bounds check for all rows (the last one) instead of one per row.
    let _last_row = &input[(row + mr - 1) * k..(row + mr) * k];
    let base = input.as_ptr();
    if mr == R {
        // SAFETY: row + r <= row + mr - 1, whose k bytes were sliced just
        // above, so the offset is within `input`.
        core::array::from_fn(|r| unsafe { base.add((row + r) * k) })
    } else {
        // SAFETY: as above, with row + min(r, mr - 1) <= row + mr - 1.
        core::array::from_fn(|r| unsafe { base.add((row + r.min(mr - 1)) * k) })
    }
}

/// The depth past the last whole 16 bytes, copied into zero-padded rows.
#[inline(always)]
pub(super) fn tail_rows<const R: usize>(
    input: &[i8],
    k: usize,
    row: usize,
    mr: usize,
    buf: &mut [[i8; KC]; R],
) {
    let x = tail_vectors::<R>(input, k, row, mr);
    for (b, x) in buf.iter_mut().zip(x) {
        // SAFETY: each buffer row holds 16 bytes; neon is a compile-time
        // target feature (cfg on this module).
        unsafe { vst1q_s8(b.as_mut_ptr(), x) };
    }
}

/// The depth past the last whole 16 bytes of rows `row..row + R` (rows
/// past `row + mr` repeat the last one), zero-padded to 16 bytes. A row
/// whose 16 bytes from the tail's start lie within `input` is one load and
/// one mask of its first `k % 16` bytes (the bytes past them belong to the
/// next row and are cleared); only the last rows of `input` are copied
/// byte by byte. A small depth (8 bytes for a pointwise layer after an
/// 8-channel depthwise one) is all tail: a `memcpy` call per row cost more
/// than the tile's `sdot`s.
#[inline(always)]
pub(super) fn tail_vectors<const R: usize>(
    input: &[i8],
    k: usize,
    row: usize,
    mr: usize,
) -> [int8x16_t; R] {
    let start = k - k % KC;
    let len = k - start;
    const INDEX: [u8; KC] = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15];
    // SAFETY: neon is a compile-time target feature (cfg on this module);
    // INDEX holds 16 bytes.
    let mask = unsafe { vcltq_u8(vld1q_u8(INDEX.as_ptr()), vdupq_n_u8(len as u8)) };
    // An explicit array and loop, not `core::array::from_fn` (left out of
    // line, a call per tile); the byte copy of the input's last rows is a
    // function of its own, so that the loads stay small enough to inline.
    // SAFETY: neon is a compile-time target feature (cfg on this module).
    let mut x = [unsafe { vdupq_n_s8(0) }; R];
    for (r, x) in x.iter_mut().enumerate() {
        let at = (row + r.min(mr - 1)) * k + start;
        *x = if at + KC <= input.len() {
            // SAFETY: at + 16 <= input.len() (checked just above).
            unsafe {
                let x = vld1q_s8(input.as_ptr().add(at));
                vreinterpretq_s8_u8(vandq_u8(vreinterpretq_u8_s8(x), mask))
            }
        } else {
            tail_copy(&input[at..at + len])
        };
    }
    x
}

/// The `len < 16` bytes of `tail` zero-padded to 16 (a row tail that ends
/// the input, where a 16-byte load would read past it).
#[cold]
#[inline(never)]
fn tail_copy(tail: &[i8]) -> int8x16_t {
    let mut b = [0i8; KC];
    for (d, &s) in b.iter_mut().zip(tail) {
        *d = s;
    }
    // SAFETY: b holds 16 bytes.
    unsafe { vld1q_s8(b.as_ptr()) }
}
