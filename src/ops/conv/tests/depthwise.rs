//! The depthwise convolution's NEON kernel against the scalar loops on
//! randomized shapes (every path of the kernel: 3x3 and 5x5 interiors,
//! edges, partial blocks, one input channel, permuted multipliers), and
//! LiteRT's two aarch64 requantizations against the oracle.

use core::ops::Range;
use std::vec;
use std::vec::Vec;

use super::*;

const ALL: [ConvRequantization; 5] = [
    ConvRequantization::Multiplier(Rounding::Double),
    ConvRequantization::Multiplier(Rounding::Single),
    ConvRequantization::XnnpackF32,
    ConvRequantization::DoubleTiesUpward,
    ConvRequantization::TiesUpwardInBlocksOf8,
];

const ACTIVATIONS: [FusedActivation; 3] = [
    FusedActivation::None,
    FusedActivation::Relu,
    FusedActivation::Relu6,
];

/// `(x << left)` saturated, its doubling high product with the Q0.31
/// `m` and then a divide by `2^right`, both rounding ties toward
/// +infinity.
fn ties_upward(acc: i64, m: i64, left: i32, right: i32) -> i64 {
    let x = (acc << left).clamp(i32::MIN as i64, i32::MAX as i64);
    // m < 2^31: no saturation.
    let high = (x * m + (1 << 30)) >> 31;
    if right == 0 {
        return high;
    }
    (high + (1 << (right - 1))) >> right
}

/// The oracle's byte for LiteRT's aarch64 requantizations of channel `c`
/// of `channels`, or the common paths through [`expected`].
#[allow(clippy::too_many_arguments)]
fn expected_any(
    acc: i64,
    c: usize,
    channels: usize,
    input: f32,
    weight: f32,
    output: QuantParams,
    act: FusedActivation,
    r: ConvRequantization,
) -> i8 {
    let real = input as f64 * weight as f64 / output.scale as f64;
    let acc32 = acc as i32 as i64;
    let (m, e) = quantized(real);
    let y = match r {
        ConvRequantization::DoubleTiesUpward => ties_upward(acc32, m, e.max(0), (-e).max(0)),
        // LiteRT's blocks shift right by at least 1.
        ConvRequantization::TiesUpwardInBlocksOf8 if c < channels / 8 * 8 => {
            ties_upward(acc32, m, e - e.min(-1), -e.min(-1))
        }
        ConvRequantization::TiesUpwardInBlocksOf8 => double_rounding(acc32, real),
        other => return expected(acc, input, weight, output, act, other),
    };
    let (lo, hi) = act.range_i8(output);
    (y + output.zero_point as i64).clamp(lo as i64, hi as i64) as i8
}

/// One random layer checked on every requantization and activation: the
/// scalar loops against the oracle, every backend against the scalar
/// loops (also one row at a time). Returns false when the random geometry
/// is not a valid one (VALID padding with a window larger than the input).
#[allow(clippy::too_many_arguments)]
fn check_layer(
    rng: &mut Rng,
    input_shape: [usize; 4],
    multiplier: usize,
    kernel: [usize; 2],
    stride: [usize; 2],
    dilation: [usize; 2],
    padding: Padding,
    bias_range: (i32, i32),
) -> bool {
    check_layer_weights(
        rng,
        input_shape,
        multiplier,
        kernel,
        stride,
        dilation,
        padding,
        bias_range,
        Weights::Any,
        None,
    )
}

/// Which random weights [`check_layer_weights`] draws.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Weights {
    /// Any int8 value.
    Any,
    /// Any but -128 (the pair kernel's layers, where the other conditions
    /// hold).
    NoMin,
    /// Any, with one weight of -128 (the widening kernel's).
    WithMin,
}

