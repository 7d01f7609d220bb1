//! `cargo xtask run`: the MobileBert layer runner under qemu, with the
//! guest instructions of every op.
//!
//! The main job builds the instruction-count plugin (`tools/qemu-insn/`) and
//! `qneon-mobilebert` for aarch64 (release), then runs the layer once per
//! configuration (softmax method x backend) under `qemu-aarch64 -cpu max`
//! with the plugin, two qemu processes at a time. Ops are counted by
//! *marked regions*, not by differencing runs: the runner brackets each op
//! with a marker instruction (`src/bin/qneon-mobilebert/marker.rs`) and the
//! plugin attributes every executed instruction to the region current when
//! it ran, exactly, in one run. Region ids are the op ids of the runner's
//! JSON; region 0 is everything outside the ops (loading the model, set-up,
//! I/O), reported apart from the layer total.
//!
//! Each configuration gets a table (op, calls, work, instructions,
//! instructions per MAC or element, share of the layer), the layer total
//! against the bound `2 * MACs / 16`, the softmax share against its target
//! and the runner's accuracy and checksum; then a summary over all
//! configurations. Runs with the same softmax method must print the same
//! checksum (backends are bit-exact); a mismatch fails the command after the
//! report is written. Output: `target/run/profile.json` and
//! `target/run/profile.md`; `--readme` rewrites README.md between the run
//! markers from `profile.json` without measuring.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use serde_json::{json, Value};

use crate::util::{self, bail, round, thousands, Result};
use crate::{plugin, setup};

const BIN: &str = "qneon-mobilebert";
/// The layer and its input, relative to the workspace root.
const MODEL: &str = "models/mobilebert_layer.qnb";
const INPUT: &str = "models/mobilebert_layer.input.bin";

pub const README_BEGIN: &str = "<!-- run:begin -->";
pub const README_END: &str = "<!-- run:end -->";

/// The configurations run by default, as (backend, softmax method): every
/// method on NEON, and scalar FixedPoint for contrast.
const DEFAULT_CONFIGS: [(&str, &str); 4] = [
    ("neon", "lut"),
    ("neon", "fixed"),
    ("neon", "f32"),
    ("scalar", "fixed"),
];
/// Added by `--all`.
const MORE_CONFIGS: [(&str, &str); 2] = [("scalar", "lut"), ("scalar", "f32")];

/// qemu processes at a time (the machine is shared).
const JOBS: usize = 2;

/// The largest softmax share of the layer's instructions, in percent, that
/// a configuration aims for; `None` where there is no target.
fn softmax_target(backend: &str, softmax: &str) -> Option<f64> {
    match (backend, softmax) {
        ("neon", "lut") => Some(3.0),
        ("neon", "fixed") => Some(20.0),
        _ => None,
    }
}

/// Whether the layer bound `2 * MACs / 16` is a target for `backend`: it
/// assumes 16 MACs per vector instruction, which only NEON has.
fn bound_applies(backend: &str) -> bool {
    backend == "neon"
}

/// Whether an op of the runner is the attention softmax (whose share is
/// the point of the profile): its name contains "softmax".
fn is_softmax(op: &str) -> bool {
    op.contains("softmax")
}

#[derive(Debug, Default, PartialEq, Eq)]
struct Options {
    all: bool,
    readme: bool,
}

fn parse(args: &[String]) -> Result<Options> {
    let mut opts = Options::default();
    for arg in args {
        match arg.as_str() {
            "--all" => opts.all = true,
            "--readme" => opts.readme = true,
            other => bail!("run: unknown option `{other}` (accepted: --all, --readme)"),
        }
    }
    if opts.readme && opts.all {
        bail!(
            "run: --readme only rewrites the README from profile.json; run the measurement first"
        );
    }
    Ok(opts)
}

pub fn cli(args: &[String]) -> Result {
    let opts = parse(args)?;
    if opts.readme {
        return update_readme();
    }
    let configs: Vec<(&str, &str)> = DEFAULT_CONFIGS
        .iter()
        .chain(if opts.all { &MORE_CONFIGS[..] } else { &[] })
        .copied()
        .collect();
    for file in [MODEL, INPUT] {
        if !util::root().join(file).is_file() {
            bail!("run: {file} not found (the layer model and its input are read from models/)");
        }
    }
    setup::ensure(false)?;
    let plugin = plugin::insn_plugin()?;
    let binary = util::build_aarch64_release(BIN)?;
    main_job(&binary, &plugin, &configs)
}

fn run_dir() -> PathBuf {
    util::target_dir().join("run")
}

// ---- What the plugin and the runner write. ----

/// The plugin's `out=` file: the total, then `region ID COUNT` lines.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Regions {
    total: u64,
    /// Instructions per region id; empty if no marker ran.
    counts: BTreeMap<u8, u64>,
}

