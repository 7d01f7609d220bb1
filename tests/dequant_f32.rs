//! `Method::DequantF32`: every output within 1 LSB of the correctly rounded
//! exact result, and NEON == scalar bit for bit.
//!
//! The reference is exact math in `f64` on the real values the quantization
//! parameters describe (`(q - zero_point) * scale` with the `f32` scale taken
//! exactly), quantized as TFLite quantizes: `round_half_away(v /
//! output_scale) + output_zero_point`, clamped to the type. Errors are
//! counted in output steps (LSB); every test prints its maximum, mean and
//! share of exact outputs, and asserts the maximum is at most 1.
//!
//! Coverage: every int8/uint8 input value over grids of input scales, zero
//! points and betas, in softmax and log-softmax rows of lengths 1, 15, 16,
//! 17, 384, 1000, 2048, 2049, 5000 (the exp cache holds 2048) and several
//! rows per call; every int16 logistic/tanh input at several scales and zero
//! points; int16 softmax rows; edge rows (all equal, one huge outlier,
//! `row_len` 1, ties) and extreme scales. On aarch64 (under qemu) every case
//! also runs on NEON and must give the scalar bytes.

mod common;
use common::Rng;
use qneon::{Backend, LogSoftmax, Logistic, Method, QuantElem, QuantParams, Softmax, Tanh};

/// The stated bound, in output steps.
const MAX_LSB: i64 = 1;

/// Error statistics in LSB.
#[derive(Default)]
struct Stats {
    count: u64,
    exact: u64,
    sum: f64,
    max: i64,
    worst: String,
}

impl Stats {
    fn add(&mut self, got: i32, want: i64, what: impl FnOnce() -> String) {
        let e = (got as i64 - want).abs();
        self.count += 1;
        self.sum += e as f64;
        if e == 0 {
            self.exact += 1;
        }
        if e > self.max {
            self.max = e;
            self.worst = what();
        }
    }

    fn report(&self, name: &str) {
        println!(
            "{name}: {} outputs, max {} LSB, mean {:.6} LSB, exact {:.4}%{}",
            self.count,
            self.max,
            self.sum / self.count.max(1) as f64,
            100.0 * self.exact as f64 / self.count.max(1) as f64,
            if self.max > 0 {
                format!(" (worst: {})", self.worst)
            } else {
                String::new()
            }
        );
        assert!(self.count > 0, "{name}: nothing was checked");
        assert!(
            self.max <= MAX_LSB,
            "{name}: {} LSB > {MAX_LSB} at {}",
            self.max,
            self.worst
        );
    }
}

/// `round_half_away(v) + zero_point`, clamped to `T` (`f64::round` rounds
/// half away from zero).
fn quantize<T: QuantElem>(v: f64, zero_point: i32) -> i64 {
    (v.round() + zero_point as f64).clamp(T::MIN as f64, T::MAX as f64) as i64
}

fn to_t<T: QuantElem>(v: i32) -> T {
    T::from_i32(v.clamp(T::MIN, T::MAX))
}

/// Runs `run` with the scalar backend and, where available, NEON; asserts
/// NEON gives the scalar bytes; returns the scalar output.
fn run_backends<T: QuantElem>(
    n: usize,
    what: &dyn Fn() -> String,
    run: impl Fn(Backend, &mut [T]),
) -> Vec<T> {
    let mut reference = vec![T::default(); n];
    run(Backend::Scalar, &mut reference);
    for b in Backend::available().filter(|&b| b != Backend::Scalar) {
        // Poisoned, so an unwritten element shows.
        let mut got = vec![to_t::<T>(T::MAX); n];
        run(b, &mut got);
        if got != reference {
            let i = got
                .iter()
                .zip(&reference)
                .position(|(a, b)| a != b)
                .unwrap();
            panic!(
                "{}: {b:?} differs from scalar at {i}: {:?} vs {:?}",
                what(),
                got[i],
                reference[i]
            );
        }
    }
    reference
}

