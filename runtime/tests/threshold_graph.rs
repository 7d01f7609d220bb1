//! `Options::threshold` inside real graphs: the class-score LOGISTICs of
//! the YOLOv8n-shaped detector and the SOFTMAX outputs of the DS-CNN
//! keyword spotter, person_detect and micro_speech run fused with the
//! threshold, and their hits are exactly the dense outputs of a run without
//! threshold, filtered: for several thresholds (0, 1, a middle value, a
//! value exactly on a code boundary and its neighbouring floats), every
//! committed input set, every kernel path, scalar and the best backend.

mod tflite_common;

use qneon::{Backend, Method};
use qneon_runtime::interp::{Interpreter, Options, Rounding, TfliteKernels};
use qneon_runtime::Error;
use tflite_common::*;

/// (softmax method, kernels): each LiteRT path's settings.
const PATHS: &[(Method, TfliteKernels)] = &[
    (Method::FixedPoint, TfliteKernels::Reference),
    (Method::Lut, TfliteKernels::Optimized),
    (Method::Lut, TfliteKernels::Xnnpack),
];

/// (model, its input sets, the op of its fused outputs, how many).
fn models() -> Vec<(String, Vec<Vec<String>>, &'static str, usize)> {
    let mut all = Vec::new();
    for (manifest_path, name, op, fused) in [
        (
            "nets/refs/manifest.json",
            "nets/yolov8n_shaped_96.tflite",
            "LOGISTIC",
            1,
        ),
        (
            "nets/refs/manifest.json",
            "nets/ds_cnn_kws.tflite",
            "SOFTMAX",
            1,
        ),
        (
            "tflite_micro/refs/manifest.json",
            "tflite_micro/person_detect.tflite",
            "SOFTMAX",
            1,
        ),
        (
            "tflite_micro/refs/manifest.json",
            "tflite_micro/micro_speech_quantized.tflite",
            "SOFTMAX",
            1,
        ),
    ] {
        let m = manifest(manifest_path);
        let entry = m["models"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["model"] == name)
            .unwrap_or_else(|| panic!("{name} not in {manifest_path}"));
        let runs = entry["runs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                r["inputs"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|f| f.as_str().unwrap().to_string())
                    .collect()
            })
            .collect();
        all.push((name.to_string(), runs, op, fused));
    }
    all
}

fn options(method: Method, kernels: TfliteKernels, backend: Backend, t: Option<f32>) -> Options {
    Options {
        rounding: Rounding::Single,
        softmax_method: method,
        kernels,
        backend,
        memory_budget: Some(1 << 30),
        threshold: t,
        threads: 1,
    }
}

fn backends() -> Vec<Backend> {
    let mut all = vec![Backend::Scalar];
    if Backend::best() != Backend::Scalar {
        all.push(Backend::best());
    }
    all
}

/// The passing rule of `Options::threshold`, on the dense codes: `(q -
/// zero_point) * scale >= t` in `f64`.
fn filter(codes: &[i32], scale: f32, zero_point: i64, t: f32) -> Vec<(usize, i32)> {
    codes
        .iter()
        .enumerate()
        .filter(|&(_, &q)| (q as i64 - zero_point) as f64 * scale as f64 >= t as f64)
        .map(|(i, &q)| (i, q))
        .collect()
}

fn codes(dtype: qneon_tflite::TensorType, bytes: &[u8]) -> Vec<i32> {
    use qneon_tflite::TensorType;
    match dtype {
        TensorType::Int8 => bytes.iter().map(|&b| b as i8 as i32).collect(),
        TensorType::Uint8 => bytes.iter().map(|&b| b as i32).collect(),
        TensorType::Int16 => bytes
            .chunks_exact(2)
            .map(|c| i16::from_le_bytes([c[0], c[1]]) as i32)
            .collect(),
        other => panic!("output type {other:?}"),
    }
}

