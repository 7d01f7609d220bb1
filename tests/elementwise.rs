//! Element-wise layer operators: quantized add (every pair of int8 inputs
//! against an independent `i64` oracle of TFLite's int8 `ADD`), NoNorm (against
//! an oracle of the 1x1 per-channel depthwise formulation, and its real-number
//! meaning through `from_f32`), the head transposes, and on aarch64 NEON ==
//! scalar for add and NoNorm on every length up to 50 and wide rows.

mod layer_oracle;

use layer_oracle::{activation_range, mbqm, output, quantize_multiplier, Rng};
use qneon::{
    merge_heads, split_heads, Add, Backend, Error, FusedActivation, NoNorm, QuantParams, Rounding,
};

fn fused(act: u8) -> FusedActivation {
    match act {
        0 => FusedActivation::None,
        1 => FusedActivation::Relu,
        _ => FusedActivation::Relu6,
    }
}

// ---------------------------------------------------------------------------
// Add (double rounding; `tests/binary.rs` covers ADD, SUB and MUL in both
// roundings).

/// The add in double rounding, the arithmetic these tests' oracle follows.
fn add_double(
    a: QuantParams,
    b: QuantParams,
    out: QuantParams,
    act: FusedActivation,
) -> qneon::Result<Add> {
    Add::new(a, b, out, act, Rounding::Double)
}

#[derive(Clone, Copy, Debug)]
struct AddCase {
    a: QuantParams,
    b: QuantParams,
    out: QuantParams,
    act: u8,
}

impl AddCase {
    fn op(&self) -> Add {
        add_double(self.a, self.b, self.out, fused(self.act))
            .unwrap_or_else(|e| panic!("Add::new failed: {e} for {self:?}"))
    }

    /// TFLite's int8 `ADD` (`Prepare` + `AddElementwise`), in `i64`.
    fn oracle(&self, x: i8, y: i8) -> i8 {
        let twice_max = (2.0 * self.a.scale.max(self.b.scale)) as f64;
        let (m1, s1) = quantize_multiplier(self.a.scale as f64 / twice_max);
        let (m2, s2) = quantize_multiplier(self.b.scale as f64 / twice_max);
        let (mo, so) =
            quantize_multiplier(twice_max / ((1u32 << 20) as f32 * self.out.scale) as f64);
        assert!(s1 <= 0 && s2 <= 0 && so <= 0);
        let xa = mbqm((x as i64 - self.a.zero_point as i64) << 20, m1, s1);
        let yb = mbqm((y as i64 - self.b.zero_point as i64) << 20, m2, s2);
        let r = mbqm(xa + yb, mo, so);
        output(
            r,
            self.out.zero_point,
            activation_range(self.act, self.out.scale, self.out.zero_point),
        )
    }
}

/// Scales from equal to 1000x apart (either way), zero points at the ends and
/// in the middle, output scales from fine to coarse, every activation.
fn add_cases() -> Vec<AddCase> {
    let mut rng = Rng::new(20);
    let mut cases = Vec::new();
    let fixed = [
        (0.1, 0.1, 0.1),
        (0.1, 0.1, 0.2),
        (0.02, 0.05, 0.06),
        (0.5, 0.0005, 0.5),
        (0.0005, 0.5, 0.3),
        (1.0 / 128.0, 1.0 / 256.0, 1.0 / 64.0),
        (3.0, 2.0, 0.01),
        (1e-4, 1e-4, 1e-5),
    ];
    for (i, &(sa, sb, so)) in fixed.iter().enumerate() {
        let zps = [(-128, 127, -128), (0, 0, 0), (127, -128, 5), (-7, 33, 127)];
        let (za, zb, zo) = zps[i % zps.len()];
        cases.push(AddCase {
            a: QuantParams::new(sa, za),
            b: QuantParams::new(sb, zb),
            out: QuantParams::new(so, zo),
            act: (i % 3) as u8,
        });
    }
    for _ in 0..12 {
        let sa = rng.log_uniform(1e-3, 1.0);
        let sb = sa * rng.log_uniform(0.01, 100.0);
        let so = sa.max(sb) * rng.log_uniform(0.1, 10.0);
        cases.push(AddCase {
            a: QuantParams::new(sa, rng.range(-128, 127) as i32),
            b: QuantParams::new(sb, rng.range(-128, 127) as i32),
            out: QuantParams::new(so, rng.range(-128, 127) as i32),
            act: rng.below(3) as u8,
        });
    }
    cases
}

