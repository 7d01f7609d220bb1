//! Running `run_litert.py` under qemu, with and without the instruction
//! counter.
//!
//! Counts are made repeatable by removing what varies between two runs of
//! the same program: address-space randomisation (`setarch -R`; the guest's
//! mappings follow the host's), Python's hash seed (`PYTHONHASHSEED=0`),
//! threads (`num_threads=1` in the driver, `OPENBLAS_NUM_THREADS=1` for
//! numpy), byte-compilation (done once at setup; `PYTHONDONTWRITEBYTECODE`)
//! and the environment (cleared, then a fixed set of variables). Start-up
//! and model loading are cancelled by counting a run of R invocations and
//! one of 2R: the cost of one inference is (count(2R) - count(R)) / R.
//! The two runs differ in nothing but that number, formatted to the same
//! width, and the names of their output directories (`R1`, `R2`).

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::json;

use super::sysroot::Layout;
use crate::plugin;
use crate::util::{self, bail, Result};

/// The TFLite op resolvers measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resolver {
    /// The builtin kernels with the default delegate, XNNPACK.
    Xnnpack,
    /// The optimized builtin kernels alone.
    Builtin,
}

impl Resolver {
    pub const ALL: [Resolver; 2] = [Resolver::Xnnpack, Resolver::Builtin];

    /// The name `run_litert.py --resolver` takes (and the output folder).
    pub fn name(self) -> &'static str {
        match self {
            Resolver::Xnnpack => "xnnpack",
            Resolver::Builtin => "builtin",
        }
    }
}

/// `tools/litert-aarch64/run_litert.py`.
pub fn driver() -> PathBuf {
    util::root().join("tools/litert-aarch64/run_litert.py")
}

/// `setarch -R qemu-aarch64 -L ROOT -cpu CPU PYTHON` (driver and its
/// arguments still to add) with the controlled environment described in
/// the module documentation.
pub fn python_command(layout: &Layout, root: &Path, cpu: &str) -> Command {
    qemu_python(layout, root, cpu, None)
}

/// [`python_command`] with the counting plugin writing its total to
/// `count_file`, and its per-thread counts to `vcpus_file` if given.
pub(super) fn counted_python_command(
    layout: &Layout,
    root: &Path,
    cpu: &str,
    plugin: &Path,
    count_file: &Path,
    vcpus_file: Option<&Path>,
) -> Result<Command> {
    for file in [Some(count_file), vcpus_file].into_iter().flatten() {
        let _ = fs::remove_file(file);
        if file.to_string_lossy().contains(',') {
            bail!(
                "qemu's -plugin option cannot take a path with a comma: {}",
                file.display()
            );
        }
    }
    Ok(qemu_python(
        layout,
        root,
        cpu,
        Some((plugin, count_file, vcpus_file)),
    ))
}

fn qemu_python(
    layout: &Layout,
    root: &Path,
    cpu: &str,
    plugin: Option<(&Path, &Path, Option<&Path>)>,
) -> Command {
    let qemu = util::which("qemu-aarch64").unwrap_or_else(|| "qemu-aarch64".into());
    let mut cmd = Command::new("setarch");
    cmd.arg(std::env::consts::ARCH)
        .arg("--addr-no-randomize")
        .arg(qemu)
        .arg("-L")
        .arg(root)
        .args(["-cpu", cpu]);
    if let Some((plugin, count_file, vcpus_file)) = plugin {
        let mut plugin_arg = plugin.as_os_str().to_owned();
        plugin_arg.push(",out=");
        plugin_arg.push(count_file);
        if let Some(file) = vcpus_file {
            plugin_arg.push(",vcpus=");
            plugin_arg.push(file);
        }
        cmd.arg("-plugin").arg(plugin_arg);
    }
    cmd.arg(layout.python());
    cmd.env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("LANG", "C.UTF-8")
        .env("PYTHONPATH", layout.site())
        .env("PYTHONHASHSEED", "0")
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .env("PYTHONNOUSERSITE", "1")
        .env("OPENBLAS_NUM_THREADS", "1");
    cmd
}

