//! int8 `Gemm` (fully connected) with every `Requantization` (single and
//! double rounding of the quantized multipliers, LiteRT's `RealF64`,
//! XNNPACK's `f32` scale, LiteRT's aarch64 GEMV rounding), every
//! fused activation, per-channel scales, with and without bias, every
//! backend; `set_weights` and `set_weights_transposed`.
//!
//! When `new` and `run` succeed, every output equals the documented
//! arithmetic computed here with the public references (`Rounding::multiply`
//! of `Rounding::quantize_multiplier(input * weight / output)`,
//! `quant::requantize_real_f64`, `quant::requantize_xnnpack_f32` of the
//! `f32` scale, or `quant::requantize_gemv_ties_upward` of the single
//! rounding's multiplier): `acc = sum (x - zp_x) w + bias` wrapping,
//! `clamp(requantized + zp_out, act_min, act_max)` (XNNPACK's bounds under
//! its requantization). Weights set from the
//! transpose give the same bytes; wrong lengths are errors.

#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use qneon::quant::{requantize_gemv_ties_upward, requantize_real_f64, requantize_xnnpack_f32};
use qneon::{FusedActivation, Gemm, QuantParams, Requantization, Rounding};
use qneon_fuzz::*;

#[derive(Arbitrary, Clone, Copy, Debug)]
enum Activation {
    None,
    Relu,
    Relu6,
}

#[derive(Arbitrary, Clone, Copy, Debug)]
enum RequantizationChoice {
    Single,
    Double,
    RealF64,
    XnnpackF32,
    GemvTiesUpward,
}

#[derive(Arbitrary, Debug)]
struct Case {
    /// `n % 24` output channels, `k % 40` deep, `m % 6` rows (0 is an error).
    n: u8,
    k: u8,
    m: u8,
    input: Quant,
    output: Quant,
    activation: Activation,
    requantization: RequantizationChoice,
    /// Per-channel weight scales, cycled to `n` (none: an error).
    weight_scales: Vec<Scale>,
    /// Biases cycled to `n`; `None`: no bias.
    bias: Option<Vec<i32>>,
    input_delta: Option<i8>,
    data: Vec<i8>,
}

fuzz_target!(|case: Case| check(&case));

/// `count` values of `data` from `offset`, cycled.
fn cycled<T: Copy + Default>(data: &[T], offset: usize, count: usize) -> Vec<T> {
    (0..count)
        .map(|i| {
            if data.is_empty() {
                T::default()
            } else {
                data[(i + offset) % data.len()]
            }
        })
        .collect()
}

struct Layer<'a> {
    n: usize,
    k: usize,
    bias: &'a [i32],
    input: QuantParams,
    scales: &'a [f32],
    output: QuantParams,
    range: (i32, i32),
    requantization: Requantization,
}

impl Layer<'_> {
    /// The documented output of `m` rows of `x` through weights `w` (`n x k`).
    fn reference(&self, x: &[i8], w: &[i8], m: usize) -> Vec<i8> {
        let mut out = Vec::with_capacity(m * self.n);
        for r in 0..m {
            for c in 0..self.n {
                let mut acc = self.bias[c];
                for d in 0..self.k {
                    let product = (x[r * self.k + d] as i32 - self.input.zero_point)
                        * w[c * self.k + d] as i32;
                    acc = acc.wrapping_add(product);
                }
                let real =
                    self.input.scale as f64 * self.scales[c] as f64 / self.output.scale as f64;
                let y = match self.requantization {
                    Requantization::Multiplier(rounding) => {
                        let q = rounding
                            .quantize_multiplier(real)
                            .expect("a valid multiplier");
                        rounding.multiply(acc, q)
                    }
                    Requantization::RealF64 => requantize_real_f64(acc, real),
                    Requantization::XnnpackF32 => {
                        let scale = self.input.scale * self.scales[c] / self.output.scale;
                        requantize_xnnpack_f32(acc, scale)
                    }
                    Requantization::GemvTiesUpward => {
                        let q = Rounding::Single
                            .quantize_multiplier(real)
                            .expect("a valid multiplier");
                        requantize_gemv_ties_upward(acc, q.multiplier, q.shift)
                    }
                };
                let y = (y as i64 + self.output.zero_point as i64)
                    .clamp(self.range.0 as i64, self.range.1 as i64);
                out.push(y as i8);
            }
        }
        out
    }
}

