//! SQUEEZE, EXPAND_DIMS, SPACE_TO_DEPTH and DEPTH_TO_SPACE in models built
//! here: valid ones run and give the bytes of each op's element formula
//! (written out below, independently of the runtime's strided copies); each
//! broken `Prepare` rule is an error naming the operator, never a panic.

mod tflite_common;

use qneon::Method;
use qneon_runtime::interp::{Interpreter, Rounding};
use qneon_runtime::Error;
use tflite_common::flat::{Field::*, Table};
use tflite_common::*;

const INT8: u8 = 9;
const INT32: u8 = 2;

/// One op of `code` on an int8 `input` into an int8 `output`, with
/// `options` of union type `options_type` and, if given, a constant int32
/// second input.
struct OneOp {
    code: i32,
    input: Vec<i32>,
    output: Vec<i32>,
    constant: Option<Vec<i32>>,
    options_type: u8,
    /// SQUEEZE's squeeze_dims (field 0, a vector) or the block size (field
    /// 0, an int) of the block ops; neither for EXPAND_DIMS.
    dims: Option<Vec<i32>>,
    block: Option<i32>,
}

impl OneOp {
    fn model(&self) -> Vec<u8> {
        let quantization = || Table(vec![(2, F32s(vec![0.5])), (3, I64s(vec![3]))]);
        let tensor = |name: &str, shape: &[i32], dtype: u8, buffer: u32| {
            Table(vec![
                (0, I32s(shape.to_vec())),
                (1, U8(dtype)),
                (2, U32(buffer)),
                (3, Str(name.to_string())),
                (4, flat::Field::Table(quantization())),
            ])
        };
        let mut tensors = vec![
            tensor("x", &self.input, INT8, 0),
            tensor("y", &self.output, INT8, 0),
        ];
        let mut buffers = vec![Table(vec![])];
        let mut inputs = vec![0];
        if let Some(values) = &self.constant {
            let len = values.len() as i32;
            tensors.push(tensor("k", &[len], INT32, 1));
            let bytes = values.iter().flat_map(|v| v.to_le_bytes()).collect();
            buffers.push(Table(vec![(0, Bytes(bytes))]));
            inputs.push(2);
        }
        let code = self.code;
        let small = code.min(127) as u8;
        let model = Table(vec![
            (0, U32(3)),
            (
                1,
                Tables(vec![Table(vec![
                    (0, U8(small)),
                    (2, I32(1)),
                    (3, I32(code)),
                ])]),
            ),
            (
                2,
                Tables(vec![Table(vec![
                    (0, Tables(tensors)),
                    (1, I32s(vec![0])),
                    (2, I32s(vec![1])),
                    (
                        3,
                        Tables(vec![Table(vec![
                            (0, U32(0)),
                            (1, I32s(inputs)),
                            (2, I32s(vec![1])),
                            (3, U8(self.options_type)),
                            (4, flat::Field::Table(self.options())),
                        ])]),
                    ),
                    (4, Str("main".to_string())),
                ])]),
            ),
            (4, Tables(buffers)),
        ]);
        flat::file(&model)
    }

    fn options(&self) -> Table {
        match (&self.dims, self.block) {
            (Some(dims), _) => Table(vec![(0, I32s(dims.clone()))]),
            (None, Some(block)) => Table(vec![(0, I32(block))]),
            (None, None) => Table(vec![]),
        }
    }

    fn load(&self) -> Result<(), Error> {
        let file = qneon_tflite::ModelBytes::copy_from(&self.model());
        Interpreter::new(
            file.as_bytes(),
            options(Rounding::Single, Method::FixedPoint),
        )
        .map(|_| ())
    }

    /// The op's outputs on the input bytes `0, 1, 2, ...` (mod 251).
    fn run(&self) -> (Vec<u8>, Vec<u8>) {
        let file = qneon_tflite::ModelBytes::copy_from(&self.model());
        let mut interpreter = Interpreter::new(
            file.as_bytes(),
            options(Rounding::Single, Method::FixedPoint),
        )
        .unwrap();
        let n = interpreter.inputs()[0].bytes;
        let x: Vec<u8> = (0..n).map(|i| (i % 251) as u8).collect();
        interpreter.set_input(0, &x).unwrap();
        interpreter.invoke().unwrap();
        (x, interpreter.output(0).unwrap().to_vec())
    }
}

const SQUEEZE: i32 = 43;
const EXPAND_DIMS: i32 = 70;
const SPACE_TO_DEPTH: i32 = 26;
const DEPTH_TO_SPACE: i32 = 5;

fn squeeze(input: &[i32], dims: &[i32], output: &[i32]) -> OneOp {
    OneOp {
        code: SQUEEZE,
        input: input.to_vec(),
        output: output.to_vec(),
        constant: None,
        options_type: 30,
        dims: Some(dims.to_vec()),
        block: None,
    }
}

fn expand_dims(input: &[i32], axis: &[i32], output: &[i32]) -> OneOp {
    OneOp {
        code: EXPAND_DIMS,
        input: input.to_vec(),
        output: output.to_vec(),
        constant: Some(axis.to_vec()),
        options_type: 52,
        dims: None,
        block: None,
    }
}

fn block_op(code: i32, input: &[i32], block: i32, output: &[i32]) -> OneOp {
    let options_type = if code == SPACE_TO_DEPTH { 19 } else { 94 };
    OneOp {
        code,
        input: input.to_vec(),
        output: output.to_vec(),
        constant: None,
        options_type,
        dims: None,
        block: Some(block),
    }
}

