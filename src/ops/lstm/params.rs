//! The prepared integer LSTM and its element-wise arithmetic: what both
//! backends share. The backends differ only in the gate matrix products
//! (`scalar.rs`, `neon.rs`: raw int32 dot products); everything after them
//! (requantization into the int16 gates, layer normalization, the 16-bit
//! sigmoid and tanh, the cell update, the hidden state) is here, once.
//!
//! Formats: gates are int16 read as Q3.12 by the activations (without layer
//! normalization TFLite fixes their scale at `2^-12`; with it, the
//! intermediates' scales apply before the normalization rescales to Q3.12).
//! The activations give Q0.15. The cell state is int16 at scale
//! `2^cell_scale` (`cell_scale` = log2 of its scale, a power of two), so
//! `15 + cell_scale` integer bits.

use crate::fixedpoint::gemmlowp16;
use crate::fixedpoint::Lane;
use crate::quant::{requantize_gemv_ties_upward, QuantizedMultiplier, Rounding};
use alloc::vec::Vec;

pub(crate) use crate::ops::mat_vec::pack_rows;

/// One int8 weight matrix (`rows x cols`) of a gate with the bias TFLite
/// folds into it at prepare: `bias[r] - zero_point * sum_c w[r][c]`
/// (`zero_point` being the zero point of the vector it multiplies), and the
/// multiplier that scales the product into the gate's units.
///
/// The weights are packed for the NEON products ([`pack_rows`], the row
/// layout of `ops/mat_vec/`, rows padded to `stride` bytes).
#[derive(Clone, Debug)]
pub(crate) struct MatVec {
    pub(crate) weights: Vec<i8>,
    pub(crate) rows: usize,
    pub(crate) cols: usize,
    pub(crate) stride: usize,
    pub(crate) effective_bias: Vec<i32>,
    pub(crate) multiplier: QuantizedMultiplier,
}

/// TFLite's layer normalization of one gate (`ApplyLayerNorm`).
#[derive(Clone, Debug)]
pub(crate) struct LayerNorm {
    /// Q-format coefficients of the normalized gate (int16).
    pub(crate) weights: Vec<i16>,
    /// The gate bias, added after the normalization (int32).
    pub(crate) bias: Vec<i32>,
    /// The coefficients' scale, quantized (applied with 12 more shift bits).
    pub(crate) multiplier: QuantizedMultiplier,
    /// The variance used when the computed one is below 1:
    /// `max(1, trunc(10000 * coefficient scale))`.
    pub(crate) variance_guard: i32,
}

/// One gate: the input and recurrent products, the optional peephole
/// (cell-to-gate, a diagonal int16 matrix) and layer normalization.
#[derive(Clone, Debug)]
pub(crate) struct Gate {
    pub(crate) input: MatVec,
    pub(crate) recurrent: MatVec,
    pub(crate) peephole: Option<(Vec<i16>, QuantizedMultiplier)>,
    pub(crate) layer_norm: Option<LayerNorm>,
}

/// The projection of the hidden state to the output state.
#[derive(Clone, Debug)]
pub(crate) struct Projection {
    pub(crate) matrix: MatVec,
    /// `> 0`: the output state is clamped to `[-clip, clip]`.
    pub(crate) clip: i8,
}

/// Everything a step needs, prepared once.
#[derive(Clone, Debug)]
pub(crate) struct LstmParams {
    pub(crate) n_batch: usize,
    pub(crate) n_input: usize,
    pub(crate) n_cell: usize,
    pub(crate) n_output: usize,
    /// `None` with CIFG (the input gate is `1 - forget`).
    pub(crate) input_gate: Option<Gate>,
    pub(crate) forget_gate: Gate,
    pub(crate) cell_gate: Gate,
    pub(crate) output_gate: Gate,
    pub(crate) projection: Option<Projection>,
    /// log2 of the cell state's scale.
    pub(crate) cell_scale: i32,
    /// `> 0`: the cell state is clamped to `[-clip, clip]`.
    pub(crate) cell_clip: i16,
    /// `output_gate * tanh(cell)` (Q0.15 x Q0.15) to the hidden state.
    pub(crate) hidden_multiplier: QuantizedMultiplier,
    pub(crate) hidden_zero_point: i32,
    pub(crate) output_state_zero_point: i32,
    pub(crate) rounding: Rounding,
    /// Which LiteRT build's layer normalization (unused without it).
    pub(crate) layer_norm: LstmLayerNorm,
}

