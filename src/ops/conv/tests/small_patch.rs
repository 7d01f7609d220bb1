//! First layers: windows of a few bytes (`kernel_width * channels` up to
//! 16 bytes a kernel row, 64 bytes a window), whose rows NEON's `sdot` and
//! `smmla` paths build in the GEMM's panel straight from the image. Every
//! shape is checked by [`check`] against the oracle on every backend, at
//! odd image sizes (the last loads end near the input's end), strides 1
//! and 2, SAME (the padding on every side) and VALID, 1 to 4 channels.

use super::*;

/// Edge values of int8 and around zero.
const EDGES: &[i8] = &[-128, -127, -1, 0, 1, 126, 127];

/// The windows of the first layers (kernel, channels), each built in the
/// panel: 3x3x3 (MobileNet's), 3x3 and 5x5 of 1 channel, 3x3x4, a 1x3 of
/// 2 channels (one register), 7x7x1 and 4x4x4 (all four registers, four
/// depth steps), 2x2x8 (a 16-byte run).
const WINDOWS: [([usize; 2], usize); 8] = [
    ([3, 3], 3),
    ([3, 3], 1),
    ([5, 5], 1),
    ([3, 3], 4),
    ([1, 3], 2),
    ([7, 7], 1),
    ([4, 4], 4),
    ([2, 2], 8),
];

fn small_case(padding: Padding, input: [usize; 4], kernel: [usize; 2], stride: usize) -> Case {
    let g = geometry(padding, input, 11, kernel, [stride, stride], [1, 1]);
    case(
        g,
        Kind::Conv {
            filter_depth: input[3],
        },
        true,
    )
}

/// Strides 1 and 2, SAME and VALID, odd sizes, a batch of 2.
#[test]
fn conv_small_patch_shapes() {
    let mut seed = 700;
    for (kernel, channels) in WINDOWS {
        for stride in [1, 2] {
            for padding in [Padding::Same, Padding::Valid] {
                let input = [2, 9 + stride, 7 + 2 * stride, channels];
                let c = small_case(padding, input, kernel, stride);
                let op = Conv2d::new(
                    c.geometry,
                    channels,
                    &vec![1; 11 * kernel[0] * kernel[1] * channels],
                    None,
                    &ConvQuantization {
                        input: QuantParams::new(0.05, 0),
                        weight_scales: &[0.01],
                        output: QuantParams::new(0.1, 0),
                        activation: FusedActivation::None,
                        requantization: ConvRequantization::Multiplier(Rounding::Single),
                    },
                )
                .unwrap();
                let on_neon = cfg!(all(target_arch = "aarch64", target_feature = "neon"));
                let small = op.implicit.as_ref().is_some_and(|i| i.small_window());
                assert_eq!(small, on_neon, "{kernel:?} x {channels}");
                check(&c, seed);
                seed += 1;
            }
        }
    }
}

/// Edge inputs: every byte -128, 127 or near zero, under the input zero
/// points -128 and 127 (the padding's taps hold them).
#[test]
fn conv_small_patch_edge_values() {
    for (i, (kernel, channels)) in WINDOWS.into_iter().enumerate() {
        for (j, zero_point) in [-128, 127].into_iter().enumerate() {
            let stride = 1 + (i + j) % 2;
            let mut c = small_case(Padding::Same, [1, 8, 13, channels], kernel, stride);
            c.input_zero_point = zero_point;
            c.input_values = Some(EDGES);
            check(&c, 800 + 2 * i as u64 + j as u64);
        }
    }
}

/// Windows past the panel's table (a 9-byte run over 5 kernel rows, a
/// 17-byte run, two groups, column dilation) take the scratch path: the
/// same bytes.
#[test]
fn conv_small_patch_other_windows_keep_the_scratch() {
    let shapes: [([usize; 2], usize, usize, [usize; 2]); 4] = [
        ([5, 3], 3, 3, [1, 1]),
        ([3, 3], 6, 6, [1, 1]),
        ([3, 3], 2, 1, [1, 1]),
        ([3, 3], 1, 1, [1, 2]),
    ];
    for (s, (kernel, channels, depth, dilation)) in shapes.into_iter().enumerate() {
        let g = geometry(
            Padding::Same,
            [1, 9, 8, channels],
            6,
            kernel,
            [1, 2],
            dilation,
        );
        let c = case(
            g,
            Kind::Conv {
                filter_depth: depth,
            },
            s % 2 == 0,
        );
        check(&c, 900 + s as u64);
    }
}

/// Row dilation keeps the panel (the runs are further apart, each still
/// contiguous).
#[test]
fn conv_small_patch_row_dilation() {
    let g = geometry(Padding::Same, [1, 11, 9, 3], 5, [3, 3], [2, 1], [2, 1]);
    check(&case(g, Kind::Conv { filter_depth: 3 }, true), 950);
    let g = geometry(Padding::Valid, [1, 12, 10, 1], 5, [5, 5], [1, 1], [2, 1]);
    check(&case(g, Kind::Conv { filter_depth: 1 }, false), 951);
}
