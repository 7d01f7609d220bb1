//! The NEON depthwise convolution on raw input bytes, two taps per 16-bit
//! sum (layers that [`Folded`] takes: depth multiplier 1, channels a
//! multiple of 8, no weight of -128), bit-exact with the scalar loops. On
//! a CPU with dotprod those layers' blocks run the `sdot` kernel
//! ([`super::dot`]) where it takes them (kernels of at most 8 rows).
//!
//! Per block of 16 output channels (or a last 8) and output pixel, the
//! accumulators start at the folded bias of the pixel's class (see
//! [`Folded`]: the zero point's share is in it), then every tap inside the
//! image multiplies the block's input bytes as they are by its 8-bit
//! weights: taps go in pairs, `smull`/`smull2` for the first and
//! `smlal`/`smlal2` for the second into the same 16-bit lanes, then
//! `saddw`/`saddw2` into the 32-bit accumulators (10 instructions per 32
//! MACs where `ssubl` and `smlal` by 16-bit weights took about 15); an odd
//! last tap is `smull` then `saddw`. Edge windows run the same products over
//! their taps inside the image, their bias class accounting for the rest,
//! so no padded copy of the input is needed (no scratch).
//!
//! Interior windows of 3x3 and 5x5 run unrolled, two neighbouring pixels
//! per pass sharing each tap's weights; a last block of 8 channels puts the
//! two pixels side by side in one 16-lane vector. The output stage is the
//! widening kernel's ([`BlockStage`]).

use core::arch::aarch64::*;
use core::ops::Range;

use super::super::geometry::ConvGeometry;
use super::super::origin::FirstRow;
use super::dot;
use super::folded::Folded;
use super::neon::{store, store_pair};
use super::pack::{Packed, Stage, BLOCK};
use super::stage::{BlockStage, DOUBLE, F32, FIXED, SINGLE, TIES_UPWARD};
use super::{first3, rows3};
use crate::backend::CpuFeatures;

/// Output rows `rows` of the blocks `blocks` (of 16 channels) of a layer
/// with a [`Folded`] layout (the caller's checks as
/// `super::neon::depthwise_rows`).
pub(crate) fn depthwise_rows<F: FirstRow>(
    p: &Packed,
    f: &Folded,
    g: &ConvGeometry,
    input: &[i8],
    out: (&mut [i8], F),
    rows: (Range<usize>, Range<usize>),
) {
    // Each stage compiled apart: the loops then hold only its vectors.
    match p.stage.stage {
        Stage::F32 => rows_staged::<F32, F>(p, f, g, input, out, rows),
        Stage::Double => rows_staged::<DOUBLE, F>(p, f, g, input, out, rows),
        Stage::Single => rows_staged::<SINGLE, F>(p, f, g, input, out, rows),
        Stage::TiesUpward => rows_staged::<TIES_UPWARD, F>(p, f, g, input, out, rows),
        // (Not met: a layer of whole blocks of 8 runs `TiesUpward`.)
        Stage::TiesUpwardInBlocksOf8 => rows_staged::<FIXED, F>(p, f, g, input, out, rows),
    }
}

