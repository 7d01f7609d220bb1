//! The whole report over every configuration: the summary table, the
//! output agreement between backends, JSON and Markdown.

use std::collections::BTreeMap;

use serde_json::{json, Value};

use super::profile::{ratio, Profile};
use super::runner::BIN;
use crate::util::{thousands, Result};

/// Op instances listed per configuration in the Markdown.
const TOP_OPS: usize = 10;

#[derive(Debug, Clone, PartialEq)]
pub(super) struct Report {
    /// `qemu-aarch64 --version`, first line.
    pub(super) qemu: String,
    /// The `-cpu` value.
    pub(super) cpu: String,
    /// The model's path as given, and the `--input` specs.
    pub(super) model: String,
    pub(super) inputs: Vec<String>,
    pub(super) profiles: Vec<Profile>,
}

impl Report {
    /// Softmax methods whose runs disagree on the outputs, each with the
    /// (configuration, checksum) pairs, as messages.
    pub(super) fn checksum_mismatches(&self) -> Vec<String> {
        let mut by_method: BTreeMap<&str, Vec<&Profile>> = BTreeMap::new();
        for p in &self.profiles {
            by_method.entry(&p.runner.softmax).or_default().push(p);
        }
        by_method
            .into_iter()
            .filter(|(_, ps)| ps.iter().any(|p| p.checksum != ps[0].checksum))
            .map(|(method, ps)| {
                let each: Vec<String> = ps
                    .iter()
                    .map(|p| format!("{} {}", p.runner.backend, p.checksum))
                    .collect();
                format!(
                    "softmax {method}: the backends' outputs differ (checksums {})",
                    each.join(", ")
                )
            })
            .collect()
    }

    pub(super) fn to_json(&self) -> Value {
        json!({
            "generator": "cargo xtask run",
            "what": "guest instructions per invoke of a .tflite model run by qneon under qemu, \
                     per op type and per op, counted by marked regions (region 0: outside the ops)",
            "qemu": self.qemu,
            "cpu": self.cpu,
            "model": self.model,
            "inputs": self.inputs,
            "configs": self.profiles.iter().map(Profile::to_json).collect::<Vec<_>>(),
            "checksum_mismatches": self.checksum_mismatches(),
        })
    }

