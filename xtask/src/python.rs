//! `cargo xtask python`: the Python package (`python/`): its wheels for
//! x86_64 and aarch64, and its pytest suite on the host and under qemu.
//!
//! * `build`: `maturin build --release` for the host and, cross-built with
//!   the aarch64 gcc, for aarch64 (abi3: no target interpreter needed),
//!   into `target/python/wheels/`;
//! * `test`: the wheels, then `python/tests` on the host (the venv's
//!   Python, the host wheel installed in it, `ai_edge_litert` beside it for
//!   the comparisons) and on aarch64 under `qemu-aarch64 -cpu neoverse-n1`
//!   with the arm64 Python of `cargo xtask compare --setup` (numpy and
//!   `ai_edge_litert` for aarch64), pytest and the aarch64 wheel unzipped
//!   into `target/python/aarch64-site/` as plain files on `PYTHONPATH`.
//!
//! The tools live in a venv, `target/python/venv`, made by [`ensure_venv`]
//! (`cargo xtask setup` calls it) with the pinned [`VENV_PACKAGES`].

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::compare::{cpuinfo, measure, sysroot};
use crate::counts::Counts;
use crate::util::{self, bail, Result, TARGET};

/// The venv's packages, pinned: the wheel builder, the test runner, and
/// the runtime the tests compare with (the version of the committed
/// references, with the numpy the aarch64 site has).
pub const VENV_PACKAGES: &[&str] = &[
    "maturin==1.9.6",
    "pytest==8.4.2",
    "numpy==2.2.6",
    "ai-edge-litert==2.3.0",
];

/// pytest and its pure-Python dependencies for the arm64 Python, pinned
/// (the venv's pip installs them as files: nothing to build).
const AARCH64_SITE_PACKAGES: &[&str] = &[
    "pytest==8.4.2",
    "iniconfig==2.3.1",
    "packaging==26.4",
    "pluggy==1.7.0",
    "pygments==2.21.0",
];

/// The `-cpu` of the aarch64 run (LiteRT's aarch64 references were made
/// under it; `max` would let XNNPACK pick SME kernels).
const CPU: &str = "neoverse-n1";

fn base() -> PathBuf {
    util::target_dir().join("python")
}

fn venv() -> PathBuf {
    base().join("venv")
}

fn venv_python() -> PathBuf {
    venv().join("bin/python")
}

fn wheels() -> PathBuf {
    base().join("wheels")
}

fn crate_dir() -> PathBuf {
    util::root().join("python")
}

/// The Python package's manifest: its own workspace (and lockfile).
pub fn manifest() -> PathBuf {
    crate_dir().join("Cargo.toml")
}

/// RUSTFLAGS of the aarch64 wheel's build. The workspace links aarch64
/// binaries statically (`.cargo/config.toml`); an extension module is a
/// shared library, which needs the C library dynamically. RUSTFLAGS replaces
/// the configured flags.
pub const AARCH64_RUSTFLAGS: &str = "-C target-feature=-crt-static";

pub fn cli(args: &[String]) -> Result {
    let (command, flags) = match args.split_first() {
        Some((c, rest)) => (c.as_str(), rest),
        None => bail!("python: expected `build` or `test` ([--host])"),
    };
    let mut host_only = false;
    for flag in flags {
        match flag.as_str() {
            "--host" => host_only = true,
            other => bail!("python: unknown option `{other}` (accepted: --host)"),
        }
    }
    match command {
        "build" => {
            ensure_venv()?;
            build_wheels(host_only).map(|_| ())
        }
        "test" => {
            let counts = check(host_only);
            println!("{} passed, {} failed", counts.passed, counts.failed);
            if counts.failed > 0 {
                return Err(util::Reported.into());
            }
            Ok(())
        }
        other => bail!("python: unknown command `{other}` (build, test)"),
    }
}