/// `x` saturated to int16.
#[inline(always)]
fn saturate_i16(x: i32) -> i16 {
    x.clamp(i16::MIN as i32, i16::MAX as i32) as i16
}

impl MatVec {
    /// The prepared matrix: `weights` (`rows x cols`) packed as the type
    /// says.
    pub(crate) fn new(
        weights: &[i8],
        rows: usize,
        cols: usize,
        effective_bias: Vec<i32>,
        multiplier: QuantizedMultiplier,
    ) -> MatVec {
        let (weights, stride) = pack_rows(weights, rows, cols);
        MatVec {
            weights,
            rows,
            cols,
            stride,
            effective_bias,
            multiplier,
        }
    }

    /// `gate[b][r] = sat16(gate[b][r] + MBQM(dots[b][r] + bias[r]) + zero_point)`:
    /// TFLite's `MatrixBatchVectorMultiplyAccumulate` with an int16 output,
    /// after the raw products `dots` (`n_batch x rows`).
    pub(crate) fn accumulate_i16(&self, dots: &[i32], gate: &mut [i16], rounding: Rounding) {
        for (row_dots, row_gate) in dots
            .chunks_exact(self.rows)
            .zip(gate.chunks_exact_mut(self.rows))
        {
            for ((g, &d), &bias) in row_gate.iter_mut().zip(row_dots).zip(&self.effective_bias) {
                *g = self.accumulate_one(*g, d, bias, rounding);
            }
        }
    }

    /// One element of [`accumulate_i16`](Self::accumulate_i16) (also the
    /// vector loops' tail).
    #[inline(always)]
    pub(crate) fn accumulate_one(&self, gate: i16, dot: i32, bias: i32, rounding: Rounding) -> i16 {
        let scaled = rounding.multiply(dot.wrapping_add(bias), self.multiplier);
        saturate_i16(scaled.saturating_add(gate as i32))
    }

    /// The int8 form of [`accumulate_i16`](Self::accumulate_i16) onto zeros:
    /// `out = sat8(MBQM(dots + bias) + zero_point)` (the projection).
    pub(crate) fn requantize_i8(
        &self,
        dots: &[i32],
        out: &mut [i8],
        zero_point: i32,
        rounding: Rounding,
    ) {
        for (row_dots, row_out) in dots
            .chunks_exact(self.rows)
            .zip(out.chunks_exact_mut(self.rows))
        {
            for ((o, &d), &bias) in row_out.iter_mut().zip(row_dots).zip(&self.effective_bias) {
                let scaled = rounding.multiply(d.wrapping_add(bias), self.multiplier);
                *o = scaled.saturating_add(zero_point).clamp(-128, 127) as i8;
            }
        }
    }
}

