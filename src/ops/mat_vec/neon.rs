//! The packed mat-vec on NEON: eight (then four, then single) weight rows
//! against one input row per step of 16 depth bytes, with `sdot`
//! (FEAT_DotProd, detected at run time) or widening multiplies (`smull` +
//! `sadalp`). The int32 sums wrap like the scalar reference's, so every
//! path gives its values exactly. Then [`Gemv`](super::Gemv)'s output stage,
//! 16 channels at a time, with the GEMM's vector requantizations
//! (`requant/neon.rs`), each equal to its scalar form.

use super::{row_block, GemvView, CHUNK};
use crate::backend::CpuFeatures;
use crate::ops::dot_neon::{sdot, widening};
use crate::ops::requant::neon as rq;
use crate::ops::requant::{requantize_lanes, ChannelMultiplier, ChannelMultipliers};
use crate::quant::{Requantization, Rounding};
use core::arch::aarch64::*;
use core::ops::Range;

/// The products of one block of `N` packed weight rows (`w`, `N * stride`
/// bytes: for each 16 bytes of depth, 16 bytes of each row in turn) with
/// one input row (`xb`, its last partial block in `tail`) into `out` (`N`
/// sums): one input load feeds `N` products per 16 bytes of depth, the
/// weights are one contiguous stream; groups of four rows are reduced
/// together with two rounds of `addp`.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn rows_block<const N: usize>(
    w: &[i8],
    stride: usize,
    xb: &[i8],
    tail: &[i8; 16],
    full: usize,
    has_tail: bool,
    out: &mut [i32],
    step: &impl Fn(int32x4_t, int8x16_t, int8x16_t) -> int32x4_t,
) {
    assert!(out.len() >= N);
    let acc = block_acc::<N>(w, stride, xb, tail, full, has_tail, step);
    // SAFETY: the stores write within `out[..N]` (asserted here).
    unsafe {
        let mut j = 0;
        while j + 4 <= N {
            vst1q_s32(out.as_mut_ptr().add(j), sum_four(&acc, j));
            j += 4;
        }
        while j < N {
            out[j] = vaddvq_s32(acc[j]);
            j += 1;
        }
    }
}

/// The four row sums of accumulators `j..j + 4` (two rounds of `addp`).
#[inline(always)]
fn sum_four<const N: usize>(acc: &[int32x4_t; N], j: usize) -> int32x4_t {
    // SAFETY: register-only NEON (a compile-time target feature here).
    unsafe {
        vpaddq_s32(
            vpaddq_s32(acc[j], acc[j + 1]),
            vpaddq_s32(acc[j + 2], acc[j + 3]),
        )
    }
}

/// [`rows_block`]'s products before the reduction: one accumulator per
/// row, each lane a partial sum of it.
#[inline(always)]
fn block_acc<const N: usize>(
    w: &[i8],
    stride: usize,
    xb: &[i8],
    tail: &[i8; 16],
    full: usize,
    has_tail: bool,
    step: &impl Fn(int32x4_t, int8x16_t, int8x16_t) -> int32x4_t,
) -> [int32x4_t; N] {
    assert!(w.len() >= N * stride && xb.len() >= full);
    // SAFETY: the loads read 16 bytes at `c * N + j * 16` of `w`, `j < N`,
    // below `(c + 16) * N <= (full + 16 * has_tail) * N <= stride * N` (the
    // caller's assertion), at `c + 16 <= full <= xb.len()` of `xb`, and all
    // of `tail`.
    unsafe {
        let mut acc = [vdupq_n_s32(0); N];
        let mut c = 0;
        // Two depth blocks per iteration: half the loop's own instructions.
        while c + 32 <= full {
            let x0 = vld1q_s8(xb.as_ptr().add(c));
            let x1 = vld1q_s8(xb.as_ptr().add(c + 16));
            for (j, a) in acc.iter_mut().enumerate() {
                *a = step(*a, vld1q_s8(w.as_ptr().add(c * N + j * 16)), x0);
            }
            for (j, a) in acc.iter_mut().enumerate() {
                *a = step(*a, vld1q_s8(w.as_ptr().add((c + 16) * N + j * 16)), x1);
            }
            c += 32;
        }
        while c < full {
            let xv = vld1q_s8(xb.as_ptr().add(c));
            for (j, a) in acc.iter_mut().enumerate() {
                *a = step(*a, vld1q_s8(w.as_ptr().add(c * N + j * 16)), xv);
            }
            c += 16;
        }
        if has_tail {
            let xv = vld1q_s8(tail.as_ptr());
            for (j, a) in acc.iter_mut().enumerate() {
                *a = step(*a, vld1q_s8(w.as_ptr().add(full * N + j * 16)), xv);
            }
        }
        acc
    }
}

