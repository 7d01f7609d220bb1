//! Element-wise activations of CNNs on int8 and uint8, as TFLite's
//! quantized kernels compute them: RELU, RELU6 and RELU_N1_TO_1 (its
//! `ReluX`, requantizing when input and output scales differ) and
//! LEAKY_RELU (two multipliers, one for each sign) and HARD_SWISH (its
//! 16-bit fixed-point "reluish" arithmetic, see `params.rs`).
//!
//! ```text
//! relu:       y = clamp(zp_out + M(x - zp_in), lo, hi)
//!             M = QuantizeMultiplier(f32(s_in / s_out)),
//!             lo, hi = zp_out + roundf(bound / s_out), within the type
//! leaky_relu: v = x - zp_in
//!             y = zp_out + (v >= 0 ? M_identity(v) : M_alpha(v)), saturated
//!             M_identity of f32(s_in / s_out), M_alpha of f32(s_in * alpha / s_out)
//! ```
//!
//! `M(.)` is `MultiplyByQuantizedMultiplier` with double rounding, the
//! arithmetic LiteRT 2.3's kernels were measured to use for these
//! `int32` multiplies (as for MEAN). One input byte gives one output
//! byte: `new()` builds the 256 outputs from the scalar arithmetic, which
//! [`Backend::Scalar`] runs element by element (the oracle) and
//! [`Backend::Neon`] looks up with `tbl`.
//!
//! * `params.rs`: the arithmetic of each op and the table built from it.
//! * `neon.rs`: the table lookup.

#[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
mod neon;
pub(crate) mod params;

use core::marker::PhantomData;

use crate::backend::{unavailable, Backend};
use crate::checks::check_lengths;
use crate::elem::QuantElem;
use crate::error::Result;
use crate::quant::QuantParams;
pub use params::ReluKind;
use params::{table, HardSwishParams, LeakyReluParams, ReluParams};

/// The run both ops share: the scalar arithmetic `f` element by element,
/// or the table on NEON.
fn run_table<T: QuantElem>(
    op: &'static str,
    f: impl Fn(i32) -> i32,
    _table: &[u8; 256],
    backend: Backend,
    input: &[T],
    output: &mut [T],
) -> Result<()> {
    check_lengths(op, input.len(), output.len())?;
    match backend {
        Backend::Scalar => {
            for (o, &x) in output.iter_mut().zip(input) {
                *o = T::saturate(f(x.to_i32()));
            }
            Ok(())
        }
        #[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
        Backend::Neon => {
            use crate::elem::{view, Slices};
            match view(input, output) {
                Slices::I8(i, o) => neon::table_lookup_i8(_table, i, o),
                Slices::U8(i, o) => neon::table_lookup_u8(_table, i, o),
                // `new()` refuses int16.
                Slices::I16(i, o) => {
                    for (o, &x) in o.iter_mut().zip(i) {
                        *o = i16::saturate(f(x as i32));
                    }
                }
            }
            Ok(())
        }
        #[allow(unreachable_patterns)]
        b => Err(unavailable(b)),
    }
}

/// Quantized RELU, RELU6 or RELU_N1_TO_1 on int8 or uint8, bit-exact with
/// TFLite's (reference and optimized kernels share the arithmetic).
/// Element-wise: any range of elements is a tile. `run()` allocates
/// nothing.
#[derive(Clone, Debug)]
pub struct Relu<T: QuantElem> {
    params: ReluParams,
    table: [u8; 256],
    backend: Backend,
    _type: PhantomData<T>,
}

impl<T: QuantElem> Relu<T> {
    /// Prepares `kind` from `input` to `output` quantization. Errors:
    /// scales not finite and `> 0`, zero points outside the type, int16
    /// ([`Error::Unsupported`](crate::Error::Unsupported)).
    pub fn new(kind: ReluKind, input: QuantParams, output: QuantParams) -> Result<Self> {
        let params = ReluParams::new::<T>(kind, input, output)?;
        Ok(Relu {
            table: table::<T>(|x| params.apply(x)),
            params,
            backend: Backend::best(),
            _type: PhantomData,
        })
    }

    /// The quantized output range `[min, max]` of the clamp.
    pub fn output_range(&self) -> (i32, i32) {
        (self.params.min, self.params.max)
    }

    /// The backend [`run`](Self::run) uses.
    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// Applies the activation element-wise with the best backend. Errors
    /// if the lengths differ.
    pub fn run(&self, input: &[T], output: &mut [T]) -> Result<()> {
        self.run_with(self.backend, input, output)
    }

