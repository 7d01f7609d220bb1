//! 2-D average and max pooling over NHWC data, as TFLite's
//! `AVERAGE_POOL_2D` and `MAX_POOL_2D` compute them for int8, uint8 and int16.
//!
//! ```text
//! for each image b, output pixel (oy, ox):
//!     window = rows    oy * stride_h - pad_top  .. + filter_h
//!              columns ox * stride_w - pad_left .. + filter_w,
//!              clipped to the input (padding is never read or counted)
//!     for each channel:
//!         average: sum over the window, count = its in-bounds elements,
//!                  (sum + count / 2) / count for sum > 0,
//!                  (sum - count / 2) / count otherwise (C's truncating
//!                  division: ties away from zero)
//!         max:     the largest element
//!         clamp to the fused activation's range
//! ```
//!
//! This is TFLite's reference `AveragePool` / `MaxPool` (`reference_ops` for
//! uint8, `reference_integer_ops` for int8 and int16); its optimized int8
//! kernel accumulates the same sums and rounds them with the same formula,
//! so both give these bytes. Input and output share their quantization (TFLite's
//! `Prepare` requires it), so no requantization takes place: the clamp is
//! the only use of the output quantization.
//!
//! * `params.rs`: the shape ([`Pool2dShape`], TFLite's SAME / VALID rule),
//!   the clipped window, the rounded average and the exact reciprocal the
//!   NEON kernel divides with.
//! * `scalar.rs`: [`Backend::Scalar`], the reference loops.
//! * `neon.rs`: [`Backend::Neon`], channels in blocks of 16.
//!
//! Tiles: output rows, numbered across the images (`run_rows_with`); each
//! row's pixels depend on the input alone, so any split gives `run`'s bytes.

#[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
mod neon;
pub(crate) mod params;
mod scalar;

use core::marker::PhantomData;
use core::ops::Range;

use crate::backend::{unavailable, Backend};
use crate::checks::check_length;
use crate::elem::QuantElem;
use crate::error::{Error, Result};
use crate::ops::FusedActivation;
use crate::quant::QuantParams;
pub use params::Pool2dShape;
use params::PoolParams;

/// Which pooling a prepared op runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Average,
    Max,
}

/// The run shared by both ops: lengths and rows checked, then the
/// backend's kernel on the output rows `rows` (numbered across images).
fn run_pool<T: QuantElem>(
    op: &'static str,
    kind: Kind,
    p: &PoolParams,
    backend: Backend,
    input: &[T],
    output: &mut [T],
    rows: Range<usize>,
) -> Result<()> {
    check_length(op, "input", p.shape.input_len(), input.len())?;
    // `new()` checked that the whole output's length fits `usize`.
    let total = p.shape.batch * p.shape.output_height;
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
    let row_len = p.shape.output_width * p.shape.channels;
    check_length(op, "output", Some(rows.len() * row_len), output.len())?;
    match backend {
        Backend::Scalar => {
            match kind {
                Kind::Average => scalar::average_pool(p, rows, input, output),
                Kind::Max => scalar::max_pool(p, rows, input, output),
            }
            Ok(())
        }
        #[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
        Backend::Neon => {
            use crate::elem::{view, Slices};
            match (kind, view(input, output)) {
                (Kind::Average, Slices::I8(i, o)) => neon::average_pool_i8(p, rows.clone(), i, o),
                (Kind::Average, Slices::U8(i, o)) => neon::average_pool_u8(p, rows.clone(), i, o),
                (Kind::Average, Slices::I16(i, o)) => neon::average_pool_i16(p, rows.clone(), i, o),
                (Kind::Max, Slices::I8(i, o)) => neon::max_pool_i8(p, rows.clone(), i, o),
                (Kind::Max, Slices::U8(i, o)) => neon::max_pool_u8(p, rows.clone(), i, o),
                (Kind::Max, Slices::I16(i, o)) => neon::max_pool_i16(p, rows.clone(), i, o),
            }
            Ok(())
        }
        #[allow(unreachable_patterns)]
        b => Err(unavailable(b)),
    }
}

