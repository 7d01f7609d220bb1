//! TFLite's `Prepare` rules of the integer UNIDIRECTIONAL_SEQUENCE_LSTM in
//! models built here: a valid LSTM (2 steps, batch 1, 2 inputs, 3 cells)
//! loads and runs; each model that breaks one rule (a gate weight's shape,
//! optional tensors in a wrong combination, a state that is not variable,
//! a bad scale or zero point, a wrong type) is an error that names the op
//! and what is wrong (the tensor, where there is one), never a panic.

mod tflite_common;

use qneon::Method;
use qneon_runtime::interp::{Interpreter, Rounding};
use tflite_common::flat::{Field::*, Table};
use tflite_common::*;

const FLOAT32: u8 = 0;
const INT32: u8 = 2;
const INT16: u8 = 7;
const INT8: u8 = 9;

const LSTM: i32 = 44;
/// `BuiltinOptions::UnidirectionalSequenceLSTMOptions`.
const LSTM_OPTIONS: u8 = 71;

const STEPS: i32 = 2;
const INPUTS: i32 = 2;
const CELLS: i32 = 3;

/// One tensor of the model.
#[derive(Clone)]
struct Tensor {
    name: String,
    shape: Vec<i32>,
    dtype: u8,
    /// Constant data (little-endian bytes) or none.
    data: Option<Vec<u8>>,
    variable: bool,
    /// Per-tensor `(scale, zero point)`, or no quantization.
    quant: Option<(f32, i64)>,
}

impl Tensor {
    fn new(name: &str, shape: &[i32], dtype: u8, quant: Option<(f32, i64)>) -> Tensor {
        Tensor {
            name: name.to_string(),
            shape: shape.to_vec(),
            dtype,
            data: None,
            variable: false,
            quant,
        }
    }

    /// A constant filled with small values of its type.
    fn constant(name: &str, shape: &[i32], dtype: u8, scale: f32) -> Tensor {
        let n: i32 = shape.iter().product();
        let width = match dtype {
            INT32 | FLOAT32 => 4,
            INT16 => 2,
            _ => 1,
        };
        let data = (0..n)
            .flat_map(|i| {
                let v = (i % 7) as i64 - 3;
                v.to_le_bytes()[..width].to_vec()
            })
            .collect();
        Tensor {
            data: Some(data),
            ..Tensor::new(name, shape, dtype, Some((scale, 0)))
        }
    }
}

/// The op's inputs by TFLite's position (`None`: the optional input is
/// absent, -1), its tensors, options and intermediates.
struct Lstm {
    tensors: Vec<Tensor>,
    /// Tensor index per op input position (24 positions, or 20).
    inputs: Vec<Option<usize>>,
    output: usize,
    options: Option<Table>,
    intermediates: Vec<usize>,
}

/// Positions of TFLite's LSTM inputs.
const INPUT: usize = 0;
const INPUT_TO_INPUT: usize = 1;
const INPUT_TO_FORGET: usize = 2;
const RECURRENT_TO_INPUT: usize = 5;
const RECURRENT_TO_CELL: usize = 7;
const CELL_TO_INPUT: usize = 9;
const CELL_TO_FORGET: usize = 10;
const CELL_TO_OUTPUT: usize = 11;
const INPUT_GATE_BIAS: usize = 12;
const FORGET_GATE_BIAS: usize = 13;
const PROJECTION_WEIGHTS: usize = 16;
const PROJECTION_BIAS: usize = 17;
const OUTPUT_STATE: usize = 18;
const CELL_STATE: usize = 19;
const FORGET_LAYER_NORM: usize = 21;

const GATES: [&str; 4] = ["input", "forget", "cell", "output"];

