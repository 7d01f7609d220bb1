//! `cargo xtask test`: every test suite, with one combined count at the end.
//!
//! Parts, in order: host `cargo test --workspace`; `cargo test -p qneon` for
//! aarch64 under qemu (the runner in `.cargo/config.toml`); a `no_std`
//! build check of the library; the asm checks; the benches compile (host
//! and aarch64) and `qneon-bench` runs once on the host. Output streams as it comes;
//! libtest's `test result:` lines are summed, and the last line printed is
//! `N passed, M failed`. A part that fails without reporting any failing
//! test (say, a compile error) counts as one failure.

use std::io::Write;
use std::process::Command;

use crate::util::{self, bail, Reported, Result, TARGET};
use crate::{asm, setup};

/// Passed/failed counts of one part.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Counts {
    pub passed: u64,
    pub failed: u64,
}

impl Counts {
    fn add(&mut self, other: Counts) {
        self.passed += other.passed;
        self.failed += other.failed;
    }
}

struct Part {
    name: &'static str,
    counts: Counts,
    /// Why the part failed beyond its failing tests, if it did.
    problem: Option<String>,
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
        let mut qemu_tests =
            util::cargo(["test", "-p", "qneon", "--target", TARGET, "--no-fail-fast"]);
        // The runner is `qemu-aarch64 -cpu max`, which has dotprod and i8mm:
        // the feature-detection test may insist on finding them.
        qemu_tests.env("QNEON_EXPECT_DOTPROD", "1");
        parts.push(cargo_part("aarch64 tests (qemu)", qemu_tests, filters));
        parts.push(build_part(
            "no_std build",
            util::cargo([
                "build",
                "-p",
                "qneon",
                "--target",
                TARGET,
                "--no-default-features",
                "--lib",
            ]),
        ));
        parts.push(asm_part());
        parts.push(build_part(
            "aarch64 benches build",
            util::cargo(["bench", "-p", "qneon", "--no-run", "--target", TARGET]),
        ));
    }
    // Benchmarks as tests: the criterion benches compile, and the benchmark
    // binary runs once on a small shape on the host.
    parts.push(build_part(
        "benches compile",
        util::cargo(["bench", "-p", "qneon", "--no-run"]),
    ));
    parts.push(build_part(
        "qneon-bench smoke",
        util::cargo([
            "run",
            "--release",
            "-p",
            "qneon",
            "--bin",
            "qneon-bench",
            "--",
            "--reps",
            "1",
            "--shape",
            "short",
        ]),
    ));
    // The layer runner on the committed model, once per softmax method (the
    // aarch64 NEON layer runs in the qemu tests, `tests/model_file.rs`).
    for method in ["fixed", "lut", "f32"] {
        parts.push(build_part(
            "qneon-mobilebert smoke",
            util::cargo([
                "run",
                "--release",
                "-p",
                "qneon",
                "--bin",
                "qneon-mobilebert",
                "--",
                "--model",
                "models/mobilebert_layer.qnb",
                "--softmax",
                method,
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
            "  {:<22} {:<6} ({} passed; {} failed){}",
            part.name,
            if ok { "ok" } else { "FAILED" },
            part.counts.passed,
            part.counts.failed,
            part.problem
                .as_deref()
                .map(|p| format!(" - {p}"))
                .unwrap_or_default(),
        );
    }
    println!("{} passed, {} failed", total.passed, total.failed);
    let _ = std::io::stdout().flush();
    if all_ok {
        Ok(())
    } else {
        Err(Reported.into())
    }
}

/// A `cargo test` run: its libtest results, plus one failure if cargo failed
/// without any test failing (build error, crash under qemu, ...).
/// The proptest seed `cargo xtask test` uses unless `PROPTEST_RNG_SEED` is
/// set: CI must be repeatable, so a property that fails on some rare input
/// fails on every run (run `PROPTEST_RNG_SEED=<n> cargo xtask test` or plain
/// `cargo test` to explore other inputs).
const DEFAULT_PROPTEST_SEED: &str = "20261121";

fn cargo_part(name: &'static str, mut cmd: Command, filters: &[String]) -> Part {
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
                name,
                counts,
                problem,
            }
        }
        Err(err) => failed_part(name, err.to_string()),
    }
}

/// A build that counts as one test.
fn build_part(name: &'static str, mut cmd: Command) -> Part {
    match util::tee(&mut cmd) {
        Ok((status, _)) if status.success() => Part {
            name,
            counts: Counts {
                passed: 1,
                failed: 0,
            },
            problem: None,
        },
        Ok((status, _)) => failed_part(name, format!("build failed ({status})")),
        Err(err) => failed_part(name, err.to_string()),
    }
}

fn asm_part() -> Part {
    match asm::check() {
        Ok(counts) => Part {
            name: "asm checks",
            counts,
            problem: None,
        },
        Err(err) => {
            eprintln!("asm: error: {err}");
            failed_part("asm checks", "could not run (see above)".into())
        }
    }
}

fn failed_part(name: &'static str, problem: String) -> Part {
    Part {
        name,
        counts: Counts {
            passed: 0,
            failed: 1,
        },
        problem: Some(problem),
    }
}

/// Sums every libtest summary line in `output`, e.g.
/// `test result: ok. 12 passed; 0 failed; 1 ignored; 0 measured; ...` or
/// `test result: FAILED. 3 passed; 1 failed; ...`.
pub fn sum_results(output: &str) -> Counts {
    let mut total = Counts::default();
    for line in output.lines() {
        if let Some(counts) = parse_result_line(&strip_ansi(line)) {
            total.add(counts);
        }
    }
    total
}

fn parse_result_line(line: &str) -> Option<Counts> {
    let rest = line.trim().strip_prefix("test result: ")?;
    // Skip the verdict (`ok.` / `FAILED.`), then read `N word` fields.
    let (_, fields) = rest.split_once(". ")?;
    let mut counts = Counts::default();
    let mut seen = false;
    for field in fields.split(';') {
        let mut words = field.split_whitespace();
        let (Some(number), Some(word)) = (words.next(), words.next()) else {
            continue;
        };
        let Ok(n) = number.parse::<u64>() else {
            continue;
        };
        match word {
            "passed" => counts.passed = n,
            "failed" => counts.failed = n,
            _ => continue,
        }
        seen = true;
    }
    seen.then_some(counts)
}

/// Removes ANSI colour sequences (`ESC [ ... letter`).
fn strip_ansi(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counts(passed: u64, failed: u64) -> Counts {
        Counts { passed, failed }
    }

    #[test]
    fn parses_ok_and_failed_lines() {
        assert_eq!(
            parse_result_line(
                "test result: ok. 12 passed; 0 failed; 1 ignored; 0 measured; \
                 0 filtered out; finished in 0.01s"
            ),
            Some(counts(12, 0))
        );
        assert_eq!(
            parse_result_line("test result: FAILED. 3 passed; 2 failed; 0 ignored"),
            Some(counts(3, 2))
        );
        assert_eq!(parse_result_line("running 3 tests"), None);
        assert_eq!(parse_result_line("test foo ... ok"), None);
    }

    #[test]
    fn sums_all_result_lines_and_ignores_colour() {
        let output = "\
running 2 tests
test a ... ok
test b ... FAILED
test result: \u{1b}[31mFAILED\u{1b}[0m. 1 passed; 1 failed; 0 ignored; 0 measured
   Doc-tests qneon
test result: ok. 4 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out
";
        assert_eq!(sum_results(output), counts(5, 1));
        assert_eq!(sum_results("error[E0425]: cannot find value"), counts(0, 0));
    }
}
