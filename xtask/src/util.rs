//! Small helpers shared by the commands: paths, running processes, errors.

use std::error::Error;
use std::ffi::OsStr;
use std::fmt;
use std::io::{self, BufRead, BufReader, IsTerminal, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::thread;

pub type Result<T = ()> = std::result::Result<T, Box<dyn Error>>;

/// The cross target everything aarch64 is built for.
pub const TARGET: &str = "aarch64-unknown-linux-gnu";
/// Bare-metal aarch64 (no operating system, no `std`): the library's
/// `no_std` builds.
pub const BARE_METAL_TARGET: &str = "aarch64-unknown-none";

/// Returns early with a formatted error message.
macro_rules! bail {
    ($($arg:tt)*) => {
        return Err(format!($($arg)*).into())
    };
}
pub(crate) use bail;

/// An error whose details were already printed; `main` exits non-zero
/// without adding a message (so `cargo xtask test` can end on its summary).
#[derive(Debug)]
pub struct Reported;

impl fmt::Display for Reported {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("failures were reported above")
    }
}

impl Error for Reported {}

/// The workspace root (the parent of the xtask crate).
pub fn root() -> PathBuf {
    let xtask_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    xtask_dir.parent().unwrap_or(xtask_dir).to_path_buf()
}

/// Cargo's target directory, honouring `CARGO_TARGET_DIR`.
pub fn target_dir() -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) => root().join(dir),
        None => root().join("target"),
    }
}

/// A `cargo` command (the one that runs us, if known) in the workspace root.
/// When our stderr is a terminal, cargo's own output stays coloured even
/// though we pipe it.
pub fn cargo<I, S>(args: I) -> Command
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let program = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = Command::new(program);
    cmd.args(args).current_dir(root());
    if io::stderr().is_terminal() && std::env::var_os("CARGO_TERM_COLOR").is_none() {
        cmd.env("CARGO_TERM_COLOR", "always");
    }
    cmd
}

/// Finds an executable on `PATH`.
pub fn which(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|candidate| is_executable(candidate))
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    path.metadata()
        .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        .unwrap_or(false)
}

