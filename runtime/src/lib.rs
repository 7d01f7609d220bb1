//! # qneon-runtime
//!
//! Models run on the [`qneon`] kernels: `.tflite` models through
//! [`interp::Interpreter`] (load, prepare, plan one arena, invoke), and the
//! older synthetic MobileBert layer in the `.qnb` format (to be retired). The library stays a small
//! `no_std` dependency; everything that needs files, a heap and `std` is here.
//!
//! The layer is MobileBert's (the SQuAD configuration by default, see
//! [`MobileBertConfig::SQUAD`]): an input bottleneck and a shared attention
//! bottleneck from the `hidden`-wide input down to `bottleneck` channels,
//! multi-head self-attention whose queries and keys come from the shared
//! bottleneck and values from the input, a stack of feed-forward networks with
//! ReLU, NoNorm (`x * gamma + beta` per channel) after every residual add, and
//! an output bottleneck back to `hidden` channels with a residual to the input:
//!
//! ```text
//! x ──┬─ FC(hidden→bneck) ─ NoNorm ──────────────────────────────┐ b  (layer_input)
//!     ├─ FC(hidden→bneck) ─ NoNorm ─┬─ FC ─ Q ┐                   │
//!     │                             └─ FC ─ K ┴ QK^T/√d ─ softmax ┐│
//!     ├─ FC(hidden→bneck) ─ V ─────────────────────────────── P·V ┘│
//!     │   ctx ─ FC(bneck→bneck) ─ add(b) ─ NoNorm ─ a                │
//!     │   a ─ FC(bneck→ffn) ─ ReLU ─ FC(ffn→bneck) ─ add(a) ─ NoNorm ─ a   (× ffn_count)
//!     └──────────────── a ─ FC(bneck→hidden) ─ add(x) ─ NoNorm ─ output
//! ```
//!
//! Every tensor is int8 with a per-tensor scale and zero point; weights are
//! int8, symmetric, one scale per output channel, biases int32, as a full-integer
//! TFLite model has them. The pieces:
//!
//! * [`qnb`]: the container file format (`.qnb`), validated on load;
//! * [`LayerParams`]: the quantized parameters as plain data, to and from a
//!   `.qnb` file;
//! * [`Layer`]: the prepared operators ([`Gemm`](qneon::Gemm),
//!   [`NoNorm`](qneon::NoNorm), [`Add`](qneon::Add),
//!   [`Softmax`](qneon::Softmax) with a selectable [`Method`](qneon::Method)),
//!   run with a [`Workspace`] and a [`Profiler`] that sees every operator;
//! * [`float`]: a seeded float layer, its f32 reference forward
//!   pass, calibration and quantization, which build the committed model
//!   files and the end-to-end tests;
//! * [`Error`]: model-file problems, and the library's errors wrapped in
//!   [`Error::Kernel`].

#![deny(missing_docs)]
#![forbid(unsafe_code)]

mod config;
mod error;
pub mod float;
pub mod interp;
mod io;
mod layer;
mod names;
pub mod npy;
mod params;
pub mod qnb;

pub use config::MobileBertConfig;
pub use error::{Error, Result};
pub use io::LayerInput;
pub use layer::{Layer, NoProfile, OpKind, Profiler, Workspace};
pub use params::{FcParams, FfnParams, LayerParams, NormParams};
