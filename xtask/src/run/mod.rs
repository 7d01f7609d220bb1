//! `cargo xtask run`: the MobileBert layer runner under qemu, with the
//! guest instructions of every op.
//!
//! The main job builds the instruction-count plugin (`tools/qemu-insn/`) and
//! `qneon-mobilebert` for aarch64 (release), then runs the layer once per
//! configuration (softmax method x backend) under `qemu-aarch64 -cpu max`
//! with the plugin, two qemu processes at a time. Ops are counted by
//! *marked regions*, not by differencing runs: the runner brackets each op
//! with a marker instruction (`cli/src/bin/qneon-mobilebert/marker.rs`) and the
//! plugin attributes every executed instruction to the region current when
//! it ran, exactly, in one run. Region ids are the op ids of the runner's
//! JSON; region 0 is everything outside the ops (loading the model, set-up,
//! I/O), reported apart from the layer total.
//!
//! Each configuration gets a table (op, calls, work, instructions,
//! instructions per MAC or element, share of the layer), the layer total
//! against the bound `2 * MACs / 16`, the softmax share against its target
//! and the runner's accuracy and checksum; then a summary over all
//! configurations. Runs with the same softmax method must print the same
//! checksum (backends are bit-exact); a mismatch fails the command after the
//! report is written. Output: `target/run/profile.json` and
//! `target/run/profile.md`; `--readme` rewrites README.md between the run
//! markers from `profile.json` without measuring.

#[cfg(test)]
mod fixtures;
mod profile;
mod regions;
mod report;
mod runner;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use crate::util::{self, bail, thousands, Result};
use crate::{plugin, setup};
use profile::Profile;
use regions::Regions;
use report::Report;
use runner::{RunnerReport, BIN};

/// The layer and its input, relative to the workspace root.
const MODEL: &str = "models/mobilebert_layer.qnb";
const INPUT: &str = "models/mobilebert_layer.input.bin";

pub const README_BEGIN: &str = "<!-- run:begin -->";
pub const README_END: &str = "<!-- run:end -->";

/// The configurations run by default, as (backend, softmax method): every
/// method on NEON, and scalar FixedPoint for contrast.
const DEFAULT_CONFIGS: [(&str, &str); 4] = [
    ("neon", "lut"),
    ("neon", "fixed"),
    ("neon", "f32"),
    ("scalar", "fixed"),
];
/// Added by `--all`.
const MORE_CONFIGS: [(&str, &str); 2] = [("scalar", "lut"), ("scalar", "f32")];

/// qemu processes at a time (the machine is shared).
const JOBS: usize = 2;

#[derive(Debug, Default, PartialEq, Eq)]
struct Options {
    all: bool,
    readme: bool,
}

fn parse(args: &[String]) -> Result<Options> {
    let mut opts = Options::default();
    for arg in args {
        match arg.as_str() {
            "--all" => opts.all = true,
            "--readme" => opts.readme = true,
            other => bail!("run: unknown option `{other}` (accepted: --all, --readme)"),
        }
    }
    if opts.readme && opts.all {
        bail!(
            "run: --readme only rewrites the README from profile.json; run the measurement first"
        );
    }
    Ok(opts)
}

pub fn cli(args: &[String]) -> Result {
    let opts = parse(args)?;
    if opts.readme {
        return update_readme();
    }
    let configs: Vec<(&str, &str)> = DEFAULT_CONFIGS
        .iter()
        .chain(if opts.all { &MORE_CONFIGS[..] } else { &[] })
        .copied()
        .collect();
    for file in [MODEL, INPUT] {
        if !util::root().join(file).is_file() {
            bail!("run: {file} not found (the layer model and its input are read from models/)");
        }
    }
    setup::ensure(false)?;
    let plugin = plugin::insn_plugin()?;
    let binary = util::build_aarch64_release(BIN)?;
    main_job(&binary, &plugin, &configs)
}

fn run_dir() -> PathBuf {
    util::target_dir().join("run")
}

// ---- Running. ----

/// Runs one configuration under qemu with the plugin and reads both outputs.
fn measure(
    binary: &Path,
    plugin: &Path,
    runs: &Path,
    backend: &str,
    softmax: &str,
) -> Result<Profile> {
    let stem = format!("{backend}-{softmax}");
    let json_file = runs.join(format!("{stem}.json"));
    let count_file = runs.join(format!("{stem}.insn"));
    let _ = fs::remove_file(&json_file);
    let stdout = util::capture(
        plugin::qemu_command(plugin, &count_file, binary)?
            .args([
                "--model",
                MODEL,
                "--input",
                INPUT,
                "--softmax",
                softmax,
                "--backend",
                backend,
                "--json",
            ])
            .arg(&json_file)
            .current_dir(util::root()),
    )?;
    write(&runs.join(format!("{stem}.out")), &stdout)?;
    let read = |p: &Path| fs::read_to_string(p).map_err(|e| format!("{}: {e}", p.display()));
    let runner = RunnerReport::from_json(&serde_json::from_str(&read(&json_file)?)?)?;
    if runner.backend != backend || runner.softmax != softmax {
        bail!(
            "asked {BIN} for {backend} {softmax}, its JSON says {} {}",
            runner.backend,
            runner.softmax
        );
    }
    Profile::new(runner, Regions::parse(&read(&count_file)?)?)
}

