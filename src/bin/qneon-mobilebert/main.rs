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

use qneon::model::float::accuracy;
use qneon::model::qnb::{fnv1a64, AlignedBytes, Qnb};
use qneon::model::{Layer, LayerInput, LayerParams, OpKind, Profiler};
use qneon::{Backend, CpuFeatures, Method};
use std::fmt::Write as _;
use std::process::ExitCode;
use std::time::{Duration, Instant};

const USAGE: &str = "\
usage: qneon-mobilebert --model FILE [--input FILE] [--softmax fixed|lut|f32]
                        [--backend scalar|neon] [--reps N] [--json FILE]

  --model FILE     the layer (.qnb), e.g. models/mobilebert_layer.qnb
  --input FILE     int8 input and float reference output (default: the model
                   path with .qnb replaced by .input.bin)
  --softmax M      softmax method: fixed (FixedPoint, bit-exact with TFLite
                   Micro), lut (TFLite's optimized table kernel), f32
                   (dequantize to f32); default lut
  --backend B      scalar or neon (default: the best on this CPU)
  --reps N         run the layer N times (default 1); times are per run
  --json FILE      also write the profile as JSON
";

struct Options {
    model: String,
    input: Option<String>,
    method: Method,
    backend: Backend,
    reps: u32,
    json: Option<String>,
}

fn parse(args: &[String]) -> Result<Options, String> {
    let mut o = Options {
        model: String::new(),
        input: None,
        method: Method::Lut,
        backend: Backend::best(),
        reps: 1,
        json: None,
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = || {
            it.next()
                .cloned()
                .ok_or_else(|| format!("{a} needs a value"))
        };
        match a.as_str() {
            "--model" => o.model = value()?,
            "--input" => o.input = Some(value()?),
            "--softmax" => {
                o.method = match value()?.as_str() {
                    "fixed" => Method::FixedPoint,
                    "lut" => Method::Lut,
                    "f32" => Method::DequantF32,
                    other => return Err(format!("unknown softmax method `{other}`")),
                }
            }
            "--backend" => {
                o.backend = match value()?.as_str() {
                    "scalar" => Backend::Scalar,
                    "neon" => Backend::Neon,
                    other => return Err(format!("unknown backend `{other}`")),
                }
            }
            "--reps" => {
                o.reps = value()?
                    .parse()
                    .ok()
                    .filter(|&n| n > 0)
                    .ok_or("--reps needs a positive integer")?
            }
            "--json" => o.json = Some(value()?),
            "-h" | "--help" => return Err(String::new()),
            other => return Err(format!("unknown argument `{other}`")),
        }
    }
    if o.model.is_empty() {
        return Err("--model is required".into());
    }
    Ok(o)
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

fn run(o: &Options) -> Result<(), String> {
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
    let sum = fnv1a64(bytemuck::cast_slice(&output));

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

    if let Some(path) = &o.json {
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
        std::fs::write(path, json).map_err(|e| format!("{path}: {e}"))?;
    }
    Ok(())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = parse(&args).and_then(|o| run(&o));
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.is_empty() => {
            print!("{USAGE}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("qneon-mobilebert: {e}\n\n{USAGE}");
            ExitCode::FAILURE
        }
    }
}