/// [`depthwise_rows`] with the output stage `S`.
fn rows_staged<const S: u8, F: FirstRow>(
    p: &Packed,
    f: &Folded,
    g: &ConvGeometry,
    input: &[i8],
    (output, first): (&mut [i8], F),
    (rows, blocks): (Range<usize>, Range<usize>),
) {
    let square = g.kernel_height == g.kernel_width;
    let dot = !f.dot_weights.is_empty() && CpuFeatures::detect().dotprod;
    let dot3 = g.kernel_height == 3 && g.kernel_width == 3 && g.dilation_width == 1;
    // The 3x3 asm loop over many rows per call (`rows3`).
    let rows3 = dot && dot3 && S == TIES_UPWARD && rows3::takes(p, f, g);
    let every_block = blocks == (0..g.output_channels.div_ceil(BLOCK));
    if dot && f.broadcast && S == TIES_UPWARD && every_block && first3::takes(p, f, g) {
        // SAFETY: the CPU has dotprod (checked above) and `first3` takes
        // the layer; the caller checked the tensors.
        unsafe { first3::depthwise_rows(p, f, g, input, output, first.row(), rows) };
        return;
    }
    if rows3 {
        // SAFETY: the CPU has dotprod (checked above), the layer is 3x3
        // of width dilation 1 and `rows3` takes it; the caller checked the
        // tensors.
        unsafe { rows3::depthwise_rows(p, f, g, input, output, first.row(), (rows, blocks)) };
        return;
    }
    // (`Folded::runs`: a broadcast layer comes here only with dotprod.)
    debug_assert!(dot || !f.broadcast);
    for block in blocks {
        let br = Block {
            p,
            f,
            g,
            rows: rows.clone(),
            first,
            block,
        };
        let (i, o) = (input, &mut *output);
        let wide = g.output_channels - block * BLOCK >= BLOCK;
        if dot {
            let (first, r) = (first.row(), rows.clone());
            let c0 = block * BLOCK;
            // SAFETY: the CPU has dotprod (checked above), the layer's
            // dot weights exist (so `dot::takes(g)`), the block has 16
            // channels (`wide`) or 8; the caller checked the tensors.
            unsafe {
                match (dot3, wide) {
                    (true, true) => {
                        dot::block_rows::<S, 3, 4>(p, f, g, input, output, first, r, c0)
                    }
                    (true, false) => {
                        dot::block_rows::<S, 3, 2>(p, f, g, input, output, first, r, c0)
                    }
                    (false, true) => {
                        dot::block_rows::<S, 0, 4>(p, f, g, input, output, first, r, c0)
                    }
                    (false, false) => {
                        dot::block_rows::<S, 0, 2>(p, f, g, input, output, first, r, c0)
                    }
                }
            }
            continue;
        }
        match (g.kernel_height, square, wide) {
            (3, true, true) => block_rows::<4, 3, S, F>(&br, i, o),
            (3, true, false) => block_rows::<2, 3, S, F>(&br, i, o),
            (5, true, true) => block_rows::<4, 5, S, F>(&br, i, o),
            (5, true, false) => block_rows::<2, 5, S, F>(&br, i, o),
            (_, _, true) => block_rows::<4, 0, S, F>(&br, i, o),
            (_, _, false) => block_rows::<2, 0, S, F>(&br, i, o),
        }
    }
}

/// One block of channels along output rows.
struct Block<'a, F> {
    p: &'a Packed,
    f: &'a Folded,
    g: &'a ConvGeometry,
    rows: Range<usize>,
    /// The output row at the start of the `output` slice.
    first: F,
    block: usize,
}

/// A block of 16 (`N` = 4 accumulators) or 8 (`N` = 2) channels; `K` (3,
/// 5, or 0 for any size) the window's side for the unrolled interior.
#[inline(always)]
fn block_rows<const N: usize, const K: usize, const S: u8, F: FirstRow>(
    b: &Block<'_, F>,
    input: &[i8],
    output: &mut [i8],
) {
    if S == F32 {
        pair_rows_f32::<N, K, F>(b, input, output)
    } else {
        pair_rows_fixed::<N, K, S, F>(b, input, output)
    }
}

/// [`block_rows`] with a fixed-point output stage (its own symbol, for the
/// disassembly checks).
#[inline(never)]
fn pair_rows_fixed<const N: usize, const K: usize, const S: u8, F: FirstRow>(
    b: &Block<'_, F>,
    input: &[i8],
    output: &mut [i8],
) {
    rows_of_block::<N, K, S, F>(b, input, output)
}

/// [`block_rows`] with XNNPACK's `f32` output stage.
#[inline(never)]
fn pair_rows_f32<const N: usize, const K: usize, F: FirstRow>(
    b: &Block<'_, F>,
    input: &[i8],
    output: &mut [i8],
) {
    rows_of_block::<N, K, F32, F>(b, input, output)
}

