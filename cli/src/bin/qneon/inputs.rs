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

/// The inputs of every invoke: per step, the bytes of each input. An
/// `--input K=FILE.npy` spec gives one file for every step; `K=A.npy,B.npy`
/// one file per step (the FILE part split at commas), so a stateful model
/// sees a sequence. Inputs not given get seeded values, the same each step.
pub(crate) struct Sequence {
    /// `per_step[k][position]`: the bytes of input `position` at step `k`.
    per_step: Vec<Vec<Vec<u8>>>,
}

impl Sequence {
    /// Reads and checks the `--input` specs `specs` against the model.
    /// Errors: a malformed spec, an unknown input, a file that is not the
    /// input's dtype and shape, or two inputs with different step counts
    /// (other than one).
    pub(crate) fn load(
        interpreter: &Interpreter<'_>,
        specs: &[String],
    ) -> Result<Sequence, String> {
        let count = interpreter.inputs().len();
        let mut given: Vec<Option<Vec<Vec<u8>>>> = vec![None; count];
        for spec in specs {
            let (key, files) = spec
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
            let info = interpreter.inputs()[position];
            let mut steps = Vec::new();
            for file in files.split(',') {
                let array = NpyArray::read(Path::new(file))?;
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
                steps.push(array.data);
            }
            given[position] = Some(steps);
        }
        let steps = given.iter().flatten().map(Vec::len).max().unwrap_or(1);
        if let Some((position, files)) = given.iter().enumerate().find_map(|(p, g)| {
            g.as_ref()
                .map(|g| (p, g.len()))
                .filter(|&(_, n)| n != 1 && n != steps)
        }) {
            return Err(format!(
                "--input: input {position} has {files} files, another {steps}; give each input \
                 one file or the same number"
            ));
        }
        let per_input: Vec<Vec<Vec<u8>>> = given
            .into_iter()
            .enumerate()
            .map(|(position, g)| g.unwrap_or_else(|| vec![seeded_input(interpreter, position)]))
            .collect();
        let per_step = (0..steps)
            .map(|k| {
                per_input
                    .iter()
                    .map(|files| files[k.min(files.len() - 1)].clone())
                    .collect()
            })
            .collect();
        Ok(Sequence { per_step })
    }

    /// Invokes in the sequence (1 without comma-separated files).
    pub(crate) fn steps(&self) -> usize {
        self.per_step.len()
    }

    /// Sets every input to its bytes at step `k`.
    pub(crate) fn set(&self, interpreter: &mut Interpreter<'_>, k: usize) -> Result<(), String> {
        for (position, data) in self.per_step[k].iter().enumerate() {
            interpreter
                .set_input(position, data)
                .map_err(|e| e.to_string())?;
        }
        Ok(())
    }
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
