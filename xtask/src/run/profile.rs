//! One configuration's profile: the runner's ops paired with the plugin's
//! regions, grouped per op type, their shares of the model, the bound and
//! the softmax target.

use std::collections::BTreeMap;

use serde_json::{json, Value};

use super::regions::Regions;
use super::runner::{OpRun, RunnerReport, BIN};
use crate::util::{bail, round, thousands, Result};

/// The largest softmax share of the model's instructions, in percent, that
/// a configuration aims for; `None` where there is no target. The issue's
/// target: at most 3% on NEON with the LUT method.
pub(super) fn softmax_target(backend: &str, softmax: &str) -> Option<f64> {
    match (backend, softmax) {
        ("neon", "lut") => Some(3.0),
        _ => None,
    }
}

/// Whether the bound `2 * MACs / 16` is meaningful for `backend`: it
/// assumes 16 MACs per vector instruction, which only NEON has.
pub(super) fn bound_applies(backend: &str) -> bool {
    backend == "neon"
}

/// Whether an op type is a softmax (whose share is the point of the
/// profile): SOFTMAX and LOG_SOFTMAX.
pub(super) fn is_softmax(op: &str) -> bool {
    op.contains("SOFTMAX")
}

/// One op type's totals per invoke.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct TypeRow {
    pub(super) op: String,
    /// Ops of this type in the model (each runs once per invoke).
    pub(super) calls: u64,
    pub(super) work: u64,
    pub(super) unit: String,
    pub(super) instructions: u64,
}

/// A run: what the runner said, what the plugin counted, and a checksum of
/// the outputs.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Profile {
    pub(super) runner: RunnerReport,
    pub(super) regions: Regions,
    /// FNV-1a of the output files, to check backends agree.
    pub(super) checksum: String,
}

impl Profile {
    /// Pairs the two outputs of a run, checking they fit together.
    pub(super) fn new(runner: RunnerReport, regions: Regions, checksum: String) -> Result<Profile> {
        let name = format!("{} {}", runner.backend, runner.softmax);
        if regions.counts.is_empty() && !runner.ops.is_empty() {
            bail!("{name}: no region marker ran (is {BIN} built for aarch64 with its markers?)");
        }
        for &id in regions.counts.keys() {
            let special = [
                0,
                runner.setup_region,
                runner.between_region,
                runner.inputs_region,
                runner.profiler_region,
            ];
            if !special.contains(&id) && !runner.ops.iter().any(|o| o.region == id) {
                bail!("{name}: the plugin counted region {id}, but no op of the runner has it");
            }
        }
        Ok(Profile {
            runner,
            regions,
            checksum,
        })
    }

    pub(super) fn name(&self) -> String {
        format!("{} {}", self.runner.backend, self.runner.softmax)
    }

    fn per_invoke(&self, count: u64) -> u64 {
        (count as f64 / self.runner.reps as f64).round() as u64
    }

    /// Instructions outside every op per invoke: the invoke loop between
    /// nodes and setting the inputs (loading, planning and files are the
    /// set-up's region, the process's start-up region 0: both once, counted
    /// apart).
    pub(super) fn outside(&self) -> u64 {
        let r = &self.runner;
        self.per_invoke(self.regions.get(r.inputs_region) + self.regions.get(r.between_region))
    }

    /// Instructions of the run's set-up, once: loading and planning the
    /// model, reading and writing files.
    pub(super) fn setup(&self) -> u64 {
        self.regions.get(self.runner.setup_region)
    }

    /// Instructions of the model per invoke: every op's region.
    pub(super) fn model(&self) -> u64 {
        let ops = self.regions.total - self.per_run_outside();
        self.per_invoke(ops)
    }

    /// Region 0, the inputs', the invoke loop's, the profiler's and the
    /// set-up's regions, over the run.
    fn per_run_outside(&self) -> u64 {
        let r = &self.runner;
        let loop_and_inputs =
            self.regions.get(r.between_region) + self.regions.get(r.inputs_region);
        self.regions.get(0) + loop_and_inputs + self.regions.get(r.profiler_region) + self.setup()
    }

