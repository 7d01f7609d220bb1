//! `cargo xtask fuzz`: every cargo-fuzz target of `fuzz/`, built with
//! AddressSanitizer on nightly and run for a fixed time each, one after
//! the other; a table of executions per target at the end, and a non-zero
//! exit if any target crashed.
//!
//! The targets live in their own crate (`fuzz/Cargo.toml`, its own
//! workspace, so the main workspace builds on stable). Each run reads the
//! committed seeds (`fuzz/seeds/<target>`, the loaders share
//! `fuzz/seeds/models`) and the inputs of crashes found before
//! (`fuzz/regressions/<target>`: a bug once fixed stays fixed), and grows a
//! working corpus in `fuzz/corpus/<target>`; a crash leaves its input in
//! `fuzz/artifacts/<target>/` (both ignored by git). The full libFuzzer output of each run is in
//! `target/fuzz/<target>.log`.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use crate::util::{self, bail, Reported, Result};

/// Seconds per target unless `--seconds` says otherwise.
const DEFAULT_SECONDS: u64 = 60;

/// Seconds one input may take before libFuzzer reports it as a hang.
const INPUT_TIMEOUT_SECONDS: u64 = 20;

/// Targets that read model files: their seeds are the single-op models,
/// and any one allocation above 64 MiB is a crash (the loaders must check
/// declared sizes against their budgets before allocating).
const LOADERS: [&str; 2] = ["tflite_parse", "runtime_load"];
const LOADER_MALLOC_LIMIT_MB: u64 = 64;

/// What one target's run produced.
struct Outcome {
    target: String,
    seconds: f64,
    executions: Option<u64>,
    coverage: Option<String>,
    /// The crash: libFuzzer's or the sanitizer's first error line and the
    /// saved input.
    crash: Option<(String, Option<String>)>,
}

pub fn cli(args: &[String]) -> Result {
    let (flags, extra) = match args.iter().position(|a| a == "--") {
        Some(i) => (&args[..i], &args[i + 1..]),
        None => (args, &[][..]),
    };
    let mut seconds = DEFAULT_SECONDS;
    let mut requested = Vec::new();
    let mut flags = flags.iter();
    while let Some(flag) = flags.next() {
        match flag.as_str() {
            "--seconds" => {
                let value = flags.next().ok_or("fuzz: --seconds needs a number")?;
                seconds = value
                    .parse()
                    .map_err(|_| format!("fuzz: --seconds `{value}` is not a whole number"))?;
            }
            other if other.starts_with('-') => bail!(
                "fuzz: unknown option `{other}` (accepted: --seconds N, target names, and \
                 libFuzzer options after `--`)"
            ),
            target => requested.push(target.to_string()),
        }
    }

    ensure_tools()?;
    let all = targets()?;
    for target in &requested {
        if !all.contains(target) {
            bail!("fuzz: no target `{target}` (targets: {})", all.join(", "));
        }
    }
    let targets = if requested.is_empty() { all } else { requested };

    util::run(&mut nightly_fuzz(["build", "-s", "address"]))?;
    let log_dir = util::target_dir().join("fuzz");
    fs::create_dir_all(&log_dir).map_err(|e| format!("{}: {e}", log_dir.display()))?;
    let mut outcomes = Vec::new();
    for target in &targets {
        outcomes.push(run_target(target, seconds, extra, &log_dir)?);
    }

    println!();
    println!(
        "{:<14} {:>8} {:>12} {:>9}  {:<24} result",
        "target", "seconds", "executions", "exec/s", "coverage"
    );
    for o in &outcomes {
        let executions = o.executions.map_or("?".to_string(), util::thousands);
        let rate = o
            .executions
            .map_or("?".to_string(), |n| format!("{:.0}", n as f64 / o.seconds));
        let result = match &o.crash {
            None => "ok".to_string(),
            Some((reason, artifact)) => format!(
                "CRASH: {reason}{}",
                artifact
                    .as_ref()
                    .map(|a| format!(" (input: {a})"))
                    .unwrap_or_default()
            ),
        };
        println!(
            "{:<14} {:>8.0} {:>12} {:>9}  {:<24} {result}",
            o.target,
            o.seconds,
            executions,
            rate,
            o.coverage.as_deref().unwrap_or("?")
        );
    }
    let crashed = outcomes.iter().filter(|o| o.crash.is_some()).count();
    println!(
        "{} target(s), {crashed} crashed; logs in {}",
        outcomes.len(),
        log_dir.display()
    );
    if crashed > 0 {
        return Err(Reported.into());
    }
    Ok(())
}

