//! `Method::Lut` softmax on int8 and uint8: TFLite's optimized kernel as built
//! for aarch64 (the 16-bit exp table, integer sum, float reciprocal,
//! `QuantizeMultiplier`, `MultiplyByQuantizedMultiplier`).
//!
//! * Every backend equals an oracle written here from that description with
//!   plain `i64`/`f64` arithmetic (not the library's fixed-point code), on
//!   TFLite's golden cases, random rows of many lengths and scales (including
//!   scales too small for the NEON register tables) and extreme rows.
//! * Every output is within 1 LSB of the exact, correctly rounded softmax, and
//!   within 1 LSB of `Method::FixedPoint` and of TFLite's x86 optimized kernel
//!   (its float-table build, `tests/golden/softmax_*_tflite_opt.jsonl`); the
//!   test prints how many outputs differ.

mod common;
use common::{load, quantize, to_elems, widen, Rng};
use qneon::{Backend, Method, QuantElem, QuantParams, Softmax};

/// The oracle's exp table, by d = max - x: TFLite fills index `val` with
/// `exp(scale * (val - 255))` and looks up `val = 255 - d`.
fn oracle_table(in_scale: f32, beta: f32) -> Vec<i64> {
    let scale: f32 = in_scale * beta;
    let mut by_val = vec![0i64; 256];
    for (val, slot) in by_val.iter_mut().enumerate() {
        let input_to_exp: f32 = scale * (val as i32 - 255) as f32;
        let product: f32 = input_to_exp.exp() * 65535.0f32;
        *slot = ((product as f64 + 0.5) as i64).min(65535);
    }
    (0..256).map(|d| by_val[255 - d]).collect()
}

/// TFLite's QuantizeMultiplier: frexp, round half away from zero, renormalise.
fn oracle_quantize_multiplier(real: f64) -> (i64, i32) {
    assert!(real > 0.0 && real.is_finite());
    let (mut q, mut e) = (real, 0i32);
    while q >= 1.0 {
        q /= 2.0;
        e += 1;
    }
    while q < 0.5 {
        q *= 2.0;
        e -= 1;
    }
    let mut m = (q * 2f64.powi(31)).round() as i64;
    if m == 1i64 << 31 {
        m /= 2;
        e += 1;
    }
    (m, e)
}

/// TFLite's MultiplyByQuantizedMultiplier on 64-bit integers.
fn oracle_mbqm(x: i64, m: i64, shift: i32) -> i64 {
    let left = shift.max(0);
    let right = (-shift).max(0);
    let ab = (x << left) * m;
    let nudge = if ab >= 0 {
        1i64 << 30
    } else {
        1 - (1i64 << 30)
    };
    // C++ integer division truncates toward zero.
    let high = (ab + nudge) / (1i64 << 31);
    let mask = (1i64 << right) - 1;
    let remainder = high & mask;
    let threshold = (mask >> 1) + i64::from(high < 0);
    (high >> right) + i64::from(remainder > threshold)
}

/// The aarch64 TFLite kernel, row by row (`sum` in i64; TFLite's i32 would
/// overflow past 2^31, which no case below but the wide-row test reaches).
fn oracle<T: QuantElem>(
    input: &[i32],
    row_len: usize,
    in_scale: f32,
    beta: f32,
    out: QuantParams,
) -> Vec<i32> {
    let table = oracle_table(in_scale, beta);
    let mut result = Vec::with_capacity(input.len());
    for row in input.chunks(row_len) {
        let max = *row.iter().max().unwrap();
        let sum: i64 = row.iter().map(|&x| table[(max - x) as usize]).sum();
        let inverse: f32 = 1.0f32 / (sum as f32 * out.scale);
        let (m, shift) = oracle_quantize_multiplier(inverse as f64);
        for &x in row {
            let q = oracle_mbqm(table[(max - x) as usize], m, shift) + out.zero_point as i64;
            result.push(q.clamp(T::MIN as i64, T::MAX as i64) as i32);
        }
    }
    result
}

/// Exact softmax, correctly rounded (half away from zero) and clamped.
fn exact<T: QuantElem>(
    input: &[i32],
    row_len: usize,
    in_scale: f32,
    beta: f32,
    out: QuantParams,
) -> Vec<i32> {
    let k = in_scale as f64 * beta as f64;
    let mut result = Vec::with_capacity(input.len());
    for row in input.chunks(row_len) {
        let max = *row.iter().max().unwrap();
        let sum: f64 = row.iter().map(|&x| (k * (x - max) as f64).exp()).sum();
        result.extend(row.iter().map(|&x| {
            quantize::<T>(
                (k * (x - max) as f64).exp() / sum,
                out.scale,
                out.zero_point,
            )
        }));
    }
    result
}

