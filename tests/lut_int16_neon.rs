//! int16 `Method::Lut` on the NEON backend (an output table gathered per
//! element for logistic and tanh, an exp table gathered per element and
//! vector max / sum / output multiply for softmax) against the scalar
//! kernels, bit for bit: every int16 input at scales across every kernel
//! TFLite picks (16-bit fixed point at 2^-12 and 2^-11, the interpolated
//! table, the 64-bit product of huge scales, the zero multiplier of tiny
//! ones), slices at every offset and length up to 70, and softmax rows of
//! lengths 0..=70 at offsets, 383..=385 and 32768 over a grid of scales and
//! betas. Skipped (with a message) where NEON is unavailable.

use qneon::{Backend, Error, Logistic, Method, QuantParams, Softmax, Tanh};

const OUT: QuantParams = QuantParams::new(1.0 / 32768.0, 0);

fn neon_here() -> bool {
    let here = Backend::Neon.is_available();
    if !here {
        println!("NEON not available here: skipped (run under qemu)");
    }
    here
}

/// Scales reaching every int16 kernel and its edges (see
/// `tests/validation_int16_scales.rs` for why each one is special).
fn activation_scales() -> Vec<f32> {
    let mut s = vec![
        f32::from_bits(1),
        f32::MIN_POSITIVE,
        1e-30,
        1e-15,
        3.7e-14, // the table multiplier is 0 below about 3.8e-14
        3.9e-14,
        1e-10,
        1e-7,
        2f32.powi(-15),
        2f32.powi(-13),
        2f32.powi(-12), // 16-bit fixed point
        2f32.powi(-12) * 1.0006,
        2f32.powi(-12) * 0.9994,
        2f32.powi(-12) * 1.0008, // not snapped: the table
        2f32.powi(-11),          // tanh: 16-bit fixed point with doubling
        2f32.powi(-11) * 1.0006,
        2f32.powi(-10),
        1e-4,
        3e-4,
        0.01,
        0.1,
        1.0,
        4.0 / 3.0, // shift 0 from here
        5.3,
        5.34, // the 64-bit product from about 16/3
        20.0,
        1e3,
        1.7e5,
        1.8e5, // the multiplier leaves int32
        1e10,
        1e30,
        f32::MAX,
    ];
    // And a log-uniform sweep in between.
    s.extend((0..24).map(|i| 10f32.powf(-9.0 + i as f32 * 0.4)));
    s
}

fn logistic_or_tanh(
    tanh: bool,
    scale: f32,
    zero_point: i32,
    backend: Backend,
    x: &[i16],
) -> Vec<i16> {
    let q_in = QuantParams::new(scale, zero_point);
    let mut y = vec![0i16; x.len()];
    if tanh {
        Tanh::<i16>::new(q_in, OUT, Method::Lut)
            .unwrap()
            .run_with(backend, x, &mut y)
            .unwrap();
    } else {
        Logistic::<i16>::new(q_in, OUT, Method::Lut)
            .unwrap()
            .run_with(backend, x, &mut y)
            .unwrap();
    }
    y
}

#[test]
fn logistic_tanh_i16_lut_neon_equals_scalar_all_inputs() {
    if !neon_here() {
        return;
    }
    let x: Vec<i16> = (i16::MIN..=i16::MAX).collect();
    for tanh in [false, true] {
        for scale in activation_scales() {
            let a = logistic_or_tanh(tanh, scale, 0, Backend::Scalar, &x);
            let b = logistic_or_tanh(tanh, scale, 0, Backend::Neon, &x);
            if let Some(i) = (0..x.len()).find(|&i| a[i] != b[i]) {
                panic!(
                    "tanh={tanh} scale {scale:e}: input {}: scalar {} neon {}",
                    x[i], a[i], b[i]
                );
            }
        }
    }
}

