//! Whole 8 x 8 tiles of one weight block in a single assembly loop on the
//! `smmla` path, for the output stages LiteRT's optimized kernels take
//! most often, every channel shifting right: single rounding for CONV_2D
//! and FULLY_CONNECTED (`requantize_single_right` in [`super`]), as
//! [`super::dot_tiles`] does for `sdot`, and double rounding for
//! BATCH_MATMUL (`requant::neon::requantize::<false, true>`), whose tiles
//! also start from the row offsets (both its operands have zero points).
//!
//! The stage runs on the 2 x 2 blocks themselves, with the multipliers and
//! shifts paired as the bias is (`(m[2j], m[2j + 1], m[2j], m[2j + 1])`
//! for channel pair `j`): every lane goes through the instructions
//! `store_tile_with` applies to it (`sqdmulh`, `srshl`, saturating narrows
//! to 16 bits, the zero point added with saturation, a saturating narrow
//! to 8 bits, the clamp), so the bytes are the same. Only then are the
//! blocks turned into rows: after the narrows a row pair's 16 bytes are
//! 2-byte runs of its two rows, alternating (`(r0 c0 c1), (r1 c0 c1),
//! (r0 c2 c3), ...`), so one `uzp1` and one `uzp2` of 16-bit lanes give
//! 4 rows from two row pairs, instead of 16 64-bit `zip`s on the int32
//! blocks before the stage.

use super::dot_tiles::{CLAMP_BOTH, CLAMP_LOWER, CLAMP_UPPER};
use core::arch::aarch64::*;
use core::mem::MaybeUninit;

/// The output stage of row pairs `a`-`d` and `e`-`h` (the 2 x 2 blocks of
/// channel pairs 0 to 3 of each), narrowed through v11-v14, then the 4
/// rows stored 8 bytes each, stepping `{out}` by `{stride}`. Paired
/// multipliers in v0-v3, paired negated right shifts in v4-v7, the zero
/// point in v8, the bounds in v9-v10.
#[rustfmt::skip]
macro_rules! stage_quad {
    ($clamp:ident, $round:ident, [$a:literal, $b:literal, $c:literal, $d:literal, $e:literal, $f:literal, $g:literal, $h:literal]) => {
        concat!(
            high_mul!($round, $a, 0), high_mul!($round, $b, 1),
            high_mul!($round, $c, 2), high_mul!($round, $d, 3),
            high_mul!($round, $e, 0), high_mul!($round, $f, 1),
            high_mul!($round, $g, 2), high_mul!($round, $h, 3),
            "srshl v", $a, ".4s, v", $a, ".4s, v4.4s\n",
            "srshl v", $b, ".4s, v", $b, ".4s, v5.4s\n",
            "srshl v", $c, ".4s, v", $c, ".4s, v6.4s\n",
            "srshl v", $d, ".4s, v", $d, ".4s, v7.4s\n",
            "srshl v", $e, ".4s, v", $e, ".4s, v4.4s\n",
            "srshl v", $f, ".4s, v", $f, ".4s, v5.4s\n",
            "srshl v", $g, ".4s, v", $g, ".4s, v6.4s\n",
            "srshl v", $h, ".4s, v", $h, ".4s, v7.4s\n",
            "sqxtn v11.4h, v", $a, ".4s\n",
            "sqxtn v12.4h, v", $c, ".4s\n",
            "sqxtn v13.4h, v", $e, ".4s\n",
            "sqxtn v14.4h, v", $g, ".4s\n",
            "sqxtn2 v11.8h, v", $b, ".4s\n",
            "sqxtn2 v12.8h, v", $d, ".4s\n",
            "sqxtn2 v13.8h, v", $f, ".4s\n",
            "sqxtn2 v14.8h, v", $h, ".4s\n",
            "sqadd v11.8h, v11.8h, v8.8h\n",
            "sqadd v12.8h, v12.8h, v8.8h\n",
            "sqadd v13.8h, v13.8h, v8.8h\n",
            "sqadd v14.8h, v14.8h, v8.8h\n",
            "sqxtn v11.8b, v11.8h\n",
            "sqxtn v13.8b, v13.8h\n",
            "sqxtn2 v11.16b, v12.8h\n",
            "sqxtn2 v13.16b, v14.8h\n",
            clamp_quad!($clamp),
            "uzp1 v12.8h, v11.8h, v13.8h\n",
            "uzp2 v14.8h, v11.8h, v13.8h\n",
            "st1 {{v12.d}}[0], [{out}], {stride}\n",
            "st1 {{v14.d}}[0], [{out}], {stride}\n",
            "st1 {{v12.d}}[1], [{out}], {stride}\n",
            "st1 {{v14.d}}[1], [{out}], {stride}\n",
        )
    };
}