fn output_params<T: QuantElem>() -> QuantParams {
    QuantParams::new(1.0 / 256.0, T::MIN)
}

/// How far one method strays from another, over everything a test ran.
#[derive(Default, Debug)]
struct Diff {
    elements: usize,
    differing: usize,
    max: i32,
}

impl Diff {
    fn add(&mut self, a: &[i32], b: &[i32]) {
        assert_eq!(a.len(), b.len());
        for (x, y) in a.iter().zip(b) {
            let d = (x - y).abs();
            self.elements += 1;
            self.differing += usize::from(d != 0);
            self.max = self.max.max(d);
        }
    }
}

#[derive(Default, Debug)]
struct Report {
    vs_exact: Diff,
    vs_fixed_point: Diff,
}

/// Runs `Method::Lut` on every backend, requires the oracle's bytes, and
/// records the distance to exact math and to `Method::FixedPoint`.
fn check<T: QuantElem + TryFrom<i32>>(
    input: &[i32],
    row_len: usize,
    in_scale: f32,
    in_zp: i32,
    beta: f32,
    report: &mut Report,
) -> Vec<i32> {
    let q_in = QuantParams::new(in_scale, in_zp);
    let q_out = output_params::<T>();
    let op = Softmax::<T>::new(q_in, beta, q_out, Method::Lut).unwrap();
    let fixed = Softmax::<T>::new(q_in, beta, q_out, Method::FixedPoint).unwrap();
    let x = to_elems::<T>(input);
    let want = oracle::<T>(input, row_len, in_scale, beta, q_out);
    let mut first = None;
    for backend in Backend::available() {
        let mut y = vec![T::default(); x.len()];
        op.run_with(backend, &x, &mut y, row_len).unwrap();
        let got = widen(&y);
        if let Some(i) = (0..got.len()).find(|&i| got[i] != want[i]) {
            panic!(
                "[{}] scale {in_scale} beta {beta} row_len {row_len}: element {i} (input {}, row max {}): want {} got {}",
                backend.name(),
                input[i],
                input[i / row_len * row_len..][..row_len].iter().max().unwrap(),
                want[i],
                got[i]
            );
        }
        first.get_or_insert(got);
    }
    let got = first.unwrap();
    let mut y = vec![T::default(); x.len()];
    fixed
        .run_with(Backend::Scalar, &x, &mut y, row_len)
        .unwrap();
    report.vs_fixed_point.add(&got, &widen(&y));
    report
        .vs_exact
        .add(&got, &exact::<T>(input, row_len, in_scale, beta, q_out));
    got
}

fn random_rows<T: QuantElem>(rng: &mut Rng, rows: usize, row_len: usize, spread: i32) -> Vec<i32> {
    let center = rng.below((T::MAX - T::MIN + 1) as u64) as i32 + T::MIN;
    (0..rows * row_len)
        .map(|_| {
            let v = center + rng.below(2 * spread as u64 + 1) as i32 - spread;
            v.clamp(T::MIN, T::MAX)
        })
        .collect()
}

fn golden<T: QuantElem + TryFrom<i32>>(file: &str) {
    let mut report = Report::default();
    let mut vs_x86 = Diff::default();
    let mut cases = 0;
    for c in load(file) {
        if c.beta <= 0.0 {
            continue;
        }
        let got = check::<T>(
            &c.input,
            c.row_len,
            c.in_scale,
            c.in_zp,
            c.beta,
            &mut report,
        );
        if let (Some(want), "ok", None) = (&c.output, c.status.as_str(), &c.note) {
            vs_x86.add(&got, want);
        }
        cases += 1;
    }
    println!("{file}: {cases} cases; vs TFLite x86 (float table): {vs_x86:?}; {report:?}");
    assert!(cases >= 50, "{file}: only {cases} cases");
    assert!(vs_x86.elements > 1000);
    assert!(vs_x86.max <= 1, "{vs_x86:?}");
    assert!(report.vs_exact.max <= 1, "{report:?}");
    assert!(report.vs_fixed_point.max <= 1, "{report:?}");
}

