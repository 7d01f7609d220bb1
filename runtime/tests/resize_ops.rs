//! RESIZE_NEAREST_NEIGHBOR and RESIZE_BILINEAR in the interpreter: every
//! resize case of `models/ops` against each kernel path's references (the
//! reference kernels: LiteRT's and TensorFlow 2.19's; the aarch64
//! optimized builtin kernels; the XNNPACK delegate) with the options that
//! reproduce it, on every backend here; TFLite's `Prepare` rules on models
//! built here, each an error naming the operator.

mod tflite_common;

use qneon::Method;
use qneon_runtime::interp::{Interpreter, Options, Rounding, TfliteKernels};
use qneon_runtime::Error;
use tflite_common::flat::{Field::*, Table};
use tflite_common::*;

/// The options that reproduce a reference's bytes.
fn reference_options(reference: &str) -> Options {
    let (rounding, kernels) = match reference {
        "litert_ref" => (Rounding::Single, TfliteKernels::Reference),
        "tf219_ref" => (Rounding::Double, TfliteKernels::Reference),
        "litert_aarch64_builtin" => (Rounding::Single, TfliteKernels::Optimized),
        "litert_xnnpack" => (Rounding::Single, TfliteKernels::Xnnpack),
        other => panic!("unknown reference {other}"),
    };
    Options {
        kernels,
        ..options(rounding, Method::FixedPoint)
    }
}

/// The resize cases, each run with the aarch64 builtin kernels' outputs
/// added beside the references generated with it.
fn resize_cases() -> Vec<serde_json::Value> {
    let aarch64 = manifest("litert_aarch64_builtin/manifest.json");
    let manifest = manifest("ops/manifest.json");
    let mut cases: Vec<serde_json::Value> = manifest["cases"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["name"].as_str().unwrap().starts_with("resize_"))
        .cloned()
        .collect();
    for case in &mut cases {
        let name = case["name"].as_str().unwrap().to_string();
        for run in case["runs"].as_array_mut().unwrap() {
            let files = aarch64["ops"]["cases"][&name][run["name"].as_str().unwrap()].clone();
            assert!(!files.is_null(), "{name}: no LiteRT aarch64 outputs");
            for (output, refs) in run["outputs"].as_object_mut().unwrap() {
                refs["litert_aarch64_builtin"] = files[output.as_str()].clone();
            }
        }
    }
    cases
}

/// Our output of `case`'s `run` under `options`.
fn ours(case: &serde_json::Value, run: &serde_json::Value, options: Options) -> Vec<u8> {
    let name = case["name"].as_str().unwrap();
    let bytes = read_model(case["model"].as_str().unwrap());
    let mut interpreter =
        Interpreter::new(bytes.as_bytes(), options).unwrap_or_else(|e| panic!("{name}: {e}"));
    let results = run_case(&mut interpreter, &case["tensors"], run);
    assert_eq!(results.len(), 1);
    results.into_iter().next().unwrap().1
}

#[test]
fn resize_models_equal_every_kernel_path_on_every_backend() {
    let cases = resize_cases();
    // 9 shapes per op, 5 uint8 ones, and the nearest-neighbour downscale
    // where LiteRT's two kernels part (models/gen/ops.py, resize_cases()).
    assert_eq!(cases.len(), 24);
    let references = [
        "litert_ref",
        "tf219_ref",
        "litert_aarch64_builtin",
        "litert_xnnpack",
    ];
    let mut compared = 0;
    for case in &cases {
        let name = case["name"].as_str().unwrap();
        for run in case["runs"].as_array().unwrap() {
            let refs = &run["outputs"]["y"];
            for reference in references {
                let expected = npy(refs[reference].as_str().unwrap());
                for backend in qneon::Backend::available() {
                    let options = Options {
                        backend,
                        ..reference_options(reference)
                    };
                    let got = ours(case, run, options);
                    let differing = got
                        .iter()
                        .zip(&expected.data)
                        .filter(|(a, b)| a != b)
                        .count();
                    assert_eq!(got.len(), expected.data.len(), "{name}");
                    assert_eq!(
                        differing,
                        0,
                        "{name} {} vs {reference} ({}): {differing} of {} bytes differ",
                        run["name"],
                        backend.name(),
                        got.len()
                    );
                    compared += 1;
                }
            }
        }
    }
    // 24 cases x 2 runs x 4 references x the backends.
    assert_eq!(compared, 192 * qneon::Backend::available().count());
}

