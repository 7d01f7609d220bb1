//! `qneon_tflite::Model::parse_with` on any bytes (seeded with the
//! single-op models of `models/ops/`): default options, no memory budget,
//! no file identifier, small item limits, and exact budgets; the bytes
//! aligned (constant data borrowed) and one byte off (copied).
//!
//! Never a panic. A model that parses keeps every promise of the reader:
//! indices in range, element counts and byte sizes consistent with the
//! shapes, constant data inside the file and exactly as long as its tensor
//! needs, quantization vectors consistent, `non_constant_bytes` the sum it
//! bounds; the budgets accept exactly the models within them; an aligned
//! and an unaligned copy read the same model and the same values; every
//! accessor and every `Display` / `Debug` works.

#![no_main]

use libfuzzer_sys::fuzz_target;
use qneon_fuzz::reached;
use qneon_tflite::{Model, ModelBytes, OpKind, ParseOptions, TensorType};

fuzz_target!(|data: &[u8]| check(data));

fn check(data: &[u8]) {
    let aligned = ModelBytes::copy_from(data);
    let bytes = aligned.as_bytes();
    // One byte into a larger buffer: misaligned for every element type.
    let mut shifted_storage = vec![0u8; data.len() + 1];
    shifted_storage[1..].copy_from_slice(data);
    let shifted = &shifted_storage[1..];

    let unlimited = Model::parse_with(bytes, &ParseOptions::unlimited());
    let default = Model::parse(bytes);
    let no_identifier = Model::parse_with(
        bytes,
        &ParseOptions {
            require_file_identifier: false,
            ..ParseOptions::unlimited()
        },
    );
    for limit in [0, 16, data.len() / 8] {
        let limited = Model::parse_with(
            bytes,
            &ParseOptions {
                max_items: Some(limit),
                ..ParseOptions::unlimited()
            },
        );
        if limited.is_ok() && limit <= data.len() {
            assert!(
                unlimited.is_ok(),
                "parses with {limit} items but not with the file's length"
            );
        }
    }
    let unaligned = Model::parse_with(shifted, &ParseOptions::unlimited());
    assert_eq!(
        format!("{unlimited:?}"),
        format!("{unaligned:?}"),
        "an aligned and a misaligned copy read differently"
    );

    let model = match unlimited {
        Ok(model) => model,
        Err(error) => {
            assert!(!error.to_string().is_empty());
            assert!(
                default.is_err(),
                "refused without a budget, accepted with one"
            );
            return;
        }
    };
    let unaligned = unaligned.expect("compared above");
    reached(|| "tflite parsed".to_string());
    assert!(
        no_identifier.is_ok(),
        "the identifier check refused a model it should not see"
    );

    let (total, largest) = check_invariants(&model);
    assert_eq!(model.non_constant_bytes(), total);
    let defaults = ParseOptions::default();
    assert_eq!(
        default.is_ok(),
        largest <= defaults.max_tensor_bytes && total <= defaults.max_total_bytes,
        "default budget: largest tensor {largest}, total {total}: {:?}",
        default.err()
    );
    let exact = ParseOptions {
        max_tensor_bytes: largest,
        max_total_bytes: total,
        ..ParseOptions::default()
    };
    assert!(
        Model::parse_with(bytes, &exact).is_ok(),
        "refused at its exact budget"
    );
    if total > 0 {
        let tight = ParseOptions {
            max_total_bytes: total - 1,
            ..ParseOptions::unlimited()
        };
        assert!(
            Model::parse_with(bytes, &tight).is_err(),
            "accepted {total} bytes under a budget of {}",
            total - 1
        );
    }
    if largest > 0 {
        let tight = ParseOptions {
            max_tensor_bytes: largest - 1,
            ..ParseOptions::unlimited()
        };
        assert!(
            Model::parse_with(bytes, &tight).is_err(),
            "accepted a tensor of {largest} bytes under a limit of {}",
            largest - 1
        );
    }

    // Every accessor and every formatting.
    let _ = format!("{model:?}");
    for code in model.operator_codes() {
        let _ = format!("{} {:?}", code.op, code.op.builtin());
    }
    for (subgraph, other) in model.subgraphs().iter().zip(unaligned.subgraphs()) {
        let _ = subgraph.name();
        for operator in subgraph.operators() {
            let options = operator.options();
            let _ = format!("{operator} {operator:?} {options} {options:?}");
            let _ = (options.union(), options.tag(), options.table_name());
            let _ = (
                operator.custom_options(),
                operator.intermediates(),
                operator.builtin(),
            );
        }
        for (tensor, twin) in subgraph.tensors().iter().zip(other.tensors()) {
            let _ = format!(
                "{tensor} {tensor:?} {} {:?}",
                tensor.place(),
                tensor.shape_signature()
            );
            if let Some(q) = tensor.quantization() {
                let _ = format!("{q} {:?} {:?} {:?}", q.per_tensor(), q.min(), q.max());
            }
            if tensor.is_constant() {
                reached(|| format!("tflite constant {}", tensor.dtype()));
            }
            check_values(tensor, twin);
        }
    }
}

