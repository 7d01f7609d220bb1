//! `qneon::f32` and NaN: every NaN input, whatever its payload, sign or
//! quietness, gives NaN from every kernel on every backend; a NaN anywhere
//! in a softmax or log-softmax row makes the whole row NaN (and no other
//! row); finite inputs never give NaN. Runs on the host (scalar) and under
//! qemu (scalar and NEON).
//!
//! The kernels scale by `2^n` with an integer addition to the exponent
//! bits; a NaN used to reach that addition with a payload-dependent `n` and
//! come out as a number (`exp(0x7f800001)` was `-5.9e-39`, `sigmoid` of
//! 16,798 of 16,833 sampled NaN patterns was not NaN).

mod common;
use common::Rng;
use qneon::f32 as qf;
use qneon::f32::SoftmaxVariant;
use qneon::Backend;

fn backends() -> Vec<Backend> {
    Backend::available().collect()
}

const EXPONENT_ALL_ONES: u32 = 0x7f80_0000;
const SIGN: u32 = 0x8000_0000;
const MANTISSA: u32 = 0x007f_ffff;
/// The quiet bit: the top mantissa bit.
const QUIET: u32 = 0x0040_0000;

/// NaN bit patterns: every `stride`-th payload of the 2^23 - 1 (both signs),
/// the class extremes (smallest and largest signalling and quiet payloads),
/// every single-bit payload and its complement, and `random` random ones.
fn nan_patterns(stride: u32, random: usize) -> Vec<u32> {
    let mut bits = Vec::new();
    for sign in [0, SIGN] {
        bits.extend(
            (1..=MANTISSA)
                .step_by(stride as usize)
                .map(|m| sign | EXPONENT_ALL_ONES | m),
        );
        let classes = [
            1,           // smallest signalling payload
            QUIET - 1,   // largest signalling payload
            QUIET,       // the default quiet NaN
            QUIET | 1,   // smallest quiet payload with a set low bit
            MANTISSA,    // largest quiet payload
            0x000f_f880, // a probe counterexample (sigmoid gave -1.6)
        ];
        bits.extend(classes.iter().map(|&m| sign | EXPONENT_ALL_ONES | m));
        for b in 0..23 {
            bits.push(sign | EXPONENT_ALL_ONES | (1 << b));
            bits.push(sign | EXPONENT_ALL_ONES | (MANTISSA & !(1 << b)));
        }
    }
    let mut rng = Rng(0x6e61_6e73);
    for _ in 0..random {
        let m = (rng.next() as u32 & MANTISSA).max(1);
        bits.push((rng.next() as u32 & SIGN) | EXPONENT_ALL_ONES | m);
    }
    for &b in &bits {
        assert!(f32::from_bits(b).is_nan(), "{b:#x} is not a NaN pattern");
    }
    bits
}

fn first_non_nan(what: &str, input: &[f32], output: &[f32]) -> Option<String> {
    input
        .iter()
        .zip(output)
        .find(|(_, y)| !y.is_nan())
        .map(|(x, y)| format!("{what}({:#010x}) = {y:e}", x.to_bits()))
}

/// The probe's counterexamples, each a number before the fix.
#[test]
fn nan_payload_probe_counterexamples_give_nan() {
    let nan1 = f32::from_bits(0x7f80_0001);
    let nan2 = f32::from_bits(0x7f8f_f880);
    assert!(qf::exp(nan1).is_nan(), "exp = {:e}", qf::exp(nan1));
    for b in backends() {
        let mut y = [0.0f32; 2];
        qf::sigmoid_with(b, &[nan2, nan1], &mut y).unwrap();
        assert!(y.iter().all(|v| v.is_nan()), "sigmoid {b:?}: {y:?}");
        for v in [SoftmaxVariant::TwoPass, SoftmaxVariant::Online] {
            let mut y = [0.0f32; 2];
            qf::softmax_variant(v, b, &[nan1, 1.0], &mut y, 2).unwrap();
            assert!(y.iter().all(|v| v.is_nan()), "softmax {v:?} {b:?}: {y:?}");
        }
    }
}

