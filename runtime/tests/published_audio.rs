//! The published recurrent models (`models/tflite_micro/`) run as
//! sequences of invokes on one interpreter, the state carried in the
//! session's variable tensors, against LiteRT's sequences
//! (`tflite_micro/refs/sequences.json`). One section per model family:
//! the SVDF keyword spotters first.

mod tflite_common;

use qneon::{Backend, Method};
use qneon_runtime::interp::{Interpreter, Rounding, TfliteKernels};
use serde_json::Value;
use tflite_common::*;

/// (reference, kernels): LiteRT's x86 kernel paths with the settings that
/// reproduce them on these models.
const PATHS: &[(&str, TfliteKernels, Method)] = &[
    ("litert_ref", TfliteKernels::Reference, Method::FixedPoint),
    ("litert_builtin", TfliteKernels::Optimized, Method::Lut),
    ("litert_xnnpack", TfliteKernels::Xnnpack, Method::Lut),
];

fn files(list: &Value) -> Vec<String> {
    list.as_array()
        .unwrap()
        .iter()
        .map(|f| f.as_str().unwrap().to_string())
        .collect()
}

/// The entry of `file` in `sequences.json`.
fn sequences_of(file: &str) -> Value {
    let manifest = manifest("tflite_micro/refs/sequences.json");
    manifest["models"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["model"] == format!("tflite_micro/{file}"))
        .unwrap_or_else(|| panic!("{file} is not in sequences.json"))
        .clone()
}

/// Every sequence of `file` on each path and on the scalar and best
/// backend: each step's outputs equal LiteRT's after that step, and a
/// reset gives step 0's again. Returns the steps checked.
fn check_sequences(file: &str) -> usize {
    let entry = sequences_of(file);
    let bytes = read_model(entry["model"].as_str().unwrap());
    let mut checked = 0;
    for &(reference, kernels, method) in PATHS {
        for backend in [Backend::Scalar, Backend::best()] {
            let mut options = options(Rounding::Single, method);
            options.kernels = kernels;
            options.backend = backend;
            let mut interpreter = Interpreter::new(bytes.as_bytes(), options)
                .unwrap_or_else(|e| panic!("{file}: {e}"));
            for seq in entry["sequences"].as_array().unwrap() {
                interpreter.reset_variables();
                let steps = seq["steps"].as_array().unwrap();
                for pass in 0..2 {
                    // Pass 1 repeats step 0 after a reset.
                    let steps = if pass == 0 { &steps[..] } else { &steps[..1] };
                    for (k, step) in steps.iter().enumerate() {
                        for (i, input) in files(&step["inputs"]).iter().enumerate() {
                            interpreter.set_input(i, &npy(input).data).unwrap();
                        }
                        interpreter.invoke().unwrap();
                        for (i, expected) in files(&step["outputs"][reference]).iter().enumerate() {
                            assert_eq!(
                                interpreter.output(i).unwrap(),
                                &npy(expected).data[..],
                                "{file} {} step {k} (pass {pass}) output {i}: {reference} on \
                                 {backend:?}",
                                seq["name"]
                            );
                        }
                        checked += 1;
                    }
                    interpreter.reset_variables();
                }
            }
        }
    }
    checked
}

// --- SVDF keyword spotters ---------------------------------------------

#[test]
fn keyword_scrambled_sequences_equal_litert() {
    let checked = check_sequences("keyword_scrambled.tflite");
    assert!(checked >= 3 * 2 * 3 * 4, "{checked}");
}

