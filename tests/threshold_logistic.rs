//! `ThresholdedLogistic` against its definition: `Logistic::run_with` on the
//! same backend, then keeping the outputs whose value `(q - zp) * scale` is at
//! least the threshold (computed here in `f64`, not by the op's code bound).
//! Every type, method and backend; every 8-bit and int16 input for the
//! bound; thresholds at, just above and just below every output value;
//! lengths 0..=70 at offsets and 32,768; errors.

use qneon::{Backend, Error, Hit, Logistic, Method, QuantElem, QuantParams, ThresholdedLogistic};

const METHODS: [Method; 4] = [
    Method::FixedPoint,
    Method::Lut,
    Method::LutFixedPoint,
    Method::DequantF32,
];

/// The backends under test; on aarch64 NEON must be among them (a NEON test
/// that cannot run fails rather than skips).
/// The backends checked: scalar on the host, NEON under qemu (the scalar
/// backend is the same portable code on both machines; running it again
/// under emulation only costs CI time).
fn backends() -> Vec<Backend> {
    #[cfg(target_arch = "aarch64")]
    assert!(Backend::Neon.is_available(), "NEON must run on aarch64");
    vec![Backend::best()]
}

/// xorshift64, deterministic.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn elem<T: QuantElem + TryFrom<i32>>(&mut self) -> T {
        let span = (T::MAX - T::MIN + 1) as u64;
        let v = T::MIN + (self.next() % span) as i32;
        T::try_from(v).ok().unwrap()
    }
}

/// `run_with` then the filter, from the definition.
fn oracle<T: QuantElem>(
    op: &Logistic<T>,
    out: QuantParams,
    threshold: f32,
    backend: Backend,
    input: &[T],
) -> Vec<Hit<T>> {
    let mut y = vec![T::default(); input.len()];
    op.run_with(backend, input, &mut y).unwrap();
    y.iter()
        .enumerate()
        .filter(|(_, q)| {
            (q.to_i32() - out.zero_point) as f64 * out.scale as f64 >= threshold as f64
        })
        .map(|(i, &value)| Hit {
            index: i as u32,
            value,
        })
        .collect()
}

/// Every input of `T`, in order.
fn all_inputs<T: QuantElem + TryFrom<i32>>() -> Vec<T> {
    (T::MIN..=T::MAX)
        .map(|v| T::try_from(v).ok().unwrap())
        .collect()
}

