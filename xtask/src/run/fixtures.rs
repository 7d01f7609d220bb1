//! Test data shared by the run modules' tests: a `qneon run --json` report
//! and the plugin output that goes with it.

use serde_json::{json, Value};

use super::profile::Profile;
use super::regions::Regions;
use super::runner::RunnerReport;

/// A `qneon run --json` report of 2 invokes of a model with 1.6 M MACs per
/// invoke (bound 2 x 1.6 M / 16 = 200,000 instructions): two
/// FULLY_CONNECTED, a SOFTMAX and an ADD.
pub(super) fn runner_json(backend: &str, softmax: &str) -> Value {
    json!({
        "model": "m.tflite", "softmax": softmax, "backend": backend, "rounding": "single",
        "reps": 2, "macs": 1_600_000u64, "region_per_op": true, "setup_region": 4095,
        "between_region": 4094, "inputs_region": 4093, "profiler_region": 4092,
        "ops": [
            {"position": 0, "index": 0, "op": "FULLY_CONNECTED", "work": 1_000_000u64, "unit": "MAC", "region": 1, "ns": 5.0},
            {"position": 1, "index": 3, "op": "FULLY_CONNECTED", "work": 600_000u64, "unit": "MAC", "region": 2, "ns": 5.0},
            {"position": 2, "index": 5, "op": "SOFTMAX", "work": 10_000, "unit": "element", "region": 3, "ns": 1.0},
            {"position": 3, "index": 6, "op": "ADD", "work": 5_000, "unit": "element", "region": 4, "ns": 1.0}
        ]
    })
}

/// Plugin output for it, over 2 invokes: 100,000 setting the inputs,
/// 100,000 of set-up, 7,000 of start-up (region 0; both once) and 3,000 of
/// the profiler's clock reads (in no figure); per invoke the model is
/// 100,000 + 50,000 + 30,000 + 20,000 = 200,000 (softmax 15%).
pub(super) const PLUGIN_OUT: &str = "610000\nregion 0 7000\nregion 1 200000\nregion 2 100000\n\
     region 3 60000\nregion 4 40000\nregion 4092 3000\nregion 4093 100000\nregion 4095 100000\n";

pub(super) fn profile(backend: &str, softmax: &str, checksum: &str) -> Profile {
    let runner = RunnerReport::from_json(&runner_json(backend, softmax)).unwrap();
    Profile::new(runner, Regions::parse(PLUGIN_OUT).unwrap(), checksum.into()).unwrap()
}