/// The one zero point TFLite's int16 kernels accept is 0: every other one is
/// the same error on both backends' constructor (nothing runs).
#[test]
fn logistic_tanh_i16_lut_nonzero_zero_point_is_an_error() {
    for zero_point in [-32768, -1, 1, 32767] {
        let q_in = QuantParams::new(2f32.powi(-12), zero_point);
        assert!(matches!(
            Logistic::<i16>::new(q_in, OUT, Method::Lut),
            Err(Error::ZeroPoint { .. })
        ));
        assert!(matches!(
            Tanh::<i16>::new(q_in, OUT, Method::Lut),
            Err(Error::ZeroPoint { .. })
        ));
    }
}

/// Every offset 0..=3 and length 0..=70 (the kernel's 32-element blocks and
/// their remainders), mixed inputs; nothing past the length is written.
#[test]
fn logistic_tanh_i16_lut_neon_lengths_and_offsets() {
    if !neon_here() {
        return;
    }
    let x: Vec<i16> = (0..80u32)
        .map(|i| (i.wrapping_mul(40503).wrapping_add(12345) as u16) as i16)
        .collect();
    for tanh in [false, true] {
        for scale in [2f32.powi(-12), 2f32.powi(-11), 0.01, 5.34] {
            let q_in = QuantParams::new(scale, 0);
            let run = |backend: Backend, input: &[i16], output: &mut [i16]| {
                if tanh {
                    let op = Tanh::<i16>::new(q_in, OUT, Method::Lut).unwrap();
                    op.run_with(backend, input, output).unwrap()
                } else {
                    let op = Logistic::<i16>::new(q_in, OUT, Method::Lut).unwrap();
                    op.run_with(backend, input, output).unwrap()
                }
            };
            for offset in 0..=3 {
                for len in 0..=70 {
                    let input = &x[offset..offset + len];
                    let mut a = vec![7777i16; len + 8];
                    let mut b = vec![7777i16; len + 8];
                    run(Backend::Scalar, input, &mut a[offset..offset + len]);
                    run(Backend::Neon, input, &mut b[offset..offset + len]);
                    assert_eq!(a, b, "tanh={tanh} scale {scale} offset {offset} len {len}");
                    assert!(b[..offset].iter().all(|&v| v == 7777));
                    assert!(b[offset + len..].iter().all(|&v| v == 7777));
                }
            }
        }
    }
}

/// A clone shares the prepared table and computes the same.
#[test]
fn logistic_tanh_softmax_i16_lut_clone_runs_the_same() {
    let x: Vec<i16> = (i16::MIN..=i16::MAX).step_by(3).collect();
    let q_in = QuantParams::new(0.001, 0);
    let op = Logistic::<i16>::new(q_in, OUT, Method::Lut).unwrap();
    let copy = op.clone();
    let sm = Softmax::<i16>::new(q_in, 1.0, OUT, Method::Lut).unwrap();
    let sm_copy = sm.clone();
    drop(op.clone());
    for backend in Backend::available() {
        let (mut a, mut b) = (vec![0i16; x.len()], vec![0i16; x.len()]);
        op.run_with(backend, &x, &mut a).unwrap();
        copy.run_with(backend, &x, &mut b).unwrap();
        assert_eq!(a, b);
        sm.run_with(backend, &x[..1000], &mut a[..1000], 100)
            .unwrap();
        sm_copy
            .run_with(backend, &x[..1000], &mut b[..1000], 100)
            .unwrap();
        assert_eq!(a, b);
    }
}

/// A small deterministic generator (xorshift64*).
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    /// Inputs of one of several shapes: uniform over int16, clustered near
    /// one value, the extremes only, all equal.
    fn row(&mut self, n: usize, kind: u64) -> Vec<i16> {
        let centre = self.next() as i16;
        (0..n)
            .map(|_| {
                let r = self.next();
                match kind % 4 {
                    0 => (r >> 16) as i16,
                    1 => centre.saturating_add(((r >> 20) % 200) as i16 - 100),
                    2 => [i16::MIN, i16::MAX, 0, -1][(r >> 30) as usize % 4],
                    _ => centre,
                }
            })
            .collect()
    }
}

