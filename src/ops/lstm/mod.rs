//! TFLite's integer LSTM (`UNIDIRECTIONAL_SEQUENCE_LSTM`, the "8x8_16"
//! kernel): int8 input, weights and output state, int16 gates and cell
//! state, gemmlowp's 16-bit sigmoid and tanh. One time step, for each batch
//! row (`lstm_eval`'s `LstmStepInteger8x8_16`):
//!
//! ```text
//! gate_x  = sat16(MBQM(W_x . input + bias'_x) + MBQM(R_x . state + r'_x)
//!                 [+ MBQM(P_x * cell)])                  x = input, forget, cell, output
//!         [layer norm: normalize, * coefficient + bias, rescale]
//! i, f, o = sigmoid(gate)   g = tanh(gate_cell)          Q3.12 in, Q0.15 out
//! cell    = sat16(f * cell >> 15 + i * g >> (30 + cell_scale))   [clip]
//!           (CIFG: i = 32767 - f)
//! hidden  = sat8(MBQM(o * tanh(cell)) + zp)              tanh at 15 + cell_scale bits
//! state   = hidden, or sat8(MBQM(Proj . hidden + proj_bias') + zp) [clip]
//! ```
//!
//! with `MBQM` TFLite's `MultiplyByQuantizedMultiplier` in the chosen
//! [`Rounding`], the effective scales computed at [`Lstm::new`] as TFLite's
//! `Prepare` does (`weight_scale * input_scale / gate_scale`; the gate scale is
//! `2^-12` without layer normalization, the intermediate's with it), and the
//! zero point times each weight row's sum folded into the biases (`bias'`,
//! `r'`; with layer normalization the gate bias moves after the norm).
//!
//! Each backend gives a step its kernels: the gate matrix products (raw
//! int32 sums; NEON `sdot` or widening multiplies in `neon.rs`, plain loops
//! in `scalar.rs`), the requantization into the int16 gates, the 16-bit
//! sigmoid and tanh (one generic source, `fixedpoint::gemmlowp16`, on `i16`
//! or on eight NEON lanes), the cell update and the hidden state. The
//! scalar forms in `params.rs` are the reference; each NEON kernel equals
//! them bit for bit (and runs its tail elements through them); so does
//! the layer normalization's per-value part in either arithmetic (its row
//! statistics are scalar on both). Peephole and the projection's output
//! stage are scalar on both. The products are matrix-vector products (one input row per batch
//! row and step), so they do not go through the packed
//! [`Gemm`](crate::Gemm), whose output stage is int8 where the LSTM needs
//! the raw sums accumulated into int16 gates.

mod kernels;
mod params;
mod scalar;

#[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
mod neon;

#[cfg(test)]
mod tests;

use self::kernels::Kernels;
pub use self::params::LstmLayerNorm;
use self::params::{folded_bias, Gate, LayerNorm, LstmParams, MatVec, Projection};
use crate::backend::Backend;
use crate::checks::{check_length, check_scale, check_zero_point};
use crate::error::{Error, Result};
use crate::quant::{QuantParams, QuantizedMultiplier, Rounding};

const OP: &str = "lstm";

/// The sizes of an LSTM: batch rows, input features, cells, output features
/// (`n_output` = `n_cell` without projection).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LstmShape {
    /// Batch rows per time step.
    pub n_batch: usize,
    /// Input features.
    pub n_input: usize,
    /// Cells (the gates' and the cell state's width).
    pub n_cell: usize,
    /// Output (and output state) features.
    pub n_output: usize,
}

