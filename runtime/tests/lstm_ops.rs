//! UNIDIRECTIONAL_SEQUENCE_LSTM in the interpreter: every generated LSTM
//! case of `models/ops` (`lstm_cases()` in models/gen/ops.py) against
//! LiteRT's reference and x86 builtin kernels, single invokes and the
//! sequence of invokes on one interpreter (the state carried in the
//! session's variable tensors), a reset giving step 0 again; and the
//! published LSTM models' sequences (`tflite_micro/refs/sequences.json`).
//! Scalar and best backend.

mod tflite_common;

use qneon::{Backend, Method};
use qneon_runtime::interp::{Interpreter, Options, Rounding, TfliteKernels};
use serde_json::Value;
use tflite_common::*;

/// LiteRT's kernel paths the references come from, with the options that
/// reproduce them (the integer LSTM is one kernel in all of them).
const PATHS: &[(&str, TfliteKernels, Method)] = &[
    ("litert_ref", TfliteKernels::Reference, Method::FixedPoint),
    ("litert_builtin", TfliteKernels::Optimized, Method::Lut),
    ("litert_xnnpack", TfliteKernels::Xnnpack, Method::Lut),
];

fn options_for(kernels: TfliteKernels, method: Method, backend: Backend) -> Options {
    Options {
        kernels,
        backend,
        ..options(Rounding::Single, method)
    }
}

fn lstm_cases() -> Vec<Value> {
    manifest("ops/manifest.json")["cases"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["name"].as_str().unwrap().starts_with("lstm_"))
        .cloned()
        .collect()
}

/// Sets `inputs` (signature input name -> npy file) on `interpreter`.
fn set_inputs(interpreter: &mut Interpreter<'_>, signature: &Value, inputs: &Value) {
    for (name, file) in inputs.as_object().unwrap() {
        let tensor = signature["inputs"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["name"] == *name)
            .unwrap()["tensor"]
            .as_str()
            .unwrap()
            .to_string();
        let position = interpreter
            .inputs()
            .iter()
            .position(|t| t.name == tensor)
            .unwrap();
        interpreter
            .set_input(position, &npy(file.as_str().unwrap()).data)
            .unwrap();
    }
}

#[test]
fn lstm_models_equal_litert_single_invokes_on_every_backend() {
    let cases = lstm_cases();
    assert_eq!(cases.len(), 9, "models/gen/ops.py lstm_cases()");
    let mut compared = 0;
    for case in &cases {
        let name = case["name"].as_str().unwrap();
        let bytes = read_model(case["model"].as_str().unwrap());
        for run in case["runs"].as_array().unwrap() {
            for &(reference, kernels, method) in PATHS {
                if run["outputs"]["y"][reference].is_null() {
                    continue;
                }
                for backend in [Backend::Scalar, Backend::best()] {
                    let mut interpreter =
                        Interpreter::new(bytes.as_bytes(), options_for(kernels, method, backend))
                            .unwrap_or_else(|e| panic!("{name}: {e}"));
                    for (out, ours, refs) in run_case(&mut interpreter, &case["tensors"], run) {
                        let expected = npy(refs[reference].as_str().unwrap());
                        assert_eq!(
                            ours, expected.data,
                            "{name} {} output {out}: {reference} on {backend:?}",
                            run["name"]
                        );
                        compared += 1;
                    }
                }
            }
        }
    }
    // 9 cases x 2 runs x 2 references x 2 backends.
    assert_eq!(compared, 72);
}

/// The aarch64 builtin kernels' outputs (LiteRT's aarch64 build under qemu,
/// `cargo xtask compare --refs-only`, single invokes) with the optimized
/// kernels' options.
#[test]
fn lstm_models_equal_litert_aarch64_builtin() {
    let aarch64 = manifest("litert_aarch64_builtin/manifest.json");
    let mut compared = 0;
    for case in lstm_cases() {
        let name = case["name"].as_str().unwrap();
        let bytes = read_model(case["model"].as_str().unwrap());
        for run in case["runs"].as_array().unwrap() {
            let file = &aarch64["ops"]["cases"][name][run["name"].as_str().unwrap()]["y"];
            let expected = npy(file
                .as_str()
                .unwrap_or_else(|| panic!("{name}: no aarch64 outputs")));
            for backend in [Backend::Scalar, Backend::best()] {
                let options = options_for(TfliteKernels::Optimized, Method::Lut, backend);
                let mut interpreter = Interpreter::new(bytes.as_bytes(), options).unwrap();
                let results = run_case(&mut interpreter, &case["tensors"], run);
                assert_eq!(
                    results[0].1, expected.data,
                    "{name} {}: aarch64 builtin",
                    run["name"]
                );
                compared += 1;
            }
        }
    }
    // 9 cases x 2 runs x 2 backends.
    assert_eq!(compared, 36);
}