/// TFLite's `GetInvSqrtQuantizedMultiplierExp(x, -1)`: `1 / sqrt(x)` as a
/// quantized multiplier `(multiplier, shift)` (shift positive = left), by
/// five Newton-Raphson steps in gemmlowp's Q3.28. `x <= 1` gives
/// `(i32::MAX, 0)`.
pub(crate) fn inv_sqrt_multiplier(x: i32) -> QuantizedMultiplier {
    if x <= 1 {
        return QuantizedMultiplier {
            multiplier: i32::MAX,
            shift: 0,
        };
    }
    let mut input = x;
    let mut shift: i32 = 11;
    while input >= 1 << 29 {
        input /= 4;
        shift += 1;
    }
    let max_left_shift_bits = (input as u32).leading_zeros() - 1;
    let left_shift_bit_pairs = max_left_shift_bits / 2 - 1;
    shift -= left_shift_bit_pairs as i32;
    input <<= 2 * left_shift_bit_pairs;
    // Q3.28 throughout; a product of two Q3.28 is Q6.25, of three Q9.22.
    let q3 = input >> 1;
    let half_input = q3.rounding_divide_by_pot(1);
    let half_three: i32 = (1 << 28) + (1 << 27);
    let mut y: i32 = 1 << 28;
    for _ in 0..5 {
        let y2 = y.saturating_rounding_doubling_high_mul(y);
        let y3 = y2
            .saturating_rounding_doubling_high_mul(y)
            .saturating_rounding_multiply_by_pot(6);
        let a = half_three.saturating_rounding_doubling_high_mul(y);
        let b = half_input.saturating_rounding_doubling_high_mul(y3);
        y = a.wrapping_sub(b).saturating_rounding_multiply_by_pot(3);
    }
    // sqrt(2) / 2 in Q0.31.
    let mut multiplier = y.saturating_rounding_doubling_high_mul(1_518_500_250);
    if shift < 0 {
        multiplier <<= -shift;
        shift = 0;
    }
    QuantizedMultiplier {
        multiplier,
        shift: -shift,
    }
}

/// Which LiteRT build's layer normalization an [`Lstm`](super::Lstm)
/// reproduces. TFLite's integer LSTM normalizes each gate row (`n_cell`
/// int16 values at the gate's intermediate scale) the same way up to the
/// variance: mean and variance with 10 fractional bits (`mean` is
/// `sum * 1024 / n`, so Q21.10 of the gate units), `1 / stddev` as a
/// quantized multiplier, then per value `r = (1024 v - mean) * inv_stddev`
/// (the normalized value with 10 fractional bits), `r * coefficient + bias`
/// (the coefficients' units times 2^10), divided by 1024, and the
/// coefficients' scale times 2^12 brings it to the Q3.12 gate. The two
/// builds part in how they round that tail:
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum LstmLayerNorm {
    /// TFLite's portable `ApplyLayerNorm` (LiteRT's x86 builds, its
    /// reference kernels): `r * coefficient + bias` in int32 (wrapping),
    /// the division by 1024 rounding half away from zero, both multipliers
    /// in the LSTM's [`Rounding`].
    #[default]
    Portable,
    /// LiteRT's aarch64 build (`NeonApplyLayerNorm`, in its builtin and
    /// reference resolvers alike: the LSTM calls it through
    /// `tensor_utils`): each whole block of 16 values of a row takes
    /// `r * coefficient + bias` in int64, divides by 1024 rounding ties up
    /// (`srshr`), keeps the low 32 bits, and applies both multipliers as
    /// `srshl(sqrdmulh(x << left, multiplier), -right)` (two roundings, the
    /// last one's ties up, whatever the LSTM's `Rounding`); the row's last
    /// `n_cell % 16` values take the portable arithmetic. Its sum of squares
    /// adds each group of four squares in int32 (wrapping) over the whole
    /// blocks of 8.
    Aarch64Neon,
}

impl LstmLayerNorm {
    /// The leading cells of each `n_cell` row that take the NEON blocks'
    /// arithmetic (the rest take the portable one).
    pub(crate) fn block_cells(self, n_cell: usize) -> usize {
        match self {
            LstmLayerNorm::Portable => 0,
            LstmLayerNorm::Aarch64Neon => n_cell / 16 * 16,
        }
    }
}

/// [`LayerNorm::apply`]'s signature (the backends' layer normalization).
pub(crate) type LayerNormKernel = fn(&LayerNorm, &mut [i16], usize, Rounding, LstmLayerNorm);

