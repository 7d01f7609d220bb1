//! SVDF: TFLite's `Prepare` rules for the integer op (int8 input and
//! feature weights, int16 or int8 time weights and state of one type, an
//! optional int32 bias, int8 output) and the library's [`qneon::Svdf`].
//! The state (input 4) is a variable tensor the session keeps across
//! invokes; the kernel updates it in place ([`Io::state`]), so a sequence
//! of invokes is a sequence of time steps, as in TFLite.
//!
//! LiteRT's reference and optimized kernel sets run the same integer SVDF
//! (`EvalIntegerSVDF`), and its XNNPACK delegate does not take the op.
//! int8 state is TFLite Micro's variant (LiteRT 2.3 accepts no int8 state),
//! with TFLite Micro's state zero point.

use std::ops::Range;

use qneon::{Backend, QuantParams, Svdf, SvdfQuantization, SvdfShape, SvdfState, SvdfWeights};
use qneon_tflite::schema::BuiltinOptions;
use qneon_tflite::{BuiltinOp, Options as OpOptions, Tensor, TensorType};

use super::buffers::{view, view_mut, Io};
use super::kernel::{Kernel, PreparedOp, Registration};
use super::op::Op;
use crate::error::Result;
use crate::interp::options::Options;

/// The ops this family prepares.
pub(crate) const OPS: &[Registration] = &[Registration::new(BuiltinOp::SVDF, "SVDF", prepare)
    .left_by_xnnpack()
    .arithmetic(describe)];

/// The input positions of TFLite's SVDF.
const INPUT: usize = 0;
const WEIGHTS_FEATURE: usize = 1;
const WEIGHTS_TIME: usize = 2;
const BIAS: usize = 3;
const STATE: usize = 4;

/// TFLite Micro's tolerance on the bias scale against `s_state * s_wt`.
const BIAS_SCALE_TOLERANCE: f64 = 1e-5;

/// What inspect says.
fn describe(options: &Options, _: BuiltinOp) -> String {
    format!(
        "integer SVDF: two quantized multipliers, {} rounding; state kept across invokes",
        options.rounding.name()
    )
}

#[derive(Debug)]
struct SvdfNode<S: SvdfState> {
    op: Svdf<S>,
    has_bias: bool,
}

impl<S: SvdfState + bytemuck::Pod + Send + Sync> Kernel for SvdfNode<S> {
    fn run_tiles(
        &self,
        backend: Backend,
        tiles: Range<usize>,
        io: &mut Io<'_>,
    ) -> Result<(), String> {
        // One tile: the whole step (every filter's state moves together).
        if tiles.is_empty() {
            return Ok(());
        }
        let input: &[i8] = view(io.ins[INPUT])?;
        let weights = SvdfWeights {
            feature: view(io.ins[WEIGHTS_FEATURE])?,
            time: view::<S>(io.ins[WEIGHTS_TIME])?,
            bias: if self.has_bias {
                Some(view(io.ins[BIAS])?)
            } else {
                None
            },
        };
        let [state] = &mut io.state[..] else {
            return Err(format!("{} state buffers, expected 1", io.state.len()));
        };
        let state = view_mut::<S>(state)?;
        let output = view_mut::<i8>(io.outs[0])?;
        self.op
            .run_with(backend, input, weights, state, output)
            .map_err(|e| e.to_string())
    }
}

/// TFLite's code of the RELU fused activation.
const RELU: i8 = 1;

/// The SVDF options' rank and fused activation code (TFLite reads zeros
/// when the options are absent, and its `Prepare` refuses rank 0).
fn options(op: &Op<'_, '_>) -> (i32, i8) {
    match op.operator.options() {
        OpOptions::Builtin(BuiltinOptions::SvdfOptions(o)) => (o.rank, o.fused_activation_function),
        _ => (0, 0),
    }
}

/// A dimension of a rank-2 tensor, named for messages.
fn dims2(op: &Op<'_, '_>, t: &Tensor<'_>, what: &str) -> Result<(usize, usize)> {
    match t.shape() {
        &[a, b] => Ok((a, b)),
        other => Err(op.invalid(format!(
            "{what} (tensor {}) has shape {other:?}, expected rank 2",
            t.name()
        ))),
    }
}

