//! The float layer: seeded weights, the f32 reference forward pass,
//! calibration and quantization. This is how the committed model files are
//! built (`cargo xtask gen-model`) and what the int8 layer is measured against.
//!
//! * Weights and biases: a truncated normal (standard deviation 0.02, resampled
//!   beyond two standard deviations), as MobileBert initializes its dense
//!   layers. NoNorm gammas `1 + N(0, 0.1)` and betas `N(0, 0.02)`, truncated
//!   likewise (MobileBert starts them at 1 and 0; the spread makes the int8
//!   path exercise per-channel scales and nonzero betas).
//! * Inputs: `N(0, INPUT_STD^2)` per element (see [`INPUT_STD`]).
//! * The forward pass is plain f32 (products and sums in f32, the softmax with
//!   this crate's scalar [`crate::f32::softmax`]); every intermediate tensor is
//!   reported to an observer, which calibration uses to record min/max.
//! * Quantization, as TFLite's post-training full-integer quantization does
//!   it: activations per tensor, asymmetric over the calibrated `[min, max]`
//!   widened to include 0 (`scale = (max - min) / 255`, zero point
//!   `round(-128 - min / scale)`); the keys and values symmetric (zero point 0,
//!   `scale = max|x| / 127`) because they are the weight side of the attention
//!   GEMMs; weights symmetric per output channel (`max|w| / 127`, values in
//!   `-127..=127`); biases `round(b / (input_scale * weight_scale))` in int32;
//!   NoNorm as [`crate::NoNorm::from_f32`]; the softmax output TFLite's fixed
//!   1/256 and -128.

use super::names::{self, FcNames, NormNames};
use super::params::{FcParams, FfnParams, LayerParams, NormParams};
use super::MobileBertConfig;
use crate::error::Result;
use crate::quant::QuantParams;
use crate::Backend;
use std::collections::BTreeMap;
use std::vec;
use std::vec::Vec;

/// SplitMix64: small, fast and the same everywhere.
#[derive(Clone, Debug)]
pub struct SeededRng(u64);

impl SeededRng {
    /// A generator for `seed` and a stream number (independent streams for
    /// independent uses of one seed).
    pub fn new(seed: u64, stream: u64) -> SeededRng {
        SeededRng(seed ^ stream.wrapping_mul(0xD1B5_4A32_D192_ED03))
    }

    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `(-1, 1)` with 53 random bits.
    fn symmetric_unit(&mut self) -> f64 {
        ((self.next_u64() >> 11) as f64 + 0.5) / (1u64 << 52) as f64 - 1.0
    }

    /// A standard normal sample (Marsaglia's polar method, one of each pair).
    pub fn normal(&mut self) -> f64 {
        loop {
            let (u, v) = (self.symmetric_unit(), self.symmetric_unit());
            let s = u * u + v * v;
            if s > 0.0 && s < 1.0 {
                return u * (-2.0 * s.ln() / s).sqrt();
            }
        }
    }

    /// `mean + std * z` with `z` standard normal resampled until `|z| <= 2`.
    pub fn truncated_normal(&mut self, mean: f64, std: f64) -> f32 {
        loop {
            let z = self.normal();
            if z.abs() <= 2.0 {
                return (mean + std * z) as f32;
            }
        }
    }
}

/// A float fully connected layer: `y = x W^T + b`.
#[derive(Clone, Debug, PartialEq)]
pub struct FcF32 {
    /// Input width.
    pub inputs: usize,
    /// Output width.
    pub outputs: usize,
    /// `outputs x inputs`, row-major.
    pub weight: Vec<f32>,
    /// `outputs`.
    pub bias: Vec<f32>,
}

impl FcF32 {
    fn random(rng: &mut SeededRng, inputs: usize, outputs: usize) -> FcF32 {
        FcF32 {
            inputs,
            outputs,
            weight: (0..inputs * outputs)
                .map(|_| rng.truncated_normal(0.0, 0.02))
                .collect(),
            bias: (0..outputs)
                .map(|_| rng.truncated_normal(0.0, 0.02))
                .collect(),
        }
    }

