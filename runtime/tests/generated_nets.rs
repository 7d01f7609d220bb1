//! The CNNs the generator builds (`models/nets/`: MobileNet v1 0.25,
//! MobileNetV3-small, an EfficientNet-lite0-shaped net, a DS-CNN keyword
//! spotter, a YOLOv8n-shaped detector and a DeepLab v3-shaped segmenter,
//! seeded weights, full-integer int8): qneon's bytes equal each
//! LiteRT kernel path's on both committed input sets, scalar and the best
//! backend. The reference path is checked where LiteRT's reference kernels
//! prepare the model (the manifest lists where they abort instead).

mod tflite_common;

use qneon::Method;
use qneon_runtime::interp::{Interpreter, Rounding, TfliteKernels};
use tflite_common::*;

/// (reference, softmax method, kernels) for each reference kind.
const SETTINGS: &[(&str, Method, TfliteKernels)] = &[
    ("litert_ref", Method::FixedPoint, TfliteKernels::Reference),
    (
        "litert_aarch64_builtin",
        Method::Lut,
        TfliteKernels::Optimized,
    ),
    ("litert_xnnpack", Method::Lut, TfliteKernels::Xnnpack),
];

#[test]
fn generated_nets_equal_litert_on_every_kernel_path() {
    let refs = manifest("nets/refs/manifest.json");
    let aarch64 = manifest("litert_aarch64_builtin/manifest.json");
    // The nets with MUL (YOLO's SiLU, MobileNetV3's squeeze-excite) against
    // XNNPACK's aarch64 build, whose MUL rounds as `--kernels xnnpack`
    // does (ARM's `rndnu`); the others against the x86 build's outputs,
    // whose arithmetic for their ops is the aarch64 build's.
    let aarch64_xnnpack = manifest("litert_aarch64_xnnpack/manifest.json");
    let models = refs["models"].as_array().unwrap();
    assert_eq!(models.len(), 6, "the six nets");
    let mut checked = 0;
    for model in models {
        let path = model["model"].as_str().unwrap();
        let stem = path.rsplit('/').next().unwrap().trim_end_matches(".tflite");
        let bytes = read_model(path);
        for (run_index, run) in model["runs"].as_array().unwrap().iter().enumerate() {
            let inputs: Vec<Vec<u8>> = run["inputs"]
                .as_array()
                .unwrap()
                .iter()
                .map(|f| npy(f.as_str().unwrap()).data)
                .collect();
            for &(reference, method, kernels) in SETTINGS {
                let arm_xnnpack = &aarch64_xnnpack["nets"][stem]["runs"][run_index];
                let files = if reference == "litert_aarch64_builtin" {
                    &aarch64["nets"][stem]["runs"][run_index]
                } else if reference == "litert_xnnpack" && arm_xnnpack.is_array() {
                    arm_xnnpack
                } else {
                    &run["outputs"][reference]
                };
                let Some(files) = files.as_array() else {
                    // Only LiteRT's reference kernels may lack outputs, and
                    // only where the manifest says they abort.
                    assert_eq!(reference, "litert_ref", "{stem}: no {reference} outputs");
                    assert!(
                        model["aborts"][reference].is_string(),
                        "{stem}: no {reference} outputs and no abort recorded"
                    );
                    continue;
                };
                for backend in [qneon::Backend::Scalar, qneon::Backend::best()] {
                    let mut options = options(Rounding::Single, method);
                    options.kernels = kernels;
                    options.backend = backend;
                    let mut interpreter = Interpreter::new(bytes.as_bytes(), options)
                        .unwrap_or_else(|e| panic!("{stem}: {e}"));
                    for (i, data) in inputs.iter().enumerate() {
                        interpreter.set_input(i, data).unwrap();
                    }
                    interpreter.invoke().unwrap();
                    for (i, expected) in files.iter().enumerate() {
                        assert_eq!(
                            interpreter.output(i).unwrap(),
                            &npy(expected.as_str().unwrap()).data[..],
                            "{stem} run {run_index}, output {i}: {reference} on {backend:?}"
                        );
                    }
                    checked += 1;
                }
            }
        }
    }
    // 6 nets x 2 runs x 2 backends x (2 or 3 paths).
    assert!(checked >= 48, "{checked} comparisons");
}

/// The reference path runs the nets LiteRT's reference kernels abort on
/// (qneon has no such limit), and its outputs are the type and length of
/// the other paths'.
#[test]
fn reference_path_runs_where_litert_aborts() {
    let refs = manifest("nets/refs/manifest.json");
    for model in refs["models"].as_array().unwrap() {
        if !model["aborts"]["litert_ref"].is_string() {
            continue;
        }
        let path = model["model"].as_str().unwrap();
        let bytes = read_model(path);
        let run = &model["runs"][0];
        let mut options = options(Rounding::Single, Method::FixedPoint);
        options.kernels = TfliteKernels::Reference;
        let mut interpreter =
            Interpreter::new(bytes.as_bytes(), options).unwrap_or_else(|e| panic!("{path}: {e}"));
        let input = npy(run["inputs"][0].as_str().unwrap()).data;
        interpreter.set_input(0, &input).unwrap();
        interpreter.invoke().unwrap();
        let xnnpack = npy(run["outputs"]["litert_xnnpack"][0].as_str().unwrap()).data;
        assert_eq!(
            interpreter.output(0).unwrap().len(),
            xnnpack.len(),
            "{path}"
        );
    }
}
