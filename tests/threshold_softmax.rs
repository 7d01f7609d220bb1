//! `ThresholdedSoftmax` (int8/uint8, every method) and
//! `ThresholdedSoftmaxF32` against their definition: `Softmax::run_with` /
//! `f32::softmax_with` on the same backend, then, per row, the outputs at or
//! above the threshold (value `(q - zp) * scale` in `f64`) and within the
//! top k (stable: larger value first, then lower index), in index order.
//! Rows of 1..=70 at offsets and of 32,768; uniform, clustered, constant
//! and extreme rows; thresholds at and around every output value; k of 0,
//! 1, a few, the row length and beyond; errors.

use qneon::{
    f32 as qf, Backend, Error, Method, QuantElem, QuantParams, RowHit, Softmax, ThresholdedSoftmax,
    ThresholdedSoftmaxF32,
};

const METHODS: [Method; 3] = [Method::FixedPoint, Method::Lut, Method::DequantF32];

/// The backends checked: scalar on the host, NEON under qemu (the scalar
/// backend is the same portable code on both machines; running it again
/// under emulation only costs CI time).
fn backends() -> Vec<Backend> {
    #[cfg(target_arch = "aarch64")]
    assert!(Backend::Neon.is_available(), "NEON must run on aarch64");
    vec![Backend::best()]
}

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// The kept `(index, value)` of one row of outputs: pass, then top-k.
fn keep_row<V: Copy + PartialOrd>(
    values: &[V],
    passes: impl Fn(V) -> bool,
    top_k: Option<usize>,
) -> Vec<(usize, V)> {
    let mut kept: Vec<(usize, V)> = values
        .iter()
        .copied()
        .enumerate()
        .filter(|&(_, v)| passes(v))
        .collect();
    if let Some(k) = top_k {
        // Stable: sort by value, descending; equal values keep index order.
        kept.sort_by(|a, b| b.1.partial_cmp(&a.1).unwrap());
        kept.truncate(k);
        kept.sort_by_key(|&(i, _)| i);
    }
    kept
}

/// Input rows of `row_len` for a case: `kind` picks the distribution.
fn rows<T: QuantElem + TryFrom<i32>>(rng: &mut Rng, n: usize, row_len: usize, kind: u32) -> Vec<T> {
    let span = (T::MAX - T::MIN + 1) as u64;
    let t = |v: i32| T::try_from(v.clamp(T::MIN, T::MAX)).ok().unwrap();
    let mut x: Vec<T> = Vec::with_capacity(n);
    for i in 0..n {
        let v = match kind {
            // Uniform over the type.
            0 => T::MIN + rng.below(span) as i32,
            // A few high values over a low background (a few pass).
            1 => {
                if rng.below(row_len as u64 + 10) < 3 {
                    T::MAX - rng.below(20) as i32
                } else {
                    T::MIN + rng.below(60) as i32
                }
            }
            // Clustered near the top (ties and near-ties).
            2 => T::MAX - rng.below(6) as i32,
            // Extremes only.
            3 => {
                if rng.below(2) == 0 {
                    T::MIN
                } else {
                    T::MAX
                }
            }
            // Constant rows.
            _ => T::MIN + ((i / row_len) as i32 * 37) % span as i32,
        };
        x.push(t(v));
    }
    x
}

/// Thresholds: 0, 1 and every output value of `y` (some of them) with its
/// f32 neighbours.
fn thresholds<T: QuantElem>(y: &[T], out: QuantParams, every: usize) -> Vec<f32> {
    let mut codes: Vec<i32> = y.iter().map(|q| q.to_i32()).collect();
    codes.sort_unstable();
    codes.dedup();
    let mut t = vec![0.0f32, 1.0, 0.5, 0.01];
    for (k, q) in codes.iter().enumerate() {
        if k % every != 0 && k + 1 != codes.len() {
            continue;
        }
        let v = ((q - out.zero_point) as f64 * out.scale as f64) as f32;
        for w in [
            v,
            f32::from_bits(v.to_bits() + 1),
            f32::from_bits(v.to_bits().saturating_sub(1)),
        ] {
            if (0.0..=1.0).contains(&w) {
                t.push(w);
            }
        }
    }
    t
}