impl Lstm {
    /// A valid integer LSTM: full gates, no peephole, projection or layer
    /// normalization; 24 input positions.
    fn valid() -> Lstm {
        let mut tensors = vec![Tensor::new("x", &[1, STEPS, INPUTS], INT8, Some((0.05, 3)))];
        let mut inputs = vec![Some(0)];
        let mut add = |t: Tensor, inputs: &mut Vec<Option<usize>>| {
            tensors.push(t);
            inputs.push(Some(tensors.len() - 1));
        };
        for g in GATES {
            let name = format!("input_to_{g}");
            add(
                Tensor::constant(&name, &[CELLS, INPUTS], INT8, 0.02),
                &mut inputs,
            );
        }
        for g in GATES {
            let name = format!("recurrent_to_{g}");
            add(
                Tensor::constant(&name, &[CELLS, CELLS], INT8, 0.03),
                &mut inputs,
            );
        }
        inputs.extend([None, None, None]);
        for g in GATES {
            let name = format!("{g}_gate_bias");
            add(Tensor::constant(&name, &[CELLS], INT32, 0.001), &mut inputs);
        }
        inputs.extend([None, None]);
        let mut output_state = Tensor::new("output_state", &[1, CELLS], INT8, Some((0.04, -2)));
        output_state.variable = true;
        add(output_state, &mut inputs);
        let mut cell_state = Tensor::new("cell_state", &[1, CELLS], INT16, Some((1.0 / 2048.0, 0)));
        cell_state.variable = true;
        add(cell_state, &mut inputs);
        inputs.extend([None, None, None, None]);
        tensors.push(Tensor::new("y", &[1, STEPS, CELLS], INT8, Some((0.04, -2))));
        let output = tensors.len() - 1;
        let mut intermediates = vec![];
        for i in 0..5 {
            let (dtype, quant) = if i == 4 {
                (INT8, (0.007, 1))
            } else {
                (INT16, (1.0 / 4096.0, 0))
            };
            tensors.push(Tensor::new(
                &format!("intermediate_{i}"),
                &[],
                dtype,
                Some(quant),
            ));
            intermediates.push(tensors.len() - 1);
        }
        Lstm {
            tensors,
            inputs,
            output,
            options: Some(Table(vec![(0, U8(0))])),
            intermediates,
        }
    }

    /// The tensor at input position `i`.
    fn at(&mut self, i: usize) -> &mut Tensor {
        let t = self.inputs[i].expect("present input");
        &mut self.tensors[t]
    }

    /// The tensor at input position `i` with a new shape (a constant's data
    /// made again for it, so that the file stays well formed).
    fn reshape(&mut self, i: usize, shape: &[i32]) {
        let t = self.at(i);
        *t = match t.data {
            Some(_) => Tensor {
                variable: t.variable,
                quant: t.quant,
                ..Tensor::constant(&t.name, shape, t.dtype, 1.0)
            },
            None => Tensor {
                shape: shape.to_vec(),
                ..t.clone()
            },
        };
    }

    /// A new tensor put at input position `i`.
    fn put(&mut self, i: usize, t: Tensor) {
        self.tensors.push(t);
        self.inputs[i] = Some(self.tensors.len() - 1);
    }

    fn model(&self) -> Vec<u8> {
        let mut buffers = vec![Table(vec![])];
        let tensors = self
            .tensors
            .iter()
            .map(|t| {
                let buffer = match &t.data {
                    Some(bytes) => {
                        buffers.push(Table(vec![(0, Bytes(bytes.clone()))]));
                        buffers.len() as u32 - 1
                    }
                    None => 0,
                };
                let mut fields = vec![
                    (0, I32s(t.shape.clone())),
                    (1, U8(t.dtype)),
                    (2, U32(buffer)),
                    (3, Str(t.name.clone())),
                ];
                if let Some((scale, zero_point)) = t.quant {
                    fields.push((
                        4,
                        flat::Field::Table(Table(vec![
                            (2, F32s(vec![scale])),
                            (3, I64s(vec![zero_point])),
                        ])),
                    ));
                }
                if t.variable {
                    fields.push((5, Bool(true)));
                }
                Table(fields)
            })
            .collect();
        let inputs = self
            .inputs
            .iter()
            .map(|i| i.map_or(-1, |i| i as i32))
            .collect();
        let mut operator = vec![
            (0, U32(0)),
            (1, I32s(inputs)),
            (2, I32s(vec![self.output as i32])),
            (
                8,
                I32s(self.intermediates.iter().map(|&i| i as i32).collect()),
            ),
        ];
        if let Some(options) = &self.options {
            operator.push((3, U8(LSTM_OPTIONS)));
            let fields = options.0.iter().map(clone_field).collect();
            operator.push((4, flat::Field::Table(Table(fields))));
        }
        let model = Table(vec![
            (0, U32(3)),
            (
                1,
                Tables(vec![Table(vec![
                    (0, U8(LSTM as u8)),
                    (2, I32(1)),
                    (3, I32(LSTM)),
                ])]),
            ),
            (
                2,
                Tables(vec![Table(vec![
                    (0, Tables(tensors)),
                    (1, I32s(vec![0])),
                    (2, I32s(vec![self.output as i32])),
                    (3, Tables(vec![Table(operator)])),
                    (4, Str("main".to_string())),
                ])]),
            ),
            (4, Tables(buffers)),
        ]);
        flat::file(&model)
    }

