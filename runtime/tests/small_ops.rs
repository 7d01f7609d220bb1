//! MAXIMUM, MINIMUM, PRELU, ARG_MAX, ARG_MIN, PADV2 and the uint8
//! CONCATENATION of differently quantized inputs in the interpreter: every
//! case of `models/ops` (`models/gen/ops.py`, `small_op_cases()`) against
//! each LiteRT path with the options that reproduce it (reference kernels:
//! `litert_ref` and `tf219_ref`; XNNPACK: `litert_xnnpack`; the optimized
//! kernels: LiteRT's own aarch64 build), on every backend; then TFLite's
//! `Prepare` rules on rewritten models, each an error naming the operator.

mod tflite_common;

use qneon::Method;
use qneon_runtime::interp::{Interpreter, Options, Rounding, TfliteKernels};
use qneon_runtime::Error;
use tflite_common::*;

/// The ops of this file's cases.
const OPS: &[&str] = &["MAXIMUM", "MINIMUM", "PRELU", "ARG_MAX", "ARG_MIN", "PADV2"];

fn small_cases() -> Vec<serde_json::Value> {
    let manifest = manifest("ops/manifest.json");
    manifest["cases"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| {
            let name = c["name"].as_str().unwrap();
            let ops = c["operators"].as_array().unwrap();
            name.starts_with("concat_uint8")
                || ops
                    .iter()
                    .any(|o| OPS.contains(&o["op"].as_str().unwrap_or("")))
        })
        .cloned()
        .collect()
}

/// The options that reproduce a reference's bytes.
fn reference_options(reference: &str) -> Options {
    let (rounding, kernels) = match reference {
        "litert_ref" => (Rounding::Single, TfliteKernels::Reference),
        "tf219_ref" => (Rounding::Double, TfliteKernels::Reference),
        "litert_xnnpack" => (Rounding::Single, TfliteKernels::Xnnpack),
        "litert_aarch64_builtin" => (Rounding::Single, TfliteKernels::Optimized),
        other => panic!("unknown reference {other}"),
    };
    Options {
        kernels,
        ..options(rounding, Method::FixedPoint)
    }
}

#[test]
fn small_op_models_equal_each_litert_path_on_every_backend() {
    let aarch64 = manifest("litert_aarch64_builtin/manifest.json");
    // `--kernels xnnpack` follows XNNPACK's aarch64 build: where that
    // build's outputs part from the x86 one's (the uint8 CONCATENATION
    // rescale, left to the builtin kernels, which fuse it on aarch64), the
    // aarch64 outputs are the reference.
    let aarch64_xnnpack = manifest("litert_aarch64_xnnpack/manifest.json");
    let cases = small_cases();
    // 12 MAXIMUM / MINIMUM, 5 PRELU, 7 ARG_MAX / ARG_MIN, 3 PADV2, 3
    // CONCATENATION (see models/gen/ops.py, small_op_cases()).
    assert_eq!(cases.len(), 30);
    let mut compared = 0usize;
    for case in &cases {
        let name = case["name"].as_str().unwrap();
        let bytes = read_model(case["model"].as_str().unwrap());
        let files = &aarch64["ops"]["cases"][name];
        assert!(files.is_object(), "{name} has no LiteRT aarch64 outputs");
        for reference in [
            "litert_ref",
            "tf219_ref",
            "litert_xnnpack",
            "litert_aarch64_builtin",
        ] {
            for backend in qneon::Backend::available() {
                let options = Options {
                    backend,
                    ..reference_options(reference)
                };
                let mut interpreter = Interpreter::new(bytes.as_bytes(), options)
                    .unwrap_or_else(|e| panic!("{name} ({reference}): {e}"));
                for run in case["runs"].as_array().unwrap() {
                    let mut run = run.clone();
                    let run_name = run["name"].as_str().unwrap().to_string();
                    for (output, refs) in run["outputs"].as_object_mut().unwrap() {
                        refs["litert_aarch64_builtin"] = files[&run_name][output.as_str()].clone();
                        let arm_xnnpack =
                            &aarch64_xnnpack["ops"]["cases"][name][&run_name][output.as_str()];
                        if arm_xnnpack.is_string() {
                            refs["litert_xnnpack"] = arm_xnnpack.clone();
                        }
                    }
                    for (output, ours, refs) in run_case(&mut interpreter, &case["tensors"], &run) {
                        let expected = npy(refs[reference].as_str().unwrap());
                        assert_eq!(
                            ours,
                            expected.data,
                            "{name} {run_name} output {output} vs {reference} ({})",
                            backend.name()
                        );
                        compared += 1;
                    }
                }
            }
        }
    }
    // 30 cases x 2 runs x 4 references x the backends.
    assert_eq!(compared, 240 * qneon::Backend::available().count());
}

