//! Prepared quantized operators.
//!
//! Every operator follows one convention: `new()` validates all parameters and
//! computes everything the kernels need (multipliers, shifts, radii, cut-offs)
//! into a small `Copy` params struct; `run()` checks only buffer lengths and
//! row divisibility, then loops. `run()` never allocates and, except in
//! [`Method::DequantF32`] (which computes in `f32` by design), never touches
//! floating point.
//!
//! Operators are out of place: `input` and `output` are distinct slices.

/// The methods every row-wise op shares: `params`, `backend`, `run`, `run_with`.
macro_rules! row_op_methods {
    ($op:ident, $params:ty, $name:literal, $what:literal) => {
        impl<T: QuantElem> $op<T> {
            /// The prepared parameters.
            pub fn params(&self) -> &$params {
                &self.params
            }

            /// The backend [`run`](Self::run) uses.
            pub fn backend(&self) -> Backend {
                self.backend
            }

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
                // Each op's `run_kernel` matches on its prepared method.
                self.run_kernel(backend, input, output, row_len)
            }
        }
    };
}

pub(crate) mod dequant_f32;
pub(crate) mod log_softmax;
pub(crate) mod logistic;
pub(crate) mod lut;
pub(crate) mod lut16;
pub(crate) mod softmax;
// The split tables are read by the NEON kernel only, and the constructor
// needs `std` (`f32::exp`).
#[cfg_attr(not(all(target_arch = "aarch64", feature = "std")), allow(dead_code))]
pub(crate) mod softmax_lut;
// The transformer layer operators: GEMM, add, NoNorm, head transposes.
pub(crate) mod elementwise;
#[cfg(feature = "alloc")]
pub(crate) mod gemm;
pub(crate) mod requant;

pub use elementwise::{merge_heads, split_heads, Add, AddParams, ADD_LEFT_SHIFT};
pub use log_softmax::{LogSoftmax, LogSoftmaxParams};
pub use logistic::{Activation, ActivationParams, Logistic, Tanh};
pub use requant::FusedActivation;
pub use softmax::{Softmax, SoftmaxParams};
#[cfg(feature = "alloc")]
pub use {
    elementwise::NoNorm,
    gemm::{Gemm, GemmPath},
};

use crate::error::{Error, Result};
use crate::quant::QuantParams;

/// The algorithm an operator uses. Exactness promises attach to the method;
/// the [`Backend`](crate::Backend) never changes a byte.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Method {
    /// Integer-only gemmlowp-style fixed point: bit-exact with TFLite Micro and
    /// TFLite's reference kernels (see each operator for the exact reference).
    FixedPoint,
    /// The table kernels of TFLite's interpreter (default optimized resolver),
    /// bit-exact with it; needs `std` (the tables are filled with `f32`/`f64`
    /// math). int8/uint8 logistic and tanh: a 256-entry table filled exactly
    /// as TFLite fills it. int8/uint8 softmax: TFLite's optimized kernel as
    /// built for aarch64 (a 16-bit exp table, integer sums), bit for bit;
    /// within one output step of exact math, of [`Method::FixedPoint`] and of
    /// TFLite's x86 build. int16 softmax, logistic and tanh: TFLite's int16
    /// kernels (513-entry interpolated `exp` and `1/(1+x)` tables for softmax;
    /// the interpolated sigmoid table, or gemmlowp's 16-bit fixed point at
    /// input scales 2^-12 and, for tanh, 2^-11), including their overflows at
    /// input scales above ~16/3 (softmax: `scale * beta` above ~5), where the
    /// outputs are garbage, and their zero-input-zero-point requirement
    /// (int16 only).
    Lut,
    /// A 256-entry table filled by running the [`Method::FixedPoint`] kernel
    /// over every input: bit-exact with it (and so with TFLite Micro) at table
    /// speed. int8/uint8 logistic and tanh (an int16 table would need 65,536
    /// entries, 128 KB per op: not provided).
    LutFixedPoint,
    /// Dequantize, compute in `f32` (the [`crate::f32`] kernels' `exp`,
    /// sigmoid and tanh), requantize with TFLite's rounding (half away from
    /// zero) and clamping. Every op and type: within 1 LSB of the correctly
    /// rounded exact result (measured by `tests/dequant_f32.rs`); NEON and
    /// scalar give the same bytes.
    DequantF32,
}

impl Method {
    /// A short lowercase name.
    pub fn name(self) -> &'static str {
        match self {
            Method::FixedPoint => "fixed",
            Method::Lut => "lut",
            Method::LutFixedPoint => "lut-fixed",
            Method::DequantF32 => "f32",
        }
    }
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for i8 {}
    impl Sealed for u8 {}
    impl Sealed for i16 {}
}

/// A quantized element type: `i8`, `u8` or `i16` (sealed).
pub trait QuantElem:
    sealed::Sealed + Copy + Default + PartialOrd + core::fmt::Debug + 'static
{
    /// Smallest value, widened.
    const MIN: i32;
    /// Largest value, widened.
    const MAX: i32;
    /// TFLite's name of the type (`"int8"`, `"uint8"`, `"int16"`).
    const NAME: &'static str;
    /// Widen to `i32`.
    fn to_i32(self) -> i32;
    /// Narrow an `i32` already clamped to `[MIN, MAX]`.
    fn from_i32(x: i32) -> Self;
    /// Narrow an `i32`, saturating to `[MIN, MAX]` (what NEON's saturating
    /// narrows do).
    fn saturate(x: i32) -> Self;
}

