//! [`LayerParams`] to and from a `.qnb` file, and the input file (the int8
//! input and the float reference output).
//!
//! A layer file holds, under the names of [`crate::names`]:
//!
//! * metadata `seq_len`, `hidden`, `bottleneck`, `heads`, `head_dim`,
//!   `ffn_count`, `intermediate` (the [`MobileBertConfig`]) and `layer_format`
//!   (1);
//! * per fully connected layer `P`: `P.weight` (int8 `[outputs, inputs]`,
//!   per-channel scales), `P.bias` (int32 `[outputs]`);
//! * per NoNorm `P`: `P.gamma` (int8 `[channels]`, per-channel scales),
//!   `P.beta` (int32 `[channels]`);
//! * per activation `A` (every operator's output, and `input.output`): an
//!   empty int8 tensor `A` of shape `[0]` whose per-tensor quantization is the
//!   activation's, so that the file's own validation checks its scale and zero
//!   point.
//!
//! An input file holds `input` (int8 `[seq_len, hidden]`, per-tensor) and
//! `reference_output` (f32 `[seq_len, hidden]`, the float layer's output).

use crate::config::MobileBertConfig;
use crate::error::{Error, Result};
use crate::names::{self, FcNames, NormNames};
use crate::params::{FcParams, FfnParams, LayerParams, NormParams};
use crate::qnb::{Qnb, QnbWriter, Quant};
use qneon::QuantParams;
use std::vec::Vec;

/// The `layer_format` metadata value of this layout.
const LAYER_FORMAT: i64 = 1;

const CONFIG_KEYS: [&str; 7] = [
    "seq_len",
    "hidden",
    "bottleneck",
    "heads",
    "head_dim",
    "ffn_count",
    "intermediate",
];

fn config_values(c: &MobileBertConfig) -> [usize; 7] {
    [
        c.seq_len,
        c.hidden,
        c.bottleneck,
        c.heads,
        c.head_dim,
        c.ffn_count,
        c.intermediate,
    ]
}

fn per_tensor(q: QuantParams) -> Quant {
    Quant::PerTensor {
        scale: q.scale,
        zero_point: q.zero_point,
    }
}

fn write_activation(w: &mut QnbWriter, name: &str, q: QuantParams) -> Result<()> {
    w.tensor::<i8>(name, &[0], per_tensor(q), &[])
}

fn write_fc(w: &mut QnbWriter, n: FcNames, p: &FcParams) -> Result<()> {
    w.tensor(
        n.weight,
        &[p.outputs, p.inputs],
        Quant::PerChannel {
            scales: p.weight_scales.clone(),
        },
        &p.weight,
    )?;
    w.tensor(n.bias, &[p.outputs], Quant::None, &p.bias)?;
    write_activation(w, n.output, p.output)
}

fn write_norm(w: &mut QnbWriter, n: NormNames, p: &NormParams) -> Result<()> {
    w.tensor(
        n.gamma,
        &[p.gamma.len()],
        Quant::PerChannel {
            scales: p.gamma_scales.clone(),
        },
        &p.gamma,
    )?;
    w.tensor(n.beta, &[p.beta.len()], Quant::None, &p.beta)?;
    write_activation(w, n.output, p.output)
}

fn read_activation(f: &Qnb<'_>, name: &'static str) -> Result<QuantParams> {
    match f.tensor::<i8>(name, &[0])?.quant {
        Quant::PerTensor { scale, zero_point } => Ok(QuantParams::new(scale, zero_point)),
        _ => Err(Error::ModelTensor {
            name,
            problem: "an activation needs per-tensor quantization",
        }),
    }
}

fn per_channel(name: &'static str, quant: Quant) -> Result<Vec<f32>> {
    match quant {
        Quant::PerChannel { scales } => Ok(scales),
        _ => Err(Error::ModelTensor {
            name,
            problem: "needs per-channel quantization",
        }),
    }
}

