//! `cargo xtask compare`: int8 `.tflite` models measured with TFLite's own
//! aarch64 build (LiteRT) under the same qemu instruction counter and CPU
//! model as qneon.
//!
//! LiteRT runs as the `ai-edge-litert` wheel inside Debian's arm64 Python
//! under `qemu-aarch64` ([`sysroot`] sets that up, [`cpuinfo`] gives it a
//! `/proc/cpuinfo` matching the emulated core), driven by
//! `tools/litert-aarch64/run_litert.py`. [`measure`] counts instructions
//! per inference for the XNNPACK delegate and the builtin kernels;
//! [`table`] keeps `target/compare/compare.json`. [`qneon`] runs `qneon run`
//! on the same model and inputs under the same `-cpu`, counted the same way,
//! and checks its outputs against LiteRT's: `--softmax lut` against the
//! builtin kernels, `--softmax fixed` against the reference kernels (run
//! once, uncounted, in `target/compare/<model>/ref/`).

pub(crate) mod cpuinfo;
mod litert_copy;
pub(crate) mod measure;
mod qneon;
pub(crate) mod sysroot;
mod table;
pub(crate) mod threads;

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::plugin;
use crate::util::{self, bail, Result};
use measure::{Counter, Job, Measurement, Resolver};

/// The CPU model both runtimes are measured on by default: Neoverse N1
/// (Graviton2, a Cortex-A76 class core). Plain `max` is refused: XNNPACK
/// then picks SME kernels whose results qemu 7.2 gets wrong.
const DEFAULT_CPU: &str = "neoverse-n1";

/// R of the R / 2R measurement.
const DEFAULT_REPS: u64 = 3;

/// The model measured when neither `--model` nor `models/` gives one: a
/// 4.8 KB int8 Dense / Dense / softmax built by
/// `tools/litert-aarch64/make_tiny_model.py`.
const FIXTURE: &str = "tools/litert-aarch64/tiny_dense_softmax.tflite";

#[derive(Debug, Default, PartialEq)]
struct Options {
    setup_only: bool,
    models: Vec<PathBuf>,
    cpu: Option<String>,
    reps: Option<u64>,
    jobs: Option<usize>,
    refs_only: bool,
    /// `--resolver` of `--refs-only` (`None`: the builtin kernels).
    resolver: Option<Resolver>,
    inputs: Vec<(String, PathBuf)>,
    out: Option<PathBuf>,
    /// `--threads 2,4`: XNNPACK with these `num_threads` (and 1), per thread.
    threads: Vec<u32>,
}

fn parse(args: &[String]) -> Result<Options> {
    let mut opts = Options::default();
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let mut value = |name: &str| {
            it.next()
                .cloned()
                .ok_or_else(|| format!("compare: {name} needs a value"))
        };
        match arg.as_str() {
            "--setup" => opts.setup_only = true,
            "--model" => opts.models.push(value("--model")?.into()),
            "--cpu" => opts.cpu = Some(check_cpu(&value("--cpu")?)?),
            "--reps" => {
                let text = value("--reps")?;
                match text.parse::<u64>() {
                    Ok(r) if r >= 1 => opts.reps = Some(r),
                    _ => bail!("compare: --reps wants a positive integer, got `{text}`"),
                }
            }
            "--jobs" => {
                let text = value("--jobs")?;
                match text.parse::<usize>() {
                    Ok(j) if j >= 1 => opts.jobs = Some(j),
                    _ => bail!("compare: --jobs wants a positive integer, got `{text}`"),
                }
            }
            "--refs-only" => opts.refs_only = true,
            "--resolver" => {
                let text = value("--resolver")?;
                opts.resolver = Some(match text.as_str() {
                    "xnnpack" => Resolver::Xnnpack,
                    "builtin" => Resolver::Builtin,
                    _ => bail!("compare: --resolver wants xnnpack or builtin, got `{text}`"),
                });
            }
            "--input" => {
                let spec = value("--input")?;
                match spec.split_once('=') {
                    Some((key, file)) if !key.is_empty() && !file.is_empty() => {
                        opts.inputs.push((key.to_string(), file.into()))
                    }
                    _ => bail!("compare: --input wants NAME_OR_INDEX=FILE.npy, got `{spec}`"),
                }
            }
            "--out" => opts.out = Some(value("--out")?.into()),
            "--threads" => {
                for n in value("--threads")?.split(',') {
                    match n.trim().parse::<u32>() {
                        Ok(t @ 1..=256) if !opts.threads.contains(&t) => opts.threads.push(t),
                        _ => bail!("compare: --threads takes counts 1..=256, each once, comma-separated: `{n}`"),
                    }
                }
            }
            other => bail!("compare: unknown option `{other}` (see `cargo xtask help`)"),
        }
    }
    if opts.refs_only {
        if opts.models.len() != 1 || opts.out.is_none() {
            bail!("compare: --refs-only takes exactly one --model and an --out DIR");
        }
        if opts.reps.is_some() || opts.jobs.is_some() {
            bail!("compare: --refs-only runs once, uncounted; --reps and --jobs do not apply");
        }
    } else if !opts.inputs.is_empty() || opts.out.is_some() || opts.resolver.is_some() {
        bail!("compare: --input, --out and --resolver go with --refs-only");
    }
    if !opts.threads.is_empty() && opts.refs_only {
        bail!("compare: --threads measures; --refs-only does not count");
    }
    if opts.setup_only && (opts.refs_only || !opts.models.is_empty()) {
        bail!("compare: --setup takes no other options");
    }
    Ok(opts)
}

