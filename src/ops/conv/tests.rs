//! The convolutions against a naive formula written here independently:
//! the sum in `i64` over the unpacked weights with explicit bounds checks,
//! and each requantization path re-derived (`frexp` of the real multiplier
//! in `f64`, gemmlowp's two roundings, the single rounding in `i128`,
//! XNNPACK's `f32` product rounded with `round_ties_even`).

extern crate std;
use std::vec;
use std::vec::Vec;

use super::*;
use crate::quant::Rounding;

/// A small deterministic generator (64-bit LCG, high bits).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u32 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) as u32
    }
    fn i8(&mut self) -> i8 {
        self.next() as u8 as i8
    }
    fn range(&mut self, lo: i32, hi: i32) -> i32 {
        (lo as i64 + (self.next() as i64 % (hi as i64 - lo as i64 + 1))) as i32
    }
}

/// Which layer: a convolution with this filter depth, or a depthwise one
/// with this multiplier.
#[derive(Clone, Copy, Debug)]
enum Kind {
    Conv { filter_depth: usize },
    Depthwise { multiplier: usize },
}

/// The naive accumulators, `[b][oy][ox][c]`, from the weights in TFLite's
/// layout (OHWI, or 1HWC for depthwise).
fn naive_acc(g: &ConvGeometry, kind: Kind, x: &[i8], w: &[i8], bias: &[i32], zp: i32) -> Vec<i64> {
    let mut out = Vec::new();
    for b in 0..g.batch {
        for oy in 0..g.output_height {
            for ox in 0..g.output_width {
                for c in 0..g.output_channels {
                    let mut acc = bias[c] as i64;
                    for ky in 0..g.kernel_height {
                        for kx in 0..g.kernel_width {
                            let iy = (oy * g.stride_height + ky * g.dilation_height) as i64
                                - g.pad_top as i64;
                            let ix = (ox * g.stride_width + kx * g.dilation_width) as i64
                                - g.pad_left as i64;
                            if iy < 0
                                || ix < 0
                                || iy >= g.input_height as i64
                                || ix >= g.input_width as i64
                            {
                                continue;
                            }
                            let pixel = ((b * g.input_height + iy as usize) * g.input_width
                                + ix as usize)
                                * g.input_channels;
                            match kind {
                                Kind::Conv { filter_depth } => {
                                    let groups = g.input_channels / filter_depth;
                                    let group = c / (g.output_channels / groups);
                                    for i in 0..filter_depth {
                                        let xv = x[pixel + group * filter_depth + i] as i64;
                                        let wv = w[((c * g.kernel_height + ky) * g.kernel_width
                                            + kx)
                                            * filter_depth
                                            + i]
                                            as i64;
                                        acc += (xv - zp as i64) * wv;
                                    }
                                }
                                Kind::Depthwise { multiplier } => {
                                    let xv = x[pixel + c / multiplier] as i64;
                                    let wv = w[(ky * g.kernel_width + kx) * g.output_channels + c]
                                        as i64;
                                    acc += (xv - zp as i64) * wv;
                                }
                            }
                        }
                    }
                    out.push(acc);
                }
            }
        }
    }
    out
}

/// `real = q * 2^e`, `q` a Q0.31 integer in `[2^30, 2^31)` (ties away).
fn quantized(real: f64) -> (i64, i32) {
    if real == 0.0 {
        return (0, 0);
    }
    let mut e = real.log2().floor() as i32 + 1;
    let mut q = (real / 2f64.powi(e) * 2f64.powi(31)).round() as i64;
    // log2 may miss by one near powers of two.
    while q >= 1 << 31 {
        e += 1;
        q = (real / 2f64.powi(e) * 2f64.powi(31)).round() as i64;
    }
    while q < 1 << 30 {
        e -= 1;
        q = (real / 2f64.powi(e) * 2f64.powi(31)).round() as i64;
    }
    if q == 1 << 31 {
        q >>= 1;
        e += 1;
    }
    if e < -31 {
        return (0, 0);
    }
    (q, e)
}

