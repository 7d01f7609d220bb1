//! `cargo xtask miri`: the tests that reach the host's `unsafe` code, run
//! under Miri (nightly), which reports undefined behaviour: out-of-bounds
//! or misaligned accesses, invalid values, aliasing violations (Stacked
//! Borrows), leaks.
//!
//! Parts, in order:
//! * the library's unit tests (`cargo miri test -p qneon --lib`);
//! * `tests/unsafe_paths.rs`: every `unsafe` block the host reaches (the
//!   `f32` kernels' block walkers, the tail helpers, `Method::DequantF32`'s
//!   loads, stores and exp cache, the element-type views) on offset
//!   subslices of every block position;
//! * the `.tflite` reader's unit tests (`-p qneon-tflite --lib`: the
//!   FlatBuffers code, whose generated part holds `unsafe`, on built,
//!   truncated and malformed models, and the aligned / misaligned views of
//!   constant data);
//! * the runtime's unit tests, and one converter-written model read from
//!   disk, loaded and invoked (`runtime/tests/tflite_models.rs`: the reader
//!   on a real file, zero-copy constant views and the arena, the kernels);
//! * the thread pool's unit tests (`-p qneon-pool --lib`): its lifetime
//!   erasure and handoffs under the data-race detector;
//! * the C API crate's tests (`-p qneon-capi`): the raw-pointer checks,
//!   slice views and handles of every entry point.
//!
//! Tests too slow under Miri (exhaustive sweeps, proptest searches, whole
//! MobileBert models) carry `#[cfg_attr(miri, ignore)]`; each family keeps
//! a small instance that runs. Floats are deterministic
//! (`-Zmiri-deterministic-floats`: the tests compare against `f64` math and
//! bit patterns); the parts that read files run without isolation.
//! Ends with each part's counts and time, and `N passed, M failed`.

use std::process::Command;
use std::time::Instant;

use crate::counts::{sum_results, Counts};
use crate::util::{self, bail, Reported, Result};

/// One `cargo miri test` run.
struct Part {
    name: &'static str,
    /// Arguments after `cargo +nightly miri test`.
    args: &'static [&'static str],
    /// Test names to run (exact), instead of the whole binary.
    exact: &'static [&'static str],
    /// Tests to leave out (`--skip`).
    skip: &'static [&'static str],
    /// Reads files (models): Miri's isolation must be off.
    reads_files: bool,
}

const PARTS: &[Part] = &[
    Part {
        name: "qneon unit tests",
        args: &["-p", "qneon", "--lib"],
        exact: &[],
        skip: &[],
        // Golden files of tests/golden/.
        reads_files: true,
    },
    Part {
        name: "qneon unsafe paths",
        args: &["-p", "qneon", "--test", "unsafe_paths"],
        exact: &[],
        skip: &[],
        reads_files: false,
    },
    Part {
        name: "qneon-tflite unit tests",
        args: &["-p", "qneon-tflite", "--lib"],
        exact: &[],
        // The converter-model test reads the files QNEON_TFLITE_MODELS
        // names and flips every bit of each: hours under Miri.
        skip: &["tests::real_files::"],
        // ModelBytes::read's test writes and reads a temporary file.
        reads_files: true,
    },
    Part {
        name: "qneon-runtime unit tests",
        args: &["-p", "qneon-runtime", "--lib"],
        exact: &[],
        skip: &[],
        reads_files: true,
    },
    Part {
        name: "qneon-runtime model",
        args: &["-p", "qneon-runtime", "--test", "tflite_models"],
        exact: &["inputs_of_the_wrong_size_are_errors"],
        skip: &[],
        reads_files: true,
    },
    Part {
        name: "qneon-pool",
        // The pool's one lifetime erasure and its handoffs between threads
        // (Miri's data-race detector), panics in shares, nested calls.
        args: &["-p", "qneon-pool", "--lib"],
        exact: &[],
        skip: &[],
        reads_files: false,
    },
    Part {
        name: "qneon-capi",
        // The C entry points' pointer checks and slice views, their unit
        // tests and the integration tests that call them as C would.
        args: &["-p", "qneon-capi"],
        exact: &[],
        skip: &[],
        reads_files: false,
    },
];