/// [`block_rows`]' loops.
#[inline(always)]
fn rows_of_block<const N: usize, const K: usize, const S: u8, F: FirstRow>(
    b: &Block<'_, F>,
    input: &[i8],
    output: &mut [i8],
) {
    let (p, f, g) = (b.p, b.f, b.g);
    let c0 = b.block * BLOCK;
    let lanes = 4 * N;
    let (kh, kw) = (g.kernel_height, g.kernel_width);
    let taps = kh * kw;
    let ic = g.input_channels;
    let in_row = g.input_width * ic;
    let in_image = g.input_height * in_row;
    let out_row = g.output_width * g.output_channels;
    let weights = &f.weights[b.block * taps * BLOCK..][..taps * BLOCK];
    let (dy, dx) = (g.dilation_height * in_row, g.dilation_width * ic);
    let step = g.stride_width * ic;
    let oc = g.output_channels;
    // SAFETY: `c0 + 16` is within the padded per-channel arrays.
    let stage = unsafe { BlockStage::<S>::load(&p.stage, c0, N == 2) };
    let weight = |t: usize| -> int8x16_t {
        debug_assert!(t < taps);
        // SAFETY: every caller's `t` is a tap of the window (`< taps`), and
        // `weights` holds 16 bytes per tap (unchecked: the edge loop's
        // index is not a constant).
        unsafe { vld1q_s8(weights.as_ptr().add(t * BLOCK)) }
    };
    // The columns whose window lies inside the image.
    let (first_inside, end_inside) = g.inside_columns(kw);
    for r in b.rows.clone() {
        let (batch, oy) = (r / g.output_height, r % g.output_height);
        let image = &input[batch * in_image..][..in_image];
        let out = &mut output[(r - b.first.row()) * out_row..][..out_row];
        let (y0, ys) = ConvGeometry::taps(
            oy,
            g.stride_height,
            g.pad_top,
            g.dilation_height,
            kh,
            g.input_height,
        );
        let classes = f.column_classes * f.padded;
        let row_biases = &f.biases[f.row_class[oy] as usize * classes..][..classes];
        let bias_of = |ox: usize| -> [int32x4_t; 4] {
            let at = f.column_class[ox] as usize * f.padded + c0;
            let v = &row_biases[at..][..BLOCK];
            // SAFETY: `v` holds 16 values.
            core::array::from_fn(|j| unsafe { vld1q_s32(v.as_ptr().add(4 * j)) })
        };
        let interior = if K != 0 && ys.len() == kh && first_inside < end_inside {
            first_inside..end_inside
        } else {
            0..0
        };
        let inner_bias = if interior.is_empty() {
            bias_of(0)
        } else {
            bias_of(interior.start)
        };
        // The block's first input byte of a window inside the image.
        let window =
            |ox: usize| (y0 as usize) * in_row + (ox * g.stride_width - g.pad_left) * ic + c0;
        let tap_at = |t: usize| (t / K.max(1)) * dy + (t % K.max(1)) * dx;
        let mut ox = 0;
        while ox < g.output_width {
            if interior.contains(&ox) && interior.contains(&(ox + 1)) {
                let base = window(ox);
                if N == 2 {
                    // Two pixels of 8 channels in one vector.
                    let mut acc = inner_bias;
                    let load = |t: usize| {
                        let at = base + tap_at(t);
                        debug_assert!(at + step + 8 <= image.len());
                        // SAFETY: both windows are inside the image and
                        // have 8 channels from `at` and `at + step`.
                        unsafe {
                            let ptr = image.as_ptr().add(at);
                            if step == 8 {
                                vld1q_s8(ptr)
                            } else {
                                vcombine_s8(vld1_s8(ptr), vld1_s8(ptr.add(step)))
                            }
                        }
                    };
                    let mut t = 0;
                    while t + 1 < K * K {
                        pair::<4>(&mut acc, load(t), weight(t), load(t + 1), weight(t + 1));
                        t += 2;
                    }
                    if t < K * K {
                        single::<4>(&mut acc, load(t), weight(t));
                    }
                    store_pair(stage.bytes::<4>(&acc), out, ox * oc + c0, oc, 8);
                } else {
                    let (mut acc, mut next) = (inner_bias, inner_bias);
                    let load = |at: usize| {
                        debug_assert!(at + 16 <= image.len());
                        // SAFETY: a tap of a window inside the image, 16
                        // channels from `at`.
                        unsafe { vld1q_s8(image.as_ptr().add(at)) }
                    };
                    let mut t = 0;
                    while t + 1 < K * K {
                        let (a, c) = (base + tap_at(t), base + tap_at(t + 1));
                        let (wa, wc) = (weight(t), weight(t + 1));
                        pair::<4>(&mut acc, load(a), wa, load(c), wc);
                        pair::<4>(&mut next, load(a + step), wa, load(c + step), wc);
                        t += 2;
                    }
                    if t < K * K {
                        let a = base + tap_at(t);
                        single::<4>(&mut acc, load(a), weight(t));
                        single::<4>(&mut next, load(a + step), weight(t));
                    }
                    store(stage.bytes::<4>(&acc), out, ox * oc + c0, 16);
                    store(stage.bytes::<4>(&next), out, (ox + 1) * oc + c0, 16);
                }
                ox += 2;
                continue;
            }
            let mut acc;
            if interior.contains(&ox) {
                acc = inner_bias;
                let base = window(ox);
                let load = |t: usize| {
                    let at = base + tap_at(t);
                    // SAFETY: a tap of a window inside the image.
                    unsafe { load_block::<N>(image, at) }
                };
                let mut t = 0;
                while t + 1 < K * K {
                    pair::<N>(&mut acc, load(t), weight(t), load(t + 1), weight(t + 1));
                    t += 2;
                }
                if t < K * K {
                    single::<N>(&mut acc, load(t), weight(t));
                }
            } else {
                acc = bias_of(ox);
                let (x0, xs) = ConvGeometry::taps(
                    ox,
                    g.stride_width,
                    g.pad_left,
                    g.dilation_width,
                    kw,
                    g.input_width,
                );
                // The taps inside the image, in pairs along each kernel row
                // (an odd last one alone): no state carried between rows.
                // (An empty `xs` may start left of the image: no taps.)
                let rows = if xs.is_empty() { 0..0 } else { ys.clone() };
                for ky in rows {
                    let iy = (y0 + (ky * g.dilation_height) as isize) as usize;
                    let ix0 = (x0 + (xs.start * g.dilation_width) as isize) as usize;
                    let mut at = iy * in_row + ix0 * ic + c0;
                    let mut t = ky * kw + xs.start;
                    let end = ky * kw + xs.end;
                    while t + 1 < end {
                        // SAFETY: taps() keeps taps inside the image.
                        let (a, b) = unsafe {
                            (load_block::<N>(image, at), load_block::<N>(image, at + dx))
                        };
                        pair::<N>(&mut acc, a, weight(t), b, weight(t + 1));
                        at += 2 * dx;
                        t += 2;
                    }
                    if t < end {
                        // SAFETY: as above.
                        let a = unsafe { load_block::<N>(image, at) };
                        single::<N>(&mut acc, a, weight(t));
                    }
                }
            }
            store(stage.bytes::<N>(&acc), out, ox * oc + c0, lanes);
            ox += 1;
        }
    }
}