/// Thresholds: 0, 1, and each value the outputs take, with its f32
/// neighbours (`f32::next_up` / `next_down` semantics by bits).
fn thresholds<T: QuantElem>(outputs: &[T], out: QuantParams, every: usize) -> Vec<f32> {
    let mut codes: Vec<i32> = outputs.iter().map(|q| q.to_i32()).collect();
    codes.sort_unstable();
    codes.dedup();
    let mut t = vec![0.0f32, 1.0, f32::from_bits(1), 0.5];
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

/// Exhaustive over inputs for a grid of quantizations and thresholds: the
/// hits equal the oracle on every backend, and the input bound is the
/// smallest passing input.
fn exhaustive<T: QuantElem + TryFrom<i32>>(scales: &[f32], zero_points: &[i32], every: usize) {
    let out = Logistic::<T>::output_quantization();
    let input = all_inputs::<T>();
    let mut hits = vec![Hit::default(); input.len()];
    let mut checked = 0;
    for &method in &METHODS {
        for &scale in scales {
            for &zp in zero_points {
                let q_in = QuantParams::new(scale, zp);
                let op = match Logistic::<T>::new(q_in, out, method) {
                    Ok(op) => op,
                    Err(e) => {
                        assert_eq!(
                            ThresholdedLogistic::<T>::new(q_in, out, method, 0.5).unwrap_err(),
                            e
                        );
                        continue;
                    }
                };
                let mut y = vec![T::default(); input.len()];
                op.run_with(Backend::Scalar, &input, &mut y).unwrap();
                for t in thresholds(&y, out, every) {
                    let th = ThresholdedLogistic::<T>::new(q_in, out, method, t).unwrap();
                    // The bound: the first input whose output passes.
                    let first = input
                        .iter()
                        .zip(&y)
                        .find(|(_, q)| {
                            (q.to_i32() - out.zero_point) as f64 * out.scale as f64 >= t as f64
                        })
                        .map_or(T::MAX + 1, |(x, _)| x.to_i32());
                    assert_eq!(
                        th.input_bound(),
                        first,
                        "{method} scale {scale} zp {zp} t {t}"
                    );
                    for b in backends() {
                        let want = oracle(&op, out, t, b, &input);
                        let n = th.run_with(b, &input, &mut hits).unwrap();
                        assert_eq!(
                            &hits[..n],
                            &want[..],
                            "{method} {b:?} scale {scale} zp {zp} t {t}"
                        );
                        checked += 1;
                    }
                }
            }
        }
    }
    assert!(checked > 100, "only {checked} cases ran");
}

#[test]
fn logistic_i8_thresholded_equals_run_and_filter_all_inputs() {
    exhaustive::<i8>(&[0.001, 0.02, 0.1, 0.5, 4.0, 300.0], &[-128, 0, 127], 1);
}

#[test]
fn logistic_u8_thresholded_equals_run_and_filter_all_inputs() {
    exhaustive::<u8>(&[0.003, 0.05, 0.3, 8.0], &[0, 128, 255], 1);
}

#[test]
fn logistic_i16_thresholded_equals_run_and_filter_all_inputs() {
    exhaustive::<i16>(
        &[1.0 / 32768.0, 1.0 / 2048.0, 1.0 / 4096.0 * 3.0, 0.01],
        &[0, -300],
        2999,
    );
}

/// Lengths 0..=70 at offsets 0..16, random inputs (uniform, and clustered
/// near the bound), and one 32,768-element row, every backend.
fn lengths<T: QuantElem + TryFrom<i32>>(method: Method, scale: f32) {
    let out = Logistic::<T>::output_quantization();
    let q_in = QuantParams::new(scale, 0);
    let op = Logistic::<T>::new(q_in, out, method).unwrap();
    let mut rng = Rng(0x1234_5678_9abc_def0 ^ scale.to_bits() as u64);
    for t in [0.0f32, 0.3, 0.5, 0.9, 0.999, 1.0] {
        let th = ThresholdedLogistic::<T>::new(q_in, out, method, t).unwrap();
        let bound = th.input_bound().clamp(T::MIN, T::MAX);
        let mut buf: Vec<T> = (0..70 + 16).map(|_| rng.elem()).collect();
        for len in (0..=70).chain([32_768]) {
            if len > 70 {
                buf = (0..len + 16).map(|_| rng.elem()).collect();
            }
            for offset in 0..16 {
                for clustered in [false, true] {
                    let mut x = buf[offset..offset + len].to_vec();
                    if clustered {
                        // Values around the bound: both sides of the compare.
                        for v in x.iter_mut() {
                            let d = (rng.next() % 5) as i32 - 2;
                            *v = T::try_from((bound + d).clamp(T::MIN, T::MAX)).ok().unwrap();
                        }
                    }
                    for b in backends() {
                        let want = oracle(&op, out, t, b, &x);
                        // Poisoned, so that unwritten hits show.
                        let mut hits = vec![
                            Hit {
                                index: u32::MAX,
                                value: T::default()
                            };
                            len + 1
                        ];
                        let n = th.run_with(b, &x, &mut hits).unwrap();
                        assert_eq!(
                            &hits[..n],
                            &want[..],
                            "{method} {b:?} len {len} off {offset} t {t}"
                        );
                        assert_eq!(hits[n].index, u32::MAX);
                    }
                }
                if len > 70 {
                    break;
                }
            }
        }
    }
}

#[test]
fn logistic_thresholded_lengths_offsets_and_long_rows() {
    for method in METHODS {
        for scale in [0.02f32, 0.1] {
            lengths::<i8>(method, scale);
            lengths::<u8>(method, scale);
        }
        if method != Method::LutFixedPoint {
            lengths::<i16>(method, 1.0 / 2048.0);
        }
    }
}

/// A buffer too small is an error naming the number needed (after the
/// first hits were written); an exact fit is not.
#[test]
fn logistic_thresholded_capacity() {
    let out = Logistic::<i8>::output_quantization();
    let q_in = QuantParams::new(0.1, 0);
    let th = ThresholdedLogistic::<i8>::new(q_in, out, Method::Lut, 0.5).unwrap();
    let x: Vec<i8> = (-128..=127).collect();
    let all = th.run_to_vec(&x).unwrap();
    assert_eq!(all.len(), 128); // logistic(x) >= 0.5 exactly for x >= 0
    for b in backends() {
        let mut hits = vec![Hit::default(); 100];
        match th.run_with(b, &x, &mut hits) {
            Err(Error::Capacity {
                capacity, needed, ..
            }) => {
                assert_eq!((capacity, needed), (100, 128));
                assert_eq!(&hits[..], &all[..100]);
            }
            other => panic!("{other:?}"),
        }
        let mut exact = vec![Hit::default(); 128];
        assert_eq!(th.run_with(b, &x, &mut exact), Ok(128));
        assert_eq!(
            th.run_with(b, &x, &mut []).unwrap_err(),
            Error::Capacity {
                op: "thresholded logistic",
                capacity: 0,
                needed: 128
            }
        );
    }
}

/// Thresholds outside `[0, 1]` or NaN are errors; bad quantization is
/// `Logistic::new`'s error.
#[test]
fn logistic_thresholded_errors() {
    let out = Logistic::<i8>::output_quantization();
    let q_in = QuantParams::new(0.1, 0);
    for t in [
        f32::NAN,
        -0.001,
        1.0001,
        f32::INFINITY,
        f32::NEG_INFINITY,
        -1.0,
    ] {
        match ThresholdedLogistic::<i8>::new(q_in, out, Method::Lut, t) {
            Err(Error::OutOfDomain {
                what: "threshold", ..
            }) => {}
            other => panic!("threshold {t}: {other:?}"),
        }
    }
    let bad = QuantParams::new(-1.0, 0);
    assert_eq!(
        ThresholdedLogistic::<i8>::new(bad, out, Method::Lut, 0.5).unwrap_err(),
        Logistic::<i8>::new(bad, out, Method::Lut).unwrap_err()
    );
    let wrong_out = QuantParams::new(1.0 / 128.0, 0);
    assert!(ThresholdedLogistic::<u8>::new(q_in, wrong_out, Method::FixedPoint, 0.5).is_err());
    // -0.0 is a valid threshold (0): everything passes.
    let th = ThresholdedLogistic::<i8>::new(q_in, out, Method::Lut, -0.0).unwrap();
    assert_eq!(th.input_bound(), -128);
    // 1 keeps nothing: the largest output is 255/256.
    let th = ThresholdedLogistic::<i8>::new(q_in, out, Method::Lut, 1.0).unwrap();
    assert_eq!(th.input_bound(), 128);
    assert_eq!(th.run(&[127i8; 40], &mut []), Ok(0));
}
