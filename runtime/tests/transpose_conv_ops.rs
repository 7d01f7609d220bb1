//! TRANSPOSE_CONV: the single-op models (`models/ops/tconv_*`) against
//! every kernel path whose outputs they keep (LiteRT's reference kernels,
//! TF 2.19's, LiteRT's optimized builtin kernels on x86_64 and on aarch64,
//! the XNNPACK delegate), each with the options that reproduce it, on
//! every backend here; and TFLite's `Prepare` rules, each broken in a model
//! built here, as errors naming the operator and the tensor.

mod tflite_common;

use qneon::Method;
use qneon_runtime::interp::{Interpreter, Options, Rounding, TfliteKernels};
use qneon_runtime::Error;
use serde_json::Value;
use tflite_common::flat::{Field::*, Table};
use tflite_common::*;

/// The options that reproduce a reference's bytes. LiteRT's optimized
/// builtin TRANSPOSE_CONV was measured to give the same bytes on x86_64
/// (`litert_builtin`) and aarch64 (`litert_aarch64_builtin`) on every case
/// here: `optimized_ops::Quantize`'s blocks of 8 channels with ties
/// upward, the rest double rounding.
fn reference_options(reference: &str) -> Options {
    let (rounding, kernels) = match reference {
        "litert_ref" => (Rounding::Single, TfliteKernels::Reference),
        "tf219_ref" => (Rounding::Double, TfliteKernels::Reference),
        "litert_builtin" | "litert_aarch64_builtin" => (Rounding::Single, TfliteKernels::Optimized),
        "litert_xnnpack" => (Rounding::Single, TfliteKernels::Xnnpack),
        other => panic!("unknown reference {other}"),
    };
    Options {
        kernels,
        ..options(rounding, Method::FixedPoint)
    }
}

fn tconv_cases() -> Vec<Value> {
    let manifest = manifest("ops/manifest.json");
    manifest["cases"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["name"].as_str().unwrap().starts_with("tconv_"))
        .cloned()
        .collect()
}

/// Every reference of a case's runs: the ones in the ops manifest and the
/// aarch64 builtin kernels' from theirs, by run name then output name.
fn references(case: &Value, aarch64: &Value) -> Vec<(String, Value)> {
    let name = case["name"].as_str().unwrap();
    let mut runs = Vec::new();
    for run in case["runs"].as_array().unwrap() {
        let mut run = run.clone();
        let run_name = run["name"].as_str().unwrap().to_string();
        let builtin = &aarch64["ops"]["cases"][name][&run_name];
        let outputs = run["outputs"].as_object_mut().unwrap();
        for (output, refs) in outputs.iter_mut() {
            let file = builtin[output.as_str()]
                .as_str()
                .unwrap_or_else(|| panic!("{name} {run_name}: no aarch64 builtin reference"));
            refs.as_object_mut().unwrap().insert(
                "litert_aarch64_builtin".to_string(),
                Value::String(file.to_string()),
            );
        }
        runs.push((run_name, run));
    }
    runs
}

#[test]
fn transpose_conv_models_equal_each_litert_path_bit_for_bit() {
    let aarch64 = manifest("litert_aarch64_builtin/manifest.json");
    let cases = tconv_cases();
    let mut compared = 0usize;
    let mut seen = std::collections::BTreeSet::new();
    for case in &cases {
        let name = case["name"].as_str().unwrap();
        let bytes = read_model(case["model"].as_str().unwrap());
        let runs = references(case, &aarch64);
        let names: std::collections::BTreeSet<String> = runs[0].1["outputs"]
            .as_object()
            .unwrap()
            .values()
            .flat_map(|refs| refs.as_object().unwrap().keys().cloned())
            .collect();
        for reference in &names {
            seen.insert(reference.clone());
            // Scalar is always among them.
            for backend in qneon::Backend::available() {
                let options = Options {
                    backend,
                    ..reference_options(reference)
                };
                let mut interpreter = Interpreter::new(bytes.as_bytes(), options)
                    .unwrap_or_else(|e| panic!("{name} ({reference}): {e}"));
                for (run_name, run) in &runs {
                    for (output, ours, refs) in run_case(&mut interpreter, &case["tensors"], run) {
                        let expected = npy(refs[reference.as_str()].as_str().unwrap());
                        assert_eq!(ours.len(), expected.data.len());
                        let differing = ours
                            .iter()
                            .zip(&expected.data)
                            .filter(|(a, b)| a != b)
                            .count();
                        assert_eq!(
                            differing,
                            0,
                            "{name} {run_name} output {output} vs {reference} ({}): {differing} \
                             of {} bytes differ",
                            backend.name(),
                            ours.len()
                        );
                        compared += 1;
                    }
                }
            }
        }
    }
    println!(
        "compared {compared} TRANSPOSE_CONV outputs bit-exact over {} cases",
        cases.len()
    );
    assert!(cases.len() >= 17, "{} cases", cases.len());
    for reference in [
        "litert_ref",
        "tf219_ref",
        "litert_builtin",
        "litert_aarch64_builtin",
        "litert_xnnpack",
    ] {
        assert!(seen.contains(reference), "no case keeps {reference}");
    }
}