/// [`check_layer`] with the weights drawn as `weights` says, and the
/// output zero point `output_zp` when given (else a random one).
#[allow(clippy::too_many_arguments)]
fn check_layer_weights(
    rng: &mut Rng,
    input_shape: [usize; 4],
    multiplier: usize,
    kernel: [usize; 2],
    stride: [usize; 2],
    dilation: [usize; 2],
    padding: Padding,
    bias_range: (i32, i32),
    weight_set: Weights,
    output_zp: Option<i32>,
) -> bool {
    let channels = input_shape[3] * multiplier;
    let Ok(g) = ConvGeometry::tflite(
        "test",
        padding,
        input_shape,
        channels,
        kernel,
        stride,
        dilation,
    ) else {
        return false;
    };
    let input: Vec<i8> = (0..input_shape.iter().product::<usize>())
        .map(|_| rng.i8())
        .collect();
    let taps = kernel[0] * kernel[1];
    let mut weights: Vec<i8> = (0..taps * channels).map(|_| rng.i8()).collect();
    // A zero channel now and then.
    if rng.next().is_multiple_of(3) {
        let c = rng.next() as usize % channels;
        for t in 0..taps {
            weights[t * channels + c] = 0;
        }
    }
    match weight_set {
        Weights::Any => {}
        Weights::NoMin => weights.iter_mut().for_each(|w| *w = (*w).max(-127)),
        Weights::WithMin => {
            let at = rng.next() as usize % weights.len();
            weights[at] = i8::MIN;
        }
    }
    let bias: Vec<i32> = (0..channels)
        .map(|_| rng.range(bias_range.0, bias_range.1))
        .collect();
    let per_channel = rng.next().is_multiple_of(2);
    let scales: Vec<f32> = if per_channel {
        (0..channels)
            .map(|_| 0.0005 + rng.range(0, 3000) as f32 * 1e-5)
            .collect()
    } else {
        vec![0.0031]
    };
    let input_q = QuantParams::new(0.047, rng.range(-128, 127));
    let output_scale = 0.05 + rng.range(0, 100) as f32 * 1e-3;
    let zero_point = rng.range(-128, 127);
    let output_q = QuantParams::new(output_scale, output_zp.unwrap_or(zero_point));
    let acc = naive_acc(
        &g,
        Kind::Depthwise { multiplier },
        &input,
        &weights,
        &bias,
        input_q.zero_point,
    );
    for r in ALL {
        for act in ACTIVATIONS {
            let q = ConvQuantization {
                input: input_q,
                weight_scales: &scales,
                output: output_q,
                activation: act,
                requantization: r,
            };
            let op = DepthwiseConv2d::new(g, multiplier, &weights, Some(&bias), &q).unwrap();
            #[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
            {
                let pairs = op.folded.is_some();
                match weight_set {
                    Weights::WithMin => assert!(!pairs, "a weight of -128 runs the pair kernel"),
                    Weights::NoMin if multiplier == 1 && channels.is_multiple_of(8) => {
                        assert!(pairs, "{g:?}: not on the pair kernel")
                    }
                    _ => {}
                }
            }
            let mut scalar = vec![0x55u8 as i8; acc.len()];
            op.run_rows(Backend::Scalar, &input, &mut scalar, 0..op.rows())
                .unwrap();
            for (i, (&got, &a)) in scalar.iter().zip(&acc).enumerate() {
                let c = i % channels;
                let s = scales[if per_channel { c } else { 0 }];
                let want = expected_any(a, c, channels, input_q.scale, s, output_q, act, r);
                assert_eq!(got, want, "{g:?} m {multiplier} {r:?} {act:?} element {i}");
            }
            for backend in Backend::available() {
                let mut whole = vec![0x11u8 as i8; acc.len()];
                op.run_rows(backend, &input, &mut whole, 0..op.rows())
                    .unwrap();
                let mut rows = vec![0x22u8 as i8; acc.len()];
                for row in (0..op.rows()).rev() {
                    op.run_rows(backend, &input, &mut rows, row..row + 1)
                        .unwrap();
                }
                // Ranges of nine rows from row 1 (the first alone): odd
                // starts, row pairs (from 8 rows a call) and a row left
                // over.
                let mut nines = vec![0x33u8 as i8; acc.len()];
                let mut start = 0;
                while start < op.rows() {
                    let end = if start == 0 {
                        1
                    } else {
                        (start + 9).min(op.rows())
                    };
                    op.run_rows(backend, &input, &mut nines, start..end)
                        .unwrap();
                    start = end;
                }
                for out in [&whole, &rows, &nines] {
                    if *out != scalar {
                        let i = out.iter().zip(&scalar).position(|(a, b)| a != b).unwrap();
                        panic!(
                            "{} differs from scalar at element {i} (channel {}): {} vs {}; \
                             {g:?} m {multiplier} {r:?} {act:?}",
                            backend.name(),
                            i % channels,
                            out[i],
                            scalar[i]
                        );
                    }
                }
            }
        }
    }
    true
}

/// Randomized shapes: odd sizes, channel counts around the blocks of 8 and
/// 16, multipliers 1, 2, 3 and 8, one input channel, kernels 1x1 to 6x6
/// (3x3 and 5x5 most), strides 1 to 3, dilations, both paddings, biases up
/// to saturation.
#[test]
fn depthwise_i8_neon_equals_scalar_random_shapes() {
    let mut rng = Rng(0x5eed_d3e9);
    let mut checked = 0;
    while checked < 60 {
        let multiplier = [1, 1, 1, 2, 3, 8][rng.next() as usize % 6];
        let in_channels = if rng.next().is_multiple_of(5) {
            1
        } else {
            1 + rng.next() as usize % 40
        };
        let side = |rng: &mut Rng| match rng.next() % 4 {
            0 | 1 => 3,
            2 => 5,
            _ => 1 + rng.next() as usize % 6,
        };
        let k = side(&mut rng);
        let kernel = if rng.next().is_multiple_of(4) {
            [k, side(&mut rng)]
        } else {
            [k, k]
        };
        let s = 1 + rng.next() as usize % 2 + (rng.next().is_multiple_of(8)) as usize;
        let stride = [
            s,
            if rng.next().is_multiple_of(6) {
                3 - s.min(2)
            } else {
                s
            },
        ];
        let d = if rng.next().is_multiple_of(5) { 2 } else { 1 };
        let dilation = [d, if rng.next().is_multiple_of(4) { 1 } else { d }];
        let input = [
            1 + (rng.next().is_multiple_of(4)) as usize,
            1 + rng.next() as usize % 11,
            1 + rng.next() as usize % 11,
            in_channels,
        ];
        let padding = if rng.next().is_multiple_of(3) {
            Padding::Valid
        } else {
            Padding::Same
        };
        let bias_range = if rng.next().is_multiple_of(6) {
            (-(1 << 30), 1 << 30)
        } else {
            (-20_000, 20_000)
        };
        if check_layer(
            &mut rng, input, multiplier, kernel, stride, dilation, padding, bias_range,
        ) {
            checked += 1;
        }
    }
}

/// Input shape, depth multiplier, kernel, strides, dilations, padding.
type Shape = (
    [usize; 4],
    usize,
    [usize; 2],
    [usize; 2],
    [usize; 2],
    Padding,
);

/// The fixed shapes the kernel's paths are built for, each once: a whole
/// 16-lane block and a last block of 8 (3x3 stride 1 and 2 SAME, MobileNet's
/// layers), 5x5, the first layer of one input channel times 8 (micro_speech's
/// 10x8 stride 2), channel counts of 24 and 13 (a partial block), a
/// multiplier of 2 across blocks (the table path), dilation 2.
#[test]
fn depthwise_i8_neon_equals_scalar_kernel_paths() {
    let mut rng = Rng(77);
    let cases: [Shape; 9] = [
        ([1, 9, 11, 16], 1, [3, 3], [1, 1], [1, 1], Padding::Same),
        ([1, 9, 11, 24], 1, [3, 3], [2, 2], [1, 1], Padding::Same),
        ([1, 8, 8, 8], 1, [3, 3], [2, 2], [1, 1], Padding::Same),
        ([1, 10, 7, 32], 1, [5, 5], [1, 1], [1, 1], Padding::Same),
        ([1, 13, 10, 1], 8, [10, 8], [2, 2], [1, 1], Padding::Same),
        ([1, 7, 6, 13], 1, [3, 3], [1, 1], [1, 1], Padding::Valid),
        ([1, 7, 9, 12], 2, [3, 3], [2, 2], [1, 1], Padding::Same),
        ([1, 11, 9, 20], 1, [3, 3], [1, 1], [2, 2], Padding::Same),
        ([2, 6, 5, 3], 3, [5, 5], [2, 1], [1, 2], Padding::Same),
    ];
    for (input, m, kernel, stride, dilation, padding) in cases {
        assert!(check_layer(
            &mut rng,
            input,
            m,
            kernel,
            stride,
            dilation,
            padding,
            (-(1 << 30), 1 << 30)
        ));
        assert!(check_layer(
            &mut rng,
            input,
            m,
            kernel,
            stride,
            dilation,
            padding,
            (-30_000, 30_000)
        ));
    }
}