macro_rules! pool_op {
    ($name:ident, $kind:expr, $opname:literal, $doc:literal) => {
        #[doc = $doc]
        ///
        /// Input `[batch, input_height, input_width, channels]` and output
        /// `[batch, output_height, output_width, channels]`, NHWC, as
        /// [`Pool2dShape`] gives them. `run()` allocates nothing; input and
        /// output are distinct slices.
        #[derive(Clone, Debug)]
        pub struct $name<T: QuantElem> {
            params: PoolParams,
            backend: Backend,
            _type: PhantomData<T>,
        }

        impl<T: QuantElem> $name<T> {
            /// Validates the shape (every dimension at least 1, every window
            /// overlapping the input, lengths that fit `usize`, window sums
            /// that fit `i32`) and the quantization (scales finite and > 0,
            /// zero points in the type's range, output equal to input, as
            /// TFLite's `Prepare` requires: [`Error::OutputQuantization`]
            /// otherwise), and computes the activation's clamp.
            ///
            /// [`Error::OutputQuantization`]: crate::Error::OutputQuantization
            pub fn new(
                shape: Pool2dShape,
                input: QuantParams,
                output: QuantParams,
                activation: FusedActivation,
            ) -> Result<Self> {
                Ok($name {
                    params: PoolParams::new::<T>($opname, shape, input, output, activation)?,
                    backend: Backend::best(),
                    _type: PhantomData,
                })
            }

            /// The prepared shape.
            pub fn shape(&self) -> &Pool2dShape {
                &self.params.shape
            }

            /// The same op clamping to `[min, max]` instead of the range
            /// TFLite quantizes from the fused activation (another
            /// runtime's quantization of the same bounds, e.g. XNNPACK's).
            /// Errors: a range not inside the type or with `min > max`
            /// ([`Error::OutOfDomain`](crate::Error::OutOfDomain)).
            pub fn with_activation_range(mut self, min: i32, max: i32) -> Result<Self> {
                if min > max || min < T::MIN || max > T::MAX {
                    return Err(crate::Error::OutOfDomain {
                        op: $opname,
                        what: "activation range",
                        value: if min > max { min as f64 } else { max as f64 },
                        requirement: "min <= max, both inside the element type",
                    });
                }
                self.params.act_min = min;
                self.params.act_max = max;
                Ok(self)
            }

            /// The output range `[min, max]` the fused activation clamps to.
            pub fn activation_range(&self) -> (i32, i32) {
                (self.params.act_min, self.params.act_max)
            }

            /// The backend [`run`](Self::run) uses.
            pub fn backend(&self) -> Backend {
                self.backend
            }

            /// Pools `input` into `output` with the best backend. Errors if a
            /// length differs from the shape's.
            pub fn run(&self, input: &[T], output: &mut [T]) -> Result<()> {
                self.run_with(self.backend, input, output)
            }

            /// [`run`](Self::run) with the given backend (an error if it is not
            /// available here). Every backend gives the same bytes.
            pub fn run_with(&self, backend: Backend, input: &[T], output: &mut [T]) -> Result<()> {
                let rows = 0..self.output_rows();
                run_pool($opname, $kind, &self.params, backend, input, output, rows)
            }

            /// Output rows across the images: `batch * output_height`, the
            /// tiles of [`run_rows_with`](Self::run_rows_with).
            pub fn output_rows(&self) -> usize {
                self.params.shape.batch * self.params.shape.output_height
            }

            /// A tile: the output rows `rows` (row `r` is row
            /// `r % output_height` of image `r / output_height`) from the
            /// whole `input` into `output`, which holds just those rows
            /// (`rows.len() * output_width * channels` elements). Each row
            /// gets the bytes [`run`](Self::run) writes there. Errors: a
            /// reversed range or one past [`output_rows`](Self::output_rows)
            /// ([`Error::Tile`](crate::Error::Tile)), lengths that differ
            /// ([`Error::Length`](crate::Error::Length)).
            pub fn run_rows_with(
                &self,
                backend: Backend,
                input: &[T],
                output: &mut [T],
                rows: Range<usize>,
            ) -> Result<()> {
                run_pool($opname, $kind, &self.params, backend, input, output, rows)
            }
        }
    };
}

pool_op!(
    AveragePool2d,
    Kind::Average,
    "average_pool_2d",
    "Quantized 2-D average pooling, bit-exact with TFLite's `AVERAGE_POOL_2D` \
     (reference and optimized kernels): the in-bounds window's sum divided by its \
     count, rounded half away from zero, clamped to the fused activation."
);
pool_op!(
    MaxPool2d,
    Kind::Max,
    "max_pool_2d",
    "Quantized 2-D max pooling, bit-exact with TFLite's `MAX_POOL_2D`: the largest \
     in-bounds window element, clamped to the fused activation."
);
