//! The int8 GEMM ([`qneon::Gemm`]): the scalar reference against an independent
//! `i64` oracle of TFLite's per-channel `FullyConnected`, and (on aarch64) both
//! NEON paths, `sdot` and widening, against the scalar reference byte for byte
//! on every shape with `m`, `n`, `k` in `1..=37` and some large ones, in
//! every requantization (single rounding, LiteRT's optimized kernels;
//! double, gemmlowp's; the real multiplier in `f64`, LiteRT's reference).
//!
//! Outputs are pre-filled with a value the kernels are unlikely to produce in
//! the whole buffer, and with different values for each backend, so a byte a
//! kernel forgets to write shows up as a difference.

mod layer_oracle;

use layer_oracle::{activation_range, mbqm, output, quantize_multiplier, Rng};
use qneon::ops::GemmPath;
use qneon::{Backend, Error, FusedActivation, Gemm, QuantParams, Requantization, Rounding};

#[derive(Clone, Debug)]
struct Case {
    m: usize,
    n: usize,
    k: usize,
    x: Vec<i8>,
    w: Vec<i8>,
    bias: Option<Vec<i32>>,
    input: QuantParams,
    weight_scales: Vec<f32>,
    output: QuantParams,
    /// 0 none, 1 relu, 2 relu6.
    act: u8,
    requantization: Requantization,
}

/// TFLite's single-rounding build: `QuantizeMultiplier` with shifts above 30
/// saturated to `(2^31 - 1, 30)`, and `MultiplyByQuantizedMultiplier` as the
/// exact product `x * m / 2^(31 - shift)` rounded half up (floor of the value
/// plus one half, in `i128`), saturated to `i32`.
fn quantize_multiplier_single(real: f64) -> (i64, i64) {
    match quantize_multiplier(real) {
        (_, shift) if shift > 30 => (i32::MAX as i64, 30),
        q => q,
    }
}

fn mbqm_single(x: i64, m: i64, shift: i64) -> i64 {
    let num = 2 * x as i128 * m as i128 + (1i128 << (31 - shift));
    let rounded = num.div_euclid(1i128 << (32 - shift));
    rounded.clamp(i32::MIN as i128, i32::MAX as i128) as i64
}

fn fused(act: u8) -> FusedActivation {
    match act {
        0 => FusedActivation::None,
        1 => FusedActivation::Relu,
        _ => FusedActivation::Relu6,
    }
}

impl Case {
    /// Random data and quantization for an `m x k` by `n x k` product, with an
    /// output scale near the typical accumulator size (so outputs are spread
    /// over the int8 range rather than all saturated).
    fn random(rng: &mut Rng, m: usize, n: usize, k: usize) -> Case {
        let input = QuantParams::new(rng.log_uniform(1e-3, 1.0), rng.range(-128, 127) as i32);
        let weight_scales: Vec<f32> = (0..n).map(|_| rng.log_uniform(1e-4, 1e-1)).collect();
        let typical_w = weight_scales.iter().map(|&s| s as f64).sum::<f64>() / n as f64;
        let typical = input.scale as f64 * typical_w * 74.0 * 74.0 * (k as f64).sqrt();
        let out_scale = (typical / 48.0 * rng.log_uniform(0.3, 3.0) as f64) as f32;
        let output = QuantParams::new(out_scale, rng.range(-128, 127) as i32);
        let bias = match rng.below(4) {
            0 => None,
            _ => Some(
                (0..n)
                    .map(|_| rng.range(-(1 << 20), 1 << 20) as i32)
                    .collect(),
            ),
        };
        Case {
            m,
            n,
            k,
            x: rng.vec_i8(m * k),
            w: rng.vec_i8(n * k),
            bias,
            input,
            weight_scales,
            output,
            act: rng.below(3) as u8,
            requantization: match rng.below(5) {
                0 => Rounding::Single.into(),
                1 => Rounding::Double.into(),
                2 => Requantization::XnnpackF32,
                3 => Requantization::GemvTiesUpward,
                _ => Requantization::RealF64,
            },
        }
    }

    fn gemm(&self) -> Gemm {
        Gemm::new(
            &self.w,
            self.n,
            self.k,
            self.bias.as_deref(),
            self.input,
            &self.weight_scales,
            self.output,
            fused(self.act),
            self.requantization,
        )
        .unwrap_or_else(|e| panic!("Gemm::new failed: {e} for {}", self.describe()))
    }

    fn describe(&self) -> String {
        format!(
            "m={} n={} k={} input={:?} output={:?} act={} bias={} requantization={}",
            self.m,
            self.n,
            self.k,
            self.input,
            self.output,
            self.act,
            self.bias.is_some(),
            self.requantization.name()
        )
    }

