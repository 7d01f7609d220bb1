//! Quantized logistic (sigmoid) and tanh.
//!
//! ```text
//! x      = q - input_zero_point
//! x <= -radius        -> the op's lower limit, quantized (logistic 0, tanh -1)
//! x >=  radius        -> the op's upper limit, quantized (clamped)
//! else v = x * input_multiplier * 2^input_shift     in Q4.27 (Q5.26 for int16)
//!      y = logistic(v) or tanh(v)                   in Q0.31 (gemmlowp polynomial)
//!      q = rounding_divide_by_pot(y, 31 - output_fraction_bits) + output_zero_point, clamped
//! ```
//! For int8 this is TFLite Micro's `reference_integer_ops::Logistic` / `Tanh`
//! (and its `Prepare`: multiplier from `frexp(scale * 2^27)`, radius from
//! `CalculateInputRadius`), bit for bit. uint8 uses the same arithmetic with
//! TFLite's uint8 output quantization.
//!
//! Where TFLite Micro is wrong, qneon is not: for input scales >= 4 TFLite
//! Micro's radius rounds down to one step (logistic) or zero steps (both ops; at
//! scale >= 8 `logistic(0)` comes out -128). qneon widens the radius just enough
//! that every input it clamps is saturated in exact arithmetic, which matches
//! TFLite's correctly rounded reference there.
//!
//! For int16 there is no integer-only reference to match (TFLite interpolates a
//! sigmoid table; `Method::Lut` reproduces it, see `lut16.rs`). qneon's
//! FixedPoint int16 path rescales to Q5.26 instead of Q4.27: the
//! TFLite-style radius then covers `|v| >= 15.5`, beyond which logistic and tanh
//! round to the saturated int16 value, so clamping there loses nothing.

mod f32;
mod lut16;
#[cfg(all(target_arch = "aarch64", target_feature = "neon", feature = "std"))]
mod lut16_neon;
#[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
mod neon;
pub(crate) mod params;
mod scalar;
mod table256;
#[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
mod table256_neon;

use self::f32::ActivationF32;
use self::lut16::Activation16;
use self::params::{Activation, ActivationParams};
use self::table256::Table256;
use super::method::{unsupported_method, Method};
use crate::backend::{unavailable, Backend};
#[cfg(feature = "std")]
use crate::checks::check_input_zero_point_is_zero;
use crate::checks::{check_lengths, not_int16};
use crate::elem::{view, ElemKind, QuantElem};
use crate::error::{Error, Result};
use crate::quant::QuantParams;
use core::marker::PhantomData;

/// The NEON backend's int16 [`Method::Lut`] table: every output, built by
/// `new()` from the scalar kernel (128 KiB on the heap; see `lut16_neon.rs`).
#[cfg(all(target_arch = "aarch64", target_feature = "neon", feature = "std"))]
type Lut16Table = lut16_neon::OutputTable16;
/// No NEON backend (or no `std`, where int16 `Method::Lut` is unsupported):
/// no table.
#[cfg(not(all(target_arch = "aarch64", target_feature = "neon", feature = "std")))]
type Lut16Table = ();

/// What `Logistic::new` / `Tanh::new` prepared for their method, beyond
/// [`ActivationParams`].
// The 8-bit tables live inline (prepared once, no allocation); the size
// difference to the table-less variants is intended. The int16 output table
// is on the heap (128 KiB), so the ops are `Clone` but not `Copy`.
#[allow(clippy::large_enum_variant)]
#[cfg_attr(not(feature = "std"), allow(dead_code))]
#[derive(Clone, Debug)]
enum ActivationKernel {
    /// [`Method::FixedPoint`]: everything is in the params.
    FixedPoint,
    /// 8-bit [`Method::Lut`] or [`Method::LutFixedPoint`]: one byte lookup.
    Table256(Table256),
    /// int16 [`Method::Lut`]: TFLite's int16 kernel for the input scale
    /// (the scalar backend runs it) and every output (the NEON backend
    /// gathers them).
    Lut16(Activation16, Lut16Table),
    /// [`Method::DequantF32`]: the `f32` scales.
    DequantF32(ActivationF32),
}