/// Runs `cmd`, returning its stderr; a failure carries both streams.
pub(super) fn run_capturing_stderr(cmd: &mut Command) -> Result<String> {
    let out = cmd
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| format!("cannot run `{}`: {e}", util::display(cmd)))?;
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    if !out.status.success() {
        bail!(
            "`{}` failed ({}):\n{}{}",
            util::display(cmd),
            out.status,
            String::from_utf8_lossy(&out.stdout),
            stderr.trim_end()
        );
    }
    Ok(stderr)
}

/// One model measured with one resolver.
#[derive(Debug, Clone, PartialEq)]
pub struct Measurement {
    pub resolver: Resolver,
    /// R: the invocations of the shorter run (the longer does 2R).
    pub reps: u64,
    /// Guest instructions of the R and the 2R run.
    pub counts: [u64; 2],
}

impl Measurement {
    /// (count(2R) - count(R)) / R, rounded to the nearest instruction.
    pub fn per_inference(&self) -> Result<u64> {
        let [once, twice] = self.counts;
        if twice <= once || self.reps == 0 {
            bail!(
                "{}: the 2R run counted {twice} instructions, the R run {once}: \
                 the invocations did not add up",
                self.resolver.name()
            );
        }
        Ok(((twice - once) as f64 / self.reps as f64).round() as u64)
    }
}

/// Where LiteRT's aarch64 build runs counted: the sysroot's layout and
/// root, the `-cpu`, the counting plugin. The same for every measurement
/// of one `compare` command.
#[derive(Clone, Copy)]
pub struct Counter<'a> {
    pub layout: &'a Layout,
    pub root: &'a Path,
    pub cpu: &'a str,
    pub plugin: &'a Path,
}

/// One model run by one resolver, R and 2R invocations, counted.
pub struct Job<'a> {
    pub counter: Counter<'a>,
    /// The file LiteRT loads.
    pub model: &'a Path,
    pub resolver: Resolver,
    /// The driver's `--threads`, counted per vCPU; `None`: the driver's
    /// single thread, counted as a whole.
    pub threads: Option<u32>,
    pub reps: u64,
    /// Receives the outputs of the 2R run (and what the caller writes).
    pub out_dir: &'a Path,
    /// The model has variable tensors: its outputs after R and after 2R
    /// invokes may differ (the state moved on), so they are not compared.
    pub stateful: bool,
}

/// Runs `job`'s R and 2R invocations, each under the counter; `read` turns
/// a run's count file (and its per-vCPU file, with `threads`) into that
/// run's counts. Checks that the delegate was (or was not) applied and,
/// unless the model is stateful, that both runs wrote the same outputs;
/// keeps the 2R run's outputs in `out_dir`.
pub(super) fn count_r_and_2r<T>(
    job: &Job,
    mut read: impl FnMut(&Path, Option<&Path>) -> Result<T>,
) -> Result<[T; 2]> {
    let resolver = job.resolver.name();
    if job.out_dir.exists() {
        fs::remove_dir_all(job.out_dir)?;
    }
    fs::create_dir_all(job.out_dir)?;
    let width = (2 * job.reps).to_string().len();
    let mut counts = Vec::with_capacity(2);
    for multiple in [1u64, 2] {
        let run_dir = job.out_dir.join(format!("R{multiple}"));
        let count_file = job.out_dir.join(format!("R{multiple}.count"));
        let vcpus_file = job
            .threads
            .map(|_| job.out_dir.join(format!("R{multiple}.vcpus")));
        let Counter {
            layout,
            root,
            cpu,
            plugin,
        } = job.counter;
        let mut cmd = counted_python_command(
            layout,
            root,
            cpu,
            plugin,
            &count_file,
            vcpus_file.as_deref(),
        )?;
        cmd.arg(driver())
            .arg("--model")
            .arg(job.model)
            .args(["--resolver", resolver]);
        if let Some(threads) = job.threads {
            cmd.arg("--threads").arg(threads.to_string());
        }
        cmd.arg("--invokes")
            .arg(format!("{:0width$}", multiple * job.reps))
            .arg("--out")
            .arg(&run_dir);
        let stderr = run_capturing_stderr(&mut cmd)?;
        check_delegate(job.resolver, &stderr)?;
        counts.push(read(&count_file, vcpus_file.as_deref())?);
    }
    let once = job.out_dir.join("R1");
    let twice = job.out_dir.join("R2");
    let differing = differing_outputs(&once, &twice)?;
    if !differing.is_empty() && !job.stateful {
        let threads = job.threads.map(|n| format!(", {n} threads"));
        bail!(
            "{} ({resolver}{}): outputs of the R and the 2R run differ: {}",
            job.model.display(),
            threads.unwrap_or_default(),
            differing.join(", ")
        );
    }
    for entry in fs::read_dir(&twice)? {
        let entry = entry?;
        fs::rename(entry.path(), job.out_dir.join(entry.file_name()))?;
    }
    fs::remove_dir_all(&once)?;
    fs::remove_dir_all(&twice)?;
    let [first, second]: [T; 2] = counts.try_into().map_err(|_| "two counted runs expected")?;
    Ok([first, second])
}

