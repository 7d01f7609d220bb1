//! SVDF single-op models (`models/tflite_micro/refs/svdf/`: keyword_scrambled's
//! first SVDF with seeded weights, shapes 1-3 batch rows, rank 1-4, memory
//! 1-32, with and without bias) against LiteRT, as sequences of invokes on
//! one interpreter: the state carried from step to step must give LiteRT's
//! bytes at every step, on each kernel path, scalar and best backend; a
//! reset brings back step 0's output.

mod tflite_common;

use qneon::{Backend, Method};
use qneon_runtime::interp::{Interpreter, Rounding, TfliteKernels};
use serde_json::Value;
use tflite_common::*;

/// (reference, kernels): LiteRT's x86 kernel paths. All three run the same
/// integer SVDF (the XNNPACK delegate leaves SVDF to the builtin kernels).
const PATHS: &[(&str, TfliteKernels)] = &[
    ("litert_ref", TfliteKernels::Reference),
    ("litert_builtin", TfliteKernels::Optimized),
    ("litert_xnnpack", TfliteKernels::Xnnpack),
];

fn files(list: &Value) -> Vec<String> {
    list.as_array()
        .unwrap()
        .iter()
        .map(|f| f.as_str().unwrap().to_string())
        .collect()
}

#[test]
fn svdf_sequences_equal_litert_on_every_path_and_backend() {
    let manifest = manifest("tflite_micro/refs/svdf/manifest.json");
    let mut steps_checked = 0;
    for case in manifest["cases"].as_array().unwrap() {
        let name = case["name"].as_str().unwrap();
        let bytes = read_model(case["model"].as_str().unwrap());
        for &(reference, kernels) in PATHS {
            for backend in [Backend::Scalar, Backend::best()] {
                let mut options = options(Rounding::Single, Method::FixedPoint);
                options.kernels = kernels;
                options.backend = backend;
                for seq in case["sequences"].as_array().unwrap() {
                    let mut interpreter = Interpreter::new(bytes.as_bytes(), options)
                        .unwrap_or_else(|e| panic!("{name}: {e}"));
                    let steps = seq["steps"].as_array().unwrap();
                    for (k, step) in steps.iter().enumerate() {
                        let input = &files(&step["inputs"])[0];
                        interpreter.set_input(0, &npy(input).data).unwrap();
                        interpreter.invoke().unwrap();
                        let expected = &files(&step["outputs"][reference])[0];
                        assert_eq!(
                            interpreter.output(0).unwrap(),
                            &npy(expected).data[..],
                            "{name} {} step {k}: {reference} on {backend:?}",
                            seq["name"]
                        );
                        steps_checked += 1;
                    }
                    // A reset is the start of a new sequence: step 0 again.
                    interpreter.reset_variables();
                    let first = &steps[0];
                    interpreter
                        .set_input(0, &npy(&files(&first["inputs"])[0]).data)
                        .unwrap();
                    interpreter.invoke().unwrap();
                    assert_eq!(
                        interpreter.output(0).unwrap(),
                        &npy(&files(&first["outputs"][reference])[0]).data[..],
                        "{name}: step 0 after reset_variables"
                    );
                }
            }
        }
    }
    assert!(steps_checked >= 5 * 3 * 2 * 2 * 4, "{steps_checked} steps");
}

/// The state is what makes the steps differ: the same input twice gives a
/// different output the second time (the first step's column is still in
/// the memory), and the plan's variable block holds exactly the model's
/// variable tensors.
#[test]
fn svdf_state_carries_over_and_is_the_variable_block() {
    let manifest = manifest("tflite_micro/refs/svdf/manifest.json");
    let case = &manifest["cases"][0];
    let bytes = read_model(case["model"].as_str().unwrap());
    let mut interpreter = Interpreter::new(
        bytes.as_bytes(),
        options(Rounding::Single, Method::FixedPoint),
    )
    .unwrap();
    let step = &case["sequences"][0]["steps"][0];
    let input = npy(&files(&step["inputs"])[0]).data;
    interpreter.set_input(0, &input).unwrap();
    interpreter.invoke().unwrap();
    let first = interpreter.output(0).unwrap().to_vec();
    interpreter.invoke().unwrap();
    assert_ne!(interpreter.output(0).unwrap(), &first[..]);
    // The models keep keyword_scrambled's other (unused) state tensors;
    // each variable gets its bytes, rounded to the block's 64-byte slots.
    let model = qneon_tflite::Model::parse(bytes.as_bytes()).unwrap();
    let variables: Vec<usize> = model
        .main_subgraph()
        .tensors()
        .iter()
        .filter(|t| t.is_variable())
        .map(|t| t.byte_size().unwrap())
        .collect();
    let state = case["batch"].as_u64().unwrap()
        * case["memory"].as_u64().unwrap()
        * case["units"].as_u64().unwrap()
        * case["rank"].as_u64().unwrap()
        * 2;
    assert!(variables.contains(&(state as usize)), "{variables:?}");
    let expected: usize = variables.iter().map(|b| b.next_multiple_of(64)).sum();
    let variable_bytes = interpreter.session().plan().variable_bytes();
    assert_eq!(variable_bytes, expected, "{variables:?}");
}

/// TFLite's `Prepare` rules: each malformed SVDF (one rule broken in a
/// generated model) is refused at load with an error naming the op and
/// what is wrong.
#[test]
fn malformed_svdfs_are_errors_naming_the_op_and_tensor() {
    let manifest = manifest("tflite_micro/refs/svdf/manifest.json");
    let malformed = manifest["malformed"].as_array().unwrap();
    assert!(malformed.len() >= 10);
    for case in malformed {
        let name = case["name"].as_str().unwrap();
        let bytes = read_model(case["model"].as_str().unwrap());
        let error = match Interpreter::new(
            bytes.as_bytes(),
            options(Rounding::Single, Method::FixedPoint),
        ) {
            Ok(_) => panic!("{name}: loaded"),
            Err(e) => e.to_string(),
        };
        for word in case["words"].as_array().unwrap() {
            let word = word.as_str().unwrap();
            assert!(error.contains(word), "{name}: {error:?} lacks {word:?}");
        }
    }
}
