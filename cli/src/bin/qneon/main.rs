//! `qneon`: runs `.tflite` models on the qneon kernels, and inspects them.
//!
//! ```text
//! qneon run MODEL.tflite [--input K=FILE.npy]... [--output-dir DIR]
//!           [--softmax lut|fixed|f32] [--rounding single|double]
//!           [--backend neon|scalar] [--profile] [--json FILE] [--reps N]
//! qneon inspect MODEL.tflite [--softmax ...] [--rounding ...]
//! ```
//!
//! `--input K=FILE`: `K` is the input's position (`0`), its tensor name
//! (`serving_default_input_ids:0`) or that name's signature part
//! (`input_ids`); the text is split at its FIRST `=` (tensor names never
//! contain `=`; a file path after it may). Inputs not given get seeded
//! values (see [`seeded_input`]).
//!
//! Exit status: 0 on success, 2 on a usage error (clap's), 1 on a model or
//! input error, with a message naming the problem on stderr.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::{Args, Parser, Subcommand, ValueEnum};
use qneon::{Backend, Method};
use qneon_runtime::interp::{Interpreter, NodeInfo, Options, Profiler, Rounding, TensorInfo};
use qneon_runtime::npy::NpyArray;
use qneon_tflite::TensorType;
use serde_json::{json, Value};

#[derive(Parser)]
#[command(
    name = "qneon",
    version,
    about = "Runs and inspects .tflite models on the qneon kernels"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run a model: outputs to --output-dir, a profile with --profile.
    Run(RunArgs),
    /// Show a model's ops, tensors, arena plan and what qneon cannot run.
    Inspect(InspectArgs),
}

/// What loading depends on.
#[derive(Args)]
struct LoadArgs {
    /// SOFTMAX / LOG_SOFTMAX / LOGISTIC / TANH method: fixed (TFLite's
    /// reference kernels), lut (TFLite's aarch64 builtin kernels), f32.
    #[arg(long, value_enum, default_value_t = SoftmaxArg::Fixed)]
    softmax: SoftmaxArg,
    /// Requantization rounding: single (LiteRT 2.3) or double (TF 2.19's
    /// bundled TFLite, TFLite Micro).
    #[arg(long, value_enum, default_value_t = RoundingArg::Single)]
    rounding: RoundingArg,
    /// Largest memory the model may take at run time, in MiB.
    #[arg(long, value_name = "MIB", default_value_t = 1024)]
    memory_budget: usize,
}

#[derive(Args)]
struct RunArgs {
    /// The model.
    model: PathBuf,
    /// An input: K=FILE.npy, K its position or name (split at the first `=`).
    #[arg(long = "input", value_name = "K=FILE")]
    inputs: Vec<String>,
    /// Write DIR/<i>.npy per output and DIR/outputs.json.
    #[arg(long, value_name = "DIR")]
    output_dir: Option<PathBuf>,
    #[command(flatten)]
    load: LoadArgs,
    /// neon or scalar (default: the best on this CPU).
    #[arg(long, value_enum)]
    backend: Option<BackendArg>,
    /// Print the time per op type.
    #[arg(long)]
    profile: bool,
    /// Write the run (per op instance times) as JSON.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Invoke N times; times are per invoke.
    #[arg(long, value_name = "N", default_value_t = 1,
          value_parser = clap::value_parser!(u32).range(1..))]
    reps: u32,
}

#[derive(Args)]
struct InspectArgs {
    /// The model.
    model: PathBuf,
    #[command(flatten)]
    load: LoadArgs,
}

#[derive(Clone, Copy, ValueEnum)]
enum SoftmaxArg {
    Lut,
    Fixed,
    F32,
}

#[derive(Clone, Copy, ValueEnum)]
enum RoundingArg {
    Single,
    Double,
}

#[derive(Clone, Copy, ValueEnum)]
enum BackendArg {
    Neon,
    Scalar,
}

impl LoadArgs {
    fn options(&self, backend: Backend) -> Options {
        Options {
            rounding: match self.rounding {
                RoundingArg::Single => Rounding::Single,
                RoundingArg::Double => Rounding::Double,
            },
            softmax_method: match self.softmax {
                SoftmaxArg::Lut => Method::Lut,
                SoftmaxArg::Fixed => Method::FixedPoint,
                SoftmaxArg::F32 => Method::DequantF32,
            },
            backend,
            memory_budget: Some(self.memory_budget.saturating_mul(1 << 20)),
        }
    }
}

