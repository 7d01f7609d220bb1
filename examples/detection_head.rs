//! A detection head's score filter, fused: int8 class scores `[anchors,
//! classes]` go through logistic and only the scores of at least 0.5 are
//! kept, as `(anchor, class, score)`, without writing the
//! `[anchors, classes]` probability tensor.
//!
//! Checks itself against the unfused path (`Logistic::run` over the whole
//! tensor, then a filter) on every backend, and exits non-zero if they
//! disagree.
//!
//! ```text
//! cargo run --release --example detection_head [-- ANCHORS CLASSES]
//! ```

use qneon::{Backend, Hit, Logistic, Method, QuantParams, ThresholdedLogistic};
use std::process::ExitCode;

const THRESHOLD: f32 = 0.5;

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1).map(|a| a.parse::<usize>());
    let anchors = args.next().and_then(|a| a.ok()).unwrap_or(1917);
    let classes = args.next().and_then(|a| a.ok()).unwrap_or(91);

    // Scores as a head produces them: mostly confident negatives, a few
    // anchors with one or two likely classes (logit around +2).
    let mut seed = 0x5eed_cafe_u64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed >> 11) as f64 / (1u64 << 53) as f64
    };
    let q_in = QuantParams::new(0.08, -20);
    let quantize = |logit: f64| (logit / 0.08).round().clamp(-108.0, 147.0) as i32 - 20;
    let scores: Vec<i8> = (0..anchors * classes)
        .map(|i| {
            let object = (i / classes) % 97 == 3 && i % classes < 2;
            let logit = if object {
                2.0 + 2.0 * (next() - 0.5)
            } else {
                -4.0 + 3.0 * (next() - 0.5)
            };
            quantize(logit).clamp(-128, 127) as i8
        })
        .collect();

    let q_out = Logistic::<i8>::output_quantization();
    let run = || -> qneon::Result<bool> {
        let fused = ThresholdedLogistic::<i8>::new(q_in, q_out, Method::Lut, THRESHOLD)?;
        let detections = fused.run_to_vec(&scores)?;
        println!(
            "{anchors} anchors x {classes} classes, threshold {THRESHOLD}: {} scores kept \
             (inputs of at least {} pass)",
            detections.len(),
            fused.input_bound()
        );
        for hit in detections.iter().take(8) {
            let (anchor, class) = (hit.index as usize / classes, hit.index as usize % classes);
            let p = (hit.value as i32 - q_out.zero_point) as f32 * q_out.scale;
            println!("  anchor {anchor:5} class {class:3} score {p:.4}");
        }
        if detections.len() > 8 {
            println!("  ... {} more", detections.len() - 8);
        }

        // The unfused path: every probability, then the filter.
        let mut ok = true;
        for backend in Backend::available() {
            let mut probs = vec![0i8; scores.len()];
            fused.logistic().run_with(backend, &scores, &mut probs)?;
            let want: Vec<Hit<i8>> = probs
                .iter()
                .enumerate()
                .filter(|(_, &q)| (q as i32 - q_out.zero_point) as f32 * q_out.scale >= THRESHOLD)
                .map(|(i, &value)| Hit {
                    index: i as u32,
                    value,
                })
                .collect();
            let mut hits = vec![Hit::default(); want.len()];
            let n = fused.run_with(backend, &scores, &mut hits)?;
            let same = hits[..n] == want[..];
            println!("{}: fused equals run + filter: {same}", backend.name());
            ok &= same;
        }
        Ok(ok)
    };
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
