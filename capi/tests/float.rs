//! The C API of the float kernels, cross-entropy (float and quantized
//! logits) and target log-probabilities against the library's bits on
//! every backend, and their bad arguments.

mod common;

use std::ptr;

use common::*;
use qneon::f32::SoftmaxVariant;
use qneon::loss::{CrossEntropy, LogSumExp, Reduction};
use qneon_capi::*;

#[test]
fn f32_kernels_give_the_librarys_bits() {
    let mut x = reals(19 * 4, 13, 12.0);
    x[3] = f32::NEG_INFINITY;
    x[40] = f32::NAN;
    x[60] = 100.0;
    let dy = reals(x.len(), 14, 1.0);
    for (cb, b) in BACKENDS {
        let mut got = vec![0f32; x.len()];
        let mut want = vec![0f32; x.len()];
        let same = |g: &[f32], w: &[f32]| {
            assert_eq!(
                g.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
                w.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
            )
        };
        for (variant, v) in [
            (QneonSoftmaxVariant::TwoPass, SoftmaxVariant::TwoPass),
            (QneonSoftmaxVariant::Online, SoftmaxVariant::Online),
        ] {
            // SAFETY: buffers of x.len().
            let s = unsafe {
                qneon_f32_softmax(
                    x.as_ptr(),
                    got.as_mut_ptr(),
                    x.len(),
                    19,
                    variant as u32,
                    cb as u32,
                )
            };
            if agree(s, qneon::f32::softmax_variant(v, b, &x, &mut want, 19)) {
                same(&got, &want);
            }
        }
        // SAFETY (each call): buffers of x.len().
        let s =
            unsafe { qneon_f32_log_softmax(x.as_ptr(), got.as_mut_ptr(), x.len(), 19, cb as u32) };
        if agree(s, qneon::f32::log_softmax_with(b, &x, &mut want, 19)) {
            same(&got, &want);
        }
        let s = unsafe { qneon_f32_logistic(x.as_ptr(), got.as_mut_ptr(), x.len(), cb as u32) };
        if agree(s, qneon::f32::sigmoid_with(b, &x, &mut want)) {
            same(&got, &want);
        }
        let y = want.clone();
        let s = unsafe {
            qneon_f32_logistic_backward(
                y.as_ptr(),
                dy.as_ptr(),
                got.as_mut_ptr(),
                x.len(),
                cb as u32,
            )
        };
        if agree(s, qneon::f32::sigmoid_backward_with(b, &y, &dy, &mut want)) {
            same(&got, &want);
        }
        let s = unsafe { qneon_f32_tanh(x.as_ptr(), got.as_mut_ptr(), x.len(), cb as u32) };
        if agree(s, qneon::f32::tanh_with(b, &x, &mut want)) {
            same(&got, &want);
        }
        let s = unsafe { qneon_f32_exp(x.as_ptr(), got.as_mut_ptr(), x.len(), cb as u32) };
        if agree(s, qneon::f32::exp_into_with(b, &x, &mut want)) {
            same(&got, &want);
        }
        // A row length that does not divide; a variant out of range.
        let s =
            unsafe { qneon_f32_log_softmax(x.as_ptr(), got.as_mut_ptr(), x.len(), 7, cb as u32) };
        agree(s, qneon::f32::log_softmax_with(b, &x, &mut want, 7));
        let s =
            unsafe { qneon_f32_softmax(x.as_ptr(), got.as_mut_ptr(), x.len(), 19, 2, cb as u32) };
        assert_eq!(s, QneonStatus::InvalidArgument);
    }
}