/// Counts the R and the 2R run of `job` (one thread, counted as a whole),
/// keeps the 2R run's files and a `measure.json` in `out_dir`.
pub fn measure(job: &Job) -> Result<Measurement> {
    let counts = count_r_and_2r(job, |count_file, _| {
        let total = plugin::read_total(count_file)?;
        fs::remove_file(count_file)?;
        Ok(total)
    })?;
    let measurement = Measurement {
        resolver: job.resolver,
        reps: job.reps,
        counts,
    };
    let summary = json!({
        "model": file_name(job.model),
        "cpu": job.counter.cpu,
        "resolver": job.resolver.name(),
        "reps": job.reps,
        "count_r": counts[0],
        "count_2r": counts[1],
        "instructions_per_inference": measurement.per_inference()?,
    });
    fs::write(
        job.out_dir.join("measure.json"),
        serde_json::to_string_pretty(&summary)? + "\n",
    )?;
    Ok(measurement)
}

/// LiteRT announces the XNNPACK delegate on stderr when it applies it; a
/// measurement of the wrong kernels would look plausible, so check.
pub(super) fn check_delegate(resolver: Resolver, stderr: &str) -> Result {
    let applied = stderr.contains("XNNPACK delegate");
    match (resolver, applied) {
        (Resolver::Xnnpack, false) => bail!(
            "resolver xnnpack: LiteRT did not report creating the XNNPACK delegate:\n{}",
            stderr.trim_end()
        ),
        (Resolver::Builtin, true) => bail!(
            "resolver builtin: LiteRT created the XNNPACK delegate anyway:\n{}",
            stderr.trim_end()
        ),
        _ => Ok(()),
    }
}

/// The `output_*.npy` files whose bytes differ between two run
/// directories (or exist in only one).
pub(super) fn differing_outputs(a: &Path, b: &Path) -> Result<Vec<String>> {
    let outputs = |dir: &Path| -> Result<Vec<String>> {
        let mut names: Vec<String> = fs::read_dir(dir)?
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("output_") && n.ends_with(".npy"))
            .collect();
        names.sort();
        Ok(names)
    };
    let (names_a, names_b) = (outputs(a)?, outputs(b)?);
    if names_a != names_b {
        return Ok(vec![format!("{names_a:?} against {names_b:?}")]);
    }
    if names_a.is_empty() {
        bail!("{} holds no output_*.npy files", a.display());
    }
    let mut differing = Vec::new();
    for name in names_a {
        if fs::read(a.join(&name))? != fs::read(b.join(&name))? {
            differing.push(name);
        }
    }
    Ok(differing)
}

/// Runs `resolver` (the builtin kernels, or XNNPACK as LiteRT's aarch64
/// build configures it) once on the given inputs, writing the outputs and
/// `run.json` to `out_dir` (no counting).
pub fn reference_outputs(
    layout: &Layout,
    root: &Path,
    cpu: &str,
    model: &Path,
    resolver: Resolver,
    inputs: &[(String, PathBuf)],
    out_dir: &Path,
) -> Result {
    let stderr = run_outputs(layout, root, cpu, model, resolver.name(), inputs, out_dir)?;
    check_delegate(resolver, &stderr)
}