impl ActivationKernel {
    /// Validates and prepares `activation` on `T` with `method`.
    fn new<T: QuantElem>(
        op: &'static str,
        activation: Activation,
        input: QuantParams,
        output: QuantParams,
        method: Method,
    ) -> Result<(ActivationParams, ActivationKernel)> {
        let params = ActivationParams::new::<T>(activation, input, output)?;
        let kernel = match method {
            Method::FixedPoint => ActivationKernel::FixedPoint,
            Method::Lut if T::KIND == ElemKind::I16 => lut16_kernel(op, activation, input)?,
            Method::DequantF32 => {
                ActivationKernel::DequantF32(ActivationF32::new(activation, input, output))
            }
            _ => match Table256::for_method::<T>(method, &params, input, output) {
                Some(table) => ActivationKernel::Table256(table),
                None => return Err(unsupported_method::<T>(op, method)),
            },
        };
        Ok((params, kernel))
    }

    /// The prepared method's kernel on lengths already checked: the one
    /// place that matches method and backend.
    fn run<T: QuantElem>(
        &self,
        params: &ActivationParams,
        backend: Backend,
        input: &[T],
        output: &mut [T],
    ) -> Result<()> {
        match (self, backend) {
            (ActivationKernel::FixedPoint, b) => fixed_point(params, b, input, output)?,
            (ActivationKernel::Table256(table), Backend::Scalar) => {
                let (i, o) = bytes_of(input, output)?;
                table256::lookup_u8(table, i, o)
            }
            #[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
            (ActivationKernel::Table256(table), Backend::Neon) => {
                let (i, o) = bytes_of(input, output)?;
                table256_neon::lookup_u8(table, i, o)
            }
            (ActivationKernel::Lut16(kernel, _), Backend::Scalar) => {
                match view(input, output).i16() {
                    Some((i, o)) => kernel.run(params.activation, i, o),
                    None => return Err(not_int16()),
                }
            }
            #[cfg(all(target_arch = "aarch64", target_feature = "neon", feature = "std"))]
            (ActivationKernel::Lut16(_, table), Backend::Neon) => match view(input, output).i16() {
                Some((i, o)) => lut16_neon::gather_i16(table.entries(), i, o),
                None => return Err(not_int16()),
            },
            (ActivationKernel::DequantF32(k), Backend::Scalar) => {
                f32::activation_scalar(k, input, output)
            }
            #[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
            (ActivationKernel::DequantF32(k), Backend::Neon) => {
                f32::activation_neon(k, input, output)
            }
            #[allow(unreachable_patterns)]
            (_, b) => return Err(unavailable(b)),
        }
        Ok(())
    }
}

/// [`Method::FixedPoint`] on `backend`. Its own function, as the kernels'
/// loops were before the family's match grew: inlined into that match, the
/// scalar int16 loop measured one instruction per element more.
#[inline(never)]
fn fixed_point<T: QuantElem>(
    params: &ActivationParams,
    backend: Backend,
    input: &[T],
    output: &mut [T],
) -> Result<()> {
    match backend {
        Backend::Scalar => scalar::activation(params, input, output),
        #[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
        Backend::Neon => neon::activation(params, input, output),
        #[allow(unreachable_patterns)]
        b => return Err(unavailable(b)),
    }
    Ok(())
}

/// 8-bit data as bytes for the 256-entry tables; `i16` is
/// [`Error::Unsupported`] (`new()` builds tables for 8-bit types only).
fn bytes_of<'a, T: QuantElem>(
    input: &'a [T],
    output: &'a mut [T],
) -> Result<(&'a [u8], &'a mut [u8])> {
    view(input, output).bytes().ok_or(Error::Unsupported {
        op: "lookup table",
        dtype: T::NAME,
        reason: "256-entry tables are for int8 and uint8 (int16 Method::Lut has its own kernels)",
    })
}