/// The tie case tells the two float evaluations of the uint8 rescaling
/// apart: LiteRT's x86-64 kernels round the product and the sum apart,
/// its aarch64 kernels fuse them, and the references differ there.
#[test]
fn concat_rescale_tie_tells_the_builds_apart() {
    let aarch64 = manifest("litert_aarch64_builtin/manifest.json");
    let cases = small_cases();
    let case = cases
        .iter()
        .find(|c| c["name"] == "concat_uint8_rescale_tie")
        .expect("the tie case");
    let run = &case["runs"][0];
    let x86 = npy(run["outputs"]["z"]["litert_ref"].as_str().unwrap()).data;
    let arm = npy(
        aarch64["ops"]["cases"]["concat_uint8_rescale_tie"]["run0"]["z"]
            .as_str()
            .unwrap(),
    )
    .data;
    let differing = x86.iter().zip(&arm).filter(|(a, b)| a != b).count();
    // Input a's byte 133, and one byte of b (rescaled too: the output
    // has its own quantization), land on such ties.
    assert_eq!(
        differing, 2,
        "x86-64 and aarch64 differ on the two tied bytes"
    );
}

fn load(bytes: &[u8], kernels: TfliteKernels) -> Result<(), Error> {
    let options = Options {
        kernels,
        ..options(Rounding::Double, Method::FixedPoint)
    };
    Interpreter::new(bytes, options).map(|_| ())
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
            load(&patched, TfliteKernels::Reference)
                .err()
                .map(|e| e.to_string())
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

/// A case's tensor scale as the bytes of its `f32`.
fn scale_bytes(case: &str, list: &str, index: usize) -> [u8; 4] {
    let cases = small_cases();
    let manifest = manifest("ops/manifest.json");
    let all = cases.iter().chain(manifest["cases"].as_array().unwrap());
    let case = all.clone().find(|c| c["name"] == case).unwrap();
    let scale = case["tensors"][list][index]["scale"][0].as_f64().unwrap() as f32;
    scale.to_le_bytes()
}

#[test]
fn padv2_refuses_a_pad_value_quantized_apart_from_the_output() {
    // Input, pad value and output share one scale in the file: rewriting
    // each in turn reaches the pad value's (and the input's, the output's).
    let scale = scale_bytes("padv2_value_inside", "inputs", 0);
    let errors = rewrites(
        "ops/padv2_value_inside/model.tflite",
        &scale,
        &0.5f32.to_le_bytes(),
    );
    assert_some_error(
        &errors,
        "PADV2",
        &["constant value quantization", "differs"],
    );
    assert_some_error(&errors, "PADV2", &["input quantization", "differs"]);
}

#[test]
fn int8_concatenation_refuses_inputs_quantized_apart_and_uint8_rescales_them() {
    let scale = scale_bytes("concat_same_range", "inputs", 0);
    let errors = rewrites(
        "ops/concat_same_range/model.tflite",
        &scale,
        &0.5f32.to_le_bytes(),
    );
    assert_some_error(&errors, "CONCATENATION", &["quantization", "differs"]);
    // The uint8 case loads with every input's scale changed (a rescale).
    let model = read_model("ops/concat_uint8_rescale/model.tflite");
    let scale = scale_bytes("concat_uint8_rescale", "inputs", 1);
    let bytes = model.as_bytes().to_vec();
    for at in positions(&bytes, &scale) {
        let mut patched = bytes.clone();
        patched[at..at + 4].copy_from_slice(&0.5f32.to_le_bytes());
        load(&patched, TfliteKernels::Reference).unwrap();
        // A zero scale is TFLite's error, by name.
        patched[at..at + 4].copy_from_slice(&0f32.to_le_bytes());
        let e = load(&patched, TfliteKernels::Optimized)
            .unwrap_err()
            .to_string();
        assert!(e.contains("CONCATENATION") && e.contains("scale"), "{e}");
    }
}

#[test]
fn prelu_refuses_bad_alpha_quantization() {
    let scale = scale_bytes("prelu_shared_hw", "inputs", 0);
    // The input scale; a zero or NaN one is refused by name.
    for bad in [0f32, f32::NAN] {
        let errors = rewrites(
            "ops/prelu_shared_hw/model.tflite",
            &scale,
            &bad.to_le_bytes(),
        );
        assert_some_error(&errors, "PRELU", &["scale"]);
    }
}

#[test]
fn arg_max_refuses_axes_outside_the_rank() {
    // arg_max_axis1_int64: [3, 6, 4, 5] over axis 1; rewriting the int32
    // 1s in turn reaches the axis constant.
    let errors = rewrites(
        "ops/arg_max_axis1_int64/model.tflite",
        &1i32.to_le_bytes(),
        &7i32.to_le_bytes(),
    );
    assert_some_error(&errors, "ARG_MAX", &["axis 7"]);
    let errors = rewrites(
        "ops/arg_min_axis2_int64/model.tflite",
        &2i32.to_le_bytes(),
        &(-5i32).to_le_bytes(),
    );
    assert_some_error(&errors, "ARG_MIN", &["axis -5"]);
}

#[test]
fn minmax_and_prelu_refuse_shapes_that_do_not_broadcast() {
    // maximum_broadcast_rank4: [2, 1, 5, 7] and [1, 3, 1, 7]; a 7 made 6
    // breaks the broadcast or the output shape.
    let errors = rewrites(
        "ops/maximum_broadcast_rank4/model.tflite",
        &7i32.to_le_bytes(),
        &6i32.to_le_bytes(),
    );
    assert_some_error(&errors, "MAXIMUM", &[]);
    let errors = rewrites(
        "ops/prelu_shared_hw_batch2/model.tflite",
        &13i32.to_le_bytes(),
        &12i32.to_le_bytes(),
    );
    assert_some_error(&errors, "PRELU", &[]);
}

/// Inspect names each op's arithmetic; PRELU and ARG_MAX are left to the
/// builtin kernels under XNNPACK.
#[test]
fn small_ops_prepare_under_every_kernel_set() {
    for case in small_cases() {
        let name = case["name"].as_str().unwrap();
        let bytes = read_model(case["model"].as_str().unwrap());
        for kernels in [
            TfliteKernels::Reference,
            TfliteKernels::Optimized,
            TfliteKernels::Xnnpack,
        ] {
            load(bytes.as_bytes(), kernels).unwrap_or_else(|e| panic!("{name} {kernels:?}: {e}"));
        }
    }
}

/// Every byte of every small-op model changed in turn (and the models run
/// once where they load): errors or valid models, never a panic.
#[test]
fn byte_edits_of_the_small_op_models_never_panic() {
    let mut refused = 0usize;
    for case in small_cases() {
        let bytes = read_model(case["model"].as_str().unwrap())
            .as_bytes()
            .to_vec();
        for at in 0..bytes.len() {
            let mut patched = bytes.clone();
            patched[at] ^= 0x5a;
            let options = options(Rounding::Single, Method::FixedPoint);
            match Interpreter::new(&patched, options) {
                Ok(mut interpreter) => {
                    // Zero inputs: the kernels run on whatever shapes and
                    // parameters the edit left.
                    let _ = interpreter.invoke();
                }
                Err(e) => {
                    assert!(!e.to_string().is_empty());
                    refused += 1;
                }
            }
        }
    }
    assert!(refused > 0);
}
