//! UNIDIRECTIONAL_SEQUENCE_LSTM, integer (int8 input, weights and output
//! state, int16 cell state): TFLite's `Prepare` checks, then the library's
//! [`qneon::Lstm`] once per time step. The output state (input 18) and the
//! cell state (input 19) are variable tensors: the session keeps them between
//! invokes and the kernel updates them in place ([`Io::state`]), as TFLite's
//! interpreter does; `reset_variables` zeroes them.
//!
//! The XNNPACK delegate does not take the op: under `--kernels xnnpack` it
//! runs the builtin kernel. TFLite's reference and optimized builtin kernels
//! share the integer LSTM's arithmetic (`lstm_eval`) except for layer
//! normalization, which `lstm_eval` takes from the build's `tensor_utils`:
//! LiteRT's aarch64 build normalizes in NEON with other rounding than the
//! portable code of its x86 build. Each kernel set follows the LiteRT build
//! its other ops follow ([`layer_norm_arithmetic`]).

use std::ops::Range;

use qneon::{
    Backend, Lstm, LstmGateWeights, LstmLayerNorm, LstmProjection, LstmQuantization, LstmScratch,
    LstmShape, LstmWeights,
};
use qneon_tflite::schema::BuiltinOptions;
use qneon_tflite::{BuiltinOp, Options as OpOptions, Tensor, TensorType};

use super::buffers::{view, view_mut, Io};
use super::kernel::{Kernel, PreparedOp, Registration};
use super::op::Op;
use crate::error::Result;
use crate::interp::options::{Options, Rounding, TfliteKernels};

/// The ops this family prepares.
pub(crate) const OPS: &[Registration] = &[Registration::new(
    BuiltinOp::UNIDIRECTIONAL_SEQUENCE_LSTM,
    "UNIDIRECTIONAL_SEQUENCE_LSTM",
    prepare,
)
.left_by_xnnpack()
.arithmetic(describe)];

/// TFLite's input positions.
const INPUT: usize = 0;
/// Input-to-gate weights of the input, forget, cell and output gates.
const INPUT_WEIGHTS: [usize; 4] = [1, 2, 3, 4];
/// Recurrent-to-gate weights, same order.
const RECURRENT_WEIGHTS: [usize; 4] = [5, 6, 7, 8];
/// Cell-to-gate (peephole) weights of the input, forget and output gates.
const PEEPHOLE: [usize; 3] = [9, 10, 11];
/// Gate biases, gate order.
const BIAS: [usize; 4] = [12, 13, 14, 15];
const PROJECTION_WEIGHTS: usize = 16;
const PROJECTION_BIAS: usize = 17;
const OUTPUT_STATE: usize = 18;
const CELL_STATE: usize = 19;
/// Layer normalization coefficients, gate order (24-input form only).
const LAYER_NORM: [usize; 4] = [20, 21, 22, 23];
const GATE_NAMES: [&str; 4] = ["input", "forget", "cell", "output"];

fn describe(options: &Options, _: BuiltinOp) -> String {
    format!(
        "integer LSTM (int16 gates and cell, gemmlowp 16-bit sigmoid / tanh), multipliers in \
         {} rounding, layer normalization as {}",
        lite_rt_rounding(options.rounding).name(),
        match layer_norm_arithmetic(options.kernels) {
            LstmLayerNorm::Portable => "TFLite's portable code (LiteRT x86)",
            LstmLayerNorm::Aarch64Neon => "LiteRT's aarch64 NEON code",
        }
    )
}

/// The rounding of the LSTM's `MultiplyByQuantizedMultiplier`: TFLite's
/// integer LSTM calls the build's common one (not a kernel-specific
/// requantization), which LiteRT 2.3 builds with gemmlowp's double rounding
/// (as measured on BATCH_MATMUL, which calls the same function), whatever
/// the options' rounding of FULLY_CONNECTED says.
fn lite_rt_rounding(_options: Rounding) -> Rounding {
    Rounding::Double
}

/// The layer normalization of `kernels`: the reference kernels reproduce
/// `litert_ref` (x86, the portable code), the optimized kernels LiteRT's
/// aarch64 builtin build, and XNNPACK (which leaves the LSTM to the builtin
/// kernels, so it prepares as [`TfliteKernels::Optimized`]) its aarch64
/// build too.
fn layer_norm_arithmetic(kernels: TfliteKernels) -> LstmLayerNorm {
    match kernels {
        TfliteKernels::Reference => LstmLayerNorm::Portable,
        TfliteKernels::Optimized | TfliteKernels::Xnnpack => LstmLayerNorm::Aarch64Neon,
    }
}

