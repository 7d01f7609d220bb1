//! The four int8 models TensorFlow Lite Micro publishes (`models/tflite_micro/`,
//! committed byte for byte): the reader must load what TFLite Micro loads.

use super::fixtures::assert_invariants;
use crate::{BuiltinOp, Model};

fn read(name: &str) -> Vec<u8> {
    let path = format!(
        "{}/../models/tflite_micro/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read(&path).unwrap_or_else(|error| panic!("{path}: {error}"))
}

/// Parses a file, checks the reader's promises, and returns the builtin
/// operators of its main subgraph in execution order.
fn parse_and_check(bytes: &[u8]) -> (Model<'_>, Vec<BuiltinOp>) {
    let model = Model::parse(bytes).unwrap();
    assert_invariants(&model);
    let ops = model
        .main_subgraph()
        .operators()
        .iter()
        .map(|operator| operator.builtin().unwrap())
        .collect();
    (model, ops)
}

#[test]
fn person_detect_loads_with_its_bias_quantization() {
    let bytes = read("person_detect.tflite");
    let (model, ops) = parse_and_check(&bytes);
    assert_eq!(ops.len(), 31);
    for op in [
        BuiltinOp::CONV_2D,
        BuiltinOp::DEPTHWISE_CONV_2D,
        BuiltinOp::AVERAGE_POOL_2D,
    ] {
        assert!(ops.contains(&op), "{op} missing from {ops:?}");
    }
    assert_eq!(ops.last(), Some(&BuiltinOp::SOFTMAX));
    // The 28 int32 biases carry one scale per output channel (input scale
    // times filter scale); 14 of them (written with the filters'
    // quantized_dimension 3 on a rank-1 tensor) were refused before. A
    // bias has one axis, the one its scales follow.
    let biases: Vec<_> = model
        .main_subgraph()
        .tensors()
        .iter()
        .filter(|tensor| tensor.name().ends_with("_bias"))
        .collect();
    assert_eq!(biases.len(), 28);
    for bias in biases {
        let quantization = bias.quantization().unwrap();
        assert_eq!(quantization.axis(), Some(0), "{}", bias.name());
        assert_eq!(quantization.scales().len(), bias.shape()[0]);
        assert_eq!(quantization.zero_points().len(), bias.shape()[0]);
        assert!(bias.is_constant());
        assert_eq!(bias.dtype(), crate::TensorType::Int32);
        let first = quantization.scales()[0];
        assert!(quantization.scales().iter().any(|&scale| scale != first));
    }
}

#[test]
fn keyword_scrambled_loads_with_its_svdf_state() {
    let bytes = read("keyword_scrambled.tflite");
    let (model, ops) = parse_and_check(&bytes);
    assert!(ops.contains(&BuiltinOp::SVDF));
    assert!(ops.contains(&BuiltinOp::FULLY_CONNECTED));
    // SVDF keeps its activation state in a variable tensor without data.
    let variables: Vec<_> = model
        .main_subgraph()
        .tensors()
        .iter()
        .filter(|tensor| tensor.is_variable())
        .collect();
    assert!(!variables.is_empty());
    for variable in variables {
        assert!(!variable.is_constant(), "{}", variable.name());
    }
}

#[test]
fn lstm_models_load_with_their_state() {
    for name in ["trained_lstm_int8.tflite", "dtln_noise_suppression.tflite"] {
        let bytes = read(name);
        let (model, ops) = parse_and_check(&bytes);
        assert!(
            ops.contains(&BuiltinOp::UNIDIRECTIONAL_SEQUENCE_LSTM),
            "{name}: {ops:?}"
        );
        let variables = model
            .main_subgraph()
            .tensors()
            .iter()
            .filter(|tensor| tensor.is_variable())
            .count();
        assert!(variables >= 2, "{name}: {variables} variable tensors");
    }
}
