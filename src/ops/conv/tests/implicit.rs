//! The shapes the implicit GEMM (every CONV_2D but a pointwise one, under a
//! quantized multiplier) meets in real models and at random, checked by
//! [`check`] against the oracle on every backend, with `run`'s stack
//! scratch and with the caller's.

use std::vec;

use super::*;

/// MobileNet's first layer: 3x3, stride 2, SAME, 3 input channels (an odd
/// input size, so that the padding falls on both sides), and a grayscale
/// one of 1 channel.
#[test]
fn conv_implicit_mobilenet_first_layer() {
    let g = geometry(Padding::Same, [1, 33, 31, 3], 32, [3, 3], [2, 2], [1, 1]);
    check(&case(g, Kind::Conv { filter_depth: 3 }, true), 300);
    let g = geometry(Padding::Same, [1, 32, 32, 1], 16, [3, 3], [2, 2], [1, 1]);
    check(&case(g, Kind::Conv { filter_depth: 1 }, false), 301);
}

/// person_detect's CONV_2D layers: its 3x3 stride-2 first layer over the
/// 96x96 grayscale image (8 filters, per-channel), and a 1x1 of its body
/// (pointwise: the GEMM without the gather).
#[test]
fn conv_implicit_person_detect_shapes() {
    let g = geometry(Padding::Same, [1, 96, 96, 1], 8, [3, 3], [2, 2], [1, 1]);
    check(&case(g, Kind::Conv { filter_depth: 1 }, true), 310);
    let g = geometry(Padding::Same, [1, 12, 12, 32], 64, [1, 1], [1, 1], [1, 1]);
    check(&case(g, Kind::Conv { filter_depth: 32 }, true), 311);
}

/// A deep layer (3x3 over 80 channels: a 720-byte window, past the GEMM's
/// 16-byte depth steps and at 22 pixels per tile) and a 1x1 at stride 2
/// (not pointwise: it gathers every other pixel).
#[test]
fn conv_implicit_deep_and_strided_1x1() {
    let g = geometry(Padding::Same, [1, 9, 11, 80], 20, [3, 3], [1, 1], [1, 1]);
    check(&case(g, Kind::Conv { filter_depth: 80 }, true), 320);
    let g = geometry(Padding::Valid, [2, 9, 7, 24], 17, [1, 1], [2, 2], [1, 1]);
    check(&case(g, Kind::Conv { filter_depth: 24 }, false), 321);
}

/// Random geometries: kernels 1 to 5, strides 1 to 3, dilations 1 to 2,
/// SAME and VALID, groups, batches of 1 or 2, odd channel counts.
#[test]
fn conv_implicit_random_shapes() {
    let mut rng = Rng(0x1e33);
    let mut done = 0;
    while done < 14 {
        let kernel = [rng.range(1, 5) as usize, rng.range(1, 5) as usize];
        let stride = [rng.range(1, 3) as usize, rng.range(1, 3) as usize];
        let dilation = [rng.range(1, 2) as usize, rng.range(1, 2) as usize];
        let groups = [1, 1, 2, 3][rng.range(0, 3) as usize];
        let depth = rng.range(1, 19) as usize;
        let outputs = groups * rng.range(1, 11) as usize;
        let padding = if rng.range(0, 1) == 0 {
            Padding::Same
        } else {
            Padding::Valid
        };
        let input = [
            rng.range(1, 2) as usize,
            rng.range(1, 13) as usize,
            rng.range(1, 13) as usize,
            groups * depth,
        ];
        let Ok(g) = ConvGeometry::tflite("test", padding, input, outputs, kernel, stride, dilation)
        else {
            // VALID with a window larger than the image: no output.
            continue;
        };
        let mut c = case(
            g,
            Kind::Conv {
                filter_depth: depth,
            },
            done % 2 == 0,
        );
        c.input_zero_point = rng.range(-128, 127);
        if done % 5 == 4 {
            c.zero_channels = vec![0];
            c.bias_range = (-(1 << 30), 1 << 30);
        }
        check(&c, 400 + done);
        done += 1;
    }
}

/// A scratch shorter than `scratch_bytes` is refused, not overrun.
#[test]
fn conv_implicit_short_scratch_is_an_error() {
    let g = geometry(Padding::Same, [1, 5, 5, 3], 4, [3, 3], [1, 1], [1, 1]);
    let q = ConvQuantization {
        input: QuantParams::new(0.05, 1),
        weight_scales: &[0.01],
        output: QuantParams::new(0.1, 0),
        activation: FusedActivation::None,
        requantization: ConvRequantization::Multiplier(Rounding::Double),
    };
    let op = Conv2d::new(g, 3, &[1; 4 * 27], None, &q).unwrap();
    assert_eq!(op.scratch_bytes(), 256 * 27);
    let input = [3i8; 75];
    let mut out = [0i8; 100];
    let mut scratch = vec![0i8; op.scratch_bytes() - 1];
    for backend in Backend::available() {
        let e = op
            .run_rows_with_scratch(backend, &input, &mut out, 0..5, &mut scratch)
            .unwrap_err();
        assert!(matches!(e, Error::Length { .. }), "{e}");
    }
}
