//! Small models built with the generated FlatBuffers writer, and an
//! independent check of everything `Model::parse` promises.

use crate::generated::tflite as fb;
use crate::{Model, OpKind, TensorType};

/// Serializes `model` without a file identifier: root offset at byte 0.
pub fn encode_without_identifier(model: &fb::Model) -> Vec<u8> {
    planus::Builder::new().finish(model, None).to_vec()
}

/// Serializes `model` as a TFLite file: root offset, then `TFL3`.
///
/// planus 1.2's builder, asked for an identifier, writes it before the
/// root offset (bytes 0..4, offset in 4..8, counted from byte 4), which is
/// not the FlatBuffers layout; this puts the two in their places, keeping
/// every other byte (and so every alignment) as built.
pub fn encode(model: &fb::Model) -> Vec<u8> {
    let mut bytes = planus::Builder::new()
        .finish(model, Some(*b"TFL3"))
        .to_vec();
    assert_eq!(
        &bytes[..4],
        b"TFL3",
        "planus wrote the identifier where expected"
    );
    let root = 4 + u32::from_le_bytes(bytes[4..8].try_into().unwrap());
    bytes[..4].copy_from_slice(&root.to_le_bytes());
    bytes[4..8].copy_from_slice(b"TFL3");
    bytes
}

pub fn quantization(
    scales: &[f32],
    zero_points: &[i64],
    axis: i32,
) -> Option<Box<fb::QuantizationParameters>> {
    Some(Box::new(fb::QuantizationParameters {
        scale: Some(scales.to_vec()),
        zero_point: Some(zero_points.to_vec()),
        quantized_dimension: axis,
        ..Default::default()
    }))
}

pub fn tensor(name: &str, dtype: TensorType, shape: &[i32], buffer: u32) -> fb::Tensor {
    fb::Tensor {
        shape: Some(shape.to_vec()),
        type_: dtype.code(),
        buffer,
        name: Some(name.to_string()),
        ..Default::default()
    }
}

pub fn buffer(data: &[u8]) -> fb::Buffer {
    fb::Buffer {
        data: Some(data.to_vec()),
        ..Default::default()
    }
}

pub fn opcode(code: i32, version: i32) -> fb::OperatorCode {
    fb::OperatorCode {
        // As converters write it: the code itself when it fits int8, else
        // the placeholder 127.
        deprecated_builtin_code: code.min(127) as i8,
        custom_code: None,
        version,
        builtin_code: code,
    }
}

/// Weights of the fully connected layer: 3 outputs x 4 inputs, int8.
pub const WEIGHTS: [i8; 12] = [1, -2, 3, -4, 5, -6, 7, -8, 9, -10, 11, -127];
/// Bias of the fully connected layer: 3 int32.
pub const BIAS: [i32; 3] = [100, -200, 300_000];
/// Name of the metadata entry.
pub const METADATA_NAME: &str = "min_runtime_version";
/// Its contents.
pub const METADATA: &[u8] = b"1.14.0\0\0";

/// A two-operator int8 model: FULLY_CONNECTED (constant per-channel
/// weights and bias, fused RELU) then SOFTMAX.
///
/// Tensors: 0 input [1,4], 1 weights [3,4], 2 bias [3], 3 fc_out [1,3],
/// 4 probs [1,3]. Buffers: 0 empty, 1 weights, 2 bias, 3 metadata.
pub fn two_op_model() -> fb::Model {
    let weights: Vec<u8> = WEIGHTS.iter().map(|&w| w as u8).collect();
    let bias: Vec<u8> = BIAS.iter().flat_map(|b| b.to_le_bytes()).collect();
    let mut weights_tensor = tensor("weights", TensorType::Int8, &[3, 4], 1);
    weights_tensor.quantization = quantization(&[0.01, 0.02, 0.03], &[0, 0, 0], 0);
    let mut bias_tensor = tensor("bias", TensorType::Int32, &[3], 2);
    bias_tensor.quantization = quantization(&[0.005, 0.01, 0.015], &[0, 0, 0], 0);
    let mut input = tensor("input", TensorType::Int8, &[1, 4], 0);
    input.quantization = quantization(&[0.5], &[-1], 0);
    input.shape_signature = Some(vec![-1, 4]);
    let mut fc_out = tensor("fc_out", TensorType::Int8, &[1, 3], 0);
    fc_out.quantization = Some(Box::new(fb::QuantizationParameters {
        min: Some(vec![-32.0]),
        max: Some(vec![31.75]),
        scale: Some(vec![0.25]),
        zero_point: Some(vec![3]),
        ..Default::default()
    }));
    let mut probs = tensor("probs", TensorType::Int8, &[1, 3], 0);
    probs.quantization = quantization(&[1.0 / 256.0], &[-128], 0);

    fb::Model {
        version: 3,
        operator_codes: Some(vec![opcode(9, 4), opcode(25, 1)]),
        subgraphs: Some(vec![fb::SubGraph {
            tensors: Some(vec![input, weights_tensor, bias_tensor, fc_out, probs]),
            inputs: Some(vec![0]),
            outputs: Some(vec![4]),
            operators: Some(vec![
                fb::Operator {
                    opcode_index: 0,
                    inputs: Some(vec![0, 1, 2]),
                    outputs: Some(vec![3]),
                    builtin_options: Some(fb::BuiltinOptions::FullyConnectedOptions(Box::new(
                        fb::FullyConnectedOptions {
                            fused_activation_function: 1,
                            weights_format: 0,
                            keep_num_dims: false,
                            asymmetric_quantize_inputs: true,
                            ..Default::default()
                        },
                    ))),
                    ..Default::default()
                },
                fb::Operator {
                    opcode_index: 1,
                    inputs: Some(vec![3]),
                    outputs: Some(vec![4]),
                    builtin_options: Some(fb::BuiltinOptions::SoftmaxOptions(Box::new(
                        fb::SoftmaxOptions { beta: 1.0 },
                    ))),
                    ..Default::default()
                },
            ]),
            name: Some("main".to_string()),
            ..Default::default()
        }]),
        description: Some("qneon test model".to_string()),
        buffers: Some(vec![
            buffer(&[]),
            buffer(&weights),
            buffer(&bias),
            buffer(METADATA),
        ]),
        metadata_buffer: None,
        metadata: Some(vec![fb::Metadata {
            name: Some(METADATA_NAME.to_string()),
            buffer: 3,
        }]),
        ..Default::default()
    }
}