fn read_fc(f: &Qnb<'_>, n: FcNames, inputs: usize, outputs: usize) -> Result<FcParams> {
    let weight = f.tensor::<i8>(n.weight, &[outputs, inputs])?;
    let bias = f.tensor::<i32>(n.bias, &[outputs])?;
    Ok(FcParams {
        inputs,
        outputs,
        weight: weight.data.to_vec(),
        weight_scales: per_channel(n.weight, weight.quant)?,
        bias: bias.data.to_vec(),
        output: read_activation(f, n.output)?,
    })
}

fn read_norm(f: &Qnb<'_>, n: NormNames, channels: usize) -> Result<NormParams> {
    let gamma = f.tensor::<i8>(n.gamma, &[channels])?;
    let beta = f.tensor::<i32>(n.beta, &[channels])?;
    Ok(NormParams {
        gamma: gamma.data.to_vec(),
        gamma_scales: per_channel(n.gamma, gamma.quant)?,
        beta: beta.data.to_vec(),
        output: read_activation(f, n.output)?,
    })
}

impl LayerParams {
    /// The layer as a `.qnb` file. Errors if a parameter does not fit the
    /// format (a non-finite or non-positive scale, a zero point out of range,
    /// an array of the wrong length).
    pub fn to_qnb(&self) -> Result<Vec<u8>> {
        let c = &self.config;
        c.validate()?;
        let mut w = QnbWriter::new();
        w.meta("layer_format", LAYER_FORMAT)?;
        for (key, value) in CONFIG_KEYS.iter().zip(config_values(c)) {
            w.meta(key, value as i64)?;
        }
        let w = &mut w;
        write_activation(w, names::INPUT, self.input)?;
        write_fc(w, names::BOTTLENECK_INPUT, &self.bottleneck_input)?;
        write_norm(w, names::BOTTLENECK_INPUT_NORM, &self.bottleneck_input_norm)?;
        write_fc(w, names::BOTTLENECK_ATTENTION, &self.bottleneck_attention)?;
        write_norm(
            w,
            names::BOTTLENECK_ATTENTION_NORM,
            &self.bottleneck_attention_norm,
        )?;
        write_fc(w, names::QUERY, &self.query)?;
        write_fc(w, names::KEY, &self.key)?;
        write_fc(w, names::VALUE, &self.value)?;
        write_activation(w, names::SCORES, self.scores)?;
        write_activation(w, names::CONTEXT, self.context)?;
        write_fc(w, names::ATTENTION_OUTPUT, &self.attention_output)?;
        write_activation(w, names::ATTENTION_RESIDUAL, self.attention_residual)?;
        write_norm(w, names::ATTENTION_NORM, &self.attention_norm)?;
        for (p, n) in self.ffn.iter().zip(names::FFN) {
            write_fc(w, n.intermediate, &p.intermediate)?;
            write_fc(w, n.output, &p.output)?;
            write_activation(w, n.residual, p.residual)?;
            write_norm(w, n.norm, &p.norm)?;
        }
        write_fc(w, names::OUTPUT_BOTTLENECK, &self.output_bottleneck)?;
        write_activation(w, names::OUTPUT_RESIDUAL, self.output_residual)?;
        write_norm(w, names::OUTPUT_NORM, &self.output_norm)?;
        Ok(w.to_bytes())
    }