    /// Instructions of op instance `op` per invoke, when it has a region of
    /// its own.
    pub(super) fn op_insns(&self, op: &OpRun) -> Option<u64> {
        self.runner
            .region_per_op
            .then(|| self.per_invoke(self.regions.get(op.region)))
    }

    /// Per op type, most instructions first.
    pub(super) fn types(&self) -> Vec<TypeRow> {
        let mut rows: BTreeMap<&str, TypeRow> = BTreeMap::new();
        let mut regions: BTreeMap<&str, Vec<u16>> = BTreeMap::new();
        for o in &self.runner.ops {
            let row = rows.entry(&o.op).or_insert_with(|| TypeRow {
                op: o.op.clone(),
                calls: 0,
                work: 0,
                unit: o.unit.clone(),
                instructions: 0,
            });
            row.calls += 1;
            row.work += o.work;
            let ids = regions.entry(&o.op).or_default();
            if !ids.contains(&o.region) {
                ids.push(o.region);
            }
        }
        let mut rows: Vec<TypeRow> = rows
            .into_values()
            .map(|mut row| {
                let count: u64 = regions[row.op.as_str()]
                    .iter()
                    .map(|&r| self.regions.get(r))
                    .sum();
                row.instructions = self.per_invoke(count);
                row
            })
            .collect();
        rows.sort_by(|a, b| b.instructions.cmp(&a.instructions).then(a.op.cmp(&b.op)));
        rows
    }

    pub(super) fn softmax_insns(&self) -> u64 {
        self.types()
            .iter()
            .filter(|t| is_softmax(&t.op))
            .map(|t| t.instructions)
            .sum()
    }

    /// Share of the model's instructions, in percent.
    pub(super) fn share(&self, insns: u64) -> f64 {
        match self.model() {
            0 => 0.0,
            model => 100.0 * insns as f64 / model as f64,
        }
    }

    /// `2 * MACs / 16`: two instructions per 16-MAC vector step.
    pub(super) fn bound(&self) -> u64 {
        2 * self.runner.macs / 16
    }

    pub(super) fn target(&self) -> Option<f64> {
        softmax_target(&self.runner.backend, &self.runner.softmax)
    }

    /// The softmax share target, if any, and whether it is met.
    pub(super) fn softmax_met(&self) -> Option<bool> {
        self.target().map(|t| self.share(self.softmax_insns()) <= t)
    }

    pub(super) fn to_json(&self) -> Value {
        let types: Vec<Value> = self
            .types()
            .iter()
            .map(|t| {
                json!({
                    "op": t.op,
                    "calls": t.calls,
                    "work": t.work,
                    "unit": t.unit,
                    "instructions": t.instructions,
                    "instructions_per_unit": per_unit(t.instructions, t.work).map(|x| round(x, 4)),
                    "share_percent": round(self.share(t.instructions), 3),
                })
            })
            .collect();
        let ops: Vec<Value> = self
            .runner
            .ops
            .iter()
            .map(|o| {
                let insns = self.op_insns(o);
                json!({
                    "position": o.position,
                    "index": o.index,
                    "op": o.op,
                    "work": o.work,
                    "unit": o.unit,
                    "region": o.region,
                    "instructions": insns,
                    "instructions_per_unit": insns.and_then(|i| per_unit(i, o.work)).map(|x| round(x, 4)),
                    "share_percent": insns.map(|i| round(self.share(i), 4)),
                })
            })
            .collect();
        json!({
            "backend": self.runner.backend,
            "softmax": self.runner.softmax,
            "rounding": self.runner.rounding,
            "reps": self.runner.reps,
            "model_instructions": self.model(),
            "outside_instructions_per_invoke": self.outside(),
            "setup_instructions": self.setup(),
            "macs": self.runner.macs,
            "bound_instructions": self.bound(),
            "softmax_instructions": self.softmax_insns(),
            "softmax_share_percent": round(self.share(self.softmax_insns()), 3),
            "softmax_target_percent": self.target(),
            "softmax_met": self.softmax_met(),
            "output_checksum": self.checksum,
            "op_types": types,
            "ops": ops,
            "runner": self.runner.raw,
            "plugin": self.regions.to_json(),
        })
    }

