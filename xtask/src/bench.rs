//! `cargo xtask bench`: build `qneon-bench` for aarch64 and run it under qemu.
//!
//! Wall-clock numbers under qemu say little about real hardware; `--insn`
//! adds an exact, repeatable guest instruction count from the qemu-insn
//! plugin.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::util::{self, bail, Result, TARGET};
use crate::{plugin, setup};

const BIN: &str = "qneon-bench";

#[derive(Debug, Default, PartialEq, Eq)]
struct Options {
    /// Count guest instructions with the qemu-insn plugin.
    insn: bool,
    /// Measure instructions per element for every op, backend and shape.
    table: bool,
    /// Passed through to `qneon-bench`.
    bench_args: Vec<String>,
}

fn parse(args: &[String]) -> Result<Options> {
    let mut opts = Options::default();
    let mut iter = args.iter();
    for arg in iter.by_ref() {
        match arg.as_str() {
            "--insn" => opts.insn = true,
            "--table" => opts.table = true,
            "--" => break,
            other => bail!(
                "bench: unknown option `{other}` (accepted: --insn, --table, and \
                 arguments for {BIN} after `--`)"
            ),
        }
    }
    opts.bench_args = iter.cloned().collect();
    Ok(opts)
}

pub fn cli(args: &[String]) -> Result {
    let opts = parse(args)?;
    setup::ensure(false)?;
    let binary = build()?;
    if opts.table {
        return insn_table(&binary);
    }
    if opts.insn {
        let count = plugin::count_instructions(&binary, &opts.bench_args)?;
        println!("{BIN}: {count} guest instructions");
    } else {
        util::run(
            Command::new("qemu-aarch64")
                .args(["-cpu", "max"])
                .arg(&binary)
                .args(&opts.bench_args),
        )?;
    }
    Ok(())
}

/// Rows of the instruction table: (op, element type, method).
const TABLE_ROWS: &[(&str, &str, &str)] = &[
    ("softmax", "int8", "fixed"),
    ("softmax", "uint8", "fixed"),
    ("softmax", "int16", "fixed"),
    ("softmax", "q31", "fixed"),
    ("log_softmax", "int8", "fixed"),
    ("log_softmax", "uint8", "fixed"),
    ("logistic", "int8", "fixed"),
    ("logistic", "uint8", "fixed"),
    ("logistic", "int16", "fixed"),
    ("logistic", "q31", "fixed"),
    ("tanh", "int8", "fixed"),
    ("tanh", "uint8", "fixed"),
    ("tanh", "int16", "fixed"),
    ("tanh", "q31", "fixed"),
    ("logistic", "int8", "lut"),
    ("logistic", "uint8", "lut"),
    ("tanh", "int8", "lut"),
    ("tanh", "uint8", "lut"),
    ("softmax", "f32", "float"),
    ("softmax_online", "f32", "float"),
    ("log_softmax", "f32", "float"),
    ("sigmoid", "f32", "float"),
    ("tanh", "f32", "float"),
];

/// Shapes of the table: (name, rows, columns), as `qneon-bench` defines them.
const TABLE_SHAPES: &[(&str, u64, u64)] = &[
    ("mobilebert", 1536, 384),
    ("rows64", 9216, 64),
    ("vocab", 1, 32768),
];

/// Instructions per element of one (op, type, backend, shape): the
/// difference between 2 and 1 repetitions inside one process, divided by
/// the elements of one repetition, so start-up and set-up cancel out.
fn per_element(
    binary: &Path,
    op: &str,
    dtype: &str,
    method: &str,
    backend: &str,
    shape: &str,
    elements: u64,
) -> Result<f64> {
    let args = |reps: &str| -> Vec<String> {
        [
            "--shape",
            shape,
            "--filter",
            &format!("{op} {dtype} {method}"),
            "--backend",
            backend,
            "--reps",
            reps,
        ]
        .iter()
        .map(|s| s.to_string())
        .collect()
    };
    let one = plugin::count_instructions_with(binary, &args("1"), true)?;
    let two = plugin::count_instructions_with(binary, &args("2"), true)?;
    if two <= one {
        bail!(
            "{op} {dtype} {method} {backend} {shape}: 2 repetitions did not take more instructions than 1"
        );
    }
    Ok((two - one) as f64 / elements as f64)
}

/// `cargo xtask bench --table`: instructions per element under qemu for every
/// op, type and backend on the MobileBert attention shape (1536 x 384), the
/// same number of elements in 64-wide rows, and one 32768-wide row; the
/// per-row overhead of row-wise ops from the fit `a + b / columns`. Writes
/// `target/bench/insns.md` and prints it.
fn insn_table(binary: &Path) -> Result {
    let mut md = String::new();
    md.push_str("| op | type | method |");
    for (shape, rows, cols) in TABLE_SHAPES {
        md.push_str(&format!(
            " {shape} {rows}x{cols} neon | scalar | scalar/neon |"
        ));
    }
    md.push_str(" neon per-row overhead |\n|---|---|---|");
    for _ in TABLE_SHAPES {
        md.push_str("---:|---:|---:|");
    }
    md.push_str("---:|\n");
    for (op, dtype, method) in TABLE_ROWS {
        eprintln!("measuring {op} {dtype} {method} ...");
        md.push_str(&format!("| {op} | {dtype} | {method} |"));
        let mut neon = Vec::new();
        for (shape, rows, cols) in TABLE_SHAPES {
            let n = rows * cols;
            let v = per_element(binary, op, dtype, method, "neon", shape, n)?;
            let s = per_element(binary, op, dtype, method, "scalar", shape, n)?;
            md.push_str(&format!(" {v:.2} | {s:.1} | {:.1} |", s / v));
            neon.push(v);
        }
        if op.contains("softmax") {
            // a + b/384 and a + b/64: b = (f64 - f384) / (1/64 - 1/384).
            let b = (neon[1] - neon[0]) / (1.0 / 64.0 - 1.0 / 384.0);
            md.push_str(&format!(" {b:.0} |\n"));
        } else {
            md.push_str(" - |\n");
        }
    }
    let dir = util::target_dir().join("bench");
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let path = dir.join("insns.md");
    std::fs::write(&path, &md).map_err(|e| format!("{}: {e}", path.display()))?;
    println!("{md}");
    println!("(written to {})", path.display());
    Ok(())
}

/// Builds the release benchmark binary and returns its path.
fn build() -> Result<PathBuf> {
    util::run(&mut util::cargo([
        "build",
        "--release",
        "-p",
        "qneon",
        "--bin",
        BIN,
        "--target",
        TARGET,
    ]))?;
    let binary = util::target_dir().join(TARGET).join("release").join(BIN);
    if !binary.is_file() {
        bail!("cargo built {BIN} but {} does not exist", binary.display());
    }
    Ok(binary)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(args: &[&str]) -> Vec<String> {
        args.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn parses_insn_and_passthrough() {
        let opts = parse(&strings(&["--insn", "--", "--rows", "8", "--insn"])).unwrap();
        assert!(opts.insn);
        assert_eq!(opts.bench_args, strings(&["--rows", "8", "--insn"]));
        assert_eq!(parse(&[]).unwrap(), Options::default());
        assert!(parse(&strings(&["--rows"])).is_err());
    }
}
