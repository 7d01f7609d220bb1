//! 2-D resizing of NHWC data, as TFLite's `RESIZE_NEAREST_NEIGHBOR` and
//! `RESIZE_BILINEAR` compute it (and XNNPACK's `resize-bilinear` for the
//! delegate's int8 and uint8).
//!
//! ```text
//! prepare (new):  for every output row oy and column ox, the source
//!                 index (nearest) or the two source indices and the
//!                 fraction between them (bilinear), in the kernel's own
//!                 arithmetic (params.rs: Q16, Q10, Q11 or f32)
//! run, per output row oy of image b:
//!     nearest:  copy the source pixel (all channels) of every ox; a row
//!               with the same source row as the one before is a copy of it
//!     bilinear: per channel, the four source values weighted by the
//!               fractions, rounded as the kernel rounds
//! ```
//!
//! Nearest neighbour moves bytes only: input and output share one
//! quantization (TFLite's converter requires it; [`Error::OutputQuantization`]
//! here). Bilinear interpolates raw values with weights summing to one, so
//! it needs the same equality.
//!
//! * `params.rs`: the shape, the coordinate options, the index and tap
//!   tables of each arithmetic, the rounding of one interpolated value.
//! * `scalar.rs`: [`Backend::Scalar`], the reference loops.
//! * `neon.rs`: [`Backend::Neon`], bilinear's integer arithmetics
//!   (TFLite's Q10 on int8, XNNPACK's Q11 on int8 and uint8) in blocks of
//!   8 channels; the other cases run the scalar loops on every backend.
//!
//! Tiles: output rows, numbered across the images (`run_rows_with`).

#[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
mod neon;
pub(crate) mod params;
mod scalar;

use alloc::vec::Vec;
use core::marker::PhantomData;
use core::ops::Range;

use crate::backend::{unavailable, Backend};
use crate::checks::{check_length, check_scale, check_zero_point};
use crate::elem::QuantElem;
use crate::error::{Error, Result};
use crate::quant::QuantParams;
use params::{bilinear_taps, nearest_indices, Tap};
pub use params::{
    BilinearArithmetic, NearestIndexing, ResizeCoordinates, ResizeShape, MAX_RESIZE_SIZE,
};

/// Checks both quantizations and their equality.
fn check_quantization<T: QuantElem>(
    op: &'static str,
    input: QuantParams,
    output: QuantParams,
) -> Result<()> {
    check_scale("input scale", input.scale)?;
    check_scale("output scale", output.scale)?;
    check_zero_point::<T>("input zero point", input.zero_point)?;
    check_zero_point::<T>("output zero point", output.zero_point)?;
    if input != output {
        return Err(Error::OutputQuantization {
            op,
            dtype: T::NAME,
            expected_scale: input.scale as f64,
            expected_zero_point: input.zero_point,
            scale: output.scale as f64,
            zero_point: output.zero_point,
        });
    }
    Ok(())
}

/// Checks a tile of output rows and the lengths; returns the output row
/// length.
fn check_rows<T>(
    op: &'static str,
    shape: &ResizeShape,
    input: &[T],
    output: &[T],
    rows: &Range<usize>,
) -> Result<usize> {
    check_length(op, "input", shape.input_len(), input.len())?;
    let total = shape.batch * shape.output_height;
    if rows.start > rows.end || rows.end > total {
        return Err(Error::Tile {
            op,
            what: "output rows",
            start: rows.start,
            end: rows.end,
            limit: total,
            grain: 1,
        });
    }
    let row_len = shape.output_width * shape.channels;
    check_length(op, "output", Some(rows.len() * row_len), output.len())?;
    Ok(row_len)
}

/// Quantized RESIZE_NEAREST_NEIGHBOR, bit-exact with TFLite's reference
/// kernel ([`NearestIndexing::Float`]) or its optimized 8-bit kernel
/// ([`NearestIndexing::Fixed16`]). A pure copy of source pixels: every
/// backend runs the same loop (whole pixels and whole rows copied with
/// `copy_from_slice`, the platform's `memcpy`). `run()` allocates nothing.
#[derive(Clone, Debug)]
pub struct ResizeNearestNeighbor<T: QuantElem> {
    shape: ResizeShape,
    /// Source row of every output row.
    rows: Vec<u32>,
    /// Source column of every output column.
    columns: Vec<u32>,
    backend: Backend,
    _type: PhantomData<T>,
}