    /// TFLite's `FullyConnectedPerChannel`, in `i64`.
    fn oracle(&self) -> Vec<i8> {
        let range = match self.requantization {
            // XNNPACK quantizes the bounds in f32, rounding ties to even.
            Requantization::XnnpackF32 => {
                let q = |real: f32| {
                    (real / self.output.scale + self.output.zero_point as f32)
                        .clamp(-128.0, 127.0)
                        .round_ties_even() as i64
                };
                match self.act {
                    0 => (-128, 127),
                    1 => (q(0.0), 127),
                    _ => (q(0.0), q(6.0)),
                }
            }
            _ => activation_range(self.act, self.output.scale, self.output.zero_point),
        };
        let mut out = Vec::with_capacity(self.m * self.n);
        for row in self.x.chunks_exact(self.k) {
            for c in 0..self.n {
                let w = &self.w[c * self.k..(c + 1) * self.k];
                let mut acc: i64 = self.bias.as_ref().map_or(0, |b| b[c] as i64);
                for (&x, &wv) in row.iter().zip(w) {
                    acc += (x as i64 - self.input.zero_point as i64) * wv as i64;
                }
                assert_eq!(acc, acc as i32 as i64, "test accumulators must fit int32");
                let real = self.input.scale as f64 * self.weight_scales[c] as f64
                    / self.output.scale as f64;
                let requantized = match self.requantization {
                    Requantization::Multiplier(Rounding::Double) => {
                        let (mult, shift) = quantize_multiplier(real);
                        mbqm(acc, mult, shift)
                    }
                    Requantization::Multiplier(Rounding::Single) => {
                        let (mult, shift) = quantize_multiplier_single(real);
                        mbqm_single(acc, mult, shift)
                    }
                    // std's `round` is half away from zero, as C's; the
                    // saturating cast stands for the C++'s undefined one.
                    Requantization::RealF64 => (acc as f64 * real).round() as i32 as i64,
                    // XNNPACK: the scale and the product in f32, ties to even.
                    Requantization::XnnpackF32 => {
                        let scale = self.input.scale * self.weight_scales[c] / self.output.scale;
                        (acc as i32 as f32 * scale).round_ties_even() as i32 as i64
                    }
                    // LiteRT's aarch64 GEMV: shl (wrapping), sqrdmulh, srshl.
                    Requantization::GemvTiesUpward => {
                        let (mult, shift) = quantize_multiplier_single(real);
                        let shifted = (acc as i32).wrapping_shl(shift.max(0) as u32) as i64;
                        let high = ((shifted * mult + (1 << 30)) >> 31)
                            .clamp(i32::MIN as i64, i32::MAX as i64);
                        let right = (-shift).max(0);
                        if right == 0 {
                            high
                        } else {
                            (high + (1 << (right - 1))) >> right
                        }
                    }
                };
                out.push(output(requantized, self.output.zero_point, range));
            }
        }
        out
    }

    fn run_scalar(&self, g: &Gemm) -> Vec<i8> {
        let mut out = vec![0x2a; self.m * self.n];
        g.run_with(Backend::Scalar, &self.x, &mut out, self.m)
            .unwrap();
        out
    }
}

/// A GEMM prepared with one set of weights and then given another through
/// `set_weights` (or the transposed form) computes what a GEMM prepared with
/// the second set does: the oracle's result, bias refolded for the new
/// weights. Random shapes, also weights with and without -128 in either set.
fn check_set_weights(rng: &mut Rng, m: usize, n: usize, k: usize, transposed: bool) {
    let first = Case::random(rng, m, n, k);
    let mut second = first.clone();
    second.w = rng.vec_i8(n * k);
    if rng.below(2) == 0 {
        for w in second.w.iter_mut() {
            *w = (*w).max(-127);
        }
    }
    let mut g = first.gemm();
    if transposed {
        let mut t = vec![0i8; k * n];
        for c in 0..n {
            for d in 0..k {
                t[d * n + c] = second.w[c * k + d];
            }
        }
        g.set_weights_transposed(&t).unwrap();
    } else {
        g.set_weights(&second.w).unwrap();
    }
    let want = second.oracle();
    assert_same(
        "set_weights, scalar",
        &second,
        &second.run_scalar(&g),
        &want,
    );
    #[cfg(target_arch = "aarch64")]
    for (path, _) in neon::neon_paths() {
        let mut out = vec![0x3c; m * n];
        g.run_neon_path(path, &second.x, &mut out, m).unwrap();
        assert_same(&format!("set_weights, {path:?}"), &second, &out, &want);
    }
}

