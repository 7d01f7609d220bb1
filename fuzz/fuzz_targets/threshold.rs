//! The thresholded ops (`ThresholdedLogistic` on int8, uint8 and int16,
//! `ThresholdedSoftmax` on int8 and uint8, `ThresholdedSoftmaxF32`), every
//! method, every backend.
//!
//! When `new` and `run` succeed, the hits equal the unfused op's output on
//! the same backend followed by the filter: outputs whose value
//! `(q - zp) * scale` (or `y`) is at least the threshold, and within the
//! row's top k (larger value first, lower index first among equal values),
//! in index order. `new` refuses thresholds outside `[0, 1]`; a buffer too
//! small is `Error::Capacity` with the number needed.

#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use qneon::{
    f32 as qf, Backend, Error, Hit, Logistic, QuantElem, QuantParams, RowHit, Softmax,
    ThresholdedLogistic, ThresholdedSoftmax, ThresholdedSoftmaxF32,
};
use qneon_fuzz::*;

#[derive(Arbitrary, Debug)]
enum Op {
    Logistic,
    Softmax {
        beta_bits: Option<u32>,
        top_k: Option<u16>,
    },
    SoftmaxF32 {
        top_k: Option<u16>,
    },
}

#[derive(Arbitrary, Debug)]
enum Threshold {
    /// `k / 65535`.
    Fraction(u16),
    Bits(u32),
    None,
}

#[derive(Arbitrary, Debug)]
struct Case {
    op: Op,
    elem: ElemType,
    method: MethodChoice,
    input: Quant,
    threshold: Threshold,
    shape: RowShape,
    /// Hit buffer shorter than needed by this much (when `Some`).
    short_by: Option<u8>,
    data: Vec<u8>,
}

fuzz_target!(init: check_catalogue("threshold", &[
    qneon::catalogue::Op::ThresholdedLogistic,
    qneon::catalogue::Op::ThresholdedSoftmax,
]), |case: Case| {
    let t = match case.threshold {
        Threshold::Fraction(k) => Some(k as f32 / 65535.0),
        Threshold::Bits(b) => Some(f32::from_bits(b)),
        Threshold::None => None,
    };
    if let Some(t) = t {
        if !(0.0..=1.0).contains(&t) {
            // Refused by every op.
            assert!(ThresholdedSoftmaxF32::new(Some(t), None).is_err());
            let q = QuantParams::new(0.1, 0);
            let out = Logistic::<i8>::output_quantization();
            assert!(ThresholdedLogistic::<i8>::new(q, out, qneon::Method::Lut, t).is_err());
            return;
        }
    }
    match (&case.op, case.elem) {
        (Op::Logistic, ElemType::I8) => logistic::<i8>(&case, t),
        (Op::Logistic, ElemType::U8) => logistic::<u8>(&case, t),
        (Op::Logistic, ElemType::I16) => logistic::<i16>(&case, t),
        (Op::Softmax { beta_bits, top_k }, ElemType::U8) => {
            softmax::<u8>(&case, t, *beta_bits, top_k.map(|k| k as usize))
        }
        (Op::Softmax { beta_bits, top_k }, _) => {
            softmax::<i8>(&case, t, *beta_bits, top_k.map(|k| k as usize))
        }
        (Op::SoftmaxF32 { top_k }, _) => softmax_f32(&case, t, top_k.map(|k| k as usize)),
    }
});

fn backends() -> Vec<Backend> {
    Backend::available().collect()
}

/// The value of a quantized output.
fn value<T: QuantElem>(q: T, out: QuantParams) -> f64 {
    (q.to_i32() - out.zero_point) as f64 * out.scale as f64
}

/// Kept `(index, value)` of one row: pass, then the stable top-k.
fn keep_row<V: Copy + PartialOrd>(
    row: &[V],
    passes: impl Fn(V) -> bool,
    k: Option<usize>,
) -> Vec<(usize, V)> {
    let mut kept: Vec<(usize, V)> = row
        .iter()
        .copied()
        .enumerate()
        .filter(|&(_, v)| passes(v))
        .collect();
    if let Some(k) = k {
        kept.sort_by(|a, b| b.1.partial_cmp(&a.1).unwrap());
        kept.truncate(k);
        kept.sort_by_key(|&(i, _)| i);
    }
    kept
}