#[test]
fn lstm_models_equal_litert_sequences_and_reset_gives_step_zero() {
    let mut steps_checked = 0;
    for case in lstm_cases() {
        let name = case["name"].as_str().unwrap();
        let bytes = read_model(case["model"].as_str().unwrap());
        let sequence = &case["sequence"];
        let inputs = sequence["inputs"].as_array().unwrap();
        assert!(inputs.len() >= 3, "{name}: a sequence of 3+ steps");
        for &(reference, kernels, method) in PATHS {
            let Some(steps) = sequence["outputs"]["y"][reference].as_array() else {
                continue;
            };
            for backend in [Backend::Scalar, Backend::best()] {
                let mut interpreter =
                    Interpreter::new(bytes.as_bytes(), options_for(kernels, method, backend))
                        .unwrap();
                let mut first = Vec::new();
                for (step, (inputs, expected)) in inputs.iter().zip(steps).enumerate() {
                    set_inputs(&mut interpreter, &case["tensors"], inputs);
                    interpreter.invoke().unwrap();
                    let ours = interpreter.output(0).unwrap().to_vec();
                    assert_eq!(
                        ours,
                        npy(expected.as_str().unwrap()).data,
                        "{name} step {step}: {reference} on {backend:?}"
                    );
                    if step == 0 {
                        first = ours;
                    }
                    steps_checked += 1;
                }
                interpreter.reset_variables();
                set_inputs(&mut interpreter, &case["tensors"], &inputs[0]);
                interpreter.invoke().unwrap();
                assert_eq!(
                    interpreter.output(0).unwrap(),
                    &first[..],
                    "{name} after reset"
                );
            }
        }
    }
    // 9 cases x 4 steps x 2 references x 2 backends.
    assert_eq!(steps_checked, 144);
}

/// The state matters in every case: the last step's output differs from a
/// single invoke of its input on a fresh interpreter (so a kernel that lost
/// its state would fail the sequences above).
#[test]
fn lstm_sequences_depend_on_the_carried_state() {
    for case in lstm_cases() {
        let name = case["name"].as_str().unwrap();
        let bytes = read_model(case["model"].as_str().unwrap());
        let sequence = &case["sequence"];
        let inputs = sequence["inputs"].as_array().unwrap();
        let last = inputs.len() - 1;
        let expected = npy(sequence["outputs"]["y"]["litert_ref"][last]
            .as_str()
            .unwrap());
        let mut fresh = Interpreter::new(
            bytes.as_bytes(),
            options_for(
                TfliteKernels::Reference,
                Method::FixedPoint,
                Backend::best(),
            ),
        )
        .unwrap();
        set_inputs(&mut fresh, &case["tensors"], &inputs[last]);
        fresh.invoke().unwrap();
        assert_ne!(fresh.output(0).unwrap(), &expected.data[..], "{name}");
    }
}

/// The published LSTM models' entries in `sequences.json`: every sequence's
/// steps equal LiteRT's on each path and backend, and a reset gives step 0
/// again.
fn check_published_sequences(file: &str) -> usize {
    let manifest = manifest("tflite_micro/refs/sequences.json");
    let entry = manifest["models"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["model"] == format!("tflite_micro/{file}"))
        .unwrap_or_else(|| panic!("{file} is not in sequences.json"))
        .clone();
    let bytes = read_model(entry["model"].as_str().unwrap());
    let mut checked = 0;
    for &(reference, kernels, method) in PATHS {
        for backend in [Backend::Scalar, Backend::best()] {
            for sequence in entry["sequences"].as_array().unwrap() {
                let mut interpreter =
                    Interpreter::new(bytes.as_bytes(), options_for(kernels, method, backend))
                        .unwrap_or_else(|e| panic!("{file}: {e}"));
                let steps = sequence["steps"].as_array().unwrap();
                let set = |interpreter: &mut Interpreter<'_>, step: &Value| {
                    for (i, f) in step["inputs"].as_array().unwrap().iter().enumerate() {
                        interpreter
                            .set_input(i, &npy(f.as_str().unwrap()).data)
                            .unwrap();
                    }
                };
                for (k, step) in steps.iter().enumerate() {
                    set(&mut interpreter, step);
                    interpreter.invoke().unwrap();
                    for (i, f) in step["outputs"][reference]
                        .as_array()
                        .unwrap()
                        .iter()
                        .enumerate()
                    {
                        assert_eq!(
                            interpreter.output(i).unwrap(),
                            &npy(f.as_str().unwrap()).data[..],
                            "{file} {} step {k} output {i}: {reference} on {backend:?}",
                            sequence["name"]
                        );
                    }
                    checked += 1;
                }
                interpreter.reset_variables();
                set(&mut interpreter, &steps[0]);
                interpreter.invoke().unwrap();
                for (i, f) in steps[0]["outputs"][reference]
                    .as_array()
                    .unwrap()
                    .iter()
                    .enumerate()
                {
                    assert_eq!(
                        interpreter.output(i).unwrap(),
                        &npy(f.as_str().unwrap()).data[..],
                        "{file} {} after reset: {reference} on {backend:?}",
                        sequence["name"]
                    );
                }
            }
        }
    }
    checked
}

#[test]
fn trained_lstm_int8_equals_litert_sequences() {
    // 3 sequences x 3 steps x 3 paths x 2 backends.
    assert_eq!(check_published_sequences("trained_lstm_int8.tflite"), 54);
}

#[test]
fn dtln_noise_suppression_equals_litert_sequences() {
    assert_eq!(
        check_published_sequences("dtln_noise_suppression.tflite"),
        54
    );
}

#[test]
fn micro_speech_lstm_equals_litert_sequences() {
    assert_eq!(check_published_sequences("micro_speech_lstm.tflite"), 54);
}
