//! The prepared int8 layer and its forward pass.

use crate::config::MobileBertConfig;
use crate::error::{Error, Result};
use crate::params::{FcParams, LayerParams, NormParams};
use qneon::Backend;
use qneon::{merge_heads, split_heads, Add, FusedActivation, Gemm, Method, NoNorm, Softmax};
use qneon::{QuantParams, Rounding};
use std::vec;
use std::vec::Vec;

/// The kinds of operator a profile groups the layer's work by.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum OpKind {
    /// The fully connected layers (int8 GEMM, requantization fused).
    FullyConnected,
    /// `Q K^T / sqrt(head_dim)`, one GEMM per head, including packing the keys.
    AttentionScores,
    /// The int8 softmax over the scores (the selected [`Method`]).
    Softmax,
    /// `P V`, one GEMM per head, including packing the values.
    AttentionContext,
    /// The residual adds (with rescale).
    Add,
    /// The NoNorms.
    NoNorm,
    /// Splitting into and merging heads (transposes).
    Transpose,
}

impl OpKind {
    /// Every kind, in the order of the profile table.
    pub const ALL: [OpKind; 7] = [
        OpKind::FullyConnected,
        OpKind::AttentionScores,
        OpKind::Softmax,
        OpKind::AttentionContext,
        OpKind::Add,
        OpKind::NoNorm,
        OpKind::Transpose,
    ];

    /// A short name for tables.
    pub fn name(self) -> &'static str {
        match self {
            OpKind::FullyConnected => "fully_connected",
            OpKind::AttentionScores => "attention_qk",
            OpKind::Softmax => "softmax",
            OpKind::AttentionContext => "attention_pv",
            OpKind::Add => "add",
            OpKind::NoNorm => "no_norm",
            OpKind::Transpose => "transpose",
        }
    }

    /// A small stable number, 1-based (0 is "outside every operator" in
    /// profiles that mark regions).
    pub fn id(self) -> u8 {
        OpKind::ALL.iter().position(|&k| k == self).unwrap_or(0) as u8 + 1
    }

    /// The unit of the work [`Profiler::end`] reports: multiply-accumulates
    /// for the matrix products, elements (of the output) for the others.
    pub fn unit(self) -> &'static str {
        match self {
            OpKind::FullyConnected | OpKind::AttentionScores | OpKind::AttentionContext => "MAC",
            _ => "element",
        }
    }
}

/// Sees every operator the layer runs: `begin` right before, `end` right
/// after with the work done (in [`OpKind::unit`]s). Both default to nothing.
pub trait Profiler {
    /// An operator of kind `op` starts.
    fn begin(&mut self, op: OpKind) {
        let _ = op;
    }
    /// It ended, having done `work` units.
    fn end(&mut self, op: OpKind, work: u64) {
        let _ = (op, work);
    }
}

/// The profiler that records nothing.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoProfile;

impl Profiler for NoProfile {}

/// A prepared fully connected layer (its shape is the GEMM's `k` and `n`).
fn fully_connected(p: &FcParams, input: QuantParams, activation: FusedActivation) -> Result<Gemm> {
    Gemm::new(
        &p.weight,
        p.outputs,
        p.inputs,
        Some(&p.bias),
        input,
        &p.weight_scales,
        p.output,
        activation,
    )
    .map_err(Error::Kernel)
}

fn no_norm(p: &NormParams, input: QuantParams) -> Result<NoNorm> {
    NoNorm::new(
        &p.gamma,
        &p.gamma_scales,
        &p.beta,
        input,
        p.output,
        FusedActivation::None,
    )
    .map_err(Error::Kernel)
}

#[derive(Clone, Debug)]
struct Ffn {
    intermediate: Gemm,
    output: Gemm,
    residual: Add,
    norm: NoNorm,
}

