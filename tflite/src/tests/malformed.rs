//! Each kind of bad file gets its own error, naming what and where.

use super::fixtures::*;
use crate::generated::tflite as fb;
use crate::{
    BuiltinOp, Error, Model, ParseOptions, Place, QuantizationProblem, Structure, TensorType,
};

fn parse(model: &fb::Model) -> Result<(), Error> {
    let bytes = encode(model);
    Model::parse(&bytes).map(|model| assert_invariants(&model))
}

fn main_graph(model: &mut fb::Model) -> &mut fb::SubGraph {
    &mut model.subgraphs.as_mut().unwrap()[0]
}

fn tensor_at(tensor: usize) -> Place {
    Place::Tensor {
        subgraph: 0,
        tensor,
    }
}

fn operator_at(operator: usize) -> Place {
    Place::Operator {
        subgraph: 0,
        operator,
    }
}

#[test]
fn short_files_and_foreign_identifiers_are_refused() {
    for len in 0..8 {
        assert_eq!(
            Model::parse(&vec![0; len]).unwrap_err(),
            Error::FileTooShort { len }
        );
    }
    let without = encode_without_identifier(&two_op_model());
    let error = Model::parse(&without).unwrap_err();
    assert!(matches!(error, Error::FileIdentifier { .. }), "{error}");
    // Tolerated on request: the identifier is optional in FlatBuffers.
    let lenient = ParseOptions {
        require_file_identifier: false,
        ..ParseOptions::default()
    };
    let model = Model::parse_with(&without, &lenient).unwrap();
    assert_eq!(model.main_subgraph().operators().len(), 2);
    let mut other = encode(&two_op_model());
    other[4..8].copy_from_slice(b"TFL2");
    assert_eq!(
        Model::parse(&other).unwrap_err(),
        Error::FileIdentifier { found: *b"TFL2" }
    );
}

#[test]
fn other_schema_versions_are_refused() {
    let mut model = two_op_model();
    model.version = 2;
    assert_eq!(parse(&model), Err(Error::SchemaVersion { version: 2 }));
}

#[test]
fn a_root_offset_outside_the_file_is_refused() {
    let mut bytes = encode(&two_op_model());
    let len = bytes.len() as u32;
    for root in [len, len - 2, u32::MAX, 0xffff_fff0] {
        bytes[..4].copy_from_slice(&root.to_le_bytes());
        let error = Model::parse(&bytes).unwrap_err();
        assert!(
            matches!(
                error,
                Error::Malformed {
                    at: Place::Model,
                    ..
                }
            ),
            "{error}"
        );
    }
}

#[test]
fn a_vector_offset_outside_the_file_is_refused() {
    // Find the operator input vector [0, 1, 2] (length 3, then the
    // indices) and point the offset to it past the end.
    let bytes = encode(&two_op_model());
    let pattern: Vec<u8> = [3u32, 0, 1, 2]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    let vector_at = bytes
        .windows(pattern.len())
        .position(|window| window == pattern)
        .expect("input vector in the file");
    // The uoffset to the vector is somewhere before it: the one whose
    // target is `vector_at`.
    let offset_at = (0..vector_at)
        .step_by(4)
        .find(|&at| {
            let value = u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap()) as usize;
            at + value == vector_at
        })
        .expect("offset to the input vector");
    let mut broken = bytes.clone();
    broken[offset_at..offset_at + 4].copy_from_slice(&(bytes.len() as u32).to_le_bytes());
    let error = Model::parse(&broken).unwrap_err();
    match error {
        Error::Malformed {
            at,
            table,
            field,
            problem,
            ..
        } => {
            assert_eq!(
                (at, table, field, problem),
                (
                    operator_at(0),
                    "Operator",
                    "inputs",
                    Structure::OffsetOutsideFile
                )
            );
        }
        other => panic!("{other}"),
    }
    // A length longer than the file.
    let mut broken = bytes.clone();
    broken[vector_at..vector_at + 4].copy_from_slice(&u32::MAX.to_le_bytes());
    let error = Model::parse(&broken).unwrap_err();
    assert!(
        matches!(
            error,
            Error::Malformed { at, field: "inputs", problem: Structure::PastEndOfFile, .. }
                if at == operator_at(0)
        ),
        "{error}"
    );
}

