//! What the caller chooses at load: the rounding of requantizing ops, the
//! activations' method, which TFLite kernel set's float arithmetic to
//! reproduce, the backend and the memory budget.

use qneon::{Backend, Method};

use crate::error::{Error, Result};

pub use qneon::quant::Rounding;

/// Which of TFLite's kernel sets to reproduce where their arithmetic
/// differs: DEQUANTIZE's float arithmetic and, in single rounding,
/// FULLY_CONNECTED's and CONV_2D's requantization. The other integer ops give the same
/// bytes in both (for SOFTMAX the difference is the method: `Method::Lut` is
/// the optimized kernel's table path).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum TfliteKernels {
    /// The reference kernels (`BUILTIN_REF`): DEQUANTIZE rounds the `f64`
    /// product `scale * (q - zero_point)` once to `f32`; LiteRT's
    /// FULLY_CONNECTED (single rounding) scales its accumulator by the
    /// unquantized `f64` multiplier ([`qneon::Requantization::RealF64`]);
    /// CONV_2D and DEPTHWISE_CONV_2D round twice in either rounding (as
    /// LiteRT 2.3's reference kernels were measured to).
    #[default]
    Reference,
    /// The optimized builtin kernels of TFLite's aarch64 build: int8 and
    /// uint8 DEQUANTIZE in blocks of 8 elements computes
    /// `fma(f32(q), f32(scale), f32(-zero_point * scale))` (NEON `fmla`), the
    /// last `len % 8` elements as the reference kernel does; FULLY_CONNECTED
    /// and CONV_2D apply the quantized multiplier in the options' rounding,
    /// DEPTHWISE_CONV_2D rounds twice (LiteRT 2.3's aarch64 kernels, as
    /// measured). Not yet reproduced: LiteRT's aarch64 3x3 undilated
    /// DEPTHWISE_CONV_2D rounds the final power-of-two divide's ties toward
    /// +infinity, so where a negative value lands exactly on a half its byte
    /// is one above this path's (4 of the 8 depthwise single-op cases; the
    /// lut test of `tflite_models.rs` checks each such difference).
    Optimized,
    /// The XNNPACK delegate (what TFLite's Python `Interpreter` applies by
    /// default), as LiteRT 2.3's aarch64 build runs it (its x86_64 build
    /// gives the same bytes but for MUL's rounding). The ops it takes run
    /// in XNNPACK's arithmetic: CONV_2D, DEPTHWISE_CONV_2D, FULLY_CONNECTED
    /// and BATCH_MATMUL (when input 2's zero point is 0) scale their
    /// accumulators by the `f32` product `input_scale * filter_scale /
    /// output_scale` and round to even ([`qneon::ConvRequantization::XnnpackF32`],
    /// [`qneon::Requantization::XnnpackF32`]); ADD and SUB a fixed-point sum
    /// of its own, MUL a Q31 fixed-point multiply with a rounding shift
    /// that rounds ties up (ARM's `rndnu`; x86's rounds an `f32` product
    /// to even) ([`qneon::XnnpackAdd`], [`qneon::XnnpackMulRndnu`]); int8 / uint8
    /// LOGISTIC and TANH its float-built table; QUANTIZE its `f32` and
    /// 8-fraction-bit converts; DEQUANTIZE its `f32` product (the reference
    /// kernels' bytes); the data movers move bytes. The ops it leaves to
    /// the builtin kernels (int8 SOFTMAX and LOG_SOFTMAX, int16 activations,
    /// CAST, BATCH_MATMUL with a non-zero input-2 zero point, ADD / SUB /
    /// MUL / QUANTIZE at scale ratios XNNPACK refuses) take
    /// [`TfliteKernels::Optimized`]'s arithmetic. Ops whose XNNPACK path is
    /// not built (the pools) are unsupported-op errors naming them.
    Xnnpack,
}

