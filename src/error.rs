//! The one error type of the crate.

use core::fmt;

/// Everything a caller can get wrong, named after the problem and carrying the values.
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub enum Error {
    /// Input and output buffers differ in length.
    LengthMismatch {
        /// The operation.
        op: &'static str,
        /// Input length in elements.
        input: usize,
        /// Output length in elements.
        output: usize,
    },
    /// The row length is 0 or does not divide the buffer length.
    RowLength {
        /// The operation.
        op: &'static str,
        /// Buffer length in elements.
        len: usize,
        /// The requested row length.
        row: usize,
    },
    /// A scale that is not finite or not positive.
    Scale {
        /// Which scale (`"input scale"`, `"output scale"`).
        what: &'static str,
        /// The value given.
        value: f64,
    },
    /// A softmax `beta` that is not finite or not positive.
    Beta {
        /// The value given.
        value: f64,
    },
    /// A zero point outside the element type's range.
    ZeroPoint {
        /// Which zero point.
        what: &'static str,
        /// The value given.
        value: i32,
        /// Smallest allowed value.
        min: i32,
        /// Largest allowed value.
        max: i32,
    },
    /// Output quantization that TFLite's `Prepare` rejects for this op and type.
    OutputQuantization {
        /// The operation.
        op: &'static str,
        /// The element type.
        dtype: &'static str,
        /// The scale TFLite requires.
        expected_scale: f64,
        /// The zero point TFLite requires.
        expected_zero_point: i32,
        /// The scale given.
        scale: f64,
        /// The zero point given.
        zero_point: i32,
    },
    /// A Q31 `integer_bits` outside the supported range.
    IntegerBits {
        /// The operation.
        op: &'static str,
        /// The value given.
        value: u32,
        /// Largest supported value.
        max: u32,
    },
    /// A real multiplier that is negative or not finite.
    Multiplier {
        /// The value given.
        value: f64,
    },
    /// The combination of operation, element type and method is not implemented.
    Unsupported {
        /// The operation.
        op: &'static str,
        /// The element type.
        dtype: &'static str,
        /// What is missing and why.
        reason: &'static str,
    },
    /// The requested backend does not exist on this target or CPU.
    BackendUnavailable {
        /// The backend's name.
        backend: &'static str,
    },
    /// A buffer or parameter list whose length does not fit the operator's shape.
    Length {
        /// The operation.
        op: &'static str,
        /// Which buffer (`"weights"`, `"bias"`, `"input"`, ...).
        what: &'static str,
        /// The length the shape requires.
        expected: usize,
        /// The length given.
        got: usize,
    },
    /// A dimension that must be at least 1 is 0.
    ZeroDimension {
        /// The operation.
        op: &'static str,
        /// Which dimension.
        what: &'static str,
    },
    /// A parameter outside the domain the function or operation supports
    /// (for those that the variants above do not describe).
    OutOfDomain {
        /// The function or operation.
        op: &'static str,
        /// The parameter, by name.
        what: &'static str,
        /// The value given.
        value: f64,
        /// What the parameter must be (`"finite"`, `"at most 31"`, ...).
        requirement: &'static str,
    },
    /// A class target that is neither a class index (`0..classes`) nor the
    /// ignore index.
    Target {
        /// The operation.
        op: &'static str,
        /// The target's position (its index in the targets).
        position: usize,
        /// The value given.
        value: i64,
        /// The number of classes.
        classes: usize,
    },
    /// Preparing needs more memory than the allocator gives (dimensions
    /// larger than any data they could describe).
    Allocation {
        /// The operation.
        op: &'static str,
        /// What was being allocated.
        what: &'static str,
        /// The bytes asked for (saturated at `usize::MAX`).
        bytes: usize,
    },
    /// An output buffer too small for everything an operation selects (the
    /// thresholded ops' hits): nothing is dropped silently; the buffer holds
    /// the first `capacity` results and `needed` says how many there are.
    Capacity {
        /// The operation.
        op: &'static str,
        /// The buffer's length.
        capacity: usize,
        /// The number of results the input has.
        needed: usize,
    },
    /// A tile (the rows or columns of [`Gemm::run_tile`](crate::Gemm::run_tile),
    /// the matrices of [`MatMul::run_batch_tile`](crate::MatMul::run_batch_tile),
    /// the elements of [`Operand::tile`](crate::ops::Operand::tile)) that is
    /// reversed, reaches past the operation's shape, or has an end off the
    /// operation's tile grain.
    Tile {
        /// The operation.
        op: &'static str,
        /// Which range (`"rows"`, `"columns"`, `"lhs matrix"`, ...).
        what: &'static str,
        /// The range's start.
        start: usize,
        /// The range's end (exclusive).
        end: usize,
        /// The shape's extent: the end may be at most this (`usize::MAX`
        /// where only the grain limits it).
        limit: usize,
        /// Both ends must be multiples of this, except an end equal to
        /// `limit`.
        grain: usize,
    },
    /// A name that [`FromStr`](core::str::FromStr) does not know (of a
    /// [`Method`](crate::Method) or [`Backend`](crate::Backend)).
    UnknownName {
        /// What was being parsed (`"method"`, `"backend"`).
        what: &'static str,
        /// The names accepted.
        accepted: &'static str,
    },
}

