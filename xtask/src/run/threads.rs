//! `cargo xtask run --threads N`: the same model run by `qneon run --threads
//! N` under qemu, counted per guest thread.
//!
//! qemu user mode runs each guest thread on a vCPU of its own, and the
//! plugin counts every vCPU apart (`vcpus=`, [`Vcpus`]). `qneon run`'s
//! workers execute an op's region marker when they start their share of
//! it and the region-0 marker when they go idle, so per op and thread the
//! plugin has that thread's share, exactly. From it, per op:
//!
//! - *busiest*: the instructions of the thread with the largest share;
//! - *mean*: all threads' instructions of the op over the N threads asked
//!   for (a thread that got no share counts as 0: an op kept on one thread
//!   has balance N);
//! - *balance*: busiest / mean, 1.00 when the split is even.
//!
//! The model's *critical path* is the sum over ops of the busiest thread's
//! count, plus the serial part: setting the inputs on the main thread
//! (vCPU 0, the inputs' region) and the interpreter's work between ops
//! (the invoke loop's region, on whichever thread runs it), per invoke.
//! Loading, planning and files happen once per run, in the set-up's
//! region, and the process's start-up before the first marker in region 0:
//! neither is in a per-invoke figure. Region 0 on the other threads is
//! their idling (spinning or parked), not work, and is not in it either. The critical-path speedup is that of `--threads 1` of the same
//! command over `--threads N`; the op part alone is given too.
//! Every thread count must give the same output bytes.

use std::collections::BTreeMap;

use serde_json::{json, Value};

use super::profile::Profile;
use super::regions::Vcpus;
use super::runner::OpRun;
use crate::util::{bail, thousands, Result};

/// One op of a threaded run.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct OpSplit {
    pub(super) op: OpRun,
    /// Instructions per invoke of the thread with the largest share.
    pub(super) busiest: u64,
    /// All threads' instructions per invoke.
    pub(super) sum: u64,
    /// Threads with a nonzero share.
    pub(super) busy_threads: usize,
}

impl OpSplit {
    pub(super) fn mean(&self, threads: u32) -> f64 {
        self.sum as f64 / f64::from(threads)
    }

    /// Busiest / mean; 1.0 for an op that ran no instruction.
    pub(super) fn balance(&self, threads: u32) -> f64 {
        if self.sum == 0 {
            1.0
        } else {
            self.busiest as f64 / self.mean(threads)
        }
    }
}

/// A run with `--threads N`: the profile (regions summed over threads) and
/// the per-thread counts.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Threaded {
    pub(super) threads: u32,
    pub(super) profile: Profile,
    pub(super) vcpus: Vcpus,
}

impl Threaded {
    pub(super) fn new(threads: u32, profile: Profile, vcpus: Vcpus) -> Result<Threaded> {
        if threads == 0 {
            bail!("a run with 0 threads");
        }
        if !profile.runner.region_per_op {
            bail!(
                "{}: ops share regions (more ops than region ids?), so no op can be split per thread",
                profile.name()
            );
        }
        if !vcpus.vcpus.contains_key(&0) {
            bail!(
                "{}: the plugin counted no main thread (vCPU 0)",
                profile.name()
            );
        }
        Ok(Threaded {
            threads,
            profile,
            vcpus,
        })
    }

    fn per_invoke(&self, n: u64) -> u64 {
        (n as f64 / self.profile.runner.reps as f64).round() as u64
    }

    /// Every op in execution order with its split.
    pub(super) fn ops(&self) -> Vec<OpSplit> {
        self.profile
            .runner
            .ops
            .iter()
            .map(|op| {
                let shares: Vec<u64> = self
                    .vcpus
                    .vcpus
                    .keys()
                    .map(|&v| self.vcpus.get(v, op.region))
                    .collect();
                OpSplit {
                    op: op.clone(),
                    busiest: self.per_invoke(shares.iter().copied().max().unwrap_or(0)),
                    sum: self.per_invoke(shares.iter().sum()),
                    busy_threads: shares.iter().filter(|&&n| n > 0).count(),
                }
            })
            .collect()
    }