impl Regions {
    fn parse(text: &str) -> Result<Regions> {
        let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty());
        let first = lines.next().ok_or("the plugin's output file is empty")?;
        let total = first
            .parse()
            .map_err(|_| format!("the plugin's first line is not a count: {first:?}"))?;
        let mut counts = BTreeMap::new();
        for line in lines {
            let (id, count) = match line.split_whitespace().collect::<Vec<_>>()[..] {
                ["region", id, count] => (id.parse::<u8>(), count.parse::<u64>()),
                _ => bail!("unexpected line in the plugin's output: {line:?}"),
            };
            let (Ok(id), Ok(count)) = (id, count) else {
                bail!("bad region line in the plugin's output: {line:?}");
            };
            if counts.insert(id, count).is_some() {
                bail!("region {id} appears twice in the plugin's output");
            }
        }
        let sum: u64 = counts.values().sum();
        if !counts.is_empty() && sum != total {
            bail!("the plugin's regions add up to {sum} instructions, its total is {total}");
        }
        Ok(Regions { total, counts })
    }

    fn get(&self, id: u8) -> u64 {
        self.counts.get(&id).copied().unwrap_or(0)
    }

    fn to_json(&self) -> Value {
        let regions: serde_json::Map<String, Value> = self
            .counts
            .iter()
            .map(|(id, n)| (id.to_string(), json!(n)))
            .collect();
        json!({ "total": self.total, "regions": regions })
    }

    fn from_json(v: &Value) -> Result<Regions> {
        let total = v
            .get("total")
            .and_then(Value::as_u64)
            .ok_or("plugin counts without a total")?;
        let mut counts = BTreeMap::new();
        for (id, n) in v
            .get("regions")
            .and_then(Value::as_object)
            .ok_or("plugin counts without regions")?
        {
            let id: u8 = id.parse().map_err(|_| format!("bad region id {id:?}"))?;
            let n = n.as_u64().ok_or("a region count is not a number")?;
            counts.insert(id, n);
        }
        Ok(Regions { total, counts })
    }
}

/// One op of the layer, as the runner reports it.
#[derive(Debug, Clone, PartialEq)]
struct OpStats {
    /// Its region id (1..=255).
    id: u8,
    op: String,
    calls: u64,
    /// MACs for matrix products, elements for the rest (`unit`).
    work: u64,
    unit: String,
    /// Wall-clock time of the op in the run (under qemu: not meaningful,
    /// kept in the JSON only).
    seconds: f64,
}

/// The runner's `--json` output.
#[derive(Debug, Clone, PartialEq)]
struct RunnerReport {
    softmax: String,
    backend: String,
    dotprod: bool,
    seq_len: u64,
    macs: u64,
    ops: Vec<OpStats>,
    checksum: String,
    cosine: f64,
    max_abs_err_lsb: f64,
    mean_abs_err_lsb: f64,
    /// The JSON as read, kept whole in profile.json.
    raw: Value,
}

impl RunnerReport {
    fn from_json(v: &Value) -> Result<RunnerReport> {
        let str_field = |o: &Value, name: &str| {
            o.get(name)
                .and_then(Value::as_str)
                .map(str::to_string)
                .ok_or_else(|| format!("{BIN} JSON: no string `{name}`"))
        };
        let u64_field = |o: &Value, name: &str| {
            o.get(name)
                .and_then(Value::as_u64)
                .ok_or_else(|| format!("{BIN} JSON: no count `{name}`"))
        };
        let f64_field = |o: &Value, name: &str| {
            o.get(name)
                .and_then(Value::as_f64)
                .ok_or_else(|| format!("{BIN} JSON: no number `{name}`"))
        };
        let mut ops = Vec::new();
        for o in v
            .get("ops")
            .and_then(Value::as_array)
            .ok_or_else(|| format!("{BIN} JSON: no `ops` array"))?
        {
            let id = u64_field(o, "id")?;
            let op = str_field(o, "op")?;
            let id = match u8::try_from(id) {
                Ok(id) if id != 0 => id,
                _ => bail!("{BIN} JSON: op `{op}` has id {id}; region ids are 1..=255"),
            };
            if ops.iter().any(|p: &OpStats| p.id == id) {
                bail!("{BIN} JSON: two ops have id {id}");
            }
            ops.push(OpStats {
                id,
                op,
                calls: u64_field(o, "calls")?,
                work: u64_field(o, "work")?,
                unit: str_field(o, "unit")?,
                seconds: f64_field(o, "seconds")?,
            });
        }
        Ok(RunnerReport {
            softmax: str_field(v, "softmax")?,
            backend: str_field(v, "backend")?,
            dotprod: v
                .get("dotprod")
                .and_then(Value::as_bool)
                .ok_or_else(|| format!("{BIN} JSON: no boolean `dotprod`"))?,
            seq_len: u64_field(v, "seq_len")?,
            macs: u64_field(v, "macs")?,
            ops,
            checksum: str_field(v, "checksum")?,
            cosine: f64_field(v, "cosine")?,
            max_abs_err_lsb: f64_field(v, "max_abs_err_lsb")?,
            mean_abs_err_lsb: f64_field(v, "mean_abs_err_lsb")?,
            raw: v.clone(),
        })
    }
}