/// The name `run_litert.py --resolver` takes for TFLite's reference
/// kernels (`BUILTIN_REF`), run uncounted for their outputs only.
pub const REF_RESOLVER: &str = "ref";

/// Runs `model` once with `resolver` (`builtin` or [`REF_RESOLVER`]: no
/// delegate either way) on the given inputs (the others seeded as in every
/// run), writing the outputs and `run.json` to `out_dir` (no counting).
pub fn litert_outputs(
    layout: &Layout,
    root: &Path,
    cpu: &str,
    model: &Path,
    resolver: &str,
    inputs: &[(String, PathBuf)],
    out_dir: &Path,
) -> Result {
    let stderr = run_outputs(layout, root, cpu, model, resolver, inputs, out_dir)?;
    // Neither resolver may create the XNNPACK delegate.
    check_delegate(Resolver::Builtin, &stderr)
}

/// Runs `model` once with the `run_litert.py` resolver named `resolver`
/// on the given inputs, writing the outputs and `run.json` to `out_dir`;
/// returns LiteRT's stderr (which says whether the delegate was applied).
fn run_outputs(
    layout: &Layout,
    root: &Path,
    cpu: &str,
    model: &Path,
    resolver: &str,
    inputs: &[(String, PathBuf)],
    out_dir: &Path,
) -> Result<String> {
    let mut cmd = python_command(layout, root, cpu);
    cmd.arg(driver())
        .arg("--model")
        .arg(model)
        .args(["--resolver", resolver, "--invokes", "1"])
        .arg("--out")
        .arg(out_dir);
    for (key, file) in inputs {
        let mut spec = std::ffi::OsString::from(format!("{key}="));
        spec.push(file);
        cmd.arg("--input").arg(spec);
    }
    run_capturing_stderr(&mut cmd)
}

pub fn file_name(path: &Path) -> String {
    path.file_name()
        .unwrap_or(path.as_os_str())
        .to_string_lossy()
        .into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn per_inference_is_the_difference_over_r() {
        let m = Measurement {
            resolver: Resolver::Builtin,
            reps: 4,
            counts: [1_000_000, 1_000_402],
        };
        assert_eq!(m.per_inference().unwrap(), 101);
        let shrunk = Measurement {
            counts: [1_000, 999],
            ..m
        };
        assert!(shrunk.per_inference().is_err());
    }

    #[test]
    fn delegate_report_must_match_the_resolver() {
        let created = "INFO: Created TensorFlow Lite XNNPACK delegate for CPU.\n";
        assert!(check_delegate(Resolver::Xnnpack, created).is_ok());
        assert!(check_delegate(Resolver::Xnnpack, "").is_err());
        assert!(check_delegate(Resolver::Builtin, "").is_ok());
        assert!(check_delegate(Resolver::Builtin, created).is_err());
    }

    #[test]
    fn differing_outputs_are_named() {
        let dir = util::target_dir().join("xtask-test-compare-outputs");
        let _ = fs::remove_dir_all(&dir);
        let (a, b) = (dir.join("a"), dir.join("b"));
        fs::create_dir_all(&a).unwrap();
        fs::create_dir_all(&b).unwrap();
        for (name, x, y) in [("output_0.npy", "same", "same"), ("output_1.npy", "x", "y")] {
            fs::write(a.join(name), x).unwrap();
            fs::write(b.join(name), y).unwrap();
        }
        fs::write(a.join("run.json"), "1").unwrap();
        fs::write(b.join("run.json"), "2").unwrap();
        assert_eq!(differing_outputs(&a, &b).unwrap(), ["output_1.npy"]);
        fs::remove_file(b.join("output_1.npy")).unwrap();
        assert_eq!(differing_outputs(&a, &b).unwrap().len(), 1);
        fs::remove_dir_all(&dir).unwrap();
    }
}