/// The model with its (single) output index set to tensor `t`, so that the
/// runtime keeps `t` as an output after invoke. The FlatBuffers walk: root
/// table -> Model field 2 (`subgraphs`) -> the first SubGraph's field 2
/// (`outputs`, a vector of int32) -> its one element.
fn with_output(bytes: &[u8], t: usize) -> Vec<u8> {
    let mut b = bytes.to_vec();
    let u32_at =
        |b: &[u8], at: usize| u32::from_le_bytes(b[at..at + 4].try_into().unwrap()) as usize;
    let field = |b: &[u8], table: usize, id: usize| -> usize {
        let soffset = i32::from_le_bytes(b[table..table + 4].try_into().unwrap());
        let vtable = (table as i64 - soffset as i64) as usize;
        let slot = u16::from_le_bytes(
            b[vtable + 4 + 2 * id..vtable + 6 + 2 * id]
                .try_into()
                .unwrap(),
        );
        assert_ne!(slot, 0, "field {id} present");
        table + slot as usize
    };
    let model = u32_at(&b, 0);
    let subgraphs = field(&b, model, 2);
    let subgraphs = subgraphs + u32_at(&b, subgraphs);
    let first = subgraphs + 4 + u32_at(&b, subgraphs + 4);
    let outputs = field(&b, first, 2);
    let outputs = outputs + u32_at(&b, outputs);
    assert_eq!(u32_at(&b, outputs), 1, "one model output");
    b[outputs + 4..outputs + 8].copy_from_slice(&(t as i32).to_le_bytes());
    b
}

/// Signed values of a tensor's bytes (int8, int16 or int32).
fn values(bytes: &[u8], dtype: qneon_tflite::TensorType) -> Vec<i64> {
    use qneon_tflite::TensorType as T;
    match dtype {
        T::Int8 => bytes.iter().map(|&b| b as i8 as i64).collect(),
        T::Int16 => bytes
            .chunks_exact(2)
            .map(|c| i16::from_le_bytes([c[0], c[1]]) as i64)
            .collect(),
        T::Int32 => bytes
            .chunks_exact(4)
            .map(|c| i32::from_le_bytes(c.try_into().unwrap()) as i64)
            .collect(),
        other => panic!("{other:?}"),
    }
}

/// `x` rounded half away from zero (TFLite's `round`).
fn round(x: f64) -> i64 {
    x.round() as i64
}