/// A multiplier of 1/4 (mantissa 2^30, shift -1) puts accumulators of
/// 2 mod 4 on ties: LiteRT's 3x3 kernel rounds them toward +infinity where
/// double rounding goes away from zero; its general kernel's whole blocks
/// of 8 channels round them upward too, the rest away from zero. With a
/// multiplier of 3/4 (shift 0), the blocks split the shift into 1 left
/// and 1 right and round twice.
#[test]
fn depthwise_litert_ties() {
    let g = geometry(Padding::Valid, [1, 1, 1, 9], 9, [1, 1], [1, 1], [1, 1]);
    let run_scaled = |r: ConvRequantization, x: i8, input_scale: f32| -> Vec<i8> {
        let q = ConvQuantization {
            input: QuantParams::new(input_scale, 0),
            weight_scales: &[1.0],
            output: QuantParams::new(1.0, 0),
            activation: FusedActivation::None,
            requantization: r,
        };
        let op = DepthwiseConv2d::new(g, 1, &[1; 9], None, &q).unwrap();
        let mut outs = Vec::new();
        for backend in Backend::available() {
            let mut out = [0i8; 9];
            op.run_rows(backend, &[x; 9], &mut out, 0..1).unwrap();
            outs.push(out);
        }
        assert!(outs.windows(2).all(|w| w[0] == w[1]), "{r:?} {x}");
        outs[0].to_vec()
    };
    let run = |r, x| run_scaled(r, x, 0.25);
    // -6 / 4 = -1.5.
    assert_eq!(run(ConvRequantization::DoubleTiesUpward, -6), [-1; 9]);
    let mut blocks = vec![-1i8; 8];
    blocks.push(-2);
    assert_eq!(run(ConvRequantization::TiesUpwardInBlocksOf8, -6), blocks);
    // 10 / 4 = 2.5: up and away agree.
    assert_eq!(run(ConvRequantization::DoubleTiesUpward, 10), [3; 9]);
    assert_eq!(run(ConvRequantization::TiesUpwardInBlocksOf8, 10), [3; 9]);
    // Scale 3/4 (shift 0): -1 * 3/4 = -0.75 rounds once to -1 (3x3 kernel,
    // double rounding); the blocks' split gives round(-1.5) = -1 upward,
    // then -1 / 2 = -0.5 upward: 0.
    assert_eq!(
        run_scaled(ConvRequantization::DoubleTiesUpward, -1, 0.75),
        [-1; 9]
    );
    let mut split = vec![0i8; 8];
    split.push(-1);
    assert_eq!(
        run_scaled(ConvRequantization::TiesUpwardInBlocksOf8, -1, 0.75),
        split
    );
}

/// Which LiteRT kernel (and so rounding) a layer gets: its 3x3 kernel's
/// conditions, one at a time.
#[test]
fn depthwise_litert_aarch64_kernel_choice() {
    let pick = |input: [usize; 4],
                m: usize,
                kernel: [usize; 2],
                stride: usize,
                dilation: usize,
                padding: Padding| {
        let g = geometry(
            padding,
            input,
            input[3] * m,
            kernel,
            [stride, stride],
            [dilation, dilation],
        );
        DepthwiseConv2d::litert_aarch64_requantization(&g, m)
    };
    let up = ConvRequantization::DoubleTiesUpward;
    let blocks = ConvRequantization::TiesUpwardInBlocksOf8;
    assert_eq!(pick([1, 9, 7, 8], 1, [3, 3], 1, 1, Padding::Same), up);
    assert_eq!(pick([1, 24, 24, 32], 1, [3, 3], 1, 1, Padding::Same), up);
    assert_eq!(pick([1, 9, 7, 8], 1, [3, 3], 2, 1, Padding::Same), up);
    assert_eq!(pick([1, 9, 7, 8], 1, [3, 3], 1, 1, Padding::Valid), up);
    // Input channels not a multiple of 8.
    assert_eq!(pick([1, 8, 9, 6], 1, [3, 3], 2, 1, Padding::Same), blocks);
    // A multiplier, a 5x5 filter, dilation, stride 3.
    assert_eq!(pick([1, 9, 7, 4], 2, [3, 3], 2, 1, Padding::Same), blocks);
    assert_eq!(pick([1, 9, 9, 1], 8, [3, 3], 2, 1, Padding::Same), blocks);
    assert_eq!(pick([1, 9, 7, 8], 1, [5, 5], 1, 1, Padding::Same), blocks);
    assert_eq!(
        pick([1, 11, 10, 8], 1, [3, 3], 1, 2, Padding::Valid),
        blocks
    );
    assert_eq!(pick([1, 9, 9, 8], 1, [3, 3], 3, 1, Padding::Same), blocks);
    // SAME at stride 2 over an odd size pads 1 before and 1 after (taken);
    // over an even size 0 before and 1 after: padding 0 with a window past
    // the image (refused).
    assert_eq!(pick([1, 9, 9, 8], 1, [3, 3], 2, 1, Padding::Same), up);
    assert_eq!(pick([1, 8, 8, 8], 1, [3, 3], 2, 1, Padding::Same), blocks);
    // One pixel wide but not one pixel high.
    assert_eq!(pick([1, 5, 1, 8], 1, [3, 3], 1, 1, Padding::Same), blocks);
    assert_eq!(pick([1, 1, 1, 8], 1, [3, 3], 1, 1, Padding::Same), up);
}

