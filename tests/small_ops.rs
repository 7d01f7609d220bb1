//! MAXIMUM / MINIMUM, PRELU, ARG_MAX / ARG_MIN and CONCATENATION's uint8
//! rescaling against naive formulas written here, on every backend (the
//! host runs scalar; under qemu NEON too, which must give the same bytes).

use qneon::{
    ArgKind, ArgMinMax, Backend, BroadcastOperand, ConcatRescale, MinMax, MinMaxKind, Prelu,
    QuantElem, QuantParams, RescaleFloat,
};

/// A deterministic stream of values (xorshift).
struct Values(u64);

impl Values {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn elem<T: QuantElem>(&mut self) -> T {
        let span = (T::MAX - T::MIN + 1) as u64;
        T::from_i32(T::MIN + (self.next() % span) as i32)
    }

    fn vec<T: QuantElem>(&mut self, n: usize) -> Vec<T> {
        (0..n).map(|_| self.elem()).collect()
    }
}

fn naive_pick<T: QuantElem>(kind: MinMaxKind, a: T, b: T) -> T {
    let (x, y) = (a.to_i32(), b.to_i32());
    T::from_i32(match kind {
        MinMaxKind::Maximum => x.max(y),
        MinMaxKind::Minimum => x.min(y),
    })
}

/// Every operand form, every length up to past three vectors, both kinds:
/// the output equals the naive formula on every backend, and no element
/// outside the output is written (outputs pre-poisoned, then sliced).
fn minmax_forms<T: QuantElem>(seed: u64) {
    let mut values = Values(seed);
    for kind in [MinMaxKind::Maximum, MinMaxKind::Minimum] {
        let op = MinMax::<T>::new(kind);
        for n in 0..=3 * 16 + 1 {
            let (a, b) = (values.vec::<T>(n), values.vec::<T>(n));
            let v: T = values.elem();
            let row_len = if n % 3 == 0 && n > 0 { 3 } else { n.max(1) };
            let row: Vec<T> = values.vec(row_len);
            let forms: Vec<(BroadcastOperand<'_, T>, BroadcastOperand<'_, T>, Vec<T>)> = vec![
                (
                    BroadcastOperand::Slice(&a),
                    BroadcastOperand::Slice(&b),
                    (0..n).map(|i| naive_pick(kind, a[i], b[i])).collect(),
                ),
                (
                    BroadcastOperand::Slice(&a),
                    BroadcastOperand::Scalar(v),
                    (0..n).map(|i| naive_pick(kind, a[i], v)).collect(),
                ),
                (
                    BroadcastOperand::Scalar(v),
                    BroadcastOperand::Slice(&b),
                    (0..n).map(|i| naive_pick(kind, v, b[i])).collect(),
                ),
                (
                    BroadcastOperand::Slice(&a),
                    BroadcastOperand::Row(&row),
                    (0..n)
                        .map(|i| naive_pick(kind, a[i], row[i % row_len]))
                        .collect(),
                ),
            ];
            for (x, y, expected) in forms {
                if n % row_len != 0 {
                    continue;
                }
                for backend in Backend::available() {
                    let mut out = vec![T::from_i32(T::MAX); n + 2];
                    op.run_with(backend, x, y, &mut out[1..n + 1]).unwrap();
                    assert_eq!(
                        &out[1..n + 1],
                        &expected[..],
                        "{kind:?} {n} {}",
                        backend.name()
                    );
                    assert_eq!(out[0].to_i32(), T::MAX);
                    assert_eq!(out[n + 1].to_i32(), T::MAX);
                }
            }
        }
    }
}

#[test]
fn minmax_every_form_and_length_equals_the_naive_formula() {
    minmax_forms::<i8>(1);
    minmax_forms::<u8>(2);
    minmax_forms::<i16>(3);
}

#[test]
fn minmax_8bit_all_pairs_equal_the_naive_formula() {
    fn all<T: QuantElem>() {
        let every: Vec<T> = (T::MIN..=T::MAX).map(T::from_i32).collect();
        for kind in [MinMaxKind::Maximum, MinMaxKind::Minimum] {
            let op = MinMax::<T>::new(kind);
            for &b in &every {
                let expected: Vec<T> = every.iter().map(|&a| naive_pick(kind, a, b)).collect();
                let column = vec![b; every.len()];
                for backend in Backend::available() {
                    let mut out = vec![T::default(); every.len()];
                    op.run_with(
                        backend,
                        BroadcastOperand::Slice(&every),
                        BroadcastOperand::Scalar(b),
                        &mut out,
                    )
                    .unwrap();
                    assert_eq!(out, expected);
                    op.run_with(
                        backend,
                        BroadcastOperand::Slice(&column),
                        BroadcastOperand::Slice(&every),
                        &mut out,
                    )
                    .unwrap();
                    assert_eq!(out, expected);
                }
            }
        }
    }
    all::<i8>();
    all::<u8>();
}

