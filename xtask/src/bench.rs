//! `cargo xtask bench`: instructions per element of every kernel under qemu.
//!
//! The main job (no options): build `qneon-bench` for aarch64, ask it for
//! its rows (`--list`: every op, type and method the library implements),
//! run each row on its shapes and backends under `qemu-aarch64` with the
//! instruction-count plugin (`tools/qemu-insn/`) at R and 2R repetitions,
//! two qemu processes at a time, and write `target/bench/insns.json`,
//! `target/bench/insns.md` and `target/bench/insns.svg` (a `--filter` run
//! replaces its rows in the previous `insns.json` and keeps the others).
//! `--mca` adds the
//! llvm-mca loop estimates (see `mca.rs`); `--docs` rewrites the
//! performance section of `docs/PERFORMANCE.md` and `docs/insns.svg` from
//! `insns.json` without measuring. `--run [-- ARGS]` just runs `qneon-bench ARGS` under qemu
//! (`--insn` also prints the guest instruction count).

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use serde_json::Value;

use crate::report::{
    self, uniform_label, Measured, Report, ELEMENT_SHAPES, ROW_SHAPES, UNIFORM_SHAPES,
    UNIFORM_TYPES,
};
use crate::util::{self, bail, Result};
use crate::{mca, plugin, setup};

const BIN: &str = "qneon-bench";
/// Repetitions differenced: R and 2R.
const REPS: (u64, u64) = (1, 2);

#[derive(Debug, PartialEq, Eq)]
struct Options {
    /// Just run qneon-bench under qemu with `bench_args`.
    run: bool,
    /// With `run`: count guest instructions.
    insn: bool,
    /// Rewrite the section of docs/PERFORMANCE.md and the chart from
    /// insns.json (no measuring).
    docs: bool,
    /// Add llvm-mca estimates to the main job.
    mca: bool,
    /// qemu processes at a time.
    jobs: usize,
    /// Passed through to `qneon-bench`: with `run`, its arguments; for the
    /// main job, a `--filter` restricting the rows.
    bench_args: Vec<String>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            run: false,
            insn: false,
            docs: false,
            mca: false,
            jobs: 2,
            bench_args: Vec::new(),
        }
    }
}

const OPTIONS_HELP: &str = "accepted: --mca, --jobs N, --filter TEXT, --docs, \
--run [--insn] [-- ARGS for qneon-bench]";

fn parse(args: &[String]) -> Result<Options> {
    let mut opts = Options::default();
    let mut iter = args.iter();
    while let Some(arg) = iter.next() {
        match arg.as_str() {
            "--run" => opts.run = true,
            "--insn" => {
                opts.run = true;
                opts.insn = true;
            }
            "--docs" => opts.docs = true,
            "--mca" => opts.mca = true,
            "--jobs" => {
                opts.jobs = iter
                    .next()
                    .and_then(|n| n.parse().ok())
                    .filter(|&n| n > 0)
                    .ok_or("bench: --jobs needs a count of at least 1")?;
            }
            "--filter" => {
                let f = iter.next().ok_or("bench: --filter needs a value")?;
                opts.bench_args = vec!["--filter".into(), f.clone()];
            }
            "--" => {
                opts.run = true;
                opts.bench_args = iter.by_ref().cloned().collect();
            }
            other => bail!("bench: unknown option `{other}` ({OPTIONS_HELP})"),
        }
    }
    if opts.docs && (opts.run || opts.mca) {
        bail!(
            "bench: --docs only rewrites {} from insns.json; run the measurement first",
            util::PERFORMANCE_DOC
        );
    }
    Ok(opts)
}

pub fn cli(args: &[String]) -> Result {
    let opts = parse(args)?;
    if opts.docs {
        return update_docs();
    }
    setup::ensure(opts.mca)?;
    let binary = util::build_aarch64_release(BIN)?;
    if opts.run {
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
        return Ok(());
    }
    main_job(&binary, &opts)
}

fn bench_dir() -> PathBuf {
    util::target_dir().join("bench")
}

/// One row of `qneon-bench --list`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Kernel {
    op: String,
    dtype: String,
    method: String,
    row_wise: bool,
}

fn parse_list(text: &str) -> Result<Vec<Kernel>> {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| match l.split_whitespace().collect::<Vec<_>>()[..] {
            [op, dtype, method, kind @ ("row" | "element")] => Ok(Kernel {
                op: op.into(),
                dtype: dtype.into(),
                method: method.into(),
                row_wise: kind == "row",
            }),
            _ => Err(format!("unexpected line from {BIN} --list: {l:?}").into()),
        })
        .collect()
}

