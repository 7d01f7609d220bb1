//! Prepared quantized operators, one folder per op family.
//!
//! Every operator follows one convention: `new()` validates all parameters and
//! computes everything the kernels need (multipliers, shifts, radii, cut-offs,
//! tables) into a small params struct; `run()` checks only buffer lengths and
//! row divisibility, then loops. `run()` allocates nothing except, with the
//! `alloc` feature, the NEON fixed-point softmax's exp cache for rows longer
//! than its stack buffer (at most 4 bytes per input element, sized by the
//! data, never by `row_len` alone), and, except in
//! [`Method::DequantF32`] (which computes in `f32` by design) and
//! [`Requantization::RealF64`](crate::Requantization::RealF64) (LiteRT's
//! `f64` output stage), never touches floating point. Operators are out of place: `input` and `output` are
//! distinct slices.
//!
//! # Tiles
//!
//! Every op's work splits into independent tiles, so that a caller (a
//! thread pool) can hand them out without the kernels knowing: a tile
//! gives exactly the bytes one whole `run` writes there, on every backend,
//! whatever the split. Prepared ops hold no state that a run changes
//! (`run` takes `&self`) and are `Send + Sync`; each tile needs only its
//! own output (and, for [`MatMul`], its own scratch).
//!
//! * Row-wise ops ([`Softmax`], [`LogSoftmax`], [`NoNorm`]): a tile is a
//!   range of rows, run as the sub-slices `input[a * row_len..b * row_len]`
//!   and the same of the output (rows are computed independently; nothing
//!   is carried from one row to the next). The thresholded ops number
//!   their hits' rows from the start of the slice they are given, so a
//!   tile's row indices are relative to it.
//! * Element-wise ops ([`Logistic`], [`Tanh`], quantize and dequantize): a
//!   tile is any range of elements, as sub-slices.
//! * Binary ops ([`Add`], [`Sub`], [`Mul`]): a range of output elements,
//!   with each operand narrowed by [`Operand::tile`] (a broadcast row
//!   operand: a range of whole rows, the outer index).
//! * [`Gemm`]: `M x N` tiles written through an output stride
//!   ([`Gemm::run_tile`], whose grain is [`Gemm::tile_grain`]); `run` is
//!   the one tile covering the output.
//! * [`MatMul`]: ranges of output matrices of a batch (batch and head),
//!   [`MatMul::run_batch_tile`], one scratch per concurrent tile.
//!
//! `tests/tiles.rs` checks each contract against `run`'s bytes.
//!
//! # Layout of a family
//!
//! ```text
//! softmax/
//!   mod.rs     the public op: new() and the one match of method x backend
//!   scalar.rs  Method::FixedPoint, Backend::Scalar (the reference loops)
//!   neon.rs    Method::FixedPoint, Backend::Neon
//!   lut.rs, lut_neon/, lut16.rs, lut16_neon.rs   Method::Lut (8-bit scalar,
//!              8-bit NEON, int16 scalar, int16 NEON)
//!   f32.rs     Method::DequantF32 (both backends)
//! ```
//!
//! A family's files import its `params.rs` and the leaves ([`crate::fixedpoint`],
//! [`crate::quant`], `simd`, `elem`, `checks`), never its own `mod.rs`;
//! families import each other only through `params.rs` or a family's
//! declared interface module (`gemm/kernels.rs`: the packing and NEON
//! kernels the batch matrix product runs); a family's kernel files are
//! private modules. Shared pieces sit beside the families as leaves:
//! `softmax_rows/` (softmax's prepared methods, its params and their lane
//! math, and the NEON max and sum passes of 8-bit rows, which softmax,
//! the thresholded softmax and log-softmax's format constants use),
//! `dequant_f32/` (the `f32` row code of [`Method::DequantF32`]) and
//! `requant/` (per-channel requantization of the layer ops).
//!
//! # Kernel names
//!
//! One pattern in every family, so that the dispatch `match` of a `mod.rs`
//! is symmetric and a name says where its code is:
//!
//! * A file that is one backend of one method (`scalar.rs`, `neon.rs`,
//!   `lut_neon/`, `lut16_neon.rs`) names its entry point after the op
//!   alone: `scalar::no_norm` / `neon::no_norm`, `scalar::add` /
//!   `neon::add`, `scalar::log_softmax` / `neon::log_softmax`.
//! * A file named after a method (`lut.rs`, `f32.rs`) that holds that
//!   method's scalar side, or both backends, suffixes the backend:
//!   `lut::softmax_scalar` (its NEON side is `lut_neon::softmax`),
//!   `f32::softmax_scalar` / `f32::softmax_neon`.
//! * The `#[inline(never)]` NEON kernels that the asm checks name add the
//!   method or path and then the element type:
//!   `<op>[_<method or path>]_<type>` (`softmax_lut_i8`, `softmax_exact_u8`,
//!   `log_softmax_i8`, `logistic_u8`, `softmax_q31`, `gemm_dot`,
//!   `gemm_widening`); the bench tools read the element size from the type
//!   suffix. (Helpers inside a kernel that the asm
//!   checks also name, such as `lut_neon::other_rows`, keep names that say
//!   what part of the row they do.)
//!
//! Suffixes: `_lut` a table method, `_exact` the table-driven exact
//! [`Method::FixedPoint`] kernels, `_f32` [`Method::DequantF32`], `_dot` /
//! `_widening` the GEMM's NEON paths, `_i8` / `_u8` / `_i16` the element
//! type (`_q31` the raw Q31 kernels).