/// One quantized case: every backend, thresholds from the outputs, top-k
/// from the list.
fn check_quant<T: QuantElem + TryFrom<i32>>(
    method: Method,
    scale: f32,
    zp: i32,
    x: &[T],
    row_len: usize,
    every: usize,
    ks: &[Option<usize>],
) -> usize {
    let out = Softmax::<T>::output_quantization();
    let q_in = QuantParams::new(scale, zp);
    let op = Softmax::<T>::new(q_in, 1.0, out, method).unwrap();
    let mut y = vec![T::default(); x.len()];
    let mut cases = 0;
    for b in backends() {
        op.run_with(b, x, &mut y, row_len).unwrap();
        let mut ts: Vec<Option<f32>> = thresholds(&y, out, every).into_iter().map(Some).collect();
        ts.push(None);
        for &t in &ts {
            for &k in ks {
                if t.is_none() && k.is_none() && every > 1 {
                    continue;
                }
                let th = ThresholdedSoftmax::<T>::new(q_in, 1.0, out, method, t, k).unwrap();
                let passes = |q: T| {
                    t.is_none_or(|t| {
                        (q.to_i32() - out.zero_point) as f64 * out.scale as f64 >= t as f64
                    })
                };
                let want: Vec<RowHit<T>> = y
                    .chunks(row_len)
                    .enumerate()
                    .flat_map(|(r, row)| {
                        keep_row(row, passes, k)
                            .into_iter()
                            .map(move |(i, value)| RowHit {
                                row: r as u32,
                                index: i as u32,
                                value,
                            })
                    })
                    .collect();
                let mut hits = vec![
                    RowHit {
                        row: u32::MAX,
                        index: 0,
                        value: T::default()
                    };
                    want.len() + 1
                ];
                let n = th.run_with(b, x, row_len, &mut hits).unwrap_or_else(|e| {
                    panic!("{method} {b:?} scale {scale} len {row_len} t {t:?} k {k:?}: {e}")
                });
                assert_eq!(
                    &hits[..n],
                    &want[..],
                    "{method} {b:?} scale {scale} zp {zp} len {row_len} t {t:?} k {k:?}"
                );
                assert_eq!(hits[n].row, u32::MAX);
                cases += 1;
            }
        }
    }
    cases
}

fn rows_1_to_70<T: QuantElem + TryFrom<i32>>(zp: i32) {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut cases = 0;
    for method in METHODS {
        for scale in [0.01f32, 0.05, 0.2, 1.0, 30.0] {
            for row_len in 1..=70 {
                let kind = (row_len % 5) as u32;
                let n_rows = 1 + row_len % 3;
                let offset = row_len % 16;
                let buf = rows::<T>(&mut rng, n_rows * row_len + offset, row_len, kind);
                let x = &buf[offset..];
                let ks = [
                    None,
                    Some(0),
                    Some(1),
                    Some(3),
                    Some(row_len),
                    Some(row_len + 5),
                ];
                cases += check_quant(method, scale, zp, x, row_len, 7, &ks);
            }
        }
    }
    assert!(cases > 1000, "{cases}");
}

#[test]
fn softmax_i8_thresholded_rows_1_to_70() {
    rows_1_to_70::<i8>(3);
}

#[test]
fn softmax_u8_thresholded_rows_1_to_70() {
    rows_1_to_70::<u8>(128);
}

