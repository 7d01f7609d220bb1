//! Log-softmax, `Method::Lut` (TFLite's optimized `f32`-table kernel, see
//! `lut.rs`), NEON, bit-exact with the scalar reference.
//!
//! Per row, 64 bytes per iteration:
//! 1. maximum and minimum (as for `Method::FixedPoint`): every `d = max - x`
//!    lies in `0..=reach`, so only the 64-entry chunks of `t` that `reach`
//!    touches (and that hold a nonzero `t`) are looked up.
//! 2. sum: the four bytes of `t[d]` by a `tbl` (plus a `tbx` per further
//!    chunk) each, interleaved back into `f32` lanes by `zip1`/`zip2`, then
//!    added to the running sum **in element order**, one `fmla s, s1, v.s[i]`
//!    per element with `s1 = 1.0`: the product by 1 is exact and the fused
//!    operation rounds once, so each step is the reference's `f32` addition
//!    (lanes masked off add `+0.0`, which changes no positive sum). In asm:
//!    LLVM would turn the multiply-add by one back into a lane move and an
//!    `fadd`. A row of several blocks reaching into the last chunk (full-range
//!    data) looks up only the chunks of terms of at least `2^-24` once its
//!    sum has reached 1 (at its maximum's block): the others are below half
//!    an ulp of the sum and adding them, or `+0.0`, gives the same sums.
//! 3. `pre = (in_scale * max + logf(sum)) / out_scale` by the scalar code.
//! 4. the row's output table for `d` in `0..=reach`: `step * x` from a
//!    prepared table (16 inputs per four-register load, descending `x`,
//!    so already in `d` order), `fsub`, `fcvtns` (round to nearest, ties to
//!    even: `rint`), saturating narrowing, `+ zero_point` in 16-bit lanes
//!    and narrowing to bytes. Exact when every
//!    `step * x - pre` of the row lies within `+-2^23` (checked at both ends:
//!    both operations are monotonic), where TFLite's `rint(.) + zero_point`
//!    in `f32` and its truncation are exact integer arithmetic; other rows
//!    (absurd scales, NaN) take the scalar formula entry by entry.
//!    Then the output pass of `Method::FixedPoint`: a `tbl` (plus a `tbx`
//!    per further chunk) for every 16 outputs. A row reaching into the last
//!    chunk (full-range data) builds its table only up to the first group
//!    that ends at the type's minimum (the outputs do not increase with
//!    `d`) and clamps its lookups there (`umin`), through fewer chunks.

use super::blocks::{load, row_max_min, span, Block, KEEP_FROM, KEEP_TO, STEP};
use super::lut::LogSoftmaxLut;
use super::neon::write_row;
use super::table::{Chunk, CHUNK};
use crate::elem::{view, QuantElem, Slices};
use crate::simd::lookup::lookup4;
use crate::simd::tail::read_tail;
use core::arch::aarch64::*;

/// Bound on `|step * x - pre|` for the vector output table (see the module
/// docs): `rint` of it plus a zero point below 256 stays an exact `f32`
/// integer.
const EXACT_BOUND: f32 = 8_388_608.0;

