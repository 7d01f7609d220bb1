//! Bit-exactness of qneon's fixed-point core against gemmlowp itself.
//!
//! `tests/golden/gemmlowp_primitives.jsonl` and `tests/golden/gemmlowp_q31.jsonl`
//! hold outputs of gemmlowp's `fixedpoint/fixedpoint.h` (scalar `std::int32_t`
//! path), compiled and run by `tests/golden/gen/gemmlowp/generate.py`; the first
//! line of each file records where the headers came from. Every value must match
//! bit for bit:
//!
//! * the primitives through [`qneon::fixedpoint::Lane`] on `i32` and the
//!   `Q0.31` building blocks (`exp` on `[-1/4, 0)`, the two reciprocals);
//! * `exp_on_negative_values`, `logistic` and `tanh` on `FixedPoint<i32, N>`
//!   for every `N`, directly and (logistic, tanh) through the public
//!   [`qneon::q31`] API on every available backend and on the best one.

use qneon::fixedpoint::{self, FixedPoint, Lane};
use qneon::{q31, Backend};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// Mismatches printed per check before the rest are only counted.
const SHOW: usize = 8;

/// A golden file: its provenance header and its records with line numbers.
struct Golden {
    name: &'static str,
    provenance: Value,
    records: Vec<(usize, Value)>,
}

fn load(name: &'static str) -> Golden {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut lines = text.lines().enumerate();
    let (_, header) = lines.next().unwrap_or_else(|| panic!("{name}: empty file"));
    let header: Value = serde_json::from_str(header).unwrap_or_else(|e| panic!("{name}:1: {e}"));
    let provenance = header
        .get("provenance")
        .cloned()
        .unwrap_or_else(|| panic!("{name}:1: no provenance header"));
    let records: Vec<(usize, Value)> = lines
        .map(|(i, line)| {
            (
                i + 1,
                serde_json::from_str(line).unwrap_or_else(|e| panic!("{name}:{}: {e}", i + 1)),
            )
        })
        .collect();

    // The header counts the records per function: a truncated or hand-edited
    // file fails here rather than passing on fewer vectors.
    let mut counts: BTreeMap<String, u64> = BTreeMap::new();
    for (_, r) in &records {
        *counts
            .entry(r["fn"].as_str().expect("record without fn").to_owned())
            .or_default() += 1;
    }
    let declared: BTreeMap<String, u64> = provenance["records"]
        .as_object()
        .unwrap_or_else(|| panic!("{name}: provenance has no record counts"))
        .iter()
        .map(|(k, v)| (k.clone(), v.as_u64().expect("record count")))
        .collect();
    assert_eq!(
        counts, declared,
        "{name}: record counts differ from the provenance header"
    );

    println!(
        "{name}: gemmlowp {} from {} {} ({}), {} records",
        provenance["gemmlowp_commit"].as_str().unwrap_or("?"),
        provenance["tensorflow_distribution"]
            .as_str()
            .unwrap_or("?"),
        provenance["tensorflow_version"].as_str().unwrap_or("?"),
        provenance["compiler"].as_str().unwrap_or("?"),
        records.len()
    );
    Golden {
        name,
        provenance,
        records,
    }
}

fn int(r: &Value, key: &str, line: usize) -> i64 {
    r[key]
        .as_i64()
        .unwrap_or_else(|| panic!("line {line}: missing integer {key:?}"))
}

fn i32_field(r: &Value, key: &str, line: usize) -> i32 {
    i32::try_from(int(r, key, line))
        .unwrap_or_else(|_| panic!("line {line}: {key:?} out of i32 range"))
}

fn i32_array(r: &Value, key: &str, line: usize) -> Vec<i32> {
    r[key]
        .as_array()
        .unwrap_or_else(|| panic!("line {line}: missing array {key:?}"))
        .iter()
        .map(|v| {
            v.as_i64()
                .and_then(|v| i32::try_from(v).ok())
                .unwrap_or_else(|| panic!("line {line}: bad {key:?}"))
        })
        .collect()
}

/// Comparison counts and mismatches, per check.
#[derive(Default)]
struct Tally {
    compared: BTreeMap<String, usize>,
    mismatched: BTreeMap<String, usize>,
}

impl Tally {
    fn check(&mut self, check: &str, expected: i32, got: i32, input: impl FnOnce() -> String) {
        *self.compared.entry(check.to_owned()).or_default() += 1;
        if expected != got {
            let seen = self.mismatched.entry(check.to_owned()).or_default();
            *seen += 1;
            if *seen <= SHOW {
                println!(
                    "MISMATCH {check} {}: gemmlowp {expected}, qneon {got}",
                    input()
                );
            }
        }
    }

