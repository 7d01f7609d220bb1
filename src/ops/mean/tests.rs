//! MEAN against an independent oracle: sums by brute force over the
//! unmerged input index (no layout), the real-valued mean they stand for,
//! and the backends against each other on every path and rounding.

extern crate std;
use std::vec::Vec;

use super::*;
use crate::Error;

/// xorshift64*: deterministic test data.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

/// Per output, the exact `i64` sum and count of its inputs: every input
/// index's output index found by dropping the reduced coordinates.
fn brute_sums(dims: &[usize], axes: &[i32], input: &[i32]) -> (Vec<i64>, usize) {
    let rank = dims.len() as i32;
    let reduced: Vec<bool> = (0..rank)
        .map(|d| axes.iter().any(|&a| (a + rank) % rank == d))
        .collect();
    let out_len: usize = (0..dims.len())
        .filter(|&d| !reduced[d])
        .map(|d| dims[d])
        .product();
    let mut sums = std::vec![0i64; out_len];
    let mut index = std::vec![0usize; dims.len()];
    for &x in input {
        let mut o = 0;
        for d in 0..dims.len() {
            if !reduced[d] {
                o = o * dims[d] + index[d];
            }
        }
        sums[o] += x as i64;
        for d in (0..dims.len()).rev() {
            index[d] += 1;
            if index[d] < dims[d] {
                break;
            }
            index[d] = 0;
        }
    }
    (sums, input.len() / out_len)
}

/// Random int8 data of `dims`, its mean over `axes` on every path and
/// rounding: within one step of the real mean (the fixed-point error is
/// far below a step, the rounding at most half of one), and every backend
/// equal to the scalar one.
fn check_i8(
    dims: &[usize],
    axes: &[i32],
    keep: bool,
    qin: QuantParams,
    qout: QuantParams,
    seed: u64,
) {
    let mut rng = Rng(seed | 1);
    let len: usize = dims.iter().product();
    let input: Vec<i8> = (0..len).map(|_| rng.next() as i8).collect();
    let wide: Vec<i32> = input.iter().map(|&x| x as i32).collect();
    let (sums, n) = brute_sums(dims, axes, &wide);
    for kernels in [
        MeanKernels::Reference,
        MeanKernels::Optimized,
        MeanKernels::Xnnpack,
    ] {
        for rounding in [Rounding::Single, Rounding::Double] {
            let mean = Mean::<i8>::new(dims, axes, keep, qin, qout, kernels, rounding).unwrap();
            assert_eq!(mean.output_len(), sums.len());
            let mut scalar = std::vec![0i8; sums.len()];
            mean.run_with(Backend::Scalar, &input, &mut scalar).unwrap();
            for (o, (&y, &sum)) in scalar.iter().zip(&sums).enumerate() {
                let real = (sum as f64 / n as f64 - qin.zero_point as f64) * qin.scale as f64;
                let ideal =
                    (real / qout.scale as f64 + qout.zero_point as f64).clamp(-128.0, 127.0);
                assert!(
                    (y as f64 - ideal).abs() <= 1.0,
                    "{dims:?} {axes:?} {kernels:?} {rounding:?} output {o}: {y} for {ideal}"
                );
            }
            let mut best = std::vec![0i8; sums.len()];
            mean.run_with(Backend::best(), &input, &mut best).unwrap();
            assert_eq!(best, scalar, "{dims:?} {axes:?} {kernels:?} {rounding:?}");
        }
    }
}

#[test]
fn means_follow_the_real_mean_and_backends_agree() {
    let same = QuantParams::new(0.07, -9);
    let other = QuantParams::new(0.05, 3);
    let cases: &[(&[usize], &[i32], bool)] = &[
        (&[1, 7, 7, 1280], &[1, 2], true),
        (&[1, 7, 7, 1280], &[1, 2], false),
        (&[2, 5, 3, 37], &[2, 1], true),
        (&[3, 1, 1, 20], &[1, 2], true),
        (&[1, 9, 11, 16], &[-3, -2], true),
        (&[2, 4, 6, 19], &[1], true),
        (&[2, 4, 6, 19], &[3], false),
        (&[2, 4, 6, 19], &[0, 2], true),
        (&[2, 4, 6, 19], &[0, 1, 2, 3], false),
        (&[5, 33], &[0, 0, -2], false),
        (&[300, 17], &[0], true),
        (&[4, 5], &[], true),
    ];
    for (i, &(dims, axes, keep)) in cases.iter().enumerate() {
        check_i8(dims, axes, keep, same, same, 11 + i as u64);
        check_i8(dims, axes, keep, same, other, 101 + i as u64);
        check_i8(dims, axes, keep, other, same, 1001 + i as u64);
    }
}