/// A prepared int8 MobileBert layer: every operator validated and its
/// multipliers, packed weights and tables computed once. [`run`](Self::run)
/// only loops (with a [`Workspace`] for the activations).
#[derive(Clone, Debug)]
pub struct Layer {
    config: MobileBertConfig,
    input: QuantParams,
    output: QuantParams,
    bottleneck_input: Gemm,
    bottleneck_input_norm: NoNorm,
    bottleneck_attention: Gemm,
    bottleneck_attention_norm: NoNorm,
    query: Gemm,
    key: Gemm,
    value: Gemm,
    /// `Q K^T` for one head; its weights (the keys) are set per run.
    scores: Gemm,
    softmax: Softmax<i8>,
    /// `P V` for one head; its weights (the values) are set per run.
    context: Gemm,
    attention_output: Gemm,
    attention_residual: Add,
    attention_norm: NoNorm,
    ffn: Vec<Ffn>,
    output_bottleneck: Gemm,
    output_residual: Add,
    output_norm: NoNorm,
    softmax_method: Method,
}

/// TFLite's int8 softmax output: scale 1/256, zero point -128.
pub(crate) const PROBABILITIES: QuantParams = QuantParams::new(1.0 / 256.0, -128);

impl Layer {
    /// Prepares every operator of `params` with the given softmax method.
    /// Errors: an inconsistent shape ([`MobileBertConfig::validate`], or a
    /// parameter array of the wrong length: [`Error::Kernel`] of [`qneon::Error::Length`]), and whatever
    /// an operator's `new` rejects (scales, zero points, multipliers).
    pub fn new(params: &LayerParams, softmax_method: Method) -> Result<Layer> {
        let c = params.config;
        c.validate()?;
        let (h, b, f) = (c.hidden, c.bottleneck, c.intermediate);
        let fc_shape = |p: &FcParams, what: &'static str, inputs: usize, outputs: usize| {
            if p.inputs != inputs || p.outputs != outputs {
                return Err(Error::Kernel(qneon::Error::Length {
                    op: "mobilebert layer",
                    what,
                    expected: inputs * outputs,
                    got: p.inputs * p.outputs,
                }));
            }
            Ok(())
        };
        fc_shape(&params.bottleneck_input, "bottleneck_input shape", h, b)?;
        fc_shape(
            &params.bottleneck_attention,
            "bottleneck_attention shape",
            h,
            b,
        )?;
        fc_shape(&params.query, "query shape", b, b)?;
        fc_shape(&params.key, "key shape", b, b)?;
        fc_shape(&params.value, "value shape", h, b)?;
        fc_shape(&params.attention_output, "attention_output shape", b, b)?;
        fc_shape(&params.output_bottleneck, "output_bottleneck shape", b, h)?;
        if params.ffn.len() != c.ffn_count {
            return Err(Error::Kernel(qneon::Error::Length {
                op: "mobilebert layer",
                what: "feed-forward networks",
                expected: c.ffn_count,
                got: params.ffn.len(),
            }));
        }
        for ffn in &params.ffn {
            fc_shape(&ffn.intermediate, "ffn intermediate shape", b, f)?;
            fc_shape(&ffn.output, "ffn output shape", f, b)?;
        }
        for (p, what) in [(&params.key, "key"), (&params.value, "value")] {
            if p.output.zero_point != 0 {
                return Err(Error::Kernel(qneon::Error::ZeroPoint {
                    what: if what == "key" {
                        "key output zero point (the weight side of Q K^T)"
                    } else {
                        "value output zero point (the weight side of P V)"
                    },
                    value: p.output.zero_point,
                    min: 0,
                    max: 0,
                }));
            }
        }

        let none = FusedActivation::None;
        let bottleneck_input = fully_connected(&params.bottleneck_input, params.input, none)?;
        let bottleneck_input_norm = no_norm(
            &params.bottleneck_input_norm,
            params.bottleneck_input.output,
        )?;
        let bottleneck_attention =
            fully_connected(&params.bottleneck_attention, params.input, none)?;
        let shared = params.bottleneck_attention_norm.output;
        let bottleneck_attention_norm = no_norm(
            &params.bottleneck_attention_norm,
            params.bottleneck_attention.output,
        )?;
        let query = fully_connected(&params.query, shared, none)?;
        let key = fully_connected(&params.key, shared, none)?;
        let value = fully_connected(&params.value, params.input, none)?;