impl LayerNorm {
    /// Normalizes each batch row of `gate` (`n_cell` long) in place:
    /// TFLite's `ApplyLayerNorm` in the chosen build's arithmetic (see
    /// [`LstmLayerNorm`]).
    pub(crate) fn apply(
        &self,
        gate: &mut [i16],
        n_cell: usize,
        rounding: Rounding,
        arithmetic: LstmLayerNorm,
    ) {
        let blocks = arithmetic.block_cells(n_cell);
        let out_multiplier = self.out_multiplier();
        for row in gate.chunks_exact_mut(n_cell) {
            let (mean, inv_stddev) = self.statistics(row, arithmetic);
            let (head, tail) = row.split_at_mut(blocks);
            for ((g, &w), &b) in head.iter_mut().zip(&self.weights).zip(&self.bias) {
                *g = normalize_neon(*g, w, b, mean, inv_stddev, out_multiplier);
            }
            for ((g, &w), &b) in tail
                .iter_mut()
                .zip(&self.weights[blocks..])
                .zip(&self.bias[blocks..])
            {
                *g = normalize_portable(*g, w, b, mean, inv_stddev, out_multiplier, rounding);
            }
        }
    }

    /// The coefficients' multiplier with 12 more shift bits (to Q3.12).
    pub(crate) fn out_multiplier(&self) -> QuantizedMultiplier {
        QuantizedMultiplier {
            multiplier: self.multiplier.multiplier,
            shift: self.multiplier.shift + 12,
        }
    }

    /// A row's mean (Q21.10 of the gate units) and `1 / stddev` as a
    /// quantized multiplier: the variance is `sum_sq * (2^20 / n) - mean^2`
    /// over 2^20, [`variance_guard`](Self::variance_guard) below 1.
    pub(crate) fn statistics(
        &self,
        row: &[i16],
        arithmetic: LstmLayerNorm,
    ) -> (i32, QuantizedMultiplier) {
        const TWO_TO_20: i64 = 1 << 20;
        let n_cell = row.len();
        let sum: i64 = row.iter().map(|&v| v as i64).sum();
        let exact = |values: &[i16]| values.iter().map(|&v| (v as i64) * (v as i64)).sum();
        let sum_sq: i64 = match arithmetic {
            LstmLayerNorm::Portable => exact(row),
            LstmLayerNorm::Aarch64Neon => {
                // Whole blocks of 8: two int32 lanes' sums of four squares,
                // each wrapping (four squares of -32768 are 2^32).
                let (blocks, tail) = row.split_at(n_cell / 8 * 8);
                let wrapped: i64 = blocks
                    .chunks_exact(4)
                    .map(|four| {
                        four.iter()
                            .fold(0i32, |s, &v| s.wrapping_add(v as i32 * v as i32))
                            as i64
                    })
                    .sum();
                wrapped + exact(tail)
            }
        };
        let mean = (sum * 1024 / n_cell as i64) as i32;
        let per_element = (TWO_TO_20 / n_cell as i64) as i32;
        let variance = sum_sq * per_element as i64 - mean as i64 * mean as i64;
        let mut variance = (variance / TWO_TO_20) as i32;
        if variance < 1 {
            variance = self.variance_guard;
        }
        (mean, inv_sqrt_multiplier(variance))
    }
}

/// One value of [`LstmLayerNorm::Portable`]: `r * w + b` in int32
/// (the C++ forms it there before widening), divided by 1024 rounding half
/// away from zero, the multipliers in `rounding`.
#[inline(always)]
pub(crate) fn normalize_portable(
    v: i16,
    w: i16,
    b: i32,
    mean: i32,
    inv_stddev: QuantizedMultiplier,
    out_multiplier: QuantizedMultiplier,
    rounding: Rounding,
) -> i16 {
    let shifted = (v as i32).wrapping_mul(1024).wrapping_sub(mean);
    let rescaled = rounding.multiply(shifted, inv_stddev);
    let weighted = rescaled.wrapping_mul(w as i32).wrapping_add(b) as i64;
    let rounded = if weighted > 0 {
        (weighted + 512) / 1024
    } else {
        (weighted - 512) / 1024
    } as i32;
    saturate_i16(rounding.multiply(rounded, out_multiplier))
}

