//! FULLY_CONNECTED: int8 rows through the library's GEMM, or one input row
//! through its matrix-vector product ([`qneon::Gemv`]), weights packed once
//! at load.

use std::ops::Range;

use qneon::{Backend, Requantization};
use qneon_tflite::options::WeightsFormat;
use qneon_tflite::{BuiltinOp, Options as OpOptions};

use super::buffers::{output_band, tile_elements, view, Io};
use super::kernel::{Kernel, PreparedOp, Registration};
use super::op::Op;
use crate::error::Result;
use crate::interp::options::{Options, Rounding, TfliteKernels};

/// The ops this family prepares.
pub(crate) const OPS: &[Registration] =
    &[
        Registration::new(BuiltinOp::FULLY_CONNECTED, "FULLY_CONNECTED", prepare)
            .xnnpack()
            .arithmetic(describe),
    ];

/// What inspect says: the requantization [`requantization`] chooses, and
/// the one of a single input row where that differs.
fn describe(options: &Options, _: BuiltinOp) -> String {
    let rows = requantization(options, (2, 4, 8));
    let one_row = requantization(options, (1, 4, 8));
    if rows == one_row {
        format!("requantization {}", rows.name())
    } else {
        format!(
            "requantization {} ({} on one input row of >= 8 inputs into >= 4 outputs)",
            rows.name(),
            one_row.name()
        )
    }
}

/// A prepared FULLY_CONNECTED: `m` rows of depth `k` through the library's
/// GEMM into `n` outputs each.
///
/// Tiles form a grid of `row_tiles x col_tiles`, row-major (tile
/// `t` is row tile `t / col_tiles`, column tile `t % col_tiles`). A row tile
/// is the GEMM's row block (so a split between tiles never recomputes a
/// partial block); the columns split only when there are too few row tiles
/// to share out ([`MIN_ROW_TILES`]), as batch-1 layers and late CNN layers
/// have: then into at most [`MAX_COL_TILES`] blocks of whole packed column
/// groups. Any tile range gives the bytes of the whole run; the whole range
/// is the one GEMM call of a single-threaded run.
///
/// One input row (`m == 1`) takes [`qneon::Gemv`] instead (the same bytes
/// as the GEMM with one row, less work): its tiles are the column tiles,
/// each a contiguous range of output channels.
#[derive(Debug)]
pub(crate) struct FullyConnected {
    engine: Engine,
    m: usize,
    n: usize,
    k: usize,
    /// Rows per row tile: the GEMM's row grain.
    tile_rows: usize,
    /// Output channels per column tile: a multiple of the GEMM's column
    /// grain, or `n` when the columns do not split.
    tile_cols: usize,
}

/// What multiplies: the GEMM, or the mat-vec for a single input row.
#[derive(Debug)]
enum Engine {
    Gemm(Box<qneon::Gemm>),
    Gemv(Box<qneon::Gemv>),
}

/// The column grain of the mat-vec's channel ranges.
const GEMV_GRAIN: usize = 8;

/// Below this many row tiles, the columns split too.
const MIN_ROW_TILES: usize = 4;
/// At most this many column tiles per row tile.
const MAX_COL_TILES: usize = 8;

impl FullyConnected {
    fn new(engine: Engine, m: usize, n: usize, k: usize) -> FullyConnected {
        let (grain_rows, grain_cols) = match &engine {
            Engine::Gemm(gemm) => gemm.tile_grain(),
            Engine::Gemv(_) => (1, GEMV_GRAIN),
        };
        let tile_rows = grain_rows.max(1);
        let row_tiles = m.div_ceil(tile_rows);
        let tile_cols = if row_tiles < MIN_ROW_TILES && n > grain_cols {
            let groups = n.div_ceil(grain_cols);
            groups.div_ceil(MAX_COL_TILES) * grain_cols
        } else {
            n.max(1)
        };
        FullyConnected {
            engine,
            m,
            n,
            k,
            tile_rows,
            tile_cols,
        }
    }

    fn row_tiles(&self) -> usize {
        self.m.div_ceil(self.tile_rows)
    }

    fn col_tiles(&self) -> usize {
        self.n.div_ceil(self.tile_cols).max(1)
    }
}

impl Kernel for FullyConnected {
    fn tiles(&self) -> usize {
        self.row_tiles() * self.col_tiles()
    }

    /// Row tiles split anywhere; column tiles (few row tiles) split anywhere
    /// when there is one row (batch-1: a tile's columns are contiguous in
    /// it), else only at whole row tiles.
    fn split(&self) -> Option<usize> {
        if self.col_tiles() == 1 || self.m == 1 {
            Some(1)
        } else {
            Some(self.col_tiles())
        }
    }

    fn band(&self, tiles: Range<usize>) -> Range<usize> {
        let per_row = self.col_tiles();
        if per_row > 1 && self.m == 1 {
            return tile_elements(tiles, self.tile_cols, self.n);
        }
        let row_tiles = tiles.start / per_row..tiles.end.div_ceil(per_row);
        let rows = tile_elements(row_tiles, self.tile_rows, self.m);
        rows.start * self.n..rows.end * self.n
    }