const MIRIFLAGS: &str = "-Zmiri-deterministic-floats";

pub fn cli(args: &[String]) -> Result {
    let filters = match args.split_first() {
        None => &[][..],
        Some((first, rest)) if first == "--" => rest,
        Some((other, _)) => bail!("miri: unknown option `{other}` (test filters go after `--`)"),
    };
    ensure_miri()?;
    let mut results = Vec::new();
    for part in PARTS {
        let mut cmd = Command::new("cargo");
        cmd.args(["+nightly", "miri", "test"])
            .args(part.args)
            .current_dir(util::root())
            .env_remove("RUSTUP_TOOLCHAIN")
            .env_remove("CARGO")
            .env_remove("RUSTC")
            .env_remove("QNEON_TFLITE_MODELS");
        let mut flags = MIRIFLAGS.to_string();
        if part.reads_files {
            flags.push_str(" -Zmiri-disable-isolation");
        }
        if let Some(extra) = std::env::var_os("MIRIFLAGS") {
            flags.push(' ');
            flags.push_str(&extra.to_string_lossy());
        }
        cmd.env("MIRIFLAGS", flags);
        let mut test_args: Vec<&str> = Vec::new();
        if !part.exact.is_empty() {
            test_args.push("--exact");
            test_args.extend(part.exact);
        }
        for name in part.skip {
            test_args.extend(["--skip", name]);
        }
        test_args.extend(filters.iter().map(String::as_str));
        if !test_args.is_empty() {
            cmd.arg("--").args(test_args);
        }
        let start = Instant::now();
        let (status, output) = util::tee(&mut cmd)?;
        let seconds = start.elapsed().as_secs_f64();
        let mut counts = sum_results(&output);
        let undefined = output.contains("Undefined Behavior");
        let ok = status.success() && counts.failed == 0;
        if !ok && counts.failed == 0 {
            counts.failed = 1;
        }
        results.push((part.name, counts, seconds, ok, undefined));
    }

    println!();
    println!("summary:");
    let mut total = Counts::default();
    let mut all_ok = true;
    for &(name, counts, seconds, ok, undefined) in &results {
        total.add(counts);
        all_ok &= ok;
        println!(
            "  {name:<26} {:<6} ({} passed; {} failed) {seconds:.0} s{}",
            if ok { "ok" } else { "FAILED" },
            counts.passed,
            counts.failed,
            if undefined {
                " - undefined behaviour reported"
            } else {
                ""
            }
        );
    }
    let seconds: f64 = results.iter().map(|r| r.2).sum();
    println!(
        "{} passed, {} failed ({seconds:.0} s under Miri)",
        total.passed, total.failed
    );
    if all_ok {
        Ok(())
    } else {
        Err(Reported.into())
    }
}

/// The nightly toolchain with its miri component, installed when missing.
fn ensure_miri() -> Result {
    if util::which("rustup").is_none() {
        bail!("miri: rustup is needed (Miri is a nightly component)");
    }
    let toolchains = util::capture(Command::new("rustup").args(["toolchain", "list"]))?;
    if !toolchains.lines().any(|l| l.starts_with("nightly-")) {
        eprintln!("miri: installing the nightly toolchain");
        util::run(Command::new("rustup").args([
            "toolchain",
            "install",
            "nightly",
            "--profile",
            "minimal",
        ]))?;
    }
    let components = util::capture(Command::new("rustup").args([
        "+nightly",
        "component",
        "list",
        "--installed",
    ]))?;
    if !components.lines().any(|l| l.starts_with("miri")) {
        eprintln!("miri: adding the miri component to nightly");
        util::run(Command::new("rustup").args([
            "+nightly",
            "component",
            "add",
            "miri",
            "rust-src",
        ]))?;
    }
    Ok(())
}
