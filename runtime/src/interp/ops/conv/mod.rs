//! CONV_2D and DEPTHWISE_CONV_2D: TFLite's `Prepare` rules as errors, the
//! output shape and padding as TFLite derives them from SAME / VALID, and
//! the library's scalar convolutions in the arithmetic of the chosen
//! kernel path ([`requantization`]).

use std::ops::Range;

use qneon::ops::conv::{ConvGeometry, Padding, CHANNEL_BLOCK};
use qneon::{Backend, Conv2d, ConvQuantization, ConvRequantization, DepthwiseConv2d};
use qneon_tflite::schema::BuiltinOptions;
use qneon_tflite::{BuiltinOp, Options as OpOptions, Tensor};

use super::buffers::{output_band, view, view_mut, Io};
use super::kernel::{Columns, Kernel, PreparedOp, Registration};
use super::op::{Op, PadFold};
use crate::error::Result;
use crate::interp::options::{Options, Rounding, TfliteKernels};

/// The ops this family prepares.
pub(crate) const OPS: &[Registration] = &[
    Registration::new(BuiltinOp::CONV_2D, "CONV_2D", prepare)
        .xnnpack()
        .arithmetic(describe),
    Registration::new(BuiltinOp::DEPTHWISE_CONV_2D, "DEPTHWISE_CONV_2D", prepare)
        .xnnpack()
        .arithmetic(describe),
];

/// The library's prepared convolution.
#[derive(Debug)]
enum Layer {
    Conv(Box<Conv2d>),
    /// The layer, and whether the planner may cut it by output channels
    /// ([`by_channels`]).
    Depthwise(Box<DepthwiseConv2d>, bool),
}

/// Output rows (of the batch) below which a DEPTHWISE_CONV_2D may also be
/// cut by blocks of output channels: with this many rows, bands give
/// 16 threads a share each, and channels cannot do better; below it (the
/// late layers: person_detect's 6x6 and 3x3 pixels, MobileNetV2's 7x7 and
/// 14x14) the cost model (`threads/columns.rs`) weighs the two cuts.
const DEPTHWISE_COLUMN_ROWS: usize = 16;

/// Whether a depthwise layer of geometry `g` may be cut by channel blocks
/// too: few output rows ([`DEPTHWISE_COLUMN_ROWS`]) and channels for at
/// least two of the kernels' blocks ([`CHANNEL_BLOCK`]).
fn by_channels(g: &ConvGeometry) -> bool {
    g.batch * g.output_height < DEPTHWISE_COLUMN_ROWS && g.output_channels > CHANNEL_BLOCK
}

/// A prepared convolution; a tile is one output row of the batch
/// (`batch * output_height` tiles), or for a pointwise layer a block of
/// output pixels (its GEMM's rows), consecutive tiles one library call.
/// Threads split it by tiles, each thread writing its band of the output
/// from the whole input, with a scratch of its own.
#[derive(Debug)]
struct Convolution {
    layer: Layer,
    rows: usize,
    /// Elements (bytes) of one output row: `output_width * channels`.
    row_len: usize,
    /// For a pointwise CONV_2D, its tiles instead: groups of `grain`
    /// output pixels ([`Conv2d::pixel_grain`], the GEMM's row block) of
    /// its `pixels`, each pixel `channels` bytes. A band of output rows
    /// whose pixels are not a whole number of row blocks (person_detect's
    /// 12x12 and 6x6 layers: 12 or 6 pixels a row, blocks of 8) made two
    /// threads each compute the block they share; cut by pixel blocks, the
    /// bands together cost what the whole call costs.
    pixel_tiles: Option<PixelTiles>,
}

/// The tiles of a pointwise CONV_2D cut by pixels ([`Convolution`]).
#[derive(Clone, Copy, Debug)]
struct PixelTiles {
    grain: usize,
    pixels: usize,
    channels: usize,
}

impl PixelTiles {
    /// The output pixels of tiles `tiles`.
    fn pixels(&self, tiles: Range<usize>) -> Range<usize> {
        let end = tiles.end.saturating_mul(self.grain).min(self.pixels);
        tiles.start.saturating_mul(self.grain).min(end)..end
    }
}

impl Kernel for Convolution {
    fn tiles(&self) -> usize {
        match self.pixel_tiles {
            Some(p) => p.pixels.div_ceil(p.grain),
            None => self.rows,
        }
    }

    fn split(&self) -> Option<usize> {
        Some(1)
    }

