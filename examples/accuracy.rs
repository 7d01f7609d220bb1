//! Accuracy of every op x type x method against exact math, as a Markdown
//! table: `cargo run --release --example accuracy`.
//!
//! Error is |output - correctly rounded exact result| in output steps (exact
//! result computed in `f64`, rounded half away from zero, clamped to the
//! type). Every backend gives the same bytes, so the scalar backend stands
//! for all. Inputs:
//! * logistic / tanh: every input value of the type at several input scales
//!   (int16: zero point 0, all 65,536 values);
//! * softmax / log-softmax: seeded rows of attention-like logits, N(0, 3) in
//!   real units, of lengths 16, 64 and 384, at several input scales.

use qneon::{Backend, LogSoftmax, Logistic, Method, QuantElem, QuantParams, Softmax, Tanh};

const METHODS: [Method; 4] = [
    Method::FixedPoint,
    Method::Lut,
    Method::LutFixedPoint,
    Method::DequantF32,
];

/// xorshift64* with a Box-Muller normal.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn normal(&mut self) -> f64 {
        let u = ((self.next() >> 11) as f64 / (1u64 << 53) as f64).max(1e-300);
        let v = (self.next() >> 11) as f64 / (1u64 << 53) as f64;
        (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
    }
}

#[derive(Default)]
struct Stats {
    elements: usize,
    sum: f64,
    max: i64,
}

impl Stats {
    fn add(&mut self, got: i32, want: i64) {
        let e = (got as i64 - want).abs();
        self.elements += 1;
        self.sum += e as f64;
        self.max = self.max.max(e);
    }
}

fn rounded<T: QuantElem>(real: f64, q: QuantParams) -> i64 {
    ((real / q.scale as f64).round() as i64 + q.zero_point as i64)
        .clamp(T::MIN as i64, T::MAX as i64)
}

fn to_t<T: QuantElem + TryFrom<i32>>(v: i32) -> T {
    T::try_from(v).ok().expect("in range")
}

fn logits<T: QuantElem + TryFrom<i32>>(rng: &mut Rng, n: usize, q: QuantParams) -> Vec<T> {
    (0..n)
        .map(|_| {
            let v = (3.0 * rng.normal() / q.scale as f64).round() as i64 + q.zero_point as i64;
            to_t(v.clamp(T::MIN as i64, T::MAX as i64) as i32)
        })
        .collect()
}

/// Output quantization TFLite requires: (softmax, log-softmax, logistic, tanh).
fn outputs<T: QuantElem>() -> [QuantParams; 4] {
    match T::NAME {
        "int8" => [
            QuantParams::new(1.0 / 256.0, -128),
            QuantParams::new(16.0 / 256.0, 127),
            QuantParams::new(1.0 / 256.0, -128),
            QuantParams::new(1.0 / 128.0, 0),
        ],
        "uint8" => [
            QuantParams::new(1.0 / 256.0, 0),
            QuantParams::new(16.0 / 256.0, 255),
            QuantParams::new(1.0 / 256.0, 0),
            QuantParams::new(1.0 / 128.0, 128),
        ],
        _ => [QuantParams::new(1.0 / 32768.0, 0); 4],
    }
}

