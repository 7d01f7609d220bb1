//! `Method::Lut` log-softmax (TFLite's optimized `f32`-table kernel) on
//! TFLite's own outputs, `tests/golden/log_softmax_{int8,uint8}_tflite_opt.jsonl`
//! (the x86 optimized build): every output of every case equal, on every
//! backend available here (scalar; NEON on aarch64). And a check that the
//! golden files do tell the kernels apart: `Method::FixedPoint` (TFLite's
//! reference kernel) differs from them somewhere.

mod common;
use common::{load, to_elems, widen};
use qneon::{Backend, Error, LogSoftmax, Method, QuantElem, QuantParams};

fn backends() -> Vec<Backend> {
    [Backend::Scalar, Backend::Neon]
        .into_iter()
        .filter(|b| b.is_available())
        .collect()
}

fn golden<T: QuantElem + TryFrom<i32>>(file: &str) {
    let mut cases = 0;
    let mut elements = 0;
    let mut fixed_point_differs = 0;
    let mut failures = Vec::new();
    for c in load(file) {
        let (Some(want), "ok") = (&c.output, c.status.as_str()) else {
            continue;
        };
        let q_in = QuantParams::new(c.in_scale, c.in_zp);
        let q_out = QuantParams::new(c.out_scale, c.out_zp);
        let op = match LogSoftmax::<T>::new(q_in, q_out, Method::Lut) {
            Ok(op) => op,
            Err(e) => {
                failures.push(format!("{file}:{}: new: {e}", c.line));
                continue;
            }
        };
        let x: Vec<T> = to_elems(&c.input);
        for b in backends() {
            let mut y = vec![T::default(); x.len()];
            op.run_with(b, &x, &mut y, c.row_len).unwrap();
            let got = widen(&y);
            if let Some(i) = got.iter().zip(want).position(|(g, w)| g != w) {
                failures.push(format!(
                    "{file}:{} [{}] scale {} row_len {}: element {i} (input {}): want {} got {}",
                    c.line,
                    b.name(),
                    c.in_scale,
                    c.row_len,
                    c.input[i],
                    want[i],
                    got[i]
                ));
            }
        }
        let fixed = LogSoftmax::<T>::new(q_in, q_out, Method::FixedPoint).unwrap();
        let mut y = vec![T::default(); x.len()];
        fixed
            .run_with(Backend::Scalar, &x, &mut y, c.row_len)
            .unwrap();
        fixed_point_differs += (widen(&y) != *want) as usize;
        cases += 1;
        elements += want.len();
    }
    println!("{file}: {cases} cases, {elements} outputs; Method::FixedPoint differs in {fixed_point_differs} cases");
    assert!(
        failures.is_empty(),
        "{} failures: {:#?}",
        failures.len(),
        &failures[..failures.len().min(10)]
    );
    assert!(
        cases >= 100 && elements > 1000,
        "{cases} cases, {elements} outputs"
    );
    assert!(
        fixed_point_differs > 0,
        "the golden file does not tell the methods apart"
    );
}

#[test]
fn int8_lut_equals_tflite_optimized() {
    golden::<i8>("log_softmax_int8_tflite_opt.jsonl");
}

#[test]
fn uint8_lut_equals_tflite_optimized() {
    golden::<u8>("log_softmax_uint8_tflite_opt.jsonl");
}

/// int16 has no log-softmax; the method does not change that.
#[test]
fn int16_lut_is_unsupported() {
    let q_in = QuantParams::new(0.1, 0);
    let q_out = QuantParams::new(16.0 / 256.0, 0);
    assert!(matches!(
        LogSoftmax::<i16>::new(q_in, q_out, Method::Lut),
        Err(Error::Unsupported { .. })
    ));
}

/// An input scale too large for TFLite's f32 arithmetic is refused with an
/// error whose text reads as one sentence (no runs of spaces left by a line
/// continuation).
#[test]
fn int8_lut_refuses_a_too_wide_span_in_plain_words() {
    let q_in = QuantParams::new(1.0e6, 0);
    let q_out = QuantParams::new(16.0 / 256.0, 127);
    let err = LogSoftmax::<i8>::new(q_in, q_out, Method::Lut).unwrap_err();
    assert!(matches!(err, Error::OutOfDomain { .. }), "{err:?}");
    let text = err.to_string();
    assert!(text.contains("2^20 for Method::Lut"), "{text}");
    assert!(!text.contains("  "), "runs of spaces in: {text}");
}
