//! Every `unsafe` block the host reaches, on small inputs, so that Miri
//! (`cargo xtask miri`) can check them in minutes; they also run in the
//! ordinary suite.
//!
//! The host's `unsafe` code is pointer loops and slice casts: the `f32`
//! kernels' block walkers (`src/f32/row_kernels.rs`, `src/f32/scalar.rs`),
//! the shared tail helpers (`src/simd/tail.rs`) and block masking
//! (`src/simd/mod.rs`), `Method::DequantF32`'s loads, stores and exp cache
//! (`src/ops/dequant_f32/`, the families' `f32.rs`), and the element-type
//! view of `src/elem.rs` (table lookups, int16 tables, `DequantF32`).
//!
//! Each case runs on input and output subslices that start at several
//! offsets inside larger buffers (so blocks straddle every position), with
//! lengths of zero, a partial block, whole blocks and whole blocks plus a
//! tail, and one softmax row longer than `DequantF32`'s exp cache (2048).
//! It asserts that the output equals the one computed on exactly sized
//! buffers and that nothing outside the output subslice was written.

use qneon::f32::{self as qf, SoftmaxVariant};
use qneon::{Backend, LogSoftmax, Logistic, Method, QuantElem, QuantParams, Softmax, Tanh};

/// Lengths around the 16-element blocks.
const LENGTHS: [usize; 6] = [0, 1, 15, 16, 17, 35];
/// Where the subslices start inside their buffers.
const OFFSETS: [usize; 3] = [0, 1, 7];
/// Elements after a subslice that must stay untouched.
const MARGIN: usize = 16;

/// Deterministic values in `[lo, hi]`.
fn values(len: usize, seed: u64, lo: i64, hi: i64) -> Vec<i64> {
    let mut state = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            lo + (state % (hi - lo + 1) as u64) as i64
        })
        .collect()
}

/// Runs `run` on `input` copied to offset `at_in` of a larger buffer, into
/// an output subslice at `at_out` of a buffer filled with `poison`; asserts
/// (by `same`) that the result equals `run` on exactly sized buffers and
/// that the poison around the output is intact.
fn on_subslices<T: Copy + std::fmt::Debug>(
    input: &[T],
    poison: T,
    same: impl Fn(&T, &T) -> bool,
    what: &str,
    run: impl Fn(&[T], &mut [T]),
) {
    let n = input.len();
    let mut expected = vec![poison; n];
    run(input, &mut expected);
    for at_in in OFFSETS {
        for at_out in OFFSETS {
            let mut in_buf = vec![poison; at_in + n + MARGIN];
            in_buf[at_in..at_in + n].copy_from_slice(input);
            let mut out_buf = vec![poison; at_out + n + MARGIN];
            run(&in_buf[at_in..at_in + n], &mut out_buf[at_out..at_out + n]);
            let got = &out_buf[at_out..at_out + n];
            if let Some(i) = (0..n).find(|&i| !same(&got[i], &expected[i])) {
                panic!(
                    "{what}: length {n}, input at {at_in}, output at {at_out}: element {i} is \
                     {:?}, on exact buffers {:?}",
                    got[i], expected[i]
                );
            }
            let mut outside = out_buf[..at_out].iter().chain(&out_buf[at_out + n..]);
            assert!(
                outside.all(|v| same(v, &poison)),
                "{what}: length {n}: written outside the output at {at_out}"
            );
        }
    }
}

/// Runs an `f32` kernel through [`on_subslices`], comparing bits.
fn f32_case(what: &str, input: &[f32], run: impl Fn(&[f32], &mut [f32])) {
    let poison = f32::from_bits(0x7fc0_dead);
    on_subslices(input, poison, |a, b| a.to_bits() == b.to_bits(), what, run);
}

#[test]
fn f32_kernels_on_offset_subslices() {
    for n in LENGTHS {
        let x: Vec<f32> = values(n, 1, -4000, 4000)
            .iter()
            .map(|&v| v as f32 / 100.0)
            .collect();
        let dy: Vec<f32> = values(n, 2, -100, 100)
            .iter()
            .map(|&v| v as f32 / 10.0)
            .collect();
        let b = Backend::Scalar;
        f32_case("exp", &x, |x, y| qf::exp_into_with(b, x, y).unwrap());
        f32_case("sigmoid", &x, |x, y| qf::sigmoid_with(b, x, y).unwrap());
        f32_case("tanh", &x, |x, y| qf::tanh_with(b, x, y).unwrap());
        let sig: Vec<f32> = x.iter().map(|&v| 1.0 / (1.0 + (-v).exp())).collect();
        f32_case("sigmoid_backward", &sig, |s, dx| {
            qf::sigmoid_backward_with(b, s, &dy, dx).unwrap()
        });
        for rows in [1, 2] {
            if n % rows != 0 || n == 0 {
                continue;
            }
            let r = n / rows;
            for variant in [SoftmaxVariant::TwoPass, SoftmaxVariant::Online] {
                f32_case("softmax", &x, |x, y| {
                    qf::softmax_variant(variant, b, x, y, r).unwrap()
                });
            }
            f32_case("log_softmax", &x, |x, y| {
                qf::log_softmax_with(b, x, y, r).unwrap()
            });
        }
    }
}

