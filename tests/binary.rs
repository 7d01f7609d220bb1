//! int8 ADD, SUB and MUL in both roundings against an independent `i64`
//! oracle written from TFLite's formulas (every pair of int8 inputs, over
//! many quantizations), the broadcast operand forms against the expanded
//! ones, NEON == scalar on every pair, form and short length, and the
//! errors of `new` and `run`.

mod layer_oracle;

use layer_oracle::{activation_range, mbqm, output, quantize_multiplier, Rng};
use qneon::{Add, Backend, Error, FusedActivation, Mul, Operand, QuantParams, Rounding, Sub};

#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    Add,
    Sub,
    Mul,
}

#[derive(Clone, Copy, Debug)]
struct Case {
    kind: Kind,
    a: QuantParams,
    b: QuantParams,
    out: QuantParams,
    act: u8,
    rounding: Rounding,
}

fn fused(act: u8) -> FusedActivation {
    match act {
        0 => FusedActivation::None,
        1 => FusedActivation::Relu,
        _ => FusedActivation::Relu6,
    }
}

/// The prepared op of a case.
enum Prepared {
    Add(Add),
    Sub(Sub),
    Mul(Mul),
}

impl Prepared {
    fn run(
        &self,
        backend: Backend,
        a: Operand<'_>,
        b: Operand<'_>,
        out: &mut [i8],
    ) -> qneon::Result<()> {
        match self {
            Prepared::Add(op) => op.run_operands(backend, a, b, out),
            Prepared::Sub(op) => op.run_operands(backend, a, b, out),
            Prepared::Mul(op) => op.run_operands(backend, a, b, out),
        }
    }

    fn run_slices(&self, backend: Backend, a: &[i8], b: &[i8], out: &mut [i8]) {
        self.run(backend, Operand::Slice(a), Operand::Slice(b), out)
            .unwrap();
    }
}

/// TFLite's `QuantizeMultiplier` of the build: the single-rounding build
/// saturates shifts above 30 to `(2^31 - 1, 30)`.
fn quantize(real: f64, rounding: Rounding) -> (i64, i64) {
    let (m, s) = quantize_multiplier(real);
    if rounding == Rounding::Single && s > 30 {
        (i32::MAX as i64, 30)
    } else {
        (m, s)
    }
}

/// TFLite's `MultiplyByQuantizedMultiplier` of the build on an `i32` value.
fn multiply(x: i64, m: i64, shift: i64, rounding: Rounding) -> i64 {
    match rounding {
        Rounding::Double => mbqm(x, m, shift),
        Rounding::Single => {
            let total = 31 - shift;
            (x * m + (1i64 << (total - 1))) >> total
        }
    }
}

impl Case {
    fn try_prepare(&self) -> qneon::Result<Prepared> {
        let (a, b, o, act, r) = (self.a, self.b, self.out, fused(self.act), self.rounding);
        Ok(match self.kind {
            Kind::Add => Prepared::Add(Add::new(a, b, o, act, r)?),
            Kind::Sub => Prepared::Sub(Sub::new(a, b, o, act, r)?),
            Kind::Mul => Prepared::Mul(Mul::new(a, b, o, act, r)?),
        })
    }

    fn prepare(&self) -> Prepared {
        self.try_prepare()
            .unwrap_or_else(|e| panic!("new failed: {e} for {self:?}"))
    }

    /// TFLite's int8 kernel for one pair, in `i64`: `Prepare` of add.cc /
    /// sub.cc / mul.cc, then `AddFunc`, `SubElementwise` (the rescaled
    /// inputs subtracted) or `MulElementwise`.
    fn oracle(&self, x: i8, y: i8) -> i8 {
        let r = self.rounding;
        let (za, zb) = (self.a.zero_point as i64, self.b.zero_point as i64);
        let value = match self.kind {
            Kind::Add | Kind::Sub => {
                let twice_max = (2.0 * self.a.scale.max(self.b.scale)) as f64;
                let (m1, s1) = quantize(self.a.scale as f64 / twice_max, r);
                let (m2, s2) = quantize(self.b.scale as f64 / twice_max, r);
                let denominator = ((1u32 << 20) as f32 * self.out.scale) as f64;
                let (mo, so) = quantize(twice_max / denominator, r);
                assert!(s1 <= 0 && s2 <= 0 && so <= 0);
                let xa = multiply((x as i64 - za) << 20, m1, s1, r);
                let yb = multiply((y as i64 - zb) << 20, m2, s2, r);
                let sum = if self.kind == Kind::Sub {
                    xa - yb
                } else {
                    xa + yb
                };
                multiply(sum, mo, so, r)
            }
            Kind::Mul => {
                let real = (self.a.scale * self.b.scale / self.out.scale) as f64;
                let (m, s) = quantize(real, r);
                multiply((x as i64 - za) * (y as i64 - zb), m, s, r)
            }
        };
        output(
            value,
            self.out.zero_point,
            activation_range(self.act, self.out.scale, self.out.zero_point),
        )
    }
}