    /// [`run`](Self::run) with the given backend (an error if it is not
    /// available here). Every backend gives the same bytes.
    pub fn run_with(&self, backend: Backend, input: &[T], output: &mut [T]) -> Result<()> {
        let p = self.params;
        run_table("relu", |x| p.apply(x), &self.table, backend, input, output)
    }
}

/// Quantized LEAKY_RELU on int8 or uint8, bit-exact with TFLite's.
/// Element-wise: any range of elements is a tile. `run()` allocates
/// nothing.
#[derive(Clone, Debug)]
pub struct LeakyRelu<T: QuantElem> {
    params: LeakyReluParams,
    table: [u8; 256],
    backend: Backend,
    _type: PhantomData<T>,
}

impl<T: QuantElem> LeakyRelu<T> {
    /// Prepares `y = x >= 0 ? x : alpha * x` from `input` to `output`
    /// quantization. Errors: `alpha` negative or not finite
    /// ([`Error::OutOfDomain`](crate::Error::OutOfDomain)), scales not
    /// finite and `> 0`, zero points outside the type, int16.
    pub fn new(alpha: f32, input: QuantParams, output: QuantParams) -> Result<Self> {
        Self::with(LeakyReluParams::new::<T>(alpha, input, output)?)
    }

    /// The same op in the XNNPACK delegate's arithmetic (its `vlrelu`: the
    /// two slopes as multipliers with 8 fractional bits, see `params.rs`).
    /// Errors beyond [`new`](Self::new)'s: scale ratios XNNPACK refuses
    /// ([`Error::Unsupported`](crate::Error::Unsupported): `s_in / s_out`
    /// or its product with `alpha` outside `[2^-8, 2^7]`), where the
    /// delegate leaves the op to TFLite.
    pub fn new_xnnpack(alpha: f32, input: QuantParams, output: QuantParams) -> Result<Self> {
        Self::with(LeakyReluParams::new_xnnpack::<T>(alpha, input, output)?)
    }

    fn with(params: LeakyReluParams) -> Result<Self> {
        Ok(LeakyRelu {
            table: table::<T>(|x| params.apply(x)),
            params,
            backend: Backend::best(),
            _type: PhantomData,
        })
    }

    /// The backend [`run`](Self::run) uses.
    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// Applies the activation element-wise with the best backend. Errors
    /// if the lengths differ.
    pub fn run(&self, input: &[T], output: &mut [T]) -> Result<()> {
        self.run_with(self.backend, input, output)
    }

    /// [`run`](Self::run) with the given backend (an error if it is not
    /// available here). Every backend gives the same bytes.
    pub fn run_with(&self, backend: Backend, input: &[T], output: &mut [T]) -> Result<()> {
        let p = self.params;
        run_table(
            "leaky_relu",
            |x| p.apply(x),
            &self.table,
            backend,
            input,
            output,
        )
    }
}

/// Quantized HARD_SWISH on int8 or uint8, bit-exact with TFLite's 16-bit
/// fixed-point kernel. Element-wise: any range of elements is a tile.
/// `run()` allocates nothing.
#[derive(Clone, Debug)]
pub struct HardSwish<T: QuantElem> {
    params: HardSwishParams,
    table: [u8; 256],
    backend: Backend,
    _type: PhantomData<T>,
}

impl<T: QuantElem> HardSwish<T> {
    /// Prepares `y = x * relu6(x + 3) / 6` from `input` to `output`
    /// quantization. Errors: `s_in / (128 s_out)` of 1 or more (TFLite's
    /// output exponent rule) or an input scale whose reluish exponent falls
    /// outside `-31..=31` ([`Error::OutOfDomain`](crate::Error::OutOfDomain)),
    /// scales not finite and `> 0`, zero points outside the type, int16.
    pub fn new(input: QuantParams, output: QuantParams) -> Result<Self> {
        let params = HardSwishParams::new::<T>(input, output)?;
        Ok(HardSwish {
            table: table::<T>(|x| params.apply(x)),
            params,
            backend: Backend::best(),
            _type: PhantomData,
        })
    }

    /// The backend [`run`](Self::run) uses.
    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// Applies the activation element-wise with the best backend. Errors
    /// if the lengths differ.
    pub fn run(&self, input: &[T], output: &mut [T]) -> Result<()> {
        self.run_with(self.backend, input, output)
    }

    /// [`run`](Self::run) with the given backend (an error if it is not
    /// available here). Every backend gives the same bytes.
    pub fn run_with(&self, backend: Backend, input: &[T], output: &mut [T]) -> Result<()> {
        let p = self.params;
        run_table(
            "hard_swish",
            |x| p.apply(x),
            &self.table,
            backend,
            input,
            output,
        )
    }
}

#[cfg(test)]
mod tests;