    fn load(&self) -> Result<(), String> {
        let file = qneon_tflite::ModelBytes::copy_from(&self.model());
        Interpreter::new(
            file.as_bytes(),
            options(Rounding::Single, Method::FixedPoint),
        )
        .map(|_| ())
        .map_err(|e| e.to_string())
    }
}

/// The option fields used here are scalars.
fn clone_field(f: &(u16, flat::Field)) -> (u16, flat::Field) {
    let value = match &f.1 {
        U8(v) => U8(*v),
        Bool(v) => Bool(*v),
        I32(v) => I32(*v),
        _ => unreachable!("only scalar option fields are used"),
    };
    (f.0, value)
}

#[test]
fn the_valid_lstm_loads_and_runs() {
    let file = qneon_tflite::ModelBytes::copy_from(&Lstm::valid().model());
    let mut interpreter = Interpreter::new(
        file.as_bytes(),
        options(Rounding::Single, Method::FixedPoint),
    )
    .unwrap();
    let n = interpreter.inputs()[0].bytes;
    let x: Vec<u8> = (0..n).map(|i| (i * 37 % 256) as u8).collect();
    interpreter.set_input(0, &x).unwrap();
    interpreter.invoke().unwrap();
    assert_eq!(
        interpreter.output(0).unwrap().len(),
        (STEPS * CELLS) as usize
    );
}