/// Adds 16 terms, the four byte planes of their `f32` bits, to `sum` in
/// lane order.
#[inline(always)]
fn add_in_order(sum: &mut f32, one: f32, planes: [uint8x16_t; 4]) {
    // SAFETY: register arithmetic; NEON is a compile-time target feature.
    let f = unsafe {
        let [b0, b1, b2, b3] = planes;
        // Little-endian: byte 0 is the least significant.
        let lo_a = vreinterpretq_u16_u8(vzip1q_u8(b0, b1));
        let lo_b = vreinterpretq_u16_u8(vzip2q_u8(b0, b1));
        let hi_a = vreinterpretq_u16_u8(vzip1q_u8(b2, b3));
        let hi_b = vreinterpretq_u16_u8(vzip2q_u8(b2, b3));
        [
            vzip1q_u16(lo_a, hi_a),
            vzip2q_u16(lo_a, hi_a),
            vzip1q_u16(lo_b, hi_b),
            vzip2q_u16(lo_b, hi_b),
        ]
    };
    // SAFETY: register arithmetic on the operands only (no memory, stack or
    // flags); `s` is read and written.
    unsafe {
        core::arch::asm!(
            "fmla {s:s}, {one:s}, {f0:v}.s[0]",
            "fmla {s:s}, {one:s}, {f0:v}.s[1]",
            "fmla {s:s}, {one:s}, {f0:v}.s[2]",
            "fmla {s:s}, {one:s}, {f0:v}.s[3]",
            "fmla {s:s}, {one:s}, {f1:v}.s[0]",
            "fmla {s:s}, {one:s}, {f1:v}.s[1]",
            "fmla {s:s}, {one:s}, {f1:v}.s[2]",
            "fmla {s:s}, {one:s}, {f1:v}.s[3]",
            "fmla {s:s}, {one:s}, {f2:v}.s[0]",
            "fmla {s:s}, {one:s}, {f2:v}.s[1]",
            "fmla {s:s}, {one:s}, {f2:v}.s[2]",
            "fmla {s:s}, {one:s}, {f2:v}.s[3]",
            "fmla {s:s}, {one:s}, {f3:v}.s[0]",
            "fmla {s:s}, {one:s}, {f3:v}.s[1]",
            "fmla {s:s}, {one:s}, {f3:v}.s[2]",
            "fmla {s:s}, {one:s}, {f3:v}.s[3]",
            s = inout(vreg) *sum,
            one = in(vreg) one,
            f0 = in(vreg) f[0],
            f1 = in(vreg) f[1],
            f2 = in(vreg) f[2],
            f3 = in(vreg) f[3],
            options(pure, nomem, nostack, preserves_flags),
        );
    }
}

/// Adds a 64-byte block of inputs to `sum` in order through the first `N`
/// chunks of the planes; `keep` (0 or 0xff per lane) zeroes the terms of
/// lanes that must not count.
#[inline(always)]
fn add_block<const N: usize>(
    p: &LogSoftmaxLut,
    sum: &mut f32,
    maxv: uint8x16_t,
    b: Block,
    keep: Option<&Block>,
) {
    // SAFETY: register arithmetic and loads of whole 64-byte chunks of the
    // planes (ch < N <= 4).
    unsafe {
        let planes = p.planes.as_ptr();
        let table = |k: usize, ch: usize| (*planes.add(k))[ch].0.as_ptr();
        let mut d = b.map(|x| vsubq_u8(maxv, x));
        let mut v = [[vdupq_n_u8(0); 4]; 4];
        for (k, plane) in v.iter_mut().enumerate() {
            lookup4::<true>(table(k, 0), &d, plane);
        }
        for ch in 1..N {
            d = d.map(|x| vsubq_u8(x, vdupq_n_u8(CHUNK as u8)));
            for (k, plane) in v.iter_mut().enumerate() {
                lookup4::<false>(table(k, ch), &d, plane);
            }
        }
        if let Some(m) = keep {
            for plane in v.iter_mut() {
                for j in 0..4 {
                    plane[j] = vandq_u8(plane[j], m[j]);
                }
            }
        }
        let [p0, p1, p2, p3] = v;
        for (((a, b), c), e) in p0.into_iter().zip(p1).zip(p2).zip(p3) {
            add_in_order(sum, 1.0, [a, b, c, e]);
        }
    }
}

