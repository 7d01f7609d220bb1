//! `cargo xtask compare --threads N`: TFLite + XNNPACK with `num_threads=N`
//! counted per guest thread, so that qneon's per-thread critical path
//! (`cargo xtask run --threads`) has its like to compare with.
//!
//! XNNPACK splits each operator over a pthreadpool of N threads, the
//! calling (Python main) thread included; under qemu user mode each is a
//! vCPU of its own, counted apart by the plugin (`vcpus=`). As in the
//! single-thread measurement, start-up is cancelled by differencing a run
//! of R invocations and one of 2R, here per thread: thread v's cost of an
//! inference is (count_v(2R) - count_v(R)) / R. Threads are created in the
//! same order in both runs (the pool is made when the delegate is), so
//! vCPU v is the same thread in both.
//!
//! TFLite has no region markers, so there is no per-op split: its critical
//! path is the busiest thread's instructions per inference. That count
//! includes waiting. pthreadpool's threads spin on the pool's state for a
//! while before they park on a futex, and the calling thread spins until
//! the workers are done with an operator; spin iterations are executed
//! instructions and the plugin counts them like any others. How many there
//! are depends on how the host schedules the vCPUs' threads (two shared
//! host cores here), not on the emulated CPU, so they vary from run to
//! run. They are not removed: the busiest thread's count is an upper
//! bound of TFLite's critical path, and the runs' spread is reported.

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use serde_json::{json, Value};

use super::measure::{self, Resolver};
use crate::run::{Regions, Vcpus};
use crate::util::{bail, thousands, Result};

/// XNNPACK with `num_threads` = `threads`, per thread.
#[derive(Debug, Clone, PartialEq)]
pub struct Threaded {
    pub model: String,
    pub threads: u32,
    pub reps: u64,
    /// Per vCPU: its instructions in the R and in the 2R run.
    pub counts: BTreeMap<u32, [u64; 2]>,
}

impl Threaded {
    /// Per thread, its instructions per inference ((2R - R) / R; a thread
    /// that spun less in the longer run can come out below 0, then 0).
    pub fn per_inference(&self) -> BTreeMap<u32, u64> {
        self.counts
            .iter()
            .map(|(&v, &[once, twice])| {
                let diff = twice.saturating_sub(once) as f64 / self.reps as f64;
                (v, diff.round() as u64)
            })
            .collect()
    }

    /// The busiest thread's instructions per inference.
    pub fn critical_path(&self) -> u64 {
        self.per_inference().values().copied().max().unwrap_or(0)
    }

    /// The calling (Python main) thread's instructions per inference: its
    /// share of every operator, its waiting for the workers, and the
    /// interpreter around the operators.
    pub fn main_thread(&self) -> u64 {
        self.per_inference().get(&0).copied().unwrap_or(0)
    }

    /// All threads' instructions per inference.
    pub fn sum(&self) -> u64 {
        self.per_inference().values().sum()
    }

    pub fn to_json(&self) -> Value {
        json!({
            "model": self.model,
            "threads": self.threads,
            "reps": self.reps,
            "critical_path": self.critical_path(),
            "main_thread": self.main_thread(),
            "sum": self.sum(),
            "per_thread": self.per_inference().iter()
                .map(|(v, n)| (v.to_string(), json!(n))).collect::<serde_json::Map<_, _>>(),
            "counts": self.counts.iter()
                .map(|(v, c)| (v.to_string(), json!(c))).collect::<serde_json::Map<_, _>>(),
        })
    }

    pub fn from_json(v: &Value) -> Result<Threaded> {
        let model = v
            .get("model")
            .and_then(Value::as_str)
            .ok_or("threads row without a model")?;
        let num = |name: &str| {
            v.get(name)
                .and_then(Value::as_u64)
                .ok_or_else(|| format!("threads row of {model} without `{name}`"))
        };
        let mut counts = BTreeMap::new();
        for (vcpu, c) in v
            .get("counts")
            .and_then(Value::as_object)
            .ok_or("threads row without counts")?
        {
            let pair: Vec<u64> = c
                .as_array()
                .map(|a| a.iter().filter_map(Value::as_u64).collect())
                .unwrap_or_default();
            let [once, twice] = pair[..] else {
                bail!("threads row of {model}: bad counts of vcpu {vcpu}");
            };
            let vcpu: u32 = vcpu.parse().map_err(|_| format!("bad vcpu {vcpu:?}"))?;
            counts.insert(vcpu, [once, twice]);
        }
        Ok(Threaded {
            model: model.to_string(),
            threads: u32::try_from(num("threads")?).map_err(|_| "threads out of range")?,
            reps: num("reps")?,
            counts,
        })
    }
}

