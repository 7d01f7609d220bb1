//! The C API's SVDF: the state buffer is the caller's and carries the
//! sequence across `run` calls (the same bytes as the library's `Svdf` on
//! the same steps), `reset_state` starts a new sequence, and bad lengths,
//! overlaps and null pointers are errors.

mod common;

use std::ptr;

use common::*;
use qneon::{Rounding, Svdf, SvdfQuantization, SvdfShape, SvdfWeights};
use qneon_capi::*;

const BATCH: usize = 2;
const INPUT: usize = 5;
const FILTERS: usize = 6;
const MEMORY: usize = 3;
const RANK: usize = 2;
const UNITS: usize = FILTERS / RANK;

#[test]
fn svdf_state_carries_across_runs_and_resets() {
    let (qx, qs, qy) = (qp(0.05, 3), qp(0.004, 0), qp(0.08, -2));
    let (s_wf, s_wt) = (0.01f32, 0.0005f32);
    let wf = bytes(FILTERS * INPUT, 1);
    let wt: Vec<i16> = (0..FILTERS * MEMORY)
        .map(|i| ((i * 977) % 16001) as i16 - 8000)
        .collect();
    let bias: Vec<i32> = (0..UNITS as i32).map(|u| 300 * u - 400).collect();
    let mut op = ptr::null_mut();
    // SAFETY: a valid handle slot.
    let status = unsafe {
        qneon_svdf_i16_create(
            BATCH, INPUT, FILTERS, MEMORY, RANK, qx, s_wf, s_wt, qs, qy, 0, &mut op,
        )
    };
    assert_eq!(status, QneonStatus::Ok, "{}", last_error());
    // SAFETY: a live handle.
    let state_len = unsafe { qneon_svdf_i16_state_len(op) };
    assert_eq!(state_len, BATCH * FILTERS * MEMORY);
    let shape = SvdfShape {
        batch: BATCH,
        input_size: INPUT,
        filters: FILTERS,
        memory: MEMORY,
        rank: RANK,
    };
    let quantization = SvdfQuantization {
        input: q(qx),
        weights_feature_scale: s_wf,
        weights_time_scale: s_wt,
        state: q(qs),
        output: q(qy),
    };
    let rust = Svdf::<i16>::new(shape, quantization, Rounding::Single).unwrap();
    let mut c_state = vec![0i16; state_len];
    let mut rust_state = vec![0i16; state_len];
    let mut outputs = Vec::new();
    for step in 0..5 {
        let x = bytes(BATCH * INPUT, 10 + step);
        let mut c_y = vec![0i8; BATCH * UNITS];
        let mut rust_y = vec![0i8; BATCH * UNITS];
        // SAFETY: every buffer has its length.
        let status = unsafe {
            qneon_svdf_i16_run(
                op,
                x.as_ptr(),
                wf.as_ptr(),
                wt.as_ptr(),
                bias.as_ptr(),
                c_state.as_mut_ptr(),
                c_y.as_mut_ptr(),
                QneonBackend::Scalar as u32,
            )
        };
        assert_eq!(status, QneonStatus::Ok, "{}", last_error());
        let weights = SvdfWeights {
            feature: &wf,
            time: &wt,
            bias: Some(&bias),
        };
        rust.run_with(
            qneon::Backend::Scalar,
            &x,
            weights,
            &mut rust_state,
            &mut rust_y,
        )
        .unwrap();
        assert_eq!(c_y, rust_y, "step {step}");
        assert_eq!(c_state, rust_state, "step {step}");
        outputs.push(c_y);
    }
    assert!(c_state.iter().any(|&v| v != 0), "the state holds the steps");
    // A reset, then step 0's input again: step 0's output again.
    // SAFETY: a live handle and a state buffer of its length.
    let status = unsafe { qneon_svdf_i16_reset_state(op, c_state.as_mut_ptr(), state_len) };
    assert_eq!(status, QneonStatus::Ok, "{}", last_error());
    assert!(c_state.iter().all(|&v| v == 0));
    let x = bytes(BATCH * INPUT, 10);
    let mut y = vec![0i8; BATCH * UNITS];
    // SAFETY: every buffer has its length; no bias (null).
    let no_bias = unsafe {
        qneon_svdf_i16_run(
            op,
            x.as_ptr(),
            wf.as_ptr(),
            wt.as_ptr(),
            bias.as_ptr(),
            c_state.as_mut_ptr(),
            y.as_mut_ptr(),
            QneonBackend::Scalar as u32,
        )
    };
    assert_eq!(no_bias, QneonStatus::Ok);
    assert_eq!(y, outputs[0]);
    // Errors: a state of the wrong length, the output overlapping the
    // state, a null input.
    // SAFETY: the lengths given are the buffers' own or shorter.
    unsafe {
        assert_eq!(
            qneon_svdf_i16_reset_state(op, c_state.as_mut_ptr(), state_len - 1),
            QneonStatus::Length
        );
        let overlap = qneon_svdf_i16_run(
            op,
            x.as_ptr(),
            wf.as_ptr(),
            wt.as_ptr(),
            bias.as_ptr(),
            c_state.as_mut_ptr(),
            c_state.as_mut_ptr() as *mut i8,
            QneonBackend::Scalar as u32,
        );
        assert_ne!(overlap, QneonStatus::Ok);
        assert!(last_error().contains("overlap"), "{}", last_error());
        let null = qneon_svdf_i16_run(
            op,
            ptr::null(),
            wf.as_ptr(),
            wt.as_ptr(),
            ptr::null(),
            c_state.as_mut_ptr(),
            y.as_mut_ptr(),
            QneonBackend::Scalar as u32,
        );
        assert_eq!(null, QneonStatus::NullPointer);
        qneon_svdf_i16_destroy(op);
    }
}
