//! Runs one int8 product of two run-time operands ([`qneon::MatMul`], one
//! matrix of BATCH_MATMUL: packing, zero-point sums and the GEMM kernel)
//! `reps` times, for counting instructions per MAC under an
//! instruction-counting emulator: count the runs with `reps` = R and 2R and
//! divide the difference by `R * m * n * k`.
//!
//! `matmul_insns M N K REPS [dot|widening|scalar] [double|single] [adj_y|plain]`
//! (defaults: 384 384 32 1 dot double adj_y, MobileBert's `Q K^T` of one
//! head; its `P V` is `384 32 384 .. plain`).

use qneon::ops::GemmPath;
use qneon::{Backend, MatMul, QuantParams, Rounding};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let num = |i: usize, default: usize| -> usize {
        args.get(i)
            .map(|s| s.parse().expect("a number"))
            .unwrap_or(default)
    };
    let (m, n, k, reps) = (num(0, 384), num(1, 384), num(2, 32), num(3, 1));
    let path = args.get(4).map(String::as_str).unwrap_or("dot");
    let rounding = match args.get(5).map(String::as_str) {
        Some("single") => Rounding::Single,
        _ => Rounding::Double,
    };
    let adj_y = args.get(6).map(String::as_str) != Some("plain");

    // Deterministic pseudo-random data (the values do not change the count).
    let mut state = 0x1234_5678_u32;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        state as i8
    };
    let x: Vec<i8> = (0..m * k).map(|_| next()).collect();
    let y: Vec<i8> = (0..k * n).map(|_| next()).collect();
    // Both zero points non-zero, as attention's activations have them.
    let g = MatMul::new(
        m,
        n,
        k,
        false,
        adj_y,
        QuantParams::new(0.05, -3),
        QuantParams::new(0.04, 7),
        QuantParams::new(0.5, 4),
        rounding,
    )
    .expect("valid parameters");
    let mut out = vec![0i8; m * n];
    let mut bytes = vec![0i8; g.scratch_bytes()];
    let mut words = vec![0i32; g.scratch_words()];
    for _ in 0..reps {
        let r = match path {
            "dot" => g.run_neon_path(GemmPath::Dot, &x, &y, &mut out, &mut bytes, &mut words),
            "widening" => {
                g.run_neon_path(GemmPath::Widening, &x, &y, &mut out, &mut bytes, &mut words)
            }
            _ => g.run_with(Backend::Scalar, &x, &y, &mut out, &mut bytes, &mut words),
        };
        r.expect("run");
        std::hint::black_box(&mut out);
    }
    let checksum: i64 = out.iter().map(|&v| v as i64).sum();
    println!(
        "m={m} n={n} k={k} reps={reps} path={path} rounding={} adj_y={adj_y} checksum={checksum}",
        rounding.name()
    );
}
