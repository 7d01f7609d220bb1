//! The int8 models TensorFlow Lite Micro publishes (`models/tflite_micro/`,
//! committed byte for byte as published): every one loads as TFLite Micro
//! loads it, quirks included, and each operator either prepares or is
//! refused as an unsupported operator, never by a graph or format check.
//! The table below is what this runtime lacks for each model; an operator
//! that lands moves out of it, and a model with nothing left runs.

mod tflite_common;

use std::collections::BTreeSet;

use qneon::Method;
use qneon_runtime::interp::{Interpreter, Rounding};
use qneon_runtime::Error;
use tflite_common::*;

/// Each published model and the builtin ops it uses that qneon does not
/// prepare yet.
const PUBLISHED: &[(&str, &[&str])] = &[
    (
        "person_detect.tflite",
        &["AVERAGE_POOL_2D", "CONV_2D", "DEPTHWISE_CONV_2D"],
    ),
    (
        "mobilenet_v2_quantized_1x3x224x224.tflite",
        &["CONV_2D", "DEPTHWISE_CONV_2D", "MEAN"],
    ),
    ("micro_speech_quantized.tflite", &["DEPTHWISE_CONV_2D"]),
    // Its QUANTIZEs are int16 -> int8 and int16 -> int32, its SOFTMAX int8
    // -> int16 (TFLite Micro's kernels take them).
    ("keyword_scrambled.tflite", &["QUANTIZE", "SOFTMAX", "SVDF"]),
    (
        "trained_lstm_int8.tflite",
        &["UNIDIRECTIONAL_SEQUENCE_LSTM"],
    ),
    (
        "micro_speech_lstm.tflite",
        &["UNIDIRECTIONAL_SEQUENCE_LSTM"],
    ),
    (
        "dtln_noise_suppression.tflite",
        &["UNIDIRECTIONAL_SEQUENCE_LSTM"],
    ),
];

#[test]
fn published_models_are_refused_only_by_their_unsupported_operators() {
    let on_disk: BTreeSet<String> = std::fs::read_dir(models_dir().join("tflite_micro"))
        .expect("models/tflite_micro")
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.ends_with(".tflite"))
        .collect();
    let listed: BTreeSet<String> = PUBLISHED.iter().map(|(f, _)| f.to_string()).collect();
    assert_eq!(on_disk, listed, "every published model is in the table");

    let options = options(Rounding::Single, Method::FixedPoint);
    for &(file, missing) in PUBLISHED {
        let bytes = read_model(&format!("tflite_micro/{file}"));
        // Every operator gets a report: no graph check stands before them.
        let analysis = Interpreter::analyze(bytes.as_bytes(), options)
            .unwrap_or_else(|e| panic!("{file}: {e}"));
        let mut refused = BTreeSet::new();
        for report in &analysis.reports {
            match &report.status {
                Ok(_) => {}
                Err(Error::UnsupportedOp { .. }) => {
                    refused.insert(report.op.as_str());
                }
                Err(e) => panic!("{file}: operator {}: {e}", report.op),
            }
        }
        let expected: BTreeSet<&str> = missing.iter().copied().collect();
        assert_eq!(refused, expected, "{file}: the unsupported operators");

        // Loading names the first unsupported operator, in TFLite's words.
        match Interpreter::new(bytes.as_bytes(), options) {
            Ok(_) => assert!(missing.is_empty(), "{file} loaded"),
            Err(e @ Error::UnsupportedOp { .. }) => {
                let Error::UnsupportedOp { op, index, .. } = &e else {
                    unreachable!()
                };
                let first = analysis
                    .reports
                    .iter()
                    .position(|r| matches!(r.status, Err(Error::UnsupportedOp { .. })))
                    .unwrap();
                assert_eq!(*index, first, "{file}: {e}");
                assert!(expected.contains(op.as_str()), "{file}: {e}");
                assert!(
                    e.to_string()
                        .contains(&format!("operator {index} ({op}) is not supported")),
                    "{file}: {e}"
                );
            }
            Err(e) => panic!("{file}: {e}"),
        }
    }
}