    fn band(&self, tiles: Range<usize>) -> Range<usize> {
        match self.pixel_tiles {
            Some(p) => {
                let pixels = p.pixels(tiles);
                pixels.start * p.channels..pixels.end * p.channels
            }
            None => tiles.start * self.row_len..tiles.end * self.row_len,
        }
    }

    /// Tiles `tiles` into `io.outs[0]`, which holds the output from byte
    /// `io.out_start` on: the whole output, or a thread's band.
    fn run_tiles(
        &self,
        backend: Backend,
        tiles: Range<usize>,
        io: &mut Io<'_>,
    ) -> Result<(), String> {
        let input: &[i8] = view(io.ins[0])?;
        if let (Some(p), Layer::Conv(c)) = (self.pixel_tiles, &self.layer) {
            let pixels = p.pixels(tiles);
            let elements = pixels.start * p.channels..pixels.end * p.channels;
            let band = output_band::<i8>(io.outs[0], io.out_start, elements)?;
            return c
                .run_pixels(backend, input, band, pixels)
                .map_err(|e| e.to_string());
        }
        let rows = tiles.start.min(self.rows)..tiles.end.min(self.rows);
        let elements = rows.start * self.row_len..rows.end * self.row_len;
        let band = output_band::<i8>(io.outs[0], io.out_start, elements)?;
        let result = match &self.layer {
            Layer::Conv(c) => {
                let scratch: &mut [i8] = view_mut(&mut *io.scratch)?;
                c.run_band_with_scratch(backend, input, band, rows, scratch)
            }
            Layer::Depthwise(d, _) => d.run_band(backend, input, band, rows),
        };
        result.map_err(|e| e.to_string())
    }

    /// The whole node on one thread: the library's whole-output calls (the
    /// instructions a convolution ran before threads; `run_tiles`' bands
    /// subtract a first row per output row).
    fn run(&self, backend: Backend, io: &mut Io<'_>) -> Result<(), String> {
        let input: &[i8] = view(io.ins[0])?;
        let output: &mut [i8] = view_mut(io.outs[0])?;
        let rows = 0..self.rows;
        let result = match &self.layer {
            Layer::Conv(c) => {
                // The implicit GEMM's few pixels of windows, planned in the
                // arena (`scratch_bytes` below).
                let scratch: &mut [i8] = view_mut(&mut *io.scratch)?;
                c.run_rows_with_scratch(backend, input, output, rows, scratch)
            }
            Layer::Depthwise(d, _) => d.run_rows(backend, input, output, rows),
        };
        result.map_err(|e| e.to_string())
    }

    /// A pointwise CONV_2D (its GEMM) and a depthwise layer with few rows
    /// (its channel blocks) also split by output channels: every pixel's,
    /// a range of channels each.
    fn columns(&self) -> Option<Columns> {
        let (channels, grain, whole_rows) = match &self.layer {
            Layer::Conv(c) => (c.geometry().output_channels, c.channel_grain()?, false),
            Layer::Depthwise(d, true) => (d.geometry().output_channels, CHANNEL_BLOCK, true),
            Layer::Depthwise(_, false) => return None,
        };
        Some(Columns {
            rows: self.rows * self.row_len / channels.max(1),
            columns: channels,
            grain,
            elem: 1,
            whole_rows,
        })
    }

    fn run_columns(
        &self,
        backend: Backend,
        columns: Range<usize>,
        io: &mut Io<'_>,
        tile: &mut [u8],
    ) -> Result<(), String> {
        let input: &[i8] = view(io.ins[0])?;
        let tile: &mut [i8] = view_mut(tile)?;
        let result = match &self.layer {
            Layer::Conv(c) => c.run_channels(backend, input, tile, columns),
            // The tile is the whole output's place: its channels in place.
            Layer::Depthwise(d, true) => {
                d.run_band_channels(backend, input, tile, (0..self.rows, columns))
            }
            Layer::Depthwise(_, false) => {
                return Err(
                    "a depthwise convolution with many rows does not split by channels".to_string(),
                )
            }
        };
        result.map_err(|e| e.to_string())
    }
}

