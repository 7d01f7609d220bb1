//! The NEON depthwise convolution, bit-exact with the scalar loops
//! (`super::super::scalar::conv`).
//!
//! Work runs by output row, then by block of 16 output channels (8 where
//! at most 8 remain), then along the row. Per block and output pixel, the
//! accumulators start at the bias; each tap inside the image loads the
//! block's input bytes, subtracts the input zero point while widening to
//! 16 bits (`ssubl`: `x - zp` fits, `-128 - 127` included), and multiplies
//! them into 32 bits by the weights, packed at `new()` as 16-bit values
//! (`smlal`/`smlal2`). How a block finds its input bytes ([`Gather`]):
//!
//! * depth multiplier 1: output channel `c` reads input channel `c`, the
//!   bytes load as they are;
//! * one input channel (a first layer of `1 x M` filters): every lane reads
//!   the same byte (`ld1r`);
//! * otherwise: the 16 bytes from input channel `c0 / m` permuted by a
//!   table prepared per block (`tbl`), lane `k` taking `(c0 + k) / m`.
//!
//! 3x3 and 5x5 windows wholly inside the image run with the tap loops
//! unrolled; windows at the edges loop over the taps inside the image.
//! Loads that could reach past the input (a partial block's, the table
//! path's) go through a stack copy when they would; lanes past the last
//! channel have zero weights and are not stored.
//!
//! The output stage is the scalar one on four lanes at a time
//! (`requantize_lanes`, `requantize_single`, the ties-upward `srshl`, or
//! XNNPACK's `f32` product rounded by `fcvtns`), then saturating narrows,
//! the zero point added with 16-bit saturation and the activation clamp:
//! the scalar bytes (a value beyond 16 bits saturates the byte either way;
//! XNNPACK's clamp before rounding equals one after it, the bounds being
//! integers).

use core::arch::aarch64::*;
use core::ops::Range;

use super::super::geometry::ConvGeometry;
use super::pack::{Gather, LaneStage, Packed, Stage, BLOCK};
use crate::ops::requant::neon::requantize_single;
use crate::ops::requant::{requantize_lanes, ChannelMultiplier};

/// Which lanes a block has and how it loads them.
#[derive(Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
enum Load {
    /// 16 channels in place (depth multiplier 1, a whole block).
    Whole16,
    /// 8 channels in place (depth multiplier 1, the last 8).
    Whole8,
    /// Fewer channels in place, read through a stack copy near the end.
    Partial,
    /// One input channel for every lane.
    Broadcast,
    /// Permuted by the block's table.
    Table,
}

const WHOLE16: u8 = Load::Whole16 as u8;
const WHOLE8: u8 = Load::Whole8 as u8;
const PARTIAL: u8 = Load::Partial as u8;
const BROADCAST: u8 = Load::Broadcast as u8;
const TABLE: u8 = Load::Table as u8;

/// Output rows `rows` (checked by the caller: `input` and `output` are the
/// whole NHWC tensors of `g`, `rows` within `batch * output_height`).
pub(crate) fn depthwise_rows(
    p: &Packed,
    g: &ConvGeometry,
    input: &[i8],
    output: &mut [i8],
    rows: Range<usize>,
) {
    let square = g.kernel_height == g.kernel_width;
    match g.kernel_height {
        3 if square => rows_with::<3>(p, g, input, output, rows),
        5 if square => rows_with::<5>(p, g, input, output, rows),
        _ => rows_with::<0>(p, g, input, output, rows),
    }
}

