//! Test data shared by the run modules' tests: a runner JSON and the
//! plugin output that goes with it.

use serde_json::{json, Value};

use super::profile::Profile;
use super::regions::Regions;
use super::runner::RunnerReport;

/// A runner JSON in the contract's format: a 1.6 M MAC layer (bound
/// 2 x 1.6 M / 16 = 200,000 instructions).
pub(super) fn runner_json(backend: &str, softmax: &str, checksum: &str) -> Value {
    json!({
        "softmax": softmax, "backend": backend, "dotprod": true, "seq_len": 384,
        "macs": 1_600_000u64,
        "ops": [
            {"id": 1, "op": "gemm", "calls": 2, "work": 1_600_000u64, "unit": "MAC", "seconds": 0.5},
            {"id": 2, "op": "softmax", "calls": 1, "work": 10_000, "unit": "element", "seconds": 0.25},
            {"id": 3, "op": "layernorm", "calls": 2, "work": 5_000, "unit": "element", "seconds": 0.125}
        ],
        "checksum": checksum, "cosine": 0.998, "max_abs_err_lsb": 3, "mean_abs_err_lsb": 0.41
    })
}

/// Plugin output for it: 50,000 outside, a layer of 150,000 + 30,000 +
/// 20,000 = 200,000 (softmax 15%).
pub(super) const PLUGIN_OUT: &str =
    "250000\nregion 0 50000\nregion 1 150000\nregion 2 30000\nregion 3 20000\n";

pub(super) fn profile(backend: &str, softmax: &str, checksum: &str) -> Profile {
    let runner = RunnerReport::from_json(&runner_json(backend, softmax, checksum)).unwrap();
    Profile::new(runner, Regions::parse(PLUGIN_OUT).unwrap()).unwrap()
}
