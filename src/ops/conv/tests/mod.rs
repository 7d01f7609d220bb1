//! The convolutions against a naive formula written here independently:
//! the sum in `i64` over the unpacked weights with explicit bounds checks,
//! and each requantization path re-derived (`frexp` of the real multiplier
//! in `f64`, gemmlowp's two roundings, the single rounding in `i128`,
//! XNNPACK's `f32` product rounded with `round_ties_even`).

extern crate std;
use std::format;
use std::vec;
use std::vec::Vec;

use super::*;
use crate::backend::Backend;
use crate::error::{Error, Result};
use crate::ops::requant::FusedActivation;
use crate::quant::{QuantParams, Rounding};

mod band;
mod depthwise;
mod edges;
mod implicit;
mod shapes;
mod small_patch;

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
        // They depend on the channel: `depthwise::expected_any`.
        ConvRequantization::DoubleTiesUpward | ConvRequantization::TiesUpwardInBlocksOf8 => {
            unreachable!("{r:?} is checked per channel")
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
    /// Input bytes drawn from these values only (edge values), or from all
    /// of int8.
    input_values: Option<&'static [i8]>,
}

fn check(case: &Case, seed: u64) {
    let g = &case.geometry;
    let mut rng = Rng(seed);
    let input: Vec<i8> = (0..g.batch * g.input_height * g.input_width * g.input_channels)
        .map(|_| match case.input_values {
            None => rng.i8(),
            Some(v) => v[rng.range(0, v.len() as i32 - 1) as usize],
        })
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
                        && filter_depth == g.input_channels;
                    // Every path here has a GEMM output stage (XNNPACK's
                    // `f32` one included).
                    assert_eq!(op.pointwise.is_some(), pointwise);
                    assert_eq!(op.implicit.is_some(), !pointwise);
                    assert_eq!(op.scratch_bytes() > 0, op.implicit.is_some());
                    // With the caller's scratch (tiles of another size than
                    // run's stack scratch), the same bytes again.
                    let mut scratch = vec![0x77u8 as i8; op.scratch_bytes()];
                    for backend in Backend::available() {
                        let mut other = vec![0x22u8 as i8; acc.len()];
                        op.run_rows_with_scratch(
                            backend,
                            &input,
                            &mut other,
                            0..op.rows(),
                            &mut scratch,
                        )
                        .unwrap();
                        assert_eq!(other, out, "{r:?} {act:?} {} scratch", backend.name());
                    }
                    // Bands of rows in slices of their own: the same rows.
                    let label = format!("{r:?} {act:?}");
                    band::bands_equal_whole(&out, op.rows(), &label, |b, band, rows| {
                        op.run_band(b, &input, band, rows)
                    });
                    let scratch = core::cell::RefCell::new(scratch);
                    band::bands_equal_whole(&out, op.rows(), &label, |b, band, rows| {
                        let mut scratch = scratch.borrow_mut();
                        op.run_band_with_scratch(b, &input, band, rows, &mut scratch)
                    });
                    // Ranges of output channels, every pixel's in a tile of
                    // their own (pointwise layers only).
                    match op.channel_grain() {
                        Some(grain) => {
                            let n = g.output_channels;
                            band::channels_equal_whole(&out, n, grain, &label, |b, tile, c| {
                                op.run_channels(b, &input, tile, c)
                            })
                        }
                        None => {
                            let err = op.run_channels(Backend::Scalar, &input, &mut [], 0..0);
                            assert!(matches!(err, Err(Error::Unsupported { .. })), "{err:?}");
                        }
                    }
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
                    let label = format!("{r:?} {act:?}");
                    band::bands_equal_whole(&out, op.rows(), &label, |b, band, rows| {
                        op.run_band(b, &input, band, rows)
                    });
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
        input_values: None,
    }
}