/// Thresholds to try on an output: 0, 1, a middle value, and a value on a
/// code boundary of the output (the median code's value rounded to `f32`)
/// with the floats either side of it.
fn thresholds(codes: &[i32], scale: f32, zero_point: i64) -> Vec<f32> {
    let mut sorted = codes.to_vec();
    sorted.sort();
    let median = sorted[sorted.len() / 2];
    let on = ((median as i64 - zero_point) as f64 * scale as f64) as f32;
    let mut all = vec![0.0, 0.5, 1.0];
    if on > 0.0 && on < 1.0 {
        all.extend([
            on,
            f32::from_bits(on.to_bits() - 1),
            f32::from_bits(on.to_bits() + 1),
        ]);
    }
    all
}

#[test]
fn fused_hits_equal_the_filtered_dense_outputs() {
    let mut checked = 0;
    let mut nontrivial = 0;
    for (model, runs, op, fused_count) in models() {
        let bytes = read_model(&model);
        for &(method, kernels) in PATHS {
            for backend in backends() {
                let dense_options = options(method, kernels, backend, None);
                let mut dense = Interpreter::new(bytes.as_bytes(), dense_options)
                    .unwrap_or_else(|e| panic!("{model}: {e}"));
                // The dense outputs of every run.
                let mut dense_outputs = Vec::new();
                for inputs in &runs {
                    for (p, file) in inputs.iter().enumerate() {
                        dense.set_input(p, &npy(file).data).unwrap();
                    }
                    dense.invoke().unwrap();
                    let outs: Vec<Vec<u8>> = (0..dense.outputs().len())
                        .map(|p| dense.output(p).unwrap().to_vec())
                        .collect();
                    dense_outputs.push(outs);
                }
                // Thresholds from the first output of the first run.
                let first = dense.outputs()[0].clone();
                let (scale, zp) = first.per_tensor().unwrap();
                let ts = thresholds(&codes(first.dtype, &dense_outputs[0][0]), scale, zp);
                for t in ts {
                    let fused_options = options(method, kernels, backend, Some(t));
                    let mut fused = Interpreter::new(bytes.as_bytes(), fused_options)
                        .unwrap_or_else(|e| panic!("{model} T={t}: {e}"));
                    let fused_nodes: Vec<_> = fused
                        .nodes()
                        .filter(|n| n.fused.is_some())
                        .cloned()
                        .collect();
                    assert_eq!(fused_nodes.len(), fused_count, "{model}: fused nodes");
                    for n in &fused_nodes {
                        assert_eq!(n.op, op, "{model}");
                        let what = n.fused.as_deref().unwrap();
                        let expected = if kernels == TfliteKernels::Xnnpack && op == "LOGISTIC" {
                            "run then filter"
                        } else if op == "LOGISTIC" {
                            "ThresholdedLogistic"
                        } else {
                            "ThresholdedSoftmax"
                        };
                        assert!(what.starts_with(expected), "{model} {kernels:?}: {what}");
                        assert!(what.contains(&format!("T={t}")), "{what}");
                    }
                    for (run, inputs) in runs.iter().enumerate() {
                        for (p, file) in inputs.iter().enumerate() {
                            fused.set_input(p, &npy(file).data).unwrap();
                        }
                        fused.invoke().unwrap();
                        let infos: Vec<_> = fused.outputs().into_iter().cloned().collect();
                        let mut fused_seen = 0;
                        for (p, info) in infos.iter().enumerate() {
                            let dense_bytes = &dense_outputs[run][p];
                            let Some(hits) = fused.hits(p) else {
                                assert_eq!(
                                    fused.output(p),
                                    Some(&dense_bytes[..]),
                                    "{model}: unfused output {p}"
                                );
                                continue;
                            };
                            fused_seen += 1;
                            assert_eq!(fused.output(p), None, "{model}: fused output {p}");
                            let (scale, zp) = info.per_tensor().unwrap();
                            let want = filter(&codes(info.dtype, dense_bytes), scale, zp, t);
                            let got: Vec<(usize, i32)> =
                                hits.iter().map(|h| (h.index, h.code)).collect();
                            assert_eq!(
                                got, want,
                                "{model} run {run} output {p} {method:?} {kernels:?} \
                                 {backend:?} T={t}"
                            );
                            for h in hits.iter() {
                                let value = (h.code as i64 - zp) as f32 * scale;
                                assert_eq!(h.value, value);
                            }
                            if !want.is_empty() && want.len() < dense_bytes.len() {
                                nontrivial += 1;
                            }
                            checked += 1;
                        }
                        assert_eq!(fused_seen, fused_count, "{model}: fused outputs");
                    }
                }
            }
        }
    }
    assert!(checked > 0);
    // Some thresholds keep part of an output (neither all nor none).
    assert!(nontrivial > 0);
}