/// The reference's sequential `f32` sum of `t[max - x]` over a row's
/// first `len` bytes (`row` as `row_max_min` takes it: the row, or a
/// 64-byte window for `len < 64`), through `N` chunks, and through `M`
/// (at most `N`, from `late_chunks`) once the sum has reached 1: it does
/// at the row's maximum (term 1), and past that the terms of the later
/// chunks are below half an ulp of the sum, so adding them (or `+0.0` in
/// their place) gives the same `f32` sums.
#[inline(always)]
fn row_sum<const N: usize, const M: usize>(
    p: &LogSoftmaxLut,
    row: &[u8],
    len: usize,
    max: u8,
) -> f32 {
    let mut sum = 0.0f32;
    // SAFETY: register arithmetic.
    let maxv = unsafe { vdupq_n_u8(max) };
    if len < STEP {
        // SAFETY: KEEP_TO holds 128 bytes; 64 - len + 64 <= 128.
        let keep = unsafe { load(KEEP_TO.as_ptr().add(STEP - len)) };
        if row.len() >= STEP {
            // SAFETY: the window holds STEP bytes; lanes past len are masked.
            let b = unsafe { load(row.as_ptr()) };
            add_block::<N>(p, &mut sum, maxv, b, Some(&keep));
        } else {
            read_tail::<STEP, u8, ()>(&row[..len], max, |buf| {
                // SAFETY: read_tail hands out STEP readable bytes.
                let b = unsafe { load(buf) };
                add_block::<N>(p, &mut sum, maxv, b, Some(&keep));
            });
        }
        return sum;
    }
    let row = &row[..len];
    let mut src = row.as_ptr();
    let blocks = row.len() / STEP;
    if M < N && blocks > 1 {
        let mut left = blocks;
        while left > 0 {
            // SAFETY: src points at one of the row's whole 64-byte blocks.
            unsafe {
                let b = load(src);
                src = src.add(STEP);
                add_block::<N>(p, &mut sum, maxv, b, None);
            }
            left -= 1;
            if sum >= 1.0 {
                break;
            }
        }
        for _ in 0..left {
            // SAFETY: as above (the blocks left).
            unsafe {
                let b = load(src);
                src = src.add(STEP);
                add_block::<M>(p, &mut sum, maxv, b, None);
            }
        }
    } else {
        for _ in 0..blocks {
            // SAFETY: src points at one of the row's whole 64-byte blocks.
            unsafe {
                let b = load(src);
                src = src.add(STEP);
                add_block::<N>(p, &mut sum, maxv, b, None);
            }
        }
    }
    let rest = row.len() % STEP;
    if rest != 0 {
        // SAFETY: row.len() >= STEP, so the last STEP bytes are in bounds;
        // KEEP_FROM holds 128 bytes and rest + 64 <= 128. The first
        // 64 - rest lanes were added already and are zeroed.
        unsafe {
            let b = load(row.as_ptr().add(row.len() - STEP));
            let keep = load(KEEP_FROM.as_ptr().add(rest));
            add_block::<N>(p, &mut sum, maxv, b, Some(&keep));
        }
    }
    sum
}

/// [`row_sum`] of a row reaching into the last chunk (full-range data),
/// whose terms are usually too small to count once the sum reaches 1 (see
/// `late_chunks`). Out of line, so that the rows of the other chunk counts
/// keep their code.
#[inline(never)]
fn row_sum_4(p: &LogSoftmaxLut, row: &[u8], len: usize, max: u8) -> f32 {
    match p.late_chunks {
        1 => row_sum::<4, 1>(p, row, len, max),
        2 => row_sum::<4, 2>(p, row, len, max),
        3 => row_sum::<4, 3>(p, row, len, max),
        _ => row_sum::<4, 4>(p, row, len, max),
    }
}

/// The row's output bytes for `d` in `0..=reach` into `out`; `top` is the
/// maximum's index in `scaled_x` (`T::MAX - max`).
#[inline(always)]
fn build_table<T: QuantElem, const SIGNED: bool>(
    p: &LogSoftmaxLut,
    top: usize,
    reach: usize,
    pre: f32,
    out: &mut [Chunk; 4],
) {
    debug_assert!(top < 256 && top + reach <= 255);
    let sx = |i: usize| p.scaled_x[i];
    let (low, high) = (sx(top + reach) - pre, sx(top) - pre);
    if !(low >= -EXACT_BOUND && high <= EXACT_BOUND) {
        // Far outside the outputs (or NaN): the reference formula.
        for d in 0..=reach {
            out[d / CHUNK].0[d % CHUNK] = T::saturate(p.output(sx(top + d), pre)).to_i32() as u8;
        }
        return;
    }
    let dst = out.as_mut_ptr().cast::<u8>();
    // SAFETY: register arithmetic; group g reads scaled_x[top + 16 g ..
    // top + 16 g + 16], inside the table for top + 16 g <= top + reach <=
    // 255 (16 entries of padding follow), and writes 16 bytes at 16 g of the
    // 256-byte `out`, for g <= reach / 16 <= 15.
    unsafe {
        let prev = vdupq_n_f32(pre);
        let zp = vdupq_n_s16(p.output_zero_point as i16);
        for g in 0..=reach / 16 {
            // Descending x = max - 16 g ..= max - 16 g - 15: d order.
            let x = vld1q_f32_x4(p.scaled_x.as_ptr().add(top + 16 * g));
            let r = |v: float32x4_t| vcvtnq_s32_f32(vsubq_f32(v, prev));
            let a = vqmovn_high_s32(vqmovn_s32(r(x.0)), r(x.1));
            let b = vqmovn_high_s32(vqmovn_s32(r(x.2)), r(x.3));
            let (a, b) = (vqaddq_s16(a, zp), vqaddq_s16(b, zp));
            let q = if SIGNED {
                vreinterpretq_u8_s8(vqmovn_high_s16(vqmovn_s16(a), b))
            } else {
                vqmovun_high_s16(vqmovun_s16(a), b)
            };
            vst1q_u8(dst.add(16 * g), q);
        }
    }
}

