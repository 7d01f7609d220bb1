//! `qneon-bench`: runs every operator, element type, method and backend on a
//! named shape and prints a table.
//!
//! Built for the board (static aarch64 binary) and for the host. Wall-clock
//! numbers are meaningful on real hardware; under qemu use `--reps R` and an
//! instruction counter instead (the difference between R and 2R repetitions
//! isolates the kernels from start-up: `cargo xtask bench` does that).
//!
//! ```text
//! qneon-bench [--shape mobilebert|rows64|short|vocab|flat] [--reps R]
//!             [--backend scalar|neon|all] [--filter TEXT] [--json FILE]
//!             [--in-scale S]
//! ```
//! `QNEON_BACKEND` sets the default backend; `--list` prints the rows
//! `--filter` selects (`op type method row|element`) without running them.
//!
//! Every [`Method`] is tried for every op and type: `new()` returning
//! [`Error::Unsupported`](qneon::Error::Unsupported) skips the row, so methods
//! that land later appear without changes here. Row-wise ops (softmax,
//! log-softmax) run on the row shapes; element-wise ops (logistic, tanh,
//! sigmoid) run on every shape, `flat` being theirs.

use clap::builder::RangedU64ValueParser;
use clap::error::ErrorKind;
use clap::{CommandFactory, Parser};
use qneon::{
    q31, Backend, Error, LogSoftmax, Logistic, Method, QuantElem, QuantParams, Softmax, Tanh,
};
use std::fs::File;
use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// Every method, in the order rows are printed.
const METHODS: [Method; 4] = [
    Method::FixedPoint,
    Method::Lut,
    Method::LutFixedPoint,
    Method::DequantF32,
];

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
    /// Print the rows `--filter` selects (`op type method row|element`) and run nothing
    #[arg(long)]
    list: bool,
}

/// The shape names `--shape` accepts (see [`shape_dims`]).
const SHAPES: [&str; 5] = ["mobilebert", "rows64", "short", "vocab", "flat"];

/// The backends `--backend` selects: one, or all available (`None`).
#[derive(Clone, Copy)]
struct Backends(Option<Backend>);

fn parse_backends(name: &str) -> Result<Backends, String> {
    if name == "all" {
        return Ok(Backends(None));
    }
    Backend::from_name(name)
        .map(|b| Backends(Some(b)))
        .ok_or_else(|| format!("unknown backend `{name}` (scalar, neon, all)"))
}

fn positive_f32(text: &str) -> Result<f32, String> {
    let s: f32 = text.parse().map_err(|e| format!("{e}"))?;
    if s.is_finite() && s > 0.0 {
        Ok(s)
    } else {
        Err(format!("must be finite and positive, got {s}"))
    }
}

/// What a run needs from the command line, checked.
struct Args {
    /// The `--json` file, opened (created or truncated) before the run.
    json: Option<(PathBuf, File)>,
    shape: String,
    reps: usize,
    backends: Vec<Backend>,
    filter: Option<String>,
    /// Print the selected rows (`op type method row|element`) and exit.
    list: bool,
}

/// Parses the command line; usage errors (including a backend this machine
/// lacks and a `--json` file that cannot be written) exit with status 2.
fn parse_args() -> Args {
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
    }
}

/// A named shape: `rows` rows of `cols`, and whether row-wise ops run on it.
struct Shape {
    rows: usize,
    cols: usize,
    row_ops: bool,
}

