//! [`Gemv`] against [`Gemm`](crate::Gemm) with one input row (the GEMM's
//! scalar reference is the oracle: the same arithmetic written as TFLite's
//! reference kernel states it), for every requantization; channel ranges
//! against the whole run; NEON (both product paths) against scalar; errors.

extern crate std;
use super::*;
use crate::quant::Rounding;
use crate::Gemm;
use std::vec;
use std::vec::Vec;

/// A small deterministic generator (xorshift).
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> i64 {
        (self.next() % n) as i64
    }
    fn i8s(&mut self, len: usize) -> Vec<i8> {
        (0..len).map(|_| self.next() as i8).collect()
    }
}

const REQUANTIZATIONS: [Requantization; 5] = [
    Requantization::Multiplier(Rounding::Single),
    Requantization::Multiplier(Rounding::Double),
    Requantization::RealF64,
    Requantization::XnnpackF32,
    Requantization::GemvTiesUpward,
];

/// One random layer, as both a `Gemm` and a `Gemv`.
struct Case {
    gemm: Gemm,
    gemv: Gemv,
    n: usize,
    k: usize,
}

fn case(rng: &mut Rng, n: usize, k: usize, requantization: Requantization, extreme: bool) -> Case {
    let mut w = rng.i8s(n * k);
    if extreme {
        w.fill(-128);
    }
    let bias: Vec<i32> = (0..n).map(|_| rng.below(20_001) as i32 - 10_000).collect();
    let input = QuantParams::new(
        0.02 + rng.below(100) as f32 * 0.001,
        rng.below(256) as i32 - 128,
    );
    let output = QuantParams::new(
        0.05 + rng.below(100) as f32 * 0.01,
        rng.below(256) as i32 - 128,
    );
    let scales: Vec<f32> = (0..n)
        .map(|_| 0.001 + rng.below(1000) as f32 * 0.0001)
        .collect();
    let activation = [
        FusedActivation::None,
        FusedActivation::Relu,
        FusedActivation::Relu6,
    ][rng.below(3) as usize];
    let bias = (rng.below(4) != 0).then_some(bias);
    let args = (
        &w,
        n,
        k,
        bias.as_deref(),
        input,
        &scales[..],
        output,
        activation,
    );
    let gemm = Gemm::new(
        args.0,
        args.1,
        args.2,
        args.3,
        args.4,
        args.5,
        args.6,
        args.7,
        requantization,
    )
    .unwrap();
    let gemv = Gemv::new(
        args.0,
        args.1,
        args.2,
        args.3,
        args.4,
        args.5,
        args.6,
        args.7,
        requantization,
    )
    .unwrap();
    Case { gemm, gemv, n, k }
}

const SHAPES: [(usize, usize); 14] = [
    (1, 1),
    (3, 7),
    (4, 16),
    (5, 17),
    (8, 8),
    (12, 33),
    (13, 64),
    (16, 300),
    (17, 47),
    (24, 1),
    (29, 100),
    (32, 32),
    (40, 257),
    (100, 20),
];

#[test]
fn gemv_i8_scalar_equals_gemm_one_row_every_requantization() {
    let mut rng = Rng(0x5eed);
    for requantization in REQUANTIZATIONS {
        for (n, k) in SHAPES {
            for extreme in [false, true] {
                let c = case(&mut rng, n, k, requantization, extreme);
                let x = if extreme { vec![-128; k] } else { rng.i8s(k) };
                let mut want = vec![0i8; n];
                c.gemm.run_with(Backend::Scalar, &x, &mut want, 1).unwrap();
                let mut got = vec![0x55i8; n];
                c.gemv.run_with(Backend::Scalar, &x, &mut got).unwrap();
                assert_eq!(got, want, "{requantization:?} {n}x{k} extreme {extreme}");
            }
        }
    }
}

#[test]
fn gemv_i8_channel_ranges_equal_the_whole_run() {
    let mut rng = Rng(7);
    for (n, k) in SHAPES {
        let c = case(&mut rng, n, k, REQUANTIZATIONS[n % 5], false);
        let x = rng.i8s(c.k);
        let mut whole = vec![0i8; c.n];
        c.gemv.run_with(c.gemv.backend(), &x, &mut whole).unwrap();
        for backend in [Backend::Scalar, c.gemv.backend()] {
            for step in [8, 16, 24] {
                let mut got = vec![0x55i8; c.n];
                let mut start = 0;
                while start < c.n {
                    let end = (start + step).min(c.n);
                    c.gemv
                        .run_channels_with(backend, &x, &mut got[start..end], start..end)
                        .unwrap();
                    start = end;
                }
                assert_eq!(got, whole, "{n}x{k} in steps of {step} on {backend:?}");
            }
        }
    }
}

#[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
#[test]
fn gemv_i8_neon_paths_equal_scalar_every_requantization() {
    let mut rng = Rng(0xfc1);
    for requantization in REQUANTIZATIONS {
        for (n, k) in SHAPES {
            for extreme in [false, true] {
                let c = case(&mut rng, n, k, requantization, extreme);
                let x = if extreme { vec![-128; k] } else { rng.i8s(k) };
                let mut want = vec![0i8; n];
                c.gemv.run_with(Backend::Scalar, &x, &mut want).unwrap();
                let mut got = vec![0x55i8; n];
                c.gemv.run_with(Backend::Neon, &x, &mut got).unwrap();
                assert_eq!(got, want, "{requantization:?} {n}x{k} {extreme}");
                let mut got = vec![0x55i8; n];
                neon::gemv_widening(&c.gemv.view(), &x, &mut got, 0..n);
                assert_eq!(got, want, "widening {requantization:?} {n}x{k} {extreme}");
            }
        }
    }
}

#[test]
fn gemv_i8_errors() {
    let mut rng = Rng(3);
    let c = case(&mut rng, 20, 9, REQUANTIZATIONS[0], false);
    let x = rng.i8s(9);
    let mut out = vec![0i8; 20];
    let short = c.gemv.run_with(Backend::Scalar, &x[..8], &mut out);
    assert!(matches!(short, Err(Error::Length { .. })), "{short:?}");
    let long = c.gemv.run_with(Backend::Scalar, &x, &mut [0i8; 21]);
    assert!(matches!(long, Err(Error::Length { .. })), "{long:?}");
    // Off the grain at either end, past `n`, and reversed.
    let reversed = Range { start: 9, end: 8 };
    for bad in [4..20, 0..12, 16..24, reversed] {
        let r = c
            .gemv
            .run_channels_with(Backend::Scalar, &x, &mut out[..4], bad.clone());
        assert!(matches!(r, Err(Error::Tile { .. })), "{bad:?}: {r:?}");
    }
    let w = vec![1i8; 9];
    let q = QuantParams::new(0.1, 0);
    let none = FusedActivation::None;
    let r = Gemv::new(&w, 0, 9, None, q, &[], q, none, Rounding::Single);
    assert!(matches!(r, Err(Error::ZeroDimension { .. })));
    let r = Gemv::new(&w, 1, 9, None, q, &[0.0], q, none, Rounding::Single);
    assert!(matches!(r, Err(Error::Scale { .. })), "{r:?}");
    let r = Gemv::new(&w, 1, 8, None, q, &[0.1], q, none, Rounding::Single);
    assert!(matches!(r, Err(Error::Length { .. })), "{r:?}");
}