/// `op` must be refused as invalid, naming `name`, its message holding
/// every one of `words`.
fn refused(op: &OneOp, name: &str, words: &[&str]) {
    match op.load() {
        Err(e @ Error::InvalidOp { .. }) => {
            let text = e.to_string();
            let Error::InvalidOp { op, .. } = &e else {
                unreachable!()
            };
            assert_eq!(op, name, "{text}");
            for w in words {
                assert!(text.contains(w), "{text} lacks {w:?}");
            }
        }
        other => panic!("{name} {words:?}: {other:?}"),
    }
}

#[test]
fn squeeze_and_expand_dims_keep_the_bytes() {
    for op in [
        squeeze(&[1, 3, 1, 4], &[0, 2], &[3, 4]),
        squeeze(&[1, 3, 1, 4], &[], &[3, 4]),
        squeeze(&[2, 1, 5], &[-2], &[2, 5]),
        expand_dims(&[3, 4], &[0], &[1, 3, 4]),
        expand_dims(&[3, 4], &[-1], &[3, 4, 1]),
        expand_dims(&[3, 4], &[1], &[3, 1, 4]),
    ] {
        let (x, y) = op.run();
        assert_eq!(x, y);
    }
}

/// SPACE_TO_DEPTH's element formula: output `[n, y / b, x / b, ((y % b) b +
/// x % b) c + k]` is input `[n, y, x, k]`.
fn space_to_depth_formula(src: &[u8], [n, h, w, c]: [usize; 4], b: usize) -> Vec<u8> {
    let mut out = vec![0; src.len()];
    let (ow, oc) = (w / b, c * b * b);
    for i in 0..n {
        for y in 0..h {
            for x in 0..w {
                for k in 0..c {
                    let o =
                        ((i * (h / b) + y / b) * ow + x / b) * oc + ((y % b) * b + x % b) * c + k;
                    out[o] = src[((i * h + y) * w + x) * c + k];
                }
            }
        }
    }
    out
}

#[test]
fn space_to_depth_and_back_follow_the_element_formula() {
    for (shape, b) in [([1, 4, 6, 3], 2), ([2, 3, 9, 2], 3), ([1, 2, 2, 1], 2)] {
        let [n, h, w, c] = shape;
        let packed = [n, h / b, w / b, c * b * b];
        let to_depth = block_op(
            SPACE_TO_DEPTH,
            &shape.map(|d| d as i32),
            b as i32,
            &packed.map(|d| d as i32),
        );
        let (x, y) = to_depth.run();
        assert_eq!(y, space_to_depth_formula(&x, shape, b), "{shape:?} {b}");
        let to_space = block_op(
            DEPTH_TO_SPACE,
            &packed.map(|d| d as i32),
            b as i32,
            &shape.map(|d| d as i32),
        );
        // DEPTH_TO_SPACE inverts SPACE_TO_DEPTH: feeding it the formula's
        // output of x gives x back, so its output on x is the formula's
        // inverse applied to x.
        let (x2, y2) = to_space.run();
        assert_eq!(space_to_depth_formula(&y2, shape, b), x2, "{shape:?} {b}");
    }
}

#[test]
fn broken_rules_are_errors_naming_the_op() {
    refused(
        &squeeze(&[1, 3, 1], &[1], &[1, 1]),
        "SQUEEZE",
        &["axis 1 of size 3"],
    );
    refused(&squeeze(&[1, 3, 1], &[3], &[3, 1]), "SQUEEZE", &["axis 3"]);
    refused(
        &squeeze(&[1, 3, 1], &[0], &[3]),
        "SQUEEZE",
        &["output shape"],
    );
    refused(
        &expand_dims(&[3, 4], &[3], &[3, 4, 1]),
        "EXPAND_DIMS",
        &["axis 3"],
    );
    refused(
        &expand_dims(&[3, 4], &[0, 1], &[1, 3, 4]),
        "EXPAND_DIMS",
        &["one value"],
    );
    refused(
        &expand_dims(&[3, 4], &[1], &[1, 3, 4]),
        "EXPAND_DIMS",
        &["output shape"],
    );
    refused(
        &block_op(SPACE_TO_DEPTH, &[1, 4, 6, 3], 0, &[1, 4, 6, 3]),
        "SPACE_TO_DEPTH",
        &["block size 0"],
    );
    refused(
        &block_op(SPACE_TO_DEPTH, &[1, 4, 5, 3], 2, &[1, 2, 2, 12]),
        "SPACE_TO_DEPTH",
        &["does not divide", "width 5"],
    );
    refused(
        &block_op(SPACE_TO_DEPTH, &[1, 4, 6], 2, &[1, 2, 12]),
        "SPACE_TO_DEPTH",
        &["rank 4"],
    );
    refused(
        &block_op(DEPTH_TO_SPACE, &[1, 2, 2, 6], 2, &[1, 4, 4, 1]),
        "DEPTH_TO_SPACE",
        &["squared does not divide", "depth 6"],
    );
    refused(
        &block_op(DEPTH_TO_SPACE, &[1, 2, 2, 8], 2, &[1, 4, 4, 1]),
        "DEPTH_TO_SPACE",
        &["output shape"],
    );
    refused(
        &block_op(DEPTH_TO_SPACE, &[1, 2, 2, 8], -1, &[1, 2, 2, 8]),
        "DEPTH_TO_SPACE",
        &["block size -1"],
    );
}