/// Checks every SVDF of `file` over a sequence against an f64 oracle of
/// TFLite's integer SVDF (`EvalIntegerSvdfReference`, TFLite Micro's, with
/// the state zero point) computed from the runtime's own SVDF input and
/// state at each step:
///
/// * the state's older columns are the previous step's, moved one older
///   (exactly);
/// * its newest column is `zp_s + clamp_S(round(M1 * dot))`, `dot = sum
///   wf * (x - zp_x)` in integers, `M1 = s_x * s_wf / s_s` as a real;
/// * the output is `clamp_i8(round(M2 * acc) + zp_y)`, `acc = bias + sum
///   wt * (s - zp_s)` in integers wrapped to int32 as TFLite's int32 sums
///   wrap, `M2 = s_s * s_wt / s_y`.
///
/// The bound, 1 step for each value: TFLite forms the same integer `dot`
/// and `acc` and scales them by `M` as a Q0.31 multiplier (relative error
/// below 2^-31) with its own tie rule; the oracle scales by the real `M`
/// and rounds half away from zero. Both land within 0.5 (+ 2^-31 |M acc|)
/// of the real product, so their integers differ by at most 1, and only
/// next to a tie. Returns (values checked, values 1 apart).
fn svdf_oracle(file: &str, inputs: &[Vec<u8>], backend: Backend) -> (usize, usize) {
    use qneon_tflite::{BuiltinOp, Model, Options as OpOptions, TensorType};
    let bytes = read_model(&format!("tflite_micro/{file}"));
    let model = Model::parse(bytes.as_bytes()).unwrap();
    let graph = model.main_subgraph();
    let mut options = options(Rounding::Single, Method::FixedPoint);
    options.backend = backend;
    let (mut checked, mut off_by_one) = (0, 0);
    for operator in graph.operators() {
        if operator.builtin() != Some(BuiltinOp::SVDF) {
            continue;
        }
        let ins: Vec<usize> = operator
            .inputs()
            .iter()
            .map(|t| t.unwrap_or(usize::MAX))
            .collect();
        let (x_t, wf_t, wt_t, bias_t, state_t) = (ins[0], ins[1], ins[2], ins[3], ins[4]);
        let y_t = operator.outputs()[0].unwrap();
        let tensor = |t: usize| graph.tensor(t).unwrap();
        let q = |t: usize| tensor(t).quantization().unwrap().per_tensor().unwrap();
        let ints = |t: usize| -> Vec<i64> {
            let tensor = tensor(t);
            match tensor.dtype() {
                TensorType::Int8 => tensor
                    .constant_values::<i8>()
                    .unwrap()
                    .unwrap()
                    .iter()
                    .map(|&v| v as i64)
                    .collect(),
                TensorType::Int16 => tensor
                    .constant_values::<i16>()
                    .unwrap()
                    .unwrap()
                    .iter()
                    .map(|&v| v as i64)
                    .collect(),
                TensorType::Int32 => tensor
                    .constant_values::<i32>()
                    .unwrap()
                    .unwrap()
                    .iter()
                    .map(|&v| v as i64)
                    .collect(),
                other => panic!("{other:?}"),
            }
        };
        let rank = match operator.options() {
            OpOptions::Builtin(qneon_tflite::schema::BuiltinOptions::SvdfOptions(o)) => {
                o.rank as usize
            }
            _ => panic!("SVDF options"),
        };
        let (wf, wt) = (ints(wf_t), ints(wt_t));
        let bias = (bias_t != usize::MAX).then(|| ints(bias_t));
        let input_size = tensor(x_t).shape()[1];
        let (filters, memory) = (tensor(wt_t).shape()[0], tensor(wt_t).shape()[1]);
        let units = filters / rank;
        let state_type = tensor(state_t).dtype();
        let (s_lo, s_hi, s_span) = if state_type == TensorType::Int8 {
            (-128i64, 127i64, 256i64)
        } else {
            (-32768, 32767, 65536)
        };
        let ((s_x, zp_x), (s_wf, _), (s_wt, _), (s_s, zp_s), (s_y, zp_y)) =
            (q(x_t), q(wf_t), q(wt_t), q(state_t), q(y_t));
        let m1 = (s_x * s_wf / s_s) as f64;
        let m2 = (s_s * s_wt / s_y) as f64;
        // One interpreter keeping the SVDF's input as the model output,
        // one its output: the same ops run in both, so the states agree.
        let with_x = with_output(bytes.as_bytes(), x_t);
        let with_y = with_output(bytes.as_bytes(), y_t);
        let mut at_x = Interpreter::new(&with_x, options).unwrap();
        let mut at_y = Interpreter::new(&with_y, options).unwrap();
        let mut previous: Vec<i64> = vec![zp_s; filters * memory];
        for (k, input) in inputs.iter().enumerate() {
            for interpreter in [&mut at_x, &mut at_y] {
                interpreter.set_input(0, input).unwrap();
                interpreter.invoke().unwrap();
            }
            let x = values(at_x.output(0).unwrap(), TensorType::Int8);
            let y = values(at_y.output(0).unwrap(), TensorType::Int8);
            let state = values(at_y.tensor_data(state_t).unwrap(), state_type);
            assert_eq!(
                values(at_x.tensor_data(state_t).unwrap(), state_type),
                state
            );
            for f in 0..filters {
                let row = &state[f * memory..(f + 1) * memory];
                assert_eq!(
                    row[..memory - 1],
                    previous[f * memory + 1..(f + 1) * memory],
                    "{file} SVDF {}: filter {f} step {k}: older columns",
                    operator.index()
                );
                let dot: i64 = (0..input_size)
                    .map(|i| wf[f * input_size + i] * (x[i] - zp_x))
                    .sum();
                let newest = round(m1 * dot as f64).clamp(s_lo, s_hi) + zp_s;
                // TFLite Micro narrows `zp + value` with a plain cast.
                let newest = (newest - s_lo).rem_euclid(s_span) + s_lo;
                let diff = (row[memory - 1] - newest).abs();
                assert!(
                    diff <= 1,
                    "{file} SVDF {}: filter {f} step {k}: newest {} vs {newest}",
                    operator.index(),
                    row[memory - 1]
                );
                off_by_one += diff as usize;
                checked += 1;
            }
            for u in 0..units {
                let mut acc = bias.as_ref().map_or(0, |b| b[u]);
                for f in u * rank..(u + 1) * rank {
                    for m in 0..memory {
                        acc += wt[f * memory + m] * (state[f * memory + m] - zp_s);
                    }
                }
                // TFLite sums in int32: int16 x int16 products over a long
                // memory leave it, and it wraps.
                let acc = acc as i32 as i64;
                let expected = (round(m2 * acc as f64) + zp_y).clamp(-128, 127);
                let diff = (y[u] - expected).abs();
                assert!(
                    diff <= 1,
                    "{file} SVDF {}: unit {u} step {k}: {} vs {expected}",
                    operator.index(),
                    y[u]
                );
                off_by_one += diff as usize;
                checked += 1;
            }
            previous = state;
        }
    }
    (checked, off_by_one)
}

