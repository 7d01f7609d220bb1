//! The int8 matrix product of two run-time operands ([`qneon::MatMul`],
//! TFLite's int8 BATCH_MATMUL per matrix): the scalar reference against an
//! independent `i64` oracle, and (on aarch64) both NEON paths against the
//! scalar reference byte for byte, on random shapes (1, odd, not multiples
//! of 8 or 16), every combination of zero zero points, `adj_x` and `adj_y`,
//! and both roundings; scratch left dirty between calls.

mod layer_oracle;

use layer_oracle::{mbqm, quantize_multiplier, Rng};
use qneon::ops::GemmPath;
use qneon::{Backend, Error, MatMul, QuantParams, Rounding};

#[derive(Clone, Debug)]
struct Case {
    m: usize,
    n: usize,
    k: usize,
    adj_x: bool,
    adj_y: bool,
    /// Stored `m x k`, or `k x m` with `adj_x`.
    lhs: Vec<i8>,
    /// Stored `k x n`, or `n x k` with `adj_y`.
    rhs: Vec<i8>,
    lhs_q: QuantParams,
    rhs_q: QuantParams,
    out_q: QuantParams,
    rounding: Rounding,
}

/// TFLite's single-rounding `QuantizeMultiplier` (shifts capped at 30) and
/// `MultiplyByQuantizedMultiplier` (the exact product rounded half up,
/// saturated to `i32`).
fn quantize_multiplier_single(real: f64) -> (i64, i64) {
    match quantize_multiplier(real) {
        (_, shift) if shift > 30 => (i32::MAX as i64, 30),
        q => q,
    }
}

fn mbqm_single(x: i64, m: i64, shift: i64) -> i64 {
    let num = 2 * x as i128 * m as i128 + (1i128 << (31 - shift));
    num.div_euclid(1i128 << (32 - shift))
        .clamp(i32::MIN as i128, i32::MAX as i128) as i64
}

impl Case {
    /// Random operands; `zeros` selects which zero points are 0 (bit 0 the
    /// left-hand side's, bit 1 the right-hand side's); the output scale
    /// near the typical accumulator so outputs spread over int8.
    fn random(rng: &mut Rng, m: usize, n: usize, k: usize, zeros: u8) -> Case {
        let zp = |rng: &mut Rng, zero: bool| if zero { 0 } else { rng.range(-128, 127) as i32 };
        let lhs_q = QuantParams::new(rng.log_uniform(1e-3, 1.0), zp(rng, zeros & 1 != 0));
        let rhs_q = QuantParams::new(rng.log_uniform(1e-3, 1.0), zp(rng, zeros & 2 != 0));
        let typical = lhs_q.scale as f64 * rhs_q.scale as f64 * 74.0 * 74.0 * (k as f64).sqrt();
        let out_scale = (typical / 48.0 * rng.log_uniform(0.3, 3.0) as f64) as f32;
        Case {
            m,
            n,
            k,
            adj_x: rng.below(2) == 0,
            adj_y: rng.below(2) == 0,
            lhs: rng.vec_i8(m * k),
            rhs: rng.vec_i8(k * n),
            lhs_q,
            rhs_q,
            out_q: QuantParams::new(out_scale, rng.range(-128, 127) as i32),
            rounding: if rng.below(2) == 0 {
                Rounding::Single
            } else {
                Rounding::Double
            },
        }
    }

    fn matmul(&self) -> MatMul {
        MatMul::new(
            self.m,
            self.n,
            self.k,
            self.adj_x,
            self.adj_y,
            self.lhs_q,
            self.rhs_q,
            self.out_q,
            self.rounding,
        )
        .unwrap_or_else(|e| panic!("MatMul::new failed: {e} for {}", self.describe()))
    }

    fn describe(&self) -> String {
        format!(
            "m={} n={} k={} adj_x={} adj_y={} lhs={:?} rhs={:?} out={:?} rounding={}",
            self.m,
            self.n,
            self.k,
            self.adj_x,
            self.adj_y,
            self.lhs_q,
            self.rhs_q,
            self.out_q,
            self.rounding.name()
        )
    }

