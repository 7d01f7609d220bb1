//! The printed table and the `--json` file.

use std::io::Write as _;
use std::process::ExitCode;

use crate::args::{Args, Shape};
use crate::measure::Row;

/// Prints the table of `results` and writes them to `--json`, if given.
pub(crate) fn report(args: Args, shape: &Shape, results: &[Row]) -> ExitCode {
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
