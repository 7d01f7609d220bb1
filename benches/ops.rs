//! Host criterion benches of the prepared ops, each beside a naive `f64` baseline.
//! Host numbers are ratios for host code only; ARM figures come from `cargo xtask bench`.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use qneon::{Backend, Logistic, Method, QuantParams, Softmax};
use std::hint::black_box;

fn input(n: usize) -> Vec<i8> {
    // Deterministic pseudo-random bytes (LCG).
    let mut s = 0x1234_5678u32;
    (0..n)
        .map(|_| {
            s = s.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            (s >> 24) as i8
        })
        .collect()
}

fn naive_softmax(x: &[i8], y: &mut [i8], row_len: usize, scale: f64) {
    for (r, o) in x.chunks(row_len).zip(y.chunks_mut(row_len)) {
        let max = *r.iter().max().unwrap() as f64;
        let sum: f64 = r.iter().map(|&v| ((v as f64 - max) * scale).exp()).sum();
        for (v, out) in r.iter().zip(o.iter_mut()) {
            let p = ((*v as f64 - max) * scale).exp() / sum;
            *out = ((p * 256.0).round() as i32 - 128).clamp(-128, 127) as i8;
        }
    }
}

fn softmax(c: &mut Criterion) {
    let q_in = QuantParams::new(0.1, 0);
    let q_out = QuantParams::new(1.0 / 256.0, -128);
    let op = Softmax::<i8>::new(q_in, 1.0, q_out, Method::FixedPoint).unwrap();
    let mut g = c.benchmark_group("softmax_i8");
    for row_len in [64usize, 384] {
        let x = input(row_len * 64);
        let mut y = vec![0i8; x.len()];
        g.throughput(Throughput::Elements(x.len() as u64));
        for backend in Backend::available() {
            g.bench_with_input(
                BenchmarkId::new(backend.name(), row_len),
                &row_len,
                |b, &r| b.iter(|| op.run_with(backend, black_box(&x), &mut y, r).unwrap()),
            );
        }
        g.bench_with_input(BenchmarkId::new("naive_f64", row_len), &row_len, |b, &r| {
            b.iter(|| naive_softmax(black_box(&x), &mut y, r, 0.1))
        });
    }
    g.finish();
}

fn logistic(c: &mut Criterion) {
    let op = Logistic::<i8>::new(
        QuantParams::new(0.1, 0),
        QuantParams::new(1.0 / 256.0, -128),
        Method::FixedPoint,
    )
    .unwrap();
    let x = input(64 * 1024);
    let mut y = vec![0i8; x.len()];
    let mut g = c.benchmark_group("logistic_i8");
    g.throughput(Throughput::Elements(x.len() as u64));
    for backend in Backend::available() {
        g.bench_function(backend.name(), |b| {
            b.iter(|| op.run_with(backend, black_box(&x), &mut y).unwrap())
        });
    }
    g.bench_function("naive_f64", |b| {
        b.iter(|| {
            for (v, o) in black_box(&x).iter().zip(y.iter_mut()) {
                let p = 1.0 / (1.0 + (-(*v as f64) * 0.1).exp());
                *o = ((p * 256.0).round() as i32 - 128).clamp(-128, 127) as i8;
            }
        })
    });
    g.finish();
}

criterion_group!(benches, softmax, logistic);
criterion_main!(benches);