/// Every output value as a threshold, on rows that reach many of them.
#[test]
fn softmax_thresholded_every_output_value() {
    let mut rng = Rng(0x5555_0123_4567_89ab);
    for method in METHODS {
        for scale in [0.02f32, 0.1, 0.6] {
            for kind in [0, 1, 2] {
                let x = rows::<i8>(&mut rng, 3 * 48, 48, kind);
                check_quant(method, scale, 0, &x, 48, 1, &[None, Some(2)]);
                let x = rows::<u8>(&mut rng, 2 * 33, 33, kind);
                check_quant(method, scale, 100, &x, 33, 1, &[None]);
            }
        }
    }
}

/// Rows of 32,768 (the NEON kernels' long-row paths) and 1536 x 384.
#[test]
fn softmax_thresholded_long_rows() {
    let mut rng = Rng(0xdead_beef_0bad_cafe);
    for method in METHODS {
        for scale in [0.01f32, 0.1] {
            for kind in [0, 1] {
                let x = rows::<i8>(&mut rng, 32_768, 32_768, kind);
                check_quant(method, scale, 0, &x, 32_768, 40, &[None, Some(5)]);
                let x = rows::<u8>(&mut rng, 2 * 32_768, 32_768, kind);
                check_quant(method, scale, 0, &x, 32_768, 40, &[None]);
            }
        }
        let x = rows::<i8>(&mut rng, 64 * 384, 384, 1);
        check_quant(method, 0.1, 0, &x, 384, 10, &[None, Some(3)]);
    }
}

#[test]
fn softmax_thresholded_errors_and_capacity() {
    let out = Softmax::<i8>::output_quantization();
    let q_in = QuantParams::new(0.1, 0);
    for t in [f32::NAN, -0.5, 1.5, f32::INFINITY] {
        match ThresholdedSoftmax::<i8>::new(q_in, 1.0, out, Method::Lut, Some(t), None) {
            Err(Error::OutOfDomain {
                what: "threshold", ..
            }) => {}
            other => panic!("{t}: {other:?}"),
        }
        assert!(ThresholdedSoftmaxF32::new(Some(t), None).is_err());
    }
    // int16 and LutFixedPoint: not offered.
    let out16 = Softmax::<i16>::output_quantization();
    assert!(matches!(
        ThresholdedSoftmax::<i16>::new(
            QuantParams::new(0.001, 0),
            1.0,
            out16,
            Method::FixedPoint,
            Some(0.5),
            None
        ),
        Err(Error::Unsupported { .. })
    ));
    assert!(
        ThresholdedSoftmax::<i8>::new(q_in, 1.0, out, Method::LutFixedPoint, None, None).is_err()
    );
    assert_eq!(
        ThresholdedSoftmax::<i8>::new(q_in, -1.0, out, Method::Lut, None, None).unwrap_err(),
        Softmax::<i8>::new(q_in, -1.0, out, Method::Lut).unwrap_err()
    );
    let th =
        ThresholdedSoftmax::<i8>::new(q_in, 1.0, out, Method::Lut, Some(0.0), Some(3)).unwrap();
    let x = [0i8; 40];
    assert!(matches!(
        th.run(&x, 0, &mut []),
        Err(Error::RowLength { .. })
    ));
    assert!(matches!(
        th.run(&x, 3, &mut []),
        Err(Error::RowLength { .. })
    ));
    for b in backends() {
        // 4 rows of 10 equal values: top 3 of each, the first three indices.
        let mut hits = vec![RowHit::default(); 12];
        assert_eq!(th.run_with(b, &x, 10, &mut hits), Ok(12));
        let idx: Vec<(u32, u32)> = hits.iter().map(|h| (h.row, h.index)).collect();
        assert_eq!(idx[..4], [(0, 0), (0, 1), (0, 2), (1, 0)]);
        let mut small = vec![RowHit::default(); 7];
        assert!(matches!(
            th.run_with(b, &x, 10, &mut small),
            Err(Error::Capacity {
                capacity: 7,
                needed: 12,
                ..
            })
        ));
    }
    let th = ThresholdedSoftmaxF32::new(None, None).unwrap();
    assert!(matches!(
        th.run(&[1.0; 5], 2, &mut []),
        Err(Error::RowLength { .. })
    ));
}