/// The three paths really differ on the committed layers, so the test
/// above tells them apart (a mapping to the wrong path would fail it).
#[test]
fn transpose_conv_paths_differ_on_the_rounding_case() {
    let case = tconv_cases()
        .into_iter()
        .find(|c| c["name"] == "tconv_rounding")
        .expect("tconv_rounding");
    let refs = case["runs"][0]["outputs"]["y"].as_object().unwrap().clone();
    let bytes = |r: &str| npy(refs[r].as_str().unwrap()).data;
    let (reference, builtin, xnnpack) = (
        bytes("litert_ref"),
        bytes("litert_builtin"),
        bytes("litert_xnnpack"),
    );
    assert_ne!(
        reference, builtin,
        "the builtin kernels round as the reference"
    );
    assert_ne!(reference, xnnpack, "XNNPACK rounds as the reference");
    assert_ne!(builtin, xnnpack, "XNNPACK rounds as the builtin kernels");
    assert_eq!(
        reference,
        bytes("tf219_ref"),
        "LiteRT's reference rounds twice"
    );
}

const INT8: u8 = 9;
const INT32: u8 = 2;
const INT16: u8 = 7;
const INPUT_SCALE: f32 = 0.5;

/// One TRANSPOSE_CONV, everything a test may break: a valid 3x3 stride-2
/// SAME layer of [1, 3, 4, 4] into [1, 6, 8, 5].
#[derive(Clone)]
struct Spec {
    input: Vec<i32>,
    input_type: u8,
    weights: Vec<i32>,
    output: Vec<i32>,
    /// The output-shape tensor's values, dtype and constness.
    output_shape: Vec<i32>,
    output_shape_type: u8,
    output_shape_constant: bool,
    /// 0 SAME, 1 VALID.
    padding: u8,
    /// (height, width)
    stride: (i32, i32),
    activation: u8,
    scales: Vec<f32>,
    zero_points: Vec<i64>,
    axis: i32,
    /// Bias: dtype, element count, zero point.
    bias: Option<(u8, i32, i64)>,
    inputs: usize,
}

impl Spec {
    fn valid() -> Spec {
        Spec {
            input: vec![1, 3, 4, 4],
            input_type: INT8,
            weights: vec![5, 3, 3, 4],
            output: vec![1, 6, 8, 5],
            output_shape: vec![1, 6, 8, 5],
            output_shape_type: INT32,
            output_shape_constant: true,
            padding: 0,
            stride: (2, 2),
            activation: 0,
            scales: vec![0.01; 5],
            zero_points: vec![0; 5],
            axis: 0,
            bias: Some((INT32, 5, 0)),
            inputs: 4,
        }
    }