/// A `-cpu` value we accept: anything qemu takes except `max` with SME
/// left on.
fn check_cpu(cpu: &str) -> Result<String> {
    if cpu.is_empty() || cpu.contains(char::is_whitespace) {
        bail!("compare: bad --cpu `{cpu}`");
    }
    let is_max = cpu == "max" || cpu.starts_with("max,");
    if is_max && !cpu.split(',').any(|o| o == "sme=off") {
        bail!(
            "compare: --cpu {cpu} lets XNNPACK pick SME kernels, which give wrong \
             results under qemu 7.2; use `max,sme=off` or `{DEFAULT_CPU}`"
        );
    }
    Ok(cpu.to_string())
}

pub fn cli(args: &[String]) -> Result {
    let opts = parse(args)?;
    let layout = sysroot::ensure()?;
    if opts.setup_only {
        eprintln!(
            "compare: LiteRT for aarch64 is set up in {}",
            layout.base.display()
        );
        return Ok(());
    }
    let cpu = opts.cpu.as_deref().unwrap_or(DEFAULT_CPU);
    let root = cpuinfo::root_for(&layout, cpu)?;
    if opts.refs_only {
        return refs_only(&layout, &root, cpu, &opts);
    }
    let defaults = opts.models.is_empty();
    let models = if defaults {
        default_models()?
    } else {
        opts.models.clone()
    };
    let models = checked_models(&models)?;
    if !opts.threads.is_empty() {
        let mut counts = opts.threads.clone();
        counts.push(1);
        counts.sort_unstable();
        counts.dedup();
        return compare_threads(
            &layout,
            &root,
            cpu,
            &models,
            &counts,
            opts.reps.unwrap_or(DEFAULT_REPS),
            opts.jobs.unwrap_or(1),
        );
    }
    compare(
        defaults,
        &layout,
        &root,
        cpu,
        &models,
        opts.reps.unwrap_or(DEFAULT_REPS),
        opts.jobs.unwrap_or(1),
    )
}

/// The `.tflite` files directly in `models/`, `models/nets/` and
/// `models/tflite_micro/` (the whole models, generated and published; the
/// single-op cases in
/// `models/ops/` all share the stem `model` and are measured one `--model`
/// at a time), or the fixture when there are none. Of these, the ones
/// qneon cannot run yet are skipped with a note (an explicit `--model` it
/// cannot run is an error).
fn default_models() -> Result<Vec<PathBuf>> {
    let models_dir = util::root().join("models");
    let mut models = top_level_tflite(&models_dir);
    models.sort();
    for sub in ["nets", "tflite_micro"] {
        let mut more = top_level_tflite(&models_dir.join(sub));
        more.sort();
        models.extend(more);
    }
    if models.is_empty() {
        eprintln!("compare: no .tflite files in models/; measuring {FIXTURE}");
        models.push(util::root().join(FIXTURE));
    }
    Ok(models)
}