/// NumPy's name of a dtype (`int8`, `float32`).
fn numpy_name(dtype: TensorType) -> String {
    dtype.name().to_ascii_lowercase()
}

fn read_model(path: &Path, budget: usize) -> Result<qneon_tflite::ModelBytes, String> {
    // The file itself is not counted in the run-time budget, but a file far
    // larger than any model is refused before it is read.
    qneon_tflite::ModelBytes::read(path, budget.saturating_add(1 << 31))
        .map_err(|e| format!("{}: {e}", path.display()))
}

/// SplitMix64: the seeded inputs' generator.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

/// Seeded bytes for input `position` (seed 2024 + position): integer types
/// uniform over their whole range, except int32, uniform in `0..bound`
/// where `bound` is the smallest dimension of any table a GATHER indexes
/// with this input (so every index is valid), else `0..2` (masks, type
/// ids); float32 uniform in [-1, 1).
fn seeded_input(interpreter: &Interpreter<'_>, position: usize) -> Vec<u8> {
    let info = interpreter.inputs()[position].clone();
    let mut rng = SplitMix64(2024 + position as u64);
    let count = info.shape.iter().product::<usize>();
    let tensors = interpreter.tensors();
    let bound = interpreter
        .nodes()
        .filter(|n| n.op == "GATHER" && n.inputs.get(1) == Some(&Some(info.index)))
        .filter_map(|n| n.inputs[0].map(|t| tensors[t].shape.iter().copied().min().unwrap_or(1)))
        .min()
        .unwrap_or(2)
        .max(1) as u64;
    let mut out = Vec::with_capacity(info.bytes);
    for _ in 0..count {
        let r = rng.next();
        match info.dtype {
            TensorType::Int32 => out.extend_from_slice(&((r % bound) as i32).to_le_bytes()),
            TensorType::Float32 => {
                let unit = (r >> 40) as f32 / (1u64 << 24) as f32;
                out.extend_from_slice(&(2.0 * unit - 1.0).to_le_bytes());
            }
            TensorType::Int16 => out.extend_from_slice(&(r as i16).to_le_bytes()),
            TensorType::Int64 => out.extend_from_slice(&((r % bound) as i64).to_le_bytes()),
            _ => out.push(r as u8),
        }
    }
    out.resize(info.bytes, 0);
    out
}

/// Times every node; `times[i]` accumulates node `i`'s (execution order).
struct Timer {
    started: Instant,
    times: Vec<Duration>,
    position: usize,
}

impl Profiler for Timer {
    fn begin(&mut self, _node: &NodeInfo) {
        self.started = Instant::now();
    }
    fn end(&mut self, _node: &NodeInfo) {
        self.times[self.position] += self.started.elapsed();
        self.position += 1;
    }
}

fn output_json(index: usize, info: &TensorInfo) -> Value {
    let (scale, zero_point) = match info.per_tensor() {
        Some((s, z)) => (json!(s), json!(z)),
        None => (Value::Null, Value::Null),
    };
    json!({
        "index": index,
        "name": info.name,
        "dtype": numpy_name(info.dtype),
        "shape": info.shape,
        "scale": scale,
        "zero_point": zero_point,
    })
}