#[test]
fn uint8_backends_agree_and_follow_the_real_mean() {
    let qin = QuantParams::new(0.03, 128);
    let qout = QuantParams::new(0.02, 120);
    let mut rng = Rng(7);
    let dims = [2usize, 6, 5, 35];
    let input: Vec<u8> = (0..dims.iter().product::<usize>())
        .map(|_| rng.next() as u8)
        .collect();
    let wide: Vec<i32> = input.iter().map(|&x| x as i32).collect();
    let (sums, n) = brute_sums(&dims, &[1, 2], &wide);
    for (kernels, rounding) in [
        (MeanKernels::Reference, Rounding::Single),
        (MeanKernels::Reference, Rounding::Double),
        (MeanKernels::Xnnpack, Rounding::Single),
    ] {
        let mean = Mean::<u8>::new(&dims, &[1, 2], false, qin, qout, kernels, rounding).unwrap();
        let mut scalar = std::vec![0u8; sums.len()];
        mean.run_with(Backend::Scalar, &input, &mut scalar).unwrap();
        for (&y, &sum) in scalar.iter().zip(&sums) {
            let real = (sum as f64 / n as f64 - 128.0) * 0.03;
            let ideal = (real / 0.02 + 120.0).clamp(0.0, 255.0);
            assert!((y as f64 - ideal).abs() <= 1.0, "{y} for {ideal}");
        }
        let mut best = std::vec![0u8; sums.len()];
        mean.run_with(Backend::best(), &input, &mut best).unwrap();
        assert_eq!(best, scalar);
    }
}

#[test]
fn paths_are_chosen_as_tflite_chooses_them() {
    let q = QuantParams::new(0.1, 0);
    let new = |dims: &[usize], axes: &[i32], keep: bool, kernels| {
        Mean::<i8>::new(dims, axes, keep, q, q, kernels, Rounding::Single).unwrap()
    };
    assert!(new(&[1, 4, 4, 8], &[1, 2], true, MeanKernels::Optimized).is_height_width());
    assert!(new(&[1, 4, 4, 8], &[2, 1, 2], true, MeanKernels::Optimized).is_height_width());
    assert!(!new(&[1, 4, 4, 8], &[1, 2], false, MeanKernels::Optimized).is_height_width());
    assert!(!new(&[1, 4, 4, 8], &[1, 2], true, MeanKernels::Reference).is_height_width());
    assert!(!new(&[1, 4, 4, 8], &[1], true, MeanKernels::Optimized).is_height_width());
    assert!(!new(&[4, 4, 8], &[0, 1], true, MeanKernels::Optimized).is_height_width());
    // int16 keeps the reference arithmetic on the optimized path.
    let int16 = Mean::<i16>::new(
        &[1, 4, 4, 8],
        &[1, 2],
        true,
        q,
        q,
        MeanKernels::Optimized,
        Rounding::Double,
    );
    assert!(!int16.unwrap().is_height_width());
    assert_eq!(
        new(&[1, 4, 4, 8], &[1, 2], true, MeanKernels::Reference).output_dims(),
        &[1, 1, 1, 8]
    );
    assert_eq!(
        new(&[1, 4, 4, 8], &[-2, 1], false, MeanKernels::Reference).output_dims(),
        &[1, 8]
    );
}

#[test]
fn the_two_arithmetics_differ_where_tflite_s_do() {
    // n = 4, scales equal, zero points 0: the multiplier is 2^30 with shift
    // -1 on both paths (1/4 exactly), so sums of +-6 are the ties +-1.5 in
    // the final shift: single rounding takes them upward (2, -1), double
    // rounding away from zero (2, -2).
    let q = QuantParams::new(0.5, 0);
    let dims = [1usize, 2, 2, 1];
    for (kernels, rounding, want) in [
        (MeanKernels::Reference, Rounding::Single, [2i8, -1]),
        (MeanKernels::Reference, Rounding::Double, [2, -2]),
        (MeanKernels::Optimized, Rounding::Single, [2, -1]),
        (MeanKernels::Optimized, Rounding::Double, [2, -2]),
    ] {
        let mean = Mean::<i8>::new(&dims, &[1, 2], true, q, q, kernels, rounding).unwrap();
        let mut out = [0i8];
        for (input, w) in [([1i8, 2, 1, 2], want[0]), ([-1, -2, -1, -2], want[1])] {
            mean.run_with(Backend::Scalar, &input, &mut out).unwrap();
            assert_eq!(out[0], w, "{kernels:?} {rounding:?} {input:?}");
        }
    }
    // The height-width bias: zp_in 3 at s_in / s_out = 0.5 is 1.5, rounded
    // away from zero to 2 apart from the sum. The mean of [4, 4] is then
    // round(0.5 * 4) - 2 = 0 there, and round(0.5 * (4 - 3)) = 1 (the tie
    // taken upward) on the reference path.
    let dims = [1usize, 1, 2, 1];
    let qin = QuantParams::new(0.5, 3);
    let qout = QuantParams::new(1.0, 0);
    let prepare = |kernels| {
        Mean::<i8>::new(&dims, &[1, 2], true, qin, qout, kernels, Rounding::Single).unwrap()
    };
    let mut out = [0i8];
    prepare(MeanKernels::Optimized)
        .run(&[4, 4], &mut out)
        .unwrap();
    assert_eq!(out[0], 0);
    prepare(MeanKernels::Reference)
        .run(&[4, 4], &mut out)
        .unwrap();
    assert_eq!(out[0], 1);
}