/// Every (a, b) pair of int8 values, as two 65,536-long tensors.
fn all_pairs() -> (Vec<i8>, Vec<i8>) {
    let a = (0..65536).map(|i| (i >> 8) as u8 as i8).collect();
    let b = (0..65536).map(|i| i as u8 as i8).collect();
    (a, b)
}

#[test]
fn add_i8_scalar_matches_oracle_every_input_pair() {
    let (a, b) = all_pairs();
    for case in add_cases() {
        let op = case.op();
        let mut out = vec![0i8; a.len()];
        op.run_with(Backend::Scalar, &a, &b, &mut out).unwrap();
        for i in 0..a.len() {
            let want = case.oracle(a[i], b[i]);
            assert_eq!(out[i], want, "add({}, {}) for {case:?}", a[i], b[i]);
        }
    }
}

#[test]
fn add_i8_relu_clamps_at_the_output_zero_point() {
    let case = AddCase {
        a: QuantParams::new(0.1, 0),
        b: QuantParams::new(0.1, 0),
        out: QuantParams::new(0.1, -10),
        act: 1,
    };
    let (a, b) = all_pairs();
    let mut out = vec![0i8; a.len()];
    case.op().run(&a, &b, &mut out).unwrap();
    assert!(out.iter().all(|&v| v >= -10));
    // -1.0 + -1.0 clamps; 1.0 + 1.0 = 2.0 is 20 steps above the zero point.
    let at = |x: i8, y: i8| out[(x as u8 as usize) << 8 | y as u8 as usize];
    assert_eq!(at(-10, -10), -10);
    assert_eq!(at(10, 10), 10);
}

#[test]
fn add_errors() {
    let q = QuantParams::new(0.1, 0);
    let none = FusedActivation::None;
    for bad in [0.0, -0.5, f32::NAN, f32::INFINITY] {
        let b = QuantParams::new(bad, 0);
        assert!(matches!(
            add_double(b, q, q, none),
            Err(Error::Scale {
                what: "input 1 scale",
                ..
            })
        ));
        assert!(matches!(
            add_double(q, b, q, none),
            Err(Error::Scale {
                what: "input 2 scale",
                ..
            })
        ));
        assert!(matches!(
            add_double(q, q, b, none),
            Err(Error::Scale {
                what: "output scale",
                ..
            })
        ));
    }
    for zp in [-129, 128] {
        let b = QuantParams::new(0.1, zp);
        assert!(matches!(
            add_double(b, q, q, none),
            Err(Error::ZeroPoint { .. })
        ));
        assert!(matches!(
            add_double(q, b, q, none),
            Err(Error::ZeroPoint { .. })
        ));
        assert!(matches!(
            add_double(q, q, b, none),
            Err(Error::ZeroPoint { .. })
        ));
    }
    // TFLite needs 2 max(scale) / (2^20 scale_out) < 1.
    let tiny = QuantParams::new(0.2 / (1u32 << 20) as f32, 0);
    assert!(matches!(
        add_double(q, q, tiny, none),
        Err(Error::Unsupported { op: "add", .. })
    ));
    let op = add_double(q, q, q, none).unwrap();
    let mut out = [0i8; 4];
    assert!(matches!(
        op.run(&[0; 4], &[0; 3], &mut out),
        Err(Error::LengthMismatch {
            op: "add",
            input: 3,
            output: 4
        })
    ));
    assert!(matches!(
        op.run(&[0; 4], &[0; 4], &mut out[..3]),
        Err(Error::LengthMismatch {
            op: "add",
            input: 4,
            output: 3
        })
    ));
    assert!(op.run(&[], &[], &mut []).is_ok());
}

// ---------------------------------------------------------------------------
// NoNorm.

#[derive(Clone, Debug)]
struct NoNormCase {
    gamma: Vec<i8>,
    gamma_scales: Vec<f32>,
    beta: Vec<i32>,
    input: QuantParams,
    out: QuantParams,
    act: u8,
}