fn run(args: RunArgs) -> Result<(), String> {
    let backend = match args.backend {
        None => Backend::best(),
        Some(BackendArg::Scalar) => Backend::Scalar,
        Some(BackendArg::Neon) => Backend::Neon,
    };
    if !backend.is_available() {
        return Err(format!(
            "backend {} is not available on this CPU",
            backend.name()
        ));
    }
    let options = args.load.options(backend);
    let bytes = read_model(&args.model, options.memory_budget.unwrap_or(usize::MAX))?;
    let load_start = Instant::now();
    let mut interpreter = Interpreter::new(bytes.as_bytes(), options)
        .map_err(|e| format!("{}: {e}", args.model.display()))?;
    let load_time = load_start.elapsed();
    if let Some(path) = &args.json {
        std::fs::write(path, b"").map_err(|e| format!("{}: {e}", path.display()))?;
    }
    let mut given = vec![false; interpreter.inputs().len()];
    for spec in &args.inputs {
        let (key, file) = spec
            .split_once('=')
            .ok_or_else(|| format!("--input {spec:?}: expected K=FILE.npy"))?;
        let position = interpreter.input_position(key).ok_or_else(|| {
            let names: Vec<String> = interpreter
                .inputs()
                .iter()
                .map(|t| t.name.clone())
                .collect();
            format!(
                "--input {key:?}: no such input (inputs: {})",
                names.join(", ")
            )
        })?;
        let array = NpyArray::read(Path::new(file))?;
        let info = interpreter.inputs()[position];
        if array.dtype != info.dtype || array.shape != info.shape {
            return Err(format!(
                "{file}: {} {:?}, but input {position} ({}) is {} {:?}",
                numpy_name(array.dtype),
                array.shape,
                info.name,
                numpy_name(info.dtype),
                info.shape
            ));
        }
        interpreter
            .set_input(position, &array.data)
            .map_err(|e| e.to_string())?;
        given[position] = true;
    }
    for (position, given) in given.iter().enumerate() {
        if !given {
            let data = seeded_input(&interpreter, position);
            interpreter
                .set_input(position, &data)
                .map_err(|e| e.to_string())?;
        }
    }
    let node_count = interpreter.nodes().count();
    let mut timer = Timer {
        started: Instant::now(),
        times: vec![Duration::ZERO; node_count],
        position: 0,
    };
    let mut invoke_times = Vec::with_capacity(args.reps as usize);
    for _ in 0..args.reps {
        timer.position = 0;
        let start = Instant::now();
        interpreter
            .invoke_with(&mut timer)
            .map_err(|e| format!("{}: {e}", args.model.display()))?;
        invoke_times.push(start.elapsed());
    }
    let reps = args.reps as f64;
    let plan = interpreter.plan();
    println!(
        "{}: {} ops, arena {} bytes (non-constant tensors {} bytes), load {:.1} ms",
        args.model.display(),
        node_count,
        plan.arena_bytes,
        plan.unshared_bytes(),
        load_time.as_secs_f64() * 1e3
    );
    let mut sorted = invoke_times.clone();
    sorted.sort();
    println!(
        "invoke: {} reps, median {:.3} ms, min {:.3} ms",
        args.reps,
        sorted[sorted.len() / 2].as_secs_f64() * 1e3,
        sorted[0].as_secs_f64() * 1e3
    );
    for (i, info) in interpreter.outputs().iter().enumerate() {
        println!(
            "output {i}: {} {} {:?}",
            info.name,
            numpy_name(info.dtype),
            info.shape
        );
    }
    let nodes: Vec<NodeInfo> = interpreter.nodes().cloned().collect();
    if args.profile {
        // Per op type: calls per invoke, work, time per invoke, share.
        let mut by_type: BTreeMap<&str, (usize, u64, &str, Duration)> = BTreeMap::new();
        for (node, time) in nodes.iter().zip(&timer.times) {
            let row = by_type
                .entry(&node.op)
                .or_insert((0, 0, node.unit, Duration::ZERO));
            row.0 += 1;
            row.1 += node.work;
            row.3 += *time;
        }
        let total: f64 = timer.times.iter().map(|t| t.as_secs_f64()).sum::<f64>() / reps;
        let mut rows: Vec<_> = by_type.into_iter().collect();
        rows.sort_by_key(|row| std::cmp::Reverse(row.1 .3));
        println!(
            "{:<18} {:>6} {:>16} {:>12} {:>7}",
            "op", "calls", "work", "ms", "share"
        );
        for (op, (calls, work, unit, time)) in rows {
            let ms = time.as_secs_f64() / reps * 1e3;
            println!(
                "{op:<18} {calls:>6} {:>16} {ms:>12.3} {:>6.1}%",
                format!("{work} {unit}"),
                100.0 * ms / 1e3 / total.max(f64::MIN_POSITIVE)
            );
        }
    }
    if let Some(dir) = &args.output_dir {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let mut listing = Vec::new();
        for (i, info) in interpreter.outputs().iter().enumerate() {
            let array = NpyArray {
                dtype: info.dtype,
                shape: info.shape.clone(),
                data: interpreter.output(i).unwrap_or(&[]).to_vec(),
            };
            let bytes = array.to_bytes().ok_or_else(|| {
                format!("output {i}: dtype {} has no .npy form", info.dtype.name())
            })?;
            let path = dir.join(format!("{i}.npy"));
            std::fs::write(&path, bytes).map_err(|e| format!("{}: {e}", path.display()))?;
            listing.push(output_json(i, info));
        }
        let path = dir.join("outputs.json");
        let text = serde_json::to_string_pretty(&Value::Array(listing)).unwrap_or_default();
        std::fs::write(&path, text + "\n").map_err(|e| format!("{}: {e}", path.display()))?;
    }
    if let Some(path) = &args.json {
        let ops: Vec<Value> = nodes
            .iter()
            .zip(&timer.times)
            .map(|(n, t)| {
                json!({
                    "index": n.index, "op": n.op, "work": n.work, "unit": n.unit,
                    "ns": (t.as_secs_f64() / reps * 1e9).round(),
                })
            })
            .collect();
        let report = json!({
            "model": args.model.display().to_string(),
            "rounding": options.rounding.name(),
            "softmax": options.softmax_method.name(),
            "backend": backend.name(),
            "arena_bytes": plan.arena_bytes,
            "non_constant_tensor_bytes": plan.unshared_bytes(),
            "reps": args.reps,
            "invoke_ns": invoke_times.iter().map(|t| t.as_nanos() as u64).collect::<Vec<_>>(),
            "ops": ops,
            "outputs": interpreter.outputs().iter().enumerate()
                .map(|(i, t)| output_json(i, t)).collect::<Vec<_>>(),
        });
        let text = serde_json::to_string_pretty(&report).unwrap_or_default();
        std::fs::write(path, text + "\n").map_err(|e| format!("{}: {e}", path.display()))?;
    }
    Ok(())
}

