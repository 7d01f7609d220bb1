//! The C API of GEMM and matmul against the library on every backend:
//! packed and replaced weights, every requantization, bias or none, every
//! adjoint form, the caller's scratch, and their bad arguments.

mod common;

use std::ptr;

use common::*;
use qneon::{FusedActivation, Gemm, MatMul, Requantization, Rounding};
use qneon_capi::*;

#[test]
fn gemm_gives_the_librarys_bytes_and_replaces_weights() {
    let (m, n, k) = (5usize, 11usize, 37usize);
    let (qi, qo) = (qp(0.02, -4), qp(0.3, 3));
    let (w, w2, x) = (bytes(n * k, 8), bytes(n * k, 9), bytes(m * k, 10));
    let bias: Vec<i32> = (0..n as i32)
        .map(|c| (c * 104_729) % 20_001 - 10_000)
        .collect();
    let scales: Vec<f32> = (0..n).map(|c| 0.003 + 0.0001 * c as f32).collect();
    for (rq, requant) in [
        (
            QneonRequantization::Single,
            Requantization::Multiplier(Rounding::Single),
        ),
        (
            QneonRequantization::Double,
            Requantization::Multiplier(Rounding::Double),
        ),
        (QneonRequantization::RealF64, Requantization::RealF64),
        (QneonRequantization::XnnpackF32, Requantization::XnnpackF32),
    ] {
        for with_bias in [false, true] {
            let bias_ptr = if with_bias {
                bias.as_ptr()
            } else {
                ptr::null()
            };
            let mut h = ptr::null_mut();
            // SAFETY: arrays of their documented lengths, a valid slot.
            let s = unsafe {
                qneon_gemm_create(
                    w.as_ptr(),
                    n,
                    k,
                    bias_ptr,
                    qi,
                    scales.as_ptr(),
                    qo,
                    1,
                    rq as u32,
                    &mut h,
                )
            };
            assert_eq!(s, QneonStatus::Ok, "{}", last_error());
            let mut rust = Gemm::new(
                &w,
                n,
                k,
                with_bias.then_some(&bias[..]),
                q(qi),
                &scales,
                q(qo),
                FusedActivation::Relu,
                requant,
            )
            .unwrap();
            let (mut sn, mut sk) = (0, 0);
            // SAFETY: a live handle, two writable sizes.
            assert_eq!(
                unsafe { qneon_gemm_shape(h, &mut sn, &mut sk) },
                QneonStatus::Ok
            );
            assert_eq!((sn, sk), (n, k));
            for step in 0..3 {
                if step == 1 {
                    // SAFETY: a live handle used by this call only; n * k weights.
                    assert_eq!(
                        unsafe { qneon_gemm_set_weights(h, w2.as_ptr(), n * k, false) },
                        QneonStatus::Ok
                    );
                    rust.set_weights(&w2).unwrap();
                } else if step == 2 {
                    // SAFETY: as above.
                    assert_eq!(
                        unsafe { qneon_gemm_set_weights(h, w.as_ptr(), n * k, true) },
                        QneonStatus::Ok
                    );
                    rust.set_weights_transposed(&w).unwrap();
                }
                for (cb, b) in BACKENDS {
                    let (mut got, mut want) = (vec![0i8; m * n], vec![0i8; m * n]);
                    // SAFETY: a live handle; m * k inputs and m * n outputs.
                    let s =
                        unsafe { qneon_gemm_run(h, x.as_ptr(), got.as_mut_ptr(), m, cb as u32) };
                    if agree(s, rust.run_with(b, &x, &mut want, m)) {
                        assert_eq!(got, want, "{rq:?} bias {with_bias} step {step}");
                    }
                }
            }
            // SAFETY: errors detected before any access; then the last use.
            unsafe {
                assert_eq!(
                    qneon_gemm_set_weights(h, w.as_ptr(), n * k - 1, false),
                    QneonStatus::Length
                );
                assert_eq!(
                    last_error(),
                    rust.set_weights(&w[1..]).unwrap_err().to_string()
                );
                let mut out = [0i8; 4];
                assert_eq!(
                    qneon_gemm_run(h, x.as_ptr(), out.as_mut_ptr(), usize::MAX / 2, 0),
                    QneonStatus::Length
                );
                assert!(last_error().contains("overflow"), "{}", last_error());
                qneon_gemm_destroy(h);
            }
        }
    }
    let mut h = ptr::null_mut();
    // SAFETY: the weights pointer is never read: n * k overflows first.
    unsafe {
        assert_eq!(
            qneon_gemm_create(
                w.as_ptr(),
                usize::MAX,
                2,
                ptr::null(),
                qi,
                scales.as_ptr(),
                qo,
                0,
                0,
                &mut h
            ),
            QneonStatus::Length
        );
        assert_eq!(
            qneon_gemm_create(
                w.as_ptr(),
                n,
                k,
                ptr::null(),
                qi,
                scales.as_ptr(),
                qo,
                0,
                4,
                &mut h
            ),
            QneonStatus::InvalidArgument
        );
        assert!(
            last_error().starts_with("requantization 4 is not a QneonRequantization"),
            "{}",
            last_error()
        );
    }
}