#[test]
fn gemm_i8_set_weights_equals_a_gemm_prepared_with_them() {
    let mut rng = Rng::new(61);
    for _ in 0..200 {
        let (m, n, k) = (rng.usize(1, 20), rng.usize(1, 40), rng.usize(1, 70));
        let transposed = rng.below(2) == 0;
        check_set_weights(&mut rng, m, n, k, transposed);
    }
    // The attention shapes of the MobileBert layer (one head, short sequence).
    check_set_weights(&mut rng, 48, 48, 32, false);
    check_set_weights(&mut rng, 48, 32, 48, true);
}

#[test]
fn gemm_i8_set_weights_rejects_wrong_lengths() {
    let mut rng = Rng::new(62);
    let mut g = Case::random(&mut rng, 3, 5, 7).gemm();
    for len in [0, 34, 36] {
        let w = vec![1i8; len];
        assert_eq!(
            g.set_weights(&w),
            Err(Error::Length {
                op: "gemm",
                what: "weights",
                expected: 35,
                got: len
            })
        );
        assert!(matches!(
            g.set_weights_transposed(&w),
            Err(Error::Length { got, .. }) if got == len
        ));
    }
}

/// The first differing index, with both values.
fn first_difference(a: &[i8], b: &[i8]) -> Option<(usize, i8, i8)> {
    assert_eq!(a.len(), b.len());
    a.iter()
        .zip(b)
        .enumerate()
        .find(|(_, (x, y))| x != y)
        .map(|(i, (&x, &y))| (i, x, y))
}

fn assert_same(what: &str, case: &Case, got: &[i8], want: &[i8]) {
    if let Some((i, g, w)) = first_difference(got, want) {
        let diffs = got.iter().zip(want).filter(|(a, b)| a != b).count();
        panic!(
            "{what}: {diffs} bytes differ, first at row {} col {}: got {g}, want {w}; {}",
            i / case.n,
            i % case.n,
            case.describe()
        );
    }
}

fn check_scalar(case: &Case) {
    let g = case.gemm();
    assert_same(
        "scalar vs oracle",
        case,
        &case.run_scalar(&g),
        &case.oracle(),
    );
}

#[test]
fn gemm_i8_scalar_matches_oracle_random_small_shapes() {
    let mut rng = Rng::new(1);
    for _ in 0..400 {
        let (m, n, k) = (rng.usize(1, 37), rng.usize(1, 37), rng.usize(1, 37));
        check_scalar(&Case::random(&mut rng, m, n, k));
    }
}

#[test]
fn gemm_i8_scalar_matches_oracle_large_shapes() {
    let mut rng = Rng::new(2);
    // The MobileBert-like shapes: 384 tokens, 512 -> 128 and 128 -> 512.
    for (m, n, k) in [(384, 128, 512), (384, 512, 128), (5, 67, 1031)] {
        check_scalar(&Case::random(&mut rng, m, n, k));
    }
}

/// Inputs and weights at the int8 extremes: the largest products
/// ((-128 - 127) * -128 = 32,640) over a long depth, outputs saturating at both
/// ends, biases near +-2^30.
fn extreme_cases() -> Vec<Case> {
    let mut rng = Rng::new(3);
    let mut cases = Vec::new();
    for (m, n, k) in [(9, 11, 512), (8, 8, 16), (1, 1, 1), (17, 19, 35)] {
        for variant in 0..6 {
            let mut c = Case::random(&mut rng, m, n, k);
            match variant {
                0 => {
                    c.x = vec![-128; m * k];
                    c.w = vec![-128; n * k];
                    c.input.zero_point = 127;
                }
                1 => {
                    c.x = vec![127; m * k];
                    c.w = vec![-128; n * k];
                    c.input.zero_point = -128;
                }
                2 => {
                    // Alternating extremes: every product +-32,640 or +-16,384.
                    c.x = (0..m * k)
                        .map(|i| if i % 3 == 0 { 127 } else { -128 })
                        .collect();
                    c.w = (0..n * k)
                        .map(|i| if i % 2 == 0 { -128 } else { 127 })
                        .collect();
                    c.input.zero_point = 127;
                }
                3 => {
                    // Tiny output scale: everything saturates (XNNPACK
                    // refuses scale ratios of 256 or more: just below).
                    c.output.scale = match c.requantization {
                        Requantization::XnnpackF32 => {
                            let w = c.weight_scales.iter().fold(0.0f32, |a, &b| a.max(b));
                            c.input.scale * w / 200.0
                        }
                        _ => 1e-9,
                    };
                }
                4 => {
                    // Biases near +-2^30, small products.
                    c.input.zero_point = 0;
                    c.x = c.x.iter().map(|&v| v / 16).collect();
                    c.bias = Some(
                        (0..n)
                            .map(|i| if i % 2 == 0 { 1 << 30 } else { -(1 << 30) })
                            .collect(),
                    );
                    c.output.scale = 1.0;
                }
                _ => {
                    c.x = vec![-128; m * k];
                    c.w = vec![-128; n * k];
                    c.input.zero_point = 0;
                }
            }
            cases.push(c);
        }
    }
    cases
}

