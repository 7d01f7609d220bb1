//! Every field the view exposes, read back from a model built here.

use super::fixtures::*;
use crate::generated::tflite as fb;
use crate::options::{FusedActivation, OptionsUnion, WeightsFormat};
use crate::{BuiltinOp, Model, ModelBytes, OpKind, Options, TensorType};

#[test]
fn two_op_model_reads_back_every_field() {
    let file = ModelBytes::copy_from(&encode(&two_op_model()));
    let model = Model::parse(file.as_bytes()).unwrap();
    assert_invariants(&model);

    assert_eq!(model.version(), 3);
    assert_eq!(model.description(), Some("qneon test model"));
    assert_eq!(model.bytes().len(), file.as_bytes().len());
    assert_eq!(model.operator_codes().len(), 2);
    assert_eq!(
        model.operator_codes()[0].op,
        OpKind::Builtin(BuiltinOp::FULLY_CONNECTED)
    );
    assert_eq!(model.operator_codes()[0].version, 4);
    assert_eq!(
        model.operator_codes()[1].op,
        OpKind::Builtin(BuiltinOp::SOFTMAX)
    );
    assert_eq!(model.buffers().len(), 4);
    assert!(model.buffers()[0].is_empty());
    assert_eq!(model.metadata().len(), 1);
    assert_eq!(model.metadata()[0].name, METADATA_NAME);
    assert_eq!(model.metadata()[0].buffer, 3);
    assert_eq!(model.metadata()[0].data, METADATA);

    assert_eq!(model.subgraphs().len(), 1);
    let graph = model.main_subgraph();
    assert_eq!(graph.name(), "main");
    assert_eq!(graph.inputs(), &[0]);
    assert_eq!(graph.outputs(), &[4]);
    let names: Vec<&str> = graph.tensors().iter().map(|t| t.name()).collect();
    assert_eq!(names, ["input", "weights", "bias", "fc_out", "probs"]);

    let input = &graph.tensors()[0];
    assert_eq!(input.dtype(), TensorType::Int8);
    assert_eq!(input.shape(), &[1, 4]);
    assert_eq!(input.shape_signature(), Some(&[-1, 4][..]));
    assert_eq!(input.element_count(), 4);
    assert_eq!(input.byte_size(), Some(4));
    assert_eq!(input.buffer(), 0);
    assert!(!input.is_constant() && !input.is_variable() && !input.is_sparse());
    let quantization = input.quantization().unwrap();
    assert_eq!(quantization.per_tensor(), Some((0.5, -1)));
    assert_eq!(quantization.axis(), None);

    let weights = &graph.tensors()[1];
    assert_eq!(weights.shape(), &[3, 4]);
    assert_eq!(weights.shape_signature(), None);
    assert_eq!(weights.buffer(), 1);
    assert_eq!(weights.data().unwrap().len(), 12);
    assert_eq!(
        &weights.constant_values::<i8>().unwrap().unwrap()[..],
        &WEIGHTS
    );
    let quantization = weights.quantization().unwrap();
    assert_eq!(quantization.scales(), &[0.01, 0.02, 0.03]);
    assert_eq!(quantization.zero_points(), &[0, 0, 0]);
    assert_eq!(quantization.axis(), Some(0));
    assert_eq!(quantization.per_tensor(), None);
    assert!(weights.constant_values::<u8>().is_err());

    let bias = &graph.tensors()[2];
    assert_eq!(bias.dtype(), TensorType::Int32);
    assert_eq!(&bias.constant_values::<i32>().unwrap().unwrap()[..], &BIAS);
    assert_eq!(bias.quantization().unwrap().axis(), Some(0));

    let fc_out = &graph.tensors()[3];
    let quantization = fc_out.quantization().unwrap();
    assert_eq!(quantization.per_tensor(), Some((0.25, 3)));
    assert_eq!(quantization.min(), &[-32.0]);
    assert_eq!(quantization.max(), &[31.75]);
    assert_eq!(fc_out.constant_values::<i8>().unwrap(), None);

    let probs = &graph.tensors()[4];
    assert_eq!(
        probs.quantization().unwrap().per_tensor(),
        Some((1.0 / 256.0, -128))
    );
    assert_eq!(model.non_constant_bytes(), 4 + 3 + 3);

    let [fully_connected, softmax] = graph.operators() else {
        panic!("two operators expected");
    };
    assert_eq!(fully_connected.index(), 0);
    assert_eq!(fully_connected.opcode_index(), 0);
    assert_eq!(fully_connected.builtin(), Some(BuiltinOp::FULLY_CONNECTED));
    assert_eq!(fully_connected.version(), 4);
    assert_eq!(fully_connected.inputs(), &[Some(0), Some(1), Some(2)]);
    assert_eq!(fully_connected.outputs(), &[Some(3)]);
    assert!(fully_connected.intermediates().is_empty());
    assert_eq!(fully_connected.custom_options(), None);
    let Options::Builtin(fb::BuiltinOptions::FullyConnectedOptions(fc)) = fully_connected.options()
    else {
        panic!("{:?}", fully_connected.options())
    };
    assert_eq!(
        FusedActivation::from_code(fc.fused_activation_function),
        FusedActivation::Relu
    );
    assert_eq!(
        WeightsFormat::from_code(fc.weights_format),
        WeightsFormat::Default
    );
    assert!(!fc.keep_num_dims && fc.asymmetric_quantize_inputs);
    assert_eq!(
        fully_connected.options().table_name(),
        Some("FullyConnectedOptions")
    );
    assert_eq!(softmax.op(), OpKind::Builtin(BuiltinOp::SOFTMAX));
    assert_eq!(softmax.inputs(), &[Some(3)]);
    assert_eq!(softmax.outputs(), &[Some(4)]);
    assert_eq!(
        softmax.options(),
        &Options::Builtin(fb::BuiltinOptions::SoftmaxOptions(Box::new(
            fb::SoftmaxOptions { beta: 1.0 }
        )))
    );
}

