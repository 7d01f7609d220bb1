//! The benchmark report: `target/bench/insns.json` (written by `cargo xtask
//! bench`, read back by `--docs`), its Markdown tables, the bar chart and
//! the section of `docs/PERFORMANCE.md` between the bench markers.

use serde_json::{json, Value};

use crate::mca::{McaLoop, CPUS};
use crate::plot;
use crate::util::{bail, round, thousands, Result};

/// Shapes of row-wise ops, in table order.
pub const ROW_SHAPES: [&str; 4] = ["mobilebert", "rows64", "vocab", "short"];
/// Shapes also measured on full-range uniform data (`qneon-bench --data
/// uniform`), for the 8- and 16-bit row-wise ops: their rows carry the shape
/// [`uniform_label`], so the rows on the bench's logits stay as they are.
pub const UNIFORM_SHAPES: [&str; 2] = ["mobilebert", "rows64"];
/// The element types whose inputs `--data uniform` changes.
pub const UNIFORM_TYPES: [&str; 3] = ["int8", "uint8", "int16"];

/// The shape name of a row measured on full-range uniform data.
pub fn uniform_label(shape: &str) -> String {
    format!("{shape}-uniform")
}

/// Shapes of element-wise ops.
pub const ELEMENT_SHAPES: [&str; 1] = ["flat"];

/// Where `op` comes in the tables and the chart: the order of
/// `qneon::catalogue::Op::ALL` (an op it does not name, last).
fn op_rank(op: &str) -> usize {
    let all = qneon::catalogue::Op::ALL;
    all.iter().position(|o| o.name() == op).unwrap_or(all.len())
}

/// The markers of the generated section in [`crate::util::PERFORMANCE_DOC`].
pub const SECTION_BEGIN: &str = "<!-- bench:begin -->";
pub const SECTION_END: &str = "<!-- bench:end -->";
/// Where the committed copy of the chart lives (shown by the README and
/// the performance document), relative to the workspace root.
pub const CHART_SVG: &str = "docs/insns.svg";
/// The chart as the performance document links it (both live in `docs/`).
const CHART_LINK: &str = "insns.svg";

/// Instructions per element of one (op, type, method, backend, shape).
#[derive(Debug, Clone, PartialEq)]
pub struct Measured {
    pub op: String,
    pub dtype: String,
    pub method: String,
    pub backend: String,
    pub shape: String,
    pub rows: u64,
    pub cols: u64,
    pub elements: u64,
    /// Softmax-like op (per row) rather than element-wise.
    pub row_wise: bool,
    pub insns_per_element: f64,
}

impl Measured {
    fn key(&self) -> (&str, &str, &str) {
        (&self.op, &self.dtype, &self.method)
    }
    fn name(&self) -> String {
        format!("{} {} {}", self.op, self.dtype, self.method)
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    /// `qemu-aarch64 --version`, first line.
    pub qemu: String,
    /// The two repetition counts differenced (R and 2R).
    pub reps: (u64, u64),
    pub rows: Vec<Measured>,
    /// llvm-mca estimates, if `--mca` ran.
    pub mca: Vec<McaLoop>,
    /// Free-form remarks printed with the tables (reduced shapes, ...).
    pub notes: Vec<String>,
}

impl Report {
    /// The measurement of `row`'s (op, type, method, shape) on `backend`.
    fn find(&self, row: &Measured, backend: &str, shape: &str) -> Option<&Measured> {
        self.rows
            .iter()
            .find(|m| m.key() == row.key() && m.backend == backend && m.shape == shape)
    }

    /// NEON instructions over scalar instructions for `row`'s op and shape.
    pub fn neon_over_scalar(&self, row: &Measured) -> Option<f64> {
        let neon = self.find(row, "neon", &row.shape)?.insns_per_element;
        let scalar = self.find(row, "scalar", &row.shape)?.insns_per_element;
        (scalar > 0.0).then(|| neon / scalar)
    }

    /// Each (op, type, method) once, grouped by op (in [`op_rank`] order),
    /// then in measurement order (type, then method).
    fn kernels(&self) -> Vec<&Measured> {
        let mut seen: Vec<&Measured> = Vec::new();
        for m in &self.rows {
            if !seen.iter().any(|s| s.key() == m.key()) {
                seen.push(m);
            }
        }
        seen.sort_by_key(|m| op_rank(&m.op));
        seen
    }