fn double_rounding(acc: i64, real: f64) -> i64 {
    let (m, e) = quantized(real);
    let x = (acc << e.max(0)).clamp(i32::MIN as i64, i32::MAX as i64);
    // Doubling high product, rounded half away from zero... of 2^31.
    let p = x * m;
    let high = if x == i32::MIN as i64 && m == i32::MIN as i64 {
        i32::MAX as i64
    } else {
        let nudge = if p >= 0 { 1 << 30 } else { 1 - (1 << 30) };
        (p + nudge) / (1i64 << 31)
    };
    let right = (-e).max(0);
    if right == 0 {
        return high;
    }
    // Power-of-two division, ties away from zero.
    let mask = (1i64 << right) - 1;
    let rem = high & mask;
    let threshold = (mask >> 1) + (high < 0) as i64;
    (high >> right) + (rem > threshold) as i64
}

fn single_rounding(acc: i64, real: f64) -> i64 {
    let (mut m, mut e) = quantized(real);
    if e > 30 {
        m = i32::MAX as i64;
        e = 30;
    }
    let total = 31 - e.max(-31);
    let v = (acc as i128 * m as i128 + (1i128 << (total - 1))) >> total;
    v.clamp(i32::MIN as i128, i32::MAX as i128) as i64
}

/// The expected output byte of accumulator `acc` in channel `c`.
fn expected(
    acc: i64,
    input: f32,
    weight: f32,
    output: QuantParams,
    act: FusedActivation,
    r: ConvRequantization,
) -> i8 {
    let acc32 = acc as i32 as i64; // TFLite's int32 sum wraps
    match r {
        ConvRequantization::Multiplier(rounding) => {
            let real = input as f64 * weight as f64 / output.scale as f64;
            let y = match rounding {
                Rounding::Double => double_rounding(acc32, real),
                Rounding::Single => single_rounding(acc32, real),
            };
            let q = |v: f32| output.zero_point as i64 + (v / output.scale).round() as i64;
            let (lo, hi) = match act {
                FusedActivation::None => (-128, 127),
                FusedActivation::Relu => (q(0.0).max(-128), 127),
                FusedActivation::Relu6 => (q(0.0).max(-128), q(6.0).min(127)),
            };
            (y + output.zero_point as i64).clamp(lo, hi) as i8
        }
        ConvRequantization::XnnpackF32 => {
            let scale = input * weight / output.scale;
            let q = |v: f32| {
                (v / output.scale + output.zero_point as f32)
                    .clamp(-128.0, 127.0)
                    .round_ties_even() as i64
            };
            let (lo, hi) = match act {
                FusedActivation::None => (-128, 127),
                FusedActivation::Relu => (q(0.0), 127),
                FusedActivation::Relu6 => (q(0.0), q(6.0)),
            };
            let y = (acc32 as i32 as f32 * scale).round_ties_even() as i64;
            (y + output.zero_point as i64).clamp(lo, hi) as i8
        }
    }
}

const PATHS: [ConvRequantization; 3] = [
    ConvRequantization::Multiplier(Rounding::Double),
    ConvRequantization::Multiplier(Rounding::Single),
    ConvRequantization::XnnpackF32,
];

struct Case {
    geometry: ConvGeometry,
    kind: Kind,
    per_channel: bool,
    /// Output channels whose weights are all zero.
    zero_channels: Vec<usize>,
    bias_range: (i32, i32),
    input_zero_point: i32,
    output: QuantParams,
}