fn shape_dims(name: &str) -> Result<Shape, String> {
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

/// A small deterministic generator (xorshift64*), so runs are repeatable.
struct Rng(u64);
impl Rng {
    fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
    /// Standard normal by Box-Muller.
    fn normal(&mut self) -> f64 {
        let u = self.uniform().max(1e-300);
        let v = self.uniform();
        (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
    }
}

/// Attention-like logits, N(0, 3) in real units (N(0, 40 steps) where the
/// scale is below 0.075, so small scales do not clamp every value), quantized
/// with `q`.
fn logits<T: QuantElem + TryFrom<i32>>(n: usize, q: QuantParams, seed: u64) -> Vec<T> {
    let mut rng = Rng(seed);
    let sigma = 3.0f64.min(40.0 * q.scale as f64);
    (0..n)
        .map(|_| {
            let real = sigma * rng.normal();
            let v = (real / q.scale as f64).round() as i64 + q.zero_point as i64;
            let v = v.clamp(T::MIN as i64, T::MAX as i64) as i32;
            T::try_from(v).ok().expect("clamped to the type")
        })
        .collect()
}

/// `--filter` selects rows whose `"op type method"` equals the filter or
/// starts with it followed by a space (so `softmax` selects neither
/// `log_softmax` nor `softmax_online`, and `logistic int8 lut` not
/// `lut-fixed`), or whose type equals it.
fn filter_matches(filter: &str, op: &str, dtype: &str, method: &str) -> bool {
    let name = format!("{op} {dtype} {method}");
    name == filter || name.starts_with(&format!("{filter} ")) || filter == dtype
}

/// One kernel of one type: runs `(backend, input, output, row_len)`.
type Kernel<'a, T> = Box<dyn Fn(Backend, &[T], &mut [T], usize) -> qneon::Result<()> + 'a>;

/// A prepared (op, method) of one element type.
struct Case<'a, T> {
    op: &'static str,
    method: &'static str,
    /// Softmax-like (runs per row) rather than element-wise.
    row_wise: bool,
    kernel: Kernel<'a, T>,
}

/// Adds a case made by `new()`, skipping methods the op does not implement
/// for this type; any other error is a bug in this program's parameters.
fn add_case<'a, T: 'a>(
    cases: &mut Vec<Case<'a, T>>,
    (op, dtype, method, row_wise): (&'static str, &str, Method, bool),
    made: qneon::Result<Kernel<'a, T>>,
) -> Result<(), String> {
    match made {
        Ok(kernel) => {
            cases.push(Case {
                op,
                method: method.name(),
                row_wise,
                kernel,
            });
            Ok(())
        }
        Err(Error::Unsupported { .. }) => Ok(()),
        Err(e) => Err(format!("{op} {dtype} {}: {e}", method.name())),
    }
}

/// Input scale of the 8-bit types (`--in-scale`, f32 bits; 0.1 by default).
static IN_SCALE_8BIT: AtomicU32 = AtomicU32::new(0x3dcc_cccd);

/// Input quantization of the quantized types: 0.1 per step for 8 bits
/// (N(0, 3) logits span about +-4 sigma) unless `--in-scale` says otherwise,
/// 1/2048 for int16.
fn input_quant<T: QuantElem>() -> QuantParams {
    let scale_8bit = f32::from_bits(IN_SCALE_8BIT.load(Ordering::Relaxed));
    match T::NAME {
        "int8" => QuantParams::new(scale_8bit, 0),
        "uint8" => QuantParams::new(scale_8bit, 128),
        _ => QuantParams::new(1.0 / 2048.0, 0),
    }
}

/// Every op and method of a quantized type (the output quantization TFLite
/// requires for each op).
fn quant_cases<'a, T: QuantElem>() -> Result<Vec<Case<'a, T>>, String> {
    let (softmax_out, tanh_out, log_softmax_zero) = match T::NAME {
        "int8" => (
            QuantParams::new(1.0 / 256.0, -128),
            QuantParams::new(1.0 / 128.0, 0),
            127,
        ),
        "uint8" => (
            QuantParams::new(1.0 / 256.0, 0),
            QuantParams::new(1.0 / 128.0, 128),
            255,
        ),
        _ => (
            QuantParams::new(1.0 / 32768.0, 0),
            QuantParams::new(1.0 / 32768.0, 0),
            0,
        ),
    };
    let log_softmax_out = QuantParams::new(16.0 / 256.0, log_softmax_zero);
    let q_in = input_quant::<T>();
    let mut cases = Vec::new();
    for method in METHODS {
        add_case(
            &mut cases,
            ("softmax", T::NAME, method, true),
            Softmax::<T>::new(q_in, 1.0, softmax_out, method)
                .map(|op| Box::new(move |b, x: &[T], y: &mut [T], r| op.run_with(b, x, y, r)) as _),
        )?;
        add_case(
            &mut cases,
            ("log_softmax", T::NAME, method, true),
            LogSoftmax::<T>::new(q_in, log_softmax_out, method)
                .map(|op| Box::new(move |b, x: &[T], y: &mut [T], r| op.run_with(b, x, y, r)) as _),
        )?;
        add_case(
            &mut cases,
            ("logistic", T::NAME, method, false),
            Logistic::<T>::new(q_in, softmax_out, method)
                .map(|op| Box::new(move |b, x: &[T], y: &mut [T], _| op.run_with(b, x, y)) as _),
        )?;
        add_case(
            &mut cases,
            ("tanh", T::NAME, method, false),
            Tanh::<T>::new(q_in, tanh_out, method)
                .map(|op| Box::new(move |b, x: &[T], y: &mut [T], _| op.run_with(b, x, y)) as _),
        )?;
    }
    Ok(cases)
}

/// Raw Q31 kernels: input Q5.26.
const Q31_INTEGER_BITS: u32 = 5;

fn q31_cases<'a>() -> Vec<Case<'a, i32>> {
    let ib = Q31_INTEGER_BITS;
    let case = |op, row_wise, kernel: Kernel<'a, i32>| Case {
        op,
        method: "fixed",
        row_wise,
        kernel,
    };
    vec![
        case(
            "softmax",
            true,
            Box::new(move |b, x, y, r| q31::softmax_with(b, x, ib, y, r)),
        ),
        case(
            "logistic",
            false,
            Box::new(move |b, x, y, _| q31::logistic_with(b, x, ib, y)),
        ),
        case(
            "tanh",
            false,
            Box::new(move |b, x, y, _| q31::tanh_with(b, x, ib, y)),
        ),
    ]
}

/// The float kernels (`qneon::f32`), method "float".
fn f32_cases<'a>() -> Vec<Case<'a, f32>> {
    use qneon::f32 as qf;
    let case = |op, row_wise, kernel: Kernel<'a, f32>| Case {
        op,
        method: "float",
        row_wise,
        kernel,
    };
    vec![
        case("softmax", true, Box::new(qf::softmax_with)),
        case(
            "softmax_online",
            true,
            Box::new(|b, x, y, r| qf::softmax_variant(qf::SoftmaxVariant::Online, b, x, y, r)),
        ),
        case("log_softmax", true, Box::new(qf::log_softmax_with)),
        case(
            "sigmoid",
            false,
            Box::new(|b, x, y, _| qf::sigmoid_with(b, x, y)),
        ),
        case("tanh", false, Box::new(|b, x, y, _| qf::tanh_with(b, x, y))),
    ]
}

