//! Bit-exactness against bytes produced by the real TFLite Micro and TFLite
//! interpreters (`tests/golden/*.jsonl`, written by `tests/golden/gen/generate.py`).
//!
//! Which reference `Method::FixedPoint` must equal, per op and type:
//! * softmax int8: TFLite Micro and TFLite's reference resolver; uint8: TFLite reference.
//! * log-softmax int8: TFLite Micro and TFLite reference; uint8: TFLite reference.
//! * logistic and tanh int8: TFLite Micro (TFLite's own int8 kernels are float-built tables).
//!
//! Where a reference aborted (`"status": "abort"`) or is known wrong (`"note"`),
//! qneon must instead be within 1 LSB of the exactly computed, correctly rounded
//! result. Every backend available on this target is checked.

use qneon::{Backend, LogSoftmax, Logistic, Method, QuantElem, QuantParams, Softmax, Tanh};
mod common;
use common::{load, quantize, to_elems, widen, Case};

fn exact_softmax<T: QuantElem>(c: &Case) -> Vec<i32> {
    let mut out = Vec::with_capacity(c.input.len());
    for row in c.input.chunks(c.row_len) {
        let max = *row.iter().max().unwrap();
        let k = c.beta as f64 * c.in_scale as f64;
        let sum: f64 = row.iter().map(|&x| (k * (x - max) as f64).exp()).sum();
        out.extend(
            row.iter()
                .map(|&x| quantize::<T>((k * (x - max) as f64).exp() / sum, c.out_scale, c.out_zp)),
        );
    }
    out
}

fn exact_log_softmax<T: QuantElem>(c: &Case) -> Vec<i32> {
    let mut out = Vec::with_capacity(c.input.len());
    for row in c.input.chunks(c.row_len) {
        let max = *row.iter().max().unwrap();
        let k = c.in_scale as f64;
        let sum: f64 = row.iter().map(|&x| (k * (x - max) as f64).exp()).sum();
        out.extend(
            row.iter()
                .map(|&x| quantize::<T>(k * (x - max) as f64 - sum.ln(), c.out_scale, c.out_zp)),
        );
    }
    out
}

fn exact_activation<T: QuantElem>(c: &Case, f: fn(f64) -> f64) -> Vec<i32> {
    c.input
        .iter()
        .map(|&x| {
            quantize::<T>(
                f(c.in_scale as f64 * (x - c.in_zp) as f64),
                c.out_scale,
                c.out_zp,
            )
        })
        .collect()
}

#[derive(Default)]
struct Tally {
    exact_cases: usize,
    exact_elems: usize,
    corrected_cases: usize,
    rejected: usize,
    failures: Vec<String>,
}

impl Tally {
    fn compare(
        &mut self,
        file: &str,
        c: &Case,
        backend: Backend,
        got: &[i32],
        want: &[i32],
        tolerance: i32,
    ) {
        let bad: Vec<usize> = (0..want.len())
            .filter(|&i| (got[i] - want[i]).abs() > tolerance)
            .collect();
        if let Some(&i) = bad.first() {
            self.failures.push(format!(
                "{file}:{} [{}] scale {} zp {} beta {} row_len {}: {} of {} differ (tolerance {tolerance}); \
                 first at {i}: input {} want {} got {}",
                c.line,
                backend.name(),
                c.in_scale,
                c.in_zp,
                c.beta,
                c.row_len,
                bad.len(),
                want.len(),
                c.input[i],
                want[i],
                got[i]
            ));
        }
        if tolerance == 0 {
            self.exact_cases += 1;
            self.exact_elems += want.len();
        } else {
            self.corrected_cases += 1;
        }
    }

    fn finish(self, what: &str, min_cases: usize) {
        println!(
            "{what}: {} cases ({} elements) bit-exact, {} checked against exact math, {} rejected (beta <= 0)",
            self.exact_cases, self.exact_elems, self.corrected_cases, self.rejected
        );
        assert!(
            self.failures.is_empty(),
            "{what}: {} mismatches:\n{}",
            self.failures.len(),
            self.failures.join("\n")
        );
        assert!(
            self.exact_cases >= min_cases,
            "{what}: only {} bit-exact cases",
            self.exact_cases
        );
    }
}