#[test]
fn neon_runs_on_aarch64() {
    // Fails loudly, rather than comparing scalar with itself, if a build for
    // aarch64 lost its NEON kernels.
    if cfg!(target_arch = "aarch64") {
        assert!(Backend::Neon.is_available());
    }
}

// ---------------------------------------------------------------------------
// Softmax and log-softmax rows.

fn softmax_output<T: QuantElem>() -> QuantParams {
    match T::NAME {
        "int8" => QuantParams::new(1.0 / 256.0, -128),
        "uint8" => QuantParams::new(1.0 / 256.0, 0),
        _ => QuantParams::new(1.0 / 32768.0, 0),
    }
}

fn log_softmax_output<T: QuantElem>() -> QuantParams {
    QuantParams::new(16.0 / 256.0, if T::NAME == "int8" { 127 } else { 255 })
}

/// Checks one call of softmax (`log == false`) or log-softmax on `x` (rows
/// of `row_len`) against exact math.
fn check_rows<T: QuantElem>(
    log: bool,
    input: QuantParams,
    beta: f32,
    x: &[T],
    row_len: usize,
    stats: &mut Stats,
) {
    let output = if log {
        log_softmax_output::<T>()
    } else {
        softmax_output::<T>()
    };
    let what = || {
        format!(
            "{} {} scale {:e} zp {} beta {beta} row_len {row_len} len {}",
            if log { "log_softmax" } else { "softmax" },
            T::NAME,
            input.scale,
            input.zero_point,
            x.len()
        )
    };
    let got = if log {
        let op = LogSoftmax::<T>::new(input, output, Method::DequantF32).unwrap();
        run_backends(x.len(), &what, |b, y| {
            op.run_with(b, x, y, row_len).unwrap()
        })
    } else {
        let op = Softmax::<T>::new(input, beta, output, Method::DequantF32).unwrap();
        run_backends(x.len(), &what, |b, y| {
            op.run_with(b, x, y, row_len).unwrap()
        })
    };
    let c = beta as f64 * input.scale as f64;
    let os = output.scale as f64;
    for (r, (xr, yr)) in x.chunks(row_len).zip(got.chunks(row_len)).enumerate() {
        let max = xr.iter().map(|v| v.to_i32()).max().unwrap();
        let e: Vec<f64> = xr
            .iter()
            .map(|v| (c * (v.to_i32() - max) as f64).exp())
            .collect();
        let sum: f64 = e.iter().sum();
        let ln_sum = sum.ln();
        for (i, (&q, &y)) in xr.iter().zip(yr).enumerate() {
            let exact = if log {
                c * (q.to_i32() - max) as f64 - ln_sum
            } else {
                e[i] / sum
            };
            let want = quantize::<T>(exact / os, output.zero_point);
            stats.add(y.to_i32(), want, || {
                format!(
                    "{}, row {r} element {i} (q {q:?}, max {max}): got {y:?}, want {want} (exact {:.6} steps)",
                    what(),
                    exact / os
                )
            });
        }
    }
}

/// Rows of `len` for one grid point: every value of an 8-bit type (a stride
/// through all 256), and attention-like rows (normal logits in real units).
fn rows_8bit<T: QuantElem>(len: usize, input: QuantParams, rng: &mut Rng) -> Vec<Vec<T>> {
    let span = (T::MAX - T::MIN + 1) as u64;
    let mut rows = Vec::new();
    // All values: rows long enough hold each one; shorter rows start at
    // different offsets so the calls together cover all of them.
    let reps = (span as usize).div_ceil(len).min(32);
    let start = rng.below(span);
    let mut all = Vec::with_capacity(len * reps);
    for k in 0..(len * reps) as u64 {
        all.push(to_t::<T>(((start + k * 167) % span) as i32 + T::MIN));
    }
    rows.push(all);
    // Logits N(0, sigma) in real units, for a few spreads.
    for sigma in [0.5, 3.0, 12.0] {
        let r: Vec<T> = (0..len)
            .map(|_| {
                let v = (sigma * rng.normal() / input.scale as f64).round() as i64
                    + input.zero_point as i64;
                to_t::<T>(v.clamp(T::MIN as i64, T::MAX as i64) as i32)
            })
            .collect();
        rows.push(r);
    }
    rows
}

