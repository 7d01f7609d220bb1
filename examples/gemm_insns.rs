//! Runs one int8 GEMM `reps` times, for counting instructions per MAC under an
//! instruction-counting emulator: count the runs with `reps` = R and 2R and
//! divide the difference by `R * m * n * k`.
//!
//! `gemm_insns M N K REPS [dot|mmla|widening|scalar] [double|single]` (defaults:
//! 384 128 512 1 dot double).

use qneon::ops::GemmPath;
use qneon::{Backend, FusedActivation, Gemm, QuantParams, Rounding};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let num = |i: usize, default: usize| -> usize {
        args.get(i)
            .map(|s| s.parse().expect("a number"))
            .unwrap_or(default)
    };
    let (m, n, k, reps) = (num(0, 384), num(1, 128), num(2, 512), num(3, 1));
    let path = args.get(4).map(String::as_str).unwrap_or("dot");
    let rounding = match args.get(5).map(String::as_str) {
        Some("single") => Rounding::Single,
        _ => Rounding::Double,
    };

    // Deterministic pseudo-random data (the values do not change the count).
    let mut state = 0x1234_5678_u32;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        state as i8
    };
    // Weights in -127..=127, as TFLite's symmetric per-channel quantization
    // produces them (the widening path adds two products in 16 bits then).
    let w: Vec<i8> = (0..n * k).map(|_| next().max(-127)).collect();
    let x: Vec<i8> = (0..m * k).map(|_| next()).collect();
    let bias: Vec<i32> = (0..n as i32).map(|i| i * 100 - 5000).collect();
    let scales: Vec<f32> = (0..n).map(|i| 0.001 + 0.0001 * (i % 7) as f32).collect();
    let g = Gemm::new(
        &w,
        n,
        k,
        Some(&bias),
        QuantParams::new(0.05, -3),
        &scales,
        QuantParams::new(0.5, 4),
        FusedActivation::Relu,
        rounding,
    )
    .expect("valid parameters");
    let mut y = vec![0i8; m * n];
    for _ in 0..reps {
        let r = match path {
            "dot" => g.run_neon_path(GemmPath::Dot, &x, &mut y, m),
            "widening" => g.run_neon_path(GemmPath::Widening, &x, &mut y, m),
            "mmla" => g.run_neon_path(GemmPath::Mmla, &x, &mut y, m),
            _ => g.run_with(Backend::Scalar, &x, &mut y, m),
        };
        r.expect("run");
        std::hint::black_box(&mut y);
    }
    let checksum: i64 = y.iter().map(|&v| v as i64).sum();
    println!(
        "m={m} n={n} k={k} reps={reps} path={path} rounding={} checksum={checksum}",
        rounding.name()
    );
}
