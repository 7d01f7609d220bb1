//! The copy of a model LiteRT loads where it refuses the model as
//! published.
//!
//! LiteRT 2.3 refuses a quantized tensor whose `quantized_dimension` is not
//! an axis of it; TFLite Micro accepts one (person_detect's 14 rank-1
//! per-channel biases say axis 3) and reads the scales as per-channel along
//! the only axis. The copy sets such a rank-1 tensor's
//! `quantized_dimension` to 0, in place (the field is a scalar already
//! stored in the file), and changes nothing else: the scales then mean to
//! LiteRT what they mean to TFLite Micro and qneon. qneon itself always
//! runs the published file.
//!
//! The FlatBuffer is walked by hand, reading only offsets and the fields
//! named below (TFLite's schema: `Model.subgraphs` is field 2,
//! `SubGraph.tensors` 0, `Tensor.shape` 0 and `Tensor.quantization` 4,
//! `QuantizationParameters.quantized_dimension` 6), every read bounds
//! checked.

use crate::util::{bail, Result};

/// Field indices of TFLite's schema used here.
const MODEL_SUBGRAPHS: usize = 2;
const SUBGRAPH_TENSORS: usize = 0;
const TENSOR_SHAPE: usize = 0;
const TENSOR_QUANTIZATION: usize = 4;
const QUANTIZATION_QUANTIZED_DIMENSION: usize = 6;

fn u32_at(bytes: &[u8], at: usize) -> Result<u32> {
    match bytes.get(at..at + 4) {
        Some(b) => Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]])),
        None => bail!("model truncated at byte {at}"),
    }
}

fn u16_at(bytes: &[u8], at: usize) -> Result<u16> {
    match bytes.get(at..at + 2) {
        Some(b) => Ok(u16::from_le_bytes([b[0], b[1]])),
        None => bail!("model truncated at byte {at}"),
    }
}

/// The position of field `field` of the table at `table`, if stored.
fn field(bytes: &[u8], table: usize, field: usize) -> Result<Option<usize>> {
    let vtable = table as i64 - i32::from_le_bytes(u32_at(bytes, table)?.to_le_bytes()) as i64;
    if vtable < 0 {
        bail!("a vtable before the file's start (table at {table})");
    }
    let vtable = vtable as usize;
    let vtable_len = u16_at(bytes, vtable)? as usize;
    let slot = 4 + 2 * field;
    if slot + 2 > vtable_len {
        return Ok(None);
    }
    match u16_at(bytes, vtable + slot)? {
        0 => Ok(None),
        offset => Ok(Some(table + offset as usize)),
    }
}

/// The target of the offset stored at `at` (a table or a vector).
fn follow(bytes: &[u8], at: usize) -> Result<usize> {
    Ok(at + u32_at(bytes, at)? as usize)
}

/// The positions of a vector's elements (offsets to tables: followed).
fn tables(bytes: &[u8], vector: usize) -> Result<Vec<usize>> {
    let len = u32_at(bytes, vector)? as usize;
    if len > bytes.len() / 4 {
        bail!("a vector of {len} tables in a {}-byte file", bytes.len());
    }
    (0..len)
        .map(|i| follow(bytes, vector + 4 + 4 * i))
        .collect()
}

/// `model` with every rank-1 tensor's out-of-range `quantized_dimension`
/// set to 0, and how many tensors changed (0: the bytes as given).
pub fn litert_copy(model: &[u8]) -> Result<(Vec<u8>, usize)> {
    let mut bytes = model.to_vec();
    let root = follow(&bytes, 0)?;
    let Some(subgraphs) = field(&bytes, root, MODEL_SUBGRAPHS)? else {
        return Ok((bytes, 0));
    };
    let mut changed = 0;
    for subgraph in tables(&bytes, follow(&bytes, subgraphs)?)? {
        let Some(tensors) = field(&bytes, subgraph, SUBGRAPH_TENSORS)? else {
            continue;
        };
        for tensor in tables(&bytes, follow(&bytes, tensors)?)? {
            let rank = match field(&bytes, tensor, TENSOR_SHAPE)? {
                Some(at) => u32_at(&bytes, follow(&bytes, at)?)?,
                None => 0,
            };
            let Some(quantization) = field(&bytes, tensor, TENSOR_QUANTIZATION)? else {
                continue;
            };
            let quantization = follow(&bytes, quantization)?;
            let Some(dim) = field(&bytes, quantization, QUANTIZATION_QUANTIZED_DIMENSION)? else {
                continue;
            };
            let value = u32_at(&bytes, dim)? as i32;
            if rank == 1 && value >= 1 {
                bytes[dim..dim + 4].copy_from_slice(&0i32.to_le_bytes());
                changed += 1;
            }
        }
    }
    Ok((bytes, changed))
}

#[cfg(test)]
mod tests {
    use super::*;
    use qneon_tflite::Model;

    fn published(name: &str) -> Vec<u8> {
        std::fs::read(crate::util::root().join("models/tflite_micro").join(name)).unwrap()
    }

    /// person_detect: the 14 rank-1 biases say axis 3; the copy says 0 for
    /// them and is otherwise the same bytes, and still parses.
    #[test]
    fn person_detect_copy_changes_the_bias_axes_only() {
        let original = published("person_detect.tflite");
        let (copy, changed) = litert_copy(&original).unwrap();
        assert_eq!(changed, 14);
        let differing = original.iter().zip(&copy).filter(|(a, b)| a != b).count();
        assert!((1..=14).contains(&differing), "{differing} bytes changed");
        assert_eq!(copy.len(), original.len());
        Model::parse(&copy).unwrap();
        // Every changed byte was one of the 14 fields: the copy needs no
        // copy.
        assert_eq!(litert_copy(&copy).unwrap().1, 0);
    }

    #[test]
    fn models_litert_loads_are_unchanged() {
        let original = published("mobilenet_v2_quantized_1x3x224x224.tflite");
        let (copy, changed) = litert_copy(&original).unwrap();
        assert_eq!(changed, 0);
        assert_eq!(copy, original);
    }

    #[test]
    fn truncated_files_are_errors() {
        let original = published("person_detect.tflite");
        for len in [0, 3, 8, 100, original.len() / 2] {
            assert!(litert_copy(&original[..len]).is_err(), "{len} bytes");
        }
    }
}