/// The one loop of both paths; `step` is `sdot` or `widening`. `weights`
/// is packed (see `MatVec`): rows zero past `cols` up to `stride`, so every
/// row is whole 16-byte blocks, in blocks of eight rows, then four, then
/// one, the order this loop takes them in. The last partial block of each
/// input row is read from a zero-padded copy.
#[inline(always)]
fn mat_vec_with(
    weights: &[i8],
    rows: usize,
    cols: usize,
    stride: usize,
    x: &[i8],
    dots: &mut [i32],
    step: impl Fn(int32x4_t, int8x16_t, int8x16_t) -> int32x4_t,
) {
    let full = cols / 16 * 16;
    let has_tail = cols > full;
    assert!(stride >= full + 16 * has_tail as usize && weights.len() >= rows * stride);
    for (xb, db) in x.chunks_exact(cols).zip(dots.chunks_exact_mut(rows)) {
        let mut tail = [0i8; 16];
        tail[..cols - full].copy_from_slice(&xb[full..]);
        let mut r = 0;
        while r + 8 <= rows {
            let w = &weights[r * stride..];
            rows_block::<8>(w, stride, xb, &tail, full, has_tail, &mut db[r..], &step);
            r += 8;
        }
        if r + 4 <= rows {
            let w = &weights[r * stride..];
            rows_block::<4>(w, stride, xb, &tail, full, has_tail, &mut db[r..], &step);
            r += 4;
        }
        while r < rows {
            let w = &weights[r * stride..];
            rows_block::<1>(w, stride, xb, &tail, full, has_tail, &mut db[r..], &step);
            r += 1;
        }
    }
}

/// `sdot` path.
#[target_feature(enable = "dotprod")]
unsafe fn mat_vec_dot(
    weights: &[i8],
    rows: usize,
    cols: usize,
    stride: usize,
    x: &[i8],
    dots: &mut [i32],
) {
    // SAFETY: this function requires dotprod, so `sdot` may run.
    mat_vec_with(weights, rows, cols, stride, x, dots, |acc, w, x| unsafe {
        sdot(acc, w, x)
    })
}

/// `scalar::mat_vec_packed` on NEON (`sdot` when the CPU has it). The
/// caller checked the lengths (`x` a whole number of `cols` rows, `dots`
/// `rows` per row of `x`); the stride and the weights' length are asserted.
pub(crate) fn mat_vec_packed(
    weights: &[i8],
    rows: usize,
    cols: usize,
    stride: usize,
    x: &[i8],
    dots: &mut [i32],
) {
    if CpuFeatures::detect().dotprod {
        // SAFETY: the CPU has dotprod (checked just above).
        unsafe { mat_vec_dot(weights, rows, cols, stride, x, dots) }
    } else {
        mat_vec_with(weights, rows, cols, stride, x, dots, widening)
    }
}

/// The widening path alone, for tests on CPUs with dotprod.
#[cfg(test)]
pub(crate) fn mat_vec_widening(
    weights: &[i8],
    rows: usize,
    cols: usize,
    stride: usize,
    x: &[i8],
    dots: &mut [i32],
) {
    mat_vec_with(weights, rows, cols, stride, x, dots, widening)
}

/// Channel `ch..ch + 4`'s double-rounding multipliers as lanes.
///
/// # Safety
/// `ch + 4` is at most the length of the three arrays (which `gemv_requant`
/// asserts are at least as long as the folded bias, and `gemv_with` calls
/// with `ch + 4` at most that).
#[inline(always)]
unsafe fn channel_lanes(m: &ChannelMultipliers, ch: usize) -> ChannelMultiplier<int32x4_t> {
    debug_assert!(ch + 4 <= m.left_shift.len().min(m.multiplier.len()));
    // SAFETY: each load reads 4 values from `ch`, within the arrays (the
    // caller's contract).
    unsafe {
        ChannelMultiplier {
            left_shift: vld1q_s32(m.left_shift.as_ptr().add(ch)),
            multiplier: vld1q_s32(m.multiplier.as_ptr().add(ch)),
            neg_right_shift: vld1q_s32(m.neg_right_shift.as_ptr().add(ch)),
        }
    }
}

/// [`rq::narrow_store`] for 8 values: the same saturating narrows, zero
/// point and clamp, on half vectors.
#[inline(always)]
fn narrow_store8(v: [int32x4_t; 2], zp: int16x8_t, min: int8x8_t, max: int8x8_t, out: &mut [i8]) {
    assert!(out.len() >= 8);
    // SAFETY: register-only NEON, and a store of 8 bytes into `out`
    // (asserted above).
    unsafe {
        let wide = vqaddq_s16(vqmovn_high_s32(vqmovn_s32(v[0]), v[1]), zp);
        let o = vmin_s8(vmax_s8(vqmovn_s16(wide), min), max);
        vst1_s8(out.as_mut_ptr(), o);
    }
}