/// The paired path (two pixels of a block of at most 8 channels in one
/// 16-lane vector) on each of its loads and stores: 8 channels with
/// stride 1 (one 16-byte load, one 16-byte store) and stride 2
/// (person_detect's second and first layers: in place, and one input
/// channel times 8), a last block of 8 after 16 channels (two 8-byte
/// stores), fewer than 8 broadcast lanes (stores through the stack), and
/// windows other than 3x3 and 5x5 (the interior loops not unrolled).
#[test]
fn depthwise_i8_neon_equals_scalar_paired_pixels() {
    let mut rng = Rng(0x9a12);
    let cases: [Shape; 8] = [
        ([1, 9, 12, 8], 1, [3, 3], [1, 1], [1, 1], Padding::Same),
        ([1, 9, 13, 8], 1, [3, 3], [2, 2], [1, 1], Padding::Same),
        ([1, 12, 13, 1], 8, [3, 3], [2, 2], [1, 1], Padding::Same),
        ([1, 7, 10, 24], 1, [3, 3], [1, 1], [1, 1], Padding::Same),
        ([1, 8, 11, 1], 3, [3, 3], [1, 1], [1, 1], Padding::Valid),
        ([1, 13, 12, 1], 8, [4, 3], [2, 2], [1, 1], Padding::Same),
        ([1, 6, 14, 8], 1, [2, 4], [1, 1], [1, 2], Padding::Same),
        ([2, 8, 9, 8], 1, [5, 5], [1, 1], [1, 1], Padding::Same),
    ];
    for (input, m, kernel, stride, dilation, padding) in cases {
        for bias_range in [(-(1 << 30), 1 << 30), (-30_000, 30_000)] {
            assert!(check_layer(
                &mut rng, input, m, kernel, stride, dilation, padding, bias_range
            ));
        }
    }
}

/// Wide rows of many interior pairs: stride 1 with the pair's input
/// columns shared (16 in place, the 16 + 8 of 24 and 32 + 8 of 40
/// channels, partial and table blocks, 5x5; stride 2 with dilation 2 also
/// shares), stride 2 and dilation 2 alone (not shared), odd widths
/// that end on a single pixel, and the one-input-channel first layer.
#[test]
fn depthwise_i8_neon_equals_scalar_wide_rows() {
    let mut rng = Rng(0x71e5);
    let cases: [Shape; 11] = [
        ([1, 5, 37, 32], 1, [3, 3], [1, 1], [1, 1], Padding::Same),
        ([1, 4, 35, 40], 1, [3, 3], [1, 1], [1, 1], Padding::Valid),
        ([1, 6, 33, 20], 1, [5, 5], [1, 1], [1, 1], Padding::Same),
        ([1, 9, 41, 16], 1, [3, 3], [2, 2], [2, 2], Padding::Same),
        ([1, 4, 70, 8], 1, [3, 3], [1, 1], [1, 1], Padding::Same),
        ([1, 4, 67, 24], 1, [3, 3], [1, 1], [1, 1], Padding::Same),
        ([1, 5, 131, 1], 8, [3, 3], [2, 2], [1, 1], Padding::Same),
        ([1, 3, 66, 5], 1, [3, 3], [1, 1], [1, 1], Padding::Valid),
        ([1, 3, 65, 6], 2, [5, 5], [1, 1], [1, 1], Padding::Same),
        ([1, 3, 40, 8], 1, [2, 4], [1, 1], [1, 2], Padding::Same),
        ([1, 6, 34, 16], 1, [5, 5], [2, 2], [1, 1], Padding::Same),
    ];
    for (input, m, kernel, stride, dilation, padding) in cases {
        for bias_range in [(-(1 << 30), 1 << 30), (-30_000, 30_000)] {
            assert!(check_layer(
                &mut rng, input, m, kernel, stride, dilation, padding, bias_range
            ));
        }
    }
}

/// XNNPACK's f32 output stage rounds ties to even (`fcvtns`): a layer
/// whose only nonzero tap is the centre's, with weight 1 and scale 1/4,
/// puts `x / 4` in every output, so `x = ±10` (±2.5) gives ±2 where ties
/// away from zero would give ±3, on every path of the 3x3 kernel
/// (interior pairs, single pixels, edges) and block width (8 channels
/// paired, a partial block, 16).
#[test]
fn depthwise_xnnpack_ties_round_to_even() {
    for channels in [8usize, 9, 16] {
        let g = geometry(
            Padding::Same,
            [1, 5, 5, channels],
            channels,
            [3, 3],
            [1, 1],
            [1, 1],
        );
        let mut weights = vec![0i8; 9 * channels];
        weights[4 * channels..5 * channels].fill(1);
        let q = ConvQuantization {
            input: QuantParams::new(0.25, 0),
            weight_scales: &[1.0],
            output: QuantParams::new(1.0, 0),
            activation: FusedActivation::None,
            requantization: ConvRequantization::XnnpackF32,
        };
        let op = DepthwiseConv2d::new(g, 1, &weights, None, &q).unwrap();
        for (x, want) in [(10i8, 2i8), (-10, -2), (14, 4), (-6, -2)] {
            let input = vec![x; 25 * channels];
            for backend in Backend::available() {
                let mut out = vec![0i8; 25 * channels];
                op.run_rows(backend, &input, &mut out, 0..5).unwrap();
                assert!(
                    out.iter().all(|&o| o == want),
                    "{backend:?} {channels} channels, x {x}: {out:?}"
                );
            }
        }
    }
}

