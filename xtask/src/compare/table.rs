//! `target/compare/compare.json` and the table printed from it.
//!
//! One row per model and CPU model: instructions per inference of TFLite
//! with XNNPACK and with its builtin kernels, and qneon's (with its
//! bit-exactness against LiteRT and its distance from XNNPACK). A run replaces the rows of
//! the (model, cpu) pairs it measured and keeps the others, so runs under
//! different `-cpu` values accumulate.

use serde_json::{json, Value};

use crate::util::{self, bail, Result};

#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// The model's file name.
    pub model: String,
    /// The `qemu-aarch64 -cpu` value.
    pub cpu: String,
    /// R of the R / 2R measurement.
    pub reps: u64,
    /// Guest instructions per inference, XNNPACK delegate.
    pub tflite_xnnpack: u64,
    /// Guest instructions per inference, builtin kernels.
    pub tflite_builtin: u64,
    /// qneon's side, measured in the same run (`None` in rows written
    /// before qneon ran `.tflite` models).
    pub qneon: Option<QneonColumns>,
}

/// qneon's results on a row's model (see `qneon.rs`).
#[derive(Debug, Clone, PartialEq)]
pub struct QneonColumns {
    /// Guest instructions per inference, `--softmax lut`.
    pub instructions: u64,
    /// `--softmax lut` outputs == LiteRT builtin kernels' bytes.
    pub bit_exact_lut: bool,
    /// `--softmax fixed` outputs == LiteRT reference kernels' bytes.
    pub bit_exact_fixed: Option<bool>,
    /// `--kernels xnnpack` outputs == the XNNPACK delegate's bytes (`None`:
    /// not run, or refused by qneon).
    pub bit_exact_xnnpack: Option<bool>,
    /// qneon's arena plan in bytes (activations and scratch, by lifetime).
    pub arena_bytes: Option<u64>,
    /// max |qneon LUT - XNNPACK| over the output elements.
    pub xnnpack_max_abs_diff: Option<f64>,
    /// Per op type, most first: instructions and MACs per inference (MACs
    /// 0 for ops without a matrix product).
    pub op_types: Vec<(String, u64, u64)>,
}

impl Row {
    pub fn to_json(&self) -> Value {
        let q = self.qneon.as_ref();
        json!({
            "model": self.model,
            "cpu": self.cpu,
            "reps": self.reps,
            "tflite_xnnpack": self.tflite_xnnpack,
            "tflite_builtin": self.tflite_builtin,
            "qneon": q.map(|q| q.instructions),
            "qneon_softmax": q.map(|_| "lut"),
            "bit_exact": q.map(|q| json!({
                "lut_vs_litert_builtin": q.bit_exact_lut,
                "fixed_vs_litert_ref": q.bit_exact_fixed,
                "xnnpack_vs_litert_xnnpack": q.bit_exact_xnnpack,
            })),
            "xnnpack_vs_qneon_max_abs_diff": q.and_then(|q| q.xnnpack_max_abs_diff),
            "qneon_arena_bytes": q.and_then(|q| q.arena_bytes),
            "qneon_op_types": q.map(|q| q.op_types
                .iter()
                .map(|(op, n, macs)| json!({"op": op, "instructions": n, "macs": macs}))
                .collect::<Vec<_>>()),
        })
    }