/// Every `row_len`-long row of 8-bit data.
#[inline(always)]
fn rows<T: QuantElem, const SIGNED: bool>(
    p: &LogSoftmaxLut,
    input: &[u8],
    output: &mut [u8],
    row_len: usize,
) {
    let mut table = [Chunk([0; CHUNK]); 4];
    let n = input.len().min(output.len());
    for r in 0..n / row_len {
        let at = r * row_len;
        let end = at + span(at, row_len, n);
        let (row_in, row_out) = (&input[at..end], &mut output[at..end]);
        let (max, min) = row_max_min::<SIGNED>(row_in, row_len);
        let reach = max.wrapping_sub(min) as usize;
        let sum = match (reach / CHUNK + 1).min(p.exp_chunks) {
            1 => row_sum::<1, 1>(p, row_in, row_len, max),
            2 => row_sum::<2, 2>(p, row_in, row_len, max),
            3 => row_sum::<3, 3>(p, row_in, row_len, max),
            // Rows of one block have no blocks after their maximum's.
            _ if row_len >= 2 * STEP => row_sum_4(p, row_in, row_len, max),
            _ => row_sum::<4, 4>(p, row_in, row_len, max),
        };
        let max_value = if SIGNED { max as i8 as i32 } else { max as i32 };
        let pre = p.precomputed(max_value, sum);
        let top = (T::MAX - max_value) as usize;
        if reach >= 3 * CHUNK {
            finish_wide::<T, SIGNED>(p, (top, reach, pre), &mut table, row_in, row_out, max);
            continue;
        }
        build_table::<T, SIGNED>(p, top, reach, pre, &mut table);
        match reach / CHUNK + 1 {
            1 => write_row::<1, false>(&table, row_in, row_out, max, 0),
            2 => write_row::<2, false>(&table, row_in, row_out, max, 0),
            3 => write_row::<3, false>(&table, row_in, row_out, max, 0),
            _ => write_row::<4, false>(&table, row_in, row_out, max, 0),
        }
    }
}

/// The output table and the outputs of a row reaching into the last chunk
/// (full-range data): the table built group by group until a group ends
/// at the type's minimum (outputs do not increase with `d`, so every later
/// entry is the minimum too), and the lookups clamped to that group's last
/// entry, through the chunks up to it. Out of line, as [`row_sum_4`].
#[inline(never)]
fn finish_wide<T: QuantElem, const SIGNED: bool>(
    p: &LogSoftmaxLut,
    (top, reach, pre): (usize, usize, f32),
    table: &mut [Chunk; 4],
    row_in: &[u8],
    row_out: &mut [u8],
    max: u8,
) {
    let Some(k) = build_table_to_min::<SIGNED>(p, top, reach, pre, table) else {
        build_table::<T, SIGNED>(p, top, reach, pre, table);
        write_row::<4, false>(table, row_in, row_out, max, 0);
        return;
    };
    // k < 256: the last entry of a group of 16.
    match k / CHUNK + 1 {
        1 => write_row::<1, true>(table, row_in, row_out, max, k as u8),
        2 => write_row::<2, true>(table, row_in, row_out, max, k as u8),
        3 => write_row::<3, true>(table, row_in, row_out, max, k as u8),
        _ => write_row::<4, true>(table, row_in, row_out, max, k as u8),
    }
}