/// Runs a prepared op on one case's input with the given backend.
type RunCase<'a, T> = Box<dyn Fn(Backend, &[T], &mut [T], usize) + 'a>;

/// The walk every golden file shares: for each case and backend, run the op
/// and require the reference's bytes, or (where the reference aborted or is
/// known wrong) the exact result within 1 LSB. `prepare` returns `None` for a
/// case qneon rejects on purpose (and checks the rejection itself).
fn check_file<T: QuantElem + TryFrom<i32>>(
    file: &str,
    tally: &mut Tally,
    prepare: impl Fn(&Case, QuantParams, QuantParams) -> Option<RunCase<'static, T>>,
    exact: impl Fn(&Case) -> Vec<i32>,
) {
    for c in load(file) {
        let q_in = QuantParams::new(c.in_scale, c.in_zp);
        let q_out = QuantParams::new(c.out_scale, c.out_zp);
        let Some(run) = prepare(&c, q_in, q_out) else {
            tally.rejected += 1;
            continue;
        };
        let input = to_elems::<T>(&c.input);
        for backend in Backend::available() {
            let mut out = vec![T::default(); input.len()];
            run(backend, &input, &mut out, c.row_len);
            match (&c.output, c.status.as_str()) {
                (Some(want), "ok") if c.note.is_none() => {
                    tally.compare(file, &c, backend, &widen(&out), want, 0)
                }
                _ => tally.compare(file, &c, backend, &widen(&out), &exact(&c), 1),
            }
        }
    }
}

fn softmax_file<T: QuantElem + TryFrom<i32>>(file: &str, tally: &mut Tally) {
    let prepare = |c: &Case, q_in, q_out| -> Option<RunCase<'static, T>> {
        let op = Softmax::<T>::new(q_in, c.beta, q_out, Method::FixedPoint);
        if c.beta <= 0.0 {
            // The references abort on beta <= 0; qneon rejects it up front.
            let err = op.unwrap_err();
            assert!(
                matches!(err, qneon::Error::Beta { .. }),
                "{file}:{}: {err}",
                c.line
            );
            return None;
        }
        let op = op.unwrap_or_else(|e| panic!("{file}:{}: {e}", c.line));
        Some(Box::new(move |b, x, y, row_len| {
            op.run_with(b, x, y, row_len).unwrap()
        }))
    };
    check_file::<T>(file, tally, prepare, exact_softmax::<T>);
}

fn log_softmax_file<T: QuantElem + TryFrom<i32>>(file: &str, tally: &mut Tally) {
    let prepare = |c: &Case, q_in, q_out| -> Option<RunCase<'static, T>> {
        let op = LogSoftmax::<T>::new(q_in, q_out, Method::FixedPoint)
            .unwrap_or_else(|e| panic!("{file}:{}: {e}", c.line));
        Some(Box::new(move |b, x, y, row_len| {
            op.run_with(b, x, y, row_len).unwrap()
        }))
    };
    check_file::<T>(file, tally, prepare, exact_log_softmax::<T>);
}

fn activation_file<T: QuantElem + TryFrom<i32>>(file: &str, tanh: bool, tally: &mut Tally) {
    let prepare = |c: &Case, q_in, q_out| -> Option<RunCase<'static, T>> {
        let run: RunCase<'static, T> = if tanh {
            let op = Tanh::<T>::new(q_in, q_out, Method::FixedPoint)
                .unwrap_or_else(|e| panic!("{file}:{}: {e}", c.line));
            Box::new(move |b, x, y, _| op.run_with(b, x, y).unwrap())
        } else {
            let op = Logistic::<T>::new(q_in, q_out, Method::FixedPoint)
                .unwrap_or_else(|e| panic!("{file}:{}: {e}", c.line));
            Box::new(move |b, x, y, _| op.run_with(b, x, y).unwrap())
        };
        Some(run)
    };
    let f: fn(f64) -> f64 = if tanh {
        f64::tanh
    } else {
        |x| 1.0 / (1.0 + (-x).exp())
    };
    check_file::<T>(file, tally, prepare, |c| exact_activation::<T>(c, f));
}

