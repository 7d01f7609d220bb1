//! The C API's header and example.
//!
//! `cargo xtask capi-header` writes the C API's per-type functions from
//! `qneon::catalogue` (see `capi_gen.rs`), then `capi/include/qneon.h` from
//! the `qneon-capi` sources with cbindgen (settings in `capi/cbindgen.toml`).
//! The header is committed and generated here, not in a build script, so
//! that building the library, the C API or anything else never compiles
//! cbindgen; `cargo xtask capi` (one part of `cargo xtask test`) fails when
//! the committed header is stale.
//!
//! `cargo xtask capi` checks, each one test:
//! * the committed generated sources equal a fresh generation;
//! * the committed header equals a fresh generation;
//! * `capi/examples/softmax.c`, compiled with `cc` against the host static
//!   library, prints the bytes the Rust library computes for the same input
//!   (every method it prints);
//! * `capi/examples/ops.c` (add, sub, mul, NoNorm, GEMM, matmul, the float
//!   kernels, cross-entropy) likewise, every output line to the bit (see
//!   `capi_ops.rs`);
//! * both programs compiled with `aarch64-linux-gnu-gcc` against the
//!   aarch64 static library, run under `qemu-aarch64 -cpu max` (skipped with
//!   `--host`).

use std::path::{Path, PathBuf};
use std::process::Command;

use qneon::{Method, QuantParams, Softmax};

use crate::counts::Counts;
use crate::util::{self, bail, Result, TARGET};

const HEADER: &str = "capi/include/qneon.h";
const EXAMPLE: &str = "capi/examples/softmax.c";
const OPS_EXAMPLE: &str = "capi/examples/ops.c";

/// `cargo xtask capi-header`: the generated sources, then the header.
pub fn header_cli(args: &[String]) -> Result {
    if let Some(a) = args.first() {
        bail!("capi-header: unknown option `{a}` (it takes none)");
    }
    for path in crate::capi_gen::write_all()? {
        println!("wrote {path}");
    }
    let text = generate_header()?;
    std::fs::write(util::root().join(HEADER), text)?;
    println!("wrote {HEADER}");
    Ok(())
}

/// `cargo xtask capi [--host]`.
pub fn cli(args: &[String]) -> Result {
    let mut host_only = false;
    for a in args {
        match a.as_str() {
            "--host" => host_only = true,
            other => bail!("capi: unknown option `{other}` (accepted: --host)"),
        }
    }
    let counts = check(host_only);
    println!("{} passed, {} failed", counts.passed, counts.failed);
    if counts.failed == 0 {
        Ok(())
    } else {
        Err(util::Reported.into())
    }
}

/// Every check, each counted as one test; failures are printed as they come.
pub fn check(host_only: bool) -> Counts {
    let mut counts = Counts::default();
    let mut record = |name: &str, r: Result| match r {
        Ok(()) => {
            println!("capi: {name} ... ok");
            counts.passed += 1;
        }
        Err(e) => {
            println!("capi: {name} ... FAILED: {e}");
            counts.failed += 1;
        }
    };
    record(
        "generated sources are current",
        crate::capi_gen::check_current(),
    );
    record("header is current", header_is_current());
    for aarch64 in [false, true] {
        if aarch64 && host_only {
            continue;
        }
        let on = if aarch64 { "aarch64 (qemu)" } else { "host" };
        // Built once for both programs; a failure fails both.
        let built = build_library(aarch64).map_err(|e| e.to_string());
        let softmax = built
            .clone()
            .map_err(Into::into)
            .and_then(|()| example(aarch64, EXAMPLE, "softmax"))
            .and_then(|(stdout, exe)| compare(&stdout, &exe));
        record(&format!("C example softmax.c, {on}"), softmax);
        let ops = built
            .map_err(Into::into)
            .and_then(|()| example(aarch64, OPS_EXAMPLE, "ops"))
            .and_then(|(stdout, exe)| {
                let lines = crate::capi_ops::compare(&stdout)
                    .map_err(|e| format!("{}: {e}", exe.display()))?;
                println!(
                    "capi: {} matches the library on {lines} outputs",
                    exe.display()
                );
                Ok(())
            });
        record(&format!("C example ops.c, {on}"), ops);
    }
    counts
}

fn generate_header() -> Result<String> {
    let crate_dir = util::root().join("capi");
    let config = cbindgen::Config::from_file(crate_dir.join("cbindgen.toml"))?;
    let bindings = cbindgen::Builder::new()
        .with_crate(&crate_dir)
        .with_config(config)
        .generate()?;
    let mut out = Vec::new();
    bindings.write(&mut out);
    Ok(String::from_utf8(out)?)
}

