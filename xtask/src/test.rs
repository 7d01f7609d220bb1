//! `cargo xtask test`: every test suite, with one combined count at the end.
//!
//! Parts, in order: host `cargo test --workspace`; `cargo test -p qneon -p
//! qneon-runtime -p qneon-capi` for aarch64 under qemu (the runner in
//! `.cargo/config.toml`); the library built in every feature combination
//! (default, `no_std`, `alloc`) for the host and the `no_std` ones for
//! bare-metal aarch64, each build one part; the library's API tests
//! without `std`; the C API (header current, C example on the host and
//! under qemu); the Python package (wheels, pytest on the host and under
//! qemu); the asm checks; the benches compile (host);
//! `qneon-bench`, `qneon run` (on small `.tflite` models) and the
//! self-checking examples run on the host, in the test profile (optimized,
//! overflow-checked, its libraries built by the host tests already). Output streams as it comes;
//! libtest's `test result:` lines are summed, and the last line printed is
//! `N passed, M failed`. A part that fails without reporting any failing
//! test (say, a compile error) counts as one failure.

use std::io::Write;
use std::process::Command;

use crate::counts::{sum_results, Counts};
use crate::util::{self, bail, Reported, Result, BARE_METAL_TARGET, CLI_PACKAGE, TARGET};
use crate::{asm, capi, python, setup};

struct Part {
    name: String,
    counts: Counts,
    /// Why the part failed beyond its failing tests, if it did.
    problem: Option<String>,
    /// Wall time of the part (builds included), to keep CI's total in view.
    seconds: f64,
}