/// Quantizations for `kind` in `rounding`: hand-picked ones (equal scales,
/// scales far apart, the zero points at the ends, MobileBert-like ranges,
/// the `mul_same_shape` quantization where a tie separates the roundings)
/// and seeded random ones with input ratios down to 2^-20 and output
/// scales from far below to far above the inputs'.
fn cases(kind: Kind, rounding: Rounding, random: usize) -> Vec<Case> {
    let mut rng = Rng::new(100 + kind as u64 * 2 + rounding as u64);
    let mut out = Vec::new();
    let fixed: &[(f32, f32, f32)] = match kind {
        Kind::Add | Kind::Sub => &[
            (0.1, 0.1, 0.1),
            (0.1, 0.1, 0.2),
            (0.02, 0.05, 0.06),
            (0.5, 0.0005, 0.5),
            (0.0005, 0.5, 0.3),
            (1.0 / 128.0, 1.0 / 256.0, 1.0 / 64.0),
            (3.0, 2.0, 0.01),
            (1e-4, 1e-4, 1e-5),
            (0.003_921_569, 0.003_904_807, 0.003_890_504),
            // Input 2's multiplier 1/2 - 2^-21: half of its values are
            // ties; the output scale at TFLite's floor keeps the sums' last
            // bit.
            (1.0, 1.0 - 1.0 / 1_048_576.0, 4.0 / 1_048_576.0),
        ],
        Kind::Mul => &[
            (0.007_834_965, 0.023_477_824, 0.028_886_924),
            (0.1, 0.1, 0.01),
            (0.003_921_569, 39.215_687, 39.215_687),
            (7.750_311e-6, 7.772_735e-6, 7.326_557e-9),
            (19.363_962, 0.003_9, 0.3),
            (0.5, 0.5, 1e-3),
            (1e-3, 1e-3, 1.0),
        ],
    };
    let zps = [
        (-128, 127, -128),
        (0, 0, 0),
        (127, -128, 5),
        (-7, 33, 127),
        (-1, 42, -7),
    ];
    for (i, &(sa, sb, so)) in fixed.iter().enumerate() {
        let (za, zb, zo) = zps[i % zps.len()];
        out.push(Case {
            kind,
            a: QuantParams::new(sa, za),
            b: QuantParams::new(sb, zb),
            out: QuantParams::new(so, zo),
            act: (i % 3) as u8,
            rounding,
        });
    }
    while out.len() < fixed.len() + random {
        let big = rng.log_uniform(1e-3, 10.0);
        // Equal scales (no divide on either side), within a factor 2 (a
        // halving divide: half of the values are ties), or down to 2^-20.
        let small = match rng.below(6) {
            0 => big,
            1 => big * (0.5 + 0.5 * rng.unit()) as f32,
            _ => big * 2f32.powf(-(rng.unit() * 20.0) as f32),
        };
        let (sa, sb) = if rng.below(2) == 0 {
            (big, small)
        } else {
            (small, big)
        };
        let so = match kind {
            Kind::Add | Kind::Sub => big * rng.log_uniform(1.0 / 4000.0, 4000.0),
            Kind::Mul => sa * sb * rng.log_uniform(1.0 / 16.0, 1e4),
        };
        let case = Case {
            kind,
            a: QuantParams::new(sa, rng.range(-128, 127) as i32),
            b: QuantParams::new(sb, rng.range(-128, 127) as i32),
            out: QuantParams::new(so, rng.range(-128, 127) as i32),
            act: if rng.below(3) == 0 {
                rng.below(3) as u8
            } else {
                0
            },
            rounding,
        };
        if case.try_prepare().is_ok() {
            out.push(case);
        }
    }
    out
}

const KINDS: [Kind; 3] = [Kind::Add, Kind::Sub, Kind::Mul];
const ROUNDINGS: [Rounding; 2] = [Rounding::Single, Rounding::Double];

/// Every (a, b) pair of int8 values, as two 65,536-long tensors.
fn all_pairs() -> (Vec<i8>, Vec<i8>) {
    let a = (0..65536).map(|i| (i >> 8) as u8 as i8).collect();
    let b = (0..65536).map(|i| i as u8 as i8).collect();
    (a, b)
}