/// Per-channel scales from 1e-9 to 1e3 in one layer: multipliers from zero
/// (below 2^-32) through right shifts of 31 to left shifts.
fn magnitude_cases() -> Vec<Case> {
    let mut rng = Rng::new(4);
    let mut cases = Vec::new();
    for (m, n, k) in [(13, 40, 21), (8, 16, 64), (3, 9, 5)] {
        let mut c = Case::random(&mut rng, m, n, k);
        c.input = QuantParams::new(0.05, 3);
        c.output = QuantParams::new(0.5, -7);
        c.weight_scales = (0..n)
            .map(|i| 10f32.powf(-9.0 + 12.0 * i as f32 / (n - 1) as f32))
            .collect();
        // Keep left-shifted accumulators small enough not to wrap in the oracle.
        c.x = c.x.iter().map(|&v| v / 32).collect();
        c.w = c.w.iter().map(|&v| v / 32).collect();
        cases.push(c);
    }
    cases
}

#[test]
fn gemm_i8_scalar_matches_oracle_extreme_values() {
    for c in extreme_cases() {
        check_scalar(&c);
    }
}

#[test]
fn gemm_i8_scalar_matches_oracle_channel_scales_of_different_magnitudes() {
    for c in magnitude_cases() {
        check_scalar(&c);
    }
}

#[test]
fn gemm_i8_fused_relu_clamps_at_the_zero_point() {
    let mut rng = Rng::new(5);
    let mut c = Case::random(&mut rng, 20, 20, 20);
    c.act = 1;
    c.output.zero_point = -20;
    let out = c.run_scalar(&c.gemm());
    assert!(out.iter().all(|&v| v >= -20));
    assert!(out.contains(&-20), "no output was clamped: test too weak");
}

// ---------------------------------------------------------------------------
// NEON == scalar (aarch64 only; under qemu -cpu max both paths exist).

#[cfg(target_arch = "aarch64")]
mod neon {
    use super::*;
    use qneon::CpuFeatures;

    fn require_dotprod() {
        assert!(Backend::Neon.is_available());
        assert!(
            CpuFeatures::detect().dotprod,
            "this CPU has no dotprod: the sdot path cannot be cross-validated (run under \
             qemu-aarch64 -cpu max)"
        );
    }

    /// Every NEON path this CPU has, each with its output poison: `sdot`
    /// and the widening path always (dotprod is required), `smmla` when
    /// the CPU has i8mm (`qemu-aarch64 -cpu max`, not `-cpu neoverse-n1`).
    pub(super) fn neon_paths() -> Vec<(GemmPath, i8)> {
        let mut paths = vec![(GemmPath::Dot, 0x55u8 as i8), (GemmPath::Widening, -0x56)];
        if CpuFeatures::detect().i8mm {
            paths.push((GemmPath::Mmla, 0x2b));
        }
        paths
    }

    fn check_neon(case: &Case) {
        let g = case.gemm();
        let want = case.run_scalar(&g);
        for (path, poison) in neon_paths() {
            let mut out = vec![poison; case.m * case.n];
            g.run_neon_path(path, &case.x, &mut out, case.m).unwrap();
            assert_same(&format!("{path:?} vs scalar"), case, &out, &want);
        }
        let mut out = vec![0x11; case.m * case.n];
        g.run(&case.x, &mut out, case.m).unwrap();
        assert_same("run() vs scalar", case, &out, &want);
    }

    #[test]
    fn gemm_i8_neon_paths_equal_scalar_every_small_n_k() {
        require_dotprod();
        let mut rng = Rng::new(10);
        let mut count = 0;
        for n in 1..=37 {
            for k in 1..=37 {
                let m = rng.usize(1, 37);
                check_neon(&Case::random(&mut rng, m, n, k));
                count += 1;
            }
        }
        for m in 1..=37 {
            check_neon(&Case::random(&mut rng, m, 13, 29));
            check_neon(&Case::random(&mut rng, m, 8, 16));
            count += 2;
        }
        assert_eq!(count, 37 * 37 + 74);
    }

    #[test]
    fn gemm_i8_neon_paths_equal_scalar_at_depth_8() {
        // The sdot path reads whole 8-row tiles of a depth of exactly 8 in
        // place (a pointwise layer after an 8-channel one): every row count
        // around whole tiles, narrow and wide blocks, a long input.
        require_dotprod();
        let mut rng = Rng::new(15);
        for m in 1..=33 {
            for n in [1, 8, 13, 16] {
                check_neon(&Case::random(&mut rng, m, n, 8));
            }
        }
        check_neon(&Case::random(&mut rng, 2304, 16, 8));
    }