impl NoNormCase {
    fn random(rng: &mut Rng, channels: usize) -> NoNormCase {
        let input = QuantParams::new(rng.log_uniform(1e-3, 1.0), rng.range(-128, 127) as i32);
        let gamma_scales: Vec<f32> = (0..channels).map(|_| rng.log_uniform(1e-3, 1.0)).collect();
        let typical = input.scale as f64 * gamma_scales.iter().map(|&s| s as f64).sum::<f64>()
            / channels as f64
            * 74.0
            * 74.0;
        NoNormCase {
            gamma: rng.vec_i8(channels),
            gamma_scales,
            beta: (0..channels)
                .map(|_| rng.range(-(1 << 14), 1 << 14) as i32)
                .collect(),
            input,
            out: QuantParams::new(
                (typical / 64.0 * rng.log_uniform(0.3, 3.0) as f64) as f32,
                rng.range(-128, 127) as i32,
            ),
            act: rng.below(3) as u8,
        }
    }

    fn op(&self) -> NoNorm {
        NoNorm::new(
            &self.gamma,
            &self.gamma_scales,
            &self.beta,
            self.input,
            self.out,
            fused(self.act),
        )
        .unwrap()
    }

    /// The 1x1 per-channel depthwise convolution, in `i64`.
    fn oracle(&self, x: &[i8]) -> Vec<i8> {
        let channels = self.gamma.len();
        let range = activation_range(self.act, self.out.scale, self.out.zero_point);
        x.iter()
            .enumerate()
            .map(|(i, &v)| {
                let c = i % channels;
                let acc = (v as i64 - self.input.zero_point as i64) * self.gamma[c] as i64
                    + self.beta[c] as i64;
                assert_eq!(acc, acc as i32 as i64);
                let real =
                    self.input.scale as f64 * self.gamma_scales[c] as f64 / self.out.scale as f64;
                let (m, s) = quantize_multiplier(real);
                output(mbqm(acc, m, s), self.out.zero_point, range)
            })
            .collect()
    }
}

fn no_norm_cases() -> Vec<(NoNormCase, usize)> {
    let mut rng = Rng::new(30);
    let mut cases = Vec::new();
    for channels in (1..=40).chain([128, 512, 515]) {
        let rows = rng.usize(1, 5);
        cases.push((NoNormCase::random(&mut rng, channels), rows));
    }
    // Extremes: gamma -128, inputs at the far end of the zero point, betas
    // near +-2^30, scales 1e-9..1e3 across the channels.
    let mut c = NoNormCase::random(&mut rng, 24);
    c.gamma = (0..24)
        .map(|i| if i % 2 == 0 { -128 } else { 127 })
        .collect();
    c.input.zero_point = 127;
    c.beta = (0..24)
        .map(|i| {
            if i % 3 == 0 {
                1 << 30
            } else {
                -(1 << 30) + 1000
            }
        })
        .collect();
    cases.push((c.clone(), 3));
    c.gamma_scales = (0..24)
        .map(|i| 10f32.powf(-9.0 + 12.0 * i as f32 / 23.0))
        .collect();
    c.beta = vec![5; 24];
    c.gamma = c.gamma.iter().map(|&g| g / 64).collect();
    cases.push((c, 3));
    cases
}

fn no_norm_input(rng: &mut Rng, channels: usize, rows: usize) -> Vec<i8> {
    let mut x = rng.vec_i8(channels * rows);
    // Always include both extremes.
    x[0] = -128;
    if x.len() > 1 {
        x[1] = 127;
    }
    x
}

#[test]
fn no_norm_i8_scalar_matches_oracle() {
    let mut rng = Rng::new(31);
    for (case, rows) in no_norm_cases() {
        let x = no_norm_input(&mut rng, case.gamma.len(), rows);
        let mut out = vec![0x33; x.len()];
        case.op().run_with(Backend::Scalar, &x, &mut out).unwrap();
        assert_eq!(out, case.oracle(&x), "{case:?}");
    }
}

