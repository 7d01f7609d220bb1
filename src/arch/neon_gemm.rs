//! NEON int8 GEMM micro-kernels, bit-exact with `arch::scalar_gemm::gemm`.
//!
//! Both paths read the weights packed by [`Gemm::new`] (blocks of 8 output
//! channels, depth in groups of 4 bytes). Accumulators start from the folded
//! bias, so the inner loops multiply raw int8 values; int32 sums wrap like the
//! reference's.
//!
//! * [`gemm_dot`]: `sdot` by element on an 8 x 8 tile (16 accumulators). Each
//!   tile of 8 input rows is copied into a stack panel interleaved by 16 depth
//!   bytes (depths up to `PANEL_DEPTH`), and every weight block runs over it:
//!   per 16 bytes of depth, two 4-register loads of weights and two of rows,
//!   64 `sdot`s (1024 MACs). Deeper inputs are read in place
//!   (`gemm_dot_rows`: 8 row loads and 4 weight pair loads per step).
//! * [`gemm_widening`]: `smull`/`smull2` to 16 bits and `sadalp` into 32 bits
//!   on a 4 x 8 tile (a product of two int8 fits 16 bits, -128 * -128
//!   included, and `sadalp` widens before adding: nothing can overflow). The
//!   accumulators hold two partial sums per channel, added pairwise at the end.
//!
//! Edge tiles: rows past `m` re-read the last row (their results are not
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

use crate::fixedpoint::Lane;
use crate::ops::gemm::{Gemm, KC, NR};
use crate::ops::requant::{requantize_lanes, ChannelLane, ChannelMultiplier};
use core::arch::aarch64::*;

impl ChannelLane for int32x4_t {
    #[inline(always)]
    fn shl_lanes(self, n: Self) -> Self {
        // SAFETY: neon is a compile-time target feature (cfg on this module).
        unsafe { vshlq_s32(self, n) }
    }
    #[inline(always)]
    fn rounding_divide_by_pot_lanes(self, neg_exponent: Self) -> Self {
        // The lane-vector form of `Lane::rounding_divide_by_pot` for int32x4_t:
        // -1 (saturating) on negative lanes with a non-zero exponent turns
        // `srshl`'s ties toward +inf into ties away from zero.
        // SAFETY: neon is a compile-time target feature (cfg on this module).
        unsafe {
            let fixup = vshrq_n_s32::<31>(vandq_s32(self, neg_exponent));
            vrshlq_s32(vqaddq_s32(self, fixup), neg_exponent)
        }
    }
    #[inline(always)]
    fn wrapping_mul(self, b: Self) -> Self {
        // SAFETY: neon is a compile-time target feature (cfg on this module).
        unsafe { vmulq_s32(self, b) }
    }
}

/// The 8 channels of one weight block: bias and multipliers as two vectors.
#[derive(Clone, Copy)]
struct BlockParams {
    /// Some channel of the block shifts left (an effective scale >= 1/2).
    any_left_shift: bool,
    /// Every channel of the block shifts right by at least 1.
    all_right_shift: bool,
    /// The activation range is narrower than int8's (otherwise the
    /// saturating narrow to int8 is the clamp).
    clamp: bool,
    bias: [int32x4_t; 2],
    mult: [ChannelMultiplier<int32x4_t>; 2],
    zero_point: int16x8_t,
    min: int8x16_t,
    max: int8x16_t,
}

impl BlockParams {
    #[inline(always)]
    fn load(g: &Gemm, block: usize) -> BlockParams {
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
        BlockParams {
            any_left_shift,
            all_right_shift,
            clamp: g.act_min > i8::MIN as i32 || g.act_max < i8::MAX as i32,
            bias: [v(&g.folded_bias, 0), v(&g.folded_bias, 1)],
            mult: [mult(0), mult(1)],
            zero_point,
            min,
            max,
        }
    }
}

