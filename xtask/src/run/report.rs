//! The whole report over every configuration: the summary table, the
//! checksum agreement between backends, JSON and Markdown.

use std::collections::BTreeMap;

use serde_json::{json, Value};

use super::profile::{ratio, Profile};
use super::runner::BIN;
use crate::util::{thousands, Result};

// ---- The whole report. ----

#[derive(Debug, Clone, PartialEq)]
pub(super) struct Report {
    /// `qemu-aarch64 --version`, first line.
    pub(super) qemu: String,
    pub(super) profiles: Vec<Profile>,
}

impl Report {
    /// Softmax methods whose runs disagree on the checksum, each with the
    /// (configuration, checksum) pairs, as messages.
    pub(super) fn checksum_mismatches(&self) -> Vec<String> {
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

    pub(super) fn to_json(&self) -> Value {
        json!({
            "generator": "cargo xtask run",
            "what": "guest instructions per op of one MobileBert layer under qemu, \
                     counted by marked regions (region 0: outside the ops)",
            "qemu": self.qemu,
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
        Ok(Report {
            qemu: v
                .get("qemu")
                .and_then(Value::as_str)
                .unwrap_or("qemu-aarch64")
                .to_string(),
            profiles,
        })
    }

    pub(super) fn summary(&self) -> String {
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
    pub(super) fn markdown(&self) -> String {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::fixtures::profile;

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
}
