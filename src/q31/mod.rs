//! Raw Q31 activations: softmax, logistic and tanh on 32-bit fixed-point values.
//!
//! The input has `integer_bits` integer bits (excluding the sign, gemmlowp's
//! count), so raw `x` means `x / 2^(31 - integer_bits)`; the output is always
//! Q0.31. `integer_bits` may be `0..=`[`MAX_INTEGER_BITS`].
//!
//! Values cross the API either as raw `i32` or as `fixed` types. The `fixed`
//! crate counts the sign as an integer bit, so Q(N).(31-N) is
//! `FixedI32<U(31-N)>` (e.g. Q5.26 = `I6F26`, Q0.31 = `I1F31`). A `fixed` input
//! whose fraction bits disagree with `integer_bits` is an error. Slices are
//! reinterpreted with `bytemuck`, never copied.
//!
//! * [`logistic`] and [`tanh`] are gemmlowp's `logistic` / `tanh` on
//!   `FixedPoint<int32, N>`, bit for bit.
//! * [`softmax`] has no reference to match: `exp(x - max)` by
//!   `exp_on_negative_values`, an exact 64-bit sum, one Newton-Raphson
//!   reciprocal per row (TFLite's `GetReciprocal` normalisation) and a rounding
//!   multiply per element. Differences below the format's range (`x - max <
//!   -2^integer_bits`, possible for small `integer_bits`) are split in two
//!   factors, `exp(-2^I) * exp(rest)`, instead of being clamped.
//!
//!   Accuracy: every output is within `205.6 + (n - 1)/2` raw Q0.31 LSB of
//!   exact softmax on a row of `n`, `346.7 + (n - 1)/2` for `integer_bits
//!   <= 4`. An output with probability `p` is off by about `2^31 p` times
//!   its exp's relative error minus the row's mean one; gemmlowp's exp
//!   polynomial errs between -2.29e-7 and +2.82e-7, a split difference
//!   carries two such factors, and the maximum's exp is exact, which bounds
//!   that part by 189.6 (330.7 split) LSB; 16 LSB cover the reciprocal and
//!   roundings, half an LSB each the other terms' roundings
//!   (`tests/q31_softmax_bound.rs` derives it and searches for the worst:
//!   178.6 and 308.2 LSB).

#[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
mod neon;
mod params;
mod scalar;

use crate::backend::{unavailable, Backend};
use crate::checks::{check_lengths, check_rows};
use crate::error::{Error, Result};
use fixed::types::extra::LeEqU32;
use fixed::FixedI32;

/// Largest supported `integer_bits` (tanh evaluates `exp` with one more, which
/// needs 2 fraction bits).
pub const MAX_INTEGER_BITS: u32 = 28;

mod sealed {
    pub trait Sealed {}
}

/// A 32-bit element that is a raw Q31 value: `i32` or a `fixed::FixedI32` (sealed).
pub trait RawQ31: sealed::Sealed + bytemuck::Pod {
    /// Fraction bits the type declares, if it declares any (`None` for `i32`).
    const FRAC_BITS: Option<u32>;
}

impl sealed::Sealed for i32 {}
impl RawQ31 for i32 {
    const FRAC_BITS: Option<u32> = None;
}
impl<F: LeEqU32> sealed::Sealed for FixedI32<F> {}
impl<F: LeEqU32> RawQ31 for FixedI32<F> {
    const FRAC_BITS: Option<u32> = Some(F::U32);
}

fn check_format<X: RawQ31, Y: RawQ31>(op: &'static str, integer_bits: u32) -> Result<()> {
    if integer_bits > MAX_INTEGER_BITS {
        return Err(Error::IntegerBits {
            op,
            value: integer_bits,
            max: MAX_INTEGER_BITS,
        });
    }
    if X::FRAC_BITS.is_some_and(|f| f != 31 - integer_bits) {
        return Err(Error::Unsupported {
            op,
            dtype: "q31",
            reason: "the input's fixed type has a different number of fraction bits than 31 - integer_bits",
        });
    }
    if Y::FRAC_BITS.is_some_and(|f| f != 31) {
        return Err(Error::Unsupported {
            op,
            dtype: "q31",
            reason: "the output must be Q0.31 (I1F31 or i32)",
        });
    }
    Ok(())
}

/// Calls `$f::<I>` (or `$f::<I, {I + 1}>` with `plus_one`) for the runtime `$bits`.
macro_rules! with_integer_bits {
    ($bits:expr, |$i:ident| $body:expr) => {
        with_integer_bits!(@arms $bits, $i, $body, 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28)
    };
    (@arms $bits:expr, $i:ident, $body:expr, $($n:literal)*) => {
        match $bits {
            $($n => { const $i: u32 = $n; $body })*
            _ => unreachable!("integer_bits checked before dispatch"),
        }
    };
}

/// Softmax of each `row_len`-long row: Q(integer_bits) in, Q0.31 out, best backend.
pub fn softmax<X: RawQ31, Y: RawQ31>(
    input: &[X],
    integer_bits: u32,
    output: &mut [Y],
    row_len: usize,
) -> Result<()> {
    softmax_with(Backend::best(), input, integer_bits, output, row_len)
}