#[test]
fn no_norm_from_f32_is_within_one_step_of_exact_math() {
    let mut rng = Rng::new(32);
    let channels = 64;
    let gamma: Vec<f32> = (0..channels)
        .map(|i| match i {
            0 => 0.0,
            1 => -1.5,
            _ => (rng.unit() as f32 - 0.5) * 4.0,
        })
        .collect();
    let beta: Vec<f32> = (0..channels)
        .map(|_| (rng.unit() as f32 - 0.5) * 6.0)
        .collect();
    let input = QuantParams::new(0.05, -3);
    let out = QuantParams::new(0.08, 10);
    let op = NoNorm::from_f32(&gamma, &beta, input, out, FusedActivation::None).unwrap();
    let x: Vec<i8> = (0..channels * 256)
        .map(|i| (i / channels) as u8 as i8)
        .collect();
    let mut y = vec![0i8; x.len()];
    op.run(&x, &mut y).unwrap();
    let mut exact_count = 0;
    for (i, (&xv, &yv)) in x.iter().zip(&y).enumerate() {
        let c = i % channels;
        let real = input.scale as f64 * (xv as f64 - input.zero_point as f64) * gamma[c] as f64
            + beta[c] as f64;
        let q = real / out.scale as f64 + out.zero_point as f64;
        if (-128.0..=127.0).contains(&q) {
            assert!(
                (yv as f64 - q).abs() <= 1.0,
                "channel {c} x {xv}: {yv} vs {q}"
            );
            exact_count += ((yv as f64 - q).abs() <= 0.5 + 1e-9) as usize;
        } else {
            assert_eq!(yv as f64, q.clamp(-128.0, 127.0), "channel {c} x {xv}");
        }
    }
    // Mostly correctly rounded (the beta's own rounding moves a few).
    assert!(
        exact_count > x.len() / 2,
        "only {exact_count} of {}",
        x.len()
    );
}

#[test]
fn no_norm_errors() {
    let q = QuantParams::new(0.1, 0);
    let none = FusedActivation::None;
    assert!(matches!(
        NoNorm::new(&[], &[], &[], q, q, none),
        Err(Error::ZeroDimension { op: "no_norm", .. })
    ));
    assert!(matches!(
        NoNorm::new(&[1, 2], &[0.1], &[0, 0], q, q, none),
        Err(Error::Length {
            what: "gamma scales",
            expected: 2,
            got: 1,
            ..
        })
    ));
    assert!(matches!(
        NoNorm::new(&[1, 2], &[0.1, 0.1], &[0], q, q, none),
        Err(Error::Length {
            what: "beta",
            expected: 2,
            got: 1,
            ..
        })
    ));
    for bad in [0.0, -1.0, f32::NAN] {
        assert!(matches!(
            NoNorm::new(&[1], &[bad], &[0], q, q, none),
            Err(Error::Scale {
                what: "gamma scale",
                ..
            })
        ));
        let b = QuantParams::new(bad, 0);
        assert!(matches!(
            NoNorm::new(&[1], &[0.1], &[0], b, q, none),
            Err(Error::Scale { .. })
        ));
        assert!(matches!(
            NoNorm::new(&[1], &[0.1], &[0], q, b, none),
            Err(Error::Scale { .. })
        ));
    }
    assert!(matches!(
        NoNorm::new(&[1], &[0.1], &[0], QuantParams::new(0.1, 128), q, none),
        Err(Error::ZeroPoint { .. })
    ));
    assert!(matches!(
        NoNorm::from_f32(&[1.0, f32::NAN], &[0.0, 0.0], q, q, none),
        Err(Error::OutOfDomain { what: "gamma", .. })
    ));
    assert!(matches!(
        NoNorm::from_f32(&[1.0], &[0.0, 0.0], q, q, none),
        Err(Error::Length { what: "beta", .. })
    ));
    let op = NoNorm::new(&[1, 2, 3], &[0.1; 3], &[0; 3], q, q, none).unwrap();
    let mut out = [0i8; 6];
    assert!(matches!(
        op.run(&[0; 6], &mut out[..5]),
        Err(Error::LengthMismatch { .. })
    ));
    assert!(matches!(
        op.run(&[0; 5], &mut out[..5]),
        Err(Error::RowLength { .. })
    ));
    assert!(op.run(&[0; 6], &mut out).is_ok());
}

