//! `cargo xtask setup`: make sure the cross toolchain is installed.
//!
//! Checks for the Rust aarch64 targets (Linux, and bare metal for the
//! `no_std` builds), the aarch64 gcc/binutils/libc, qemu
//! user mode and a host C compiler (for the qemu-insn plugin), and installs
//! what is missing with rustup and apt-get. Other commands call [`ensure`].

use std::path::Path;
use std::process::Command;

use crate::util::{self, bail, Result, BARE_METAL_TARGET, TARGET};

/// The static musl target for `qneon-bench`: added when rustup can, never
/// required (everything else uses [`TARGET`]).
const MUSL_TARGET: &str = "aarch64-unknown-linux-musl";

/// Something we need on the machine, and the Debian package providing it.
struct Tool {
    what: &'static str,
    package: &'static str,
    present: fn() -> bool,
}

const TOOLS: &[Tool] = &[
    Tool {
        what: "aarch64-linux-gnu-gcc (cross linker)",
        package: "gcc-aarch64-linux-gnu",
        present: || util::which("aarch64-linux-gnu-gcc").is_some(),
    },
    Tool {
        what: "aarch64 glibc for static linking",
        package: "libc6-dev-arm64-cross",
        present: aarch64_libc_present,
    },
    Tool {
        what: "aarch64-linux-gnu-objdump (asm checks)",
        package: "binutils-aarch64-linux-gnu",
        present: || util::which("aarch64-linux-gnu-objdump").is_some(),
    },
    Tool {
        what: "qemu-aarch64 (test runner)",
        package: "qemu-user",
        present: || util::which("qemu-aarch64").is_some(),
    },
    Tool {
        what: "cc (builds the qemu-insn plugin)",
        package: "gcc",
        present: || util::which("cc").is_some(),
    },
];

const MCA: Tool = Tool {
    what: "llvm-mca-16 (optional pipeline analysis)",
    package: "llvm-16",
    present: || util::which("llvm-mca-16").is_some(),
};

pub fn cli(args: &[String]) -> Result {
    let mut mca = false;
    for arg in args {
        match arg.as_str() {
            "--mca" => mca = true,
            other => bail!("setup: unknown option `{other}` (only --mca is accepted)"),
        }
    }
    ensure(mca)
}

/// Installs whatever is missing; prints one line when nothing is.
pub fn ensure(mca: bool) -> Result {
    let added_target = ensure_rust_target()?;

    let missing: Vec<&Tool> = TOOLS
        .iter()
        .chain(mca.then_some(&MCA))
        .filter(|t| !(t.present)())
        .collect();
    if missing.is_empty() {
        if !added_target {
            eprintln!("setup: all tools present");
        }
        return Ok(());
    }

    let mut packages: Vec<&str> = missing.iter().map(|t| t.package).collect();
    packages.dedup();
    eprintln!("setup: missing:");
    for tool in &missing {
        eprintln!("  - {} (package {})", tool.what, tool.package);
    }
    apt_install(&packages)?;

    let still: Vec<&str> = missing
        .iter()
        .filter(|t| !(t.present)())
        .map(|t| t.what)
        .collect();
    if !still.is_empty() {
        bail!(
            "setup: still missing after installing {} (not on PATH?): {}",
            packages.join(" "),
            still.join(", ")
        );
    }
    eprintln!("setup: installed {}", packages.join(" "));
    Ok(())
}

/// The Rust targets every command may build for: aarch64 Linux (tests under
/// qemu, the binaries) and bare-metal aarch64 (the library's `no_std` builds).
const RUST_TARGETS: [&str; 2] = [TARGET, BARE_METAL_TARGET];

/// Adds the required Rust targets that are missing; returns whether it added any.
fn ensure_rust_target() -> Result<bool> {
    if util::which("rustup").is_none() {
        // A toolchain not managed by rustup may still ship the targets.
        let sysroot = util::capture(Command::new("rustc").args(["--print", "sysroot"]))?;
        for target in RUST_TARGETS {
            let lib = Path::new(sysroot.trim()).join("lib/rustlib").join(target);
            if !lib.is_dir() {
                bail!(
                    "setup: the Rust standard library for {target} is not installed and \
                     rustup is not available to add it; install rustup \
                     (then `rustup target add {target}`) or your toolchain's {target} std"
                );
            }
        }
        return Ok(false);
    }
    let mut list = Command::new("rustup");
    list.args(["target", "list", "--installed"])
        .current_dir(util::root());
    let installed = util::capture(&mut list)?;
    let has = |target: &str| installed.lines().any(|l| l.trim() == target);
    if !has(MUSL_TARGET) {
        add_musl_target();
    }
    let missing: Vec<&str> = RUST_TARGETS.into_iter().filter(|t| !has(t)).collect();
    if missing.is_empty() {
        return Ok(false);
    }
    eprintln!(
        "setup: Rust target(s) {} missing, adding them",
        missing.join(", ")
    );
    util::run(
        Command::new("rustup")
            .args(["target", "add"])
            .args(&missing)
            .current_dir(util::root()),
    )?;
    eprintln!("setup: added Rust target(s) {}", missing.join(", "));
    Ok(true)
}

/// Best effort: a failure (offline, a toolchain without musl) is reported
/// and otherwise ignored.
fn add_musl_target() {
    eprintln!("setup: adding Rust target {MUSL_TARGET} (optional: static qneon-bench)");
    let mut add = Command::new("rustup");
    add.args(["target", "add", MUSL_TARGET])
        .current_dir(util::root());
    if let Err(e) = util::capture(&mut add) {
        eprintln!("setup: could not add {MUSL_TARGET} (only the musl build needs it): {e}");
    }
}

fn aarch64_libc_present() -> bool {
    if Path::new("/usr/aarch64-linux-gnu/lib/libc.a").is_file() {
        return true;
    }
    let mut query = Command::new("dpkg-query");
    query.args(["-W", "-f=${Status}", "libc6-dev-arm64-cross"]);
    util::capture(&mut query).is_ok_and(|status| status.trim() == "install ok installed")
}

fn is_root() -> bool {
    util::capture(Command::new("id").arg("-u")).is_ok_and(|uid| uid.trim() == "0")
}

/// `apt-get install`, refreshing the package lists and retrying once if
/// the first attempt fails (lists missing or stale on a fresh machine).
fn apt_install(packages: &[&str]) -> Result {
    let mut install_args = vec!["install", "-y", "--no-install-recommends"];
    install_args.extend_from_slice(packages);
    let command = format!("apt-get update && apt-get {}", install_args.join(" "));

    if util::which("apt-get").is_none() {
        bail!(
            "setup: apt-get not found; install the equivalent of these Debian \
             packages with your package manager, then re-run: {}",
            packages.join(" ")
        );
    }
    if !is_root() {
        bail!(
            "setup: installing packages needs root; run\n\n    sudo sh -c '{command}'\n\n\
             then re-run this command"
        );
    }

    eprintln!("setup: installing {}", packages.join(" "));
    if util::run(&mut util::apt_get(&install_args)).is_ok() {
        return Ok(());
    }
    eprintln!("setup: apt-get install failed; refreshing package lists and retrying");
    util::run(&mut util::apt_get(&["update"]))?;
    util::run(&mut util::apt_get(&install_args))
        .map_err(|e| format!("setup: could not install packages: {e}").into())
}
