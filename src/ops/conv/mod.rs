//! int8 2-D convolution (TFLite's CONV_2D) and depthwise convolution
//! (DEPTHWISE_CONV_2D) over NHWC tensors, per-tensor or per-channel
//! weights, in the arithmetic of each of TFLite's kernel paths.
//!
//! Output `(b, oy, ox, c)` of both, as TFLite's
//! `reference_integer_ops::ConvPerChannel` / `DepthwiseConvPerChannel`
//! compute it:
//!
//! ```text
//! acc = bias[c] + sum over taps (ky, kx) inside the image, input channels i of c:
//!         (x[b][oy*sh - pad_top + ky*dh][ox*sw - pad_left + kx*dw][i] - input_zero_point)
//!         * w[c][ky][kx][i]                                          int32, wrapping
//! out = clamp(requantize_c(acc) + output_zero_point, act_min, act_max)      int8
//! ```
//!
//! where a CONV_2D's output channel `c` reads the `filter depth` input
//! channels of its group (`groups = input channels / filter depth`, each
//! group `output channels / groups` filters wide) and a DEPTHWISE_CONV_2D's
//! reads input channel `c / depth_multiplier` alone. Taps in the padding
//! contribute nothing (as the input zero point would). `requantize_c` is
//! one of [`ConvRequantization`]'s three paths: the quantized multiplier of
//! `input_scale * weight_scale[c] / output_scale` (in `f64`, TFLite's
//! `PopulateConvolutionQuantizationParams`) in double or single rounding,
//! or XNNPACK's `f32` scale.
//!
//! [`Backend::Scalar`](crate::Backend::Scalar) runs the scalar loops, the
//! oracle every faster kernel equals byte for byte. On NEON, a pointwise
//! CONV_2D (1x1 kernel, stride 1, no padding, one group) under a quantized
//! multiplier or XNNPACK's `f32` scale runs through [`Gemm`](crate::Gemm)
//! (it is a fully connected layer over the pixels, with the same
//! per-channel arithmetic); every other CONV_2D under those runs as an
//! implicit GEMM (`igemm`: the windows of a few pixels gathered into a
//! bounded scratch, then the same GEMM), and CONV_2D under LiteRT's
//! ties-upward reference stages runs the scalar loops. Work splits by output rows ([`Conv2d::run_rows`]): every
//! output element depends on its own window only; [`Conv2d::run_band`]
//! and [`DepthwiseConv2d::run_band`] write some rows into a slice of their
//! own (a thread's band); a depthwise layer of few rows also splits by
//! blocks of [`CHANNEL_BLOCK`] output channels
//! ([`DepthwiseConv2d::run_band_channels`]: the kernels run a layer one
//! block at a time, each reading its channels of the input in place).
//!
//! The files: `params.rs` the quantization and output stage, `prepared.rs`
//! what both ops prepare and the checks of a run, `conv2d.rs` and
//! `depthwise_conv2d.rs` each op's `new` and dispatch, `methods.rs` and
//! `band.rs` the run entry points, `scalar.rs`, `igemm.rs` (with
//! `patch_rows.rs`, a small window's rows built in the GEMM's panel) and
//! `depthwise/` the kernels, `geometry.rs` the padding and sizes.

mod band;
mod channels;
mod conv2d;
pub mod depthwise;
mod depthwise_conv2d;
mod geometry;
mod igemm;
mod methods;
mod origin;
mod params;
#[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
mod patch_rows;
mod pixels;
mod prepared;
mod scalar;

pub use self::conv2d::Conv2d;
pub use self::depthwise_conv2d::{DepthwiseConv2d, CHANNEL_BLOCK};
pub use self::geometry::{AxisPadding, ConvGeometry, Padding};
pub(crate) use self::params::OutputStage;
pub use self::params::{ConvQuantization, ConvRequantization};

#[cfg(test)]
mod tests;
