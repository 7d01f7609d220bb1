//! TRANSPOSE_CONV: TFLite's `Prepare` rules as errors (a constant int32
//! output shape the input, stride, padding and filter follow from, channel
//! counts that agree, the bias's type and length, the filter's scales), and
//! the library's transposed convolution in the arithmetic of the chosen
//! kernel path ([`requantization`]).

use std::ops::Range;

use qneon::ops::conv::Padding;
use qneon::{
    Backend, ConvQuantization, ConvRequantization, TransposeConv2d, TransposeConvGeometry,
};
use qneon_tflite::options::FusedActivation as TfActivation;
use qneon_tflite::schema::BuiltinOptions;
use qneon_tflite::{BuiltinOp, Options as OpOptions, Tensor, TensorType};

use super::buffers::{view, view_mut, Io};
use super::kernel::{Kernel, PreparedOp, Registration};
use super::op::Op;
use crate::error::Result;
use crate::interp::options::{Options, Rounding, TfliteKernels};

/// The ops this family prepares. The XNNPACK delegate takes int8
/// TRANSPOSE_CONV (its deconvolution, `f32` requantization) except where it
/// refuses the geometry ([`xnnpack_takes`]); those layers run in the
/// builtin kernels' arithmetic.
pub(crate) const OPS: &[Registration] =
    &[
        Registration::new(BuiltinOp::TRANSPOSE_CONV, "TRANSPOSE_CONV", prepare)
            .xnnpack()
            .arithmetic(describe),
    ];

/// TFLite's input positions.
const OUTPUT_SHAPE: usize = 0;
const WEIGHTS: usize = 1;
const INPUT: usize = 2;
const BIAS: usize = 3;

/// A prepared transposed convolution; a tile is one output row of the
/// batch (`batch * output_height` tiles), consecutive tiles one library
/// call.
#[derive(Debug)]
struct TransposeConvolution {
    layer: Box<TransposeConv2d>,
    rows: usize,
}

impl Kernel for TransposeConvolution {
    fn tiles(&self) -> usize {
        self.rows
    }

    fn run_tiles(
        &self,
        backend: Backend,
        tiles: Range<usize>,
        io: &mut Io<'_>,
    ) -> Result<(), String> {
        let input: &[i8] = view(io.ins[INPUT])?;
        let output: &mut [i8] = view_mut(io.outs[0])?;
        let rows = tiles.start.min(self.rows)..tiles.end.min(self.rows);
        self.layer
            .run_rows(backend, input, output, rows)
            .map_err(|e| e.to_string())
    }
}

/// The builtin kernels' requantization. Measured on LiteRT 2.3: its
/// reference TRANSPOSE_CONV rounds twice (`MultiplyByQuantizedMultiplier`
/// of the double-rounding build); its optimized kernel ends in
/// `optimized_ops::Quantize`, whose aarch64 NEON blocks of 8 channels
/// round both steps' ties upward
/// ([`ConvRequantization::TiesUpwardInBlocksOf8`]). Under double rounding
/// (TF 2.19's build) both are double rounding.
fn builtin(kernels: TfliteKernels, rounding: Rounding) -> ConvRequantization {
    match (kernels, rounding) {
        (TfliteKernels::Reference, _) | (_, Rounding::Double) => {
            ConvRequantization::Multiplier(Rounding::Double)
        }
        _ => ConvRequantization::TiesUpwardInBlocksOf8,
    }
}

/// Which arithmetic a layer reproduces: XNNPACK's `f32` scale where the
/// delegate takes the layer, else the builtin kernels' (under
/// [`TfliteKernels::Xnnpack`], the optimized ones', as for every op the
/// delegate leaves).
fn requantization(options: &Options, xnnpack_takes: bool) -> ConvRequantization {
    match options.kernels {
        TfliteKernels::Xnnpack if xnnpack_takes => ConvRequantization::XnnpackF32,
        TfliteKernels::Xnnpack => builtin(TfliteKernels::Optimized, options.rounding),
        kernels => builtin(kernels, options.rounding),
    }
}