/// `requantize_lanes` for one vector of 4 channels, specialised per block:
/// without the left shift when no channel of the block has one (shifting by
/// 0 is the identity), and, when every channel shifts right by at least 1,
/// with the sign fix-up of the rounding divide as one `ssra` (`x + (x >> 31)`)
/// instead of `and` + `sshr` + `sqadd`: the same values, because the
/// fix-up's `and` with a negative shift keeps the sign bit, and the saturation
/// of `sqadd` never acts (`sqrdmulh` by a multiplier below 2^31 cannot give
/// `i32::MIN`, so adding -1 cannot overflow).
/// Shared by the NoNorm kernel (`neon_elementwise`).
#[inline(always)]
pub(crate) fn requantize<const LEFT: bool, const FAST: bool>(
    acc: int32x4_t,
    m: &ChannelMultiplier<int32x4_t>,
) -> int32x4_t {
    if LEFT && !FAST {
        return requantize_lanes(acc, m);
    }
    let x = if LEFT {
        acc.shl_lanes(m.left_shift)
    } else {
        acc
    };
    let x = x.saturating_rounding_doubling_high_mul(m.multiplier);
    if FAST {
        // SAFETY: neon is a compile-time target feature (cfg on this module).
        unsafe { vrshlq_s32(vsraq_n_s32::<31>(x, x), m.neg_right_shift) }
    } else {
        x.rounding_divide_by_pot_lanes(m.neg_right_shift)
    }
}

/// Requantizes an `R x 8` tile of accumulators and stores rows `row..row + mr`,
/// channels `col..col + nr` of the `n`-wide output.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn store_tile<const R: usize>(
    acc: &[[int32x4_t; 2]; R],
    p: &BlockParams,
    output: &mut [i8],
    n: usize,
    row: usize,
    mr: usize,
    col: usize,
    nr: usize,
) {
    macro_rules! with {
        ($left:literal, $fast:literal, $clamp:literal) => {
            store_tile_with::<R, $left, $fast, $clamp>(acc, p, output, n, row, mr, col, nr)
        };
    }
    match (p.any_left_shift, p.all_right_shift, p.clamp) {
        (false, true, false) => with!(false, true, false),
        (false, true, true) => with!(false, true, true),
        (false, false, false) => with!(false, false, false),
        (false, false, true) => with!(false, false, true),
        (true, true, false) => with!(true, true, false),
        (true, true, true) => with!(true, true, true),
        (true, false, false) => with!(true, false, false),
        (true, false, true) => with!(true, false, true),
    }
}

