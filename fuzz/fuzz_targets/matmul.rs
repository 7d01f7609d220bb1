//! int8 `MatMul` (BATCH_MATMUL's matrix product) in both roundings, with
//! and without `adj_x` / `adj_y`, every backend, with scratch of the asked
//! size or shorter (an error).
//!
//! When `new` and `run` succeed, every output equals the documented
//! arithmetic computed here: `acc = sum (x - zp_x)(y - zp_y)` wrapping,
//! `clamp(Rounding::multiply(acc, M) + zp_out, -128, 127)` with `M` the
//! quantized `lhs_scale * rhs_scale / output_scale` (in `f64`).

#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use qneon::MatMul;
use qneon_fuzz::*;

#[derive(Arbitrary, Debug)]
struct Case {
    /// `m % 12` rows, `n % 20` columns, `k % 40` deep (0 is an error).
    m: u8,
    n: u8,
    k: u8,
    adj_x: bool,
    adj_y: bool,
    lhs: Quant,
    rhs: Quant,
    output: Quant,
    rounding: RoundingChoice,
    /// Scratch bytes / words short by this much (an error unless 0).
    short_bytes: Option<u8>,
    short_words: Option<u8>,
    data: Vec<i8>,
}

fuzz_target!(|case: Case| check(&case));

fn cycled(data: &[i8], offset: usize, count: usize) -> Vec<i8> {
    (0..count)
        .map(|i| {
            if data.is_empty() {
                0
            } else {
                data[(i + offset) % data.len()]
            }
        })
        .collect()
}

fn check(case: &Case) {
    let (m, n, k) = (
        case.m as usize % 12,
        case.n as usize % 20,
        case.k as usize % 40,
    );
    let (lhs_q, rhs_q, out_q) = (
        case.lhs.get::<i8>(),
        case.rhs.get::<i8>(),
        case.output.get::<i8>(),
    );
    let rounding = case.rounding.get();
    let Ok(op) = MatMul::new(
        m, n, k, case.adj_x, case.adj_y, lhs_q, rhs_q, out_q, rounding,
    ) else {
        return;
    };
    assert!(
        m > 0 && n > 0 && k > 0,
        "MatMul::new accepted a zero dimension"
    );
    assert_eq!(op.shape(), (m, n, k));
    let lhs = cycled(&case.data, 0, m * k);
    let rhs = cycled(&case.data, 5, k * n);
    let bytes = op
        .scratch_bytes()
        .saturating_sub(case.short_bytes.unwrap_or(0) as usize);
    let words = op
        .scratch_words()
        .saturating_sub(case.short_words.unwrap_or(0) as usize);
    let scratch_ok = bytes == op.scratch_bytes() && words == op.scratch_words();
    let (result, y) = on_every_backend(
        m * n,
        0x55i8,
        |a, b| a == b,
        |backend, out| {
            let mut scratch_bytes = vec![0x33i8; bytes];
            let mut scratch_words = vec![0x3333_3333i32; words];
            match backend {
                None => op.run(&lhs, &rhs, out, &mut scratch_bytes, &mut scratch_words),
                Some(b) => op.run_with(b, &lhs, &rhs, out, &mut scratch_bytes, &mut scratch_words),
            }
        },
    );
    assert_eq!(
        result.is_ok(),
        scratch_ok,
        "scratch {bytes} / {words}: {result:?}"
    );
    if result.is_err() {
        return;
    }
    reached(|| {
        format!(
            "matmul {rounding:?} adj_x {} adj_y {}",
            case.adj_x, case.adj_y
        )
    });
    let real = lhs_q.scale as f64 * rhs_q.scale as f64 / out_q.scale as f64;
    let q = rounding
        .quantize_multiplier(real)
        .expect("a valid multiplier");
    let x = |r: usize, d: usize| {
        if case.adj_x {
            lhs[d * m + r]
        } else {
            lhs[r * k + d]
        }
    };
    let w = |d: usize, c: usize| {
        if case.adj_y {
            rhs[c * k + d]
        } else {
            rhs[d * n + c]
        }
    };
    for r in 0..m {
        for c in 0..n {
            let mut acc = 0i32;
            for d in 0..k {
                let product =
                    (x(r, d) as i32 - lhs_q.zero_point) * (w(d, c) as i32 - rhs_q.zero_point);
                acc = acc.wrapping_add(product);
            }
            let want =
                (rounding.multiply(acc, q) as i64 + out_q.zero_point as i64).clamp(-128, 127) as i8;
            assert_eq!(
                y[r * n + c],
                want,
                "matmul m {m} n {n} k {k} adj ({}, {}) {rounding:?} {lhs_q:?} {rhs_q:?} -> {out_q:?}: \
                 element ({r}, {c}), acc {acc}",
                case.adj_x,
                case.adj_y
            );
        }
    }
}