/// One quantized op on every backend here.
fn quantized_case<T: QuantElem>(what: &str, input: &[T], run: impl Fn(Backend, &[T], &mut [T])) {
    for backend in Backend::available() {
        on_subslices(
            input,
            T::from_i32(T::MAX),
            |a, b| a == b,
            what,
            |x, y| run(backend, x, y),
        );
    }
}

fn input_of<T: QuantElem>(n: usize, seed: u64) -> Vec<T> {
    values(n, seed, T::MIN as i64, T::MAX as i64)
        .iter()
        .map(|&v| T::from_i32(v as i32))
        .collect()
}

/// Logistic and tanh with `method`, and softmax and log-softmax rows where
/// the type and method have them.
fn quantized_ops<T: QuantElem>(method: Method, input_zero_point: i32) {
    let input = QuantParams::new(0.05, input_zero_point);
    let (softmax_out, log_out) = match T::NAME {
        "int8" => (
            QuantParams::new(1.0 / 256.0, -128),
            QuantParams::new(16.0 / 256.0, 127),
        ),
        "uint8" => (
            QuantParams::new(1.0 / 256.0, 0),
            QuantParams::new(16.0 / 256.0, 255),
        ),
        _ => (
            QuantParams::new(1.0 / 32768.0, 0),
            QuantParams::new(16.0 / 256.0, 0),
        ),
    };
    let (logistic_out, tanh_out) = match T::NAME {
        "int8" => (
            QuantParams::new(1.0 / 256.0, -128),
            QuantParams::new(1.0 / 128.0, 0),
        ),
        "uint8" => (
            QuantParams::new(1.0 / 256.0, 0),
            QuantParams::new(1.0 / 128.0, 128),
        ),
        _ => (
            QuantParams::new(1.0 / 32768.0, 0),
            QuantParams::new(1.0 / 32768.0, 0),
        ),
    };
    let name = format!("{} {}", T::NAME, method.name());
    for n in LENGTHS {
        let x = input_of::<T>(n, n as u64 + 3);
        if let Ok(op) = Logistic::<T>::new(input, logistic_out, method) {
            quantized_case(&format!("logistic {name}"), &x, |b, x, y| {
                op.run_with(b, x, y).unwrap()
            });
        }
        if let Ok(op) = Tanh::<T>::new(input, tanh_out, method) {
            quantized_case(&format!("tanh {name}"), &x, |b, x, y| {
                op.run_with(b, x, y).unwrap()
            });
        }
        if n == 0 {
            continue;
        }
        if let Ok(op) = Softmax::<T>::new(input, 1.0, softmax_out, method) {
            quantized_case(&format!("softmax {name}"), &x, |b, x, y| {
                op.run_with(b, x, y, n).unwrap()
            });
        }
        if let Ok(op) = LogSoftmax::<T>::new(input, log_out, method) {
            quantized_case(&format!("log_softmax {name}"), &x, |b, x, y| {
                op.run_with(b, x, y, n).unwrap()
            });
        }
    }
}

#[test]
fn dequant_f32_on_offset_subslices() {
    quantized_ops::<i8>(Method::DequantF32, -3);
    quantized_ops::<u8>(Method::DequantF32, 128);
    quantized_ops::<i16>(Method::DequantF32, 0);
}

#[test]
fn tables_on_offset_subslices() {
    // 8-bit: the 256-entry tables (byte view); int16: its own tables (i16 view).
    quantized_ops::<i8>(Method::Lut, 0);
    quantized_ops::<u8>(Method::LutFixedPoint, 128);
    quantized_ops::<i16>(Method::Lut, 0);
}

#[test]
fn dequant_f32_softmax_row_longer_than_the_exp_cache() {
    // 2048 exps are cached; the rest of the row is recomputed.
    let n = 2048 + 19;
    let x = input_of::<i8>(n, 11);
    let op = Softmax::<i8>::new(
        QuantParams::new(0.1, 0),
        1.0,
        QuantParams::new(1.0 / 256.0, -128),
        Method::DequantF32,
    )
    .unwrap();
    let mut whole = vec![0i8; n];
    op.run_with(Backend::Scalar, &x, &mut whole, n).unwrap();
    let mut shifted = vec![127i8; n + 3];
    op.run_with(Backend::Scalar, &x, &mut shifted[3..], n)
        .unwrap();
    assert_eq!(&shifted[3..], &whole[..]);
    assert_eq!(&shifted[..3], &[127i8; 3]);
    // The outputs are probabilities: they sum to about 1 (256 steps above
    // the zero point -128, within half a step per element).
    let sum: i64 = whole.iter().map(|&v| v as i64 + 128).sum();
    assert!((sum - 256).abs() <= n as i64 / 2, "sum {sum}");
}