/// The one loop of [`gemv`]: each whole block of 8 rows by `block_acc`,
/// reduced, then the folded bias, `requant` (4 channels starting at the
/// given one), the zero point and the clamp, narrowed to int8; the rows
/// after the last such block (fewer than 8: the blocks of 4 and 1) as one
/// [`CHUNK`] of raw dot products by `rows_block` through a buffer, then the
/// same output stage. `requant` is called with channels `ch` whose `ch + 4`
/// is at most the folded bias's length (asserted below).
#[inline(always)]
fn gemv_with(
    g: &GemvView<'_>,
    x: &[i8],
    output: &mut [i8],
    channels: Range<usize>,
    step: &impl Fn(int32x4_t, int8x16_t, int8x16_t) -> int32x4_t,
    requant: impl Fn(int32x4_t, usize) -> int32x4_t,
) {
    let (cols, stride) = (g.k, g.stride);
    let full = cols / 16 * 16;
    let has_tail = cols > full;
    assert!(
        x.len() == cols
            && stride >= full + 16 * has_tail as usize
            && g.packed.len() >= g.n * stride
            && output.len() >= channels.len()
            && g.folded_bias.len() >= channels.end.div_ceil(8) * 8 + CHUNK - 8
    );
    let mut tail = [0i8; 16];
    tail[..cols - full].copy_from_slice(&x[full..]);
    // SAFETY: register-only NEON (a compile-time target feature here).
    let (zp, min, max) = unsafe {
        (
            vdupq_n_s16(g.output_zero_point as i16),
            vdupq_n_s8(g.act_min as i8),
            vdupq_n_s8(g.act_max as i8),
        )
    };
    // SAFETY: register-only NEON.
    let (min8, max8) = unsafe { (vget_low_s8(min), vget_low_s8(max)) };
    let mut c = channels.start;
    // Whole blocks of 8 rows: the sums stay in registers, 8 bytes out.
    let blocks = channels.end.min(g.n / 8 * 8).saturating_sub(c) / 8;
    // Exact chunks: a block's weights and its 8 output bytes without a
    // bounds check each.
    let weight_blocks = g.packed[c * stride..].chunks_exact(8 * stride);
    let output_blocks = output.chunks_exact_mut(8);
    for (w, out) in weight_blocks.zip(output_blocks).take(blocks) {
        let acc = block_acc::<8>(w, stride, x, &tail, full, has_tail, step);
        let bias = g.folded_bias.as_ptr();
        // SAFETY: the loads read `c..c + 8`, within the folded bias
        // (`c + 8 <= channels.end`, and the assertion above).
        let (b0, b1) = unsafe { (vld1q_s32(bias.add(c)), vld1q_s32(bias.add(c + 4))) };
        // SAFETY: register-only NEON.
        let v = unsafe {
            [
                requant(vaddq_s32(sum_four(&acc, 0), b0), c),
                requant(vaddq_s32(sum_four(&acc, 4), b1), c + 4),
            ]
        };
        narrow_store8(v, zp, min8, max8, out);
        c += 8;
    }
    // The rows after the last whole block of 8 (a block of 4, single
    // rows), through a chunk's buffer.
    while c < channels.end {
        let len = (channels.end - c).min(CHUNK);
        let mut dots = [0i32; CHUNK];
        let mut r = c;
        while r < c + len {
            let (first, rows) = row_block(r, g.n);
            debug_assert!(first == r && r + rows <= c + len);
            let w = &g.packed[r * stride..];
            let d = &mut dots[r - c..];
            match rows {
                8 => rows_block::<8>(w, stride, x, &tail, full, has_tail, d, step),
                4 => rows_block::<4>(w, stride, x, &tail, full, has_tail, d, step),
                _ => rows_block::<1>(w, stride, x, &tail, full, has_tail, d, step),
            }
            r += rows;
        }
        // SAFETY: register-only NEON.
        let mut v = [unsafe { vdupq_n_s32(0) }; 4];
        for (i, lane) in v.iter_mut().enumerate() {
            let ch = c + 4 * i;
            let bias = &g.folded_bias[ch..ch + 4];
            // SAFETY: each load reads the 4 values of a slice of length 4.
            let acc = unsafe {
                vaddq_s32(
                    vld1q_s32(dots[4 * i..4 * i + 4].as_ptr()),
                    vld1q_s32(bias.as_ptr()),
                )
            };
            *lane = requant(acc, ch);
        }
        let out = &mut output[c - channels.start..][..len];
        if len == CHUNK {
            rq::narrow_store::<true>(v, zp, min, max, out.as_mut_ptr());
        } else {
            let mut last = [0i8; CHUNK];
            rq::narrow_store::<true>(v, zp, min, max, last.as_mut_ptr());
            out.copy_from_slice(&last[..len]);
        }
        c += len;
    }
}