/// The paths really differ where the tests above say they do, so a case
/// mapped to the wrong arithmetic would fail there: the nearest-neighbour
/// downscale 26 -> 22 (the reference's `f32` index against the optimized
/// Q16 one) and the bilinear upsampling (XNNPACK's Q11 against TFLite's
/// Q10).
#[test]
fn resize_paths_differ_where_their_arithmetic_does() {
    let cases = resize_cases();
    let case = |name: &str| cases.iter().find(|c| c["name"] == name).unwrap();
    let run = |name: &str| &case(name)["runs"][0];
    let refs = |name: &str, reference: &str| {
        npy(run(name)["outputs"]["y"][reference].as_str().unwrap()).data
    };
    let down = "resize_nearest_down_26_to_22";
    assert_ne!(
        refs(down, "litert_ref"),
        refs(down, "litert_aarch64_builtin")
    );
    let ours_reference = ours(case(down), run(down), reference_options("litert_ref"));
    let ours_optimized = ours(
        case(down),
        run(down),
        reference_options("litert_aarch64_builtin"),
    );
    // Rows and columns 11 and 22 - 11 - ... : a whole row and column of
    // pixels move.
    let differing = ours_reference
        .iter()
        .zip(&ours_optimized)
        .filter(|(a, b)| a != b)
        .count();
    assert!(differing > 0, "{down}: our two paths agree");
    for name in ["resize_bilinear_2x", "resize_bilinear_2x_half_pixel"] {
        assert_ne!(
            refs(name, "litert_ref"),
            refs(name, "litert_xnnpack"),
            "{name}"
        );
        let q10 = ours(case(name), run(name), reference_options("litert_ref"));
        let q11 = ours(case(name), run(name), reference_options("litert_xnnpack"));
        assert_ne!(q10, q11, "{name}: our Q10 and Q11 agree");
    }
}

const RESIZE_BILINEAR: i32 = 23;
const RESIZE_NEAREST_NEIGHBOR: i32 = 97;
const INT8: u8 = 9;
const UINT8: u8 = 3;
const INT32: u8 = 2;

/// One resize built here: an 8-bit input, a size tensor (constant unless
/// `dynamic`), the options, an output.
struct OneResize {
    code: i32,
    dtype: u8,
    input: Vec<i32>,
    output: Vec<i32>,
    size: Vec<i32>,
    size_dtype: u8,
    dynamic: bool,
    align_corners: bool,
    half_pixel_centers: bool,
    output_scale: f32,
}

impl OneResize {
    fn new(code: i32, input: &[i32], size: &[i32], output: &[i32]) -> OneResize {
        OneResize {
            code,
            dtype: INT8,
            input: input.to_vec(),
            output: output.to_vec(),
            size: size.to_vec(),
            size_dtype: INT32,
            dynamic: false,
            align_corners: false,
            half_pixel_centers: false,
            output_scale: 0.5,
        }
    }

    fn model(&self) -> Vec<u8> {
        let quantization = |scale: f32| Table(vec![(2, F32s(vec![scale])), (3, I64s(vec![3]))]);
        let tensor = |name: &str, shape: &[i32], dtype: u8, buffer: u32, scale: Option<f32>| {
            let mut fields = vec![
                (0, I32s(shape.to_vec())),
                (1, U8(dtype)),
                (2, U32(buffer)),
                (3, Str(name.to_string())),
            ];
            if let Some(scale) = scale {
                fields.push((4, flat::Field::Table(quantization(scale))));
            }
            Table(fields)
        };
        let size_len = self.size.len() as i32;
        let tensors = vec![
            tensor("x", &self.input, self.dtype, 0, Some(0.5)),
            tensor("y", &self.output, self.dtype, 0, Some(self.output_scale)),
            tensor(
                "size",
                &[size_len],
                self.size_dtype,
                if self.dynamic { 0 } else { 1 },
                None,
            ),
        ];
        let bytes = if self.size_dtype == INT32 {
            self.size.iter().flat_map(|v| v.to_le_bytes()).collect()
        } else {
            self.size.iter().map(|&v| v as u8).collect()
        };
        let buffers = vec![Table(vec![]), Table(vec![(0, Bytes(bytes))])];
        // ResizeBilinearOptions (union type 15): align_corners is field 2,
        // half_pixel_centers 3; ResizeNearestNeighborOptions (74): 0 and 1.
        let (options_type, first) = if self.code == RESIZE_BILINEAR {
            (15, 2)
        } else {
            (74, 0)
        };
        let options = Table(vec![
            (first, Bool(self.align_corners)),
            (first + 1, Bool(self.half_pixel_centers)),
        ]);
        let inputs = vec![0, 2];
        // A dynamic size is a graph input: its values come at run time.
        let graph_inputs = if self.dynamic { vec![0, 2] } else { vec![0] };
        let model = Table(vec![
            (0, U32(3)),
            (
                1,
                Tables(vec![Table(vec![
                    (0, U8(self.code.min(127) as u8)),
                    (2, I32(1)),
                    (3, I32(self.code)),
                ])]),
            ),
            (
                2,
                Tables(vec![Table(vec![
                    (0, Tables(tensors)),
                    (1, I32s(graph_inputs)),
                    (2, I32s(vec![1])),
                    (
                        3,
                        Tables(vec![Table(vec![
                            (0, U32(0)),
                            (1, I32s(inputs)),
                            (2, I32s(vec![1])),
                            (3, U8(options_type)),
                            (4, flat::Field::Table(options)),
                        ])]),
                    ),
                    (4, Str("main".to_string())),
                ])]),
            ),
            (4, Tables(buffers)),
        ]);
        flat::file(&model)
    }

