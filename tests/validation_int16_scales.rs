//! Every int16 method of logistic, tanh and softmax at every magnitude of
//! input scale (subnormal to `f32::MAX`) against the real-valued function.
//!
//! int16 `Method::Lut` follows TFLite's kernels, which are wrong at extreme
//! scales: below about 3.8e-14 (a zero multiplier) TFLite's logistic and tanh
//! fall back to a kernel that reads the input as if the scale were 2^-12
//! (`Logistic::<i16>` at scale 1e-30 gave 11 for -32768 instead of 16384,
//! tanh -32767 instead of 0); above about 16/3 their int32 rescaling
//! overflows (softmax: `scale * beta` above about 5), and an infinite
//! `scale * beta` was an error naming no parameter. qneon computes the
//! function there (the op docs say where it leaves TFLite's bytes).
//!
//! Bounds, in output steps (1/32768), against the exact value clamped to the
//! int16 range:
//! * `Method::FixedPoint` and `Method::DequantF32`: within 1 LSB of the
//!   correctly rounded result (README's accuracy tables);
//! * `Method::Lut` logistic / tanh on the table path (every scale but those
//!   near 2^-12, and 2^-11 for tanh): the sum of the worst cases of its
//!   steps, in LSB: table entries (TFLite's constants lie up to 1.11 Q0.16
//!   steps off, 0.56 LSB), linear interpolation over steps of 1/24
//!   (`h^2/8 max|f''|`: 0.69), the rounded rescaled input (half a step of
//!   1/12288 times the slope: 0.34), the truncated multiplier (relative
//!   error below 2^-14, times `max |v f'(v)|`: 0.45) and the output
//!   rounding (0.5): 2.54 for logistic; tanh reads the table at `2v` and
//!   doubles it, 1.11 + 1.37 + 1.34 + 0.90 + 0.5 = 5.22. (Measured over
//!   3,000 log-uniform scales in [1e-9, 10]: 1.53 and 3.14; `tests/lut_int16.rs`
//!   asserts the tighter 1.34 / 2.74 measured at its 12 scales.)
//! * `Method::Lut` at the scales TFLite computes in 16-bit fixed point
//!   (within 1e-3 in log2 of 2^-12, tanh also 2^-11; the input is read as if
//!   the scale were exactly that power of two): 6.4 / 11.8 LSB measured at
//!   the power of two (`tests/lut_int16.rs`), plus the snapping,
//!   `32768 max|v f'(v)| |scale / 2^k - 1|`;
//! * `Method::Lut` softmax: `exact * 2n / (32768 sum) + 2` LSB (each exp is
//!   floored at `exp(-10)` and off by up to 2 Q0.15 steps; `tests/lut_int16.rs`).

use proptest::prelude::*;
use qneon::{Backend, Logistic, Method, QuantParams, Softmax, Tanh};

const OUT: QuantParams = QuantParams::new(1.0 / 32768.0, 0);
const METHODS: [Method; 3] = [Method::Lut, Method::FixedPoint, Method::DequantF32];

/// Scales at every magnitude and at the edges of TFLite's kernel choices.
fn special_scales() -> Vec<f32> {
    let mut s = vec![
        f32::from_bits(1), // the smallest subnormal
        1e-44,
        f32::MIN_POSITIVE / 2.0, // subnormal
        f32::MIN_POSITIVE,
        1e-30,
        1e-20,
        1e-15,
        3.7e-14, // the table multiplier rounds to 0 below about 3.8e-14
        3.9e-14,
        1e-13,
        1e-10,
        6e-10,
        1e-7,
        2f32.powi(-12),
        2f32.powi(-12) * 1.0006, // snapped to 2^-12 by TFLite's Prepare
        2f32.powi(-12) * 0.9994,
        2f32.powi(-12) * 1.0008, // not snapped
        2f32.powi(-11),
        2f32.powi(-11) * 1.0006,
        0.1,
        1.0,
        5.3,
        5.34, // int32 rescaling overflows in TFLite from about 16/3
        6.0,
        20.0,
        1e3,
        1.7e5, // the multiplier leaves int32 from about 175,000
        1.8e5,
        1e10,
        1e30,
        f32::MAX / 2.0,
        f32::MAX,
    ];
    s.sort_by(f32::total_cmp);
    s
}