/// Whether LiteRT 2.3's XNNPACK delegate takes an int8 layer: it refuses
/// SAME padding with a kernel smaller than its stride on either axis
/// (`CalculateTransposeConvPaddings`), leaving such layers to TFLite.
fn xnnpack_takes(padding: Padding, kernel: [usize; 2], stride: [usize; 2]) -> bool {
    padding == Padding::Valid || (kernel[0] >= stride[0] && kernel[1] >= stride[1])
}

/// What inspect says: the requantization [`requantization`] chooses.
fn describe(options: &Options, _: BuiltinOp) -> String {
    if options.kernels == TfliteKernels::Xnnpack {
        return format!(
            "requantization {} (XNNPACK's deconvolution), or {} where the delegate leaves the \
             layer to the builtin kernels (SAME with a kernel smaller than its stride)",
            ConvRequantization::XnnpackF32.name(),
            requantization(options, false).name()
        );
    }
    format!("requantization {}", requantization(options, true).name())
}

/// A positive stride as a size (TFLite: `0 < stride <= INT16_MAX`).
fn stride(op: &Op<'_, '_>, what: &str, v: i32) -> Result<usize> {
    if !(1..=i16::MAX as i32).contains(&v) {
        return Err(op.invalid(format!("{what} {v} must be in 1..=32767")));
    }
    Ok(v as usize)
}

fn rank4(op: &Op<'_, '_>, t: &Tensor<'_>, what: &str) -> Result<[usize; 4]> {
    <[usize; 4]>::try_from(t.shape()).map_err(|_| {
        op.invalid(format!(
            "{what} (tensor {}) shape {:?} is not rank 4",
            t.name(),
            t.shape()
        ))
    })
}

