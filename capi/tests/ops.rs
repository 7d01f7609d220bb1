//! The C API of the ops beyond the activations, from Rust through the same
//! `extern "C"` functions C calls: add / sub / mul (and broadcast), NoNorm,
//! GEMM, matmul, the f32 kernels and cross-entropy give the library's bits
//! on every backend; their bad arguments are statuses with the library's
//! messages.

use std::ffi::CStr;
use std::ptr;

use qneon::f32::SoftmaxVariant;
use qneon::loss::{CrossEntropy, LogSumExp, Reduction};
use qneon::{
    Add, Backend, FusedActivation, Gemm, MatMul, Mul, NoNorm, Operand, QuantParams, Requantization,
    Rounding, Sub,
};
use qneon_capi::*;

fn last_error() -> String {
    // SAFETY: the function returns a valid NUL-terminated string.
    unsafe { CStr::from_ptr(qneon_last_error_message()) }
        .to_string_lossy()
        .into_owned()
}

fn qp(scale: f32, zero_point: i32) -> QneonQuantParams {
    QneonQuantParams { scale, zero_point }
}

fn q(p: QneonQuantParams) -> QuantParams {
    QuantParams::new(p.scale, p.zero_point)
}

fn bytes(n: usize, salt: usize) -> Vec<i8> {
    (0..n)
        .map(|i| ((i * 73 + salt * 29 + (i * i) % 11) % 256) as u8 as i8)
        .collect()
}

fn reals(n: usize, salt: usize, span: f32) -> Vec<f32> {
    (0..n)
        .map(|i| span * (((i * 37 + salt * 53) % 101) as f32 - 50.0) / 50.0)
        .collect()
}

const BACKENDS: [(QneonBackend, Backend); 2] = [
    (QneonBackend::Scalar, Backend::Scalar),
    (QneonBackend::Neon, Backend::Neon),
];

/// A C status against the library's result: both succeed, or the C call
/// fails with the library's message (backend unavailability included).
fn agree(status: QneonStatus, rust: qneon::Result<()>) -> bool {
    match rust {
        Ok(()) => {
            assert_eq!(status, QneonStatus::Ok, "{}", last_error());
            true
        }
        Err(e) => {
            assert_ne!(status, QneonStatus::Ok);
            assert_eq!(last_error(), e.to_string());
            false
        }
    }
}

/// The operand `run_broadcast` makes of `v` along an output of `n`.
fn operand(v: &[i8], n: usize) -> Operand<'_> {
    match v.len() {
        l if l == n => Operand::Slice(v),
        1 => Operand::Scalar(v[0]),
        _ => Operand::Row(v),
    }
}