macro_rules! quant_elem {
    ($t:ty, $name:literal) => {
        impl QuantElem for $t {
            const MIN: i32 = <$t>::MIN as i32;
            const MAX: i32 = <$t>::MAX as i32;
            const NAME: &'static str = $name;
            #[inline(always)]
            fn to_i32(self) -> i32 {
                self as i32
            }
            #[inline(always)]
            fn saturate(x: i32) -> Self {
                x.clamp(<Self as QuantElem>::MIN, <Self as QuantElem>::MAX) as $t
            }
            #[inline(always)]
            fn from_i32(x: i32) -> Self {
                debug_assert!((<Self as QuantElem>::MIN..=<Self as QuantElem>::MAX).contains(&x));
                x as $t
            }
        }
    };
}
quant_elem!(i8, "int8");
quant_elem!(u8, "uint8");
quant_elem!(i16, "int16");

/// Views `&[T]` / `&mut [T]` as `U` slices when `T` is `U`; `None` otherwise.
/// The check is on `TypeId`, so it folds away at compile time.
#[inline(always)]
pub(crate) fn cast_same<'a, T: 'static, U: 'static>(
    input: &'a [T],
    output: &'a mut [T],
) -> Option<(&'a [U], &'a mut [U])> {
    if core::any::TypeId::of::<T>() != core::any::TypeId::of::<U>() {
        return None;
    }
    let (len_in, len_out) = (input.len(), output.len());
    // SAFETY: T is U (same TypeId): same layout and validity; the lengths are
    // unchanged and the new slices take over the borrows with their lifetimes
    // and mutability.
    unsafe {
        Some((
            core::slice::from_raw_parts(input.as_ptr() as *const U, len_in),
            core::slice::from_raw_parts_mut(output.as_mut_ptr() as *mut U, len_out),
        ))
    }
}

/// Checks a scale: finite and `> 0`.
pub(crate) fn check_scale(what: &'static str, scale: f32) -> Result<f64> {
    if scale.is_finite() && scale > 0.0 {
        Ok(scale as f64)
    } else {
        Err(Error::Scale {
            what,
            value: scale as f64,
        })
    }
}

/// Checks a zero point against the element type's range.
pub(crate) fn check_zero_point<T: QuantElem>(what: &'static str, zero_point: i32) -> Result<()> {
    if (T::MIN..=T::MAX).contains(&zero_point) {
        Ok(())
    } else {
        Err(Error::ZeroPoint {
            what,
            value: zero_point,
            min: T::MIN,
            max: T::MAX,
        })
    }
}

/// Validates input and output quantization, and that the output matches the
/// fixed quantization TFLite's `Prepare` demands for this op: the zero point
/// exactly and the scale within `relative_tolerance` (TFLite's softmax uses
/// `TF_LITE_ENSURE_NEAR(scale, expected, 0.001 * expected)`, other ops `==`).
pub(crate) fn check_quantization<T: QuantElem>(
    op: &'static str,
    input: QuantParams,
    output: QuantParams,
    expected_scale: f64,
    expected_zero_point: i32,
    relative_tolerance: f64,
) -> Result<f64> {
    let in_scale = check_scale("input scale", input.scale)?;
    check_zero_point::<T>("input zero point", input.zero_point)?;
    let out_scale = check_scale("output scale", output.scale)?;
    check_zero_point::<T>("output zero point", output.zero_point)?;
    let diff = out_scale - expected_scale;
    let near = diff.abs() <= relative_tolerance * expected_scale;
    if !near || output.zero_point != expected_zero_point {
        return Err(Error::OutputQuantization {
            op,
            dtype: T::NAME,
            expected_scale,
            expected_zero_point,
            scale: out_scale,
            zero_point: output.zero_point,
        });
    }
    Ok(in_scale)
}

/// Checks buffer lengths for a row-wise op; returns the number of rows.
pub(crate) fn check_rows(
    op: &'static str,
    input: usize,
    output: usize,
    row_len: usize,
) -> Result<usize> {
    if input != output {
        return Err(Error::LengthMismatch { op, input, output });
    }
    if row_len == 0 || input % row_len != 0 {
        return Err(Error::RowLength {
            op,
            len: input,
            row: row_len,
        });
    }
    Ok(input / row_len)
}

/// Checks buffer lengths for an element-wise op.
pub(crate) fn check_lengths(op: &'static str, input: usize, output: usize) -> Result<()> {
    if input != output {
        return Err(Error::LengthMismatch { op, input, output });
    }
    Ok(())
}

/// The error for a method that is not implemented yet for an op.
pub(crate) fn unsupported_method<T: QuantElem>(op: &'static str, method: Method) -> Error {
    Error::Unsupported {
        op,
        dtype: T::NAME,
        reason: match method {
            Method::Lut => {
                "Method::Lut exists for int8/uint8 softmax, logistic and tanh and for int16 \
                 softmax, logistic and tanh (it needs the `std` feature); use Method::FixedPoint"
            }
            Method::LutFixedPoint => {
                "Method::LutFixedPoint exists for int8/uint8 logistic and tanh only (an int16 \
                 table would take 65,536 entries); use Method::FixedPoint"
            }
            Method::DequantF32 => {
                "Method::DequantF32 is not available for this op and type; use Method::FixedPoint"
            }
            Method::FixedPoint => "Method::FixedPoint is not available for this type",
        },
    }
}