/// The cases `--filter` and the shape select.
fn select<'a, T>(
    args: &Args,
    shape: &Shape,
    dtype: &str,
    cases: Vec<Case<'a, T>>,
) -> Vec<Case<'a, T>> {
    cases
        .into_iter()
        .filter(|c| shape.row_ops || !c.row_wise)
        .filter(|c| {
            args.filter
                .as_deref()
                .is_none_or(|f| filter_matches(f, c.op, dtype, c.method))
        })
        .collect()
}

struct Row {
    op: &'static str,
    method: &'static str,
    dtype: &'static str,
    /// The backend that ran (`run_with` fails rather than fall back).
    backend: Backend,
    /// Elements per repetition.
    elements: usize,
    /// Bytes of input per element.
    elem_bytes: usize,
    /// Median wall time of one repetition.
    median: Duration,
}

/// Rows done and rows planned, for the progress lines on stderr.
struct Progress {
    done: usize,
    total: usize,
}

/// Runs `f` `reps` times and returns the median duration of one run.
fn time(reps: usize, mut f: impl FnMut()) -> Duration {
    let mut times: Vec<Duration> = (0..reps)
        .map(|_| {
            let start = Instant::now();
            f();
            start.elapsed()
        })
        .collect();
    times.sort_unstable();
    times[times.len() / 2]
}

