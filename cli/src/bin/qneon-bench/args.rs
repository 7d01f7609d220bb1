//! The command line: options, their checks, and the named shapes.

use clap::builder::RangedU64ValueParser;
use clap::error::ErrorKind;
use clap::{CommandFactory, Parser};
use qneon::Backend;
use std::fs::File;
use std::path::PathBuf;
use std::sync::atomic::Ordering;

use crate::cases::IN_SCALE_8BIT;
use crate::data::{parse_data, Data};

/// `qneon-bench`: every operator, element type, method and backend on a
/// named shape, as a table of median times (and instruction counts under
/// qemu through `cargo xtask bench`).
#[derive(Parser)]
#[command(name = "qneon-bench", version)]
struct Cli {
    /// mobilebert: 4 heads x 384 x 384 attention scores (1536 rows of 384);
    /// rows64: the same element count in rows of 64; short: 4096 rows of 16;
    /// vocab: 1 row of 32768; flat: 1536*384 elements for the element-wise
    /// ops only
    #[arg(long, default_value = "mobilebert", value_parser = SHAPES)]
    shape: String,
    /// Run each kernel R times in one process (median time reported)
    #[arg(long, value_name = "R", default_value_t = 1,
          value_parser = RangedU64ValueParser::<usize>::new().range(1..))]
    reps: usize,
    /// scalar, neon or all (those available on this machine)
    #[arg(long, env = "QNEON_BACKEND", default_value = "all", value_parser = parse_backends)]
    backend: Backends,
    /// `op`, `op type`, `op type method` (whole words) or a type name
    #[arg(long, value_name = "TEXT")]
    filter: Option<String>,
    /// Also write the table as JSON (checked to be writable before the run)
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Input scale of the 8-bit types; logits are N(0, min(3, 40 S)) in
    /// real units, so about 40 steps wide at small S
    #[arg(long, value_name = "S", default_value_t = 0.1, value_parser = positive_f32)]
    in_scale: f32,
    /// Inputs of the 8- and 16-bit types: logits (N(0, 3) in real units, as
    /// `--in-scale` describes) or uniform (every value of the type equally
    /// likely); q31 and f32 inputs do not change
    #[arg(long, default_value = "logits", value_parser = parse_data)]
    data: Data,
    /// Print the rows `--filter` selects (`op type method row|element`) and run nothing
    #[arg(long)]
    list: bool,
}

/// The shape names `--shape` accepts (see [`shape_dims`]).
pub(crate) const SHAPES: [&str; 5] = ["mobilebert", "rows64", "short", "vocab", "flat"];

/// The backends `--backend` selects: one, or all available (`None`).
#[derive(Clone, Copy)]
pub(crate) struct Backends(pub(crate) Option<Backend>);

pub(crate) fn parse_backends(name: &str) -> Result<Backends, String> {
    if name.eq_ignore_ascii_case("all") {
        return Ok(Backends(None));
    }
    name.parse::<Backend>()
        .map(|b| Backends(Some(b)))
        .map_err(|e| format!("`{name}`: {e}, or all"))
}

pub(crate) fn positive_f32(text: &str) -> Result<f32, String> {
    let s: f32 = text.parse().map_err(|e| format!("{e}"))?;
    if s.is_finite() && s > 0.0 {
        Ok(s)
    } else {
        Err(format!("must be finite and positive, got {s}"))
    }
}

/// What a run needs from the command line, checked.
pub(crate) struct Args {
    /// The `--json` file, opened (created or truncated) before the run.
    pub(crate) json: Option<(PathBuf, File)>,
    pub(crate) shape: String,
    pub(crate) reps: usize,
    pub(crate) backends: Vec<Backend>,
    pub(crate) filter: Option<String>,
    /// Print the selected rows (`op type method row|element`) and exit.
    pub(crate) list: bool,
    /// The distribution of the 8- and 16-bit inputs.
    pub(crate) data: Data,
}

/// Parses the command line; usage errors (including a backend this machine
/// lacks and a `--json` file that cannot be written) exit with status 2.
pub(crate) fn parse_args() -> Args {
    let cli = Cli::parse();
    let usage_error = |message: String| -> ! {
        Cli::command()
            .error(ErrorKind::ValueValidation, message)
            .exit()
    };
    let backends = match cli.backend.0 {
        None => Backend::available().collect(),
        Some(b) if b.is_available() => vec![b],
        Some(b) => usage_error(format!(
            "backend {} is not available on this machine",
            b.name()
        )),
    };
    IN_SCALE_8BIT.store(cli.in_scale.to_bits(), Ordering::Relaxed);
    let json = cli.json.map(|path| match File::create(&path) {
        Ok(file) => (path, file),
        Err(e) => usage_error(format!("--json {}: {e}", path.display())),
    });
    Args {
        json,
        shape: cli.shape,
        reps: cli.reps,
        backends,
        filter: cli.filter,
        list: cli.list,
        data: cli.data,
    }
}

/// A named shape: `rows` rows of `cols`, and whether row-wise ops run on it.
pub(crate) struct Shape {
    pub(crate) rows: usize,
    pub(crate) cols: usize,
    pub(crate) row_ops: bool,
}

pub(crate) fn shape_dims(name: &str) -> Result<Shape, String> {
    let (rows, cols, row_ops) = match name {
        // 4 attention heads x 384 queries x 384 keys.
        "mobilebert" => (4 * 384, 384, true),
        "short" => (4096, 16, true),
        "vocab" => (1, 32768, true),
        // The MobileBert element count, for element-wise ops (one softmax
        // row of 589,824 logits is no real workload).
        "flat" => (1, 1536 * 384, false),
        // Same element count as `mobilebert` in 64-wide rows: with it, the
        // per-row overhead separates from the per-element cost.
        "rows64" => (9216, 64, true),
        other => {
            return Err(format!(
                "unknown shape {other} (mobilebert, rows64, short, vocab, flat)"
            ))
        }
    };
    Ok(Shape {
        rows,
        cols,
        row_ops,
    })
}
