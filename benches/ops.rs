//! Host criterion benches of the activations `qneon-bench` runs: every op,
//! element type and method `qneon::catalogue` lists for softmax, log-softmax,
//! logistic and tanh (quantized, Q31, float), on every available backend,
//! beside a naive `f64` baseline.
//! Host numbers are ratios for host code only; ARM figures come from
//! `qneon-bench` on a board and `cargo xtask bench` under qemu.
//!
//! `cargo bench` runs them all (under a minute on a 2-core x86 host); `cargo bench -- softmax_int8`
//! selects by group name (`<op>_<type>`).

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use qneon::catalogue::{Dtype, Kernels, Op, Variant, KERNELS};
use qneon::{q31, Backend, LogSoftmax, Logistic, QuantElem, QuantParams, Softmax, Tanh};
use std::hint::black_box;
use std::time::Duration;

/// 64 MobileBert-like rows of 384: the same row length as the attention
/// scores, small enough for quick host runs.
const ROWS: usize = 64;
const COLS: usize = 384;

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

/// The catalogue's rows (`qneon::catalogue::KERNELS`) these benches run:
/// the quantized activations (every listed method), the raw Q31 and the
/// float kernels. The exhaustive matches make a new op or element type a
/// compile error here until it is placed.
fn catalogue(c: &mut Criterion) {
    for row in KERNELS {
        match row.dtype {
            Dtype::Int8 => quant_row::<i8>(c, row),
            Dtype::Uint8 => quant_row::<u8>(c, row),
            Dtype::Int16 => quant_row::<i16>(c, row),
            Dtype::Q31 => q31_row(c, row),
            Dtype::F32 => f32_row(c, row),
        }
    }
}

/// Whether the host benches leave `op` to `qneon-bench` (which measures
/// every row under qemu): the fused, loss and binary ops need state or
/// second operands these simple row kernels do not carry.
fn left_to_qneon_bench(op: Op) -> bool {
    match op {
        Op::Softmax
        | Op::SoftmaxOnline
        | Op::LogSoftmax
        | Op::Logistic
        | Op::Sigmoid
        | Op::Tanh => false,
        Op::ThresholdedLogistic
        | Op::ThresholdedSoftmax
        | Op::CrossEntropy
        | Op::CrossEntropyBackward
        | Op::Add
        | Op::AddRow
        | Op::AddScalar
        | Op::Sub
        | Op::Mul
        | Op::MulRow
        | Op::MulScalar => true,
    }
}

fn quant_row<T: QuantElem + TryFrom<i32>>(c: &mut Criterion, row: &Kernels) {
    if left_to_qneon_bench(row.op) {
        return;
    }
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
    for (variant, [op, dtype, method]) in row.names() {
        // The int16 `lut-2^-12` rows (another input scale) are
        // qneon-bench's alone.
        let Variant::Method(m) = variant else {
            continue;
        };
        let made: qneon::Result<Kernel<T>> = match row.op {
            Op::Softmax => Softmax::<T>::new(q_in, 1.0, softmax_out, m)
                .map(|op| Box::new(move |b, x: &[T], y: &mut [T], r| op.run_with(b, x, y, r)) as _),
            Op::LogSoftmax => LogSoftmax::<T>::new(q_in, log_softmax_out, m)
                .map(|op| Box::new(move |b, x: &[T], y: &mut [T], r| op.run_with(b, x, y, r)) as _),
            Op::Logistic => Logistic::<T>::new(q_in, softmax_out, m)
                .map(|op| Box::new(move |b, x: &[T], y: &mut [T], _| op.run_with(b, x, y)) as _),
            Op::Tanh => Tanh::<T>::new(q_in, tanh_out, m)
                .map(|op| Box::new(move |b, x: &[T], y: &mut [T], _| op.run_with(b, x, y)) as _),
            _ => panic!("{op} {dtype} {method}: listed in qneon::catalogue, no host bench"),
        };
        let kernel = made.unwrap_or_else(|e| panic!("{op} {dtype} {method}: {e}"));
        bench_kernel(c, &format!("{op}_{dtype}"), method, &x, &*kernel);
    }
}

fn q31_row(c: &mut Criterion, row: &Kernels) {
    const IB: u32 = 5;
    if left_to_qneon_bench(row.op) {
        return;
    }
    let one = (1u64 << (31 - IB)) as f64;
    let x: Vec<i32> = logits(ROWS * COLS)
        .iter()
        .map(|r| (r * one) as i32)
        .collect();
    for (_, [op, dtype, method]) in row.names() {
        let group = format!("{op}_{dtype}");
        match row.op {
            Op::Softmax => bench_kernel(c, &group, method, &x, &|b, x, y, r| {
                q31::softmax_with(b, x, IB, y, r)
            }),
            Op::Logistic => bench_kernel(c, &group, method, &x, &|b, x, y, _| {
                q31::logistic_with(b, x, IB, y)
            }),
            Op::Tanh => bench_kernel(c, &group, method, &x, &|b, x, y, _| {
                q31::tanh_with(b, x, IB, y)
            }),
            _ => panic!("{op} {dtype} {method}: listed in qneon::catalogue, no host bench"),
        }
    }
}

fn f32_row(c: &mut Criterion, row: &Kernels) {
    use qneon::f32 as qf;
    if left_to_qneon_bench(row.op) {
        return;
    }
    let x: Vec<f32> = logits(ROWS * COLS).iter().map(|&r| r as f32).collect();
    for (_, [op, dtype, method]) in row.names() {
        let group = format!("{op}_{dtype}");
        match row.op {
            Op::Softmax => bench_kernel(c, &group, method, &x, &qf::softmax_with),
            Op::SoftmaxOnline => bench_kernel(c, &group, method, &x, &|b, x, y, r| {
                qf::softmax_variant(qf::SoftmaxVariant::Online, b, x, y, r)
            }),
            Op::LogSoftmax => bench_kernel(c, &group, method, &x, &qf::log_softmax_with),
            Op::Sigmoid => bench_kernel(c, &group, method, &x, &|b, x, y, _| {
                qf::sigmoid_with(b, x, y)
            }),
            Op::Tanh => bench_kernel(c, &group, method, &x, &|b, x, y, _| qf::tanh_with(b, x, y)),
            _ => panic!("{op} {dtype} {method}: listed in qneon::catalogue, no host bench"),
        }
    }
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
    targets = catalogue, naive_baselines
}
criterion_main!(benches);
