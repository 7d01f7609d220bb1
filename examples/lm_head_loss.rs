//! A language-model head's loss, fused: cross-entropy over a 32,768-token
//! vocabulary for a batch of sequences with padding, label smoothing, its
//! gradient, and the log-probability of each chosen token, without ever
//! writing a `[positions, vocabulary]` log-probability tensor.
//!
//! Checks itself against the unfused path (`f32::log_softmax` over the whole
//! tensor, then a gather) and exits non-zero if they disagree.
//!
//! ```text
//! cargo run --release --example lm_head_loss [-- BATCH SEQUENCE]
//! ```

use qneon::loss::{target_log_probs, CrossEntropy, LogSumExp, Reduction};
use std::process::ExitCode;

const VOCABULARY: usize = 32_768;
/// The target value of padding positions (PyTorch's default ignore index).
const PAD: i64 = -100;

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1).map(|a| a.parse::<usize>());
    let batch = args.next().and_then(|a| a.ok()).unwrap_or(4);
    let sequence = args.next().and_then(|a| a.ok()).unwrap_or(16);
    let positions = batch * sequence;

    // Logits as a head would produce them (a few confident positions), and
    // targets with the last quarter of every sequence padded.
    let mut seed = 0x1f2e_3d4c_u64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed >> 11) as f64 / (1u64 << 53) as f64
    };
    let mut logits: Vec<f32> = (0..positions * VOCABULARY)
        .map(|_| ((next() - 0.5) * 12.0) as f32)
        .collect();
    let targets: Vec<i64> = (0..positions)
        .map(|p| {
            if p % sequence >= sequence * 3 / 4 {
                PAD
            } else {
                (next() * VOCABULARY as f64) as i64
            }
        })
        .collect();
    for (p, &t) in targets.iter().enumerate() {
        if t != PAD && p % 3 == 0 {
            logits[p * VOCABULARY + t as usize] += 30.0; // a confident position
        }
    }

    // Forward (mean over the non-padding positions), saving one LogSumExp
    // per position; then the gradient.
    let ce = CrossEntropy::new(VOCABULARY)
        .and_then(|ce| ce.label_smoothing(0.1))
        .expect("valid options")
        .reduction(Reduction::Mean);
    let mut loss = [0f32];
    let mut saved = vec![LogSumExp::default(); positions];
    ce.forward(&logits, &targets, 1, &mut loss, Some(&mut saved))
        .expect("forward");
    let mut grad = vec![0f32; logits.len()];
    ce.backward(&logits, &targets, 1, &saved, &[1.0], &mut grad)
        .expect("backward");

    // Scoring: ln p of each chosen token (padding scored as token 0).
    let chosen: Vec<i64> = targets.iter().map(|&t| t.max(0)).collect();
    let mut scores = vec![0f32; positions];
    target_log_probs(&logits, VOCABULARY, &chosen, 1, &mut scores).expect("log-probs");

    // The unfused path: the whole log-softmax tensor, then a gather.
    let mut log_probs = vec![0f32; logits.len()];
    qneon::f32::log_softmax(&logits, &mut log_probs, VOCABULARY).expect("log_softmax");
    let mut total = 0f64;
    let mut counted = 0usize;
    for (p, &t) in targets.iter().enumerate() {
        let row = &log_probs[p * VOCABULARY..(p + 1) * VOCABULARY];
        let score_gap = (scores[p] - row[chosen[p] as usize]).abs();
        if score_gap > 1e-5 * (1.0 + row[chosen[p] as usize].abs()) {
            eprintln!(
                "position {p}: fused ln p {} vs unfused {}",
                scores[p], row[chosen[p] as usize]
            );
            return ExitCode::FAILURE;
        }
        if t == PAD {
            continue;
        }
        let smooth: f64 = row.iter().map(|&v| -v as f64).sum::<f64>() / VOCABULARY as f64;
        total += 0.9 * -(row[t as usize] as f64) + 0.1 * smooth;
        counted += 1;
    }
    let unfused = total / counted as f64;
    let relative = ((loss[0] as f64 - unfused) / unfused).abs();
    let grad_sum: f64 = grad.iter().map(|&g| g as f64).sum();

    println!("positions {positions} ({counted} scored), vocabulary {VOCABULARY}");
    println!(
        "mean loss (label smoothing 0.1): fused {:.7}, unfused {unfused:.7}",
        loss[0]
    );
    println!("gradient sums to {grad_sum:.2e} (softmax - one-hot rows sum to 0)");
    println!(
        "memory: fused wrote {} bytes of per-position state; unfused wrote {} bytes of log-probs",
        positions * std::mem::size_of::<LogSumExp>(),
        log_probs.len() * 4
    );
    if relative > 1e-5 || grad_sum.abs() > 1e-3 {
        eprintln!("fused and unfused disagree: relative {relative:e}, gradient sum {grad_sum:e}");
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}
