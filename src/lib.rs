//! # qneon
//!
//! Fixed-point quantized activations (softmax, log-softmax, logistic, tanh) for
//! int8, uint8, int16 and raw Q31 data, bit-exact with the references models are
//! validated against, with a scalar reference backend and aarch64 NEON kernels.
//!
//! ```
//! use qneon::{Backend, Method, QuantParams, Softmax};
//! let q_in = QuantParams { scale: 0.1, zero_point: 3 };
//! let q_out = QuantParams { scale: 1.0 / 256.0, zero_point: -128 };
//! let sm = Softmax::<i8>::new(q_in, 1.0, q_out, Method::FixedPoint)?;
//! let input = [3i8, 13, 23, -100];
//! let mut output = [0i8; 4];
//! sm.run(&input, &mut output, 4)?;
//! sm.run_with(Backend::Scalar, &input, &mut output, 2)?;
//! # Ok::<(), qneon::Error>(())
//! ```
//!
//! ## Methods and backends
//!
//! A [`Method`] is the algorithm and carries the exactness promise:
//! [`Method::FixedPoint`] is the integer-only gemmlowp arithmetic of TFLite's
//! reference kernels and TFLite Micro, bit for bit (rounding as TFLite's default
//! build: a rounding doubling high multiply, ties toward +inf, then a rounding
//! power-of-two divide, ties away from zero). [`Method::Lut`] is the table
//! kernels of TFLite's interpreter, bit for bit (8-bit: within 1 LSB of exact
//! math; int16: TFLite's own error, up to hundreds of LSB for softmax).
//! [`Method::LutFixedPoint`] gives `FixedPoint`'s bytes through a 256-entry
//! table (8-bit logistic and tanh). [`Method::DequantF32`] computes in
//! `f32` and requantizes (within 1 LSB of exact math). A [`Backend`] is the instruction
//! set ([`Backend::Scalar`], [`Backend::Neon`]); it never changes a byte.
//! The README's "Which method" table gives each method's bytes, speed,
//! accuracy and needs.
//!
//! ## Layout
//!
//! * [`fixedpoint`]: the arithmetic, written once over the [`Lane`](fixedpoint::Lane) trait.
//! * [`quant`]: quantization parameters and TFLite's multiplier arithmetic.
//! * [`ops`]: prepared operators (`new()` validates and precomputes, `run()`
//!   loops), one folder per op family with every method and backend in it;
//!   the op types are re-exported here.
//! * [`q31`]: raw Q31 softmax, logistic and tanh.
//! * [`f32`](mod@f32): float softmax, log-softmax, sigmoid, tanh and exp.
//!
//! ## Features
//!
//! The crate is `no_std`. `std` (default, implies `alloc`): [`Method::Lut`]
//! (its tables are filled with `f32` math), run-time detection in
//! [`CpuFeatures::detect`], `std::error::Error` for [`Error`]. `alloc`: the
//! layer ops `Gemm`, `MatMul` and `NoNorm`, and heap scratch for long NEON
//! softmax rows. Without either, every activation op with the other methods,
//! the Q31, `f32` and loss kernels and `Add`/`Sub`/`Mul` need no allocator.

#![no_std]
#![cfg_attr(docsrs, feature(doc_cfg))]
#![deny(missing_docs, unsafe_op_in_unsafe_fn)]
#![warn(clippy::undocumented_unsafe_blocks)]

#[cfg(feature = "std")]
extern crate std;

#[cfg(feature = "alloc")]
extern crate alloc;

mod backend;
#[doc(hidden)]
pub mod catalogue;
mod checks;
mod elem;
mod error;
pub mod f32;
pub mod fixedpoint;
pub mod loss;
pub mod ops;
pub mod q31;
pub mod quant;
mod simd;

pub use backend::{Backend, CpuFeatures};
pub use elem::QuantElem;
pub use error::{Error, Result};
pub use ops::threshold::{
    Hit, RowHit, ThresholdedLogistic, ThresholdedSoftmax, ThresholdedSoftmaxF32,
};
#[cfg(feature = "alloc")]
#[doc(hidden)]
pub use ops::GemmPath;
pub use ops::{
    deinterleave_planes, deinterleave_planes_with, interleave_planes, interleave_planes_with,
};
pub use ops::{
    merge_heads, split_heads, Add, AveragePool2d, FusedActivation, HardSwish, LeakyRelu,
    LogSoftmax, Logistic, MaxPool2d, Mean, MeanKernels, Method, Mul, Operand, Padding, Pool2dShape,
    Relu, ReluKind, Softmax, Sub, Tanh, XnnpackAdd, XnnpackMul, XnnpackMulRndnu,
};
pub use ops::{
    ArgIndex, ArgKind, ArgMinMax, BroadcastOperand, ConcatRescale, MinMax, MinMaxKind, Prelu,
    RescaleFloat,
};
#[cfg(feature = "alloc")]
pub use ops::{
    BilinearArithmetic, NearestIndexing, ResizeBilinear, ResizeCoordinates, ResizeNearestNeighbor,
    ResizeShape, MAX_RESIZE_SIZE,
};
#[cfg(feature = "alloc")]
pub use ops::{Conv2d, ConvGeometry, ConvQuantization, ConvRequantization, DepthwiseConv2d};
#[cfg(feature = "alloc")]
pub use ops::{Gemm, Gemv, MatMul, NoNorm};
#[cfg(feature = "alloc")]
pub use ops::{
    Lstm, LstmGateWeights, LstmLayerNorm, LstmProjection, LstmQuantization, LstmScratch, LstmShape,
    LstmWeights,
};
pub use ops::{SoftmaxI8ToI16, Svdf, SvdfQuantization, SvdfShape, SvdfState, SvdfWeights};
#[cfg(feature = "alloc")]
pub use ops::{TransposeConv2d, TransposeConvGeometry};
pub use quant::{QuantParams, Requantization, Rounding};

/// The README's Rust examples, compiled and run by `cargo test --doc` (they
/// use `Method::Lut`, hence `std`).
#[cfg(all(doctest, feature = "std"))]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
