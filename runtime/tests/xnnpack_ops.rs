//! `TfliteKernels::Xnnpack` on the single-op models: every case that keeps
//! the XNNPACK delegate's outputs (`litert_xnnpack`, LiteRT 2.3.0's x86_64
//! wheel with its default delegate) but the convolutions (`cnn_ops.rs`)
//! against them, bit for bit, on every backend here. The delegate's ops
//! take XNNPACK's arithmetic, the ops it leaves to the builtin kernels
//! their optimized arithmetic.
//!
//! `--kernels xnnpack` follows XNNPACK's aarch64 build. Its arithmetic is
//! the x86 build's for every op here but MUL (ARM: fixed-point `rndnu`,
//! ties up; x86: `f32`, ties to even), and the ops the delegate leaves to
//! the builtin kernels run those of the build (int8 SOFTMAX / LOG_SOFTMAX:
//! the aarch64 table method; uint8 CONCATENATION's rescale: fused on
//! aarch64). Those cases (every case listed in
//! `litert_aarch64_xnnpack/manifest.json`) and MobileBert are checked
//! against the aarch64 build's outputs, the other cases against the x86
//! ones, which equal the aarch64 ones byte for byte (measured on every
//! case).

mod tflite_common;

use qneon::Method;
use qneon_runtime::interp::{Interpreter, Options, Rounding, TfliteKernels};
use qneon_runtime::Error;
use tflite_common::*;

const REFERENCE: &str = "litert_xnnpack";

/// The aarch64 build's XNNPACK outputs, for the ops whose arithmetic
/// differs from the x86 build's.
const AARCH64: &str = "litert_aarch64_xnnpack/manifest.json";

/// The aarch64 reference of single-op `case`'s `run` output `output`, if
/// that case has one.
fn aarch64_reference(
    aarch64: &serde_json::Value,
    case: &str,
    run: &str,
    output: &str,
) -> Option<String> {
    aarch64["ops"]["cases"][case][run][output]
        .as_str()
        .map(str::to_string)
}

/// Ops the delegate takes whose XNNPACK arithmetic is not built yet: a
/// model with one is refused under `TfliteKernels::Xnnpack`, naming it
/// (checked below), never run with another arithmetic.
const NOT_BUILT: &[&str] = &["AVERAGE_POOL_2D", "MAX_POOL_2D"];

/// The options that reproduce the delegate as LiteRT's aarch64 build runs
/// it: single rounding, XNNPACK's kernels, and for SOFTMAX and LOG_SOFTMAX
/// (which the delegate leaves to the builtin kernels) the method of the
/// aarch64 builtin kernels, the table ([`Method::Lut`]: measured equal to
/// the aarch64 XNNPACK run on every softmax case, where the x86 run parts
/// on `softmax_int8_beta`).
fn xnnpack_options(backend: qneon::Backend, _case: &str) -> Options {
    Options {
        kernels: TfliteKernels::Xnnpack,
        backend,
        ..options(Rounding::Single, Method::Lut)
    }
}

fn is_conv_case(name: &str) -> bool {
    name.starts_with("conv_") || name.starts_with("depthwise_")
}

