//! Quantized log-softmax over the last axis (int8 and uint8).
//!
//! ```text
//! per row:
//!   max = max(q);  d = q - max
//!   sum = sum over d >= diff_min of exp(d * scale) rescaled to Q12.19   (as softmax, beta = 1)
//!   log_sum = ln(sum)                                                   Q5.26
//!   cut = max(diff_min - 1, (log_sum - 32) / scale in input steps)
//!   out = d > cut ? rounding_divide_by_pot(d * scale - log_sum, 22) + zero_point : type minimum
//! ```
//! Output quantization is fixed by TFLite: scale 16/256 (real range `[-16, 0]`),
//! zero point 127 (int8) or 255 (uint8). This is TFLite's
//! `reference_integer_ops::LogSoftmax` (int8; TFLite Micro runs the same code)
//! and `reference_ops::LogSoftmax` (uint8), bit for bit, with their `Prepare`
//! (`PreprocessLogSoftmaxScalingExp`).
//!
//! Where the references are wrong, qneon is right: their Q12.19 `i32` sum wraps
//! once a row holds 4096 or more values equal to its maximum, which corrupts the
//! output by up to 255 steps. qneon sums in `i64` and, for sums that need more
//! than 12 integer bits, takes the logarithm of the top 32 bits with a matching
//! integer-bit count; below 4096 nothing changes.

#[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
mod blocks;
mod f32;
#[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
mod log_neon;
#[cfg_attr(not(feature = "std"), allow(dead_code))]
mod lut;
#[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
mod lut_neon;
#[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
mod neon;
#[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
mod neon_entry;
pub(crate) mod params;
#[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
mod rows64;
#[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
mod rows64_out;
mod scalar;
mod table;

use self::f32::LogSoftmaxF32;
use self::lut::LogSoftmaxLut;
use self::params::LogSoftmaxParams;
use self::table::LogSoftmaxTables;
use super::method::{unsupported_method, Method};
use crate::backend::{unavailable, Backend};
use crate::checks::check_rows;
use crate::elem::QuantElem;
use crate::error::Result;
use crate::quant::QuantParams;
use core::marker::PhantomData;

/// Quantized log-softmax over rows of the last axis, int8 or uint8.
///
/// Output quantization (TFLite's): scale 16/256, zero point 127 (int8) or 255
/// (uint8). [`Method::FixedPoint`] is bit-exact with TFLite's reference kernels
/// and TFLite Micro, and exact where their accumulator overflows.
#[derive(Clone, Copy, Debug)]
pub struct LogSoftmax<T: QuantElem> {
    params: LogSoftmaxParams,
    kernel: LogSoftmaxKernel,
    backend: Backend,
    _type: PhantomData<T>,
}

impl<T: QuantElem> LogSoftmax<T> {
    /// Validates (scale finite and > 0, zero points in range, output
    /// quantization as TFLite requires, int8 or uint8) and prepares the op.
    pub fn new(input: QuantParams, output: QuantParams, method: Method) -> Result<Self> {
        let params = LogSoftmaxParams::new::<T>(input, output)?;
        let kernel = match method {
            Method::FixedPoint => LogSoftmaxKernel::FixedPoint(LogSoftmaxTables::new(&params)),
            Method::Lut => lut_kernel::<T>(input, output)?,
            Method::DequantF32 => LogSoftmaxKernel::DequantF32(LogSoftmaxF32::new(input, output)),
            _ => return Err(unsupported_method::<T>("log_softmax", method)),
        };
        Ok(LogSoftmax {
            params,
            kernel,
            backend: Backend::best(),
            _type: PhantomData,
        })
    }