/// Every element-wise function, on every backend, for a strided sample of
/// all 2^24 NaN patterns (every 11th payload, both signs: 1.5 million).
#[test]
fn elementwise_every_sampled_nan_pattern_gives_nan() {
    let x: Vec<f32> = nan_patterns(11, 10_000)
        .into_iter()
        .map(f32::from_bits)
        .collect();
    let n = x.len();
    let mut failures = Vec::new();
    let scalar_exp: Vec<f32> = x.iter().map(|&v| qf::exp(v)).collect();
    failures.extend(first_non_nan("exp", &x, &scalar_exp));
    // fma with the NaN in each operand position.
    let fma: Vec<f32> = x
        .iter()
        .flat_map(|&v| {
            [
                qf::fma(v, 2.0, 1.0),
                qf::fma(0.5, v, -3.0),
                qf::fma(1.0, 0.0, v),
            ]
        })
        .collect();
    let x3: Vec<f32> = x.iter().flat_map(|&v| [v, v, v]).collect();
    failures.extend(first_non_nan("fma", &x3, &fma));
    let finite: Vec<f32> = (0..n).map(|i| (i % 97) as f32 * 0.01).collect();
    for b in backends() {
        let mut y = vec![0.0f32; n];
        qf::exp_into_with(b, &x, &mut y).unwrap();
        failures.extend(first_non_nan(&format!("exp_into {b:?}"), &x, &y));
        qf::sigmoid_with(b, &x, &mut y).unwrap();
        failures.extend(first_non_nan(&format!("sigmoid {b:?}"), &x, &y));
        qf::tanh_with(b, &x, &mut y).unwrap();
        failures.extend(first_non_nan(&format!("tanh {b:?}"), &x, &y));
        // NaN as the output `y`, then as the gradient `dy`.
        qf::sigmoid_backward_with(b, &x, &finite, &mut y).unwrap();
        failures.extend(first_non_nan(&format!("sigmoid_backward(y) {b:?}"), &x, &y));
        qf::sigmoid_backward_with(b, &finite, &x, &mut y).unwrap();
        failures.extend(first_non_nan(
            &format!("sigmoid_backward(dy) {b:?}"),
            &x,
            &y,
        ));
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

/// Softmax (both variants) and log-softmax, every backend: a row holding one
/// NaN (a sample of the patterns, at every position class: first, in a whole
/// block, in the tail), alone or with `+inf` / `-inf` beside it, is NaN in
/// every element; the clean rows between the NaN rows are exactly what they
/// are when run on their own.
#[test]
fn softmax_rows_with_a_nan_are_all_nan() {
    // Under qemu (both backends, emulated) a sparser sample of payloads.
    let stride = if cfg!(target_arch = "aarch64") {
        32_749
    } else {
        8191
    };
    let patterns = nan_patterns(stride, 200);
    let mut rng = Rng(0x726f_7773);
    type RowKernel = fn(Backend, &[f32], &mut [f32], usize) -> qneon::Result<()>;
    let kernels: [(&str, RowKernel); 3] = [
        ("softmax two-pass", |b, x, y, r| {
            qf::softmax_variant(SoftmaxVariant::TwoPass, b, x, y, r)
        }),
        ("softmax online", |b, x, y, r| {
            qf::softmax_variant(SoftmaxVariant::Online, b, x, y, r)
        }),
        ("log_softmax", qf::log_softmax_with),
    ];
    for row_len in [1usize, 2, 5, 16, 17, 40, 67] {
        // Rows alternate: NaN row, clean row.
        let mut x = Vec::new();
        let mut clean = Vec::new();
        for (k, &bits) in patterns.iter().enumerate() {
            let mut row: Vec<f32> = (0..row_len).map(|_| rng.range(-20.0, 20.0)).collect();
            let at = [0, row_len / 2, row_len - 1, k % row_len][k % 4];
            row[at] = f32::from_bits(bits);
            // Infinities beside the NaN must not win (one-hot) or vanish.
            if row_len > 2 {
                match k % 3 {
                    0 => row[(at + 1) % row_len] = f32::INFINITY,
                    1 => row[(at + 1) % row_len] = f32::NEG_INFINITY,
                    _ => {}
                }
            }
            x.extend_from_slice(&row);
            let good: Vec<f32> = (0..row_len).map(|_| rng.range(-20.0, 20.0)).collect();
            x.extend_from_slice(&good);
            clean.extend_from_slice(&good);
        }
        for b in backends() {
            for (name, kernel) in kernels {
                let mut y = vec![0.0f32; x.len()];
                kernel(b, &x, &mut y, row_len).unwrap();
                let mut want_clean = vec![0.0f32; clean.len()];
                kernel(b, &clean, &mut want_clean, row_len).unwrap();
                for (k, (rows, want)) in y
                    .chunks_exact(2 * row_len)
                    .zip(want_clean.chunks_exact(row_len))
                    .enumerate()
                {
                    let (nan_row, clean_row) = rows.split_at(row_len);
                    assert!(
                        nan_row.iter().all(|v| v.is_nan()),
                        "{name} {b:?} row_len {row_len}: NaN {:#x} gives {nan_row:?}",
                        patterns[k]
                    );
                    assert!(
                        clean_row
                            .iter()
                            .zip(want)
                            .all(|(a, b)| a.to_bits() == b.to_bits() && a.is_finite()),
                        "{name} {b:?} row_len {row_len}: the clean row after a NaN row differs"
                    );
                }
            }
        }
    }
}

/// Finite inputs never give NaN (a strided sample of every finite `f32`,
/// about 1 million), and outputs stay in range: `exp >= 0`, sigmoid in
/// `[0, 1]`, tanh in `[-1, 1]`; infinities give the documented limits.
#[test]
fn finite_inputs_never_give_nan() {
    let mut x: Vec<f32> = (0..=u32::MAX)
        .step_by(4099)
        .map(f32::from_bits)
        .filter(|v| v.is_finite())
        .collect();
    x.extend([0.0, -0.0, f32::MAX, -f32::MAX, f32::MIN_POSITIVE, 1e-45]);
    let n = x.len();
    for &v in &x {
        let e = qf::exp(v);
        assert!(e >= 0.0, "exp({v:e}) = {e:e}");
    }
    for b in backends() {
        let mut y = vec![0.0f32; n];
        qf::exp_into_with(b, &x, &mut y).unwrap();
        for (&v, &e) in x.iter().zip(&y) {
            assert!(e >= 0.0, "exp_into {b:?} ({v:e}) = {e:e}");
        }
        qf::sigmoid_with(b, &x, &mut y).unwrap();
        for (&v, &s) in x.iter().zip(&y) {
            assert!((0.0..=1.0).contains(&s), "sigmoid {b:?} ({v:e}) = {s:e}");
        }
        qf::tanh_with(b, &x, &mut y).unwrap();
        for (&v, &t) in x.iter().zip(&y) {
            assert!((-1.0..=1.0).contains(&t), "tanh {b:?} ({v:e}) = {t:e}");
        }
        let inf = [f32::INFINITY, f32::NEG_INFINITY];
        let mut y = [0.0f32; 2];
        qf::exp_into_with(b, &inf, &mut y).unwrap();
        assert_eq!(y, [f32::INFINITY, 0.0], "exp_into {b:?}");
        qf::sigmoid_with(b, &inf, &mut y).unwrap();
        assert_eq!(y, [1.0, 0.0], "sigmoid {b:?}");
        qf::tanh_with(b, &inf, &mut y).unwrap();
        assert_eq!(y, [1.0, -1.0], "tanh {b:?}");
    }
}