#[test]
fn out_of_range_indices_are_refused_with_their_place() {
    let mut model = two_op_model();
    main_graph(&mut model).operators.as_mut().unwrap()[1].inputs = Some(vec![5]);
    assert_eq!(
        parse(&model),
        Err(Error::IndexOutOfRange {
            at: operator_at(1),
            what: "operator input tensor",
            index: 5,
            len: 5,
        })
    );

    let mut model = two_op_model();
    main_graph(&mut model).operators.as_mut().unwrap()[0].outputs = Some(vec![-2]);
    assert_eq!(
        parse(&model),
        Err(Error::BadTensorIndex {
            at: operator_at(0),
            index: -2
        })
    );

    let mut model = two_op_model();
    main_graph(&mut model).outputs = Some(vec![-1]);
    assert_eq!(
        parse(&model),
        Err(Error::IndexOutOfRange {
            at: Place::Subgraph(0),
            what: "subgraph output tensor",
            index: -1,
            len: 5,
        })
    );

    let mut model = two_op_model();
    main_graph(&mut model).tensors.as_mut().unwrap()[3].buffer = 4;
    assert_eq!(
        parse(&model),
        Err(Error::IndexOutOfRange {
            at: tensor_at(3),
            what: "tensor buffer",
            index: 4,
            len: 4,
        })
    );

    let mut model = two_op_model();
    main_graph(&mut model).operators.as_mut().unwrap()[1].opcode_index = 2;
    assert_eq!(
        parse(&model),
        Err(Error::IndexOutOfRange {
            at: operator_at(1),
            what: "operator code",
            index: 2,
            len: 2,
        })
    );

    let mut model = two_op_model();
    model.metadata.as_mut().unwrap()[0].buffer = u32::MAX;
    assert_eq!(
        parse(&model),
        Err(Error::IndexOutOfRange {
            at: Place::Metadata(0),
            what: "metadata buffer",
            index: u32::MAX.into(),
            len: 4,
        })
    );
}

#[test]
fn negative_and_overflowing_shapes_are_refused() {
    let mut model = two_op_model();
    main_graph(&mut model).tensors.as_mut().unwrap()[3].shape = Some(vec![1, -3]);
    assert_eq!(
        parse(&model),
        Err(Error::NegativeDimension {
            at: tensor_at(3),
            shape: vec![1, -3]
        })
    );

    // The element count overflows.
    let huge = vec![i32::MAX; 3];
    let mut model = two_op_model();
    main_graph(&mut model).tensors.as_mut().unwrap()[3].shape = Some(huge.clone());
    assert_eq!(
        parse(&model),
        Err(Error::ShapeOverflow {
            at: tensor_at(3),
            shape: huge
        })
    );

    // The element count fits, the byte count does not.
    let shape = vec![i32::MAX, i32::MAX, 2];
    let mut model = two_op_model();
    let tensor = &mut main_graph(&mut model).tensors.as_mut().unwrap()[3];
    tensor.shape = Some(shape.clone());
    tensor.type_ = TensorType::Complex128.code();
    tensor.quantization = None;
    assert_eq!(
        parse(&model),
        Err(Error::ShapeOverflow {
            at: tensor_at(3),
            shape
        })
    );

    let mut model = two_op_model();
    main_graph(&mut model).tensors.as_mut().unwrap()[0].shape_signature = Some(vec![-2, 4]);
    assert!(matches!(
        parse(&model),
        Err(Error::BadShapeSignature { at, .. }) if at == tensor_at(0)
    ));
}