// ---- One configuration's profile. ----

/// A run: what the runner said and what the plugin counted.
#[derive(Debug, Clone, PartialEq)]
struct Profile {
    runner: RunnerReport,
    regions: Regions,
}

impl Profile {
    /// Pairs the two outputs of a run, checking they fit together.
    fn new(runner: RunnerReport, regions: Regions) -> Result<Profile> {
        let name = format!("{} {}", runner.backend, runner.softmax);
        if regions.counts.is_empty() {
            bail!("{name}: no region marker ran (is {BIN} built for aarch64 with its markers?)");
        }
        for &id in regions.counts.keys() {
            if id != 0 && !runner.ops.iter().any(|o| o.id == id) {
                bail!(
                    "{name}: the plugin counted region {id}, but no op of the runner has that id"
                );
            }
        }
        Ok(Profile { runner, regions })
    }

    fn name(&self) -> String {
        format!("{} {}", self.runner.backend, self.runner.softmax)
    }

    /// Instructions outside every op (region 0).
    fn outside(&self) -> u64 {
        self.regions.get(0)
    }

    /// Instructions of the layer: every op's region.
    fn layer(&self) -> u64 {
        self.regions.total - self.outside()
    }

    fn op_insns(&self, op: &OpStats) -> u64 {
        self.regions.get(op.id)
    }

    fn softmax_insns(&self) -> u64 {
        self.runner
            .ops
            .iter()
            .filter(|o| is_softmax(&o.op))
            .map(|o| self.op_insns(o))
            .sum()
    }

    /// Share of the layer's instructions, in percent.
    fn share(&self, insns: u64) -> f64 {
        match self.layer() {
            0 => 0.0,
            layer => 100.0 * insns as f64 / layer as f64,
        }
    }

    /// `2 * MACs / 16`: two instructions per 16-MAC vector step.
    fn bound(&self) -> u64 {
        2 * self.runner.macs / 16
    }

    fn target(&self) -> Option<f64> {
        softmax_target(&self.runner.backend, &self.runner.softmax)
    }

    /// The softmax share target, if any, and whether it is met.
    fn softmax_met(&self) -> Option<bool> {
        self.target().map(|t| self.share(self.softmax_insns()) <= t)
    }

    /// The layer bound, if it applies, and whether it is met.
    fn bound_met(&self) -> Option<bool> {
        bound_applies(&self.runner.backend).then(|| self.layer() <= self.bound())
    }

    fn to_json(&self) -> Value {
        let ops: Vec<Value> = self
            .runner
            .ops
            .iter()
            .map(|o| {
                let insns = self.op_insns(o);
                json!({
                    "id": o.id,
                    "op": o.op,
                    "calls": o.calls,
                    "work": o.work,
                    "unit": o.unit,
                    "instructions": insns,
                    "instructions_per_unit": per_unit(insns, o.work).map(|x| round(x, 4)),
                    "share_percent": round(self.share(insns), 3),
                })
            })
            .collect();
        json!({
            "backend": self.runner.backend,
            "softmax": self.runner.softmax,
            "layer_instructions": self.layer(),
            "outside_instructions": self.outside(),
            "bound_instructions": self.bound(),
            "bound_met": self.bound_met(),
            "softmax_instructions": self.softmax_insns(),
            "softmax_share_percent": round(self.share(self.softmax_insns()), 3),
            "softmax_target_percent": self.target(),
            "softmax_met": self.softmax_met(),
            "ops": ops,
            "runner": self.runner.raw,
            "plugin": self.regions.to_json(),
        })
    }

    fn from_json(v: &Value) -> Result<Profile> {
        let runner = RunnerReport::from_json(v.get("runner").ok_or("a profile without `runner`")?)?;
        let regions = Regions::from_json(v.get("plugin").ok_or("a profile without `plugin`")?)?;
        Profile::new(runner, regions)
    }

