//! `TfliteKernels::Xnnpack` on the single-op models: every case that keeps
//! the XNNPACK delegate's outputs (`litert_xnnpack`, LiteRT 2.3.0's x86_64
//! wheel with its default delegate) but the convolutions (`cnn_ops.rs`)
//! against them, bit for bit, on every backend here. The delegate's ops
//! take XNNPACK's arithmetic, the ops it leaves to the builtin kernels
//! their optimized arithmetic.

mod tflite_common;

use qneon::Method;
use qneon_runtime::interp::{Interpreter, Options, Rounding, TfliteKernels};
use qneon_runtime::Error;
use tflite_common::*;

const REFERENCE: &str = "litert_xnnpack";

/// Ops the delegate takes whose XNNPACK arithmetic is not built yet: a
/// model with one is refused under `TfliteKernels::Xnnpack`, naming it
/// (checked below), never run with another arithmetic.
const NOT_BUILT: &[&str] = &["AVERAGE_POOL_2D", "MAX_POOL_2D"];

/// The options that reproduce the delegate: single rounding (LiteRT's
/// build), XNNPACK's kernels, and for SOFTMAX and LOG_SOFTMAX (which the
/// delegate leaves to the builtin kernels) the method of the x86 builtin
/// kernels ([`builtin_method`]).
fn xnnpack_options(backend: qneon::Backend, case: &str) -> Options {
    Options {
        kernels: TfliteKernels::Xnnpack,
        backend,
        ..options(Rounding::Single, builtin_method(case))
    }
}

/// The method of the x86 builtin kernels the delegate leaves SOFTMAX and
/// LOG_SOFTMAX to, as measured on these cases: int8 SOFTMAX gives the
/// reference kernels' bytes (the fixed-point method), int8 LOG_SOFTMAX the
/// table method's.
fn builtin_method(case: &str) -> Method {
    if case.starts_with("log_softmax") {
        Method::Lut
    } else {
        Method::FixedPoint
    }
}

fn is_conv_case(name: &str) -> bool {
    name.starts_with("conv_") || name.starts_with("depthwise_")
}

#[test]
fn single_op_models_equal_litert_xnnpack_bit_for_bit() {
    let manifest = manifest("ops/manifest.json");
    let mut compared = 0usize;
    let mut cases = Vec::new();
    let mut refused = Vec::new();
    for case in manifest["cases"].as_array().unwrap() {
        let name = case["name"].as_str().unwrap();
        let runs = case["runs"].as_array().unwrap();
        let keeps = runs[0]["outputs"]
            .as_object()
            .unwrap()
            .values()
            .any(|refs| refs.get(REFERENCE).is_some());
        if !keeps || is_conv_case(name) {
            continue;
        }
        let bytes = read_model(case["model"].as_str().unwrap());
        match Interpreter::new(
            bytes.as_bytes(),
            xnnpack_options(qneon::Backend::Scalar, name),
        ) {
            Err(Error::UnsupportedOp { op, missing, .. }) if NOT_BUILT.contains(&op.as_str()) => {
                assert!(missing.contains("XNNPACK"), "{name}: {missing}");
                refused.push(format!("{name} ({op})"));
                continue;
            }
            Err(e) => panic!("{name} ({REFERENCE}): {e}"),
            Ok(_) => {}
        }
        cases.push(name.to_string());
        for backend in qneon::Backend::available() {
            let mut interpreter =
                Interpreter::new(bytes.as_bytes(), xnnpack_options(backend, name))
                    .unwrap_or_else(|e| panic!("{name} ({REFERENCE}): {e}"));
            for run in runs {
                for (output, ours, refs) in run_case(&mut interpreter, &case["tensors"], run) {
                    let expected = npy(refs[REFERENCE].as_str().unwrap());
                    assert_eq!(ours.len(), expected.data.len(), "{name} {output}");
                    let differing: Vec<usize> = (0..ours.len())
                        .filter(|&i| ours[i] != expected.data[i])
                        .collect();
                    assert!(
                        differing.is_empty(),
                        "{name} {} output {output} vs {REFERENCE} ({}): {} of {} bytes differ, \
                         first at {}: ours {} theirs {}",
                        run["name"],
                        backend.name(),
                        differing.len(),
                        ours.len(),
                        differing[0],
                        ours[differing[0]],
                        expected.data[differing[0]]
                    );
                    compared += 1;
                }
            }
        }
    }
    println!(
        "compared {compared} outputs bit-exact over {} cases; refused (not built): {}",
        cases.len(),
        refused.join(", ")
    );
    // Every family whose arithmetic is built is among them.
    for family in [
        "fc_",
        "add_",
        "logistic_",
        "tanh_",
        "sub_",
        "mul_",
        "batch_matmul",
        "softmax_",
        "log_softmax_",
        "dequantize_",
        "quantize_",
        "cast_",
        "requantize_",
        "concat_",
        "transpose_",
        "gather_",
    ] {
        assert!(
            cases.iter().any(|c| c.starts_with(family)),
            "no {family} case keeps {REFERENCE}"
        );
    }
}