/// The pair kernel (8-bit products, the zero point folded into per-class
/// biases) against the scalar loops: random shapes of depth multiplier 1
/// and 8 to 48 channels, every kernel size 1x1 to 6x6 (3x3 and 5x5 most),
/// strides 1 to 3, dilations, both paddings, zero points over the whole
/// range, weights of -127 but none of -128, biases up to the int32
/// limits (the folded bias and the sums wrap as the oracle's do); and the
/// same shapes with one weight of -128 (the widening kernel, which the
/// layer then keeps).
#[test]
fn depthwise_i8_pairs_equal_scalar_random_shapes() {
    let mut rng = Rng(0x00f0_1ded);
    let mut checked = 0;
    while checked < 48 {
        let channels = 8 * (1 + rng.next() as usize % 6);
        let side = |rng: &mut Rng| match rng.next() % 4 {
            0 | 1 => 3,
            2 => 5,
            _ => 1 + rng.next() as usize % 6,
        };
        let k = side(&mut rng);
        let kernel = if rng.next().is_multiple_of(4) {
            [k, side(&mut rng)]
        } else {
            [k, k]
        };
        let s = 1 + rng.next() as usize % 2 + (rng.next().is_multiple_of(8)) as usize;
        let stride = [
            s,
            if rng.next().is_multiple_of(6) {
                3 - s.min(2)
            } else {
                s
            },
        ];
        let d = if rng.next().is_multiple_of(5) { 2 } else { 1 };
        let dilation = [d, if rng.next().is_multiple_of(4) { 1 } else { d }];
        let input = [
            1 + (rng.next().is_multiple_of(4)) as usize,
            1 + rng.next() as usize % 11,
            1 + rng.next() as usize % 14,
            channels,
        ];
        let padding = if rng.next().is_multiple_of(3) {
            Padding::Valid
        } else {
            Padding::Same
        };
        let bias_range = match rng.next() % 3 {
            0 => (i32::MIN, i32::MAX),
            1 => (i32::MAX - 40_000, i32::MAX),
            _ => (-20_000, 20_000),
        };
        let weights = if checked % 4 == 3 {
            Weights::WithMin
        } else {
            Weights::NoMin
        };
        if check_layer_weights(
            &mut rng, input, 1, kernel, stride, dilation, padding, bias_range, weights, None,
        ) {
            checked += 1;
        }
    }
}

/// The pair kernel on the layer shapes of person_detect and MobileNetV2
/// (3x3 stride 1 and 2 SAME on 8, 16, 24 and 32 channels, an image of 3x3
/// and 6x6 where most pixels are edges, a 2x2 image, wide rows of interior
/// pairs, 5x5), weights at +-127, biases at the int32 limits.
#[test]
fn depthwise_i8_pairs_equal_scalar_model_shapes() {
    let mut rng = Rng(0x9a125);
    let cases: [Shape; 10] = [
        ([1, 10, 12, 8], 1, [3, 3], [1, 1], [1, 1], Padding::Same),
        ([1, 9, 12, 8], 1, [3, 3], [2, 2], [1, 1], Padding::Same),
        ([1, 6, 6, 32], 1, [3, 3], [1, 1], [1, 1], Padding::Same),
        ([1, 3, 3, 16], 1, [3, 3], [1, 1], [1, 1], Padding::Same),
        ([1, 6, 6, 16], 1, [3, 3], [2, 2], [1, 1], Padding::Same),
        ([1, 2, 2, 24], 1, [3, 3], [1, 1], [1, 1], Padding::Same),
        ([1, 4, 37, 24], 1, [3, 3], [1, 1], [1, 1], Padding::Same),
        ([1, 5, 19, 16], 1, [5, 5], [1, 1], [1, 1], Padding::Same),
        ([1, 7, 11, 8], 1, [5, 5], [2, 2], [1, 1], Padding::Same),
        ([1, 7, 9, 16], 1, [3, 3], [1, 1], [1, 1], Padding::Valid),
    ];
    for (input, m, kernel, stride, dilation, padding) in cases {
        for bias_range in [(i32::MIN, i32::MAX), (-30_000, 30_000)] {
            assert!(check_layer_weights(
                &mut rng,
                input,
                m,
                kernel,
                stride,
                dilation,
                padding,
                bias_range,
                Weights::NoMin,
                None,
            ));
        }
    }
}

/// An output zero point of -128 (RELU and RELU6 outputs quantized from 0
/// upward, and no activation: a lower bound of -128), where the `sdot`
/// kernels' asm loops narrow with `sqxtun` and flip the top bit, with an
/// upper bound of 127 or (RELU6) below it: person_detect's and
/// MobileNetV2's 3x3 shapes on 8 (paired pixels at stride 1), 16, 24 and 32
/// channels, the first layer of one input channel times 8 (stride 2: four
/// pixels a step and odd ends), small images of edges only, biases at the
/// int32 limits so that the 16-bit sums saturate both ways.
#[test]
fn depthwise_i8_dot_output_zero_point_min() {
    let mut rng = Rng(0x2e80);
    let cases: [Shape; 9] = [
        ([1, 10, 12, 8], 1, [3, 3], [1, 1], [1, 1], Padding::Same),
        ([1, 9, 13, 8], 1, [3, 3], [2, 2], [1, 1], Padding::Same),
        ([1, 12, 15, 1], 8, [3, 3], [2, 2], [1, 1], Padding::Same),
        ([1, 6, 6, 32], 1, [3, 3], [1, 1], [1, 1], Padding::Same),
        ([1, 3, 3, 16], 1, [3, 3], [1, 1], [1, 1], Padding::Same),
        ([1, 7, 9, 24], 1, [3, 3], [2, 2], [1, 1], Padding::Same),
        ([1, 4, 37, 24], 1, [3, 3], [1, 1], [1, 1], Padding::Same),
        ([1, 7, 9, 16], 1, [3, 3], [1, 1], [1, 1], Padding::Valid),
        ([1, 5, 11, 40], 1, [3, 3], [1, 1], [1, 1], Padding::Same),
    ];
    for (input, m, kernel, stride, dilation, padding) in cases {
        for bias_range in [(i32::MIN, i32::MAX), (-30_000, 30_000), (-3_000, 3_000)] {
            assert!(check_layer_weights(
                &mut rng,
                input,
                m,
                kernel,
                stride,
                dilation,
                padding,
                bias_range,
                Weights::NoMin,
                Some(-128),
            ));
        }
    }
}

