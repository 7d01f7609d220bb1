//! [`Method`]: the algorithm an operator uses, and the error for a method an
//! op does not offer.

use crate::elem::QuantElem;
use crate::error::Error;

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
    /// input scales 2^-12 and, for tanh, 2^-11) and their zero-input-zero-point
    /// requirement. Where those kernels are wrong qneon computes the function
    /// instead (and differs from TFLite's bytes): input scales above ~16/3
    /// (softmax: `scale * beta` above ~5), where TFLite's int32 rescaling
    /// overflows, and logistic/tanh scales below ~3.8e-14 or above ~175,000,
    /// where TFLite reads the input as if its scale were 2^-12.
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