/// int16 [`Method::Lut`]: TFLite's `Prepare` checks (input zero point 0) and
/// its choice of kernel; needs `std`.
#[allow(unused_variables)]
fn lut16_kernel(
    op: &'static str,
    activation: Activation,
    input: QuantParams,
) -> Result<ActivationKernel> {
    #[cfg(feature = "std")]
    {
        check_input_zero_point_is_zero(input.zero_point)?;
        let kernel = Activation16::prepare(activation, input.scale);
        #[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
        let table = lut16_neon::OutputTable16::new(&kernel, activation);
        #[cfg(not(all(target_arch = "aarch64", target_feature = "neon")))]
        let table = ();
        Ok(ActivationKernel::Lut16(kernel, table))
    }
    #[cfg(not(feature = "std"))]
    {
        Err(Error::Unsupported {
            op,
            dtype: "int16",
            reason: "Method::Lut for int16 needs the `std` feature (f64::exp, f32::ln while \
                     preparing); use Method::FixedPoint",
        })
    }
}

macro_rules! activation_op {
    ($name:ident, $activation:expr, $opname:literal, $doc:literal) => {
        #[doc = $doc]
        #[derive(Clone, Debug)]
        pub struct $name<T: QuantElem> {
            params: ActivationParams,
            kernel: ActivationKernel,
            backend: Backend,
            _type: PhantomData<T>,
        }

        impl<T: QuantElem> $name<T> {
            /// Validates the quantization (input scale finite and > 0, zero points
            /// in range, output quantization as TFLite requires) and prepares the op.
            pub fn new(input: QuantParams, output: QuantParams, method: Method) -> Result<Self> {
                let (params, kernel) =
                    ActivationKernel::new::<T>($opname, $activation, input, output, method)?;
                Ok($name {
                    params,
                    kernel,
                    backend: Backend::best(),
                    _type: PhantomData,
                })
            }

            /// The XNNPACK delegate's 8-bit op (int8 or uint8): a lookup
            /// through the table XNNPACK builds from float math
            /// (`Table256::from_xnnpack`). Validates as [`new`](Self::new);
            /// int16 is refused ([`Error::Unsupported`]: XNNPACK has no
            /// int16 table).
            #[cfg(feature = "std")]
            pub fn new_xnnpack(input: QuantParams, output: QuantParams) -> Result<Self> {
                if T::MAX - T::MIN != 255 {
                    return Err(Error::Unsupported {
                        op: $opname,
                        dtype: T::NAME,
                        reason: "XNNPACK's table is for int8 and uint8 only",
                    });
                }
                let params = ActivationParams::new::<T>($activation, input, output)?;
                let table = Table256::from_xnnpack::<T>($activation, input, output);
                Ok($name {
                    params,
                    kernel: ActivationKernel::Table256(table),
                    backend: Backend::best(),
                    _type: PhantomData,
                })
            }

            /// The prepared method's kernel on lengths already checked.
            fn run_kernel(&self, backend: Backend, input: &[T], output: &mut [T]) -> Result<()> {
                self.kernel.run(&self.params, backend, input, output)
            }
        }

        op_methods!(elements $name, ActivationParams, $opname, "Applies the function");
    };
}

activation_op!(
    Logistic,
    Activation::Logistic,
    "logistic",
    "Quantized logistic (sigmoid), `1 / (1 + exp(-x))`.\n\n\
     Output quantization (TFLite's): int8 scale 1/256 zero point -128; uint8 1/256 and 0; \
     int16 1/32768 and 0. [`Method::FixedPoint`] is bit-exact with TFLite Micro's int8 kernel \
     (and correct where TFLite Micro saturates too early, input scales >= 4). [`Method::Lut`] \
     is bit-exact with the TFLite interpreter's int8, uint8 and int16 kernels (int16: input \
     zero point 0, as TFLite requires; on aarch64 `new()` also tabulates all 65,536 outputs, \
     128 KiB on the heap shared by clones, which the NEON backend gathers)."
);
activation_op!(
    Tanh,
    Activation::Tanh,
    "tanh",
    "Quantized hyperbolic tangent.\n\n\
     Output quantization (TFLite's): int8 scale 1/128 zero point 0; uint8 1/128 and 128; \
     int16 1/32768 and 0. [`Method::FixedPoint`] is bit-exact with TFLite Micro's int8 kernel. \
     [`Method::Lut`] is bit-exact with the TFLite interpreter's int8, uint8 and int16 kernels \
     (int16: input zero point 0, as TFLite requires; on aarch64 `new()` also tabulates all \
     65,536 outputs, 128 KiB on the heap shared by clones, which the NEON backend gathers)."
);