fn check(case: &Case, seed: u64) {
    let g = &case.geometry;
    let mut rng = Rng(seed);
    let input: Vec<i8> = (0..g.batch * g.input_height * g.input_width * g.input_channels)
        .map(|_| rng.i8())
        .collect();
    let per_filter = match case.kind {
        Kind::Conv { filter_depth } => g.kernel_height * g.kernel_width * filter_depth,
        Kind::Depthwise { .. } => g.kernel_height * g.kernel_width,
    };
    let mut weights: Vec<i8> = (0..per_filter * g.output_channels)
        .map(|_| rng.i8())
        .collect();
    for &c in &case.zero_channels {
        match case.kind {
            Kind::Conv { .. } => weights[c * per_filter..][..per_filter].fill(0),
            Kind::Depthwise { .. } => {
                for t in 0..per_filter {
                    weights[t * g.output_channels + c] = 0;
                }
            }
        }
    }
    let bias: Vec<i32> = (0..g.output_channels)
        .map(|_| rng.range(case.bias_range.0, case.bias_range.1))
        .collect();
    let scales: Vec<f32> = if case.per_channel {
        (0..g.output_channels)
            .map(|_| 0.002 + rng.range(0, 1000) as f32 * 1e-5)
            .collect()
    } else {
        vec![0.0031]
    };
    let input_q = QuantParams::new(0.047, case.input_zero_point);
    let acc = naive_acc(g, case.kind, &input, &weights, &bias, case.input_zero_point);
    for r in PATHS {
        for act in [
            FusedActivation::None,
            FusedActivation::Relu,
            FusedActivation::Relu6,
        ] {
            let q = ConvQuantization {
                input: input_q,
                weight_scales: &scales,
                output: case.output,
                activation: act,
                requantization: r,
            };
            let mut out = vec![0x55u8 as i8; acc.len()];
            let rows = match case.kind {
                Kind::Conv { filter_depth } => {
                    let op = Conv2d::new(*g, filter_depth, &weights, Some(&bias), &q).unwrap();
                    op.run(&input, &mut out).unwrap();
                    // Every backend (NEON's pointwise GEMM included) gives
                    // the scalar loops' bytes; the elementwise check below
                    // holds them to the oracle.
                    for backend in Backend::available() {
                        let mut other = vec![0x11u8 as i8; acc.len()];
                        op.run_rows(backend, &input, &mut other, 0..op.rows())
                            .unwrap();
                        assert_eq!(other, out, "{r:?} {act:?} {}", backend.name());
                    }
                    let pointwise = g.kernel_height == 1
                        && g.kernel_width == 1
                        && g.stride_height == 1
                        && g.stride_width == 1
                        && filter_depth == g.input_channels
                        && !matches!(r, ConvRequantization::XnnpackF32);
                    assert_eq!(op.pointwise.is_some(), pointwise);
                    // Any split into row tiles gives the same bytes.
                    let mut tiled = vec![0x33u8 as i8; acc.len()];
                    let half = op.rows() / 2;
                    op.run_rows(Backend::Scalar, &input, &mut tiled, half..op.rows())
                        .unwrap();
                    op.run_rows(Backend::Scalar, &input, &mut tiled, 0..half)
                        .unwrap();
                    tiled
                }
                Kind::Depthwise { multiplier } => {
                    let op =
                        DepthwiseConv2d::new(*g, multiplier, &weights, Some(&bias), &q).unwrap();
                    op.run(&input, &mut out).unwrap();
                    let mut tiled = vec![0x33u8 as i8; acc.len()];
                    for r in 0..op.rows() {
                        op.run_rows(Backend::Scalar, &input, &mut tiled, r..r + 1)
                            .unwrap();
                    }
                    tiled
                }
            };
            assert_eq!(rows, out, "{:?} {:?}: tiles differ from run", r, act);
            for (i, (&got, &a)) in out.iter().zip(&acc).enumerate() {
                let c = i % g.output_channels;
                let s = scales[if case.per_channel { c } else { 0 }];
                let want = expected(a, input_q.scale, s, case.output, act, r);
                assert_eq!(
                    got, want,
                    "{r:?} {act:?} element {i} (channel {c}, acc {a})"
                );
            }
        }
    }
}

fn geometry(
    padding: Padding,
    input: [usize; 4],
    output_channels: usize,
    kernel: [usize; 2],
    stride: [usize; 2],
    dilation: [usize; 2],
) -> ConvGeometry {
    ConvGeometry::tflite(
        "test",
        padding,
        input,
        output_channels,
        kernel,
        stride,
        dilation,
    )
    .unwrap()
}

fn case(geometry: ConvGeometry, kind: Kind, per_channel: bool) -> Case {
    Case {
        geometry,
        kind,
        per_channel,
        zero_channels: Vec::new(),
        bias_range: (-3000, 3000),
        input_zero_point: -7,
        output: QuantParams::new(0.11, 5),
    }
}

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