#[test]
fn minmax_refuses_operands_that_do_not_fit_the_run() {
    let op = MinMax::<i8>::new(MinMaxKind::Maximum);
    let mut out = [0i8; 6];
    let short = op.run(
        BroadcastOperand::Slice(&[1; 5]),
        BroadcastOperand::Scalar(0),
        &mut out,
    );
    assert!(
        matches!(short, Err(qneon::Error::LengthMismatch { .. })),
        "{short:?}"
    );
    let row = op.run(
        BroadcastOperand::Slice(&[1; 6]),
        BroadcastOperand::Row(&[1; 4]),
        &mut out,
    );
    assert!(
        matches!(row, Err(qneon::Error::RowLength { .. })),
        "{row:?}"
    );
    let empty = op.run(
        BroadcastOperand::Slice(&[1; 6]),
        BroadcastOperand::Row(&[]),
        &mut out,
    );
    assert!(empty.is_err());
}

/// TFLite's `QuantizeMultiplier` of `real` (frexp, Q0.31 mantissa rounded
/// half away from zero, a mantissa of 2^31 halved), written out here.
fn naive_quantize(real: f64) -> (i64, i32) {
    if real == 0.0 {
        return (0, 0);
    }
    let mut shift = 0;
    let mut q = real;
    while q >= 1.0 {
        q /= 2.0;
        shift += 1;
    }
    while q < 0.5 {
        q *= 2.0;
        shift -= 1;
    }
    let mut m = (q * (1u64 << 31) as f64).round() as i64;
    if m == 1 << 31 {
        m /= 2;
        shift += 1;
    }
    (m, shift)
}

/// gemmlowp's double rounding in `i64`: `x * 2^left`, the doubling high
/// product rounded half up (saturated at the one overflow), then the
/// divide by `2^right` rounded half away from zero.
fn naive_multiply(x: i32, m: i64, shift: i32) -> i32 {
    let left = shift.max(0);
    let right = (-shift).max(0);
    let x = (x as i64 * (1i64 << left)) as i32 as i64;
    let high = if x == i32::MIN as i64 && m == i32::MIN as i64 {
        i32::MAX as i64
    } else {
        let p = x * m;
        let nudge = if p >= 0 { 1i64 << 30 } else { 1 - (1i64 << 30) };
        (p + nudge) / (1i64 << 31)
    };
    if right == 0 {
        return high as i32;
    }
    let d = 1i64 << right;
    let q = high.abs() / d;
    let r = high.abs() % d;
    let rounded = if 2 * r >= d { q + 1 } else { q };
    (if high < 0 { -rounded } else { rounded }) as i32
}

fn naive_prelu<T: QuantElem>(
    x: i32,
    a: i32,
    qi: QuantParams,
    qa: QuantParams,
    qo: QuantParams,
) -> T {
    let (m1, s1) = naive_quantize((qi.scale / qo.scale) as f64);
    let (m2, s2) = naive_quantize((qi.scale * qa.scale / qo.scale) as f64);
    let v = x - qi.zero_point;
    let y = if v >= 0 {
        naive_multiply(v, m1, s1)
    } else {
        naive_multiply(v * (a - qa.zero_point), m2, s2)
    };
    T::from_i32((y + qo.zero_point).clamp(T::MIN, T::MAX))
}

/// Every (input, alpha) pair of the 8-bit types over a grid of
/// quantizations (extreme zero points, identity multipliers above and below
/// one): every backend equals the naive formula.
fn prelu_all_pairs<T: QuantElem>(grid: &[(QuantParams, QuantParams, QuantParams)]) {
    let every: Vec<T> = (T::MIN..=T::MAX).map(T::from_i32).collect();
    for &(qi, qa, qo) in grid {
        let prelu = Prelu::<T>::new(qi, qa, qo).unwrap();
        for &a in &every {
            let expected: Vec<T> = every
                .iter()
                .map(|&x| naive_prelu::<T>(x.to_i32(), a.to_i32(), qi, qa, qo))
                .collect();
            let alphas = vec![a; every.len()];
            for backend in Backend::available() {
                let mut out = vec![T::default(); every.len()];
                prelu
                    .run_with(
                        backend,
                        BroadcastOperand::Slice(&every),
                        BroadcastOperand::Scalar(a),
                        &mut out,
                    )
                    .unwrap();
                assert_eq!(
                    out,
                    expected,
                    "{qi:?} {qa:?} {qo:?} alpha {a:?} {}",
                    backend.name()
                );
                prelu
                    .run_with(
                        backend,
                        BroadcastOperand::Slice(&every),
                        BroadcastOperand::Slice(&alphas),
                        &mut out,
                    )
                    .unwrap();
                assert_eq!(
                    out,
                    expected,
                    "{qi:?} {qa:?} {qo:?} alpha {a:?} {}",
                    backend.name()
                );
            }
        }
    }
}