    pub fn to_json(&self) -> Value {
        let rows: Vec<Value> = self
            .rows
            .iter()
            .map(|m| {
                json!({
                    "op": m.op,
                    "type": m.dtype,
                    "method": m.method,
                    "backend": m.backend,
                    "shape": m.shape,
                    "rows": m.rows,
                    "cols": m.cols,
                    "elements": m.elements,
                    "row_wise": m.row_wise,
                    "insns_per_element": round(m.insns_per_element, 4),
                    "neon_over_scalar": self.neon_over_scalar(m).map(|r| round(r, 4)),
                })
            })
            .collect();
        let mca: Vec<Value> = self
            .mca
            .iter()
            .map(|l| {
                let cycles: serde_json::Map<String, Value> = l
                    .cycles_per_iteration
                    .iter()
                    .map(|(cpu, c)| (cpu.clone(), json!(round(*c, 3))))
                    .collect();
                json!({
                    "kernel": l.kernel,
                    "offset": l.offset,
                    "instructions": l.instructions,
                    "bytes_loaded": l.bytes_loaded,
                    "bytes_stored": l.bytes_stored,
                    "elements_per_iteration": l.elements_per_iteration,
                    "cycles_per_iteration": cycles,
                })
            })
            .collect();
        json!({
            "generator": "cargo xtask bench",
            "what": "guest instructions per element under qemu: (count at 2R - count at R) / (R x elements)",
            "qemu": self.qemu,
            "reps": [self.reps.0, self.reps.1],
            "notes": self.notes,
            "rows": rows,
            "mca": mca,
        })
    }

    pub fn from_json(v: &Value) -> Result<Report> {
        let s = |v: &Value, k: &str| -> Result<String> {
            match v.get(k).and_then(Value::as_str) {
                Some(s) => Ok(s.to_string()),
                None => bail!("insns.json: missing string `{k}`"),
            }
        };
        let n = |v: &Value, k: &str| -> Result<u64> {
            match v.get(k).and_then(Value::as_u64) {
                Some(n) => Ok(n),
                None => bail!("insns.json: missing integer `{k}`"),
            }
        };
        let f = |v: &Value, k: &str| -> Result<f64> {
            match v.get(k).and_then(Value::as_f64) {
                Some(x) => Ok(x),
                None => bail!("insns.json: missing number `{k}`"),
            }
        };
        let list = |k: &str| -> &[Value] {
            v.get(k)
                .and_then(Value::as_array)
                .map(Vec::as_slice)
                .unwrap_or(&[])
        };
        let mut rows = Vec::new();
        for r in list("rows") {
            rows.push(Measured {
                op: s(r, "op")?,
                dtype: s(r, "type")?,
                method: s(r, "method")?,
                backend: s(r, "backend")?,
                shape: s(r, "shape")?,
                rows: n(r, "rows")?,
                cols: n(r, "cols")?,
                elements: n(r, "elements")?,
                row_wise: r.get("row_wise").and_then(Value::as_bool).unwrap_or(false),
                insns_per_element: f(r, "insns_per_element")?,
            });
        }
        let mut mca = Vec::new();
        for l in list("mca") {
            let cycles = l
                .get("cycles_per_iteration")
                .and_then(Value::as_object)
                .map(|m| {
                    m.iter()
                        .filter_map(|(cpu, c)| Some((cpu.clone(), c.as_f64()?)))
                        .collect()
                })
                .unwrap_or_default();
            mca.push(McaLoop {
                kernel: s(l, "kernel")?,
                offset: s(l, "offset")?,
                instructions: n(l, "instructions")? as usize,
                bytes_loaded: n(l, "bytes_loaded")?,
                bytes_stored: n(l, "bytes_stored")?,
                elements_per_iteration: n(l, "elements_per_iteration")?,
                cycles_per_iteration: cycles,
            });
        }
        let reps = match v.get("reps").and_then(Value::as_array).map(Vec::as_slice) {
            Some([a, b]) => (a.as_u64().unwrap_or(1), b.as_u64().unwrap_or(2)),
            _ => (1, 2),
        };
        Ok(Report {
            qemu: s(v, "qemu").unwrap_or_default(),
            reps,
            rows,
            mca,
            notes: list("notes")
                .iter()
                .filter_map(|n| n.as_str().map(String::from))
                .collect(),
        })
    }