/// A prepared LSTM over a sequence.
#[derive(Debug)]
struct SequenceLstm {
    lstm: Box<Lstm>,
    shape: LstmShape,
    max_time: usize,
    time_major: bool,
    /// Element counts of the scratch's three parts.
    scratch_lens: (usize, usize, usize),
}

impl Kernel for SequenceLstm {
    fn run_tiles(
        &self,
        backend: Backend,
        tiles: Range<usize>,
        io: &mut Io<'_>,
    ) -> Result<(), String> {
        if tiles.is_empty() {
            return Ok(());
        }
        let LstmShape {
            n_batch,
            n_input,
            n_cell,
            n_output,
        } = self.shape;
        let input: &[i8] = view(io.ins[INPUT])?;
        let [output] = &mut io.outs[..] else {
            return Err("one output expected".to_string());
        };
        let output: &mut [i8] = view_mut(output)?;
        let [output_state, cell_state] = &mut io.state[..] else {
            return Err("the output and cell states expected".to_string());
        };
        let output_state: &mut [i8] = view_mut(output_state)?;
        let cell_state: &mut [i16] = view_mut(cell_state)?;
        let (dots_len, gates_len, hidden_len) = self.scratch_lens;
        let (dots, rest) = io
            .scratch
            .split_at_mut_checked(dots_len * 4)
            .ok_or("scratch too small")?;
        let (gates, hidden) = rest
            .split_at_mut_checked(gates_len * 2)
            .ok_or("scratch too small")?;
        let mut scratch = LstmScratch {
            dots: view_mut(dots)?,
            gates: view_mut(gates)?,
            hidden: view_mut(hidden.get_mut(..hidden_len).ok_or("scratch too small")?)?,
        };
        let steps = self.max_time * n_batch;
        if input.len() != steps * n_input
            || output.len() != steps * n_output
            || output_state.len() != n_batch * n_output
            || cell_state.len() != n_batch * n_cell
        {
            return Err(format!(
                "buffers of {}, {}, {} and {} elements for {} steps of {n_batch} x {n_input} \
                 into {n_output} with {n_cell} cells",
                input.len(),
                output.len(),
                output_state.len(),
                cell_state.len(),
                self.max_time
            ));
        }
        let err = |e: qneon::Error| e.to_string();
        if self.time_major {
            // All batch rows per step: [time, batch, features].
            for t in 0..self.max_time {
                let x = &input[t * n_batch * n_input..(t + 1) * n_batch * n_input];
                self.lstm
                    .step_with(backend, x, output_state, cell_state, &mut scratch)
                    .map_err(err)?;
                output[t * n_batch * n_output..(t + 1) * n_batch * n_output]
                    .copy_from_slice(output_state);
            }
        } else {
            // Row by row, TFLite's order: [batch, time, features].
            for b in 0..n_batch {
                let h = &mut output_state[b * n_output..(b + 1) * n_output];
                let c = &mut cell_state[b * n_cell..(b + 1) * n_cell];
                for t in 0..self.max_time {
                    let at = b * self.max_time + t;
                    let x = &input[at * n_input..(at + 1) * n_input];
                    self.lstm
                        .step_with(backend, x, h, c, &mut scratch)
                        .map_err(err)?;
                    output[at * n_output..(at + 1) * n_output].copy_from_slice(h);
                }
            }
        }
        Ok(())
    }
}

/// The op's options: (cell clip, projection clip, time major).
fn lstm_options(op: &Op<'_, '_>) -> Result<(f32, f32, bool)> {
    match op.operator.options() {
        OpOptions::Builtin(BuiltinOptions::UnidirectionalSequenceLstmOptions(o)) => {
            if o.diagonal_recurrent_tensors {
                return Err(op.unsupported("diagonal recurrent weights"));
            }
            if o.asymmetric_quantize_inputs {
                return Err(op.unsupported("asymmetric_quantize_inputs (the hybrid kernel)"));
            }
            Ok((o.cell_clip, o.proj_clip, o.time_major))
        }
        _ => Err(op.invalid("UnidirectionalSequenceLSTMOptions are missing")),
    }
}