/// One gate's constant tensors, with their scales (symmetric, zero point 0).
#[derive(Clone, Copy, Debug)]
pub struct LstmGateWeights<'a> {
    /// Input-to-gate weights, `n_cell x n_input` int8.
    pub input: &'a [i8],
    /// Their scale.
    pub input_scale: f32,
    /// Recurrent-to-gate weights, `n_cell x n_output` int8.
    pub recurrent: &'a [i8],
    /// Their scale.
    pub recurrent_scale: f32,
    /// Peephole (cell-to-gate) weights, `n_cell` int16, and their scale; never
    /// for the cell gate.
    pub peephole: Option<(&'a [i16], f32)>,
    /// Layer normalization coefficients, `n_cell` int16, and their scale.
    pub layer_norm: Option<(&'a [i16], f32)>,
    /// Gate bias, `n_cell` int32 (units of the input product's scale, or with
    /// layer normalization of the coefficients').
    pub bias: &'a [i32],
}

/// The projection (hidden state to output state).
#[derive(Clone, Copy, Debug)]
pub struct LstmProjection<'a> {
    /// `n_output x n_cell` int8.
    pub weights: &'a [i8],
    /// Their scale.
    pub scale: f32,
    /// `n_output` int32, or `None`.
    pub bias: Option<&'a [i32]>,
}

/// Every constant of an LSTM.
#[derive(Clone, Copy, Debug)]
pub struct LstmWeights<'a> {
    /// `None`: CIFG (coupled input and forget gates, `input = 1 - forget`).
    pub input_gate: Option<LstmGateWeights<'a>>,
    /// Forget gate.
    pub forget_gate: LstmGateWeights<'a>,
    /// Cell (modulation) gate.
    pub cell_gate: LstmGateWeights<'a>,
    /// Output gate.
    pub output_gate: LstmGateWeights<'a>,
    /// Projection, or `None` (`n_output` = `n_cell`).
    pub projection: Option<LstmProjection<'a>>,
}

/// The quantization of an LSTM's variable tensors and intermediates.
#[derive(Clone, Copy, Debug)]
pub struct LstmQuantization {
    /// Input (int8).
    pub input: QuantParams,
    /// Output state and output (int8).
    pub output_state: QuantParams,
    /// Cell state scale (int16, zero point 0): a power of two within TFLite's
    /// `CheckedLog2` (1e-3 in log2), `2^-15` to `2^-9`.
    pub cell_state_scale: f32,
    /// The hidden state (TFLite's intermediate 4): `output_gate *
    /// tanh(cell)` in int8.
    pub hidden: QuantParams,
    /// With layer normalization, the gates' scales before it (TFLite's
    /// intermediates 0 to 3, input, forget, cell, output).
    pub gate_scales: Option<[f32; 4]>,
    /// Cell clip (real units; `<= 0`: none).
    pub cell_clip: f32,
    /// Projection clip (real units; `<= 0`: none).
    pub projection_clip: f32,
}

/// The buffers a step works in (lengths from [`Lstm::scratch_lens`]).
#[derive(Debug)]
pub struct LstmScratch<'a> {
    /// Raw matrix products: `n_batch * max(n_cell, n_output)`.
    pub dots: &'a mut [i32],
    /// The four gates and `tanh(cell)`: `5 * n_batch * n_cell`.
    pub gates: &'a mut [i16],
    /// The hidden state before projection: `n_batch * n_cell` (0 without).
    pub hidden: &'a mut [i8],
}

/// A prepared integer LSTM: TFLite's `UNIDIRECTIONAL_SEQUENCE_LSTM` for int8
/// input with int16 cell state, bit for bit (see the module documentation).
#[derive(Clone, Debug)]
pub struct Lstm {
    params: LstmParams,
    backend: Backend,
}

/// `what` as an `f32` scale check with the LSTM's name.
fn scale(what: &'static str, value: f32) -> Result<f32> {
    check_scale(what, value).map(|_| value)
}

/// `x * y / z` in `f32`, as TFLite's `Prepare` computes an effective scale.
fn effective(x: f32, y: f32, z: f32) -> f32 {
    x * y / z
}

/// `rounding`'s quantized multiplier of a real effective scale.
fn multiplier(rounding: Rounding, real: f32) -> Result<QuantizedMultiplier> {
    rounding.quantize_multiplier(real as f64)
}