#[test]
fn softmax_int8_fixed_point_equals_tflite_micro() {
    let mut t = Tally::default();
    softmax_file::<i8>("softmax_int8_tflm.jsonl", &mut t);
    t.finish("softmax int8 vs TFLite Micro", 100);
}

#[test]
fn softmax_int8_fixed_point_equals_tflite_reference() {
    let mut t = Tally::default();
    softmax_file::<i8>("softmax_int8_tflite_ref.jsonl", &mut t);
    t.finish("softmax int8 vs TFLite reference", 100);
}

#[test]
fn softmax_uint8_fixed_point_equals_tflite_reference() {
    let mut t = Tally::default();
    softmax_file::<u8>("softmax_uint8_tflite_ref.jsonl", &mut t);
    t.finish("softmax uint8 vs TFLite reference", 50);
}

#[test]
fn log_softmax_int8_fixed_point_equals_tflite_micro() {
    let mut t = Tally::default();
    log_softmax_file::<i8>("log_softmax_int8_tflm.jsonl", &mut t);
    t.finish("log-softmax int8 vs TFLite Micro", 50);
}

#[test]
fn log_softmax_int8_fixed_point_equals_tflite_reference() {
    let mut t = Tally::default();
    log_softmax_file::<i8>("log_softmax_int8_tflite_ref.jsonl", &mut t);
    t.finish("log-softmax int8 vs TFLite reference", 50);
}

#[test]
fn log_softmax_uint8_fixed_point_equals_tflite_reference() {
    let mut t = Tally::default();
    log_softmax_file::<u8>("log_softmax_uint8_tflite_ref.jsonl", &mut t);
    t.finish("log-softmax uint8 vs TFLite reference", 50);
}

#[test]
fn logistic_int8_fixed_point_equals_tflite_micro() {
    let mut t = Tally::default();
    activation_file::<i8>("logistic_int8_tflm.jsonl", false, &mut t);
    t.finish("logistic int8 vs TFLite Micro", 20);
}

#[test]
fn tanh_int8_fixed_point_equals_tflite_micro() {
    let mut t = Tally::default();
    activation_file::<i8>("tanh_int8_tflm.jsonl", true, &mut t);
    t.finish("tanh int8 vs TFLite Micro", 20);
}

/// Where TFLite Micro's int8 logistic/tanh are wrong (input scales of at least
/// 4 and 8), qneon must give exactly what TFLite's reference resolver gives (its
/// float-built table, correctly rounded there).
fn large_scale_matches_tflite_reference(op: &str, tanh: bool) -> usize {
    let tflm = load(&format!("{op}_int8_tflm.jsonl"));
    let reference = load(&format!("{op}_int8_tflite_ref.jsonl"));
    let mut checked = 0;
    for c in tflm.iter().filter(|c| c.note.is_some()) {
        let Some(r) = reference.iter().find(|r| {
            r.in_scale == c.in_scale
                && r.in_zp == c.in_zp
                && r.input == c.input
                && r.output.is_some()
        }) else {
            continue;
        };
        let q_in = QuantParams::new(c.in_scale, c.in_zp);
        let q_out = QuantParams::new(c.out_scale, c.out_zp);
        let input = to_elems::<i8>(&c.input);
        for backend in Backend::available() {
            let mut out = vec![0i8; input.len()];
            if tanh {
                Tanh::<i8>::new(q_in, q_out, Method::FixedPoint)
                    .unwrap()
                    .run_with(backend, &input, &mut out)
                    .unwrap();
            } else {
                Logistic::<i8>::new(q_in, q_out, Method::FixedPoint)
                    .unwrap()
                    .run_with(backend, &input, &mut out)
                    .unwrap();
            }
            assert_eq!(
                &widen(&out),
                r.output.as_ref().unwrap(),
                "{op} scale {} zp {}",
                c.in_scale,
                c.in_zp
            );
            checked += 1;
        }
    }
    checked
}

#[test]
fn logistic_int8_large_scales_equal_tflite_reference_where_tflite_micro_is_wrong() {
    assert!(large_scale_matches_tflite_reference("logistic", false) >= 5);
}

#[test]
fn tanh_int8_large_scales_equal_tflite_reference_where_tflite_micro_is_wrong() {
    assert!(large_scale_matches_tflite_reference("tanh", true) >= 3);
}