/// A constant tensor's values of type `T` with its per-tensor scale.
fn constant<'t, T: qneon_tflite::Element>(
    op: &Op<'_, '_>,
    t: &Tensor<'t>,
    what: &str,
    dtype: TensorType,
    shape: &[usize],
) -> Result<(Vec<T>, f32)> {
    if t.dtype() != dtype {
        return Err(op.unsupported(format!(
            "{what} (tensor {}) is {:?}; the integer LSTM takes {dtype:?}",
            t.name(),
            t.dtype()
        )));
    }
    if t.shape() != shape {
        return Err(op.invalid(format!(
            "{what} (tensor {}) has shape {:?}, expected {shape:?}",
            t.name(),
            t.shape()
        )));
    }
    if !t.is_constant() {
        return Err(op.unsupported(format!("{what} (tensor {}) is not constant", t.name())));
    }
    let scale = match t.quantization().and_then(|q| q.per_tensor()) {
        Some((s, _)) => s,
        // int32 biases may come without quantization; TFLite ignores their scale.
        None if dtype == TensorType::Int32 => 1.0,
        None => {
            return Err(op.invalid(format!(
                "{what} (tensor {}) is not quantized per tensor",
                t.name()
            )))
        }
    };
    let values = t
        .constant_values::<T>()
        .map_err(|e| op.invalid(format!("{what}: {e}")))?
        .ok_or_else(|| op.invalid(format!("{what} (tensor {}) has no data", t.name())))?;
    Ok((values.to_vec(), scale))
}

/// A variable state tensor's quantization, after its checks.
fn state(
    op: &Op<'_, '_>,
    index: usize,
    what: &str,
    dtype: TensorType,
    elements: usize,
) -> Result<qneon::QuantParams> {
    let t = op.input(index)?;
    if !t.is_variable() {
        return Err(op.invalid(format!(
            "{what} (tensor {}) is not a variable tensor",
            t.name()
        )));
    }
    if t.dtype() != dtype {
        return Err(op.unsupported(format!(
            "{what} (tensor {}) is {:?}; the integer LSTM takes {dtype:?}",
            t.name(),
            t.dtype()
        )));
    }
    if t.element_count() != elements {
        return Err(op.invalid(format!(
            "{what} (tensor {}) has shape {:?}, expected {elements} elements",
            t.name(),
            t.shape()
        )));
    }
    op.per_tensor(t, what)
}