/// The high multiply of block `v$a` by the paired multipliers `v$m`:
/// `sqdmulh` for single rounding (the rounding right shift `srshl` after
/// it rounds once); for double rounding gemmlowp's rounding `sqrdmulh`,
/// then `ssra #31` takes 1 from negative values so that the `srshl` after
/// it rounds ties away from zero (`requantize::<false, true>` in
/// `ops::requant`, lane for lane).
#[rustfmt::skip]
macro_rules! high_mul {
    (single, $a:literal, $m:literal) => {
        concat!("sqdmulh v", $a, ".4s, v", $a, ".4s, v", $m, ".4s\n")
    };
    (double, $a:literal, $m:literal) => {
        concat!(
            "sqrdmulh v", $a, ".4s, v", $a, ".4s, v", $m, ".4s\n",
            "ssra v", $a, ".4s, v", $a, ".4s, #31\n",
        )
    };
}

/// The activation clamp of the two row pairs' 32 outputs (v11, v13;
/// bounds in v9, v10): both sides, one side, or nothing. A bound at int8's
/// own end needs no instruction (the saturating narrow already stops
/// there): RELU6 with an output zero point of -128 clamps above only.
macro_rules! clamp_quad {
    (clamp) => {
        concat!(clamp_quad!(lower), clamp_quad!(upper))
    };
    (lower) => {
        concat!(
            "smax v11.16b, v11.16b, v9.16b\n",
            "smax v13.16b, v13.16b, v9.16b\n",
        )
    };
    (upper) => {
        concat!(
            "smin v11.16b, v11.16b, v10.16b\n",
            "smin v13.16b, v13.16b, v10.16b\n",
        )
    };
    (no_clamp) => {
        ""
    };
}

/// The first half of an `smmla` step (depths 0 to 8 of 16): weights in
/// v0-v3 paired into v12-v15 by 32-bit `zip`s, row pairs in v8-v11
/// (loaded here), `acc[i][j]` in v(16 + 4i + j). As `mmla_panel`'s.
#[rustfmt::skip]
macro_rules! mmla_half_step {
    ($w0:literal, $w1:literal, $w2:literal, $w3:literal) => {
        concat!(
            "ld1 {{v8.16b, v9.16b, v10.16b, v11.16b}}, [{x}], #64\n",
            "zip1 v12.4s, v", $w0, ".4s, v", $w2, ".4s\n",
            "zip2 v13.4s, v", $w0, ".4s, v", $w2, ".4s\n",
            "zip1 v14.4s, v", $w1, ".4s, v", $w3, ".4s\n",
            "zip2 v15.4s, v", $w1, ".4s, v", $w3, ".4s\n",
            "smmla v16.4s, v8.16b, v12.16b\n",
            "smmla v17.4s, v8.16b, v13.16b\n",
            "smmla v18.4s, v8.16b, v14.16b\n",
            "smmla v19.4s, v8.16b, v15.16b\n",
            "smmla v20.4s, v9.16b, v12.16b\n",
            "smmla v21.4s, v9.16b, v13.16b\n",
            "smmla v22.4s, v9.16b, v14.16b\n",
            "smmla v23.4s, v9.16b, v15.16b\n",
            "smmla v24.4s, v10.16b, v12.16b\n",
            "smmla v25.4s, v10.16b, v13.16b\n",
            "smmla v26.4s, v10.16b, v14.16b\n",
            "smmla v27.4s, v10.16b, v15.16b\n",
            "smmla v28.4s, v11.16b, v12.16b\n",
            "smmla v29.4s, v11.16b, v13.16b\n",
            "smmla v30.4s, v11.16b, v14.16b\n",
            "smmla v31.4s, v11.16b, v15.16b\n",
        )
    };
}

