//! `qneon-bench`: runs every operator on a named shape and prints a table.
//!
//! Built for the board (static aarch64 binary) and for the host. Wall-clock
//! numbers are meaningful on real hardware; under qemu use `--reps R` and an
//! instruction counter instead (the difference between R and 2R repetitions
//! isolates the kernels from start-up).
//!
//! ```text
//! qneon-bench [--shape mobilebert|rows64|short|vocab|flat] [--reps R] [--backend scalar|neon|all] [--filter TEXT] [--json FILE]
//! ```
//! `QNEON_BACKEND` sets the default backend.

use qneon::{q31, Backend, LogSoftmax, Logistic, Method, QuantElem, QuantParams, Softmax, Tanh};
use std::process::ExitCode;
use std::time::{Duration, Instant};

struct Args {
    json: Option<String>,
    shape: String,
    reps: usize,
    backends: Vec<Backend>,
    filter: Option<String>,
}

const USAGE: &str = "usage: qneon-bench [--shape mobilebert|rows64|short|vocab|flat] [--reps R] \
[--backend scalar|neon|all] [--filter TEXT] [--json FILE]";

fn parse_args() -> Result<Args, String> {
    let mut shape = "mobilebert".to_string();
    let mut reps = 1usize;
    let mut backend = std::env::var("QNEON_BACKEND").unwrap_or_else(|_| "all".into());
    let mut filter = None;
    let mut json = None;
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut value = |name: &str| {
            it.next()
                .ok_or_else(|| format!("{name} needs a value\n{USAGE}"))
        };
        match arg.as_str() {
            "--shape" => shape = value("--shape")?,
            "--reps" => {
                reps = value("--reps")?
                    .parse()
                    .map_err(|e| format!("--reps: {e}"))?;
            }
            "--backend" => backend = value("--backend")?,
            "--filter" => filter = Some(value("--filter")?),
            "--json" => json = Some(value("--json")?),
            "-h" | "--help" => return Err(USAGE.to_string()),
            other => return Err(format!("unknown argument {other}\n{USAGE}")),
        }
    }
    let backends = if backend == "all" {
        Backend::available().collect()
    } else {
        let b = Backend::from_name(&backend).ok_or_else(|| format!("unknown backend {backend}"))?;
        if !b.is_available() {
            return Err(format!(
                "backend {backend} is not available on this machine"
            ));
        }
        vec![b]
    };
    if reps == 0 {
        return Err("--reps must be at least 1".into());
    }
    Ok(Args {
        json,
        shape,
        reps,
        backends,
        filter,
    })
}

