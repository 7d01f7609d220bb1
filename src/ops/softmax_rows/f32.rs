//! The prepared form of softmax's [`Method::DequantF32`](crate::Method::DequantF32):
//! the `f32` multipliers its row code (`ops/softmax/f32.rs`) and the
//! thresholded softmax's row sums start from.

use crate::ops::dequant_f32::f32_multiplier;
use crate::quant::QuantParams;

/// Prepared `Method::DequantF32` softmax.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct SoftmaxF32 {
    /// `beta * input_scale` (real units per input step), rounded once to `f32`.
    pub(crate) input_multiplier: f32,
    /// `1 / output_scale` in `f32`.
    pub(crate) inv_output_scale: f32,
    /// Output zero point.
    pub(crate) output_zero_point: i32,
}

impl SoftmaxF32 {
    /// From validated quantization (`beta` finite and > 0).
    pub(crate) fn new(input: QuantParams, beta: f32, output: QuantParams) -> Self {
        SoftmaxF32 {
            input_multiplier: f32_multiplier(beta as f64 * input.scale as f64),
            inv_output_scale: 1.0 / output.scale,
            output_zero_point: output.zero_point,
        }
    }
}