    fn compare_slices(&mut self, check: &str, input: &[i32], expected: &[i32], got: &[i32]) {
        assert_eq!(expected.len(), got.len());
        for ((&x, &e), &g) in input.iter().zip(expected).zip(got) {
            self.check(check, e, g, || format!("x={x}"));
        }
    }

    fn total(&self) -> usize {
        self.compared.values().sum()
    }

    /// Prints the summary and fails on any mismatch or on too few comparisons.
    fn finish(&self, what: &str, min_total: usize) {
        // Every check when there are few (the primitives), else only the failing ones.
        let few = self.compared.len() <= 16;
        for (check, n) in &self.compared {
            let bad = self.mismatched.get(check).copied().unwrap_or(0);
            if few || bad > 0 {
                println!("{what}: {check}: {n} compared, {bad} mismatched");
            }
        }
        let bad: usize = self.mismatched.values().sum();
        println!("{what}: {} compared, {bad} mismatched", self.total());
        assert!(
            bad == 0,
            "{what}: {bad} mismatches against gemmlowp (first {SHOW} per check printed above)"
        );
        assert!(
            self.total() >= min_total,
            "{what}: only {} comparisons, expected at least {min_total}",
            self.total()
        );
    }
}

/// Runs `$body` with `$n` bound to the runtime integer-bit count `$bits` as a
/// constant, for each count listed.
macro_rules! with_n {
    ($bits:expr, $n:ident => $body:expr, [$($k:literal)*]) => {
        match $bits {
            $($k => { const $n: u32 = $k; $body })*
            other => panic!("no instantiation for {other} integer bits"),
        }
    };
}

fn exp_on_negative_values(n: u32, x: i32) -> i32 {
    with_n!(n, N => fixedpoint::exp_on_negative_values(FixedPoint::<i32, N>::from_raw(x)).raw(),
        [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29])
}

fn logistic(n: u32, x: i32) -> i32 {
    with_n!(n, N => fixedpoint::logistic(FixedPoint::<i32, N>::from_raw(x)).raw(),
        [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29])
}

fn tanh(n: u32, x: i32) -> i32 {
    with_n!(n, N => fixedpoint::tanh::<i32, N, { N + 1 }>(FixedPoint::<i32, N>::from_raw(x)).raw(),
        [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28])
}

#[test]
fn primitives_match_gemmlowp() {
    let golden = load("gemmlowp_primitives.jsonl");
    let mut tally = Tally::default();
    for (line, r) in &golden.records {
        let line = *line;
        let f = r["fn"].as_str().unwrap();
        let out = i32_field(r, "out", line);
        match f {
            "srdhm" | "rhs" => {
                let (a, b) = (i32_field(r, "a", line), i32_field(r, "b", line));
                let got = if f == "srdhm" {
                    <i32 as Lane>::saturating_rounding_doubling_high_mul(a, b)
                } else {
                    <i32 as Lane>::rounding_half_sum(a, b)
                };
                tally.check(f, out, got, || format!("a={a} b={b}"));
            }
            "rdbpot" => {
                let (x, e) = (i32_field(r, "x", line), int(r, "e", line));
                assert!((0..=31).contains(&e), "line {line}: exponent {e}");
                let got = <i32 as Lane>::rounding_divide_by_pot(x, e as u32);
                tally.check(f, out, got, || format!("x={x} e={e}"));
            }
            "srmbpot" => {
                let (x, e) = (i32_field(r, "x", line), i32_field(r, "e", line));
                assert!((-31..=31).contains(&e), "line {line}: exponent {e}");
                let got = <i32 as Lane>::saturating_rounding_multiply_by_pot(x, e);
                tally.check(f, out, got, || format!("x={x} e={e}"));
            }
            "exp_interval" | "one_over_one_plus_x" | "one_minus_x_over_one_plus_x" => {
                let a = i32_field(r, "a", line);
                let q = FixedPoint::<i32, 0>::from_raw(a);
                let got = match f {
                    "exp_interval" => {
                        fixedpoint::exp_on_interval_between_negative_one_quarter_and_0_excl(q)
                    }
                    "one_over_one_plus_x" => fixedpoint::one_over_one_plus_x_for_x_in_0_1(q),
                    _ => fixedpoint::one_minus_x_over_one_plus_x_for_x_in_0_1(q),
                }
                .raw();
                tally.check(f, out, got, || format!("a={a}"));
            }
            other => panic!("{}:{line}: unknown fn {other:?}", golden.name),
        }
    }
    let functions = [
        "srdhm",
        "rdbpot",
        "srmbpot",
        "rhs",
        "exp_interval",
        "one_over_one_plus_x",
        "one_minus_x_over_one_plus_x",
    ];
    for f in functions {
        let n = tally.compared.get(f).copied().unwrap_or(0);
        assert!(n >= 2000, "only {n} vectors for {f}");
    }
    tally.finish("primitives", 40_000);
}