/// Makes `target/python/venv` with [`VENV_PACKAGES`] unless its marker
/// says it has them.
pub fn ensure_venv() -> Result {
    let marker = venv().join("qneon-packages.txt");
    let wanted = VENV_PACKAGES.join("\n");
    if venv_python().is_file() && fs::read_to_string(&marker).ok().as_deref() == Some(&wanted) {
        return Ok(());
    }
    let Some(python) = util::which("python3") else {
        bail!("python: no python3 on PATH (Debian: apt-get install python3 python3-venv)");
    };
    util::step(format!("making the Python venv {}", venv().display()));
    util::run(Command::new(python).arg("-m").arg("venv").arg(venv()))?;
    util::run(pip_install().args(VENV_PACKAGES))?;
    fs::write(marker, wanted)?;
    Ok(())
}

/// `pip install` of the venv's Python, quiet; the caller adds what to
/// install and how.
fn pip_install() -> Command {
    let mut cmd = Command::new(venv_python());
    cmd.args([
        "-m",
        "pip",
        "install",
        "--quiet",
        "--disable-pip-version-check",
    ]);
    cmd
}

/// The wheels' paths: the host's, then (unless `host_only`) aarch64's.
fn build_wheels(host_only: bool) -> Result<Vec<PathBuf>> {
    let out = wheels();
    let _ = fs::remove_dir_all(&out);
    fs::create_dir_all(&out)?;
    let mut built = Vec::new();
    let targets: &[Option<&str>] = if host_only {
        &[None]
    } else {
        &[None, Some(TARGET)]
    };
    for target in targets {
        let mut cmd = Command::new(venv().join("bin/maturin"));
        cmd.current_dir(crate_dir())
            .args(["build", "--release", "--out"])
            .arg(&out)
            // One target directory for the workspace and the package: the
            // library and runtime builds are shared.
            .env("CARGO_TARGET_DIR", util::target_dir());
        match target {
            None => {
                cmd.arg("--interpreter").arg(venv_python());
            }
            Some(target) => {
                cmd.args(["--target", target])
                    .env("RUSTFLAGS", AARCH64_RUSTFLAGS);
            }
        }
        let before: Vec<PathBuf> = list_wheels(&out)?;
        util::run(&mut cmd)?;
        let new: Vec<PathBuf> = list_wheels(&out)?
            .into_iter()
            .filter(|w| !before.contains(w))
            .collect();
        match new.as_slice() {
            [wheel] => built.push(wheel.clone()),
            other => bail!("python: maturin made {} wheels, expected one", other.len()),
        }
    }
    Ok(built)
}

fn list_wheels(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut wheels = Vec::new();
    for entry in fs::read_dir(dir)? {
        let path = entry?.path();
        if path.extension().is_some_and(|e| e == "whl") {
            wheels.push(path);
        }
    }
    Ok(wheels)
}

/// `cargo xtask test`'s Python part: builds the wheels and runs pytest on
/// the host and (unless `host_only`) under qemu; one failure for a step
/// that could not run.
pub fn check(host_only: bool) -> Counts {
    let mut counts = Counts::default();
    let wheels = match ensure_venv().and_then(|()| build_wheels(host_only)) {
        Ok(wheels) => wheels,
        Err(e) => {
            println!("python: building the wheels ... FAILED: {e}");
            counts.failed += 1;
            return counts;
        }
    };
    println!("python: wheels: {}", names(&wheels));
    match host_pytest(&wheels[0]) {
        Ok(c) => counts.add(c),
        Err(e) => {
            println!("python: host pytest ... FAILED: {e}");
            counts.failed += 1;
        }
    }
    if !host_only {
        match aarch64_pytest(&wheels[1]) {
            Ok(c) => counts.add(c),
            Err(e) => {
                println!("python: aarch64 pytest (qemu) ... FAILED: {e}");
                counts.failed += 1;
            }
        }
    }
    counts
}