    /// The serial part per invoke: setting the inputs on the main thread
    /// and the invoke loop's work between nodes on whichever thread ran it.
    pub(super) fn serial(&self) -> u64 {
        let runner = &self.profile.runner;
        let loop_work: u64 = self
            .vcpus
            .vcpus
            .keys()
            .map(|&v| self.vcpus.get(v, runner.between_region))
            .sum();
        self.per_invoke(self.vcpus.get(0, runner.inputs_region) + loop_work)
    }

    /// Sum over ops of the busiest thread's instructions, per invoke.
    pub(super) fn ops_path(&self) -> u64 {
        self.ops().iter().map(|o| o.busiest).sum()
    }

    /// [`Self::ops_path`] plus [`Self::serial`].
    pub(super) fn critical_path(&self) -> u64 {
        self.ops_path() + self.serial()
    }

    /// Over the whole model: sum of busiest / sum of means (1.00 even).
    pub(super) fn balance(&self) -> f64 {
        let ops = self.ops();
        let sum: u64 = ops.iter().map(|o| o.sum).sum();
        if sum == 0 {
            return 1.0;
        }
        self.ops_path() as f64 * f64::from(self.threads) / sum as f64
    }

    /// Per thread (vCPU): its instructions (the set-up's and the main
    /// thread's start-up left out) and those of its idle region 0, per
    /// invoke.
    pub(super) fn thread_totals(&self) -> Vec<(u32, u64, u64)> {
        self.vcpus
            .vcpus
            .iter()
            .map(|(&v, r)| {
                // The main thread's region 0 is the process's start-up.
                let startup = if v == 0 { r.get(0) } else { 0 };
                let runner = &self.profile.runner;
                let invokes =
                    r.total - r.get(runner.setup_region) - r.get(runner.profiler_region) - startup;
                let idle = r.get(0) - startup;
                (v, self.per_invoke(invokes), self.per_invoke(idle))
            })
            .collect()
    }

    pub(super) fn summary_json(&self, base: &Threaded) -> Value {
        json!({
            "threads": self.threads,
            "backend": self.profile.runner.backend,
            "softmax": self.profile.runner.softmax,
            "critical_path": self.critical_path(),
            "ops_path": self.ops_path(),
            "serial": self.serial(),
            "speedup": speedup(base.critical_path(), self.critical_path()),
            "ops_speedup": speedup(base.ops_path(), self.ops_path()),
            "balance": self.balance(),
            "checksum": self.profile.checksum,
            "thread_totals": self.thread_totals().iter()
                .map(|&(v, n, idle)| json!({"vcpu": v, "instructions": n, "region0": idle}))
                .collect::<Vec<_>>(),
            "ops": self.ops().iter().map(|o| json!({
                "position": o.op.position, "op": o.op.op, "busiest": o.busiest,
                "sum": o.sum, "busy_threads": o.busy_threads,
            })).collect::<Vec<_>>(),
        })
    }
}

pub(super) fn speedup(base: u64, now: u64) -> f64 {
    if now == 0 {
        0.0
    } else {
        base as f64 / now as f64
    }
}

/// The runs of one model at several thread counts, the first with 1.
pub(super) fn check_same_outputs(runs: &[Threaded]) -> Result {
    let Some(first) = runs.first() else {
        return Ok(());
    };
    for r in &runs[1..] {
        if r.profile.checksum != first.profile.checksum {
            bail!(
                "output mismatch: --threads {} gives {}, --threads {} gives {} (threads must not change a byte)",
                first.threads,
                first.profile.checksum,
                r.threads,
                r.profile.checksum
            );
        }
    }
    Ok(())
}