#[test]
fn constant_buffers_must_match_their_shape() {
    let mut model = two_op_model();
    model.buffers.as_mut().unwrap()[1]
        .data
        .as_mut()
        .unwrap()
        .pop();
    assert_eq!(
        parse(&model),
        Err(Error::BufferSize {
            at: tensor_at(1),
            buffer: 1,
            expected: 12,
            got: 11
        })
    );

    let mut model = two_op_model();
    main_graph(&mut model).tensors.as_mut().unwrap()[2].shape = Some(vec![4]);
    // The bias's 4 scales no longer match either, but the buffer is checked first.
    assert_eq!(
        parse(&model),
        Err(Error::BufferSize {
            at: tensor_at(2),
            buffer: 2,
            expected: 16,
            got: 12
        })
    );

    // A sparse tensor's data are compressed: not checked against the shape.
    let mut model = two_op_model();
    let weights = &mut main_graph(&mut model).tensors.as_mut().unwrap()[1];
    weights.shape = Some(vec![3, 40]);
    weights.sparsity = Some(Box::default());
    weights.quantization = quantization(&[0.1], &[0], 0);
    let bytes = encode(&model);
    let parsed = Model::parse(&bytes).unwrap();
    let weights = &parsed.main_subgraph().tensors()[1];
    assert!(weights.is_sparse());
    assert_eq!(weights.data().unwrap().len(), 12);
    assert!(matches!(
        weights.constant_values::<i8>(),
        Err(Error::ElementType { sparse: true, .. })
    ));

    // Packed 4-bit: 5 elements in 3 bytes.
    let mut model = two_op_model();
    model.buffers.as_mut().unwrap()[1].data = Some(vec![0x12, 0x34, 0x05]);
    let weights = &mut main_graph(&mut model).tensors.as_mut().unwrap()[1];
    weights.shape = Some(vec![5]);
    weights.type_ = TensorType::Int4.code();
    weights.quantization = quantization(&[0.1], &[0], 0);
    assert_eq!(parse(&model), Ok(()));
}

#[test]
fn unknown_tensor_types_are_refused() {
    let mut model = two_op_model();
    main_graph(&mut model).tensors.as_mut().unwrap()[4].type_ = 23;
    assert_eq!(
        parse(&model),
        Err(Error::UnknownTensorType {
            at: tensor_at(4),
            code: 23
        })
    );
}

#[test]
fn inconsistent_quantization_is_refused() {
    let cases: Vec<(
        usize,
        Option<Box<fb::QuantizationParameters>>,
        QuantizationProblem,
    )> = vec![
        (
            0,
            Some(Box::new(fb::QuantizationParameters {
                scale: Some(vec![0.5]),
                ..Default::default()
            })),
            QuantizationProblem::MissingZeroPoints,
        ),
        (
            0,
            quantization(&[0.5], &[0, 0], 0),
            QuantizationProblem::LengthMismatch {
                scales: 1,
                zero_points: 2,
            },
        ),
        (
            1,
            quantization(&[0.1, 0.2, 0.3], &[0, 0, 0], 2),
            QuantizationProblem::AxisOutOfRange { axis: 2, rank: 2 },
        ),
        (
            1,
            quantization(&[0.1, 0.2, 0.3], &[0, 0, 0], -1),
            QuantizationProblem::AxisOutOfRange { axis: -1, rank: 2 },
        ),
        (
            1,
            quantization(&[0.1, 0.2, 0.3], &[0, 0, 0], 1),
            QuantizationProblem::AxisSizeMismatch {
                axis: 1,
                dim: 4,
                scales: 3,
            },
        ),
    ];
    for (tensor, written, problem) in cases {
        let mut model = two_op_model();
        main_graph(&mut model).tensors.as_mut().unwrap()[tensor].quantization = written;
        assert_eq!(
            parse(&model),
            Err(Error::BadQuantization {
                at: tensor_at(tensor),
                problem
            })
        );
    }
    // No scales: not quantized, whatever else the table holds.
    let mut model = two_op_model();
    main_graph(&mut model).tensors.as_mut().unwrap()[0].quantization =
        Some(Box::new(fb::QuantizationParameters {
            min: Some(vec![-1.0]),
            max: Some(vec![1.0]),
            quantized_dimension: 7,
            ..Default::default()
        }));
    let bytes = encode(&model);
    let parsed = Model::parse(&bytes).unwrap();
    assert!(parsed.main_subgraph().tensors()[0].quantization().is_none());
}