/// Each case: a name, the broken model, and words its error must contain
/// (besides the op's name).
fn malformed() -> Vec<(&'static str, Lstm, Vec<&'static str>)> {
    let mut cases = vec![];
    let mut case = |name, edit: &dyn Fn(&mut Lstm), words: Vec<&'static str>| {
        let mut m = Lstm::valid();
        edit(&mut m);
        cases.push((name, m, words));
    };
    case(
        "input_to_forget_shape",
        &|m| m.reshape(INPUT_TO_FORGET, &[CELLS, INPUTS + 1]),
        vec!["input_to_forget", "shape"],
    );
    case(
        "recurrent_to_cell_shape",
        &|m| m.reshape(RECURRENT_TO_CELL, &[CELLS + 1, CELLS]),
        vec!["recurrent_to_cell", "shape"],
    );
    case(
        "input_rank_2",
        &|m| m.reshape(INPUT, &[STEPS, INPUTS]),
        vec!["x", "rank 3"],
    );
    case(
        "output_shape",
        &|m| {
            let y = m.output;
            m.tensors[y].shape = vec![1, STEPS + 1, CELLS];
        },
        vec!["y", "shape"],
    );
    case(
        "cifg_half",
        &|m| m.inputs[INPUT_TO_INPUT] = None,
        vec!["CIFG"],
    );
    case(
        "cifg_with_input_bias",
        &|m| {
            m.inputs[INPUT_TO_INPUT] = None;
            m.inputs[RECURRENT_TO_INPUT] = None;
        },
        vec!["input gate bias", "CIFG"],
    );
    case(
        "peephole_partial",
        &|m| {
            let w = Tensor::constant("cell_to_forget", &[CELLS], INT16, 0.01);
            m.put(CELL_TO_FORGET, w);
        },
        vec!["peephole"],
    );
    case(
        "cifg_with_cell_to_input",
        &|m| {
            m.inputs[INPUT_TO_INPUT] = None;
            m.inputs[RECURRENT_TO_INPUT] = None;
            m.inputs[INPUT_GATE_BIAS] = None;
            for (i, name) in [
                (CELL_TO_INPUT, "cell_to_input"),
                (CELL_TO_FORGET, "cell_to_forget"),
                (CELL_TO_OUTPUT, "cell_to_output"),
            ] {
                m.put(i, Tensor::constant(name, &[CELLS], INT16, 0.01));
            }
        },
        vec!["cell-to-input", "CIFG"],
    );
    case(
        "peephole_wrong_type",
        &|m| {
            for (i, name) in [
                (CELL_TO_INPUT, "cell_to_input"),
                (CELL_TO_FORGET, "cell_to_forget"),
                (CELL_TO_OUTPUT, "cell_to_output"),
            ] {
                m.put(i, Tensor::constant(name, &[CELLS], INT8, 0.01));
            }
        },
        vec!["cell_to_input", "Int8"],
    );
    case(
        "layer_norm_partial",
        &|m| {
            let w = Tensor::constant("forget_layer_norm", &[CELLS], INT16, 0.001);
            m.put(FORGET_LAYER_NORM, w);
        },
        vec!["layer norm", "input 20"],
    );
    case(
        "projection_bias_alone",
        &|m| {
            let b = Tensor::constant("projection_bias", &[CELLS], INT32, 0.001);
            m.put(PROJECTION_BIAS, b);
        },
        vec!["projection bias"],
    );
    case(
        "projection_shape",
        &|m| {
            let w = Tensor::constant("projection_weights", &[CELLS, CELLS + 1], INT8, 0.02);
            m.put(PROJECTION_WEIGHTS, w);
        },
        vec!["projection_weights", "shape"],
    );
    case(
        "output_state_not_variable",
        &|m| m.at(OUTPUT_STATE).variable = false,
        vec!["output_state", "not a variable"],
    );
    case(
        "cell_state_not_variable",
        &|m| m.at(CELL_STATE).variable = false,
        vec!["cell_state", "not a variable"],
    );
    case(
        "cell_state_int8",
        &|m| m.at(CELL_STATE).dtype = INT8,
        vec!["cell_state", "Int8"],
    );
    case(
        "cell_state_size",
        &|m| m.reshape(CELL_STATE, &[1, CELLS + 1]),
        vec!["cell_state", "elements"],
    );
    case(
        "cell_state_zero_point",
        &|m| m.at(CELL_STATE).quant = Some((1.0 / 2048.0, 5)),
        vec!["cell state zero point"],
    );
    case(
        "output_state_quantization",
        &|m| m.at(OUTPUT_STATE).quant = Some((0.05, -2)),
        vec!["output state"],
    );
    case(
        "weights_not_quantized",
        &|m| m.at(INPUT_TO_FORGET).quant = None,
        vec!["input_to_forget", "quantized"],
    );
    case(
        "weights_not_constant",
        &|m| m.at(RECURRENT_TO_CELL).data = None,
        vec!["recurrent_to_cell", "not constant"],
    );
    case(
        "weights_int16",
        &|m| {
            let w = Tensor::constant("input_to_forget", &[CELLS, INPUTS], INT16, 0.02);
            m.put(INPUT_TO_FORGET, w);
        },
        vec!["input_to_forget", "Int16"],
    );
    case(
        "bias_int8",
        &|m| {
            let b = Tensor::constant("forget_gate_bias", &[CELLS], INT8, 0.001);
            m.put(FORGET_GATE_BIAS, b);
        },
        vec!["forget_gate_bias", "Int8"],
    );
    case(
        "float_input",
        &|m| m.at(INPUT).dtype = FLOAT32,
        vec!["integer LSTM"],
    );
    case(
        "input_scale_zero",
        &|m| m.at(INPUT).quant = Some((0.0, 3)),
        vec!["scale"],
    );
    case(
        "weights_scale_negative",
        &|m| m.at(INPUT_TO_FORGET).quant = Some((-0.02, 0)),
        vec!["scale"],
    );
    case(
        "no_intermediates",
        &|m| m.intermediates.clear(),
        vec!["intermediate 4"],
    );
    case("no_options", &|m| m.options = None, vec!["Options"]);
    case(
        "batch_major_written_out",
        &|m| m.options = Some(Table(vec![(0, U8(0)), (3, Bool(false))])),
        vec![],
    );
    case(
        "asymmetric_inputs",
        &|m| m.options = Some(Table(vec![(0, U8(0)), (4, Bool(true))])),
        vec!["asymmetric_quantize_inputs"],
    );
    case(
        "nineteen_inputs",
        &|m| m.inputs.truncate(19),
        vec!["19 inputs"],
    );
    cases
}

#[test]
fn malformed_lstms_are_errors_naming_the_op_and_tensor() {
    let cases = malformed();
    assert!(cases.len() >= 25);
    let mut failures = vec![];
    for (name, model, words) in cases {
        if words.is_empty() {
            // A variant of the valid model that TFLite takes too.
            if let Err(e) = model.load() {
                failures.push(format!("{name}: refused: {e}"));
            }
            continue;
        }
        let error = match model.load() {
            Ok(()) => {
                failures.push(format!("{name}: loaded"));
                continue;
            }
            Err(e) => e,
        };
        for word in ["UNIDIRECTIONAL_SEQUENCE_LSTM"].iter().chain(&words) {
            if !error.contains(word) {
                failures.push(format!("{name}: {error:?} lacks {word:?}"));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