    /// TFLite's reference BATCH_MATMUL of one matrix, in `i64`.
    fn oracle(&self) -> Vec<i8> {
        let (m, n, k) = (self.m, self.n, self.k);
        let x = |r: usize, d: usize| self.lhs[if self.adj_x { d * m + r } else { r * k + d }];
        let y = |d: usize, c: usize| self.rhs[if self.adj_y { c * k + d } else { d * n + c }];
        let real = self.lhs_q.scale as f64 * self.rhs_q.scale as f64 / self.out_q.scale as f64;
        let mut out = Vec::with_capacity(m * n);
        for r in 0..m {
            for c in 0..n {
                let acc: i64 = (0..k)
                    .map(|d| {
                        (x(r, d) as i64 - self.lhs_q.zero_point as i64)
                            * (y(d, c) as i64 - self.rhs_q.zero_point as i64)
                    })
                    .sum();
                assert_eq!(acc, acc as i32 as i64, "test accumulators must fit int32");
                let scaled = match self.rounding {
                    Rounding::Double => {
                        let (mult, shift) = quantize_multiplier(real);
                        mbqm(acc, mult, shift)
                    }
                    Rounding::Single => {
                        let (mult, shift) = quantize_multiplier_single(real);
                        mbqm_single(acc, mult, shift)
                    }
                };
                out.push((scaled + self.out_q.zero_point as i64).clamp(-128, 127) as i8);
            }
        }
        out
    }

    /// Runs on `backend` (or a NEON path) with scratch full of `dirt`.
    fn run(&self, g: &MatMul, path: Option<GemmPath>, dirt: i8) -> Vec<i8> {
        let mut out = vec![dirt ^ 0x5a; self.m * self.n];
        let mut bytes = vec![dirt; g.scratch_bytes()];
        let mut words = vec![dirt as i32 * 0x0101_0101; g.scratch_words()];
        match path {
            None => g.run_with(
                Backend::Scalar,
                &self.lhs,
                &self.rhs,
                &mut out,
                &mut bytes,
                &mut words,
            ),
            Some(path) => {
                g.run_neon_path(path, &self.lhs, &self.rhs, &mut out, &mut bytes, &mut words)
            }
        }
        .unwrap();
        out
    }
}

fn assert_same(what: &str, case: &Case, got: &[i8], want: &[i8]) {
    if let Some(i) = (0..got.len()).find(|&i| got[i] != want[i]) {
        let diffs = got.iter().zip(want).filter(|(a, b)| a != b).count();
        panic!(
            "{what}: {diffs} bytes differ, first at row {} col {}: got {}, want {}; {}",
            i / case.n,
            i % case.n,
            got[i],
            want[i],
            case.describe()
        );
    }
}

fn check(case: &Case) {
    let g = case.matmul();
    let want = case.oracle();
    assert_same("scalar vs oracle", case, &case.run(&g, None, 0x33), &want);
    // The smmla path when the CPU has i8mm (`qemu-aarch64 -cpu max`, not
    // `-cpu neoverse-n1`).
    #[cfg(target_arch = "aarch64")]
    let mut paths = vec![(GemmPath::Dot, -0x43), (GemmPath::Widening, 0x7f)];
    #[cfg(target_arch = "aarch64")]
    if qneon::CpuFeatures::detect().i8mm {
        paths.push((GemmPath::Mmla, 0x2b));
    }
    #[cfg(target_arch = "aarch64")]
    for (path, dirt) in paths {
        assert_same(
            &format!("{path:?}"),
            case,
            &case.run(&g, Some(path), dirt),
            &want,
        );
    }
}

#[test]
fn matmul_i8_matches_oracle_on_random_small_shapes_every_zero_point_and_adjoint() {
    let mut rng = Rng::new(71);
    let mut seen = [[false; 4]; 4];
    for i in 0..600 {
        let (m, n, k) = (rng.usize(1, 37), rng.usize(1, 37), rng.usize(1, 40));
        let zeros = (i % 4) as u8;
        let case = Case::random(&mut rng, m, n, k, zeros);
        seen[zeros as usize][case.adj_x as usize * 2 + case.adj_y as usize] = true;
        check(&case);
    }
    assert!(
        seen.iter().flatten().all(|&s| s),
        "a combination was not drawn"
    );
}

