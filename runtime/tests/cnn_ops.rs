//! The convolution single-op models (`models/ops/conv_*`, `depthwise_*`)
//! against every kernel path whose outputs they keep, each with the
//! options that reproduce it, on every backend here.

mod tflite_common;

use qneon::Method;
use qneon_runtime::interp::{Interpreter, Options, Rounding, TfliteKernels};
use qneon_runtime::Error;
use tflite_common::*;

/// The options that reproduce a reference's bytes.
fn reference_options(reference: &str) -> Options {
    let (rounding, kernels) = match reference {
        // LiteRT's reference CONV_2D and DEPTHWISE_CONV_2D: double rounding
        // under the single-rounding build's options.
        "litert_ref" => (Rounding::Single, TfliteKernels::Reference),
        "tf219_ref" => (Rounding::Double, TfliteKernels::Reference),
        "litert_xnnpack" => (Rounding::Single, TfliteKernels::Xnnpack),
        other => panic!("unknown reference {other}"),
    };
    Options {
        kernels,
        ..options(rounding, Method::FixedPoint)
    }
}

/// References kept but not yet reproduced: LiteRT's x86 optimized builtin
/// kernels (`litert_builtin`) equal none of the three paths. Measured on
/// these cases (an independent recomputation of every accumulator): they
/// round twice like the reference kernels, but their final power-of-two
/// divide rounds ties of the doubling high product toward +infinity, not
/// away from zero, in every CONV_2D case and every 3x3 undilated
/// DEPTHWISE_CONV_2D case (0 bytes differ); the 5x5 and dilated depthwise
/// cases follow plain double rounding. So they differ from the reference
/// by +1 on negative accumulators that land exactly on a half after the
/// first rounding (scaled values -18.501, -35.5004, -5.5006, ...: 44 of
/// `depthwise_rounding`'s 36,864 bytes). The aarch64 builtin kernels'
/// paths (the measurement) are what `TfliteKernels::Optimized`
/// reproduces.
const NOT_REPRODUCED: &[&str] = &["litert_builtin"];

fn is_conv_case(name: &str) -> bool {
    name.starts_with("conv_") || name.starts_with("depthwise_")
}

#[test]
fn conv_models_equal_each_litert_path_bit_for_bit() {
    let manifest = manifest("ops/manifest.json");
    let mut compared = 0usize;
    let mut cases = 0usize;
    let mut seen = std::collections::BTreeSet::new();
    for case in manifest["cases"].as_array().unwrap() {
        let name = case["name"].as_str().unwrap();
        if !is_conv_case(name) {
            continue;
        }
        cases += 1;
        let bytes = read_model(case["model"].as_str().unwrap());
        let runs = case["runs"].as_array().unwrap();
        let references: Vec<String> = runs[0]["outputs"]
            .as_object()
            .unwrap()
            .values()
            .flat_map(|refs| refs.as_object().unwrap().keys().cloned())
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        for reference in &references {
            seen.insert(reference.clone());
            if NOT_REPRODUCED.contains(&reference.as_str()) {
                continue;
            }
            for backend in qneon::Backend::available() {
                let options = Options {
                    backend,
                    ..reference_options(reference)
                };
                let mut interpreter = Interpreter::new(bytes.as_bytes(), options)
                    .unwrap_or_else(|e| panic!("{name} ({reference}): {e}"));
                for run in runs {
                    for (output, ours, refs) in run_case(&mut interpreter, &case["tensors"], run) {
                        let expected = npy(refs[reference.as_str()].as_str().unwrap());
                        let differing = ours
                            .iter()
                            .zip(&expected.data)
                            .filter(|(a, b)| a != b)
                            .count();
                        assert_eq!(
                            differing,
                            0,
                            "{name} {} output {output} vs {reference} ({}): {differing} of {} bytes differ",
                            run["name"],
                            backend.name(),
                            ours.len()
                        );
                        assert_eq!(ours.len(), expected.data.len());
                        compared += 1;
                    }
                }
            }
        }
    }
    println!("compared {compared} conv outputs bit-exact over {cases} cases");
    assert!(cases >= 20, "{cases} conv cases");
    for reference in ["litert_ref", "tf219_ref", "litert_xnnpack"] {
        assert!(seen.contains(reference), "no case keeps {reference}");
    }
}

/// The paths really differ on the committed layers: each pair of
/// requantizations gives other bytes somewhere, so the test above tells
/// them apart (a mapping to the wrong path would fail it).
#[test]
fn conv_paths_differ_on_the_rounding_cases() {
    let manifest = manifest("ops/manifest.json");
    for name in ["conv_rounding", "depthwise_rounding"] {
        let case = manifest["cases"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == name)
            .unwrap_or_else(|| panic!("no case {name}"));
        let run = &case["runs"][0];
        let refs = run["outputs"]["y"].as_object().unwrap();
        let bytes = |r: &str| npy(refs[r].as_str().unwrap()).data;
        let xnn = bytes("litert_xnnpack");
        let double = bytes("tf219_ref");
        assert_ne!(xnn, double, "{name}: XNNPACK equals double rounding");
        assert_eq!(
            bytes("litert_ref"),
            double,
            "{name}: LiteRT's reference kernels round twice"
        );
    }
}

/// An op whose XNNPACK path is not built (a uint8 RELU6-fused
/// MAX_POOL_2D) is refused under it, naming the op; the other paths run it.
#[test]
fn xnnpack_kernels_refuse_ops_not_built() {
    let bytes = qneon_tflite::ModelBytes::copy_from(&tflite_common::flat::uint8_relu6_max_pool());
    for reference in ["litert_ref", "tf219_ref"] {
        Interpreter::new(bytes.as_bytes(), reference_options(reference))
            .unwrap_or_else(|e| panic!("{reference}: {e}"));
    }
    let options = reference_options("litert_xnnpack");
    match Interpreter::new(bytes.as_bytes(), options) {
        Err(Error::UnsupportedOp { op, missing, .. }) => {
            assert_eq!(op, "MAX_POOL_2D");
            assert!(missing.contains("XNNPACK"), "{missing}");
        }
        other => panic!("uint8 RELU6 MAX_POOL_2D under xnnpack: {other:?}"),
    }
    assert_eq!(TfliteKernels::Xnnpack.name(), "xnnpack");
}