#[test]
fn prelu_8bit_all_pairs_equal_the_naive_formula() {
    let q = QuantParams::new;
    prelu_all_pairs::<i8>(&[
        (q(0.03137, -1), q(0.0094, 3), q(0.039, 24)),
        (q(0.05, -128), q(0.002, 127), q(0.01, 127)),
        (q(0.01, 127), q(0.2, -128), q(0.05, -128)),
        (q(0.02, 0), q(0.02, 0), q(0.02, 0)),
    ]);
    prelu_all_pairs::<u8>(&[
        (q(0.03137, 128), q(0.0094, 131), q(0.0395, 154)),
        (q(0.05, 0), q(0.002, 255), q(0.01, 255)),
    ]);
}

#[test]
fn prelu_rows_and_lengths_equal_element_by_element() {
    let q = QuantParams::new;
    let prelu = Prelu::<i8>::new(q(0.03, 5), q(0.01, -7), q(0.04, 11)).unwrap();
    let mut values = Values(7);
    for channels in [1, 3, 13, 16, 19, 33] {
        let alpha: Vec<i8> = values.vec(channels);
        for pixels in [1, 2, 5] {
            let x: Vec<i8> = values.vec(channels * pixels);
            let expected: Vec<i8> = (0..x.len())
                .map(|i| {
                    naive_prelu::<i8>(
                        x[i] as i32,
                        alpha[i % channels] as i32,
                        q(0.03, 5),
                        q(0.01, -7),
                        q(0.04, 11),
                    )
                })
                .collect();
            for backend in Backend::available() {
                let mut out = vec![0i8; x.len()];
                prelu
                    .run_with(
                        backend,
                        BroadcastOperand::Slice(&x),
                        BroadcastOperand::Row(&alpha),
                        &mut out,
                    )
                    .unwrap();
                assert_eq!(out, expected, "{channels} x {pixels} {}", backend.name());
            }
        }
    }
}

#[test]
fn prelu_refuses_int16_and_bad_quantization() {
    let q = QuantParams::new;
    assert!(matches!(
        Prelu::<i16>::new(q(0.1, 0), q(0.1, 0), q(0.1, 0)),
        Err(qneon::Error::Unsupported { .. })
    ));
    assert!(Prelu::<i8>::new(q(0.1, 0), q(f32::NAN, 0), q(0.1, 0)).is_err());
    assert!(Prelu::<i8>::new(q(0.1, 0), q(0.1, 0), q(0.0, 0)).is_err());
    assert!(Prelu::<u8>::new(q(0.1, -1), q(0.1, 0), q(0.1, 0)).is_err());
    // A ratio of 2^31 needs a left shift TFLite's int32 cannot take.
    assert!(matches!(
        Prelu::<i8>::new(q(2.0e9, 0), q(0.1, 0), q(0.5, 0)),
        Err(qneon::Error::OutOfDomain { .. })
    ));
    assert!(Prelu::<i8>::new(q(1.0e8, 0), q(0.1, 0), q(0.5, 0)).is_ok());
}

fn naive_arg(kind: ArgKind, x: &[i8], outer: usize, axis: usize, inner: usize) -> Vec<i64> {
    let mut out = Vec::new();
    for o in 0..outer {
        for i in 0..inner {
            let column: Vec<i8> = (0..axis).map(|k| x[(o * axis + k) * inner + i]).collect();
            // The first index of the extreme: scan for one no later
            // element beats.
            let index = (0..axis)
                .find(|&k| {
                    column.iter().all(|&v| match kind {
                        ArgKind::Max => v <= column[k],
                        ArgKind::Min => v >= column[k],
                    })
                })
                .unwrap();
            out.push(index as i64);
        }
    }
    out
}