/// [`gemv_with`] with the requantization of `g` (one loop compiled per
/// kind, the vector form of `ChannelMultipliers::requantize`).
#[inline(always)]
fn gemv_requant(
    g: &GemvView<'_>,
    x: &[i8],
    output: &mut [i8],
    channels: Range<usize>,
    step: &impl Fn(int32x4_t, int8x16_t, int8x16_t) -> int32x4_t,
) {
    let m = g.multipliers;
    // Every channel `ch` the output stage loads (4 from it) has `ch + 4`
    // at most the folded bias's length (`gemv_with` asserts it); the arrays
    // a requantization reads are at least that long (asserted per arm), so
    // the loads below need no check each.
    let len = g.folded_bias.len();
    let double_arrays =
        m.left_shift.len() >= len && m.multiplier.len() >= len && m.neg_right_shift.len() >= len;
    match m.requantization {
        Requantization::Multiplier(Rounding::Double) => {
            assert!(double_arrays);
            gemv_with(g, x, output, channels, step, |acc, ch| {
                // SAFETY: `ch + 4 <= len` (above).
                requantize_lanes(acc, &unsafe { channel_lanes(m, ch) })
            })
        }
        Requantization::Multiplier(Rounding::Single) => {
            assert!(m.multiplier.len() >= len && m.neg_total_shift.len() >= len);
            gemv_with(g, x, output, channels, step, |acc, ch| {
                let (q, s) = (m.multiplier.as_ptr(), m.neg_total_shift.as_ptr());
                // SAFETY: each load reads within `ch..ch + 4`, and
                // `ch + 4 <= len` (above).
                unsafe {
                    let shifts = [vld1q_s64(s.add(ch)), vld1q_s64(s.add(ch + 2))];
                    rq::requantize_single(acc, vld1q_s32(q.add(ch)), &shifts)
                }
            })
        }
        Requantization::RealF64 => {
            assert!(m.real.len() >= len);
            gemv_with(g, x, output, channels, step, |acc, ch| {
                let real = m.real.as_ptr();
                // SAFETY: each load reads within `ch..ch + 4`, and
                // `ch + 4 <= len` (above).
                unsafe {
                    let real = [vld1q_f64(real.add(ch)), vld1q_f64(real.add(ch + 2))];
                    rq::requantize_real_f64(acc, &real)
                }
            })
        }
        Requantization::XnnpackF32 => {
            assert!(m.scale_f32.len() >= len);
            gemv_with(g, x, output, channels, step, |acc, ch| {
                // SAFETY: the load reads `ch..ch + 4`, and `ch + 4 <= len`
                // (above).
                unsafe { rq::requantize_xnnpack_f32(acc, vld1q_f32(m.scale_f32.as_ptr().add(ch))) }
            })
        }
        Requantization::GemvTiesUpward => {
            assert!(double_arrays);
            gemv_with(g, x, output, channels, step, |acc, ch| {
                // SAFETY: `ch + 4 <= len` (above).
                rq::requantize_gemv_ties_upward(acc, &unsafe { channel_lanes(m, ch) })
            })
        }
    }
}

/// `sdot` path of [`gemv`].
#[target_feature(enable = "dotprod")]
unsafe fn gemv_dot(g: &GemvView<'_>, x: &[i8], output: &mut [i8], channels: Range<usize>) {
    // SAFETY: this function requires dotprod, so `sdot` may run.
    gemv_requant(g, x, output, channels, &|acc, w, x| unsafe {
        sdot(acc, w, x)
    })
}

/// `scalar::gemv` on NEON (`sdot` when the CPU has it); the caller checked
/// the lengths and the channel range.
pub(crate) fn gemv(g: &GemvView<'_>, x: &[i8], output: &mut [i8], channels: Range<usize>) {
    if CpuFeatures::detect().dotprod {
        // SAFETY: the CPU has dotprod (checked just above).
        unsafe { gemv_dot(g, x, output, channels) }
    } else {
        gemv_requant(g, x, output, channels, &widening)
    }
}

/// The widening path of [`gemv`] alone, for tests on CPUs with dotprod.
#[cfg(test)]
pub(crate) fn gemv_widening(g: &GemvView<'_>, x: &[i8], output: &mut [i8], channels: Range<usize>) {
    gemv_requant(g, x, output, channels, &widening)
}