/// One value of [`LstmLayerNorm::Aarch64Neon`]'s blocks: `r * w + b` in
/// int64, `(x + 512) >> 10` (ties up) truncated to int32, both multipliers
/// as `srshl(sqrdmulh(x << left, multiplier), -right)` (TFLite's NEON
/// `MultiplyByQuantizedMultiplier4Rows` in a double-rounding build: the
/// last shift's ties go up).
#[inline(always)]
pub(crate) fn normalize_neon(
    v: i16,
    w: i16,
    b: i32,
    mean: i32,
    inv_stddev: QuantizedMultiplier,
    out_multiplier: QuantizedMultiplier,
) -> i16 {
    let multiply =
        |x: i32, q: QuantizedMultiplier| requantize_gemv_ties_upward(x, q.multiplier, q.shift);
    let shifted = (v as i32).wrapping_mul(1024).wrapping_sub(mean);
    let rescaled = multiply(shifted, inv_stddev);
    let weighted = rescaled as i64 * w as i64 + b as i64;
    let rounded = ((weighted + 512) >> 10) as i32;
    saturate_i16(multiply(rounded, out_multiplier))
}

impl Gate {
    /// The peephole term onto the gate (`gate += MBQM(w[c] * cell[c])`,
    /// saturating), then the layer normalization: what follows the two
    /// matrix products of TFLite's `CalculateLstmGateInteger8x8_16`, before
    /// its activation. TFLite passes the peephole `n_output` as its length
    /// (`n_cell` unless projected): it runs over the first
    /// `rows * n_output` values as rows of `n_output`, which is what is
    /// reproduced here (the whole gate without a projection). A projection
    /// wider than the cells would make TFLite read past its cell state;
    /// there the peephole covers the cells, `n_cell` per row.
    pub(crate) fn finish(
        &self,
        gate: &mut [i16],
        cell: &[i16],
        n_cell: usize,
        n_output: usize,
        rounding: Rounding,
        layer_norm: (LstmLayerNorm, LayerNormKernel),
    ) {
        if let Some((weights, multiplier)) = &self.peephole {
            let width = n_output.min(n_cell);
            let len = gate.len() / n_cell * width;
            for (g_row, c_row) in gate[..len]
                .chunks_exact_mut(width)
                .zip(cell[..len].chunks_exact(width))
            {
                for ((g, &c), &w) in g_row.iter_mut().zip(c_row).zip(weights) {
                    let product = rounding.multiply(w as i32 * c as i32, *multiplier);
                    *g = saturate_i16(product.saturating_add(*g as i32));
                }
            }
        }
        if let Some(norm) = &self.layer_norm {
            (layer_norm.1)(norm, gate, n_cell, rounding, layer_norm.0);
        }
    }
}

/// gemmlowp's 16-bit logistic of each Q3.12 value, Q0.15 out.
pub(crate) fn sigmoid_in_place(gate: &mut [i16]) {
    for g in gate {
        *g = gemmlowp16::logistic_q3_12(*g);
    }
}

/// gemmlowp's 16-bit tanh of each value with `int_bits` integer bits
/// (Q3.12 gates: 3), Q0.15 out.
pub(crate) fn tanh_in_place(values: &mut [i16], int_bits: u32) {
    for v in values {
        *v = gemmlowp16::tanh_q(*v, int_bits);
    }
}

/// `x * y / 2^shift` rounded half away from zero, as int16 (the C++ casts,
/// so it wraps): TFLite's `CwiseMul` with a shift.
#[inline(always)]
fn mul_shift(x: i16, y: i16, shift: u32) -> i16 {
    (x as i32 * y as i32).rounding_divide_by_pot(shift) as i16
}