#[test]
fn matmul_i8_matches_oracle_on_mobilebert_attention_shapes() {
    // One head of MobileBert at sequence 384 (head size 32): Q K^T with the
    // keys stored n x k (adj_y), and P V with the values stored k x n; and
    // shapes around the sdot path's panel depth (1024).
    let mut rng = Rng::new(72);
    for (m, n, k, adj_y) in [
        (384, 384, 32, true),
        (384, 32, 384, false),
        (9, 17, 1024, true),
        (10, 8, 1031, false),
    ] {
        for zeros in 0..4 {
            let mut c = Case::random(&mut rng, m, n, k, zeros);
            c.adj_x = false;
            c.adj_y = adj_y;
            check(&c);
        }
    }
}

#[test]
fn matmul_i8_matches_oracle_over_several_panel_groups_and_row_tails() {
    // Rows past one panel group of the smmla and sdot paths (1024 depth
    // bytes: 168 rows at a padded depth of 48, 128 at 64), with a last
    // tile of every height, the depth tail a half step (k % 16 in 1..=8)
    // or a whole one, with and without row offsets (the rhs zero point).
    let mut rng = Rng::new(75);
    for (i, (n, k)) in [(16, 40), (9, 33), (24, 47), (8, 56), (17, 64)]
        .into_iter()
        .enumerate()
    {
        for tail in 0..8 {
            let m = 8 * (21 + i) + tail;
            let zeros = (tail % 4) as u8;
            let mut c = Case::random(&mut rng, m, n, k, zeros);
            c.adj_x = false;
            check(&c);
        }
    }
}

#[test]
fn matmul_i8_matches_oracle_at_depth_8_every_zero_point() {
    // A depth of exactly 8: the sdot path reads whole 8-row tiles in place
    // (two rows per register), with and without row offsets (a nonzero rhs
    // zero point), the rows past the last whole tile through its panel.
    let mut rng = Rng::new(73);
    for (m, n) in [(8, 8), (16, 16), (23, 9), (41, 24), (7, 16)] {
        for zeros in 0..4 {
            let mut c = Case::random(&mut rng, m, n, 8, zeros);
            c.adj_x = false;
            check(&c);
        }
    }
}

#[test]
fn matmul_i8_matches_oracle_at_the_int8_extremes() {
    // The largest terms: (-128 - 127) * (127 - -128) = -65,025 and
    // (127 - -128)^2 = 65,025, over a long depth; outputs saturating both ways.
    let mut rng = Rng::new(73);
    for (m, n, k) in [(9, 11, 512), (8, 8, 16), (1, 1, 1), (17, 19, 35)] {
        for variant in 0..4 {
            let mut c = Case::random(&mut rng, m, n, k, 0);
            match variant {
                0 => {
                    c.lhs = vec![-128; m * k];
                    c.rhs = vec![127; k * n];
                    c.lhs_q.zero_point = 127;
                    c.rhs_q.zero_point = -128;
                }
                1 => {
                    c.lhs = vec![127; m * k];
                    c.rhs = vec![127; k * n];
                    c.lhs_q.zero_point = -128;
                    c.rhs_q.zero_point = -128;
                }
                2 => {
                    c.lhs = (0..m * k)
                        .map(|i| if i % 3 == 0 { 127 } else { -128 })
                        .collect();
                    c.rhs = (0..k * n)
                        .map(|i| if i % 2 == 0 { -128 } else { 127 })
                        .collect();
                }
                _ => c.out_q.scale = 1e-9,
            }
            check(&c);
        }
    }
}

#[test]
fn matmul_i8_single_and_double_rounding_differ_on_negative_ties() {
    // lhs -6 (zero point 0) times rhs 1 at an effective scale 1/4 is -1.5:
    // single rounding gives -1, double -2.
    for (rounding, want) in [(Rounding::Single, -1), (Rounding::Double, -2)] {
        let c = Case {
            m: 1,
            n: 1,
            k: 1,
            adj_x: false,
            adj_y: false,
            lhs: vec![-6],
            rhs: vec![3],
            lhs_q: QuantParams::new(1.0, 0),
            rhs_q: QuantParams::new(1.0, 2),
            out_q: QuantParams::new(4.0, 0),
            rounding,
        };
        assert_eq!(c.oracle(), [want]);
        check(&c);
    }
}

