//! `target/compare/compare.json` and the table printed from it.
//!
//! One row per model and CPU model: instructions per inference of TFLite
//! with XNNPACK and with its builtin kernels. A run replaces the rows of
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
}

impl Row {
    pub fn to_json(&self) -> Value {
        json!({
            "model": self.model,
            "cpu": self.cpu,
            "reps": self.reps,
            "tflite_xnnpack": self.tflite_xnnpack,
            "tflite_builtin": self.tflite_builtin,
            // TODO(issue 12): qneon's own runtime for .tflite files does not
            // exist yet. When it does, `qneon` is its instructions per
            // inference measured the same way (R / 2R under the same -cpu)
            // and `bit_exact` whether its outputs equal the builtin
            // resolver's output_*.npy byte for byte.
            "qneon": Value::Null,
            "bit_exact": Value::Null,
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
        Ok(Row {
            model: text("model")?,
            cpu: text("cpu")?,
            reps: count("reps")?,
            tflite_xnnpack: count("tflite_xnnpack")?,
            tflite_builtin: count("tflite_builtin")?,
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

/// The rows as an aligned text table.
pub fn format_table(rows: &[Row]) -> String {
    let header = [
        "model",
        "cpu",
        "reps",
        "tflite xnnpack",
        "tflite builtin",
        "builtin/xnnpack",
        "qneon",
    ];
    let mut cells: Vec<[String; 7]> = vec![header.map(str::to_string)];
    for row in rows {
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
            // TODO(issue 12): qneon's count once its runtime exists.
            "-".to_string(),
        ]);
    }
    let widths: Vec<usize> = (0..header.len())
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
        }
    }

    #[test]
    fn json_round_trip_keeps_the_qneon_fields_null() {
        let rows = vec![row("a.tflite", "neoverse-n1", 1234)];
        let text = to_text(&rows).unwrap();
        let value: Value = serde_json::from_str(&text).unwrap();
        assert!(value["rows"][0]["qneon"].is_null());
        assert!(value["rows"][0]["bit_exact"].is_null());
        assert_eq!(value["rows"][0]["tflite_builtin"], 2468);
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
    }
}