fn header_is_current() -> Result {
    let fresh = generate_header()?;
    let committed = std::fs::read_to_string(util::root().join(HEADER))?;
    if fresh != committed {
        bail!("{HEADER} is stale: run `cargo xtask capi-header` and commit it");
    }
    Ok(())
}

/// Builds the static library for the host or aarch64.
fn build_library(aarch64: bool) -> Result {
    let mut build = util::cargo(["build", "-p", "qneon-capi", "--lib"]);
    if aarch64 {
        // The static library only: the target's `crt-static` (see
        // .cargo/config.toml) rules out the cdylib, which rustc would drop
        // with a warning.
        build = util::cargo([
            "rustc",
            "-p",
            "qneon-capi",
            "--lib",
            "--crate-type",
            "staticlib",
        ]);
        build.args(["--target", TARGET]);
    }
    util::run(&mut build)
}

/// Compiles the example `source` for the host or aarch64 against the static
/// library [`build_library`] made, runs it, and returns its standard output
/// and the program's path.
fn example(aarch64: bool, source: &str, name: &str) -> Result<(String, PathBuf)> {
    let lib_dir = if aarch64 {
        util::target_dir().join(TARGET).join("debug")
    } else {
        util::target_dir().join("debug")
    };
    let exe = util::target_dir().join("capi").join(format!(
        "{name}-{}",
        if aarch64 { "aarch64" } else { "host" }
    ));
    std::fs::create_dir_all(exe.parent().unwrap())?;
    let mut cc = Command::new(if aarch64 {
        "aarch64-linux-gnu-gcc"
    } else {
        "cc"
    });
    if aarch64 {
        // Static, like the crate's other aarch64 binaries: runs under qemu
        // without an aarch64 sysroot.
        cc.arg("-static");
    }
    cc.args(["-std=c99", "-Wall", "-Wextra", "-Werror", "-O1"])
        .arg("-I")
        .arg(util::root().join("capi/include"))
        .arg(util::root().join(source))
        .arg(lib_dir.join("libqneon_capi.a"))
        .args(["-lpthread", "-ldl", "-lm", "-o"])
        .arg(&exe);
    util::run(&mut cc)?;
    let mut run = if aarch64 {
        let mut q = Command::new("qemu-aarch64");
        q.args(["-cpu", "max"]).arg(&exe);
        q
    } else {
        Command::new(&exe)
    };
    let stdout = util::capture(&mut run)?;
    Ok((stdout, exe))
}

/// Parses the example's lines and checks each method's bytes.
fn compare(stdout: &str, exe: &Path) -> Result {
    let line = |name: &str| -> Result<&str> {
        let prefix = format!("{name}:");
        match stdout.lines().find_map(|l| l.strip_prefix(prefix.as_str())) {
            Some(rest) => Ok(rest),
            None => bail!("{}: no `{name}:` line in its output", exe.display()),
        }
    };
    let params: Vec<&str> = line("params")?.split_whitespace().collect();
    let [scale, zero_point, beta, row] = params[..] else {
        bail!("params line: expected scale, zero point, beta, row length");
    };
    let input_q = QuantParams::new(scale.parse()?, zero_point.parse()?);
    let beta: f32 = beta.parse()?;
    let input = bytes(line("input")?)?;
    if input.is_empty() {
        bail!("the example printed no input");
    }
    let row: usize = row.parse()?;
    let mut compared = 0;
    for (name, method) in [
        ("fixed", Method::FixedPoint),
        ("lut", Method::Lut),
        ("f32", Method::DequantF32),
    ] {
        let got = bytes(line(name)?)?;
        let op = Softmax::<i8>::new(input_q, beta, Softmax::<i8>::output_quantization(), method)?;
        let mut want = vec![0i8; input.len()];
        op.run(&input, &mut want, row)?;
        if got != want {
            let first = got.iter().zip(&want).position(|(a, b)| a != b);
            bail!(
                "{name}: C output differs from the Rust library's (lengths {} and {}, first \
                 difference at {first:?})",
                got.len(),
                want.len()
            );
        }
        compared += 1;
    }
    println!(
        "capi: {} matches the library on {compared} methods",
        exe.display()
    );
    Ok(())
}

/// Space-separated two-digit hex bytes.
fn bytes(text: &str) -> Result<Vec<i8>> {
    text.split_whitespace()
        .map(|h| Ok(u8::from_str_radix(h, 16)? as i8))
        .collect()
}
