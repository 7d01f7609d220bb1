//! RESIZE_NEAREST_NEIGHBOR and RESIZE_BILINEAR: TFLite's `Prepare` rules
//! (two inputs, an NHWC input of rank 4, a constant int32 `size` of 2
//! elements, each at least 1, the output shape it gives, bilinear's refusal
//! of align_corners with half_pixel_centers), input and output quantized
//! alike (the converter's rule: both ops only move or average raw values),
//! and the library's resize in the arithmetic of the chosen kernels, in
//! tiles of output rows.
//!
//! Which arithmetic (see [`nearest_indexing`], [`bilinear_arithmetic`]):
//! nearest neighbour is a copy whose source index is TFLite's `f32` formula,
//! except in LiteRT's optimized 8-bit kernel without options (a Q16 scale);
//! the XNNPACK delegate leaves it to the builtin kernels. Bilinear is
//! TFLite's Q10 integer kernel on int8 (both kernel sets) and int16, its
//! `f32` kernels on uint8 (one reference, one optimized, the latter with
//! the fused multiply-adds of LiteRT's aarch64 build), and XNNPACK's Q11
//! kernel on int8 and uint8 under the delegate, which leaves int16 to the
//! builtin kernels.

use std::ops::Range;

use qneon::{
    Backend, BilinearArithmetic, NearestIndexing, QuantElem, ResizeBilinear, ResizeCoordinates,
    ResizeNearestNeighbor, ResizeShape, Rounding,
};
use qneon_tflite::schema::BuiltinOptions;
use qneon_tflite::{BuiltinOp, Options as OpOptions, TensorType};

use super::buffers::{output_band, view, Io};
use super::kernel::{Kernel, PreparedOp, Registration};
use super::op::Op;
use crate::error::Result;
use crate::interp::options::{Options, TfliteKernels};

/// The ops this family prepares.
pub(crate) const OPS: &[Registration] = &[
    Registration::new(
        BuiltinOp::RESIZE_NEAREST_NEIGHBOR,
        "RESIZE_NEAREST_NEIGHBOR",
        prepare,
    )
    .left_by_xnnpack()
    .arithmetic(describe),
    Registration::new(BuiltinOp::RESIZE_BILINEAR, "RESIZE_BILINEAR", prepare)
        .xnnpack()
        .arithmetic(describe),
];

/// What inspect says: which kernel's arithmetic the op takes (by type,
/// since the registration does not see the tensors).
fn describe(options: &Options, builtin: BuiltinOp) -> String {
    if builtin == BuiltinOp::RESIZE_NEAREST_NEIGHBOR {
        return match options.kernels {
            TfliteKernels::Reference => "a copy, TFLite's f32 source index".into(),
            _ => "a copy, LiteRT's optimized Q16 source index (8-bit without options), \
                  else TFLite's f32 one"
                .into(),
        };
    }
    let rounding = Q10_ROUNDING.name();
    match options.kernels {
        TfliteKernels::Reference => {
            format!("TFLite's Q10 interpolation, {rounding} rounding (int8, int16); its f32 reference kernel (uint8)")
        }
        TfliteKernels::Optimized => {
            format!("TFLite's Q10 interpolation, {rounding} rounding (int8, int16); its optimized f32 kernel with the aarch64 build's fused multiply-adds (uint8)")
        }
        TfliteKernels::Xnnpack => format!(
            "XNNPACK's Q11 interpolation (int8, uint8); int16 left to the builtin kernels: \
             TFLite's Q10, {rounding} rounding"
        ),
    }
}

/// The rounding of TFLite's Q10 bilinear sum in every build measured,
/// whatever the options' rounding: half away from zero (the build without
/// `TFLITE_SINGLE_ROUNDING`). LiteRT 2.3's reference and aarch64 builtin
/// kernels and TensorFlow 2.19's give these bytes on every resize case;
/// half-up rounding differs on their negative ties (2,051 of
/// `resize_bilinear_2x`'s 12,800 bytes).
const Q10_ROUNDING: Rounding = Rounding::Double;