    #[test]
    fn gemm_i8_neon_paths_equal_scalar_for_each_clamp_side() {
        // The whole-tile loop clamps only the bounds not at int8's ends:
        // RELU6 at an output zero point of -128 clamps above only, RELU
        // above -128 below only, RELU6 above -128 both, NONE neither. Single
        // rounding (the loop's stage), whole tiles and a tail.
        require_dotprod();
        let mut rng = Rng::new(16);
        for (act, zero_point) in [(2u8, -128), (1, -20), (2, -20), (0, 3)] {
            // Depth 8 runs whole tiles in place (a loop of its own); 8 t + 1
            // rows end in a tile and a row run as 9 rows (a whole depth, a
            // half step, a last row in a group of its own); 8 t + 4 rows in
            // whole tiles and a 4-row kernel (none, one or two whole tiles
            // before it, a half step).
            for (m, k) in [
                (24, 32),
                (19, 16),
                (4, 16),
                (12, 40),
                (20, 128),
                (16, 200),
                (24, 8),
                (17, 8),
                (9, 256),
                (17, 24),
                (49, 160),
            ] {
                let mut c = Case::random(&mut rng, m, 16, k);
                c.requantization = Rounding::Single.into();
                c.act = act;
                c.output.zero_point = zero_point;
                // An output scale that puts 6.0 inside int8 (RELU6 clamps).
                c.output.scale = c.output.scale.max(6.0 / 200.0);
                check_neon(&c);
                let out = c.run_scalar(&c.gemm());
                if act != 0 {
                    assert!(out.contains(&(zero_point as i8)), "nothing clamped below");
                }
            }
        }
    }

    #[test]
    fn gemm_i8_neon_paths_equal_scalar_large_shapes() {
        require_dotprod();
        let mut rng = Rng::new(11);
        for (m, n, k) in [
            (384, 128, 512),
            (384, 512, 128),
            (7, 129, 515),
            (9, 1030, 33),
            (64, 64, 2048),
            // Around the deepest input the sdot path copies into a panel
            // (1024 bytes): the deepest fitting, one with a depth tail, the
            // first read in place.
            (17, 24, 1024),
            (10, 16, 1009),
            (9, 8, 1025),
        ] {
            check_neon(&Case::random(&mut rng, m, n, k));
        }
    }

    #[test]
    fn gemm_i8_neon_widening_pairs_of_largest_products() {
        // Without -128 weights the widening path adds two raw products in 16
        // bits: at most 2 * 128 * 127 = 32,512 in magnitude. Exercise that
        // bound (x = -128 against w = -127 and 127) and random shapes of
        // weights in -127..=127, large ones included (random weights of that
        // size almost surely hold a -128 and take the one-product path).
        require_dotprod();
        let mut rng = Rng::new(14);
        for (m, n, k) in [(9, 11, 512), (5, 8, 16), (1, 1, 1), (17, 19, 35)] {
            for w in [-127i8, 127] {
                let mut c = Case::random(&mut rng, m, n, k);
                c.x = vec![-128; m * k];
                c.w = vec![w; n * k];
                check_neon(&c);
            }
        }
        for (m, n, k) in [(384, 128, 512), (384, 512, 128), (7, 129, 515)] {
            let mut c = Case::random(&mut rng, m, n, k);
            c.w = c.w.iter().map(|&v| v.max(-127)).collect();
            check_neon(&c);
        }
    }

    #[test]
    fn gemm_i8_neon_paths_equal_scalar_extremes_and_magnitudes() {
        require_dotprod();
        for c in extreme_cases().iter().chain(&magnitude_cases()) {
            check_neon(c);
        }
    }

    #[test]
    fn gemm_i8_neon_left_shifted_accumulators_saturate_like_scalar() {
        // Effective scales far above 1: the left shift saturates some
        // accumulators (TFLite's overflows); every backend must saturate
        // them the same way.
        require_dotprod();
        let mut rng = Rng::new(12);
        let mut c = Case::random(&mut rng, 11, 19, 23);
        c.input = QuantParams::new(1.0, -5);
        c.output = QuantParams::new(1e-3, 9);
        c.weight_scales = (0..19).map(|i| 10f32.powi(i % 7)).collect();
        check_neon(&c);
    }