    /// The prepared method's kernel on rows already checked: the one place
    /// that matches method and backend.
    fn run_kernel(
        &self,
        backend: Backend,
        input: &[T],
        output: &mut [T],
        row_len: usize,
    ) -> Result<()> {
        // An empty buffer has no rows whatever `row_len` says (`check_rows`
        // accepts any `row_len >= 1` there): no kernel runs, so none sizes
        // scratch or tables from a `row_len` the data does not back.
        if input.is_empty() {
            return if backend.is_available() {
                Ok(())
            } else {
                Err(unavailable(backend))
            };
        }
        match (&self.kernel, backend) {
            (LogSoftmaxKernel::FixedPoint(_), Backend::Scalar) => {
                scalar::log_softmax(&self.params, input, output, row_len)
            }
            #[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
            (LogSoftmaxKernel::FixedPoint(tables), Backend::Neon) => {
                neon_entry::log_softmax(&self.params, tables, input, output, row_len)
            }
            (LogSoftmaxKernel::Lut(lut), Backend::Scalar) => {
                lut::log_softmax_scalar(lut, input, output, row_len)
            }
            #[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
            (LogSoftmaxKernel::Lut(lut), Backend::Neon) => {
                lut_neon::log_softmax(lut, input, output, row_len)
            }
            (LogSoftmaxKernel::DequantF32(k), Backend::Scalar) => {
                f32::log_softmax_scalar(k, input, output, row_len)
            }
            #[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
            (LogSoftmaxKernel::DequantF32(k), Backend::Neon) => {
                f32::log_softmax_neon(k, input, output, row_len)
            }
            #[allow(unreachable_patterns)]
            (_, b) => return Err(unavailable(b)),
        }
        Ok(())
    }
}

/// What `LogSoftmax::new` prepared for its method, beyond [`LogSoftmaxParams`].
// The tables live inline (prepared once, no allocation, `Copy`); the size
// difference to the table-less variants is intended.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Copy, Debug)]
enum LogSoftmaxKernel {
    /// [`Method::FixedPoint`]: the params, and the NEON kernel's tables
    /// (the scalar reference runs on the params alone).
    #[cfg_attr(
        not(all(target_arch = "aarch64", target_feature = "neon")),
        allow(dead_code)
    )]
    FixedPoint(LogSoftmaxTables),
    /// 8-bit [`Method::Lut`]: TFLite's optimized kernel's `f32` exp table
    /// (see `lut.rs`); only prepared with `std`.
    #[cfg_attr(not(feature = "std"), allow(dead_code))]
    Lut(LogSoftmaxLut),
    /// [`Method::DequantF32`]: the `f32` multipliers.
    DequantF32(LogSoftmaxF32),
}

/// The largest `input scale * 255 / output scale` [`Method::Lut`] takes:
/// its `f32` outputs `step * x - pre` then stay below `2^21` in magnitude,
/// where `f32` resolves far below the half-unit its rounding needs.
#[cfg(feature = "std")]
const LUT_MAX_SPAN: f64 = (1u64 << 20) as f64;

/// 8-bit [`Method::Lut`]: TFLite's optimized kernel; needs `std` (`expf`
/// and `logf`). `input` and `output` are already validated.
#[allow(unused_variables)]
fn lut_kernel<T: QuantElem>(input: QuantParams, output: QuantParams) -> Result<LogSoftmaxKernel> {
    #[cfg(feature = "std")]
    {
        // TFLite's float arithmetic holds while `input_scale * x /
        // output_scale` stays far inside f32's exact integers: beyond, its
        // `step * x - (input_scale * max + ln sum) / output_scale` cancels
        // to garbage (at f32::MAX it is NaN and the byte -128 where 127 is
        // right). qneon refuses those scales rather than give TFLite's
        // wrong bytes.
        let span = input.scale as f64 * (T::MAX - T::MIN) as f64 / output.scale as f64;
        if span.is_nan() || span > LUT_MAX_SPAN {
            return Err(crate::error::Error::OutOfDomain {
                op: "log_softmax",
                what: "input scale",
                value: input.scale as f64,
                requirement: "such that input scale * 255 / output scale <= 2^20 for \
                              Method::Lut (TFLite's f32 arithmetic loses the result \
                              beyond); use Method::FixedPoint or Method::DequantF32",
            });
        }
        Ok(LogSoftmaxKernel::Lut(LogSoftmaxLut::new::<T>(
            input.scale,
            output,
        )))
    }
    #[cfg(not(feature = "std"))]
    {
        Err(crate::error::Error::Unsupported {
            op: "log_softmax",
            dtype: T::NAME,
            reason: "Method::Lut log-softmax needs the `std` feature (f32::exp and f32::ln, \
                     as TFLite's expf and logf); use Method::FixedPoint",
        })
    }
}

op_methods!(rows LogSoftmax, LogSoftmaxParams, "log_softmax", "Log-softmax");