    fn file(&self) -> qneon_tflite::ModelBytes {
        qneon_tflite::ModelBytes::copy_from(&self.model())
    }

    fn load(&self, options: Options) -> Result<(), Error> {
        Interpreter::new(self.file().as_bytes(), options).map(|_| ())
    }

    /// The output on the input bytes `i * 37 mod 256`, and that input.
    fn run(&self, options: Options) -> (Vec<u8>, Vec<u8>) {
        let file = self.file();
        let mut interpreter = Interpreter::new(file.as_bytes(), options).unwrap();
        let n = interpreter.inputs()[0].bytes;
        let x: Vec<u8> = (0..n).map(|i| (i * 37 % 256) as u8).collect();
        interpreter.set_input(0, &x).unwrap();
        interpreter.invoke().unwrap();
        (x, interpreter.output(0).unwrap().to_vec())
    }
}

fn name(code: i32) -> &'static str {
    if code == RESIZE_BILINEAR {
        "RESIZE_BILINEAR"
    } else {
        "RESIZE_NEAREST_NEIGHBOR"
    }
}

/// `op` must be refused naming its operator, the message holding every
/// one of `words`.
fn refused(op: &OneResize, words: &[&str]) {
    let expected = name(op.code);
    match op.load(reference_options("litert_ref")) {
        Err(e @ (Error::InvalidOp { .. } | Error::UnsupportedOp { .. })) => {
            let text = e.to_string();
            let (Error::InvalidOp { op, .. } | Error::UnsupportedOp { op, .. }) = &e else {
                unreachable!()
            };
            assert_eq!(op, expected, "{text}");
            for w in words {
                assert!(text.contains(w), "{text} lacks {w:?}");
            }
        }
        Err(other) => panic!("{expected} {words:?}: {other}"),
        Ok(_) => panic!("{expected} {words:?}: loaded"),
    }
}

#[test]
fn valid_built_models_load_and_run() {
    for code in [RESIZE_BILINEAR, RESIZE_NEAREST_NEIGHBOR] {
        let op = OneResize::new(code, &[1, 3, 4, 5], &[6, 8], &[1, 6, 8, 5]);
        let file = op.file();
        for reference in ["litert_ref", "litert_aarch64_builtin", "litert_xnnpack"] {
            let mut interpreter =
                Interpreter::new(file.as_bytes(), reference_options(reference)).unwrap();
            interpreter.set_input(0, &[7u8; 60]).unwrap();
            interpreter.invoke().unwrap();
            // A constant image stays constant under every interpolation.
            assert_eq!(interpreter.output(0).unwrap(), &[7u8; 240][..]);
        }
    }
}

