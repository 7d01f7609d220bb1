//! `qneon-mobilebert`: runs one int8 MobileBert layer from a `.qnb` file and
//! shows where the time goes.
//!
//! ```text
//! qneon-mobilebert --model models/mobilebert_layer.qnb [--input FILE]
//!                  [--softmax fixed|lut|f32] [--backend scalar|neon]
//!                  [--reps N] [--json FILE]
//! ```
//!
//! Prints a per-operator profile (calls, work in MACs or elements, wall time,
//! share of the layer), a checksum of the int8 output, and its accuracy
//! against the float reference output stored in the input file (cosine
//! similarity; largest and mean absolute error in output steps). `--json`
//! writes the same as JSON for `cargo xtask run`, which runs this binary
//! under qemu and counts the instructions of each operator through the
//! region markers of `marker.rs`.

mod marker;

use clap::error::ErrorKind;
use clap::{CommandFactory, Parser, ValueEnum};
use qneon::{Backend, CpuFeatures, Method};
use qneon_runtime::float::accuracy;
use qneon_runtime::qnb::{fnv1a64, AlignedBytes, Qnb};
use qneon_runtime::{Layer, LayerInput, LayerParams, OpKind, Profiler};
use std::fmt::Write as _;
use std::fs::File;
use std::io::Write as _;
use std::process::ExitCode;
use std::time::{Duration, Instant};

/// `qneon-mobilebert`: runs one int8 MobileBert layer from a `.qnb` file and
/// prints where the time goes (per-operator profile), the output checksum
/// and its accuracy against the float reference.
#[derive(Parser)]
#[command(name = "qneon-mobilebert", version)]
struct Cli {
    /// The layer (.qnb), e.g. models/mobilebert_layer.qnb
    #[arg(long, value_name = "FILE")]
    model: String,
    /// int8 input and float reference output (default: the model path with
    /// .qnb replaced by .input.bin)
    #[arg(long, value_name = "FILE")]
    input: Option<String>,
    /// Softmax method
    #[arg(long, value_name = "M", value_enum, default_value_t = SoftmaxMethod::Lut)]
    softmax: SoftmaxMethod,
    /// scalar or neon (default: the best on this CPU)
    #[arg(long, value_name = "B", value_parser = parse_backend)]
    backend: Option<Backend>,
    /// Run the layer N times; times are per run
    #[arg(long, value_name = "N", default_value_t = 1,
          value_parser = clap::value_parser!(u32).range(1..))]
    reps: u32,
    /// Also write the profile as JSON (checked to be writable before the run)
    #[arg(long, value_name = "FILE")]
    json: Option<String>,
}

/// The `--softmax` names.
#[derive(Clone, Copy, ValueEnum)]
enum SoftmaxMethod {
    /// FixedPoint: bit-exact with TFLite Micro
    Fixed,
    /// Lut: TFLite's optimized table kernel
    Lut,
    /// DequantF32: dequantize to f32
    F32,
}

fn parse_backend(name: &str) -> Result<Backend, String> {
    Backend::from_name(name).ok_or_else(|| format!("unknown backend `{name}` (scalar, neon)"))
}

struct Options {
    model: String,
    input: Option<String>,
    method: Method,
    backend: Backend,
    reps: u32,
    /// The `--json` path and the file, created before the run.
    json: Option<(String, File)>,
}

/// Parses the command line; usage errors (including a `--json` file that
/// cannot be written) exit with status 2.
fn parse() -> Options {
    let cli = Cli::parse();
    let json = cli.json.map(|path| match File::create(&path) {
        Ok(file) => (path, file),
        Err(e) => Cli::command()
            .error(ErrorKind::ValueValidation, format!("--json {path}: {e}"))
            .exit(),
    });
    Options {
        model: cli.model,
        input: cli.input,
        method: match cli.softmax {
            SoftmaxMethod::Fixed => Method::FixedPoint,
            SoftmaxMethod::Lut => Method::Lut,
            SoftmaxMethod::F32 => Method::DequantF32,
        },
        backend: cli.backend.unwrap_or_else(Backend::best),
        reps: cli.reps,
        json,
    }
}

/// Per operator kind: calls, work, time; and the instruction-count region.
#[derive(Default)]
struct Profile {
    started: Option<Instant>,
    rows: [(u64, u64, Duration); OpKind::ALL.len()],
}

impl Profiler for Profile {
    fn begin(&mut self, op: OpKind) {
        self.started = Some(Instant::now());
        marker::region(op.id());
    }

    fn end(&mut self, op: OpKind, work: u64) {
        marker::region(marker::OUTSIDE);
        let elapsed = self.started.take().map_or(Duration::ZERO, |t| t.elapsed());
        let row = &mut self.rows[op.id() as usize - 1];
        row.0 += 1;
        row.1 += work;
        row.2 += elapsed;
    }
}

fn read_qnb(path: &str) -> Result<AlignedBytes, String> {
    AlignedBytes::read(path).map_err(|e| format!("{path}: {e}"))
}

