//! The NEON depthwise convolution, bit-exact with the scalar loops
//! (`super::super::scalar::conv`).
//!
//! Work runs by block of 16 output channels (8 where at most 8 remain),
//! then by output row, then along the row: a block's weights, bias and
//! output stage parameters load once for all the rows it runs. Per block and output pixel, the
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
//! Windows wholly inside the image run the interior loops (3x3 and 5x5
//! unrolled), two neighbouring pixels at a time sharing each tap's
//! weights; windows at the edges loop over the taps inside the image.
//! Blocks of at most 8 channels read in place or broadcast put those two
//! pixels side by side in one 16-lane vector (lanes 0 to 7 and 8 to 15),
//! so their taps and output stage run full width. Loads that could reach
//! past the input (a partial block's, the table path's) go through a
//! stack copy when they would; lanes past the last channel have zero
//! weights and are not stored.
//!
//! The output stage ([`BlockStage`]) loads a block's per-channel
//! parameters once per call.

use core::arch::aarch64::*;
use core::ops::Range;

use super::super::geometry::ConvGeometry;
use super::super::origin::FirstRow;
use super::pack::{Gather, Packed, Stage, BLOCK};
use super::stage::{BlockStage, F32, FIXED};

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

/// Output rows `rows` of the blocks `blocks` of 16 channels (checked by the
/// caller: `input` is the whole NHWC tensor of `g`, `output` its output's
/// rows from row `first` on, the whole output when `first` is 0; `rows`
/// within `batch * output_height`, `blocks` within the channels').
pub(crate) fn depthwise_rows<F: FirstRow>(
    p: &Packed,
    g: &ConvGeometry,
    input: &[i8],
    (output, first): (&mut [i8], F),
    rows: (Range<usize>, Range<usize>),
) {
    let out = (output, first);
    if p.stage.stage == Stage::F32 {
        rows_staged::<F32, F>(p, g, input, out, rows)
    } else {
        rows_staged::<FIXED, F>(p, g, input, out, rows)
    }
}

/// [`depthwise_rows`] with the output stage `S` ([`F32`] or [`FIXED`]).
fn rows_staged<const S: u8, F: FirstRow>(
    p: &Packed,
    g: &ConvGeometry,
    input: &[i8],
    out: (&mut [i8], F),
    rows: (Range<usize>, Range<usize>),
) {
    let square = g.kernel_height == g.kernel_width;
    match g.kernel_height {
        3 if square => rows_with::<3, S, F>(p, g, input, out, rows),
        5 if square => rows_with::<5, S, F>(p, g, input, out, rows),
        _ => rows_with::<0, S, F>(p, g, input, out, rows),
    }
}

/// The block loop; `K` (3, 5, or 0 for any) is the kernel's side for the
/// unrolled interior path, `S` the output stage.
fn rows_with<const K: usize, const S: u8, F: FirstRow>(
    p: &Packed,
    g: &ConvGeometry,
    input: &[i8],
    (output, first): (&mut [i8], F),
    (rows, blocks): (Range<usize>, Range<usize>),
) {
    let channels = g.output_channels;
    for block in blocks {
        let lanes = (channels - block * BLOCK).min(BLOCK);
        let load = match (&p.gather, lanes) {
            (Gather::Direct, 16) => Load::Whole16,
            (Gather::Direct, 8) => Load::Whole8,
            (Gather::Direct, _) => Load::Partial,
            (Gather::Broadcast, _) => Load::Broadcast,
            (Gather::Table { .. }, _) => Load::Table,
        };
        let br = BlockRows {
            p,
            g,
            rows: rows.clone(),
            first,
            block,
            lanes,
        };
        let (i, o) = (input, &mut *output);
        match (load, lanes <= 8) {
            (Load::Whole16, _) => block_rows::<WHOLE16, 4, K, S, F>(&br, i, o),
            (Load::Whole8, _) => block_rows::<WHOLE8, 2, K, S, F>(&br, i, o),
            (Load::Partial, true) => block_rows::<PARTIAL, 2, K, S, F>(&br, i, o),
            (Load::Partial, false) => block_rows::<PARTIAL, 4, K, S, F>(&br, i, o),
            (Load::Broadcast, true) => block_rows::<BROADCAST, 2, K, S, F>(&br, i, o),
            (Load::Broadcast, false) => block_rows::<BROADCAST, 4, K, S, F>(&br, i, o),
            (Load::Table, true) => block_rows::<TABLE, 2, K, S, F>(&br, i, o),
            (Load::Table, false) => block_rows::<TABLE, 4, K, S, F>(&br, i, o),
        }
    }
}

