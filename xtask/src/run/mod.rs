//! `cargo xtask run`: the main job. A `.tflite` model run by `qneon run`
//! under qemu, with the guest instructions of every op.
//!
//! It builds the instruction-count plugin (`tools/qemu-insn/`) and `qneon`
//! for aarch64 (release), then runs the model once per configuration
//! (backend x softmax method) under `qemu-aarch64 -cpu CPU` (default `max`)
//! with the plugin, two qemu processes at a time. Ops are counted by
//! *marked regions*, not by differencing runs: `qneon run` brackets each
//! node's kernel with a marker instruction (`cli/src/bin/qneon/marker.rs`),
//! one region per op (`--json` says which), and the plugin attributes every
//! executed instruction to the region current when it ran, exactly, in one
//! run. Region 0 is what an invoke does outside its ops (the interpreter
//! between nodes, setting the inputs), reported apart from the model total;
//! what a run does once (loading and planning the model, files) has a
//! region of its own (`setup_region` in `--json`), in no per-invoke figure.
//!
//! The default model is the 24-layer int8 MobileBert with the first SQuAD
//! input set of `models/mobilebert_squad/`; any `.tflite` model runs with
//! `--model` (inputs from `--input`, else seeded by `qneon`). If `qneon`
//! cannot load the model (an operator it cannot run), its error is printed
//! and the command fails: no row is made up.
//!
//! Each configuration gets a table per op type (calls, work, instructions,
//! instructions per MAC or element, share of the model), the ten costliest
//! op instances, the model total against the bound `2 * MACs / 16` and the
//! softmax share against its target (<= 3% with the LUT method on NEON);
//! then a summary over all configurations. Runs with the same softmax
//! method must give the same output bytes (backends are bit-exact); a
//! mismatch fails the command after the report is written. Output:
//! `target/run/profile.json` (per op type and per op instance) and
//! `target/run/profile.md`; `--docs` rewrites `docs/PERFORMANCE.md` between
//! the run markers from `profile.json` without measuring.

#[cfg(test)]
mod fixtures;
mod hot;
mod profile;
mod regions;
mod report;
mod runner;
pub(crate) mod scaling;
mod threads;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use crate::util::{self, bail, thousands, Result};
use crate::{plugin, setup};
use profile::Profile;
pub(crate) use regions::{Regions, Vcpus};
use report::Report;
pub(crate) use runner::RunnerReport;
use runner::BIN;
use serde_json::json;

/// The model of the main job, relative to the workspace root.
const DEFAULT_MODEL: &str = "models/mobilebert_squad_24l.tflite";
/// Its inputs (the first SQuAD input set), used when `--model` is not given.
const DEFAULT_INPUTS: [&str; 3] = [
    "input_ids=models/mobilebert_squad/inputs/case0_full.input_ids.npy",
    "attention_mask=models/mobilebert_squad/inputs/case0_full.attention_mask.npy",
    "token_type_ids=models/mobilebert_squad/inputs/case0_full.token_type_ids.npy",
];

/// The `-cpu` of the runs by default.
const DEFAULT_CPU: &str = "max";

/// The markers of the generated section in [`util::PERFORMANCE_DOC`].
pub const SECTION_BEGIN: &str = "<!-- run:begin -->";
pub const SECTION_END: &str = "<!-- run:end -->";

/// The configurations run by default, as (backend, softmax method): the
/// main one (NEON, LUT: LiteRT's aarch64 kernels, the 3% target), the
/// reference-exact FixedPoint on NEON, and LUT on the scalar backend, whose
/// outputs must equal NEON's.
const DEFAULT_CONFIGS: [(&str, &str); 3] = [("neon", "lut"), ("neon", "fixed"), ("scalar", "lut")];
/// Added by `--all`.
const MORE_CONFIGS: [(&str, &str); 3] = [("neon", "f32"), ("scalar", "fixed"), ("scalar", "f32")];

const BACKENDS: [&str; 2] = ["neon", "scalar"];
const METHODS: [&str; 3] = ["lut", "fixed", "f32"];

/// qemu processes at a time (the machine is shared).
const JOBS: usize = 2;