    #[test]
    fn gemm_i8_neon_paths_equal_scalar_over_several_panel_groups() {
        // The panel kernels copy as many 8-row tiles as fit 8 KiB (64 tiles
        // at depth 16, 21 at 48, 8 at 128) and run every weight block over
        // them: several whole groups, a last partial group ending in a
        // partial tile, and tiles of a few blocks, for each requantization
        // (each case's own and the others by name).
        require_dotprod();
        let mut rng = Rng::new(15);
        for (m, n, k) in [(1029, 20, 16), (341, 9, 48), (205, 24, 40), (70, 17, 128)] {
            for requantization in [
                Rounding::Single.into(),
                Rounding::Double.into(),
                Requantization::RealF64,
                Requantization::XnnpackF32,
                Requantization::GemvTiesUpward,
            ] {
                let mut c = Case::random(&mut rng, m, n, k);
                c.requantization = requantization;
                check_neon(&c);
            }
        }
    }

    #[test]
    fn gemm_i8_neon_row_tails_equal_scalar() {
        // The sdot path runs a panel group's last tile of m % 8 < 7 rows as
        // pieces of 4, 2 and 1 rows (7 rows: the whole tile): every tail
        // after 0, 1 and 4 whole tiles; depths of a half step, whole steps
        // and both, of 8 (whole tiles read in place), and deep rows read in
        // place; each requantization with per-channel or per-tensor
        // scales, extreme inputs and weights, scales that shift left.
        require_dotprod();
        let mut rng = Rng::new(17);
        let requantizations = [
            Rounding::Single.into(),
            Rounding::Double.into(),
            Requantization::RealF64,
            Requantization::XnnpackF32,
            Requantization::GemvTiesUpward,
        ];
        for r in 1..=7 {
            for q in [0, 1, 4] {
                let m = 8 * q + r;
                for (n, k) in [(8, 4), (16, 8), (16, 24), (13, 128), (24, 100), (9, 1040)] {
                    for (i, &requantization) in requantizations.iter().enumerate() {
                        let mut c = Case::random(&mut rng, m, n, k);
                        c.requantization = requantization;
                        match (i + r + q) % 4 {
                            0 => c.weight_scales = vec![c.weight_scales[0]; n],
                            1 => {
                                let edge = |v: &i8| if *v < 0 { -128 } else { 127 };
                                c.x = c.x.iter().map(edge).collect();
                                c.w = c.w.iter().map(edge).collect();
                            }
                            2 => {
                                c.input = QuantParams::new(1.0, -5);
                                // Effective scales of 1 to 100 (XNNPACK's below 256).
                                c.output = QuantParams::new(1.0, 9);
                                c.weight_scales =
                                    (0..n).map(|j| 10f32.powi(j as i32 % 3)).collect();
                            }
                            _ => {}
                        }
                        check_neon(&c);
                    }
                }
            }
        }
    }

    #[test]
    fn gemm_i8_neon_single_rounding_of_accumulators_near_the_int32_limits() {
        // Single rounding narrows the 64-bit products of blocks without a
        // left shift by taking their low halves: right for every product
        // of an int32 accumulator and a multiplier below 2^31 shifted right
        // by 31 or more. Accumulators within 2^16 of +-2^31 (biases of
        // +-(2^31 - 2^16)) and near +-2^30, against effective scales just
        // below 1 (shift 0, multipliers near 2^31: the largest products),
        // just below 1/2 and 2^-26 (outputs within int8), no activation; a
        // scale of 1.5 in the last block (of those with more than one)
        // takes the saturating path next to it.
        require_dotprod();
        let mut rng = Rng::new(16);
        for (m, n, k) in [(19, 24, 16), (8, 8, 1), (9, 32, 100)] {
            let mut c = Case::random(&mut rng, m, n, k);
            c.requantization = Rounding::Single.into();
            c.act = 0;
            c.input = QuantParams::new(1.0, 0);
            c.output = QuantParams::new(1.0, rng.range(-100, 100) as i32);
            c.x = c.x.iter().map(|&v| v / 64).collect();
            c.bias = Some(
                (0..n)
                    .map(|i| match i % 4 {
                        0 => i32::MAX - (1 << 16),
                        1 => i32::MIN + (1 << 16),
                        2 => (1 << 30) + i as i32,
                        _ => -(1 << 30) - i as i32,
                    })
                    .collect(),
            );
            c.weight_scales = (0..n)
                .map(|i| match (i / 8 == n / 8 - 1 && n > 8, i % 3) {
                    (true, _) => 1.5,
                    (_, 0) => 0.999_999_9,
                    (_, 1) => 0.5 - 1e-7,
                    _ => 2f32.powi(-26),
                })
                .collect();
            check_neon(&c);
            assert_eq!(c.run_scalar(&c.gemm()), c.oracle(), "{}", c.describe());
        }
    }

