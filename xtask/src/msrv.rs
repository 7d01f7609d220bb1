//! `cargo xtask msrv`: the workspace built with the oldest toolchain it
//! claims to support.
//!
//! The claim is `rust-version` in the workspace `Cargo.toml` (every crate
//! inherits it). This command installs that toolchain with rustup if it is
//! missing (minimal profile and `rustfmt`, which the `.tflite` reader's
//! build script needs), builds the library in its default features and
//! checks every crate and target of the workspace with it, against the
//! committed lockfile, in `target/msrv` (so the usual build is untouched).

use std::process::Command;

use crate::util::{self, bail, Result};

pub fn cli(args: &[String]) -> Result {
    if let Some(other) = args.first() {
        bail!("msrv: unknown option `{other}` (it takes none)");
    }
    let manifest = util::root().join("Cargo.toml");
    let text =
        std::fs::read_to_string(&manifest).map_err(|e| format!("{}: {e}", manifest.display()))?;
    let version = rust_version(&text)
        .ok_or_else(|| format!("{}: no `rust-version = \"...\"` line", manifest.display()))?;
    ensure_toolchain(&version)?;
    let target_dir = util::target_dir().join("msrv");
    let toolchain = format!("+{version}");
    for args in [
        &["build", "-p", "qneon", "--lib"][..],
        &["check", "--workspace", "--all-targets"][..],
    ] {
        util::step(format!("cargo {toolchain} {}", args.join(" ")));
        util::run(
            Command::new("cargo")
                .arg(&toolchain)
                .args(args)
                .arg("--locked")
                .arg("--target-dir")
                .arg(&target_dir)
                .current_dir(util::root())
                // The outer cargo's choice of toolchain must not leak in.
                .env_remove("RUSTUP_TOOLCHAIN")
                .env_remove("CARGO")
                .env_remove("RUSTC"),
        )?;
    }
    println!("rust-version {version}: the library builds and the workspace checks");
    Ok(())
}

/// The `rust-version = "X.Y"` value of a manifest (the first one: the
/// workspace's, which every crate inherits).
fn rust_version(manifest: &str) -> Option<String> {
    manifest.lines().find_map(|line| {
        let value = line.trim().strip_prefix("rust-version")?.trim_start();
        let value = value.strip_prefix('=')?.trim();
        let value = value.strip_prefix('"')?.strip_suffix('"')?;
        Some(value.to_string())
    })
}

/// Installs `version` with rustup unless it is there, with `rustfmt`: the
/// `.tflite` reader's build script generates its FlatBuffers code with
/// planus, which formats it with the toolchain's `rustfmt`.
fn ensure_toolchain(version: &str) -> Result {
    if util::which("rustup").is_none() {
        bail!("msrv: rustup is needed to install Rust {version}");
    }
    let installed = util::capture(Command::new("rustup").args(["toolchain", "list"]))?;
    if !installed
        .lines()
        .any(|l| l.starts_with(&format!("{version}-")))
    {
        eprintln!("msrv: installing Rust {version} (minimal profile, with rustfmt)");
        return util::run(Command::new("rustup").args([
            "toolchain",
            "install",
            version,
            "--profile",
            "minimal",
            "--component",
            "rustfmt",
        ]));
    }
    let components = util::capture(Command::new("rustup").args([
        "component",
        "list",
        "--installed",
        "--toolchain",
        version,
    ]))?;
    if components.lines().any(|l| l.starts_with("rustfmt")) {
        return Ok(());
    }
    eprintln!("msrv: adding rustfmt to Rust {version}");
    util::run(Command::new("rustup").args(["component", "add", "rustfmt", "--toolchain", version]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_workspace_rust_version() {
        let manifest = "[package]\nname = \"x\"\nrust-version.workspace = true\n\n\
                        [workspace.package]\nedition = \"2021\"\nrust-version = \"1.93\"\n";
        assert_eq!(rust_version(manifest).as_deref(), Some("1.93"));
        assert_eq!(rust_version("rust-version = 1.93\n"), None);
        assert_eq!(rust_version("[package]\nname = \"x\"\n"), None);
    }

    #[test]
    fn the_committed_manifest_states_one() {
        let text = std::fs::read_to_string(util::root().join("Cargo.toml")).unwrap();
        let version = rust_version(&text).expect("rust-version in Cargo.toml");
        let mut parts = version.split('.');
        assert!(parts.all(|p| p.parse::<u32>().is_ok()), "{version}");
    }
}
