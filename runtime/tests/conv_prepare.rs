//! TFLite's `Prepare` rules of CONV_2D and DEPTHWISE_CONV_2D, each broken
//! in a model built here: every one is an error naming the operator (and,
//! where one is at fault, the tensor), never a panic.

mod tflite_common;

use qneon::Method;
use qneon_runtime::interp::{Interpreter, Rounding};
use qneon_runtime::Error;
use tflite_common::flat::{Field::*, Table};
use tflite_common::*;

/// One convolution, everything a test may break.
#[derive(Clone)]
struct Spec {
    depthwise: bool,
    input: Vec<i32>,
    filter: Vec<i32>,
    output: Vec<i32>,
    /// 0 SAME, 1 VALID.
    padding: u8,
    /// (height, width)
    stride: (i32, i32),
    dilation: (i32, i32),
    depth_multiplier: i32,
    filter_scales: Vec<f32>,
    filter_zero_points: Vec<i64>,
    axis: i32,
    /// Bias: dtype code, element count, scale.
    bias: Option<(u8, i32, f32)>,
}

const INT8: u8 = 9;
const INT32: u8 = 2;
const INPUT_SCALE: f32 = 0.5;

impl Spec {
    /// A valid 3x3 stride-1 SAME CONV_2D of [1, 5, 5, 4] into 6 channels.
    fn conv() -> Spec {
        Spec {
            depthwise: false,
            input: vec![1, 5, 5, 4],
            filter: vec![6, 3, 3, 4],
            output: vec![1, 5, 5, 6],
            padding: 0,
            stride: (1, 1),
            dilation: (1, 1),
            depth_multiplier: 0,
            filter_scales: vec![0.01; 6],
            filter_zero_points: vec![0; 6],
            axis: 0,
            bias: Some((INT32, 6, INPUT_SCALE * 0.01)),
        }
    }

    /// A valid 3x3 stride-2 SAME DEPTHWISE_CONV_2D of [1, 5, 5, 4],
    /// multiplier 2.
    fn depthwise() -> Spec {
        Spec {
            depthwise: true,
            filter: vec![1, 3, 3, 8],
            output: vec![1, 3, 3, 8],
            stride: (2, 2),
            depth_multiplier: 2,
            filter_scales: vec![0.01; 8],
            filter_zero_points: vec![0; 8],
            axis: 3,
            bias: Some((INT32, 8, INPUT_SCALE * 0.01)),
            ..Spec::conv()
        }
    }