    pub fn from_json(value: &Value) -> Result<Row> {
        let text = |key: &str| {
            value[key]
                .as_str()
                .map(str::to_string)
                .ok_or_else(|| format!("compare.json row without a string `{key}`: {value}"))
        };
        let count = |key: &str| {
            value[key]
                .as_u64()
                .ok_or_else(|| format!("compare.json row without an integer `{key}`: {value}"))
        };
        let qneon = if value["qneon"].is_null() {
            None
        } else {
            let flag = |key: &str| {
                value["bit_exact"][key]
                    .as_bool()
                    .ok_or_else(|| format!("compare.json row without `bit_exact.{key}`: {value}"))
            };
            let mut op_types = Vec::new();
            for t in value["qneon_op_types"]
                .as_array()
                .ok_or_else(|| format!("compare.json row without `qneon_op_types`: {value}"))?
            {
                // Rows written before MACs were counted have none.
                let macs = t["macs"].as_u64().unwrap_or(0);
                match (t["op"].as_str(), t["instructions"].as_u64()) {
                    (Some(op), Some(n)) => op_types.push((op.to_string(), n, macs)),
                    _ => bail!("compare.json: bad qneon_op_types entry {t}"),
                }
            }
            Some(QneonColumns {
                instructions: count("qneon")?,
                bit_exact_lut: flag("lut_vs_litert_builtin")?,
                bit_exact_fixed: value["bit_exact"]["fixed_vs_litert_ref"].as_bool(),
                bit_exact_xnnpack: value["bit_exact"]["xnnpack_vs_litert_xnnpack"].as_bool(),
                arena_bytes: value["qneon_arena_bytes"].as_u64(),
                xnnpack_max_abs_diff: value["xnnpack_vs_qneon_max_abs_diff"].as_f64(),
                op_types,
            })
        };
        Ok(Row {
            model: text("model")?,
            cpu: text("cpu")?,
            reps: count("reps")?,
            tflite_xnnpack: count("tflite_xnnpack")?,
            tflite_builtin: count("tflite_builtin")?,
            qneon,
        })
    }
}

/// The rows of a `compare.json` text.
pub fn parse(text: &str) -> Result<Vec<Row>> {
    let value: Value = serde_json::from_str(text)?;
    let Some(rows) = value["rows"].as_array() else {
        bail!("compare.json has no `rows` array");
    };
    rows.iter().map(Row::from_json).collect()
}

/// `compare.json`'s text for `rows`.
pub fn to_text(rows: &[Row]) -> Result<String> {
    let value = json!({
        "unit": "guest instructions per inference (qemu-insn plugin; count(2R) - count(R), over R)",
        "rows": rows.iter().map(Row::to_json).collect::<Vec<_>>(),
    });
    Ok(serde_json::to_string_pretty(&value)? + "\n")
}

/// `old` with every row whose (model, cpu) appears in `new` replaced, the
/// new ones added, sorted by model then cpu.
pub fn merge(old: Vec<Row>, new: &[Row]) -> Vec<Row> {
    let mut rows: Vec<Row> = old
        .into_iter()
        .filter(|o| !new.iter().any(|n| n.model == o.model && n.cpu == o.cpu))
        .chain(new.iter().cloned())
        .collect();
    rows.sort_by(|a, b| (&a.model, &a.cpu).cmp(&(&b.model, &b.cpu)));
    rows
}

fn yes_no(b: bool) -> &'static str {
    if b {
        "yes"
    } else {
        "NO"
    }
}