/// The half step of [`mmla_half_step`] on weights paired beforehand
/// ([`pair_weights`]): channel pairs in `w0`-`w3` as loaded, row pairs
/// loaded into `x0`-`x3`, no `zip`s.
#[rustfmt::skip]
macro_rules! mmla_half_step_paired {
    ([$x0:literal, $x1:literal, $x2:literal, $x3:literal], [$w0:literal, $w1:literal, $w2:literal, $w3:literal]) => {
        concat!(
            "ld1 {{v", $x0, ".16b, v", $x1, ".16b, v", $x2, ".16b, v", $x3, ".16b}}, [{x}], #64\n",
            "smmla v16.4s, v", $x0, ".16b, v", $w0, ".16b\n",
            "smmla v17.4s, v", $x0, ".16b, v", $w1, ".16b\n",
            "smmla v18.4s, v", $x0, ".16b, v", $w2, ".16b\n",
            "smmla v19.4s, v", $x0, ".16b, v", $w3, ".16b\n",
            "smmla v20.4s, v", $x1, ".16b, v", $w0, ".16b\n",
            "smmla v21.4s, v", $x1, ".16b, v", $w1, ".16b\n",
            "smmla v22.4s, v", $x1, ".16b, v", $w2, ".16b\n",
            "smmla v23.4s, v", $x1, ".16b, v", $w3, ".16b\n",
            "smmla v24.4s, v", $x2, ".16b, v", $w0, ".16b\n",
            "smmla v25.4s, v", $x2, ".16b, v", $w1, ".16b\n",
            "smmla v26.4s, v", $x2, ".16b, v", $w2, ".16b\n",
            "smmla v27.4s, v", $x2, ".16b, v", $w3, ".16b\n",
            "smmla v28.4s, v", $x3, ".16b, v", $w0, ".16b\n",
            "smmla v29.4s, v", $x3, ".16b, v", $w1, ".16b\n",
            "smmla v30.4s, v", $x3, ".16b, v", $w2, ".16b\n",
            "smmla v31.4s, v", $x3, ".16b, v", $w3, ".16b\n",
        )
    };
}

/// A whole step of 16 depth bytes: the weights' 128 bytes loaded, then two
/// half steps, pairing the packed weights' channels (`zip`) or taking them
/// paired (`paired`).
macro_rules! mmla_step {
    (zip) => {
        concat!(
            "ld1 {{v0.16b, v1.16b, v2.16b, v3.16b}}, [{wp}], #64\n",
            "ld1 {{v4.16b, v5.16b, v6.16b, v7.16b}}, [{wp}], #64\n",
            mmla_half_step!(0, 1, 2, 3),
            mmla_half_step!(4, 5, 6, 7),
        )
    };
    (paired) => {
        concat!(
            "ld1 {{v0.16b, v1.16b, v2.16b, v3.16b}}, [{wp}], #64\n",
            "ld1 {{v4.16b, v5.16b, v6.16b, v7.16b}}, [{wp}], #64\n",
            mmla_half_step_paired!([8, 9, 10, 11], [0, 1, 2, 3]),
            mmla_half_step_paired!([12, 13, 14, 15], [4, 5, 6, 7]),
        )
    };
}

/// The last, half step of a depth tail of at most 8 bytes (the step's
/// weights 64 bytes on and its second 64 panel bytes are zero depth).
macro_rules! mmla_last_half {
    (zip) => {
        concat!(
            "ld1 {{v0.16b, v1.16b, v2.16b, v3.16b}}, [{wp}]\n",
            mmla_half_step!(0, 1, 2, 3),
        )
    };
    (paired) => {
        concat!(
            "ld1 {{v0.16b, v1.16b, v2.16b, v3.16b}}, [{wp}]\n",
            mmla_half_step_paired!([8, 9, 10, 11], [0, 1, 2, 3]),
        )
    };
}