/// One measurement: a kernel on a shape and backend.
struct Task<'a> {
    kernel: &'a Kernel,
    shape: &'static str,
    backend: &'static str,
    /// `Some("uniform")`: `qneon-bench --data uniform`, the row's shape
    /// named by [`uniform_label`].
    data: Option<&'static str>,
}

fn main_job(binary: &Path, opts: &Options) -> Result {
    let started = Instant::now();
    let dir = bench_dir();
    let runs = dir.join("runs");
    fs::create_dir_all(&runs).map_err(|e| format!("{}: {e}", runs.display()))?;
    let plugin = plugin::insn_plugin()?;

    let mut list_cmd = Command::new("qemu-aarch64");
    list_cmd
        .args(["-cpu", "max"])
        .arg(binary)
        .arg("--list")
        .args(&opts.bench_args);
    let kernels = parse_list(&util::capture(&mut list_cmd)?)?;
    if kernels.is_empty() {
        bail!("{BIN} --list selected no rows");
    }
    let mut tasks = Vec::new();
    for kernel in &kernels {
        let shapes: &[&'static str] = if kernel.row_wise {
            &ROW_SHAPES
        } else {
            &ELEMENT_SHAPES
        };
        for &shape in shapes {
            for backend in ["neon", "scalar"] {
                tasks.push(Task {
                    kernel,
                    shape,
                    backend,
                    data: None,
                });
            }
        }
    }
    // The table-driven 8- and 16-bit kernels again on full-range uniform
    // rows (new rows beside the ones above, which stay as they are).
    for kernel in &kernels {
        if !kernel.row_wise || !UNIFORM_TYPES.contains(&kernel.dtype.as_str()) {
            continue;
        }
        for &shape in &UNIFORM_SHAPES {
            for backend in ["neon", "scalar"] {
                tasks.push(Task {
                    kernel,
                    shape,
                    backend,
                    data: Some("uniform"),
                });
            }
        }
    }
    util::step(format!(
        "measuring {} kernels, {} rows, 2 qemu runs each, {} at a time",
        kernels.len(),
        tasks.len(),
        opts.jobs
    ));

    let done = AtomicUsize::new(0);
    let rows = util::parallel(&tasks, opts.jobs, "measurement(s)", |i, task| {
        let t0 = Instant::now();
        let result = measure(binary, &plugin, &runs, i, task).map_err(|e| e.to_string());
        let k = done.fetch_add(1, Ordering::Relaxed) + 1;
        match &result {
            Ok(m) => eprintln!(
                "[{k}/{}] {} {} {} {:<6} {:<10} {:>8.2} insns/elem ({:.1}s)",
                tasks.len(),
                m.op,
                m.dtype,
                m.method,
                m.backend,
                m.shape,
                m.insns_per_element,
                t0.elapsed().as_secs_f64()
            ),
            Err(e) => eprintln!("[{k}/{}] FAILED: {e}", tasks.len()),
        }
        result
    })?;

    let mca_loops = if opts.mca {
        util::step("llvm-mca on the kernels' inner loops");
        mca::analyse()?
    } else {
        Vec::new()
    };
    let qemu = util::capture(Command::new("qemu-aarch64").arg("--version"))?
        .lines()
        .next()
        .unwrap_or("qemu-aarch64")
        .trim()
        .to_string();
    let mut notes = vec![format!(
        "every row runs at its full shape with R = {} and 2R = {} repetitions \
         (the count is exact, so one difference suffices; no row needed a smaller shape)",
        REPS.0, REPS.1
    )];
    if !opts.bench_args.is_empty() {
        notes.push(format!(
            "rows selected with `{}`",
            opts.bench_args.join(" ")
        ));
    }
    let json_path = dir.join("insns.json");
    let mut report = Report {
        qemu,
        reps: REPS,
        rows,
        mca: mca_loops,
        notes,
    };
    if !opts.bench_args.is_empty() {
        merge_into_previous(&mut report, &json_path);
    }
    let md_path = dir.join("insns.md");
    let svg_path = dir.join("insns.svg");
    let md = report.markdown();
    write(
        &json_path,
        &(serde_json::to_string_pretty(&report.to_json())? + "\n"),
    )?;
    write(&md_path, &md)?;
    write(&svg_path, &report.svg()?)?;
    println!("{md}");
    println!(
        "wrote {}, {} and {} in {:.0} s (`cargo xtask bench --docs` puts them in {})",
        json_path.display(),
        md_path.display(),
        svg_path.display(),
        started.elapsed().as_secs_f64(),
        util::PERFORMANCE_DOC
    );
    Ok(())
}