#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn store_tile_with<const R: usize, const LEFT: bool, const FAST: bool, const CLAMP: bool>(
    acc: &[[int32x4_t; 2]; R],
    p: &BlockParams,
    output: &mut [i8],
    n: usize,
    row: usize,
    mr: usize,
    col: usize,
    nr: usize,
) {
    debug_assert!(R % 2 == 0);
    // Rows r and r + 1 of the tile as one vector of 16 int8 (8 channels each).
    let pair = |r: usize| -> int8x16_t {
        let half = |r: usize| -> int16x8_t {
            let lo = requantize::<LEFT, FAST>(acc[r][0], &p.mult[0]);
            let hi = requantize::<LEFT, FAST>(acc[r][1], &p.mult[1]);
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
        // the m x n output.
        let _last = &mut output[(row + R - 1) * n + col..(row + R - 1) * n + col + NR];
        let o = output.as_mut_ptr();
        for r in (0..R).step_by(2) {
            let b = pair(r);
            // SAFETY: rows row + r and row + r + 1 <= row + R - 1, channels
            // col..col + 8: within the slice checked just above.
            unsafe {
                let at = o.add((row + r) * n + col);
                vst1_s8(at, vget_low_s8(b));
                vst1_s8(at.add(n), vget_high_s8(b));
            }
        }
    } else {
        let mut buf = [0i8; 64];
        debug_assert!(R * NR <= buf.len());
        for r in (0..R).step_by(2) {
            // SAFETY: buf holds 64 bytes and r * 8 + 16 <= R * 8 <= 64.
            unsafe { vst1q_s8(buf.as_mut_ptr().add(r * NR), pair(r)) };
        }
        for r in 0..mr {
            let at = (row + r) * n + col;
            output[at..at + nr].copy_from_slice(&buf[r * NR..r * NR + nr]);
        }
    }
}

/// Pointers to rows `row..row + R` of the `k`-deep input, rows past `m`
/// replaced by row `m - 1` (`row + mr <= m`, `input.len() == m * k`).
#[inline(always)]
fn row_pointers<const R: usize>(input: &[i8], k: usize, row: usize, mr: usize) -> [*const i8; R] {
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
fn tail_rows<const R: usize>(
    input: &[i8],
    k: usize,
    row: usize,
    mr: usize,
    buf: &mut [[i8; KC]; R],
) {
    let start = k - k % KC;
    for (r, b) in buf.iter_mut().enumerate() {
        let at = (row + r.min(mr - 1)) * k;
        b[..k - start].copy_from_slice(&input[at + start..at + k]);
    }
}

/// `sdot` by element: `acc[i] += dot(w[4i..4i + 4], x[4 LANE..4 LANE + 4])`.
#[inline(always)]
fn sdot_lane<const LANE: i32>(acc: int32x4_t, w: int8x16_t, x: int8x16_t) -> int32x4_t {
    let mut acc = acc;
    // SAFETY: `sdot` on vector registers has no memory, stack or flag effects.
    // It is only reached from `gemm_dot`, which requires dotprod (the
    // intrinsic is not stable yet, hence the asm).
    unsafe {
        core::arch::asm!(
            "sdot {acc:v}.4s, {w:v}.16b, {x:v}.4b[{lane}]",
            acc = inout(vreg) acc,
            w = in(vreg) w,
            x = in(vreg) x,
            lane = const LANE,
            options(pure, nomem, nostack, preserves_flags),
        );
    }
    acc
}

/// One step of 16 depth bytes for two rows (`x0`, `x1`: 16 bytes of each)
/// with the 8 weight vectors of the step (`w[2g + j]`: depth group `g`,
/// channels `4j..4j + 4`): four independent accumulator chains.
#[inline(always)]
fn dot_row_pair(
    acc: &mut [[int32x4_t; 2]; 8],
    r: usize,
    w: &[int8x16_t; 8],
    x0: int8x16_t,
    x1: int8x16_t,
) {
    macro_rules! group {
        ($g:literal) => {
            acc[r][0] = sdot_lane::<$g>(acc[r][0], w[2 * $g], x0);
            acc[r][1] = sdot_lane::<$g>(acc[r][1], w[2 * $g + 1], x0);
            acc[r + 1][0] = sdot_lane::<$g>(acc[r + 1][0], w[2 * $g], x1);
            acc[r + 1][1] = sdot_lane::<$g>(acc[r + 1][1], w[2 * $g + 1], x1);
        };
    }
    group!(0);
    group!(1);
    group!(2);
    group!(3);
}

/// `chunks` steps of 16 depth bytes on the 8 x 8 tile. The step's weights
/// (8 vectors) stay in registers while the rows stream past them: 16
/// accumulators + 8 weights + 2 rows fit the 32 registers without spills.
///
/// # Safety
/// Each row pointer must be valid for reading `16 chunks` bytes and `w` for
/// `128 chunks` bytes.
#[inline(always)]
unsafe fn dot_chunks(
    acc: &mut [[int32x4_t; 2]; 8],
    rows: &[*const i8; 8],
    chunks: usize,
    w: *const i8,
) {
    let mut w = w;
    for i in 0..chunks {
        // SAFETY: i < chunks, so 16 bytes at i * 16 are within each row and
        // 128 bytes at w within the block (the caller's guarantee).
        unsafe {
            let wv: [int8x16_t; 8] = core::array::from_fn(|j| vld1q_s8(w.add(16 * j)));
            // Written out (not a loop) so the accumulators stay in registers.
            let x = |r: usize| vld1q_s8(rows[r].add(i * KC));
            dot_row_pair(acc, 0, &wv, x(0), x(1));
            dot_row_pair(acc, 2, &wv, x(2), x(3));
            dot_row_pair(acc, 4, &wv, x(4), x(5));
            dot_row_pair(acc, 6, &wv, x(6), x(7));
            w = w.add(8 * 16);
        }
    }
}

/// The deepest input (in bytes, a multiple of 16) that [`gemm_dot`] copies
/// into a packed panel on the stack (8 KiB); deeper inputs are read in place.
const PANEL_DEPTH: usize = 1024;

/// Copies rows `row..row + 8` (rows past `row + mr` repeat the last one) of
/// the `k`-deep input into `panel`, interleaved by steps of 16 depth bytes:
/// step `i` of tile row `r` at `128 i + 16 r`, the depth past `k` zero. One
/// step of all 8 rows is then 128 contiguous bytes, loaded with two `ld1`s of
/// four registers.
#[inline(always)]
fn fill_panel(panel: &mut [i8; 8 * PANEL_DEPTH], input: &[i8], k: usize, row: usize, mr: usize) {
    let whole = k / KC;
    debug_assert!(k.div_ceil(KC) * KC <= PANEL_DEPTH);
    let rows = row_pointers::<8>(input, k, row, mr);
    let dst = panel.as_mut_ptr();
    for i in 0..whole {
        // SAFETY: each row pointer starts a k-byte input row and
        // 16 (i + 1) <= k; the panel holds 8 * PANEL_DEPTH >= 128 (i + 1)
        // bytes.
        unsafe {
            let x: [int8x16_t; 8] = core::array::from_fn(|r| vld1q_s8(rows[r].add(i * KC)));
            let at = dst.add(i * 8 * KC);
            vst1q_s8_x4(at, int8x16x4_t(x[0], x[1], x[2], x[3]));
            vst1q_s8_x4(at.add(64), int8x16x4_t(x[4], x[5], x[6], x[7]));
        }
    }
    if k % KC != 0 {
        let mut buf = [[0i8; KC]; 8];
        tail_rows(input, k, row, mr, &mut buf);
        for (r, b) in buf.iter().enumerate() {
            let at = whole * 8 * KC + r * KC;
            panel[at..at + KC].copy_from_slice(b);
        }
    }
}

/// `chunks` steps of 16 depth bytes on the 8 x 8 tile from a packed panel
/// (see [`fill_panel`]): per step two 4-register loads of weights and two of
/// input rows, 64 `sdot`s.
///
/// # Safety
/// The CPU must have dotprod; `chunks >= 1`; `x` and `w` must each be valid
/// for reading `128 chunks` bytes.
#[inline(always)]
unsafe fn dot_panel(acc: &mut [[int32x4_t; 2]; 8], x: *const i8, w: *const i8, chunks: usize) {
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

/// The `sdot` path: for each tile of 8 rows, the rows are copied into a
/// packed panel (when the depth fits [`PANEL_DEPTH`]) and every weight block
/// runs over it.
///
/// # Safety
/// The CPU must have the dotprod extension. `input.len() == m * g.k` and
/// `output.len() == m * g.n` (checked by `Gemm::run_with`).
#[target_feature(enable = "dotprod")]
#[inline(never)]
pub(crate) unsafe fn gemm_dot(g: &Gemm, input: &[i8], output: &mut [i8], m: usize) {
    const MR: usize = 8;
    debug_assert!(input.len() == m * g.k && output.len() == m * g.n);
    if g.k_padded > PANEL_DEPTH {
        // SAFETY: the caller's guarantees.
        return unsafe { gemm_dot_rows(g, input, output, m) };
    }
    let (n, k) = (g.n, g.k);
    let chunks = g.k_padded / KC;
    let block_bytes = NR * g.k_padded;
    let mut panel = [0i8; 8 * PANEL_DEPTH];
    let mut row = 0;
    while row < m {
        let mr = MR.min(m - row);
        fill_panel(&mut panel, input, k, row, mr);
        for (block, w) in g.packed.chunks_exact(block_bytes).enumerate() {
            let p = BlockParams::load(g, block);
            let col = block * NR;
            let nr = NR.min(n - col);
            let mut acc = [p.bias; MR];
            // SAFETY: the panel holds 8 * PANEL_DEPTH >= 128 chunks bytes
            // (k_padded = 16 chunks <= PANEL_DEPTH), the block 8 k_padded =
            // 128 chunks bytes.
            unsafe { dot_panel(&mut acc, panel.as_ptr(), w.as_ptr(), chunks) };
            store_tile::<MR>(&acc, &p, output, n, row, mr, col, nr);
        }
        row += MR;
    }
}

/// The `sdot` path reading the input rows in place (deep inputs).
///
/// # Safety
/// As [`gemm_dot`].
#[target_feature(enable = "dotprod")]
#[inline(never)]
unsafe fn gemm_dot_rows(g: &Gemm, input: &[i8], output: &mut [i8], m: usize) {
    const MR: usize = 8;
    let (n, k) = (g.n, g.k);
    let whole = k / KC;
    let block_bytes = NR * g.k_padded;
    for (block, w) in g.packed.chunks_exact(block_bytes).enumerate() {
        let p = BlockParams::load(g, block);
        let col = block * NR;
        let nr = NR.min(n - col);
        let mut row = 0;
        while row < m {
            let mr = MR.min(m - row);
            let rows = row_pointers::<MR>(input, k, row, mr);
            // The depth tail is copied before the accumulators are live, so
            // that they need not be saved around the copies.
            let mut buf = [[0i8; KC]; MR];
            if k % KC != 0 {
                tail_rows(input, k, row, mr, &mut buf);
            }
            let mut acc = [p.bias; MR];
            // SAFETY: each row pointer starts a k-byte input row, and
            // whole * 16 <= k; the block holds k_padded / 16 >= whole steps of
            // 128 bytes.
            unsafe { dot_chunks(&mut acc, &rows, whole, w.as_ptr()) };
            if k % KC != 0 {
                let rows: [*const i8; MR] = core::array::from_fn(|r| buf[r].as_ptr());
                // SAFETY: each buffer row holds 16 bytes; the block's last
                // 128 bytes start at whole * 128 (k_padded = (whole + 1) * 16).
                unsafe { dot_chunks(&mut acc, &rows, 1, w.as_ptr().add(whole * 4 * 32)) };
            }
            store_tile::<MR>(&acc, &p, output, n, row, mr, col, nr);
            row += MR;
        }
    }
}

/// One depth group of 4 (lane `G` of each row vector) on the 4 x 8 widening
/// tile: `acc[r][q]` holds channels `2q, 2q + 1`, two partial sums each.
///
/// # Safety
/// `w` must be valid for reading 32 bytes.
#[inline(always)]
unsafe fn widening_group<const G: i32>(
    acc: &mut [[int32x4_t; 4]; 4],
    x: &[int8x16_t; 4],
    w: *const i8,
) {
    // SAFETY: 32 readable bytes at w (the caller's guarantee); the rest is
    // register arithmetic (neon is a compile-time target feature).
    unsafe {
        let (w0, w1) = (vld1q_s8(w), vld1q_s8(w.add(16)));
        for r in 0..4 {
            // The row's 4 depth bytes of this group in every 32-bit lane.
            let xd = vreinterpretq_s8_s32(vdupq_laneq_s32::<G>(vreinterpretq_s32_s8(x[r])));
            let xl = vget_low_s8(xd);
            acc[r][0] = vpadalq_s16(acc[r][0], vmull_s8(vget_low_s8(w0), xl));
            acc[r][1] = vpadalq_s16(acc[r][1], vmull_high_s8(w0, xd));
            acc[r][2] = vpadalq_s16(acc[r][2], vmull_s8(vget_low_s8(w1), xl));
            acc[r][3] = vpadalq_s16(acc[r][3], vmull_high_s8(w1, xd));
        }
    }
}

/// Two depth groups (lanes `G` and `G + 1` of each row vector) on the 4 x 8
/// widening tile, for weights without -128: `smull` + `smlal` add two
/// products in 16 bits before `sadalp` widens them. Each product is at most
/// 128 * 127 = 16,256 in magnitude, so the sum of two fits (32,512 < 32,767);
/// with a -128 weight two products of 16,384 could overflow, hence the
/// one-group path for those weights.
///
/// # Safety
/// `w` must be valid for reading 64 bytes.
#[inline(always)]
unsafe fn widening_group_pair<const G: i32, const G1: i32>(
    acc: &mut [[int32x4_t; 4]; 4],
    x: &[int8x16_t; 4],
    w: *const i8,
) {
    // SAFETY: 64 readable bytes at w (the caller's guarantee); the rest is
    // register arithmetic (neon is a compile-time target feature).
    unsafe {
        let (a0, a1) = (vld1q_s8(w), vld1q_s8(w.add(16)));
        let (b0, b1) = (vld1q_s8(w.add(32)), vld1q_s8(w.add(48)));
        for r in 0..4 {
            let xa = vreinterpretq_s8_s32(vdupq_laneq_s32::<G>(vreinterpretq_s32_s8(x[r])));
            let xb = vreinterpretq_s8_s32(vdupq_laneq_s32::<G1>(vreinterpretq_s32_s8(x[r])));
            let (xal, xbl) = (vget_low_s8(xa), vget_low_s8(xb));
            let p0 = vmlal_s8(vmull_s8(vget_low_s8(a0), xal), vget_low_s8(b0), xbl);
            let p1 = vmlal_high_s8(vmull_high_s8(a0, xa), b0, xb);
            let p2 = vmlal_s8(vmull_s8(vget_low_s8(a1), xal), vget_low_s8(b1), xbl);
            let p3 = vmlal_high_s8(vmull_high_s8(a1, xa), b1, xb);
            acc[r][0] = vpadalq_s16(acc[r][0], p0);
            acc[r][1] = vpadalq_s16(acc[r][1], p1);
            acc[r][2] = vpadalq_s16(acc[r][2], p2);
            acc[r][3] = vpadalq_s16(acc[r][3], p3);
        }
    }
}

/// `chunks` steps of 16 depth bytes on the 4 x 8 widening tile; `PAIRS` when
/// no weight is -128 (see [`widening_group_pair`]).
///
/// # Safety
/// As [`dot_chunks`].
#[inline(always)]
unsafe fn widening_chunks<const PAIRS: bool>(
    acc: &mut [[int32x4_t; 4]; 4],
    rows: &[*const i8; 4],
    chunks: usize,
    w: *const i8,
) {
    let mut w = w;
    for i in 0..chunks {
        // SAFETY: as in `dot_chunks`.
        unsafe {
            let x: [int8x16_t; 4] = core::array::from_fn(|r| vld1q_s8(rows[r].add(i * KC)));
            if PAIRS {
                widening_group_pair::<0, 1>(acc, &x, w);
                widening_group_pair::<2, 3>(acc, &x, w.add(64));
            } else {
                widening_group::<0>(acc, &x, w);
                widening_group::<1>(acc, &x, w.add(32));
                widening_group::<2>(acc, &x, w.add(64));
                widening_group::<3>(acc, &x, w.add(96));
            }
            w = w.add(4 * 32);
        }
    }
}

/// The widening multiply-accumulate path (plain NEON). `input.len() == m * g.k`
/// and `output.len() == m * g.n` (checked by `Gemm::run_with`).
#[inline(never)]
pub(crate) fn gemm_widening(g: &Gemm, input: &[i8], output: &mut [i8], m: usize) {
    if g.weights_above_min {
        gemm_widening_with::<true>(g, input, output, m)
    } else {
        gemm_widening_with::<false>(g, input, output, m)
    }
}

#[inline(always)]
fn gemm_widening_with<const PAIRS: bool>(g: &Gemm, input: &[i8], output: &mut [i8], m: usize) {
    const MR: usize = 4;
    debug_assert!(input.len() == m * g.k && output.len() == m * g.n);
    let (n, k) = (g.n, g.k);
    let whole = k / KC;
    let block_bytes = NR * g.k_padded;
    // SAFETY: neon is a compile-time target feature (cfg on this module).
    let zero = unsafe { vdupq_n_s32(0) };
    for (block, w) in g.packed.chunks_exact(block_bytes).enumerate() {
        let p = BlockParams::load(g, block);
        let col = block * NR;
        let nr = NR.min(n - col);
        let mut row = 0;
        while row < m {
            let mr = MR.min(m - row);
            let rows = row_pointers::<MR>(input, k, row, mr);
            let mut buf = [[0i8; KC]; MR];
            if k % KC != 0 {
                tail_rows(input, k, row, mr, &mut buf);
            }
            let mut acc = [[zero; 4]; MR];
            // SAFETY: as in `gemm_dot`.
            unsafe { widening_chunks::<PAIRS>(&mut acc, &rows, whole, w.as_ptr()) };
            if k % KC != 0 {
                let rows: [*const i8; MR] = core::array::from_fn(|r| buf[r].as_ptr());
                // SAFETY: as in `gemm_dot`.
                unsafe {
                    widening_chunks::<PAIRS>(&mut acc, &rows, 1, w.as_ptr().add(whole * 4 * 32))
                };
            }
            let sums: [[int32x4_t; 2]; MR] = core::array::from_fn(|r| {
                // SAFETY: neon is a compile-time target feature (cfg on this module).
                unsafe {
                    [
                        vaddq_s32(vpaddq_s32(acc[r][0], acc[r][1]), p.bias[0]),
                        vaddq_s32(vpaddq_s32(acc[r][2], acc[r][3]), p.bias[1]),
                    ]
                }
            });
            store_tile::<MR>(&sums, &p, output, n, row, mr, col, nr);
            row += MR;
        }
    }
}

/// Packs the `n x k` row-major weights `w` into the layout of [`Gemm`]
/// (`packed` holds whole blocks of depth `k_padded`; its padding is zero and
/// stays so). Whole blocks, 16 depth bytes at a time: the 8 rows' 16 bytes
/// are four depth groups each, and two 4 x 4 transposes of 32-bit words give
/// the 32-byte groups (rows 0-3 then 4-7). The rest goes group by group.
pub(crate) fn pack_rows(packed: &mut [i8], w: &[i8], n: usize, k: usize, k_padded: usize) {
    assert!(w.len() == n * k && packed.len() >= n.div_ceil(NR) * NR * k_padded);
    let full_blocks = n / NR;
    let chunks = k / KC;
    for b in 0..full_blocks {
        let dst = &mut packed[b * NR * k_padded..(b + 1) * NR * k_padded];
        let src = &w[b * NR * k..(b + 1) * NR * k];
        for i in 0..chunks {
            // SAFETY: row r of the block is src[r k..(r + 1) k] and
            // 16 (i + 1) <= k; the chunk's groups 4i..4i + 4 are the 128 bytes
            // at 128 i of the block, and 128 (i + 1) <= 8 k_padded
            // (k_padded >= k >= 16 (i + 1)).
            unsafe {
                let row =
                    |r: usize| vreinterpretq_s32_s8(vld1q_s8(src.as_ptr().add(r * k + i * KC)));
                let o = dst.as_mut_ptr().add(i * 4 * 4 * NR);
                for half in 0..2 {
                    let (r0, r1, r2, r3) = (
                        row(4 * half),
                        row(4 * half + 1),
                        row(4 * half + 2),
                        row(4 * half + 3),
                    );
                    let t0 = vreinterpretq_s64_s32(vtrn1q_s32(r0, r1));
                    let t1 = vreinterpretq_s64_s32(vtrn2q_s32(r0, r1));
                    let t2 = vreinterpretq_s64_s32(vtrn1q_s32(r2, r3));
                    let t3 = vreinterpretq_s64_s32(vtrn2q_s32(r2, r3));
                    let at = o.add(16 * half);
                    vst1q_s8(at, vreinterpretq_s8_s64(vtrn1q_s64(t0, t2)));
                    vst1q_s8(at.add(32), vreinterpretq_s8_s64(vtrn1q_s64(t1, t3)));
                    vst1q_s8(at.add(64), vreinterpretq_s8_s64(vtrn2q_s64(t0, t2)));
                    vst1q_s8(at.add(96), vreinterpretq_s8_s64(vtrn2q_s64(t1, t3)));
                }
            }
        }
    }
    let d0 = chunks * KC;
    if d0 < k {
        crate::ops::gemm::pack_rows_groups(packed, w, 0, full_blocks * NR, d0, k, k_padded);
    }
    crate::ops::gemm::pack_rows_groups(packed, w, full_blocks * NR, n, 0, k, k_padded);
}

/// Packs the transpose of the `k x n` row-major `wt` (weight `(c, d)` =
/// `wt[d * n + c]`) into the layout of [`Gemm`]. Four depth rows of 16
/// channels (two blocks) at a time: zipping bytes of rows 0/1 and 2/3, then
/// 16-bit pairs of the two, gives each channel's 4 depth bytes in a 32-bit
/// lane, four channels per vector. A last odd block goes 8 channels at a
/// time, the channels past whole blocks and the depth past a multiple of 4
/// byte by byte.
pub(crate) fn pack_columns(packed: &mut [i8], wt: &[i8], n: usize, k: usize, k_padded: usize) {
    assert!(wt.len() == n * k && packed.len() >= n.div_ceil(NR) * NR * k_padded);
    let full_blocks = n / NR;
    let groups = k / 4;
    let src = wt.as_ptr();
    let dst = packed.as_mut_ptr();
    for g in 0..groups {
        let mut b = 0;
        while b + 2 <= full_blocks {
            // SAFETY: rows 4g..4g + 4 < k of n bytes, channels 8b..8b + 16 <= n;
            // blocks b and b + 1 < full_blocks hold group g at 32 g, with
            // 32 (g + 1) <= 8 k_padded.
            unsafe {
                let row = |t: usize| vld1q_s8(src.add((4 * g + t) * n + b * NR));
                let (a0, a1, a2, a3) = (row(0), row(1), row(2), row(3));
                let p01 = [vzip1q_s8(a0, a1), vzip2q_s8(a0, a1)];
                let p23 = [vzip1q_s8(a2, a3), vzip2q_s8(a2, a3)];
                for h in 0..2 {
                    let (x, y) = (vreinterpretq_s16_s8(p01[h]), vreinterpretq_s16_s8(p23[h]));
                    let at = dst.add((b + h) * NR * k_padded + g * 4 * NR);
                    vst1q_s8(at, vreinterpretq_s8_s16(vzip1q_s16(x, y)));
                    vst1q_s8(at.add(16), vreinterpretq_s8_s16(vzip2q_s16(x, y)));
                }
            }
            b += 2;
        }
        if b < full_blocks {
            // SAFETY: as above, for the 8 channels of block b.
            unsafe {
                let row = |t: usize| vld1_s8(src.add((4 * g + t) * n + b * NR));
                let (a0, a1, a2, a3) = (row(0), row(1), row(2), row(3));
                let x = vreinterpretq_s16_s8(vcombine_s8(vzip1_s8(a0, a1), vzip2_s8(a0, a1)));
                let y = vreinterpretq_s16_s8(vcombine_s8(vzip1_s8(a2, a3), vzip2_s8(a2, a3)));
                let at = dst.add(b * NR * k_padded + g * 4 * NR);
                vst1q_s8(at, vreinterpretq_s8_s16(vzip1q_s16(x, y)));
                vst1q_s8(at.add(16), vreinterpretq_s8_s16(vzip2q_s16(x, y)));
            }
        }
    }
    use crate::ops::gemm::pack_columns_bytes;
    pack_columns_bytes(packed, wt, full_blocks * NR, n, 0, k, n, k_padded);
    pack_columns_bytes(packed, wt, 0, full_blocks * NR, 4 * groups, k, n, k_padded);
}

/// The 8 channel sums (wrapping) of one packed block and its smallest
/// weight: per 16 bytes (4 channels x 4 depths) a pairwise widening add to
/// 16 bits and one into each channel's 32-bit lane.
pub(crate) fn block_sums(block: &[i8]) -> ([i32; NR], i8) {
    // SAFETY: neon is a compile-time target feature (cfg on this module);
    // every load is of a 16-byte half of a whole 32-byte group.
    unsafe {
        let mut sums = [vdupq_n_s32(0); 2];
        let mut min = vdupq_n_s8(i8::MAX);
        for group in block.chunks_exact(4 * NR) {
            for (h, sum) in sums.iter_mut().enumerate() {
                let v = vld1q_s8(group.as_ptr().add(16 * h));
                *sum = vpadalq_s16(*sum, vpaddlq_s8(v));
                min = vminq_s8(min, v);
            }
        }
        let mut out = [0i32; NR];
        vst1q_s32(out.as_mut_ptr(), sums[0]);
        vst1q_s32(out.as_mut_ptr().add(4), sums[1]);
        (out, vminvq_s8(min))
    }
}