    /// The Markdown tables (row-wise ops by shape, element-wise ops, and the
    /// llvm-mca loops if any).
    pub fn markdown(&self) -> String {
        let mut md = String::new();
        let kernels = self.kernels();
        let row_ops: Vec<&&Measured> = kernels.iter().filter(|m| m.row_wise).collect();
        let labels: Vec<String> = ROW_SHAPES
            .iter()
            .map(|s| s.to_string())
            .chain(UNIFORM_SHAPES.iter().map(|s| uniform_label(s)))
            .collect();
        let shapes: Vec<&Measured> = labels
            .iter()
            .filter_map(|s| self.rows.iter().find(|m| m.row_wise && m.shape == *s))
            .collect();
        if !row_ops.is_empty() {
            md.push_str(
                "Row-wise ops, instructions per element (NEON, scalar, and NEON/scalar):\n\n",
            );
            md.push_str("| op | type | method |");
            for s in &shapes {
                md.push_str(&format!(
                    " {} {}x{} neon | scalar | neon/scalar |",
                    s.shape, s.rows, s.cols
                ));
            }
            md.push_str(" neon per-row overhead |\n|---|---|---|");
            md.push_str(&"---:|---:|---:|".repeat(shapes.len()));
            md.push_str("---:|\n");
            for k in &row_ops {
                md.push_str(&format!("| {} | {} | {} |", k.op, k.dtype, k.method));
                for s in &shapes {
                    let neon = self.find(k, "neon", &s.shape);
                    let scalar = self.find(k, "scalar", &s.shape);
                    let ratio = neon.and_then(|n| self.neon_over_scalar(n));
                    md.push_str(&format!(
                        " {} | {} | {} |",
                        cell(neon.map(|m| m.insns_per_element)),
                        cell(scalar.map(|m| m.insns_per_element)),
                        ratio.map_or("-".into(), |r| format!("{r:.3}"))
                    ));
                }
                md.push_str(&format!(
                    " {} |\n",
                    self.per_row_overhead(k)
                        .map_or("-".into(), |b| format!("{b:.0}"))
                ));
            }
            md.push('\n');
        }
        let element_ops: Vec<&&Measured> = kernels.iter().filter(|m| !m.row_wise).collect();
        if !element_ops.is_empty() {
            let e = element_ops[0];
            md.push_str(&format!(
                "Element-wise ops on `{}` ({} elements), instructions per element:\n\n",
                e.shape,
                thousands(e.elements)
            ));
            md.push_str("| op | type | method | neon | scalar | neon/scalar |\n|---|---|---|---:|---:|---:|\n");
            for k in &element_ops {
                let neon = self.find(k, "neon", &k.shape);
                let scalar = self.find(k, "scalar", &k.shape);
                md.push_str(&format!(
                    "| {} | {} | {} | {} | {} | {} |\n",
                    k.op,
                    k.dtype,
                    k.method,
                    cell(neon.map(|m| m.insns_per_element)),
                    cell(scalar.map(|m| m.insns_per_element)),
                    neon.and_then(|n| self.neon_over_scalar(n))
                        .map_or("-".into(), |r| format!("{r:.3}"))
                ));
            }
            md.push('\n');
        }
        if !self.mca.is_empty() {
            md.push_str(
                "llvm-mca (LLVM 16) cycles per element of the NEON inner loops \
                 (`cargo xtask bench --mca`; LLVM 16 models the Cortex-A76 with its \
                 Cortex-A57 scheduling model):\n\n",
            );
            md.push_str("| kernel | loop offset | instructions | elements / iteration |");
            for cpu in CPUS {
                md.push_str(&format!(" {cpu} |"));
            }
            md.push_str("\n|---|---|---:|---:|");
            md.push_str(&"---:|".repeat(CPUS.len()));
            md.push('\n');
            for l in &self.mca {
                let short = l.kernel.rsplit("::").next().unwrap_or(&l.kernel);
                md.push_str(&format!(
                    "| {short} | {} | {} | {} |",
                    l.offset, l.instructions, l.elements_per_iteration
                ));
                for cpu in CPUS {
                    md.push_str(&format!(
                        " {} |",
                        l.cycles_per_element(cpu)
                            .map_or("-".into(), |c| format!("{c:.2}"))
                    ));
                }
                md.push('\n');
            }
            md.push('\n');
        }
        for note in &self.notes {
            md.push_str(&format!("Note: {note}\n\n"));
        }
        md
    }

    /// `b` of the fit `a + b / columns` through the NEON mobilebert (384
    /// columns) and rows64 (64 columns) points: instructions per row.
    fn per_row_overhead(&self, k: &Measured) -> Option<f64> {
        let wide = self.find(k, "neon", "mobilebert")?;
        let narrow = self.find(k, "neon", "rows64")?;
        let (cw, cn) = (wide.cols as f64, narrow.cols as f64);
        Some((narrow.insns_per_element - wide.insns_per_element) / (1.0 / cn - 1.0 / cw))
    }

