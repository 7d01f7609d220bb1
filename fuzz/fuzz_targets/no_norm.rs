//! int8 `NoNorm` through `new` and `from_f32`, every fused activation,
//! every backend.
//!
//! When `new` and `run` succeed, every output equals the documented
//! arithmetic computed here with the public double-rounding reference:
//! `clamp(MBQM((x - zp_x) gamma_q[c] + beta_q[c], scale_x gamma_scale[c] /
//! scale_out) + zp_out, act_min, act_max)` (the sum wrapping, as the
//! kernels' lanes do). `from_f32` must equal `new` on the gammas and betas
//! it documents (`+-127` steps of `|gamma| / 127`, betas rounded half away
//! from zero and saturated). Wrong lengths must be errors.

#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use qneon::{FusedActivation, NoNorm, QuantParams, Rounding};
use qneon_fuzz::*;

#[derive(Arbitrary, Clone, Copy, Debug)]
struct Channel {
    gamma: i8,
    gamma_scale: Scale,
    beta: i32,
    /// `from_f32`'s real gamma and beta.
    gamma_real: Scale,
    negative_gamma: bool,
    beta_real: Scale,
}

#[derive(Arbitrary, Clone, Copy, Debug)]
enum Activation {
    None,
    Relu,
    Relu6,
}

#[derive(Arbitrary, Debug)]
struct Case {
    from_f32: bool,
    input: Quant,
    output: Quant,
    activation: Activation,
    /// Channels dropped from the end of the betas (an error unless 0).
    short_betas: Option<u8>,
    output_delta: Option<i8>,
    channels: Vec<Channel>,
    data: Vec<i8>,
}

fuzz_target!(|case: Case| check(&case));

/// The documented per-element arithmetic of NoNorm.
fn reference(
    x: i8,
    gamma: i8,
    gamma_scale: f32,
    beta: i32,
    input: QuantParams,
    output: QuantParams,
    range: (i32, i32),
) -> i8 {
    let acc = ((x as i32 - input.zero_point) * gamma as i32).wrapping_add(beta);
    let real = input.scale as f64 * gamma_scale as f64 / output.scale as f64;
    let q = Rounding::Double
        .quantize_multiplier(real)
        .expect("a valid multiplier");
    let y = Rounding::Double.multiply(acc, q) as i64 + output.zero_point as i64;
    y.clamp(range.0 as i64, range.1 as i64) as i8
}

fn check(case: &Case) {
    let input = case.input.get::<i8>();
    let output = case.output.get::<i8>();
    let activation = match case.activation {
        Activation::None => FusedActivation::None,
        Activation::Relu => FusedActivation::Relu,
        Activation::Relu6 => FusedActivation::Relu6,
    };
    let channels = &case.channels;
    let beta_len = channels.len() - (case.short_betas.unwrap_or(0) as usize).min(channels.len());
    // The quantized gammas, scales and betas: given (`new`), or derived as
    // `from_f32` documents.
    let (gamma, scales, beta): (Vec<i8>, Vec<f32>, Vec<i32>) = if case.from_f32 {
        let reals: Vec<(f32, f32)> = channels
            .iter()
            .map(|c| {
                let g = c.gamma_real.get();
                (if c.negative_gamma { -g } else { g }, c.beta_real.get())
            })
            .collect();
        let g: Vec<f32> = reals.iter().map(|r| r.0).collect();
        let b: Vec<f32> = reals[..beta_len].iter().map(|r| r.1).collect();
        let made = NoNorm::from_f32(&g, &b, input, output, activation);
        let mut derived = (Vec::new(), Vec::new(), Vec::new());
        for &(g, b) in &reals {
            let s = g.abs() / 127.0;
            let (q, s) = if s == 0.0 {
                (0i8, 1.0f32)
            } else {
                (if g > 0.0 { 127 } else { -127 }, s)
            };
            let real = b as f64 / (input.scale as f64 * s as f64);
            derived.0.push(q);
            derived.1.push(s);
            derived
                .2
                .push(real.round().clamp(i32::MIN as f64, i32::MAX as f64) as i32);
        }
        let Ok(op) = made else {
            return;
        };
        assert_eq!(beta_len, channels.len(), "from_f32 accepted too few betas");
        let from_new = NoNorm::new(
            &derived.0, &derived.1, &derived.2, input, output, activation,
        )
        .expect("from_f32 accepted what new refuses");
        run_and_check(
            &op, case, &derived.0, &derived.1, &derived.2, input, output, activation,
        );
        let data = rows(case, channels.len());
        let (mut a, mut b) = (vec![0i8; data.len()], vec![0i8; data.len()]);
        op.run(&data, &mut a).expect("whole rows refused");
        from_new.run(&data, &mut b).expect("whole rows refused");
        assert_eq!(
            a, b,
            "from_f32 and new on its documented quantization differ"
        );
        reached(|| "no_norm from_f32 == new".to_string());
        return;
    } else {
        (
            channels.iter().map(|c| c.gamma).collect(),
            channels.iter().map(|c| c.gamma_scale.get()).collect(),
            channels[..beta_len].iter().map(|c| c.beta).collect(),
        )
    };
    let Ok(op) = NoNorm::new(&gamma, &scales, &beta, input, output, activation) else {
        return;
    };
    assert_eq!(beta_len, channels.len(), "new accepted too few betas");
    run_and_check(&op, case, &gamma, &scales, &beta, input, output, activation);
}

/// The input: whole rows of `channels` from the data.
fn rows(case: &Case, channels: usize) -> Vec<i8> {
    let whole = case.data.len() / channels * channels;
    case.data[..whole].to_vec()
}

#[allow(clippy::too_many_arguments)]
fn run_and_check(
    op: &NoNorm,
    case: &Case,
    gamma: &[i8],
    scales: &[f32],
    beta: &[i32],
    input: QuantParams,
    output: QuantParams,
    activation: FusedActivation,
) {
    let channels = gamma.len();
    assert_eq!(op.channels(), channels);
    let x = rows(case, channels);
    let output_len = match case.output_delta {
        Some(d) => (x.len() as isize + d as isize).max(0) as usize,
        None => x.len(),
    };
    let (result, y) = on_every_backend(
        output_len,
        0x55i8,
        |a, b| a == b,
        |backend, out| match backend {
            None => op.run(&x, out),
            Some(b) => op.run_with(b, &x, out),
        },
    );
    assert_eq!(
        result.is_ok(),
        output_len == x.len(),
        "lengths {} / {output_len}: {result:?}",
        x.len()
    );
    if result.is_err() {
        return;
    }
    reached(|| format!("no_norm {}", if case.from_f32 { "from_f32" } else { "new" }));
    let range = activation.range_i8(output);
    for (i, (&xv, &got)) in x.iter().zip(&y).enumerate() {
        let c = i % channels;
        let want = reference(xv, gamma[c], scales[c], beta[c], input, output, range);
        assert_eq!(
            got, want,
            "element {i} (channel {c}, x {xv}, gamma {} scale {:e} beta {}, {input:?} -> {output:?}, {activation:?})",
            gamma[c], scales[c], beta[c]
        );
    }
}