#[test]
fn binary_ops_give_the_librarys_bytes_in_every_form() {
    let (qa, qb, qo) = (qp(0.05, -3), qp(0.08, 7), qp(0.1, 2));
    let n = 84;
    let (x, y, row) = (bytes(n, 1), bytes(n, 2), bytes(12, 3));
    for activation in 0..3u32 {
        for rounding in 0..2u32 {
            let act = [
                FusedActivation::None,
                FusedActivation::Relu,
                FusedActivation::Relu6,
            ][activation as usize];
            let rnd = [Rounding::Single, Rounding::Double][rounding as usize];
            let (mut add, mut sub, mut mul) = (ptr::null_mut(), ptr::null_mut(), ptr::null_mut());
            // SAFETY: valid handle slots.
            unsafe {
                assert_eq!(
                    qneon_add_create(qa, qb, qo, activation, rounding, &mut add),
                    QneonStatus::Ok
                );
                assert_eq!(
                    qneon_sub_create(qa, qb, qo, activation, rounding, &mut sub),
                    QneonStatus::Ok
                );
                assert_eq!(
                    qneon_mul_create(qa, qb, qp(0.3, 1), activation, rounding, &mut mul),
                    QneonStatus::Ok
                );
            }
            let rust_add = Add::new(q(qa), q(qb), q(qo), act, rnd).unwrap();
            let rust_sub = Sub::new(q(qa), q(qb), q(qo), act, rnd).unwrap();
            let rust_mul = Mul::new(q(qa), q(qb), QuantParams::new(0.3, 1), act, rnd).unwrap();
            // (a, b) operand pairs: plain, row, value, value and row.
            let scalar = [x[5]];
            let forms: [(&[i8], &[i8]); 4] = [(&x, &y), (&x, &row), (&scalar, &y), (&scalar, &row)];
            for (cb, b) in BACKENDS {
                for (a_in, b_in) in forms {
                    let op = |v| operand(v, n);
                    let mut got = vec![0i8; n];
                    let mut want = vec![0i8; n];
                    for k in 0..3 {
                        // SAFETY: live handles; buffers valid for the lengths given.
                        let s = unsafe {
                            match k {
                                0 => qneon_add_run_broadcast(
                                    add,
                                    a_in.as_ptr(),
                                    a_in.len(),
                                    b_in.as_ptr(),
                                    b_in.len(),
                                    got.as_mut_ptr(),
                                    n,
                                    cb as u32,
                                ),
                                1 => qneon_sub_run_broadcast(
                                    sub,
                                    a_in.as_ptr(),
                                    a_in.len(),
                                    b_in.as_ptr(),
                                    b_in.len(),
                                    got.as_mut_ptr(),
                                    n,
                                    cb as u32,
                                ),
                                _ => qneon_mul_run_broadcast(
                                    mul,
                                    a_in.as_ptr(),
                                    a_in.len(),
                                    b_in.as_ptr(),
                                    b_in.len(),
                                    got.as_mut_ptr(),
                                    n,
                                    cb as u32,
                                ),
                            }
                        };
                        let r = match k {
                            0 => rust_add.run_operands(b, op(a_in), op(b_in), &mut want),
                            1 => rust_sub.run_operands(b, op(a_in), op(b_in), &mut want),
                            _ => rust_mul.run_operands(b, op(a_in), op(b_in), &mut want),
                        };
                        if agree(s, r) {
                            assert_eq!(got, want, "op {k} {a_in:?} {b_in:?} {b:?}");
                        }
                    }
                }
                // The plain run is the broadcast run with equal lengths.
                let mut got = vec![0i8; n];
                let mut want = vec![0i8; n];
                // SAFETY: as above.
                let s = unsafe {
                    qneon_mul_run(mul, x.as_ptr(), y.as_ptr(), got.as_mut_ptr(), n, cb as u32)
                };
                if agree(s, rust_mul.run_with(b, &x, &y, &mut want)) {
                    assert_eq!(got, want);
                }
            }
            // SAFETY: live handles, not used again.
            unsafe {
                qneon_add_destroy(add);
                qneon_sub_destroy(sub);
                qneon_mul_destroy(mul);
            }
        }
    }
}

#[test]
fn binary_bad_arguments() {
    let mut add = ptr::null_mut();
    let (x, mut out) = (bytes(16, 1), vec![0i8; 16]);
    // SAFETY: valid slots and buffers, or errors detected before any access.
    unsafe {
        assert_eq!(
            qneon_add_create(qp(0.1, 0), qp(0.1, 0), qp(0.1, 0), 3, 0, &mut add),
            QneonStatus::InvalidArgument
        );
        assert!(
            last_error().starts_with("activation 3 is not a QneonActivation"),
            "{}",
            last_error()
        );
        assert_eq!(
            qneon_add_create(qp(0.1, 0), qp(0.1, 0), qp(0.1, 0), 0, 2, &mut add),
            QneonStatus::InvalidArgument
        );
        assert!(
            last_error().starts_with("rounding 2 is not a QneonRounding"),
            "{}",
            last_error()
        );
        // An output scale too fine for TFLite's multiplier: the library's error.
        let fine = qp(1e-9, 0);
        assert_eq!(
            qneon_add_create(qp(0.1, 0), qp(0.1, 0), fine, 0, 0, &mut add),
            QneonStatus::Unsupported
        );
        let e = Add::new(
            QuantParams::new(0.1, 0),
            QuantParams::new(0.1, 0),
            QuantParams::new(1e-9, 0),
            FusedActivation::None,
            Rounding::Single,
        )
        .unwrap_err();
        assert_eq!(last_error(), e.to_string());
        assert!(add.is_null());
        assert_eq!(
            qneon_add_create(qp(0.1, 0), qp(0.1, 0), qp(0.1, 0), 0, 0, &mut add),
            QneonStatus::Ok
        );
        // Null buffers with lengths, an output overlapping an input, a row of 0.
        assert_eq!(
            qneon_add_run(add, x.as_ptr(), ptr::null(), out.as_mut_ptr(), 16, 0),
            QneonStatus::NullPointer
        );
        assert!(last_error().starts_with("b is null"), "{}", last_error());
        let p = out.as_mut_ptr();
        assert_eq!(
            qneon_add_run(add, x.as_ptr(), p.add(4), p, 8, 0),
            QneonStatus::InvalidArgument
        );
        assert_eq!(
            last_error(),
            "b and output overlap; the operators are out of place: use separate buffers"
        );
        assert_eq!(
            qneon_add_run_broadcast(add, x.as_ptr(), 16, x.as_ptr(), 0, out.as_mut_ptr(), 16, 0),
            QneonStatus::Length
        );
        // Both inputs may be one buffer (they are only read).
        assert_eq!(
            qneon_add_run(add, x.as_ptr(), x.as_ptr(), out.as_mut_ptr(), 16, 0),
            QneonStatus::Ok
        );
        assert_eq!(
            qneon_add_run(ptr::null(), x.as_ptr(), x.as_ptr(), out.as_mut_ptr(), 16, 0),
            QneonStatus::NullPointer
        );
        qneon_add_destroy(add);
    }
}