#[derive(Debug, Default, PartialEq, Eq)]
struct Options {
    all: bool,
    docs: bool,
    model: Option<PathBuf>,
    inputs: Vec<String>,
    rounding: Option<String>,
    cpu: Option<String>,
    configs: Vec<(String, String)>,
    /// Passed on as `qneon run --threshold T` (kept as given).
    threshold: Option<String>,
    /// Passed on as `qneon run --kernels K` (reference, optimized or
    /// xnnpack): which of TFLite's kernel paths every op follows.
    kernels: Option<String>,
    /// `--threads 2,4`: thread counts to measure per thread (1 is always
    /// run too, as the base).
    threads: Vec<u32>,
    /// `--scaling`: the scaling table's models at 1, 2, 4, 8 threads.
    scaling: bool,
    /// `--hot`: each run also profiled by block (`hot.rs`).
    hot: bool,
}

fn parse(args: &[String]) -> Result<Options> {
    let mut opts = Options::default();
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let mut value = |name: &str| {
            it.next()
                .cloned()
                .ok_or_else(|| format!("run: {name} needs a value"))
        };
        match arg.as_str() {
            "--all" => opts.all = true,
            "--docs" => opts.docs = true,
            "--scaling" => opts.scaling = true,
            "--hot" => opts.hot = true,
            "--model" => opts.model = Some(value("--model")?.into()),
            "--input" => {
                let spec = value("--input")?;
                match spec.split_once('=') {
                    Some((k, f)) if !k.is_empty() && !f.is_empty() => opts.inputs.push(spec),
                    _ => bail!("run: --input wants K=FILE.npy, got `{spec}`"),
                }
            }
            "--rounding" => match value("--rounding")?.as_str() {
                r @ ("single" | "double") => opts.rounding = Some(r.to_string()),
                other => bail!("run: --rounding is single or double, not `{other}`"),
            },
            "--cpu" => {
                let cpu = value("--cpu")?;
                if cpu.is_empty() || cpu.contains([' ', '\t']) {
                    bail!("run: bad --cpu `{cpu}`");
                }
                opts.cpu = Some(cpu);
            }
            "--threshold" => {
                let t = value("--threshold")?;
                match t.parse::<f32>() {
                    Ok(v) if (0.0..=1.0).contains(&v) => opts.threshold = Some(t),
                    _ => bail!("run: --threshold is a probability in [0, 1], not `{t}`"),
                }
            }
            "--kernels" => match value("--kernels")?.as_str() {
                k @ ("reference" | "optimized" | "xnnpack") => opts.kernels = Some(k.to_string()),
                other => bail!("run: --kernels is reference, optimized or xnnpack, not `{other}`"),
            },
            "--threads" => {
                for n in value("--threads")?.split(',') {
                    match n.trim().parse::<u32>() {
                        Ok(t @ 1..=256) if !opts.threads.contains(&t) => opts.threads.push(t),
                        _ => bail!("run: --threads takes counts 1..=256, each once, comma-separated: `{n}`"),
                    }
                }
            }
            "--config" => {
                let text = value("--config")?;
                match text.split_once('-') {
                    Some((b, m)) if BACKENDS.contains(&b) && METHODS.contains(&m) => {
                        opts.configs.push((b.to_string(), m.to_string()))
                    }
                    _ => bail!(
                        "run: --config is BACKEND-METHOD (neon|scalar)-(lut|fixed|f32), not `{text}`"
                    ),
                }
            }
            other => bail!("run: unknown option `{other}` (see `cargo xtask help`)"),
        }
    }
    if opts.docs && args.len() > 1 {
        bail!(
            "run: --docs only rewrites {} from profile.json; run the measurement first",
            util::PERFORMANCE_DOC
        );
    }
    if !opts.threads.is_empty() && (opts.all || opts.configs.len() > 1) {
        bail!("run: --threads measures one configuration (one --config, default neon-lut)");
    }
    if opts.scaling && (opts.all || opts.docs || opts.configs.len() > 1) {
        bail!("run: --scaling measures one configuration (one --config, default neon-lut)");
    }
    if opts.all && !opts.configs.is_empty() {
        bail!("run: --all and --config exclude each other");
    }
    Ok(opts)
}