/// Which arithmetic a convolution reproduces. Measured on LiteRT 2.3
/// (issue 26): its reference CONV_2D and DEPTHWISE_CONV_2D requantize
/// with double rounding, its optimized (aarch64 builtin) CONV_2D with
/// single rounding; TF 2.19's bundled TFLite rounds twice everywhere
/// ([`Rounding::Double`]); the XNNPACK delegate scales in `f32`. LiteRT's
/// aarch64 optimized DEPTHWISE_CONV_2D rounds as the kernel it picks for
/// the layer (`depthwise`: its geometry and multiplier):
/// [`DepthwiseConv2d::litert_aarch64_requantization`] (double rounding
/// with ties upward in its 3x3 kernel, and on whole blocks of 8 channels
/// in its general one).
fn requantization(
    options: &Options,
    builtin: BuiltinOp,
    depthwise: Option<(&ConvGeometry, usize)>,
) -> ConvRequantization {
    match (options.kernels, options.rounding) {
        (TfliteKernels::Xnnpack, _) => ConvRequantization::XnnpackF32,
        (TfliteKernels::Optimized, Rounding::Single) if builtin == BuiltinOp::CONV_2D => {
            ConvRequantization::Multiplier(Rounding::Single)
        }
        (TfliteKernels::Optimized, Rounding::Single) => match depthwise {
            Some((g, m)) => DepthwiseConv2d::litert_aarch64_requantization(g, m),
            None => ConvRequantization::Multiplier(Rounding::Double),
        },
        _ => ConvRequantization::Multiplier(Rounding::Double),
    }
}

/// What inspect says: the requantization [`requantization`] chooses.
fn describe(options: &Options, builtin: BuiltinOp) -> String {
    if builtin == BuiltinOp::DEPTHWISE_CONV_2D
        && (options.kernels, options.rounding) == (TfliteKernels::Optimized, Rounding::Single)
    {
        return format!(
            "requantization {} (LiteRT's aarch64 3x3 kernel) or {} (its general kernel), \
             as the layer's shape picks",
            ConvRequantization::DoubleTiesUpward.name(),
            ConvRequantization::TiesUpwardInBlocksOf8.name()
        );
    }
    format!(
        "requantization {}",
        requantization(options, builtin, None).name()
    )
}

/// The options both ops share.
struct WindowOptions {
    padding: i8,
    stride: [i32; 2],
    dilation: [i32; 2],
    activation: i8,
}

fn window_options(op: &Op<'_, '_>) -> Result<WindowOptions> {
    match op.operator.options() {
        OpOptions::Builtin(BuiltinOptions::Conv2DOptions(o))
            if op.builtin == BuiltinOp::CONV_2D =>
        {
            Ok(WindowOptions {
                padding: o.padding,
                stride: [o.stride_h, o.stride_w],
                dilation: [o.dilation_h_factor, o.dilation_w_factor],
                activation: o.fused_activation_function,
            })
        }
        OpOptions::Builtin(BuiltinOptions::DepthwiseConv2DOptions(o))
            if op.builtin == BuiltinOp::DEPTHWISE_CONV_2D =>
        {
            Ok(WindowOptions {
                padding: o.padding,
                stride: [o.stride_h, o.stride_w],
                dilation: [o.dilation_h_factor, o.dilation_w_factor],
                activation: o.fused_activation_function,
            })
        }
        other => Err(op.invalid(format!(
            "options are {}, not the op's table",
            other.table_name().unwrap_or("an unknown table")
        ))),
    }
}

/// A positive stride or dilation as a size.
fn positive(op: &Op<'_, '_>, what: &str, v: i32) -> Result<usize> {
    usize::try_from(v)
        .ok()
        .filter(|&v| v > 0)
        .ok_or_else(|| op.invalid(format!("{what} {v} must be > 0")))
}

fn rank4(op: &Op<'_, '_>, t: &Tensor<'_>, what: &str) -> Result<[usize; 4]> {
    <[usize; 4]>::try_from(t.shape())
        .map_err(|_| op.invalid(format!("{what} shape {:?} is not rank 4", t.shape())))
}