    /// This configuration's section of the report.
    fn markdown(&self) -> String {
        let r = &self.runner;
        let mut md = format!(
            "### {}\n\nSequence length {}, {} MACs, dotprod {}.\n\n\
             | op | calls | work | instructions | instructions per unit | share of the layer |\n\
             | --- | ---: | ---: | ---: | ---: | ---: |\n",
            self.name(),
            r.seq_len,
            thousands(r.macs),
            if r.dotprod { "on" } else { "off" },
        );
        for o in &r.ops {
            let insns = self.op_insns(o);
            md += &format!(
                "| {} | {} | {} {} | {} | {} | {:.1}% |\n",
                o.op,
                o.calls,
                thousands(o.work),
                o.unit,
                thousands(insns),
                per_unit(insns, o.work)
                    .map(|x| format!("{} / {}", decimals(x), o.unit))
                    .unwrap_or_else(|| "-".into()),
                self.share(insns),
            );
        }
        md += &format!(
            "| **layer** | | | **{}** | | 100% |\n\n",
            thousands(self.layer())
        );
        md += &format!(
            "Layer: {} instructions, {:.2} x the bound 2 x MACs / 16 = {}{}. \
             Outside the ops (loading, set-up, I/O; not in the layer): {}.\n\n",
            thousands(self.layer()),
            ratio(self.layer(), self.bound()),
            thousands(self.bound()),
            match self.bound_met() {
                Some(true) => " (met)",
                Some(false) => " (**not met**)",
                None => " (a NEON target; shown for contrast)",
            },
            thousands(self.outside()),
        );
        md += &format!(
            "Softmax: {} instructions, {:.2}% of the layer{}.\n\n",
            thousands(self.softmax_insns()),
            self.share(self.softmax_insns()),
            match (self.target(), self.softmax_met()) {
                (Some(t), Some(true)) => format!(" (target <= {t}%: met)"),
                (Some(t), _) => format!(" (target <= {t}%: **not met**)"),
                _ => String::new(),
            },
        );
        md += &format!(
            "Output against the float reference: cosine {}, max error {} LSB, \
             mean {} LSB; checksum `{}`.\n",
            r.cosine, r.max_abs_err_lsb, r.mean_abs_err_lsb, r.checksum
        );
        md
    }
}

fn per_unit(insns: u64, work: u64) -> Option<f64> {
    (work > 0).then(|| insns as f64 / work as f64)
}

fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 {
        f64::INFINITY
    } else {
        a as f64 / b as f64
    }
}

// ---- The whole report. ----

#[derive(Debug, Clone, PartialEq)]
struct Report {
    /// `qemu-aarch64 --version`, first line.
    qemu: String,
    profiles: Vec<Profile>,
}

impl Report {
    /// Softmax methods whose runs disagree on the checksum, each with the
    /// (configuration, checksum) pairs, as messages.
    fn checksum_mismatches(&self) -> Vec<String> {
        let mut by_method: BTreeMap<&str, Vec<&Profile>> = BTreeMap::new();
        for p in &self.profiles {
            by_method.entry(&p.runner.softmax).or_default().push(p);
        }
        by_method
            .into_iter()
            .filter(|(_, ps)| {
                ps.iter()
                    .any(|p| p.runner.checksum != ps[0].runner.checksum)
            })
            .map(|(method, ps)| {
                let each: Vec<String> = ps
                    .iter()
                    .map(|p| format!("{} {}", p.runner.backend, p.runner.checksum))
                    .collect();
                format!(
                    "softmax {method}: the backends' outputs differ (checksums {})",
                    each.join(", ")
                )
            })
            .collect()
    }

    fn to_json(&self) -> Value {
        json!({
            "generator": "cargo xtask run",
            "what": "guest instructions per op of one MobileBert layer under qemu, \
                     counted by marked regions (region 0: outside the ops)",
            "qemu": self.qemu,
            "configs": self.profiles.iter().map(Profile::to_json).collect::<Vec<_>>(),
            "checksum_mismatches": self.checksum_mismatches(),
        })
    }

    fn from_json(v: &Value) -> Result<Report> {
        let profiles = v
            .get("configs")
            .and_then(Value::as_array)
            .ok_or("profile.json has no `configs`")?
            .iter()
            .map(Profile::from_json)
            .collect::<Result<Vec<_>>>()?;
        Ok(Report {
            qemu: v
                .get("qemu")
                .and_then(Value::as_str)
                .unwrap_or("qemu-aarch64")
                .to_string(),
            profiles,
        })
    }

    fn summary(&self) -> String {
        let mut md = String::from(
            "| configuration | layer instructions | x (2 x MACs / 16) | softmax instructions \
             | softmax share | target | met? |\n\
             | --- | ---: | ---: | ---: | ---: | ---: | --- |\n",
        );
        for p in &self.profiles {
            let met = match (p.softmax_met(), p.bound_met()) {
                (None, None) => "-".to_string(),
                (s, b) => {
                    let mut missed = Vec::new();
                    if s == Some(false) {
                        missed.push("softmax share");
                    }
                    if b == Some(false) {
                        missed.push("layer bound");
                    }
                    if missed.is_empty() {
                        "yes".into()
                    } else {
                        format!("**no** ({})", missed.join(", "))
                    }
                }
            };
            md += &format!(
                "| {} | {} | {:.2} | {} | {:.2}% | {} | {} |\n",
                p.name(),
                thousands(p.layer()),
                ratio(p.layer(), p.bound()),
                thousands(p.softmax_insns()),
                p.share(p.softmax_insns()),
                p.target()
                    .map(|t| format!("<= {t}%"))
                    .unwrap_or_else(|| "-".into()),
                met,
            );
        }
        md
    }