#[test]
fn double_rounding_vector_channels_round_half_up() {
    // 17 channels, 4 pixels, every sum -6 (the tie -1.5 as above): TFLite's
    // NEON blocks of 16 channels take it upward under double rounding, its
    // scalar tail (channel 16) away from zero.
    let q = QuantParams::new(0.5, 0);
    let dims = [1usize, 2, 2, 17];
    let mean = Mean::<i8>::new(
        &dims,
        &[1, 2],
        true,
        q,
        q,
        MeanKernels::Optimized,
        Rounding::Double,
    )
    .unwrap();
    let input: Vec<i8> = (0..68).map(|i| if i < 34 { -1 } else { -2 }).collect();
    let mut expected = [-1i8; 17];
    expected[16] = -2;
    for backend in [Backend::Scalar, Backend::best()] {
        let mut out = [0i8; 17];
        mean.run_with(backend, &input, &mut out).unwrap();
        assert_eq!(&out[..], &expected[..], "{backend:?}");
    }
}

#[test]
fn bad_parameters_are_errors() {
    let q = QuantParams::new(0.1, 0);
    let new = |dims: &[usize], axes: &[i32]| {
        Mean::<i8>::new(
            dims,
            axes,
            true,
            q,
            q,
            MeanKernels::Reference,
            Rounding::Single,
        )
    };
    assert!(matches!(
        new(&[2, 3], &[2]),
        Err(Error::OutOfDomain { what: "axis", .. })
    ));
    assert!(matches!(
        new(&[2, 3], &[-3]),
        Err(Error::OutOfDomain { what: "axis", .. })
    ));
    assert!(matches!(
        new(&[2, 0], &[0]),
        Err(Error::ZeroDimension { .. })
    ));
    assert!(matches!(
        new(&[1; 9], &[0]),
        Err(Error::OutOfDomain {
            what: "input rank",
            ..
        })
    ));
    let bad = QuantParams::new(f32::NAN, 0);
    assert!(Mean::<i8>::new(
        &[2],
        &[0],
        true,
        bad,
        q,
        MeanKernels::Reference,
        Rounding::Single
    )
    .is_err());
    let zp = QuantParams::new(0.1, 1);
    assert!(matches!(
        Mean::<i16>::new(
            &[2],
            &[0],
            true,
            zp,
            q,
            MeanKernels::Reference,
            Rounding::Single
        ),
        Err(Error::ZeroPoint { .. })
    ));
    assert!(matches!(
        Mean::<u8>::new(
            &[1, 2, 2, 3],
            &[1, 2],
            true,
            q,
            q,
            MeanKernels::Optimized,
            Rounding::Single
        ),
        Err(Error::Unsupported { .. })
    ));
    let mean = new(&[2, 3], &[1]).unwrap();
    assert!(matches!(
        mean.run(&[0; 5], &mut [0; 2]),
        Err(Error::Length { .. })
    ));
    assert!(matches!(
        mean.run(&[0; 6], &mut [0; 3]),
        Err(Error::Length { .. })
    ));
}

/// XNNPACK's mean rounds `f32(sum) * scale + zero` once more than the
/// fixed-point paths: where the exact mean lies on a half step it rounds
/// ties to even, and the zero point folded into `zero` in `f32`. A 2-element
/// mean with equal scales: sum 1 is 0.5 steps (ties to even: 0), sum 3 is
/// 1.5 (to 2), sum -1 is -0.5 (to -0, i.e. 0); TFLite's single-rounding
/// fixed point rounds halves upward (1, 2, 0).
#[test]
fn xnnpack_mean_rounds_ties_to_even_in_f32() {
    let q = QuantParams::new(0.5, 0);
    let dims = [3usize, 2];
    let input = [0i8, 1, 1, 2, -1, 0];
    let mut out = [0i8; 3];
    for (kernels, expected) in [
        (MeanKernels::Xnnpack, [0i8, 2, 0]),
        (MeanKernels::Reference, [1, 2, 0]),
    ] {
        let mean = Mean::<i8>::new(&dims, &[1], false, q, q, kernels, Rounding::Single).unwrap();
        for backend in [Backend::Scalar, Backend::best()] {
            mean.run_with(backend, &input, &mut out).unwrap();
            assert_eq!(out, expected, "{kernels:?} {backend:?}");
        }
    }
    // The delegate takes 8-bit means only.
    let int16 = Mean::<i16>::new(
        &dims,
        &[1],
        false,
        q,
        q,
        MeanKernels::Xnnpack,
        Rounding::Single,
    );
    assert!(matches!(int16, Err(Error::Unsupported { .. })), "{int16:?}");
}