/// TFLite's `CheckedLog2` without `ln`: `round(log2(x))` when `x` is within
/// `1e-3` of a power of two in log2, else `None`.
fn checked_log2(x: f32) -> Option<i32> {
    let (m, e) = crate::quant::frexp(x as f64);
    // x = m 2^e with m in [0.5, 1): log2 x = e + log2 m, log2 m in [-1, 0).
    // Within 1e-3 of e - 1 or e: m below 2^(1e-3 - 1) or above 2^-1e-3.
    const LOW: f64 = 0.500_346_667_458_845_3; // 2^(-1 + 1e-3)
    const HIGH: f64 = 0.999_307_293_485_699; // 2^(-1e-3)
    if m < LOW {
        Some(e - 1)
    } else if m > HIGH {
        Some(e)
    } else {
        None
    }
}

impl Lstm {
    /// Validates and prepares: TFLite's `Prepare` of the integer LSTM (its
    /// effective scales, multipliers and folded biases).
    ///
    /// Errors: a zero size ([`Error::ZeroDimension`]); a weight, bias or
    /// coefficient vector of the wrong length ([`Error::Length`]); a scale
    /// not finite and `> 0` ([`Error::Scale`]); an int8 zero point out of
    /// range ([`Error::ZeroPoint`]); a cell state scale that is not a power
    /// of two in `2^-15..=2^-9` ([`Error::OutOfDomain`]); peephole or layer
    /// normalization on some gates only, a peephole on the cell gate, layer
    /// normalization without the gate scales or gate scales without it,
    /// `n_output != n_cell` without projection ([`Error::Unsupported`]).
    pub fn new(
        shape: LstmShape,
        weights: &LstmWeights<'_>,
        quant: &LstmQuantization,
        rounding: Rounding,
    ) -> Result<Lstm> {
        let LstmShape {
            n_batch,
            n_input,
            n_cell,
            n_output,
        } = shape;
        for (v, what) in [
            (n_batch, "n_batch"),
            (n_input, "n_input"),
            (n_cell, "n_cell"),
            (n_output, "n_output"),
        ] {
            if v == 0 {
                return Err(Error::ZeroDimension { op: OP, what });
            }
        }
        let unsupported = |reason: &'static str| Error::Unsupported {
            op: OP,
            dtype: "int8",
            reason,
        };
        if weights.projection.is_none() && n_output != n_cell {
            return Err(unsupported(
                "without projection the output state has n_cell features",
            ));
        }
        let input_scale = scale("lstm input scale", quant.input.scale)?;
        check_zero_point::<i8>("lstm input zero point", quant.input.zero_point)?;
        let state_scale = scale("lstm output state scale", quant.output_state.scale)?;
        check_zero_point::<i8>(
            "lstm output state zero point",
            quant.output_state.zero_point,
        )?;
        let hidden_scale = scale("lstm hidden (intermediate 4) scale", quant.hidden.scale)?;
        check_zero_point::<i8>("lstm hidden zero point", quant.hidden.zero_point)?;
        let cell_state_scale = scale("lstm cell state scale", quant.cell_state_scale)?;
        let cell_scale = match checked_log2(cell_state_scale) {
            Some(l) if (-15..=-9).contains(&l) => l,
            _ => {
                return Err(Error::OutOfDomain {
                    op: OP,
                    what: "cell state scale",
                    value: cell_state_scale as f64,
                    requirement: "a power of two from 2^-15 to 2^-9",
                })
            }
        };

        let gates: [(Option<&LstmGateWeights<'_>>, &'static str); 4] = [
            (weights.input_gate.as_ref(), "input gate"),
            (Some(&weights.forget_gate), "forget gate"),
            (Some(&weights.cell_gate), "cell gate"),
            (Some(&weights.output_gate), "output gate"),
        ];
        let use_layer_norm = weights.forget_gate.layer_norm.is_some();
        let use_peephole = weights.forget_gate.peephole.is_some();
        for (gate, _) in gates.iter() {
            let Some(g) = gate else { continue };
            if g.layer_norm.is_some() != use_layer_norm {
                return Err(unsupported(
                    "layer normalization on some gates only (all or none)",
                ));
            }
        }
        if weights.cell_gate.peephole.is_some() {
            return Err(unsupported("a peephole on the cell gate (TFLite has none)"));
        }
        for (gate, _) in [gates[0], gates[1], gates[3]] {
            let Some(g) = gate else { continue };
            if g.peephole.is_some() != use_peephole {
                return Err(unsupported(
                    "peephole weights on some gates only (all or none)",
                ));
            }
        }
        if use_layer_norm != quant.gate_scales.is_some() {
            return Err(unsupported(
                "gate (intermediate) scales are given exactly with layer normalization",
            ));
        }
        // Q3.12 without layer normalization.
        let gate_scales = quant.gate_scales.unwrap_or([1.0 / 4096.0; 4]);
        for s in gate_scales {
            scale("lstm gate (intermediate) scale", s)?;
        }
        let cell_pot = (cell_scale as f64).exp2_int();