    /// Reads a layer from a parsed `.qnb` file: the configuration from the
    /// metadata (validated), then every tensor with the shape it implies.
    /// Errors name the missing or mismatched metadata key or tensor.
    pub fn from_qnb(f: &Qnb<'_>) -> Result<LayerParams> {
        if f.meta("layer_format")? != LAYER_FORMAT {
            return Err(Error::ModelTensor {
                name: "layer_format",
                problem: "unsupported layer format (this build reads format 1)",
            });
        }
        let mut v = [0usize; 7];
        for (slot, key) in v.iter_mut().zip(CONFIG_KEYS) {
            let raw = f.meta(key)?;
            *slot = usize::try_from(raw).map_err(|_| Error::ModelTensor {
                name: key,
                problem: "metadata value out of range",
            })?;
        }
        let config = MobileBertConfig {
            seq_len: v[0],
            hidden: v[1],
            bottleneck: v[2],
            heads: v[3],
            head_dim: v[4],
            ffn_count: v[5],
            intermediate: v[6],
        };
        config.validate()?;
        let (h, b, i) = (config.hidden, config.bottleneck, config.intermediate);
        let mut ffn = Vec::with_capacity(config.ffn_count);
        for n in &names::FFN[..config.ffn_count] {
            ffn.push(FfnParams {
                intermediate: read_fc(f, n.intermediate, b, i)?,
                output: read_fc(f, n.output, i, b)?,
                residual: read_activation(f, n.residual)?,
                norm: read_norm(f, n.norm, b)?,
            });
        }
        Ok(LayerParams {
            config,
            input: read_activation(f, names::INPUT)?,
            bottleneck_input: read_fc(f, names::BOTTLENECK_INPUT, h, b)?,
            bottleneck_input_norm: read_norm(f, names::BOTTLENECK_INPUT_NORM, b)?,
            bottleneck_attention: read_fc(f, names::BOTTLENECK_ATTENTION, h, b)?,
            bottleneck_attention_norm: read_norm(f, names::BOTTLENECK_ATTENTION_NORM, b)?,
            query: read_fc(f, names::QUERY, b, b)?,
            key: read_fc(f, names::KEY, b, b)?,
            value: read_fc(f, names::VALUE, h, b)?,
            scores: read_activation(f, names::SCORES)?,
            context: read_activation(f, names::CONTEXT)?,
            attention_output: read_fc(f, names::ATTENTION_OUTPUT, b, b)?,
            attention_residual: read_activation(f, names::ATTENTION_RESIDUAL)?,
            attention_norm: read_norm(f, names::ATTENTION_NORM, b)?,
            ffn,
            output_bottleneck: read_fc(f, names::OUTPUT_BOTTLENECK, b, h)?,
            output_residual: read_activation(f, names::OUTPUT_RESIDUAL)?,
            output_norm: read_norm(f, names::OUTPUT_NORM, h)?,
        })
    }
}

/// The contents of an input file.
#[derive(Clone, Debug, PartialEq)]
pub struct LayerInput {
    /// `seq_len x hidden` int8.
    pub input: Vec<i8>,
    /// Its quantization.
    pub quant: QuantParams,
    /// The float layer's output for the float input `input` quantizes.
    pub reference_output: Vec<f32>,
}

impl LayerInput {
    /// As a `.qnb` file (`seq_len x hidden` given by `config`).
    pub fn to_qnb(&self, config: &MobileBertConfig) -> Result<Vec<u8>> {
        let shape = [config.seq_len, config.hidden];
        let mut w = QnbWriter::new();
        w.tensor("input", &shape, per_tensor(self.quant), &self.input)?;
        w.tensor(
            "reference_output",
            &shape,
            Quant::None,
            &self.reference_output,
        )?;
        Ok(w.to_bytes())
    }

    /// Reads an input file for a layer of shape `config`.
    pub fn from_qnb(f: &Qnb<'_>, config: &MobileBertConfig) -> Result<LayerInput> {
        let shape = [config.seq_len, config.hidden];
        let input = f.tensor::<i8>("input", &shape)?;
        let Quant::PerTensor { scale, zero_point } = input.quant else {
            return Err(Error::ModelTensor {
                name: "input",
                problem: "needs per-tensor quantization",
            });
        };
        Ok(LayerInput {
            input: input.data.to_vec(),
            quant: QuantParams::new(scale, zero_point),
            reference_output: f.tensor::<f32>("reference_output", &shape)?.data.to_vec(),
        })
    }
}