/// (scale, beta): every regime of the rescaling (right shifts, left shifts,
/// the saturated left shift from `scale * beta` above about 5, an `f32`
/// product beyond `f32::MAX`).
fn softmax_params() -> Vec<(f32, f32)> {
    let mut p = Vec::new();
    for scale in [
        1e-30f32,
        1e-7,
        2f32.powi(-12),
        2f32.powi(-11),
        1e-3,
        0.05,
        1.0,
        5.3,
        1e3,
        f32::MAX,
    ] {
        for beta in [0.1f32, 1.0, 2.5, 1e10] {
            // Lut refuses a product of about 5.0 and more (TFLite's 32-bit
            // rescaling overflows there): those pairs have no kernel to
            // compare, and the refusal must name the limit.
            match Softmax::<i16>::new(QuantParams::new(scale, 0), beta, OUT, Method::Lut) {
                Ok(_) => p.push((scale, beta)),
                Err(e) => {
                    assert!(
                        scale as f64 * beta as f64 >= 4.99,
                        "{scale:e} x {beta}: {e}"
                    );
                    assert!(e.to_string().contains("input scale * beta"), "{e}");
                }
            }
        }
    }
    p
}

fn softmax_both(
    scale: f32,
    beta: f32,
    x: &[i16],
    row_len: usize,
    offset: usize,
) -> (Vec<i16>, Vec<i16>) {
    let op = Softmax::<i16>::new(QuantParams::new(scale, 0), beta, OUT, Method::Lut).unwrap();
    let mut out = [
        vec![-5i16; x.len() + offset + 4],
        vec![-5i16; x.len() + offset + 4],
    ];
    for (backend, y) in [Backend::Scalar, Backend::Neon]
        .into_iter()
        .zip(out.iter_mut())
    {
        op.run_with(backend, x, &mut y[offset..offset + x.len()], row_len)
            .unwrap();
    }
    let [a, b] = out;
    (a, b)
}

/// Rows of length 0..=70 at offsets 0..=2 (two rows per buffer, so the
/// second starts unaligned too), over the parameter grid.
#[test]
fn softmax_i16_lut_neon_equals_scalar_short_rows() {
    if !neon_here() {
        return;
    }
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for (scale, beta) in softmax_params() {
        for len in 0..=70usize {
            for offset in 0..=2usize {
                let kind = rng.next();
                let row_len = len.max(1);
                let x = rng.row(2 * len + offset, kind);
                let x = &x[offset..];
                let (a, b) = softmax_both(scale, beta, x, row_len, offset);
                assert_eq!(
                    a,
                    b,
                    "scale {scale:e} beta {beta} len {len} offset {offset} kind {}",
                    kind % 4
                );
            }
        }
    }
}

/// Rows of 383..=385 and 32768 elements, and a row long enough that the sum
/// leaves TFLite's int32 (qneon's 64-bit sum, the vector sum's flush).
#[test]
fn softmax_i16_lut_neon_equals_scalar_long_rows() {
    if !neon_here() {
        return;
    }
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    for (scale, beta) in softmax_params() {
        for len in [383usize, 384, 385, 32768] {
            for kind in 0..4 {
                let x = rng.row(2 * len, kind);
                let (a, b) = softmax_both(scale, beta, &x, len, 1);
                assert!(a == b, "scale {scale:e} beta {beta} len {len} kind {kind}");
            }
        }
    }
    // 2^21 + 3 elements all equal: every exp is about 1.0, the sum about 2^36.
    for (scale, beta) in [(1e-3f32, 1.0f32), (4.9, 1.0)] {
        let x = vec![123i16; (1 << 21) + 3];
        let (a, b) = softmax_both(scale, beta, &x, x.len(), 0);
        assert!(a == b, "scale {scale:e} beta {beta} long row");
        assert!(b.iter().all(|&v| v == 0 || v == -5));
    }
}