#[test]
fn matmul_errors_on_bad_parameters_and_buffers() {
    let q = QuantParams::new(0.1, 3);
    let new = |m, n, k, a: QuantParams, b: QuantParams, o: QuantParams| {
        MatMul::new(m, n, k, false, false, a, b, o, Rounding::Single)
    };
    for (m, n, k) in [(0, 2, 3), (2, 0, 3), (2, 3, 0)] {
        assert!(matches!(
            new(m, n, k, q, q, q),
            Err(Error::ZeroDimension {
                op: "batch_matmul",
                ..
            })
        ));
    }
    assert!(matches!(
        new(usize::MAX / 2, 9, usize::MAX / 4, q, q, q),
        Err(Error::Unsupported { .. })
    ));
    for bad in [0.0, -1.0, f32::NAN, f32::INFINITY] {
        let b = QuantParams::new(bad, 0);
        assert!(matches!(new(2, 2, 2, b, q, q), Err(Error::Scale { .. })));
        assert!(matches!(new(2, 2, 2, q, b, q), Err(Error::Scale { .. })));
        assert!(matches!(new(2, 2, 2, q, q, b), Err(Error::Scale { .. })));
    }
    for zp in [-129, 128] {
        let b = QuantParams::new(0.1, zp);
        assert!(matches!(
            new(2, 2, 2, b, q, q),
            Err(Error::ZeroPoint { .. })
        ));
        assert!(matches!(
            new(2, 2, 2, q, b, q),
            Err(Error::ZeroPoint { .. })
        ));
        assert!(matches!(
            new(2, 2, 2, q, q, b),
            Err(Error::ZeroPoint { .. })
        ));
    }
    // Double rounding refuses an effective scale of 2^30; single saturates it.
    let big = QuantParams::new(2f32.powi(-30), 0);
    let one = QuantParams::new(1.0, 0);
    assert!(matches!(
        MatMul::new(1, 1, 1, false, false, one, one, big, Rounding::Double),
        Err(Error::Unsupported { .. })
    ));
    assert!(MatMul::new(1, 1, 1, false, false, one, one, big, Rounding::Single).is_ok());

    let g = new(2, 3, 5, q, q, q).unwrap();
    let (x, y) = (vec![1i8; 10], vec![1i8; 15]);
    let mut out = vec![0i8; 6];
    let mut bytes = vec![0i8; g.scratch_bytes()];
    let mut words = vec![0i32; g.scratch_words()];
    for backend in Backend::available() {
        assert!(g
            .run_with(backend, &x, &y, &mut out, &mut bytes, &mut words)
            .is_ok());
        // (lhs, rhs, output length, scratch bytes, scratch words, the
        // buffer the error must name).
        type Shortened<'a> = (&'a [i8], &'a [i8], usize, usize, usize, &'a str);
        let cases: [Shortened; 5] = [
            (&x[..9], &y, 6, bytes.len(), words.len(), "lhs"),
            (&x, &y[..14], 6, bytes.len(), words.len(), "rhs"),
            (&x, &y, 5, bytes.len(), words.len(), "output"),
            (&x, &y, 6, bytes.len() - 1, words.len(), "scratch bytes"),
            (&x, &y, 6, bytes.len(), words.len() - 1, "scratch words"),
        ];
        for (x, y, out_len, nb, nw, what) in cases {
            let r = g.run_with(
                backend,
                x,
                y,
                &mut out[..out_len],
                &mut bytes[..nb],
                &mut words[..nw],
            );
            assert!(
                matches!(r, Err(Error::Length { what: w, .. }) if w == what),
                "{what}: {r:?}"
            );
        }
    }
}

/// `n` sizes per-column arrays before any data backs it: a width no memory
/// could hold is an error, not an aborted process (the allocator's refusal
/// is reported; sizes that overflow are refused before allocating).
#[test]
fn matmul_new_refuses_widths_beyond_memory_with_an_error() {
    let q = QuantParams::new(0.05, 0);
    for n in [1usize << 40, 1 << 50, usize::MAX / 64, usize::MAX - 7] {
        match MatMul::new(1, n, 1, false, false, q, q, q, Rounding::Single) {
            Err(Error::Allocation { bytes, .. }) => assert!(bytes >= n, "n {n}: {bytes} bytes"),
            Err(Error::Unsupported { .. }) => {}
            other => panic!("n {n}: {other:?}"),
        }
    }
}