/// The rows as an aligned text table, then qneon's instructions per op type
/// of each row that has them.
pub fn format_table(rows: &[Row]) -> String {
    let header = [
        "model",
        "cpu",
        "reps",
        "tflite xnnpack",
        "tflite builtin",
        "builtin/xnnpack",
        "qneon (lut)",
        "qneon/xnnpack",
        "bit-exact lut",
        "bit-exact fixed",
        "bit-exact xnnpack",
        "max |qneon-xnnpack|",
        "qneon arena",
    ];
    const COLUMNS: usize = 13;
    let mut cells: Vec<[String; COLUMNS]> = vec![header.map(str::to_string)];
    for row in rows {
        let q = row.qneon.as_ref();
        let dash = || "-".to_string();
        cells.push([
            row.model.clone(),
            row.cpu.clone(),
            row.reps.to_string(),
            util::thousands(row.tflite_xnnpack),
            util::thousands(row.tflite_builtin),
            format!(
                "{:.2}",
                row.tflite_builtin as f64 / row.tflite_xnnpack.max(1) as f64
            ),
            q.map(|q| util::thousands(q.instructions))
                .unwrap_or_else(dash),
            q.map(|q| {
                format!(
                    "{:.2}",
                    q.instructions as f64 / row.tflite_xnnpack.max(1) as f64
                )
            })
            .unwrap_or_else(dash),
            q.map(|q| yes_no(q.bit_exact_lut).to_string())
                .unwrap_or_else(dash),
            q.and_then(|q| q.bit_exact_fixed)
                .map(|b| yes_no(b).to_string())
                .unwrap_or_else(dash),
            q.and_then(|q| q.bit_exact_xnnpack)
                .map(|b| yes_no(b).to_string())
                .unwrap_or_else(dash),
            q.and_then(|q| q.xnnpack_max_abs_diff)
                .map(|d| format!("{d:.6}"))
                .unwrap_or_else(dash),
            q.and_then(|q| q.arena_bytes)
                .map(util::thousands)
                .unwrap_or_else(dash),
        ]);
    }
    let widths: Vec<usize> = (0..COLUMNS)
        .map(|c| cells.iter().map(|r| r[c].len()).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    for row in &cells {
        let line: Vec<String> = row
            .iter()
            .enumerate()
            .map(|(c, cell)| {
                // Names left-aligned, numbers right-aligned.
                if c < 2 {
                    format!("{cell:<w$}", w = widths[c])
                } else {
                    format!("{cell:>w$}", w = widths[c])
                }
            })
            .collect();
        out.push_str(line.join("  ").trim_end());
        out.push('\n');
    }
    for row in rows {
        let Some(q) = &row.qneon else { continue };
        out += &format!(
            "\nqneon per op type, {} (-cpu {}), instructions per inference; for matrix \
             products their MACs, instructions per MAC and the floors MACs/16 (sdot) and \
             MACs/32 (smmla):\n",
            row.model, row.cpu
        );
        for (op, n, macs) in &q.op_types {
            out += &format!(
                "  {op:<20} {:>16}  {:>5.1}%",
                util::thousands(*n),
                100.0 * *n as f64 / q.instructions.max(1) as f64
            );
            if *macs > 0 {
                out += &format!(
                    "  {:>14} MAC  {:>6.3}/MAC  sdot floor {:>12}  i8mm floor {:>12}",
                    util::thousands(*macs),
                    *n as f64 / *macs as f64,
                    util::thousands(macs.div_ceil(16)),
                    util::thousands(macs.div_ceil(32))
                );
            }
            out.push('\n');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(model: &str, cpu: &str, xnnpack: u64) -> Row {
        Row {
            model: model.into(),
            cpu: cpu.into(),
            reps: 2,
            tflite_xnnpack: xnnpack,
            tflite_builtin: 2 * xnnpack,
            qneon: None,
        }
    }

    fn with_qneon(mut r: Row) -> Row {
        r.qneon = Some(QneonColumns {
            instructions: r.tflite_xnnpack / 2,
            bit_exact_lut: true,
            bit_exact_fixed: Some(false),
            bit_exact_xnnpack: Some(true),
            arena_bytes: Some(65536),
            xnnpack_max_abs_diff: Some(0.125),
            op_types: vec![
                ("FULLY_CONNECTED".into(), 400, 3200),
                ("SOFTMAX".into(), 17, 0),
            ],
        });
        r
    }

    #[test]
    fn json_round_trip_keeps_the_qneon_fields() {
        let rows = vec![
            row("a.tflite", "neoverse-n1", 1234),
            with_qneon(row("b.tflite", "neoverse-n1", 1000)),
        ];
        let text = to_text(&rows).unwrap();
        let value: Value = serde_json::from_str(&text).unwrap();
        assert!(value["rows"][0]["qneon"].is_null());
        assert!(value["rows"][0]["bit_exact"].is_null());
        assert_eq!(value["rows"][0]["tflite_builtin"], 2468);
        assert_eq!(value["rows"][1]["qneon"], 500);
        assert_eq!(value["rows"][1]["bit_exact"]["lut_vs_litert_builtin"], true);
        assert_eq!(value["rows"][1]["bit_exact"]["fixed_vs_litert_ref"], false);
        assert_eq!(
            value["rows"][1]["bit_exact"]["xnnpack_vs_litert_xnnpack"],
            true
        );
        assert_eq!(value["rows"][1]["qneon_op_types"][0]["macs"], 3200);
        assert_eq!(value["rows"][1]["qneon_op_types"][1]["op"], "SOFTMAX");
        assert_eq!(parse(&text).unwrap(), rows);
    }

    #[test]
    fn bad_rows_are_errors() {
        assert!(parse("{}").is_err());
        assert!(parse(r#"{"rows": [{"model": "a", "cpu": "max"}]}"#).is_err());
        assert!(parse("[").is_err());
    }

    #[test]
    fn merge_replaces_only_the_same_model_and_cpu() {
        let old = vec![
            row("b.tflite", "neoverse-n1", 10),
            row("a.tflite", "max,sme=off", 20),
            row("a.tflite", "neoverse-n1", 30),
        ];
        let merged = merge(old, &[row("a.tflite", "neoverse-n1", 31)]);
        let keys: Vec<(&str, &str, u64)> = merged
            .iter()
            .map(|r| (r.model.as_str(), r.cpu.as_str(), r.tflite_xnnpack))
            .collect();
        assert_eq!(
            keys,
            [
                ("a.tflite", "max,sme=off", 20),
                ("a.tflite", "neoverse-n1", 31),
                ("b.tflite", "neoverse-n1", 10)
            ]
        );
    }

    #[test]
    fn table_aligns_columns() {
        let table = format_table(&[
            row("mobilebert.tflite", "neoverse-n1", 3_226_000_000),
            row("t.tflite", "max,sme=off", 7),
        ]);
        let lines: Vec<&str> = table.lines().collect();
        assert_eq!(lines.len(), 3);
        assert!(lines[0].starts_with("model "), "{table}");
        assert!(lines[1].contains("3,226,000,000"), "{table}");
        assert!(lines[1].contains("6,452,000,000"), "{table}");
        assert!(lines[1].contains("2.00"), "{table}");
        // Right-aligned counts end in the same column.
        let big_end = lines[1].find("3,226,000,000").unwrap() + "3,226,000,000".len();
        let small_end = lines[2].find(" 7 ").unwrap() + 2;
        assert_eq!(big_end, small_end, "{table}");

        let table = format_table(&[with_qneon(row("m.tflite", "neoverse-n1", 1000))]);
        let lines: Vec<&str> = table.lines().collect();
        let cells: Vec<&str> = lines[1].split_whitespace().collect();
        assert_eq!(
            cells[6..],
            ["500", "0.50", "yes", "NO", "yes", "0.125000", "65,536"],
            "{table}"
        );
        // A matrix product's line sets its instructions beside its floors:
        // 3,200 MACs, 400 instructions: 0.125 per MAC, 200 and 100.
        assert!(
            table
                .lines()
                .any(|l| l.trim_start().starts_with("FULLY_CONNECTED")
                    && l.contains("3,200 MAC")
                    && l.contains("0.125/MAC")
                    && l.contains("sdot floor          200")
                    && l.contains("i8mm floor          100")),
            "{table}"
        );
        assert!(
            table.contains("qneon per op type, m.tflite (-cpu neoverse-n1)"),
            "{table}"
        );
        assert!(
            table.lines().any(|l| l.trim_start().starts_with("SOFTMAX")
                && l.contains(" 17 ")
                && l.ends_with("3.4%")),
            "{table}"
        );
    }
}
