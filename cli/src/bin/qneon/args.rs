//! The command line: subcommands, their options, and what loading takes
//! from them (the interpreter's options, the model file within budget).

use std::path::{Path, PathBuf};

use clap::builder::{PossibleValuesParser, TypedValueParser};
use clap::{Args, Parser, Subcommand, ValueEnum};
use qneon::{Backend, Method};
use qneon_runtime::interp::{Options, Rounding, TfliteKernels};

#[derive(Parser)]
#[command(
    name = "qneon",
    version,
    about = "Runs and inspects .tflite models on the qneon kernels"
)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub(crate) command: Command,
}

#[derive(Subcommand)]
pub(crate) enum Command {
    /// Run a model: outputs to --output-dir, a profile with --profile.
    Run(RunArgs),
    /// Show a model's ops, tensors, arena plan and what qneon cannot run.
    Inspect(InspectArgs),
}

/// What loading depends on.
#[derive(Args)]
pub(crate) struct LoadArgs {
    /// SOFTMAX / LOG_SOFTMAX / LOGISTIC / TANH method: fixed (TFLite's
    /// reference kernels), lut (TFLite's aarch64 builtin kernels), f32.
    #[arg(long, default_value = "fixed", ignore_case = true,
          value_parser = method_parser())]
    pub(crate) softmax: Method,
    /// Requantization rounding: single (LiteRT 2.3) or double (TF 2.19's
    /// bundled TFLite, TFLite Micro).
    #[arg(long, value_enum, default_value_t = RoundingArg::Single)]
    pub(crate) rounding: RoundingArg,
    /// Which TFLite kernel set's bytes to reproduce where they differ:
    /// reference (TFLite's reference kernels), optimized (its aarch64
    /// builtin kernels: DEQUANTIZE's float arithmetic, CONV_2D's single
    /// rounding) or xnnpack (the XNNPACK delegate, TFLite's Python default:
    /// the ops it takes in XNNPACK's arithmetic, e.g. CONV_2D and
    /// FULLY_CONNECTED requantize in f32 and round to even; the ops it
    /// leaves, e.g. int8 SOFTMAX, in the builtin kernels'; an op whose
    /// XNNPACK path is not built is refused by name).
    /// Default: optimized with --softmax lut, else reference.
    #[arg(long, value_enum)]
    pub(crate) kernels: Option<KernelsArg>,
    /// Largest memory the model may take at run time, in MiB.
    #[arg(long, value_name = "MIB", default_value_t = 1024)]
    pub(crate) memory_budget: usize,
    /// A probability T in [0, 1]: every LOGISTIC or SOFTMAX whose output is
    /// a model output (read by no other op) runs fused with the threshold
    /// and keeps only the elements whose value (code - zero_point) * scale
    /// is at or above T. `run --output-dir DIR` writes such an output as
    /// DIR/<i>.hits.json (`{"threshold", "count", "index": [flat indices],
    /// "code": [output codes], "value": [dequantized values]}`) instead of
    /// DIR/<i>.npy; `inspect` names the fused ops.
    #[allow(rustdoc::invalid_html_tags)]
    #[arg(long, value_name = "T")]
    pub(crate) threshold: Option<f32>,
    /// Threads per invoke (1: none started). Each op gets as many as its
    /// work is worth (small ops run on one), the bytes are the same at
    /// every count; `inspect` shows each op's share.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub(crate) threads: usize,
}

#[derive(Args)]
pub(crate) struct RunArgs {
    /// The model.
    pub(crate) model: PathBuf,
    /// An input: K=FILE.npy, K its position or name (split at the first `=`);
    /// K=A.npy,B.npy,... invokes once per file in order without resetting
    /// the model's state (a sequence).
    #[arg(long = "input", value_name = "K=FILE")]
    pub(crate) inputs: Vec<String>,
    /// In a sequence, reset the model's state (its variable tensors) before
    /// every N-th step (steps N, 2N, ...).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub(crate) reset_every: Option<u32>,
    /// Write DIR/<i>.npy per output (DIR/<i>.hits.json for an output fused
    /// with --threshold) and DIR/outputs.json (a sequence: DIR/step<k>/ per
    /// step).
    // The comment is clap's --help text, which shows it verbatim; rustdoc
    // would read `<i>` as an HTML tag.
    #[allow(rustdoc::invalid_html_tags)]
    #[arg(long, value_name = "DIR")]
    pub(crate) output_dir: Option<PathBuf>,
    #[command(flatten)]
    pub(crate) load: LoadArgs,
    /// neon or scalar (default: the best on this CPU).
    #[arg(long, ignore_case = true, value_parser = backend_parser())]
    pub(crate) backend: Option<Backend>,
    /// Print the time per op type.
    #[arg(long)]
    pub(crate) profile: bool,
    /// Write the run (per op instance times) as JSON.
    #[arg(long, value_name = "FILE")]
    pub(crate) json: Option<PathBuf>,
    /// Invoke N times; times are per invoke.
    #[arg(long, value_name = "N", default_value_t = 1,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub(crate) reps: u32,
}

#[derive(Args)]
pub(crate) struct InspectArgs {
    /// The model.
    pub(crate) model: PathBuf,
    #[command(flatten)]
    pub(crate) load: LoadArgs,
}

#[derive(Clone, Copy, ValueEnum)]
pub(crate) enum KernelsArg {
    Reference,
    Optimized,
    Xnnpack,
}

#[derive(Clone, Copy, ValueEnum)]
pub(crate) enum RoundingArg {
    Single,
    Double,
}

/// `--softmax`: the names `Method` parses, limited to the methods every
/// one of the four ops has (listed in `--help`).
fn method_parser() -> impl clap::builder::TypedValueParser<Value = Method> {
    PossibleValuesParser::new(["lut", "fixed", "f32"]).try_map(|s| s.parse::<Method>())
}

/// `--backend`: `Backend`'s names.
fn backend_parser() -> impl clap::builder::TypedValueParser<Value = Backend> {
    PossibleValuesParser::new(["neon", "scalar"]).try_map(|s| s.parse::<Backend>())
}

impl LoadArgs {
    pub(crate) fn options(&self, backend: Backend) -> Options {
        let softmax_method = self.softmax;
        Options {
            rounding: match self.rounding {
                RoundingArg::Single => Rounding::Single,
                RoundingArg::Double => Rounding::Double,
            },
            softmax_method,
            kernels: match self.kernels {
                Some(KernelsArg::Reference) => TfliteKernels::Reference,
                Some(KernelsArg::Optimized) => TfliteKernels::Optimized,
                Some(KernelsArg::Xnnpack) => TfliteKernels::Xnnpack,
                None => TfliteKernels::matching(softmax_method),
            },
            backend,
            memory_budget: Some(self.memory_budget.saturating_mul(1 << 20)),
            threshold: self.threshold,
            threads: self.threads,
        }
    }
}

/// The model file, refused before it is read when far larger than any
/// model the budget could run.
pub(crate) fn read_model(path: &Path, budget: usize) -> Result<qneon_tflite::ModelBytes, String> {
    // The file itself is not counted in the run-time budget, but a file far
    // larger than any model is refused before it is read.
    qneon_tflite::ModelBytes::read(path, budget.saturating_add(1 << 31))
        .map_err(|e| format!("{}: {e}", path.display()))
}
