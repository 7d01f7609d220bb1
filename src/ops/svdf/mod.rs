//! SVDF (singular value decomposition filter) on int8 input with int16 or
//! int8 state, as TFLite's integer kernel computes it (LiteRT's
//! `EvalIntegerSVDF`, TFLite Micro's `EvalIntegerSvdfReference`, which
//! adds the int8-state variant and a state zero point).
//!
//! One step, per batch row `b` (shapes: input `[batch, input_size]`,
//! feature weights `[filters, input_size]`, time weights
//! `[filters, memory]`, state `[batch, filters * memory]`, bias `[units]`,
//! output `[batch, units]`, `units = filters / rank`):
//!
//! ```text
//! state[b, f, 0..memory-1] = state[b, f, 1..memory]          (shift out the oldest)
//! state[b, f, memory-1]    = zp_s + clamp_S(M1(sum_i wf[f, i] * (x[b, i] - zp_x)))
//! t[b, f]                  = sum_m wt[f, m] * (state[b, f, m] - zp_s)
//! y[b, u]                  = clamp_i8(zp_y + M2(bias[u] + sum_{r < rank} t[b, u * rank + r]))
//! ```
//!
//! `M1 = s_x * s_wf / s_state` and `M2 = s_state * s_wt / s_y` are
//! quantized multipliers (their reals computed in `f32` as TFLite does,
//! then quantized in the caller's [`Rounding`]); `clamp_S` is the state
//! type's range. Sums are `i32` and wrap as TFLite's two's-complement
//! arithmetic does (int16 x int16 products fit; a long memory's sum may
//! not). TFLite's integer path applies no fused activation: the output is
//! clamped to int8 only.
//!
//! The state is the caller's (a variable tensor kept across runs); `run`
//! updates it in place. [`Backend::Scalar`] runs the plain loops of
//! `scalar.rs` (the oracle); [`Backend::Neon`] computes the same bytes four
//! filters per vector (`neon.rs`: `sdot` or widening multiplies for the
//! feature weights, `smlal` for the time weights, the requantizations on
//! lanes).

#[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
mod neon;
pub(crate) mod params;
mod scalar;

use crate::backend::{unavailable, Backend};
use crate::checks::{check_length, check_scale, check_zero_point};
use crate::elem::QuantElem;
#[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
use crate::elem::Slices;
use crate::error::{Error, Result};
use crate::quant::{QuantParams, QuantizedMultiplier, Rounding};
use params::SvdfParams;
pub use params::SvdfShape;

/// The state (and time weight) types TFLite's integer SVDF takes: int16
/// (LiteRT and TFLite Micro) and int8 (TFLite Micro).
pub trait SvdfState: QuantElem + sealed::Sealed {}
impl SvdfState for i16 {}
impl SvdfState for i8 {}

mod sealed {
    pub trait Sealed {}
    impl Sealed for i16 {}
    impl Sealed for i8 {}
}

/// The quantizations an SVDF is prepared from.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SvdfQuantization {
    /// The int8 input.
    pub input: QuantParams,
    /// The feature weights' one scale (symmetric int8).
    pub weights_feature_scale: f32,
    /// The time weights' one scale (symmetric, the state's type).
    pub weights_time_scale: f32,
    /// The state.
    pub state: QuantParams,
    /// The int8 output.
    pub output: QuantParams,
}

/// A prepared integer SVDF with state type `S`, bit-exact with TFLite's.
/// `run()` allocates nothing; one run is one time step.
#[derive(Clone, Debug)]
pub struct Svdf<S: SvdfState> {
    params: SvdfParams,
    backend: Backend,
    /// The CPU has `sdot` (detected once, here).
    #[cfg_attr(
        not(all(target_arch = "aarch64", target_feature = "neon")),
        allow(dead_code)
    )]
    dotprod: bool,
    _state: core::marker::PhantomData<S>,
}

/// The weights and bias of one SVDF, as stored in the model.
#[derive(Clone, Copy, Debug)]
pub struct SvdfWeights<'a, S> {
    /// `[filters, input_size]`, symmetric int8.
    pub feature: &'a [i8],
    /// `[filters, memory]`, symmetric, the state's type.
    pub time: &'a [S],
    /// `[units]` int32 in units of `s_state * s_wt`, or none (zeros).
    pub bias: Option<&'a [i32]>,
}

const OP: &str = "SVDF";