#[test]
fn operator_codes_take_the_larger_of_both_fields() {
    let mut model = two_op_model();
    let codes = model.operator_codes.as_mut().unwrap();
    // Old file: only the int8 field.
    codes[0] = fb::OperatorCode {
        deprecated_builtin_code: 9,
        builtin_code: 0,
        ..opcode(0, 1)
    };
    // New file, code above 127: the int8 field holds the placeholder.
    codes.push(opcode(150, 2));
    // A code above 127 written with the int8 field left at 0.
    codes.push(fb::OperatorCode {
        deprecated_builtin_code: 0,
        ..opcode(132, 1)
    });
    let bytes = encode(&model);
    let model = Model::parse(&bytes).unwrap();
    let ops: Vec<OpKind> = model.operator_codes().iter().map(|code| code.op).collect();
    assert_eq!(
        ops,
        [
            OpKind::Builtin(BuiltinOp::FULLY_CONNECTED),
            OpKind::Builtin(BuiltinOp::SOFTMAX),
            OpKind::Builtin(BuiltinOp::GELU),
            OpKind::Builtin(BuiltinOp::CONV_3D),
        ]
    );
    assert_eq!(model.operator_codes()[2].version, 2);
}

#[test]
fn custom_operators_are_named_and_keep_their_options() {
    let mut model = two_op_model();
    model
        .operator_codes
        .as_mut()
        .unwrap()
        .push(fb::OperatorCode {
            custom_code: Some("MyOp".to_string()),
            ..opcode(32, 1)
        });
    let subgraph = &mut model.subgraphs.as_mut().unwrap()[0];
    subgraph.operators.as_mut().unwrap().push(fb::Operator {
        opcode_index: 2,
        inputs: Some(vec![4, -1]),
        outputs: Some(vec![-1, 3]),
        custom_options: Some(vec![1, 2, 3]),
        intermediates: Some(vec![2]),
        ..Default::default()
    });
    let bytes = encode(&model);
    let model = Model::parse(&bytes).unwrap();
    assert_invariants(&model);
    let custom = &model.main_subgraph().operators()[2];
    assert_eq!(custom.op(), OpKind::Custom("MyOp"));
    assert_eq!(custom.op().to_string(), "CUSTOM(MyOp)");
    assert_eq!(custom.builtin(), None);
    assert_eq!(custom.inputs(), &[Some(4), None]);
    assert_eq!(custom.outputs(), &[None, Some(3)]);
    assert_eq!(custom.intermediates(), &[2]);
    assert_eq!(custom.custom_options(), Some(&[1u8, 2, 3][..]));
    assert_eq!(custom.options(), &Options::None);
}

