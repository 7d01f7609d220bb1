//! The names of the layer's tensors in a `.qnb` file (and of the activations
//! the float forward pass reports for calibration). Static strings, so that a
//! missing tensor's error can name it.

/// A fully connected layer: `PREFIX.weight` (int8 `[out, in]`, per-channel
/// scales), `PREFIX.bias` (int32 `[out]`), `PREFIX.output` (its output's
/// quantization).
#[derive(Clone, Copy, Debug)]
pub(crate) struct FcNames {
    pub weight: &'static str,
    pub bias: &'static str,
    pub output: &'static str,
}

/// A NoNorm: `PREFIX.gamma` (int8 `[channels]`, per-channel scales),
/// `PREFIX.beta` (int32 `[channels]`), `PREFIX.output`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct NormNames {
    pub gamma: &'static str,
    pub beta: &'static str,
    pub output: &'static str,
}

/// One feed-forward network: `ffnI.intermediate`, `ffnI.output`,
/// `ffnI.residual.output` (the add) and `ffnI.norm`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct FfnNames {
    pub intermediate: FcNames,
    pub output: FcNames,
    pub residual: &'static str,
    pub norm: NormNames,
}

macro_rules! fc {
    ($p:expr) => {
        FcNames {
            weight: concat!($p, ".weight"),
            bias: concat!($p, ".bias"),
            output: concat!($p, ".output"),
        }
    };
}

macro_rules! norm {
    ($p:expr) => {
        NormNames {
            gamma: concat!($p, ".gamma"),
            beta: concat!($p, ".beta"),
            output: concat!($p, ".output"),
        }
    };
}

macro_rules! ffn {
    ($p:literal) => {
        FfnNames {
            intermediate: fc!(concat!($p, ".intermediate")),
            output: fc!(concat!($p, ".output")),
            residual: concat!($p, ".residual.output"),
            norm: norm!(concat!($p, ".norm")),
        }
    };
}

pub(crate) const INPUT: &str = "input.output";
pub(crate) const BOTTLENECK_INPUT: FcNames = fc!("bottleneck_input");
pub(crate) const BOTTLENECK_INPUT_NORM: NormNames = norm!("bottleneck_input_norm");
pub(crate) const BOTTLENECK_ATTENTION: FcNames = fc!("bottleneck_attention");
pub(crate) const BOTTLENECK_ATTENTION_NORM: NormNames = norm!("bottleneck_attention_norm");
pub(crate) const QUERY: FcNames = fc!("query");
pub(crate) const KEY: FcNames = fc!("key");
pub(crate) const VALUE: FcNames = fc!("value");
/// `Q K^T / sqrt(head_dim)`, before the softmax.
pub(crate) const SCORES: &str = "scores.output";
/// `P V`, the heads merged.
pub(crate) const CONTEXT: &str = "context.output";
pub(crate) const ATTENTION_OUTPUT: FcNames = fc!("attention_output");
pub(crate) const ATTENTION_RESIDUAL: &str = "attention_residual.output";
pub(crate) const ATTENTION_NORM: NormNames = norm!("attention_norm");
pub(crate) const FFN: [FfnNames; crate::config::MobileBertConfig::MAX_FFN] =
    [ffn!("ffn0"), ffn!("ffn1"), ffn!("ffn2"), ffn!("ffn3")];
pub(crate) const OUTPUT_BOTTLENECK: FcNames = fc!("output_bottleneck");
pub(crate) const OUTPUT_RESIDUAL: &str = "output_residual.output";
pub(crate) const OUTPUT_NORM: NormNames = norm!("output_norm");