/// The report of `cargo xtask run --threads`: a summary row per thread
/// count, then per thread count above 1 the costliest ops with their split.
pub(super) fn markdown(model: &str, cpu: &str, runs: &[Threaded], top: usize) -> String {
    let mut md = String::new();
    let Some(base) = runs.iter().find(|r| r.threads == 1) else {
        return "no --threads 1 run to compare with\n".into();
    };
    md += &format!(
        "Model `{model}`, {} {}, `qemu-aarch64 -cpu {cpu}`, instructions per invoke. Critical path = \
         sum over ops of the busiest thread + the serial part (setting the inputs on the main thread \
         and the invoke loop between ops, per invoke; loading, files and the process's start-up left \
         out); speedup against \
         `--threads 1` of the same command.\n\n",
        base.profile.runner.backend, base.profile.runner.softmax
    );
    md += "| threads | critical path | ops path | serial | speedup | ops speedup | balance | per thread (instructions, of which idle region 0) |\n";
    md += "|---:|---:|---:|---:|---:|---:|---:|---|\n";
    for r in runs {
        let per_thread: Vec<String> = r
            .thread_totals()
            .iter()
            .map(|&(v, n, idle)| format!("{v}: {} ({})", thousands(n), thousands(idle)))
            .collect();
        md += &format!(
            "| {} | {} | {} | {} | {:.2}x | {:.2}x | {:.2} | {} |\n",
            r.threads,
            thousands(r.critical_path()),
            thousands(r.ops_path()),
            thousands(r.serial()),
            speedup(base.critical_path(), r.critical_path()),
            speedup(base.ops_path(), r.ops_path()),
            r.balance(),
            per_thread.join(", ")
        );
    }
    for r in runs.iter().filter(|r| r.threads > 1) {
        let mut ops = r.ops();
        ops.sort_by(|a, b| {
            b.busiest
                .cmp(&a.busiest)
                .then(a.op.position.cmp(&b.op.position))
        });
        let base_ops: BTreeMap<u64, u64> = base
            .ops()
            .iter()
            .map(|o| (o.op.position, o.busiest))
            .collect();
        md += &format!(
            "\n`--threads {}`: the {top} ops with the most instructions on their busiest thread\n\n",
            r.threads
        );
        md += "| # | op | 1 thread | busiest | mean | balance | threads busy | speedup |\n";
        md += "|---:|---|---:|---:|---:|---:|---:|---:|\n";
        for o in ops.iter().take(top) {
            let one = base_ops.get(&o.op.position).copied().unwrap_or(0);
            md += &format!(
                "| {} | {} | {} | {} | {} | {:.2} | {} | {:.2}x |\n",
                o.op.position,
                o.op.op,
                thousands(one),
                thousands(o.busiest),
                thousands(o.mean(r.threads).round() as u64),
                o.balance(r.threads),
                o.busy_threads,
                speedup(one, o.busiest)
            );
        }
    }
    md
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::fixtures::{runner_json, PLUGIN_OUT};
    use crate::run::regions::Regions;
    use crate::run::runner::RunnerReport;

    fn threaded(threads: u32, out: &str, vcpus: &str, checksum: &str) -> Threaded {
        let runner = RunnerReport::from_json(&runner_json("neon", "lut")).unwrap();
        let regions = Regions::parse(out).unwrap();
        let vcpus = Vcpus::parse(vcpus, &regions).unwrap();
        let profile = Profile::new(runner, regions, checksum.into()).unwrap();
        Threaded::new(threads, profile, vcpus).unwrap()
    }

    /// The fixture's model (2 invokes: regions 1..4 = 200k, 100k, 60k,
    /// 40k, inputs 100k, start-up 7k and set-up 100k once, the profiler's
    /// clock 3k in no figure) on one thread, and on 2
    /// threads: region 1 split 100k / 100k, region 2 and the softmax (3) on
    /// the main thread alone, the ADD (4) split 20k / 20k; the worker idles
    /// 50k in region 0 and runs the invoke loop (its work between nodes,
    /// region 4094, 20k: serial).
    const ONE: &str = "vcpu 0 610000\nvcpu 0 region 0 7000\nvcpu 0 region 1 200000\n\
                       vcpu 0 region 2 100000\nvcpu 0 region 3 60000\nvcpu 0 region 4 40000\n\
                       vcpu 0 region 4092 3000\nvcpu 0 region 4093 100000\n\
                       vcpu 0 region 4095 100000\n";
    const TWO_OUT: &str = "680000\nregion 0 57000\nregion 1 200000\nregion 2 100000\n\
                           region 3 60000\nregion 4 40000\nregion 4092 3000\nregion 4093 100000\n\
                           region 4094 20000\nregion 4095 100000\n";
    const TWO: &str = "vcpu 0 490000\nvcpu 0 region 0 7000\nvcpu 0 region 1 100000\n\
                       vcpu 0 region 2 100000\nvcpu 0 region 3 60000\nvcpu 0 region 4 20000\n\
                       vcpu 0 region 4092 3000\nvcpu 0 region 4093 100000\n\
                       vcpu 0 region 4095 100000\nvcpu 1 190000\n\
                       vcpu 1 region 0 50000\nvcpu 1 region 1 100000\n\
                       vcpu 1 region 4 20000\nvcpu 1 region 4094 20000\n";

    #[test]
    fn critical_path_takes_the_busiest_thread_per_op() {
        let one = threaded(1, PLUGIN_OUT, ONE, "0x1");
        // Per invoke: 100k + 50k + 30k + 20k = 200k, serial 50k.
        assert_eq!(
            (one.ops_path(), one.serial(), one.critical_path()),
            (200_000, 50_000, 250_000)
        );
        assert!((one.balance() - 1.0).abs() < 1e-12);

        let two = threaded(2, TWO_OUT, TWO, "0x1");
        let ops = two.ops();
        // Per invoke: FC 50k / 50k, FC 50k on one thread, softmax 30k on
        // one, ADD 10k / 10k.
        assert_eq!(
            ops.iter()
                .map(|o| (o.busiest, o.sum, o.busy_threads))
                .collect::<Vec<_>>(),
            [
                (50_000, 100_000, 2),
                (50_000, 50_000, 1),
                (30_000, 30_000, 1),
                (10_000, 20_000, 2)
            ]
        );
        assert!((ops[0].balance(2) - 1.0).abs() < 1e-12);
        assert!((ops[1].balance(2) - 2.0).abs() < 1e-12);
        assert_eq!(two.ops_path(), 140_000);
        // The worker's idle region 0 is not on the path, its invoke loop is.
        assert_eq!(two.serial(), 60_000);
        assert_eq!(two.critical_path(), 200_000);
        assert!((speedup(one.critical_path(), two.critical_path()) - 250.0 / 200.0).abs() < 1e-12);
        assert!((two.balance() - 140_000.0 * 2.0 / 200_000.0).abs() < 1e-12);
        assert_eq!(two.thread_totals(), [(0, 190_000, 0), (1, 95_000, 25_000)]);

        check_same_outputs(&[one.clone(), two.clone()]).unwrap();
        let other = threaded(2, TWO_OUT, TWO, "0x2");
        assert!(check_same_outputs(&[one.clone(), other]).is_err());

        let md = markdown("m.tflite", "max", &[one, two], 3);
        assert!(
            md.contains("| 2 | 200,000 | 140,000 | 60,000 | 1.25x | 1.43x | 1.40 |"),
            "{md}"
        );
        assert!(
            md.contains("| 0 | FULLY_CONNECTED | 100,000 | 50,000 | 50,000 | 1.00 | 2 | 2.00x |"),
            "{md}"
        );
    }

    #[test]
    fn refuses_runs_it_cannot_split() {
        let runner = RunnerReport::from_json(&runner_json("neon", "lut")).unwrap();
        let regions = Regions::parse(PLUGIN_OUT).unwrap();
        let vcpus = Vcpus::parse(ONE, &regions).unwrap();
        let profile = Profile::new(runner.clone(), regions.clone(), "0x1".into()).unwrap();
        assert!(Threaded::new(0, profile.clone(), vcpus.clone()).is_err());
        let mut shared = profile.clone();
        shared.runner.region_per_op = false;
        assert!(Threaded::new(1, shared, vcpus).is_err());
        let worker_only = Vcpus::parse(&ONE.replace("vcpu 0", "vcpu 1"), &regions).unwrap();
        assert!(Threaded::new(1, profile, worker_only).is_err());
    }
}