/// The row loop; `K` (3, 5, or 0 for any) is the kernel's side for the
/// unrolled interior path.
fn rows_with<const K: usize>(
    p: &Packed,
    g: &ConvGeometry,
    input: &[i8],
    output: &mut [i8],
    rows: Range<usize>,
) {
    let in_row = g.input_width * g.input_channels;
    let in_image = g.input_height * in_row;
    let out_row = g.output_width * g.output_channels;
    let channels = g.output_channels;
    for r in rows {
        let (b, oy) = (r / g.output_height, r % g.output_height);
        let image = &input[b * in_image..][..in_image];
        let out = &mut output[r * out_row..][..out_row];
        for block in 0..channels.div_ceil(BLOCK) {
            let lanes = (channels - block * BLOCK).min(BLOCK);
            let load = match (&p.gather, lanes) {
                (Gather::Direct, 16) => Load::Whole16,
                (Gather::Direct, 8) => Load::Whole8,
                (Gather::Direct, _) => Load::Partial,
                (Gather::Broadcast, _) => Load::Broadcast,
                (Gather::Table { .. }, _) => Load::Table,
            };
            let row = RowBlock {
                p,
                g,
                oy,
                block,
                lanes,
            };
            match (load, lanes <= 8) {
                (Load::Whole16, _) => block_row::<WHOLE16, 4, K>(&row, image, out),
                (Load::Whole8, _) => block_row::<WHOLE8, 2, K>(&row, image, out),
                (Load::Partial, true) => block_row::<PARTIAL, 2, K>(&row, image, out),
                (Load::Partial, false) => block_row::<PARTIAL, 4, K>(&row, image, out),
                (Load::Broadcast, true) => block_row::<BROADCAST, 2, K>(&row, image, out),
                (Load::Broadcast, false) => block_row::<BROADCAST, 4, K>(&row, image, out),
                (Load::Table, true) => block_row::<TABLE, 2, K>(&row, image, out),
                (Load::Table, false) => block_row::<TABLE, 4, K>(&row, image, out),
            }
        }
    }
}

/// One block of channels along one output row.
struct RowBlock<'a> {
    p: &'a Packed,
    g: &'a ConvGeometry,
    oy: usize,
    block: usize,
    /// Channels of the block (at most 16; at most 8 when `N` is 2).
    lanes: usize,
}

/// One block of channels (`N` accumulators of 4 lanes) along one output
/// row, loading its input as `LOAD` says; `K` as [`rows_with`].
#[inline(never)]
fn block_row<const LOAD: u8, const N: usize, const K: usize>(
    rb: &RowBlock<'_>,
    image: &[i8],
    out: &mut [i8],
) {
    let (p, g) = (rb.p, rb.g);
    let c0 = rb.block * BLOCK;
    let kw = g.kernel_width;
    let (y0, ys) = ConvGeometry::taps(
        rb.oy,
        g.stride_height,
        g.pad_top,
        g.dilation_height,
        g.kernel_height,
        g.input_height,
    );
    let in_row = g.input_width * g.input_channels;
    let (start, table) = match &p.gather {
        Gather::Direct => (c0, [0u8; 16]),
        Gather::Broadcast => (0, [0u8; 16]),
        Gather::Table { start, table } => (start[rb.block], table[rb.block]),
    };
    let weights = &p.weights[rb.block * p.taps * BLOCK..][..p.taps * BLOCK];
    let bias = &p.bias[c0..c0 + BLOCK];
    let (dy, dx) = (
        g.dilation_height * in_row,
        g.dilation_width * g.input_channels,
    );
    // SAFETY: neon is a compile-time target feature (cfg on this module).
    let (zp, table) = unsafe { (vdupq_n_s8(p.input_zero_point), vld1q_u8(table.as_ptr())) };
    // The columns whose window lies inside the image: from the first whose
    // first tap is at or after column 0 to the last whose last tap is
    // before the image's end (an empty range when none).
    let reach = (kw - 1) * g.dilation_width;
    let first_inside = g.pad_left.div_ceil(g.stride_width);
    let end_inside = if g.input_width + g.pad_left > reach {
        ((g.input_width - 1 + g.pad_left - reach) / g.stride_width + 1).min(g.output_width)
    } else {
        0
    };
    let interior = if K != 0 && ys.len() == K && kw == K {
        first_inside..end_inside.max(first_inside)
    } else {
        0..0
    };
    // One bounds check for the unrolled taps (their offsets are constants).
    let fixed = &weights[..K * K * BLOCK];
    let step = g.stride_width * g.input_channels;
    let mut ox = 0;
    while ox < g.output_width {
        // SAFETY: `bias` holds 16 values (a whole padded block).
        let mut acc: [int32x4_t; 4] =
            unsafe { core::array::from_fn(|j| vld1q_s32(bias.as_ptr().add(4 * j))) };
        if interior.contains(&ox) && interior.contains(&(ox + 1)) {
            // Two neighbouring windows inside the image share each tap's
            // weights.
            let mut next = acc;
            let base = (y0 as usize) * in_row
                + (ox * g.stride_width - g.pad_left) * g.input_channels
                + start;
            for ky in 0..K {
                for kx in 0..K {
                    let at = base + ky * dy + kx * dx;
                    let w = &fixed[(ky * K + kx) * BLOCK..][..BLOCK];
                    // SAFETY: `at` and `at + step` are the block's first
                    // input bytes of taps inside the image; `tap` reads
                    // within `image` (see it).
                    unsafe {
                        tap::<LOAD, N>(&mut acc, image, at, zp, table, w);
                        tap::<LOAD, N>(&mut next, image, at + step, zp, table, w);
                    }
                }
            }
            store::<N>(acc, p, out, ox * g.output_channels + c0, c0, rb.lanes);
            store::<N>(
                next,
                p,
                out,
                (ox + 1) * g.output_channels + c0,
                c0,
                rb.lanes,
            );
            ox += 2;
            continue;
        }
        if interior.contains(&ox) {
            // The whole window is inside the image: its origin is >= 0.
            let base = (y0 as usize) * in_row
                + (ox * g.stride_width - g.pad_left) * g.input_channels
                + start;
            for ky in 0..K {
                for kx in 0..K {
                    let at = base + ky * dy + kx * dx;
                    let w = &fixed[(ky * K + kx) * BLOCK..][..BLOCK];
                    // SAFETY: `at` is the block's first input byte of a tap
                    // inside the image; `tap` reads within `image` (see it).
                    unsafe { tap::<LOAD, N>(&mut acc, image, at, zp, table, w) };
                }
            }
        } else {
            let (x0, xs) = ConvGeometry::taps(
                ox,
                g.stride_width,
                g.pad_left,
                g.dilation_width,
                kw,
                g.input_width,
            );
            for ky in ys.clone() {
                let iy = (y0 + (ky * g.dilation_height) as isize) as usize;
                // The row's taps inside the image, checked once.
                let row = &weights[(ky * kw + xs.start) * BLOCK..(ky * kw + xs.end) * BLOCK];
                let ix0 = (x0 + (xs.start * g.dilation_width) as isize) as usize;
                let mut at = iy * in_row + ix0 * g.input_channels + start;
                for w in row.chunks_exact(BLOCK) {
                    // SAFETY: as above (taps() keeps taps inside the image).
                    unsafe { tap::<LOAD, N>(&mut acc, image, at, zp, table, w) };
                    at += dx;
                }
            }
        }
        store::<N>(acc, p, out, ox * g.output_channels + c0, c0, rb.lanes);
        ox += 1;
    }
}