const ROW_LENS: [usize; 9] = [1, 15, 16, 17, 384, 1000, 2048, 2049, 5000];

fn rows_grid<T: QuantElem>(log: bool, zero_points: &[i32]) {
    let scales = [
        1.0 / 4096.0,
        0.001,
        0.01,
        0.0625,
        0.1,
        0.25,
        0.5,
        1.0,
        3.0,
        10.0,
    ];
    let betas: &[f32] = if log { &[1.0] } else { &[0.5, 1.0, 1.7] };
    let mut stats = Stats::default();
    let mut rng = Rng(0xdeca_f32a ^ T::MAX as u64);
    for &scale in &scales {
        for &zp in zero_points {
            let input = QuantParams::new(scale, zp);
            for &beta in betas {
                for &len in &ROW_LENS {
                    for x in rows_8bit::<T>(len, input, &mut rng) {
                        check_rows::<T>(log, input, beta, &x, len, &mut stats);
                    }
                }
            }
        }
    }
    stats.report(&format!(
        "{} {} DequantF32",
        if log { "log_softmax" } else { "softmax" },
        T::NAME
    ));
}

#[test]
fn softmax_i8_every_input_within_1_lsb() {
    rows_grid::<i8>(false, &[-128, 0, 100]);
}

#[test]
fn softmax_u8_every_input_within_1_lsb() {
    rows_grid::<u8>(false, &[0, 128, 255]);
}

#[test]
fn log_softmax_i8_every_input_within_1_lsb() {
    rows_grid::<i8>(true, &[-128, 0, 100]);
}

#[test]
fn log_softmax_u8_every_input_within_1_lsb() {
    rows_grid::<u8>(true, &[0, 128, 255]);
}

#[test]
fn softmax_i16_rows_within_1_lsb() {
    let mut stats = Stats::default();
    let mut rng = Rng(0x1616_f32f);
    for scale in [1.0 / 32768.0, 1.0 / 2048.0, 1e-4, 0.001, 0.01, 0.1] {
        let input = QuantParams::new(scale, 0);
        for beta in [0.5f32, 1.0, 2.0] {
            for &len in &ROW_LENS {
                // Normal logits in real units, and uniform over the type.
                for sigma in [0.5, 3.0, 10.0] {
                    let x: Vec<i16> = (0..len * 2)
                        .map(|_| {
                            let v = (sigma * rng.normal() / scale as f64).round();
                            v.clamp(-32768.0, 32767.0) as i16
                        })
                        .collect();
                    check_rows::<i16>(false, input, beta, &x, len, &mut stats);
                }
                let x: Vec<i16> = (0..len).map(|_| rng.next() as i16).collect();
                check_rows::<i16>(false, input, beta, &x, len, &mut stats);
            }
        }
    }
    stats.report("softmax int16 DequantF32");
}

/// Several rows per call, of many lengths (every tail length).
#[test]
fn softmax_many_rows_per_call() {
    let mut stats = Stats::default();
    let mut rng = Rng(0x5eed);
    for len in 1..=70 {
        for (scale, beta) in [(0.1f32, 1.0f32), (0.02, 2.0), (1.0, 0.3)] {
            let x: Vec<i8> = (0..len * 5).map(|_| rng.next() as i8).collect();
            check_rows::<i8>(false, QuantParams::new(scale, 3), beta, &x, len, &mut stats);
            check_rows::<i8>(true, QuantParams::new(scale, 3), 1.0, &x, len, &mut stats);
            let x: Vec<u8> = (0..len * 5).map(|_| rng.next() as u8).collect();
            check_rows::<u8>(false, QuantParams::new(scale, 3), beta, &x, len, &mut stats);
            check_rows::<u8>(true, QuantParams::new(scale, 3), 1.0, &x, len, &mut stats);
        }
    }
    stats.report("softmax/log_softmax 8-bit, lengths 1..=70 x 5 rows");
}