#[test]
fn int8_golden_cases_equal_the_aarch64_kernel_and_stay_within_one_step() {
    golden::<i8>("softmax_int8_tflite_opt.jsonl");
}

#[test]
fn uint8_golden_cases_equal_the_aarch64_kernel_and_stay_within_one_step() {
    golden::<u8>("softmax_uint8_tflite_opt.jsonl");
}

fn random<T: QuantElem + TryFrom<i32>>(seed: u64) {
    let mut rng = Rng(seed);
    let mut report = Report::default();
    // beta * scale from far below the NEON tables' range (0.09) to far above.
    let scales = [
        0.001f32, 0.02, 0.05, 0.0866, 0.09, 0.0925, 0.1, 0.125, 0.25, 0.5, 1.0, 4.0,
    ];
    let lengths = [
        1usize, 2, 15, 16, 17, 63, 64, 65, 100, 127, 128, 129, 384, 1000,
    ];
    for &scale in &scales {
        for &beta in &[1.0f32, 0.5, 2.0] {
            for &row_len in &lengths {
                let rows = (2000 / row_len).clamp(1, 8);
                for spread in [0, 3, 40, 128, 255] {
                    let input = random_rows::<T>(&mut rng, rows, row_len, spread);
                    let zp = rng.below(256) as i32 + T::MIN;
                    check::<T>(&input, row_len, scale, zp, beta, &mut report);
                }
            }
        }
    }
    println!("{} random: {report:?}", T::NAME);
    assert!(report.vs_exact.max <= 1, "{report:?}");
    assert!(report.vs_fixed_point.max <= 1, "{report:?}");
}

#[test]
fn int8_random_rows_equal_the_aarch64_kernel() {
    random::<i8>(0x5eed_0001);
}

#[test]
fn uint8_random_rows_equal_the_aarch64_kernel() {
    random::<u8>(0x5eed_0002);
}

/// Rows where TFLite's `i32` sum overflows (more than 32,768 elements at the
/// maximum): qneon's sum is exact, so the result is still the exact softmax.
#[test]
fn rows_too_wide_for_tflite_are_exact() {
    let mut report = Report::default();
    for row_len in [32_769usize, 40_000, 70_000] {
        let mut input = vec![100i32; row_len];
        input[row_len / 3] = 101;
        check::<i8>(&input, row_len, 0.1, 0, 1.0, &mut report);
        let input: Vec<i32> = (0..row_len).map(|i| 200 + (i % 3) as i32).collect();
        check::<u8>(&input, row_len, 0.1, 0, 1.0, &mut report);
    }
    assert!(report.vs_exact.max <= 1, "{report:?}");
}

/// `beta * scale` beyond `f32`'s range: every row is one-hot (ties shared).
#[test]
fn overflowing_beta_times_scale_gives_one_hot_rows() {
    let q_out = output_params::<i8>();
    let op = Softmax::<i8>::new(QuantParams::new(1e30, 0), 1e20, q_out, Method::Lut).unwrap();
    let x: Vec<i8> = vec![1, 5, -3, 5, 0, 0, 0, 0, 7, 2, 2, 2, 2, 2, 2, 2];
    for backend in Backend::available() {
        let mut y = vec![0i8; 16];
        op.run_with(backend, &x, &mut y, 8).unwrap();
        assert_eq!(
            y[..8],
            [-128, 0, -128, 0, -128, -128, -128, -128],
            "{}",
            backend.name()
        );
        assert_eq!(
            y[8..],
            [127, -128, -128, -128, -128, -128, -128, -128],
            "{}",
            backend.name()
        );
    }
}

/// The extremes of a row: one maximum among minima, all equal, two values;
/// and scales where t[64] is large enough for a lone maximum's row to have
/// outputs past d = 63 (the NEON kernel's per-row check).
#[test]
fn extreme_rows() {
    let mut report = Report::default();
    for &scale in &[0.088f32, 0.09, 0.094, 0.097] {
        for row_len in [3usize, 64, 65, 130, 384] {
            let mut row = vec![-128i32; row_len];
            row[0] = 127;
            row[1] = 127 - 64;
            row[2] = 127 - 70;
            check::<i8>(&row, row_len, scale, 0, 1.0, &mut report);
            let row: Vec<i32> = row.iter().map(|x| x + 128).collect();
            check::<u8>(&row, row_len, scale, 0, 1.0, &mut report);
        }
    }
    for &scale in &[0.001f32, 0.1, 1.0, 100.0] {
        for row_len in [1usize, 16, 64, 100, 384] {
            let mut one_hot = vec![-128i32; row_len];
            one_hot[row_len - 1] = 127;
            check::<i8>(&one_hot, row_len, scale, 0, 1.0, &mut report);
            check::<i8>(&vec![5; row_len], row_len, scale, 0, 1.0, &mut report);
            let two: Vec<i32> = (0..row_len)
                .map(|i| if i % 2 == 0 { 0 } else { 255 })
                .collect();
            check::<u8>(&two, row_len, scale, 0, 1.0, &mut report);
        }
    }
    assert!(report.vs_exact.max <= 1, "{report:?}");
}