#[test]
fn unknown_builtin_operators_parse_and_are_named_by_number() {
    let mut model = two_op_model();
    model.operator_codes.as_mut().unwrap()[1] = opcode(250, 1);
    model.subgraphs.as_mut().unwrap()[0]
        .operators
        .as_mut()
        .unwrap()[1]
        .builtin_options = None;
    let bytes = encode(&model);
    let model = Model::parse(&bytes).unwrap();
    let op = model.main_subgraph().operators()[1].op();
    assert_eq!(op, OpKind::Builtin(BuiltinOp(250)));
    assert_eq!(op.to_string(), "BUILTIN_OP_250");
}

/// Every decoded options table, on its own operator.
#[test]
fn options_read_back_at_their_tags_and_names() {
    let cases: Vec<(i32, fb::BuiltinOptions, u8, &str)> = vec![
        (
            0,
            fb::BuiltinOptions::AddOptions(Box::new(fb::AddOptions {
                fused_activation_function: 3,
                pot_scale_int16: false,
            })),
            11,
            "AddOptions",
        ),
        (
            41,
            fb::BuiltinOptions::SubOptions(Box::new(fb::SubOptions {
                fused_activation_function: 9,
                pot_scale_int16: true,
            })),
            28,
            "SubOptions",
        ),
        (
            18,
            fb::BuiltinOptions::MulOptions(Box::new(fb::MulOptions {
                fused_activation_function: 1,
            })),
            21,
            "MulOptions",
        ),
        (
            50,
            fb::BuiltinOptions::LogSoftmaxOptions(Box::default()),
            36,
            "LogSoftmaxOptions",
        ),
        (
            22,
            fb::BuiltinOptions::ReshapeOptions(Box::new(fb::ReshapeOptions {
                new_shape: Some(vec![1, -1, 4]),
            })),
            17,
            "ReshapeOptions",
        ),
        (
            22,
            fb::BuiltinOptions::ReshapeOptions(Box::default()),
            17,
            "ReshapeOptions",
        ),
        (
            39,
            fb::BuiltinOptions::TransposeOptions(Box::default()),
            26,
            "TransposeOptions",
        ),
        (
            126,
            fb::BuiltinOptions::BatchMatMulOptions(Box::new(fb::BatchMatMulOptions {
                adj_x: true,
                adj_y: false,
                asymmetric_quantize_inputs: true,
            })),
            101,
            "BatchMatMulOptions",
        ),
        (
            36,
            fb::BuiltinOptions::GatherOptions(Box::new(fb::GatherOptions {
                axis: -1,
                batch_dims: 2,
            })),
            23,
            "GatherOptions",
        ),
        (
            45,
            fb::BuiltinOptions::StridedSliceOptions(Box::new(fb::StridedSliceOptions {
                begin_mask: 1,
                end_mask: 2,
                ellipsis_mask: 4,
                new_axis_mask: 8,
                shrink_axis_mask: 16,
                offset: true,
            })),
            32,
            "StridedSliceOptions",
        ),
        (
            34,
            fb::BuiltinOptions::PadOptions(Box::default()),
            22,
            "PadOptions",
        ),
        (
            2,
            fb::BuiltinOptions::ConcatenationOptions(Box::new(fb::ConcatenationOptions {
                axis: -2,
                fused_activation_function: 2,
            })),
            10,
            "ConcatenationOptions",
        ),
        (
            49,
            fb::BuiltinOptions::SplitOptions(Box::new(fb::SplitOptions { num_splits: 3 })),
            35,
            "SplitOptions",
        ),
        (
            53,
            fb::BuiltinOptions::CastOptions(Box::new(fb::CastOptions {
                in_data_type: 9,
                out_data_type: 99,
            })),
            37,
            "CastOptions",
        ),
        (
            114,
            fb::BuiltinOptions::QuantizeOptions(Box::default()),
            89,
            "QuantizeOptions",
        ),
        (
            6,
            fb::BuiltinOptions::DequantizeOptions(Box::default()),
            38,
            "DequantizeOptions",
        ),
        (
            9,
            fb::BuiltinOptions::FullyConnectedOptions(Box::new(fb::FullyConnectedOptions {
                fused_activation_function: 0,
                weights_format: 1,
                keep_num_dims: true,
                asymmetric_quantize_inputs: false,
                quantized_bias_type: 2,
            })),
            8,
            "FullyConnectedOptions",
        ),
        // Tables of operators qneon does not run: decoded all the same.
        (
            3,
            fb::BuiltinOptions::Conv2DOptions(Box::default()),
            1,
            "Conv2DOptions",
        ),
        (
            40,
            fb::BuiltinOptions::ReducerOptions(Box::default()),
            27,
            "ReducerOptions",
        ),
        (
            161,
            fb::BuiltinOptions::RightShiftOptions(Box::default()),
            126,
            "RightShiftOptions",
        ),
    ];
    for (code, written, tag, name) in cases {
        let mut model = two_op_model();
        model.operator_codes.as_mut().unwrap()[1] = opcode(code, 1);
        model.subgraphs.as_mut().unwrap()[0]
            .operators
            .as_mut()
            .unwrap()[1]
            .builtin_options = Some(written.clone());
        let bytes = encode(&model);
        let parsed = Model::parse(&bytes).unwrap_or_else(|error| panic!("{name}: {error}"));
        let options = parsed.main_subgraph().operators()[1].options();
        assert_eq!(options, &Options::Builtin(written), "{name}");
        assert_eq!(options.union(), Some(OptionsUnion::Builtin));
        assert_eq!((options.tag(), options.table_name()), (tag, Some(name)));
        assert!(options.to_string().starts_with(name), "{options}");
    }
    // Codes the runtime must refuse stay representable.
    assert_eq!(FusedActivation::from_code(9), FusedActivation::Unknown(9));
    assert_eq!(FusedActivation::from_code(3), FusedActivation::Relu6);
    assert_eq!(WeightsFormat::from_code(1), WeightsFormat::Shuffled4x16Int8);
    assert_eq!(WeightsFormat::from_code(7), WeightsFormat::Unknown(7));
    let unknown = Options::Unknown {
        union: OptionsUnion::Builtin,
        tag: 127,
    };
    assert_eq!((unknown.tag(), unknown.table_name()), (127, None));
    assert_eq!(Options::None.table_name(), Some("NONE"));
}