// ---------------------------------------------------------------------------
// Heads.

#[test]
fn split_heads_moves_every_element_and_merge_heads_inverts_it() {
    for (seq, heads, dh) in [(1, 1, 1), (5, 4, 3), (384, 4, 32), (7, 1, 9), (3, 8, 1)] {
        let x: Vec<u32> = (0..(seq * heads * dh) as u32).collect();
        let mut split = vec![u32::MAX; x.len()];
        split_heads(&x, &mut split, seq, heads, dh).unwrap();
        for h in 0..heads {
            for s in 0..seq {
                for d in 0..dh {
                    assert_eq!(
                        split[(h * seq + s) * dh + d],
                        x[s * heads * dh + h * dh + d]
                    );
                }
            }
        }
        let mut back = vec![u32::MAX; x.len()];
        merge_heads(&split, &mut back, seq, heads, dh).unwrap();
        assert_eq!(back, x);
    }
    let x = [0i8; 0];
    assert!(split_heads(&x, &mut [], 0, 4, 8).is_ok());
    // No rows, and heads * head_dim beyond usize (a `capi` fuzz finding:
    // the row width overflowed before there was anything to move).
    let wide = 1usize << (usize::BITS - 1);
    assert!(split_heads(&x, &mut [], 0, wide, 4).is_ok());
    assert!(merge_heads(&x, &mut [], 0, 4, wide).is_ok());
}

#[test]
fn head_errors() {
    let x = [0i8; 24];
    let mut y = [0i8; 24];
    assert!(matches!(
        split_heads(&x, &mut y, 4, 0, 6),
        Err(Error::ZeroDimension { what: "heads", .. })
    ));
    assert!(matches!(
        merge_heads(&x, &mut y, 4, 6, 0),
        Err(Error::ZeroDimension {
            what: "head_dim",
            ..
        })
    ));
    assert!(matches!(
        split_heads(&x[..23], &mut y, 4, 2, 3),
        Err(Error::Length {
            op: "split_heads",
            what: "input",
            expected: 24,
            got: 23
        })
    ));
    assert!(matches!(
        merge_heads(&x, &mut y[..20], 4, 2, 3),
        Err(Error::Length {
            op: "merge_heads",
            what: "output",
            expected: 24,
            got: 20
        })
    ));
    assert!(matches!(
        split_heads(&x, &mut y, usize::MAX, 2, 3),
        Err(Error::Length { .. })
    ));
}

// ---------------------------------------------------------------------------
// NEON == scalar.

#[cfg(target_arch = "aarch64")]
mod neon {
    use super::*;

    fn require_neon() {
        assert!(Backend::Neon.is_available(), "NEON kernels not built in");
    }

    #[test]
    fn add_i8_neon_equals_scalar_every_pair_and_every_short_length() {
        require_neon();
        let (a, b) = all_pairs();
        for case in add_cases() {
            let op = case.op();
            assert_eq!(op.backend(), Backend::Neon);
            let mut want = vec![0i8; a.len()];
            op.run_with(Backend::Scalar, &a, &b, &mut want).unwrap();
            let mut got = vec![0x5a; a.len()];
            op.run_with(Backend::Neon, &a, &b, &mut got).unwrap();
            assert_eq!(got, want, "{case:?}");
            // Every length 0..=50 at several offsets (tails, unaligned starts).
            for len in 0..=50 {
                for off in [0, 1, 7, 16, 301] {
                    let (x, y) = (&a[off * 97..off * 97 + len], &b[off * 89..off * 89 + len]);
                    let mut w = vec![0x11; len];
                    let mut g = vec![0x22; len];
                    op.run_with(Backend::Scalar, x, y, &mut w).unwrap();
                    op.run_with(Backend::Neon, x, y, &mut g).unwrap();
                    assert_eq!(g, w, "len {len} off {off} {case:?}");
                }
            }
        }
    }

