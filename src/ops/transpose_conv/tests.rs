//! The gather loops against TFLite's scatter written out naively here, on
//! random geometries (every padding, stride, kernel and channel count
//! small enough to run many), in every requantization path; NEON against
//! the scalar oracle; TFLite's geometry rules.

use alloc::vec;
use alloc::vec::Vec;

use super::*;
use crate::ops::conv::ConvRequantization;
use crate::ops::window::Padding;
use crate::ops::FusedActivation;
use crate::quant::{QuantParams, Rounding};

/// A small deterministic generator (xorshift), so the cases are the same
/// on every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn i8(&mut self) -> i8 {
        self.next() as i8
    }
}

const PATHS: [ConvRequantization; 4] = [
    ConvRequantization::Multiplier(Rounding::Double),
    ConvRequantization::Multiplier(Rounding::Single),
    ConvRequantization::TiesUpwardInBlocksOf8,
    ConvRequantization::XnnpackF32,
];

/// TFLite's reference kernel as its loops read: scatter every input pixel
/// times the kernel into an int32 scratch of the output's size, then add
/// the bias and requantize each element with `stage`.
fn scatter(
    g: &TransposeConvGeometry,
    input: &[i8],
    weights: &[i8],
    bias: &[i32],
    input_zero_point: i32,
    stage: &OutputStage,
) -> Vec<i8> {
    let (oh, ow, oc) = (g.output_height, g.output_width, g.output_channels);
    let (ih, iw, ic) = (g.input_height, g.input_width, g.input_channels);
    let (kh, kw) = (g.kernel_height, g.kernel_width);
    let mut scratch = vec![0i32; g.batch * oh * ow * oc];
    for b in 0..g.batch {
        for iy in 0..ih {
            for ix in 0..iw {
                for i in 0..ic {
                    let x = input[((b * ih + iy) * iw + ix) * ic + i] as i32 - input_zero_point;
                    for ky in 0..kh {
                        for kx in 0..kw {
                            let oy = (iy * g.stride_height + ky) as isize - g.pad_top as isize;
                            let ox = (ix * g.stride_width + kx) as isize - g.pad_left as isize;
                            if oy < 0 || ox < 0 || oy >= oh as isize || ox >= ow as isize {
                                continue;
                            }
                            for c in 0..oc {
                                let w = weights[((c * kh + ky) * kw + kx) * ic + i] as i32;
                                let at = ((b * oh + oy as usize) * ow + ox as usize) * oc + c;
                                scratch[at] = scratch[at].wrapping_add(x * w);
                            }
                        }
                    }
                }
            }
        }
    }
    scratch
        .iter()
        .enumerate()
        .map(|(at, &s)| {
            let c = at % oc;
            stage.finish(c, s.wrapping_add(bias[c]))
        })
        .collect()
}

fn random_layer(rng: &mut Rng) -> (TransposeConvGeometry, Vec<i8>, Vec<i8>, Vec<i32>, Vec<f32>) {
    loop {
        let padding = if rng.below(2) == 0 {
            Padding::Same
        } else {
            Padding::Valid
        };
        let stride = [1 + rng.below(3), 1 + rng.below(3)];
        let kernel = [1 + rng.below(5), 1 + rng.below(5)];
        let input = [
            1 + rng.below(2),
            1 + rng.below(6),
            1 + rng.below(6),
            1 + rng.below(20),
        ];
        let channels = [1, 3, 8, 15, 16, 17, 32, 33][rng.below(8)];
        // Every output size TFLite accepts for this input: up to one
        // stride past the smallest.
        let smallest = |n: usize, k: usize, s: usize| match padding {
            Padding::Same => (n - 1) * s + 1,
            Padding::Valid => (n - 1) * s + k,
        };
        let oh = smallest(input[1], kernel[0], stride[0]) + rng.below(stride[0]);
        let ow = smallest(input[2], kernel[1], stride[1]) + rng.below(stride[1]);
        let Ok(g) =
            TransposeConvGeometry::tflite(OP, padding, input, [oh, ow, channels], kernel, stride)
        else {
            continue;
        };
        let (input_len, _, weights_len) = g.validate(OP).unwrap();
        let x = (0..input_len).map(|_| rng.i8()).collect();
        let w = (0..weights_len).map(|_| rng.i8()).collect();
        let bias = (0..channels)
            .map(|_| (rng.next() % 20001) as i32 - 10000)
            .collect();
        let scales = (0..channels)
            .map(|_| 0.001 + (rng.below(1000) as f32) * 1e-5)
            .collect();
        return (g, x, w, bias, scales);
    }
}

#[test]
fn transpose_conv_i8_gather_equals_tflite_scatter_random_layers() {
    let mut rng = Rng(0x7c0f_1e55_9a3b_0001);
    let mut checked = 0;
    for case in 0..300 {
        let (g, x, w, bias, scales) = random_layer(&mut rng);
        let requantization = PATHS[case % PATHS.len()];
        let activation = [
            FusedActivation::None,
            FusedActivation::Relu,
            FusedActivation::Relu6,
        ][case % 3];
        let per_tensor = case % 5 == 0;
        let q = ConvQuantization {
            input: QuantParams::new(0.02, rng.below(256) as i32 - 128),
            weight_scales: if per_tensor { &scales[..1] } else { &scales },
            output: QuantParams::new(
                0.05 + rng.below(100) as f32 * 0.003,
                rng.below(256) as i32 - 128,
            ),
            activation,
            requantization,
        };
        let with_bias = case % 4 != 0;
        let layer = TransposeConv2d::new(g, &w, with_bias.then_some(&bias[..]), &q).unwrap();
        let zero = vec![0; bias.len()];
        let expected = scatter(
            &g,
            &x,
            &w,
            if with_bias { &bias } else { &zero },
            q.input.zero_point,
            &layer.stage,
        );
        for backend in Backend::available() {
            let mut out = vec![0i8; expected.len()];
            layer
                .run_rows(backend, &x, &mut out, 0..layer.rows())
                .unwrap();
            assert_eq!(
                out,
                expected,
                "case {case} {g:?} {requantization:?} {}",
                backend.name()
            );
            // Any split into row ranges writes the same bytes.
            let mut split = vec![0i8; expected.len()];
            let cut = rng.below(layer.rows() + 1);
            layer.run_rows(backend, &x, &mut split, 0..cut).unwrap();
            layer
                .run_rows(backend, &x, &mut split, cut..layer.rows())
                .unwrap();
            assert_eq!(split, expected, "case {case}: rows split at {cut}");
            checked += 1;
        }
    }
    assert!(checked >= 300);
}