pub fn cli(args: &[String]) -> Result {
    let opts = parse(args)?;
    if opts.docs {
        return update_docs();
    }
    let configs: Vec<(String, String)> = if !opts.configs.is_empty() {
        opts.configs.clone()
    } else {
        DEFAULT_CONFIGS
            .iter()
            .chain(if opts.all { &MORE_CONFIGS[..] } else { &[] })
            .map(|&(b, m)| (b.to_string(), m.to_string()))
            .collect()
    };
    let (model, inputs) = match &opts.model {
        Some(model) => (model.display().to_string(), opts.inputs.clone()),
        None if opts.inputs.is_empty() => (
            DEFAULT_MODEL.to_string(),
            DEFAULT_INPUTS.iter().map(|s| s.to_string()).collect(),
        ),
        None => (DEFAULT_MODEL.to_string(), opts.inputs.clone()),
    };
    // Relative paths are the workspace root's (where qemu runs).
    let at_root = |p: &str| util::root().join(p);
    if !at_root(&model).is_file() {
        bail!("run: model {model} not found");
    }
    for spec in &inputs {
        let (_, file) = spec.split_once('=').unwrap_or(("", spec));
        if !at_root(file).is_file() {
            bail!("run: input file {file} not found");
        }
    }
    setup::ensure(false)?;
    let plugin = plugin::insn_plugin()?;
    let binary = util::build_aarch64_release(BIN)?;
    let job = Job {
        binary: &binary,
        plugin: &plugin,
        cpu: opts.cpu.as_deref().unwrap_or(DEFAULT_CPU),
        model: &model,
        inputs: &inputs,
        rounding: opts.rounding.as_deref().unwrap_or("single"),
        threshold: opts.threshold.as_deref(),
        kernels: opts.kernels.as_deref(),
        hot: opts.hot,
    };
    let mut counts = opts.threads.clone();
    counts.push(1);
    counts.sort_unstable();
    counts.dedup();
    if opts.scaling {
        let counts = if opts.threads.is_empty() {
            scaling::THREADS.to_vec()
        } else {
            counts
        };
        let cpu = opts.cpu.as_deref().unwrap_or(scaling::CPU);
        return scaling_job(
            &Job { cpu, ..job },
            &configs[0],
            &counts,
            opts.model.is_some(),
        );
    }
    if !opts.threads.is_empty() {
        let (backend, softmax) = &configs[0];
        return threads_job(&job, backend, softmax, &counts).map(drop);
    }
    main_job(&job, &configs)
}

/// `--scaling`: the table's models (or the `--model` given) at each thread
/// count, merged into `target/run/scaling.json`.
fn scaling_job(job: &Job, config: &(String, String), counts: &[u32], one_model: bool) -> Result {
    let (backend, softmax) = config;
    let models: Vec<(String, Vec<String>)> = if one_model {
        vec![(job.model.to_string(), job.inputs.to_vec())]
    } else {
        scaling::MODELS
            .iter()
            .map(|(m, i)| (m.to_string(), i.iter().map(|s| s.to_string()).collect()))
            .collect()
    };
    let path = run_dir().join("scaling.json");
    for (model, inputs) in &models {
        if !util::root().join(model).is_file() {
            bail!("run: model {model} not found");
        }
        let job = Job {
            model,
            inputs,
            ..*job
        };
        let results = threads_job(&job, backend, softmax, counts)?;
        let base = &results[0];
        let runs = results.iter().map(|r| r.summary_json(base)).collect();
        scaling::merge(&path, job.cpu, &format!("{backend}-{softmax}"), model, runs)?;
    }
    println!(
        "wrote {} (`cargo xtask scaling-docs` puts it in {})",
        path.display(),
        util::PERFORMANCE_DOC
    );
    Ok(())
}

