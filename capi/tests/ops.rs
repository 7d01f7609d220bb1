//! The C API of the int8 layer ops, from Rust through the same `extern
//! "C"` functions C calls: add / sub / mul (and broadcast) and NoNorm give
//! the library's bytes on every backend; their bad arguments are statuses
//! with the library's messages. GEMM and matmul: `matrix.rs`; the float
//! kernels and losses: `float.rs`.

mod common;

use std::ptr;

use common::*;
use qneon::{Add, FusedActivation, Mul, NoNorm, Operand, QuantParams, Rounding, Sub};
use qneon_capi::*;

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