    /// Scale triples drawn so that every specialisation of the vector add is
    /// taken: the larger-scale input first or second, equal scales (no
    /// rounding on either side), input ratios from 1 to 2^-20 (the smaller
    /// side's rounding divide by 0 to 20 bits, with and without negative
    /// ties), output scales from 1/4000 of the inputs (a short output shift,
    /// where some sum lands on a negative tie) to 4000 times them, with and
    /// without an activation clamp. Every pair of inputs, on NEON, against
    /// the `i64` oracle.
    #[test]
    fn add_i8_neon_matches_oracle_every_pair_across_scales() {
        require_neon();
        let (a, b) = all_pairs();
        let mut rng = Rng::new(21);
        let mut got = vec![0i8; a.len()];
        for i in 0..48 {
            let big = rng.log_uniform(1e-3, 10.0);
            let small = if i % 8 == 0 {
                big
            } else {
                big * 2f32.powf(-(rng.unit() * 20.0) as f32)
            };
            let (sa, sb) = if i % 2 == 0 {
                (big, small)
            } else {
                (small, big)
            };
            let so = big * rng.log_uniform(1.0 / 4000.0, 4000.0);
            let case = AddCase {
                a: QuantParams::new(sa, rng.range(-128, 127) as i32),
                b: QuantParams::new(sb, rng.range(-128, 127) as i32),
                out: QuantParams::new(so, rng.range(-128, 127) as i32),
                act: if i % 3 == 0 { rng.below(3) as u8 } else { 0 },
            };
            let op = case.op();
            op.run_with(Backend::Neon, &a, &b, &mut got).unwrap();
            for (k, (&x, &y)) in a.iter().zip(&b).enumerate() {
                assert_eq!(got[k], case.oracle(x, y), "a {x} b {y} {case:?}");
            }
        }
    }

    /// Many rows (the vector kernel keeps a group of 16 channels' parameters
    /// and walks down the rows) in which every channel sees
    /// all 256 input values, for channel counts with and without a partial
    /// last group, against the oracle.
    #[test]
    fn no_norm_i8_neon_matches_oracle_every_input_per_channel() {
        require_neon();
        let mut rng = Rng::new(41);
        for channels in [16, 17, 48, 128, 131] {
            for _ in 0..3 {
                let case = NoNormCase::random(&mut rng, channels);
                let rows = 256 + rng.usize(0, 3);
                let x: Vec<i8> = (0..rows * channels)
                    .map(|i| ((i / channels) * 7 + (i % channels) * 131) as u8 as i8)
                    .collect();
                let mut got = vec![0x44; x.len()];
                case.op().run_with(Backend::Neon, &x, &mut got).unwrap();
                assert_eq!(got, case.oracle(&x), "{case:?}");
            }
        }
    }

    #[test]
    fn no_norm_i8_neon_equals_scalar() {
        require_neon();
        let mut rng = Rng::new(40);
        for (case, rows) in no_norm_cases() {
            let op = case.op();
            let x = no_norm_input(&mut rng, case.gamma.len(), rows);
            let mut want = vec![0x11; x.len()];
            op.run_with(Backend::Scalar, &x, &mut want).unwrap();
            let mut got = vec![0x22; x.len()];
            op.run_with(Backend::Neon, &x, &mut got).unwrap();
            assert_eq!(got, want, "{case:?}");
            let mut best = vec![0x33; x.len()];
            op.run(&x, &mut best).unwrap();
            assert_eq!(best, want);
        }
    }
}

// ---------------------------------------------------------------------------
// Add scale triples on which a rounding tie decides an output byte.

/// Which rounding divide of the add rounds its negative ties up (towards
/// +inf) instead of away from zero: what a kernel without that divide's sign
/// fix-up would compute.
#[derive(Clone, Copy, Debug, PartialEq)]
enum TiesUp {
    /// The divide of the input with the smaller scale.
    Smaller,
    /// The output's divide.
    Output,
}

fn divide_ties_up(x: i64, e: i64) -> i64 {
    if e == 0 {
        x
    } else {
        (x + (1i64 << (e - 1))) >> e
    }
}

fn mbqm_ties_up(x: i64, m: i64, shift: i64) -> i64 {
    assert!(shift <= 0);
    divide_ties_up(layer_oracle::srdhm(x, m), -shift)
}