#[test]
fn softmax_edge_rows() {
    let mut stats = Stats::default();
    let q = |s: f32| QuantParams::new(s, 0);
    for scale in [1e-30f32, 1e-6, 0.1, 1.0, 100.0, 1e30, f32::MAX, 1e-45] {
        for len in [1usize, 2, 16, 17, 255, 256, 512, 1024, 3000] {
            // All equal: 1/len exactly (256 and 512 give exact ties at half a
            // step for int8: 1/512 * 256 = 0.5).
            for v in [-128i8, 0, 127] {
                let x = vec![v; len];
                check_rows::<i8>(false, q(scale), 1.0, &x, len, &mut stats);
                check_rows::<i8>(true, q(scale), 1.0, &x, len, &mut stats);
                let xu = vec![v as u8; len];
                check_rows::<u8>(false, q(scale), 1.0, &xu, len, &mut stats);
                check_rows::<u8>(true, q(scale), 1.0, &xu, len, &mut stats);
            }
            let x16 = vec![-32768i16; len];
            check_rows::<i16>(false, q(scale), 1.0, &x16, len, &mut stats);
            // One huge outlier at the end, the minimum everywhere else.
            let mut x = vec![-128i8; len];
            x[len - 1] = 127;
            check_rows::<i8>(false, q(scale), 1.0, &x, len, &mut stats);
            check_rows::<i8>(true, q(scale), 1.0, &x, len, &mut stats);
            let mut x16 = vec![-32768i16; len];
            x16[0] = 32767;
            check_rows::<i16>(false, q(scale), 1.0, &x16, len, &mut stats);
        }
    }
    // row_len 1 gives probability 1 (log 0) for every element.
    let x: Vec<i8> = (-128..=127).collect();
    check_rows::<i8>(false, q(0.1), 1.0, &x, 1, &mut stats);
    check_rows::<i8>(true, q(0.1), 1.0, &x, 1, &mut stats);
    let sm = Softmax::<i8>::new(q(0.1), 1.0, softmax_output::<i8>(), Method::DequantF32).unwrap();
    let mut y = vec![0i8; 256];
    sm.run(&x, &mut y, 1).unwrap();
    assert!(y.iter().all(|&v| v == 127));
    // Exact ties round away from zero: a row of 512 equal values is half a
    // step above -128 for int8.
    let mut y = vec![0i8; 512];
    sm.run(&[5i8; 512], &mut y, 512).unwrap();
    assert!(y.iter().all(|&v| v == -127), "{:?}", &y[..4]);
    stats.report("softmax/log_softmax edge rows");
}

// ---------------------------------------------------------------------------
// Logistic and tanh.

fn activation_output<T: QuantElem>(tanh: bool) -> QuantParams {
    match (tanh, T::NAME) {
        (false, "int8") => QuantParams::new(1.0 / 256.0, -128),
        (false, "uint8") => QuantParams::new(1.0 / 256.0, 0),
        (true, "int8") => QuantParams::new(1.0 / 128.0, 0),
        (true, "uint8") => QuantParams::new(1.0 / 128.0, 128),
        _ => QuantParams::new(1.0 / 32768.0, 0),
    }
}

