//! What `qneon-mobilebert --json` writes: the configuration, every op
//! with its region id and work, the checksum and the accuracy.

use serde_json::Value;

use crate::util::{bail, Result};

/// The layer runner (package `qneon-cli`).
pub const BIN: &str = "qneon-mobilebert";

/// One op of the layer, as the runner reports it.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct OpStats {
    /// Its region id (1..=255).
    pub(super) id: u8,
    pub(super) op: String,
    pub(super) calls: u64,
    /// MACs for matrix products, elements for the rest (`unit`).
    pub(super) work: u64,
    pub(super) unit: String,
    /// Wall-clock time of the op in the run (under qemu: not meaningful,
    /// kept in the JSON only).
    pub(super) seconds: f64,
}

/// The runner's `--json` output.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct RunnerReport {
    pub(super) softmax: String,
    pub(super) backend: String,
    pub(super) dotprod: bool,
    pub(super) seq_len: u64,
    pub(super) macs: u64,
    pub(super) ops: Vec<OpStats>,
    pub(super) checksum: String,
    pub(super) cosine: f64,
    pub(super) max_abs_err_lsb: f64,
    pub(super) mean_abs_err_lsb: f64,
    /// The JSON as read, kept whole in profile.json.
    pub(super) raw: Value,
}

impl RunnerReport {
    pub(super) fn from_json(v: &Value) -> Result<RunnerReport> {
        let str_field = |o: &Value, name: &str| {
            o.get(name)
                .and_then(Value::as_str)
                .map(str::to_string)
                .ok_or_else(|| format!("{BIN} JSON: no string `{name}`"))
        };
        let u64_field = |o: &Value, name: &str| {
            o.get(name)
                .and_then(Value::as_u64)
                .ok_or_else(|| format!("{BIN} JSON: no count `{name}`"))
        };
        let f64_field = |o: &Value, name: &str| {
            o.get(name)
                .and_then(Value::as_f64)
                .ok_or_else(|| format!("{BIN} JSON: no number `{name}`"))
        };
        let mut ops = Vec::new();
        for o in v
            .get("ops")
            .and_then(Value::as_array)
            .ok_or_else(|| format!("{BIN} JSON: no `ops` array"))?
        {
            let id = u64_field(o, "id")?;
            let op = str_field(o, "op")?;
            let id = match u8::try_from(id) {
                Ok(id) if id != 0 => id,
                _ => bail!("{BIN} JSON: op `{op}` has id {id}; region ids are 1..=255"),
            };
            if ops.iter().any(|p: &OpStats| p.id == id) {
                bail!("{BIN} JSON: two ops have id {id}");
            }
            ops.push(OpStats {
                id,
                op,
                calls: u64_field(o, "calls")?,
                work: u64_field(o, "work")?,
                unit: str_field(o, "unit")?,
                seconds: f64_field(o, "seconds")?,
            });
        }
        Ok(RunnerReport {
            softmax: str_field(v, "softmax")?,
            backend: str_field(v, "backend")?,
            dotprod: v
                .get("dotprod")
                .and_then(Value::as_bool)
                .ok_or_else(|| format!("{BIN} JSON: no boolean `dotprod`"))?,
            seq_len: u64_field(v, "seq_len")?,
            macs: u64_field(v, "macs")?,
            ops,
            checksum: str_field(v, "checksum")?,
            cosine: f64_field(v, "cosine")?,
            max_abs_err_lsb: f64_field(v, "max_abs_err_lsb")?,
            mean_abs_err_lsb: f64_field(v, "mean_abs_err_lsb")?,
            raw: v.clone(),
        })
    }
}

// ---- One configuration's profile. ----

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::fixtures::runner_json;
    use serde_json::json;

    #[test]
    fn parses_runner_json() {
        let r = RunnerReport::from_json(&runner_json("neon", "lut", "0x1234abcd")).unwrap();
        assert_eq!((r.backend.as_str(), r.softmax.as_str()), ("neon", "lut"));
        assert!(r.dotprod);
        assert_eq!((r.seq_len, r.macs), (384, 1_600_000));
        assert_eq!(r.checksum, "0x1234abcd");
        assert_eq!(
            (r.cosine, r.max_abs_err_lsb, r.mean_abs_err_lsb),
            (0.998, 3.0, 0.41)
        );
        assert_eq!(
            r.ops[1],
            OpStats {
                id: 2,
                op: "softmax".into(),
                calls: 1,
                work: 10_000,
                unit: "element".into(),
                seconds: 0.25
            }
        );

        let with_op = |op: Value| {
            let mut v = runner_json("neon", "lut", "0x0");
            v["ops"].as_array_mut().unwrap().push(op);
            RunnerReport::from_json(&v)
        };
        let op = |id: u64| json!({"id": id, "op": "x", "calls": 1, "work": 1, "unit": "element", "seconds": 0.0});
        assert!(with_op(op(4)).is_ok());
        assert!(with_op(op(0)).is_err(), "id 0 is outside the ops");
        assert!(with_op(op(256)).is_err(), "ids fit the marker's 8 bits");
        assert!(with_op(op(1)).is_err(), "ids are unique");
        let mut v = runner_json("neon", "lut", "0x0");
        v.as_object_mut().unwrap().remove("checksum");
        assert!(RunnerReport::from_json(&v).is_err());
    }
}