/// The source-index arithmetic of RESIZE_NEAREST_NEIGHBOR: LiteRT's
/// optimized kernels take their Q16 path for 8-bit types without options,
/// every other case TFLite's `f32` one.
fn nearest_indexing(
    kernels: TfliteKernels,
    dtype: TensorType,
    c: ResizeCoordinates,
) -> NearestIndexing {
    let eight_bit = matches!(dtype, TensorType::Int8 | TensorType::Uint8);
    let options = c.align_corners || c.half_pixel_centers;
    // The XNNPACK delegate leaves the op to the optimized builtin kernels
    // (the registration prepares it with their options).
    if kernels != TfliteKernels::Reference && eight_bit && !options {
        NearestIndexing::Fixed16
    } else {
        NearestIndexing::Float
    }
}

/// The arithmetic of RESIZE_BILINEAR under `options` for `dtype`, or the
/// reason it is not built.
fn bilinear_arithmetic(
    op: &Op<'_, '_>,
    dtype: TensorType,
    shape: &ResizeShape,
    c: ResizeCoordinates,
) -> Result<BilinearArithmetic> {
    let q10 = BilinearArithmetic::Integer10 {
        rounding: Q10_ROUNDING,
    };
    Ok(match (op.options.kernels, dtype) {
        (_, TensorType::Int16) => q10,
        (TfliteKernels::Xnnpack, _) => BilinearArithmetic::XnnpackQ11,
        (_, TensorType::Int8) => q10,
        (TfliteKernels::Reference, _) => BilinearArithmetic::Float,
        (_, _) => {
            // LiteRT's optimized uint8 kernel has a NEON path of its own for
            // 8x upsampling with half-pixel centres (8-channel blocks, its
            // own rounding): not built.
            let s = shape;
            let eight = s.output_height >= 8
                && s.output_width >= 8
                && s.output_height == 8 * s.input_height
                && s.output_width == 8 * s.input_width;
            if c.half_pixel_centers && !c.align_corners && s.channels.is_multiple_of(8) && eight {
                return Err(op.unsupported(
                    "uint8 8x upsampling with half_pixel_centers in LiteRT's optimized kernel \
                     (its 8x8x8 block path is not built)",
                ));
            }
            BilinearArithmetic::FloatWeights { fused: true }
        }
    })
}

/// A prepared resize node: input 0 into output 0, one tile per output row
/// (rows numbered across the images).
#[derive(Debug)]
enum Resize<T: QuantElem> {
    Nearest(ResizeNearestNeighbor<T>),
    Bilinear(ResizeBilinear<T>),
}

#[derive(Debug)]
struct ResizeNode<T: QuantElem> {
    op: Resize<T>,
    rows: usize,
    /// Elements of one output row: `output_width * channels`.
    row_len: usize,
}

impl<T: QuantElem + bytemuck::Pod + Send + Sync> Kernel for ResizeNode<T> {
    fn tiles(&self) -> usize {
        self.rows
    }

    fn split(&self) -> Option<usize> {
        Some(1)
    }

    fn band(&self, tiles: Range<usize>) -> Range<usize> {
        let row_bytes = self.row_len * std::mem::size_of::<T>();
        tiles.start * row_bytes..tiles.end * row_bytes
    }

    fn run_tiles(
        &self,
        backend: Backend,
        tiles: Range<usize>,
        io: &mut Io<'_>,
    ) -> Result<(), String> {
        let input: &[T] = view(io.ins[0])?;
        let elements = tiles.start * self.row_len..tiles.end * self.row_len;
        let output = output_band::<T>(io.outs[0], io.out_start, elements)?;
        match &self.op {
            Resize::Nearest(r) => r.run_rows_with(backend, input, output, tiles),
            Resize::Bilinear(r) => r.run_rows_with(backend, input, output, tiles),
        }
        .map_err(|e| e.to_string())
    }
}

/// The options of either op (both tables have the same two fields), the
/// defaults when the operator has none.
fn coordinates(op: &Op<'_, '_>) -> ResizeCoordinates {
    match op.operator.options() {
        OpOptions::Builtin(BuiltinOptions::ResizeBilinearOptions(o)) => ResizeCoordinates {
            align_corners: o.align_corners,
            half_pixel_centers: o.half_pixel_centers,
        },
        OpOptions::Builtin(BuiltinOptions::ResizeNearestNeighborOptions(o)) => ResizeCoordinates {
            align_corners: o.align_corners,
            half_pixel_centers: o.half_pixel_centers,
        },
        _ => ResizeCoordinates::default(),
    }
}