/// Requantizes one pixel's block (channel `c0 % 16 == 0` of the layer,
/// `lanes` of them) and stores its bytes at `out[at..at + lanes]`.
#[inline(always)]
fn store<const N: usize>(
    acc: [int32x4_t; 4],
    p: &Packed,
    out: &mut [i8],
    at: usize,
    c0: usize,
    lanes: usize,
) {
    let dst = &mut out[at..][..lanes];
    // SAFETY: `c0 + 16` is within the padded per-channel arrays; the
    // stores write `dst`'s 16 or 8 bytes, or go through a stack copy.
    unsafe {
        let bytes = output_stage::<N>(acc, &p.stage, c0);
        if N == 4 && lanes == 16 {
            vst1q_s8(dst.as_mut_ptr(), bytes);
        } else if N == 2 && lanes == 8 {
            vst1_s8(dst.as_mut_ptr(), vget_low_s8(bytes));
        } else {
            let mut copy = [0i8; 16];
            vst1q_s8(copy.as_mut_ptr(), bytes);
            dst.copy_from_slice(&copy[..lanes]);
        }
    }
}

/// Accumulates one tap: the block's input bytes from `image[at..]` less
/// the zero point, times the tap's 16 weights `w`.
///
/// # Safety
/// `at` is the offset of the block's first input byte at a tap inside the
/// image: for `WHOLE16` 16 bytes and for `WHOLE8` 8 bytes from it are in
/// `image`, for `BROADCAST` one; `PARTIAL` and `TABLE` check their 16.
#[inline(always)]
unsafe fn tap<const LOAD: u8, const N: usize>(
    acc: &mut [int32x4_t; 4],
    image: &[i8],
    at: usize,
    zp: int8x16_t,
    table: uint8x16_t,
    w: &[i16],
) {
    debug_assert!(at < image.len() && w.len() == BLOCK);
    // SAFETY: the caller's bounds (above); the stack copy covers the rest.
    unsafe {
        let ptr = image.as_ptr().add(at);
        let x: int8x16_t = match LOAD {
            WHOLE16 => vld1q_s8(ptr),
            WHOLE8 => vcombine_s8(vld1_s8(ptr), vdup_n_s8(0)),
            BROADCAST => vld1q_dup_s8(ptr),
            _ => {
                let v = if image.len() - at >= 16 {
                    vld1q_s8(ptr)
                } else {
                    let mut copy = [0i8; 16];
                    copy[..image.len() - at].copy_from_slice(&image[at..]);
                    vld1q_s8(copy.as_ptr())
                };
                if LOAD == TABLE {
                    vqtbl1q_s8(v, table)
                } else {
                    v
                }
            }
        };
        let lo = vsubl_s8(vget_low_s8(x), vget_low_s8(zp));
        let w0 = vld1q_s16(w.as_ptr());
        acc[0] = vmlal_s16(acc[0], vget_low_s16(lo), vget_low_s16(w0));
        acc[1] = vmlal_high_s16(acc[1], lo, w0);
        if N == 4 {
            let hi = vsubl_high_s8(x, zp);
            let w1 = vld1q_s16(w.as_ptr().add(8));
            acc[2] = vmlal_s16(acc[2], vget_low_s16(hi), vget_low_s16(w1));
            acc[3] = vmlal_high_s16(acc[3], hi, w1);
        }
    }
}