/// TFLite's `Prepare` of SVDF (integer path).
fn prepare(op: &Op<'_, '_>) -> Result<PreparedOp> {
    op.input_count(5, 5)?;
    op.output_count(1)?;
    let input = op.input(INPUT)?;
    let weights_feature = op.input(WEIGHTS_FEATURE)?;
    let weights_time = op.input(WEIGHTS_TIME)?;
    let bias = op.optional_input(BIAS);
    let state = op.input(STATE)?;
    let output = op.output(0)?;
    let (rank, activation) = options(op);
    if rank <= 0 {
        return Err(op.invalid(format!("rank {rank} (must be at least 1)")));
    }
    // LiteRT's integer SVDF refuses any other activation at its first
    // invoke, and then does not apply it (the output is clamped to int8
    // only): measured on the single-op SVDF references.
    if activation != RELU {
        return Err(op.invalid(format!(
            "fused activation code {activation}: TFLite's integer SVDF requires RELU ({RELU})"
        )));
    }
    let rank = rank as usize;
    if input.dtype() == TensorType::Float32 {
        return Err(op.unsupported("float SVDF (qneon runs the integer SVDF)"));
    }
    let (batch, input_size) = dims2(op, input, "input")?;
    let (filters, feature_columns) = dims2(op, weights_feature, "feature weights")?;
    if !filters.is_multiple_of(rank) {
        return Err(op.invalid(format!(
            "feature weights (tensor {}) have {filters} filters, not a multiple of rank {rank}",
            weights_feature.name()
        )));
    }
    let units = filters / rank;
    if feature_columns != input_size {
        return Err(op.invalid(format!(
            "feature weights (tensor {}) have {feature_columns} columns, the input {input_size}",
            weights_feature.name()
        )));
    }
    let (time_rows, memory) = dims2(op, weights_time, "time weights")?;
    if time_rows != filters {
        return Err(op.invalid(format!(
            "time weights (tensor {}) have {time_rows} rows, the feature weights {filters} filters",
            weights_time.name()
        )));
    }
    if let Some(bias) = bias {
        if bias.shape() != [units] {
            return Err(op.invalid(format!(
                "bias (tensor {}) has shape {:?}, expected [{units}] (filters / rank)",
                bias.name(),
                bias.shape()
            )));
        }
    }
    let state_shape = [batch, memory * filters];
    if state.shape() != state_shape {
        return Err(op.invalid(format!(
            "state (tensor {}) has shape {:?}, expected {state_shape:?} (batch, memory x filters)",
            state.name(),
            state.shape()
        )));
    }
    if !state.is_variable() {
        return Err(op.invalid(format!(
            "state (tensor {}) is not a variable tensor",
            state.name()
        )));
    }
    if output.shape() != [batch, units] {
        return Err(op.invalid(format!(
            "output (tensor {}) has shape {:?}, expected [{batch}, {units}]",
            output.name(),
            output.shape()
        )));
    }
    let types_ok = input.dtype() == TensorType::Int8
        && weights_feature.dtype() == TensorType::Int8
        && matches!(weights_time.dtype(), TensorType::Int16 | TensorType::Int8)
        && state.dtype() == weights_time.dtype()
        && bias.is_none_or(|b| b.dtype() == TensorType::Int32)
        && output.dtype() == TensorType::Int8;
    if !types_ok {
        return Err(op.unsupported_types());
    }
    for (t, what) in [
        (weights_feature, "feature weights"),
        (weights_time, "time weights"),
    ] {
        if !t.is_constant() {
            return Err(op.unsupported(format!("{what} (tensor {}) must be constant", t.name())));
        }
    }
    if let Some(b) = bias.filter(|b| !b.is_constant()) {
        return Err(op.unsupported(format!("bias (tensor {}) must be constant", b.name())));
    }
    let state_q = op.per_tensor(state, "state")?;
    // LiteRT (int16 state only) ignores the state's zero point, TFLite
    // Micro subtracts it; the two agree at 0, the only int16 case taken.
    if state_q.zero_point != 0 && state.dtype() == TensorType::Int16 {
        return Err(op.unsupported(format!(
            "int16 state (tensor {}) zero point {} (LiteRT's integer SVDF assumes 0)",
            state.name(),
            state_q.zero_point
        )));
    }
    let weights_time_scale = op.symmetric_scales(weights_time, "time weights", 1, 0)?[0];
    if let Some(b) = bias {
        let expected = state_q.scale as f64 * weights_time_scale as f64;
        let scale = b
            .quantization()
            .and_then(|q| q.per_tensor())
            .map(|(s, _)| s as f64)
            .unwrap_or(0.0);
        if (scale - expected).abs() >= BIAS_SCALE_TOLERANCE {
            return Err(op.invalid(format!(
                "bias (tensor {}) scale {scale:e} differs from state scale x time weights scale \
                 {expected:e}",
                b.name()
            )));
        }
    }
    let q = SvdfQuantization {
        input: op.per_tensor(input, "input")?,
        weights_feature_scale: op.symmetric_scales(weights_feature, "feature weights", 1, 0)?[0],
        weights_time_scale,
        state: QuantParams::new(state_q.scale, state_q.zero_point),
        output: op.per_tensor(output, "output")?,
    };
    let shape = SvdfShape {
        batch,
        input_size,
        filters,
        memory,
        rank,
    };
    let has_bias = bias.is_some();
    let kernel: Box<dyn Kernel> = match state.dtype() {
        TensorType::Int16 => Box::new(SvdfNode {
            op: Svdf::<i16>::new(shape, q, op.options.rounding).map_err(|e| op.kernel_error(e))?,
            has_bias,
        }),
        _ => Box::new(SvdfNode {
            op: Svdf::<i8>::new(shape, q, op.options.rounding).map_err(|e| op.kernel_error(e))?,
            has_bias,
        }),
    };
    let macs = batch * filters * (input_size + memory);
    Ok(PreparedOp {
        kernel,
        work: macs as u64,
        unit: "MAC",
        scratch_bytes: 0,
        alias: false,
        state_inputs: vec![STATE],
    })
}