/// `--threads`: one configuration at each thread count, counted per thread.
fn threads_job(
    job: &Job,
    backend: &str,
    softmax: &str,
    counts: &[u32],
) -> Result<Vec<threads::Threaded>> {
    let dir = run_dir();
    let runs = dir.join("runs");
    fs::create_dir_all(&runs).map_err(|e| format!("{}: {e}", runs.display()))?;
    util::step(format!(
        "running {} ({backend} {softmax}) under qemu -cpu {} with --threads {counts:?}, counted per thread, {JOBS} at a time",
        job.model, job.cpu
    ));
    let results = util::parallel(counts, JOBS, "run(s)", |_, &n| {
        let t0 = Instant::now();
        let stem = format!("{backend}-{softmax}-t{n}");
        let result = counted_run(job, &runs, &stem, backend, softmax, Some(n))
            .and_then(|profile| {
                let vcpus_file = runs.join(format!("{stem}.vcpus"));
                let text = fs::read_to_string(&vcpus_file)
                    .map_err(|e| format!("{}: {e}", vcpus_file.display()))?;
                let vcpus = Vcpus::parse(&text, &profile.regions)?;
                threads::Threaded::new(n, profile, vcpus)
            })
            .map_err(|e| e.to_string());
        match &result {
            Ok(r) => eprintln!(
                "--threads {n}: critical path {} instructions ({:.0} s)",
                thousands(r.critical_path()),
                t0.elapsed().as_secs_f64()
            ),
            Err(e) => eprintln!("--threads {n}: FAILED: {e}"),
        }
        result
    })?;
    let md = threads::markdown(job.model, job.cpu, &results, 15);
    let base = &results[0];
    let json = json!({
        "model": job.model,
        "cpu": job.cpu,
        "runs": results.iter().map(|r| r.summary_json(base)).collect::<Vec<_>>(),
    });
    let stem = Path::new(job.model)
        .file_stem()
        .unwrap_or_default()
        .to_string_lossy();
    let json_path = dir.join(format!("threads-{stem}-{backend}-{softmax}.json"));
    let md_path = json_path.with_extension("md");
    write(&json_path, &(serde_json::to_string_pretty(&json)? + "\n"))?;
    write(&md_path, &md)?;
    println!("{md}");
    println!("wrote {} and {}", json_path.display(), md_path.display());
    threads::check_same_outputs(&results)?;
    Ok(results)
}

fn run_dir() -> PathBuf {
    util::target_dir().join("run")
}

/// What every configuration's run shares.
struct Job<'a> {
    binary: &'a Path,
    plugin: &'a Path,
    cpu: &'a str,
    model: &'a str,
    inputs: &'a [String],
    rounding: &'a str,
    threshold: Option<&'a str>,
    kernels: Option<&'a str>,
    /// Profile each run by block too (`--hot`).
    hot: bool,
}

// ---- Running. ----