fn describe(t: &TensorInfo) -> String {
    let mut s = format!("#{} {} {} {:?}", t.index, t.name, t.dtype.name(), t.shape);
    if let Some((scale, zero_point)) = t.per_tensor() {
        s += &format!(" scale {scale} zp {zero_point}");
    } else if !t.scales.is_empty() {
        s += &format!(
            " {} scales along axis {}",
            t.scales.len(),
            t.axis.unwrap_or(0)
        );
    }
    if t.constant {
        s += " const";
    }
    s
}

fn inspect(args: InspectArgs) -> Result<(), String> {
    let options = args.load.options(Backend::best());
    let bytes = read_model(&args.model, options.memory_budget.unwrap_or(usize::MAX))?;
    let analysis = Interpreter::analyze(bytes.as_bytes(), options)
        .map_err(|e| format!("{}: {e}", args.model.display()))?;
    let t = &analysis.tensors;
    println!(
        "{}: {} operators, {} tensors",
        args.model.display(),
        analysis.reports.len(),
        t.len()
    );
    println!("inputs:");
    for &i in &analysis.inputs {
        println!("  {}", describe(&t[i]));
    }
    println!("outputs:");
    for &i in &analysis.outputs {
        println!("  {}", describe(&t[i]));
    }
    println!("operators:");
    for (report, node) in analysis.reports.iter().zip(&analysis.nodes) {
        let status = match &report.status {
            Ok(()) if node.aliased => "ok (aliased, no copy)".to_string(),
            Ok(()) => format!("ok, {} {}", node.work, node.unit),
            Err(e) => format!("CANNOT RUN: {e}"),
        };
        println!("  {} {}: {status}", report.index, report.op);
        for i in node.inputs.iter().flatten() {
            println!("      in  {}", describe(&t[*i]));
        }
        for &o in &node.outputs {
            if let Some(tensor) = t.get(o) {
                println!("      out {}", describe(tensor));
            }
        }
    }
    let plan = &analysis.plan;
    println!(
        "arena plan: {} bytes for {} buffers (sum of non-constant tensors and scratch {} bytes, {:.1}x)",
        plan.arena_bytes,
        plan.buffers.len(),
        plan.unshared_bytes(),
        plan.unshared_bytes() as f64 / plan.arena_bytes.max(1) as f64
    );
    for (i, t) in t.iter().enumerate() {
        if let Some(Some(b)) = analysis.buffers.get(i) {
            let r = plan.range(*b);
            let live = &plan.buffers[*b];
            println!(
                "  #{i} {}: bytes {}..{} live ops {}..={}",
                t.name, r.start, r.end, live.first, live.last
            );
        }
    }
    let failed: Vec<_> = analysis
        .reports
        .iter()
        .filter(|r| r.status.is_err())
        .collect();
    if failed.is_empty() {
        println!("qneon can run every operator (--rounding and --softmax as given)");
    } else {
        let mut by_op: BTreeMap<&str, usize> = BTreeMap::new();
        for r in &failed {
            *by_op.entry(&r.op).or_default() += 1;
        }
        println!("qneon cannot run {} operators: {by_op:?}", failed.len());
    }
    Ok(())
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Run(args) => run(args),
        Command::Inspect(args) => inspect(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::FAILURE
        }
    }
}
