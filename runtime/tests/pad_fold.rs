//! A PAD before a DEPTHWISE_CONV_2D is folded into the convolution's
//! padding (the convolution reads the PAD's input): the same bytes as the
//! PAD run as written, on every kernel path, and folded only where that
//! cannot be seen. The reference is the same graph with the padded tensor
//! also a model output, which keeps the PAD (nothing may drop a tensor the
//! caller reads).

mod tflite_common;

use qneon::Method;
use qneon_runtime::interp::{Interpreter, Rounding, TfliteKernels};
use tflite_common::flat::{Field::*, Table};
use tflite_common::*;

const INT8: u8 = 9;
const INT32: u8 = 2;
/// Builtin codes: PAD 34, PADV2 60, DEPTHWISE_CONV_2D 4, CONV_2D 3.
const PAD: i32 = 34;
const PADV2: i32 = 60;
const DEPTHWISE: i32 = 4;

/// PAD (or PADV2) of a [1, h, w, c] int8 image by `pads` (before, after
/// per dimension), then a 3x3 depthwise convolution (multiplier 1) with
/// `padding` (0 SAME, 1 VALID) and `stride`.
#[derive(Clone)]
struct Case {
    image: [i32; 4],
    pads: [[i32; 2]; 4],
    pad_op: i32,
    /// PADV2's value (quantized as the output).
    value: i8,
    padding: u8,
    stride: i32,
    zero_point: i64,
    /// The padded tensor is also a model output (the reference).
    export_padded: bool,
    /// A second reader of the padded tensor (another depthwise layer).
    second_reader: bool,
}

impl Case {
    fn new(image: [i32; 4], pads: [[i32; 2]; 4], padding: u8, stride: i32) -> Case {
        Case {
            image,
            pads,
            pad_op: PAD,
            value: 0,
            padding,
            stride,
            zero_point: -7,
            export_padded: false,
            second_reader: false,
        }
    }

    fn padded(&self) -> [i32; 4] {
        core::array::from_fn(|d| self.image[d] + self.pads[d][0] + self.pads[d][1])
    }

    fn output(&self) -> [i32; 4] {
        let p = self.padded();
        let out = |n: i32| match self.padding {
            0 => (n + self.stride - 1) / self.stride,
            _ => (n - 3) / self.stride + 1,
        };
        [p[0], out(p[1]), out(p[2]), p[3]]
    }

    fn model(&self) -> Vec<u8> {
        let c = self.padded()[3];
        let q = |scales: Vec<f32>, zps: Vec<i64>, axis: i32| {
            Table(vec![(2, F32s(scales)), (3, I64s(zps)), (6, I32(axis))])
        };
        let tensor = |name: &str, shape: &[i32], dtype: u8, buffer: u32, quant: Table| {
            Table(vec![
                (0, I32s(shape.to_vec())),
                (1, U8(dtype)),
                (2, U32(buffer)),
                (3, Str(name.to_string())),
                (4, flat::Field::Table(quant)),
            ])
        };
        let act = || q(vec![0.05], vec![self.zero_point], 0);
        let channels = c as usize;
        let weights: Vec<u8> = (0..9 * channels)
            .map(|i| ((i * 37 + 11) % 255) as u8 ^ 0x80)
            .collect();
        let bias: Vec<u8> = (0..channels as i32)
            .flat_map(|i| (i * 997 - 3000).to_le_bytes())
            .collect();
        let pads: Vec<i32> = self.pads.iter().flatten().copied().collect();
        let tensors = vec![
            tensor("x", &self.image, INT8, 0, act()),
            tensor("paddings", &[4, 2], INT32, 1, Table(vec![])),
            tensor("padded", &self.padded(), INT8, 0, act()),
            tensor(
                "w",
                &[1, 3, 3, c],
                INT8,
                2,
                q(vec![0.02; channels], vec![0; channels], 3),
            ),
            tensor(
                "b",
                &[c],
                INT32,
                3,
                q(vec![0.001; channels], vec![0; channels], 0),
            ),
            tensor("y", &self.output(), INT8, 0, q(vec![0.1], vec![3], 0)),
            tensor("value", &[], INT8, 4, act()),
            tensor("y2", &self.output(), INT8, 0, q(vec![0.1], vec![3], 0)),
        ];
        let buffers = vec![
            Table(vec![]),
            Table(vec![(
                0,
                Bytes(pads.iter().flat_map(|p| p.to_le_bytes()).collect()),
            )]),
            Table(vec![(0, Bytes(weights))]),
            Table(vec![(0, Bytes(bias))]),
            Table(vec![(0, Bytes(vec![self.value as u8]))]),
        ];
        let depthwise = |output: i32| {
            Table(vec![
                (0, U32(1)),
                (1, I32s(vec![2, 3, 4])),
                (2, I32s(vec![output])),
                (3, U8(2)),
                (
                    4,
                    flat::Field::Table(Table(vec![
                        (0, U8(self.padding)),
                        (1, I32(self.stride)),
                        (2, I32(self.stride)),
                        (3, I32(1)),
                        (5, I32(1)),
                        (6, I32(1)),
                    ])),
                ),
            ])
        };
        let pad_inputs = if self.pad_op == PADV2 {
            vec![0, 1, 6]
        } else {
            vec![0, 1]
        };
        let mut operators = vec![
            Table(vec![(0, U32(0)), (1, I32s(pad_inputs)), (2, I32s(vec![2]))]),
            depthwise(5),
        ];
        let mut outputs = vec![5];
        if self.second_reader {
            operators.push(depthwise(7));
            outputs.push(7);
        }
        if self.export_padded {
            outputs.push(2);
        }
        let code = |c: i32| Table(vec![(0, U8(c.min(127) as u8)), (2, I32(1)), (3, I32(c))]);
        let model = Table(vec![
            (0, U32(3)),
            (1, Tables(vec![code(self.pad_op), code(DEPTHWISE)])),
            (
                2,
                Tables(vec![Table(vec![
                    (0, Tables(tensors)),
                    (1, I32s(vec![0])),
                    (2, I32s(outputs)),
                    (3, Tables(operators)),
                    (4, Str("main".to_string())),
                ])]),
            ),
            (4, Tables(buffers)),
        ]);
        flat::file(&model)
    }