impl<S: SvdfState> Svdf<S> {
    /// Prepares an SVDF (TFLite's `Prepare`: the two effective scales as
    /// quantized multipliers in `rounding`). Errors: a zero dimension,
    /// `filters` not a multiple of `rank`, scales not finite and `> 0`,
    /// zero points outside their types.
    pub fn new(shape: SvdfShape, q: SvdfQuantization, rounding: Rounding) -> Result<Self> {
        for (what, n) in [
            ("batch", shape.batch),
            ("input size", shape.input_size),
            ("filters", shape.filters),
            ("memory", shape.memory),
            ("rank", shape.rank),
        ] {
            if n == 0 {
                return Err(Error::ZeroDimension { op: OP, what });
            }
        }
        if !shape.filters.is_multiple_of(shape.rank) {
            return Err(Error::OutOfDomain {
                op: OP,
                what: "filters / rank",
                value: shape.filters as f64 / shape.rank as f64,
                requirement: "an integer (filters a multiple of rank)",
            });
        }
        check_scale("input scale", q.input.scale)?;
        check_scale("feature weights scale", q.weights_feature_scale)?;
        check_scale("time weights scale", q.weights_time_scale)?;
        check_scale("state scale", q.state.scale)?;
        check_scale("output scale", q.output.scale)?;
        check_zero_point::<i8>("input zero point", q.input.zero_point)?;
        check_zero_point::<S>("state zero point", q.state.zero_point)?;
        check_zero_point::<i8>("output zero point", q.output.zero_point)?;
        // TFLite multiplies and divides the scales in f32, then widens.
        let feature_real = (q.input.scale * q.weights_feature_scale / q.state.scale) as f64;
        let time_real = (q.state.scale * q.weights_time_scale / q.output.scale) as f64;
        Ok(Svdf {
            params: SvdfParams {
                shape,
                input_zero_point: q.input.zero_point,
                state_zero_point: q.state.zero_point,
                output_zero_point: q.output.zero_point,
                feature_to_state: rounding.quantize_multiplier(feature_real)?,
                time_to_output: rounding.quantize_multiplier(time_real)?,
                rounding,
            },
            backend: Backend::best(),
            dotprod: crate::backend::CpuFeatures::detect().dotprod,
            _state: core::marker::PhantomData,
        })
    }

    /// The same op with the `sdot` path on or off (tests of the widening
    /// path on CPUs that have `sdot`).
    #[cfg(all(test, target_arch = "aarch64", target_feature = "neon"))]
    pub(crate) fn with_dotprod(mut self, dotprod: bool) -> Self {
        self.dotprod = dotprod && crate::backend::CpuFeatures::detect().dotprod;
        self
    }

    /// The sizes.
    pub fn shape(&self) -> SvdfShape {
        self.params.shape
    }

    /// The state's zero point (what a reset state holds).
    pub fn state_zero_point(&self) -> i32 {
        self.params.state_zero_point
    }

    /// The quantized multipliers `(feature -> state, time -> output)`.
    pub fn multipliers(&self) -> (QuantizedMultiplier, QuantizedMultiplier) {
        (self.params.feature_to_state, self.params.time_to_output)
    }

    /// The backend [`run`](Self::run) uses.
    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// One time step with the best backend: shifts `state`, writes the new
    /// column from `input`, and writes `output`.
    pub fn run(
        &self,
        input: &[i8],
        weights: SvdfWeights<'_, S>,
        state: &mut [S],
        output: &mut [i8],
    ) -> Result<()> {
        self.run_with(self.backend, input, weights, state, output)
    }

    /// [`run`](Self::run) with the given backend (an error if not
    /// available here). Errors for buffers whose lengths do not fit the
    /// shape.
    pub fn run_with(
        &self,
        backend: Backend,
        input: &[i8],
        weights: SvdfWeights<'_, S>,
        state: &mut [S],
        output: &mut [i8],
    ) -> Result<()> {
        if !backend.is_available() {
            return Err(unavailable(backend));
        }
        let s = self.params.shape;
        let product = |a: usize, b: usize| a.checked_mul(b);
        check_length(OP, "input", product(s.batch, s.input_size), input.len())?;
        check_length(
            OP,
            "feature weights",
            product(s.filters, s.input_size),
            weights.feature.len(),
        )?;
        check_length(
            OP,
            "time weights",
            product(s.filters, s.memory),
            weights.time.len(),
        )?;
        if let Some(bias) = weights.bias {
            check_length(OP, "bias", Some(s.units()), bias.len())?;
        }
        check_length(
            OP,
            "state",
            product(s.filters, s.memory).and_then(|n| product(n, s.batch)),
            state.len(),
        )?;
        check_length(OP, "output", product(s.batch, s.units()), output.len())?;
        let (p, feature, bias) = (&self.params, weights.feature, weights.bias);
        match backend {
            Backend::Scalar => scalar::svdf(p, input, feature, weights.time, bias, state, output),
            #[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
            Backend::Neon => match crate::elem::view(weights.time, state) {
                Slices::I16(time, state) => {
                    neon::svdf(p, self.dotprod, input, feature, time, bias, state, output)
                }
                Slices::I8(time, state) => {
                    neon::svdf(p, self.dotprod, input, feature, time, bias, state, output)
                }
                // SvdfState is sealed to i16 and i8.
                Slices::U8(..) => unreachable!("SVDF state is i16 or i8"),
            },
            #[allow(unreachable_patterns)]
            b => return Err(unavailable(b)),
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