/// [`build_table`]'s vector groups, stopping after the first group whose
/// last entry is the type's minimum; returns that entry's `d`. `None` when
/// no group below `reach / 16` ends at the minimum, or outside the bound
/// of the vector formula (then nothing is known of the table).
#[inline(always)]
fn build_table_to_min<const SIGNED: bool>(
    p: &LogSoftmaxLut,
    top: usize,
    reach: usize,
    pre: f32,
    out: &mut [Chunk; 4],
) -> Option<usize> {
    debug_assert!(top < 256 && top + reach <= 255);
    let sx = |i: usize| p.scaled_x[i];
    let (low, high) = (sx(top + reach) - pre, sx(top) - pre);
    if !(low >= -EXACT_BOUND && high <= EXACT_BOUND) {
        return None;
    }
    let minimum = if SIGNED { i8::MIN as u8 } else { u8::MIN };
    let dst = out.as_mut_ptr().cast::<u8>();
    // SAFETY: as in `build_table` (the same groups, possibly fewer).
    unsafe {
        let prev = vdupq_n_f32(pre);
        let zp = vdupq_n_s16(p.output_zero_point as i16);
        for g in 0..reach / 16 {
            let x = vld1q_f32_x4(p.scaled_x.as_ptr().add(top + 16 * g));
            let r = |v: float32x4_t| vcvtnq_s32_f32(vsubq_f32(v, prev));
            let a = vqmovn_high_s32(vqmovn_s32(r(x.0)), r(x.1));
            let b = vqmovn_high_s32(vqmovn_s32(r(x.2)), r(x.3));
            let (a, b) = (vqaddq_s16(a, zp), vqaddq_s16(b, zp));
            let q = if SIGNED {
                vreinterpretq_u8_s8(vqmovn_high_s16(vqmovn_s16(a), b))
            } else {
                vqmovun_high_s16(vqmovun_s16(a), b)
            };
            vst1q_u8(dst.add(16 * g), q);
            if vgetq_lane_u8::<15>(q) == minimum {
                return Some(16 * g + 15);
            }
        }
    }
    None
}

/// `Method::Lut` log-softmax rows of int8 (named for the asm checks).
#[inline(never)]
pub(crate) fn log_softmax_lut_i8(
    p: &LogSoftmaxLut,
    input: &[u8],
    output: &mut [u8],
    row_len: usize,
) {
    rows::<i8, true>(p, input, output, row_len)
}

/// `Method::Lut` log-softmax rows of uint8.
#[inline(never)]
pub(crate) fn log_softmax_lut_u8(
    p: &LogSoftmaxLut,
    input: &[u8],
    output: &mut [u8],
    row_len: usize,
) {
    rows::<u8, false>(p, input, output, row_len)
}

/// Log-softmax of every `row_len`-long row; lengths were checked by the
/// caller. int16 never reaches here (`new()` rejects it for log-softmax);
/// the scalar reference would handle it.
pub(crate) fn log_softmax<T: QuantElem>(
    p: &LogSoftmaxLut,
    input: &[T],
    output: &mut [T],
    row_len: usize,
) {
    match view(input, output) {
        Slices::I8(i, o) => {
            let (i, o) = (bytemuck::cast_slice(i), bytemuck::cast_slice_mut(o));
            log_softmax_lut_i8(p, i, o, row_len)
        }
        Slices::U8(i, o) => log_softmax_lut_u8(p, i, o, row_len),
        Slices::I16(i, o) => super::lut::log_softmax_scalar(p, i, o, row_len),
    }
}

#[cfg(all(test, feature = "std"))]
mod tests {
    extern crate std;
    use super::*;
    use crate::QuantParams;
    use std::vec::Vec;

