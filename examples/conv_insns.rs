//! Runs one int8 CONV_2D `reps` times, for counting instructions per MAC
//! under an instruction-counting emulator: count the runs with `reps` = R
//! and 2R and divide the difference by `R * MACs`.
//!
//! `conv_insns H W CIN COUT KH KW STRIDE SAME REPS [neon|scalar] [double|single]`
//! (defaults: MobileNet's first layer, 224 224 3 32 3 3 2 1 1 neon single;
//! SAME 1 for TFLite's SAME padding, 0 for VALID). `neon` runs the
//! implicit GEMM with the layer's own scratch, `scalar` the scalar loops
//! (what every non-pointwise layer ran before the implicit GEMM).

use qneon::ops::conv::{ConvGeometry, Padding};
use qneon::{Backend, Conv2d, ConvQuantization, ConvRequantization, FusedActivation};
use qneon::{QuantParams, Rounding};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let num = |i: usize, default: usize| -> usize {
        args.get(i)
            .map(|s| s.parse().expect("a number"))
            .unwrap_or(default)
    };
    let (h, w, cin, cout) = (num(0, 224), num(1, 224), num(2, 3), num(3, 32));
    let (kh, kw, stride, same, reps) = (num(4, 3), num(5, 3), num(6, 2), num(7, 1), num(8, 1));
    let backend = match args.get(9).map(String::as_str) {
        Some("scalar") => Backend::Scalar,
        _ => Backend::best(),
    };
    let rounding = match args.get(10).map(String::as_str) {
        Some("double") => Rounding::Double,
        _ => Rounding::Single,
    };
    let padding = if same == 1 {
        Padding::Same
    } else {
        Padding::Valid
    };
    let g = ConvGeometry::tflite(
        "conv_insns",
        padding,
        [1, h, w, cin],
        cout,
        [kh, kw],
        [stride, stride],
        [1, 1],
    )
    .expect("a valid geometry");

    // Deterministic pseudo-random data (the values do not change the count).
    let mut state = 0x1234_5678_u32;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        state as i8
    };
    let weights: Vec<i8> = (0..cout * kh * kw * cin)
        .map(|_| next().max(-127))
        .collect();
    let x: Vec<i8> = (0..h * w * cin).map(|_| next()).collect();
    let bias: Vec<i32> = (0..cout as i32).map(|i| i * 100 - 5000).collect();
    let scales: Vec<f32> = (0..cout).map(|i| 0.001 + 0.0001 * (i % 7) as f32).collect();
    let q = ConvQuantization {
        input: QuantParams::new(0.05, -3),
        weight_scales: &scales,
        output: QuantParams::new(0.5, 4),
        activation: FusedActivation::Relu6,
        requantization: ConvRequantization::Multiplier(rounding),
    };
    let conv = Conv2d::new(g, cin, &weights, Some(&bias), &q).expect("valid parameters");
    let mut y = vec![0i8; g.output_height * g.output_width * cout];
    let mut scratch = vec![0i8; conv.scratch_bytes()];
    for _ in 0..reps {
        conv.run_rows_with_scratch(backend, &x, &mut y, 0..conv.rows(), &mut scratch)
            .expect("run");
        std::hint::black_box(&mut y);
    }
    let macs = g.output_height * g.output_width * cout * kh * kw * cin;
    let checksum: i64 = y.iter().map(|&v| v as i64).sum();
    println!(
        "{}x{}x{cin} -> {}x{}x{cout}, {kh}x{kw} s{stride} macs={macs} reps={reps} backend={} \
         scratch={} checksum={checksum}",
        h,
        w,
        g.output_height,
        g.output_width,
        backend.name(),
        conv.scratch_bytes(),
    );
}