    /// The bar chart: every (op, type, method) on its main shape
    /// (mobilebert for row-wise ops, flat for element-wise ones).
    pub fn svg(&self) -> Result<String> {
        let groups: Vec<plot::Group> = self
            .kernels()
            .into_iter()
            .filter_map(|k| {
                let shape = if k.row_wise {
                    ROW_SHAPES[0]
                } else {
                    ELEMENT_SHAPES[0]
                };
                let bars: Vec<(&'static str, f64)> = [("neon", "NEON"), ("scalar", "scalar")]
                    .into_iter()
                    .filter_map(|(b, label)| {
                        Some((label, self.find(k, b, shape)?.insns_per_element))
                    })
                    .collect();
                (!bars.is_empty()).then(|| plot::Group {
                    label: k.name(),
                    bars,
                })
            })
            .collect();
        Ok(plot::bar_chart(
            "qneon: aarch64 instructions per element (qemu count; mobilebert 1536x384 / flat)",
            "instructions per element (log scale)",
            &groups,
        )?)
    }

    /// The section of the performance document (without the markers).
    pub fn doc_section(&self) -> String {
        format!(
            "Generated by `cargo xtask bench --docs` from `target/bench/insns.json`; \
             do not edit by hand.\n\n\
             Instructions executed per element, counted by the QEMU plugin in \
             `tools/qemu-insn/` ({qemu}): the count of a `qneon-bench` run repeating \
             the kernel {r2} times minus that of a run repeating it {r1} time(s) (so \
             start-up, input generation and set-up cancel), divided by {d} x the \
             elements; release build, aarch64, `-cpu max`. Row-wise ops run on MobileBert's \
             attention scores (`mobilebert`: 4 heads x 384 x 384), the same elements \
             in rows of 64, one 32768-wide row (`vocab`) and 4096 rows of 16 (`short`); \
             element-wise ops on 1536 x 384 elements (`flat`). Inputs are seeded \
             N(0, 3) logits in real units. The per-row overhead is `b` of the fit \
             `a + b / columns` between the `mobilebert` and `rows64` NEON counts. \
             Instruction counts are not cycles: on hardware, run `qneon-bench` itself \
             for wall-clock ns per element and GB/s.\n\n\
             ![Instructions per element by op, type and method]({CHART_LINK})\n\n{md}",
            qemu = if self.qemu.is_empty() {
                "qemu"
            } else {
                &self.qemu
            },
            r1 = self.reps.0,
            r2 = self.reps.1,
            d = self.reps.1 - self.reps.0,
            md = self.markdown().trim_end(),
        )
    }
}

/// Replaces what lies between the bench markers of `doc` with `section`.
#[cfg(test)]
fn replace_section(doc: &str, section: &str) -> Result<String> {
    crate::util::replace_between(doc, SECTION_BEGIN, SECTION_END, section)
}

/// Two decimals below 100, one below 1000, none above.
fn cell(v: Option<f64>) -> String {
    match v {
        Some(v) if v < 100.0 => format!("{v:.2}"),
        Some(v) if v < 1000.0 => format!("{v:.1}"),
        Some(v) => format!("{v:.0}"),
        None => "-".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::util;

    fn m(op: &str, method: &str, backend: &str, shape: &str, cols: u64, v: f64) -> Measured {
        let elements = 589_824;
        Measured {
            op: op.into(),
            dtype: "int8".into(),
            method: method.into(),
            backend: backend.into(),
            shape: shape.into(),
            rows: elements / cols,
            cols,
            elements,
            row_wise: op.contains("softmax"),
            insns_per_element: v,
        }
    }

    fn sample() -> Report {
        Report {
            qemu: "qemu-aarch64 version 7.2.0".into(),
            reps: (1, 2),
            rows: vec![
                m("softmax", "fixed", "neon", "mobilebert", 384, 13.8),
                m("softmax", "fixed", "scalar", "mobilebert", 384, 215.0),
                m("softmax", "fixed", "neon", "rows64", 64, 15.8),
                m("softmax", "fixed", "scalar", "rows64", 64, 217.0),
                m("logistic", "lut", "neon", "flat", 589_824, 0.5),
                m("logistic", "lut", "scalar", "flat", 589_824, 4.0),
            ],
            mca: vec![McaLoop {
                kernel: "qneon::arch::neon::softmax_i8".into(),
                offset: "0x268".into(),
                instructions: 6,
                bytes_loaded: 32,
                bytes_stored: 0,
                elements_per_iteration: 32,
                cycles_per_iteration: vec![
                    ("cortex-a55".into(), 9.0),
                    ("cortex-a76".into(), 3.2),
                    ("neoverse-n2".into(), 2.0),
                ],
            }],
            notes: vec!["every row at full size".into()],
        }
    }

    #[test]
    fn json_round_trips_and_has_ratios() {
        let r = sample();
        let v = r.to_json();
        let text = serde_json::to_string_pretty(&v).unwrap();
        let back = Report::from_json(&serde_json::from_str(&text).unwrap()).unwrap();
        assert_eq!(back, r);
        let rows = v["rows"].as_array().unwrap();
        assert_eq!(rows.len(), 6);
        assert_eq!(rows[0]["op"], "softmax");
        assert_eq!(rows[0]["type"], "int8");
        assert_eq!(rows[0]["method"], "fixed");
        assert_eq!(rows[0]["backend"], "neon");
        assert_eq!(rows[0]["elements"], 589_824);
        assert_eq!(rows[0]["insns_per_element"], 13.8);
        // 13.8 / 215 and 0.5 / 4.
        assert_eq!(rows[0]["neon_over_scalar"], 0.0642);
        assert_eq!(rows[5]["neon_over_scalar"], 0.125);
        assert_eq!(v["mca"][0]["cycles_per_iteration"]["cortex-a55"], 9.0);
        assert!(Report::from_json(&json!({"rows": [{"op": "x"}]})).is_err());
    }

    #[test]
    fn markdown_tables() {
        let md = sample().markdown();
        assert!(
            md.contains(
                "| softmax | int8 | fixed | 13.80 | 215.0 | 0.064 | 15.80 | 217.0 | 0.073 | 154 |"
            ),
            "{md}"
        );
        assert!(
            md.contains("| logistic | int8 | lut | 0.50 | 4.00 | 0.125 |"),
            "{md}"
        );
        assert!(md.contains("`flat` (589,824 elements)"), "{md}");
        // 9 cycles / 32 elements on the A55.
        assert!(
            md.contains("| softmax_i8 | 0x268 | 6 | 32 | 0.28 | 0.10 | 0.06 |"),
            "{md}"
        );
        assert!(md.contains("Note: every row at full size"), "{md}");
    }

    #[test]
    fn doc_section_is_replaced_between_markers() {
        let doc = format!("# t\n\nbefore\n{SECTION_BEGIN}\nold\ntable\n{SECTION_END}\nafter\n");
        let new = replace_section(&doc, "new section\n").unwrap();
        assert_eq!(
            new,
            format!("# t\n\nbefore\n{SECTION_BEGIN}\nnew section\n{SECTION_END}\nafter\n")
        );
        // Idempotent.
        assert_eq!(replace_section(&new, "new section").unwrap(), new);
        assert!(replace_section("no markers", "x").is_err());
        assert!(replace_section(&format!("{SECTION_BEGIN} only"), "x").is_err());
        let twice = format!("{doc}{SECTION_BEGIN}\n{SECTION_END}\n");
        assert!(replace_section(&twice, "x").is_err());
    }

    #[test]
    fn doc_section_links_the_committed_chart() {
        let s = sample().doc_section();
        assert!(s.contains(&format!("]({CHART_LINK})")));
        // The link, resolved from the document's folder, is the chart's file.
        let doc_dir = std::path::Path::new(util::PERFORMANCE_DOC)
            .parent()
            .unwrap();
        assert_eq!(doc_dir.join(CHART_LINK), std::path::Path::new(CHART_SVG));
        assert!(s.contains("qemu-aarch64 version 7.2.0"));
        assert!(!s.contains(SECTION_BEGIN) && !s.contains(SECTION_END));
        assert!(sample().svg().unwrap().contains("softmax int8 fixed"));
    }

    #[test]
    fn the_committed_docs_have_the_sections() {
        // `--docs` rewrites these; a missing or doubled marker fails here
        // rather than after a measurement.
        let doc = std::fs::read_to_string(util::root().join(util::PERFORMANCE_DOC)).unwrap();
        assert!(replace_section(&doc, "x").is_ok());
        assert!(util::root().join(CHART_SVG).is_file());
    }

    #[test]
    fn formats_numbers() {
        assert_eq!(cell(Some(0.531)), "0.53");
        assert_eq!(cell(Some(13.824)), "13.82");
        assert_eq!(cell(Some(215.04)), "215.0");
        assert_eq!(cell(Some(1234.4)), "1234");
        assert_eq!(cell(None), "-");
        assert_eq!(thousands(589_824), "589,824");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1_000_000), "1,000,000");
    }
}