/// Shows a command the way a user would type it.
pub fn display(cmd: &Command) -> String {
    // `cargo` reads better than the toolchain path cargo hands us in $CARGO.
    let program = Path::new(cmd.get_program());
    let program = program.file_name().unwrap_or(program.as_os_str());
    let mut words = vec![program.to_string_lossy().into_owned()];
    words.extend(cmd.get_args().map(|a| a.to_string_lossy().into_owned()));
    words
        .iter()
        .map(|w| {
            if w.is_empty() || w.contains(|c: char| c.is_whitespace() || c == '\'') {
                format!("'{}'", w.replace('\'', r"'\''"))
            } else {
                w.clone()
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Prints a progress line to stderr.
pub fn step(msg: impl fmt::Display) {
    eprintln!("==> {msg}");
}

fn spawn_error(cmd: &Command, err: io::Error) -> Box<dyn Error> {
    let program = cmd.get_program().to_string_lossy();
    if err.kind() == io::ErrorKind::NotFound {
        format!("`{program}` not found on PATH (try `cargo xtask setup`)").into()
    } else {
        format!("cannot run `{}`: {err}", display(cmd)).into()
    }
}

/// `apt-get ARGS`, never asking questions.
pub fn apt_get(args: &[&str]) -> Command {
    let mut cmd = Command::new("apt-get");
    cmd.args(args).env("DEBIAN_FRONTEND", "noninteractive");
    cmd
}

/// Runs a command with inherited stdio and fails if it does not succeed.
pub fn run(cmd: &mut Command) -> Result {
    step(display(cmd));
    let status = cmd.status().map_err(|e| spawn_error(cmd, e))?;
    if !status.success() {
        bail!("`{}` failed ({status})", display(cmd));
    }
    Ok(())
}

/// Runs a command quietly and returns its stdout; on failure the error
/// carries its stderr.
pub fn capture(cmd: &mut Command) -> Result<String> {
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .map_err(|e| spawn_error(cmd, e))?;
    if !out.status.success() {
        bail!(
            "`{}` failed ({}):\n{}",
            display(cmd),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim_end()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Runs a command, streaming its stdout and stderr to ours as they come,
/// and also returns everything it printed (both streams) for parsing.
pub fn tee(cmd: &mut Command) -> Result<(ExitStatus, String)> {
    step(display(cmd));
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| spawn_error(cmd, e))?;
    let stderr = child.stderr.take().expect("stderr is piped");
    let stdout = child.stdout.take().expect("stdout is piped");
    let err_thread = thread::spawn(move || copy_lines(stderr, io::stderr()));
    let mut captured = copy_lines(stdout, io::stdout());
    captured.push_str(&err_thread.join().unwrap_or_default());
    let status = child.wait()?;
    Ok((status, captured))
}

/// Copies `from` to `to` line by line (flushing each), returning the text.
fn copy_lines(from: impl Read, mut to: impl Write) -> String {
    let mut reader = BufReader::new(from);
    let mut all = Vec::new();
    let mut line = Vec::new();
    loop {
        line.clear();
        match reader.read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => break,
            Ok(_) => {
                // A closed terminal must not stop us from capturing.
                let _ = to.write_all(&line).and_then(|()| to.flush());
                all.extend_from_slice(&line);
            }
        }
    }
    String::from_utf8_lossy(&all).into_owned()
}

/// The package of the binaries (`qneon`, `qneon-bench`).
pub const CLI_PACKAGE: &str = "qneon-cli";

/// Builds the release binary `bin` of [`CLI_PACKAGE`] for aarch64 and
/// returns its path.
pub fn build_aarch64_release(bin: &str) -> Result<PathBuf> {
    run(&mut cargo([
        "build",
        "--release",
        "-p",
        CLI_PACKAGE,
        "--bin",
        bin,
        "--target",
        TARGET,
    ]))?;
    let binary = target_dir().join(TARGET).join("release").join(bin);
    if !binary.is_file() {
        bail!("cargo built {bin} but {} does not exist", binary.display());
    }
    Ok(binary)
}

/// Runs `work(i, &items[i])` for every item on `jobs` threads (each takes
/// the next item when it is done), and returns the results in item order;
/// if any failed (or did not run), an error listing every failure, counted
/// as `what` (e.g. "run(s)").
pub fn parallel<T: Sync, R: Send>(
    items: &[T],
    jobs: usize,
    what: &str,
    work: impl Fn(usize, &T) -> std::result::Result<R, String> + Sync,
) -> Result<Vec<R>> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Mutex;
    let next = AtomicUsize::new(0);
    let results: Vec<Mutex<Option<std::result::Result<R, String>>>> =
        items.iter().map(|_| Mutex::new(None)).collect();
    thread::scope(|scope| {
        for _ in 0..jobs.max(1) {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(item) = items.get(i) else { break };
                let result = work(i, item);
                *results[i].lock().unwrap_or_else(|p| p.into_inner()) = Some(result);
            });
        }
    });
    let mut done = Vec::new();
    let mut failures = Vec::new();
    for cell in results {
        match cell.into_inner().unwrap_or_else(|p| p.into_inner()) {
            Some(Ok(r)) => done.push(r),
            Some(Err(e)) => failures.push(e),
            None => failures.push(format!("one of the {what} did not run")),
        }
    }
    if !failures.is_empty() {
        bail!(
            "{} {what} failed:\n  {}",
            failures.len(),
            failures.join("\n  ")
        );
    }
    Ok(done)
}

/// The committed document the generated performance sections live in
/// (`cargo xtask bench --docs`, `cargo xtask run --docs`), relative to the
/// workspace root; the README keeps a summary and the chart.
pub const PERFORMANCE_DOC: &str = "docs/PERFORMANCE.md";

/// `text` with what lies between the markers `begin` and `end` replaced by
/// `section`; an error if a marker is missing, out of order or repeated.
pub fn replace_between(text: &str, begin: &str, end: &str, section: &str) -> Result<String> {
    let Some(b) = text.find(begin) else {
        bail!("no `{begin}` marker (add `{begin}` and `{end}` where the section goes)");
    };
    let after_begin = b + begin.len();
    let Some(e) = text[after_begin..].find(end).map(|e| e + after_begin) else {
        bail!("`{begin}` but no `{end}` after it");
    };
    if text[e..].contains(begin) {
        bail!("more than one `{begin}` marker");
    }
    Ok(format!(
        "{}\n{}\n{}",
        &text[..after_begin],
        section.trim_end(),
        &text[e..]
    ))
}

/// Rewrites the section between `begin` and `end` of the committed file
/// `relative` (to the workspace root) with `section`; returns its path.
pub fn rewrite_section(relative: &str, begin: &str, end: &str, section: &str) -> Result<PathBuf> {
    let path = root().join(relative);
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let updated = replace_between(&text, begin, end, section)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    std::fs::write(&path, updated).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(path)
}

/// `x` rounded to `digits` decimals.
pub fn round(x: f64, digits: i32) -> f64 {
    let p = 10f64.powi(digits);
    (x * p).round() / p
}

/// `n` with commas between groups of three digits.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_quotes_only_when_needed() {
        let mut cmd = Command::new("/opt/rust/bin/cargo");
        cmd.args(["test", "--", "a b", "it's"]);
        assert_eq!(display(&cmd), r"cargo test -- 'a b' 'it'\''s'");
    }

    #[test]
    fn root_holds_the_xtask_crate() {
        assert!(root().join("xtask").join("Cargo.toml").is_file());
    }
}
