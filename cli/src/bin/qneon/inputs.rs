//! The model's inputs: `--input K=FILE.npy` files checked against the
//! model, and seeded values for the inputs not given.

use std::path::Path;

use qneon_runtime::interp::Interpreter;
use qneon_runtime::npy::NpyArray;
use qneon_tflite::TensorType;

/// NumPy's name of a dtype (`int8`, `float32`).
pub(crate) fn numpy_name(dtype: TensorType) -> String {
    dtype.name().to_ascii_lowercase()
}

/// Sets every input of `interpreter`: from the `--input` specs `specs`
/// (`K=FILE.npy`, split at the first `=`), the others seeded.
pub(crate) fn set_inputs(
    interpreter: &mut Interpreter<'_>,
    specs: &[String],
) -> Result<(), String> {
    let mut given = vec![false; interpreter.inputs().len()];
    for spec in specs {
        let (key, file) = spec
            .split_once('=')
            .ok_or_else(|| format!("--input {spec:?}: expected K=FILE.npy"))?;
        let position = interpreter.input_position(key).ok_or_else(|| {
            let names: Vec<String> = interpreter
                .inputs()
                .iter()
                .map(|t| t.name.clone())
                .collect();
            format!(
                "--input {key:?}: no such input (inputs: {})",
                names.join(", ")
            )
        })?;
        let array = NpyArray::read(Path::new(file))?;
        let info = interpreter.inputs()[position];
        if array.dtype != info.dtype || array.shape != info.shape {
            return Err(format!(
                "{file}: {} {:?}, but input {position} ({}) is {} {:?}",
                numpy_name(array.dtype),
                array.shape,
                info.name,
                numpy_name(info.dtype),
                info.shape
            ));
        }
        interpreter
            .set_input(position, &array.data)
            .map_err(|e| e.to_string())?;
        given[position] = true;
    }
    for (position, given) in given.iter().enumerate() {
        if !given {
            let data = seeded_input(interpreter, position);
            interpreter
                .set_input(position, &data)
                .map_err(|e| e.to_string())?;
        }
    }
    Ok(())
}

/// SplitMix64: the seeded inputs' generator.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

/// Seeded bytes for input `position` (seed 2024 + position): integer types
/// uniform over their whole range, except int32, uniform in `0..bound`
/// where `bound` is the smallest dimension of any table a GATHER indexes
/// with this input (so every index is valid), else `0..2` (masks, type
/// ids); float32 uniform in [-1, 1).
fn seeded_input(interpreter: &Interpreter<'_>, position: usize) -> Vec<u8> {
    let info = interpreter.inputs()[position].clone();
    let mut rng = SplitMix64(2024 + position as u64);
    let count = info.shape.iter().product::<usize>();
    let tensors = interpreter.tensors();
    let bound = interpreter
        .nodes()
        .filter(|n| n.op == "GATHER" && n.inputs.get(1) == Some(&Some(info.index)))
        .filter_map(|n| n.inputs[0].map(|t| tensors[t].shape.iter().copied().min().unwrap_or(1)))
        .min()
        .unwrap_or(2)
        .max(1) as u64;
    let mut out = Vec::with_capacity(info.bytes);
    for _ in 0..count {
        let r = rng.next();
        match info.dtype {
            TensorType::Int32 => out.extend_from_slice(&((r % bound) as i32).to_le_bytes()),
            TensorType::Float32 => {
                let unit = (r >> 40) as f32 / (1u64 << 24) as f32;
                out.extend_from_slice(&(2.0 * unit - 1.0).to_le_bytes());
            }
            TensorType::Int16 => out.extend_from_slice(&(r as i16).to_le_bytes()),
            TensorType::Int64 => out.extend_from_slice(&((r % bound) as i64).to_le_bytes()),
            _ => out.push(r as u8),
        }
    }
    out.resize(info.bytes, 0);
    out
}
