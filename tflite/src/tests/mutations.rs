//! Truncations, bit flips and random bytes: never a panic; a model that
//! parses keeps every promise.

use proptest::prelude::*;

use super::fixtures::*;
use crate::Model;

#[test]
fn every_truncation_is_refused_or_drops_only_padding() {
    let bytes = encode(&two_op_model());
    let full_model = Model::parse(&bytes).unwrap();
    let full = format!("{:?}", full_model.subgraphs());
    let full_constants: Vec<Option<Vec<u8>>> = full_model
        .main_subgraph()
        .tensors()
        .iter()
        .map(|t| t.data().map(<[u8]>::to_vec))
        .collect();
    let mut refused = 0;
    let mut padding_only = 0;
    for len in 0..bytes.len() {
        match Model::parse(&bytes[..len]) {
            Err(error) => {
                assert!(!error.to_string().is_empty());
                refused += 1;
            }
            Ok(model) => {
                // Only unread trailing padding may go without notice: the
                // model read is the same, and the dropped bytes are zero.
                assert_invariants(&model);
                assert_eq!(format!("{:?}", model.subgraphs()), full);
                let constants = |model: &Model<'_>| -> Vec<Option<Vec<u8>>> {
                    let tensors = model.main_subgraph().tensors();
                    tensors
                        .iter()
                        .map(|t| t.data().map(<[u8]>::to_vec))
                        .collect()
                };
                assert_eq!(constants(&model), full_constants);
                assert!(
                    bytes[len..].iter().all(|&byte| byte == 0),
                    "prefix of {len} bytes parsed"
                );
                padding_only += 1;
            }
        }
    }
    eprintln!(
        "{} truncations: {refused} refused, {padding_only} only dropped trailing padding",
        bytes.len()
    );
    assert!(refused >= bytes.len() - 8);
}

#[test]
#[cfg_attr(
    miri,
    ignore = "every bit of a model: too slow under Miri; every_truncation_is_refused_or_drops_only_padding runs"
)]
fn every_single_bit_flip_is_refused_or_keeps_the_invariants() {
    let bytes = encode(&two_op_model());
    let (mut refused, mut parsed) = (0, 0);
    for bit in 0..bytes.len() * 8 {
        let mut flipped = bytes.clone();
        flipped[bit / 8] ^= 1 << (bit % 8);
        match Model::parse(&flipped) {
            Ok(model) => {
                assert_invariants(&model);
                parsed += 1;
            }
            Err(error) => {
                assert!(!error.to_string().is_empty());
                refused += 1;
            }
        }
    }
    eprintln!(
        "{} bit flips: {refused} refused, {parsed} parsed with invariants kept",
        bytes.len() * 8
    );
    assert!(refused > 0 && parsed > 0);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    #[cfg_attr(miri, ignore = "2000 proptest cases: too slow under Miri")]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..2048)) {
        if let Ok(model) = Model::parse(&bytes) {
            assert_invariants(&model);
        }
    }

    #[test]
    #[cfg_attr(miri, ignore = "2000 proptest cases: too slow under Miri")]
    fn random_bytes_after_a_valid_header_never_panic(
        root in 0u32..4096,
        tail in proptest::collection::vec(any::<u8>(), 0..2048),
    ) {
        let mut bytes = root.to_le_bytes().to_vec();
        bytes.extend_from_slice(b"TFL3");
        bytes.extend_from_slice(&tail);
        if let Ok(model) = Model::parse(&bytes) {
            assert_invariants(&model);
        }
    }

    #[test]
    #[cfg_attr(miri, ignore = "proptest cases: too slow under Miri")]
    fn random_edits_of_a_valid_model_never_panic(
        edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..16),
    ) {
        let mut bytes = encode(&two_op_model());
        for (index, value) in edits {
            let index = index.index(bytes.len());
            bytes[index] = value;
        }
        if let Ok(model) = Model::parse(&bytes) {
            assert_invariants(&model);
        }
    }
}