#[test]
fn single_op_models_equal_litert_xnnpack_bit_for_bit() {
    let aarch64 = manifest(AARCH64);
    let manifest = manifest("ops/manifest.json");
    let mut compared = 0usize;
    let mut aarch64_compared = 0usize;
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
                let run_name = run["name"].as_str().unwrap();
                for (output, ours, refs) in run_case(&mut interpreter, &case["tensors"], run) {
                    let file = match aarch64_reference(&aarch64, name, run_name, &output) {
                        Some(file) => {
                            aarch64_compared += 1;
                            file
                        }
                        None => refs[REFERENCE].as_str().unwrap().to_string(),
                    };
                    let expected = npy(&file);
                    assert_eq!(ours.len(), expected.data.len(), "{name} {output}");
                    let differing: Vec<usize> = (0..ours.len())
                        .filter(|&i| ours[i] != expected.data[i])
                        .collect();
                    assert!(
                        differing.is_empty(),
                        "{name} {} output {output} vs {file} ({}): {} of {} bytes differ, \
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
        "compared {compared} outputs bit-exact over {} cases ({aarch64_compared} against \
         aarch64 references); refused (not built): {}",
        cases.len(),
        refused.join(", ")
    );
    // Every MUL case (8 cases, 2 runs) on every backend took its aarch64
    // reference.
    assert!(aarch64_compared >= 16, "{aarch64_compared}");
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

/// The delegate's MUL (`rndnu` on aarch64) and LiteRT's kernels (double
/// rounding) part somewhere on the committed cases, so the test above
/// tells the two apart; every MUL case has its aarch64 reference.
#[test]
fn xnnpack_mul_differs_from_litert_reference_somewhere() {
    let aarch64 = manifest(AARCH64);
    let manifest = manifest("ops/manifest.json");
    let mut differing = 0usize;
    for case in manifest["cases"].as_array().unwrap() {
        let name = case["name"].as_str().unwrap();
        if !name.starts_with("mul_") {
            continue;
        }
        for run in case["runs"].as_array().unwrap() {
            let refs = run["outputs"]["z"].as_object().unwrap();
            let file = aarch64_reference(&aarch64, name, run["name"].as_str().unwrap(), "z")
                .unwrap_or_else(|| panic!("{name}: no aarch64 XNNPACK reference"));
            let xnn = npy(&file).data;
            let reference = npy(refs["litert_ref"].as_str().unwrap()).data;
            differing += xnn.iter().zip(&reference).filter(|(a, b)| a != b).count();
        }
    }
    assert!(differing > 0, "no MUL byte parts XNNPACK from LiteRT");
}

/// A MUL whose products land on halves (`litert_aarch64_xnnpack/mul_ties`):
/// every backend gives the aarch64 build's bytes, which part from the x86
/// build's (ties up against ties to even), so this tells the two MULs
/// apart where the single-op cases above do not.
#[test]
fn mul_ties_follow_the_aarch64_build() {
    let aarch64 = manifest(AARCH64);
    let case = &aarch64["mul_ties"];
    let bytes = read_model(case["model"].as_str().unwrap());
    let mut x86_differing = 0usize;
    let mut compared = 0usize;
    for backend in qneon::Backend::available() {
        let mut interpreter =
            Interpreter::new(bytes.as_bytes(), xnnpack_options(backend, "mul_ties"))
                .expect("mul_ties");
        for run in case["runs"].as_array().unwrap() {
            for (output, ours, refs) in run_case(&mut interpreter, &case["tensors"], run) {
                let arm = npy(refs["litert_aarch64_xnnpack"].as_str().unwrap()).data;
                let x86 = npy(refs["litert_xnnpack"].as_str().unwrap()).data;
                assert_eq!(
                    ours,
                    arm,
                    "mul_ties {} {output} ({})",
                    run["name"],
                    backend.name()
                );
                x86_differing += ours.iter().zip(&x86).filter(|(a, b)| a != b).count();
                compared += 1;
            }
        }
    }
    assert!(compared >= 2, "{compared}");
    assert!(
        x86_differing > 0,
        "the x86 build's MUL gives the same bytes here"
    );
}

/// The 1-layer MobileBert under `TfliteKernels::Xnnpack` against LiteRT's
/// aarch64 XNNPACK outputs, every committed input set, on the best
/// backend: every byte of both logits (litert_xnnpack differs from
/// litert_ref in 10 to 20 of the 384 bytes of each; on this model the
/// aarch64 and x86 builds agree).
#[test]
fn mobilebert_1_layer_equals_litert_xnnpack_bit_for_bit() {
    check_mobilebert("1l");
}

/// The 24-layer model likewise (litert_xnnpack differs from litert_ref in
/// 196 to 239 of the 384 bytes of each output, by up to 4; the aarch64
/// build's MUL rounding parts it from the x86 build's in 1 to 3: checked
/// below, so this test tells the two MULs apart).
#[test]
fn mobilebert_24_layers_equals_litert_xnnpack_bit_for_bit() {
    check_mobilebert("24l");
}

/// The aarch64 and x86 XNNPACK builds part on the 24-layer model (the MUL
/// rounding), and agree on the 1-layer one.
#[test]
fn mobilebert_aarch64_and_x86_xnnpack_part_on_24_layers_only() {
    let aarch64 = manifest(AARCH64);
    let manifest = manifest("mobilebert_squad/manifest.json");
    for (which, parts) in [("1l", false), ("24l", true)] {
        let mut differing = 0usize;
        for case in manifest["inputs"].as_object().unwrap().keys() {
            for output in ["start_logits", "end_logits"] {
                let x86 = &manifest["models"][which]["outputs"][case][REFERENCE][output];
                let arm = &aarch64["models"][which]["outputs"][case][output];
                let (x86, arm) = (npy(x86.as_str().unwrap()), npy(arm.as_str().unwrap()));
                assert_eq!(x86.data.len(), arm.data.len(), "{which} {case} {output}");
                differing += x86
                    .data
                    .iter()
                    .zip(&arm.data)
                    .filter(|(a, b)| a != b)
                    .count();
            }
        }
        assert_eq!(differing > 0, parts, "{which}: {differing} bytes differ");
    }
}

fn check_mobilebert(which: &str) {
    let aarch64 = manifest(AARCH64);
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
        let files = &aarch64["models"][which]["outputs"][case];
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
                "MobileBert {which} {case} {output} vs aarch64 {REFERENCE}: {} of {} bytes differ, \
                 first at {}",
                differing.len(),
                ours.len(),
                differing[0]
            );
            compared += 1;
        }
    }
    assert_eq!(compared, 6, "three input sets, two logits each");
}
