//! The LSTM's NEON kernels. The gate matrix products: four weight rows
//! against one input row per step of 16 depth bytes, with `sdot`
//! (FEAT_DotProd, detected at run time) or widening multiplies (`smull` +
//! `sadalp`), on rows padded to whole blocks at prepare. The int32 sums
//! wrap like the scalar reference's, so every path gives its values
//! exactly. Then the element-wise kernels, each equal to its scalar form in
//! `params.rs`.

use crate::backend::CpuFeatures;
use crate::fixedpoint::gemmlowp16::{logistic_q3_12_lanes, tanh_q_lanes};
use crate::fixedpoint::neon16::map_in_place;
use crate::fixedpoint::Lane;
use crate::ops::lstm::params::{LstmParams, MatVec};
use crate::ops::requant::neon::requantize_single;
use crate::ops::requant::{requantize_lanes, ChannelMultiplier};
use crate::quant::{QuantizedMultiplier, Rounding};
use core::arch::aarch64::*;

use crate::ops::dot_neon::{sdot, widening};

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
    assert!(w.len() >= N * stride && out.len() >= N && xb.len() >= full);
    // SAFETY: the loads read 16 bytes at `c * N + j * 16` of `w`, `j < N`,
    // below `(c + 16) * N <= (full + 16 * has_tail) * N <= stride * N` (the
    // caller's assertion), at `c + 16 <= full <= xb.len()` of `xb`, and all
    // of `tail`; the stores write within `out[..N]` (asserted here).
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
        let mut j = 0;
        while j + 4 <= N {
            let sums = vpaddq_s32(
                vpaddq_s32(acc[j], acc[j + 1]),
                vpaddq_s32(acc[j + 2], acc[j + 3]),
            );
            vst1q_s32(out.as_mut_ptr().add(j), sums);
            j += 4;
        }
        while j < N {
            out[j] = vaddvq_s32(acc[j]);
            j += 1;
        }
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

