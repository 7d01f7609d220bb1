//! Models written by the TFLite converter, when present: set
//! `QNEON_TFLITE_MODELS` to a directory of `.tflite` files (searched three
//! levels deep) and run `cargo test -p qneon-tflite real_files -- --nocapture`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::fixtures::assert_invariants;
use crate::{Model, ModelBytes};

fn tflite_files(dir: &Path, depth: usize, found: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() && depth > 0 {
            tflite_files(&path, depth - 1, found);
        } else if path.extension().is_some_and(|ext| ext == "tflite") {
            found.push(path);
        }
    }
}

#[test]
fn converter_models_parse_and_keep_the_invariants() {
    let Some(dir) = std::env::var_os("QNEON_TFLITE_MODELS") else {
        eprintln!("QNEON_TFLITE_MODELS not set: no converter models read");
        return;
    };
    let mut files = Vec::new();
    tflite_files(Path::new(&dir), 3, &mut files);
    files.sort();
    assert!(!files.is_empty(), "no .tflite files under {dir:?}");
    let mut histogram: BTreeMap<String, usize> = BTreeMap::new();
    let mut failures = Vec::new();
    for path in &files {
        let bytes = ModelBytes::read(path, 1 << 32).unwrap();
        match Model::parse(bytes.as_bytes()) {
            Ok(model) => {
                assert_invariants(&model);
                for subgraph in model.subgraphs() {
                    for operator in subgraph.operators() {
                        *histogram.entry(operator.op().to_string()).or_default() += 1;
                    }
                }
                eprintln!(
                    "ok   {} ({} bytes, {} subgraphs, {} operators, {} tensors)",
                    path.display(),
                    bytes.as_bytes().len(),
                    model.subgraphs().len(),
                    model.main_subgraph().operators().len(),
                    model.main_subgraph().tensors().len()
                );
            }
            Err(error) => {
                eprintln!("FAIL {}: {error}", path.display());
                failures.push((path.clone(), error));
            }
        }
    }
    eprintln!("operator histogram over {} files:", files.len());
    for (op, count) in &histogram {
        eprintln!("  {count:6}  {op}");
    }
    assert!(
        failures.is_empty(),
        "{} of {} files refused",
        failures.len(),
        files.len()
    );

    // Every truncation and single-bit flip of the small files: no panic,
    // and whatever still parses keeps the invariants.
    let (mut truncations, mut truncations_parsed) = (0usize, 0usize);
    let (mut flips, mut flips_parsed, mut small) = (0usize, 0usize, 0usize);
    for path in &files {
        let bytes = std::fs::read(path).unwrap();
        if bytes.len() > SMALL_FILE {
            continue;
        }
        small += 1;
        for len in 0..bytes.len() {
            truncations += 1;
            if let Ok(model) = Model::parse(&bytes[..len]) {
                assert_invariants(&model);
                truncations_parsed += 1;
            }
        }
        let mut flipped = bytes.clone();
        for bit in 0..bytes.len() * 8 {
            flipped[bit / 8] ^= 1 << (bit % 8);
            flips += 1;
            if let Ok(model) = Model::parse(&flipped) {
                assert_invariants(&model);
                flips_parsed += 1;
            }
            flipped[bit / 8] ^= 1 << (bit % 8);
        }
    }
    eprintln!(
        "{small} files of at most {SMALL_FILE} bytes: {truncations} truncations \
         ({truncations_parsed} parse), {flips} bit flips ({flips_parsed} parse); \
         no panic, invariants kept, the rest refused"
    );
}

/// Files up to this size also get every truncation and bit flip.
const SMALL_FILE: usize = 4096;