fn top_level_tflite(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.is_file() && p.extension().is_some_and(|x| x == "tflite"))
        .collect()
}

/// Absolute paths of existing files, with distinct stems (each names its
/// output folder).
fn checked_models(models: &[PathBuf]) -> Result<Vec<PathBuf>> {
    let mut checked: Vec<PathBuf> = Vec::new();
    for model in models {
        if !model.is_file() {
            bail!("compare: model {} not found", model.display());
        }
        let absolute = fs::canonicalize(model)?;
        if checked
            .iter()
            .any(|c| c.file_stem() == absolute.file_stem())
        {
            bail!(
                "compare: two models named {} (outputs go to target/compare/<stem>/)",
                measure::file_name(&absolute)
            );
        }
        checked.push(absolute);
    }
    Ok(checked)
}

fn compare_dir() -> PathBuf {
    util::target_dir().join("compare")
}

/// A LiteRT run of the first batch: counted with a resolver, or the
/// reference kernels' outputs alone.
#[derive(Clone, Copy)]
/// Each holds the model (which names the output folder) and the file
/// LiteRT loads.
enum LiteRtTask<'a> {
    Counted(&'a PathBuf, &'a PathBuf, Resolver),
    Reference(&'a PathBuf, &'a PathBuf),
}

/// Whether the model keeps state across invokes (a variable tensor in any
/// subgraph): repeated invokes on one interpreter then need not give the
/// same outputs.
fn has_state(model: &Path) -> Result<bool> {
    let bytes = fs::read(model)?;
    let parsed =
        qneon_tflite::Model::parse(&bytes).map_err(|e| format!("{}: {e}", model.display()))?;
    Ok(parsed
        .subgraphs()
        .iter()
        .any(|g| g.tensors().iter().any(|t| t.is_variable())))
}

fn model_dir(model: &Path) -> PathBuf {
    let stem = model.file_stem().unwrap_or_default().to_string_lossy();
    compare_dir().join(&*stem)
}

/// `--threads`: XNNPACK at each thread count, per thread; rows merged into
/// `target/compare/threads.json`.
fn compare_threads(
    layout: &sysroot::Layout,
    root: &Path,
    cpu: &str,
    models: &[PathBuf],
    counts: &[u32],
    reps: u64,
    jobs: usize,
) -> Result {
    let plugin = plugin::insn_plugin()?;
    let litert_models = models
        .iter()
        .map(|m| litert_model(m))
        .collect::<Result<Vec<_>>>()?;
    let tasks: Vec<(usize, u32)> = (0..models.len())
        .flat_map(|m| counts.iter().map(move |&n| (m, n)))
        .collect();
    util::step(format!(
        "measuring {} model(s) with XNNPACK at num_threads {counts:?} under qemu -cpu {cpu}, per thread, \
         R = {reps} and 2R invocations",
        models.len()
    ));
    let rows = util::parallel(&tasks, jobs, "LiteRT run(s)", |_, &(m, n)| {
        let model = measure::file_name(&models[m]);
        let out_dir = model_dir(&models[m]).join(format!("xnnpack-t{n}"));
        let job = Job {
            counter: Counter {
                layout,
                root,
                cpu,
                plugin: &plugin,
            },
            model: &litert_models[m],
            resolver: Resolver::Xnnpack,
            threads: Some(n),
            reps,
            out_dir: &out_dir,
            stateful: false,
        };
        let row = threads::measure(&job, &model).map_err(|e| e.to_string())?;
        eprintln!(
            "  {model} xnnpack {n} thread(s): critical path {} instructions per inference",
            util::thousands(row.critical_path())
        );
        Ok(row)
    })?;
    fs::create_dir_all(compare_dir())?;
    let path = compare_dir().join("threads.json");
    let all = threads::merge_rows(&path, cpu, &rows)?;
    println!("{}", threads::markdown(cpu, &all));
    println!("rows in {}", path.display());
    Ok(())
}