#[test]
fn threshold_zero_keeps_everything_and_one_nothing_on_yolo() {
    let bytes = read_model("nets/yolov8n_shaped_96.tflite");
    let input = npy("nets/refs/yolov8n_shaped_96/run0.input.0.npy").data;
    for (t, all) in [(0.0, true), (1.0, false)] {
        let o = options(
            Method::FixedPoint,
            TfliteKernels::Reference,
            Backend::best(),
            Some(t),
        );
        let mut interpreter = Interpreter::new(bytes.as_bytes(), o).unwrap();
        interpreter.set_input(0, &input).unwrap();
        interpreter.invoke().unwrap();
        for p in 0..interpreter.outputs().len() {
            if let Some(hits) = interpreter.hits(p) {
                let len: usize = interpreter.outputs()[p].shape.iter().product();
                assert_eq!(hits.len(), if all { len } else { 0 }, "T={t} output {p}");
            }
        }
    }
}

#[test]
fn without_threshold_nothing_is_fused() {
    let bytes = read_model("nets/yolov8n_shaped_96.tflite");
    let o = options(Method::Lut, TfliteKernels::Optimized, Backend::best(), None);
    let interpreter = Interpreter::new(bytes.as_bytes(), o).unwrap();
    assert!(interpreter.nodes().all(|n| n.fused.is_none()));
    assert!((0..interpreter.outputs().len()).all(|p| interpreter.hits(p).is_none()));
}

#[test]
fn inspect_shows_the_fused_nodes() {
    let bytes = read_model("nets/ds_cnn_kws.tflite");
    let o = options(
        Method::Lut,
        TfliteKernels::Optimized,
        Backend::best(),
        Some(0.5),
    );
    let analysis = Interpreter::analyze(bytes.as_bytes(), o).unwrap();
    let fused: Vec<_> = analysis
        .nodes
        .iter()
        .filter_map(|n| n.fused.as_deref())
        .collect();
    assert_eq!(fused, ["ThresholdedSoftmax (T=0.5, method lut)"]);
}

#[test]
fn a_threshold_that_is_not_a_probability_is_an_error_naming_the_option() {
    let bytes = read_model("nets/ds_cnn_kws.tflite");
    for t in [
        f32::NAN,
        -0.25,
        -f32::MIN_POSITIVE,
        1.0001,
        2.0,
        f32::INFINITY,
    ] {
        let o = options(
            Method::Lut,
            TfliteKernels::Optimized,
            Backend::Scalar,
            Some(t),
        );
        let err = Interpreter::new(bytes.as_bytes(), o).unwrap_err();
        assert!(
            matches!(
                err,
                Error::InvalidOption {
                    option: "threshold",
                    ..
                }
            ),
            "T={t}: {err:?}"
        );
        assert!(err.to_string().contains("threshold"), "{err}");
        let err = Interpreter::analyze(bytes.as_bytes(), o).unwrap_err();
        assert!(matches!(
            err,
            Error::InvalidOption {
                option: "threshold",
                ..
            }
        ));
    }
}
