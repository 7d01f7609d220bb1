//! 8-bit softmax `Method::FixedPoint`, rows of at most 64 elements: every
//! backend equals the scalar reference loop bit for bit. NEON runs these
//! rows four at a time (16-byte windows up to 16 elements, 64-byte windows
//! up to 64), with its sum-term lookups unrolled for the number of 64-entry
//! chunks each byte plane of the terms needs; that number falls as
//! `beta * scale` grows, so the scales here sweep a fine geometric grid
//! across every count the kernel specializes for, and the rows reach every
//! `d = max - x` of the tables, the saturated output 255 (one element far
//! above the rest), constant rows and the rows left after the last whole
//! group.

mod common;
use common::Rng;
use qneon::{Backend, Method, QuantElem, QuantParams, Softmax};

/// Row lengths: both window sizes exactly, and shorter rows of each.
const LENGTHS: &[usize] = &[1, 2, 3, 7, 15, 16, 17, 31, 40, 63, 64];

/// The op for `T` with input scale `scale`, beta `beta` and zero point 0.
fn op<T: QuantElem>(scale: f32, beta: f32) -> Softmax<T> {
    let out = if T::MIN < 0 {
        QuantParams::new(1.0 / 256.0, -128)
    } else {
        QuantParams::new(1.0 / 256.0, 0)
    };
    let zero_point = 0.clamp(T::MIN, T::MAX);
    Softmax::<T>::new(
        QuantParams::new(scale, zero_point),
        beta,
        out,
        Method::FixedPoint,
    )
    .unwrap()
}

/// Runs `input` on every backend and asserts each equals the scalar oracle;
/// returns the number of backends compared beyond it.
fn check<T: QuantElem + core::fmt::Debug>(
    op: &Softmax<T>,
    input: &[T],
    row_len: usize,
    what: &str,
) -> usize {
    let mut want = vec![T::from_i32(0); input.len()];
    op.run_with(Backend::Scalar, input, &mut want, row_len)
        .unwrap();
    let mut compared = 0;
    for b in Backend::available().filter(|&b| b != Backend::Scalar) {
        let mut got = vec![T::from_i32(1); input.len()];
        op.run_with(b, input, &mut got, row_len).unwrap();
        if let Some(i) = (0..input.len()).find(|&i| got[i] != want[i]) {
            panic!(
                "{what}: {} differs at {i} (row {}, col {}): got {:?}, want {:?}",
                b.name(),
                i / row_len,
                i % row_len,
                got[i],
                want[i]
            );
        }
        compared += 1;
    }
    compared
}

/// Rows of `row_len` for `T`: random logits of a wide spread, rows holding
/// `max` and `max - d` for every `d` in turn, a row of one element far
/// above the rest (its output saturates to 255 above the zero point) and
/// constant rows; 4 k + 3 rows in all, so a partial group is left over.
fn rows<T: QuantElem>(rng: &mut Rng, row_len: usize) -> Vec<T> {
    let (lo, hi) = (T::MIN, T::MAX);
    let mut v = Vec::new();
    for _ in 0..8 {
        let mid = (lo + hi) / 2;
        v.extend((0..row_len).map(|_| ((rng.normal() * 60.0) as i32 + mid).clamp(lo, hi)));
    }
    // Every d from 0 to 255 once, next to the row maximum.
    for d in 0..256 {
        let max = hi - rng.below(4) as i32;
        v.push(max);
        v.extend((1..row_len).map(|k| if k == 1 { max - d.min(max - lo) } else { max }));
    }
    // One element at the maximum, the others as far below as the type goes.
    for _ in 0..4 {
        v.push(hi);
        v.extend(core::iter::repeat_n(lo, row_len - 1));
    }
    for value in [lo, hi, 0.clamp(lo, hi)] {
        v.extend(core::iter::repeat_n(value, row_len));
    }
    let rows = v.len() / row_len;
    v.truncate((rows - rows % 4 + 3).min(rows) * row_len);
    v.into_iter().map(T::from_i32).collect()
}

fn short_rows<T: QuantElem + core::fmt::Debug>() {
    let mut rng = Rng(0x5eed_0507);
    let mut compared = 0;
    for step in 0..=40 {
        // beta * scale from 0.05 to 40, geometrically.
        let scale = 0.05f32 * 800f32.powf(step as f32 / 40.0);
        for beta in [1.0f32, 0.7] {
            let op = op::<T>(scale, beta);
            for &row_len in LENGTHS {
                let x = rows::<T>(&mut rng, row_len);
                let what = format!("{} scale {scale} beta {beta} len {row_len}", T::NAME);
                compared += check(&op, &x, row_len, &what);
                // The same rows one element later in the buffers.
                let n = x.len() - row_len;
                compared += check(&op, &x[1..1 + n], row_len, &what);
            }
        }
    }
    if cfg!(target_arch = "aarch64") {
        assert!(compared > 0, "no backend besides scalar was compared");
    }
}

#[test]
fn short_rows_int8() {
    short_rows::<i8>();
}

#[test]
fn short_rows_uint8() {
    short_rows::<u8>();
}
