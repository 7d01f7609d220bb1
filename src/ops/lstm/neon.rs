//! The LSTM's NEON kernels. The gate matrix products are the packed
//! mat-vec of `ops/mat_vec/` (eight weight rows against one input row per
//! step of 16 depth bytes, `sdot` or widening multiplies). Then the
//! element-wise kernels, each equal to its scalar form in `params.rs`.

use crate::fixedpoint::gemmlowp16::{logistic_q3_12_lanes, tanh_q_lanes};
use crate::fixedpoint::neon16::map_in_place;
use crate::fixedpoint::Lane;
use crate::ops::lstm::params::{normalize_portable, LayerNorm, LstmLayerNorm, LstmParams, MatVec};
use crate::ops::requant::neon::{requantize_gemv_ties_upward, requantize_single};
use crate::ops::requant::{requantize_lanes, ChannelMultiplier};
use crate::quant::{QuantizedMultiplier, Rounding};
use core::arch::aarch64::*;

pub(crate) use crate::ops::mat_vec::neon::mat_vec_packed;
#[cfg(test)]
pub(crate) use crate::ops::mat_vec::neon::mat_vec_widening;

/// `scalar::mat_vec` on NEON.
pub(crate) fn mat_vec(m: &MatVec, x: &[i8], dots: &mut [i32]) {
    mat_vec_packed(&m.weights, m.rows, m.cols, m.stride, x, dots)
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

/// [`LayerNorm::apply`] on NEON: each row's mean and `1 / stddev` from the
/// scalar code (a reduction per row), then 4 values at a time in the chosen
/// arithmetic, each equal to its scalar form (`normalize_neon` over the
/// blocks of 16, `normalize_portable` after them); the row's last values
/// past a multiple of 4 in the scalar code.
pub(crate) fn layer_norm(
    norm: &LayerNorm,
    gate: &mut [i16],
    n_cell: usize,
    rounding: Rounding,
    arithmetic: LstmLayerNorm,
) {
    let blocks = arithmetic.block_cells(n_cell);
    let out_multiplier = norm.out_multiplier();
    let (weights, bias) = (&norm.weights[..n_cell], &norm.bias[..n_cell]);
    for row in gate.chunks_exact_mut(n_cell) {
        let (mean, inv_stddev) = norm.statistics(row, arithmetic);
        let (head, tail) = row.split_at_mut(blocks);
        normalize_blocks(
            head,
            &weights[..blocks],
            &bias[..blocks],
            mean,
            (inv_stddev, out_multiplier),
        );
        let (tail_weights, tail_bias) = (&weights[blocks..], &bias[blocks..]);
        let scalar = |g: i16, w: i16, b: i32| {
            normalize_portable(g, w, b, mean, inv_stddev, out_multiplier, rounding)
        };
        match rounding {
            Rounding::Single => normalize_portable_lanes(
                tail,
                tail_weights,
                tail_bias,
                mean,
                (
                    &single_rounding(inv_stddev),
                    &single_rounding(out_multiplier),
                ),
                scalar,
            ),
            Rounding::Double => normalize_portable_lanes(
                tail,
                tail_weights,
                tail_bias,
                mean,
                (
                    &double_rounding(inv_stddev),
                    &double_rounding(out_multiplier),
                ),
                scalar,
            ),
        }
    }
}

/// `q` for the ties-up lanes (`srshl(sqrdmulh(x << left, m), -right)`).
#[inline(always)]
fn ties_upward(q: QuantizedMultiplier) -> ChannelMultiplier<int32x4_t> {
    let shift = q.shift.clamp(-31, 30);
    // SAFETY: register-only NEON (a compile-time target feature here).
    unsafe {
        ChannelMultiplier {
            left_shift: vdupq_n_s32(shift.max(0)),
            multiplier: vdupq_n_s32(q.multiplier),
            neg_right_shift: vdupq_n_s32(shift.min(0)),
        }
    }
}

/// [`normalize_neon`](crate::ops::lstm::params::normalize_neon) on 4 lanes at a time over whole blocks (`row.len()` a
/// multiple of 16): `(1024 v - mean)` through the ties-up multiply, `r * w +
/// b` widened to int64 (`smlal`), `srshr #10` and `xtn` (the truncation),
/// the ties-up multiply by the coefficients' scale, `sqxtn` to int16.
/// `multipliers` is `(1 / stddev, coefficient scale * 2^12)`.
fn normalize_blocks(
    row: &mut [i16],
    weights: &[i16],
    bias: &[i32],
    mean: i32,
    multipliers: (QuantizedMultiplier, QuantizedMultiplier),
) {
    let n = row.len();
    debug_assert!(n.is_multiple_of(16) && weights.len() == n && bias.len() == n);
    let inv = ties_upward(multipliers.0);
    let out = ties_upward(multipliers.1);
    let mut i = 0;
    while i < n {
        // SAFETY: `i + 4 <= n`, the length of `row`, `weights` and `bias`.
        unsafe {
            let v = vmovl_s16(vld1_s16(row.as_ptr().add(i)));
            let shifted = vsubq_s32(vshlq_n_s32::<10>(v), vdupq_n_s32(mean));
            let r = requantize_gemv_ties_upward(shifted, &inv);
            let w = vmovl_s16(vld1_s16(weights.as_ptr().add(i)));
            let b = vld1q_s32(bias.as_ptr().add(i));
            let lo = vmlal_s32(vmovl_s32(vget_low_s32(b)), vget_low_s32(r), vget_low_s32(w));
            let hi = vmlal_high_s32(vmovl_high_s32(b), r, w);
            let rounded = vcombine_s32(
                vmovn_s64(vrshrq_n_s64::<10>(lo)),
                vmovn_s64(vrshrq_n_s64::<10>(hi)),
            );
            let normalized = requantize_gemv_ties_upward(rounded, &out);
            vst1_s16(row.as_mut_ptr().add(i), vqmovn_s32(normalized));
        }
        i += 4;
    }
}

/// [`normalize_portable`] on 4 lanes at a time: the multiplies in the
/// LSTM's rounding (`requantize`: `1 / stddev`, then the coefficients'
/// scale), `r * w + b` wrapping in int32 (`mla`), the division by 1024 as
/// `rounding_divide_by_pot` (ties away from zero, as the C++'s `+- 512`
/// then truncating division), `sqxtn` to int16; the last `len % 4` values
/// through `scalar`.
#[inline(always)]
fn normalize_portable_lanes(
    row: &mut [i16],
    weights: &[i16],
    bias: &[i32],
    mean: i32,
    requantize: (&impl Requantize, &impl Requantize),
    scalar: impl Fn(i16, i16, i32) -> i16,
) {
    let n = row.len();
    let (weights, bias) = (&weights[..n], &bias[..n]);
    let vec_n = n / 4 * 4;
    let mut i = 0;
    while i < vec_n {
        // SAFETY: `i + 4 <= vec_n <= n`, the length of every slice here.
        unsafe {
            let v = vmovl_s16(vld1_s16(row.as_ptr().add(i)));
            let shifted = vsubq_s32(vshlq_n_s32::<10>(v), vdupq_n_s32(mean));
            let r = requantize.0.apply(shifted);
            let w = vmovl_s16(vld1_s16(weights.as_ptr().add(i)));
            let weighted = vmlaq_s32(vld1q_s32(bias.as_ptr().add(i)), r, w);
            let normalized = requantize.1.apply(weighted.rounding_divide_by_pot(10));
            vst1_s16(row.as_mut_ptr().add(i), vqmovn_s32(normalized));
        }
        i += 4;
    }
    for i in vec_n..n {
        row[i] = scalar(row[i], weights[i], bias[i]);
    }
}