    /// Output 0 for a seeded input under `kernels`, and whether the PAD
    /// was folded.
    fn run(&self, kernels: TfliteKernels) -> (Vec<u8>, bool) {
        let file = qneon_tflite::ModelBytes::copy_from(&self.model());
        let mut o = options(Rounding::Single, Method::FixedPoint);
        o.kernels = kernels;
        let mut interpreter = Interpreter::new(file.as_bytes(), o).unwrap();
        let folded = interpreter.nodes().next().unwrap().folded_into == Some(1);
        let len = self.image.iter().product::<i32>() as usize;
        let x: Vec<u8> = (0..len).map(|i| (i * 73 + 5) as u8).collect();
        interpreter.set_input(0, &x).unwrap();
        interpreter.invoke().unwrap();
        (interpreter.output(0).unwrap().to_vec(), folded)
    }
}

const PATHS: [TfliteKernels; 3] = [
    TfliteKernels::Reference,
    TfliteKernels::Optimized,
    TfliteKernels::Xnnpack,
];

/// Folded, and equal to the PAD run as written, on every path.
fn folds_and_keeps_the_bytes(case: &Case) {
    let reference = Case {
        export_padded: true,
        ..case.clone()
    };
    for kernels in PATHS {
        let (folded_bytes, folded) = case.run(kernels);
        let (written_bytes, written_folded) = reference.run(kernels);
        assert!(folded, "not folded: {:?} {kernels:?}", case.pads);
        assert!(!written_folded, "an exported padded tensor was folded");
        assert_eq!(folded_bytes, written_bytes, "{:?} {kernels:?}", case.pads);
    }
}

#[test]
fn a_pad_folded_into_a_depthwise_layer_gives_the_same_bytes() {
    // MobileNetV2's form: pad 1 all round, VALID, strides 1 and 2.
    for stride in [1, 2] {
        folds_and_keeps_the_bytes(&Case::new(
            [1, 9, 11, 16],
            [[0, 0], [1, 1], [1, 1], [0, 0]],
            1,
            stride,
        ));
    }
    // Uneven pads, pads wider than the window reaches, and a layer that
    // pads by itself as well (SAME).
    for (pads, padding, stride) in [
        ([[0, 0], [2, 0], [0, 3], [0, 0]], 1, 1),
        ([[0, 0], [0, 1], [1, 0], [0, 0]], 1, 2),
        ([[0, 0], [4, 5], [3, 4], [0, 0]], 1, 2),
        ([[0, 0], [1, 2], [2, 1], [0, 0]], 0, 2),
        ([[0, 0], [0, 0], [0, 0], [0, 0]], 0, 1),
    ] {
        folds_and_keeps_the_bytes(&Case::new([1, 7, 6, 24], pads, padding, stride));
    }
    // PADV2 whose value is the zero point folds too.
    let mut v2 = Case::new([1, 5, 5, 8], [[0, 0], [1, 1], [1, 1], [0, 0]], 1, 1);
    v2.pad_op = PADV2;
    v2.value = v2.zero_point as i8;
    folds_and_keeps_the_bytes(&v2);
}

#[test]
fn a_pad_is_kept_where_folding_would_show() {
    let base = Case::new([1, 5, 5, 8], [[0, 0], [1, 1], [1, 1], [0, 0]], 1, 1);
    let mut kept = Vec::new();
    // Another value than the zero point.
    let mut v2 = base.clone();
    v2.pad_op = PADV2;
    v2.value = 5;
    kept.push(v2);
    // Two readers of the padded tensor.
    let mut two = base.clone();
    two.second_reader = true;
    kept.push(two);
    // Padding of the batch or of the channels.
    for pads in [
        [[0, 0], [1, 1], [1, 1], [0, 2]],
        [[1, 0], [1, 1], [1, 1], [0, 0]],
    ] {
        kept.push(Case {
            pads,
            ..base.clone()
        });
    }
    for case in &kept {
        let (bytes, folded) = case.run(TfliteKernels::Optimized);
        assert!(!folded, "folded: {:?} value {}", case.pads, case.value);
        let reference = Case {
            export_padded: true,
            ..case.clone()
        };
        assert_eq!(bytes, reference.run(TfliteKernels::Optimized).0);
    }
}
