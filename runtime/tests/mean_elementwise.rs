//! MEAN and the element-wise activations (RELU family, LEAKY_RELU,
//! HARD_SWISH) in the interpreter: TFLite's `Prepare` rules on rewritten
//! single-op models (their bytes against the references are checked by
//! `tflite_models.rs` with every other case), and the kernel sets they
//! are refused under.

mod tflite_common;

use qneon::Method;
use qneon_runtime::interp::{Interpreter, Rounding, TfliteKernels};
use qneon_runtime::Error;
use tflite_common::*;

fn load(bytes: &[u8]) -> Result<(), Error> {
    Interpreter::new(bytes, options(Rounding::Single, Method::FixedPoint)).map(|_| ())
}

/// The messages of the failing loads among every single rewrite of
/// `pattern` into `replacement` in `model`. None may panic.
fn rewrites(model: &str, pattern: &[u8], replacement: &[u8]) -> Vec<String> {
    let bytes = read_model(model).as_bytes().to_vec();
    let found: Vec<usize> = (0..=bytes.len() - pattern.len())
        .filter(|&i| bytes[i..i + pattern.len()] == *pattern)
        .collect();
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

/// `values` as little-endian int32s, back to back.
fn ints(values: &[i32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

#[test]
fn mean_prepare_refuses_axes_out_of_range_and_shapes_that_do_not_follow() {
    // mean_hw_keep: [1, 7, 7, 40] over the constant axes [1, 2].
    let model = "ops/mean_hw_keep/model.tflite";
    let errors = rewrites(model, &ints(&[1, 2]), &ints(&[1, 4]));
    assert_some_error(&errors, "MEAN", &["axis 4 is outside"]);
    let errors = rewrites(model, &ints(&[1, 2]), &ints(&[-5, 2]));
    assert_some_error(&errors, "MEAN", &["axis -5 is outside"]);
    // [1, 1] reduces H alone: TFLite's output is [1, 1, 7, 40], the file
    // says [1, 1, 1, 40].
    let errors = rewrites(model, &ints(&[1, 2]), &ints(&[1, 1]));
    assert_some_error(&errors, "MEAN", &["output shape", "TFLite computes"]);
}

/// Under XNNPACK, MEAN and LEAKY_RELU take the delegate's own arithmetic
/// (their bytes part from the builtin kernels' on these inputs) and RELU6
/// and HARD_SWISH the builtin kernels' (the same bytes): the paths are
/// really distinct where the delegate computes differently, and each equals
/// LiteRT+XNNPACK's output.
#[test]
fn mean_and_the_activations_run_in_xnnpack_s_arithmetic_or_the_builtin_one() {
    let manifest = manifest("ops/manifest.json");
    for (name, own) in [
        ("mean_hw", true),
        ("leaky_relu_0_2", true),
        ("relu6", false),
        ("hard_swish", false),
    ] {
        let case = manifest["cases"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == name)
            .unwrap();
        let bytes = read_model(case["model"].as_str().unwrap());
        let run = &case["runs"][0];
        let outputs = |kernels| {
            let mut options = options(Rounding::Single, Method::Lut);
            options.kernels = kernels;
            let mut interpreter = Interpreter::new(bytes.as_bytes(), options)
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            run_case(&mut interpreter, &case["tensors"], run)
        };
        let (xnnpack, builtin) = (
            outputs(TfliteKernels::Xnnpack),
            outputs(TfliteKernels::Optimized),
        );
        for ((output, ours, refs), (_, theirs, _)) in xnnpack.iter().zip(&builtin) {
            let expected = npy(refs["litert_xnnpack"].as_str().unwrap()).data;
            assert_eq!(ours, &expected, "{name} {output}: litert_xnnpack");
            assert_eq!(ours != theirs, own, "{name} {output}: differs from builtin");
        }
    }
}

/// The scale of `case`'s operator input or output `what`.
fn scale(case: &str, what: &str) -> f32 {
    let manifest = manifest("ops/manifest.json");
    let case = manifest["cases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == case)
        .unwrap()
        .clone();
    case["operators"][0][what][0]["quantization"]["scale"]
        .as_f64()
        .unwrap() as f32
}

#[test]
fn hard_swish_prepare_refuses_an_output_scale_below_the_hires_input_scale() {
    // TFLite requires s_in / 128 / s_out below 1 (an output exponent of at
    // most 0): an output scale of s_in / 256 breaks it.
    let out = scale("hard_swish", "outputs");
    let input = scale("hard_swish", "inputs");
    let errors = rewrites(
        "ops/hard_swish/model.tflite",
        &out.to_le_bytes(),
        &(input / 256.0).to_le_bytes(),
    );
    assert_some_error(&errors, "HARD_SWISH", &["output exponent"]);
}

#[test]
fn leaky_relu_prepare_refuses_a_negative_alpha() {
    let errors = rewrites(
        "ops/leaky_relu_0_2/model.tflite",
        &0.2f32.to_le_bytes(),
        &(-0.2f32).to_le_bytes(),
    );
    assert_some_error(&errors, "LEAKY_RELU", &["alpha"]);
}

#[test]
fn relus_refuse_output_shapes_that_differ() {
    // relu: [1, 9, 9, 20] in and out; the output's 20 becomes 21 where the
    // shape vectors are rewritten one at a time.
    let errors = rewrites(
        "ops/relu/model.tflite",
        &ints(&[1, 9, 9, 20]),
        &ints(&[1, 9, 9, 21]),
    );
    assert_some_error(&errors, "RELU", &["output shape"]);
}