    #[test]
    fn gemm_i8_best_path_is_smmla_with_i8mm_else_sdot() {
        require_dotprod();
        let c = Case::random(&mut Rng::new(13), 2, 2, 2);
        let want = if CpuFeatures::detect().i8mm {
            GemmPath::Mmla
        } else {
            GemmPath::Dot
        };
        assert_eq!(c.gemm().path(), want);
        assert_eq!(c.gemm().backend(), Backend::Neon);
    }
}

// ---------------------------------------------------------------------------
// Bad input.

fn good() -> (Vec<i8>, Vec<i32>, Vec<f32>, QuantParams, QuantParams) {
    (
        vec![1; 6],
        vec![0; 2],
        vec![0.01; 2],
        QuantParams::new(0.1, 0),
        QuantParams::new(0.2, 0),
    )
}

fn make(
    w: &[i8],
    n: usize,
    k: usize,
    bias: Option<&[i32]>,
    input: QuantParams,
    scales: &[f32],
    output: QuantParams,
) -> Result<Gemm, Error> {
    Gemm::new(
        w,
        n,
        k,
        bias,
        input,
        scales,
        output,
        FusedActivation::None,
        Rounding::Double,
    )
}

#[test]
fn gemm_errors_on_bad_shapes() {
    let (w, b, s, i, o) = good();
    assert!(make(&w, 2, 3, Some(&b), i, &s, o).is_ok());
    assert!(matches!(
        make(&w, 0, 3, None, i, &[], o),
        Err(Error::ZeroDimension { op: "gemm", .. })
    ));
    assert!(matches!(
        make(&[], 2, 0, None, i, &s, o),
        Err(Error::ZeroDimension { op: "gemm", .. })
    ));
    assert!(matches!(
        make(&w[..5], 2, 3, None, i, &s, o),
        Err(Error::Length {
            what: "weights",
            expected: 6,
            got: 5,
            ..
        })
    ));
    assert!(matches!(
        make(&w, 2, 3, Some(&[0; 3]), i, &s, o),
        Err(Error::Length {
            what: "bias",
            expected: 2,
            got: 3,
            ..
        })
    ));
    assert!(matches!(
        make(&w, 2, 3, None, i, &s[..1], o),
        Err(Error::Length {
            what: "weight scales",
            expected: 2,
            got: 1,
            ..
        })
    ));
    assert!(matches!(
        make(&w, usize::MAX, 3, None, i, &s, o),
        Err(Error::Length {
            what: "weights",
            ..
        })
    ));
}

#[test]
fn gemm_errors_on_bad_quantization() {
    let (w, _, s, i, o) = good();
    for bad in [0.0, -1.0, f32::NAN, f32::INFINITY] {
        let q = QuantParams::new(bad, 0);
        assert!(matches!(
            make(&w, 2, 3, None, q, &s, o),
            Err(Error::Scale {
                what: "input scale",
                ..
            })
        ));
        assert!(matches!(
            make(&w, 2, 3, None, i, &s, q),
            Err(Error::Scale {
                what: "output scale",
                ..
            })
        ));
        assert!(matches!(
            make(&w, 2, 3, None, i, &[0.01, bad], o),
            Err(Error::Scale {
                what: "weight scale",
                ..
            })
        ));
    }
    for zp in [-129, 128, i32::MIN, i32::MAX] {
        let q = QuantParams::new(0.1, zp);
        assert!(matches!(
            make(&w, 2, 3, None, q, &s, o),
            Err(Error::ZeroPoint {
                what: "input zero point",
                ..
            })
        ));
        assert!(matches!(
            make(&w, 2, 3, None, i, &s, q),
            Err(Error::ZeroPoint {
                what: "output zero point",
                ..
            })
        ));
    }
    // An effective scale of 2^30 would shift accumulators out of int32.
    assert!(matches!(
        make(
            &w,
            2,
            3,
            None,
            QuantParams::new(1.0, 0),
            &[1.0, 1.0],
            QuantParams::new(2f32.powi(-30), 0)
        ),
        Err(Error::Unsupported { op: "gemm", .. })
    ));
    assert!(make(
        &w,
        2,
        3,
        None,
        QuantParams::new(1.0, 0),
        &[1.0, 1.0],
        QuantParams::new(2f32.powi(-29), 0)
    )
    .is_ok());
}

#[test]
fn gemm_single_rounding_saturates_effective_scales_of_2_pow_30_as_tflite() {
    // TFLite's single-rounding build quantizes 2^30 as (2^31 - 1, 30):
    // acc * (2^31 - 1) / 2 saturates for any |acc| >= 2.
    let g = Gemm::new(
        &[1],
        1,
        1,
        None,
        QuantParams::new(1.0, 0),
        &[1.0],
        QuantParams::new(2f32.powi(-30), 0),
        FusedActivation::None,
        Rounding::Single,
    )
    .unwrap();
    for backend in Backend::available() {
        let mut y = [0i8; 4];
        g.run_with(backend, &[0, 1, -1, -3], &mut y, 4).unwrap();
        assert_eq!(y, [0, 127, -128, -128], "{}", backend.name());
    }
}

