//! UNIDIRECTIONAL_SEQUENCE_LSTM in the interpreter: every generated LSTM
//! case of `models/ops` (`lstm_cases()` in models/gen/ops.py) against
//! LiteRT's reference and x86 builtin kernels and its aarch64 builtin build,
//! single invokes and the sequence of invokes on one interpreter (the state
//! carried in the session's variable tensors), a reset giving step 0 again;
//! and the published LSTM models' sequences
//! (`tflite_micro/refs/sequences.json`). Scalar and best backend. The
//! layer-norm cases are where the builds part (see `x86_paths`).

mod tflite_common;

use qneon::{Backend, Method};
use qneon_runtime::interp::{Interpreter, Options, Rounding, TfliteKernels};
use serde_json::Value;
use tflite_common::*;

/// LiteRT's kernel paths the x86 references come from, with the options
/// that reproduce them. The integer LSTM is one kernel in all of them but
/// for layer normalization, which LiteRT's aarch64 build rounds in its NEON
/// code: qneon's optimized and XNNPACK kernel sets follow that build
/// ([`AARCH64`]), so on the layer-norm cases the x86 builtin outputs (the
/// portable code, equal to `litert_ref`) are reproduced by the reference
/// kernels.
fn x86_paths(layer_norm: bool) -> [(&'static str, TfliteKernels, Method); 3] {
    let builtin = if layer_norm {
        (TfliteKernels::Reference, Method::FixedPoint)
    } else {
        (TfliteKernels::Optimized, Method::Lut)
    };
    [
        ("litert_ref", TfliteKernels::Reference, Method::FixedPoint),
        ("litert_builtin", builtin.0, builtin.1),
        ("litert_xnnpack", TfliteKernels::Xnnpack, Method::Lut),
    ]
}

/// The kernel sets that reproduce LiteRT's aarch64 builtin outputs
/// (`litert_aarch64_builtin/`): the optimized ones, and XNNPACK's, which
/// leaves the LSTM to the builtin kernels as LiteRT's delegate does.
const AARCH64: &[(TfliteKernels, Method)] = &[
    (TfliteKernels::Optimized, Method::Lut),
    (TfliteKernels::Xnnpack, Method::Lut),
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

/// Whether `case` has layer normalization (its name says so).
fn has_layer_norm(case: &Value) -> bool {
    case["name"].as_str().unwrap().contains("layer_norm")
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

/// `case`'s sequence on one interpreter with `options`: each step's output,
/// then the output of step 0's input again after a reset.
fn run_sequence(case: &Value, options: Options) -> (Vec<Vec<u8>>, Vec<u8>) {
    let name = case["name"].as_str().unwrap();
    let bytes = read_model(case["model"].as_str().unwrap());
    let inputs = case["sequence"]["inputs"].as_array().unwrap();
    let mut interpreter =
        Interpreter::new(bytes.as_bytes(), options).unwrap_or_else(|e| panic!("{name}: {e}"));
    let mut outputs = Vec::new();
    for step in inputs {
        set_inputs(&mut interpreter, &case["tensors"], step);
        interpreter.invoke().unwrap();
        outputs.push(interpreter.output(0).unwrap().to_vec());
    }
    interpreter.reset_variables();
    set_inputs(&mut interpreter, &case["tensors"], &inputs[0]);
    interpreter.invoke().unwrap();
    let after_reset = interpreter.output(0).unwrap().to_vec();
    (outputs, after_reset)
}

/// The number of layer-norm cases (`lstm_*layer_norm*`).
const LAYER_NORM_CASES: usize = 3;

#[test]
fn lstm_models_equal_litert_single_invokes_on_every_backend() {
    let cases = lstm_cases();
    assert_eq!(cases.len(), 12, "models/gen/ops.py lstm_cases()");
    assert_eq!(
        cases.iter().filter(|c| has_layer_norm(c)).count(),
        LAYER_NORM_CASES
    );
    let mut compared = 0;
    for case in &cases {
        let name = case["name"].as_str().unwrap();
        let bytes = read_model(case["model"].as_str().unwrap());
        for run in case["runs"].as_array().unwrap() {
            for (reference, kernels, method) in x86_paths(has_layer_norm(case)) {
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
                            "{name} {} output {out}: {reference} on {backend:?} ({kernels:?})",
                            run["name"]
                        );
                        compared += 1;
                    }
                }
            }
        }
    }
    // 12 cases x 2 runs x 2 references x 2 backends.
    assert_eq!(compared, 96);
}

