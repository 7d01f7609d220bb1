//! Every shape the oracle is checked on: padding, strides, dilation,
//! kernels, groups, depth multipliers, zero channels and saturating biases.

use std::vec;

use super::*;

#[test]
fn conv_padding_follows_tflite() {
    // 7 inputs, 3 taps, stride 2, SAME: 4 outputs reaching 3 * 2 + 3 = 9,
    // 2 past the input: 1 before, 1 after.
    assert_eq!(
        Padding::Same.axis("t", 7, 3, 2, 1).unwrap(),
        AxisPadding {
            output: 4,
            before: 1
        }
    );
    // 8 inputs: the same 4 outputs reach 9, 1 past: 0 before (the odd
    // padding goes after, as TFLite puts it).
    assert_eq!(
        Padding::Same.axis("t", 8, 3, 2, 1).unwrap(),
        AxisPadding {
            output: 4,
            before: 0
        }
    );
    // Dilation 2 makes 3 taps span 5: VALID over 9 gives 5 outputs.
    assert_eq!(
        Padding::Valid.axis("t", 9, 3, 1, 2).unwrap(),
        AxisPadding {
            output: 5,
            before: 0
        }
    );
    assert_eq!(
        Padding::Same.axis("t", 9, 3, 1, 2).unwrap(),
        AxisPadding {
            output: 9,
            before: 2
        }
    );
    assert!(Padding::Valid.axis("t", 4, 3, 1, 2).is_err());
    assert!(Padding::Same.axis("t", 4, 3, 0, 1).is_err());
    assert!(Padding::Same.axis("t", 4, 3, 1, 0).is_err());
}

#[test]
fn conv_3x3_stride2_same_odd_sizes_per_channel() {
    let g = geometry(Padding::Same, [2, 7, 9, 3], 5, [3, 3], [2, 2], [1, 1]);
    check(&case(g, Kind::Conv { filter_depth: 3 }, true), 1);
}

#[test]
fn conv_3x3_stride1_valid_per_tensor() {
    let g = geometry(Padding::Valid, [1, 6, 5, 4], 3, [3, 3], [1, 1], [1, 1]);
    check(&case(g, Kind::Conv { filter_depth: 4 }, false), 2);
}

#[test]
fn conv_1x1_and_rectangular_kernels() {
    let g = geometry(Padding::Same, [1, 5, 3, 7], 9, [1, 1], [1, 1], [1, 1]);
    check(&case(g, Kind::Conv { filter_depth: 7 }, true), 3);
    let g = geometry(Padding::Same, [1, 6, 7, 2], 3, [2, 5], [3, 2], [1, 1]);
    check(&case(g, Kind::Conv { filter_depth: 2 }, true), 4);
}

/// Pointwise layers (the NEON GEMM path) at odd widths and channel counts
/// around the GEMM's blocks of 8 channels and 16 bytes of depth, with
/// per-tensor and per-channel scales and saturating biases.
#[test]
fn conv_1x1_pointwise_shapes() {
    for (i, (h, w, cin, cout)) in [
        (1, 1, 1, 1),
        (3, 5, 17, 9),
        (2, 7, 16, 8),
        (4, 3, 33, 24),
        (1, 9, 5, 3),
    ]
    .into_iter()
    .enumerate()
    {
        let g = geometry(Padding::Valid, [2, h, w, cin], cout, [1, 1], [1, 1], [1, 1]);
        let mut c = case(g, Kind::Conv { filter_depth: cin }, i % 2 == 0);
        check(&c, 100 + i as u64);
        c.bias_range = (-(1 << 30), 1 << 30);
        c.zero_channels = vec![0];
        check(&c, 200 + i as u64);
    }
}

#[test]
fn conv_dilation_2_same_and_valid() {
    let g = geometry(Padding::Same, [1, 9, 8, 3], 4, [3, 3], [1, 1], [2, 2]);
    check(&case(g, Kind::Conv { filter_depth: 3 }, true), 5);
    let g = geometry(Padding::Valid, [1, 9, 8, 3], 4, [3, 2], [2, 1], [2, 3]);
    check(&case(g, Kind::Conv { filter_depth: 3 }, false), 6);
}

#[test]
fn conv_grouped() {
    // 6 input channels, filters 2 deep: 3 groups of 2 filters each.
    let g = geometry(Padding::Same, [1, 5, 5, 6], 6, [3, 3], [1, 1], [1, 1]);
    check(&case(g, Kind::Conv { filter_depth: 2 }, true), 7);
}

#[test]
fn conv_zero_weight_channels_and_saturating_biases() {
    let g = geometry(Padding::Same, [1, 5, 4, 3], 6, [3, 3], [2, 2], [1, 1]);
    let mut c = case(g, Kind::Conv { filter_depth: 3 }, true);
    c.zero_channels = vec![0, 4];
    check(&c, 8);
    // Biases of +-2^30: every output saturates at the type's limits (or the
    // activation's), and the zero-weight channels give the bias alone.
    c.bias_range = (-(1 << 30), 1 << 30);
    check(&c, 9);
    c.input_zero_point = 127;
    c.output = QuantParams::new(0.013, -128);
    check(&c, 10);
}

#[test]
fn conv_depthwise_multiplier_8_one_input_channel() {
    let g = geometry(Padding::Same, [1, 9, 7, 1], 8, [3, 3], [2, 2], [1, 1]);
    check(&case(g, Kind::Depthwise { multiplier: 8 }, true), 11);
}

#[test]
fn conv_depthwise_multipliers_strides_dilations() {
    let g = geometry(Padding::Same, [2, 7, 7, 5], 5, [3, 3], [1, 1], [1, 1]);
    check(&case(g, Kind::Depthwise { multiplier: 1 }, true), 12);
    let g = geometry(Padding::Valid, [1, 8, 9, 3], 6, [3, 3], [2, 2], [1, 1]);
    check(&case(g, Kind::Depthwise { multiplier: 2 }, false), 13);
    let g = geometry(Padding::Same, [1, 9, 9, 4], 4, [3, 3], [1, 1], [2, 2]);
    check(&case(g, Kind::Depthwise { multiplier: 1 }, true), 14);
    let g = geometry(Padding::Same, [1, 6, 5, 2], 4, [5, 5], [2, 1], [1, 1]);
    let mut c = case(g, Kind::Depthwise { multiplier: 2 }, true);
    c.zero_channels = vec![1];
    c.bias_range = (-(1 << 30), 1 << 30);
    check(&c, 15);
}