/// TFLite's `Prepare` of TRANSPOSE_CONV for int8 (int16x8 is not built: an
/// unsupported-type error): inputs output shape, weights, input and an
/// optional bias; the output shape a constant int32 vector of 4 positive
/// sizes, its batch the input's and its channels the filter count, equal
/// to the output tensor's shape; rank-4 input and OHWI weights, the
/// weights' depth the input's channels; strides in `1..=32767`; the input
/// size the one a convolution of the output would give (TFLite's padding
/// rule); the weights constant, symmetric, with one scale or one per
/// output channel along axis 0; the bias int32, zero point 0, one value
/// per output channel.
fn prepare(op: &Op<'_, '_>) -> Result<PreparedOp> {
    op.input_count(3, 4)?;
    op.output_count(1)?;
    let output_shape = op.input(OUTPUT_SHAPE)?;
    let (weights, input, output) = (op.input(WEIGHTS)?, op.input(INPUT)?, op.output(0)?);
    let bias = op.optional_input(BIAS);
    op.int8_layer_types(input, weights, output, bias)?;
    let o = match op.operator.options() {
        OpOptions::Builtin(BuiltinOptions::TransposeConvOptions(o)) => o,
        other => {
            return Err(op.invalid(format!(
                "options are {}, not TransposeConvOptions",
                other.table_name().unwrap_or("an unknown table")
            )))
        }
    };
    let padding = match o.padding {
        0 => Padding::Same,
        1 => Padding::Valid,
        p => return Err(op.invalid(format!("padding {p} is neither SAME (0) nor VALID (1)"))),
    };
    let strides = [
        stride(op, "stride height", o.stride_h)?,
        stride(op, "stride width", o.stride_w)?,
    ];
    let activation = op.activation(TfActivation::from_code(o.fused_activation_function))?;

    if output_shape.dtype() != TensorType::Int32 || output_shape.shape().len() != 1 {
        return Err(op.invalid(format!(
            "output shape (tensor {}) is {} of shape {:?}, not a vector of int32",
            output_shape.name(),
            output_shape.dtype().name(),
            output_shape.shape()
        )));
    }
    let sizes = op.constant_ints(output_shape, "output shape")?;
    let sizes: [usize; 4] = sizes
        .iter()
        .map(|&v| usize::try_from(v).ok().filter(|&v| v > 0))
        .collect::<Option<Vec<usize>>>()
        .and_then(|v| v.try_into().ok())
        .ok_or_else(|| {
            op.invalid(format!(
                "output shape (tensor {}) {sizes:?} is not 4 positive sizes",
                output_shape.name()
            ))
        })?;
    let in_shape = rank4(op, input, "input")?;
    let w_shape = rank4(op, weights, "weights")?;
    rank4(op, output, "output")?;
    if in_shape[1..].contains(&0) || w_shape[..3].contains(&0) {
        return Err(op.invalid(format!(
            "input (tensor {}) shape {in_shape:?} or weights (tensor {}) shape {w_shape:?} has \
             a zero size",
            input.name(),
            weights.name()
        )));
    }
    let [out_channels, kernel_height, kernel_width, depth] = w_shape;
    if depth != in_shape[3] {
        return Err(op.invalid(format!(
            "weights (tensor {}) depth {depth} differs from the input (tensor {}) channels {}",
            weights.name(),
            input.name(),
            in_shape[3]
        )));
    }
    if sizes[0] != in_shape[0] || sizes[3] != out_channels {
        return Err(op.invalid(format!(
            "output shape (tensor {}) {sizes:?}: its batch must be the input's {} and its \
             channels the weights' count {out_channels} (tensor {})",
            output_shape.name(),
            in_shape[0],
            weights.name()
        )));
    }
    op.expect_shape(output, &sizes)?;
    let geometry = TransposeConvGeometry::tflite(
        "transpose_conv",
        padding,
        in_shape,
        [sizes[1], sizes[2], sizes[3]],
        [kernel_height, kernel_width],
        strides,
    )
    .map_err(|e| {
        op.invalid(format!(
            "input (tensor {}) shape {in_shape:?} does not follow from the output shape {sizes:?}, \
             the {kernel_height}x{kernel_width} kernel, strides {strides:?} and the padding: {e}",
            input.name()
        ))
    })?;

    let in_q = op.per_tensor(input, "input")?;
    let out_q = op.per_tensor(output, "output")?;
    if !weights.is_constant() || bias.is_some_and(|b| !b.is_constant()) {
        return Err(op.unsupported("weights and bias must be constant"));
    }
    let scales = op.symmetric_scales(weights, "weights", out_channels, 0)?;
    let bias_values = match bias {
        None => None,
        Some(b) => Some(bias_values(op, b, out_channels)?),
    };
    let weight_values = weights
        .constant_values::<i8>()
        .map_err(|e| op.invalid(e.to_string()))?
        .unwrap_or_default();
    let q = ConvQuantization {
        input: in_q,
        weight_scales: &scales,
        output: out_q,
        activation,
        requantization: requantization(
            op.options,
            xnnpack_takes(padding, [kernel_height, kernel_width], strides),
        ),
    };
    let layer = TransposeConv2d::new(geometry, &weight_values, bias_values.as_deref(), &q)
        .map_err(|e| op.kernel_error(e))?;
    let rows = geometry.rows();
    let macs = input.element_count() * kernel_height * kernel_width * out_channels;
    Ok(PreparedOp {
        kernel: Box::new(TransposeConvolution {
            layer: Box::new(layer),
            rows,
        }),
        work: macs as u64,
        unit: "MAC",
        scratch_bytes: 0,
        alias: false,
        state_inputs: Vec::new(),
    })
}

/// The bias values after TFLite's checks: zero point 0, one per output
/// channel.
fn bias_values(op: &Op<'_, '_>, bias: &Tensor<'_>, channels: usize) -> Result<Vec<i32>> {
    if let Some(q) = bias.quantization() {
        if q.zero_points().iter().any(|&z| z != 0) {
            return Err(op.invalid(format!(
                "bias (tensor {}) zero points {:?} must be 0",
                bias.name(),
                q.zero_points()
            )));
        }
    }
    if bias.element_count() != channels {
        return Err(op.invalid(format!(
            "bias (tensor {}) has {} values, not one per output channel ({channels})",
            bias.name(),
            bias.element_count()
        )));
    }
    Ok(bias
        .constant_values::<i32>()
        .map_err(|e| op.invalid(e.to_string()))?
        .unwrap_or_default()
        .to_vec())
}