    /// The report as Markdown (profile.md, and the README section).
    fn markdown(&self) -> String {
        let mut md = format!(
            "Guest instructions of one int8 MobileBert layer (`{BIN}`, release, aarch64, \
             `qemu-aarch64 -cpu max`; {}), counted per op by the plugin in \
             `tools/qemu-insn/`: the runner marks each op's code as a region and \
             every executed instruction counts in the region it ran in, exactly, \
             in one run per configuration (configuration = backend and softmax method). \
             Instructions outside the ops (loading the model, set-up, I/O) are not in \
             the layer total. Targets on NEON: softmax <= 3% of the layer with the Lut \
             method, <= 20% with FixedPoint, and the layer within 2 x MACs / 16 \
             instructions. Instruction counts are not cycles.\n\n",
            self.qemu
        );
        md += &self.summary();
        let mismatches = self.checksum_mismatches();
        if mismatches.is_empty() {
            md += "\nRuns with the same softmax method print the same checksum on every backend.\n";
        } else {
            md += "\n**Checksum mismatch** (backends must be bit-exact):\n\n";
            for m in &mismatches {
                md += &format!("- {m}\n");
            }
        }
        for p in &self.profiles {
            md += "\n";
            md += &p.markdown();
        }
        md
    }
}

// ---- Running. ----

/// Runs one configuration under qemu with the plugin and reads both outputs.
fn measure(
    binary: &Path,
    plugin: &Path,
    runs: &Path,
    backend: &str,
    softmax: &str,
) -> Result<Profile> {
    let stem = format!("{backend}-{softmax}");
    let json_file = runs.join(format!("{stem}.json"));
    let count_file = runs.join(format!("{stem}.insn"));
    let _ = fs::remove_file(&json_file);
    let stdout = util::capture(
        plugin::qemu_command(plugin, &count_file, binary)?
            .args([
                "--model",
                MODEL,
                "--input",
                INPUT,
                "--softmax",
                softmax,
                "--backend",
                backend,
                "--json",
            ])
            .arg(&json_file)
            .current_dir(util::root()),
    )?;
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
    Profile::new(runner, Regions::parse(&read(&count_file)?)?)
}

