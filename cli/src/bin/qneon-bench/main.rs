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
//!             [--in-scale S] [--data logits|uniform]
//! ```
//! `QNEON_BACKEND` sets the default backend; `--list` prints the rows
//! `--filter` selects (`op type method row|element`) without running them.
//!
//! The rows are `qneon::catalogue`'s: every op, type and method the library
//! lists (a row this program cannot prepare is an error, not a row left
//! out). Row-wise ops (softmax,
//! log-softmax) run on the row shapes; element-wise ops (logistic, tanh,
//! sigmoid) run on every shape, `flat` being theirs.

mod args;
mod cases;
mod data;
mod measure;
mod output;

use std::process::ExitCode;

use crate::args::{parse_args, shape_dims, Args, Shape};
use crate::cases::{every_case, input_quant, select, Case, Rng, Q31_INTEGER_BITS};
use crate::measure::{run_cases, Progress, Row};

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
    let cases = every_case()?;
    print(args, "int8", cases.int8);
    print(args, "uint8", cases.uint8);
    print(args, "int16", cases.int16);
    print(args, "q31", cases.q31);
    print(args, "f32", cases.f32);
    Ok(())
}

fn run(args: &Args, shape: &Shape) -> Result<Vec<Row>, String> {
    let cases = every_case()?;
    let i8_cases = select(args, shape, "int8", cases.int8);
    let u8_cases = select(args, shape, "uint8", cases.uint8);
    let i16_cases = select(args, shape, "int16", cases.int16);
    let q31_cases = select(args, shape, "q31", cases.q31);
    let f32_cases = select(args, shape, "f32", cases.f32);
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
        |n| args.data.generate::<i8>(n, input_quant::<i8>(), seed),
        p,
        &mut rows,
    )?;
    run_cases(
        args,
        shape,
        "uint8",
        &u8_cases,
        |n| args.data.generate::<u8>(n, input_quant::<u8>(), seed),
        p,
        &mut rows,
    )?;
    run_cases(
        args,
        shape,
        "int16",
        &i16_cases,
        |n| args.data.generate::<i16>(n, input_quant::<i16>(), seed),
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
    output::report(args, &shape, &results)
}
