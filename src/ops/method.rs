//! [`Method`]: the algorithm an operator uses, and the error for a method an
//! op does not offer.

use core::fmt;
use core::str::FromStr;

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
    /// A short lowercase name: `"fixed"`, `"lut"`, `"lut-fixed"`, `"f32"`
    /// (what [`Display`](fmt::Display) writes and the command line takes).
    pub fn name(self) -> &'static str {
        match self {
            Method::FixedPoint => "fixed",
            Method::Lut => "lut",
            Method::LutFixedPoint => "lut-fixed",
            Method::DequantF32 => "f32",
        }
    }

    /// The names [`FromStr`] accepts for this method, short name first:
    /// the [`name`](Self::name) and the variant's name, spelled together or
    /// with `-` or `_` between its words (`"fixed-point"`, `"FixedPoint"`).
    fn aliases(self) -> &'static [&'static str] {
        match self {
            Method::FixedPoint => &["fixed", "fixed-point", "fixedpoint"],
            Method::Lut => &["lut"],
            Method::LutFixedPoint => &["lut-fixed", "lut-fixed-point", "lutfixedpoint"],
            Method::DequantF32 => &["f32", "dequant-f32", "dequantf32"],
        }
    }
}

impl fmt::Display for Method {
    /// [`Method::name`].
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Method {
    type Err = Error;

    /// [`Method::name`] (`fixed`, `lut`, `lut-fixed`, `f32`) or the variant's
    /// name (`FixedPoint`, `fixed_point`, `lut-fixed-point`, `DequantF32`...),
    /// in any case; [`Error::UnknownName`] otherwise.
    fn from_str(s: &str) -> Result<Method, Error> {
        [
            Method::FixedPoint,
            Method::Lut,
            Method::LutFixedPoint,
            Method::DequantF32,
        ]
        .into_iter()
        .find(|m| m.aliases().iter().any(|a| same_name(a, s)))
        .ok_or(Error::UnknownName {
            what: "method",
            accepted: "fixed, lut, lut-fixed, f32 (or FixedPoint, Lut, LutFixedPoint, DequantF32)",
        })
    }
}

/// `alias` (lowercase, words joined by `-` or not at all) equals `s` up to
/// ASCII case, `_` standing for `-`.
fn same_name(alias: &str, s: &str) -> bool {
    alias.len() == s.len()
        && alias.bytes().zip(s.bytes()).all(|(a, b)| {
            let b = if b == b'_' {
                b'-'
            } else {
                b.to_ascii_lowercase()
            };
            a == b
        })
}

/// The error for a method an op does not offer for a type: the cause first,
/// then what to use instead.
pub(crate) fn unsupported_method<T: QuantElem>(op: &'static str, method: Method) -> Error {
    let row_op = matches!(op, "softmax" | "log_softmax");
    let reason = match method {
        Method::Lut if op != "log_softmax" && !cfg!(feature = "std") => {
            if T::MAX - T::MIN == 255 && !row_op {
                "Method::Lut needs the `std` feature (its table is filled with f32 math in \
                 new()), which this build does not enable; enable it, or use \
                 Method::LutFixedPoint (a table without `std`, bit-exact with \
                 Method::FixedPoint) or Method::FixedPoint"
            } else {
                "Method::Lut needs the `std` feature (its tables are filled with f32/f64 math \
                 in new()), which this build does not enable; enable it, or use \
                 Method::FixedPoint"
            }
        }
        Method::Lut => {
            "Method::Lut is not implemented for log-softmax (qneon has no table kernel for \
             it); use Method::FixedPoint (TFLite's reference kernel, bit for bit)"
        }
        Method::LutFixedPoint if row_op => {
            "Method::LutFixedPoint is a per-element table and this op depends on the whole \
             row; use Method::FixedPoint (the same bytes) or, for softmax, Method::Lut"
        }
        Method::LutFixedPoint => {
            "Method::LutFixedPoint is not provided for int16 (its table would take 65,536 \
             entries, 128 KiB per op); use Method::FixedPoint (the same bytes) or Method::Lut"
        }
        Method::DequantF32 => {
            "Method::DequantF32 is not available for this op and type; use Method::FixedPoint"
        }
        Method::FixedPoint => "Method::FixedPoint is not available for this type",
    };
    Error::Unsupported {
        op,
        dtype: T::NAME,
        reason,
    }
}
