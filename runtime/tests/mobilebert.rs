//! The converter's own int8 MobileBert (1 layer, `models/mobilebert_squad_1l.tflite`)
//! end to end, bit for bit against TFLite's runtimes on the three committed
//! input sets, on every backend of the machine (scalar on the host; scalar
//! and NEON under qemu), and the 24-layer model in single rounding on the
//! best backend (the one input set whose bytes depend on how LiteRT's
//! reference FULLY_CONNECTED rounds near ties is among them):
//!
//! * single rounding, fixed-point softmax == LiteRT 2.3's reference kernels (`litert_ref`);
//! * double rounding, fixed-point softmax == TensorFlow 2.19's bundled TFLite (`tf219_ref`);
//! * single rounding, table softmax, TFLite's optimized DEQUANTIZE == LiteRT's
//!   own aarch64 build with its builtin kernels (`litert_aarch64_builtin/`).

mod tflite_common;

use qneon::Method;
use qneon_runtime::interp::{Interpreter, Options, Rounding};
use serde_json::{json, Value};
use tflite_common::*;

const CASES: [&str; 3] = ["case0_full", "case1_padded", "case2_short"];

/// One input set as `run_case` takes it: inputs by signature name, and per
/// output the reference file of `reference`.
fn run_of(manifest: &Value, aarch64: &Value, model: &str, case: &str, reference: &str) -> Value {
    let outputs = if reference == "litert_aarch64_builtin" {
        let files = &aarch64["models"][model]["outputs"][case];
        json!({
            "start_logits": { reference: files["start_logits"] },
            "end_logits": { reference: files["end_logits"] },
        })
    } else {
        let files = &manifest["models"][model]["outputs"][case][reference];
        json!({
            "start_logits": { reference: files["start_logits"] },
            "end_logits": { reference: files["end_logits"] },
        })
    };
    json!({ "inputs": manifest["inputs"][case], "outputs": outputs })
}

/// The 1-layer model against `reference` on the best backend: scalar on
/// the host, NEON under qemu (the scalar backend is the same portable code
/// on both machines, so running it again under qemu only costs time).
fn check(reference: &str, options: Options) {
    check_model("1l", &[qneon::Backend::best()], reference, options);
}

/// `model` ("1l" or "24l") on each of `backends`, every input set, against
/// `reference`.
fn check_model(model: &str, backends: &[qneon::Backend], reference: &str, options: Options) {
    let manifest = manifest("mobilebert_squad/manifest.json");
    let aarch64 = manifest_aarch64();
    let bytes = read_model(manifest["models"][model]["model"].as_str().unwrap());
    for &backend in backends {
        let options = Options { backend, ..options };
        let mut interpreter = Interpreter::new(bytes.as_bytes(), options)
            .unwrap_or_else(|e| panic!("MobileBert {model} ({reference}): {e}"));
        for case in CASES {
            let run = run_of(&manifest, &aarch64, model, case, reference);
            let signature = &manifest["models"][model]["tensors"];
            for (output, ours, refs) in run_case(&mut interpreter, signature, &run) {
                let expected = npy(refs[reference].as_str().unwrap());
                let differ = ours
                    .iter()
                    .zip(&expected.data)
                    .filter(|(a, b)| a != b)
                    .count();
                assert_eq!(
                    ours.len(),
                    expected.data.len(),
                    "{case} {output}: output size"
                );
                assert!(
                    differ == 0,
                    "{model} {case} {output} ({}) vs {reference}: {differ} of {} bytes differ",
                    backend.name(),
                    ours.len()
                );
            }
        }
    }
}

fn manifest_aarch64() -> Value {
    manifest("litert_aarch64_builtin/manifest.json")
}

#[test]
fn single_rounding_fixed_point_equals_litert_reference_kernels() {
    check("litert_ref", options(Rounding::Single, Method::FixedPoint));
}

/// The 24-layer model in LiteRT's reference arithmetic on the best backend
/// (scalar on the host, NEON under qemu). On `case2_short`, element
/// [160, 501] of operator 815 (a FULLY_CONNECTED) is a near-tie that only the
/// real-multiplier requantization of LiteRT's reference FULLY_CONNECTED
/// rounds as LiteRT does; the 31-bit single-rounding multiplier changed 707
/// of its 768 logits.
#[test]
fn single_rounding_fixed_point_24_layers_equals_litert_reference_kernels() {
    let options = options(Rounding::Single, Method::FixedPoint);
    check_model("24l", &[qneon::Backend::best()], "litert_ref", options);
}

#[test]
fn double_rounding_fixed_point_equals_tensorflow_2_19_bundled_tflite() {
    check("tf219_ref", options(Rounding::Double, Method::FixedPoint));
}

#[test]
fn single_rounding_table_softmax_equals_litert_aarch64_builtin_kernels() {
    let options = options(Rounding::Single, Method::Lut);
    assert_eq!(
        options.kernels,
        qneon_runtime::interp::TfliteKernels::Optimized
    );
    check("litert_aarch64_builtin", options);
}

/// Inputs keep their values across invokes (the plan never lends an input's
/// bytes to a later tensor): invoking again without setting them gives the
/// same outputs, as TFLite does. Found by `--reps 3`, whose second invoke
/// saw token ids overwritten by an intermediate tensor.
#[test]
fn invoking_again_without_new_inputs_gives_the_same_outputs() {
    let manifest = manifest("mobilebert_squad/manifest.json");
    let aarch64 = manifest_aarch64();
    let bytes = read_model(manifest["models"]["1l"]["model"].as_str().unwrap());
    let mut interpreter = Interpreter::new(
        bytes.as_bytes(),
        options(Rounding::Single, Method::FixedPoint),
    )
    .unwrap();
    let run = run_of(&manifest, &aarch64, "1l", "case1_padded", "litert_ref");
    let signature = &manifest["models"]["1l"]["tensors"];
    // The first invoke equals LiteRT's reference kernels ...
    for (name, ours, refs) in run_case(&mut interpreter, signature, &run) {
        assert_eq!(
            ours,
            npy(refs["litert_ref"].as_str().unwrap()).data,
            "{name}"
        );
    }
    let snapshot = |interpreter: &Interpreter<'_>| -> Vec<Vec<u8>> {
        (0..interpreter.outputs().len())
            .map(|i| interpreter.output(i).unwrap().to_vec())
            .collect()
    };
    let first = snapshot(&interpreter);
    // ... and so do the next ones, with the inputs left as they were.
    for _ in 0..2 {
        interpreter.invoke().unwrap();
        assert_eq!(
            snapshot(&interpreter),
            first,
            "outputs changed on a later invoke"
        );
    }
}