fn kernel<T: QuantElem + bytemuck::Pod + Send + Sync>(
    op: &Op<'_, '_>,
    shape: ResizeShape,
    c: ResizeCoordinates,
) -> Result<Box<dyn Kernel>> {
    let (input, output) = (op.input(0)?, op.output(0)?);
    let in_q = op.per_tensor(input, "input")?;
    let out_q = op.per_tensor(output, "output")?;
    let e = |err: qneon::Error| op.kernel_error(err);
    let resize = if op.builtin == BuiltinOp::RESIZE_NEAREST_NEIGHBOR {
        let indexing = nearest_indexing(op.options.kernels, input.dtype(), c);
        Resize::Nearest(
            ResizeNearestNeighbor::<T>::new(shape, c, indexing, in_q, out_q).map_err(e)?,
        )
    } else {
        let arithmetic = bilinear_arithmetic(op, input.dtype(), &shape, c)?;
        Resize::Bilinear(ResizeBilinear::<T>::new(shape, c, arithmetic, in_q, out_q).map_err(e)?)
    };
    Ok(Box::new(ResizeNode {
        op: resize,
        rows: shape.batch * shape.output_height,
        row_len: shape.output_width * shape.channels,
    }))
}

/// TFLite's `Prepare` of RESIZE_NEAREST_NEIGHBOR and RESIZE_BILINEAR.
fn prepare(op: &Op<'_, '_>) -> Result<PreparedOp> {
    op.input_count(2, 2)?;
    op.output_count(1)?;
    let (input, size, output) = (op.input(0)?, op.input(1)?, op.output(0)?);
    if input.dtype() != output.dtype()
        || !matches!(
            input.dtype(),
            TensorType::Int8 | TensorType::Uint8 | TensorType::Int16
        )
    {
        return Err(op.unsupported_types());
    }
    let &[batch, height, width, channels] = input.shape() else {
        return Err(op.invalid(format!(
            "input shape {:?} is not rank 4 (NHWC)",
            input.shape()
        )));
    };
    if size.dtype() != TensorType::Int32 || size.shape() != [2] {
        return Err(op.invalid(format!(
            "size tensor is {} of shape {:?}, TFLite requires int32 of shape [2]",
            size.dtype().name(),
            size.shape()
        )));
    }
    if !size.is_constant() {
        return Err(op.unsupported(
            "a dynamic size tensor (the output shape would be unknown at plan time)",
        ));
    }
    let sizes = op.constant_ints(size, "size")?;
    let &[out_h, out_w] = sizes.as_slice() else {
        return Err(op.invalid(format!("size tensor holds {} values, not 2", sizes.len())));
    };
    if out_h <= 0 || out_w <= 0 {
        return Err(op.invalid(format!("size [{out_h}, {out_w}]: each must be at least 1")));
    }
    let c = coordinates(op);
    if op.builtin == BuiltinOp::RESIZE_BILINEAR && c.align_corners && c.half_pixel_centers {
        return Err(op.invalid("half_pixel_centers with align_corners (TFLite refuses the pair)"));
    }
    let (out_h, out_w) = (out_h as usize, out_w as usize);
    op.expect_shape(output, &[batch, out_h, out_w, channels])?;
    let shape = ResizeShape::new([batch, height, width, channels], (out_h, out_w))
        .map_err(|e| op.kernel_error(e))?;
    op.quantization_equal(input, output)?;
    let kernel = match input.dtype() {
        TensorType::Int8 => kernel::<i8>(op, shape, c)?,
        TensorType::Uint8 => kernel::<u8>(op, shape, c)?,
        _ => kernel::<i16>(op, shape, c)?,
    };
    Ok(PreparedOp {
        kernel,
        work: output.element_count() as u64,
        unit: "element",
        scratch_bytes: 0,
        alias: false,
        state_inputs: Vec::new(),
    })
}
