//! Host wall time of one model at 1 thread and at N, in the same run:
//! `cargo run --release -p qneon-runtime --example threads_wall -- MODEL
//! [THREADS] [ROUNDS] [BACKEND]` (defaults 2, 7, scalar). Each round times
//! one invoke of the 1-thread session and one of the N-thread session, in
//! turn (so both see the same load on a shared machine), after a warm-up
//! invoke of each; prints the median of each and their ratio, and checks
//! that both sessions write the same output bytes.

use std::time::Instant;

use qneon_runtime::interp::{Interpreter, Options};
use qneon_tflite::{ModelBytes, TensorType};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(model) = args.first() else {
        return Err("usage: threads_wall MODEL [THREADS] [ROUNDS] [scalar|neon]".into());
    };
    let threads: usize = args.get(1).map_or(Ok(2), |a| a.parse())?;
    let rounds: usize = args.get(2).map_or(Ok(7), |a| a.parse())?;
    let backend = match args.get(3).map(String::as_str) {
        None | Some("scalar") => qneon::Backend::Scalar,
        Some("neon") => qneon::Backend::best(),
        Some(other) => return Err(format!("unknown backend {other}").into()),
    };
    let bytes = ModelBytes::read(std::path::Path::new(model), 1 << 30)?;
    let mut sessions = Vec::new();
    for t in [1, threads] {
        let options = Options {
            backend,
            threads: t,
            ..Options::default()
        };
        let mut interpreter = Interpreter::new(bytes.as_bytes(), options)?;
        let inputs: Vec<(TensorType, usize)> = interpreter
            .inputs()
            .iter()
            .map(|info| (info.dtype, info.bytes))
            .collect();
        for (position, (dtype, len)) in inputs.into_iter().enumerate() {
            interpreter.set_input(position, &input_bytes(dtype, len))?;
        }
        interpreter.invoke()?;
        sessions.push(interpreter);
    }
    let mut times = [Vec::new(), Vec::new()];
    for _ in 0..rounds {
        for (k, interpreter) in sessions.iter_mut().enumerate() {
            let start = Instant::now();
            interpreter.invoke()?;
            times[k].push(start.elapsed().as_secs_f64());
        }
    }
    let outputs = |i: &Interpreter<'_>| -> Vec<Vec<u8>> {
        (0..i.outputs().len())
            .map(|p| i.output(p).unwrap_or_default().to_vec())
            .collect()
    };
    if outputs(&sessions[0]) != outputs(&sessions[1]) {
        return Err("the two thread counts wrote different bytes".into());
    }
    let [one, many] = times.map(|mut t| {
        t.sort_by(f64::total_cmp);
        t[t.len() / 2]
    });
    println!(
        "{model}: {backend:?}, median of {rounds} invokes: 1 thread {:.1} ms, \
         {threads} threads {:.1} ms, ratio {:.3}",
        one * 1e3,
        many * 1e3,
        many / one
    );
    Ok(())
}

/// Deterministic bytes for an input: small int32 / int64 values (valid
/// GATHER indices and masks), finite floats, any other code.
fn input_bytes(dtype: TensorType, len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| match dtype {
            TensorType::Int32 if i % 4 == 0 => ((i / 4) % 2) as u8,
            TensorType::Int64 if i % 8 == 0 => ((i / 8) % 2) as u8,
            TensorType::Int32 | TensorType::Int64 => 0,
            TensorType::Float32 if i % 4 == 3 => 0x3f,
            _ => (i * 37 % 251) as u8,
        })
        .collect()
}