/// Scales too small for the NEON register tables (all 256 entries of the exp
/// table nonzero, or past the split's 64/128 entries): rows that reach every
/// `d` from 0 to 255, long rows (with and without a partial last block) and
/// short ones, int8 and uint8. The outputs of these rows are nonzero up to
/// every one of the four 64-entry chunks of the NEON output table (counted
/// with the oracle, so the grid cannot drift away from them).
#[test]
fn full_tables_reach_every_entry_and_output_chunk() {
    let mut rng = Rng(0x5eed_0003);
    let mut report = Report::default();
    // Highest chunk (d / 64) with a nonzero output above the minimum, per row.
    let mut chunks_seen = [0usize; 4];
    let lengths = [1usize, 2, 3, 17, 63, 64, 65, 129, 256, 257, 384, 700];
    for &scale in &[0.0005f32, 0.002, 0.01, 0.03, 0.04, 0.05, 0.07, 0.085] {
        for &row_len in &lengths {
            for kind in 0..3 {
                let rows = (1500 / row_len).clamp(2, 6);
                let mut input = Vec::with_capacity(rows * row_len);
                for _ in 0..rows {
                    let mut row: Vec<i32> = match kind {
                        // Every value of the type, shuffled, then random ones.
                        0 => {
                            let mut all: Vec<i32> =
                                (0..row_len).map(|i| (i % 256) as i32 - 128).collect();
                            for i in (1..all.len()).rev() {
                                all.swap(i, rng.below(i as u64 + 1) as usize);
                            }
                            all
                        }
                        // Uniform over the type.
                        1 => (0..row_len).map(|_| rng.below(256) as i32 - 128).collect(),
                        // One maximum, one minimum, the rest near the minimum.
                        _ => (0..row_len).map(|_| -128 + rng.below(8) as i32).collect(),
                    };
                    row[0] = 127;
                    if row_len > 1 {
                        row[row_len - 1] = -128;
                    }
                    input.extend(row);
                }
                let got = check::<i8>(&input, row_len, scale, 0, 1.0, &mut report);
                for (x, y) in input.chunks(row_len).zip(got.chunks(row_len)) {
                    let max = *x.iter().max().unwrap();
                    let top = x
                        .iter()
                        .zip(y)
                        .filter(|(_, &y)| y != -128)
                        .map(|(&x, _)| (max - x) as usize / 64)
                        .max()
                        .unwrap_or(0);
                    chunks_seen[top] += 1;
                }
                let as_u8: Vec<i32> = input.iter().map(|x| x + 128).collect();
                check::<u8>(&as_u8, row_len, scale, 128, 1.0, &mut report);
            }
        }
    }
    println!("rows by highest nonzero output chunk: {chunks_seen:?}; {report:?}");
    assert!(chunks_seen.iter().all(|&n| n > 0), "{chunks_seen:?}");
    assert!(report.vs_exact.max <= 1, "{report:?}");
    assert!(report.vs_fixed_point.max <= 1, "{report:?}");
}