/// The block's input bytes at `image[at..]`: 16, or 8 in the low half
/// when `N` is 2 (the high half then zero).
///
/// # Safety
/// `at` is the block's first input byte at a tap inside the image (so
/// `4 * N` bytes from it are in `image`: the block's channels).
#[inline(always)]
unsafe fn load_block<const N: usize>(image: &[i8], at: usize) -> int8x16_t {
    debug_assert!(at + 4 * N <= image.len());
    // SAFETY: the caller's bounds.
    unsafe {
        let ptr = image.as_ptr().add(at);
        if N == 4 {
            vld1q_s8(ptr)
        } else {
            vcombine_s8(vld1_s8(ptr), vdup_n_s8(0))
        }
    }
}

/// `acc += xa * wa + xb * wb` on the low 8 lanes (and the high 8 when `N`
/// is 4): both products in one 16-bit sum (exact: no weight is -128), then
/// widened into the 32-bit accumulators. Written as assembly so that the
/// high halves multiply with `smull2`/`smlal2` (the compiler otherwise
/// splits loop-invariant weights into halves and adds an `ext` per input).
#[inline(always)]
fn pair<const N: usize>(
    acc: &mut [int32x4_t; 4],
    xa: int8x16_t,
    wa: int8x16_t,
    xb: int8x16_t,
    wb: int8x16_t,
) {
    let [a0, a1, a2, a3] = acc;
    // SAFETY: register-only NEON instructions (neon is a compile-time
    // target feature, cfg on this module).
    unsafe {
        if N == 4 {
            core::arch::asm!(
                "smull {lo:v}.8h, {xa:v}.8b, {wa:v}.8b",
                "smull2 {hi:v}.8h, {xa:v}.16b, {wa:v}.16b",
                "smlal {lo:v}.8h, {xb:v}.8b, {wb:v}.8b",
                "smlal2 {hi:v}.8h, {xb:v}.16b, {wb:v}.16b",
                "saddw {a0:v}.4s, {a0:v}.4s, {lo:v}.4h",
                "saddw2 {a1:v}.4s, {a1:v}.4s, {lo:v}.8h",
                "saddw {a2:v}.4s, {a2:v}.4s, {hi:v}.4h",
                "saddw2 {a3:v}.4s, {a3:v}.4s, {hi:v}.8h",
                xa = in(vreg) xa, wa = in(vreg) wa, xb = in(vreg) xb, wb = in(vreg) wb,
                lo = out(vreg) _, hi = out(vreg) _,
                a0 = inout(vreg) *a0, a1 = inout(vreg) *a1,
                a2 = inout(vreg) *a2, a3 = inout(vreg) *a3,
                options(pure, nomem, nostack),
            );
        } else {
            core::arch::asm!(
                "smull {lo:v}.8h, {xa:v}.8b, {wa:v}.8b",
                "smlal {lo:v}.8h, {xb:v}.8b, {wb:v}.8b",
                "saddw {a0:v}.4s, {a0:v}.4s, {lo:v}.4h",
                "saddw2 {a1:v}.4s, {a1:v}.4s, {lo:v}.8h",
                xa = in(vreg) xa, wa = in(vreg) wa, xb = in(vreg) xb, wb = in(vreg) wb,
                lo = out(vreg) _,
                a0 = inout(vreg) *a0, a1 = inout(vreg) *a1,
                options(pure, nomem, nostack),
            );
        }
    }
}