#[test]
fn generated_options_read_back_for_every_union() {
    let conv = fb::Conv2DOptions {
        padding: 1,
        stride_w: 2,
        stride_h: 3,
        fused_activation_function: 3,
        dilation_w_factor: 4,
        dilation_h_factor: 5,
        quantized_bias_type: 9,
    };
    let pad = fb::StablehloPadOptions {
        edge_padding_low: Some(vec![1, 2]),
        edge_padding_high: Some(vec![3, 4]),
        interior_padding: None,
    };
    let mut model = two_op_model();
    model.operator_codes.as_mut().unwrap()[1] = opcode(BuiltinOp::CONV_2D.0, 1);
    model
        .operator_codes
        .as_mut()
        .unwrap()
        .push(opcode(BuiltinOp::STABLEHLO_PAD.0, 1));
    let operators = model.subgraphs.as_mut().unwrap()[0]
        .operators
        .as_mut()
        .unwrap();
    operators[1].builtin_options = Some(fb::BuiltinOptions::Conv2DOptions(Box::new(conv.clone())));
    operators.push(fb::Operator {
        opcode_index: 2,
        inputs: Some(vec![4]),
        outputs: Some(vec![4]),
        builtin_options_2: Some(fb::BuiltinOptions2::StablehloPadOptions(Box::new(
            pad.clone(),
        ))),
        ..Default::default()
    });
    let bytes = encode(&model);
    let parsed = Model::parse(&bytes).unwrap();
    assert_invariants(&parsed);
    let operators = parsed.main_subgraph().operators();

    let conv_table = operators[1].options();
    assert_eq!(
        conv_table,
        &Options::Builtin(fb::BuiltinOptions::Conv2DOptions(Box::new(conv)))
    );
    assert_eq!(
        (conv_table.tag(), conv_table.table_name()),
        (1, Some("Conv2DOptions"))
    );
    let Options::Builtin(fb::BuiltinOptions::Conv2DOptions(read)) = conv_table else {
        unreachable!()
    };
    assert_eq!(
        FusedActivation::from_code(read.fused_activation_function),
        FusedActivation::Relu6
    );
    assert_eq!(
        conv_table.to_string(),
        "Conv2DOptions { padding: 1, stride_w: 2, stride_h: 3, fused_activation_function: 3, \
         dilation_w_factor: 4, dilation_h_factor: 5, quantized_bias_type: 9 }"
    );

    let pad_table = operators[2].options();
    assert_eq!(
        pad_table,
        &Options::Builtin2(fb::BuiltinOptions2::StablehloPadOptions(Box::new(pad)))
    );
    assert_eq!(pad_table.union(), Some(OptionsUnion::Builtin2));
    assert_eq!(
        (pad_table.tag(), pad_table.table_name()),
        (10, Some("StablehloPadOptions"))
    );

    assert_eq!(operators[0].options().union(), Some(OptionsUnion::Builtin));
    assert_eq!(Options::None.table_name(), Some("NONE"));
    assert_eq!(Options::None.tag(), 0);
    assert_eq!(Options::None.to_string(), "no options");
}