/// FNV-1a (64 bits) of the output files `dir/0.npy`, `dir/1.npy`, ...
/// (`dir/<i>.hits.json` for an output fused with `--threshold`).
fn outputs_checksum(dir: &Path) -> Result<String> {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let mut count = 0;
    let output = |i: usize| {
        fs::read(dir.join(format!("{i}.npy")))
            .or_else(|_| fs::read(dir.join(format!("{i}.hits.json"))))
    };
    while let Ok(bytes) = output(count) {
        for b in bytes {
            hash = (hash ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
        count += 1;
    }
    if count == 0 {
        bail!("{BIN} wrote no outputs to {}", dir.display());
    }
    Ok(format!("{hash:#018x}"))
}

/// Runs one configuration under qemu with the plugin and reads both outputs.
fn measure(job: &Job, runs: &Path, backend: &str, softmax: &str) -> Result<Profile> {
    counted_run(
        job,
        runs,
        &format!("{backend}-{softmax}"),
        backend,
        softmax,
        None,
    )
}

/// A counted run of `qneon run` with its files named `runs/STEM.*`; with
/// `threads`, `--threads N` is passed and the plugin's per-thread counts go
/// to `runs/STEM.vcpus`.
fn counted_run(
    job: &Job,
    runs: &Path,
    stem: &str,
    backend: &str,
    softmax: &str,
    threads: Option<u32>,
) -> Result<Profile> {
    let json_file = runs.join(format!("{stem}.json"));
    let count_file = runs.join(format!("{stem}.insn"));
    let vcpus_file = threads.map(|_| runs.join(format!("{stem}.vcpus")));
    let blocks_file = job.hot.then(|| runs.join(format!("{stem}.blocks")));
    let out_dir = runs.join(stem);
    let _ = fs::remove_file(&json_file);
    let _ = fs::remove_dir_all(&out_dir);
    let mut cmd = plugin::qemu_command_per_thread(
        job.cpu,
        job.plugin,
        &count_file,
        [vcpus_file.as_deref(), blocks_file.as_deref()],
        job.binary,
    )?;
    cmd.args(["run", job.model, "--profile", "--reps", "1"])
        .args(["--softmax", softmax, "--backend", backend])
        .args(["--rounding", job.rounding]);
    if let Some(n) = threads {
        cmd.args(["--threads", &n.to_string()]);
    }
    if let Some(t) = job.threshold {
        cmd.args(["--threshold", t]);
    }
    if let Some(k) = job.kernels {
        cmd.args(["--kernels", k]);
    }
    for spec in job.inputs {
        cmd.arg("--input").arg(spec);
    }
    cmd.arg("--json")
        .arg(&json_file)
        .arg("--output-dir")
        .arg(&out_dir)
        .current_dir(util::root());
    let stdout = util::capture(&mut cmd)?;
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
    let profile = Profile::new(
        runner,
        Regions::parse(&read(&count_file)?)?,
        outputs_checksum(&out_dir)?,
    )?;
    if let Some(blocks) = &blocks_file {
        hot::report(
            job.binary,
            blocks,
            &profile,
            &runs.join(format!("{stem}.hot.md")),
        )?;
    }
    Ok(profile)
}

fn main_job(job: &Job, configs: &[(String, String)]) -> Result {
    let started = Instant::now();
    let dir = run_dir();
    let runs = dir.join("runs");
    fs::create_dir_all(&runs).map_err(|e| format!("{}: {e}", runs.display()))?;
    util::step(format!(
        "running {} under qemu -cpu {} in {} configuration(s) of {BIN} with the instruction-count plugin, {JOBS} at a time",
        job.model,
        job.cpu,
        configs.len()
    ));

    let profiles = util::parallel(configs, JOBS, "run(s)", |_, (backend, softmax)| {
        let t0 = Instant::now();
        let result = measure(job, &runs, backend, softmax).map_err(|e| e.to_string());
        match &result {
            Ok(p) => eprintln!(
                "{backend} {softmax}: model {} instructions, softmax {:.2}% ({:.0} s)",
                thousands(p.model()),
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
    let report = Report {
        qemu,
        cpu: job.cpu.to_string(),
        model: job.model.to_string(),
        inputs: job.inputs.to_vec(),
        profiles,
    };
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
        "wrote {} and {} in {:.0} s (`cargo xtask run --docs` puts them in {})",
        json_path.display(),
        md_path.display(),
        started.elapsed().as_secs_f64(),
        util::PERFORMANCE_DOC
    );
    let mismatches = report.checksum_mismatches();
    if !mismatches.is_empty() {
        bail!(
            "output mismatch (backends must be bit-exact):\n  {}",
            mismatches.join("\n  ")
        );
    }
    Ok(())
}

/// `--docs`: the run section of docs/PERFORMANCE.md from profile.json.
fn update_docs() -> Result {
    let json_path = run_dir().join("profile.json");
    let text = fs::read_to_string(&json_path)
        .map_err(|e| format!("{}: {e} (run `cargo xtask run` first)", json_path.display()))?;
    let report = Report::from_json(&serde_json::from_str(&text)?)?;
    let doc_path = util::rewrite_section(
        util::PERFORMANCE_DOC,
        SECTION_BEGIN,
        SECTION_END,
        &report.markdown(),
    )?;
    println!(
        "rewrote the run section of {} from {}",
        doc_path.display(),
        json_path.display()
    );
    Ok(())
}

/// `doc` with the text between the run markers replaced by `section`.
#[cfg(test)]
fn replace_section(doc: &str, section: &str) -> Result<String> {
    util::replace_between(doc, SECTION_BEGIN, SECTION_END, section)
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
        assert!(parse(&strings(&["--docs"])).unwrap().docs);
        // The old name of `--docs` is gone: it is an unknown option now.
        assert!(parse(&strings(&["--readme"])).is_err());
        let opts = parse(&strings(&[
            "--model",
            "m.tflite",
            "--input",
            "ids=a.npy",
            "--input",
            "0=b=c.npy",
            "--rounding",
            "double",
            "--cpu",
            "neoverse-n1",
            "--config",
            "scalar-fixed",
            "--threshold",
            "0.25",
            "--kernels",
            "xnnpack",
        ]))
        .unwrap();
        assert_eq!(opts.threshold.as_deref(), Some("0.25"));
        assert_eq!(opts.kernels.as_deref(), Some("xnnpack"));
        assert_eq!(opts.model, Some(PathBuf::from("m.tflite")));
        assert_eq!(opts.inputs, ["ids=a.npy", "0=b=c.npy"]);
        assert_eq!(opts.rounding.as_deref(), Some("double"));
        assert_eq!(opts.cpu.as_deref(), Some("neoverse-n1"));
        assert_eq!(opts.configs, [("scalar".to_string(), "fixed".to_string())]);
        assert_eq!(
            parse(&strings(&["--threads", "4,2"])).unwrap().threads,
            [4, 2]
        );
        for bad in [
            &["--threads", "0"][..],
            &["--threads", "2,2"],
            &["--threads", "257"],
            &["--threads", "x"],
            &["--threads", "2", "--all"],
            &[
                "--threads",
                "2",
                "--config",
                "neon-lut",
                "--config",
                "neon-fixed",
            ],
            &["--docs", "--all"],
            &["--seq", "128"],
            &["--input", "a.npy"],
            &["--rounding", "triple"],
            &["--config", "neon"],
            &["--config", "gpu-lut"],
            &["--all", "--config", "neon-lut"],
            &["--model"],
            &["--threshold", "1.5"],
            &["--threshold", "nan"],
            &["--threshold"],
            &["--kernels", "fast"],
            &["--kernels"],
        ] {
            assert!(parse(&strings(bad)).is_err(), "{bad:?} was accepted");
        }
    }

    #[test]
    fn checksums_name_the_outputs() {
        let dir = util::target_dir().join("xtask-test-run-checksum");
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        assert!(outputs_checksum(&dir).is_err(), "no outputs");
        fs::write(dir.join("0.npy"), b"a").unwrap();
        let one = outputs_checksum(&dir).unwrap();
        // FNV-1a of "a".
        assert_eq!(one, "0xaf63dc4c8601ec8c");
        fs::write(dir.join("1.npy"), b"b").unwrap();
        assert_ne!(outputs_checksum(&dir).unwrap(), one);
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn rewrites_doc_section() {
        let doc = "# t\n\nintro\n<!-- run:begin -->\nold\ntable\n<!-- run:end -->\nafter\n";
        assert_eq!(
            replace_section(doc, "new\n\n").unwrap(),
            "# t\n\nintro\n<!-- run:begin -->\nnew\n<!-- run:end -->\nafter\n"
        );
        // Idempotent.
        let once = replace_section(doc, "new").unwrap();
        assert_eq!(replace_section(&once, "new").unwrap(), once);
        // The bench markers are someone else's.
        let bench = "<!-- bench:begin -->\nx\n<!-- bench:end -->\n";
        assert_eq!(
            replace_section(&format!("{bench}{doc}"), "new").unwrap(),
            format!("{bench}# t\n\nintro\n<!-- run:begin -->\nnew\n<!-- run:end -->\nafter\n")
        );
        assert!(replace_section("no markers\n", "x").is_err());
        assert!(replace_section("<!-- run:begin -->\nx\n", "x").is_err());
        assert!(replace_section("<!-- run:end -->\n<!-- run:begin -->\n", "x").is_err());
        assert!(replace_section(&format!("{doc}{doc}"), "x").is_err());
    }

    #[test]
    fn the_committed_doc_has_the_section() {
        let doc = fs::read_to_string(util::root().join(util::PERFORMANCE_DOC)).unwrap();
        assert!(replace_section(&doc, "x").is_ok());
    }
}