    /// `rows x inputs` to `rows x outputs`, optionally with ReLU.
    fn forward(&self, x: &[f32], relu: bool) -> Vec<f32> {
        let rows = x.len() / self.inputs;
        // W^T, so that the inner loop is an axpy over contiguous outputs.
        let mut wt = vec![0f32; self.inputs * self.outputs];
        for o in 0..self.outputs {
            for i in 0..self.inputs {
                wt[i * self.outputs + o] = self.weight[o * self.inputs + i];
            }
        }
        let mut y = vec![0f32; rows * self.outputs];
        for (xr, yr) in x
            .chunks_exact(self.inputs)
            .zip(y.chunks_exact_mut(self.outputs))
        {
            yr.copy_from_slice(&self.bias);
            for (&xi, wr) in xr.iter().zip(wt.chunks_exact(self.outputs)) {
                for (yo, &w) in yr.iter_mut().zip(wr) {
                    *yo += xi * w;
                }
            }
            if relu {
                for v in yr.iter_mut() {
                    *v = v.max(0.0);
                }
            }
        }
        y
    }
}

/// A float NoNorm: `y = x * gamma + beta` per channel.
#[derive(Clone, Debug, PartialEq)]
pub struct NormF32 {
    /// One per channel.
    pub gamma: Vec<f32>,
    /// One per channel.
    pub beta: Vec<f32>,
}

impl NormF32 {
    fn random(rng: &mut SeededRng, channels: usize) -> NormF32 {
        NormF32 {
            gamma: (0..channels)
                .map(|_| rng.truncated_normal(1.0, 0.1))
                .collect(),
            beta: (0..channels)
                .map(|_| rng.truncated_normal(0.0, 0.02))
                .collect(),
        }
    }

    fn forward(&self, x: &[f32]) -> Vec<f32> {
        let mut y = x.to_vec();
        for row in y.chunks_exact_mut(self.gamma.len()) {
            for ((v, &g), &b) in row.iter_mut().zip(&self.gamma).zip(&self.beta) {
                *v = *v * g + b;
            }
        }
        y
    }
}

/// One float feed-forward network.
#[derive(Clone, Debug, PartialEq)]
pub struct FfnF32 {
    /// `bottleneck -> intermediate`, ReLU.
    pub intermediate: FcF32,
    /// `intermediate -> bottleneck`.
    pub output: FcF32,
    /// After the residual add.
    pub norm: NormF32,
}

/// The float MobileBert layer (the same structure as [`LayerParams`]).
#[derive(Clone, Debug, PartialEq)]
#[allow(missing_docs)]
pub struct FloatLayer {
    pub config: MobileBertConfig,
    pub bottleneck_input: FcF32,
    pub bottleneck_input_norm: NormF32,
    pub bottleneck_attention: FcF32,
    pub bottleneck_attention_norm: NormF32,
    pub query: FcF32,
    pub key: FcF32,
    pub value: FcF32,
    pub attention_output: FcF32,
    pub attention_norm: NormF32,
    pub ffn: Vec<FfnF32>,
    pub output_bottleneck: FcF32,
    pub output_norm: NormF32,
}