/// A filtered run updates the rows it measured in the previous report at
/// `json_path` (same qemu) and keeps the others, so that re-measuring a few
/// kernels after a change does not throw away the full table that
/// `--docs` needs. Without a previous report the filtered rows stand alone.
fn merge_into_previous(report: &mut Report, json_path: &Path) {
    let Ok(text) = fs::read_to_string(json_path) else {
        return;
    };
    let Ok(previous) = serde_json::from_str(&text)
        .map_err(|e| e.to_string())
        .and_then(|v| Report::from_json(&v).map_err(|e| e.to_string()))
    else {
        return;
    };
    merge(previous, report);
}

/// `report`'s rows replace the matching rows of `previous` (see
/// [`merge_into_previous`]); nothing changes if the runs are not comparable.
fn merge(previous: Report, report: &mut Report) {
    if previous.qemu != report.qemu || previous.reps != report.reps {
        return;
    }
    let same = |a: &Measured, b: &Measured| {
        (&a.op, &a.dtype, &a.method, &a.backend, &a.shape)
            == (&b.op, &b.dtype, &b.method, &b.backend, &b.shape)
    };
    let updated = report.rows.len();
    // The previous order (the tables' order), each re-measured row in its
    // old place; rows new to the table go at the end.
    let mut fresh: Vec<Option<Measured>> = report.rows.drain(..).map(Some).collect();
    let mut rows: Vec<Measured> = previous
        .rows
        .into_iter()
        .map(|old| {
            fresh
                .iter_mut()
                .find(|new| new.as_ref().is_some_and(|new| same(&old, new)))
                .and_then(Option::take)
                .unwrap_or(old)
        })
        .collect();
    rows.extend(fresh.into_iter().flatten());
    report.rows = rows;
    if report.mca.is_empty() {
        report.mca = previous.mca;
    }
    report.notes = previous
        .notes
        .into_iter()
        .filter(|n| !n.starts_with("rows selected") && !n.starts_with("rows updated"))
        .collect();
    report.notes.push(format!(
        "rows updated by a filtered run: {updated} (the others are from the previous run)"
    ));
}

fn write(path: &Path, text: &str) -> Result {
    fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()).into())
}