/// Every int16 value.
fn all_inputs() -> Vec<i16> {
    (i16::MIN..=i16::MAX).collect()
}

/// 4,096 inputs: a strided sweep and the ends, for the random scales.
fn sampled_inputs() -> Vec<i16> {
    let mut v: Vec<i16> = (0..4093).map(|i| (-32768 + i * 16) as i16).collect();
    v.extend([-1, 1, i16::MAX]);
    v
}

/// The power of two TFLite's int16 `Prepare` snaps `scale` to (its
/// `CheckedLog2`: within 1e-3 in log2) when it takes the 16-bit fixed-point
/// kernel: 2^-12, and for tanh also 2^-11.
fn snapped_power_of_two(tanh: bool, scale: f32) -> Option<f64> {
    let log2 = scale.ln() * (1.0f32 / std::f32::consts::LN_2);
    let k = log2.round();
    let fixed_point = (log2 - k).abs() < 1e-3 && (k == -12.0 || (tanh && k == -11.0));
    fixed_point.then(|| 2f64.powi(k as i32))
}

/// The worst excess over the bound of one method on one scale (`<= 0`: within).
fn activation_excess(tanh: bool, method: Method, scale: f32, x: &[i16]) -> f64 {
    let q_in = QuantParams::new(scale, 0);
    let mut worst = f64::NEG_INFINITY;
    for backend in Backend::available() {
        let mut y = vec![0i16; x.len()];
        if tanh {
            Tanh::<i16>::new(q_in, OUT, method)
                .unwrap()
                .run_with(backend, x, &mut y)
                .unwrap();
        } else {
            Logistic::<i16>::new(q_in, OUT, method)
                .unwrap()
                .run_with(backend, x, &mut y)
                .unwrap();
        }
        for (q, got) in x.iter().zip(&y) {
            let v = scale as f64 * *q as f64;
            let f = if tanh {
                v.tanh()
            } else {
                1.0 / (1.0 + (-v).exp())
            };
            let exact = (32768.0 * f).clamp(-32768.0, 32767.0);
            let got = *got as f64;
            let excess = match method {
                Method::Lut => {
                    // max |v f'(v)|: logistic 0.2240 (v = 1.543), tanh 0.4482 (v = 0.772).
                    let (table, fixed_point, max_v_slope) = if tanh {
                        (5.22, 11.8, 0.4483)
                    } else {
                        (2.54, 6.4, 0.2241)
                    };
                    let bound = match snapped_power_of_two(tanh, scale) {
                        None => table,
                        Some(p) => {
                            fixed_point + 32768.0 * max_v_slope * (scale as f64 / p - 1.0).abs()
                        }
                    };
                    (got - exact).abs() - bound
                }
                // Within 1 LSB of the correctly rounded value.
                _ => (got - exact.round()).abs() - 1.0,
            };
            if excess > worst {
                worst = excess;
            }
            assert!(
                excess <= 0.0,
                "{} {method:?} {backend:?} scale {scale:e}: input {q} gives {got}, exact {exact}",
                if tanh { "tanh" } else { "logistic" }
            );
        }
    }
    worst
}

#[test]
fn logistic_tanh_every_int16_method_at_extreme_scales() {
    let x = all_inputs();
    for scale in special_scales() {
        for tanh in [false, true] {
            for method in METHODS {
                activation_excess(tanh, method, scale, &x);
            }
        }
    }
}