#[test]
fn cross_entropy_gives_the_librarys_bits() {
    let (n, c, inner) = (3usize, 7usize, 2usize);
    let logits = reals(n * c * inner, 15, 4.0);
    let weights: Vec<f32> = (0..c).map(|i| 0.5 + 0.25 * i as f32).collect();
    let targets: Vec<i64> = vec![3, -100, 0, 6, 2, 5];
    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    for reduction in [
        QneonReduction::None,
        QneonReduction::Sum,
        QneonReduction::Mean,
    ] {
        for (with_weights, smoothing) in [(false, 0.0), (true, 0.0), (true, 0.2)] {
            let mut o = qneon_cross_entropy_default_options(c);
            o.reduction = reduction as u32;
            o.label_smoothing = smoothing;
            if with_weights {
                o.weights = weights.as_ptr();
            }
            let mut h = ptr::null_mut();
            // SAFETY: `weights` has `c` elements; a valid slot.
            assert_eq!(
                unsafe { qneon_cross_entropy_create(o, &mut h) },
                QneonStatus::Ok
            );
            let red = [Reduction::None, Reduction::Sum, Reduction::Mean][reduction as usize];
            let out_len = if red == Reduction::None {
                targets.len()
            } else {
                1
            };
            for (cb, b) in BACKENDS {
                let mut rust = CrossEntropy::new(c)
                    .unwrap()
                    .reduction(red)
                    .label_smoothing(smoothing)
                    .unwrap();
                if with_weights {
                    rust = rust.weights(&weights).unwrap();
                }
                let rust = match rust.backend(b) {
                    Ok(r) => r,
                    Err(e) => {
                        let mut out = vec![0f32; out_len];
                        // SAFETY: a live handle, buffers of their lengths.
                        let s = unsafe {
                            qneon_cross_entropy_forward(
                                h,
                                logits.as_ptr(),
                                logits.len(),
                                targets.as_ptr(),
                                targets.len(),
                                inner,
                                out.as_mut_ptr(),
                                out_len,
                                ptr::null_mut(),
                                0,
                                cb as u32,
                            )
                        };
                        assert_eq!(s, QneonStatus::BackendUnavailable);
                        assert_eq!(last_error(), e.to_string());
                        continue;
                    }
                };
                let (mut got, mut want) = (vec![0f32; out_len], vec![0f32; out_len]);
                let mut saved = vec![QneonLogSumExp::default(); targets.len()];
                let mut saved_want = vec![LogSumExp::default(); targets.len()];
                // SAFETY: a live handle, buffers of their lengths.
                let s = unsafe {
                    qneon_cross_entropy_forward(
                        h,
                        logits.as_ptr(),
                        logits.len(),
                        targets.as_ptr(),
                        targets.len(),
                        inner,
                        got.as_mut_ptr(),
                        out_len,
                        saved.as_mut_ptr(),
                        saved.len(),
                        cb as u32,
                    )
                };
                assert_eq!(s, QneonStatus::Ok, "{}", last_error());
                rust.forward(&logits, &targets, inner, &mut want, Some(&mut saved_want))
                    .unwrap();
                assert_eq!(bits(&got), bits(&want));
                for (i, (s, w)) in saved.iter().zip(&saved_want).enumerate() {
                    if targets[i] != -100 {
                        assert_eq!(
                            (s.ln_sum.to_bits(), s.max.to_bits()),
                            (w.ln_sum.to_bits(), w.max.to_bits())
                        );
                    }
                }
                let g_out: Vec<f32> = (0..out_len).map(|i| 0.5 + i as f32).collect();
                let (mut grad, mut grad_want) =
                    (vec![0f32; logits.len()], vec![0f32; logits.len()]);
                // SAFETY: as above.
                let s = unsafe {
                    qneon_cross_entropy_backward(
                        h,
                        logits.as_ptr(),
                        logits.len(),
                        targets.as_ptr(),
                        targets.len(),
                        inner,
                        saved.as_ptr(),
                        saved.len(),
                        g_out.as_ptr(),
                        out_len,
                        grad.as_mut_ptr(),
                        grad.len(),
                        cb as u32,
                    )
                };
                assert_eq!(s, QneonStatus::Ok, "{}", last_error());
                rust.backward(
                    &logits,
                    &targets,
                    inner,
                    &saved_want,
                    &g_out,
                    &mut grad_want,
                )
                .unwrap();
                assert_eq!(bits(&grad), bits(&grad_want));
                // SAFETY: as above.
                let s = unsafe {
                    qneon_cross_entropy_nll(
                        h,
                        logits.as_ptr(),
                        logits.len(),
                        targets.as_ptr(),
                        targets.len(),
                        inner,
                        got.as_mut_ptr(),
                        out_len,
                        cb as u32,
                    )
                };
                assert_eq!(s, QneonStatus::Ok);
                rust.nll(&logits, &targets, inner, &mut want).unwrap();
                assert_eq!(bits(&got), bits(&want));
                // A target out of range, a short `out`.
                let bad = [3i64, 7, 0, 6, 2, 5];
                // SAFETY: as above.
                let s = unsafe {
                    qneon_cross_entropy_forward(
                        h,
                        logits.as_ptr(),
                        logits.len(),
                        bad.as_ptr(),
                        6,
                        inner,
                        got.as_mut_ptr(),
                        out_len,
                        ptr::null_mut(),
                        0,
                        cb as u32,
                    )
                };
                agree(s, rust.forward(&logits, &bad, inner, &mut want, None));
                let s = unsafe {
                    qneon_cross_entropy_forward(
                        h,
                        logits.as_ptr(),
                        logits.len(),
                        targets.as_ptr(),
                        6,
                        inner,
                        got.as_mut_ptr(),
                        0,
                        ptr::null_mut(),
                        0,
                        cb as u32,
                    )
                };
                agree(s, rust.forward(&logits, &targets, inner, &mut [], None));
            }
            // SAFETY: the last use.
            unsafe { qneon_cross_entropy_destroy(h) };
        }
    }
    // Options the library refuses.
    let mut h = ptr::null_mut();
    let mut o = qneon_cross_entropy_default_options(0);
    // SAFETY: valid slots; weights of `classes` elements.
    unsafe {
        assert_eq!(qneon_cross_entropy_create(o, &mut h), QneonStatus::Length);
        o.classes = c;
        o.label_smoothing = 1.5;
        assert_eq!(
            qneon_cross_entropy_create(o, &mut h),
            QneonStatus::InvalidArgument
        );
        assert!(last_error().contains("label smoothing"), "{}", last_error());
        o.label_smoothing = 0.0;
        let negative = [-1.0f32; 7];
        o.weights = negative.as_ptr();
        assert_eq!(
            qneon_cross_entropy_create(o, &mut h),
            QneonStatus::InvalidArgument
        );
        o.weights = ptr::null();
        o.reduction = 3;
        assert_eq!(
            qneon_cross_entropy_create(o, &mut h),
            QneonStatus::InvalidArgument
        );
        assert!(h.is_null());
        // target_log_probs without a handle.
        let classes = [3i64, 5, 0, 6, 2, 1];
        let (mut got, mut want) = (vec![0f32; 6], vec![0f32; 6]);
        let s = qneon_target_log_probs(
            logits.as_ptr(),
            logits.len(),
            c,
            classes.as_ptr(),
            6,
            inner,
            got.as_mut_ptr(),
            6,
            0,
        );
        assert_eq!(s, QneonStatus::Ok);
        qneon::loss::target_log_probs(&logits, c, &classes, inner, &mut want).unwrap();
        assert_eq!(bits(&got), bits(&want));
    }
}