fn activation<T: QuantElem + TryFrom<i32>>(tanh: bool, method: Method) -> Option<Stats> {
    let out = outputs::<T>()[if tanh { 3 } else { 2 }];
    let scales: &[f32] = if T::NAME == "int16" {
        &[1.0 / 4096.0, 1.0 / 3000.0, 1.0 / 1024.0, 1e-3]
    } else {
        &[0.01, 0.03, 0.0625, 0.1, 0.25, 1.0]
    };
    let zero_points: &[i32] = match T::NAME {
        "int16" => &[0],
        "int8" => &[0, -20],
        _ => &[128, 100],
    };
    let input: Vec<T> = (T::MIN..=T::MAX).map(to_t).collect();
    let mut stats = Stats::default();
    for &scale in scales {
        for &zp in zero_points {
            let q_in = QuantParams::new(scale, zp);
            let mut y = vec![T::default(); input.len()];
            let ok = if tanh {
                Tanh::<T>::new(q_in, out, method)
                    .ok()?
                    .run_with(Backend::Scalar, &input, &mut y)
            } else {
                Logistic::<T>::new(q_in, out, method).ok()?.run_with(
                    Backend::Scalar,
                    &input,
                    &mut y,
                )
            };
            ok.expect("lengths match");
            for (x, got) in input.iter().zip(&y) {
                let real = scale as f64 * (x.to_i32() - zp) as f64;
                let f = if tanh {
                    real.tanh()
                } else {
                    1.0 / (1.0 + (-real).exp())
                };
                stats.add(got.to_i32(), rounded::<T>(f, out));
            }
        }
    }
    Some(stats)
}

fn row_op<T: QuantElem + TryFrom<i32>>(log: bool, method: Method) -> Option<Stats> {
    if log && T::NAME == "int16" {
        return None;
    }
    let out = outputs::<T>()[if log { 1 } else { 0 }];
    let scales: &[f32] = if T::NAME == "int16" {
        &[1.0 / 2048.0, 1.0 / 512.0]
    } else {
        &[0.05, 0.1, 0.25]
    };
    let zp = match T::NAME {
        "uint8" => 128,
        _ => 0,
    };
    let mut rng = Rng(0x5eed_acc0 ^ (log as u64));
    let mut stats = Stats::default();
    for &scale in scales {
        let q_in = QuantParams::new(scale, zp);
        for row_len in [16usize, 64, 384] {
            let rows = 4096 / row_len;
            let input = logits::<T>(&mut rng, rows * row_len, q_in);
            let mut y = vec![T::default(); input.len()];
            if log {
                LogSoftmax::<T>::new(q_in, out, method)
                    .ok()?
                    .run_with(Backend::Scalar, &input, &mut y, row_len)
                    .expect("lengths match");
            } else {
                Softmax::<T>::new(q_in, 1.0, out, method)
                    .ok()?
                    .run_with(Backend::Scalar, &input, &mut y, row_len)
                    .expect("lengths match");
            }
            for (row, got) in input.chunks(row_len).zip(y.chunks(row_len)) {
                let max = row.iter().map(|x| x.to_i32()).max().unwrap();
                let d = |x: &T| scale as f64 * (x.to_i32() - max) as f64;
                let sum: f64 = row.iter().map(|x| d(x).exp()).sum();
                for (x, g) in row.iter().zip(got) {
                    let f = if log {
                        d(x) - sum.ln()
                    } else {
                        d(x).exp() / sum
                    };
                    stats.add(g.to_i32(), rounded::<T>(f, out));
                }
            }
        }
    }
    Some(stats)
}

fn rows_for<T: QuantElem + TryFrom<i32>>(lines: &mut Vec<String>) {
    for op in ["softmax", "log_softmax", "logistic", "tanh"] {
        for method in METHODS {
            let stats = match op {
                "softmax" => row_op::<T>(false, method),
                "log_softmax" => row_op::<T>(true, method),
                "logistic" => activation::<T>(false, method),
                _ => activation::<T>(true, method),
            };
            if let Some(s) = stats {
                lines.push(format!(
                    "| {op} | {} | {} | {} | {:.4} | {} |",
                    T::NAME,
                    method.name(),
                    s.max,
                    s.sum / s.elements as f64,
                    s.elements
                ));
            }
        }
    }
}

fn main() {
    let mut lines = vec![
        "| op | type | method | max error (LSB) | mean error (LSB) | outputs checked |".to_string(),
        "| --- | --- | --- | --- | --- | --- |".to_string(),
    ];
    rows_for::<i8>(&mut lines);
    rows_for::<u8>(&mut lines);
    rows_for::<i16>(&mut lines);
    println!("{}", lines.join("\n"));
}