/// `acc += x * w` on the low 8 lanes (and the high 8 when `N` is 4), as
/// [`pair`].
#[inline(always)]
fn single<const N: usize>(acc: &mut [int32x4_t; 4], x: int8x16_t, w: int8x16_t) {
    let [a0, a1, a2, a3] = acc;
    // SAFETY: register-only NEON instructions (as `pair`).
    unsafe {
        if N == 4 {
            core::arch::asm!(
                "smull {lo:v}.8h, {x:v}.8b, {w:v}.8b",
                "smull2 {hi:v}.8h, {x:v}.16b, {w:v}.16b",
                "saddw {a0:v}.4s, {a0:v}.4s, {lo:v}.4h",
                "saddw2 {a1:v}.4s, {a1:v}.4s, {lo:v}.8h",
                "saddw {a2:v}.4s, {a2:v}.4s, {hi:v}.4h",
                "saddw2 {a3:v}.4s, {a3:v}.4s, {hi:v}.8h",
                x = in(vreg) x, w = in(vreg) w,
                lo = out(vreg) _, hi = out(vreg) _,
                a0 = inout(vreg) *a0, a1 = inout(vreg) *a1,
                a2 = inout(vreg) *a2, a3 = inout(vreg) *a3,
                options(pure, nomem, nostack),
            );
        } else {
            core::arch::asm!(
                "smull {lo:v}.8h, {x:v}.8b, {w:v}.8b",
                "saddw {a0:v}.4s, {a0:v}.4s, {lo:v}.4h",
                "saddw2 {a1:v}.4s, {a1:v}.4s, {lo:v}.8h",
                x = in(vreg) x, w = in(vreg) w,
                lo = out(vreg) _,
                a0 = inout(vreg) *a0, a1 = inout(vreg) *a1,
                options(pure, nomem, nostack),
            );
        }
    }
}