/// f32: random rows of 1..=70 and 32,768 with special values, against
/// `f32::softmax_with` and the filter.
#[test]
fn softmax_f32_thresholded_equals_softmax_and_filter() {
    let mut rng = Rng(0x0123_4567_89ab_cdef);
    let gen = |kind: u64, rng: &mut Rng| -> f32 {
        let u = (rng.next() >> 40) as f32 / (1u64 << 24) as f32;
        match kind {
            0 => (u - 0.5) * 20.0,
            1 => (u - 0.5) * 2000.0,
            2 => (u * 4.0).floor(),
            _ => match rng.below(12) {
                0 => f32::NEG_INFINITY,
                1 => f32::INFINITY,
                2 => f32::NAN,
                3 => f32::MAX,
                4 => -f32::MAX,
                _ => (u - 0.5) * 10.0,
            },
        }
    };
    let mut cases = 0;
    for row_len in (1..=70).chain([32_768]) {
        for kind in 0..4u64 {
            let n_rows = if row_len > 70 { 1 } else { 1 + row_len % 3 };
            let offset = row_len % 16;
            let buf: Vec<f32> = (0..n_rows * row_len + offset)
                .map(|_| gen(kind, &mut rng))
                .collect();
            let x = &buf[offset..];
            for b in backends() {
                let mut y = vec![0f32; x.len()];
                qf::softmax_with(b, x, &mut y, row_len).unwrap();
                let mut ts = vec![
                    None,
                    Some(0.0),
                    Some(1.0),
                    Some(0.3),
                    Some(1e-30),
                    Some(f32::from_bits(1)),
                ];
                // Fewer sampled thresholds on the long row (its cost under
                // qemu is per threshold and k).
                let samples = if row_len > 70 { 2 } else { 8 };
                for &v in y.iter().step_by(1 + y.len() / samples) {
                    if v.is_finite() {
                        ts.extend([Some(v), Some(f32::from_bits(v.to_bits() + 1))]);
                        if v > 0.0 {
                            ts.push(Some(f32::from_bits(v.to_bits() - 1)));
                        }
                    }
                }
                ts.retain(|t| t.is_none_or(|t| (0.0..=1.0).contains(&t)));
                for &t in &ts {
                    let ks: &[Option<usize>] = if row_len > 70 {
                        &[None, Some(4)]
                    } else {
                        &[None, Some(0), Some(1), Some(4), Some(row_len + 1)]
                    };
                    for &k in ks {
                        let th = ThresholdedSoftmaxF32::new(t, k).unwrap();
                        let passes = |v: f32| t.map_or(!v.is_nan(), |t| v >= t);
                        let want: Vec<RowHit<f32>> = y
                            .chunks(row_len)
                            .enumerate()
                            .flat_map(|(r, row)| {
                                keep_row(row, passes, k)
                                    .into_iter()
                                    .map(move |(i, value)| RowHit {
                                        row: r as u32,
                                        index: i as u32,
                                        value,
                                    })
                            })
                            .collect();
                        let mut hits = vec![RowHit::default(); want.len()];
                        let n = th.run_with(b, x, row_len, &mut hits).unwrap();
                        let same = n == want.len()
                            && hits[..n].iter().zip(&want).all(|(h, w)| {
                                (h.row, h.index, h.value.to_bits())
                                    == (w.row, w.index, w.value.to_bits())
                            });
                        assert!(
                            same,
                            "{b:?} len {row_len} kind {kind} t {t:?} k {k:?}: {:?} vs {:?}",
                            &hits[..n.min(8)],
                            &want[..want.len().min(8)]
                        );
                        cases += 1;
                    }
                }
            }
        }
    }
    assert!(cases > 1000);
}
