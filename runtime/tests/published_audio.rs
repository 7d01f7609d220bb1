//! The published recurrent models (`models/tflite_micro/`) run as
//! sequences of invokes on one interpreter, the state carried in the
//! session's variable tensors, against LiteRT's sequences
//! (`tflite_micro/refs/sequences.json`). One section per model family:
//! the SVDF keyword spotters first.

mod tflite_common;

use qneon::{Backend, Method};
use qneon_runtime::interp::{Interpreter, Rounding, TfliteKernels};
use serde_json::Value;
use tflite_common::*;

/// (reference, kernels): LiteRT's x86 kernel paths with the settings that
/// reproduce them on these models.
const PATHS: &[(&str, TfliteKernels, Method)] = &[
    ("litert_ref", TfliteKernels::Reference, Method::FixedPoint),
    ("litert_builtin", TfliteKernels::Optimized, Method::Lut),
    ("litert_xnnpack", TfliteKernels::Xnnpack, Method::Lut),
];

fn files(list: &Value) -> Vec<String> {
    list.as_array()
        .unwrap()
        .iter()
        .map(|f| f.as_str().unwrap().to_string())
        .collect()
}

/// The entry of `file` in `sequences.json`.
fn sequences_of(file: &str) -> Value {
    let manifest = manifest("tflite_micro/refs/sequences.json");
    manifest["models"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["model"] == format!("tflite_micro/{file}"))
        .unwrap_or_else(|| panic!("{file} is not in sequences.json"))
        .clone()
}

/// Every sequence of `file` on each path and on the scalar and best
/// backend: each step's outputs equal LiteRT's after that step, and a
/// reset gives step 0's again. Returns the steps checked.
fn check_sequences(file: &str) -> usize {
    let entry = sequences_of(file);
    let bytes = read_model(entry["model"].as_str().unwrap());
    let mut checked = 0;
    for &(reference, kernels, method) in PATHS {
        for backend in [Backend::Scalar, Backend::best()] {
            let mut options = options(Rounding::Single, method);
            options.kernels = kernels;
            options.backend = backend;
            let mut interpreter = Interpreter::new(bytes.as_bytes(), options)
                .unwrap_or_else(|e| panic!("{file}: {e}"));
            for seq in entry["sequences"].as_array().unwrap() {
                interpreter.reset_variables();
                let steps = seq["steps"].as_array().unwrap();
                for pass in 0..2 {
                    // Pass 1 repeats step 0 after a reset.
                    let steps = if pass == 0 { &steps[..] } else { &steps[..1] };
                    for (k, step) in steps.iter().enumerate() {
                        for (i, input) in files(&step["inputs"]).iter().enumerate() {
                            interpreter.set_input(i, &npy(input).data).unwrap();
                        }
                        interpreter.invoke().unwrap();
                        for (i, expected) in files(&step["outputs"][reference]).iter().enumerate() {
                            assert_eq!(
                                interpreter.output(i).unwrap(),
                                &npy(expected).data[..],
                                "{file} {} step {k} (pass {pass}) output {i}: {reference} on \
                                 {backend:?}",
                                seq["name"]
                            );
                        }
                        checked += 1;
                    }
                    interpreter.reset_variables();
                }
            }
        }
    }
    checked
}

// --- SVDF keyword spotters ---------------------------------------------

#[test]
fn keyword_scrambled_sequences_equal_litert() {
    let checked = check_sequences("keyword_scrambled.tflite");
    assert!(checked >= 3 * 2 * 3 * 4, "{checked}");
}
