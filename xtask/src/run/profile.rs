//! One configuration's profile: the runner's ops paired with the plugin's
//! regions, their shares of the layer, the bound and the softmax target.

use serde_json::{json, Value};

use super::regions::Regions;
use super::runner::{OpStats, RunnerReport, BIN};
use crate::util::{bail, round, thousands, Result};

/// The largest softmax share of the layer's instructions, in percent, that
/// a configuration aims for; `None` where there is no target.
pub(super) fn softmax_target(backend: &str, softmax: &str) -> Option<f64> {
    match (backend, softmax) {
        ("neon", "lut") => Some(3.0),
        ("neon", "fixed") => Some(20.0),
        _ => None,
    }
}

/// Whether the layer bound `2 * MACs / 16` is a target for `backend`: it
/// assumes 16 MACs per vector instruction, which only NEON has.
pub(super) fn bound_applies(backend: &str) -> bool {
    backend == "neon"
}

/// Whether an op of the runner is the attention softmax (whose share is
/// the point of the profile): its name contains "softmax".
pub(super) fn is_softmax(op: &str) -> bool {
    op.contains("softmax")
}

/// A run: what the runner said and what the plugin counted.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Profile {
    pub(super) runner: RunnerReport,
    pub(super) regions: Regions,
}

impl Profile {
    /// Pairs the two outputs of a run, checking they fit together.
    pub(super) fn new(runner: RunnerReport, regions: Regions) -> Result<Profile> {
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

    pub(super) fn name(&self) -> String {
        format!("{} {}", self.runner.backend, self.runner.softmax)
    }

    /// Instructions outside every op (region 0).
    pub(super) fn outside(&self) -> u64 {
        self.regions.get(0)
    }

    /// Instructions of the layer: every op's region.
    pub(super) fn layer(&self) -> u64 {
        self.regions.total - self.outside()
    }

    pub(super) fn op_insns(&self, op: &OpStats) -> u64 {
        self.regions.get(op.id)
    }

    pub(super) fn softmax_insns(&self) -> u64 {
        self.runner
            .ops
            .iter()
            .filter(|o| is_softmax(&o.op))
            .map(|o| self.op_insns(o))
            .sum()
    }

    /// Share of the layer's instructions, in percent.
    pub(super) fn share(&self, insns: u64) -> f64 {
        match self.layer() {
            0 => 0.0,
            layer => 100.0 * insns as f64 / layer as f64,
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

    /// The layer bound, if it applies, and whether it is met.
    pub(super) fn bound_met(&self) -> Option<bool> {
        bound_applies(&self.runner.backend).then(|| self.layer() <= self.bound())
    }

    pub(super) fn to_json(&self) -> Value {
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

    pub(super) fn from_json(v: &Value) -> Result<Profile> {
        let runner = RunnerReport::from_json(v.get("runner").ok_or("a profile without `runner`")?)?;
        let regions = Regions::from_json(v.get("plugin").ok_or("a profile without `plugin`")?)?;
        Profile::new(runner, regions)
    }

    /// This configuration's section of the report.
    pub(super) fn markdown(&self) -> String {
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

pub(super) fn per_unit(insns: u64, work: u64) -> Option<f64> {
    (work > 0).then(|| insns as f64 / work as f64)
}

pub(super) fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 {
        f64::INFINITY
    } else {
        a as f64 / b as f64
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
}