/// The delegate's MUL rounds its `f32` product to even where LiteRT's
/// kernels requantize in fixed point: the committed cases part somewhere,
/// so the test above tells the two apart.
#[test]
fn xnnpack_mul_differs_from_litert_reference_somewhere() {
    let manifest = manifest("ops/manifest.json");
    let mut differing = 0usize;
    for case in manifest["cases"].as_array().unwrap() {
        if !case["name"].as_str().unwrap().starts_with("mul_") {
            continue;
        }
        for run in case["runs"].as_array().unwrap() {
            let refs = run["outputs"]["z"].as_object().unwrap();
            let bytes = |r: &str| npy(refs[r].as_str().unwrap()).data;
            let (xnn, reference) = (bytes(REFERENCE), bytes("litert_ref"));
            differing += xnn.iter().zip(&reference).filter(|(a, b)| a != b).count();
        }
    }
    assert!(differing > 0, "no MUL byte parts XNNPACK from LiteRT");
}

/// The 1-layer MobileBert under `TfliteKernels::Xnnpack` against LiteRT's
/// XNNPACK outputs, every committed input set, on the best backend: every
/// byte of both logits (litert_xnnpack differs from litert_ref in 10 to 20
/// of the 384 bytes of each).
#[test]
fn mobilebert_1_layer_equals_litert_xnnpack_bit_for_bit() {
    check_mobilebert("1l");
}

/// The 24-layer model likewise (litert_xnnpack differs from litert_ref in
/// 196 to 239 of the 384 bytes of each output, by up to 4).
#[test]
fn mobilebert_24_layers_equals_litert_xnnpack_bit_for_bit() {
    check_mobilebert("24l");
}

fn check_mobilebert(which: &str) {
    let manifest = manifest("mobilebert_squad/manifest.json");
    let model = &manifest["models"][which];
    let bytes = read_model(model["model"].as_str().unwrap());
    let options = Options {
        kernels: TfliteKernels::Xnnpack,
        backend: qneon::Backend::best(),
        ..options(Rounding::Single, Method::FixedPoint)
    };
    let mut interpreter = Interpreter::new(bytes.as_bytes(), options).expect("MobileBert");
    let mut compared = 0usize;
    for (case, inputs) in manifest["inputs"].as_object().unwrap() {
        let files = &model["outputs"][case][REFERENCE];
        let run = serde_json::json!({
            "inputs": inputs,
            "outputs": {
                "start_logits": { REFERENCE: files["start_logits"] },
                "end_logits": { REFERENCE: files["end_logits"] },
            },
        });
        for (output, ours, refs) in run_case(&mut interpreter, &model["tensors"], &run) {
            let expected = npy(refs[REFERENCE].as_str().unwrap());
            assert_eq!(ours.len(), expected.data.len(), "{case} {output}");
            let differing: Vec<usize> = (0..ours.len())
                .filter(|&i| ours[i] != expected.data[i])
                .collect();
            assert!(
                differing.is_empty(),
                "MobileBert {which} {case} {output} vs {REFERENCE}: {} of {} bytes differ, first at {}",
                differing.len(),
                ours.len(),
                differing[0]
            );
            compared += 1;
        }
    }
    assert_eq!(compared, 6, "three input sets, two logits each");
}