/// [`softmax`] with the given backend.
pub fn softmax_with<X: RawQ31, Y: RawQ31>(
    backend: Backend,
    input: &[X],
    integer_bits: u32,
    output: &mut [Y],
    row_len: usize,
) -> Result<()> {
    check_format::<X, Y>("q31 softmax", integer_bits)?;
    check_rows("q31 softmax", input.len(), output.len(), row_len)?;
    // No rows whatever `row_len` says: no kernel runs, so none sizes its
    // scratch from a `row_len` the data does not back.
    if input.is_empty() {
        return if backend.is_available() {
            Ok(())
        } else {
            Err(unavailable(backend))
        };
    }
    softmax_raw(
        backend,
        bytemuck::cast_slice(input),
        integer_bits,
        bytemuck::cast_slice_mut(output),
        row_len,
    )
}

/// Runs the same kernel name from the scalar or the NEON module: the one
/// place that matches the backend.
macro_rules! on_backend {
    ($backend:expr, $kernel:ident::<$($i:tt),*>($($arg:expr),*)) => {
        match $backend {
            Backend::Scalar => {
                scalar::$kernel::<$($i),*>($($arg),*);
                Ok(())
            }
            #[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
            Backend::Neon => {
                neon::$kernel::<$($i),*>($($arg),*);
                Ok(())
            }
            #[allow(unreachable_patterns)]
            b => Err(unavailable(b)),
        }
    };
}

/// The kernel for one integer-bit count on `backend`.
fn softmax_on<const I: u32>(
    backend: Backend,
    x: &[i32],
    y: &mut [i32],
    row_len: usize,
) -> Result<()> {
    on_backend!(backend, softmax_q31::<I>(x, y, row_len))
}

/// The kernel for one integer-bit count on `backend`.
fn logistic_on<const I: u32>(backend: Backend, x: &[i32], y: &mut [i32]) -> Result<()> {
    on_backend!(backend, logistic_q31::<I>(x, y))
}

/// The kernel for one integer-bit count on `backend`.
fn tanh_on<const I: u32, const I_PLUS_1: u32>(
    backend: Backend,
    x: &[i32],
    y: &mut [i32],
) -> Result<()> {
    on_backend!(backend, tanh_q31::<I, I_PLUS_1>(x, y))
}

// The raw kernels are not generic over the element types, so every
// integer-bit instantiation is compiled into this crate (where the asm checks
// find it) rather than into each caller.
fn softmax_raw(
    backend: Backend,
    x: &[i32],
    integer_bits: u32,
    y: &mut [i32],
    row_len: usize,
) -> Result<()> {
    with_integer_bits!(integer_bits, |I| softmax_on::<I>(backend, x, y, row_len))
}

fn logistic_raw(backend: Backend, x: &[i32], integer_bits: u32, y: &mut [i32]) -> Result<()> {
    with_integer_bits!(integer_bits, |I| logistic_on::<I>(backend, x, y))
}

fn tanh_raw(backend: Backend, x: &[i32], integer_bits: u32, y: &mut [i32]) -> Result<()> {
    with_integer_bits!(integer_bits, |I| tanh_on::<I, { I + 1 }>(backend, x, y))
}

/// Logistic, element-wise: Q(integer_bits) in, Q0.31 out, best backend.
pub fn logistic<X: RawQ31, Y: RawQ31>(
    input: &[X],
    integer_bits: u32,
    output: &mut [Y],
) -> Result<()> {
    logistic_with(Backend::best(), input, integer_bits, output)
}

/// [`logistic`] with the given backend.
pub fn logistic_with<X: RawQ31, Y: RawQ31>(
    backend: Backend,
    input: &[X],
    integer_bits: u32,
    output: &mut [Y],
) -> Result<()> {
    check_format::<X, Y>("q31 logistic", integer_bits)?;
    check_lengths("q31 logistic", input.len(), output.len())?;
    logistic_raw(
        backend,
        bytemuck::cast_slice(input),
        integer_bits,
        bytemuck::cast_slice_mut(output),
    )
}

/// Tanh, element-wise: Q(integer_bits) in, Q0.31 out, best backend.
pub fn tanh<X: RawQ31, Y: RawQ31>(input: &[X], integer_bits: u32, output: &mut [Y]) -> Result<()> {
    tanh_with(Backend::best(), input, integer_bits, output)
}

/// [`tanh`] with the given backend.
pub fn tanh_with<X: RawQ31, Y: RawQ31>(
    backend: Backend,
    input: &[X],
    integer_bits: u32,
    output: &mut [Y],
) -> Result<()> {
    check_format::<X, Y>("q31 tanh", integer_bits)?;
    check_lengths("q31 tanh", input.len(), output.len())?;
    tanh_raw(
        backend,
        bytemuck::cast_slice(input),
        integer_bits,
        bytemuck::cast_slice_mut(output),
    )
}