#[test]
fn broken_prepare_rules_are_errors_naming_the_op() {
    for code in [RESIZE_BILINEAR, RESIZE_NEAREST_NEIGHBOR] {
        let ok = || OneResize::new(code, &[1, 3, 4, 5], &[6, 8], &[1, 6, 8, 5]);
        // The output shape must be the one `size` gives.
        refused(
            &OneResize::new(code, &[1, 3, 4, 5], &[6, 8], &[1, 6, 7, 5]),
            &["output shape", "TFLite computes"],
        );
        // Zero and negative sizes.
        refused(
            &OneResize::new(code, &[1, 3, 4, 5], &[0, 8], &[1, 0, 8, 5]),
            &["at least 1"],
        );
        refused(
            &OneResize::new(code, &[1, 3, 4, 5], &[6, -8], &[1, 6, 8, 5]),
            &["at least 1"],
        );
        // The input must be NHWC.
        refused(
            &OneResize::new(code, &[3, 4, 5], &[6, 8], &[1, 6, 8, 5]),
            &["not rank 4"],
        );
        // The size tensor: int32 of 2 elements, constant.
        refused(
            &OneResize::new(code, &[1, 3, 4, 5], &[6, 8, 1], &[1, 6, 8, 5]),
            &["size tensor", "shape [2]"],
        );
        refused(
            &OneResize {
                size_dtype: INT8,
                ..ok()
            },
            &["size tensor", "int32"],
        );
        refused(
            &OneResize {
                dynamic: true,
                ..ok()
            },
            &["dynamic size"],
        );
        // Input and output quantized alike.
        refused(
            &OneResize {
                output_scale: 0.25,
                ..ok()
            },
            &["quantization", "equal"],
        );
    }
    // Bilinear refuses align_corners with half_pixel_centers; nearest
    // neighbour (TFLite checks nothing there) computes its formula.
    refused(
        &OneResize {
            align_corners: true,
            half_pixel_centers: true,
            ..OneResize::new(RESIZE_BILINEAR, &[1, 3, 4, 5], &[6, 8], &[1, 6, 8, 5])
        },
        &["half_pixel_centers with align_corners"],
    );
    let both = OneResize {
        align_corners: true,
        half_pixel_centers: true,
        ..OneResize::new(
            RESIZE_NEAREST_NEIGHBOR,
            &[1, 3, 4, 5],
            &[6, 8],
            &[1, 6, 8, 5],
        )
    };
    assert!(both.load(reference_options("litert_ref")).is_ok());
    // Upscaling so far that TFLite's Q10 coordinates leave the input.
    refused(
        &OneResize::new(RESIZE_BILINEAR, &[1, 1, 1, 2], &[2000, 1], &[1, 2000, 1, 2]),
        &["upscaling factor"],
    );
}

/// uint8 models built here (beside the generated `resize_*_uint8_*`
/// cases): nearest neighbour copies whole pixels; bilinear takes TFLite's
/// reference and optimized `f32` kernels and XNNPACK's Q11 one; the
/// optimized kernel's 8x half-pixel path is refused by name.
#[test]
fn uint8_models_take_each_paths_kernel() {
    let run = |op: &OneResize, reference: &str| op.run(reference_options(reference)).1;
    let bilinear = OneResize {
        dtype: UINT8,
        half_pixel_centers: true,
        ..OneResize::new(RESIZE_BILINEAR, &[1, 7, 5, 17], &[12, 9], &[1, 12, 9, 17])
    };
    let reference = run(&bilinear, "litert_ref");
    let optimized = run(&bilinear, "litert_aarch64_builtin");
    let xnnpack = run(&bilinear, "litert_xnnpack");
    assert_eq!(reference.len(), 12 * 9 * 17);
    // The f32 kernels agree but for the weights' rounding; XNNPACK's Q11
    // is its own.
    assert_ne!(reference, xnnpack);
    let near = |a: &[u8], b: &[u8]| a.iter().zip(b).all(|(x, y)| x.abs_diff(*y) <= 1);
    assert!(near(&reference, &optimized) && near(&reference, &xnnpack));
    let eight = OneResize {
        dtype: UINT8,
        half_pixel_centers: true,
        ..OneResize::new(RESIZE_BILINEAR, &[1, 2, 2, 8], &[16, 16], &[1, 16, 16, 8])
    };
    match eight.load(reference_options("litert_aarch64_builtin")) {
        Err(Error::UnsupportedOp { op, missing, .. }) => {
            assert_eq!(op, "RESIZE_BILINEAR");
            assert!(missing.contains("8x"), "{missing}");
        }
        other => panic!("uint8 8x bilinear: {other:?}"),
    }
    assert!(eight.load(reference_options("litert_ref")).is_ok());
    let nearest = OneResize {
        dtype: UINT8,
        ..OneResize::new(
            RESIZE_NEAREST_NEIGHBOR,
            &[1, 3, 4, 5],
            &[6, 8],
            &[1, 6, 8, 5],
        )
    };
    let out = run(&nearest, "litert_aarch64_builtin");
    // 2x in both axes: output pixel (y, x) is input pixel (y / 2, x / 2).
    for y in 0..6 {
        for x in 0..8 {
            let source = (y / 2 * 4 + x / 2) * 5;
            for c in 0..5 {
                assert_eq!(out[(y * 8 + x) * 5 + c], ((source + c) * 37 % 256) as u8);
            }
        }
    }
}