/// Softmax rows for one scale and beta: Lut within its floor bound, the
/// others within 1 LSB of the correctly rounded probabilities.
fn check_softmax(method: Method, scale: f32, beta: f32, rows: &[Vec<i16>]) {
    let made = Softmax::<i16>::new(QuantParams::new(scale, 0), beta, OUT, method);
    // Lut refuses where TFLite's 32-bit input rescaling overflows: a
    // difference of 65535 times `scale * beta / (10 / 65535)` past 2^31
    // (the multiplier's quantization decides within a hair of 2^15).
    if method == Method::Lut {
        let rescale = (scale * beta) as f64 / (10.0 / 65535.0);
        if rescale >= 32768.0 {
            let e = made.err().unwrap_or_else(|| {
                panic!("Lut scale {scale:e} beta {beta:e}: TFLite overflows here, must be refused")
            });
            assert!(e.to_string().contains("input scale * beta"), "{e}");
            return;
        }
        if rescale > 32767.99 && made.is_err() {
            return;
        }
    }
    let op = made.unwrap_or_else(|e| panic!("{method:?} scale {scale:e} beta {beta:e}: {e}"));
    for backend in Backend::available() {
        for row in rows {
            let mut y = vec![0i16; row.len()];
            op.run_with(backend, row, &mut y, row.len()).unwrap();
            let max = *row.iter().max().unwrap() as f64;
            let k = scale as f64 * beta as f64;
            // d = 0 contributes exp(0) = 1 even where k is infinite in f64.
            let e: Vec<f64> = row
                .iter()
                .map(|&q| {
                    if q as f64 == max {
                        1.0
                    } else {
                        (k * (q as f64 - max)).exp()
                    }
                })
                .collect();
            let sum: f64 = e.iter().sum();
            for (i, (ei, got)) in e.iter().zip(&y).enumerate() {
                let exact = (32768.0 * ei / sum).min(32767.0);
                let got = *got as f64;
                let excess = match method {
                    Method::Lut => {
                        (got - exact).abs() - exact * 2.0 * row.len() as f64 / (32768.0 * sum) - 2.0
                    }
                    _ => (got - exact.round()).abs() - 1.0,
                };
                assert!(
                    excess <= 0.0,
                    "softmax {method:?} {backend:?} scale {scale:e} beta {beta:e}: row of {} \
                     element {i} ({}) gives {got}, exact {exact}",
                    row.len(),
                    row[i]
                );
            }
        }
    }
}

fn softmax_rows() -> Vec<Vec<i16>> {
    vec![
        vec![-32768, 32767],
        vec![0, 1, -1, 2, -2, 100, -100],
        (0..64).map(|i| (i * 1021 - 32768) as i16).collect(),
        (0..17)
            .map(|i| if i % 2 == 0 { -32768 } else { 32767 })
            .collect(),
        vec![5; 9],
        (0..300)
            .map(|i| ((i * 7919) % 65536 - 32768) as i16)
            .collect(),
    ]
}

#[test]
fn softmax_every_int16_method_at_extreme_scales_and_betas() {
    let rows = softmax_rows();
    for scale in special_scales() {
        for beta in [f32::from_bits(1), 1e-30, 1e-3, 1.0, 10.0, 1e30, f32::MAX] {
            for method in METHODS {
                check_softmax(method, scale, beta, &rows);
            }
        }
    }
}

/// A positive finite `f32` from its bits: about log-uniform over every magnitude.
fn any_scale() -> impl Strategy<Value = f32> {
    (1u32..0x7f80_0000).prop_map(f32::from_bits)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn logistic_tanh_within_bounds_at_random_scales(scale in any_scale()) {
        let x = sampled_inputs();
        for tanh in [false, true] {
            for method in METHODS {
                activation_excess(tanh, method, scale, &x);
            }
        }
    }

    #[test]
    fn softmax_within_bounds_at_random_scales(scale in any_scale(), beta in any_scale()) {
        let rows = softmax_rows();
        for method in METHODS {
            check_softmax(method, scale, beta, &rows);
        }
    }
}

/// The parameters, where TFLite's int16 softmax overflows its 32-bit
/// rescaling (input scale 1.0 with beta 10, 0.1 with beta 100, rows of 16):
/// `Method::Lut` refuses with an error naming the limit; the other methods
/// run, within 1 LSB of the correctly rounded probabilities.
#[test]
fn int16_softmax_lut_refuses_where_tflite_overflows() {
    let rows: Vec<Vec<i16>> = (0..8)
        .map(|r| {
            (0..16)
                .map(|i| ((i * 37 + r * 11) % 64 - 32) as i16)
                .collect()
        })
        .collect();
    for (scale, beta) in [(1.0f32, 10.0f32), (0.1, 100.0)] {
        let lut = Softmax::<i16>::new(QuantParams::new(scale, 0), beta, OUT, Method::Lut);
        let e = lut.expect_err("Lut must refuse");
        let text = e.to_string();
        assert!(
            text.contains("input scale * beta") && text.contains("5.0"),
            "{text}"
        );
        for method in [Method::FixedPoint, Method::DequantF32] {
            check_softmax(method, scale, beta, &rows);
        }
    }
    // Just inside the limit Lut runs.
    check_softmax(Method::Lut, 4.9, 1.0, &rows);
}
