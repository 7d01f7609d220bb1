//! The schema's field order (which fixes every vtable slot) checked against
//! files the TFLite converter wrote: options read through the generated
//! types must hold the values these models are known to use. A field out of
//! place reads another slot's value, or its default.

use planus::ReadAsRoot;

use crate::generated::tflite as fb;

fn read(path: &str) -> Vec<u8> {
    let path = format!("{}/../models/{path}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&path).unwrap_or_else(|error| panic!("{path}: {error}"))
}

/// The owned options of every operator of subgraph 0, in order.
fn options(bytes: &[u8]) -> Vec<fb::BuiltinOptions> {
    let model = fb::ModelRef::read_as_root(bytes).unwrap();
    let subgraph = model.subgraphs().unwrap().unwrap().get(0).unwrap().unwrap();
    subgraph
        .operators()
        .unwrap()
        .unwrap()
        .iter()
        .filter_map(|operator| operator.unwrap().builtin_options().unwrap())
        .map(|options| fb::BuiltinOptions::try_from(options).unwrap())
        .collect()
}

#[test]
fn conv_and_pool_options_of_person_detect() {
    let all = options(&read("tflite_micro/person_detect.tflite"));
    // The first layer: a 3x3 depthwise convolution, stride 2, 'SAME'
    // padding, one grey channel times 8, RELU6.
    assert_eq!(
        all[0],
        fb::BuiltinOptions::DepthwiseConv2DOptions(Box::new(fb::DepthwiseConv2DOptions {
            padding: 0,
            stride_w: 2,
            stride_h: 2,
            depth_multiplier: 8,
            fused_activation_function: 3,
            dilation_w_factor: 1,
            dilation_h_factor: 1,
        }))
    );
    let conv = all
        .iter()
        .find_map(|options| match options {
            fb::BuiltinOptions::Conv2DOptions(conv) => Some(conv),
            _ => None,
        })
        .unwrap();
    assert_eq!((conv.stride_w, conv.stride_h), (1, 1));
    assert_eq!(conv.fused_activation_function, 3);
    assert_eq!((conv.dilation_w_factor, conv.dilation_h_factor), (1, 1));
    // The 3x3 average pool before the classifier, stride 2, 'VALID'.
    let pool = all
        .iter()
        .find_map(|options| match options {
            fb::BuiltinOptions::Pool2DOptions(pool) => Some(pool),
            _ => None,
        })
        .unwrap();
    assert_eq!(
        **pool,
        fb::Pool2DOptions {
            padding: 1,
            stride_w: 2,
            stride_h: 2,
            filter_width: 3,
            filter_height: 3,
            fused_activation_function: 0,
        }
    );
}

#[test]
fn svdf_and_lstm_options_of_the_micro_models() {
    let svdf = options(&read("tflite_micro/keyword_scrambled.tflite"));
    assert_eq!(
        svdf[0],
        fb::BuiltinOptions::SvdfOptions(Box::new(fb::SvdfOptions {
            rank: 1,
            fused_activation_function: 1,
            asymmetric_quantize_inputs: false,
        }))
    );
    for file in [
        "tflite_micro/trained_lstm_int8.tflite",
        "tflite_micro/dtln_noise_suppression.tflite",
    ] {
        let lstm = options(&read(file));
        assert_eq!(
            lstm[0],
            fb::BuiltinOptions::UnidirectionalSequenceLstmOptions(Box::new(
                fb::UnidirectionalSequenceLstmOptions {
                    fused_activation_function: 4,
                    cell_clip: 10.0,
                    proj_clip: 0.0,
                    time_major: false,
                    asymmetric_quantize_inputs: false,
                    diagonal_recurrent_tensors: false,
                }
            )),
            "{file}"
        );
    }
}

#[test]
fn signature_defs_and_late_model_slots() {
    let bytes = read("tflite_micro/trained_lstm_int8.tflite");
    let model = fb::ModelRef::read_as_root(&bytes).unwrap();
    let signatures = model.signature_defs().unwrap().unwrap();
    assert_eq!(signatures.len(), 1);
    let signature = signatures.get(0).unwrap().unwrap();
    assert_eq!(signature.signature_key().unwrap(), Some("serving_default"));
    assert_eq!(signature.subgraph_index().unwrap(), 0);
    let inputs = signature.inputs().unwrap().unwrap();
    assert_eq!(inputs.len(), 1);
    let input = inputs.get(0).unwrap().unwrap();
    let subgraph = model.subgraphs().unwrap().unwrap().get(0).unwrap().unwrap();
    let graph_inputs = subgraph.inputs().unwrap().unwrap();
    assert_eq!(
        i64::from(input.tensor_index().unwrap()),
        i64::from(graph_inputs.get(0).unwrap())
    );
    // No external buffers in a file of this size.
    assert!(model.external_buffers().unwrap().is_none());
}

#[test]
fn mobilebert_options() {
    let all = options(&read("mobilebert_squad_1l.tflite"));
    let find = |pick: fn(&fb::BuiltinOptions) -> bool| all.iter().find(|o| pick(o)).unwrap();
    assert_eq!(
        *find(|o| matches!(o, fb::BuiltinOptions::BatchMatMulOptions(_))),
        fb::BuiltinOptions::BatchMatMulOptions(Box::new(fb::BatchMatMulOptions {
            adj_x: false,
            adj_y: true,
            asymmetric_quantize_inputs: false,
        }))
    );
    assert_eq!(
        *find(|o| matches!(o, fb::BuiltinOptions::StridedSliceOptions(_))),
        fb::BuiltinOptions::StridedSliceOptions(Box::new(fb::StridedSliceOptions {
            begin_mask: 5,
            end_mask: 7,
            ..Default::default()
        }))
    );
    assert_eq!(
        *find(|o| matches!(o, fb::BuiltinOptions::SplitOptions(_))),
        fb::BuiltinOptions::SplitOptions(Box::new(fb::SplitOptions { num_splits: 2 }))
    );
}