impl<T: QuantElem> ResizeNearestNeighbor<T> {
    const OP: &'static str = "resize_nearest_neighbor";

    /// Validates the quantization (scales finite and > 0, zero points in
    /// the type's range, output equal to input) and computes every source
    /// index.
    pub fn new(
        shape: ResizeShape,
        coordinates: ResizeCoordinates,
        indexing: NearestIndexing,
        input: QuantParams,
        output: QuantParams,
    ) -> Result<Self> {
        check_quantization::<T>(Self::OP, input, output)?;
        Ok(ResizeNearestNeighbor {
            shape,
            rows: nearest_indices(
                indexing,
                shape.input_height,
                shape.output_height,
                coordinates,
            ),
            columns: nearest_indices(indexing, shape.input_width, shape.output_width, coordinates),
            backend: Backend::best(),
            _type: PhantomData,
        })
    }

    /// The prepared shape.
    pub fn shape(&self) -> &ResizeShape {
        &self.shape
    }

    /// The source row of every output row and the source column of every
    /// output column.
    pub fn source_indices(&self) -> (&[u32], &[u32]) {
        (&self.rows, &self.columns)
    }

    /// The backend [`run`](Self::run) uses.
    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// Output rows across the images, the tiles of
    /// [`run_rows_with`](Self::run_rows_with).
    pub fn output_rows(&self) -> usize {
        self.shape.batch * self.shape.output_height
    }

    /// Resizes `input` into `output`. Errors if a length differs from the
    /// shape's.
    pub fn run(&self, input: &[T], output: &mut [T]) -> Result<()> {
        self.run_rows_with(self.backend, input, output, 0..self.output_rows())
    }

    /// A tile: the output rows `rows` (row `r` is row `r % output_height`
    /// of image `r / output_height`) into `output`, which holds just those
    /// rows. Errors: an unavailable backend, a reversed or too long range,
    /// lengths that differ.
    pub fn run_rows_with(
        &self,
        backend: Backend,
        input: &[T],
        output: &mut [T],
        rows: Range<usize>,
    ) -> Result<()> {
        if !backend.is_available() {
            return Err(unavailable(backend));
        }
        check_rows(Self::OP, &self.shape, input, output, &rows)?;
        scalar::resize_nearest(&self.shape, &self.rows, &self.columns, rows, input, output);
        Ok(())
    }
}

/// The prepared tables of a bilinear resize.
#[derive(Clone, Debug)]
pub(crate) struct BilinearParams {
    pub shape: ResizeShape,
    pub arithmetic: BilinearArithmetic,
    /// The taps of every output row.
    pub rows: Vec<Tap>,
    /// The taps of every output column.
    pub columns: Vec<Tap>,
}

/// Quantized RESIZE_BILINEAR in one of the arithmetics of
/// [`BilinearArithmetic`]: TFLite's Q10 integer kernel (int8, int16), its
/// reference and optimized `f32` uint8 kernels, or XNNPACK's Q11 kernel.
/// `run()` allocates nothing; the float arithmetics compute in `f32` by
/// design (they are LiteRT's uint8 kernels).
#[derive(Clone, Debug)]
pub struct ResizeBilinear<T: QuantElem> {
    params: BilinearParams,
    backend: Backend,
    _type: PhantomData<T>,
}

impl<T: QuantElem> ResizeBilinear<T> {
    const OP: &'static str = "resize_bilinear";