fn assert_matches_oracle(case: &Case, a: &[i8], b: &[i8], got: &[i8], what: &str) {
    for (k, (&x, &y)) in a.iter().zip(b).enumerate() {
        assert_eq!(got[k], case.oracle(x, y), "{what}: a {x} b {y} {case:?}");
    }
}

/// The scalar backend is portable code, checked on the host; under qemu
/// the NEON test below checks it again beside NEON on every pair.
#[test]
#[cfg_attr(
    target_arch = "aarch64",
    ignore = "scalar code: checked on the host (and beside NEON below)"
)]
fn binary_i8_scalar_matches_oracle_every_input_pair_in_both_roundings() {
    let (a, b) = all_pairs();
    let mut got = vec![0i8; a.len()];
    for kind in KINDS {
        for rounding in ROUNDINGS {
            for case in cases(kind, rounding, 12) {
                case.prepare().run_slices(Backend::Scalar, &a, &b, &mut got);
                assert_matches_oracle(&case, &a, &b, &got, "scalar");
            }
        }
    }
}

#[test]
fn rounding_modes_differ_where_a_tie_decides_the_byte() {
    // mul_same_shape's quantization: (93 + 1) (-29 - 42) times the
    // multiplier is -42.4991 exactly, and its double-rounded high half is a
    // tie at -42.5 that rounds away from zero.
    let case = Case {
        kind: Kind::Mul,
        a: QuantParams::new(0.007_834_965, -1),
        b: QuantParams::new(0.023_477_824, 42),
        out: QuantParams::new(0.028_886_924, -7),
        act: 0,
        rounding: Rounding::Double,
    };
    let single = Case {
        rounding: Rounding::Single,
        ..case
    };
    assert_eq!(case.oracle(93, -29), -50);
    assert_eq!(single.oracle(93, -29), -49);
    let mut out = [0i8; 1];
    case.prepare()
        .run_slices(Backend::Scalar, &[93], &[-29], &mut out);
    assert_eq!(out[0], -50);
    single
        .prepare()
        .run_slices(Backend::Scalar, &[93], &[-29], &mut out);
    assert_eq!(out[0], -49);
}

/// SUB subtracts input 2's rounded value (`SubElementwise`); adding it
/// through a negated multiplier would round its ties the other way. The
/// two differ on some pair of some case, and the kernels give the former.
#[test]
fn sub_subtracts_the_rounded_value_rather_than_negating_the_multiplier() {
    let (a, b) = all_pairs();
    let mut got = vec![0i8; a.len()];
    let mut differing = 0;
    for rounding in ROUNDINGS {
        for case in cases(Kind::Sub, rounding, 12) {
            let negated = |x: i8, y: i8| -> i8 {
                let r = case.rounding;
                let twice_max = (2.0 * case.a.scale.max(case.b.scale)) as f64;
                let (m1, s1) = quantize(case.a.scale as f64 / twice_max, r);
                let (m2, s2) = quantize(case.b.scale as f64 / twice_max, r);
                let denominator = ((1u32 << 20) as f32 * case.out.scale) as f64;
                let (mo, so) = quantize(twice_max / denominator, r);
                let xa = multiply((x as i64 - case.a.zero_point as i64) << 20, m1, s1, r);
                let yb = multiply((y as i64 - case.b.zero_point as i64) << 20, -m2, s2, r);
                let range = activation_range(case.act, case.out.scale, case.out.zero_point);
                output(multiply(xa + yb, mo, so, r), case.out.zero_point, range)
            };
            for backend in Backend::available() {
                case.prepare().run_slices(backend, &a, &b, &mut got);
                for (k, (&x, &y)) in a.iter().zip(&b).enumerate() {
                    if negated(x, y) != case.oracle(x, y) {
                        differing += 1;
                        assert_eq!(got[k], case.oracle(x, y), "{backend:?} {x} {y} {case:?}");
                    }
                }
            }
        }
    }
    assert!(differing > 0, "no pair tells the two SUBs apart");
}

#[test]
fn sub_is_add_with_input_2_negated_in_real_terms() {
    // 0.5 - 0.25 and 0.5 + (-0.25): with scale 1/64 and zero points 0 both
    // are exact, 16 steps.
    let q = QuantParams::new(1.0 / 64.0, 0);
    for rounding in ROUNDINGS {
        let sub = Sub::new(q, q, q, FusedActivation::None, rounding).unwrap();
        let add = Add::new(q, q, q, FusedActivation::None, rounding).unwrap();
        let mut out = [0i8; 2];
        sub.run(&[32, -32], &[16, 16], &mut out).unwrap();
        assert_eq!(out, [16, -48]);
        add.run(&[32, -32], &[-16, -16], &mut out).unwrap();
        assert_eq!(out, [16, -48]);
    }
}