/// Counts the R and the 2R run of XNNPACK with `num_threads` = `threads`
/// (`job.threads`) per thread, checks they produced the same outputs and
/// that the delegate was applied. `model` names the rows (the file the
/// user gave; LiteRT may load a copy of it).
pub fn measure(job: &measure::Job, model: &str) -> Result<Threaded> {
    let Some(threads) = job.threads else {
        bail!("{model}: a threaded measurement without a thread count");
    };
    if job.resolver != Resolver::Xnnpack {
        bail!("{model}: threads are measured with XNNPACK only");
    }
    let [once, twice] = measure::count_r_and_2r(job, |count_file, vcpus_file| {
        let read = |p: &Path| fs::read_to_string(p).map_err(|e| format!("{}: {e}", p.display()));
        let all = Regions::parse(&read(count_file)?)?;
        let vcpus_file = vcpus_file.ok_or("a threaded run without its per-vCPU file")?;
        let vcpus = Vcpus::parse(&read(vcpus_file)?, &all)?;
        Ok(vcpus
            .vcpus
            .iter()
            .map(|(&v, r)| (v, r.total))
            .collect::<BTreeMap<u32, u64>>())
    })?;
    pair_runs(model, threads, job.reps, &once, &twice)
}

/// The per-thread counts of the R and the 2R run, paired by vCPU.
fn pair_runs(
    model: &str,
    threads: u32,
    reps: u64,
    once: &BTreeMap<u32, u64>,
    twice: &BTreeMap<u32, u64>,
) -> Result<Threaded> {
    if once.keys().ne(twice.keys()) {
        bail!(
            "{model} ({threads} threads): the R run had threads {:?}, the 2R run {:?}",
            once.keys().collect::<Vec<_>>(),
            twice.keys().collect::<Vec<_>>()
        );
    }
    if twice.values().sum::<u64>() <= once.values().sum::<u64>() {
        bail!("{model} ({threads} threads): the 2R run counted no more than the R run");
    }
    Ok(Threaded {
        model: model.to_string(),
        threads,
        reps,
        counts: once.iter().map(|(&v, &n)| (v, [n, twice[&v]])).collect(),
    })
}

/// `target/compare/threads.json`: rows keyed by (model, threads), for one
/// `-cpu`. New rows replace those of the same key.
pub fn merge_rows(path: &Path, cpu: &str, rows: &[Threaded]) -> Result<Vec<Threaded>> {
    let mut kept: Vec<Threaded> = match fs::read_to_string(path) {
        Ok(text) => {
            let v: Value = serde_json::from_str(&text)?;
            if v.get("cpu").and_then(Value::as_str) == Some(cpu) {
                v.get("rows")
                    .and_then(Value::as_array)
                    .map(|a| {
                        a.iter()
                            .map(Threaded::from_json)
                            .collect::<Result<Vec<_>>>()
                    })
                    .transpose()?
                    .unwrap_or_default()
            } else {
                Vec::new()
            }
        }
        Err(_) => Vec::new(),
    };
    kept.retain(|k| {
        !rows
            .iter()
            .any(|r| r.model == k.model && r.threads == k.threads)
    });
    kept.extend(rows.iter().cloned());
    kept.sort_by(|a, b| a.model.cmp(&b.model).then(a.threads.cmp(&b.threads)));
    let json = json!({"cpu": cpu, "rows": kept.iter().map(Threaded::to_json).collect::<Vec<_>>()});
    fs::write(path, serde_json::to_string_pretty(&json)? + "\n")?;
    Ok(kept)
}

/// Reads the rows of `target/compare/threads.json` measured on `cpu`.
pub fn read_rows(path: &Path, cpu: &str) -> Result<Vec<Threaded>> {
    let text = fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let v: Value = serde_json::from_str(&text)?;
    if v.get("cpu").and_then(Value::as_str) != Some(cpu) {
        bail!("{} holds no rows measured under -cpu {cpu}", path.display());
    }
    v.get("rows")
        .and_then(Value::as_array)
        .ok_or("threads.json without rows")?
        .iter()
        .map(Threaded::from_json)
        .collect()
}