#[test]
fn quantization_tflite_micro_loads_is_accepted() {
    // Per-axis weights with one zero point for all scales: it is repeated.
    let mut model = two_op_model();
    main_graph(&mut model).tensors.as_mut().unwrap()[1].quantization =
        quantization(&[0.1, 0.2, 0.3], &[0], 0);
    let bytes = encode(&model);
    let parsed = Model::parse(&bytes).unwrap();
    assert_invariants(&parsed);
    let weights = parsed.main_subgraph().tensors()[1].quantization().unwrap();
    assert_eq!(weights.zero_points(), &[0, 0, 0]);
    assert_eq!(weights.axis(), Some(0));

    // A rank-1 bias with one scale per element and its filter's quantized
    // dimension (3, or any other out of its range): its only axis.
    for axis in [3, 1, -1] {
        let mut model = two_op_model();
        main_graph(&mut model).tensors.as_mut().unwrap()[2].quantization =
            quantization(&[0.005, 0.01, 0.015], &[0, 0, 0], axis);
        let bytes = encode(&model);
        let parsed = Model::parse(&bytes).unwrap();
        assert_invariants(&parsed);
        let bias = parsed.main_subgraph().tensors()[2].quantization().unwrap();
        assert_eq!(bias.axis(), Some(0), "quantized_dimension {axis}");
        assert_eq!(bias.per_tensor(), None);
    }

    // ... but not when its scales do not match its one dimension, nor for
    // a tensor of higher rank, nor a zero point count other than 1 or N.
    let refused = [
        (
            2,
            quantization(&[0.1, 0.2], &[0, 0], 3),
            QuantizationProblem::AxisOutOfRange { axis: 3, rank: 1 },
        ),
        (
            1,
            quantization(&[0.1, 0.2, 0.3], &[0, 0, 0], 3),
            QuantizationProblem::AxisOutOfRange { axis: 3, rank: 2 },
        ),
        (
            1,
            quantization(&[0.1, 0.2, 0.3], &[0, 0], 0),
            QuantizationProblem::LengthMismatch {
                scales: 3,
                zero_points: 2,
            },
        ),
    ];
    for (tensor, written, problem) in refused {
        let mut model = two_op_model();
        main_graph(&mut model).tensors.as_mut().unwrap()[tensor].quantization = written;
        assert_eq!(
            parse(&model),
            Err(Error::BadQuantization {
                at: tensor_at(tensor),
                problem
            })
        );
    }
}

#[test]
fn missing_tables_are_named() {
    let mut model = two_op_model();
    model.subgraphs = Some(Vec::new());
    assert_eq!(
        parse(&model),
        Err(Error::MissingField {
            at: Place::Model,
            field: "Model.subgraphs"
        })
    );
    let mut model = two_op_model();
    model.buffers = None;
    assert_eq!(
        parse(&model),
        Err(Error::MissingField {
            at: Place::Model,
            field: "Model.buffers"
        })
    );
    let mut model = two_op_model();
    model.operator_codes.as_mut().unwrap()[1] = opcode(32, 1);
    assert_eq!(
        parse(&model),
        Err(Error::MissingCustomCode {
            at: Place::OperatorCode(1)
        })
    );
}

#[test]
fn options_of_another_operator_are_refused() {
    let mut model = two_op_model();
    main_graph(&mut model).operators.as_mut().unwrap()[1].builtin_options =
        Some(fb::BuiltinOptions::AddOptions(Box::default()));
    assert_eq!(
        parse(&model),
        Err(Error::OptionsMismatch {
            at: operator_at(1),
            op: BuiltinOp::SOFTMAX,
            options: "AddOptions"
        })
    );
}