impl LstmParams {
    /// TFLite's `UpdateLstmCellInteger`: `cell = sat16(forget * cell / 2^15 +
    /// input * g / 2^(30 + cell_scale))`, with CIFG's input gate
    /// `32767 - forget`, then the cell clip. `input_gate` is ignored with
    /// CIFG; `forget` is overwritten (TFLite's scratch use, kept here).
    pub(crate) fn update_cell(
        &self,
        cell: &mut [i16],
        input_gate: &[i16],
        forget: &mut [i16],
        cell_gate: &[i16],
    ) {
        let shift = (30 + self.cell_scale) as u32;
        let cifg = self.input_gate.is_none();
        for i in 0..cell.len() {
            let gate_in = if cifg { 0 } else { input_gate[i] };
            (cell[i], forget[i]) =
                self.update_cell_one(cell[i], gate_in, forget[i], cell_gate[i], shift);
        }
    }

    /// One element of [`update_cell`](Self::update_cell): the new cell and
    /// the added term. `input_gate` is ignored with CIFG; `shift` is `30 +
    /// cell_scale`.
    #[inline(always)]
    pub(crate) fn update_cell_one(
        &self,
        cell: i16,
        input_gate: i16,
        forget: i16,
        cell_gate: i16,
        shift: u32,
    ) -> (i16, i16) {
        let kept = mul_shift(forget, cell, 15);
        let gate_in = if self.input_gate.is_none() {
            // Sub1Vector: 32767 - forget (forget is a sigmoid, >= 0).
            (i16::MAX as i32 - forget as i32) as i16
        } else {
            input_gate
        };
        let added = mul_shift(gate_in, cell_gate, shift);
        let mut c = saturate_i16(kept as i32 + added as i32);
        if self.cell_clip > 0 {
            c = c.clamp(-self.cell_clip, self.cell_clip);
        }
        (c, added)
    }

    /// `tanh(cell)` times the output gate, requantized to int8 at the
    /// hidden zero point: into `hidden` (with a projection, whose zero point
    /// TFLite negates there) or the output state. `tanh_cell` is
    /// `tanh(cell)` at the cell state's `15 + cell_scale` integer bits.
    pub(crate) fn hidden(&self, tanh_cell: &[i16], output_gate: &[i16], hidden: &mut [i8]) {
        let zero_point = self.hidden_zero_point();
        for ((h, &o), &t) in hidden.iter_mut().zip(output_gate).zip(tanh_cell) {
            *h = self.hidden_one(o, t, zero_point);
        }
    }

    /// The hidden zero point as [`hidden`](Self::hidden) adds it.
    pub(crate) fn hidden_zero_point(&self) -> i32 {
        if self.projection.is_some() {
            self.hidden_zero_point.wrapping_neg()
        } else {
            self.hidden_zero_point
        }
    }

    /// One element of [`hidden`](Self::hidden).
    #[inline(always)]
    pub(crate) fn hidden_one(&self, output_gate: i16, tanh_cell: i16, zero_point: i32) -> i8 {
        let v = self.rounding.multiply(
            output_gate as i32 * tanh_cell as i32,
            self.hidden_multiplier,
        );
        v.saturating_add(zero_point).clamp(-128, 127) as i8
    }
}

/// `bias - zero_point * row sums of weights` (TFLite's
/// `PrecomputeZeroPointTimesWeightWithBias` with the negated zero point).
pub(crate) fn folded_bias(
    weights: &[i8],
    rows: usize,
    cols: usize,
    bias: Option<&[i32]>,
    zero_point: i32,
) -> Vec<i32> {
    weights
        .chunks_exact(cols)
        .take(rows)
        .enumerate()
        .map(|(r, row)| {
            let sum = row.iter().fold(0i32, |s, &w| s.wrapping_add(w as i32));
            let b = bias.map_or(0, |b| b[r]);
            b.wrapping_add(sum.wrapping_mul(zero_point.wrapping_neg()))
        })
        .collect()
}