/// Per model and thread count: critical path, all threads, speedup over
/// the model's 1-thread row, and per-thread counts.
pub fn markdown(cpu: &str, rows: &[Threaded]) -> String {
    let mut md = format!(
        "TFLite + XNNPACK (`num_threads` = N) under `qemu-aarch64 -cpu {cpu}`, instructions per \
         inference per guest thread ((2R - R) / R); critical path = the busiest thread, waiting \
         (spinning) included; the main thread (vCPU 0) is the caller, which waits for the \
         workers at the end of every operator.\n\n"
    );
    md +=
        "| model | threads | critical path | main thread | all threads | speedup | per thread |\n";
    md += "|---|---:|---:|---:|---:|---:|---|\n";
    for r in rows {
        let one = rows
            .iter()
            .find(|o| o.model == r.model && o.threads == 1)
            .map(Threaded::critical_path);
        let speedup = match one {
            Some(one) if r.critical_path() > 0 => {
                format!("{:.2}x", one as f64 / r.critical_path() as f64)
            }
            _ => "-".into(),
        };
        let per_thread: Vec<String> = r
            .per_inference()
            .iter()
            .map(|(v, n)| format!("{v}: {}", thousands(*n)))
            .collect();
        md += &format!(
            "| {} | {} | {} | {} | {} | {speedup} | {} |\n",
            r.model,
            r.threads,
            thousands(r.critical_path()),
            thousands(r.main_thread()),
            thousands(r.sum()),
            per_thread.join(", ")
        );
    }
    md
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(pairs: &[(u32, u64)]) -> BTreeMap<u32, u64> {
        pairs.iter().copied().collect()
    }

    #[test]
    fn pairs_runs_per_thread() {
        // 3 invokes and 6: the main thread (start-up 1000) does 100 per
        // inference, the two workers 60 and 50 (one spun 3 more in R).
        let r = pair_runs(
            "m.tflite",
            3,
            3,
            &map(&[(0, 1300), (1, 183), (2, 150)]),
            &map(&[(0, 1600), (1, 360), (2, 300)]),
        )
        .unwrap();
        assert_eq!(r.per_inference(), map(&[(0, 100), (1, 59), (2, 50)]));
        assert_eq!((r.critical_path(), r.sum()), (100, 209));
        assert_eq!(Threaded::from_json(&r.to_json()).unwrap(), r);

        assert!(pair_runs("m", 2, 3, &map(&[(0, 10), (1, 5)]), &map(&[(0, 20)])).is_err());
        assert!(pair_runs("m", 1, 3, &map(&[(0, 10)]), &map(&[(0, 10)])).is_err());

        let one = pair_runs("m.tflite", 1, 3, &map(&[(0, 1600)]), &map(&[(0, 2800)])).unwrap();
        let md = markdown("neoverse-n1", &[one, r]);
        assert!(
            md.contains("| m.tflite | 1 | 400 | 400 | 400 | 1.00x | 0: 400 |"),
            "{md}"
        );
        assert!(
            md.contains("| m.tflite | 3 | 100 | 100 | 209 | 4.00x | 0: 100, 1: 59, 2: 50 |"),
            "{md}"
        );
    }

    #[test]
    fn merges_rows_by_model_and_threads() {
        let dir = crate::util::target_dir().join("xtask-test-compare-threads");
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        let path = dir.join("threads.json");
        let row = |model: &str, threads, n| Threaded {
            model: model.into(),
            threads,
            reps: 1,
            counts: [(0, [n, 2 * n])].into_iter().collect(),
        };
        merge_rows(&path, "n1", &[row("a", 1, 10), row("a", 4, 5)]).unwrap();
        let rows = merge_rows(&path, "n1", &[row("a", 4, 6), row("b", 1, 7)]).unwrap();
        assert_eq!(rows, [row("a", 1, 10), row("a", 4, 6), row("b", 1, 7)]);
        assert_eq!(read_rows(&path, "n1").unwrap(), rows);
        // Another CPU starts over.
        assert!(read_rows(&path, "max").is_err());
        assert_eq!(
            merge_rows(&path, "max", &[row("c", 2, 1)]).unwrap().len(),
            1
        );
        fs::remove_dir_all(&dir).unwrap();
    }
}