    pub(super) fn from_json(v: &Value) -> Result<Profile> {
        let runner = RunnerReport::from_json(v.get("runner").ok_or("a profile without `runner`")?)?;
        let regions = Regions::from_json(v.get("plugin").ok_or("a profile without `plugin`")?)?;
        let checksum = v
            .get("output_checksum")
            .and_then(Value::as_str)
            .ok_or("a profile without `output_checksum`")?;
        Profile::new(runner, regions, checksum.to_string())
    }

    /// This configuration's section of the report: the op types, then the
    /// `top` op instances with the most instructions.
    pub(super) fn markdown(&self, top: usize) -> String {
        let r = &self.runner;
        let mut md = format!(
            "### {}\n\n{} ops, {} MACs per invoke, rounding {}.\n\n\
             | op type | calls | work | instructions | instructions per unit | share of the model |\n\
             | --- | ---: | ---: | ---: | ---: | ---: |\n",
            self.name(),
            r.ops.len(),
            thousands(r.macs),
            r.rounding,
        );
        for t in self.types() {
            md += &format!(
                "| {} | {} | {} {} | {} | {} | {:.1}% |\n",
                t.op,
                t.calls,
                thousands(t.work),
                t.unit,
                thousands(t.instructions),
                per_unit(t.instructions, t.work)
                    .map(|x| format!("{} / {}", decimals(x), t.unit))
                    .unwrap_or_else(|| "-".into()),
                self.share(t.instructions),
            );
        }
        md += &format!(
            "| **model** | {} | | **{}** | | 100% |\n\n",
            r.ops.len(),
            thousands(self.model())
        );
        md += &format!(
            "Model: {} instructions per invoke, {} x the bound 2 x MACs / 16 = {}{}.\n\n",
            thousands(self.model()),
            ratio(self.model(), self.bound()),
            thousands(self.bound()),
            if bound_applies(&r.backend) {
                ""
            } else {
                " (a NEON bound; shown for contrast)"
            },
        );
        md += &format!(
            "Softmax: {} instructions, {:.2}% of the model{}.\n",
            thousands(self.softmax_insns()),
            self.share(self.softmax_insns()),
            match (self.target(), self.softmax_met()) {
                (Some(t), Some(true)) => format!(" (target <= {t}%: met)"),
                (Some(t), _) => format!(" (target <= {t}%: **not met**)"),
                _ => String::new(),
            },
        );
        if r.region_per_op && top > 0 {
            let mut ops: Vec<(&OpRun, u64)> = r
                .ops
                .iter()
                .map(|o| (o, self.op_insns(o).unwrap_or(0)))
                .collect();
            ops.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.position.cmp(&b.0.position)));
            md += &format!(
                "\nThe {} ops with the most instructions (all of them in profile.json):\n\n\
                 | operator | op | work | instructions | share |\n\
                 | ---: | --- | ---: | ---: | ---: |\n",
                top.min(ops.len())
            );
            for (o, insns) in ops.into_iter().take(top) {
                md += &format!(
                    "| {} | {} | {} {} | {} | {:.2}% |\n",
                    o.index,
                    o.op,
                    thousands(o.work),
                    o.unit,
                    thousands(insns),
                    self.share(insns)
                );
            }
        }
        md
    }
}

pub(super) fn per_unit(insns: u64, work: u64) -> Option<f64> {
    (work > 0).then(|| insns as f64 / work as f64)
}

/// `a / b` to two decimals, or `-` when `b` is 0 (a model without MACs has
/// no bound).
pub(super) fn ratio(a: u64, b: u64) -> String {
    if b == 0 {
        "-".into()
    } else {
        format!("{:.2}", a as f64 / b as f64)
    }
}