#[test]
fn unknown_union_members_leave_the_rest_readable() {
    // Two encodings that differ only in the union tag (both tables are
    // empty): the one differing byte is the tag.
    let with_options = |options: fb::BuiltinOptions| {
        let mut model = two_op_model();
        model.operator_codes.as_mut().unwrap()[1] = opcode(3, 1);
        main_graph(&mut model).operators.as_mut().unwrap()[1].builtin_options = Some(options);
        encode(&model)
    };
    let conv = with_options(fb::BuiltinOptions::Conv2DOptions(Box::default()));
    let pool = with_options(fb::BuiltinOptions::Pool2DOptions(Box::default()));
    let differing: Vec<usize> = (0..conv.len()).filter(|&i| conv[i] != pool[i]).collect();
    assert_eq!(differing.len(), 1);
    assert_eq!((conv[differing[0]], pool[differing[0]]), (1, 5));

    let mut newer = conv.clone();
    newer[differing[0]] = 200;
    let model = Model::parse(&newer).unwrap();
    assert_invariants(&model);
    let operator = &model.main_subgraph().operators()[1];
    assert_eq!(
        operator.options(),
        &crate::Options::Unknown {
            union: crate::OptionsUnion::Builtin,
            tag: 200
        }
    );
    assert_eq!(operator.options().table_name(), None);
    assert_eq!(operator.inputs(), &[Some(3)]);
}

#[test]
fn memory_budget_refuses_huge_declared_tensors() {
    // 65536 x 65536 int8: 4 GiB of activations, over the default 1 GiB.
    let mut model = two_op_model();
    main_graph(&mut model).tensors.as_mut().unwrap()[3].shape = Some(vec![65536, 65536]);
    assert_eq!(
        parse(&model),
        Err(Error::TensorOverBudget {
            at: tensor_at(3),
            bytes: 1 << 32,
            limit: 1 << 30
        })
    );
    let bytes = encode(&model);
    let unlimited = Model::parse_with(&bytes, &ParseOptions::unlimited()).unwrap();
    assert_eq!(unlimited.non_constant_bytes(), (1 << 32) + 4 + 3);

    // Each tensor fits, the sum does not.
    let bytes = encode(&two_op_model());
    let tight = ParseOptions {
        max_tensor_bytes: 4,
        max_total_bytes: 9,
        ..ParseOptions::default()
    };
    assert_eq!(
        Model::parse_with(&bytes, &tight).unwrap_err(),
        Error::TotalOverBudget {
            bytes: 10,
            limit: 9
        }
    );
    let tighter = ParseOptions {
        max_tensor_bytes: 3,
        ..ParseOptions::default()
    };
    assert_eq!(
        Model::parse_with(&bytes, &tighter).unwrap_err(),
        Error::TensorOverBudget {
            at: tensor_at(0),
            bytes: 4,
            limit: 3
        }
    );
}

#[test]
fn shared_tables_cannot_amplify_the_walk() {
    let bytes = encode(&two_op_model());
    let few = ParseOptions {
        max_items: Some(10),
        ..ParseOptions::default()
    };
    assert_eq!(
        Model::parse_with(&bytes, &few).unwrap_err(),
        Error::TooManyItems { limit: 10 }
    );
    // Two operators share one long input vector (legal FlatBuffers: any
    // offset may point at any later object): 2000 more items to read, and
    // a limit under that refuses the file.
    let long = 2000u32;
    for (long_on, redirected) in [(1usize, 0usize), (0, 1)] {
        let mut model = two_op_model();
        let operators = main_graph(&mut model).operators.as_mut().unwrap();
        operators[long_on].inputs = Some(vec![0; long as usize]);
        operators[redirected].inputs = Some(vec![3, 3, 3, 3, 3, 3, 3]);
        let mut bytes = encode(&model);
        let find = |bytes: &[u8], pattern: &[u8]| {
            bytes
                .windows(pattern.len())
                .position(|window| window == pattern)
                .unwrap()
        };
        let long_at = find(&bytes, &long.to_le_bytes());
        let short: Vec<u8> = [7u32, 3, 3, 3, 3, 3, 3, 3]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        let short_at = find(&bytes, &short);
        let offset_at = (0..short_at)
            .step_by(4)
            .find(|&at| {
                u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap()) as usize + at == short_at
            })
            .unwrap();
        if offset_at > long_at {
            continue; // uoffsets point forward only: try the other layout.
        }
        bytes[offset_at..offset_at + 4]
            .copy_from_slice(&((long_at - offset_at) as u32).to_le_bytes());
        let shared = Model::parse(&bytes).unwrap();
        assert_eq!(
            shared.main_subgraph().operators()[redirected]
                .inputs()
                .len(),
            2000
        );
        let limit = ParseOptions {
            max_items: Some(3000),
            ..ParseOptions::default()
        };
        assert_eq!(
            Model::parse_with(&bytes, &limit).unwrap_err(),
            Error::TooManyItems { limit: 3000 }
        );
        return;
    }
    panic!("no layout lets one operator's inputs point at the other's");
}