/// The starting 2 x 2 blocks of a tile: the paired bias in every row
/// pair's four blocks (`bias`), or (`offsets`) the paired bias plus the
/// tile's 8 row offsets (read at `{offs}`, which steps to the next tile's)
/// in the blocks' lanes, `(o[2i], o[2i], o[2i + 1], o[2i + 1])` for row
/// pair `i`: one `zip` of the offsets with themselves per row pair and 16
/// `add`s (the sums wrap, so the order of the additions changes nothing).
#[rustfmt::skip]
macro_rules! start_tile {
    (bias) => {
        concat!(
            "ld1 {{v16.4s, v17.4s, v18.4s, v19.4s}}, [{bias}]\n",
            "ld1 {{v20.4s, v21.4s, v22.4s, v23.4s}}, [{bias}]\n",
            "ld1 {{v24.4s, v25.4s, v26.4s, v27.4s}}, [{bias}]\n",
            "ld1 {{v28.4s, v29.4s, v30.4s, v31.4s}}, [{bias}]\n",
        )
    };
    (offsets) => {
        concat!(
            "ld1 {{v0.4s, v1.4s, v2.4s, v3.4s}}, [{bias}]\n",
            "ld1 {{v4.4s, v5.4s}}, [{offs}], #32\n",
            "zip1 v6.4s, v4.4s, v4.4s\n",
            "zip2 v7.4s, v4.4s, v4.4s\n",
            "zip1 v8.4s, v5.4s, v5.4s\n",
            "zip2 v9.4s, v5.4s, v5.4s\n",
            "add v16.4s, v0.4s, v6.4s\n",
            "add v17.4s, v1.4s, v6.4s\n",
            "add v18.4s, v2.4s, v6.4s\n",
            "add v19.4s, v3.4s, v6.4s\n",
            "add v20.4s, v0.4s, v7.4s\n",
            "add v21.4s, v1.4s, v7.4s\n",
            "add v22.4s, v2.4s, v7.4s\n",
            "add v23.4s, v3.4s, v7.4s\n",
            "add v24.4s, v0.4s, v8.4s\n",
            "add v25.4s, v1.4s, v8.4s\n",
            "add v26.4s, v2.4s, v8.4s\n",
            "add v27.4s, v3.4s, v8.4s\n",
            "add v28.4s, v0.4s, v9.4s\n",
            "add v29.4s, v1.4s, v9.4s\n",
            "add v30.4s, v2.4s, v9.4s\n",
            "add v31.4s, v3.4s, v9.4s\n",
        )
    };
}