pub fn cli(args: &[String]) -> Result {
    let (flags, filters) = match args.iter().position(|a| a == "--") {
        Some(i) => (&args[..i], &args[i + 1..]),
        None => (args, &[][..]),
    };
    let mut host_only = false;
    for flag in flags {
        match flag.as_str() {
            "--host" => host_only = true,
            other => bail!(
                "test: unknown option `{other}` (accepted: --host, and test \
                 filters after `--`)"
            ),
        }
    }

    // The host tests need nothing beyond cargo, so --host skips setup.
    if !host_only {
        setup::ensure(false)?;
    }

    let mut parts = vec![cargo_part(
        "host tests",
        util::cargo(["test", "--workspace", "--no-fail-fast"]),
        filters,
    )];
    if !host_only {
        // For aarch64: the library, the model runtime, the C API's Rust
        // tests (its extern functions on NEON) and the thread pool (its
        // handoffs on aarch64's weaker memory order); one build for both
        // parts below.
        let aarch64_tests = |extra: &[&str]| {
            let mut args = vec!["test"];
            for package in ["qneon", "qneon-runtime", "qneon-capi", "qneon-pool"] {
                args.extend(["-p", package]);
            }
            args.extend(extra);
            args.extend(["--target", TARGET, "--no-fail-fast"]);
            util::cargo(args)
        };
        let mut qemu_tests = aarch64_tests(&[]);
        // The runner is `qemu-aarch64 -cpu max`, which has dotprod and i8mm:
        // the feature-detection test may insist on finding them.
        qemu_tests.env("QNEON_EXPECT_DOTPROD", "1");
        parts.push(cargo_part("aarch64 tests (qemu)", qemu_tests, filters));
        // The kernels a core without dotprod picks at run time (the
        // depthwise pair kernel, the widening GEMM inside CONV_2D): under
        // `-cpu max` the `sdot` kernels take their layers, so the library's
        // convolution and GEMM tests run again on an Armv8.0 core. Same
        // build as above (the runner is not part of it): seconds; with `-p
        // qneon` alone, cargo would unify the library's features apart and
        // build it again.
        let mut no_dotprod = aarch64_tests(&["--lib"]);
        no_dotprod.env(
            "CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_RUNNER",
            "qemu-aarch64 -cpu cortex-a72",
        );
        let own_filters = ["ops::conv".to_string(), "ops::gemm".to_string()];
        parts.push(cargo_part(
            "aarch64 conv and GEMM without dotprod (qemu -cpu cortex-a72)",
            no_dotprod,
            if filters.is_empty() {
                &own_filters
            } else {
                filters
            },
        ));
    }
    // The library in every feature combination, for the host and (not with
    // --host: it needs the target from setup) bare-metal aarch64.
    for (target, features) in feature_builds(host_only) {
        parts.push(build_part(
            feature_build_name(target, features),
            feature_build(target, features),
        ));
    }
    // The library's API without `std`: `Method::Lut` fails at `new()` with
    // the missing feature as the cause, `CpuFeatures::detect()` reports the
    // compiled features (one test file, host only: fast).
    parts.push(cargo_part(
        "no_std API tests",
        util::cargo([
            "test",
            "-p",
            "qneon",
            "--no-default-features",
            "--test",
            "adoption_api",
        ]),
        filters,
    ));
    // The C API: header current, the C example's bytes on the host (and
    // under qemu) equal the library's.
    parts.push(capi_part(host_only));
    // The Python package: its wheels built, pytest on the host and (unless
    // --host) under qemu with the arm64 Python (`cargo xtask python test`).
    parts.push(python_part(host_only));
    if !host_only {
        // The benches hold no target-specific code: their host build below
        // checks them (an aarch64 build of criterion cost minutes of CI).
        parts.push(asm_part());
    }
    // Benchmarks as tests: the criterion benches compile, and the benchmark
    // binary runs once on a small shape on the host.
    parts.push(build_part(
        "benches compile",
        // In the test profile: the libraries are those the host tests built.
        util::cargo([
            "build",
            "-p",
            "qneon",
            "--benches",
            "--profile",
            SMOKE_PROFILE,
        ]),
    ));
    parts.push(build_part(
        "qneon-bench smoke",
        util::cargo([
            "run",
            "--profile",
            SMOKE_PROFILE,
            "-p",
            CLI_PACKAGE,
            "--bin",
            "qneon-bench",
            "--",
            "--reps",
            "1",
            "--shape",
            "short",
        ]),
    ));
    // `qneon run` on .tflite models, once per softmax method: a Dense /
    // Dense / softmax model and a single-op softmax, each method; then the
    // converter's 1-layer MobileBert.
    for method in ["fixed", "lut", "f32"] {
        for (model, rounding) in SMOKE_MODELS {
            parts.push(build_part(
                "qneon run smoke",
                qneon_run(&[model, "--softmax", method, "--rounding", rounding]),
            ));
        }
    }
    {
        parts.push(build_part(
            "qneon run smoke",
            qneon_run(&[
                "models/mobilebert_squad_1l.tflite",
                "--softmax",
                "lut",
                "--input",
                "input_ids=models/mobilebert_squad/inputs/case0_full.input_ids.npy",
                "--input",
                "attention_mask=models/mobilebert_squad/inputs/case0_full.attention_mask.npy",
                "--input",
                "token_type_ids=models/mobilebert_squad/inputs/case0_full.token_type_ids.npy",
            ]),
        ));
    }

    // The library's example programs check themselves (exit status).
    for example in EXAMPLES {
        parts.push(build_part(
            "example run",
            util::cargo([
                "run",
                "--profile",
                SMOKE_PROFILE,
                "-p",
                "qneon",
                "--example",
                example,
            ]),
        ));
    }

    let mut total = Counts::default();
    let mut all_ok = true;
    println!();
    println!("summary:");
    for part in &parts {
        total.add(part.counts);
        let ok = part.problem.is_none() && part.counts.failed == 0;
        all_ok &= ok;
        println!(
            "  {:<22} {:<6} ({} passed; {} failed; {:.0} s){}",
            part.name,
            if ok { "ok" } else { "FAILED" },
            part.counts.passed,
            part.counts.failed,
            part.seconds,
            part.problem
                .as_deref()
                .map(|p| format!(" - {p}"))
                .unwrap_or_default(),
        );
    }
    let seconds: f64 = parts.iter().map(|p| p.seconds).sum();
    println!("total time {seconds:.0} s");
    println!("{} passed, {} failed", total.passed, total.failed);
    let _ = std::io::stdout().flush();
    if all_ok {
        Ok(())
    } else {
        Err(Reported.into())
    }
}

/// The library's feature combinations: the default (`std`), none, and
/// `alloc` alone.
const FEATURE_SETS: [Features; 3] = [Features::Default, Features::None, Features::Alloc];

/// One combination of the library's features.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Features {
    /// `std` (and with it `alloc`).
    Default,
    /// `--no-default-features`: the `no_std` core.
    None,
    /// `--no-default-features --features alloc`.
    Alloc,
}

/// `(target, features)` of every library build: each combination for the
/// host (target `None`), and, unless `host_only`, the `no_std` ones for
/// bare-metal aarch64 (which has no `std`, so no default build).
/// The library's examples that run as tests (each exits non-zero when its
/// own check fails).
const EXAMPLES: [&str; 2] = ["lm_head_loss", "detection_head"];

/// The profile of the smoke runs and examples: `test` (optimized, with
/// debug assertions and overflow checks), whose libraries and examples the
/// host tests built already, so the runs add no release build to CI and
/// check overflow on the way.
const SMOKE_PROFILE: &str = "test";

/// Models of the `qneon run` smoke runs, with the rounding each runs with.
const SMOKE_MODELS: [(&str, &str); 2] = [
    ("tools/litert-aarch64/tiny_dense_softmax.tflite", "single"),
    ("models/ops/softmax_int8/model.tflite", "single"),
];