/// (rows, row_len) of a named shape.
fn shape_dims(name: &str) -> Result<(usize, usize), String> {
    match name {
        // 4 attention heads x 384 queries x 384 keys.
        "mobilebert" => Ok((4 * 384, 384)),
        "short" => Ok((4096, 16)),
        "vocab" => Ok((1, 32768)),
        // The MobileBert element count as one row (element-wise ops' shape).
        "flat" => Ok((1, 1536 * 384)),
        // Same element count as `mobilebert` in 64-wide rows: with it, the
        // per-row overhead separates from the per-element cost.
        "rows64" => Ok((9216, 64)),
        other => Err(format!(
            "unknown shape {other} (mobilebert, rows64, short, vocab, flat)"
        )),
    }
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

/// Attention-like logits, N(0, 3) in real units, quantized with `q`.
fn logits<T: QuantElem + TryFrom<i32>>(n: usize, q: QuantParams, seed: u64) -> Vec<T> {
    let mut rng = Rng(seed);
    (0..n)
        .map(|_| {
            let real = 3.0 * rng.normal();
            let v = (real / q.scale as f64).round() as i64 + q.zero_point as i64;
            let v = v.clamp(T::MIN as i64, T::MAX as i64) as i32;
            T::try_from(v).ok().expect("clamped to the type")
        })
        .collect()
}

/// `--filter` selects rows whose `"op type method"` starts with the filter
/// (so `softmax` does not select `log_softmax`, and `logistic int8 fixed`
/// not the table method), or whose type equals it.
fn filter_matches(filter: &str, op: &str, dtype: &str, method: &str) -> bool {
    format!("{op} {dtype} {method}").starts_with(filter) || filter == dtype
}

struct Row {
    op: &'static str,
    method: &'static str,
    dtype: &'static str,
    backend: Backend,
    /// Elements per repetition.
    elements: usize,
    /// Bytes of input per element.
    elem_bytes: usize,
    /// Median wall time of one repetition.
    median: Duration,
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

fn bench_type<T: QuantElem + TryFrom<i32>>(
    args: &Args,
    rows: usize,
    cols: usize,
    out: &mut Vec<Row>,
) {
    let n = rows * cols;
    let (softmax_out, tanh_out) = match T::NAME {
        "int8" => (
            QuantParams::new(1.0 / 256.0, -128),
            QuantParams::new(1.0 / 128.0, 0),
        ),
        "uint8" => (
            QuantParams::new(1.0 / 256.0, 0),
            QuantParams::new(1.0 / 128.0, 128),
        ),
        _ => (
            QuantParams::new(1.0 / 32768.0, 0),
            QuantParams::new(1.0 / 32768.0, 0),
        ),
    };
    let q_in = match T::NAME {
        "int8" => QuantParams::new(0.1, 0),
        "uint8" => QuantParams::new(0.1, 128),
        _ => QuantParams::new(1.0 / 2048.0, 0),
    };
    let input: Vec<T> = logits(n, q_in, 0x5eed ^ n as u64);
    let mut output = vec![T::default(); n];
    let wanted = |op: &str| {
        args.filter
            .as_deref()
            .is_none_or(|f| filter_matches(f, op, T::NAME, "fixed"))
    };

    let softmax =
        Softmax::<T>::new(q_in, 1.0, softmax_out, Method::FixedPoint).expect("valid params");
    let logistic = Logistic::<T>::new(q_in, softmax_out, Method::FixedPoint).expect("valid params");
    let tanh = Tanh::<T>::new(q_in, tanh_out, Method::FixedPoint).expect("valid params");
    type RunLut<'a, T> = Box<dyn Fn(Backend, &[T], &mut [T]) + 'a>;
    let logistic_lut: Option<RunLut<T>> = Logistic::<T>::new(q_in, softmax_out, Method::Lut)
        .ok()
        .map(|op| {
            Box::new(move |b: Backend, x: &[T], y: &mut [T]| op.run_with(b, x, y).unwrap())
                as RunLut<T>
        });
    let tanh_lut: Option<RunLut<T>> = Tanh::<T>::new(q_in, tanh_out, Method::Lut).ok().map(|op| {
        Box::new(move |b: Backend, x: &[T], y: &mut [T]| op.run_with(b, x, y).unwrap()) as RunLut<T>
    });
    let log_softmax = match T::NAME {
        "int16" => None,
        "int8" => LogSoftmax::<T>::new(
            q_in,
            QuantParams::new(16.0 / 256.0, 127),
            Method::FixedPoint,
        )
        .ok(),
        _ => LogSoftmax::<T>::new(
            q_in,
            QuantParams::new(16.0 / 256.0, 255),
            Method::FixedPoint,
        )
        .ok(),
    };
    // Method::DequantF32 for every op that has it.
    type RunRows<'a, T> = Box<dyn Fn(Backend, &[T], &mut [T]) + 'a>;
    let mut dequant: Vec<(&'static str, RunRows<T>)> = Vec::new();
    if let Ok(op) = Softmax::<T>::new(q_in, 1.0, softmax_out, Method::DequantF32) {
        dequant.push((
            "softmax",
            Box::new(move |b, x, y| op.run_with(b, x, y, cols).unwrap()),
        ));
    }
    let log_softmax_out = QuantParams::new(16.0 / 256.0, if T::NAME == "int8" { 127 } else { 255 });
    if let Ok(op) = LogSoftmax::<T>::new(q_in, log_softmax_out, Method::DequantF32) {
        dequant.push((
            "log_softmax",
            Box::new(move |b, x, y| op.run_with(b, x, y, cols).unwrap()),
        ));
    }
    if let Ok(op) = Logistic::<T>::new(q_in, softmax_out, Method::DequantF32) {
        dequant.push((
            "logistic",
            Box::new(move |b, x, y| op.run_with(b, x, y).unwrap()),
        ));
    }
    if let Ok(op) = Tanh::<T>::new(q_in, tanh_out, Method::DequantF32) {
        dequant.push((
            "tanh",
            Box::new(move |b, x, y| op.run_with(b, x, y).unwrap()),
        ));
    }
    for &backend in &args.backends {
        for (op, run) in &dequant {
            if args
                .filter
                .as_deref()
                .is_none_or(|f| filter_matches(f, op, T::NAME, "f32"))
            {
                let elapsed = time(args.reps, || run(backend, &input, &mut output));
                eprintln!("  {op} {} f32 {}", T::NAME, backend.name());
                out.push(Row {
                    op,
                    method: "f32",
                    dtype: T::NAME,
                    backend,
                    elements: n,
                    elem_bytes: size_of::<T>(),
                    median: elapsed,
                });
            }
        }
    }
    for &backend in &args.backends {
        let mut push = |op: &'static str, elapsed: Duration| {
            eprintln!("  {op} {} {}", T::NAME, backend.name());
            out.push(Row {
                op,
                method: "fixed",
                dtype: T::NAME,
                backend,
                elements: n,
                elem_bytes: size_of::<T>(),
                median: elapsed,
            });
        };
        if wanted("softmax") {
            push(
                "softmax",
                time(args.reps, || {
                    softmax
                        .run_with(backend, &input, &mut output, cols)
                        .unwrap()
                }),
            );
        }
        if let Some(ls) = &log_softmax {
            if wanted("log_softmax") {
                push(
                    "log_softmax",
                    time(args.reps, || {
                        ls.run_with(backend, &input, &mut output, cols).unwrap()
                    }),
                );
            }
        }
        if wanted("logistic") {
            push(
                "logistic",
                time(args.reps, || {
                    logistic.run_with(backend, &input, &mut output).unwrap()
                }),
            );
        }
        if wanted("tanh") {
            push(
                "tanh",
                time(args.reps, || {
                    tanh.run_with(backend, &input, &mut output).unwrap()
                }),
            );
        }
        // The table method (8-bit types only).
        for (op, table) in [("logistic", &logistic_lut), ("tanh", &tanh_lut)] {
            let Some(table) = table else { continue };
            if args
                .filter
                .as_deref()
                .is_none_or(|f| filter_matches(f, op, T::NAME, "lut"))
            {
                let elapsed = time(args.reps, || table(backend, &input, &mut output));
                eprintln!("  {op} {} lut {}", T::NAME, backend.name());
                out.push(Row {
                    op,
                    method: "lut",
                    dtype: T::NAME,
                    backend,
                    elements: n,
                    elem_bytes: size_of::<T>(),
                    median: elapsed,
                });
            }
        }
    }
}

/// The float kernels (`qneon::f32`) on the same shape: logits N(0, 3).
fn bench_f32(args: &Args, rows: usize, cols: usize, out: &mut Vec<Row>) {
    use qneon::f32 as qf;
    let n = rows * cols;
    let mut rng = Rng(0x0f32);
    let input: Vec<f32> = (0..n).map(|_| (3.0 * rng.normal()) as f32).collect();
    let mut output = vec![0f32; n];
    type Kernel = fn(Backend, &[f32], &mut [f32], usize) -> qneon::Result<()>;
    let kernels: [(&'static str, Kernel); 5] = [
        ("softmax", |b, x, y, r| qf::softmax_with(b, x, y, r)),
        ("softmax_online", |b, x, y, r| {
            qf::softmax_variant(qf::SoftmaxVariant::Online, b, x, y, r)
        }),
        ("log_softmax", |b, x, y, r| qf::log_softmax_with(b, x, y, r)),
        ("sigmoid", |b, x, y, _| qf::sigmoid_with(b, x, y)),
        ("tanh", |b, x, y, _| qf::tanh_with(b, x, y)),
    ];
    for &backend in &args.backends {
        for (op, kernel) in kernels {
            if !args
                .filter
                .as_deref()
                .is_none_or(|f| filter_matches(f, op, "f32", "float"))
            {
                continue;
            }
            let elapsed = time(args.reps, || {
                kernel(backend, &input, &mut output, cols).unwrap()
            });
            eprintln!("  {op} f32 {}", backend.name());
            out.push(Row {
                op,
                method: "float",
                dtype: "f32",
                backend,
                elements: n,
                elem_bytes: 4,
                median: elapsed,
            });
        }
    }
}

fn bench_q31(args: &Args, rows: usize, cols: usize, out: &mut Vec<Row>) {
    let n = rows * cols;
    let integer_bits = 5;
    let mut rng = Rng(0x0031);
    let input: Vec<i32> = (0..n)
        .map(|_| (3.0 * rng.normal() * (1 << 26) as f64) as i32)
        .collect();
    let mut output = vec![0i32; n];
    let wanted = |op: &str| {
        args.filter
            .as_deref()
            .is_none_or(|f| filter_matches(f, op, "q31", "fixed"))
    };
    for &backend in &args.backends {
        let mut push = |op: &'static str, elapsed: Duration| {
            eprintln!("  {op} q31 {}", backend.name());
            out.push(Row {
                op,
                method: "fixed",
                dtype: "q31",
                backend,
                elements: n,
                elem_bytes: 4,
                median: elapsed,
            });
        };
        if wanted("softmax") {
            push(
                "softmax",
                time(args.reps, || {
                    q31::softmax_with(backend, &input, integer_bits, &mut output, cols).unwrap()
                }),
            );
        }
        if wanted("logistic") {
            push(
                "logistic",
                time(args.reps, || {
                    q31::logistic_with(backend, &input, integer_bits, &mut output).unwrap()
                }),
            );
        }
        if wanted("tanh") {
            push(
                "tanh",
                time(args.reps, || {
                    q31::tanh_with(backend, &input, integer_bits, &mut output).unwrap()
                }),
            );
        }
    }
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
    };
    let (rows, cols) = match shape_dims(&args.shape) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
    };
    let mut results = Vec::new();
    bench_type::<i8>(&args, rows, cols, &mut results);
    bench_type::<u8>(&args, rows, cols, &mut results);
    bench_type::<i16>(&args, rows, cols, &mut results);
    bench_q31(&args, rows, cols, &mut results);
    bench_f32(&args, rows, cols, &mut results);

    println!(
        "shape {} ({rows} x {cols}), median of {} repetition(s)",
        args.shape, args.reps
    );
    println!(
        "{:<12} {:<6} {:<7} {:<8} {:>10} {:>12} {:>10} {:>8}",
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
            "{:<12} {:<6} {:<7} {:<8} {:>10} {:>12} {:>10.3} {:>8.3}",
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
    if let Some(path) = &args.json {
        if let Err(e) = std::fs::write(path, json) {
            eprintln!("--json {path}: {e}");
            return ExitCode::FAILURE;
        }
    }
    ExitCode::SUCCESS
}
