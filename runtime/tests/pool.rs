//! AVERAGE_POOL_2D and MAX_POOL_2D in the interpreter: every pooling case of
//! `models/ops` against LiteRT's and TensorFlow 2.19's reference kernels on
//! every backend, and TFLite's `Prepare` rules on rewritten models.

mod tflite_common;

use qneon::Method;
use qneon_runtime::interp::{Interpreter, Options, Rounding};
use qneon_runtime::Error;
use tflite_common::*;

/// The pooling cases of the single-op manifest.
fn pool_cases() -> Vec<serde_json::Value> {
    let manifest = manifest("ops/manifest.json");
    manifest["cases"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| {
            let op = c["operators"][0]["op"].as_str().unwrap_or("");
            op == "AVERAGE_POOL_2D" || op == "MAX_POOL_2D"
        })
        .cloned()
        .collect()
}

#[test]
fn pool_models_equal_litert_and_tf219_reference_kernels_on_every_backend() {
    let cases = pool_cases();
    // avg and max, 10 shapes each (see models/gen/ops.py, pool_cases()).
    assert_eq!(cases.len(), 20);
    let mut compared = 0;
    for case in &cases {
        let name = case["name"].as_str().unwrap();
        let bytes = read_model(case["model"].as_str().unwrap());
        for (reference, rounding) in [
            ("litert_ref", Rounding::Single),
            ("tf219_ref", Rounding::Double),
        ] {
            for backend in qneon::Backend::available() {
                let options = Options {
                    backend,
                    ..options(rounding, Method::FixedPoint)
                };
                let mut interpreter = Interpreter::new(bytes.as_bytes(), options)
                    .unwrap_or_else(|e| panic!("{name}: {e}"));
                for run in case["runs"].as_array().unwrap() {
                    for (output, ours, refs) in run_case(&mut interpreter, &case["tensors"], run) {
                        let expected = npy(refs[reference].as_str().unwrap());
                        assert_eq!(
                            ours,
                            expected.data,
                            "{name} {} output {output} vs {reference} ({})",
                            run["name"],
                            backend.name()
                        );
                        compared += 1;
                    }
                }
            }
        }
    }
    // 20 cases x 2 runs x 2 references x the backends.
    assert_eq!(compared, 80 * qneon::Backend::available().count());
}

fn load(bytes: &[u8]) -> Result<(), Error> {
    Interpreter::new(bytes, options(Rounding::Double, Method::FixedPoint)).map(|_| ())
}

fn positions(bytes: &[u8], pattern: &[u8]) -> Vec<usize> {
    (0..=bytes.len().saturating_sub(pattern.len()))
        .filter(|&i| &bytes[i..i + pattern.len()] == pattern)
        .collect()
}

/// Every single rewrite of `pattern` in the model into `replacement`: the
/// messages of the loads that fail. None may panic.
fn rewrites(model: &str, pattern: &[u8], replacement: &[u8]) -> Vec<String> {
    let bytes = read_model(model).as_bytes().to_vec();
    let found = positions(&bytes, pattern);
    assert!(!found.is_empty(), "{model}: pattern {pattern:?} not found");
    found
        .into_iter()
        .filter_map(|at| {
            let mut patched = bytes.clone();
            patched[at..at + replacement.len()].copy_from_slice(replacement);
            load(&patched).err().map(|e| e.to_string())
        })
        .collect()
}

fn assert_some_error(errors: &[String], op: &str, words: &[&str]) {
    assert!(
        errors
            .iter()
            .any(|e| e.contains(op) && words.iter().all(|w| e.contains(w))),
        "no error names {op} and {words:?}: {errors:?}"
    );
}

#[test]
fn pool_prepare_refuses_zero_strides_and_filters() {
    // avg_pool_3x3_s2_same: stride 2 and filter 3 are int32 fields of the
    // options table; rewriting each 2 (or 3) in turn reaches them.
    for (model, op) in [
        ("ops/avg_pool_3x3_s2_same/model.tflite", "AVERAGE_POOL_2D"),
        ("ops/max_pool_3x3_s2_same/model.tflite", "MAX_POOL_2D"),
    ] {
        let zero = 0i32.to_le_bytes();
        let errors = rewrites(model, &2i32.to_le_bytes(), &zero);
        assert_some_error(&errors, op, &["stride height is 0"]);
        assert_some_error(&errors, op, &["stride width is 0"]);
        let negative = (-1i32).to_le_bytes();
        let errors = rewrites(model, &3i32.to_le_bytes(), &negative);
        assert_some_error(&errors, op, &["filter height is -1"]);
        assert_some_error(&errors, op, &["filter width is -1"]);
    }
}

#[test]
fn pool_prepare_refuses_output_shapes_that_do_not_follow() {
    // avg_pool_3x3_s2_same: [2, 9, 11, 35] -> [2, 5, 6, 35]. A filter of 4
    // keeps the SAME output; a stride of 3 does not.
    let model = "ops/avg_pool_3x3_s2_same/model.tflite";
    let errors = rewrites(model, &2i32.to_le_bytes(), &3i32.to_le_bytes());
    assert_some_error(
        &errors,
        "AVERAGE_POOL_2D",
        &["output shape", "TFLite computes"],
    );
    // VALID with a window larger than the input: [1, 6, 6, 40], 6x6 -> 7x7.
    let model = "ops/avg_pool_global_6x6/model.tflite";
    let errors = rewrites(model, &6i32.to_le_bytes(), &7i32.to_le_bytes());
    assert_some_error(&errors, "AVERAGE_POOL_2D", &["VALID window does not fit"]);
}

#[test]
fn pool_prepare_refuses_unequal_input_and_output_quantization() {
    // Input and output share one scale value in the file's two
    // quantization tables; rewriting either one breaks the equality.
    let manifest = manifest("ops/manifest.json");
    for name in ["avg_pool_2x2_s2_valid", "max_pool_2x2_s2_valid"] {
        let case = manifest["cases"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == name)
            .unwrap();
        let scale = case["operators"][0]["inputs"][0]["quantization"]["scale"]
            .as_f64()
            .unwrap() as f32;
        let model = case["model"].as_str().unwrap();
        let errors = rewrites(model, &scale.to_le_bytes(), &(scale * 2.0).to_le_bytes());
        let op = case["operators"][0]["op"].as_str().unwrap();
        assert_some_error(&errors, op, &["output quantization"]);
    }
}

#[test]
fn pool_prepare_refuses_inputs_not_of_rank_4() {
    // Rewrite the shape vector [1, 8, 8, 20] of avg_pool_2x2_s2_valid's
    // input to length 3: [1, 8, 8] (its length prefix 4 becomes 3).
    let model = "ops/avg_pool_2x2_s2_valid/model.tflite";
    let mut pattern = 4u32.to_le_bytes().to_vec();
    for d in [1i32, 8, 8, 20] {
        pattern.extend_from_slice(&d.to_le_bytes());
    }
    let errors = rewrites(model, &pattern, &3u32.to_le_bytes());
    assert!(!errors.is_empty());
    assert_some_error(&errors, "AVERAGE_POOL_2D", &["not rank 4"]);
}
