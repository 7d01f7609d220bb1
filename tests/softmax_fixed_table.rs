//! 8-bit softmax `Method::FixedPoint` on every backend equals the scalar
//! reference loop (the oracle) bit for bit. NEON runs it through tables
//! indexed by `d = max - x` (exps, sum terms in byte planes, per-row
//! outputs); these tests reach every `d` of those tables on a grid of
//! scales, betas and zero points (tiny and huge `beta * scale`, `diff_min`
//! inside the table and at its edges), every row length to 70 at several
//! buffer offsets, rows of 383..=385 and 32768, and rows whose Q12.19 sum
//! passes 512, 4096 and 2^32.

mod common;
use common::Rng;
use qneon::{Backend, Method, QuantElem, QuantParams, Softmax};

/// `beta * scale` products from a right-shift multiplier to a `diff_min`
/// that cuts the table after a few entries, with `diff_min` landing inside
/// the 256 entries (and near the 64-entry chunk edges) in between.
const SCALES: &[f32] = &[
    1e-7, 3e-5, 0.001, 0.01, 0.03, 0.0625, 0.1, 0.1216, 0.125, 0.13, 0.2, 0.25, 0.4844, 0.5, 1.0,
    3.0, 8.0, 31.0, 100.0, 1e4,
];
const BETAS: &[f32] = &[1.0, 0.37, 2.5];