/// `scalar::mat_vec` on NEON.
pub(crate) fn mat_vec(m: &MatVec, x: &[i8], dots: &mut [i32]) {
    mat_vec_packed(&m.weights, m.rows, m.cols, m.stride, x, dots)
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

/// gemmlowp's 16-bit logistic of each Q3.12 value, eight lanes at a time
/// (the same code as `params::sigmoid_in_place`, over `int16x8_t`).
pub(crate) fn sigmoid_in_place(gate: &mut [i16]) {
    map_in_place(gate, logistic_q3_12_lanes)
}

/// gemmlowp's 16-bit tanh at `int_bits` integer bits, eight lanes at a time.
/// Each width is its own loop, so that its shifts and the barrel
/// shifter's steps are constants.
pub(crate) fn tanh_in_place(values: &mut [i16], int_bits: u32) {
    debug_assert!(int_bits <= 6);
    match int_bits {
        0 => map_in_place(values, |v| tanh_q_lanes(v, 0)),
        1 => map_in_place(values, |v| tanh_q_lanes(v, 1)),
        2 => map_in_place(values, |v| tanh_q_lanes(v, 2)),
        3 => map_in_place(values, |v| tanh_q_lanes(v, 3)),
        4 => map_in_place(values, |v| tanh_q_lanes(v, 4)),
        5 => map_in_place(values, |v| tanh_q_lanes(v, 5)),
        _ => map_in_place(values, |v| tanh_q_lanes(v, 6)),
    }
}

/// `Rounding::multiply` by one multiplier on 4 lanes: the output stage's
/// vector forms (`requant/neon.rs`), each bit-exact with the scalar one.
/// A trait (not a closure behind `dyn`) so that each kernel is compiled
/// once per rounding with the requantization inlined.
trait Requantize {
    fn apply(&self, acc: int32x4_t) -> int32x4_t;
}

/// Single rounding: the multiplier and the negated total shift.
struct SingleRounding {
    multiplier: int32x4_t,
    neg_total_shift: [int64x2_t; 2],
}

impl Requantize for SingleRounding {
    #[inline(always)]
    fn apply(&self, acc: int32x4_t) -> int32x4_t {
        requantize_single(acc, self.multiplier, &self.neg_total_shift)
    }
}

impl Requantize for ChannelMultiplier<int32x4_t> {
    #[inline(always)]
    fn apply(&self, acc: int32x4_t) -> int32x4_t {
        requantize_lanes(acc, self)
    }
}

/// `q` for single rounding's lanes.
#[inline(always)]
fn single_rounding(q: QuantizedMultiplier) -> SingleRounding {
    // SAFETY: register-only NEON (a compile-time target feature here).
    unsafe {
        let total = vdupq_n_s64(-((31 - q.shift.clamp(-31, 30)) as i64));
        SingleRounding {
            multiplier: vdupq_n_s32(q.multiplier),
            neg_total_shift: [total, total],
        }
    }
}

/// `q` for double rounding's lanes (left shift, multiplier, right shift).
#[inline(always)]
fn double_rounding(q: QuantizedMultiplier) -> ChannelMultiplier<int32x4_t> {
    // SAFETY: register-only NEON (a compile-time target feature here).
    unsafe {
        ChannelMultiplier {
            left_shift: vdupq_n_s32(q.shift.max(0)),
            multiplier: vdupq_n_s32(q.multiplier),
            neg_right_shift: vdupq_n_s32(q.shift.min(0)),
        }
    }
}

/// [`MatVec::accumulate_i16`] on NEON: 4 gates at a time (the bias add,
/// the requantization, the saturating add in 32 bits and `sqxtn` equal the
/// scalar `saturate_i16(scaled.saturating_add(gate))`); the row tail in
/// the scalar code.
pub(crate) fn accumulate_i16(m: &MatVec, dots: &[i32], gate: &mut [i16], rounding: Rounding) {
    match rounding {
        Rounding::Single => {
            accumulate_with(m, dots, gate, rounding, &single_rounding(m.multiplier))
        }
        Rounding::Double => {
            accumulate_with(m, dots, gate, rounding, &double_rounding(m.multiplier))
        }
    }
}

/// [`accumulate_i16`] with its rounding's lanes.
#[inline(always)]
fn accumulate_with(
    m: &MatVec,
    dots: &[i32],
    gate: &mut [i16],
    rounding: Rounding,
    requantize: &impl Requantize,
) {
    let rows = m.rows;
    let vec_rows = rows / 4 * 4;
    let bias = &m.effective_bias[..rows];
    for (d_row, g_row) in dots.chunks_exact(rows).zip(gate.chunks_exact_mut(rows)) {
        let mut r = 0;
        while r < vec_rows {
            // SAFETY: `r + 4 <= vec_rows <= rows`, the length of `d_row`,
            // `g_row` and `bias`.
            unsafe {
                let acc = vaddq_s32(
                    vld1q_s32(d_row.as_ptr().add(r)),
                    vld1q_s32(bias.as_ptr().add(r)),
                );
                let g = vmovl_s16(vld1_s16(g_row.as_ptr().add(r)));
                let sum = vqaddq_s32(requantize.apply(acc), g);
                vst1_s16(g_row.as_mut_ptr().add(r), vqmovn_s32(sum));
            }
            r += 4;
        }
        for r in vec_rows..rows {
            g_row[r] = m.accumulate_one(g_row[r], d_row[r], bias[r], rounding);
        }
    }
}

/// [`LstmParams::update_cell`] on NEON, 8 cells at a time: the widening
/// products (`smull`, exact), the 32-bit rounding divide of the
/// fixed-point lanes, the truncating narrow of the C++ `int16_t` cast
/// (`xtn`), `sqadd` for the saturating sum, `smin`/`smax` for the clip.
pub(crate) fn update_cell(
    p: &LstmParams,
    cell: &mut [i16],
    input_gate: &[i16],
    forget: &mut [i16],
    cell_gate: &[i16],
) {
    let shift = (30 + p.cell_scale) as u32;
    let cifg = p.input_gate.is_none();
    let n = cell.len();
    let vec_n = n / 8 * 8;
    let (input_gate, cell_gate, forget) = (&input_gate[..n], &cell_gate[..n], &mut forget[..n]);
    /// `rounding_divide_by_pot(x * y, shift) as i16` on 4 lanes.
    #[inline(always)]
    fn mul_shift(x: int16x4_t, y: int16x4_t, shift: u32) -> int16x4_t {
        // SAFETY: register-only NEON (a compile-time target feature here).
        unsafe { vmovn_s32(vmull_s16(x, y).rounding_divide_by_pot(shift)) }
    }
    let mut i = 0;
    while i < vec_n {
        // SAFETY: `i + 8 <= vec_n <= n`, the length of every slice here.
        unsafe {
            let f = vld1q_s16(forget.as_ptr().add(i));
            let c = vld1q_s16(cell.as_ptr().add(i));
            let g = vld1q_s16(cell_gate.as_ptr().add(i));
            let gate_in = if cifg {
                vsubq_s16(vdupq_n_s16(i16::MAX), f)
            } else {
                vld1q_s16(input_gate.as_ptr().add(i))
            };
            let kept = vcombine_s16(
                mul_shift(vget_low_s16(f), vget_low_s16(c), 15),
                mul_shift(vget_high_s16(f), vget_high_s16(c), 15),
            );
            let added = vcombine_s16(
                mul_shift(vget_low_s16(gate_in), vget_low_s16(g), shift),
                mul_shift(vget_high_s16(gate_in), vget_high_s16(g), shift),
            );
            let mut new = vqaddq_s16(kept, added);
            if p.cell_clip > 0 {
                new = vmaxq_s16(
                    vminq_s16(new, vdupq_n_s16(p.cell_clip)),
                    vdupq_n_s16(-p.cell_clip),
                );
            }
            vst1q_s16(forget.as_mut_ptr().add(i), added);
            vst1q_s16(cell.as_mut_ptr().add(i), new);
        }
        i += 8;
    }
    for i in vec_n..n {
        let gate_in = if cifg { 0 } else { input_gate[i] };
        (cell[i], forget[i]) = p.update_cell_one(cell[i], gate_in, forget[i], cell_gate[i], shift);
    }
}

/// [`LstmParams::hidden`] on NEON, 8 cells at a time: `smull` (exact), the
/// requantization, `sqadd` of the zero point, and the two saturating
/// narrows (`sqxtn` to int16, to int8), which are the scalar clamp.
pub(crate) fn hidden(p: &LstmParams, tanh_cell: &[i16], output_gate: &[i16], hidden: &mut [i8]) {
    match p.rounding {
        Rounding::Single => hidden_with(
            p,
            tanh_cell,
            output_gate,
            hidden,
            &single_rounding(p.hidden_multiplier),
        ),
        Rounding::Double => hidden_with(
            p,
            tanh_cell,
            output_gate,
            hidden,
            &double_rounding(p.hidden_multiplier),
        ),
    }
}

/// [`hidden`] with its rounding's lanes.
#[inline(always)]
fn hidden_with(
    p: &LstmParams,
    tanh_cell: &[i16],
    output_gate: &[i16],
    hidden: &mut [i8],
    requantize: &impl Requantize,
) {
    let n = hidden.len();
    let vec_n = n / 8 * 8;
    let (tanh_cell, output_gate) = (&tanh_cell[..n], &output_gate[..n]);
    let zero_point = p.hidden_zero_point();
    let mut i = 0;
    while i < vec_n {
        // SAFETY: `i + 8 <= vec_n <= n`, the length of every slice here.
        unsafe {
            let o = vld1q_s16(output_gate.as_ptr().add(i));
            let t = vld1q_s16(tanh_cell.as_ptr().add(i));
            let zp = vdupq_n_s32(zero_point);
            let lo = vqaddq_s32(
                requantize.apply(vmull_s16(vget_low_s16(o), vget_low_s16(t))),
                zp,
            );
            let hi = vqaddq_s32(requantize.apply(vmull_high_s16(o, t)), zp);
            let narrow = vqmovn_s16(vqmovn_high_s32(vqmovn_s32(lo), hi));
            vst1_s8(hidden.as_mut_ptr().add(i), narrow);
        }
        i += 8;
    }
    for i in vec_n..n {
        hidden[i] = p.hidden_one(output_gate[i], tanh_cell[i], zero_point);
    }
}