#[test]
fn transpose_conv_i8_saturating_accumulators_wrap_like_tflite() {
    // 64 input channels of -128 - 127 (zero point 127) times weights of
    // -128 over a 4x4 kernel at stride 1: sums beyond 2^31 wrap in both.
    let g = TransposeConvGeometry::tflite(
        OP,
        Padding::Valid,
        [1, 1, 1, 64 * 16],
        [4, 4, 2],
        [4, 4],
        [1, 1],
    )
    .unwrap();
    let x = vec![-128i8; 64 * 16];
    let w = vec![-128i8; 2 * 16 * 64 * 16];
    let scales = [1e-6f32];
    let q = ConvQuantization {
        input: QuantParams::new(1.0, 127),
        weight_scales: &scales,
        output: QuantParams::new(1.0, 0),
        activation: FusedActivation::None,
        requantization: ConvRequantization::Multiplier(Rounding::Double),
    };
    let layer = TransposeConv2d::new(g, &w, Some(&[i32::MAX, 0]), &q).unwrap();
    let expected = scatter(&g, &x, &w, &[i32::MAX, 0], 127, &layer.stage);
    for backend in Backend::available() {
        let mut out = vec![0i8; 32];
        layer.run_rows(backend, &x, &mut out, 0..4).unwrap();
        assert_eq!(out, expected, "{}", backend.name());
    }
}

#[test]
fn transpose_conv_geometry_follows_tflite_rules() {
    // SAME: every output size in ((n - 1) * s, n * s] has input n.
    for out in 9..=10 {
        let g = TransposeConvGeometry::tflite(
            OP,
            Padding::Same,
            [1, 5, 5, 1],
            [out, out, 1],
            [3, 3],
            [2, 2],
        )
        .unwrap();
        // total = (5 - 1) * 2 + 3 - out, before = total / 2.
        assert_eq!(g.pad_top, (11 - out) / 2);
    }
    assert!(matches!(
        TransposeConvGeometry::tflite(OP, Padding::Same, [1, 5, 5, 1], [11, 10, 1], [3, 3], [2, 2]),
        Err(Error::Length { what, expected: 6, got: 5, .. }) if what.starts_with("input height")
    ));
    // VALID: (n - 1) * s + k plus up to s - 1 extra rows, no padding.
    for out in 9..=10 {
        let g = TransposeConvGeometry::tflite(
            OP,
            Padding::Valid,
            [1, 4, 4, 1],
            [5, out, 1],
            [2, 3],
            [1, 2],
        )
        .unwrap();
        assert_eq!((g.pad_top, g.pad_left), (0, 0));
    }
    assert!(matches!(
        TransposeConvGeometry::tflite(OP, Padding::Valid, [1, 4, 4, 1], [5, 8, 1], [2, 3], [1, 2]),
        Err(Error::Length { what, .. }) if what.starts_with("input width")
    ));
    assert!(matches!(
        TransposeConvGeometry::tflite(OP, Padding::Same, [1, 4, 4, 1], [8, 8, 1], [3, 3], [0, 2]),
        Err(Error::ZeroDimension { .. })
    ));
}

#[test]
fn transpose_conv_new_refuses_bad_buffers_and_scales() {
    let g =
        TransposeConvGeometry::tflite(OP, Padding::Same, [1, 2, 2, 3], [4, 4, 5], [3, 3], [2, 2])
            .unwrap();
    let w = vec![1i8; 5 * 9 * 3];
    let scales = [0.01f32; 5];
    let q = ConvQuantization {
        input: QuantParams::new(0.02, 0),
        weight_scales: &scales,
        output: QuantParams::new(0.05, 0),
        activation: FusedActivation::None,
        requantization: ConvRequantization::Multiplier(Rounding::Double),
    };
    assert!(TransposeConv2d::new(g, &w, None, &q).is_ok());
    assert!(matches!(
        TransposeConv2d::new(g, &w[1..], None, &q),
        Err(Error::Length {
            what: "weights",
            ..
        })
    ));
    assert!(matches!(
        TransposeConv2d::new(g, &w, Some(&[0; 4]), &q),
        Err(Error::Length { what: "bias", .. })
    ));
    let three = [0.01f32; 3];
    assert!(matches!(
        TransposeConv2d::new(
            g,
            &w,
            None,
            &ConvQuantization {
                weight_scales: &three,
                ..q
            }
        ),
        Err(Error::Length { .. })
    ));
    let layer = TransposeConv2d::new(g, &w, None, &q).unwrap();
    let mut out = vec![0i8; 4 * 4 * 5];
    assert!(matches!(
        layer.run(&[0; 11], &mut out),
        Err(Error::Length { what: "input", .. })
    ));
    assert!(matches!(
        layer.run_rows(Backend::Scalar, &[0; 12], &mut out, 0..5),
        Err(Error::Tile { .. })
    ));
}