fn run_all(gemm: &Gemm, x: &[i8], output_len: usize, m: usize) -> (qneon::Result<()>, Vec<i8>) {
    on_every_backend(
        output_len,
        0x55i8,
        |a, b| a == b,
        |backend, out| match backend {
            None => gemm.run(x, out, m),
            Some(b) => gemm.run_with(b, x, out, m),
        },
    )
}

fn check(case: &Case) {
    let (n, k, m) = (
        case.n as usize % 24,
        case.k as usize % 40,
        case.m as usize % 6,
    );
    let input = case.input.get::<i8>();
    let output = case.output.get::<i8>();
    let activation = match case.activation {
        Activation::None => FusedActivation::None,
        Activation::Relu => FusedActivation::Relu,
        Activation::Relu6 => FusedActivation::Relu6,
    };
    let requantization = match case.requantization {
        RequantizationChoice::Single => Requantization::Multiplier(Rounding::Single),
        RequantizationChoice::Double => Requantization::Multiplier(Rounding::Double),
        RequantizationChoice::RealF64 => Requantization::RealF64,
        RequantizationChoice::XnnpackF32 => Requantization::XnnpackF32,
        RequantizationChoice::GemvTiesUpward => Requantization::GemvTiesUpward,
    };
    let scales: Vec<f32> = if case.weight_scales.is_empty() {
        Vec::new()
    } else {
        let len = case.weight_scales.len();
        (0..n).map(|c| case.weight_scales[c % len].get()).collect()
    };
    let bias = case.bias.as_ref().map(|b| cycled(b, 0, n));
    let weights = cycled(&case.data, 3, n * k);
    let made = Gemm::new(
        &weights,
        n,
        k,
        bias.as_deref(),
        input,
        &scales,
        output,
        activation,
        requantization,
    );
    let Ok(mut gemm) = made else {
        return;
    };
    assert!(
        n > 0 && k > 0 && scales.len() == n,
        "Gemm::new accepted n {n}, k {k}, {} scales",
        scales.len()
    );
    assert_eq!((gemm.n(), gemm.k()), (n, k));
    assert_eq!(gemm.requantization(), requantization);
    let range = activation.range_i8_for(output, requantization);
    assert_eq!(gemm.activation_range(), range);

    let input_len =
        (m as isize * k as isize + case.input_delta.unwrap_or(0) as isize).max(0) as usize;
    let x = cycled(&case.data, 0, input_len);
    let (result, y) = run_all(&gemm, &x, m * n, m);
    assert_eq!(
        result.is_ok(),
        input_len == m * k,
        "input of {input_len} for m {m} k {k}: {result:?}"
    );
    if result.is_err() {
        return;
    }
    reached(|| {
        format!(
            "gemm {requantization:?} {activation:?} bias {}",
            bias.is_some()
        )
    });
    let zeros = vec![0i32; n];
    let layer = Layer {
        n,
        k,
        bias: bias.as_deref().unwrap_or(&zeros),
        input,
        scales: &scales,
        output,
        range,
        requantization,
    };
    let what =
        format!("gemm n {n} k {k} m {m} {requantization:?} {activation:?} {input:?} -> {output:?}");
    assert_eq!(
        y,
        layer.reference(&x, &weights, m),
        "{what}: differs from the documented arithmetic"
    );

    // The same weights from their transpose: the same bytes.
    let transposed: Vec<i8> = (0..k * n).map(|i| weights[(i % n) * k + i / n]).collect();
    gemm.set_weights_transposed(&transposed)
        .expect("k x n weights refused");
    let (_, y_t) = run_all(&gemm, &x, m * n, m);
    assert_eq!(y_t, y, "{what}: weights set from the transpose differ");

    // Other weights: the reference again.
    let other = cycled(&case.data, 11, n * k);
    gemm.set_weights(&other).expect("n x k weights refused");
    let (_, y_other) = run_all(&gemm, &x, m * n, m);
    assert_eq!(
        y_other,
        layer.reference(&x, &other, m),
        "{what}: after set_weights"
    );
    assert!(
        gemm.set_weights(&other[..n * k - 1]).is_err(),
        "short weights accepted"
    );
}