/// Checks, independently of the parser's code paths, every promise a
/// parsed model makes; a bit flip that parses must still keep them.
pub fn assert_invariants(model: &Model<'_>) {
    assert_eq!(model.version(), 3);
    assert!(!model.subgraphs().is_empty());
    let file = model.bytes().as_ptr_range();
    let inside = |data: &[u8]| {
        let range = data.as_ptr_range();
        data.is_empty() || (file.start <= range.start && range.end <= file.end)
    };
    for buffer in model.buffers() {
        assert!(inside(buffer));
    }
    for entry in model.metadata() {
        assert_eq!(entry.data, model.buffers()[entry.buffer]);
    }
    for code in model.operator_codes() {
        if let OpKind::Builtin(op) = code.op {
            assert_ne!(op, crate::BuiltinOp::CUSTOM);
        }
    }
    let mut non_constant = 0usize;
    for (subgraph_index, subgraph) in model.subgraphs().iter().enumerate() {
        assert_eq!(subgraph.index(), subgraph_index);
        let tensor_count = subgraph.tensors().len();
        for (index, tensor) in subgraph.tensors().iter().enumerate() {
            assert_eq!(tensor.index(), index);
            let count = tensor
                .shape()
                .iter()
                .try_fold(1usize, |count, &dim| count.checked_mul(dim))
                .expect("element count fits usize");
            assert_eq!(tensor.element_count(), count);
            let bits = tensor.dtype().element_bits();
            match bits {
                Some(bits) => {
                    let bytes = (count as u128 * u128::from(bits)).div_ceil(8);
                    assert_eq!(tensor.byte_size().map(|b| b as u128), Some(bytes));
                }
                None => assert_eq!(tensor.byte_size(), None),
            }
            assert!(tensor.buffer() < model.buffers().len());
            if let Some(data) = tensor.data() {
                assert!(!data.is_empty());
                assert!(inside(data));
                assert_eq!(data, model.buffers()[tensor.buffer()]);
                if !tensor.is_sparse() {
                    if let Some(bytes) = tensor.byte_size() {
                        assert_eq!(data.len(), bytes);
                    }
                }
            } else {
                let bytes = tensor.byte_size().unwrap_or(0);
                assert!(bytes <= crate::ParseOptions::default().max_tensor_bytes);
                non_constant = non_constant.saturating_add(bytes);
            }
            if let Some(signature) = tensor.shape_signature() {
                assert!(signature.iter().all(|&dim| dim >= -1));
            }
            if let Some(quantization) = tensor.quantization() {
                let scales = quantization.scales().len();
                assert!(scales >= 1);
                assert_eq!(quantization.zero_points().len(), scales);
                match quantization.axis() {
                    None => assert_eq!(scales, 1),
                    Some(axis) => {
                        assert!(scales > 1);
                        assert_eq!(tensor.shape()[axis], scales);
                    }
                }
            }
        }
        for &index in subgraph.inputs().iter().chain(subgraph.outputs()) {
            assert!(index < tensor_count);
        }
        for (index, operator) in subgraph.operators().iter().enumerate() {
            assert_eq!(operator.index(), index);
            let code = model.operator_codes()[operator.opcode_index()];
            assert_eq!(operator.op(), code.op);
            assert_eq!(operator.version(), code.version);
            for &tensor in operator.inputs().iter().chain(operator.outputs()).flatten() {
                assert!(tensor < tensor_count);
            }
            for &tensor in operator.intermediates() {
                assert!(tensor < tensor_count);
            }
            if let Some(custom) = operator.custom_options() {
                assert!(inside(custom));
            }
            if let Some(owner) = operator.options().owner() {
                assert_eq!(Some(owner), operator.builtin());
            }
        }
    }
    assert_eq!(model.non_constant_bytes(), non_constant);
    assert!(non_constant <= crate::ParseOptions::default().max_total_bytes);
}