impl AddCase {
    /// [`AddCase::oracle`] with one divide's negative ties rounded up.
    fn oracle_ties_up(&self, x: i8, y: i8, which: TiesUp) -> i8 {
        let twice_max = (2.0 * self.a.scale.max(self.b.scale)) as f64;
        let (m1, s1) = quantize_multiplier(self.a.scale as f64 / twice_max);
        let (m2, s2) = quantize_multiplier(self.b.scale as f64 / twice_max);
        let (mo, so) =
            quantize_multiplier(twice_max / ((1u32 << 20) as f32 * self.out.scale) as f64);
        let smaller_is_a = self.a.scale < self.b.scale;
        let side = |v: i8, zp: i32, m: i64, s: i64, smaller: bool| {
            let shifted = (v as i64 - zp as i64) << 20;
            if smaller && which == TiesUp::Smaller {
                mbqm_ties_up(shifted, m, s)
            } else {
                mbqm(shifted, m, s)
            }
        };
        let xa = side(x, self.a.zero_point, m1, s1, smaller_is_a);
        let yb = side(y, self.b.zero_point, m2, s2, !smaller_is_a);
        let r = if which == TiesUp::Output {
            mbqm_ties_up(xa + yb, mo, so)
        } else {
            mbqm(xa + yb, mo, so)
        };
        output(
            r,
            self.out.zero_point,
            activation_range(self.act, self.out.scale, self.out.zero_point),
        )
    }

    /// Whether rounding `which`'s negative ties up changes any output byte.
    fn tie_decides_a_byte(&self, which: TiesUp) -> bool {
        (0..65536).any(|i| {
            let (x, y) = ((i >> 8) as u8 as i8, i as u8 as i8);
            self.oracle(x, y) != self.oracle_ties_up(x, y, which)
        })
    }
}

/// Seeded random scale triples (scales up to 2^20 apart) on which rounding a
/// tie up instead of away from zero changes an output byte, for each of the
/// two divides: the cases in which a kernel may not drop the sign fix-up.
fn tie_deciding_cases(which: TiesUp, want: usize) -> Vec<AddCase> {
    let mut rng = Rng::new(77 + which as u64);
    let mut found = Vec::new();
    for _ in 0..400 {
        let big = rng.log_uniform(1e-3, 10.0);
        // A smaller scale within a factor 2 of the larger makes its divide
        // a halving (shift -1), so half of its values are ties.
        let small = match which {
            TiesUp::Smaller => big * rng.log_uniform(0.5, 1.0),
            TiesUp::Output => big * rng.log_uniform(0.01, 1.0),
        };
        let (sa, sb) = if rng.below(2) == 0 {
            (big, small)
        } else {
            (small, big)
        };
        let so = big * rng.log_uniform(0.005, 4.0);
        let case = AddCase {
            a: QuantParams::new(sa, rng.range(-128, 127) as i32),
            b: QuantParams::new(sb, rng.range(-128, 127) as i32),
            out: QuantParams::new(so, rng.range(-128, 127) as i32),
            act: 0,
        };
        if add_double(case.a, case.b, case.out, FusedActivation::None).is_ok()
            && case.tie_decides_a_byte(which)
        {
            found.push(case);
            if found.len() == want {
                break;
            }
        }
    }
    assert!(
        !found.is_empty(),
        "no scale triple found on which the {which:?} divide's ties decide a byte"
    );
    found
}

/// On triples where a dropped sign fix-up would change output bytes, every
/// backend still gives the oracle's bytes for every input pair.
#[test]
fn add_i8_keeps_the_sign_fixups_where_a_tie_decides_a_byte() {
    let (a, b) = all_pairs();
    let mut got = vec![0i8; a.len()];
    for which in [TiesUp::Smaller, TiesUp::Output] {
        for case in tie_deciding_cases(which, 3) {
            let op = case.op();
            let backends: &[Backend] = if Backend::Neon.is_available() {
                &[Backend::Scalar, Backend::Neon]
            } else {
                &[Backend::Scalar]
            };
            for &backend in backends {
                op.run_with(backend, &a, &b, &mut got).unwrap();
                for (k, (&x, &y)) in a.iter().zip(&b).enumerate() {
                    assert_eq!(
                        got[k],
                        case.oracle(x, y),
                        "{backend:?} a {x} b {y} {which:?} {case:?}"
                    );
                }
            }
        }
    }
}