    fn model(&self) -> Vec<u8> {
        let count = |shape: &[i32]| shape.iter().product::<i32>().max(0) as usize;
        let quantization = |scales: Vec<f32>, zero_points: Vec<i64>, axis: i32| {
            Table(vec![
                (2, F32s(scales)),
                (3, I64s(zero_points)),
                (6, I32(axis)),
            ])
        };
        let tensor = |name: &str, shape: &[i32], dtype: u8, buffer: u32, q: Option<Table>| {
            let mut fields = vec![
                (0, I32s(shape.to_vec())),
                (1, U8(dtype)),
                (2, U32(buffer)),
                (3, Str(name.to_string())),
            ];
            if let Some(q) = q {
                fields.push((4, tflite_common::flat::Field::Table(q)));
            }
            Table(fields)
        };
        let shape_bytes: Vec<u8> = self
            .output_shape
            .iter()
            .flat_map(|v| {
                if self.output_shape_type == INT8 {
                    vec![*v as u8]
                } else {
                    v.to_le_bytes().to_vec()
                }
            })
            .collect();
        let mut tensors = vec![
            tensor(
                "output_shape",
                &[self.output_shape.len() as i32],
                self.output_shape_type,
                if self.output_shape_constant { 1 } else { 0 },
                None,
            ),
            tensor(
                "w",
                &self.weights,
                INT8,
                2,
                Some(quantization(
                    self.scales.clone(),
                    self.zero_points.clone(),
                    self.axis,
                )),
            ),
            tensor(
                "x",
                &self.input,
                self.input_type,
                0,
                Some(quantization(vec![INPUT_SCALE], vec![0], 0)),
            ),
            tensor(
                "y",
                &self.output,
                self.input_type,
                0,
                Some(quantization(vec![0.25], vec![1], 0)),
            ),
        ];
        let mut buffers = vec![
            Table(vec![]),
            Table(vec![(0, Bytes(shape_bytes))]),
            Table(vec![(0, Bytes(vec![1; count(&self.weights)]))]),
        ];
        let mut inputs = vec![0, 1, 2];
        if let Some((dtype, len, zero_point)) = self.bias {
            let size = if dtype == INT32 { 4 } else { 1 };
            tensors.push(tensor(
                "b",
                &[len],
                dtype,
                3,
                Some(quantization(vec![INPUT_SCALE * 0.01], vec![zero_point], 0)),
            ));
            buffers.push(Table(vec![(0, Bytes(vec![0; len.max(0) as usize * size]))]));
            inputs.push(4);
        }
        inputs.truncate(self.inputs);
        let options = Table(vec![
            (0, U8(self.padding)),
            (1, I32(self.stride.1)),
            (2, I32(self.stride.0)),
            (3, U8(self.activation)),
        ]);
        let mut graph_inputs = vec![2];
        if !self.output_shape_constant {
            graph_inputs.push(0);
        }
        let model = Table(vec![
            (0, U32(3)),
            (
                1,
                Tables(vec![Table(vec![(0, U8(67)), (2, I32(1)), (3, I32(67))])]),
            ),
            (
                2,
                Tables(vec![Table(vec![
                    (0, Tables(tensors)),
                    (1, I32s(graph_inputs)),
                    (2, I32s(vec![3])),
                    (
                        3,
                        Tables(vec![Table(vec![
                            (0, U32(0)),
                            (1, I32s(inputs)),
                            (2, I32s(vec![3])),
                            (3, U8(49)),
                            (4, tflite_common::flat::Field::Table(options)),
                        ])]),
                    ),
                    (4, Str("main".to_string())),
                ])]),
            ),
            (4, Tables(buffers)),
        ]);
        flat::file(&model)
    }

    fn load(&self, options: Options) -> Result<Vec<u8>, Error> {
        let file = qneon_tflite::ModelBytes::copy_from(&self.model());
        let mut interpreter = Interpreter::new(file.as_bytes(), options)?;
        let n = interpreter.inputs()[0].bytes;
        interpreter.set_input(0, &vec![2u8; n]).unwrap();
        interpreter.invoke().unwrap();
        Ok(interpreter.output(0).unwrap().to_vec())
    }
}

/// `spec` must be refused as an invalid (or, `unsupported`, unsupported)
/// TRANSPOSE_CONV, its message containing every one of `words`.
fn refused(spec: &Spec, unsupported: bool, words: &[&str]) {
    let (op, text) = match spec.load(options(Rounding::Single, Method::FixedPoint)) {
        Err(e @ Error::InvalidOp { .. }) if !unsupported => {
            let Error::InvalidOp { op, .. } = &e else {
                unreachable!()
            };
            (op.clone(), e.to_string())
        }
        Err(e @ Error::UnsupportedOp { .. }) if unsupported => {
            let Error::UnsupportedOp { op, .. } = &e else {
                unreachable!()
            };
            (op.clone(), e.to_string())
        }
        other => panic!("{words:?}: {other:?}"),
    };
    assert_eq!(op, "TRANSPOSE_CONV", "{text}");
    for w in words {
        assert!(text.contains(w), "{text} lacks {w:?}");
    }
}