    fn model(&self) -> Vec<u8> {
        let count = |shape: &[i32]| shape.iter().product::<i32>().max(0) as usize;
        let quantization = |scales: Vec<f32>, zero_points: Vec<i64>, axis: i32| {
            Table(vec![
                (2, F32s(scales)),
                (3, I64s(zero_points)),
                (6, I32(axis)),
            ])
        };
        let tensor = |name: &str, shape: &[i32], dtype: u8, buffer: u32, q: Table| {
            Table(vec![
                (0, I32s(shape.to_vec())),
                (1, U8(dtype)),
                (2, U32(buffer)),
                (3, Str(name.to_string())),
                (4, flat::Field::Table(q)),
            ])
        };
        let mut tensors = vec![
            tensor(
                "x",
                &self.input,
                INT8,
                0,
                quantization(vec![INPUT_SCALE], vec![0], 0),
            ),
            tensor(
                "w",
                &self.filter,
                INT8,
                1,
                quantization(
                    self.filter_scales.clone(),
                    self.filter_zero_points.clone(),
                    self.axis,
                ),
            ),
            tensor(
                "y",
                &self.output,
                INT8,
                0,
                quantization(vec![0.25], vec![1], 0),
            ),
        ];
        let mut inputs = vec![0, 1];
        let mut buffers = vec![
            Table(vec![]),
            Table(vec![(0, Bytes(vec![1; count(&self.filter)]))]),
        ];
        if let Some((dtype, len, scale)) = self.bias {
            let size = if dtype == INT32 { 4 } else { 1 };
            tensors.push(tensor(
                "b",
                &[len],
                dtype,
                2,
                quantization(vec![scale], vec![0], 0),
            ));
            buffers.push(Table(vec![(0, Bytes(vec![0; len.max(0) as usize * size]))]));
            inputs.push(3);
        }
        let (code, options_type, options) = if self.depthwise {
            let o = Table(vec![
                (0, U8(self.padding)),
                (1, I32(self.stride.1)),
                (2, I32(self.stride.0)),
                (3, I32(self.depth_multiplier)),
                (5, I32(self.dilation.1)),
                (6, I32(self.dilation.0)),
            ]);
            (4, 2, o)
        } else {
            let o = Table(vec![
                (0, U8(self.padding)),
                (1, I32(self.stride.1)),
                (2, I32(self.stride.0)),
                (4, I32(self.dilation.1)),
                (5, I32(self.dilation.0)),
            ]);
            (3, 1, o)
        };
        let model = Table(vec![
            (0, U32(3)),
            (
                1,
                Tables(vec![Table(vec![
                    (0, U8(code)),
                    (2, I32(1)),
                    (3, I32(code as i32)),
                ])]),
            ),
            (
                2,
                Tables(vec![Table(vec![
                    (0, Tables(tensors)),
                    (1, I32s(vec![0])),
                    (2, I32s(vec![2])),
                    (
                        3,
                        Tables(vec![Table(vec![
                            (0, U32(0)),
                            (1, I32s(inputs)),
                            (2, I32s(vec![2])),
                            (3, U8(options_type)),
                            (4, flat::Field::Table(options)),
                        ])]),
                    ),
                    (4, Str("main".to_string())),
                ])]),
            ),
            (4, Tables(buffers)),
        ]);
        flat::file(&model)
    }

    fn load(&self) -> Result<(), Error> {
        let file = qneon_tflite::ModelBytes::copy_from(&self.model());
        Interpreter::new(
            file.as_bytes(),
            options(Rounding::Single, Method::FixedPoint),
        )
        .map(|_| ())
    }
}

/// `spec` must be refused as an invalid (or, `unsupported`, unsupported)
/// operator named `op`, its message containing every one of `words`.
fn refused(spec: &Spec, unsupported: bool, words: &[&str]) {
    let op = if spec.depthwise {
        "DEPTHWISE_CONV_2D"
    } else {
        "CONV_2D"
    };
    let (name, text) = match spec.load() {
        Err(e @ Error::InvalidOp { .. }) if !unsupported => {
            let Error::InvalidOp { op, .. } = &e else {
                unreachable!()
            };
            (op.clone(), e.to_string())
        }
        Err(e @ Error::UnsupportedOp { .. }) if unsupported => {
            let Error::UnsupportedOp { op, .. } = &e else {
                unreachable!()
            };
            (op.clone(), e.to_string())
        }
        other => panic!("{words:?}: {other:?}"),
    };
    assert_eq!(name, op, "{text}");
    for w in words {
        assert!(text.contains(w), "{text} lacks {w:?}");
    }
}

#[test]
fn valid_convolutions_load_and_run() {
    for spec in [Spec::conv(), Spec::depthwise()] {
        let file = qneon_tflite::ModelBytes::copy_from(&spec.model());
        let mut interpreter = Interpreter::new(
            file.as_bytes(),
            options(Rounding::Single, Method::FixedPoint),
        )
        .unwrap();
        // x = 2 (real 1.0) everywhere, weights 1 (0.01), no bias: the
        // centre pixel of a 3x3 window sums 9 taps per filter channel.
        let n = interpreter.inputs()[0].bytes;
        interpreter.set_input(0, &vec![2u8; n]).unwrap();
        interpreter.invoke().unwrap();
        let out = interpreter.output(0).unwrap().to_vec();
        let depth = if spec.depthwise { 1 } else { 4 };
        // real = 9 * depth * 1.0 * 0.01 = 0.09 * depth, over scale 0.25,
        // plus zero point 1.
        let expected = (0.09 * depth as f64 / 0.25).round() as i8 + 1;
        let centre = if spec.depthwise { 4 } else { 12 } * spec.output[3] as usize;
        assert_eq!(out[centre] as i8, expected, "{out:?}");
    }
}