#[test]
fn no_norm_gives_the_librarys_bytes() {
    let c = 13;
    let (qi, qo) = (qp(0.04, 1), qp(0.05, -2));
    let gamma = bytes(c, 4);
    let scales: Vec<f32> = (0..c).map(|i| 0.002 + 0.0005 * i as f32).collect();
    let beta: Vec<i32> = (0..c as i32).map(|i| (i * 7919) % 4001 - 2000).collect();
    let (gf, bf) = (reals(c, 5, 1.5), reals(c, 6, 3.0));
    let x = bytes(c * 7, 7);
    for act in 0..3u32 {
        let fa = [
            FusedActivation::None,
            FusedActivation::Relu,
            FusedActivation::Relu6,
        ][act as usize];
        let (mut h, mut hf) = (ptr::null_mut(), ptr::null_mut());
        // SAFETY: arrays of `c` elements, valid handle slots.
        unsafe {
            assert_eq!(
                qneon_no_norm_create(
                    gamma.as_ptr(),
                    scales.as_ptr(),
                    beta.as_ptr(),
                    c,
                    qi,
                    qo,
                    act,
                    &mut h
                ),
                QneonStatus::Ok
            );
            assert_eq!(
                qneon_no_norm_create_f32(gf.as_ptr(), bf.as_ptr(), c, qi, qo, act, &mut hf),
                QneonStatus::Ok
            );
        }
        let r = NoNorm::new(&gamma, &scales, &beta, q(qi), q(qo), fa).unwrap();
        let rf = NoNorm::from_f32(&gf, &bf, q(qi), q(qo), fa).unwrap();
        for (cb, b) in BACKENDS {
            for (handle, rust) in [(h, &r), (hf, &rf)] {
                let (mut got, mut want) = (vec![0i8; x.len()], vec![0i8; x.len()]);
                // SAFETY: a live handle, buffers of x.len().
                let s = unsafe {
                    qneon_no_norm_run(handle, x.as_ptr(), got.as_mut_ptr(), x.len(), cb as u32)
                };
                if agree(s, rust.run_with(b, &x, &mut want)) {
                    assert_eq!(got, want);
                }
                // A length that is not a whole number of rows.
                // SAFETY: as above, shorter.
                let s = unsafe {
                    qneon_no_norm_run(handle, x.as_ptr(), got.as_mut_ptr(), c + 1, cb as u32)
                };
                agree(s, rust.run_with(b, &x[..c + 1], &mut want[..c + 1]));
            }
        }
        // SAFETY: live handles, not used again.
        unsafe {
            qneon_no_norm_destroy(h);
            qneon_no_norm_destroy(hf);
        }
    }
    // No channels; a beta beyond the accumulator; a non-finite real gamma.
    let mut h = ptr::null_mut();
    // SAFETY: null arrays of 0 elements, or arrays of 1.
    unsafe {
        assert_eq!(
            qneon_no_norm_create(ptr::null(), ptr::null(), ptr::null(), 0, qi, qo, 0, &mut h),
            QneonStatus::Length
        );
        assert_eq!(
            last_error(),
            NoNorm::new(&[], &[], &[], q(qi), q(qo), FusedActivation::None)
                .unwrap_err()
                .to_string()
        );
        let big = [i32::MAX];
        assert_eq!(
            qneon_no_norm_create(
                [1i8].as_ptr(),
                [0.01f32].as_ptr(),
                big.as_ptr(),
                1,
                qi,
                qo,
                0,
                &mut h
            ),
            QneonStatus::InvalidArgument
        );
        assert_eq!(
            qneon_no_norm_create_f32([f32::NAN].as_ptr(), [0f32].as_ptr(), 1, qi, qo, 0, &mut h),
            QneonStatus::InvalidArgument
        );
        assert!(h.is_null());
    }
}

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
                3,
                &mut h
            ),
            QneonStatus::InvalidArgument
        );
        assert!(
            last_error().starts_with("requantization 3 is not a QneonRequantization"),
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