#[test]
fn buffers_after_the_flatbuffer_are_sliced_from_the_file() {
    let weights: Vec<u8> = WEIGHTS.iter().map(|&w| w as u8).collect();
    let with_offset = |offset: u64| {
        let mut model = two_op_model();
        model.buffers.as_mut().unwrap()[1] = fb::Buffer {
            data: None,
            offset,
            size: weights.len() as u64,
        };
        encode(&model)
    };
    // The offset is a fixed-width field: its value does not change the
    // encoding's length, so the data can go right after the FlatBuffer.
    let offset = with_offset(u64::MAX).len() as u64;
    let mut bytes = with_offset(offset);
    assert_eq!(bytes.len() as u64, offset);
    bytes.extend_from_slice(&weights);

    let model = Model::parse(&bytes).unwrap();
    assert_invariants(&model);
    let tensor = &model.main_subgraph().tensors()[1];
    assert_eq!(tensor.data(), Some(&weights[..]));
    assert_eq!(
        tensor.data().unwrap().as_ptr(),
        bytes[offset as usize..].as_ptr()
    );

    // One byte short of the data: refused, naming the buffer.
    let error = Model::parse(&bytes[..bytes.len() - 1]).unwrap_err();
    assert_eq!(
        error,
        crate::Error::OutsideFile {
            at: crate::Place::Buffer(1),
            offset,
            size: 12,
            file_len: bytes.len() - 1,
        }
    );
}

#[test]
fn display_lines_show_types_shapes_and_quantization() {
    let bytes = encode(&two_op_model());
    let model = Model::parse(&bytes).unwrap();
    let graph = model.main_subgraph();
    assert_eq!(
        graph.tensors()[0].to_string(),
        "#0 \"input\" INT8 [1, 4] (signature [-1, 4]) 4 B, scale 0.5 zero_point -1"
    );
    assert_eq!(
        graph.tensors()[1].to_string(),
        "#1 \"weights\" INT8 [3, 4] const 12 B (buffer 1), 3 scales along axis 0 (0.01..0.03), zero points all 0"
    );
    assert_eq!(
        graph.operators()[0].to_string(),
        "#0 FULLY_CONNECTED v4 (0, 1, 2) -> (3) FullyConnectedOptions { fused_activation_function: 1, \
         weights_format: 0, keep_num_dims: false, asymmetric_quantize_inputs: true, quantized_bias_type: 0 }"
    );
    assert_eq!(
        graph.operators()[1].to_string(),
        "#1 SOFTMAX v1 (3) -> (4) SoftmaxOptions { beta: 1.0 }"
    );
}

#[test]
fn debug_output_shows_data_by_length() {
    let bytes = encode(&two_op_model());
    let model = Model::parse(&bytes).unwrap();
    let debug = format!("{model:?}");
    assert!(
        debug.contains(&format!("bytes: <{} bytes>", bytes.len())),
        "{debug}"
    );
    assert!(debug.contains("data: Some(<12 bytes>)"), "{debug}");
    assert!(debug.contains("dtype: Int32"), "{debug}");
}