/// The public methods every prepared op shares: `params`, `backend`, `run`,
/// `run_with`; `rows` ops take a row length, `elements` ops do not. The op
/// defines `run_kernel`, its one match of method and backend.
macro_rules! op_methods {
    (@common $op:ident, $params:ty) => {
        impl<T: QuantElem> $op<T> {
            /// The prepared parameters.
            pub fn params(&self) -> &$params {
                &self.params
            }

            /// The backend [`run`](Self::run) uses.
            pub fn backend(&self) -> Backend {
                self.backend
            }
        }
    };
    (rows $op:ident, $params:ty, $name:literal, $what:literal) => {
        op_methods!(@common $op, $params);

        impl<T: QuantElem> $op<T> {
            #[doc = concat!($what, " of each `row_len`-long row of `input` into `output`, with the")]
            /// best backend. Errors if the lengths differ or `row_len` is 0 or does not
            /// divide them.
            pub fn run(&self, input: &[T], output: &mut [T], row_len: usize) -> Result<()> {
                self.run_with(self.backend, input, output, row_len)
            }

            /// [`run`](Self::run) with the given backend (an error if not available here).
            /// Every backend gives the same bytes.
            pub fn run_with(
                &self,
                backend: Backend,
                input: &[T],
                output: &mut [T],
                row_len: usize,
            ) -> Result<()> {
                check_rows($name, input.len(), output.len(), row_len)?;
                self.run_kernel(backend, input, output, row_len)
            }
        }
    };
    (elements $op:ident, $params:ty, $name:literal, $what:literal) => {
        op_methods!(@common $op, $params);

        impl<T: QuantElem> $op<T> {
            #[doc = concat!($what, " element-wise with the best backend.")]
            /// Errors if the lengths differ.
            pub fn run(&self, input: &[T], output: &mut [T]) -> Result<()> {
                self.run_with(self.backend, input, output)
            }

            /// [`run`](Self::run) with the given backend (an error if it is not
            /// available here). Every backend gives the same bytes.
            pub fn run_with(&self, backend: Backend, input: &[T], output: &mut [T]) -> Result<()> {
                check_lengths($name, input.len(), output.len())?;
                self.run_kernel(backend, input, output)
            }
        }
    };
}

mod activation;
mod arg_min_max;
#[cfg(feature = "alloc")]
mod batch_matmul;
mod binary;
mod broadcast;
mod concat_rescale;
#[cfg(feature = "alloc")]
pub mod conv;
mod dequant_f32;
#[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
mod dot_neon;
mod elementwise;
#[cfg(feature = "alloc")]
mod gemm;
mod heads;
mod interleave;
mod log_softmax;
#[cfg(feature = "alloc")]
mod lstm;
#[cfg(feature = "alloc")]
mod mat_vec;
mod mean;
mod method;
mod minmax;
#[cfg(feature = "alloc")]
mod no_norm;
mod pool;
mod prelu;
mod quantize;
mod requant;
#[cfg(feature = "alloc")]
mod resize;
mod softmax;
mod softmax_rows;
mod svdf;
pub mod threshold;
#[cfg(feature = "alloc")]
mod transpose_conv;
mod window;