/// The largest 16-bit pair sums: every input byte -128 and every weight
/// -127 (two products of 16,256 = 32,512 in one 16-bit lane), and every
/// byte 127 against -127, with the zero point at both ends, on 16 and 8
/// channels, interior and edges.
#[test]
fn depthwise_i8_pairs_extreme_products() {
    for channels in [8usize, 16, 24] {
        let g = geometry(
            Padding::Same,
            [1, 5, 7, channels],
            channels,
            [3, 3],
            [1, 1],
            [1, 1],
        );
        let weights = vec![-127i8; 9 * channels];
        for (x, zp) in [(-128i8, 127), (-128, -128), (127, -128), (127, 127)] {
            let q = ConvQuantization {
                input: QuantParams::new(0.5, zp),
                weight_scales: &[0.5],
                output: QuantParams::new(1000.0, 0),
                activation: FusedActivation::None,
                requantization: ConvRequantization::Multiplier(Rounding::Double),
            };
            let op = DepthwiseConv2d::new(g, 1, &weights, None, &q).unwrap();
            let input = vec![x; 35 * channels];
            let mut scalar = vec![0i8; 35 * channels];
            op.run_rows(Backend::Scalar, &input, &mut scalar, 0..5)
                .unwrap();
            // The centre pixel: 9 taps of (x - zp) * -127 * 0.25 / 1000.
            let centre = (2 * 7 + 3) * channels;
            let want = ((x as f64 - zp as f64) * -127.0 * 9.0 * 0.25 / 1000.0).round();
            assert_eq!(scalar[centre] as f64, want, "x {x} zp {zp}");
            for backend in Backend::available() {
                let mut out = vec![0i8; 35 * channels];
                op.run_rows(backend, &input, &mut out, 0..5).unwrap();
                assert_eq!(out, scalar, "{backend:?} x {x} zp {zp} {channels} channels");
            }
        }
    }
}

/// The `sdot` kernel (the whole blocks of 16 channels of a pair-kernel
/// layer, on a CPU with dotprod): kernels of 4 to 8 rows (two groups of 4
/// rows; 9 rows stay on the pair kernel), rows longer than one pass of its
/// column buffer (3x3 over 200 columns, 5x5 over 100), strides and
/// dilations, VALID and SAME, a batch of 2, biases at the int32 limits.
#[test]
fn depthwise_i8_dot_equal_scalar_tall_and_wide() {
    let mut rng = Rng(0xd07_5d07);
    let cases: [Shape; 9] = [
        ([1, 3, 200, 16], 1, [3, 3], [1, 1], [1, 1], Padding::Same),
        ([1, 4, 203, 32], 1, [3, 3], [2, 2], [1, 1], Padding::Same),
        ([1, 3, 100, 16], 1, [5, 5], [1, 1], [1, 1], Padding::Same),
        ([1, 9, 11, 24], 1, [7, 7], [1, 1], [1, 1], Padding::Same),
        ([1, 10, 9, 16], 1, [8, 3], [2, 1], [1, 2], Padding::Same),
        ([1, 12, 13, 32], 1, [4, 4], [1, 1], [2, 2], Padding::Same),
        ([1, 6, 7, 16], 1, [9, 9], [1, 1], [1, 1], Padding::Same),
        ([2, 5, 6, 48], 1, [3, 5], [1, 3], [1, 1], Padding::Valid),
        ([1, 7, 8, 16], 1, [3, 3], [3, 3], [2, 2], Padding::Same),
    ];
    for (input, m, kernel, stride, dilation, padding) in cases {
        for bias_range in [(i32::MIN, i32::MAX), (-30_000, 30_000)] {
            assert!(check_layer_weights(
                &mut rng,
                input,
                m,
                kernel,
                stride,
                dilation,
                padding,
                bias_range,
                Weights::NoMin,
                None,
            ));
        }
    }
}

/// The `sdot` kernel's 3x3 blocks with per-channel scales that shift some
/// channels left (a block with left shifts runs the generic loop, one with
/// none the asm row loop) next to blocks that only shift right, on
/// strides 1 and 2, SAME and VALID, every requantization, against the
/// scalar loops.
#[test]
fn depthwise_i8_dot_left_and_right_shifts() {
    let mut rng = Rng(0x1ef7_5417);
    for (shape, stride, padding) in [
        ([1, 5, 9, 48], 1, Padding::Same),
        ([1, 7, 8, 32], 2, Padding::Same),
        ([1, 6, 7, 32], 1, Padding::Valid),
    ] {
        let channels = shape[3];
        let g = geometry(padding, shape, channels, [3, 3], [stride; 2], [1, 1]);
        let input: Vec<i8> = (0..shape.iter().product::<usize>())
            .map(|_| rng.i8())
            .collect();
        let weights: Vec<i8> = (0..9 * channels).map(|_| rng.i8().max(-127)).collect();
        let bias: Vec<i32> = (0..channels).map(|_| rng.range(-3_000, 3_000)).collect();
        // Channels 16..32 scale up (effective scale 0.5 s / 100 above 1:
        // left shifts), the others down; channel 3 at exactly 1.
        let scales: Vec<f32> = (0..channels)
            .map(|c| match c {
                3 => 200.0,
                16..32 => 300.0 + c as f32 * 10.0,
                _ => 0.5 + c as f32 * 0.1,
            })
            .collect();
        for r in ALL {
            for act in ACTIVATIONS {
                let q = ConvQuantization {
                    input: QuantParams::new(0.5, rng.range(-128, 127)),
                    weight_scales: &scales,
                    output: QuantParams::new(100.0, rng.range(-128, 127)),
                    activation: act,
                    requantization: r,
                };
                let op = DepthwiseConv2d::new(g, 1, &weights, Some(&bias), &q).unwrap();
                let n = op.rows() * g.output_width * channels;
                let mut scalar = vec![0i8; n];
                op.run_rows(Backend::Scalar, &input, &mut scalar, 0..op.rows())
                    .unwrap();
                for backend in Backend::available() {
                    let mut out = vec![0x33u8 as i8; n];
                    op.run_rows(backend, &input, &mut out, 0..op.rows())
                        .unwrap();
                    assert_eq!(out, scalar, "{backend:?} {g:?} {r:?} {act:?}");
                }
            }
        }
    }
}