        let prepare_gate = |g: &LstmGateWeights<'_>, index: usize| -> Result<Gate> {
            let gate_scale = gate_scales[index];
            check_length(
                OP,
                "input weights",
                n_cell.checked_mul(n_input),
                g.input.len(),
            )?;
            check_length(
                OP,
                "recurrent weights",
                n_cell.checked_mul(n_output),
                g.recurrent.len(),
            )?;
            check_length(OP, "gate bias", Some(n_cell), g.bias.len())?;
            let w_in = scale("lstm input weight scale", g.input_scale)?;
            let w_rec = scale("lstm recurrent weight scale", g.recurrent_scale)?;
            let input_bias = if use_layer_norm { None } else { Some(g.bias) };
            let input = MatVec::new(
                g.input,
                n_cell,
                n_input,
                folded_bias(g.input, n_cell, n_input, input_bias, quant.input.zero_point),
                multiplier(rounding, effective(w_in, input_scale, gate_scale))?,
            );
            let recurrent = MatVec::new(
                g.recurrent,
                n_cell,
                n_output,
                folded_bias(
                    g.recurrent,
                    n_cell,
                    n_output,
                    None,
                    quant.output_state.zero_point,
                ),
                multiplier(rounding, effective(w_rec, state_scale, gate_scale))?,
            );
            let peephole = match g.peephole {
                Some((w, s)) => {
                    check_length(OP, "peephole weights", Some(n_cell), w.len())?;
                    let s = scale("lstm peephole weight scale", s)?;
                    // pow(2, cell_scale) is a double in the C++.
                    let real = (cell_pot * s as f64 / gate_scale as f64) as f32;
                    Some((w.to_vec(), multiplier(rounding, real)?))
                }
                None => None,
            };
            let layer_norm = match g.layer_norm {
                Some((w, s)) => {
                    check_length(OP, "layer norm coefficients", Some(n_cell), w.len())?;
                    let s = scale("lstm layer norm coefficient scale", s)?;
                    Some(LayerNorm {
                        weights: w.to_vec(),
                        bias: g.bias.to_vec(),
                        multiplier: multiplier(rounding, s)?,
                        variance_guard: ((10000.0 * s) as i32).max(1),
                    })
                }
                None => None,
            };
            Ok(Gate {
                input,
                recurrent,
                peephole,
                layer_norm,
            })
        };
        let input_gate = match &weights.input_gate {
            Some(g) => Some(prepare_gate(g, 0)?),
            None => None,
        };
        let forget_gate = prepare_gate(&weights.forget_gate, 1)?;
        let cell_gate = prepare_gate(&weights.cell_gate, 2)?;
        let output_gate = prepare_gate(&weights.output_gate, 3)?;

        // pow(2, -15) / scale * pow(2, -15) in double, stored as float.
        let hidden_real = (1.0 / 32768.0 / hidden_scale as f64 / 32768.0) as f32;
        let projection = match &weights.projection {
            Some(p) => {
                check_length(
                    OP,
                    "projection weights",
                    n_output.checked_mul(n_cell),
                    p.weights.len(),
                )?;
                if let Some(b) = p.bias {
                    check_length(OP, "projection bias", Some(n_output), b.len())?;
                }
                let w = scale("lstm projection weight scale", p.scale)?;
                let clip = if quant.projection_clip > 0.0 {
                    (quant.projection_clip / state_scale).clamp(-128.0, 127.0) as i8
                } else {
                    0
                };
                Some(Projection {
                    // TFLite folds the hidden zero point itself (not
                    // negated), matching the negated one the hidden state is
                    // written with.
                    matrix: MatVec::new(
                        p.weights,
                        n_output,
                        n_cell,
                        folded_bias(
                            p.weights,
                            n_output,
                            n_cell,
                            p.bias,
                            quant.hidden.zero_point.wrapping_neg(),
                        ),
                        multiplier(rounding, effective(w, hidden_scale, state_scale))?,
                    ),
                    clip,
                })
            }
            None => None,
        };
        let cell_clip = if quant.cell_clip > 0.0 {
            (quant.cell_clip / cell_state_scale).clamp(-32768.0, 32767.0) as i16
        } else {
            0
        };
        Ok(Lstm {
            params: LstmParams {
                n_batch,
                n_input,
                n_cell,
                n_output,
                input_gate,
                forget_gate,
                cell_gate,
                output_gate,
                projection,
                cell_scale,
                cell_clip,
                hidden_multiplier: multiplier(rounding, hidden_real)?,
                hidden_zero_point: quant.hidden.zero_point,
                output_state_zero_point: quant.output_state.zero_point,
                rounding,
                layer_norm: LstmLayerNorm::Portable,
            },
            backend: Backend::best(),
        })
    }

    /// The LSTM with its layer normalization in `arithmetic` (the default
    /// is [`LstmLayerNorm::Portable`]); no effect without layer
    /// normalization.
    pub fn with_layer_norm_arithmetic(mut self, arithmetic: LstmLayerNorm) -> Lstm {
        self.params.layer_norm = arithmetic;
        self
    }

    /// The layer normalization's arithmetic.
    pub fn layer_norm_arithmetic(&self) -> LstmLayerNorm {
        self.params.layer_norm
    }

    /// The shape given to [`new`](Self::new).
    pub fn shape(&self) -> LstmShape {
        LstmShape {
            n_batch: self.params.n_batch,
            n_input: self.params.n_input,
            n_cell: self.params.n_cell,
            n_output: self.params.n_output,
        }
    }

    /// The backend [`step`](Self::step) uses.
    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// Lengths of [`LstmScratch`]'s `(dots, gates, hidden)` for up to
    /// `n_batch` rows per step.
    pub fn scratch_lens(&self) -> (usize, usize, usize) {
        let p = &self.params;
        let hidden = if p.projection.is_some() {
            p.n_batch * p.n_cell
        } else {
            0
        };
        (
            p.n_batch * p.n_cell.max(p.n_output),
            5 * p.n_batch * p.n_cell,
            hidden,
        )
    }

    /// One time step for `rows` batch rows (`1..=n_batch`; `input` is `rows *
    /// n_input`), with the best backend: updates `cell_state` (`rows *
    /// n_cell`) and `output_state` (`rows * n_output`, also the step's
    /// output) in place.
    ///
    /// Errors: a buffer of the wrong length ([`Error::Length`]); `rows` 0
    /// or above `n_batch` ([`Error::Length`] on `input`).
    pub fn step(
        &self,
        input: &[i8],
        output_state: &mut [i8],
        cell_state: &mut [i16],
        scratch: &mut LstmScratch<'_>,
    ) -> Result<()> {
        self.step_with(self.backend, input, output_state, cell_state, scratch)
    }

    /// [`step`](Self::step) with the given backend (an error if not
    /// available here). Every backend gives the same bytes.
    pub fn step_with(
        &self,
        backend: Backend,
        input: &[i8],
        output_state: &mut [i8],
        cell_state: &mut [i16],
        scratch: &mut LstmScratch<'_>,
    ) -> Result<()> {
        let p = &self.params;
        let rows = input.len() / p.n_input;
        if rows == 0 || rows > p.n_batch || rows * p.n_input != input.len() {
            return Err(Error::Length {
                op: OP,
                what: "input (rows of n_input, at most n_batch)",
                expected: p.n_batch * p.n_input,
                got: input.len(),
            });
        }
        check_length(
            OP,
            "output state",
            Some(rows * p.n_output),
            output_state.len(),
        )?;
        check_length(OP, "cell state", Some(rows * p.n_cell), cell_state.len())?;
        let (dots, gates, hidden) = self.scratch_lens();
        if scratch.dots.len() < dots {
            check_length(OP, "dots scratch", Some(dots), scratch.dots.len())?;
        }
        if scratch.gates.len() < gates {
            check_length(OP, "gates scratch", Some(gates), scratch.gates.len())?;
        }
        if scratch.hidden.len() < hidden {
            check_length(OP, "hidden scratch", Some(hidden), scratch.hidden.len())?;
        }
        let kernels = Kernels::for_backend(backend)?;
        self.step_rows(rows, &kernels, input, output_state, cell_state, scratch);
        Ok(())
    }

    /// The step on checked buffers.
    fn step_rows(
        &self,
        rows: usize,
        kernels: &Kernels,
        input: &[i8],
        output_state: &mut [i8],
        cell_state: &mut [i16],
        scratch: &mut LstmScratch<'_>,
    ) {
        let p = &self.params;
        let Kernels {
            mat_vec,
            sigmoid,
            tanh: tanh_q,
            accumulate,
            update_cell,
            hidden: hidden_state,
            layer_norm,
        } = *kernels;
        let len = rows * p.n_cell;
        let (input_gate, rest) = scratch.gates.split_at_mut(len);
        let (forget, rest) = rest.split_at_mut(len);
        let (cell_gate, rest) = rest.split_at_mut(len);
        let (output_gate, rest) = rest.split_at_mut(len);
        let tanh = &mut rest[..len];
        let dots = &mut scratch.dots[..len];
        let gate = |g: &Gate, out: &mut [i16], dots: &mut [i32], cell: &[i16]| {
            out.fill(0);
            mat_vec(&g.input, input, dots);
            accumulate(&g.input, dots, out, p.rounding);
            mat_vec(&g.recurrent, output_state, dots);
            accumulate(&g.recurrent, dots, out, p.rounding);
            g.finish(
                out,
                cell,
                p.n_cell,
                p.n_output,
                p.rounding,
                (p.layer_norm, layer_norm),
            );
        };
        if let Some(g) = &p.input_gate {
            gate(g, input_gate, dots, cell_state);
            sigmoid(input_gate);
        }
        gate(&p.forget_gate, forget, dots, cell_state);
        sigmoid(forget);
        gate(&p.cell_gate, cell_gate, dots, cell_state);
        tanh_q(cell_gate, 3);
        update_cell(p, cell_state, input_gate, forget, cell_gate);
        // The output gate's peephole reads the updated cell state.
        gate(&p.output_gate, output_gate, dots, cell_state);
        sigmoid(output_gate);
        tanh.copy_from_slice(cell_state);
        tanh_q(tanh, (15 + p.cell_scale) as u32);
        match &p.projection {
            None => hidden_state(p, tanh, output_gate, output_state),
            Some(proj) => {
                let hidden = &mut scratch.hidden[..len];
                hidden_state(p, tanh, output_gate, hidden);
                let dots = &mut scratch.dots[..rows * p.n_output];
                mat_vec(&proj.matrix, hidden, dots);
                proj.matrix.requantize_i8(
                    dots,
                    output_state,
                    p.output_state_zero_point,
                    p.rounding,
                );
                if proj.clip > 0 {
                    for v in output_state.iter_mut() {
                        *v = (*v).clamp(-proj.clip, proj.clip);
                    }
                }
            }
        }
    }
}

/// `2^n` for a small integer `n`, exactly, without `std`.
trait Exp2Int {
    fn exp2_int(self) -> f64;
}

impl Exp2Int for f64 {
    fn exp2_int(self) -> f64 {
        let n = self as i32;
        f64::from_bits(((1023 + n) as u64) << 52)
    }
}