pub use activation::params::{Activation, ActivationParams};
pub use activation::{Logistic, Tanh};
pub use arg_min_max::{ArgIndex, ArgKind, ArgMinMax};
#[cfg(feature = "alloc")]
pub use batch_matmul::MatMul;
pub use binary::params::{AddParams, MulParams};
pub use binary::{Add, Mul, Operand, Sub, XnnpackAdd, XnnpackMul, XnnpackMulRndnu};
pub use broadcast::BroadcastOperand;
pub use concat_rescale::{ConcatRescale, RescaleFloat};
#[cfg(feature = "alloc")]
pub use conv::{Conv2d, ConvGeometry, ConvQuantization, ConvRequantization, DepthwiseConv2d};
pub use elementwise::{HardSwish, LeakyRelu, Relu, ReluKind};
#[cfg(feature = "alloc")]
pub use gemm::{Gemm, GemmPath};
pub use heads::{merge_heads, split_heads};
pub use interleave::{
    deinterleave_planes, deinterleave_planes_with, interleave_planes, interleave_planes_with,
    INTERLEAVED_PLANES,
};
pub use log_softmax::params::LogSoftmaxParams;
pub use log_softmax::LogSoftmax;
#[cfg(feature = "alloc")]
pub use lstm::{
    Lstm, LstmGateWeights, LstmLayerNorm, LstmProjection, LstmQuantization, LstmScratch, LstmShape,
    LstmWeights,
};
#[cfg(feature = "alloc")]
pub use mat_vec::Gemv;
pub use mean::{Mean, MeanKernels};
pub use method::Method;
pub use minmax::{MinMax, MinMaxKind};
#[cfg(feature = "alloc")]
pub use no_norm::NoNorm;
pub use pool::{AveragePool2d, MaxPool2d, Pool2dShape};
pub use prelu::Prelu;
pub use requant::FusedActivation;
#[cfg(feature = "alloc")]
pub use resize::{
    BilinearArithmetic, NearestIndexing, ResizeBilinear, ResizeCoordinates, ResizeNearestNeighbor,
    ResizeShape, MAX_RESIZE_SIZE,
};
pub use softmax::{Softmax, SoftmaxI8ToI16};
pub use softmax_rows::SoftmaxParams;
pub use svdf::{Svdf, SvdfQuantization, SvdfShape, SvdfState, SvdfWeights};
#[cfg(feature = "alloc")]
pub use transpose_conv::{TransposeConv2d, TransposeConvGeometry};
pub use window::{AxisPadding, Padding};

// Each op's required output quantization, from the one table in `checks`
// that `new()` checks against.
mod output_quantization {
    use super::{LogSoftmax, Logistic, Softmax, Tanh};
    use crate::checks::{required_output, FixedOutputOp};
    use crate::elem::QuantElem;
    use crate::error::{Error, Result};
    use crate::quant::QuantParams;

    /// The table's entry for an op TFLite defines on every type.
    const fn every_type<T: QuantElem>(op: FixedOutputOp) -> QuantParams {
        match required_output::<T>(op) {
            Some((q, _)) => q,
            // Only log-softmax on int16 has no entry.
            None => QuantParams::new(f32::NAN, 0),
        }
    }

    impl<T: QuantElem> Softmax<T> {
        /// The output quantization `new()` requires (TFLite's): int8 scale
        /// 1/256 and zero point -128, uint8 1/256 and 0, int16 1/32768 and 0.
        /// (`new()` accepts scales within 0.1% of it, as TFLite does.)
        pub const fn output_quantization() -> QuantParams {
            every_type::<T>(FixedOutputOp::Softmax)
        }
    }

    impl<T: QuantElem> Logistic<T> {
        /// The output quantization `new()` requires (TFLite's): int8 scale
        /// 1/256 and zero point -128, uint8 1/256 and 0, int16 1/32768 and 0.
        pub const fn output_quantization() -> QuantParams {
            every_type::<T>(FixedOutputOp::Logistic)
        }
    }

    impl<T: QuantElem> Tanh<T> {
        /// The output quantization `new()` requires (TFLite's): int8 scale
        /// 1/128 and zero point 0, uint8 1/128 and 128, int16 1/32768 and 0.
        pub const fn output_quantization() -> QuantParams {
            every_type::<T>(FixedOutputOp::Tanh)
        }
    }

    impl<T: QuantElem> LogSoftmax<T> {
        /// The output quantization `new()` requires (TFLite's): int8 scale
        /// 16/256 and zero point 127, uint8 16/256 and 255. Int16 is
        /// [`Error::Unsupported`], as in `new()` (TFLite defines log-softmax
        /// for 8-bit types only).
        pub const fn output_quantization() -> Result<QuantParams> {
            match required_output::<T>(FixedOutputOp::LogSoftmax) {
                Some((q, _)) => Ok(q),
                None => Err(Error::Unsupported {
                    op: "log_softmax",
                    dtype: T::NAME,
                    reason: "log-softmax is defined for int8 and uint8 (as in TFLite)",
                }),
            }
        }
    }
}