/// TFLite's `Prepare` of the integer UNIDIRECTIONAL_SEQUENCE_LSTM
/// (`CheckInputTensorDimensions`, the all-or-none rules of CIFG, peephole
/// and layer normalization, `PopulateQuantizedLstmParams8x8_16`'s
/// intermediates); the library checks the scales.
fn prepare(op: &Op<'_, '_>) -> Result<PreparedOp> {
    let inputs = op.operator.inputs().len();
    if inputs != 20 && inputs != 24 {
        return Err(op.invalid(format!("has {inputs} inputs, expected 20 or 24")));
    }
    op.output_count(1)?;
    let (cell_clip, proj_clip, time_major) = lstm_options(op)?;
    if cell_clip < 0.0 || proj_clip < 0.0 {
        return Err(op.invalid(format!(
            "cell clip {cell_clip} and projection clip {proj_clip} must be >= 0"
        )));
    }
    let input = op.input(INPUT)?;
    let output = op.output(0)?;
    if input.dtype() != TensorType::Int8 || output.dtype() != TensorType::Int8 {
        return Err(op.unsupported(format!(
            "{}: only the integer LSTM (int8 input and output, int16 cell state) runs",
            op.signature()
        )));
    }
    let (max_time, n_batch, n_input) = match input.shape() {
        &[t, b, i] if time_major => (t, b, i),
        &[b, t, i] => (t, b, i),
        s => {
            return Err(op.invalid(format!(
                "input (tensor {}) has shape {s:?}, expected rank 3",
                input.name()
            )))
        }
    };
    let forget_in = op.input(INPUT_WEIGHTS[1])?;
    let (n_cell, recurrent_out) = (
        forget_in.shape().first().copied().unwrap_or(0),
        op.input(RECURRENT_WEIGHTS[1])?
            .shape()
            .get(1)
            .copied()
            .unwrap_or(0),
    );
    let n_output = recurrent_out;
    if [max_time, n_batch, n_input, n_cell, n_output].contains(&0) {
        return Err(op.invalid(format!(
            "a zero size: {max_time} steps, batch {n_batch}, {n_input} inputs, {n_cell} cells, \
             {n_output} outputs"
        )));
    }
    let present = |i: usize| i < inputs && op.optional_input(i).is_some();
    let cifg = !present(INPUT_WEIGHTS[0]);
    if present(RECURRENT_WEIGHTS[0]) == cifg {
        return Err(op.invalid(
            "input-to-input and recurrent-to-input weights must be both present or both \
             absent (CIFG)",
        ));
    }
    if cifg && present(BIAS[0]) {
        return Err(op.invalid("input gate bias given with CIFG (no input gate)"));
    }
    let peephole = present(PEEPHOLE[2]);
    if present(PEEPHOLE[1]) != peephole || (!cifg && present(PEEPHOLE[0]) != peephole) {
        return Err(op.invalid("peephole (cell-to-gate) weights must be all present or all absent"));
    }
    if cifg && present(PEEPHOLE[0]) {
        return Err(op.invalid("cell-to-input weights given with CIFG (no input gate)"));
    }
    let layer_norm = inputs == 24 && present(LAYER_NORM[1]);
    if inputs == 24 {
        for (g, &i) in LAYER_NORM.iter().enumerate() {
            let expected = layer_norm && !(g == 0 && cifg);
            if present(i) != expected {
                return Err(op.invalid(format!(
                    "{} layer norm coefficients (input {i}) {}: layer normalization takes \
                     every gate's (the input gate's only without CIFG)",
                    GATE_NAMES[g],
                    if expected { "missing" } else { "unexpected" }
                )));
            }
        }
    }
    let projection = present(PROJECTION_WEIGHTS);
    if !projection && present(PROJECTION_BIAS) {
        return Err(op.invalid("projection bias without projection weights"));
    }
    if !projection && n_output != n_cell {
        return Err(op.invalid(format!(
            "without projection the output has the cells' size: {n_output} outputs, {n_cell} \
             cells"
        )));
    }
    let expect_out: Vec<usize> = if time_major {
        vec![max_time, n_batch, n_output]
    } else {
        vec![n_batch, max_time, n_output]
    };
    if output.shape() != expect_out {
        return Err(op.invalid(format!(
            "output (tensor {}) has shape {:?}, expected {expect_out:?}",
            output.name(),
            output.shape()
        )));
    }

    // The constants, owned for the library's prepare.
    let i8w = |i: usize, what: String, shape: &[usize]| -> Result<(Vec<i8>, f32)> {
        constant::<i8>(op, op.input(i)?, &what, TensorType::Int8, shape)
    };
    let mut gates = Vec::new();
    for g in 0..4 {
        if g == 0 && cifg {
            gates.push(None);
            continue;
        }
        let name = GATE_NAMES[g];
        let w_in = i8w(
            INPUT_WEIGHTS[g],
            format!("input-to-{name} weights"),
            &[n_cell, n_input],
        )?;
        let w_rec = i8w(
            RECURRENT_WEIGHTS[g],
            format!("recurrent-to-{name} weights"),
            &[n_cell, n_output],
        )?;
        let peep = match g {
            2 => None,
            _ if peephole => {
                // Slots 9, 10, 11: the input, forget and output gates' (none for the cell gate).
                let i = PEEPHOLE[if g == 3 { 2 } else { g }];
                let what = format!("cell-to-{name} weights");
                Some(constant::<i16>(
                    op,
                    op.input(i)?,
                    &what,
                    TensorType::Int16,
                    &[n_cell],
                )?)
            }
            _ => None,
        };
        let ln = if layer_norm {
            let what = format!("{name} layer norm coefficients");
            Some(constant::<i16>(
                op,
                op.input(LAYER_NORM[g])?,
                &what,
                TensorType::Int16,
                &[n_cell],
            )?)
        } else {
            None
        };
        let bias = constant::<i32>(
            op,
            op.input(BIAS[g])?,
            &format!("{name} gate bias"),
            TensorType::Int32,
            &[n_cell],
        )?;
        gates.push(Some((w_in, w_rec, peep, ln, bias.0)));
    }
    let proj = if projection {
        let w = i8w(
            PROJECTION_WEIGHTS,
            "projection weights".into(),
            &[n_output, n_cell],
        )?;
        let b = if present(PROJECTION_BIAS) {
            let what = "projection bias";
            let t = op.input(PROJECTION_BIAS)?;
            Some(constant::<i32>(op, t, what, TensorType::Int32, &[n_output])?.0)
        } else {
            None
        };
        Some((w, b))
    } else {
        None
    };

    let in_q = op.per_tensor(input, "input")?;
    let state_q = state(
        op,
        OUTPUT_STATE,
        "output state",
        TensorType::Int8,
        n_batch * n_output,
    )?;
    let cell_q = state(
        op,
        CELL_STATE,
        "cell state",
        TensorType::Int16,
        n_batch * n_cell,
    )?;
    let out_q = op.per_tensor(output, "output")?;
    if out_q != state_q {
        return Err(op.invalid(format!(
            "output quantization {out_q:?} differs from the output state's {state_q:?}"
        )));
    }
    let intermediates = op.operator.intermediates();
    let intermediate = |i: usize| -> Result<qneon::QuantParams> {
        let t = intermediates
            .get(i)
            .and_then(|&t| op.graph.tensor(t))
            .ok_or_else(|| {
                op.invalid(format!(
                    "intermediate {i} is missing (the integer LSTM needs 5: the gates' scales \
                     and the hidden state's)"
                ))
            })?;
        op.per_tensor(t, &format!("intermediate {i} ({})", t.name()))
    };
    let hidden = intermediate(4)?;
    let gate_scales = if layer_norm {
        let mut s = [0f32; 4];
        for (g, s) in s.iter_mut().enumerate() {
            *s = intermediate(g)?.scale;
        }
        Some(s)
    } else {
        None
    };

    let gate_weights = |g: usize| {
        gates[g]
            .as_ref()
            .map(|(w_in, w_rec, peep, ln, bias)| LstmGateWeights {
                input: &w_in.0,
                input_scale: w_in.1,
                recurrent: &w_rec.0,
                recurrent_scale: w_rec.1,
                peephole: peep.as_ref().map(|(v, s)| (&v[..], *s)),
                layer_norm: ln.as_ref().map(|(v, s)| (&v[..], *s)),
                bias,
            })
    };
    let missing = || op.invalid("a gate's weights are missing");
    let weights = LstmWeights {
        input_gate: gate_weights(0),
        forget_gate: gate_weights(1).ok_or_else(missing)?,
        cell_gate: gate_weights(2).ok_or_else(missing)?,
        output_gate: gate_weights(3).ok_or_else(missing)?,
        projection: proj.as_ref().map(|(w, b)| LstmProjection {
            weights: &w.0,
            scale: w.1,
            bias: b.as_deref(),
        }),
    };
    let quant = LstmQuantization {
        input: in_q,
        output_state: state_q,
        cell_state_scale: cell_q.scale,
        hidden,
        gate_scales,
        cell_clip,
        projection_clip: proj_clip,
    };
    if cell_q.zero_point != 0 {
        return Err(op.invalid(format!(
            "cell state zero point {} (the integer LSTM's cell state is symmetric)",
            cell_q.zero_point
        )));
    }
    let shape = LstmShape {
        n_batch,
        n_input,
        n_cell,
        n_output,
    };
    let lstm = Lstm::new(
        shape,
        &weights,
        &quant,
        lite_rt_rounding(op.options.rounding),
    )
    .map_err(|e| op.kernel_error(e))?
    .with_layer_norm_arithmetic(layer_norm_arithmetic(op.options.kernels));
    let scratch_lens = lstm.scratch_lens();
    let scratch_bytes = scratch_lens.0 * 4 + scratch_lens.1 * 2 + scratch_lens.2;
    let gate_count = if cifg { 3 } else { 4 };
    let per_step =
        gate_count * n_cell * (n_input + n_output) + if projection { n_output * n_cell } else { 0 };
    Ok(PreparedOp {
        kernel: Box::new(SequenceLstm {
            lstm: Box::new(lstm),
            shape,
            max_time,
            time_major,
            scratch_lens,
        }),
        work: (max_time * n_batch * per_step) as u64,
        unit: "MAC",
        scratch_bytes,
        alias: false,
        state_inputs: vec![OUTPUT_STATE, CELL_STATE],
    })
}
