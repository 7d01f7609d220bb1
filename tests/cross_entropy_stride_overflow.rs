//! A cross-entropy whose per-sample stride `classes * inner` overflows
//! `usize` is an error, not a panic, in every entry point, also for an
//! empty batch (found by the `capi` fuzz target: the passes walk the logits
//! in steps of that product).

use qneon::loss::{target_log_probs, CrossEntropy, LogSumExp, Reduction};
use qneon::{Error, QuantParams};

#[test]
fn cross_entropy_classes_times_inner_overflowing_is_an_error() {
    let classes = 1usize << (usize::BITS - 1);
    let ce = CrossEntropy::new(classes)
        .unwrap()
        .reduction(Reduction::Sum);
    let unsupported = |r: qneon::Result<()>| {
        assert!(
            matches!(
                r,
                Err(Error::Unsupported {
                    op: "cross_entropy",
                    ..
                })
            ),
            "{r:?}"
        );
    };
    let mut out = [0f32];
    unsupported(ce.forward(&[], &[], 2, &mut out, None));
    unsupported(ce.nll(&[], &[], 3, &mut out));
    let saved: [LogSumExp; 0] = [];
    unsupported(ce.backward(&[], &[], 2, &saved, &[1.0], &mut []));
    let q = ce.quantized::<i8>(QuantParams::new(0.1, 0)).unwrap();
    unsupported(q.forward(&[], &[], 2, &mut out));
    unsupported(target_log_probs(&[], classes, &[], 2, &mut []));
    // The same stride that fits is fine: an empty batch, a loss of 0.
    ce.forward(&[], &[], 1, &mut out, None).unwrap();
    assert_eq!(out[0], 0.0);
}