    /// `output = input * weights^T + bias`, requantized, for tiles `tiles`:
    /// whole row tiles by one GEMM call over their rows, partial ones tile by
    /// tile through the output stride.
    fn run_tiles(
        &self,
        backend: Backend,
        tiles: Range<usize>,
        io: &mut Io<'_>,
    ) -> Result<(), String> {
        let input: &[i8] = view(io.ins[0])?;
        if input.len() != self.m * self.k {
            return Err(format!(
                "input of {} elements for {} rows of {}",
                input.len(),
                self.m,
                self.k
            ));
        }
        let tiles = tiles.start.min(self.tiles())..tiles.end.min(self.tiles());
        let gemm = match &self.engine {
            Engine::Gemm(gemm) => gemm,
            Engine::Gemv(gemv) => {
                // One row: the tiles' channels are contiguous.
                let channels = tile_elements(tiles, self.tile_cols, self.n);
                let output = output_band::<i8>(io.outs[0], io.out_start, channels.clone())?;
                return gemv
                    .run_channels_with(backend, input, output, channels)
                    .map_err(|e| e.to_string());
            }
        };
        let per_row = self.col_tiles();
        let mut t = tiles.start;
        while t < tiles.end {
            let row_tile = t / per_row;
            let first_col = t % per_row;
            if first_col == 0 && tiles.end - t >= per_row {
                // Whole row tiles from here: one call over all their rows.
                let whole = (tiles.end - t) / per_row;
                let rows = tile_elements(row_tile..row_tile + whole, self.tile_rows, self.m);
                let output = output_band::<i8>(
                    io.outs[0],
                    io.out_start,
                    rows.start * self.n..rows.end * self.n,
                )?;
                gemm.run_with(
                    backend,
                    &input[rows.start * self.k..rows.end * self.k],
                    output,
                    rows.len(),
                )
                .map_err(|e| e.to_string())?;
                t += whole * per_row;
            } else {
                let last_col = per_row.min(first_col + (tiles.end - t));
                let rows = tile_elements(row_tile..row_tile + 1, self.tile_rows, self.m);
                let cols = tile_elements(first_col..last_col, self.tile_cols, self.n);
                // From the tile's first element to its last, through the
                // stride.
                let last_row = rows.end.saturating_sub(1).max(rows.start);
                let elements = rows.start * self.n + cols.start..last_row * self.n + cols.end;
                let output = output_band::<i8>(io.outs[0], io.out_start, elements)?;
                gemm.run_tile_with(backend, input, output, self.n, rows, cols)
                    .map_err(|e| e.to_string())?;
                t += last_col - first_col;
            }
        }
        Ok(())
    }
}

/// The requantization of FULLY_CONNECTED in the interpreter's modes. LiteRT's
/// reference kernel (since April 2025) scales the accumulator by the
/// unquantized `f64` multiplier and rounds half away from zero
/// ([`Requantization::RealF64`]). Measured: on the 24-layer model's
/// `case2_short` input, element [160, 501] of operator 815 (accumulator *
/// quantized multiplier = 35.49999999: 35 in single rounding, LiteRT 36),
/// and the designed input of `models/gen/probe_fc_rounding.py`. Its optimized
/// kernels apply the quantized multiplier in single rounding, TF 2.19's
/// reference kernels in double rounding. The XNNPACK delegate takes every
/// int8 FULLY_CONNECTED with constant weights (its qs8 / qc8w GEMM) and
/// scales in `f32`, rounding to even ([`Requantization::XnnpackF32`]).
///
/// LiteRT's aarch64 optimized kernels multiply one input row (`rows` 1) by
/// the weights with a custom GEMV when there are at least 4 output channels
/// and 8 inputs (`cpu_backend_gemm`'s matrix-times-vector path), which rounds
/// the last shift's ties upward ([`Requantization::GemvTiesUpward`]).
/// Measured: the single-op model `fc_batch1_gemv` (one of 2048 outputs per
/// run parts from single rounding, by +1) and MobileNetV2's classifier
/// (1280 inputs, 1000 outputs); `fc_batch1_narrow` (6 inputs) rounds once.
fn requantization(
    options: &Options,
    (rows, outputs, depth): (usize, usize, usize),
) -> Requantization {
    let gemv = rows == 1 && outputs >= 4 && depth >= 8;
    match (options.rounding, options.kernels) {
        (_, TfliteKernels::Xnnpack) => Requantization::XnnpackF32,
        (Rounding::Single, TfliteKernels::Reference) => Requantization::RealF64,
        (Rounding::Single, TfliteKernels::Optimized) if gemv => Requantization::GemvTiesUpward,
        (rounding, _) => Requantization::Multiplier(rounding),
    }
}