    /// The NEON sums of full-range rows reaching into the last chunk
    /// against the reference's sequential `f32` sum, bit for bit: at input
    /// scales where the last chunks stop counting once the sum reaches 1
    /// (`late_chunks < 4`, so the blocks after the maximum's look up fewer
    /// chunks) and where they still count (0.02); rows of 128 to 384
    /// bytes with the maximum first, inside, or last.
    fn sums_of_full_range_rows<T: QuantElem, const SIGNED: bool>() {
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 32) as u8
        };
        let value = |x: u8| if SIGNED { x as i8 as i32 } else { x as i32 };
        let mut skipped = 0;
        for scale in [0.02f32, 0.05, 0.1, 0.3] {
            let p = LogSoftmaxLut::new::<T>(scale, QuantParams::new(16.0 / 256.0, T::MAX));
            for len in [128usize, 200, 384] {
                for at in [0, len / 3, len - 1] {
                    let mut row: Vec<u8> = (0..len).map(|_| next()).collect();
                    // The type's extremes in the row, the maximum at `at`.
                    let (top, bottom) = if SIGNED { (0x7f, 0x80) } else { (0xff, 0) };
                    row[(at + 1) % len] = bottom;
                    row[at] = top;
                    let (max, min) = row_max_min::<SIGNED>(&row, len);
                    assert_eq!((max.wrapping_sub(min) as usize) / CHUNK + 1, 4);
                    let mut want = 0.0f32;
                    for &x in &row {
                        want += p.exp[(value(max) - value(x)) as usize];
                    }
                    let got = row_sum_4(&p, &row, len, max);
                    assert_eq!(
                        got.to_bits(),
                        want.to_bits(),
                        "scale {scale} len {len} max at {at}"
                    );
                    skipped += (p.late_chunks < 4 && at < len - STEP) as usize;
                }
            }
        }
        // 0.05, 0.1 and 0.3 skip, for the rows whose maximum is not in the
        // last block.
        assert!(skipped >= 12, "{skipped} rows skipped chunks");
    }

    /// Full-range rows of 384 through the NEON kernel against the scalar
    /// reference, at scales where the outputs reach the minimum within the
    /// row's reach (the table built only that far, the lookups clamped) and
    /// where they do not (0.01: the whole table); both must occur.
    fn wide_rows<T: QuantElem, const SIGNED: bool>() {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 32) as u8
        };
        let value = |x: u8| if SIGNED { x as i8 as i32 } else { x as i32 };
        let (mut clamped, mut whole) = (0, 0);
        let len = 384;
        for scale in [0.01f32, 0.05, 0.1, 0.3, 2.0] {
            let p = LogSoftmaxLut::new::<T>(scale, QuantParams::new(16.0 / 256.0, T::MAX));
            let input: Vec<u8> = (0..4 * len).map(|_| next()).collect();
            let typed: Vec<T> = input.iter().map(|&x| T::from_i32(value(x))).collect();
            let mut want = std::vec![T::from_i32(0); input.len()];
            super::super::lut::log_softmax_scalar(&p, &typed, &mut want, len);
            let mut got = std::vec![0x5au8; input.len()];
            rows::<T, SIGNED>(&p, &input, &mut got, len);
            let want: Vec<u8> = want.iter().map(|y| y.to_i32() as u8).collect();
            assert_eq!(got, want, "scale {scale}");
            for row in input.chunks(len) {
                let (max, min) = row_max_min::<SIGNED>(row, len);
                let reach = max.wrapping_sub(min) as usize;
                if reach < 3 * CHUNK {
                    continue;
                }
                let mut sum = 0.0f32;
                for &x in row {
                    sum += p.exp[(value(max) - value(x)) as usize];
                }
                let pre = p.precomputed(value(max), sum);
                let top = (T::MAX - value(max)) as usize;
                let mut table = [Chunk([0; CHUNK]); 4];
                match build_table_to_min::<SIGNED>(&p, top, reach, pre, &mut table) {
                    Some(_) => clamped += 1,
                    None => whole += 1,
                }
            }
        }
        assert!(
            clamped > 0 && whole > 0,
            "{clamped} rows clamped, {whole} whole"
        );
    }

    #[test]
    fn int8_lut_full_range_rows_clamped_or_whole() {
        wide_rows::<i8, true>();
    }

    #[test]
    fn uint8_lut_full_range_rows_clamped_or_whole() {
        wide_rows::<u8, false>();
    }

    #[test]
    fn int8_lut_sums_of_full_range_rows_bit_exact() {
        sums_of_full_range_rows::<i8, true>();
    }

    #[test]
    fn uint8_lut_sums_of_full_range_rows_bit_exact() {
        sums_of_full_range_rows::<u8, false>();
    }
}