#[test]
fn matmul_gives_the_librarys_bytes_with_the_callers_scratch() {
    let (m, n, k) = (6usize, 9usize, 21usize);
    let (lhs, rhs) = (bytes(m * k, 11), bytes(k * n, 12));
    let (ql, qr, qo) = (qp(0.03, 5), qp(0.04, -6), qp(3.0, 1));
    for adj_x in [false, true] {
        for adj_y in [false, true] {
            for rounding in 0..2u32 {
                let mut h = ptr::null_mut();
                // SAFETY: a valid slot.
                let s = unsafe {
                    qneon_matmul_create(m, n, k, adj_x, adj_y, ql, qr, qo, rounding, &mut h)
                };
                assert_eq!(s, QneonStatus::Ok);
                let rust = MatMul::new(
                    m,
                    n,
                    k,
                    adj_x,
                    adj_y,
                    q(ql),
                    q(qr),
                    q(qo),
                    [Rounding::Single, Rounding::Double][rounding as usize],
                )
                .unwrap();
                let (mut bytes_len, mut words_len) = (0, 0);
                // SAFETY: a live handle, two writable sizes.
                assert_eq!(
                    unsafe { qneon_matmul_scratch(h, &mut bytes_len, &mut words_len) },
                    QneonStatus::Ok
                );
                assert_eq!(
                    (bytes_len, words_len),
                    (rust.scratch_bytes(), rust.scratch_words())
                );
                for (cb, b) in BACKENDS {
                    for short in [0, 1] {
                        let mut sb = vec![0i8; bytes_len - short];
                        let mut sw = vec![0i32; words_len];
                        let (mut got, mut want) = (vec![0i8; m * n], vec![0i8; m * n]);
                        // SAFETY: a live handle, buffers of the lengths given.
                        let s = unsafe {
                            qneon_matmul_run(
                                h,
                                lhs.as_ptr(),
                                lhs.len(),
                                rhs.as_ptr(),
                                rhs.len(),
                                got.as_mut_ptr(),
                                got.len(),
                                sb.as_mut_ptr(),
                                sb.len(),
                                sw.as_mut_ptr(),
                                sw.len(),
                                cb as u32,
                            )
                        };
                        let (mut sb2, mut sw2) = (sb.clone(), sw.clone());
                        if agree(
                            s,
                            rust.run_with(b, &lhs, &rhs, &mut want, &mut sb2, &mut sw2),
                        ) {
                            assert_eq!(got, want);
                        }
                    }
                }
                // Scratch overlapping the output.
                let mut big = vec![0i8; bytes_len + m * n];
                let mut sw = vec![0i32; words_len];
                let p = big.as_mut_ptr();
                // SAFETY: the overlap is detected before any access.
                let s = unsafe {
                    qneon_matmul_run(
                        h,
                        lhs.as_ptr(),
                        lhs.len(),
                        rhs.as_ptr(),
                        rhs.len(),
                        p,
                        m * n,
                        p,
                        bytes_len,
                        sw.as_mut_ptr(),
                        sw.len(),
                        0,
                    )
                };
                assert_eq!(s, QneonStatus::InvalidArgument);
                assert!(
                    last_error().starts_with("output and scratch_bytes overlap"),
                    "{}",
                    last_error()
                );
                // SAFETY: the last use.
                unsafe { qneon_matmul_destroy(h) };
            }
        }
    }
}