/// Seeded int16 inputs for the keyword models (they take 1 x 96 int16):
/// uniform within `amplitude` of 0, `steps` of them.
fn keyword_inputs(seed: u64, steps: usize, amplitude: i64) -> Vec<Vec<u8>> {
    let mut state = seed;
    (0..steps)
        .map(|_| {
            (0..96)
                .flat_map(|_| {
                    state = state
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    let v = ((state >> 33) as i64 % (2 * amplitude + 1)) - amplitude;
                    (v as i16).to_le_bytes()
                })
                .collect()
        })
        .collect()
}

/// keyword_scrambled_8bit (int8 SVDF state, TFLite Micro's variant; LiteRT
/// 2.3 aborts on it, so no LiteRT output exists): it runs, never panics,
/// gives the same bytes on every backend, and every SVDF matches the f64
/// oracle of TFLite's int8 SVDF within its 1-step bound over 40 steps
/// (the longest memory, 32 columns, fills after 32).
#[test]
fn keyword_scrambled_8bit_svdfs_equal_the_f64_oracle() {
    for amplitude in [32767, 2000, 100] {
        let inputs = keyword_inputs(amplitude as u64, 40, amplitude);
        let mut outputs = Vec::new();
        for backend in [Backend::Scalar, Backend::best()] {
            let (checked, off) = svdf_oracle("keyword_scrambled_8bit.tflite", &inputs, backend);
            eprintln!("8bit amplitude {amplitude} {backend:?}: {off} of {checked} one step off");
            assert!(checked > 40 * 7 * 64, "{checked}");
            // Near-ties are rare: at most one value in a thousand.
            assert!(off * 1000 <= checked, "{off} of {checked} one step off");
            let bytes = read_model("tflite_micro/keyword_scrambled_8bit.tflite");
            let mut options = options(Rounding::Single, Method::FixedPoint);
            options.backend = backend;
            let mut interpreter = Interpreter::new(bytes.as_bytes(), options).unwrap();
            let mut out = Vec::new();
            for input in &inputs {
                interpreter.set_input(0, input).unwrap();
                interpreter.invoke().unwrap();
                out.push(interpreter.output(0).unwrap().to_vec());
            }
            outputs.push(out);
        }
        assert_eq!(outputs[0], outputs[1], "scalar and best backend");
    }
}

/// The same oracle holds on keyword_scrambled (int16 state), whose outputs
/// also equal LiteRT's.
#[test]
fn keyword_scrambled_svdfs_equal_the_f64_oracle() {
    let inputs = keyword_inputs(7, 12, 2000);
    let (checked, off) = svdf_oracle("keyword_scrambled.tflite", &inputs, Backend::best());
    eprintln!("int16 state: {off} of {checked} one step off");
    assert!(checked > 12 * 7 * 64, "{checked}");
    assert!(off * 1000 <= checked, "{off} of {checked} one step off");
}
