//! `cargo xtask gen-model`: builds the committed MobileBert layer files.
//!
//! Deterministic: seeded float weights, calibration on seeded inputs, f32
//! reference forward pass, quantization (all in `qneon_runtime::float`), so
//! running it again reproduces the committed bytes; `--check` verifies
//! exactly that without writing.

use crate::util::{self, Result};
use qneon_runtime::float::model_files;
use qneon_runtime::MobileBertConfig;
use std::fs;

/// The layer file, relative to the repository root.
pub const LAYER_FILE: &str = "models/mobilebert_layer.qnb";
/// The input file (int8 input and float reference output).
pub const INPUT_FILE: &str = "models/mobilebert_layer.input.bin";

pub fn cli(args: &[String]) -> Result {
    let mut check = false;
    for a in args {
        match a.as_str() {
            "--check" => check = true,
            other => return Err(format!("gen-model: unknown option `{other}`").into()),
        }
    }
    util::step(
        "building the MobileBert layer (seeded weights, calibration, f32 reference, quantization)",
    );
    let (layer, input) =
        model_files(MobileBertConfig::SQUAD).map_err(|e| format!("gen-model: {e}"))?;
    let root = util::root();
    for (path, bytes) in [(LAYER_FILE, &layer), (INPUT_FILE, &input)] {
        let full = root.join(path);
        if check {
            let old = fs::read(&full).map_err(|e| format!("{}: {e}", full.display()))?;
            if &old != bytes {
                return Err(format!(
                    "{path} differs from what gen-model builds now ({} vs {} bytes); \
                     run `cargo xtask gen-model` and commit the result",
                    old.len(),
                    bytes.len()
                )
                .into());
            }
            println!("{path}: up to date ({} bytes)", bytes.len());
        } else {
            fs::write(&full, bytes).map_err(|e| format!("{}: {e}", full.display()))?;
            println!("wrote {path} ({} bytes)", bytes.len());
        }
    }
    Ok(())
}