#[test]
fn quantized_cross_entropy_gives_the_librarys_bits() {
    let (n, c, inner) = (4usize, 9usize, 2usize);
    let weights: Vec<f32> = (0..c).map(|i| 0.25 + 0.5 * i as f32).collect();
    let targets: Vec<i64> = vec![3, -100, 0, 8, 2, 5, 1, 4];
    let x8 = bytes(n * c * inner, 16);
    let xu: Vec<u8> = x8.iter().map(|&v| v as u8).collect();
    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    for reduction in [QneonReduction::None, QneonReduction::Mean] {
        let red = [Reduction::None, Reduction::Sum, Reduction::Mean][reduction as usize];
        let out_len = if red == Reduction::None {
            targets.len()
        } else {
            1
        };
        let mut o = qneon_cross_entropy_default_options(c);
        o.reduction = reduction as u32;
        o.weights = weights.as_ptr();
        o.label_smoothing = 0.05;
        let iq = qp(0.07, 3);
        for (cb, b) in BACKENDS {
            let rust = CrossEntropy::new(c)
                .unwrap()
                .reduction(red)
                .weights(&weights)
                .unwrap()
                .label_smoothing(0.05)
                .unwrap()
                .backend(b);
            let (mut h8, mut hu) = (ptr::null_mut(), ptr::null_mut());
            // SAFETY: weights of `c` elements, valid slots.
            let (s8, su) = unsafe {
                (
                    qneon_quantized_cross_entropy_i8_create(o, iq, cb as u32, &mut h8),
                    qneon_quantized_cross_entropy_u8_create(o, iq, cb as u32, &mut hu),
                )
            };
            let rust = match rust {
                Ok(r) => r,
                Err(e) => {
                    assert_eq!(
                        (s8, su),
                        (
                            QneonStatus::BackendUnavailable,
                            QneonStatus::BackendUnavailable
                        )
                    );
                    assert_eq!(last_error(), e.to_string());
                    assert!(h8.is_null() && hu.is_null());
                    continue;
                }
            };
            assert_eq!(
                (s8, su),
                (QneonStatus::Ok, QneonStatus::Ok),
                "{}",
                last_error()
            );
            let (mut got, mut want) = (vec![0f32; out_len], vec![0f32; out_len]);
            // SAFETY: live handles, buffers of their lengths.
            let s = unsafe {
                qneon_quantized_cross_entropy_i8_forward(
                    h8,
                    x8.as_ptr(),
                    x8.len(),
                    targets.as_ptr(),
                    targets.len(),
                    inner,
                    got.as_mut_ptr(),
                    out_len,
                )
            };
            assert_eq!(s, QneonStatus::Ok, "{}", last_error());
            rust.quantized::<i8>(q(iq))
                .unwrap()
                .forward(&x8, &targets, inner, &mut want)
                .unwrap();
            assert_eq!(bits(&got), bits(&want));
            // SAFETY: as above.
            let s = unsafe {
                qneon_quantized_cross_entropy_u8_forward(
                    hu,
                    xu.as_ptr(),
                    xu.len(),
                    targets.as_ptr(),
                    targets.len(),
                    inner,
                    got.as_mut_ptr(),
                    out_len,
                )
            };
            assert_eq!(s, QneonStatus::Ok, "{}", last_error());
            rust.quantized::<u8>(q(iq))
                .unwrap()
                .forward(&xu, &targets, inner, &mut want)
                .unwrap();
            assert_eq!(bits(&got), bits(&want));
            // A short logits buffer: the library's length error.
            // SAFETY: as above, shorter.
            let s = unsafe {
                qneon_quantized_cross_entropy_i8_forward(
                    h8,
                    x8.as_ptr(),
                    x8.len() - 1,
                    targets.as_ptr(),
                    targets.len(),
                    inner,
                    got.as_mut_ptr(),
                    out_len,
                )
            };
            let e = rust
                .quantized::<i8>(q(iq))
                .unwrap()
                .forward(&x8[1..], &targets, inner, &mut want)
                .unwrap_err();
            assert_eq!(s, QneonStatus::Length);
            assert_eq!(last_error(), e.to_string());
            // SAFETY: the last uses.
            unsafe {
                qneon_quantized_cross_entropy_i8_destroy(h8);
                qneon_quantized_cross_entropy_u8_destroy(hu);
            }
        }
        // A zero point outside uint8, an out-of-range backend, a null slot.
        let mut h = ptr::null_mut();
        // SAFETY: weights of `c` elements; valid or null slots.
        unsafe {
            assert_eq!(
                qneon_quantized_cross_entropy_u8_create(o, qp(0.1, -1), 0, &mut h),
                QneonStatus::InvalidArgument
            );
            assert!(last_error().contains("zero point"), "{}", last_error());
            assert_eq!(
                qneon_quantized_cross_entropy_u8_create(o, iq, 3, &mut h),
                QneonStatus::InvalidArgument
            );
            assert!(h.is_null());
            assert_eq!(
                qneon_quantized_cross_entropy_i8_create(o, iq, 0, ptr::null_mut()),
                QneonStatus::NullPointer
            );
            qneon_quantized_cross_entropy_i8_destroy(ptr::null_mut());
        }
    }
}