/// `cargo run --profile test -p qneon-cli --bin qneon -- run ARGS...`.
fn qneon_run(args: &[&str]) -> Command {
    let mut cmd = util::cargo([
        "run",
        "--profile",
        SMOKE_PROFILE,
        "-p",
        CLI_PACKAGE,
        "--bin",
        "qneon",
        "--",
        "run",
    ]);
    cmd.args(args);
    cmd
}

fn feature_builds(host_only: bool) -> Vec<(Option<&'static str>, Features)> {
    let host = FEATURE_SETS.iter().map(|&f| (None, f));
    let bare = FEATURE_SETS
        .iter()
        .filter(|&&f| f != Features::Default && !host_only)
        .map(|&f| (Some(BARE_METAL_TARGET), f));
    host.chain(bare).collect()
}

/// The summary line's name of a library build, e.g. `lib build bare alloc`.
fn feature_build_name(target: Option<&str>, features: Features) -> String {
    let machine = if target.is_some() { "bare" } else { "host" };
    let features = match features {
        Features::Default => "default",
        Features::None => "no_std",
        Features::Alloc => "alloc",
    };
    format!("lib build {machine} {features}")
}

/// `cargo build -p qneon --lib` with `features`, for `target` (the host if `None`).
fn feature_build(target: Option<&str>, features: Features) -> Command {
    let mut cmd = util::cargo(["build", "-p", "qneon", "--lib"]);
    if let Some(target) = target {
        cmd.args(["--target", target]);
    }
    match features {
        Features::Default => {}
        Features::None => {
            cmd.arg("--no-default-features");
        }
        Features::Alloc => {
            cmd.args(["--no-default-features", "--features", "alloc"]);
        }
    }
    cmd
}

/// A `cargo test` run: its libtest results, plus one failure if cargo failed
/// without any test failing (build error, crash under qemu, ...).
/// The proptest seed `cargo xtask test` uses unless `PROPTEST_RNG_SEED` is
/// set: CI must be repeatable, so a property that fails on some rare input
/// fails on every run (run `PROPTEST_RNG_SEED=<n> cargo xtask test` or plain
/// `cargo test` to explore other inputs).
const DEFAULT_PROPTEST_SEED: &str = "20261121";

fn cargo_part(name: impl Into<String>, cmd: Command, filters: &[String]) -> Part {
    timed(|| cargo_part_untimed(name, cmd, filters))
}

fn cargo_part_untimed(name: impl Into<String>, mut cmd: Command, filters: &[String]) -> Part {
    if !filters.is_empty() {
        cmd.arg("--").args(filters);
    }
    if std::env::var_os("PROPTEST_RNG_SEED").is_none() {
        cmd.env("PROPTEST_RNG_SEED", DEFAULT_PROPTEST_SEED);
    }
    match util::tee(&mut cmd) {
        Ok((status, output)) => {
            let mut counts = sum_results(&output);
            let problem = if status.success() {
                None
            } else {
                if counts.failed == 0 {
                    counts.failed = 1;
                }
                Some(format!("cargo exited with {status}"))
            };
            Part {
                name: name.into(),
                counts,
                problem,
                seconds: 0.0,
            }
        }
        Err(err) => failed_part(name, err.to_string()),
    }
}

/// A build that counts as one test.
fn build_part(name: impl Into<String>, mut cmd: Command) -> Part {
    timed(|| match util::tee(&mut cmd) {
        Ok((status, _)) if status.success() => Part {
            name: name.into(),
            counts: Counts {
                passed: 1,
                failed: 0,
            },
            problem: None,
            seconds: 0.0,
        },
        Ok((status, _)) => failed_part(name, format!("build failed ({status})")),
        Err(err) => failed_part(name, err.to_string()),
    })
}

fn asm_part() -> Part {
    timed(|| match asm::check() {
        Ok(counts) => Part {
            name: "asm checks".into(),
            counts,
            problem: None,
            seconds: 0.0,
        },
        Err(err) => {
            eprintln!("asm: error: {err}");
            failed_part("asm checks", "could not run (see above)".into())
        }
    })
}

fn capi_part(host_only: bool) -> Part {
    timed(|| Part {
        name: "C API".into(),
        counts: capi::check(host_only),
        problem: None,
        seconds: 0.0,
    })
}

fn python_part(host_only: bool) -> Part {
    timed(|| Part {
        name: "Python package".into(),
        counts: python::check(host_only),
        problem: None,
        seconds: 0.0,
    })
}

/// Runs `make_part` and records its wall time in the part.
fn timed(make_part: impl FnOnce() -> Part) -> Part {
    let start = std::time::Instant::now();
    let mut part = make_part();
    part.seconds = start.elapsed().as_secs_f64();
    part
}

fn failed_part(name: impl Into<String>, problem: String) -> Part {
    Part {
        name: name.into(),
        counts: Counts {
            passed: 0,
            failed: 1,
        },
        problem: Some(problem),
        seconds: 0.0,
    }
}