impl TfliteKernels {
    /// `"reference"`, `"optimized"` or `"xnnpack"`.
    pub fn name(self) -> &'static str {
        match self {
            TfliteKernels::Reference => "reference",
            TfliteKernels::Optimized => "optimized",
            TfliteKernels::Xnnpack => "xnnpack",
        }
    }

    /// The kernel set whose bytes `method` reproduces: `Method::Lut` is the
    /// optimized kernels' int8 SOFTMAX, every other method the reference's.
    pub fn matching(method: Method) -> TfliteKernels {
        match method {
            Method::Lut => TfliteKernels::Optimized,
            _ => TfliteKernels::Reference,
        }
    }
}

/// What the caller chooses at load.
///
/// Not `Eq`: [`threshold`](Options::threshold) is an `f32`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Options {
    /// Rounding of the requantizing ops (FULLY_CONNECTED under
    /// [`TfliteKernels::Reference`] with single rounding: LiteRT's `f64`
    /// real multiplier; BATCH_MATMUL and MUL: double, as LiteRT measured).
    pub rounding: Rounding,
    /// The method of SOFTMAX, LOG_SOFTMAX, LOGISTIC and TANH.
    pub softmax_method: Method,
    /// The float arithmetic of DEQUANTIZE: TFLite's reference or aarch64
    /// optimized kernels' ([`TfliteKernels::matching`] the method gives the
    /// set whose bytes the method reproduces).
    pub kernels: TfliteKernels,
    /// The kernels' backend (never changes a byte).
    pub backend: Backend,
    /// Most bytes the model may need at run time: any one tensor, and the
    /// planned arena. `None`: no limit.
    pub memory_budget: Option<usize>,
    /// A probability threshold `T` in `[0, 1]` for the model's
    /// probability outputs. `Some(T)`: every LOGISTIC or SOFTMAX node whose
    /// output is a model output read by no other node runs fused with the
    /// filter (the library's [`qneon::ThresholdedLogistic`] /
    /// [`qneon::ThresholdedSoftmax`]) and writes only the elements whose
    /// value is **at or above** `T`, as hits ([`Session::hits`](super::Session::hits)),
    /// instead of its dense output. An output code `q` is kept when
    /// `(q - zero_point) * scale >= T`, computed in `f64`: `T` becomes the
    /// smallest passing code once, at load, and each element is one integer
    /// comparison. `T = 0` keeps every element whose value is not negative
    /// (all of them for a logistic or softmax output), `T = 1` none of an
    /// 8-bit output (its largest value is 255/256). NaN, a negative `T` or
    /// one above 1 is an [`Error::InvalidOption`](crate::Error::InvalidOption).
    /// `None`: every node writes its dense output.
    pub threshold: Option<f32>,
    /// Threads an invoke may run on: with more than 1, the session starts
    /// (and keeps) a pool of `threads` workers at creation, and an invoke
    /// runs on them while the calling thread waits. Each node gets as many
    /// of them as its work is worth (a cost model at load; small nodes stay
    /// on one), share `i` of its tiles on the same worker at every invoke;
    /// the bytes are the same at every count. 1 (the default) starts no
    /// thread.
    /// 0, or more than [`MAX_THREADS`], is an
    /// [`Error::InvalidOption`](crate::Error::InvalidOption).
    pub threads: usize,
}

/// The most threads [`Options::threads`] may ask for.
pub const MAX_THREADS: usize = 256;

impl Default for Options {
    /// Single rounding and the fixed-point method (TFLite's reference
    /// kernels as LiteRT 2.3 builds them), the best backend, 1 GiB, no
    /// threshold, one thread.
    fn default() -> Options {
        Options {
            rounding: Rounding::Single,
            softmax_method: Method::FixedPoint,
            kernels: TfliteKernels::Reference,
            backend: Backend::best(),
            memory_budget: Some(1 << 30),
            threshold: None,
            threads: 1,
        }
    }
}

impl Options {
    /// Checks [`Options::threads`]: 0 or more than [`MAX_THREADS`] is an
    /// error naming the option.
    pub(super) fn check_threads(&self) -> Result<()> {
        if (1..=MAX_THREADS).contains(&self.threads) {
            return Ok(());
        }
        Err(Error::InvalidOption {
            option: "threads",
            problem: format!(
                "{} is not a thread count in 1..={MAX_THREADS}",
                self.threads
            ),
        })
    }
}