/// Full-table rows whose values span every width from 0 to 255 steps, at
/// chunk edges (63/64, 127/128, 191/192): NEON looks up only the 64-entry
/// table chunks the row's `max - min` reaches (and of the high bytes only
/// those where `t >= 256` somewhere), so a row whose minimum sits just past
/// a chunk edge, anywhere in the row (also in the overlapping last block),
/// must still count it. Asserts that every pair (high-byte chunks,
/// low-byte chunks) the kernel can choose occurs, counted with the oracle's
/// table.
#[test]
fn full_tables_by_row_range() {
    let mut rng = Rng(0x5eed_0004);
    let mut report = Report::default();
    let mut seen = std::collections::BTreeSet::new();
    let widths = [0usize, 1, 63, 64, 65, 127, 128, 129, 191, 192, 193, 255];
    // High-byte / low-byte chunk counts of these tables: 0.088: 1 / 3,
    // 0.085 and 0.07: 2 / 3, 0.05: 2 / 4, 0.0295: 3 / 4, 0.02: 4 / 4.
    for &scale in &[0.088f32, 0.085, 0.07, 0.05, 0.0295, 0.02] {
        let t = oracle_table(scale, 1.0);
        let split = t[64..].iter().all(|&v| v < 256) && t[128..].iter().all(|&v| v == 0);
        assert!(!split, "scale {scale} has split tables");
        let chunks_to = |f: &dyn Fn(i64) -> bool| t.iter().rposition(|&v| f(v)).unwrap() / 64 + 1;
        let (high_chunks, low_chunks) = (chunks_to(&|v| v >= 256), chunks_to(&|v| v != 0));
        for &row_len in &[64usize, 65, 100, 128, 384, 385] {
            for &width in &widths {
                let rows = 3;
                let mut input = Vec::with_capacity(rows * row_len);
                for _ in 0..rows {
                    let max = 127 - rng.below(256 - width as u64) as i32;
                    let min = max - width as i32;
                    let mut row: Vec<i32> = (0..row_len)
                        .map(|_| min + rng.below(width as u64 + 1) as i32)
                        .collect();
                    // The extremes at random places, the minimum also last.
                    let (a, b) = (rng.below(row_len as u64) as usize, row_len - 1);
                    let c = if rng.below(2) == 0 {
                        b
                    } else {
                        rng.below(row_len as u64) as usize
                    };
                    row[a] = max;
                    if c != a {
                        row[c] = min;
                    } else {
                        row[(a + 1) % row_len] = min;
                    }
                    input.extend(row);
                }
                let lo = (width / 64 + 1).min(low_chunks);
                seen.insert((lo.min(high_chunks), lo));
                check::<i8>(&input, row_len, scale, 0, 1.0, &mut report);
                let as_u8: Vec<i32> = input.iter().map(|x| x + 128).collect();
                check::<u8>(&as_u8, row_len, scale, 128, 1.0, &mut report);
            }
        }
    }
    println!("(high, low) chunks seen: {seen:?}; {report:?}");
    let want = [
        (1, 1),
        (1, 2),
        (1, 3),
        (2, 2),
        (2, 3),
        (2, 4),
        (3, 3),
        (3, 4),
        (4, 4),
    ];
    assert!(want.iter().all(|w| seen.contains(w)), "{seen:?}");
    assert!(report.vs_exact.max <= 1, "{report:?}");
    assert!(report.vs_fixed_point.max <= 1, "{report:?}");
}

/// Rows of exactly 64 elements at split-table scales (the NEON kernel's
/// one-block-per-row path): many rows per call, each of a different kind
/// (random spreads, all equal for the largest sum, one maximum for the
/// smallest, two levels), int8 and uint8.
#[test]
fn many_rows_of_64() {
    let mut rng = Rng(0x5eed_0064);
    let mut report = Report::default();
    for &scale in &[0.09f32, 0.0925, 0.1, 0.125, 0.3, 1.0, 4.0] {
        for kind in 0..2 {
            let rows = 150;
            let mut input = Vec::with_capacity(rows * 64);
            for r in 0..rows {
                let row: Vec<i32> = match r % 5 {
                    0 => vec![rng.below(256) as i32 - 128; 64],
                    1 => {
                        let mut row = vec![-128; 64];
                        row[rng.below(64) as usize] = rng.below(256) as i32 - 128;
                        row
                    }
                    2 => {
                        let (a, b) = (rng.below(256) as i32 - 128, rng.below(256) as i32 - 128);
                        (0..64)
                            .map(|_| if rng.below(2) == 0 { a } else { b })
                            .collect()
                    }
                    _ => {
                        let spread = [1i32, 8, 40, 255][rng.below(4) as usize];
                        random_rows::<i8>(&mut rng, 1, 64, spread)
                    }
                };
                input.extend(row);
            }
            if kind == 0 {
                check::<i8>(&input, 64, scale, 0, 1.0, &mut report);
            } else {
                let input: Vec<i32> = input.iter().map(|x| x + 128).collect();
                check::<u8>(&input, 64, scale, 3, 1.0, &mut report);
            }
        }
    }
    assert!(report.vs_exact.max <= 1, "{report:?}");
}
