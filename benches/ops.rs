//! Host criterion benches of the kernels `qneon-bench` runs: every op, element
//! type and method `new()` accepts (methods still `Unsupported` are skipped),
//! on every available backend, beside a naive `f64` baseline.
//! Host numbers are ratios for host code only; ARM figures come from
//! `qneon-bench` on a board and `cargo xtask bench` under qemu.
//!
//! `cargo bench` runs them all (under a minute on a 2-core x86 host); `cargo bench -- softmax_int8`
//! selects by group name (`<op>_<type>`).

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use qneon::{
    q31, Backend, Error, LogSoftmax, Logistic, Method, QuantElem, QuantParams, Softmax, Tanh,
};
use std::hint::black_box;
use std::time::Duration;

/// 64 MobileBert-like rows of 384: the same row length as the attention
/// scores, small enough for quick host runs.
const ROWS: usize = 64;
const COLS: usize = 384;

const METHODS: [Method; 4] = [
    Method::FixedPoint,
    Method::Lut,
    Method::LutFixedPoint,
    Method::DequantF32,
];

/// Deterministic N(0, 3) logits in real units (LCG + Box-Muller).
fn logits(n: usize) -> Vec<f64> {
    let mut s = 0x1234_5678_9abc_def0u64;
    let mut uniform = move || {
        s = s
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        ((s >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    };
    (0..n)
        .map(|_| {
            let (u, v) = (uniform(), uniform());
            3.0 * (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
        })
        .collect()
}

fn quantize<T: QuantElem + TryFrom<i32>>(x: &[f64], q: QuantParams) -> Vec<T> {
    x.iter()
        .map(|&r| {
            let v = ((r / q.scale as f64).round() as i64 + q.zero_point as i64)
                .clamp(T::MIN as i64, T::MAX as i64) as i32;
            T::try_from(v).ok().expect("clamped to the type")
        })
        .collect()
}

/// Runs `(backend, input, output, row_len)`.
type KernelFn<T> = dyn Fn(Backend, &[T], &mut [T], usize) -> qneon::Result<()>;
type Kernel<T> = Box<KernelFn<T>>;

/// The kernel `made` prepared, or `None` if the method is not implemented.
fn prepared<T>(what: &str, made: qneon::Result<Kernel<T>>) -> Option<Kernel<T>> {
    match made {
        Ok(k) => Some(k),
        Err(Error::Unsupported { .. }) => None,
        Err(e) => panic!("{what}: {e}"),
    }
}

/// Benchmarks `kernel` on every backend in group `op_type`, id `method/backend`.
fn bench_kernel<T: Copy + Default>(
    c: &mut Criterion,
    group: &str,
    method: &str,
    x: &[T],
    kernel: &KernelFn<T>,
) {
    let mut y = vec![T::default(); x.len()];
    let mut g = c.benchmark_group(group);
    g.throughput(Throughput::Elements(x.len() as u64));
    for backend in Backend::available() {
        g.bench_function(BenchmarkId::new(method, backend.name()), |b| {
            b.iter(|| kernel(backend, black_box(x), &mut y, COLS).unwrap())
        });
    }
    g.finish();
}

fn quant_type<T: QuantElem + TryFrom<i32>>(c: &mut Criterion) {
    let (q_in, softmax_out, tanh_out, log_softmax_zero) = match T::NAME {
        "int8" => (
            QuantParams::new(0.1, 0),
            QuantParams::new(1.0 / 256.0, -128),
            QuantParams::new(1.0 / 128.0, 0),
            127,
        ),
        "uint8" => (
            QuantParams::new(0.1, 128),
            QuantParams::new(1.0 / 256.0, 0),
            QuantParams::new(1.0 / 128.0, 128),
            255,
        ),
        _ => (
            QuantParams::new(1.0 / 2048.0, 0),
            QuantParams::new(1.0 / 32768.0, 0),
            QuantParams::new(1.0 / 32768.0, 0),
            0,
        ),
    };
    let log_softmax_out = QuantParams::new(16.0 / 256.0, log_softmax_zero);
    let x: Vec<T> = quantize(&logits(ROWS * COLS), q_in);
    for method in METHODS {
        let m = method.name();
        let ops: [(&str, Option<Kernel<T>>); 4] = [
            (
                "softmax",
                prepared(
                    "softmax",
                    Softmax::<T>::new(q_in, 1.0, softmax_out, method).map(|op| {
                        Box::new(move |b, x: &[T], y: &mut [T], r| op.run_with(b, x, y, r)) as _
                    }),
                ),
            ),
            (
                "log_softmax",
                prepared(
                    "log_softmax",
                    LogSoftmax::<T>::new(q_in, log_softmax_out, method).map(|op| {
                        Box::new(move |b, x: &[T], y: &mut [T], r| op.run_with(b, x, y, r)) as _
                    }),
                ),
            ),
            (
                "logistic",
                prepared(
                    "logistic",
                    Logistic::<T>::new(q_in, softmax_out, method).map(|op| {
                        Box::new(move |b, x: &[T], y: &mut [T], _| op.run_with(b, x, y)) as _
                    }),
                ),
            ),
            (
                "tanh",
                prepared(
                    "tanh",
                    Tanh::<T>::new(q_in, tanh_out, method).map(|op| {
                        Box::new(move |b, x: &[T], y: &mut [T], _| op.run_with(b, x, y)) as _
                    }),
                ),
            ),
        ];
        for (op, kernel) in ops {
            if let Some(kernel) = kernel {
                bench_kernel(c, &format!("{op}_{}", T::NAME), m, &x, &*kernel);
            }
        }
    }
}

fn int8(c: &mut Criterion) {
    quant_type::<i8>(c);
}
fn uint8(c: &mut Criterion) {
    quant_type::<u8>(c);
}
fn int16(c: &mut Criterion) {
    quant_type::<i16>(c);
}

fn q31_kernels(c: &mut Criterion) {
    const IB: u32 = 5;
    let one = (1u64 << (31 - IB)) as f64;
    let x: Vec<i32> = logits(ROWS * COLS)
        .iter()
        .map(|r| (r * one) as i32)
        .collect();
    bench_kernel(c, "softmax_q31", "fixed", &x, &|b, x, y, r| {
        q31::softmax_with(b, x, IB, y, r)
    });
    bench_kernel(c, "logistic_q31", "fixed", &x, &|b, x, y, _| {
        q31::logistic_with(b, x, IB, y)
    });
    bench_kernel(c, "tanh_q31", "fixed", &x, &|b, x, y, _| {
        q31::tanh_with(b, x, IB, y)
    });
}

fn f32_kernels(c: &mut Criterion) {
    use qneon::f32 as qf;
    let x: Vec<f32> = logits(ROWS * COLS).iter().map(|&r| r as f32).collect();
    bench_kernel(c, "softmax_f32", "float", &x, &qf::softmax_with);
    bench_kernel(c, "softmax_online_f32", "float", &x, &|b, x, y, r| {
        qf::softmax_variant(qf::SoftmaxVariant::Online, b, x, y, r)
    });
    bench_kernel(c, "log_softmax_f32", "float", &x, &qf::log_softmax_with);
    bench_kernel(c, "sigmoid_f32", "float", &x, &|b, x, y, _| {
        qf::sigmoid_with(b, x, y)
    });
    bench_kernel(c, "tanh_f32", "float", &x, &|b, x, y, _| {
        qf::tanh_with(b, x, y)
    });
}

/// The obvious float implementations, for scale.
fn naive_baselines(c: &mut Criterion) {
    let real = logits(ROWS * COLS);
    let x: Vec<i8> = quantize(&real, QuantParams::new(0.1, 0));
    let mut y = vec![0i8; x.len()];
    let mut g = c.benchmark_group("naive_f64_int8");
    g.throughput(Throughput::Elements(x.len() as u64));
    g.bench_function("softmax", |b| {
        b.iter(|| {
            for (r, o) in black_box(&x).chunks(COLS).zip(y.chunks_mut(COLS)) {
                let max = *r.iter().max().unwrap() as f64;
                let sum: f64 = r.iter().map(|&v| ((v as f64 - max) * 0.1).exp()).sum();
                for (v, out) in r.iter().zip(o.iter_mut()) {
                    let p = ((*v as f64 - max) * 0.1).exp() / sum;
                    *out = ((p * 256.0).round() as i32 - 128).clamp(-128, 127) as i8;
                }
            }
        })
    });
    g.bench_function("logistic", |b| {
        b.iter(|| {
            for (v, o) in black_box(&x).iter().zip(y.iter_mut()) {
                let p = 1.0 / (1.0 + (-(*v as f64) * 0.1).exp());
                *o = ((p * 256.0).round() as i32 - 128).clamp(-128, 127) as i8;
            }
        })
    });
    g.finish();
}

fn config() -> Criterion {
    // Short runs: the point is ratios between rows, and `cargo bench` with no
    // arguments should finish in a couple of minutes.
    Criterion::default()
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_millis(700))
        .sample_size(20)
}

criterion_group! {
    name = benches;
    config = config();
    targets = int8, uint8, int16, q31_kernels, f32_kernels, naive_baselines
}
criterion_main!(benches);