/// Every input of `T` for each (scale, zero point), logistic or tanh.
fn activation_grid<T: QuantElem>(tanh: bool, scales: &[f32], zero_points: &[i32]) {
    let output = activation_output::<T>(tanh);
    let name = format!(
        "{} {} DequantF32",
        if tanh { "tanh" } else { "logistic" },
        T::NAME
    );
    let mut stats = Stats::default();
    // Every value, then again shifted by 5 (other lanes and a tail).
    let all: Vec<T> = (T::MIN..=T::MAX).map(to_t::<T>).collect();
    let shifted: Vec<T> = all[5..].to_vec();
    for &scale in scales {
        for &zp in zero_points {
            let input = QuantParams::new(scale, zp);
            let what = || format!("{name} scale {scale:e} zp {zp}");
            let y = if tanh {
                let op = Tanh::<T>::new(input, output, Method::DequantF32).unwrap();
                let y = run_backends(all.len(), &what, |b, y| op.run_with(b, &all, y).unwrap());
                let y2 = run_backends(shifted.len(), &what, |b, y| {
                    op.run_with(b, &shifted, y).unwrap()
                });
                assert_eq!(&y[5..], &y2[..], "{}", what());
                y
            } else {
                let op = Logistic::<T>::new(input, output, Method::DequantF32).unwrap();
                let y = run_backends(all.len(), &what, |b, y| op.run_with(b, &all, y).unwrap());
                let y2 = run_backends(shifted.len(), &what, |b, y| {
                    op.run_with(b, &shifted, y).unwrap()
                });
                assert_eq!(&y[5..], &y2[..], "{}", what());
                y
            };
            for (&q, &got) in all.iter().zip(&y) {
                let x = scale as f64 * (q.to_i32() - zp) as f64;
                let exact = if tanh {
                    x.tanh()
                } else {
                    1.0 / (1.0 + (-x).exp())
                };
                let v = exact / output.scale as f64;
                let want = quantize::<T>(v, output.zero_point);
                stats.add(got.to_i32(), want, || {
                    format!(
                        "{}: q {q:?} got {got:?} want {want} (exact {v:.6} steps)",
                        what()
                    )
                });
            }
        }
    }
    stats.report(&name);
}

const SCALES_8BIT: [f32; 12] = [
    1.0 / 4096.0,
    0.001,
    0.01,
    0.03,
    0.0625,
    0.1,
    0.125,
    0.3,
    1.0,
    4.0,
    10.0,
    1e30,
];
const SCALES_16BIT: [f32; 7] = [1.0 / 32768.0, 1.0 / 4096.0, 1e-4, 0.001, 0.01, 0.1, 3.0];

#[test]
fn logistic_i8_every_input_within_1_lsb() {
    activation_grid::<i8>(false, &SCALES_8BIT, &[-128, -3, 0, 127]);
}

#[test]
fn logistic_u8_every_input_within_1_lsb() {
    activation_grid::<u8>(false, &SCALES_8BIT, &[0, 100, 128, 255]);
}

#[test]
fn tanh_i8_every_input_within_1_lsb() {
    activation_grid::<i8>(true, &SCALES_8BIT, &[-128, -3, 0, 127]);
}

#[test]
fn tanh_u8_every_input_within_1_lsb() {
    activation_grid::<u8>(true, &SCALES_8BIT, &[0, 100, 128, 255]);
}

#[test]
fn logistic_i16_every_input_within_1_lsb() {
    activation_grid::<i16>(false, &SCALES_16BIT, &[0, -1000, 32767]);
}

#[test]
fn tanh_i16_every_input_within_1_lsb() {
    activation_grid::<i16>(true, &SCALES_16BIT, &[0, -1000, 32767]);
}

#[test]
fn run_uses_the_best_backend_and_checks_lengths() {
    let input = QuantParams::new(0.1, 0);
    let sm = Softmax::<i8>::new(input, 1.0, softmax_output::<i8>(), Method::DequantF32).unwrap();
    assert_eq!(sm.backend(), Backend::best());
    let x: Vec<i8> = (0..48).map(|v| (v * 5) as i8).collect();
    let mut a = vec![0i8; 48];
    let mut b = vec![0i8; 48];
    sm.run(&x, &mut a, 16).unwrap();
    sm.run_with(Backend::Scalar, &x, &mut b, 16).unwrap();
    assert_eq!(a, b);
    assert!(sm.run(&x, &mut a[..47], 16).is_err());
    assert!(sm.run(&x, &mut a, 0).is_err());
    assert!(sm.run(&x, &mut a, 5).is_err());
    let lg =
        Logistic::<u8>::new(input, activation_output::<u8>(false), Method::DequantF32).unwrap();
    assert!(lg.run(&[1u8, 2], &mut [0u8; 3]).is_err());
}