/// Instructions per unit to about three significant digits (four
/// decimals below 0.01).
pub(super) fn decimals(x: f64) -> String {
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
    use crate::run::fixtures::{profile, runner_json};

    #[test]
    fn profile_attributes_regions_to_ops_and_types() {
        let p = profile("neon", "lut", "0x1");
        // Counts are over 2 invokes; everything is per invoke.
        assert_eq!(
            (p.outside(), p.model(), p.bound()),
            (50_000, 200_000, 200_000)
        );
        assert_eq!(p.softmax_insns(), 30_000);
        assert_eq!(p.share(p.softmax_insns()), 15.0);
        assert_eq!(
            p.softmax_met(),
            Some(false),
            "15% is over the LUT target of 3%"
        );
        assert_eq!(profile("neon", "fixed", "0x1").softmax_met(), None);
        let types = p.types();
        assert_eq!(
            types[0],
            TypeRow {
                op: "FULLY_CONNECTED".into(),
                calls: 2,
                work: 1_600_000,
                unit: "MAC".into(),
                instructions: 150_000,
            }
        );
        assert_eq!(
            types.iter().map(|t| t.op.as_str()).collect::<Vec<_>>(),
            ["FULLY_CONNECTED", "SOFTMAX", "ADD"]
        );
        assert_eq!(p.op_insns(&p.runner.ops[1]), Some(50_000));

        let runner = RunnerReport::from_json(&runner_json("neon", "lut")).unwrap();
        let stray = Regions::parse("10\nregion 0 5\nregion 9 5\n").unwrap();
        assert!(
            Profile::new(runner.clone(), stray, String::new()).is_err(),
            "region 9 is no op's"
        );
        let unmarked = Regions::parse("10\n").unwrap();
        assert!(
            Profile::new(runner, unmarked, String::new()).is_err(),
            "no marker ran"
        );
    }

    #[test]
    fn shared_regions_give_types_but_no_instances() {
        let mut v = runner_json("neon", "lut");
        v["region_per_op"] = serde_json::json!(false);
        v["ops"][1]["region"] = serde_json::json!(1);
        let runner = RunnerReport::from_json(&v).unwrap();
        let regions = Regions::parse(
            "500000\nregion 0 100000\nregion 1 300000\nregion 3 60000\nregion 4 40000\n",
        )
        .unwrap();
        let p = Profile::new(runner, regions, String::new()).unwrap();
        assert_eq!(p.types()[0].instructions, 150_000);
        assert_eq!(p.op_insns(&p.runner.ops[0]), None);
        assert!(p.to_json()["ops"][0]["instructions"].is_null());
    }

    #[test]
    fn renders_markdown() {
        let md = profile("neon", "lut", "0x1234abcd").markdown(2);
        for line in [
            "### neon lut",
            "| FULLY_CONNECTED | 2 | 1,600,000 MAC | 150,000 | 0.094 / MAC | 75.0% |",
            "| SOFTMAX | 1 | 10,000 element | 30,000 | 3.00 / element | 15.0% |",
            "| ADD | 1 | 5,000 element | 20,000 | 4.00 / element | 10.0% |",
            "| **model** | 4 | | **200,000** | | 100% |",
            "| 0 | FULLY_CONNECTED | 1,000,000 MAC | 100,000 | 50.00% |",
            "| 3 | FULLY_CONNECTED | 600,000 MAC | 50,000 | 25.00% |",
        ] {
            assert!(md.lines().any(|l| l == line), "no line {line:?} in\n{md}");
        }
        assert!(!md.contains("| 5 | SOFTMAX"), "only the top 2 ops:\n{md}");
        for text in [
            "Model: 200,000 instructions per invoke, 1.00 x the bound 2 x MACs / 16 = 200,000.",
            "Softmax: 30,000 instructions, 15.00% of the model (target <= 3%: **not met**).",
        ] {
            assert!(md.contains(text), "no {text:?} in\n{md}");
        }
    }
}