/// The output bytes of the block at channel `c0` (the first `4 * N` lanes
/// meaningful).
///
/// # Safety
/// `c0 + 16` is within the stage's padded arrays.
#[inline(always)]
unsafe fn output_stage<const N: usize>(acc: [int32x4_t; 4], s: &LaneStage, c0: usize) -> int8x16_t {
    // SAFETY: the caller's bound on `c0`; each load reads 4 (or 2) values.
    unsafe {
        let mut v = [vdupq_n_s32(0); 4];
        for j in 0..N {
            let c = c0 + 4 * j;
            let a = acc[j];
            let fixed = || ChannelMultiplier {
                left_shift: vld1q_s32(s.left_shift.as_ptr().add(c)),
                multiplier: vld1q_s32(s.multiplier.as_ptr().add(c)),
                neg_right_shift: vld1q_s32(s.neg_right_shift.as_ptr().add(c)),
            };
            let single = || {
                let t = s.neg_total_shift.as_ptr().add(c);
                requantize_single(
                    a,
                    vld1q_s32(s.multiplier.as_ptr().add(c)),
                    &[vld1q_s64(t), vld1q_s64(t.add(2))],
                )
            };
            v[j] = match s.stage {
                Stage::Double => requantize_lanes(a, &fixed()),
                Stage::Single => single(),
                Stage::TiesUpward => {
                    let m = fixed();
                    ties_upward(a, m.left_shift, m.multiplier, m.neg_right_shift)
                }
                Stage::TiesUpwardInBlocksOf8 => {
                    let m = fixed();
                    let blocks = ties_upward(
                        a,
                        vld1q_s32(s.block_left_shift.as_ptr().add(c)),
                        m.multiplier,
                        vld1q_s32(s.block_neg_right_shift.as_ptr().add(c)),
                    );
                    let mask = vreinterpretq_u32_s32(vld1q_s32(s.block_lanes.as_ptr().add(c)));
                    vbslq_s32(mask, blocks, requantize_lanes(a, &m))
                }
                Stage::F32 => vcvtnq_s32_f32(vmulq_f32(
                    vcvtq_f32_s32(a),
                    vld1q_f32(s.scales.as_ptr().add(c)),
                )),
            };
        }
        let zp = vdupq_n_s16(s.zero_point);
        let lo = vqaddq_s16(vqmovn_high_s32(vqmovn_s32(v[0]), v[1]), zp);
        let hi = vqaddq_s16(vqmovn_high_s32(vqmovn_s32(v[2]), v[3]), zp);
        let o = vqmovn_high_s16(vqmovn_s16(lo), hi);
        vminq_s8(vmaxq_s8(o, vdupq_n_s8(s.act_min)), vdupq_n_s8(s.act_max))
    }
}

/// `srshl(sqrdmulh(acc << left, multiplier), neg_right)`: both roundings'
/// ties toward +infinity, the left shift saturating (`sqshl`), as the
/// scalar `ties_upward`.
#[inline(always)]
fn ties_upward(
    acc: int32x4_t,
    left: int32x4_t,
    multiplier: int32x4_t,
    neg_right: int32x4_t,
) -> int32x4_t {
    // SAFETY: neon is a compile-time target feature (cfg on this module).
    unsafe { vrshlq_s32(vqrdmulhq_s32(vqshlq_s32(acc, left), multiplier), neg_right) }
}