#[test]
#[cfg_attr(
    miri,
    ignore = "a thousand shared subgraphs: too slow under Miri; shared_tables_cannot_amplify_the_walk runs"
)]
fn the_default_step_limit_refuses_a_subgraph_shared_a_thousand_times() {
    // Subgraph 0 carries a 2000-entry input vector; 999 empty subgraphs
    // follow. Pointing every entry of Model.subgraphs at subgraph 0 keeps
    // the file at its size but asks for 1000 times subgraph 0's work.
    let mut model = two_op_model();
    main_graph(&mut model).operators.as_mut().unwrap()[1].inputs = Some(vec![3; 2000]);
    let big = main_graph(&mut model).clone();
    let count = 1000u32;
    let mut subgraphs = vec![big];
    subgraphs.resize(count as usize, fb::SubGraph::default());
    model.subgraphs = Some(subgraphs);
    let mut bytes = encode(&model);
    assert!(Model::parse(&bytes).is_ok());

    let read_u32 =
        |bytes: &[u8], at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap());
    // The vector of subgraph offsets: a length of 1000 followed by 1000
    // offsets that all land inside the file.
    let vector_at = (0..bytes.len() - 4)
        .step_by(4)
        .find(|&at| {
            read_u32(&bytes, at) == count
                && (0..count as usize).all(|i| {
                    let entry = at + 4 + 4 * i;
                    entry + 4 <= bytes.len()
                        && entry + (read_u32(&bytes, entry) as usize) < bytes.len()
                })
        })
        .expect("the subgraph vector");
    let first_entry = vector_at + 4;
    let big_at = first_entry + read_u32(&bytes, first_entry) as usize;
    for i in 0..count as usize {
        let entry = first_entry + 4 * i;
        let offset = (big_at - entry) as u32;
        bytes[entry..entry + 4].copy_from_slice(&offset.to_le_bytes());
    }
    assert_eq!(
        Model::parse(&bytes).unwrap_err(),
        Error::TooManyItems { limit: bytes.len() }
    );
    // Allowed more steps, it reads: the 1000 subgraphs are the same one.
    let generous = ParseOptions {
        max_items: Some(usize::MAX),
        ..ParseOptions::default()
    };
    let shared = Model::parse_with(&bytes, &generous).unwrap();
    assert_eq!(shared.subgraphs().len(), 1000);
    assert_eq!(shared.subgraphs()[999].operators()[1].inputs().len(), 2000);
}

/// The two-operator model with a STABLEHLO_PAD operator whose
/// `BuiltinOptions2` table holds `low` as its first vector.
fn with_pad_options(low: Vec<i64>) -> fb::Model {
    let mut model = two_op_model();
    model
        .operator_codes
        .as_mut()
        .unwrap()
        .push(opcode(BuiltinOp::STABLEHLO_PAD.0, 1));
    main_graph(&mut model)
        .operators
        .as_mut()
        .unwrap()
        .push(fb::Operator {
            opcode_index: 2,
            inputs: Some(vec![4]),
            outputs: Some(vec![4]),
            builtin_options_2: Some(fb::BuiltinOptions2::StablehloPadOptions(Box::new(
                fb::StablehloPadOptions {
                    edge_padding_low: Some(low),
                    ..Default::default()
                },
            ))),
            ..Default::default()
        });
    model
}