fn main_job(binary: &Path, plugin: &Path, configs: &[(&str, &str)]) -> Result {
    let started = Instant::now();
    let dir = run_dir();
    let runs = dir.join("runs");
    fs::create_dir_all(&runs).map_err(|e| format!("{}: {e}", runs.display()))?;
    util::step(format!(
        "running {} configurations of {BIN} under qemu with the instruction-count plugin, {JOBS} at a time",
        configs.len()
    ));

    let profiles = util::parallel(configs, JOBS, "run(s)", |_, &(backend, softmax)| {
        let t0 = Instant::now();
        let result = measure(binary, plugin, &runs, backend, softmax).map_err(|e| e.to_string());
        match &result {
            Ok(p) => eprintln!(
                "{backend} {softmax}: layer {} instructions, softmax {:.1}% ({:.0} s)",
                thousands(p.layer()),
                p.share(p.softmax_insns()),
                t0.elapsed().as_secs_f64()
            ),
            Err(e) => eprintln!("{backend} {softmax}: FAILED: {e}"),
        }
        result
    })?;

    let qemu = util::capture(Command::new("qemu-aarch64").arg("--version"))?
        .lines()
        .next()
        .unwrap_or("qemu-aarch64")
        .trim()
        .to_string();
    let report = Report { qemu, profiles };
    let json_path = dir.join("profile.json");
    let md_path = dir.join("profile.md");
    let md = report.markdown();
    write(
        &json_path,
        &(serde_json::to_string_pretty(&report.to_json())? + "\n"),
    )?;
    write(&md_path, &md)?;
    println!("{md}");
    println!(
        "wrote {} and {} in {:.0} s (`cargo xtask run --readme` puts them in README.md)",
        json_path.display(),
        md_path.display(),
        started.elapsed().as_secs_f64()
    );
    let mismatches = report.checksum_mismatches();
    if !mismatches.is_empty() {
        bail!(
            "checksum mismatch (backends must be bit-exact):\n  {}",
            mismatches.join("\n  ")
        );
    }
    Ok(())
}

/// `--readme`: the README section from profile.json.
fn update_readme() -> Result {
    let json_path = run_dir().join("profile.json");
    let text = fs::read_to_string(&json_path)
        .map_err(|e| format!("{}: {e} (run `cargo xtask run` first)", json_path.display()))?;
    let report = Report::from_json(&serde_json::from_str(&text)?)?;
    let readme_path = util::root().join("README.md");
    let readme =
        fs::read_to_string(&readme_path).map_err(|e| format!("{}: {e}", readme_path.display()))?;
    write(&readme_path, &replace_section(&readme, &report.markdown())?)?;
    println!(
        "rewrote the run section of {} from {}",
        readme_path.display(),
        json_path.display()
    );
    Ok(())
}

/// `readme` with the text between the run markers replaced by `section`.
fn replace_section(readme: &str, section: &str) -> Result<String> {
    util::replace_between(readme, README_BEGIN, README_END, section)
}

fn write(path: &Path, text: &str) -> Result {
    fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()).into())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(args: &[&str]) -> Vec<String> {
        args.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn parses_options() {
        assert_eq!(parse(&[]).unwrap(), Options::default());
        assert!(parse(&strings(&["--all"])).unwrap().all);
        assert!(parse(&strings(&["--readme"])).unwrap().readme);
        assert!(parse(&strings(&["--readme", "--all"])).is_err());
        assert!(parse(&strings(&["--seq", "128"])).is_err());
    }

    #[test]
    fn rewrites_readme_section() {
        let readme = "# t\n\nintro\n<!-- run:begin -->\nold\ntable\n<!-- run:end -->\nafter\n";
        assert_eq!(
            replace_section(readme, "new\n\n").unwrap(),
            "# t\n\nintro\n<!-- run:begin -->\nnew\n<!-- run:end -->\nafter\n"
        );
        // Idempotent.
        let once = replace_section(readme, "new").unwrap();
        assert_eq!(replace_section(&once, "new").unwrap(), once);
        // The bench markers are someone else's.
        let bench = "<!-- bench:begin -->\nx\n<!-- bench:end -->\n";
        assert_eq!(
            replace_section(&format!("{bench}{readme}"), "new").unwrap(),
            format!("{bench}# t\n\nintro\n<!-- run:begin -->\nnew\n<!-- run:end -->\nafter\n")
        );
        assert!(replace_section("no markers\n", "x").is_err());
        assert!(replace_section("<!-- run:begin -->\nx\n", "x").is_err());
        assert!(replace_section("<!-- run:end -->\n<!-- run:begin -->\n", "x").is_err());
        assert!(replace_section(&format!("{readme}{readme}"), "x").is_err());
    }
}