/// The `sdot` kernel's 3x3 row loop on a last block of 8 channels: 8 and
/// 8 + 16 = 24 channels, and one input channel times 8 (the broadcast
/// layout), on strides 1 and 2, SAME and VALID (edge column and row
/// classes), every requantization and activation, with weights and
/// inputs at the int8 limits, against the scalar loops.
#[test]
fn depthwise_i8_dot_blocks_of_8() {
    let mut rng = Rng(0xd07_0008);
    for (shape, m, stride, padding) in [
        ([1, 9, 11, 8], 1, 1, Padding::Same),
        // 8 channels at stride 1 run two pixels a step: runs of even and
        // odd length, one and two columns, VALID.
        ([2, 5, 6, 8], 1, 1, Padding::Same),
        ([1, 6, 7, 8], 1, 1, Padding::Valid),
        ([1, 5, 8, 8], 1, 1, Padding::Valid),
        ([1, 4, 2, 8], 1, 1, Padding::Same),
        ([1, 4, 1, 8], 1, 1, Padding::Same),
        ([1, 8, 9, 8], 1, 2, Padding::Same),
        ([1, 7, 10, 24], 1, 1, Padding::Valid),
        ([1, 9, 8, 24], 1, 2, Padding::Same),
        ([1, 10, 12, 1], 8, 2, Padding::Same),
        ([1, 7, 9, 1], 8, 1, Padding::Valid),
        ([1, 6, 7, 3], 8, 1, Padding::Same),
    ] {
        let channels = shape[3] * m;
        let g = geometry(padding, shape, channels, [3, 3], [stride; 2], [1, 1]);
        let edge = |rng: &mut Rng, i: usize| match i % 7 {
            0 => -128,
            1 => 127,
            _ => rng.i8(),
        };
        let input: Vec<i8> = (0..shape.iter().product::<usize>())
            .map(|i| edge(&mut rng, i))
            .collect();
        let weights: Vec<i8> = (0..9 * channels)
            .map(|i| edge(&mut rng, i / 3).max(-127))
            .collect();
        let bias: Vec<i32> = (0..channels).map(|_| rng.range(-30_000, 30_000)).collect();
        // All channels scale down (no left shift: the asm row loop).
        let scales: Vec<f32> = (0..channels).map(|c| 0.3 + c as f32 * 0.07).collect();
        for r in ALL {
            for act in ACTIVATIONS {
                let q = ConvQuantization {
                    input: QuantParams::new(0.5, rng.range(-128, 127)),
                    weight_scales: &scales,
                    output: QuantParams::new(100.0, rng.range(-128, 127)),
                    activation: act,
                    requantization: r,
                };
                let op = DepthwiseConv2d::new(g, m, &weights, Some(&bias), &q).unwrap();
                let n = op.rows() * g.output_width * channels;
                let mut scalar = vec![0i8; n];
                op.run_rows(Backend::Scalar, &input, &mut scalar, 0..op.rows())
                    .unwrap();
                for backend in Backend::available() {
                    let mut out = vec![0x33u8 as i8; n];
                    op.run_rows(backend, &input, &mut out, 0..op.rows())
                        .unwrap();
                    assert_eq!(out, scalar, "{backend:?} {g:?} {r:?} {act:?}");
                }
            }
        }
    }
}

/// The `sdot` kernel's 3x3 paths over many rows per call (`rows3`: more
/// rows than its buffer holds at once, a batch of 2, images of 6x6 and
/// 3x3) and the first layer's 1 x 8 kernel (`first3`: person_detect's
/// 96x96 stride 2, stride 1 VALID), odd and even row widths, each run in
/// pieces of rows as the threads split it, against the scalar loops over
/// the whole output.
#[test]
fn depthwise_i8_dot_rows_in_pieces() {
    let mut rng = Rng(0xd07_9135);
    for (shape, m, stride, padding) in [
        ([1, 48, 48, 8], 1, 1, Padding::Same),
        ([1, 24, 24, 40], 1, 2, Padding::Same),
        ([2, 6, 6, 128], 1, 1, Padding::Same),
        ([1, 3, 3, 256], 1, 1, Padding::Same),
        ([1, 96, 96, 1], 8, 2, Padding::Same),
        ([2, 9, 13, 1], 8, 1, Padding::Valid),
        // Odd and even columns per row for the layouts two columns a
        // step: 8 channels (pairs of neighbouring columns), 48 and 24
        // (a last block of 8), a broadcast of 1 x 16.
        ([1, 7, 9, 8], 1, 1, Padding::Same),
        ([1, 5, 8, 8], 1, 1, Padding::Valid),
        ([1, 9, 11, 48], 1, 1, Padding::Same),
        ([1, 10, 7, 24], 1, 2, Padding::Same),
        ([1, 7, 9, 1], 16, 1, Padding::Same),
    ] {
        let channels = shape[3] * m;
        let g = geometry(padding, shape, channels, [3, 3], [stride; 2], [1, 1]);
        let input: Vec<i8> = (0..shape.iter().product::<usize>())
            .map(|_| rng.i8())
            .collect();
        let weights: Vec<i8> = (0..9 * channels).map(|_| rng.i8().max(-127)).collect();
        let bias: Vec<i32> = (0..channels).map(|_| rng.range(-30_000, 30_000)).collect();
        let scales: Vec<f32> = (0..channels).map(|c| 0.3 + c as f32 * 0.01).collect();
        for r in ALL {
            let q = ConvQuantization {
                input: QuantParams::new(0.5, rng.range(-128, 127)),
                weight_scales: &scales,
                output: QuantParams::new(100.0, rng.range(-128, 127)),
                activation: FusedActivation::Relu6,
                requantization: r,
            };
            let op = DepthwiseConv2d::new(g, m, &weights, Some(&bias), &q).unwrap();
            let rows = op.rows();
            let n = rows * g.output_width * channels;
            let mut scalar = vec![0i8; n];
            op.run_rows(Backend::Scalar, &input, &mut scalar, 0..rows)
                .unwrap();
            for backend in Backend::available() {
                let mut out = vec![0x33u8 as i8; n];
                let cuts = [0, 1, rows / 3, rows / 2 + 1, rows - 1, rows];
                for w in cuts.windows(2) {
                    op.run_rows(backend, &input, &mut out, w[0]..w[1].max(w[0]))
                        .unwrap();
                }
                assert_eq!(out, scalar, "{backend:?} {g:?} {r:?}");
            }
        }
    }
}