/// TFLite's `Prepare` of CONV_2D and DEPTHWISE_CONV_2D for int8: int8
/// input, filter and output, an optional int32 bias of one value per
/// output channel at scale `input * filter`, the filter constant and
/// symmetric with one scale or one per output channel (axis 0 for CONV_2D,
/// 3 for DEPTHWISE_CONV_2D), positive strides and dilations, channel counts
/// that agree (CONV_2D: input channels a multiple of the filter's, output
/// channels a multiple of the groups; DEPTHWISE_CONV_2D: a filter of one
/// row of output channels, a multiple of the input channels), and the
/// output shape TFLite computes for the padding.
fn prepare(op: &Op<'_, '_>) -> Result<PreparedOp> {
    let depthwise = op.builtin == BuiltinOp::DEPTHWISE_CONV_2D;
    op.input_count(2, 3)?;
    op.output_count(1)?;
    let (input, filter, output) = (op.input(0)?, op.input(1)?, op.output(0)?);
    let bias = op.optional_input(2);
    op.int8_layer_types(input, filter, output, bias)?;
    let o = window_options(op)?;
    let padding = match o.padding {
        0 => Padding::Same,
        1 => Padding::Valid,
        p => return Err(op.invalid(format!("padding {p} is neither SAME (0) nor VALID (1)"))),
    };
    let stride = [
        positive(op, "stride height", o.stride[0])?,
        positive(op, "stride width", o.stride[1])?,
    ];
    let dilation = [
        positive(op, "dilation height factor", o.dilation[0])?,
        positive(op, "dilation width factor", o.dilation[1])?,
    ];
    let activation = op.activation(qneon_tflite::options::FusedActivation::from_code(
        o.activation,
    ))?;

    let in_shape = rank4(op, input, "input")?;
    let f_shape = rank4(op, filter, "filter")?;
    rank4(op, output, "output")?;
    let in_channels = in_shape[3];
    let (out_channels, kernel, filter_depth) = if depthwise {
        if f_shape[0] != 1 {
            return Err(op.invalid(format!(
                "filter shape {f_shape:?}: a depthwise filter has 1 as its first dimension"
            )));
        }
        (f_shape[3], [f_shape[1], f_shape[2]], 1)
    } else {
        (f_shape[0], [f_shape[1], f_shape[2]], f_shape[3])
    };
    if in_channels == 0 || filter_depth == 0 || out_channels == 0 {
        return Err(op.invalid(format!(
            "input shape {in_shape:?} and filter shape {f_shape:?} have no channels"
        )));
    }
    let depth_multiplier = if depthwise {
        if out_channels % in_channels != 0 {
            return Err(op.invalid(format!(
                "filter channels {out_channels} (tensor {}) are not a multiple of the input \
                 channels {in_channels} (tensor {})",
                filter.name(),
                input.name()
            )));
        }
        out_channels / in_channels
    } else {
        if in_channels % filter_depth != 0 {
            return Err(op.invalid(format!(
                "input channels {in_channels} (tensor {}) are not a multiple of the filter's \
                 {filter_depth} (tensor {})",
                input.name(),
                filter.name()
            )));
        }
        let groups = in_channels / filter_depth;
        if out_channels % groups != 0 {
            return Err(op.invalid(format!(
                "output channels {out_channels} (tensor {}) are not a multiple of the {groups} \
                 groups",
                filter.name()
            )));
        }
        1
    };

    let geometry = ConvGeometry::tflite(
        if depthwise {
            "depthwise_conv_2d"
        } else {
            "conv_2d"
        },
        padding,
        in_shape,
        out_channels,
        kernel,
        stride,
        dilation,
    )
    .map_err(|e| op.invalid(e.to_string()))?;
    op.expect_shape(
        output,
        &[
            in_shape[0],
            geometry.output_height,
            geometry.output_width,
            out_channels,
        ],
    )?;

    // With a PAD folded in, the kernels read the PAD's input, its rows and
    // columns added to the padding; TFLite's own choices (the output
    // shape, the requantization a path picks from the shape) stay those
    // of the layer as written.
    let kernel_geometry = match op.pad_fold {
        Some(fold) => folded_geometry(op, &geometry, fold)?,
        None => geometry,
    };
    let in_q = op.per_tensor(input, "input")?;
    let out_q = op.per_tensor(output, "output")?;
    if !filter.is_constant() || bias.is_some_and(|b| !b.is_constant()) {
        return Err(op.unsupported("filter and bias must be constant"));
    }
    let scales = op.symmetric_scales(
        filter,
        "filter",
        out_channels,
        if depthwise { 3 } else { 0 },
    )?;
    let bias_values = match bias {
        None => None,
        Some(b) => Some(bias_values(op, b, in_q.scale, &scales, out_channels)?),
    };
    let weights = filter
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
            op.builtin,
            depthwise.then_some((&geometry, depth_multiplier)),
        ),
    };
    let layer = if depthwise {
        let whole = DepthwiseConv2d::new(
            kernel_geometry,
            depth_multiplier,
            &weights,
            bias_values.as_deref(),
            &q,
        )
        .map_err(|e| op.kernel_error(e))?;
        Layer::Depthwise(Box::new(whole), by_channels(&kernel_geometry))
    } else {
        Layer::Conv(Box::new(
            Conv2d::new(
                kernel_geometry,
                filter_depth,
                &weights,
                bias_values.as_deref(),
                &q,
            )
            .map_err(|e| op.kernel_error(e))?,
        ))
    };
    let scratch_bytes = match &layer {
        Layer::Conv(c) => c.scratch_bytes(),
        Layer::Depthwise(..) => 0,
    };
    let rows = geometry.batch * geometry.output_height;
    let macs = output.element_count() * kernel[0] * kernel[1] * filter_depth;
    Ok(PreparedOp {
        kernel: Box::new(Convolution {
            pixel_tiles: pixel_tiles(&layer, rows * geometry.output_width, out_channels),
            layer,
            rows,
            row_len: geometry.output_width * geometry.output_channels,
        }),
        work: macs as u64,
        unit: "MAC",
        scratch_bytes,
        alias: false,
        state_inputs: Vec::new(),
    })
}