#[test]
fn valid_transpose_conv_loads_and_scatters_its_kernel() {
    // x = 2 (real 1.0) everywhere, weights 1 (0.01), no bias. At stride 2
    // with a 3x3 kernel, an output pixel at odd (row, column) inside the
    // image is reached by 2 x 2 input pixels (4 taps), at even ones by
    // 1 x 1: real 4 * 4 channels * 0.01 = 0.16 and 0.04, over 0.25, + 1.
    for kernels in [
        TfliteKernels::Reference,
        TfliteKernels::Optimized,
        TfliteKernels::Xnnpack,
    ] {
        for backend in qneon::Backend::available() {
            let options = Options {
                kernels,
                backend,
                ..options(Rounding::Single, Method::FixedPoint)
            };
            let out = Spec::valid().load(options).unwrap();
            let at = |y: usize, x: usize| out[(y * 8 + x) * 5] as i8;
            // SAME: total padding (3 - 1) * 2 + 3 - 6 = 1, so 0 before: output
            // row 2 = input row 1 * 2 + tap 0 = row 0 * 2 + tap 2.
            assert_eq!(at(2, 2), (0.16f64 / 0.25).round() as i8 + 1, "{out:?}");
            assert_eq!(at(1, 1), (0.04f64 / 0.25).round() as i8 + 1, "{out:?}");
            assert_eq!(at(2, 1), (0.08f64 / 0.25).round() as i8 + 1, "{out:?}");
        }
    }
}

#[test]
fn broken_prepare_rules_are_errors_naming_the_op_and_tensor() {
    let with = |f: &dyn Fn(&mut Spec)| {
        let mut s = Spec::valid();
        f(&mut s);
        s
    };
    refused(&with(&|s| s.stride.0 = 0), false, &["stride height 0"]);
    refused(&with(&|s| s.stride.1 = -1), false, &["stride width -1"]);
    refused(
        &with(&|s| s.stride.1 = 40000),
        false,
        &["stride width 40000"],
    );
    refused(&with(&|s| s.padding = 2), false, &["padding 2"]);
    // An output size the input does not follow from (SAME at stride 2:
    // 3 input rows give 5 or 6 output rows).
    refused(
        &with(&|s| {
            s.output[1] = 8;
            s.output_shape[1] = 8;
        }),
        false,
        &["tensor x", "does not follow", "input height"],
    );
    refused(
        &with(&|s| {
            s.padding = 1;
        }),
        false,
        &["tensor x", "does not follow"],
    );
    // The output tensor's shape is not the output-shape tensor's.
    refused(
        &with(&|s| s.output[2] = 7),
        false,
        &["output shape", "TFLite computes"],
    );
    refused(
        &with(&|s| s.output_shape = vec![1, 6, 8]),
        false,
        &["tensor output_shape", "4 positive sizes"],
    );
    refused(
        &with(&|s| s.output_shape[1] = -6),
        false,
        &["tensor output_shape", "4 positive sizes"],
    );
    refused(
        &with(&|s| s.output_shape_type = INT8),
        false,
        &["tensor output_shape", "not a vector of int32"],
    );
    refused(
        &with(&|s| s.output_shape_constant = false),
        true,
        &["output shape must be constant"],
    );
    refused(
        &with(&|s| {
            s.output_shape[3] = 6;
            s.output[3] = 6;
        }),
        false,
        &["tensor output_shape", "channels", "tensor w"],
    );
    refused(
        &with(&|s| {
            s.output_shape[0] = 2;
            s.output[0] = 2;
        }),
        false,
        &["tensor output_shape", "batch"],
    );
    refused(
        &with(&|s| s.weights[3] = 3),
        false,
        &["tensor w", "depth 3", "tensor x"],
    );
    refused(
        &with(&|s| s.input = vec![1, 3, 4]),
        false,
        &["tensor x", "rank 4"],
    );
    refused(
        &with(&|s| s.zero_points[1] = 3),
        false,
        &["tensor w", "zero point"],
    );
    refused(
        &with(&|s| {
            s.axis = 3;
            s.scales = vec![0.01; 4];
            s.zero_points = vec![0; 4];
            s.bias = None;
        }),
        false,
        &["tensor w", "along axis"],
    );
    refused(
        &with(&|s| s.bias.as_mut().unwrap().1 = 4),
        false,
        &["tensor b", "one per output channel"],
    );
    refused(
        &with(&|s| s.bias.as_mut().unwrap().2 = 2),
        false,
        &["tensor b", "zero points"],
    );
    refused(
        &with(&|s| s.bias.as_mut().unwrap().0 = INT8),
        true,
        &["INT32,INT8,INT8,INT8->INT8"],
    );
    // int16x8 TRANSPOSE_CONV is not built: an unsupported type.
    refused(&with(&|s| s.input_type = INT16), true, &["INT16"]);
    refused(&with(&|s| s.activation = 4), true, &["fused activation"]);
    refused(&with(&|s| s.inputs = 2), false, &["has 2 inputs"]);
    // Without a bias (3 inputs) the layer loads.
    assert!(with(&|s| s.inputs = 3)
        .load(options(Rounding::Single, Method::FixedPoint))
        .is_ok());
}