        // Q K^T / sqrt(d): the keys are the weights, one per-tensor scale for
        // every channel with the 1/sqrt(d) folded in (computed in f64, like
        // TFLite folds constant multipliers).
        let key_scale = (params.key.output.scale as f64 / (c.head_dim as f64).sqrt()) as f32;
        let zero_keys = vec![0i8; c.seq_len * c.head_dim];
        let scores = Gemm::new(
            &zero_keys,
            c.seq_len,
            c.head_dim,
            None,
            params.query.output,
            &vec![key_scale; c.seq_len],
            params.scores,
            none,
        )?;
        let softmax = Softmax::<i8>::new(params.scores, 1.0, PROBABILITIES, softmax_method)?;
        let zero_values = vec![0i8; c.head_dim * c.seq_len];
        let context = Gemm::new(
            &zero_values,
            c.head_dim,
            c.seq_len,
            None,
            PROBABILITIES,
            &vec![params.value.output.scale; c.head_dim],
            params.context,
            none,
        )?;
        let attention_output = fully_connected(&params.attention_output, params.context, none)?;
        let attention_residual = Add::new(
            params.attention_output.output,
            params.bottleneck_input_norm.output,
            params.attention_residual,
            none,
            Rounding::Double,
        )?;
        let attention_norm = no_norm(&params.attention_norm, params.attention_residual)?;
        let mut ffn = Vec::with_capacity(c.ffn_count);
        let mut x = params.attention_norm.output;
        for p in &params.ffn {
            ffn.push(Ffn {
                intermediate: fully_connected(&p.intermediate, x, FusedActivation::Relu)?,
                output: fully_connected(&p.output, p.intermediate.output, none)?,
                residual: Add::new(p.output.output, x, p.residual, none, Rounding::Double)?,
                norm: no_norm(&p.norm, p.residual)?,
            });
            x = p.norm.output;
        }
        let output_bottleneck = fully_connected(&params.output_bottleneck, x, none)?;
        let output_residual = Add::new(
            params.output_bottleneck.output,
            params.input,
            params.output_residual,
            none,
            Rounding::Double,
        )?;
        let output_norm = no_norm(&params.output_norm, params.output_residual)?;
        Ok(Layer {
            config: c,
            input: params.input,
            output: params.output(),
            bottleneck_input,
            bottleneck_input_norm,
            bottleneck_attention,
            bottleneck_attention_norm,
            query,
            key,
            value,
            scores,
            softmax,
            context,
            attention_output,
            attention_residual,
            attention_norm,
            ffn,
            output_bottleneck,
            output_residual,
            output_norm,
            softmax_method,
        })
    }

    /// The shape.
    pub fn config(&self) -> MobileBertConfig {
        self.config
    }

    /// The input's quantization.
    pub fn input_quant(&self) -> QuantParams {
        self.input
    }

    /// The output's quantization.
    pub fn output_quant(&self) -> QuantParams {
        self.output
    }

    /// The softmax method.
    pub fn softmax_method(&self) -> Method {
        self.softmax_method
    }

    /// The buffers one forward pass needs (allocated here, once).
    pub fn workspace(&self) -> Workspace {
        let c = self.config;
        let (l, h, b) = (c.seq_len, c.hidden, c.bottleneck);
        let lb = || vec![0i8; l * b];
        Workspace {
            layer_input_fc: lb(),
            layer_input: lb(),
            shared_fc: lb(),
            shared: lb(),
            query: lb(),
            key: lb(),
            value: lb(),
            query_heads: lb(),
            key_heads: lb(),
            value_heads: lb(),
            scores: vec![0i8; c.heads * l * l],
            probabilities: vec![0i8; c.heads * l * l],
            context_heads: lb(),
            context: lb(),
            bottleneck_fc: lb(),
            bottleneck_sum: lb(),
            bottleneck: lb(),
            intermediate: vec![0i8; l * c.intermediate],
            output_fc: vec![0i8; l * h],
            output_sum: vec![0i8; l * h],
            scores_gemm: self.scores.clone(),
            context_gemm: self.context.clone(),
        }
    }

    /// One forward pass: `input` and `output` are `seq_len x hidden` int8 in
    /// the layer's input and output quantization. Every operator runs on
    /// `backend` (bit-exact across backends); `profiler` sees each.
    ///
    /// Errors: buffers of the wrong length ([`Error::Kernel`] of [`qneon::Error::Length`]), a workspace
    /// made for another shape, an unavailable backend.
    pub fn run(
        &self,
        ws: &mut Workspace,
        backend: Backend,
        input: &[i8],
        output: &mut [i8],
        profiler: &mut impl Profiler,
    ) -> Result<()> {
        let c = self.config;
        let (l, h, b) = (c.seq_len, c.hidden, c.bottleneck);
        let size = l * h;
        for (what, got) in [("input", input.len()), ("output", output.len())] {
            if got != size {
                return Err(Error::Kernel(qneon::Error::Length {
                    op: "mobilebert layer",
                    what,
                    expected: size,
                    got,
                }));
            }
        }
        if ws.scores.len() != c.heads * l * l || ws.intermediate.len() != l * c.intermediate {
            return Err(Error::Kernel(qneon::Error::Length {
                op: "mobilebert layer",
                what: "workspace (made by another layer)",
                expected: c.heads * l * l,
                got: ws.scores.len(),
            }));
        }
        if !backend.is_available() {
            return Err(Error::Kernel(qneon::Error::BackendUnavailable {
                backend: backend.name(),
            }));
        }
        let p = profiler;

        // Bottlenecks.
        fc(
            p,
            backend,
            &self.bottleneck_input,
            input,
            &mut ws.layer_input_fc,
            l,
        )?;
        norm(
            p,
            backend,
            &self.bottleneck_input_norm,
            &ws.layer_input_fc,
            &mut ws.layer_input,
        )?;
        fc(
            p,
            backend,
            &self.bottleneck_attention,
            input,
            &mut ws.shared_fc,
            l,
        )?;
        norm(
            p,
            backend,
            &self.bottleneck_attention_norm,
            &ws.shared_fc,
            &mut ws.shared,
        )?;

        // Attention.
        fc(p, backend, &self.query, &ws.shared, &mut ws.query, l)?;
        fc(p, backend, &self.key, &ws.shared, &mut ws.key, l)?;
        fc(p, backend, &self.value, input, &mut ws.value, l)?;
        p.begin(OpKind::Transpose);
        split_heads(&ws.query, &mut ws.query_heads, l, c.heads, c.head_dim)?;
        split_heads(&ws.key, &mut ws.key_heads, l, c.heads, c.head_dim)?;
        split_heads(&ws.value, &mut ws.value_heads, l, c.heads, c.head_dim)?;
        p.end(OpKind::Transpose, 3 * (l * b) as u64);

        let head = l * c.head_dim;
        p.begin(OpKind::AttentionScores);
        for ((q, k), s) in ws
            .query_heads
            .chunks_exact(head)
            .zip(ws.key_heads.chunks_exact(head))
            .zip(ws.scores.chunks_exact_mut(l * l))
        {
            ws.scores_gemm.set_weights(k)?;
            ws.scores_gemm.run_with(backend, q, s, l)?;
        }
        p.end(
            OpKind::AttentionScores,
            (c.heads * l * l * c.head_dim) as u64,
        );

        p.begin(OpKind::Softmax);
        self.softmax
            .run_with(backend, &ws.scores, &mut ws.probabilities, l)?;
        p.end(OpKind::Softmax, ws.scores.len() as u64);

        p.begin(OpKind::AttentionContext);
        for ((probs, v), out) in ws
            .probabilities
            .chunks_exact(l * l)
            .zip(ws.value_heads.chunks_exact(head))
            .zip(ws.context_heads.chunks_exact_mut(head))
        {
            ws.context_gemm.set_weights_transposed(v)?;
            ws.context_gemm.run_with(backend, probs, out, l)?;
        }
        p.end(
            OpKind::AttentionContext,
            (c.heads * l * l * c.head_dim) as u64,
        );
        p.begin(OpKind::Transpose);
        merge_heads(&ws.context_heads, &mut ws.context, l, c.heads, c.head_dim)?;
        p.end(OpKind::Transpose, (l * b) as u64);

        fc(
            p,
            backend,
            &self.attention_output,
            &ws.context,
            &mut ws.bottleneck_fc,
            l,
        )?;
        add(
            p,
            backend,
            &self.attention_residual,
            &ws.bottleneck_fc,
            &ws.layer_input,
            &mut ws.bottleneck_sum,
        )?;
        norm(
            p,
            backend,
            &self.attention_norm,
            &ws.bottleneck_sum,
            &mut ws.bottleneck,
        )?;

        // Feed-forward networks; `ws.bottleneck` is both the input and (after
        // the NoNorm) the output of each.
        for ffn in &self.ffn {
            fc(
                p,
                backend,
                &ffn.intermediate,
                &ws.bottleneck,
                &mut ws.intermediate,
                l,
            )?;
            fc(
                p,
                backend,
                &ffn.output,
                &ws.intermediate,
                &mut ws.bottleneck_fc,
                l,
            )?;
            add(
                p,
                backend,
                &ffn.residual,
                &ws.bottleneck_fc,
                &ws.bottleneck,
                &mut ws.bottleneck_sum,
            )?;
            norm(
                p,
                backend,
                &ffn.norm,
                &ws.bottleneck_sum,
                &mut ws.bottleneck,
            )?;
        }

        // Output bottleneck.
        fc(
            p,
            backend,
            &self.output_bottleneck,
            &ws.bottleneck,
            &mut ws.output_fc,
            l,
        )?;
        add(
            p,
            backend,
            &self.output_residual,
            &ws.output_fc,
            input,
            &mut ws.output_sum,
        )?;
        norm(p, backend, &self.output_norm, &ws.output_sum, output)
    }
}