#[test]
fn arg_min_max_takes_the_first_extreme_on_ties() {
    let mut values = Values(11);
    for (outer, axis, inner) in [(1, 1, 1), (2, 5, 3), (3, 37, 1), (1, 4, 7), (4, 9, 2)] {
        // Values in -3..3: ties everywhere.
        let x: Vec<i8> = (0..outer * axis * inner)
            .map(|_| (values.next() % 7) as i8 - 3)
            .collect();
        for kind in [ArgKind::Max, ArgKind::Min] {
            let op = ArgMinMax::new(kind, outer, axis, inner).unwrap();
            let expected = naive_arg(kind, &x, outer, axis, inner);
            let mut out64 = vec![-1i64; outer * inner];
            op.run(&x, &mut out64).unwrap();
            assert_eq!(out64, expected, "{kind:?} {outer} {axis} {inner}");
            let mut out32 = vec![-1i32; outer * inner];
            op.run(&x, &mut out32).unwrap();
            assert_eq!(
                out32.iter().map(|&v| v as i64).collect::<Vec<_>>(),
                expected
            );
        }
    }
    // Floats, a NaN first stays (no comparison with it is true).
    let op = ArgMinMax::new(ArgKind::Max, 1, 4, 1).unwrap();
    let mut out = [0i32];
    op.run(&[1.0f32, 3.0, 3.0, -1.0], &mut out).unwrap();
    assert_eq!(out, [1]);
    op.run(&[f32::NAN, 3.0, 4.0, -1.0], &mut out).unwrap();
    assert_eq!(out, [0]);
    assert!(ArgMinMax::new(ArgKind::Max, 2, 0, 3).is_err());
    assert!(op.run(&[1u8; 3], &mut out).is_err());
    assert!(ArgMinMax::new(ArgKind::Min, usize::MAX, 2, 2).is_err());
}

/// TFLite's `ConcatenationWithScaling` per element, in `f32` with `std`'s
/// `roundf` and `mul_add` (the fused build).
fn naive_rescale(x: u8, qi: QuantParams, qo: QuantParams, fused: bool) -> u8 {
    let scale = qi.scale * (1.0 / qo.scale);
    let bias = (-qi.zero_point) as f32 * scale;
    let v = if fused {
        (x as f32).mul_add(scale, bias)
    } else {
        x as f32 * scale + bias
    };
    (v.round() as i32 + qo.zero_point).clamp(0, 255) as u8
}

#[test]
fn concat_rescale_tables_equal_tflite_float_formula() {
    let q = QuantParams::new;
    let mut values = Values(5);
    let mut grid = vec![
        (q(0.021, 101), q(0.015676826, 128)),
        (q(0.0093, 250), q(0.015676826, 128)),
        (q(0.0117, 0), q(0.015668232, 127)),
        (q(0.033, 128), q(0.015668232, 127)),
        // Byte 133 lands on -17.5 rounded twice, -17.499987 fused.
        (q(0.08474978, 136), q(0.014528548, 191)),
        (q(1.0, 0), q(2.0, 1)),
        (q(0.5, 3), q(1.0, 0)),
    ];
    for _ in 0..200 {
        let scale = |v: u64| 1e-3 + (v % 100_000) as f32 * 1e-6;
        grid.push((
            q(scale(values.next()), (values.next() % 256) as i32),
            q(scale(values.next()), (values.next() % 256) as i32),
        ));
    }
    let mut fused_differs = false;
    for (qi, qo) in grid {
        for (float, fused) in [(RescaleFloat::Separate, false), (RescaleFloat::Fused, true)] {
            let rescale = ConcatRescale::new(qi, qo, float).unwrap();
            let input: Vec<u8> = (0..=255).collect();
            let mut out = vec![0u8; 256];
            rescale.run(&input, &mut out).unwrap();
            let expected: Vec<u8> = input
                .iter()
                .map(|&x| naive_rescale(x, qi, qo, fused))
                .collect();
            assert_eq!(out, expected, "{qi:?} -> {qo:?} {float:?}");
        }
        fused_differs |=
            (0..=255u8).any(|x| naive_rescale(x, qi, qo, true) != naive_rescale(x, qi, qo, false));
    }
    // The grid has ties where one rounding and two differ, so the test
    // tells the two evaluations apart.
    assert!(fused_differs);
    assert!(ConcatRescale::new(q(0.0, 0), q(1.0, 0), RescaleFloat::Separate).is_err());
    assert!(ConcatRescale::new(q(1.0, 256), q(1.0, 0), RescaleFloat::Separate).is_err());
}