fn fc_observed(
    observe: &mut impl FnMut(&'static str, &[f32]),
    p: &FcF32,
    names: FcNames,
    x: &[f32],
    relu: bool,
) -> Vec<f32> {
    let y = p.forward(x, relu);
    observe(names.output, &y);
    y
}

fn norm_observed(
    observe: &mut impl FnMut(&'static str, &[f32]),
    p: &NormF32,
    names: NormNames,
    x: &[f32],
) -> Vec<f32> {
    let y = p.forward(x);
    observe(names.output, &y);
    y
}

fn add(a: &[f32], b: &[f32]) -> Vec<f32> {
    a.iter().zip(b).map(|(x, y)| x + y).collect()
}

impl FloatLayer {
    /// Seeded weights (see the module docs). Errors if `config` is invalid.
    pub fn random(config: MobileBertConfig, seed: u64) -> Result<FloatLayer> {
        config.validate()?;
        let mut rng = SeededRng::new(seed, 1);
        let (h, b, f) = (config.hidden, config.bottleneck, config.intermediate);
        let rng = &mut rng;
        Ok(FloatLayer {
            config,
            bottleneck_input: FcF32::random(rng, h, b),
            bottleneck_input_norm: NormF32::random(rng, b),
            bottleneck_attention: FcF32::random(rng, h, b),
            bottleneck_attention_norm: NormF32::random(rng, b),
            query: FcF32::random(rng, b, b),
            key: FcF32::random(rng, b, b),
            value: FcF32::random(rng, h, b),
            attention_output: FcF32::random(rng, b, b),
            attention_norm: NormF32::random(rng, b),
            ffn: (0..config.ffn_count)
                .map(|_| FfnF32 {
                    intermediate: FcF32::random(rng, b, f),
                    output: FcF32::random(rng, f, b),
                    norm: NormF32::random(rng, b),
                })
                .collect(),
            output_bottleneck: FcF32::random(rng, b, h),
            output_norm: NormF32::random(rng, h),
        })
    }

    /// A seeded input, `seq_len x hidden`, `N(0, INPUT_STD^2)` per element.
    pub fn random_input(&self, seed: u64) -> Vec<f32> {
        let mut rng = SeededRng::new(seed, 2);
        (0..self.config.seq_len * self.config.hidden)
            .map(|_| (INPUT_STD * rng.normal()) as f32)
            .collect()
    }

    /// The f32 forward pass of `x` (`seq_len x hidden`), reporting every
    /// quantized tensor to `observe` under its name in the model file.
    pub fn forward(&self, x: &[f32], mut observe: impl FnMut(&'static str, &[f32])) -> Vec<f32> {
        let c = self.config;
        let (l, d) = (c.seq_len, c.head_dim);
        assert_eq!(x.len(), l * c.hidden, "input is seq_len x hidden");
        let obs = &mut observe;
        let bi = fc_observed(
            obs,
            &self.bottleneck_input,
            names::BOTTLENECK_INPUT,
            x,
            false,
        );
        let ba = fc_observed(
            obs,
            &self.bottleneck_attention,
            names::BOTTLENECK_ATTENTION,
            x,
            false,
        );
        let value = fc_observed(obs, &self.value, names::VALUE, x, false);
        let layer_input = norm_observed(
            obs,
            &self.bottleneck_input_norm,
            names::BOTTLENECK_INPUT_NORM,
            &bi,
        );
        let shared = norm_observed(
            obs,
            &self.bottleneck_attention_norm,
            names::BOTTLENECK_ATTENTION_NORM,
            &ba,
        );
        let query = fc_observed(obs, &self.query, names::QUERY, &shared, false);
        let key = fc_observed(obs, &self.key, names::KEY, &shared, false);

        // Attention, head by head: scores[h][i][j] = q_i . k_j / sqrt(d).
        let b = c.bottleneck;
        let inv_sqrt_d = 1.0 / (d as f32).sqrt();
        let mut scores = vec![0f32; c.heads * l * l];
        for (h, sh) in scores.chunks_exact_mut(l * l).enumerate() {
            for (i, row) in sh.chunks_exact_mut(l).enumerate() {
                let q = &query[i * b + h * d..i * b + h * d + d];
                for (j, s) in row.iter_mut().enumerate() {
                    let k = &key[j * b + h * d..j * b + h * d + d];
                    let dot: f32 = q.iter().zip(k).map(|(a, b)| a * b).sum();
                    *s = dot * inv_sqrt_d;
                }
            }
        }
        obs(names::SCORES, &scores);
        let mut probs = vec![0f32; scores.len()];
        crate::f32::softmax_with(Backend::Scalar, &scores, &mut probs, l).expect("rows of seq_len");
        let mut context = vec![0f32; l * b];
        for (h, ph) in probs.chunks_exact(l * l).enumerate() {
            for (i, prow) in ph.chunks_exact(l).enumerate() {
                let out = &mut context[i * b + h * d..i * b + h * d + d];
                for (j, &pj) in prow.iter().enumerate() {
                    let v = &value[j * b + h * d..j * b + h * d + d];
                    for (o, &vv) in out.iter_mut().zip(v) {
                        *o += pj * vv;
                    }
                }
            }
        }
        obs(names::CONTEXT, &context);

        let attn = fc_observed(
            obs,
            &self.attention_output,
            names::ATTENTION_OUTPUT,
            &context,
            false,
        );
        let sum = add(&attn, &layer_input);
        obs(names::ATTENTION_RESIDUAL, &sum);
        let mut a = self.attention_norm.forward(&sum);
        obs(names::ATTENTION_NORM.output, &a);
        for (ffn, n) in self.ffn.iter().zip(names::FFN) {
            let inter = ffn.intermediate.forward(&a, true);
            obs(n.intermediate.output, &inter);
            let out = ffn.output.forward(&inter, false);
            obs(n.output.output, &out);
            let sum = add(&out, &a);
            obs(n.residual, &sum);
            a = ffn.norm.forward(&sum);
            obs(n.norm.output, &a);
        }
        let ob = self.output_bottleneck.forward(&a, false);
        obs(names::OUTPUT_BOTTLENECK.output, &ob);
        let sum = add(&ob, x);
        obs(names::OUTPUT_RESIDUAL, &sum);
        let y = self.output_norm.forward(&sum);
        obs(names::OUTPUT_NORM.output, &y);
        y
    }

    /// Runs the forward pass over each input and records every tensor's
    /// `[min, max]` (the input's own under `input.output`).
    pub fn calibrate(&self, inputs: &[Vec<f32>]) -> Calibration {
        let mut ranges = BTreeMap::new();
        let mut record = |name: &'static str, data: &[f32]| {
            let (lo, hi) = data
                .iter()
                .fold((f32::INFINITY, f32::NEG_INFINITY), |(lo, hi), &v| {
                    (lo.min(v), hi.max(v))
                });
            let e = ranges.entry(name).or_insert((lo, hi));
            e.0 = e.0.min(lo);
            e.1 = e.1.max(hi);
        };
        for x in inputs {
            record(names::INPUT, x);
            self.forward(x, &mut record);
        }
        Calibration { ranges }
    }

    /// Quantizes the layer with the calibrated ranges (see the module docs).
    /// Errors if a range is missing or not finite.
    pub fn quantize(&self, cal: &Calibration) -> Result<LayerParams> {
        let input = cal.asymmetric(names::INPUT)?;
        // A layer's output quantization comes from its calibrated output
        // range: asymmetric, or symmetric for the keys and values (the
        // weight side of the attention GEMMs).
        let fc = |p: &FcF32, n: FcNames, x: QuantParams, symmetric: bool| -> Result<FcParams> {
            let out = if symmetric {
                cal.symmetric(n.output)?
            } else {
                cal.asymmetric(n.output)?
            };
            Ok(quantize_fc(p, x, out))
        };
        let norm = |p: &NormF32, n: NormNames, x: QuantParams| -> Result<NormParams> {
            Ok(quantize_norm(p, x, cal.asymmetric(n.output)?))
        };
        let bottleneck_input = fc(
            &self.bottleneck_input,
            names::BOTTLENECK_INPUT,
            input,
            false,
        )?;
        let bottleneck_input_norm = norm(
            &self.bottleneck_input_norm,
            names::BOTTLENECK_INPUT_NORM,
            bottleneck_input.output,
        )?;
        let bottleneck_attention = fc(
            &self.bottleneck_attention,
            names::BOTTLENECK_ATTENTION,
            input,
            false,
        )?;
        let bottleneck_attention_norm = norm(
            &self.bottleneck_attention_norm,
            names::BOTTLENECK_ATTENTION_NORM,
            bottleneck_attention.output,
        )?;
        let shared = bottleneck_attention_norm.output;
        let query = fc(&self.query, names::QUERY, shared, false)?;
        let key = fc(&self.key, names::KEY, shared, true)?;
        let value = fc(&self.value, names::VALUE, input, true)?;
        let scores = cal.asymmetric(names::SCORES)?;
        let context = cal.asymmetric(names::CONTEXT)?;
        let attention_output = fc(
            &self.attention_output,
            names::ATTENTION_OUTPUT,
            context,
            false,
        )?;
        let attention_residual = cal.asymmetric(names::ATTENTION_RESIDUAL)?;
        let attention_norm = norm(
            &self.attention_norm,
            names::ATTENTION_NORM,
            attention_residual,
        )?;
        let mut x = attention_norm.output;
        let mut ffn = Vec::new();
        for (p, n) in self.ffn.iter().zip(names::FFN) {
            let intermediate = fc(&p.intermediate, n.intermediate, x, false)?;
            let output = fc(&p.output, n.output, intermediate.output, false)?;
            let residual = cal.asymmetric(n.residual)?;
            let norm = norm(&p.norm, n.norm, residual)?;
            x = norm.output;
            ffn.push(FfnParams {
                intermediate,
                output,
                residual,
                norm,
            });
        }
        let output_bottleneck = fc(&self.output_bottleneck, names::OUTPUT_BOTTLENECK, x, false)?;
        let output_residual = cal.asymmetric(names::OUTPUT_RESIDUAL)?;
        let output_norm = norm(&self.output_norm, names::OUTPUT_NORM, output_residual)?;
        Ok(LayerParams {
            config: self.config,
            input,
            bottleneck_input,
            bottleneck_input_norm,
            bottleneck_attention,
            bottleneck_attention_norm,
            query,
            key,
            value,
            scores,
            context,
            attention_output,
            attention_residual,
            attention_norm,
            ffn,
            output_bottleneck,
            output_residual,
            output_norm,
        })
    }
}

/// Per-channel symmetric int8 weights, int32 biases.
fn quantize_fc(p: &FcF32, input: QuantParams, output: QuantParams) -> FcParams {
    let mut weight = Vec::with_capacity(p.weight.len());
    let mut weight_scales = Vec::with_capacity(p.outputs);
    let mut bias = Vec::with_capacity(p.outputs);
    for (row, &b) in p.weight.chunks_exact(p.inputs).zip(&p.bias) {
        let max = row.iter().fold(0f32, |m, &w| m.max(w.abs()));
        let scale = if max > 0.0 { max / 127.0 } else { 1.0 };
        weight.extend(
            row.iter()
                .map(|&w| (w / scale).round().clamp(-127.0, 127.0) as i8),
        );
        weight_scales.push(scale);
        let unit = input.scale as f64 * scale as f64;
        bias.push(round_to_i32(b as f64 / unit));
    }
    FcParams {
        inputs: p.inputs,
        outputs: p.outputs,
        weight,
        weight_scales,
        bias,
        output,
    }
}

/// As [`crate::NoNorm::from_f32`]: each gamma `+-127` steps of its own scale.
fn quantize_norm(p: &NormF32, input: QuantParams, output: QuantParams) -> NormParams {
    let mut gamma = Vec::with_capacity(p.gamma.len());
    let mut gamma_scales = Vec::with_capacity(p.gamma.len());
    let mut beta = Vec::with_capacity(p.gamma.len());
    for (&g, &b) in p.gamma.iter().zip(&p.beta) {
        let (q, s) = if g == 0.0 {
            (0i8, 1.0f32)
        } else {
            (if g > 0.0 { 127 } else { -127 }, g.abs() / 127.0)
        };
        gamma.push(q);
        gamma_scales.push(s);
        beta.push(round_to_i32(b as f64 / (input.scale as f64 * s as f64)));
    }
    NormParams {
        gamma,
        gamma_scales,
        beta,
        output,
    }
}

/// Round half away from zero, saturated to `i32`.
fn round_to_i32(v: f64) -> i32 {
    v.round().clamp(i32::MIN as f64, i32::MAX as f64) as i32
}

/// The calibrated `[min, max]` of every tensor, by name.
#[derive(Clone, Debug, Default)]
pub struct Calibration {
    /// `name -> (min, max)`.
    pub ranges: BTreeMap<&'static str, (f32, f32)>,
}

impl Calibration {
    fn range(&self, name: &'static str) -> Result<(f32, f32)> {
        match self.ranges.get(name) {
            Some(&(lo, hi)) if lo.is_finite() && hi.is_finite() => Ok((lo, hi)),
            _ => Err(crate::Error::Unsupported {
                op: "calibration",
                dtype: "int8",
                reason: "a tensor has no finite calibrated range",
            }),
        }
    }

    /// Asymmetric int8 over `[min(lo, 0), max(hi, 0)]`.
    pub fn asymmetric(&self, name: &'static str) -> Result<QuantParams> {
        let (lo, hi) = self.range(name)?;
        let (lo, hi) = (lo.min(0.0) as f64, hi.max(0.0) as f64);
        if hi - lo <= 0.0 {
            return Ok(QuantParams::new(1.0, 0));
        }
        let scale = ((hi - lo) / 255.0) as f32;
        let zero_point = (-128.0 - lo / scale as f64).round().clamp(-128.0, 127.0) as i32;
        Ok(QuantParams::new(scale, zero_point))
    }

    /// Symmetric int8 (zero point 0) over `max(|min|, |max|)`.
    pub fn symmetric(&self, name: &'static str) -> Result<QuantParams> {
        let (lo, hi) = self.range(name)?;
        let m = lo.abs().max(hi.abs());
        Ok(QuantParams::new(if m > 0.0 { m / 127.0 } else { 1.0 }, 0))
    }
}

/// Quantizes a float tensor with `q` (round half away from zero, clamped).
pub fn quantize_tensor(x: &[f32], q: QuantParams) -> Vec<i8> {
    x.iter()
        .map(|&v| {
            ((v as f64 / q.scale as f64).round() + q.zero_point as f64).clamp(-128.0, 127.0) as i8
        })
        .collect()
}

/// A synthetic layer ready to run: the quantized parameters, an int8 input,
/// and the float layer's output for the float input it was quantized from.
#[derive(Clone, Debug)]
pub struct Synthetic {
    /// The quantized layer.
    pub params: LayerParams,
    /// `seq_len x hidden` int8 in `params.input`'s quantization.
    pub input: Vec<i8>,
    /// The float input it quantizes.
    pub input_f32: Vec<f32>,
    /// The float layer's output for `input_f32`: the reference.
    pub reference: Vec<f32>,
}

/// Builds a synthetic layer from `seed`: weights from the seed, calibration
/// on `calibration_inputs` seeded inputs different from the evaluation input,
/// quantization, the evaluation input and its float reference output.
pub fn synthetic(
    config: MobileBertConfig,
    seed: u64,
    calibration_inputs: usize,
) -> Result<Synthetic> {
    let layer = FloatLayer::random(config, seed)?;
    let calibration: Vec<Vec<f32>> = (1..=calibration_inputs as u64)
        .map(|i| layer.random_input(seed.wrapping_add(i)))
        .collect();
    let params = layer.quantize(&layer.calibrate(&calibration))?;
    let input_f32 = layer.random_input(seed);
    let reference = layer.forward(&input_f32, |_, _| {});
    Ok(Synthetic {
        input: quantize_tensor(&input_f32, params.input),
        params,
        input_f32,
        reference,
    })
}

/// Accuracy of an int8 output against a float reference.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Accuracy {
    /// Cosine similarity of the dequantized output and the reference.
    pub cosine: f64,
    /// Largest `|dequantized - reference|`, in output steps (LSBs).
    pub max_abs_err_lsb: f64,
    /// Mean of the same.
    pub mean_abs_err_lsb: f64,
}

/// Compares `output` (int8 in quantization `q`) with `reference`.
pub fn accuracy(output: &[i8], q: QuantParams, reference: &[f32]) -> Accuracy {
    assert_eq!(output.len(), reference.len());
    let (mut dot, mut nx, mut ny, mut max, mut sum) = (0f64, 0f64, 0f64, 0f64, 0f64);
    for (&o, &r) in output.iter().zip(reference) {
        let x = (o as i32 - q.zero_point) as f64 * q.scale as f64;
        let y = r as f64;
        dot += x * y;
        nx += x * x;
        ny += y * y;
        let e = (x - y).abs() / q.scale as f64;
        max = f64::max(max, e);
        sum += e;
    }
    Accuracy {
        cosine: dot / (nx.sqrt() * ny.sqrt()),
        max_abs_err_lsb: max,
        mean_abs_err_lsb: sum / output.len() as f64,
    }
}

/// Standard deviation of the synthetic inputs. With weights of standard
/// deviation 0.02, unit inputs would give attention scores within about
/// +-0.05, i.e. uniform attention rows on which every softmax method returns
/// the same bytes; inputs of this size give scores spanning a few units, as a
/// trained model's do, so the softmax methods are compared on real work.
pub const INPUT_STD: f64 = 10.0;

/// The seed of the committed model files (`models/mobilebert_layer.*`).
pub const MODEL_SEED: u64 = 2019;

/// Seeded inputs the committed model is calibrated on (the evaluation input
/// is another one).
pub const CALIBRATION_INPUTS: usize = 2;

/// The bytes of the committed files for `config`: the layer (`.qnb`) and its
/// input file (int8 input and float reference output), built by
/// [`synthetic`] from [`MODEL_SEED`] with [`CALIBRATION_INPUTS`].
pub fn model_files(config: MobileBertConfig) -> Result<(Vec<u8>, Vec<u8>)> {
    let s = synthetic(config, MODEL_SEED, CALIBRATION_INPUTS)?;
    let layer = s.params.to_qnb()?;
    let input = super::LayerInput {
        input: s.input,
        quant: s.params.input,
        reference_output: s.reference,
    }
    .to_qnb(&config)?;
    Ok((layer, input))
}
