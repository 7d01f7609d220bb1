//! The guest instruction counter, `tools/qemu-insn`, a QEMU TCG plugin.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::util::{self, bail, Result};

/// Builds `target/qemu-insn/libinsn.so` if it is missing or older than its
/// source, and returns its path.
pub fn insn_plugin() -> Result<PathBuf> {
    let source = util::root().join("tools/qemu-insn/insn.c");
    let out_dir = util::target_dir().join("qemu-insn");
    let lib = out_dir.join("libinsn.so");
    if is_fresh(&lib, &source) {
        return Ok(lib);
    }
    if !source.is_file() {
        bail!("plugin source {} not found", source.display());
    }
    fs::create_dir_all(&out_dir)
        .map_err(|e| format!("cannot create {}: {e}", out_dir.display()))?;
    // Built under a name of its own, then renamed into place: tests run in
    // parallel, and one that found the library half written (fresh by its
    // time stamp) handed qemu a truncated file ("file too short").
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let partial = out_dir.join(format!("libinsn.so.{}.{stamp}.tmp", std::process::id()));
    util::run(
        Command::new("cc")
            .args(["-shared", "-fPIC", "-O2", "-fvisibility=hidden", "-o"])
            .arg(&partial)
            .arg(&source),
    )
    .map_err(|e| format!("building the qemu-insn plugin failed: {e}"))?;
    fs::rename(&partial, &lib).map_err(|e| {
        format!(
            "cannot move {} to {}: {e}",
            partial.display(),
            lib.display()
        )
    })?;
    Ok(lib)
}

fn is_fresh(output: &Path, source: &Path) -> bool {
    let modified = |p: &Path| p.metadata().and_then(|m| m.modified()).ok();
    match (modified(output), modified(source)) {
        (Some(out), Some(src)) => out >= src,
        (Some(_), None) => true,
        _ => false,
    }
}

/// Runs an aarch64 `binary` under `qemu-aarch64 -cpu max` with the counting
/// plugin and returns the number of guest instructions it executed. Its
/// stdout and stderr pass through; a failing exit status is an error.
pub fn count_instructions(binary: &Path, args: &[String]) -> Result<u64> {
    count_instructions_with(binary, args, false)
}

/// [`count_instructions`], optionally discarding the program's stdout.
pub fn count_instructions_with(binary: &Path, args: &[String], quiet: bool) -> Result<u64> {
    let plugin = insn_plugin()?;
    let count_file = plugin.with_file_name("last-count.txt");
    let mut cmd = qemu_command(&plugin, &count_file, binary)?;
    cmd.args(args);
    if quiet {
        cmd.stdout(std::process::Stdio::null());
    }
    util::run(&mut cmd)?;
    read_total(&count_file)
}

/// Runs `binary args` under `qemu-aarch64 -cpu max` with the counting
/// `plugin` (from [`insn_plugin`]) writing its total to `count_file`, and
/// returns the count. Output is captured (and shown only on failure), and
/// every call has its own count file, so several may run at once.
pub fn count_to_file(
    plugin: &Path,
    binary: &Path,
    args: &[String],
    count_file: &Path,
) -> Result<u64> {
    util::capture(qemu_command(plugin, count_file, binary)?.args(args))?;
    read_total(count_file)
}

/// `qemu-aarch64 -cpu max -plugin PLUGIN,out=COUNT_FILE BINARY` (arguments
/// still to add), with any stale `count_file` removed first so that it can
/// never be mistaken for this run's.
pub fn qemu_command(plugin: &Path, count_file: &Path, binary: &Path) -> Result<Command> {
    qemu_command_on("max", plugin, count_file, binary)
}

/// [`qemu_command`] with `-cpu CPU`.
pub fn qemu_command_on(
    cpu: &str,
    plugin: &Path,
    count_file: &Path,
    binary: &Path,
) -> Result<Command> {
    qemu_command_per_thread(cpu, plugin, count_file, [None, None], binary)
}

/// [`qemu_command_on`], with the plugin also writing its per-thread counts
/// (`vcpus=`, read by `run::Vcpus`) to `vcpus_file` and its per-block
/// counts (`blocks=`, read by `run --hot`) to `blocks_file`, where given.
pub fn qemu_command_per_thread(
    cpu: &str,
    plugin: &Path,
    count_file: &Path,
    [vcpus_file, blocks_file]: [Option<&Path>; 2],
    binary: &Path,
) -> Result<Command> {
    let files = [Some(count_file), vcpus_file, blocks_file];
    for file in files.into_iter().flatten() {
        let _ = fs::remove_file(file);
        if file.to_string_lossy().contains(',') {
            bail!(
                "qemu's -plugin option cannot take a path with a comma: {}",
                file.display()
            );
        }
    }
    let mut plugin_arg = plugin.as_os_str().to_owned();
    plugin_arg.push(",out=");
    plugin_arg.push(count_file);
    for (option, file) in [(",vcpus=", vcpus_file), (",blocks=", blocks_file)] {
        if let Some(file) = file {
            plugin_arg.push(option);
            plugin_arg.push(file);
        }
    }
    let mut cmd = Command::new("qemu-aarch64");
    cmd.args(["-cpu", cpu, "-plugin"])
        .arg(plugin_arg)
        .arg(binary);
    Ok(cmd)
}

/// The total a count file holds: its first line (per-region lines may
/// follow).
pub fn read_total(count_file: &Path) -> Result<u64> {
    let text = fs::read_to_string(count_file).map_err(|e| {
        format!(
            "the qemu-insn plugin wrote no count to {}: {e}",
            count_file.display()
        )
    })?;
    let first = text.lines().next().unwrap_or("").trim();
    first
        .parse()
        .map_err(|_| format!("unexpected plugin output {text:?}").into())
}