fn names(paths: &[PathBuf]) -> String {
    paths
        .iter()
        .filter_map(|p| p.file_name()?.to_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// pytest's arguments: the suite, quiet, no cache files in the tree.
fn pytest_args(cmd: &mut Command) {
    cmd.args(["-m", "pytest", "-q", "-p", "no:cacheprovider"])
        .arg(crate_dir().join("tests"))
        // From the repository root: `python/` on sys.path would shadow the
        // installed package with its sources (no extension module there).
        .current_dir(util::root());
}

fn host_pytest(wheel: &Path) -> Result<Counts> {
    util::run(
        pip_install()
            .args(["--force-reinstall", "--no-deps"])
            .arg(wheel),
    )?;
    let mut cmd = Command::new(venv_python());
    pytest_args(&mut cmd);
    run_pytest(&mut cmd, "host")
}

fn aarch64_pytest(wheel: &Path) -> Result<Counts> {
    let layout = sysroot::ensure()?;
    let root = cpuinfo::root_for(&layout, CPU)?;
    let site = base().join("aarch64-site");
    let marker = site.join("qneon-packages.txt");
    let wanted = AARCH64_SITE_PACKAGES.join("\n");
    if fs::read_to_string(&marker).ok().as_deref() != Some(&wanted) {
        let _ = fs::remove_dir_all(&site);
        util::run(
            pip_install()
                .args(["--no-deps", "--target"])
                .arg(&site)
                .args(AARCH64_SITE_PACKAGES),
        )?;
        fs::write(&marker, &wanted)?;
    }
    // The wheel is a zip of the package: unzipped, it is installed.
    let package = base().join("aarch64-qneon");
    let _ = fs::remove_dir_all(&package);
    fs::create_dir_all(&package)?;
    util::run(
        Command::new(venv_python())
            .args(["-m", "zipfile", "-e"])
            .arg(wheel)
            .arg(&package),
    )?;
    let mut cmd = measure::python_command(&layout, &root, CPU);
    let path = std::env::join_paths([package, site, layout.site()])?;
    cmd.env("PYTHONPATH", path)
        .env("QNEON_PYTEST_EMULATED", "1");
    pytest_args(&mut cmd);
    run_pytest(&mut cmd, "aarch64 (qemu)")
}

/// Runs pytest, streaming its output, and reads its closing line.
fn run_pytest(cmd: &mut Command, on: &str) -> Result<Counts> {
    let (status, output) = util::tee(cmd)?;
    let counts = pytest_counts(&output);
    println!(
        "python: pytest {on}: {} passed, {} failed",
        counts.passed, counts.failed
    );
    if counts.passed == 0 && counts.failed == 0 {
        bail!("pytest ({on}) ran no test ({status})");
    }
    if !status.success() && counts.failed == 0 {
        bail!("pytest ({on}) failed without a failing test ({status})");
    }
    Ok(counts)
}

/// The passed and failed (and errors, as failures) of pytest's closing
/// line: `== 3 failed, 640 passed, 3 skipped in 95.1s ==` (or without the
/// rules, with `-q`).
fn pytest_counts(output: &str) -> Counts {
    let mut counts = Counts::default();
    let Some(line) = output
        .lines()
        .rev()
        .find(|l| l.contains(" in ") && (l.contains("passed") || l.contains("failed")))
    else {
        return counts;
    };
    let line = line.trim().trim_matches('=').trim();
    let line = line.split(" in ").next().unwrap_or("");
    for field in line.split(',') {
        let mut words = field.split_whitespace();
        let (Some(n), Some(word)) = (words.next(), words.next()) else {
            continue;
        };
        let Ok(n) = n.parse::<u64>() else { continue };
        match word {
            "passed" => counts.passed += n,
            "failed" | "error" | "errors" => counts.failed += n,
            _ => {}
        }
    }
    counts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pytest_closing_lines_are_read() {
        let c = pytest_counts("....\n3 failed, 640 passed, 3 skipped in 95.12s\n");
        assert_eq!((c.passed, c.failed), (640, 3));
        let c = pytest_counts("===== 12 passed, 1 error in 0.50s =====");
        assert_eq!((c.passed, c.failed), (12, 1));
        let c = pytest_counts("no tests ran in 0.01s");
        assert_eq!((c.passed, c.failed), (0, 0));
    }
}
