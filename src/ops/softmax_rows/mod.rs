//! Softmax row math shared by two op families: the prepared form of each
//! 8-bit method and the NEON passes that give a row's maximum and sum of
//! exps. Softmax (`ops/softmax/`) writes every output from these; the
//! thresholded softmax (`ops/threshold/`) decides which outputs pass a
//! threshold from exactly the same quantities, so both run this one code,
//! bit for bit, rather than keep copies that could drift.
//!
//! A leaf: it imports the lower leaves (`fixedpoint`, `quant`, `checks`,
//! `elem`, `simd`, `dequant_f32`) and nothing from either family.
//!
//! ```text
//! params.rs   SoftmaxParams: Method::FixedPoint's prepared multipliers and
//!             its lane math (TFLite's reference, also read by log-softmax)
//! exact.rs    SoftmaxExact: the reference's exps and sum terms by d = max - x
//! lut.rs      SoftmaxLut: Method::Lut's exp table and row requantization
//! f32.rs      SoftmaxF32: Method::DequantF32's multipliers
//! neon/       the max and sum passes of 8-bit rows (aarch64 NEON only)
//! ```

// The tables are read by the NEON kernels only (other targets build none).
#[cfg_attr(
    not(all(target_arch = "aarch64", target_feature = "neon")),
    allow(dead_code)
)]
pub(crate) mod exact;
pub(crate) mod f32;
// The split tables are read by the NEON kernels only, and the constructor
// needs `std` (`f32::exp`).
#[cfg_attr(not(all(target_arch = "aarch64", feature = "std")), allow(dead_code))]
pub(crate) mod lut;
#[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
pub(crate) mod neon;
pub(crate) mod params;

pub(crate) use self::exact::SoftmaxExact;
pub(crate) use self::f32::SoftmaxF32;
pub(crate) use self::lut::SoftmaxLut;
pub use self::params::SoftmaxParams;