/// `cargo +nightly fuzz ARGS` in the workspace root, with the outer
/// toolchain's choice kept out.
fn nightly_fuzz<I, S>(args: I) -> Command
where
    I: IntoIterator<Item = S>,
    S: AsRef<std::ffi::OsStr>,
{
    let mut cmd = Command::new("cargo");
    cmd.arg("+nightly")
        .arg("fuzz")
        .args(args)
        .current_dir(util::root())
        .env_remove("RUSTUP_TOOLCHAIN")
        .env_remove("CARGO")
        .env_remove("RUSTC");
    cmd
}

/// The nightly toolchain and cargo-fuzz, installed when missing.
fn ensure_tools() -> Result {
    if util::which("rustup").is_none() {
        bail!("fuzz: rustup is needed (cargo-fuzz runs on the nightly toolchain)");
    }
    let toolchains = util::capture(Command::new("rustup").args(["toolchain", "list"]))?;
    if !toolchains.lines().any(|l| l.starts_with("nightly-")) {
        eprintln!("fuzz: installing the nightly toolchain");
        util::run(Command::new("rustup").args([
            "toolchain",
            "install",
            "nightly",
            "--profile",
            "minimal",
        ]))?;
    }
    let found = nightly_fuzz(["--version"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !found {
        eprintln!("fuzz: installing cargo-fuzz");
        util::run(
            Command::new("cargo")
                .args(["+nightly", "install", "cargo-fuzz"])
                .env_remove("RUSTUP_TOOLCHAIN")
                .env_remove("CARGO")
                .env_remove("RUSTC"),
        )?;
    }
    Ok(())
}

/// The fuzz targets, as `cargo fuzz list` names them.
fn targets() -> Result<Vec<String>> {
    let listed = util::capture(&mut nightly_fuzz(["list"]))?;
    let targets: Vec<String> = listed
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(String::from)
        .collect();
    if targets.is_empty() {
        bail!("fuzz: `cargo fuzz list` names no targets");
    }
    Ok(targets)
}

/// The committed seed directory of `target`.
fn seeds(target: &str) -> PathBuf {
    let seeds = util::root().join("fuzz").join("seeds");
    if LOADERS.contains(&target) {
        seeds.join("models")
    } else {
        seeds.join(target)
    }
}

fn run_target(target: &str, seconds: u64, extra: &[String], log_dir: &Path) -> Result<Outcome> {
    let corpus = util::root().join("fuzz").join("corpus").join(target);
    fs::create_dir_all(&corpus).map_err(|e| format!("{}: {e}", corpus.display()))?;
    let mut cmd = nightly_fuzz(["run", "-s", "address", target]);
    cmd.arg(&corpus);
    let regressions = util::root().join("fuzz").join("regressions").join(target);
    for dir in [seeds(target), regressions] {
        if dir.is_dir() {
            cmd.arg(dir);
        }
    }
    cmd.arg("--")
        .arg(format!("-max_total_time={seconds}"))
        .arg(format!("-timeout={INPUT_TIMEOUT_SECONDS}"))
        .arg("-print_final_stats=1");
    if LOADERS.contains(&target) {
        cmd.arg(format!("-malloc_limit_mb={LOADER_MALLOC_LIMIT_MB}"));
    }
    cmd.args(extra);
    let log_path = log_dir.join(format!("{target}.log"));
    util::step(format!(
        "{} (log: {})",
        util::display(&cmd),
        log_path.display()
    ));
    let log = fs::File::create(&log_path).map_err(|e| format!("{}: {e}", log_path.display()))?;
    let start = Instant::now();
    let status = cmd
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log)
        .status()
        .map_err(|e| format!("cannot run cargo fuzz: {e}"))?;
    let elapsed = start.elapsed().as_secs_f64();
    let text = fs::read_to_string(&log_path).unwrap_or_default();
    let outcome = parse_run(target, &text, status.success(), elapsed);
    match &outcome.crash {
        None => eprintln!(
            "{target}: {} executions in {elapsed:.0} s, ok",
            outcome.executions.map_or("?".into(), util::thousands)
        ),
        Some((reason, _)) => eprintln!("{target}: CRASH after {elapsed:.0} s: {reason}"),
    }
    Ok(outcome)
}

/// Reads a run's libFuzzer output: executions (`-print_final_stats`), the
/// last coverage line, and, for a failed run, the first error line and the
/// saved input.
fn parse_run(target: &str, text: &str, success: bool, seconds: f64) -> Outcome {
    let executions = text.lines().find_map(|l| {
        l.trim()
            .strip_prefix("stat::number_of_executed_units:")
            .and_then(|n| n.trim().parse().ok())
    });
    let coverage = text
        .lines()
        .rev()
        .find_map(|l| {
            let cov = l.find("cov: ")?;
            let rest = &l[cov..];
            let end = rest.find(" exec/s").unwrap_or(rest.len());
            Some(rest[..end].trim().to_string())
        })
        .map(|c| {
            // "cov: 1234 ft: 5678 corp: 90/1234b lim: ..." -> "cov 1234, corp 90/1234b"
            let words: Vec<&str> = c.split_whitespace().collect();
            let field = |name: &str| {
                words
                    .iter()
                    .position(|w| *w == name)
                    .and_then(|i| words.get(i + 1))
                    .copied()
            };
            match (field("cov:"), field("corp:")) {
                (Some(cov), Some(corp)) => format!("cov {cov}, corp {corp}"),
                _ => c,
            }
        });
    let crash = (!success).then(|| {
        let reason = text
            .lines()
            .find(|l| {
                l.contains("panicked at")
                    || l.contains("ERROR: AddressSanitizer")
                    || l.contains("ERROR: libFuzzer")
                    || l.contains("SUMMARY: ")
                    || l.contains("error: ")
            })
            .map(|l| l.trim().to_string())
            .unwrap_or_else(|| "the run failed (see the log)".to_string());
        let artifact = text.lines().find_map(|l| {
            let at = l.find("Test unit written to ")?;
            Some(l[at + "Test unit written to ".len()..].trim().to_string())
        });
        (reason, artifact)
    });
    Outcome {
        target: target.to_string(),
        seconds,
        executions,
        coverage,
        crash,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_clean_run() {
        let text = "INFO: Seed: 1\n#2\tINITED cov: 10 ft: 12 corp: 3/40b exec/s: 0 rss: 30Mb\n\
                    #4096\tpulse  cov: 20 ft: 30 corp: 5/90b lim: 4 exec/s: 2048 rss: 31Mb\n\
                    Done 5000 runs in 2 second(s)\nstat::number_of_executed_units: 5000\n\
                    stat::average_exec_per_sec:     2500\n";
        let o = parse_run("t", text, true, 2.0);
        assert_eq!(o.executions, Some(5000));
        assert_eq!(o.coverage.as_deref(), Some("cov 20, corp 5/90b"));
        assert!(o.crash.is_none());
    }

    #[test]
    fn reads_a_crash() {
        let text = "#10\tNEW    cov: 10 ft: 12 corp: 3/40b exec/s: 0 rss: 30Mb\n\
                    thread '<unnamed>' panicked at fuzz_targets/x.rs:3:5:\nboom\n\
                    ==1== ERROR: libFuzzer: deadly signal\n\
                    artifact_prefix='a/'; Test unit written to fuzz/artifacts/t/crash-abc\n\
                    stat::number_of_executed_units: 11\n";
        let o = parse_run("t", text, false, 1.0);
        assert_eq!(o.executions, Some(11));
        let (reason, artifact) = o.crash.expect("a crash");
        assert!(reason.contains("panicked at fuzz_targets/x.rs"), "{reason}");
        assert_eq!(artifact.as_deref(), Some("fuzz/artifacts/t/crash-abc"));
    }

    #[test]
    fn every_target_has_seeds() {
        // The loaders share the models; every other target its own folder.
        for target in LOADERS {
            assert!(seeds(target).is_dir(), "{}", seeds(target).display());
        }
        let manifest = fs::read_to_string(util::root().join("fuzz").join("Cargo.toml")).unwrap();
        let names: Vec<&str> = manifest
            .lines()
            .filter_map(|l| l.trim().strip_prefix("name = \""))
            .filter_map(|l| l.strip_suffix('"'))
            .filter(|n| *n != "qneon-fuzz")
            .collect();
        assert!(names.len() >= 10, "{names:?}");
        for name in names {
            let dir = seeds(name);
            let files = fs::read_dir(&dir).map(|d| d.count()).unwrap_or(0);
            assert!(files > 0, "no seeds for {name} in {}", dir.display());
        }
    }
}