/// One block of channels along output rows.
struct BlockRows<'a, F> {
    p: &'a Packed,
    g: &'a ConvGeometry,
    rows: Range<usize>,
    /// The output row at the start of the `output` slice.
    first: F,
    block: usize,
    /// Channels of the block (at most 16; at most 8 when `N` is 2).
    lanes: usize,
}

/// One block of channels (`N` accumulators of 4 lanes) along output rows
/// `rb.rows`, loading its input as `LOAD` says; `K` and `S` as
/// [`rows_with`]. The block's weights, bias and output stage load once for
/// all its rows.
#[inline(always)]
fn block_rows<const LOAD: u8, const N: usize, const K: usize, const S: u8, F: FirstRow>(
    rb: &BlockRows<'_, F>,
    input: &[i8],
    output: &mut [i8],
) {
    if S == F32 {
        block_rows_f32::<LOAD, N, K, F>(rb, input, output)
    } else {
        block_rows_fixed::<LOAD, N, K, F>(rb, input, output)
    }
}

/// [`block_rows`] with a fixed-point output stage (its own symbol, for the
/// disassembly checks).
#[inline(never)]
fn block_rows_fixed<const LOAD: u8, const N: usize, const K: usize, F: FirstRow>(
    rb: &BlockRows<'_, F>,
    input: &[i8],
    output: &mut [i8],
) {
    block_rows_staged::<LOAD, N, K, FIXED, F>(rb, input, output)
}

/// [`block_rows`] with XNNPACK's `f32` output stage.
#[inline(never)]
fn block_rows_f32<const LOAD: u8, const N: usize, const K: usize, F: FirstRow>(
    rb: &BlockRows<'_, F>,
    input: &[i8],
    output: &mut [i8],
) {
    block_rows_staged::<LOAD, N, K, F32, F>(rb, input, output)
}