/// The geometry the kernels run with a PAD folded in: the PAD's input
/// (its shape checked against the padded one `g` reads) and the PAD's
/// rows and columns before the image added to `g`'s padding; the window,
/// the output and everything else as `g`. The rows and columns after the
/// image need nothing: taps past the image read nothing, as taps of the
/// zero point add nothing.
fn folded_geometry(op: &Op<'_, '_>, g: &ConvGeometry, fold: PadFold) -> Result<ConvGeometry> {
    let source = op
        .graph
        .tensor(fold.source)
        .ok_or_else(|| op.invalid(format!("folded PAD input {} is missing", fold.source)))?;
    let (rows, columns) = (
        fold.rows[0] + fold.rows[1],
        fold.columns[0] + fold.columns[1],
    );
    let (Some(input_height), Some(input_width)) = (
        g.input_height.checked_sub(rows),
        g.input_width.checked_sub(columns),
    ) else {
        return Err(op.invalid("a folded PAD pads more than its output holds"));
    };
    if source.shape() != [g.batch, input_height, input_width, g.input_channels] {
        return Err(op.invalid(format!(
            "folded PAD input shape {:?} is not the padded input's less the padding",
            source.shape()
        )));
    }
    let (Some(pad_top), Some(pad_left)) = (
        g.pad_top.checked_add(fold.rows[0]),
        g.pad_left.checked_add(fold.columns[0]),
    ) else {
        return Err(op.invalid("a folded PAD's padding overflows"));
    };
    // The library checks the rest (`Conv2d::new`, `DepthwiseConv2d::new`).
    let folded = ConvGeometry {
        input_height,
        input_width,
        pad_top,
        pad_left,
        ..*g
    };
    Ok(folded)
}

/// A pointwise CONV_2D's tiles by blocks of pixels, when its GEMM runs by
/// pixels ([`Conv2d::pixel_grain`]).
fn pixel_tiles(layer: &Layer, pixels: usize, channels: usize) -> Option<PixelTiles> {
    let Layer::Conv(c) = layer else {
        return None;
    };
    let grain = c.pixel_grain()?.max(1);
    Some(PixelTiles {
        grain,
        pixels,
        channels,
    })
}

/// The bias values, after TFLite's checks: one per output channel, each
/// channel's scale `input_scale * filter_scale` (within TFLite's relative
/// 1e-6).
fn bias_values(
    op: &Op<'_, '_>,
    bias: &Tensor<'_>,
    input_scale: f32,
    filter_scales: &[f32],
    channels: usize,
) -> Result<Vec<i32>> {
    if bias.element_count() != channels || bias.shape().len() != 1 {
        return Err(op.invalid(format!(
            "bias (tensor {}) shape {:?} does not hold one value per output channel ({channels})",
            bias.name(),
            bias.shape()
        )));
    }
    if let Some(bq) = bias.quantization() {
        for (c, &bias_scale) in bq.scales().iter().enumerate() {
            let filter_scale = filter_scales[if filter_scales.len() == 1 {
                0
            } else {
                c.min(channels - 1)
            }];
            let product = input_scale as f64 * filter_scale as f64;
            let bias_scale = bias_scale as f64;
            if (product - bias_scale).abs() > 1e-6 * product.min(bias_scale) {
                return Err(op.invalid(format!(
                    "bias (tensor {}) scale {bias_scale} is not input scale * filter scale {product}",
                    bias.name()
                )));
            }
        }
    }
    Ok(bias
        .constant_values::<i32>()
        .map_err(|e| op.invalid(e.to_string()))?
        .unwrap_or_default()
        .to_vec())
}