/// The op for `T` with input scale `scale`, zero point `zero_point`.
fn op<T: QuantElem>(scale: f32, beta: f32, zero_point: i32) -> Softmax<T> {
    let out = if T::MIN < 0 {
        QuantParams::new(1.0 / 256.0, -128)
    } else {
        QuantParams::new(1.0 / 256.0, 0)
    };
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
        if got != want {
            let i = (0..input.len()).find(|&i| got[i] != want[i]).unwrap();
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

fn elems<T: QuantElem>(v: impl IntoIterator<Item = i32>) -> Vec<T> {
    v.into_iter().map(T::from_i32).collect()
}

/// Every `d` in rows that hold it: a row of all 256 values (every `d` at
/// once, the output table full), rows of two (`max` and `max - d`: the
/// largest reciprocals, short rows), rows of 64 and 200 whose values
/// cluster at chosen distances.
fn every_d<T: QuantElem + core::fmt::Debug>() {
    let (lo, hi) = (T::MIN, T::MAX);
    let mut rng = Rng(0x5eed_0001);
    for &scale in SCALES {
        for &beta in BETAS {
            for zp in [lo, 0.max(lo), hi, lo + 77] {
                let op = op::<T>(scale, beta, zp);
                let what = format!("{} scale {scale} beta {beta} zp {zp}", T::NAME);
                check(&op, &elems::<T>(lo..=hi), 256, &what);
                let pairs: Vec<i32> = (0..256).flat_map(|d| [hi, hi - d]).collect();
                check(&op, &elems::<T>(pairs), 2, &what);
                for len in [64, 200] {
                    let mut v = Vec::new();
                    for d0 in (0..256).step_by(16) {
                        let max = lo + 255 - rng.below(8) as i32;
                        v.push(max);
                        for _ in 1..len {
                            let d = (d0 + rng.below(24) as i32).min(max - lo);
                            v.push(max - d);
                        }
                    }
                    check(&op, &elems::<T>(v), len, &what);
                }
            }
        }
    }
}

#[test]
fn every_d_int8() {
    every_d::<i8>();
}

#[test]
fn every_d_uint8() {
    every_d::<u8>();
}

/// Random rows of every length 1..=70 (and the empty buffer), in buffers
/// starting at several offsets, with N(0, sigma) logits of several spreads.
fn lengths<T: QuantElem + core::fmt::Debug>() {
    let mut rng = Rng(0x5eed_0002);
    for &(scale, zp) in &[(0.1f32, 0), (0.03, 7), (0.5, -3), (1e-5, 0)] {
        let zp = zp.clamp(T::MIN, T::MAX);
        let op = op::<T>(scale, 1.0, zp);
        let empty: Vec<T> = Vec::new();
        check(&op, &empty, 1, "empty");
        for row_len in 1..=70usize {
            for sigma in [3.0f64, 40.0, 120.0] {
                for offset in 0..4 {
                    let rows = 1 + rng.below(9) as usize;
                    let v: Vec<i32> = (0..offset + rows * row_len)
                        .map(|_| ((rng.normal() * sigma).round() as i32 + zp).clamp(T::MIN, T::MAX))
                        .collect();
                    let x = elems::<T>(v);
                    let what = format!("{} len {row_len} sigma {sigma} offset {offset}", T::NAME);
                    check(&op, &x[offset..], row_len, &what);
                }
            }
        }
    }
}

#[test]
fn lengths_int8() {
    lengths::<i8>();
}

#[test]
fn lengths_uint8() {
    lengths::<u8>();
}

/// Rows of 383..=385 and 32768: random, and constant (every element at
/// the maximum: sums of n * 2^19, past 512 and 4096 in Q12.19 from 512 and
/// 4096 elements, and past 2^32 raw from 8192). Also rows just below and
/// above those counts, and rows near the maximum with one far outlier.
fn long_rows<T: QuantElem + core::fmt::Debug>() {
    let mut rng = Rng(0x5eed_0003);
    let (lo, hi) = (T::MIN, T::MAX);
    for &scale in &[0.1f32, 0.01, 1e-6, 2.0] {
        let op = op::<T>(scale, 1.0, 0.clamp(lo, hi));
        for row_len in [383usize, 384, 385, 32768] {
            let rows = if row_len > 1000 { 2 } else { 5 };
            let v: Vec<i32> = (0..rows * row_len)
                .map(|_| ((rng.normal() * 40.0) as i32).clamp(lo, hi))
                .collect();
            check(&op, &elems::<T>(v), row_len, &format!("random {row_len}"));
        }
        for row_len in [
            511usize, 512, 513, 4095, 4096, 4097, 8191, 8192, 8193, 32768,
        ] {
            for value in [lo, hi, 3.clamp(lo, hi)] {
                let x = elems::<T>(core::iter::repeat_n(value, row_len));
                check(&op, &x, row_len, &format!("constant {value} x {row_len}"));
            }
            // One element far below the rest: its d is 255.
            let mut v = vec![hi; row_len];
            v[row_len / 3] = lo;
            check(&op, &elems::<T>(v), row_len, &format!("outlier {row_len}"));
            // Values within a few steps of the maximum.
            let v: Vec<i32> = (0..row_len).map(|_| hi - rng.below(4) as i32).collect();
            check(&op, &elems::<T>(v), row_len, &format!("near max {row_len}"));
        }
    }
}

#[test]
fn long_rows_int8() {
    long_rows::<i8>();
}

#[test]
fn long_rows_uint8() {
    long_rows::<u8>();
}

/// The NEON path is really compared where it exists (guards against a test
/// that checks nothing on aarch64).
#[test]
fn neon_is_compared_where_available() {
    let op = op::<i8>(0.1, 1.0, 0);
    let compared = check(&op, &elems::<i8>(-128..=127), 16, "plain");
    let expected = Backend::available().count() - 1;
    assert_eq!(compared, expected);
    #[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
    assert_eq!(compared, 1);
}

// Rows of at most 64 elements: NEON runs them four at a time (16-byte
// windows up to 16 elements, 64-byte windows up to 64), with its sum-term
// lookups unrolled for the number of 64-entry chunks each byte plane of the
// terms needs; that number falls as `beta * scale` grows, so the scales
// below sweep a fine geometric grid across every count the kernel
// specializes for, and the rows reach every `d = max - x` of the tables,
// the saturated output (one element far above the rest), constant rows and
// the rows left after the last whole group.

/// Row lengths: both window sizes exactly, and shorter rows of each.
const SHORT_LENGTHS: &[usize] = &[1, 2, 3, 7, 15, 16, 17, 31, 40, 63, 64];

/// Rows of `row_len` for `T`: random logits of a wide spread, rows holding
/// `max` and `max - d` for every `d` in turn, a row of one element far
/// above the rest (its output saturates to 255 above the zero point) and
/// constant rows; 4 k + 3 rows in all, so a partial group is left over.
fn short_row_cases<T: QuantElem>(rng: &mut Rng, row_len: usize) -> Vec<T> {
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
            let op = op::<T>(scale, beta, 0.clamp(T::MIN, T::MAX));
            for &row_len in SHORT_LENGTHS {
                let x = short_row_cases::<T>(&mut rng, row_len);
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