fn fc(
    p: &mut impl Profiler,
    backend: Backend,
    fc: &Gemm,
    input: &[i8],
    output: &mut [i8],
    rows: usize,
) -> Result<()> {
    p.begin(OpKind::FullyConnected);
    fc.run_with(backend, input, output, rows)?;
    p.end(OpKind::FullyConnected, (rows * fc.k() * fc.n()) as u64);
    Ok(())
}

fn norm(
    p: &mut impl Profiler,
    backend: Backend,
    op: &NoNorm,
    input: &[i8],
    output: &mut [i8],
) -> Result<()> {
    p.begin(OpKind::NoNorm);
    op.run_with(backend, input, output)?;
    p.end(OpKind::NoNorm, output.len() as u64);
    Ok(())
}

fn add(
    p: &mut impl Profiler,
    backend: Backend,
    op: &Add,
    a: &[i8],
    b: &[i8],
    output: &mut [i8],
) -> Result<()> {
    p.begin(OpKind::Add);
    op.run_with(backend, a, b, output)?;
    p.end(OpKind::Add, output.len() as u64);
    Ok(())
}

/// The activations of one forward pass, and the two attention GEMMs whose
/// weights change every run. Made by [`Layer::workspace`].
#[derive(Clone, Debug)]
pub struct Workspace {
    layer_input_fc: Vec<i8>,
    layer_input: Vec<i8>,
    shared_fc: Vec<i8>,
    shared: Vec<i8>,
    query: Vec<i8>,
    key: Vec<i8>,
    value: Vec<i8>,
    query_heads: Vec<i8>,
    key_heads: Vec<i8>,
    value_heads: Vec<i8>,
    scores: Vec<i8>,
    probabilities: Vec<i8>,
    context_heads: Vec<i8>,
    context: Vec<i8>,
    bottleneck_fc: Vec<i8>,
    bottleneck_sum: Vec<i8>,
    bottleneck: Vec<i8>,
    intermediate: Vec<i8>,
    output_fc: Vec<i8>,
    output_sum: Vec<i8>,
    scores_gemm: Gemm,
    context_gemm: Gemm,
}