fn run(o: Options) -> Result<(), String> {
    let model_bytes = read_qnb(&o.model)?;
    let model = Qnb::parse(&model_bytes).map_err(|e| format!("{}: {e}", o.model))?;
    let params = LayerParams::from_qnb(&model).map_err(|e| format!("{}: {e}", o.model))?;
    let config = params.config;
    let input_path = o.input.clone().unwrap_or_else(|| {
        let stem = o.model.strip_suffix(".qnb").unwrap_or(&o.model);
        format!("{stem}.input.bin")
    });
    let input_bytes = read_qnb(&input_path)?;
    let input_file = Qnb::parse(&input_bytes).map_err(|e| format!("{input_path}: {e}"))?;
    let input =
        LayerInput::from_qnb(&input_file, &config).map_err(|e| format!("{input_path}: {e}"))?;
    if input.quant != params.input {
        return Err(format!(
            "{input_path}: the input's quantization {:?} is not the layer's {:?}",
            input.quant, params.input
        ));
    }
    let layer = Layer::new(&params, o.method).map_err(|e| format!("{}: {e}", o.model))?;
    let mut ws = layer.workspace();
    let mut output = vec![0i8; input.input.len()];
    let mut profile = Profile::default();
    let t = Instant::now();
    for _ in 0..o.reps {
        layer
            .run(&mut ws, o.backend, &input.input, &mut output, &mut profile)
            .map_err(|e| e.to_string())?;
    }
    let total = t.elapsed() / o.reps;
    let acc = accuracy(&output, layer.output_quant(), &input.reference_output);
    // The checksum is over the output's bytes (two's complement).
    let output_bytes: Vec<u8> = output.iter().map(|&v| v as u8).collect();
    let sum = fnv1a64(&output_bytes);

    let method = o.method.name();
    let dotprod = CpuFeatures::detect().dotprod;
    println!(
        "MobileBert layer: seq {} hidden {} bottleneck {} heads {}x{} ffn {}x{}; {:.1} M MACs",
        config.seq_len,
        config.hidden,
        config.bottleneck,
        config.heads,
        config.head_dim,
        config.ffn_count,
        config.intermediate,
        config.macs() as f64 / 1e6
    );
    println!(
        "softmax {method}, backend {}{}, {} run(s)\n",
        o.backend.name(),
        if o.backend == Backend::Neon && dotprod {
            " (sdot)"
        } else {
            ""
        },
        o.reps
    );
    let reps = o.reps as u64;
    let ops_time: Duration = profile.rows.iter().map(|r| r.2).sum::<Duration>() / o.reps;
    println!(
        "{:<16} {:>6} {:>14} {:>8} {:>11} {:>7}",
        "op", "calls", "work", "unit", "time ms", "share"
    );
    for (kind, &(calls, work, time)) in OpKind::ALL.iter().zip(&profile.rows) {
        let time = time / o.reps;
        println!(
            "{:<16} {:>6} {:>14} {:>8} {:>11.3} {:>6.1}%",
            kind.name(),
            calls / reps,
            work / reps,
            kind.unit(),
            time.as_secs_f64() * 1e3,
            100.0 * time.as_secs_f64() / ops_time.as_secs_f64().max(1e-12)
        );
    }
    println!(
        "{:<16} {:>6} {:>14} {:>8} {:>11.3} {:>6.1}%",
        "layer",
        "",
        config.macs(),
        "MAC",
        total.as_secs_f64() * 1e3,
        100.0
    );
    println!("\noutput checksum 0x{sum:016x}");
    println!(
        "accuracy vs the f32 reference: cosine {:.6}, max |error| {:.2} LSB, mean {:.3} LSB",
        acc.cosine, acc.max_abs_err_lsb, acc.mean_abs_err_lsb
    );

    if let Some((path, mut file)) = o.json {
        let mut ops = String::new();
        for (i, (kind, &(calls, work, time))) in OpKind::ALL.iter().zip(&profile.rows).enumerate() {
            let _ = write!(
                ops,
                "{}\n    {{\"id\": {}, \"op\": \"{}\", \"calls\": {}, \"work\": {}, \"unit\": \"{}\", \"seconds\": {:e}}}",
                if i == 0 { "" } else { "," },
                kind.id(),
                kind.name(),
                calls / reps,
                work / reps,
                kind.unit(),
                (time / o.reps).as_secs_f64()
            );
        }
        let json = format!(
            "{{\"softmax\": \"{method}\", \"backend\": \"{}\", \"dotprod\": {dotprod}, \"seq_len\": {}, \
             \"macs\": {}, \"reps\": {}, \"seconds\": {:e},\n  \"ops\": [{ops}\n  ],\n  \"checksum\": \"0x{sum:016x}\", \
             \"cosine\": {}, \"max_abs_err_lsb\": {}, \"mean_abs_err_lsb\": {}}}\n",
            o.backend.name(),
            config.seq_len,
            config.macs(),
            o.reps,
            total.as_secs_f64(),
            acc.cosine,
            acc.max_abs_err_lsb,
            acc.mean_abs_err_lsb
        );
        file.write_all(json.as_bytes())
            .map_err(|e| format!("{path}: {e}"))?;
    }
    Ok(())
}

fn main() -> ExitCode {
    match run(parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("qneon-mobilebert: {e}");
            ExitCode::FAILURE
        }
    }
}