/// The reader's promises; returns the sum of the non-constant tensors'
/// byte sizes and the largest of them.
fn check_invariants(model: &Model<'_>) -> (usize, usize) {
    assert!(!model.subgraphs().is_empty());
    let file = model.bytes().as_ptr_range();
    let inside = |data: &[u8]| {
        let range = data.as_ptr_range();
        data.is_empty() || (file.start <= range.start && range.end <= file.end)
    };
    for buffer in model.buffers() {
        assert!(inside(buffer), "a buffer outside the file");
    }
    for entry in model.metadata() {
        assert_eq!(entry.data, model.buffers()[entry.buffer]);
    }
    let (mut total, mut largest) = (0usize, 0usize);
    for (index, subgraph) in model.subgraphs().iter().enumerate() {
        assert_eq!(subgraph.index(), index);
        let tensors = subgraph.tensors().len();
        for (index, tensor) in subgraph.tensors().iter().enumerate() {
            assert_eq!(tensor.index(), index);
            assert!(subgraph.tensor(index).is_some());
            let count = tensor
                .shape()
                .iter()
                .try_fold(1usize, |count, &dim| count.checked_mul(dim))
                .expect("a verified shape's element count fits usize");
            assert_eq!(tensor.element_count(), count);
            match tensor.dtype().element_bits() {
                Some(bits) => {
                    let bytes = (count as u128 * bits as u128).div_ceil(8);
                    assert_eq!(tensor.byte_size().map(|b| b as u128), Some(bytes));
                }
                None => assert_eq!(tensor.byte_size(), None),
            }
            assert!(tensor.buffer() < model.buffers().len());
            match tensor.data() {
                Some(data) => {
                    assert!(!data.is_empty() && inside(data));
                    assert_eq!(data, model.buffers()[tensor.buffer()]);
                    if let (false, Some(bytes)) = (tensor.is_sparse(), tensor.byte_size()) {
                        assert_eq!(data.len(), bytes, "constant data of the wrong length");
                    }
                }
                None => {
                    let bytes = tensor.byte_size().unwrap_or(0);
                    total = total.saturating_add(bytes);
                    largest = largest.max(bytes);
                }
            }
            if let Some(signature) = tensor.shape_signature() {
                assert!(signature.iter().all(|&dim| dim >= -1));
            }
            if let Some(q) = tensor.quantization() {
                let scales = q.scales().len();
                assert!(scales >= 1);
                assert_eq!(q.zero_points().len(), scales);
                match q.axis() {
                    None => assert_eq!(scales, 1),
                    Some(axis) => {
                        assert!(scales > 1);
                        assert_eq!(tensor.shape()[axis], scales);
                    }
                }
            }
        }
        for &index in subgraph.inputs().iter().chain(subgraph.outputs()) {
            assert!(index < tensors);
        }
        for (index, operator) in subgraph.operators().iter().enumerate() {
            assert_eq!(operator.index(), index);
            let code = model.operator_codes()[operator.opcode_index()];
            assert_eq!(operator.op(), code.op);
            assert_eq!(operator.version(), code.version);
            if let OpKind::Builtin(op) = operator.op() {
                assert_eq!(operator.builtin(), Some(op));
            }
            for &t in operator.inputs().iter().chain(operator.outputs()).flatten() {
                assert!(t < tensors);
            }
            for &t in operator.intermediates() {
                assert!(t < tensors);
            }
        }
    }
    (total, largest)
}

/// Constant data as numbers: the tensor's own type gives its element count
/// (the same values from an aligned and a misaligned file); another type is
/// an error.
fn check_values(tensor: &qneon_tflite::Tensor<'_>, twin: &qneon_tflite::Tensor<'_>) {
    macro_rules! as_type {
        ($t:ty) => {{
            let a = tensor.constant_values::<$t>();
            let b = twin.constant_values::<$t>();
            if let Ok(Some(values)) = &a {
                if !tensor.is_sparse() {
                    assert_eq!(values.len(), tensor.element_count());
                }
            }
            assert_eq!(
                format!("{a:?}"),
                format!("{b:?}"),
                "aligned and misaligned values differ"
            );
        }};
    }
    let expected_ok = !tensor.is_sparse();
    match tensor.dtype() {
        TensorType::Int8 => as_type!(i8),
        TensorType::Uint8 => as_type!(u8),
        TensorType::Int16 => as_type!(i16),
        TensorType::Uint16 => as_type!(u16),
        TensorType::Int32 => as_type!(i32),
        TensorType::Uint32 => as_type!(u32),
        TensorType::Int64 => as_type!(i64),
        TensorType::Uint64 => as_type!(u64),
        TensorType::Float32 => as_type!(f32),
        TensorType::Float64 => as_type!(f64),
        _ => {}
    }
    if tensor.dtype() != TensorType::Int8 || !expected_ok {
        assert!(
            tensor.constant_values::<i8>().is_err(),
            "values of another type were given"
        );
    }
}