#[test]
fn broadcast_operands_equal_the_expanded_slices() {
    let mut rng = Rng::new(7);
    let n = 300;
    let x = rng.vec_i8(n);
    let backends: Vec<Backend> = Backend::available().collect();
    for kind in KINDS {
        for rounding in ROUNDINGS {
            for case in cases(kind, rounding, 2) {
                let op = case.prepare();
                for v in [-128i8, -1, 0, 1, 77, 127] {
                    let splat = vec![v; n];
                    for &backend in &backends {
                        let mut want = vec![0i8; n];
                        let mut got = vec![0x33; n];
                        op.run_slices(Backend::Scalar, &x, &splat, &mut want);
                        op.run(backend, Operand::Slice(&x), Operand::Scalar(v), &mut got)
                            .unwrap();
                        assert_eq!(got, want, "b = {v} {backend:?} {case:?}");
                        op.run_slices(Backend::Scalar, &splat, &x, &mut want);
                        op.run(backend, Operand::Scalar(v), Operand::Slice(&x), &mut got)
                            .unwrap();
                        assert_eq!(got, want, "a = {v} {backend:?} {case:?}");
                        op.run(backend, Operand::Scalar(v), Operand::Scalar(3), &mut got)
                            .unwrap();
                        assert!(got.iter().all(|&o| o == case.oracle(v, 3)));
                    }
                }
                for &backend in &backends {
                    // Rows of 1, 20 and 100 repeated down the output, on
                    // either side, against the expanded rows.
                    for row_len in [1, 20, 100] {
                        let row = &x[7..7 + row_len];
                        let expanded: Vec<i8> = row.iter().copied().cycle().take(n).collect();
                        let mut want = vec![0i8; n];
                        let mut got = vec![0x33; n];
                        op.run_slices(Backend::Scalar, &x, &expanded, &mut want);
                        op.run(backend, Operand::Slice(&x), Operand::Row(row), &mut got)
                            .unwrap();
                        assert_eq!(got, want, "b row {row_len} {backend:?} {case:?}");
                        op.run_slices(Backend::Scalar, &expanded, &x, &mut want);
                        op.run(backend, Operand::Row(row), Operand::Slice(&x), &mut got)
                            .unwrap();
                        assert_eq!(got, want, "a row {row_len} {backend:?} {case:?}");
                        op.run(backend, Operand::Row(row), Operand::Scalar(-9), &mut got)
                            .unwrap();
                        for (k, &o) in got.iter().enumerate() {
                            assert_eq!(o, case.oracle(row[k % row_len], -9));
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn binary_errors() {
    let q = QuantParams::new(0.1, 0);
    let none = FusedActivation::None;
    for kind in KINDS {
        let case = |a, b, out| Case {
            kind,
            a,
            b,
            out,
            act: 0,
            rounding: Rounding::Single,
        };
        for bad in [0.0, -0.5, f32::NAN, f32::INFINITY, f32::NEG_INFINITY] {
            let b = QuantParams::new(bad, 0);
            for (c, what) in [
                (case(b, q, q), "input 1 scale"),
                (case(q, b, q), "input 2 scale"),
                (case(q, q, b), "output scale"),
            ] {
                match c.try_prepare() {
                    Err(Error::Scale { what: w, .. }) => assert_eq!(w, what),
                    Err(e) => panic!("{kind:?} {what} {bad}: {e}"),
                    Ok(_) => panic!("{kind:?} {what} {bad}: accepted"),
                }
            }
        }
        for zp in [-129, 128, i32::MIN, i32::MAX] {
            let b = QuantParams::new(0.1, zp);
            for c in [case(b, q, q), case(q, b, q), case(q, q, b)] {
                assert!(matches!(c.try_prepare(), Err(Error::ZeroPoint { .. })));
            }
        }
        let op = case(q, q, q).prepare();
        let mut out = [0i8; 4];
        for (a, b) in [
            (Operand::Slice(&[0; 4]), Operand::Slice(&[0; 3])),
            (Operand::Slice(&[0; 5]), Operand::Scalar(0)),
            (Operand::Scalar(0), Operand::Slice(&[0; 3])),
        ] {
            for backend in Backend::available() {
                assert!(matches!(
                    op.run(backend, a, b, &mut out),
                    Err(Error::LengthMismatch { output: 4, .. })
                ));
            }
        }
        assert!(op
            .run(
                Backend::Scalar,
                Operand::Slice(&[]),
                Operand::Slice(&[]),
                &mut []
            )
            .is_ok());
    }
    // ADD and SUB: TFLite needs 2 max(scale) / (2^20 scale_out) < 1.
    let tiny = QuantParams::new(0.2 / (1u32 << 20) as f32, 0);
    for rounding in ROUNDINGS {
        assert!(matches!(
            Add::new(q, q, tiny, none, rounding),
            Err(Error::Unsupported { op: "add", .. })
        ));
        assert!(matches!(
            Sub::new(q, q, tiny, none, rounding),
            Err(Error::Unsupported { op: "sub", .. })
        ));
        // MUL: a multiplier so large that products overflow int32, also
        // one that is not finite in f32 (computed in f64 then, and named).
        let huge = QuantParams::new(1e-9, 0);
        assert!(matches!(
            Mul::new(q, q, huge, none, rounding),
            Err(Error::Unsupported { op: "mul", .. })
        ));
        let big = QuantParams::new(1e30, 0);
        let e = Mul::new(big, big, q, none, rounding).unwrap_err();
        assert!(
            matches!(e, Error::Unsupported { op: "mul", .. }) && e.to_string().contains("scale"),
            "{e}"
        );
        // The widest multiplier that still fits is accepted and exact.
        let fits = Case {
            kind: Kind::Mul,
            a: QuantParams::new(1.0, 0),
            b: QuantParams::new(1.0, 0),
            out: QuantParams::new(1.0 / 8192.0, 0),
            act: 0,
            rounding,
        };
        let (a, b) = all_pairs();
        let mut got = vec![0i8; a.len()];
        for backend in Backend::available() {
            fits.prepare().run_slices(backend, &a, &b, &mut got);
            assert_matches_oracle(&fits, &a, &b, &got, "widest multiplier");
        }
    }
}

#[cfg(target_arch = "aarch64")]
mod neon {
    use super::*;

    #[test]
    fn binary_i8_neon_equals_scalar_and_oracle_every_pair_both_roundings() {
        assert!(Backend::Neon.is_available(), "NEON kernels not built in");
        let (a, b) = all_pairs();
        let mut want = vec![0i8; a.len()];
        let mut got = vec![0x5a; a.len()];
        for kind in KINDS {
            for rounding in ROUNDINGS {
                for case in cases(kind, rounding, 24) {
                    let op = case.prepare();
                    op.run_slices(Backend::Scalar, &a, &b, &mut want);
                    op.run_slices(Backend::Neon, &a, &b, &mut got);
                    assert_eq!(got, want, "{case:?}");
                    assert_matches_oracle(&case, &a, &b, &got, "neon");
                    // Every length 0..=50 at several offsets (tails,
                    // unaligned starts).
                    for len in 0..=50 {
                        for off in [0, 1, 7, 16, 301] {
                            let x = &a[off * 97..off * 97 + len];
                            let y = &b[off * 89..off * 89 + len];
                            let mut w = vec![0x11; len];
                            let mut g = vec![0x22; len];
                            op.run_slices(Backend::Scalar, x, y, &mut w);
                            op.run_slices(Backend::Neon, x, y, &mut g);
                            assert_eq!(g, w, "len {len} off {off} {case:?}");
                        }
                    }
                }
            }
        }
    }

    /// The broadcast forms on every input value: one operand all 256
    /// values, the other each of the 256 values as a scalar.
    #[test]
    fn binary_i8_neon_scalar_operand_matches_oracle_every_pair() {
        let values: Vec<i8> = (0..=255u8).map(|v| v as i8).collect();
        let mut got = vec![0i8; 256];
        for kind in KINDS {
            for rounding in ROUNDINGS {
                for case in cases(kind, rounding, 6) {
                    let op = case.prepare();
                    for &v in &values {
                        op.run(
                            Backend::Neon,
                            Operand::Slice(&values),
                            Operand::Scalar(v),
                            &mut got,
                        )
                        .unwrap();
                        for (k, &x) in values.iter().enumerate() {
                            assert_eq!(got[k], case.oracle(x, v), "a {x} b = {v} {case:?}");
                        }
                        op.run(
                            Backend::Neon,
                            Operand::Scalar(v),
                            Operand::Slice(&values),
                            &mut got,
                        )
                        .unwrap();
                        for (k, &y) in values.iter().enumerate() {
                            assert_eq!(got[k], case.oracle(v, y), "a = {v} b {y} {case:?}");
                        }
                    }
                }
            }
        }
    }
}