/// The q31 records as `(fn, n, x, out)`, checking that every function covers
/// every integer-bit count the file declares.
fn q31_records(golden: &Golden) -> Vec<(String, u32, Vec<i32>, Vec<i32>)> {
    let mut seen: BTreeMap<String, Vec<u32>> = BTreeMap::new();
    let records: Vec<_> = golden
        .records
        .iter()
        .map(|(line, r)| {
            let f = r["fn"].as_str().unwrap().to_owned();
            let n = u32::try_from(int(r, "n", *line)).expect("n");
            let (x, out) = (i32_array(r, "x", *line), i32_array(r, "out", *line));
            assert_eq!(x.len(), out.len(), "line {line}: x and out lengths differ");
            assert!(x.len() >= 400, "line {line}: only {} inputs", x.len());
            seen.entry(f.clone()).or_default().push(n);
            (f, n, x, out)
        })
        .collect();
    let range = |key: &str| {
        let r = golden.provenance[key]
            .as_array()
            .unwrap_or_else(|| panic!("provenance has no {key}"));
        (r[0].as_u64().unwrap() as u32..=r[1].as_u64().unwrap() as u32).collect::<Vec<u32>>()
    };
    let skipped: Vec<u32> = golden.provenance["skipped_integer_bits"]
        .as_array()
        .map(|a| a.iter().map(|v| v.as_u64().unwrap() as u32).collect())
        .unwrap_or_default();
    assert!(
        skipped.is_empty(),
        "gemmlowp could not instantiate integer bits {skipped:?}"
    );
    let exp_ns = range("exp_integer_bits");
    let act_ns = range("activation_integer_bits");
    assert!(
        exp_ns.contains(&29) && act_ns.contains(&28),
        "integer-bit coverage shrank"
    );
    assert_eq!(seen.get("exp_on_negative_values"), Some(&exp_ns));
    assert_eq!(seen.get("logistic"), Some(&act_ns));
    assert_eq!(seen.get("tanh"), Some(&act_ns));
    assert_eq!(seen.len(), 3, "unexpected functions: {:?}", seen.keys());
    records
}

#[test]
fn q31_fixedpoint_functions_match_gemmlowp() {
    let golden = load("gemmlowp_q31.jsonl");
    let mut tally = Tally::default();
    for (f, n, x, out) in q31_records(&golden) {
        let eval: fn(u32, i32) -> i32 = match f.as_str() {
            "exp_on_negative_values" => exp_on_negative_values,
            "logistic" => logistic,
            "tanh" => tanh,
            other => panic!("unknown fn {other:?}"),
        };
        let check = format!("fixedpoint::{f} N={n}");
        for (&x, &e) in x.iter().zip(&out) {
            tally.check(&check, e, eval(n, x), || format!("x={x}"));
        }
    }
    tally.finish("q31 fixedpoint", 30 * 500);
}

#[test]
fn q31_api_matches_gemmlowp() {
    let golden = load("gemmlowp_q31.jsonl");
    let mut tally = Tally::default();
    let backends: Vec<Backend> = Backend::available().collect();
    println!("backends: {:?}, best: {:?}", backends, Backend::best());
    for (f, n, x, out) in q31_records(&golden) {
        type Api = fn(&[i32], u32, &mut [i32]) -> qneon::Result<()>;
        type ApiWith = fn(Backend, &[i32], u32, &mut [i32]) -> qneon::Result<()>;
        let (api, api_with): (Api, ApiWith) = match f.as_str() {
            "logistic" => (q31::logistic::<i32, i32>, q31::logistic_with::<i32, i32>),
            "tanh" => (q31::tanh::<i32, i32>, q31::tanh_with::<i32, i32>),
            _ => continue, // exp has no public q31 entry point
        };
        // The whole row, and the row minus its first three elements (other
        // alignment and remainder for the vector loops).
        for skip in [0, 3] {
            let (x, out) = (&x[skip..], &out[skip..]);
            let mut y = vec![0x5A5A_5A5A_i32; x.len()];
            for &b in &backends {
                y.fill(0x5A5A_5A5A);
                api_with(b, x, n, &mut y)
                    .unwrap_or_else(|e| panic!("q31::{f}_with({b:?}, N={n}): {e}"));
                tally.compare_slices(&format!("q31::{f}_with({}) N={n}", b.name()), x, out, &y);
            }
            y.fill(0x5A5A_5A5A);
            api(x, n, &mut y).unwrap_or_else(|e| panic!("q31::{f}(N={n}): {e}"));
            tally.compare_slices(&format!("q31::{f} N={n}"), x, out, &y);
        }
    }
    tally.finish("q31 api", 2 * 2 * 2 * 29 * 500);
}