/// [`mmla_tiles_right`]'s loop, with or without the clamp, in single or
/// double rounding (`$round`, see [`high_mul`]), the
/// blocks started by [`start_tile`] (`$start`; with `offsets`, `$extra`
/// names the offsets' register operand).
macro_rules! mmla_tiles_asm {
    ($weights:ident, $clamp:ident, $round:ident, $start:ident, $x:expr, $w:expr, $chunks:expr, $half:expr, $bias:expr, $stage:expr, $out:expr, $stride:expr, $tiles:expr; $($extra:tt)*) => {
        core::arch::asm!(
            "3:",
            start_tile!($start),
            "mov {wp}, {w}",
            "cbz {chunks}, 5f",
            "mov {n}, {chunks}",
            "2:",
            mmla_step!($weights),
            "subs {n}, {n}, #1",
            "b.ne 2b",
            "5:",
            "cbz {half}, 6f",
            mmla_last_half!($weights),
            // The half step's second 64 panel bytes (zero depth) skipped.
            "add {x}, {x}, #64",
            "6:",
            "mov {s}, {stage}",
            "ld1 {{v0.4s, v1.4s, v2.4s, v3.4s}}, [{s}], #64",
            "ld1 {{v4.4s, v5.4s, v6.4s, v7.4s}}, [{s}], #64",
            "ld1 {{v8.8h, v9.8h, v10.8h}}, [{s}]",
            stage_quad!($clamp, $round, [16, 17, 18, 19, 20, 21, 22, 23]),
            stage_quad!($clamp, $round, [24, 25, 26, 27, 28, 29, 30, 31]),
            "subs {tiles}, {tiles}, #1",
            "b.ne 3b",
            x = inout(reg) $x => _,
            w = in(reg) $w,
            wp = out(reg) _,
            n = out(reg) _,
            s = out(reg) _,
            chunks = in(reg) $chunks,
            half = in(reg) $half,
            bias = in(reg) $bias,
            stage = in(reg) $stage,
            out = inout(reg) $out => _,
            stride = in(reg) $stride,
            tiles = inout(reg) $tiles => _,
            $($extra)*
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

/// The parameters of [`mmla_tiles_right`]'s output stage (single or double
/// rounding alike), in the
/// order it loads them, paired as the 2 x 2 blocks' lanes are (channel pair
/// `j`: `(c[2j], c[2j + 1], c[2j], c[2j + 1])`): the block's multipliers
/// (Q0.31), its negated right shifts (`-r`, `r >= 1`), then the output zero
/// point as 8 int16 lanes and the activation bounds as 16 int8 lanes.
#[repr(C, align(16))]
pub(super) struct PairedRightStage {
    pub(super) multiplier: [int32x4_t; 4],
    pub(super) neg_right_shift: [int32x4_t; 4],
    pub(super) zero_point: int16x8_t,
    pub(super) min: int8x16_t,
    pub(super) max: int8x16_t,
}

/// Channels `(2j, 2j + 1)` of the 8 in `v` (channels 0-3, 4-7) as the
/// lanes of a 2 x 2 block: one 64-bit lane of `v` repeated.
#[inline(always)]
pub(super) fn paired(v: &[int32x4_t; 2]) -> [int32x4_t; 4] {
    // Spelled out, not `core::array::from_fn` (which may stay out of line).
    // SAFETY: neon is a compile-time target feature (cfg on this module).
    unsafe {
        let (a, b) = (vreinterpretq_s64_s32(v[0]), vreinterpretq_s64_s32(v[1]));
        [
            vreinterpretq_s32_s64(vdupq_laneq_s64::<0>(a)),
            vreinterpretq_s32_s64(vdupq_laneq_s64::<1>(a)),
            vreinterpretq_s32_s64(vdupq_laneq_s64::<0>(b)),
            vreinterpretq_s32_s64(vdupq_laneq_s64::<1>(b)),
        ]
    }
}

/// `tiles` whole 8 x 8 tiles of one weight block, one after another, with
/// the single-rounding (or with `DOUBLE` the double-rounding) output stage
/// of a block whose channels all shift right: per tile the blocks started
/// from the paired bias (plus, with `offsets`, the tile's 8 row offsets:
/// see [`start_tile`]), `chunks` whole
/// `smmla` steps and with `half` a half step (as `mmla_panel` and
/// `mmla_panel_half`), the stage on the blocks, two `uzp`s per 4 rows and
/// the 8 row stores, all in one loop (nothing leaves the registers). The
/// tiles' panels of row pairs follow one another (`128 (chunks + half)`
/// bytes each), and so do their output rows (tile `t` at `out + 8 t
/// stride`) and their row offsets (tile `t`'s at `offsets + 8 t`). With
/// `PAIRED` the weights `w` are [`pair_weights`]'s copy of the block (no
/// `zip`s in the steps), otherwise the packed block.
///
/// # Safety
/// The CPU must have i8mm; `tiles >= 1`; `chunks + half >= 1`; `x` must be
/// valid for reading `128 (chunks + half) tiles` bytes, `w` for
/// `128 (chunks + half)`, `bias` for 64 (the paired bias), `offsets` (when
/// `Some`) for `8 tiles` values, and the 8 bytes at `out + r stride` for
/// writing for every `r < 8 tiles`.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub(super) unsafe fn mmla_tiles_right<const PAIRED: bool, const CLAMP: u8, const DOUBLE: bool>(
    x: *const i8,
    w: *const i8,
    chunks: usize,
    half: bool,
    bias: &[int32x4_t; 4],
    offsets: Option<*const i32>,
    stage: &PairedRightStage,
    out: *mut i8,
    stride: usize,
    tiles: usize,
) {
    debug_assert!(tiles >= 1 && chunks + usize::from(half) >= 1);
    let half = usize::from(half);
    let (bias, stage) = (bias.as_ptr(), core::ptr::from_ref(stage));
    macro_rules! go {
        ($weights:ident, $clamp:ident, $round:ident) => {
            match offsets {
                None => mmla_tiles_asm!(
                    $weights, $clamp, $round, bias,
                    x, w, chunks, half, bias, stage, out, stride, tiles;
                ),
                Some(offs) => mmla_tiles_asm!(
                    $weights, $clamp, $round, offsets,
                    x, w, chunks, half, bias, stage, out, stride, tiles;
                    offs = inout(reg) offs => _,
                ),
            }
        };
        ($weights:ident, $clamp:ident) => {
            if DOUBLE {
                go!($weights, $clamp, double)
            } else {
                go!($weights, $clamp, single)
            }
        };
    }
    // SAFETY: reads and writes only what the caller guarantees (per tile
    // the panel and weights as `mmla_panel` and `mmla_panel_half` read
    // them, 64 bytes of `bias`, 8 row offsets, the 176 bytes of `stage`, 8
    // bytes of each of the tile's 8 rows); smmla needs i8mm, which every
    // caller (`gemm_mmla`) enables. No stack.
    unsafe {
        match (PAIRED, CLAMP) {
            (false, CLAMP_BOTH) => go!(zip, clamp),
            (false, CLAMP_LOWER) => go!(zip, lower),
            (false, CLAMP_UPPER) => go!(zip, upper),
            (false, _) => go!(zip, no_clamp),
            (true, CLAMP_BOTH) => go!(paired, clamp),
            (true, CLAMP_LOWER) => go!(paired, lower),
            (true, CLAMP_UPPER) => go!(paired, upper),
            (true, _) => go!(paired, no_clamp),
        }
    }
}

/// Pairs every block of the packed weights `packed` (blocks of 8 channels
/// of depth `k_padded`, a multiple of 16) into `paired` (as long) as the
/// `smmla` loops take them ([`pair_weights`]). Called when the weights are
/// set, not per call.
pub(crate) fn pair_blocks(packed: &[i8], paired: &mut [i8], k_padded: usize) {
    let block_bytes = 8 * k_padded;
    if block_bytes == 0 || packed.len() != paired.len() {
        return;
    }
    for (w, out) in packed
        .chunks_exact(block_bytes)
        .zip(paired.chunks_exact_mut(block_bytes))
    {
        // SAFETY: `MaybeUninit<i8>` has the layout of `i8` and every `i8` is
        // a valid one; `pair_weights` only writes initialized bytes, so
        // `out` stays initialized.
        let out = unsafe {
            core::slice::from_raw_parts_mut(out.as_mut_ptr().cast::<MaybeUninit<i8>>(), out.len())
        };
        pair_weights(w, out, k_padded / 16);
    }
}

/// Copies the first `128 steps` bytes of a packed weight block (`w`) into
/// `paired` with its channels paired as `smmla` takes them: per step of 16
/// depth bytes, channel pairs `(0, 1), (2, 3), (4, 5), (6, 7)` of depths 0
/// to 8 (16 bytes each, the even channel first), then of depths 8 to 16:
/// the `zip`s of [`mmla_half_step`] done once for a block's tiles of a
/// panel group rather than once per tile.
#[inline(always)]
pub(super) fn pair_weights(w: &[i8], paired: &mut [MaybeUninit<i8>], steps: usize) {
    // One check for every load and store below.
    let (w, paired) = (&w[..128 * steps], &mut paired[..128 * steps]);
    let (src, dst) = (w.as_ptr(), paired.as_mut_ptr().cast::<i8>());
    for s in 0..steps {
        // SAFETY: 128 (s + 1) <= 128 steps bytes of both (sliced above);
        // neon is a compile-time target feature (cfg on this module).
        unsafe {
            let v = vld1q_s8_x4(src.add(128 * s));
            let u = vld1q_s8_x4(src.add(128 * s + 64));
            for (h, v) in [v, u].into_iter().enumerate() {
                let g: [int32x4_t; 4] = [
                    vreinterpretq_s32_s8(v.0),
                    vreinterpretq_s32_s8(v.1),
                    vreinterpretq_s32_s8(v.2),
                    vreinterpretq_s32_s8(v.3),
                ];
                let p = int8x16x4_t(
                    vreinterpretq_s8_s32(vzip1q_s32(g[0], g[2])),
                    vreinterpretq_s8_s32(vzip2q_s32(g[0], g[2])),
                    vreinterpretq_s8_s32(vzip1q_s32(g[1], g[3])),
                    vreinterpretq_s8_s32(vzip2q_s32(g[1], g[3])),
                );
                vst1q_s8_x4(dst.add(128 * s + 64 * h), p);
            }
        }
    }
}