fn main_job(binary: &Path, plugin: &Path, configs: &[(&str, &str)]) -> Result {
    let started = Instant::now();
    let dir = run_dir();
    let runs = dir.join("runs");
    fs::create_dir_all(&runs).map_err(|e| format!("{}: {e}", runs.display()))?;
    util::step(format!(
        "running {} configurations of {BIN} under qemu with the instruction-count plugin, {JOBS} at a time",
        configs.len()
    ));

    let profiles = util::parallel(configs, JOBS, "run(s)", |_, &(backend, softmax)| {
        let t0 = Instant::now();
        let result = measure(binary, plugin, &runs, backend, softmax).map_err(|e| e.to_string());
        match &result {
            Ok(p) => eprintln!(
                "{backend} {softmax}: layer {} instructions, softmax {:.1}% ({:.0} s)",
                thousands(p.layer()),
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
    let report = Report { qemu, profiles };
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
        "wrote {} and {} in {:.0} s (`cargo xtask run --readme` puts them in README.md)",
        json_path.display(),
        md_path.display(),
        started.elapsed().as_secs_f64()
    );
    let mismatches = report.checksum_mismatches();
    if !mismatches.is_empty() {
        bail!(
            "checksum mismatch (backends must be bit-exact):\n  {}",
            mismatches.join("\n  ")
        );
    }
    Ok(())
}

/// `--readme`: the README section from profile.json.
fn update_readme() -> Result {
    let json_path = run_dir().join("profile.json");
    let text = fs::read_to_string(&json_path)
        .map_err(|e| format!("{}: {e} (run `cargo xtask run` first)", json_path.display()))?;
    let report = Report::from_json(&serde_json::from_str(&text)?)?;
    let readme_path = util::root().join("README.md");
    let readme =
        fs::read_to_string(&readme_path).map_err(|e| format!("{}: {e}", readme_path.display()))?;
    write(&readme_path, &replace_section(&readme, &report.markdown())?)?;
    println!(
        "rewrote the run section of {} from {}",
        readme_path.display(),
        json_path.display()
    );
    Ok(())
}

/// `readme` with the text between the run markers replaced by `section`.
fn replace_section(readme: &str, section: &str) -> Result<String> {
    util::replace_between(readme, README_BEGIN, README_END, section)
}

fn write(path: &Path, text: &str) -> Result {
    fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()).into())
}

/// Instructions per unit to about three significant digits (four
/// decimals below 0.01).
fn decimals(x: f64) -> String {
    if x >= 100.0 {
        format!("{x:.0}")
    } else if x >= 10.0 {
        format!("{x:.1}")
    } else if x >= 1.0 {
        format!("{x:.2}")
    } else if x >= 0.01 {
        format!("{x:.3}")
    } else {
        format!("{x:.4}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(args: &[&str]) -> Vec<String> {
        args.iter().map(|s| s.to_string()).collect()
    }

    /// A runner JSON in the contract's format: a 1.6 M MAC layer (bound
    /// 2 x 1.6 M / 16 = 200,000 instructions).
    fn runner_json(backend: &str, softmax: &str, checksum: &str) -> Value {
        json!({
            "softmax": softmax, "backend": backend, "dotprod": true, "seq_len": 384,
            "macs": 1_600_000u64,
            "ops": [
                {"id": 1, "op": "gemm", "calls": 2, "work": 1_600_000u64, "unit": "MAC", "seconds": 0.5},
                {"id": 2, "op": "softmax", "calls": 1, "work": 10_000, "unit": "element", "seconds": 0.25},
                {"id": 3, "op": "layernorm", "calls": 2, "work": 5_000, "unit": "element", "seconds": 0.125}
            ],
            "checksum": checksum, "cosine": 0.998, "max_abs_err_lsb": 3, "mean_abs_err_lsb": 0.41
        })
    }

    /// Plugin output for it: 50,000 outside, a layer of 150,000 + 30,000 +
    /// 20,000 = 200,000 (softmax 15%).
    const PLUGIN_OUT: &str =
        "250000\nregion 0 50000\nregion 1 150000\nregion 2 30000\nregion 3 20000\n";

    fn profile(backend: &str, softmax: &str, checksum: &str) -> Profile {
        let runner = RunnerReport::from_json(&runner_json(backend, softmax, checksum)).unwrap();
        Profile::new(runner, Regions::parse(PLUGIN_OUT).unwrap()).unwrap()
    }

    #[test]
    fn parses_options() {
        assert_eq!(parse(&[]).unwrap(), Options::default());
        assert!(parse(&strings(&["--all"])).unwrap().all);
        assert!(parse(&strings(&["--readme"])).unwrap().readme);
        assert!(parse(&strings(&["--readme", "--all"])).is_err());
        assert!(parse(&strings(&["--seq", "128"])).is_err());
    }

    #[test]
    fn parses_plugin_output() {
        let r = Regions::parse(PLUGIN_OUT).unwrap();
        assert_eq!(r.total, 250_000);
        assert_eq!(
            r.counts.into_iter().collect::<Vec<_>>(),
            [(0, 50_000), (1, 150_000), (2, 30_000), (3, 20_000)]
        );
        // No marker ran: the total alone, as `cargo xtask bench` reads it.
        let plain = Regions::parse("1234\n").unwrap();
        assert_eq!((plain.total, plain.counts.len()), (1234, 0));
        assert_eq!(Regions::parse("7\nregion 255 7\n").unwrap().get(255), 7);

        for bad in [
            "",
            "x\n",
            "10\nregion 0 4\n",             // regions short of the total
            "10\nregion 0 5\nregion 0 5\n", // a region twice
            "10\nregion 256 10\n",          // not an id
            "10\nregion 1\n",               // no count
            "10\nzone 1 10\n",
        ] {
            assert!(Regions::parse(bad).is_err(), "{bad:?} parsed");
        }
    }

    #[test]
    fn parses_runner_json() {
        let r = RunnerReport::from_json(&runner_json("neon", "lut", "0x1234abcd")).unwrap();
        assert_eq!((r.backend.as_str(), r.softmax.as_str()), ("neon", "lut"));
        assert!(r.dotprod);
        assert_eq!((r.seq_len, r.macs), (384, 1_600_000));
        assert_eq!(r.checksum, "0x1234abcd");
        assert_eq!(
            (r.cosine, r.max_abs_err_lsb, r.mean_abs_err_lsb),
            (0.998, 3.0, 0.41)
        );
        assert_eq!(
            r.ops[1],
            OpStats {
                id: 2,
                op: "softmax".into(),
                calls: 1,
                work: 10_000,
                unit: "element".into(),
                seconds: 0.25
            }
        );

        let with_op = |op: Value| {
            let mut v = runner_json("neon", "lut", "0x0");
            v["ops"].as_array_mut().unwrap().push(op);
            RunnerReport::from_json(&v)
        };
        let op = |id: u64| json!({"id": id, "op": "x", "calls": 1, "work": 1, "unit": "element", "seconds": 0.0});
        assert!(with_op(op(4)).is_ok());
        assert!(with_op(op(0)).is_err(), "id 0 is outside the ops");
        assert!(with_op(op(256)).is_err(), "ids fit the marker's 8 bits");
        assert!(with_op(op(1)).is_err(), "ids are unique");
        let mut v = runner_json("neon", "lut", "0x0");
        v.as_object_mut().unwrap().remove("checksum");
        assert!(RunnerReport::from_json(&v).is_err());
    }

    #[test]
    fn profile_attributes_regions_to_ops() {
        let p = profile("neon", "fixed", "0x1");
        assert_eq!(
            (p.outside(), p.layer(), p.bound()),
            (50_000, 200_000, 200_000)
        );
        assert_eq!(p.softmax_insns(), 30_000);
        assert_eq!(p.share(p.softmax_insns()), 15.0);
        // 15% <= 20% and 200,000 <= 200,000.
        assert_eq!((p.softmax_met(), p.bound_met()), (Some(true), Some(true)));
        let lut = profile("neon", "lut", "0x1");
        assert_eq!(
            lut.softmax_met(),
            Some(false),
            "15% is over the Lut target of 3%"
        );
        let scalar = profile("scalar", "fixed", "0x1");
        assert_eq!((scalar.softmax_met(), scalar.bound_met()), (None, None));

        let runner = RunnerReport::from_json(&runner_json("neon", "lut", "0x1")).unwrap();
        let stray = Regions::parse("10\nregion 0 5\nregion 9 5\n").unwrap();
        assert!(
            Profile::new(runner.clone(), stray).is_err(),
            "region 9 is no op"
        );
        let unmarked = Regions::parse("10\n").unwrap();
        assert!(Profile::new(runner, unmarked).is_err(), "no marker ran");
    }

    #[test]
    fn renders_markdown() {
        let p = profile("neon", "fixed", "0x1234abcd");
        let md = p.markdown();
        for line in [
            "### neon fixed",
            "| gemm | 2 | 1,600,000 MAC | 150,000 | 0.094 / MAC | 75.0% |",
            "| softmax | 1 | 10,000 element | 30,000 | 3.00 / element | 15.0% |",
            "| layernorm | 2 | 5,000 element | 20,000 | 4.00 / element | 10.0% |",
            "| **layer** | | | **200,000** | | 100% |",
        ] {
            assert!(md.lines().any(|l| l == line), "no line {line:?} in\n{md}");
        }
        for text in [
            "Layer: 200,000 instructions, 1.00 x the bound 2 x MACs / 16 = 200,000 (met)",
            "Outside the ops (loading, set-up, I/O; not in the layer): 50,000.",
            "Softmax: 30,000 instructions, 15.00% of the layer (target <= 20%: met).",
            "cosine 0.998, max error 3 LSB, mean 0.41 LSB; checksum `0x1234abcd`",
        ] {
            assert!(md.contains(text), "no {text:?} in\n{md}");
        }

        let report = Report {
            qemu: "qemu-aarch64 version 7.2".into(),
            profiles: vec![
                p,
                profile("neon", "lut", "0x9"),
                profile("scalar", "fixed", "0x1234abcd"),
            ],
        };
        let md = report.markdown();
        for line in [
            "| neon fixed | 200,000 | 1.00 | 30,000 | 15.00% | <= 20% | yes |",
            "| neon lut | 200,000 | 1.00 | 30,000 | 15.00% | <= 3% | **no** (softmax share) |",
            "| scalar fixed | 200,000 | 1.00 | 30,000 | 15.00% | - | - |",
        ] {
            assert!(md.lines().any(|l| l == line), "no line {line:?} in\n{md}");
        }
        assert!(md.contains("Runs with the same softmax method print the same checksum"));
        assert!(md.contains("### scalar fixed"));
        assert!(md.contains("(a NEON target; shown for contrast)"));
    }

    #[test]
    fn flags_checksum_mismatch() {
        let same = Report {
            qemu: String::new(),
            profiles: vec![
                profile("neon", "lut", "0xaa"),
                profile("neon", "fixed", "0xbb"),
                profile("scalar", "fixed", "0xbb"),
            ],
        };
        assert!(
            same.checksum_mismatches().is_empty(),
            "methods may differ from each other"
        );
        let differ = Report {
            qemu: String::new(),
            profiles: vec![
                profile("neon", "lut", "0xaa"),
                profile("neon", "fixed", "0xbb"),
                profile("scalar", "fixed", "0xbc"),
            ],
        };
        let m = differ.checksum_mismatches();
        assert_eq!(m.len(), 1);
        assert!(
            m[0].contains("softmax fixed")
                && m[0].contains("neon 0xbb")
                && m[0].contains("scalar 0xbc")
        );
        assert!(differ.markdown().contains("**Checksum mismatch**"));
        assert_eq!(
            differ.to_json()["checksum_mismatches"]
                .as_array()
                .unwrap()
                .len(),
            1
        );
    }

    #[test]
    fn profile_json_round_trips() {
        let report = Report {
            qemu: "qemu-aarch64 version 7.2".into(),
            profiles: vec![
                profile("neon", "lut", "0x1"),
                profile("scalar", "fixed", "0x2"),
            ],
        };
        let text = serde_json::to_string_pretty(&report.to_json()).unwrap();
        let back = Report::from_json(&serde_json::from_str(&text).unwrap()).unwrap();
        assert_eq!(back, report);
        assert_eq!(back.markdown(), report.markdown());
    }

    #[test]
    fn rewrites_readme_section() {
        let readme = "# t\n\nintro\n<!-- run:begin -->\nold\ntable\n<!-- run:end -->\nafter\n";
        assert_eq!(
            replace_section(readme, "new\n\n").unwrap(),
            "# t\n\nintro\n<!-- run:begin -->\nnew\n<!-- run:end -->\nafter\n"
        );
        // Idempotent.
        let once = replace_section(readme, "new").unwrap();
        assert_eq!(replace_section(&once, "new").unwrap(), once);
        // The bench markers are someone else's.
        let bench = "<!-- bench:begin -->\nx\n<!-- bench:end -->\n";
        assert_eq!(
            replace_section(&format!("{bench}{readme}"), "new").unwrap(),
            format!("{bench}# t\n\nintro\n<!-- run:begin -->\nnew\n<!-- run:end -->\nafter\n")
        );
        assert!(replace_section("no markers\n", "x").is_err());
        assert!(replace_section("<!-- run:begin -->\nx\n", "x").is_err());
        assert!(replace_section("<!-- run:end -->\n<!-- run:begin -->\n", "x").is_err());
        assert!(replace_section(&format!("{readme}{readme}"), "x").is_err());
    }

    /// The tools the plugin tests need, or why they are skipped.
    fn cross_tools() -> Option<()> {
        for tool in ["qemu-aarch64", "aarch64-linux-gnu-gcc", "cc"] {
            if util::which(tool).is_none() {
                eprintln!("SKIPPED: `{tool}` is not on PATH (`cargo xtask setup` installs it)");
                return None;
            }
        }
        Some(())
    }

    /// Assembles `source` into a static aarch64 program under target/run/.
    fn assemble(name: &str, source: &str) -> PathBuf {
        let dir = util::target_dir().join("run").join("plugin-test");
        fs::create_dir_all(&dir).unwrap();
        let asm = dir.join(format!("{name}.S"));
        let exe = dir.join(name);
        fs::write(&asm, source).unwrap();
        util::capture(
            Command::new("aarch64-linux-gnu-gcc")
                .args(["-nostdlib", "-static", "-o"])
                .arg(&exe)
                .arg(&asm),
        )
        .unwrap();
        exe
    }

    /// Markers at the start, middle and end of blocks, in loops and around
    /// a call, and two look-alikes that are not markers. Every count below
    /// is read off the program: the marker counts in the region it opens.
    const REGIONS_PROGRAM: &str = "
    .text
    .globl _start
_start:
    mov x1, #0              // region 0: 1
    movz xzr, #0xA001       // region 1: the marker, mov, 100 x (subs, b.ne)
    mov x0, #100
1:  subs x0, x0, #1
    b.ne 1b
    movz xzr, #0xA000       // region 0: the marker and 3 more
    movz x3, #0xA005        // not a marker: writes x3
    movz xzr, #0xA105       // not a marker: no 0xA0 tag
    mov x0, #10
2:  movz xzr, #0xA002       // region 2: 10 x (marker, add, add)
    add x1, x1, #1
    add x1, x1, #1
    movz xzr, #0xA003       // region 3: 10 x (marker, subs, b.ne)
    subs x0, x0, #1
    b.ne 2b
    movz xzr, #0xA0FF       // region 255: marker, bl, mov, 5 x (subs, b.ne), ret
    bl func
    movz xzr, #0xA004       // region 4 (never left): the marker and 3 more
    mov x0, #0
    mov x8, #93             // exit
    svc #0
func:
    mov x2, #5
3:  subs x2, x2, #1
    b.ne 3b
    ret
";

    #[test]
    fn plugin_counts_marked_regions_exactly() {
        if cross_tools().is_none() {
            return;
        }
        let plugin = plugin::insn_plugin().unwrap();
        let exe = assemble("regions", REGIONS_PROGRAM);
        let out = exe.with_extension("insn");
        let _ = fs::remove_file(&out);
        let mut arg = plugin.into_os_string();
        arg.push(",out=");
        arg.push(&out);
        util::capture(
            Command::new("qemu-aarch64")
                .args(["-cpu", "max", "-plugin"])
                .arg(arg)
                .arg(&exe),
        )
        .unwrap();
        let regions = Regions::parse(&fs::read_to_string(&out).unwrap()).unwrap();

        let expected: BTreeMap<u8, u64> = [
            (0, 1 + 4),
            (1, 2 + 100 * 2),
            (2, 10 * 3),
            (3, 10 * 3),
            (255, 3 + 5 * 2 + 1),
            (4, 4),
        ]
        .into_iter()
        .collect();
        assert_eq!(regions.counts, expected);
        assert_eq!(regions.total, expected.values().sum::<u64>());
    }

    #[test]
    fn plugin_without_markers_writes_the_total_alone() {
        if cross_tools().is_none() {
            return;
        }
        let plugin = plugin::insn_plugin().unwrap();
        let exe = assemble(
            "plain",
            "
    .text
    .globl _start
_start:
    mov x0, #7              // 1
1:  subs x0, x0, #1         // 7 x 2
    b.ne 1b
    mov x0, #0              // 3
    mov x8, #93
    svc #0
",
        );
        let out = exe.with_extension("insn");
        // What `cargo xtask bench` calls: it parses the whole file as one count.
        let count = plugin::count_to_file(&plugin, &exe, &[], &out).unwrap();
        assert_eq!(count, 1 + 7 * 2 + 3);
        assert_eq!(fs::read_to_string(&out).unwrap(), "18\n");
    }
}