/// TFLite's `Prepare` of FULLY_CONNECTED: int8 input, weights and output,
/// int32 bias, constant weights quantized symmetric per tensor or per output
/// channel, the bias scale TFLite requires; the library's GEMM built with
/// [`requantization`] (a per-tensor scale is one multiplier repeated for
/// every channel: TFLite's per-tensor `GetQuantizedConvolutionMultipler`
/// gives the same `input_scale * weight_scale / output_scale` in `f64`).
fn prepare(op: &Op<'_, '_>) -> Result<PreparedOp> {
    op.input_count(2, 3)?;
    op.output_count(1)?;
    let (input, weights, output) = (op.input(0)?, op.input(1)?, op.output(0)?);
    let bias = op.optional_input(2);
    op.int8_layer_types(input, weights, output, bias)?;
    let o = match op.operator.options() {
        OpOptions::Builtin(qneon_tflite::schema::BuiltinOptions::FullyConnectedOptions(o)) => {
            (**o).clone()
        }
        _ => Default::default(),
    };
    let weights_format = WeightsFormat::from_code(o.weights_format);
    if weights_format != WeightsFormat::Default {
        return Err(op.unsupported(format!("weights format {weights_format:?}")));
    }
    let activation = op.activation(qneon_tflite::options::FusedActivation::from_code(
        o.fused_activation_function,
    ))?;
    if !weights.is_constant() || bias.is_some_and(|b| !b.is_constant()) {
        return Err(op.unsupported("weights and bias must be constant"));
    }
    let [n, k] = weights.shape()[..] else {
        return Err(op.invalid(format!("weights shape {:?} is not rank 2", weights.shape())));
    };
    if k == 0 || n == 0 || input.element_count() % k != 0 {
        return Err(op.invalid(format!(
            "input shape {:?} is not a whole number of rows of depth {k}",
            input.shape()
        )));
    }
    let m = input.element_count() / k;
    if output.element_count() != m * n || output.shape().last() != Some(&n) {
        return Err(op.invalid(format!(
            "output shape {:?}, expected {m} rows of {n}",
            output.shape()
        )));
    }
    let in_q = op.per_tensor(input, "input")?;
    let out_q = op.per_tensor(output, "output")?;
    let wq = weights
        .quantization()
        .ok_or_else(|| op.invalid("weights are not quantized"))?;
    if wq.zero_points().iter().any(|&z| z != 0) {
        return Err(op.invalid("int8 weights must have zero point 0 (TFLite's rule)"));
    }
    let scales: Vec<f32> = match (wq.scales(), wq.axis()) {
        ([scale], _) => vec![*scale; n],
        (scales, Some(0)) if scales.len() == n => scales.to_vec(),
        _ => return Err(op.invalid("weight scales are neither per tensor nor per output channel")),
    };
    let bias_values: Option<Vec<i32>> = match bias {
        None => None,
        Some(b) => {
            if b.element_count() != n {
                return Err(op.invalid(format!(
                    "bias has {} values for {n} outputs",
                    b.element_count()
                )));
            }
            // TFLite: the bias scale equals input scale * weight scale.
            if let Some(bq) = b.quantization() {
                for (c, &bias_scale) in bq.scales().iter().enumerate() {
                    let product = in_q.scale as f64 * scales[c.min(n - 1)] as f64;
                    let bias_scale = bias_scale as f64;
                    if (product - bias_scale).abs() > 1e-6 * product.min(bias_scale) {
                        return Err(op.invalid(format!(
                            "bias scale {bias_scale} is not input scale * weight scale {product}"
                        )));
                    }
                }
            }
            let values = b
                .constant_values::<i32>()
                .map_err(|e| op.invalid(e.to_string()))?
                .unwrap_or_default();
            Some(values.to_vec())
        }
    };
    let w = weights
        .constant_values::<i8>()
        .map_err(|e| op.invalid(e.to_string()))?
        .unwrap_or_default();
    let requantization = requantization(op.options, (m, n, k));
    let bias_values = bias_values.as_deref();
    // One input row: the mat-vec (the same arithmetic and bytes).
    let engine = if m == 1 {
        let gemv = qneon::Gemv::new(
            &w,
            n,
            k,
            bias_values,
            in_q,
            &scales,
            out_q,
            activation,
            requantization,
        );
        Engine::Gemv(Box::new(gemv.map_err(|e| op.kernel_error(e))?))
    } else {
        let gemm = qneon::Gemm::new(
            &w,
            n,
            k,
            bias_values,
            in_q,
            &scales,
            out_q,
            activation,
            requantization,
        );
        Engine::Gemm(Box::new(gemm.map_err(|e| op.kernel_error(e))?))
    };
    Ok(PreparedOp {
        kernel: Box::new(FullyConnected::new(engine, m, n, k)),
        work: (m * n * k) as u64,
        unit: "MAC",
        scratch_bytes: 0,
        alias: false,
        state_inputs: Vec::new(),
    })
}