#[test]
fn options_tables_with_bad_vectors_are_refused() {
    // Reshape (first union) and StableHLO pad (second union) options whose
    // vector lengths are made to run past the end of the file.
    let mut reshape = two_op_model();
    reshape.operator_codes.as_mut().unwrap()[1] = opcode(BuiltinOp::RESHAPE.0, 1);
    main_graph(&mut reshape).operators.as_mut().unwrap()[1].builtin_options = Some(
        fb::BuiltinOptions::ReshapeOptions(Box::new(fb::ReshapeOptions {
            new_shape: Some(vec![0x1122_3344, 0x5566_7788]),
        })),
    );
    let pad = with_pad_options(vec![0x0102_0304_0506_0708, 0x1112_1314_1516_1718]);
    for (model, first, operator) in [
        (reshape, 0x1122_3344u32.to_le_bytes().to_vec(), 1),
        (pad, 0x0102_0304_0506_0708u64.to_le_bytes().to_vec(), 2),
    ] {
        let bytes = encode(&model);
        assert!(Model::parse(&bytes).is_ok());
        // The vector: its length (2), then its first element.
        let len_at = (0..bytes.len() - 4 - first.len())
            .find(|&at| {
                bytes[at..at + 4] == 2u32.to_le_bytes() && bytes[at + 4..].starts_with(&first)
            })
            .expect("the options vector");
        for len in [3u32, 0x7fff_ffff, u32::MAX] {
            let mut bad = bytes.clone();
            bad[len_at..len_at + 4].copy_from_slice(&len.to_le_bytes());
            match Model::parse(&bad) {
                Err(Error::Malformed { at, .. }) => assert_eq!(at, operator_at(operator)),
                // A length that still fits the file reads other bytes as
                // elements; whatever parses keeps the promises.
                Ok(parsed) => {
                    assert_eq!(len, 3);
                    assert_invariants(&parsed);
                }
                Err(other) => panic!("length {len}: {other}"),
            }
        }
    }
}

#[test]
fn options_vectors_count_against_the_item_budget() {
    // The smallest budget that reads the model with a 2-entry vector, then
    // the same budget for a 400-entry one: refused, as every decoded
    // options table is counted (operators may share one).
    let fits = |model: &fb::Model, items: usize| {
        let options = ParseOptions {
            max_items: Some(items),
            ..ParseOptions::default()
        };
        Model::parse_with(&encode(model), &options).map(|_| ())
    };
    let small = with_pad_options(vec![1, 2]);
    let least = (0..10_000)
        .find(|&items| fits(&small, items).is_ok())
        .unwrap();
    assert_eq!(
        fits(&small, least - 1).unwrap_err(),
        Error::TooManyItems { limit: least - 1 }
    );
    let large = with_pad_options(vec![3; 400]);
    assert_eq!(
        fits(&large, least).unwrap_err(),
        Error::TooManyItems { limit: least }
    );
    assert!(fits(&large, least + 398).is_ok());
}

#[test]
fn unknown_second_union_members_leave_the_rest_readable() {
    // StablehloPadOptions is member 10 of BuiltinOptions2; its tag byte is
    // found as the one byte differing from an encoding with member 17.
    let encode_with = |options: fb::BuiltinOptions2| {
        let mut model = with_pad_options(Vec::new());
        main_graph(&mut model).operators.as_mut().unwrap()[2].builtin_options_2 = Some(options);
        encode(&model)
    };
    let pad = encode_with(fb::BuiltinOptions2::StablehloPadOptions(Box::default()));
    let transpose = encode_with(fb::BuiltinOptions2::StablehloTransposeOptions(
        Box::default(),
    ));
    let differing: Vec<usize> = (0..pad.len()).filter(|&i| pad[i] != transpose[i]).collect();
    assert_eq!(differing.len(), 1);
    assert_eq!((pad[differing[0]], transpose[differing[0]]), (10, 17));
    let mut newer = pad.clone();
    newer[differing[0]] = 77;
    let model = Model::parse(&newer).unwrap();
    assert_invariants(&model);
    let operator = &model.main_subgraph().operators()[2];
    assert_eq!(
        operator.options(),
        &crate::Options::Unknown {
            union: crate::OptionsUnion::Builtin2,
            tag: 77
        }
    );
    assert_eq!(operator.options().table_name(), None);
    assert_eq!(operator.inputs(), &[Some(4)]);
}