/// Instructions per element of one task: the plugin's counts at R and 2R
/// repetitions, differenced and divided by R times the elements (start-up,
/// input generation and set-up cancel).
fn measure(binary: &Path, plugin: &Path, runs: &Path, i: usize, task: &Task) -> Result<Measured> {
    let k = task.kernel;
    let filter = format!("{} {} {}", k.op, k.dtype, k.method);
    let mut counts = Vec::new();
    let mut row = None;
    for reps in [REPS.0, REPS.1] {
        let json = runs.join(format!("{i}-{reps}.json"));
        let count_file = runs.join(format!("{i}-{reps}.count"));
        let mut args: Vec<String> = [
            "--shape",
            task.shape,
            "--filter",
            &filter,
            "--backend",
            task.backend,
            "--reps",
            &reps.to_string(),
            "--json",
            &json.to_string_lossy(),
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        if let Some(data) = task.data {
            args.extend(["--data".to_string(), data.to_string()]);
        }
        counts.push(plugin::count_to_file(plugin, binary, &args, &count_file)?);
        let text = fs::read_to_string(&json).map_err(|e| format!("{}: {e}", json.display()))?;
        let value: Value = serde_json::from_str(&text)?;
        match value.as_array().map(Vec::as_slice) {
            Some([one]) => row = Some(one.clone()),
            _ => bail!(
                "{filter} {} {}: expected one row from {BIN}, got {text}",
                task.backend,
                task.shape
            ),
        }
    }
    let row = row.expect("two runs");
    let field = |name: &str| row.get(name).and_then(Value::as_u64).unwrap_or(0);
    let elements = field("elements");
    if elements == 0 || counts[1] <= counts[0] {
        bail!(
            "{filter} {} {}: {} repetitions took {} instructions, {} took {}",
            task.backend,
            task.shape,
            REPS.1,
            counts[1],
            REPS.0,
            counts[0]
        );
    }
    let per_rep = (counts[1] - counts[0]) as f64 / (REPS.1 - REPS.0) as f64;
    Ok(Measured {
        op: k.op.clone(),
        dtype: k.dtype.clone(),
        method: k.method.clone(),
        backend: task.backend.into(),
        shape: match task.data {
            Some(_) => uniform_label(task.shape),
            None => task.shape.into(),
        },
        rows: field("rows"),
        cols: field("cols"),
        elements,
        row_wise: k.row_wise,
        insns_per_element: per_rep / elements as f64,
    })
}

/// `--docs`: the section of docs/PERFORMANCE.md and `docs/insns.svg` from
/// insns.json.
fn update_docs() -> Result {
    let json_path = bench_dir().join("insns.json");
    let text = fs::read_to_string(&json_path).map_err(|e| {
        format!(
            "{}: {e} (run `cargo xtask bench` first)",
            json_path.display()
        )
    })?;
    let report = Report::from_json(&serde_json::from_str(&text)?)?;
    let svg_path = util::root().join(report::CHART_SVG);
    if let Some(dir) = svg_path.parent() {
        fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    write(&svg_path, &report.svg()?)?;
    let doc_path = util::rewrite_section(
        util::PERFORMANCE_DOC,
        report::SECTION_BEGIN,
        report::SECTION_END,
        &report.doc_section(),
    )?;
    println!(
        "rewrote the bench section of {} and {} from {}",
        doc_path.display(),
        svg_path.display(),
        json_path.display()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    fn measured(op: &str, backend: &str, ipe: f64) -> Measured {
        Measured {
            op: op.into(),
            dtype: "int8".into(),
            method: "lut".into(),
            backend: backend.into(),
            shape: "short".into(),
            rows: 1,
            cols: 16,
            elements: 16,
            row_wise: true,
            insns_per_element: ipe,
        }
    }

    fn report(rows: Vec<Measured>) -> Report {
        Report {
            qemu: "qemu 1".into(),
            reps: REPS,
            rows,
            mca: Vec::new(),
            notes: vec!["rows selected with `--filter x`".into()],
        }
    }

    #[test]
    fn a_filtered_run_replaces_its_rows_in_place() {
        let previous = report(vec![
            measured("softmax", "neon", 1.0),
            measured("softmax", "scalar", 9.0),
            measured("tanh", "neon", 2.0),
        ]);
        let mut new = report(vec![
            measured("tanh", "neon", 1.5),
            measured("logistic", "neon", 0.5),
        ]);
        merge(previous.clone(), &mut new);
        let got: Vec<_> = new
            .rows
            .iter()
            .map(|r| (r.op.as_str(), r.backend.as_str(), r.insns_per_element))
            .collect();
        assert_eq!(
            got,
            [
                ("softmax", "neon", 1.0),
                ("softmax", "scalar", 9.0),
                ("tanh", "neon", 1.5),
                ("logistic", "neon", 0.5)
            ]
        );
        assert_eq!(new.notes.len(), 1, "{:?}", new.notes);
        assert!(new.notes[0].starts_with("rows updated"));
        // Another qemu: not comparable, the filtered rows stand alone.
        let mut other = report(vec![measured("tanh", "neon", 1.5)]);
        other.qemu = "qemu 2".into();
        merge(previous, &mut other);
        assert_eq!(other.rows.len(), 1);
    }

    use super::*;

    fn strings(args: &[&str]) -> Vec<String> {
        args.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn parses_options() {
        let opts = parse(&strings(&["--insn", "--", "--rows", "8", "--insn"])).unwrap();
        assert!(opts.run && opts.insn);
        assert_eq!(opts.bench_args, strings(&["--rows", "8", "--insn"]));
        assert_eq!(parse(&[]).unwrap(), Options::default());
        assert!(parse(&strings(&["--table"])).is_err());
        let main = parse(&strings(&[
            "--mca",
            "--jobs",
            "3",
            "--filter",
            "softmax int8",
        ]))
        .unwrap();
        assert!(main.mca && !main.run);
        assert_eq!(main.jobs, 3);
        assert_eq!(main.bench_args, strings(&["--filter", "softmax int8"]));
        assert!(parse(&strings(&["--docs"])).unwrap().docs);
        assert!(parse(&strings(&["--readme"])).is_err());
        assert!(parse(&strings(&["--docs", "--mca"])).is_err());
        assert!(parse(&strings(&["--docs", "--run"])).is_err());
        assert!(parse(&strings(&["--jobs", "0"])).is_err());
        assert!(parse(&strings(&["--rows"])).is_err());
    }

    #[test]
    fn parses_the_row_list() {
        let list = parse_list("softmax int8 fixed row\nlogistic int8 lut element\n\n").unwrap();
        assert_eq!(
            list,
            [
                Kernel {
                    op: "softmax".into(),
                    dtype: "int8".into(),
                    method: "fixed".into(),
                    row_wise: true
                },
                Kernel {
                    op: "logistic".into(),
                    dtype: "int8".into(),
                    method: "lut".into(),
                    row_wise: false
                },
            ]
        );
        assert!(parse_list("softmax int8 fixed sideways").is_err());
        assert!(parse_list("softmax int8").is_err());
    }
}