/// The aarch64 builtin kernels' outputs (LiteRT's aarch64 build under qemu,
/// `cargo xtask compare --refs-only`, single invokes) with the optimized and
/// XNNPACK kernels' options.
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
            for &(kernels, method) in AARCH64 {
                for backend in [Backend::Scalar, Backend::best()] {
                    let options = options_for(kernels, method, backend);
                    let mut interpreter = Interpreter::new(bytes.as_bytes(), options).unwrap();
                    let results = run_case(&mut interpreter, &case["tensors"], run);
                    assert_eq!(
                        results[0].1, expected.data,
                        "{name} {}: aarch64 builtin, {kernels:?} on {backend:?}",
                        run["name"]
                    );
                    compared += 1;
                }
            }
        }
    }
    // 12 cases x 2 runs x 2 kernel sets x 2 backends.
    assert_eq!(compared, 96);
}

#[test]
fn lstm_models_equal_litert_sequences_and_reset_gives_step_zero() {
    let mut steps_checked = 0;
    for case in lstm_cases() {
        let name = case["name"].as_str().unwrap();
        let sequence = &case["sequence"];
        assert!(
            sequence["inputs"].as_array().unwrap().len() >= 3,
            "{name}: a sequence of 3+ steps"
        );
        for (reference, kernels, method) in x86_paths(has_layer_norm(&case)) {
            let Some(steps) = sequence["outputs"]["y"][reference].as_array() else {
                continue;
            };
            for backend in [Backend::Scalar, Backend::best()] {
                let (ours, after_reset) =
                    run_sequence(&case, options_for(kernels, method, backend));
                assert_eq!(ours.len(), steps.len(), "{name}");
                for (step, (ours, expected)) in ours.iter().zip(steps).enumerate() {
                    assert_eq!(
                        *ours,
                        npy(expected.as_str().unwrap()).data,
                        "{name} step {step}: {reference} on {backend:?} ({kernels:?})"
                    );
                    steps_checked += 1;
                }
                assert_eq!(after_reset, ours[0], "{name} after reset");
            }
        }
    }
    // 12 cases x 4 steps x 2 references x 2 backends.
    assert_eq!(steps_checked, 192);
}

/// The layer-norm cases' sequences against LiteRT's aarch64 build (each
/// step after the previous ones on one interpreter, `cargo xtask compare
/// --refs-only` with one `--input` per step), with the optimized and
/// XNNPACK kernel sets.
#[test]
fn lstm_layer_norm_sequences_equal_litert_aarch64_builtin() {
    let aarch64 = manifest("litert_aarch64_builtin/manifest.json");
    let mut steps_checked = 0;
    for case in lstm_cases().iter().filter(|c| has_layer_norm(c)) {
        let name = case["name"].as_str().unwrap();
        let steps = aarch64["ops"]["cases"][name]["sequence"]["y"]
            .as_array()
            .unwrap_or_else(|| panic!("{name}: no aarch64 sequence"));
        for &(kernels, method) in AARCH64 {
            for backend in [Backend::Scalar, Backend::best()] {
                let (ours, after_reset) = run_sequence(case, options_for(kernels, method, backend));
                assert_eq!(ours.len(), steps.len(), "{name}");
                for (step, (ours, expected)) in ours.iter().zip(steps).enumerate() {
                    assert_eq!(
                        *ours,
                        npy(expected.as_str().unwrap()).data,
                        "{name} step {step}: aarch64 builtin, {kernels:?} on {backend:?}"
                    );
                    steps_checked += 1;
                }
                assert_eq!(after_reset, ours[0], "{name} after reset");
            }
        }
    }
    // 3 cases x 4 steps x 2 kernel sets x 2 backends.
    assert_eq!(steps_checked, 48);
}

/// The two LiteRT builds disagree on the layer-norm cases, so the tests
/// above pin which arithmetic each kernel set takes: with the other build's
/// layer normalization, qneon's reference kernels miss the aarch64 outputs
/// and its optimized kernels miss `litert_ref` (on some step of some case).
#[test]
fn lstm_layer_norm_kernel_sets_differ_where_litert_builds_do() {
    let aarch64 = manifest("litert_aarch64_builtin/manifest.json");
    let (mut reference_misses, mut optimized_misses) = (0, 0);
    for case in lstm_cases().iter().filter(|c| has_layer_norm(c)) {
        let name = case["name"].as_str().unwrap();
        let arm = aarch64["ops"]["cases"][name]["sequence"]["y"]
            .as_array()
            .unwrap();
        let x86 = case["sequence"]["outputs"]["y"]["litert_ref"]
            .as_array()
            .unwrap();
        let backend = Backend::best();
        let (reference, _) = run_sequence(
            case,
            options_for(TfliteKernels::Reference, Method::FixedPoint, backend),
        );
        let (optimized, _) = run_sequence(
            case,
            options_for(TfliteKernels::Optimized, Method::Lut, backend),
        );
        for k in 0..arm.len() {
            reference_misses += usize::from(reference[k] != npy(arm[k].as_str().unwrap()).data);
            optimized_misses += usize::from(optimized[k] != npy(x86[k].as_str().unwrap()).data);
        }
    }
    assert!(reference_misses > 0 && optimized_misses > 0);
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
    for (reference, kernels, method) in x86_paths(false) {
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