/// A real multiplier of exactly 1/4 (Q0.31 mantissa 2^30, shift -1) puts
/// accumulators of 2 mod 4 on ties, where the three paths part: double
/// rounding's exact doubling high product (x / 2) then its power-of-two
/// divide rounds away from zero, single rounding's one shift toward
/// +infinity, XNNPACK to even.
#[test]
fn conv_ties_per_path() {
    let g = geometry(Padding::Valid, [1, 1, 1, 1], 1, [1, 1], [1, 1], [1, 1]);
    let want = |r: ConvRequantization, x: i8| -> i8 {
        let q = ConvQuantization {
            input: QuantParams::new(0.25, 0),
            weight_scales: &[1.0],
            output: QuantParams::new(1.0, 0),
            activation: FusedActivation::None,
            requantization: r,
        };
        let op = Conv2d::new(g, 1, &[1], None, &q).unwrap();
        let mut out = [0i8];
        op.run(&[x], &mut out).unwrap();
        out[0]
    };
    let [double, single, xnn] = PATHS;
    // -6 / 4 = -1.5: away from zero -2, up -1, even -2.
    assert_eq!(
        [want(double, -6), want(single, -6), want(xnn, -6)],
        [-2, -1, -2]
    );
    // -10 / 4 = -2.5: -3, -2, -2.
    assert_eq!(
        [want(double, -10), want(single, -10), want(xnn, -10)],
        [-3, -2, -2]
    );
    // 10 / 4 = 2.5: 3, 3, 2.
    assert_eq!(
        [want(double, 10), want(single, 10), want(xnn, 10)],
        [3, 3, 2]
    );
    // -7 / 4 = -1.75: no tie, -2 everywhere.
    assert_eq!(
        [want(double, -7), want(single, -7), want(xnn, -7)],
        [-2, -2, -2]
    );
}