/// Ranges of whole channel blocks of bands of rows
/// ([`DepthwiseConv2d::run_band_channels`]), as threads cut a layer with
/// few rows, on every kernel path (the `sdot` 3x3 rows of `rows3` and its
/// general blocks, the pair kernel, the widening kernel of a multiplier 2
/// and of weights of -128, 5x5, stride 2, a last block of 8, a broadcast
/// of 1 x 32 whose first-layer kernel needs every block) and every
/// requantization: each equals the scalar loops over the whole output on
/// its channels and leaves the band's other channels as they were.
#[test]
fn depthwise_i8_channel_blocks_of_bands_equal_the_whole_run() {
    let mut rng = Rng(0xc4a7_2e15);
    for (shape, m, kernel, stride, padding, low) in [
        ([2, 6, 6, 128], 1, 3, 1, Padding::Same, -127),
        ([1, 3, 3, 256], 1, 3, 1, Padding::Same, -127),
        ([1, 7, 7, 40], 1, 3, 2, Padding::Same, -127),
        ([1, 7, 9, 24], 1, 5, 1, Padding::Same, -127),
        ([1, 5, 6, 32], 1, 3, 1, Padding::Valid, -128),
        ([1, 5, 5, 12], 2, 3, 1, Padding::Same, -127),
        ([1, 6, 7, 1], 32, 3, 1, Padding::Same, -127),
    ] {
        let channels = shape[3] * m;
        let g = geometry(padding, shape, channels, [kernel; 2], [stride; 2], [1, 1]);
        let input: Vec<i8> = (0..shape.iter().product::<usize>())
            .map(|_| rng.i8())
            .collect();
        let taps = kernel * kernel;
        let weights: Vec<i8> = (0..taps * channels).map(|_| rng.i8().max(low)).collect();
        let bias: Vec<i32> = (0..channels).map(|_| rng.range(-30_000, 30_000)).collect();
        let scales: Vec<f32> = (0..channels).map(|c| 0.3 + c as f32 * 0.01).collect();
        let blocks = channels.div_ceil(CHANNEL_BLOCK);
        let at = |b: usize| (b * CHANNEL_BLOCK).min(channels);
        let mut ranges: Vec<Range<usize>> = (0..blocks).map(|b| at(b)..at(b + 1)).collect();
        ranges.extend([
            0..channels,
            at(1)..channels,
            0..at(blocks / 2),
            at(1)..at(1),
        ]);
        for r in ALL {
            let q = ConvQuantization {
                input: QuantParams::new(0.5, rng.range(-128, 127)),
                weight_scales: &scales,
                output: QuantParams::new(100.0, rng.range(-128, 127)),
                activation: FusedActivation::Relu6,
                requantization: r,
            };
            let op = DepthwiseConv2d::new(g, m, &weights, Some(&bias), &q).unwrap();
            let rows = op.rows();
            let row_len = g.output_width * channels;
            let mut whole = vec![0i8; rows * row_len];
            op.run_rows(Backend::Scalar, &input, &mut whole, 0..rows)
                .unwrap();
            let bands = [0..rows, 0..1, 1..rows / 2 + 1, rows - 1..rows];
            for backend in Backend::available() {
                for band_rows in bands.clone() {
                    for range in &ranges {
                        let poison = 0x5Bu8 as i8;
                        let mut band = vec![poison; band_rows.len() * row_len];
                        op.run_band_channels(
                            backend,
                            &input,
                            &mut band,
                            (band_rows.clone(), range.clone()),
                        )
                        .unwrap();
                        let expected: Vec<i8> = whole[band_rows.start * row_len..][..band.len()]
                            .iter()
                            .enumerate()
                            .map(|(i, &v)| {
                                if range.contains(&(i % channels)) {
                                    v
                                } else {
                                    poison
                                }
                            })
                            .collect();
                        assert_eq!(
                            band, expected,
                            "{backend:?} {g:?} x{m} {r:?} rows {band_rows:?} channels {range:?}"
                        );
                    }
                }
            }
        }
        // Channels off the blocks, reversed or past the layer's.
        let q = ConvQuantization {
            input: QuantParams::new(0.5, 0),
            weight_scales: &scales,
            output: QuantParams::new(100.0, 0),
            activation: FusedActivation::None,
            requantization: ALL[0],
        };
        let op = DepthwiseConv2d::new(g, m, &weights, Some(&bias), &q).unwrap();
        let mut band = vec![0i8; g.output_width * channels];
        #[allow(clippy::reversed_empty_ranges)]
        for bad in [8..channels, 0..channels + 16, 16..0, 0..8] {
            if bad == (0..channels) || (bad.end == channels && bad.start % 16 == 0) {
                continue;
            }
            let err = op.run_band_channels(Backend::Scalar, &input, &mut band, (0..1, bad.clone()));
            assert!(
                matches!(err, Err(Error::Tile { .. })),
                "{bad:?} of {channels}: {err:?}"
            );
        }
    }
}