    /// Validates the options (TFLite refuses align_corners together with
    /// half_pixel_centers), the quantization (as
    /// [`ResizeNearestNeighbor::new`]), the arithmetic's types (XNNPACK's
    /// takes 8-bit values only) and the source coordinates (inside the
    /// input), and computes every tap.
    pub fn new(
        shape: ResizeShape,
        coordinates: ResizeCoordinates,
        arithmetic: BilinearArithmetic,
        input: QuantParams,
        output: QuantParams,
    ) -> Result<Self> {
        if coordinates.align_corners && coordinates.half_pixel_centers {
            return Err(Error::Unsupported {
                op: Self::OP,
                dtype: T::NAME,
                reason: "align_corners with half_pixel_centers (TFLite refuses the pair)",
            });
        }
        if arithmetic == BilinearArithmetic::XnnpackQ11 && T::MAX > 255 {
            return Err(Error::Unsupported {
                op: Self::OP,
                dtype: T::NAME,
                reason: "XNNPACK's bilinear interpolation takes int8 and uint8 only",
            });
        }
        if arithmetic == (BilinearArithmetic::FloatWeights { fused: true })
            && !cfg!(feature = "std")
        {
            return Err(Error::Unsupported {
                op: Self::OP,
                dtype: T::NAME,
                reason:
                    "the fused multiply-adds of LiteRT's aarch64 float kernel need the std feature",
            });
        }
        check_quantization::<T>(Self::OP, input, output)?;
        let params = BilinearParams {
            shape,
            arithmetic,
            rows: bilinear_taps(
                arithmetic,
                shape.input_height,
                shape.output_height,
                coordinates,
            )?,
            columns: bilinear_taps(
                arithmetic,
                shape.input_width,
                shape.output_width,
                coordinates,
            )?,
        };
        Ok(ResizeBilinear {
            params,
            backend: Backend::best(),
            _type: PhantomData,
        })
    }

    /// The prepared shape.
    pub fn shape(&self) -> &ResizeShape {
        &self.params.shape
    }

    /// The arithmetic it reproduces.
    pub fn arithmetic(&self) -> BilinearArithmetic {
        self.params.arithmetic
    }

    /// The backend [`run`](Self::run) uses.
    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// Output rows across the images, the tiles of
    /// [`run_rows_with`](Self::run_rows_with).
    pub fn output_rows(&self) -> usize {
        self.params.shape.batch * self.params.shape.output_height
    }

    /// Resizes `input` into `output` with the best backend. Errors if a
    /// length differs from the shape's.
    pub fn run(&self, input: &[T], output: &mut [T]) -> Result<()> {
        self.run_rows_with(self.backend, input, output, 0..self.output_rows())
    }

    /// [`run`](Self::run) with the given backend (an error if it is not
    /// available here). Every backend gives the same bytes.
    pub fn run_with(&self, backend: Backend, input: &[T], output: &mut [T]) -> Result<()> {
        self.run_rows_with(backend, input, output, 0..self.output_rows())
    }

    /// A tile: the output rows `rows` (numbered across the images) into
    /// `output`, which holds just those rows; each row gets the bytes
    /// [`run`](Self::run) writes there.
    pub fn run_rows_with(
        &self,
        backend: Backend,
        input: &[T],
        output: &mut [T],
        rows: Range<usize>,
    ) -> Result<()> {
        check_rows(Self::OP, &self.params.shape, input, output, &rows)?;
        let p = &self.params;
        match backend {
            Backend::Scalar => scalar::resize_bilinear(p, rows, input, output),
            #[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
            Backend::Neon => {
                use crate::elem::{view, ElemKind, Slices};
                let vectorized = matches!(
                    (p.arithmetic, T::KIND),
                    (BilinearArithmetic::Integer10 { .. }, ElemKind::I8)
                        | (BilinearArithmetic::XnnpackQ11, ElemKind::I8 | ElemKind::U8)
                );
                if !vectorized {
                    // int16 (reference only in TFLite) and the float uint8
                    // kernels: the scalar loops.
                    scalar::resize_bilinear(p, rows, input, output);
                    return Ok(());
                }
                match (p.arithmetic, view(input, output)) {
                    (BilinearArithmetic::Integer10 { rounding }, Slices::I8(i, o)) => {
                        neon::resize_bilinear_q10_i8(p, rounding, rows, i, o)
                    }
                    (_, Slices::I8(i, o)) => neon::resize_bilinear_q11_i8(p, rows, i, o),
                    (_, Slices::U8(i, o)) => neon::resize_bilinear_q11_u8(p, rows, i, o),
                    (_, Slices::I16(i, o)) => scalar::resize_bilinear(p, rows, i, o),
                }
            }
            #[allow(unreachable_patterns)]
            b => return Err(unavailable(b)),
        }
        Ok(())
    }
}
