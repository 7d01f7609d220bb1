//! The quantized layer as plain data: what a `.qnb` file holds.

use crate::config::MobileBertConfig;
use qneon::QuantParams;
use std::vec::Vec;

/// A fully connected layer, TFLite's per-channel int8 `FullyConnected`.
#[derive(Clone, Debug, PartialEq)]
pub struct FcParams {
    /// Input width (depth).
    pub inputs: usize,
    /// Output channels.
    pub outputs: usize,
    /// `outputs x inputs` int8, row-major, symmetric (zero point 0), row `c`
    /// in units of `weight_scales[c]`.
    pub weight: Vec<i8>,
    /// One scale per output channel.
    pub weight_scales: Vec<f32>,
    /// `outputs` int32, channel `c` in units of `input_scale * weight_scales[c]`.
    pub bias: Vec<i32>,
    /// The output's quantization.
    pub output: QuantParams,
}

/// A NoNorm (`x * gamma + beta` per channel), quantized as
/// [`NoNorm`](qneon::NoNorm) describes.
#[derive(Clone, Debug, PartialEq)]
pub struct NormParams {
    /// One int8 gamma per channel, symmetric, in units of `gamma_scales[c]`.
    pub gamma: Vec<i8>,
    /// One scale per channel.
    pub gamma_scales: Vec<f32>,
    /// One int32 beta per channel, in units of `input_scale * gamma_scales[c]`.
    pub beta: Vec<i32>,
    /// The output's quantization.
    pub output: QuantParams,
}

/// One feed-forward network: `norm(residual + output(relu(intermediate(x))))`.
#[derive(Clone, Debug, PartialEq)]
pub struct FfnParams {
    /// `bottleneck -> intermediate`, ReLU fused.
    pub intermediate: FcParams,
    /// `intermediate -> bottleneck`.
    pub output: FcParams,
    /// The quantization of the residual add's output.
    pub residual: QuantParams,
    /// The NoNorm after the add.
    pub norm: NormParams,
}

/// Every quantized parameter of one MobileBert layer (see the [module
/// docs](super) for the data flow).
#[derive(Clone, Debug, PartialEq)]
pub struct LayerParams {
    /// The shape.
    pub config: MobileBertConfig,
    /// The input's quantization.
    pub input: QuantParams,
    /// `hidden -> bottleneck`: the layer input `b` of the residual after attention.
    pub bottleneck_input: FcParams,
    /// NoNorm of `bottleneck_input`.
    pub bottleneck_input_norm: NormParams,
    /// `hidden -> bottleneck`: the shared input of the queries and keys.
    pub bottleneck_attention: FcParams,
    /// NoNorm of `bottleneck_attention`.
    pub bottleneck_attention_norm: NormParams,
    /// `bottleneck -> bottleneck` queries.
    pub query: FcParams,
    /// `bottleneck -> bottleneck` keys; output symmetric (zero point 0): keys
    /// are the weight side of `Q K^T`.
    pub key: FcParams,
    /// `hidden -> bottleneck` values; output symmetric: the weight side of `P V`.
    pub value: FcParams,
    /// The quantization of the attention scores `Q K^T / sqrt(head_dim)`.
    pub scores: QuantParams,
    /// The quantization of the attention context `P V`.
    pub context: QuantParams,
    /// `bottleneck -> bottleneck` after attention.
    pub attention_output: FcParams,
    /// The quantization of `attention_output + bottleneck_input_norm`.
    pub attention_residual: QuantParams,
    /// NoNorm after the attention residual.
    pub attention_norm: NormParams,
    /// The feed-forward networks, in order.
    pub ffn: Vec<FfnParams>,
    /// `bottleneck -> hidden`.
    pub output_bottleneck: FcParams,
    /// The quantization of `output_bottleneck + input`.
    pub output_residual: QuantParams,
    /// The final NoNorm: the layer's output.
    pub output_norm: NormParams,
}

impl LayerParams {
    /// The output's quantization.
    pub fn output(&self) -> QuantParams {
        self.output_norm.output
    }
}