fn logistic<T: QuantElem>(case: &Case, t: Option<f32>) {
    let t = t.unwrap_or(0.5);
    let q_in = case.input.get::<T>();
    let out = Logistic::<T>::output_quantization();
    let method = case.method.get();
    let Ok(op) = ThresholdedLogistic::<T>::new(q_in, out, method, t) else {
        return;
    };
    let x = elements::<T>(&case.data);
    for b in backends() {
        let mut y = vec![T::default(); x.len()];
        op.logistic()
            .run_with(b, &x, &mut y)
            .expect("the unfused op runs");
        let want: Vec<Hit<T>> = y
            .iter()
            .enumerate()
            .filter(|(_, &q)| value(q, out) >= t as f64)
            .map(|(i, &value)| Hit {
                index: i as u32,
                value,
            })
            .collect();
        check_hits(&want, case.short_by, |hits| op.run_with(b, &x, hits));
    }
}

fn softmax<T: QuantElem>(case: &Case, t: Option<f32>, beta_bits: Option<u32>, k: Option<usize>) {
    let q_in = case.input.get::<T>();
    let out = Softmax::<T>::output_quantization();
    let beta = beta_bits.map_or(1.0, f32::from_bits);
    let Ok(op) = ThresholdedSoftmax::<T>::new(q_in, beta, out, case.method.get(), t, k) else {
        return;
    };
    let rows = case.shape.apply(elements::<T>(&case.data));
    if !rows.valid {
        return;
    }
    let (x, row_len) = (&rows.input, rows.row_len);
    for b in backends() {
        let mut y = vec![T::default(); x.len()];
        op.softmax()
            .run_with(b, x, &mut y, row_len)
            .expect("the unfused op runs");
        let passes = |q: T| t.is_none_or(|t| value(q, out) >= t as f64);
        let want = row_hits(&y, row_len, passes, k);
        check_hits(&want, case.short_by, |hits| {
            op.run_with(b, x, row_len, hits)
        });
    }
}

fn softmax_f32(case: &Case, t: Option<f32>, k: Option<usize>) {
    let op = ThresholdedSoftmaxF32::new(t, k).expect("a threshold in [0, 1]");
    let data: Vec<f32> = case
        .data
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    let rows = case.shape.apply(data);
    if !rows.valid {
        return;
    }
    let (x, row_len) = (&rows.input, rows.row_len);
    for b in backends() {
        let mut y = vec![0f32; x.len()];
        qf::softmax_with(b, x, &mut y, row_len).expect("the unfused op runs");
        let passes = |v: f32| t.map_or(!v.is_nan(), |t| v >= t);
        let want = row_hits(&y, row_len, passes, k);
        let mut hits = vec![RowHit::default(); want.len()];
        let n = op.run_with(b, x, row_len, &mut hits).expect("hits fit");
        assert_eq!(n, want.len(), "{b:?}");
        for (h, w) in hits.iter().zip(&want) {
            assert_eq!(
                (h.row, h.index, h.value.to_bits()),
                (w.row, w.index, w.value.to_bits()),
                "{b:?}"
            );
        }
    }
}

fn row_hits<V: Copy + PartialOrd>(
    y: &[V],
    row_len: usize,
    passes: impl Fn(V) -> bool + Copy,
    k: Option<usize>,
) -> Vec<RowHit<V>> {
    y.chunks(row_len)
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
        .collect()
}

/// Runs with a buffer of exactly the size needed (the hits must equal
/// `want`) and, if asked, one shorter (a `Capacity` error naming the size).
fn check_hits<H: Copy + Default + PartialEq + std::fmt::Debug>(
    want: &[H],
    short_by: Option<u8>,
    run: impl Fn(&mut [H]) -> qneon::Result<usize>,
) {
    let mut hits = vec![H::default(); want.len()];
    let n = run(&mut hits).expect("hits fit");
    assert_eq!(&hits[..n], want);
    if let Some(s) = short_by {
        let short = want.len().saturating_sub(1 + s as usize);
        if short < want.len() {
            let mut hits = vec![H::default(); short];
            match run(&mut hits) {
                Err(Error::Capacity {
                    capacity, needed, ..
                }) => {
                    assert_eq!((capacity, needed), (short, want.len()))
                }
                other => panic!("{other:?} with {short} of {} slots", want.len()),
            }
        }
    }
}
