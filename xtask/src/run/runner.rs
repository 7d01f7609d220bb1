//! What `qneon run --json` writes, as far as the profile needs it: the
//! configuration, and every op (node) with its work and its instruction
//! count region.

use serde_json::Value;

use super::regions::MAX_REGION;
use crate::util::{bail, Result};

/// The model runner (package `qneon-cli`).
pub const BIN: &str = "qneon";

/// One op (node) of the model, as `qneon run --json` lists it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct OpRun {
    /// Execution order.
    pub(crate) position: u64,
    /// Operator index in the model's main subgraph.
    pub(crate) index: u64,
    /// TFLite's name of the op (`FULLY_CONNECTED`).
    pub(crate) op: String,
    /// Work per invoke: MACs for matrix products, output elements otherwise.
    pub(crate) work: u64,
    /// `MAC` or `element`.
    pub(crate) unit: String,
    /// Its instruction-count region (1..=4095).
    pub(crate) region: u16,
}

/// `qneon run --json`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RunnerReport {
    pub(crate) softmax: String,
    pub(crate) backend: String,
    pub(crate) rounding: String,
    /// Invokes in the run: region counts are over all of them.
    pub(crate) reps: u64,
    /// MACs per invoke (FULLY_CONNECTED, BATCH_MATMUL).
    pub(crate) macs: u64,
    /// Every op has a region of its own (else ops of a type share one).
    pub(crate) region_per_op: bool,
    /// The region of what the run does once (loading, planning, files):
    /// not part of any invoke.
    pub(crate) setup_region: u16,
    /// The region of the invoke loop's work between two nodes.
    pub(crate) between_region: u16,
    /// The region of setting the inputs before the invokes (serial, per
    /// invoke with `--reps 1`). Region 0 is then only the process's
    /// start-up (once) and the workers' waiting.
    pub(crate) inputs_region: u16,
    /// The region of `qneon run`'s own clock reads (its `--profile` times):
    /// measuring, not the runtime's work, in no per-invoke figure.
    pub(crate) profiler_region: u16,
    pub(crate) ops: Vec<OpRun>,
    /// The JSON as read, kept whole in profile.json.
    pub(crate) raw: Value,
}

impl RunnerReport {
    pub(crate) fn from_json(v: &Value) -> Result<RunnerReport> {
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
        let region_per_op = v
            .get("region_per_op")
            .and_then(Value::as_bool)
            .ok_or_else(|| format!("{BIN} JSON: no boolean `region_per_op`"))?;
        let special = |name: &str| match u64_field(v, name).map(u16::try_from)? {
            Ok(r @ 1..=MAX_REGION) => Ok(r),
            _ => Err(format!("{BIN} JSON: `{name}` is not in 1..={MAX_REGION}")),
        };
        let (setup_region, between_region) = (special("setup_region")?, special("between_region")?);
        let inputs_region = special("inputs_region")?;
        let profiler_region = special("profiler_region")?;
        let specials = [setup_region, between_region, inputs_region, profiler_region];
        if (1..specials.len()).any(|i| specials[..i].contains(&specials[i])) {
            bail!(
                "{BIN} JSON: the set-up, the invoke loop, the inputs and the profiler share a \
                 region {specials:?}"
            );
        }
        let mut ops: Vec<OpRun> = Vec::new();
        for o in v
            .get("ops")
            .and_then(Value::as_array)
            .ok_or_else(|| format!("{BIN} JSON: no `ops` array"))?
        {
            let op = str_field(o, "op")?;
            let region = u64_field(o, "region")?;
            let region = match u16::try_from(region) {
                Ok(r @ 1..=MAX_REGION) => r,
                _ => {
                    bail!("{BIN} JSON: op `{op}` has region {region}; regions are 1..={MAX_REGION}")
                }
            };
            if specials.contains(&region) {
                bail!(
                    "{BIN} JSON: op `{op}` has the set-up's, the invoke loop's, the inputs' or \
                     the profiler's region {region}"
                );
            }
            if region_per_op && ops.iter().any(|p| p.region == region) {
                bail!("{BIN} JSON: two ops have region {region}, but every op should have its own");
            }
            ops.push(OpRun {
                position: u64_field(o, "position")?,
                index: u64_field(o, "index")?,
                op,
                work: u64_field(o, "work")?,
                unit: str_field(o, "unit")?,
                region,
            });
        }
        if !region_per_op {
            // Shared regions must be shared by one op type only.
            for a in &ops {
                if ops.iter().any(|b| b.region == a.region && b.op != a.op) {
                    bail!(
                        "{BIN} JSON: region {} holds {} and other op types",
                        a.region,
                        a.op
                    );
                }
            }
        }
        let reps = u64_field(v, "reps")?;
        if reps == 0 {
            bail!("{BIN} JSON: reps 0");
        }
        Ok(RunnerReport {
            softmax: str_field(v, "softmax")?,
            backend: str_field(v, "backend")?,
            rounding: str_field(v, "rounding")?,
            reps,
            macs: u64_field(v, "macs")?,
            region_per_op,
            setup_region,
            between_region,
            inputs_region,
            profiler_region,
            ops,
            raw: v.clone(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::fixtures::runner_json;
    use serde_json::json;

    #[test]
    fn parses_runner_json() {
        let r = RunnerReport::from_json(&runner_json("neon", "lut")).unwrap();
        assert_eq!((r.backend.as_str(), r.softmax.as_str()), ("neon", "lut"));
        assert_eq!(
            (r.rounding.as_str(), r.reps, r.macs),
            ("single", 2, 1_600_000)
        );
        assert!(r.region_per_op);
        assert_eq!(
            r.ops[2],
            OpRun {
                position: 2,
                index: 5,
                op: "SOFTMAX".into(),
                work: 10_000,
                unit: "element".into(),
                region: 3,
            }
        );

        let with_op = |op: Value| {
            let mut v = runner_json("neon", "lut");
            v["ops"].as_array_mut().unwrap().push(op);
            RunnerReport::from_json(&v)
        };
        let op = |region: u64| {
            json!({"position": 9, "index": 9, "op": "ADD", "work": 1,
                   "unit": "element", "region": region})
        };
        assert!(with_op(op(5)).is_ok());
        assert!(with_op(op(0)).is_err(), "region 0 is outside the ops");
        assert!(
            with_op(op(4096)).is_err(),
            "regions fit the marker's 12 bits"
        );
        assert!(with_op(op(1)).is_err(), "regions are one per op");
        let mut shared = runner_json("neon", "lut");
        shared["region_per_op"] = json!(false);
        shared["ops"][1]["region"] = json!(1);
        assert!(
            RunnerReport::from_json(&shared).is_ok(),
            "the two FULLY_CONNECTED share one"
        );
        shared["ops"][2]["region"] = json!(1);
        assert!(
            RunnerReport::from_json(&shared).is_err(),
            "SOFTMAX may not share with FULLY_CONNECTED"
        );
        let mut v = runner_json("neon", "lut");
        v.as_object_mut().unwrap().remove("macs");
        assert!(RunnerReport::from_json(&v).is_err());
    }
}