#[test]
fn broken_prepare_rules_are_errors_naming_the_op() {
    for base in [Spec::conv(), Spec::depthwise()] {
        let with = |f: &dyn Fn(&mut Spec)| {
            let mut s = base.clone();
            f(&mut s);
            s
        };
        refused(&with(&|s| s.stride.0 = 0), false, &["stride height 0"]);
        refused(&with(&|s| s.stride.1 = -1), false, &["stride width -1"]);
        refused(
            &with(&|s| s.dilation.0 = 0),
            false,
            &["dilation height factor 0"],
        );
        refused(
            &with(&|s| s.dilation.1 = -2),
            false,
            &["dilation width factor -2"],
        );
        refused(&with(&|s| s.padding = 2), false, &["padding 2"]);
        refused(
            &with(&|s| s.output[1] += 1),
            false,
            &["output shape", "TFLite computes"],
        );
        refused(
            &with(&|s| s.padding = 1),
            false,
            &["output shape", "TFLite computes"],
        );
        refused(
            &with(&|s| s.input = vec![1, 5, 5]),
            false,
            &["input shape", "rank 4"],
        );
        refused(
            &with(&|s| s.filter_zero_points[1] = 3),
            false,
            &["tensor w", "zero point"],
        );
        // Per-channel scales of the wrong count: the reader refuses them
        // first, naming the tensor.
        let short = with(&|s| {
            s.filter_scales.pop();
            s.filter_zero_points.pop();
        });
        assert!(matches!(short.load(), Err(Error::Tflite(_))));
        // Scales along another axis than the op's.
        refused(
            &with(&|s| {
                let (axis, n) = if s.depthwise { (1, 3) } else { (3, 4) };
                s.axis = axis;
                s.filter_scales = vec![0.01; n];
                s.filter_zero_points = vec![0; n];
                s.bias = None;
            }),
            false,
            &["tensor w", "along axis"],
        );
        refused(
            &with(&|s| s.bias.as_mut().unwrap().1 -= 1),
            false,
            &["tensor b", "one value per output channel"],
        );
        refused(
            &with(&|s| s.bias.as_mut().unwrap().2 *= 2.0),
            false,
            &["tensor b", "input scale * filter scale"],
        );
        refused(
            &with(&|s| s.bias.as_mut().unwrap().0 = INT8),
            true,
            &["INT8,INT8,INT8->INT8"],
        );
        // A VALID window larger than the input.
        refused(
            &with(&|s| {
                s.padding = 1;
                s.dilation = (3, 3);
            }),
            false,
            &["VALID window is larger than the input"],
        );
    }
    // CONV_2D: input channels a multiple of the filter's, output channels
    // of the groups.
    let mut s = Spec::conv();
    s.filter[3] = 3;
    refused(
        &s,
        false,
        &["tensor x", "not a multiple of the filter's", "tensor w"],
    );
    let mut s = Spec::conv();
    s.filter = vec![5, 3, 3, 2];
    s.output[3] = 5;
    s.filter_scales.truncate(5);
    s.filter_zero_points.truncate(5);
    s.bias = Some((INT32, 5, INPUT_SCALE * 0.01));
    refused(&s, false, &["output channels 5", "2 groups"]);
    // DEPTHWISE_CONV_2D: a filter of one row, channels a multiple of the
    // input's.
    let mut s = Spec::depthwise();
    s.filter[0] = 2;
    refused(&s, false, &["filter shape", "first dimension"]);
    let mut s = Spec::depthwise();
    s.filter[3] = 6;
    s.output[3] = 6;
    s.filter_scales.truncate(6);
    s.filter_zero_points.truncate(6);
    s.bias = Some((INT32, 6, INPUT_SCALE * 0.01));
    refused(
        &s,
        false,
        &[
            "filter channels 6",
            "tensor w",
            "input channels 4",
            "tensor x",
        ],
    );
}
