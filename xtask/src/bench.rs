//! `cargo xtask bench`: build `qneon-bench` for aarch64 and run it under qemu.
//!
//! Wall-clock numbers under qemu say little about real hardware; `--insn`
//! adds an exact, repeatable guest instruction count from the qemu-insn
//! plugin.

use std::path::PathBuf;
use std::process::Command;

use crate::util::{self, bail, Result, TARGET};
use crate::{plugin, setup};

const BIN: &str = "qneon-bench";

#[derive(Debug, Default, PartialEq, Eq)]
struct Options {
    /// Count guest instructions with the qemu-insn plugin.
    insn: bool,
    /// Passed through to `qneon-bench`.
    bench_args: Vec<String>,
}

fn parse(args: &[String]) -> Result<Options> {
    let mut opts = Options::default();
    let mut iter = args.iter();
    for arg in iter.by_ref() {
        match arg.as_str() {
            "--insn" => opts.insn = true,
            "--" => break,
            other => bail!(
                "bench: unknown option `{other}` (accepted: --insn, and \
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
