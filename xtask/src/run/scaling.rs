//! `cargo xtask run --scaling`: the measurements of the scaling table of
//! docs/PERFORMANCE.md. Several models, each run with `--threads 1, 2, 4,
//! 8` counted per thread ([`super::threads`]), kept in
//! `target/run/scaling.json` (merged by model, so that a long model can be
//! measured by a command of its own). `cargo xtask scaling-docs`
//! (`crate::scaling`) writes the table.

use std::fs;
use std::path::Path;

use serde_json::{json, Value};

use crate::util::Result;

/// The models of the table, with their inputs (none: seeded by `qneon`).
pub(super) const MODELS: [(&str, &[&str]); 3] = [
    (
        "models/mobilebert_squad_1l.tflite",
        &[
            "input_ids=models/mobilebert_squad/inputs/case0_full.input_ids.npy",
            "attention_mask=models/mobilebert_squad/inputs/case0_full.attention_mask.npy",
            "token_type_ids=models/mobilebert_squad/inputs/case0_full.token_type_ids.npy",
        ],
    ),
    ("models/tflite_micro/person_detect.tflite", &[]),
    (
        "models/tflite_micro/mobilenet_v2_quantized_1x3x224x224.tflite",
        &[],
    ),
];

/// Thread counts of the table.
pub(super) const THREADS: [u32; 4] = [1, 2, 4, 8];

/// The `-cpu` of the table: `cargo xtask compare`'s default, so that
/// TFLite's rows are on the same CPU model.
pub(super) const CPU: &str = "neoverse-n1";

/// One row of `scaling.json`: a model at a thread count.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Row {
    pub(crate) model: String,
    pub(crate) threads: u32,
    pub(crate) critical_path: u64,
    pub(crate) ops_path: u64,
    pub(crate) serial: u64,
    pub(crate) speedup: f64,
    pub(crate) ops_speedup: f64,
    pub(crate) balance: f64,
}

impl Row {
    /// From a model name and a `Threaded::summary_json`.
    pub(super) fn from_summary(model: &str, v: &Value) -> Result<Row> {
        let u = |name: &str| {
            v.get(name)
                .and_then(Value::as_u64)
                .ok_or_else(|| format!("scaling row of {model} without `{name}`"))
        };
        let f = |name: &str| {
            v.get(name)
                .and_then(Value::as_f64)
                .ok_or_else(|| format!("scaling row of {model} without `{name}`"))
        };
        Ok(Row {
            model: model.to_string(),
            threads: u32::try_from(u("threads")?).map_err(|_| "threads out of range")?,
            critical_path: u("critical_path")?,
            ops_path: u("ops_path")?,
            serial: u("serial")?,
            speedup: f("speedup")?,
            ops_speedup: f("ops_speedup")?,
            balance: f("balance")?,
        })
    }
}

/// Puts `model`'s runs (summaries) into `path`, replacing its old ones;
/// another `-cpu` or configuration starts the file over.
pub(super) fn merge(path: &Path, cpu: &str, config: &str, model: &str, runs: Vec<Value>) -> Result {
    let mut models: Vec<Value> = match fs::read_to_string(path) {
        Ok(text) => {
            let v: Value = serde_json::from_str(&text)?;
            let same = v.get("cpu").and_then(Value::as_str) == Some(cpu)
                && v.get("config").and_then(Value::as_str) == Some(config);
            match v.get("models").and_then(Value::as_array) {
                Some(a) if same => a.clone(),
                _ => Vec::new(),
            }
        }
        Err(_) => Vec::new(),
    };
    models.retain(|m| m.get("model").and_then(Value::as_str) != Some(model));
    models.push(json!({"model": model, "runs": runs}));
    models.sort_by_key(|m| m.get("model").and_then(Value::as_str).map(str::to_string));
    let json = json!({"cpu": cpu, "config": config, "models": models});
    fs::write(path, serde_json::to_string_pretty(&json)? + "\n")
        .map_err(|e| format!("{}: {e}", path.display()).into())
}

/// The rows of `scaling.json`, with its `-cpu` and configuration.
pub(crate) fn read(text: &str) -> Result<(String, String, Vec<Row>)> {
    let v: Value = serde_json::from_str(text)?;
    let s = |name: &str| {
        v.get(name)
            .and_then(Value::as_str)
            .map(str::to_string)
            .ok_or_else(|| format!("scaling.json without `{name}`"))
    };
    let mut rows = Vec::new();
    for m in v
        .get("models")
        .and_then(Value::as_array)
        .ok_or("scaling.json without models")?
    {
        let model = m
            .get("model")
            .and_then(Value::as_str)
            .ok_or("scaling.json: a model without a name")?;
        for run in m
            .get("runs")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            rows.push(Row::from_summary(model, run)?);
        }
    }
    Ok((s("cpu")?, s("config")?, rows))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary(threads: u32, cp: u64, ops: u64, speedup: f64) -> Value {
        json!({"threads": threads, "critical_path": cp, "ops_path": ops, "serial": cp - ops,
               "speedup": speedup, "ops_speedup": speedup, "balance": 1.25})
    }

    #[test]
    fn merges_models() {
        let dir = crate::util::target_dir().join("xtask-test-run-scaling");
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        let path = dir.join("scaling.json");
        merge(
            &path,
            "n1",
            "neon-lut",
            "models/b.tflite",
            vec![summary(1, 1000, 900, 1.0)],
        )
        .unwrap();
        merge(
            &path,
            "n1",
            "neon-lut",
            "models/a.tflite",
            vec![summary(1, 50, 40, 1.0)],
        )
        .unwrap();
        merge(
            &path,
            "n1",
            "neon-lut",
            "models/b.tflite",
            vec![summary(1, 1000, 900, 1.0), summary(4, 400, 300, 2.5)],
        )
        .unwrap();
        let (cpu, config, rows) = read(&fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!((cpu.as_str(), config.as_str()), ("n1", "neon-lut"));
        assert_eq!(
            rows.iter()
                .map(|r| (r.model.as_str(), r.threads))
                .collect::<Vec<_>>(),
            [
                ("models/a.tflite", 1),
                ("models/b.tflite", 1),
                ("models/b.tflite", 4)
            ]
        );
        // Another configuration starts over.
        merge(
            &path,
            "n1",
            "neon-fixed",
            "models/c.tflite",
            vec![summary(1, 2, 1, 1.0)],
        )
        .unwrap();
        assert_eq!(
            read(&fs::read_to_string(&path).unwrap()).unwrap().2.len(),
            1
        );

        fs::remove_dir_all(&dir).unwrap();
    }
}