#[test]
fn conv_bad_parameters_are_errors() {
    let g = geometry(Padding::Same, [1, 4, 4, 4], 4, [3, 3], [1, 1], [1, 1]);
    let w = vec![1i8; 4 * 9 * 4];
    let scales = [0.01f32; 4];
    let q = ConvQuantization {
        input: QuantParams::new(0.1, 0),
        weight_scales: &scales,
        output: QuantParams::new(0.2, 0),
        activation: FusedActivation::None,
        requantization: ConvRequantization::Multiplier(Rounding::Double),
    };
    assert!(Conv2d::new(g, 4, &w, None, &q).is_ok());
    let with = |f: &dyn Fn(&mut ConvGeometry)| {
        let mut g2 = g;
        f(&mut g2);
        g2
    };
    // Zero sizes, strides, dilations.
    for g2 in [
        with(&|g| g.batch = 0),
        with(&|g| g.input_height = 0),
        with(&|g| g.output_width = 0),
        with(&|g| g.kernel_width = 0),
        with(&|g| g.stride_height = 0),
        with(&|g| g.stride_width = 0),
        with(&|g| g.dilation_height = 0),
        with(&|g| g.dilation_width = 0),
    ] {
        assert!(matches!(
            Conv2d::new(g2, 4, &w, None, &q),
            Err(Error::ZeroDimension { .. })
        ));
    }
    // Overflowing counts and reach.
    let huge = with(&|g| g.input_height = usize::MAX / 2);
    assert!(matches!(
        Conv2d::new(huge, 4, &w, None, &q),
        Err(Error::OutOfDomain { .. })
    ));
    let far = with(&|g| g.stride_height = usize::MAX / 2);
    assert!(matches!(
        Conv2d::new(far, 4, &w, None, &q),
        Err(Error::OutOfDomain { .. })
    ));
    // Filter depth: zero, not dividing the input channels, groups not
    // dividing the output channels.
    assert!(Conv2d::new(g, 0, &w, None, &q).is_err());
    assert!(matches!(
        Conv2d::new(g, 3, &w, None, &q),
        Err(Error::Length { .. })
    ));
    let g3 = with(&|g| g.output_channels = 3);
    assert!(matches!(
        Conv2d::new(g3, 1, &[1i8; 27], None, &q),
        Err(Error::Length { .. })
    ));
    // Weights, bias, scales of the wrong length.
    assert!(matches!(
        Conv2d::new(g, 4, &w[1..], None, &q),
        Err(Error::Length { .. })
    ));
    assert!(matches!(
        Conv2d::new(g, 4, &w, Some(&[0; 3]), &q),
        Err(Error::Length { .. })
    ));
    let three = ConvQuantization {
        weight_scales: &scales[..3],
        ..q
    };
    assert!(matches!(
        Conv2d::new(g, 4, &w, None, &three),
        Err(Error::Length { .. })
    ));
    // Scales and zero points.
    for bad in [0.0f32, -1.0, f32::NAN, f32::INFINITY] {
        let qi = ConvQuantization {
            input: QuantParams::new(bad, 0),
            ..q
        };
        assert!(matches!(
            Conv2d::new(g, 4, &w, None, &qi),
            Err(Error::Scale { .. })
        ));
        let qo = ConvQuantization {
            output: QuantParams::new(bad, 0),
            ..q
        };
        assert!(matches!(
            Conv2d::new(g, 4, &w, None, &qo),
            Err(Error::Scale { .. })
        ));
        let ws = [bad; 4];
        let qw = ConvQuantization {
            weight_scales: &ws,
            ..q
        };
        assert!(matches!(
            Conv2d::new(g, 4, &w, None, &qw),
            Err(Error::Scale { .. })
        ));
    }
    for zp in [-129, 128] {
        let qi = ConvQuantization {
            input: QuantParams::new(0.1, zp),
            ..q
        };
        assert!(matches!(
            Conv2d::new(g, 4, &w, None, &qi),
            Err(Error::ZeroPoint { .. })
        ));
        let qo = ConvQuantization {
            output: QuantParams::new(0.1, zp),
            ..q
        };
        assert!(matches!(
            Conv2d::new(g, 4, &w, None, &qo),
            Err(Error::ZeroPoint { .. })
        ));
    }
    // Scales a path cannot represent.
    let big = ConvQuantization {
        input: QuantParams::new(1e6, 0),
        output: QuantParams::new(1e-6, 0),
        ..q
    };
    assert!(matches!(
        Conv2d::new(g, 4, &w, None, &big),
        Err(Error::Unsupported { .. })
    ));
    let xnn = ConvQuantization {
        input: QuantParams::new(300.0, 0),
        weight_scales: &[1.0],
        output: QuantParams::new(1.0, 0),
        requantization: ConvRequantization::XnnpackF32,
        ..q
    };
    assert!(matches!(
        Conv2d::new(g, 4, &w, None, &xnn),
        Err(Error::Unsupported { .. })
    ));

    // Depthwise: output channels must be input channels * multiplier.
    let dw = vec![1i8; 9 * 4];
    assert!(DepthwiseConv2d::new(g, 1, &dw, None, &q).is_ok());
    assert!(matches!(
        DepthwiseConv2d::new(g, 0, &dw, None, &q),
        Err(Error::ZeroDimension { .. })
    ));
    assert!(matches!(
        DepthwiseConv2d::new(g, 2, &dw, None, &q),
        Err(Error::Length { .. })
    ));
    assert!(matches!(
        DepthwiseConv2d::new(g, 1, &dw[1..], None, &q),
        Err(Error::Length { .. })
    ));

    // Run: buffer lengths, tiles and backends.
    let op = Conv2d::new(g, 4, &w, None, &q).unwrap();
    let (x, mut y) = (vec![0i8; 64], vec![0i8; 64]);
    assert!(matches!(op.run(&x[1..], &mut y), Err(Error::Length { .. })));
    assert!(matches!(op.run(&x, &mut y[1..]), Err(Error::Length { .. })));
    assert!(matches!(
        op.run_rows(Backend::Scalar, &x, &mut y, 0..5),
        Err(Error::Tile { .. })
    ));
    #[allow(clippy::reversed_empty_ranges)]
    let reversed = 3..2;
    assert!(matches!(
        op.run_rows(Backend::Scalar, &x, &mut y, reversed),
        Err(Error::Tile { .. })
    ));
    assert!(op.run(&x, &mut y).is_ok());
}