/// `core::result::Result` with this crate's [`Error`].
pub type Result<T, E = Error> = core::result::Result<T, E>;

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Error::LengthMismatch { op, input, output } => write!(
                f,
                "{op}: input has {input} elements but output has {output}"
            ),
            Error::RowLength { op, len, row } => {
                if row == 0 {
                    write!(f, "{op}: row_len must be at least 1 (buffer has {len} elements)")
                } else {
                    write!(f, "{op}: row_len {row} does not divide the buffer length {len}")
                }
            }
            Error::Scale { what, value } => {
                write!(f, "{what} must be finite and > 0, got {value}")
            }
            Error::Beta { value } => write!(f, "softmax beta must be finite and > 0, got {value}"),
            Error::ZeroPoint { what, value, min, max } => {
                write!(f, "{what} {value} is outside [{min}, {max}]")
            }
            Error::OutputQuantization {
                op,
                dtype,
                expected_scale,
                expected_zero_point,
                scale,
                zero_point,
            } => write!(
                f,
                "{op} {dtype}: output quantization must be scale {expected_scale} and zero point \
                 {expected_zero_point} (as TFLite requires), got scale {scale} and zero point {zero_point}"
            ),
            Error::IntegerBits { op, value, max } => {
                write!(f, "{op}: integer_bits must be in 0..={max}, got {value}")
            }
            Error::Multiplier { value } => {
                write!(f, "real multiplier must be finite and >= 0, got {value}")
            }
            Error::Unsupported { op, dtype, reason } => {
                write!(f, "{op} {dtype}: unsupported: {reason}")
            }
            Error::BackendUnavailable { backend } => {
                write!(f, "backend {backend} is not available on this target")
            }
            Error::Length {
                op,
                what,
                expected,
                got,
            } => write!(f, "{op}: {what} has {got} elements, expected {expected}"),
            Error::ZeroDimension { op, what } => write!(f, "{op}: {what} must be at least 1"),
            Error::OutOfDomain {
                op,
                what,
                value,
                requirement,
            } => write!(f, "{op}: {what} must be {requirement}, got {value}"),
            Error::Target {
                op,
                position,
                value,
                classes,
            } => write!(
                f,
                "{op}: target {position} is {value}, not a class in 0..{classes} nor the ignore index"
            ),
            Error::Allocation { op, what, bytes } => {
                write!(f, "{op}: cannot allocate {bytes} bytes for {what}")
            }
            Error::Capacity {
                op,
                capacity,
                needed,
            } => write!(
                f,
                "{op}: the output buffer holds {capacity} results, the input has {needed}"
            ),
            Error::Tile {
                op,
                what,
                start,
                end,
                limit,
                grain,
            } => {
                write!(f, "{op}: tile {what} {start}..{end} must be an ordered range")?;
                if limit != usize::MAX {
                    write!(f, " ending at most at {limit}")?;
                }
                if grain > 1 {
                    write!(f, " whose ends are multiples of {grain}")?;
                    if limit != usize::MAX {
                        write!(f, " (or {limit})")?;
                    }
                }
                Ok(())
            }
            Error::UnknownName { what, accepted } => {
                write!(f, "unknown {what} name; use one of {accepted} (any case)")
            }
        }
    }
}

#[cfg(feature = "std")]
#[cfg_attr(docsrs, doc(cfg(feature = "std")))]
impl std::error::Error for Error {}