/// What LiteRT loads for `model`: the model, or a copy where LiteRT
/// refuses the published file (see `litert_copy`).
fn litert_model(model: &Path) -> Result<PathBuf> {
    let (copy, changed) = litert_copy::litert_copy(&fs::read(model)?)
        .map_err(|e| format!("{}: {e}", model.display()))?;
    if changed == 0 {
        return Ok(model.to_path_buf());
    }
    let dir = model_dir(model);
    fs::create_dir_all(&dir)?;
    let path = dir.join(format!(
        "{}.litert.tflite",
        model.file_stem().unwrap_or_default().to_string_lossy()
    ));
    fs::write(&path, copy)?;
    eprintln!(
        "compare: LiteRT runs {} ({changed} rank-1 tensors' quantized_dimension set to 0)",
        path.display()
    );
    Ok(path)
}

fn compare(
    defaults: bool,
    layout: &sysroot::Layout,
    root: &Path,
    cpu: &str,
    models: &[PathBuf],
    reps: u64,
    jobs: usize,
) -> Result {
    let started = Instant::now();
    let plugin = plugin::insn_plugin()?;
    let qneon_binary = util::build_aarch64_release(qneon::BIN)?;
    // Before anything is measured: a model qneon cannot run fails here,
    // with what it cannot run, rather than after the LiteRT runs (among the
    // default models it is skipped).
    let mut runnable = Vec::new();
    let mut arenas = Vec::new();
    for model in models {
        match qneon::preflight(&qneon_binary, cpu, model) {
            Ok(arena) => {
                runnable.push(model.clone());
                arenas.push(arena);
            }
            Err(e) if defaults => eprintln!("compare: skipping {e}"),
            Err(e) => return Err(e),
        }
    }
    let models = &runnable[..];
    // What LiteRT loads: the model, or a copy where LiteRT refuses the
    // published file (see `litert_copy`).
    let litert_models = models
        .iter()
        .map(|m| litert_model(m))
        .collect::<Result<Vec<_>>>()?;
    let tasks: Vec<LiteRtTask> = models
        .iter()
        .zip(&litert_models)
        .flat_map(|(m, l)| {
            Resolver::ALL
                .map(|r| LiteRtTask::Counted(m, l, r))
                .into_iter()
                .chain([LiteRtTask::Reference(m, l)])
        })
        .collect();
    util::step(format!(
        "measuring {} model(s) x {{xnnpack, builtin}} under qemu -cpu {cpu}, R = {reps} and 2R invocations, \
         and the reference kernels' outputs",
        models.len()
    ));
    let measurements: Vec<Option<Measurement>> =
        util::parallel(&tasks, jobs, "LiteRT run(s)", |_, task| match *task {
            LiteRtTask::Counted(model, litert_model, resolver) => {
                let out_dir = model_dir(model).join(resolver.name());
                let job = Job {
                    counter: Counter {
                        layout,
                        root,
                        cpu,
                        plugin: &plugin,
                    },
                    model: litert_model,
                    resolver,
                    threads: None,
                    reps,
                    out_dir: &out_dir,
                    stateful: has_state(model).map_err(|e| e.to_string())?,
                };
                let m = measure::measure(&job).map_err(|e| e.to_string())?;
                eprintln!(
                    "  {} {}: {} instructions per inference",
                    measure::file_name(model),
                    resolver.name(),
                    m.per_inference().map(util::thousands).unwrap_or_default()
                );
                Ok(Some(m))
            }
            LiteRtTask::Reference(model, litert_model) => {
                let out_dir = model_dir(model).join(measure::REF_RESOLVER);
                let _ = fs::remove_dir_all(&out_dir);
                // LiteRT's reference kernels abort on some valid models:
                // recorded, and qneon's reference path then has no
                // reference to equal.
                if let Err(e) = measure::litert_outputs(
                    layout,
                    root,
                    cpu,
                    litert_model,
                    measure::REF_RESOLVER,
                    &[],
                    &out_dir,
                ) {
                    fs::create_dir_all(&out_dir).map_err(|e| e.to_string())?;
                    fs::write(out_dir.join(qneon::REF_ABORTED), e.to_string())
                        .map_err(|e| e.to_string())?;
                    eprintln!(
                        "  {} ref: LiteRT's reference kernels failed ({})",
                        measure::file_name(model),
                        e.to_string().lines().last().unwrap_or_default()
                    );
                    return Ok(None);
                }
                eprintln!("  {} ref: outputs written", measure::file_name(model));
                Ok(None)
            }
        })?;

    util::step(format!(
        "measuring qneon on {} model(s) under qemu -cpu {cpu}, R = {reps} and 2R invokes",
        models.len()
    ));
    let qneon_results: Vec<qneon::QneonResult> =
        util::parallel(models, jobs, "qneon run(s)", |_, model| {
            let dir = model_dir(model);
            let (builtin_dir, ref_dir) = (dir.join("builtin"), dir.join(measure::REF_RESOLVER));
            if !ref_dir.join(qneon::REF_ABORTED).exists() {
                same_generated_inputs(&builtin_dir, &ref_dir).map_err(|e| e.to_string())?;
            }
            let job = qneon::Job {
                binary: &qneon_binary,
                plugin: &plugin,
                cpu,
                model,
                reps,
                builtin_dir: &builtin_dir,
                ref_dir: &ref_dir,
                xnnpack_dir: &dir.join("xnnpack"),
                out_dir: &dir.join("qneon"),
                stateful: has_state(model).map_err(|e| e.to_string())?,
            };
            let q = qneon::measure(&job).map_err(|e| e.to_string())?;
            eprintln!(
                "  {} qneon: {} instructions per inference",
                measure::file_name(model),
                util::thousands(q.per_inference)
            );
            Ok(q)
        })?;

    let mut rows = Vec::new();
    let counted: Vec<&Measurement> = measurements.iter().flatten().collect();
    for (((model, pair), q), arena) in models
        .iter()
        .zip(counted.chunks(2))
        .zip(qneon_results)
        .zip(arenas)
    {
        let per = |r: Resolver| -> Result<u64> {
            match pair.iter().find(|m| m.resolver == r) {
                Some(m) => m.per_inference(),
                None => bail!("no {} measurement", r.name()),
            }
        };
        rows.push(table::Row {
            model: measure::file_name(model),
            cpu: cpu.to_string(),
            reps,
            tflite_xnnpack: per(Resolver::Xnnpack)?,
            tflite_builtin: per(Resolver::Builtin)?,
            qneon: Some(table::QneonColumns {
                instructions: q.per_inference,
                bit_exact_lut: q.bit_exact_lut,
                bit_exact_fixed: q.bit_exact_fixed,
                bit_exact_xnnpack: q.bit_exact_xnnpack,
                arena_bytes: Some(arena),
                xnnpack_max_abs_diff: q.xnnpack_max_abs_diff,
                op_types: q.op_types,
            }),
        });
    }
    let path = compare_dir().join("compare.json");
    let old = match fs::read_to_string(&path) {
        Ok(text) => table::parse(&text).unwrap_or_else(|e| {
            eprintln!("compare: starting a new {} ({e})", path.display());
            Vec::new()
        }),
        Err(_) => Vec::new(),
    };
    let all = table::merge(old, &rows);
    fs::write(&path, table::to_text(&all)?)?;
    println!(
        "\nguest instructions per inference (qemu -cpu {cpu}); qneon with --softmax lut; \
              bit-exact: qneon lut vs LiteRT builtin, qneon fixed vs LiteRT reference kernels, \
              qneon --kernels xnnpack vs LiteRT+XNNPACK:\n"
    );
    print!("{}", table::format_table(&rows));
    eprintln!(
        "\ncompare: wrote {} and outputs under {}/<model>/<runtime>/ in {:.0} s",
        path.display(),
        compare_dir().display(),
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// The seeded inputs LiteRT generated in two runs of the same model are the
/// same bytes (they come from the same seed; qneon gets the builtin run's).
fn same_generated_inputs(a: &Path, b: &Path) -> Result {
    for entry in fs::read_dir(a)? {
        let name = entry?.file_name().to_string_lossy().into_owned();
        let input = name.starts_with("input_") && name.ends_with(".npy");
        if input && fs::read(a.join(&name))? != fs::read(b.join(&name)).unwrap_or_default() {
            bail!(
                "{name} differs between {} and {}: the runs did not see the same inputs",
                a.display(),
                b.display()
            );
        }
    }
    Ok(())
}

fn refs_only(layout: &sysroot::Layout, root: &Path, cpu: &str, opts: &Options) -> Result {
    let model = &checked_models(&opts.models)?[0];
    let mut inputs = Vec::new();
    for (key, file) in &opts.inputs {
        if !file.is_file() {
            bail!("compare: input file {} not found", file.display());
        }
        inputs.push((key.clone(), fs::canonicalize(file)?));
    }
    let out = opts
        .out
        .as_ref()
        .expect("parse requires --out with --refs-only");
    fs::create_dir_all(out)?;
    // Files of an earlier run with more outputs or generated inputs would
    // pass for this run's; only the driver's own file names are removed.
    for entry in fs::read_dir(out)? {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let ours = name == "run.json"
            || ((name.starts_with("output_") || name.starts_with("input_"))
                && name.ends_with(".npy"));
        if ours && entry.file_type()?.is_file() {
            fs::remove_file(entry.path())?;
        }
    }
    let resolver = opts.resolver.unwrap_or(Resolver::Builtin);
    measure::reference_outputs(layout, root, cpu, model, resolver, &inputs, out)?;
    eprintln!(
        "compare: LiteRT {} outputs of {} written to {} (output_<i>.npy, run.json; \
         step<k>/output_<i>.npy for a sequence)",
        resolver.name(),
        measure::file_name(model),
        out.display()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(text: &str) -> Vec<String> {
        text.split_whitespace().map(str::to_string).collect()
    }

    #[test]
    fn finds_the_state_of_the_audio_models() {
        let published = |name: &str| util::root().join("models/tflite_micro").join(name);
        assert!(has_state(&published("keyword_scrambled.tflite")).unwrap());
        assert!(has_state(&published("trained_lstm_int8.tflite")).unwrap());
        assert!(!has_state(&published("person_detect.tflite")).unwrap());
        assert!(has_state(Path::new("no/such/model.tflite")).is_err());
    }

    #[test]
    fn parses_a_measurement() {
        let opts = parse(&args(
            "--model a.tflite --model b.tflite --cpu max,sme=off --reps 5",
        ))
        .unwrap();
        assert_eq!(
            opts.models,
            [PathBuf::from("a.tflite"), PathBuf::from("b.tflite")]
        );
        assert_eq!(opts.cpu.as_deref(), Some("max,sme=off"));
        assert_eq!(opts.reps, Some(5));
        assert!(!opts.refs_only);
    }

    #[test]
    fn parses_refs_only() {
        let opts = parse(&args(
            "--refs-only --model m.tflite --input 0=x.npy --input ids=y.npy --out refs",
        ))
        .unwrap();
        assert!(opts.refs_only);
        assert_eq!(
            opts.inputs,
            [
                ("0".to_string(), PathBuf::from("x.npy")),
                ("ids".to_string(), PathBuf::from("y.npy"))
            ]
        );
        assert_eq!(opts.out, Some(PathBuf::from("refs")));
        assert_eq!(opts.resolver, None);
        let xnnpack = parse(&args(
            "--refs-only --model m.tflite --resolver xnnpack --out refs",
        ))
        .unwrap();
        assert_eq!(xnnpack.resolver, Some(Resolver::Xnnpack));
        let builtin = parse(&args(
            "--refs-only --model m.tflite --resolver builtin --out refs",
        ))
        .unwrap();
        assert_eq!(builtin.resolver, Some(Resolver::Builtin));
    }

    #[test]
    fn rejects_bad_combinations() {
        for bad in [
            "--cpu max",
            "--cpu max,sve=off",
            "--reps 0",
            "--reps x",
            "--jobs 0",
            "--model",
            "--input x.npy --refs-only --model m --out d",
            "--input 0=x.npy",
            "--out d",
            "--refs-only --out d",
            "--refs-only --model a --model b --out d",
            "--refs-only --model a --out d --reps 2",
            "--refs-only --model a --out d --resolver ref",
            "--refs-only --model a --out d --resolver",
            "--resolver xnnpack",
            "--setup --model a",
            "--bogus",
        ] {
            assert!(parse(&args(bad)).is_err(), "{bad} was accepted");
        }
        assert!(parse(&args("--cpu max,sme=off")).is_ok());
        assert!(parse(&args("--setup")).is_ok());
    }

    #[test]
    fn the_fixture_exists() {
        assert!(util::root().join(FIXTURE).is_file());
    }

    #[test]
    fn default_models_have_distinct_stems() {
        let models = default_models().unwrap();
        assert!(!models.is_empty());
        assert_eq!(checked_models(&models).unwrap().len(), models.len());
    }
}