/// Times every case on every backend. The input is made only if a case
/// needs it (generating it under qemu costs more than some kernels).
fn run_cases<T: Copy + Default>(
    args: &Args,
    shape: &Shape,
    dtype: &'static str,
    cases: &[Case<'_, T>],
    input: impl FnOnce(usize) -> Vec<T>,
    progress: &mut Progress,
    out: &mut Vec<Row>,
) -> Result<(), String> {
    if cases.is_empty() {
        return Ok(());
    }
    let n = shape.rows * shape.cols;
    let input = input(n);
    let mut output = vec![T::default(); n];
    for &backend in &args.backends {
        for case in cases {
            progress.done += 1;
            eprintln!(
                "[{}/{}] {} {dtype} {} {}",
                progress.done,
                progress.total,
                case.op,
                case.method,
                backend.name()
            );
            let mut failure = None;
            let median = time(args.reps, || {
                if let Err(e) = (case.kernel)(backend, &input, &mut output, shape.cols) {
                    failure = Some(e);
                }
            });
            if let Some(e) = failure {
                return Err(format!(
                    "{} {dtype} {} {}: {e}",
                    case.op,
                    case.method,
                    backend.name()
                ));
            }
            out.push(Row {
                op: case.op,
                method: case.method,
                dtype,
                backend,
                elements: n,
                elem_bytes: size_of::<T>(),
                median,
            });
        }
    }
    Ok(())
}

/// `--list`: every row the filter selects, whatever the shape.
fn list(args: &Args) -> Result<(), String> {
    fn print<T>(args: &Args, dtype: &str, cases: Vec<Case<'_, T>>) {
        let any_shape = Shape {
            rows: 1,
            cols: 1,
            row_ops: true,
        };
        for c in select(args, &any_shape, dtype, cases) {
            let kind = if c.row_wise { "row" } else { "element" };
            println!("{} {dtype} {} {kind}", c.op, c.method);
        }
    }
    print(args, "int8", quant_cases::<i8>()?);
    print(args, "uint8", quant_cases::<u8>()?);
    print(args, "int16", quant_cases::<i16>()?);
    print(args, "q31", q31_cases());
    print(args, "f32", f32_cases());
    Ok(())
}

fn run(args: &Args, shape: &Shape) -> Result<Vec<Row>, String> {
    let i8_cases = select(args, shape, "int8", quant_cases::<i8>()?);
    let u8_cases = select(args, shape, "uint8", quant_cases::<u8>()?);
    let i16_cases = select(args, shape, "int16", quant_cases::<i16>()?);
    let q31_cases = select(args, shape, "q31", q31_cases());
    let f32_cases = select(args, shape, "f32", f32_cases());
    let planned =
        i8_cases.len() + u8_cases.len() + i16_cases.len() + q31_cases.len() + f32_cases.len();
    let mut progress = Progress {
        done: 0,
        total: planned * args.backends.len(),
    };
    let mut rows = Vec::new();
    let n = shape.rows * shape.cols;
    let seed = 0x5eed ^ n as u64;
    let p = &mut progress;
    run_cases(
        args,
        shape,
        "int8",
        &i8_cases,
        |n| logits::<i8>(n, input_quant::<i8>(), seed),
        p,
        &mut rows,
    )?;
    run_cases(
        args,
        shape,
        "uint8",
        &u8_cases,
        |n| logits::<u8>(n, input_quant::<u8>(), seed),
        p,
        &mut rows,
    )?;
    run_cases(
        args,
        shape,
        "int16",
        &i16_cases,
        |n| logits::<i16>(n, input_quant::<i16>(), seed),
        p,
        &mut rows,
    )?;
    run_cases(
        args,
        shape,
        "q31",
        &q31_cases,
        |n| {
            // N(0, 3) in Q5.26.
            let mut rng = Rng(0x0031);
            let one = (1u64 << (31 - Q31_INTEGER_BITS)) as f64;
            (0..n).map(|_| (3.0 * rng.normal() * one) as i32).collect()
        },
        p,
        &mut rows,
    )?;
    run_cases(
        args,
        shape,
        "f32",
        &f32_cases,
        |n| {
            let mut rng = Rng(0x0f32);
            (0..n).map(|_| (3.0 * rng.normal()) as f32).collect()
        },
        p,
        &mut rows,
    )?;
    Ok(rows)
}

fn main() -> ExitCode {
    let args = parse_args();
    let shape = match shape_dims(&args.shape) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
    };
    if args.list {
        return match list(&args) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("qneon-bench: {e}");
                ExitCode::FAILURE
            }
        };
    }
    let results = match run(&args, &shape) {
        Ok(rows) => rows,
        Err(e) => {
            eprintln!("qneon-bench: {e}");
            return ExitCode::FAILURE;
        }
    };
    let (rows, cols) = (shape.rows, shape.cols);

    println!(
        "shape {} ({rows} x {cols}), median of {} repetition(s)",
        args.shape, args.reps
    );
    println!(
        "{:<14} {:<6} {:<9} {:<8} {:>10} {:>10} {:>10} {:>8}",
        "op", "type", "method", "backend", "shape", "elements", "ns/elem", "GB/s"
    );
    let mut json = String::from("[\n");
    for (k, r) in results.iter().enumerate() {
        let secs = r.median.as_secs_f64();
        let ns = secs * 1e9 / r.elements as f64;
        let gbps = if secs > 0.0 {
            (r.elements * r.elem_bytes) as f64 / secs / 1e9
        } else {
            0.0
        };
        println!(
            "{:<14} {:<6} {:<9} {:<8} {:>10} {:>10} {:>10.3} {:>8.3}",
            r.op,
            r.dtype,
            r.method,
            r.backend.name(),
            args.shape,
            r.elements,
            ns,
            gbps
        );
        json.push_str(&format!(
            "  {{\"op\": \"{}\", \"type\": \"{}\", \"method\": \"{}\", \"backend\": \"{}\", \
             \"shape\": \"{}\", \"rows\": {rows}, \"cols\": {cols}, \"elements\": {}, \"reps\": {}, \
             \"median_ns_per_element\": {ns:.4}, \"gb_per_s\": {gbps:.4}}}{}\n",
            r.op,
            r.dtype,
            r.method,
            r.backend.name(),
            args.shape,
            r.elements,
            args.reps,
            if k + 1 < results.len() { "," } else { "" }
        ));
    }
    json.push_str("]\n");
    if let Some((path, mut file)) = args.json {
        if let Err(e) = file.write_all(json.as_bytes()) {
            eprintln!("--json {}: {e}", path.display());
            return ExitCode::FAILURE;
        }
    }
    ExitCode::SUCCESS
}