#[test]
fn gemm_single_and_double_rounding_differ_on_negative_ties() {
    // Effective scale 1/4: an accumulator of -6 is -1.5, which single
    // rounding takes up to -1 and double rounding away from zero to -2;
    // 6 is 1.5 and both take it to 2.
    // The real multiplier in f64 rounds -1.5 away from zero, like double.
    for (rounding, want) in [
        (Rounding::Single.into(), [-1, 2]),
        (Rounding::Double.into(), [-2, 2]),
        (Requantization::RealF64, [-2, 2]),
    ] {
        let g = Gemm::new(
            &[1],
            1,
            1,
            None,
            QuantParams::new(1.0, 0),
            &[1.0],
            QuantParams::new(4.0, 0),
            FusedActivation::None,
            rounding,
        )
        .unwrap();
        assert_eq!(g.requantization(), rounding);
        for backend in Backend::available() {
            let mut y = [0i8; 2];
            g.run_with(backend, &[-6, 6], &mut y, 2).unwrap();
            assert_eq!(y, want, "{} {}", rounding.name(), backend.name());
        }
        #[cfg(target_arch = "aarch64")]
        for path in [GemmPath::Dot, GemmPath::Widening] {
            let mut y = [0i8; 2];
            g.run_neon_path(path, &[-6, 6], &mut y, 2).unwrap();
            assert_eq!(y, want, "{} {path:?}", rounding.name());
        }
    }
}

/// Where the quantized multiplier and the real one fall on either side of a
/// rounding tie: scales 0.08245026 (f32 bits 0x3da8_dbaf), 0.0008271467
/// and 5.63793 give the real multiplier 1.2096365801612636e-5, whose
/// product with the accumulator 2,438,749 is 29.5000000023, while the
/// 31-bit quantized multiplier's is 29.4999999998. LiteRT's reference kernel
/// (`RealF64`) gives 30, its optimized kernels (single rounding) 29; the
/// same kind of near-tie made qneon's single rounding differ from LiteRT's
/// reference on one MobileBert output (see the runtime's FULLY_CONNECTED).
#[test]
fn gemm_real_f64_and_single_rounding_differ_near_ties() {
    let input = QuantParams::new(f32::from_bits(0x3da8_dbaf), 0);
    let output = QuantParams::new(5.637_93, 0);
    let scales = [0.000_827_146_7f32];
    let accs = [2_438_749, -2_438_749, 7_316_247, -7_316_247];
    for (requantization, want) in [
        (Requantization::RealF64, [30, -30, 89, -89]),
        (Rounding::Single.into(), [29, -29, 88, -88]),
    ] {
        for (&acc, &want) in accs.iter().zip(&want) {
            let g = Gemm::new(
                &[1],
                1,
                1,
                Some(&[acc]),
                input,
                &scales,
                output,
                FusedActivation::None,
                requantization,
            )
            .unwrap();
            for backend in Backend::available() {
                let mut y = [0i8; 1];
                g.run_with(backend, &[0], &mut y, 1).unwrap();
                assert_eq!(
                    y[0],
                    want,
                    "{} acc {acc} {}",
                    requantization.name(),
                    backend.name()
                );
            }
        }
    }
}

#[test]
fn gemm_run_errors_on_bad_buffers() {
    let (w, _, s, i, o) = good();
    let g = make(&w, 2, 3, None, i, &s, o).unwrap();
    let x = [0i8; 12];
    let mut y = [0i8; 8];
    assert!(g.run(&x, &mut y, 4).is_ok());
    assert!(g.run(&x[..0], &mut y[..0], 0).is_ok());
    assert!(matches!(
        g.run(&x[..11], &mut y, 4),
        Err(Error::Length {
            what: "input",
            expected: 12,
            got: 11,
            ..
        })
    ));
    assert!(matches!(
        g.run(&x, &mut y[..7], 4),
        Err(Error::Length {
            what: "output",
            expected: 8,
            got: 7,
            ..
        })
    ));
    assert!(matches!(
        g.run(&x, &mut y, usize::MAX),
        Err(Error::Length { what: "input", .. })
    ));
    if !Backend::Neon.is_available() {
        assert!(matches!(
            g.run_with(Backend::Neon, &x, &mut y, 4),
            Err(Error::BackendUnavailable { .. })
        ));
        assert!(matches!(
            g.run_neon_path(GemmPath::Widening, &x, &mut y, 4),
            Err(Error::BackendUnavailable { .. })
        ));
    }
}