    pub(super) fn from_json(v: &Value) -> Result<Report> {
        let profiles = v
            .get("configs")
            .and_then(Value::as_array)
            .ok_or("profile.json has no `configs`")?
            .iter()
            .map(Profile::from_json)
            .collect::<Result<Vec<_>>>()?;
        let text = |key: &str, default: &str| {
            v.get(key)
                .and_then(Value::as_str)
                .unwrap_or(default)
                .to_string()
        };
        Ok(Report {
            qemu: text("qemu", "qemu-aarch64"),
            cpu: text("cpu", "max"),
            model: text("model", "?"),
            inputs: v
                .get("inputs")
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(|s| s.as_str().map(str::to_string))
                        .collect()
                })
                .unwrap_or_default(),
            profiles,
        })
    }

    pub(super) fn summary(&self) -> String {
        let mut md = String::from(
            "| configuration | model instructions | x (2 x MACs / 16) | softmax instructions \
             | softmax share | target | met? |\n\
             | --- | ---: | ---: | ---: | ---: | ---: | --- |\n",
        );
        for p in &self.profiles {
            md += &format!(
                "| {} | {} | {} | {} | {:.2}% | {} | {} |\n",
                p.name(),
                thousands(p.model()),
                ratio(p.model(), p.bound()),
                thousands(p.softmax_insns()),
                p.share(p.softmax_insns()),
                p.target()
                    .map(|t| format!("<= {t}%"))
                    .unwrap_or_else(|| "-".into()),
                match p.softmax_met() {
                    None => "-",
                    Some(true) => "yes",
                    Some(false) => "**no**",
                },
            );
        }
        md
    }

    /// The report as Markdown (profile.md, and the section of docs/PERFORMANCE.md).
    pub(super) fn markdown(&self) -> String {
        let inputs = if self.inputs.is_empty() {
            "seeded inputs".to_string()
        } else {
            format!("inputs `{}`", self.inputs.join("`, `"))
        };
        let mut md = format!(
            "Guest instructions per invoke of `{}` ({inputs}) run by `{BIN} run` (release, \
             aarch64, `qemu-aarch64 -cpu {}`; {}), counted per op by the plugin in \
             `tools/qemu-insn/`: `{BIN}` marks each op's kernel as a region and every \
             executed instruction counts in the region it ran in, exactly, in one run per \
             configuration (backend and softmax method). The work between ops is outside \
             the model total; loading, planning and files are in no per-invoke figure. Target: softmax <= 3% of the \
             model with the LUT method on NEON. Instruction counts are not cycles.\n\n",
            self.model, self.cpu, self.qemu
        );
        md += &self.summary();
        let mismatches = self.checksum_mismatches();
        if mismatches.is_empty() {
            md += "\nRuns with the same softmax method give the same output bytes on every backend.\n";
        } else {
            md += "\n**Output mismatch** (backends must be bit-exact):\n\n";
            for m in &mismatches {
                md += &format!("- {m}\n");
            }
        }
        for p in &self.profiles {
            md += "\n";
            md += &p.markdown(TOP_OPS);
        }
        md
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::fixtures::profile;

    fn report(profiles: Vec<Profile>) -> Report {
        Report {
            qemu: "qemu-aarch64 version 7.2".into(),
            cpu: "max".into(),
            model: "m.tflite".into(),
            inputs: vec!["ids=a.npy".into()],
            profiles,
        }
    }

    #[test]
    fn renders_markdown() {
        let md = report(vec![
            profile("neon", "lut", "0x9"),
            profile("neon", "fixed", "0x1234abcd"),
            profile("scalar", "fixed", "0x1234abcd"),
        ])
        .markdown();
        for line in [
            "| neon lut | 200,000 | 1.00 | 30,000 | 15.00% | <= 3% | **no** |",
            "| neon fixed | 200,000 | 1.00 | 30,000 | 15.00% | - | - |",
            "| scalar fixed | 200,000 | 1.00 | 30,000 | 15.00% | - | - |",
        ] {
            assert!(md.lines().any(|l| l == line), "no line {line:?} in\n{md}");
        }
        assert!(md.contains("Runs with the same softmax method give the same output bytes"));
        assert!(md.contains("### scalar fixed"));
        assert!(md.contains("(a NEON bound; shown for contrast)"));
        assert!(md.contains("`m.tflite` (inputs `ids=a.npy`)"));
    }

    #[test]
    fn flags_output_mismatch() {
        let same = report(vec![
            profile("neon", "lut", "0xaa"),
            profile("neon", "fixed", "0xbb"),
            profile("scalar", "fixed", "0xbb"),
        ]);
        assert!(
            same.checksum_mismatches().is_empty(),
            "methods may differ from each other"
        );
        let differ = report(vec![
            profile("neon", "lut", "0xaa"),
            profile("neon", "fixed", "0xbb"),
            profile("scalar", "fixed", "0xbc"),
        ]);
        let m = differ.checksum_mismatches();
        assert_eq!(m.len(), 1);
        assert!(
            m[0].contains("softmax fixed")
                && m[0].contains("neon 0xbb")
                && m[0].contains("scalar 0xbc")
        );
        assert!(differ.markdown().contains("**Output mismatch**"));
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
        let report = report(vec![
            profile("neon", "lut", "0x1"),
            profile("scalar", "fixed", "0x2"),
        ]);
        let text = serde_json::to_string_pretty(&report.to_json()).unwrap();
        let back = Report::from_json(&serde_json::from_str(&text).unwrap()).unwrap();
        assert_eq!(back, report);
        assert_eq!(back.markdown(), report.markdown());
    }
}