/// [`block_rows`]' loops.
#[inline(always)]
fn block_rows_staged<const LOAD: u8, const N: usize, const K: usize, const S: u8, F: FirstRow>(
    rb: &BlockRows<'_, F>,
    input: &[i8],
    output: &mut [i8],
) {
    let (p, g) = (rb.p, rb.g);
    let c0 = rb.block * BLOCK;
    let kw = g.kernel_width;
    let in_row = g.input_width * g.input_channels;
    let in_image = g.input_height * in_row;
    let out_row = g.output_width * g.output_channels;
    let (start, table) = match &p.gather {
        Gather::Direct => (c0, [0u8; 16]),
        Gather::Broadcast => (0, [0u8; 16]),
        Gather::Table { start, table } => (start[rb.block], table[rb.block]),
    };
    let weights = &p.weights[rb.block * p.taps * BLOCK..][..p.taps * BLOCK];
    let (dy, dx) = (
        g.dilation_height * in_row,
        g.dilation_width * g.input_channels,
    );
    // Blocks of at most 8 channels read in place or broadcast run two
    // neighbouring interior pixels in one 16-lane vector: the first pixel
    // in lanes 0 to 7, the second in lanes 8 to 15, sharing each tap's
    // weights and one output stage.
    let paired = N == 2 && (LOAD == WHOLE8 || LOAD == BROADCAST);
    let lane_channel = |j: usize| c0 + 4 * if paired { j % 2 } else { j };
    // SAFETY: neon is a compile-time target feature (cfg on this module);
    // `c0 + 16` is within the padded per-channel arrays (whole blocks).
    let (zp, table, stage, bias) = unsafe {
        (
            vld1q_s8(p.input_zero_point.as_ptr()),
            vld1q_u8(table.as_ptr()),
            BlockStage::<S>::load(&p.stage, c0, paired),
            core::array::from_fn::<int32x4_t, 4, _>(|j| {
                vld1q_s32(p.bias[..c0 + BLOCK].as_ptr().add(lane_channel(j)))
            }),
        )
    };
    // The window's sides for the interior path: constants for the
    // unrolled 3x3 and 5x5 loops.
    let (kh, kwi) = if K != 0 {
        (K, K)
    } else {
        (g.kernel_height, kw)
    };
    // The columns whose window lies inside the image.
    let (first_inside, end_inside) = g.inside_columns(kw);
    // One bounds check for the interior taps (constant offsets when `K`
    // is not 0).
    let fixed = &weights[..kh * kwi * BLOCK];
    let step = g.stride_width * g.input_channels;
    let oc = g.output_channels;
    for r in rb.rows.clone() {
        let (b, oy) = (r / g.output_height, r % g.output_height);
        let image = &input[b * in_image..][..in_image];
        let out = &mut output[(r - rb.first.row()) * out_row..][..out_row];
        let (y0, ys) = ConvGeometry::taps(
            oy,
            g.stride_height,
            g.pad_top,
            g.dilation_height,
            g.kernel_height,
            g.input_height,
        );
        // Any other window size runs the interior loops for pairs only (a
        // single pixel is no faster there than on the edge path).
        let interior = if ys.len() == kh && kw == kwi && (K != 0 || paired) {
            first_inside..end_inside.max(first_inside)
        } else {
            0..0
        };
        // The block's first input byte of a window inside the image (its
        // origin is >= 0).
        let window = |ox: usize| {
            (y0 as usize) * in_row + (ox * g.stride_width - g.pad_left) * g.input_channels + start
        };
        let mut ox = 0;
        while ox < g.output_width {
            let mut acc = bias;
            let pair_inside = interior.contains(&ox) && interior.contains(&(ox + 1));
            if paired && pair_inside {
                let taps = Window {
                    base: window(ox),
                    dy,
                    dx,
                    kh,
                    kw: kwi,
                };
                // SAFETY: both windows are inside the image (see `pair_tap`).
                unsafe {
                    if LOAD == WHOLE8 && step == 8 {
                        pair_window::<LOAD, true, K>(&mut acc, image, &taps, step, zp, fixed);
                    } else {
                        pair_window::<LOAD, false, K>(&mut acc, image, &taps, step, zp, fixed);
                    }
                }
                store_pair(stage.bytes::<4>(&acc), out, ox * oc + c0, oc, rb.lanes);
                ox += 2;
                continue;
            }
            if pair_inside {
                // Two neighbouring windows inside the image share each tap's
                // weights.
                let mut next = acc;
                let base = window(ox);
                if step == dx {
                    // The second window starts one tap column later (stride
                    // equal to dilation): each input column serves the first
                    // pixel's tap `kx + 1` and the second's tap `kx`, loaded
                    // and widened once for both.
                    for ky in 0..kh {
                        let row = base + ky * dy;
                        // SAFETY: `row + kx * dx` for `kx <= kwi` are the
                        // block's first input bytes of taps of the two windows,
                        // inside the image; `widen` reads within `image` (see
                        // it).
                        let mut left = unsafe { widen::<LOAD, N>(image, row, zp, table) };
                        for kx in 0..kwi {
                            let w = &fixed[(ky * kwi + kx) * BLOCK..][..BLOCK];
                            // SAFETY: as above.
                            let right =
                                unsafe { widen::<LOAD, N>(image, row + (kx + 1) * dx, zp, table) };
                            mac::<N>(&mut acc, left, w);
                            mac::<N>(&mut next, right, w);
                            left = right;
                        }
                    }
                } else {
                    for ky in 0..kh {
                        for kx in 0..kwi {
                            let at = base + ky * dy + kx * dx;
                            let w = &fixed[(ky * kwi + kx) * BLOCK..][..BLOCK];
                            // SAFETY: `at` and `at + step` are the block's first
                            // input bytes of taps inside the image; `tap` reads
                            // within `image` (see it).
                            unsafe {
                                tap::<LOAD, N>(&mut acc, image, at, zp, table, w);
                                tap::<LOAD, N>(&mut next, image, at + step, zp, table, w);
                            }
                        }
                    }
                }
                store(stage.bytes::<N>(&acc), out, ox * oc + c0, rb.lanes);
                store(stage.bytes::<N>(&next), out, (ox + 1) * oc + c0, rb.lanes);
                ox += 2;
                continue;
            }
            if interior.contains(&ox) {
                let base = window(ox);
                for ky in 0..kh {
                    for kx in 0..kwi {
                        let at = base + ky * dy + kx * dx;
                        let w = &fixed[(ky * kwi + kx) * BLOCK..][..BLOCK];
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
            store(stage.bytes::<N>(&acc), out, ox * oc + c0, rb.lanes);
            ox += 1;
        }
    }
}

/// The taps of a window inside the image: `base` is the block's input
/// offset at its first tap, `dy` and `dx` the offsets between rows and
/// columns of taps, `kh x kw` its size.
struct Window {
    base: usize,
    dy: usize,
    dx: usize,
    kh: usize,
    kw: usize,
}

/// Accumulates two neighbouring windows (`w.base` and `w.base + step`) of
/// a block of at most 8 channels into the paired lanes of `acc` (see
/// [`pair_tap`]); `K` as [`rows_with`].
///
/// # Safety
/// Both windows lie inside the image.
#[inline(always)]
unsafe fn pair_window<const LOAD: u8, const CONTIGUOUS: bool, const K: usize>(
    acc: &mut [int32x4_t; 4],
    image: &[i8],
    w: &Window,
    step: usize,
    zp: int8x16_t,
    fixed: &[i16],
) {
    if K != 0 {
        for ky in 0..K {
            for kx in 0..K {
                let at = w.base + ky * w.dy + kx * w.dx;
                let weights = &fixed[(ky * K + kx) * BLOCK..][..BLOCK];
                // SAFETY: the caller's windows.
                unsafe { pair_tap::<LOAD, CONTIGUOUS>(acc, image, at, step, zp, weights) };
            }
        }
        return;
    }
    // Any size: a row of taps at a time, walking the input by `dx`.
    for (ky, row) in fixed.chunks_exact(w.kw * BLOCK).take(w.kh).enumerate() {
        let mut at = w.base + ky * w.dy;
        for weights in row.chunks_exact(BLOCK) {
            // SAFETY: the caller's windows.
            unsafe { pair_tap::<LOAD, CONTIGUOUS>(acc, image, at, step, zp, weights) };
            at += w.dx;
        }
    }
}

/// Accumulates one tap of two pixels of a block of at most 8 channels:
/// the first pixel's input bytes (at `at`) in lanes 0 to 7, the second's
/// (at `at + step`) in lanes 8 to 15, both times the tap's first 8
/// weights. `CONTIGUOUS`: `step` is 8, one 16-byte load reads both.
///
/// # Safety
/// `at` and `at + step` are the block's first input bytes at taps inside
/// the image: in place (`WHOLE8`) 8 bytes from each are in `image`,
/// broadcast one.
#[inline(always)]
unsafe fn pair_tap<const LOAD: u8, const CONTIGUOUS: bool>(
    acc: &mut [int32x4_t; 4],
    image: &[i8],
    at: usize,
    step: usize,
    zp: int8x16_t,
    w: &[i16],
) {
    debug_assert!(at + step < image.len() && w.len() == BLOCK);
    // SAFETY: the caller's bounds (above); `w` holds 16 values.
    unsafe {
        let ptr = image.as_ptr().add(at);
        let x = if LOAD == BROADCAST {
            vcombine_s8(vld1_dup_s8(ptr), vld1_dup_s8(ptr.add(step)))
        } else if CONTIGUOUS {
            vld1q_s8(ptr)
        } else {
            vcombine_s8(vld1_s8(ptr), vld1_s8(ptr.add(step)))
        };
        let first = vsubl_s8(vget_low_s8(x), vget_low_s8(zp));
        let second = vsubl_high_s8(x, zp);
        let w0 = vld1q_s16(w.as_ptr());
        acc[0] = vmlal_s16(acc[0], vget_low_s16(first), vget_low_s16(w0));
        acc[1] = vmlal_high_s16(acc[1], first, w0);
        acc[2] = vmlal_s16(acc[2], vget_low_s16(second), vget_low_s16(w0));
        acc[3] = vmlal_high_s16(acc[3], second, w0);
    }
}

/// Stores one pixel's output bytes (the first `lanes` of `bytes`) at
/// `out[at..at + lanes]`.
#[inline(always)]
pub(super) fn store(bytes: int8x16_t, out: &mut [i8], at: usize, lanes: usize) {
    let dst = &mut out[at..][..lanes];
    // SAFETY: the stores write `dst`'s 16 or 8 bytes, or go through a
    // stack copy.
    unsafe {
        if lanes == 16 {
            vst1q_s8(dst.as_mut_ptr(), bytes);
        } else if lanes == 8 {
            vst1_s8(dst.as_mut_ptr(), vget_low_s8(bytes));
        } else {
            let mut copy = [0i8; 16];
            vst1q_s8(copy.as_mut_ptr(), bytes);
            dst.copy_from_slice(&copy[..lanes]);
        }
    }
}

/// Stores two neighbouring pixels' paired output bytes: lanes
/// `0..lanes` at `out[at..]`, lanes `8..8 + lanes` one pixel (`pixel`
/// bytes) later; one 16-byte store when the pixels are 8 channels each.
#[inline(always)]
pub(super) fn store_pair(bytes: int8x16_t, out: &mut [i8], at: usize, pixel: usize, lanes: usize) {
    if lanes == 8 && pixel == 8 {
        let dst = &mut out[at..][..16];
        // SAFETY: writes `dst`'s 16 bytes.
        unsafe { vst1q_s8(dst.as_mut_ptr(), bytes) };
        return;
    }
    // SAFETY: neon is a compile-time target feature (cfg on this module).
    let second = unsafe { vextq_s8::<8>(bytes, bytes) };
    store(bytes, out, at, lanes);
    store(second, out, at + pixel, lanes);
}

/// Accumulates one tap: the block's input bytes from `image[at..]` less
/// the zero point, times the tap's 16 weights `w`.
///
/// # Safety
/// As [`widen`].
#[inline(always)]
unsafe fn tap<const LOAD: u8, const N: usize>(
    acc: &mut [int32x4_t; 4],
    image: &[i8],
    at: usize,
    zp: int8x16_t,
    table: uint8x16_t,
    w: &[i16],
) {
    // SAFETY: the caller's bounds.
    let x = unsafe { widen::<LOAD, N>(image, at, zp, table) };
    mac::<N>(acc, x, w);
}

/// The block's input bytes of one tap from `image[at..]` less the zero
/// point, widened to 16 bits: lanes 0 to 7, and 8 to 15 when `N` is 4
/// (else zero).
///
/// # Safety
/// `at` is the offset of the block's first input byte at a tap inside the
/// image: for `WHOLE16` 16 bytes and for `WHOLE8` 8 bytes from it are in
/// `image`, for `BROADCAST` one; `PARTIAL` and `TABLE` check their 16.
#[inline(always)]
unsafe fn widen<const LOAD: u8, const N: usize>(
    image: &[i8],
    at: usize,
    zp: int8x16_t,
    table: uint8x16_t,
) -> [int16x8_t; 2] {
    debug_assert!(at < image.len());
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
        let hi = if N == 4 {
            vsubl_high_s8(x, zp)
        } else {
            vdupq_n_s16(0)
        };
        [lo, hi]
    }
}

/// `acc += x * w` on the block's lanes (8, or 16 when `N` is 4), the
/// products widened to 32 bits.
#[inline(always)]
fn mac<const N: usize>(acc: &mut [int32x4_t; 4], x: [int16x8_t; 2], w: &[i16]) {
    assert!(w.len() == BLOCK);
    // SAFETY: neon is a compile-time target feature (cfg on this module);
    // `w` holds 16 values (checked above: constant-folded where the
    // caller's slice has a constant length).
    unsafe {
        let w0 = vld1q_s16(w.as_ptr());
        acc[0] = vmlal_s16(acc[0], vget_low_s16(x[0]), vget_low_s16(w0));
        acc[1] = vmlal_high_s16(acc[1], x[0], w0);
        if N == 4 {
            let w1 = vld1q_s16(w.as_ptr().add(8));
            acc[2] = vmlal_s16(acc[2], vget_low_s16(x[1]), vget_low_s16(w1));
            acc[3] = vmlal_high_s16(acc[3], x[1], w1);
        }
    }
}
