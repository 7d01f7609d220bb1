//! The C API from Rust, through the same `extern "C"` functions C calls:
//! bytes equal the library's for every op, type and method; every bad
//! argument is a status and a message, never a crash.

use std::ffi::CStr;
use std::ptr;

use qneon::{q31, Backend, LogSoftmax, Logistic, Method, QuantParams, Softmax, Tanh};
use qneon_capi::*;

fn last_error() -> String {
    // SAFETY: the function returns a valid NUL-terminated string.
    unsafe { CStr::from_ptr(qneon_last_error_message()) }
        .to_string_lossy()
        .into_owned()
}

fn qp(q: QuantParams) -> QneonQuantParams {
    QneonQuantParams {
        scale: q.scale,
        zero_point: q.zero_point,
    }
}

const METHODS: [(u32, Method); 4] = [
    (QneonMethod::FixedPoint as u32, Method::FixedPoint),
    (QneonMethod::Lut as u32, Method::Lut),
    (QneonMethod::LutFixedPoint as u32, Method::LutFixedPoint),
    (QneonMethod::DequantF32 as u32, Method::DequantF32),
];

fn data<T: qneon::QuantElem>(n: usize) -> Vec<T> {
    (0..n)
        .map(|i| T::from_i32(T::MIN + ((i * 7919 + 13) % (T::MAX - T::MIN + 1) as usize) as i32))
        .collect()
}

/// One op on one type: every method `new()` accepts gives the library's
/// bytes through the C API; every method it rejects gives the same
/// status kind and message.
macro_rules! check_op {
    ($t:ty, $create:ident, $run:ident, $destroy:ident, $oq:ident,
     |$in_q:ident, $out_q:ident, $m:ident| $new:expr, rows: $rows:tt, beta: $beta:tt) => {{
        let $in_q = QuantParams::new(
            0.0625,
            if <$t as qneon::QuantElem>::MIN < 0 {
                0
            } else {
                128
            },
        );
        let $out_q: QuantParams = {
            let q = $oq();
            QuantParams::new(q.scale, q.zero_point)
        };
        let input = data::<$t>(96);
        for (c_method, $m) in METHODS {
            let rust = $new;
            let mut handle = ptr::null_mut();
            let status = capi_create!($create, $t, $in_q, $out_q, c_method, &mut handle, $beta);
            match rust {
                Ok(op) => {
                    assert_eq!(
                        status,
                        QneonStatus::Ok,
                        "{}: {}",
                        stringify!($create),
                        last_error()
                    );
                    for backend in [QneonBackend::Best, QneonBackend::Scalar, QneonBackend::Neon] {
                        let mut got = vec![<$t>::default(); 96];
                        // SAFETY: a live handle and buffers of 96 elements.
                        let s = unsafe {
                            capi_run!(
                                $run,
                                handle,
                                input.as_ptr(),
                                got.as_mut_ptr(),
                                96,
                                $rows,
                                backend as u32
                            )
                        };
                        let mut want = vec![<$t>::default(); 96];
                        let b = match backend {
                            QneonBackend::Best => Backend::best(),
                            QneonBackend::Scalar => Backend::Scalar,
                            QneonBackend::Neon => Backend::Neon,
                        };
                        let r = rust_run!(op, b, &input, &mut want, $rows);
                        match r {
                            Ok(()) => {
                                assert_eq!(s, QneonStatus::Ok, "{}", last_error());
                                assert_eq!(
                                    got,
                                    want,
                                    "{} {:?} {:?}",
                                    stringify!($run),
                                    $m,
                                    backend
                                );
                            }
                            Err(e) => {
                                assert_eq!(s, QneonStatus::BackendUnavailable);
                                assert_eq!(last_error(), e.to_string());
                            }
                        }
                    }
                    // SAFETY: the handle is live and not used again.
                    unsafe { $destroy(handle) };
                }
                Err(e) => {
                    assert_ne!(status, QneonStatus::Ok);
                    assert!(handle.is_null());
                    assert_eq!(last_error(), e.to_string());
                }
            }
        }
    }};
}

macro_rules! capi_create {
    ($create:ident, $t:ty, $i:expr, $o:expr, $m:expr, $h:expr, true) => {
        // SAFETY: `$h` is a valid handle slot.
        unsafe { $create(qp($i), 1.0, qp($o), $m, $h) }
    };
    ($create:ident, $t:ty, $i:expr, $o:expr, $m:expr, $h:expr, false) => {
        // SAFETY: `$h` is a valid handle slot.
        unsafe { $create(qp($i), qp($o), $m, $h) }
    };
}

macro_rules! capi_run {
    ($run:ident, $h:expr, $i:expr, $o:expr, $n:expr, true, $b:expr) => {
        $run($h, $i, $o, $n, 16, $b)
    };
    ($run:ident, $h:expr, $i:expr, $o:expr, $n:expr, false, $b:expr) => {
        $run($h, $i, $o, $n, $b)
    };
}

macro_rules! rust_run {
    ($op:expr, $b:expr, $i:expr, $o:expr, true) => {
        $op.run_with($b, $i, $o, 16)
    };
    ($op:expr, $b:expr, $i:expr, $o:expr, false) => {
        $op.run_with($b, $i, $o)
    };
}

#[test]
fn every_op_type_and_method_gives_the_librarys_bytes() {
    check_op!(i8, qneon_softmax_i8_create, qneon_softmax_i8_run, qneon_softmax_i8_destroy,
        qneon_softmax_i8_output_quantization, |i, o, m| Softmax::<i8>::new(i, 1.0, o, m), rows: true, beta: true);
    check_op!(u8, qneon_softmax_u8_create, qneon_softmax_u8_run, qneon_softmax_u8_destroy,
        qneon_softmax_u8_output_quantization, |i, o, m| Softmax::<u8>::new(i, 1.0, o, m), rows: true, beta: true);
    check_op!(i16, qneon_softmax_i16_create, qneon_softmax_i16_run, qneon_softmax_i16_destroy,
        qneon_softmax_i16_output_quantization, |i, o, m| Softmax::<i16>::new(i, 1.0, o, m), rows: true, beta: true);
    check_op!(i8, qneon_log_softmax_i8_create, qneon_log_softmax_i8_run, qneon_log_softmax_i8_destroy,
        qneon_log_softmax_i8_output_quantization, |i, o, m| LogSoftmax::<i8>::new(i, o, m), rows: true, beta: false);
    check_op!(u8, qneon_log_softmax_u8_create, qneon_log_softmax_u8_run, qneon_log_softmax_u8_destroy,
        qneon_log_softmax_u8_output_quantization, |i, o, m| LogSoftmax::<u8>::new(i, o, m), rows: true, beta: false);
    check_op!(i8, qneon_logistic_i8_create, qneon_logistic_i8_run, qneon_logistic_i8_destroy,
        qneon_logistic_i8_output_quantization, |i, o, m| Logistic::<i8>::new(i, o, m), rows: false, beta: false);
    check_op!(u8, qneon_logistic_u8_create, qneon_logistic_u8_run, qneon_logistic_u8_destroy,
        qneon_logistic_u8_output_quantization, |i, o, m| Logistic::<u8>::new(i, o, m), rows: false, beta: false);
    check_op!(i16, qneon_logistic_i16_create, qneon_logistic_i16_run, qneon_logistic_i16_destroy,
        qneon_logistic_i16_output_quantization, |i, o, m| Logistic::<i16>::new(i, o, m), rows: false, beta: false);
    check_op!(i8, qneon_tanh_i8_create, qneon_tanh_i8_run, qneon_tanh_i8_destroy,
        qneon_tanh_i8_output_quantization, |i, o, m| Tanh::<i8>::new(i, o, m), rows: false, beta: false);
    check_op!(u8, qneon_tanh_u8_create, qneon_tanh_u8_run, qneon_tanh_u8_destroy,
        qneon_tanh_u8_output_quantization, |i, o, m| Tanh::<u8>::new(i, o, m), rows: false, beta: false);
    check_op!(i16, qneon_tanh_i16_create, qneon_tanh_i16_run, qneon_tanh_i16_destroy,
        qneon_tanh_i16_output_quantization, |i, o, m| Tanh::<i16>::new(i, o, m), rows: false, beta: false);
}

#[test]
fn q31_and_quantize_give_the_librarys_bytes() {
    let x: Vec<i32> = (0..64).map(|i: i32| i.wrapping_mul(0x1357_9bdf)).collect();
    let mut got = vec![0i32; 64];
    let mut want = vec![0i32; 64];
    // SAFETY: buffers of 64 elements.
    let s = unsafe { qneon_q31_softmax(x.as_ptr(), 5, got.as_mut_ptr(), 64, 16, 0) };
    assert_eq!(s, QneonStatus::Ok);
    q31::softmax::<i32, i32>(&x, 5, &mut want, 16).unwrap();
    assert_eq!(got, want);
    // SAFETY: as above.
    let s = unsafe { qneon_q31_logistic(x.as_ptr(), 3, got.as_mut_ptr(), 64, 0) };
    assert_eq!(s, QneonStatus::Ok);
    q31::logistic::<i32, i32>(&x, 3, &mut want).unwrap();
    assert_eq!(got, want);
    // SAFETY: as above.
    let s = unsafe { qneon_q31_tanh(x.as_ptr(), 3, got.as_mut_ptr(), 64, 0) };
    assert_eq!(s, QneonStatus::Ok);
    q31::tanh::<i32, i32>(&x, 3, &mut want).unwrap();
    assert_eq!(got, want);
    // SAFETY: as above.
    let s = unsafe { qneon_q31_tanh(x.as_ptr(), 40, got.as_mut_ptr(), 64, 0) };
    assert_eq!(s, QneonStatus::InvalidArgument);
    assert!(last_error().contains("integer_bits"), "{}", last_error());

    let q = QuantParams::new(0.3, -5);
    let real: Vec<f32> = (0..50)
        .map(|i| (i as f32 - 25.0) * 1.7)
        .chain([f32::NAN])
        .collect();
    let mut got = vec![0i8; real.len()];
    let mut want = vec![0i8; real.len()];
    // SAFETY: buffers of real.len() elements.
    let s = unsafe { qneon_quantize_i8(qp(q), real.as_ptr(), got.as_mut_ptr(), real.len(), 0) };
    assert_eq!(s, QneonStatus::Ok);
    q.quantize(&real, &mut want).unwrap();
    assert_eq!(got, want);
    let mut back = vec![0f32; real.len()];
    let mut back_want = vec![0f32; real.len()];
    // SAFETY: as above.
    let s = unsafe { qneon_dequantize_i8(qp(q), got.as_ptr(), back.as_mut_ptr(), got.len(), 0) };
    assert_eq!(s, QneonStatus::Ok);
    q.dequantize(&want, &mut back_want).unwrap();
    assert_eq!(back, back_want);
}

fn softmax_i8() -> *mut QneonSoftmaxI8 {
    let mut h = ptr::null_mut();
    let out = qneon_softmax_i8_output_quantization();
    // SAFETY: `h` is a valid handle slot.
    let s = unsafe { qneon_softmax_i8_create(qp(QuantParams::new(0.1, 0)), 1.0, out, 0, &mut h) };
    assert_eq!(s, QneonStatus::Ok);
    h
}

#[test]
fn bad_arguments_are_statuses_with_messages() {
    let h = softmax_i8();
    let x = [1i8; 32];
    let mut y = [0i8; 32];
    // SAFETY (every call below): the pointers are null, or valid for the
    // lengths given, or deliberately wrong in a way the API must detect
    // before touching memory (null, misaligned, overlapping, huge lengths).
    unsafe {
        // Null handle, null buffers with a length, null handle slot.
        assert_eq!(
            qneon_softmax_i8_run(ptr::null(), x.as_ptr(), y.as_mut_ptr(), 32, 8, 0),
            QneonStatus::NullPointer
        );
        assert!(last_error().starts_with("the handle is null"));
        assert_eq!(
            qneon_softmax_i8_run(h, ptr::null(), y.as_mut_ptr(), 32, 8, 0),
            QneonStatus::NullPointer
        );
        assert!(
            last_error().starts_with("input is null"),
            "{}",
            last_error()
        );
        assert_eq!(
            qneon_softmax_i8_run(h, x.as_ptr(), ptr::null_mut(), 32, 8, 0),
            QneonStatus::NullPointer
        );
        assert!(last_error().starts_with("output is null"));
        let out = qneon_softmax_i8_output_quantization();
        assert_eq!(
            qneon_softmax_i8_create(qp(QuantParams::new(0.1, 0)), 1.0, out, 0, ptr::null_mut()),
            QneonStatus::NullPointer
        );
        // Null with a length of 0 is an empty buffer.
        assert_eq!(
            qneon_softmax_i8_run(h, ptr::null(), ptr::null_mut(), 0, 8, 0),
            QneonStatus::Ok
        );
        // Lengths: a row length that does not divide, of 0.
        assert_eq!(
            qneon_softmax_i8_run(h, x.as_ptr(), y.as_mut_ptr(), 32, 5, 0),
            QneonStatus::Length
        );
        assert!(last_error().contains("row_len 5"), "{}", last_error());
        assert_eq!(
            qneon_softmax_i8_run(h, x.as_ptr(), y.as_mut_ptr(), 32, 0, 0),
            QneonStatus::Length
        );
        // A byte size that overflows.
        let big = usize::MAX / 2 + 1;
        assert_eq!(
            qneon_softmax_i8_run(h, x.as_ptr(), y.as_mut_ptr(), big, 8, 0),
            QneonStatus::Length
        );
        // Overlapping buffers (out of place only).
        let mut buf = [0i8; 48];
        let p = buf.as_mut_ptr();
        assert_eq!(
            qneon_softmax_i8_run(h, p, p.add(8), 32, 8, 0),
            QneonStatus::InvalidArgument
        );
        assert!(last_error().contains("overlap"));
        // Enum values out of range.
        assert_eq!(
            qneon_softmax_i8_run(h, x.as_ptr(), y.as_mut_ptr(), 32, 8, 3),
            QneonStatus::InvalidArgument
        );
        assert!(last_error().starts_with("backend 3 is not a QneonBackend"));
        let mut h2 = ptr::null_mut();
        assert_eq!(
            qneon_softmax_i8_create(qp(QuantParams::new(0.1, 0)), 1.0, out, 9, &mut h2),
            QneonStatus::InvalidArgument
        );
        assert!(h2.is_null());
        assert!(last_error().starts_with("method 9 is not a QneonMethod"));
        // Bad quantization, beta, an unsupported method.
        assert_eq!(
            qneon_softmax_i8_create(qp(QuantParams::new(f32::NAN, 0)), 1.0, out, 0, &mut h2),
            QneonStatus::InvalidArgument
        );
        assert_eq!(
            qneon_softmax_i8_create(qp(QuantParams::new(0.1, 0)), -1.0, out, 0, &mut h2),
            QneonStatus::InvalidArgument
        );
        assert!(last_error().contains("beta"));
        assert_eq!(
            qneon_softmax_i8_create(qp(QuantParams::new(0.1, 0)), 1.0, out, 2, &mut h2),
            QneonStatus::Unsupported
        );
        assert!(last_error().contains("Method::LutFixedPoint is a per-element table"));
        assert!(h2.is_null());
        // Misaligned int16 buffers.
        let mut h16 = ptr::null_mut();
        let out16 = qneon_tanh_i16_output_quantization();
        assert_eq!(
            qneon_tanh_i16_create(qp(QuantParams::new(0.001, 0)), out16, 0, &mut h16),
            QneonStatus::Ok
        );
        // A byte array's address may be odd itself (u8 has alignment 1;
        // Miri places it anywhere): take whichever of its first two bytes
        // lies at an odd address, with 64 readable bytes after it.
        let raw = [0u8; 66];
        let mut o16 = [0i16; 32];
        let base = raw.as_ptr();
        let odd = base.add((base as usize % 2) ^ 1) as *const i16;
        assert_eq!(odd as usize % 2, 1);
        assert_eq!(
            qneon_tanh_i16_run(h16, odd, o16.as_mut_ptr(), 32, 0),
            QneonStatus::InvalidArgument
        );
        assert!(last_error().contains("not aligned"));
        qneon_tanh_i16_destroy(h16);
        // An unavailable backend.
        let s = qneon_softmax_i8_run(
            h,
            x.as_ptr(),
            y.as_mut_ptr(),
            32,
            8,
            QneonBackend::Neon as u32,
        );
        if Backend::Neon.is_available() {
            assert_eq!(s, QneonStatus::Ok);
        } else {
            assert_eq!(s, QneonStatus::BackendUnavailable);
        }
        // Destroying null is a no-op.
        qneon_softmax_i8_destroy(ptr::null_mut());
        qneon_softmax_i8_destroy(h);
    }
}

#[test]
fn the_last_error_is_per_thread() {
    // SAFETY: a null handle is reported, not dereferenced.
    let s = unsafe { qneon_softmax_i8_run(ptr::null(), ptr::null(), ptr::null_mut(), 0, 1, 0) };
    assert_eq!(s, QneonStatus::NullPointer);
    let here = last_error();
    assert!(!here.is_empty());
    let there = std::thread::spawn(last_error).join().unwrap();
    assert_eq!(there, "");
    assert_eq!(last_error(), here);
}

#[test]
fn a_handle_runs_on_several_threads_at_once() {
    struct Shared(*mut QneonSoftmaxI8);
    // SAFETY: `run` only reads the handle (documented in the C API).
    unsafe impl Sync for Shared {}
    impl Shared {
        fn get(&self) -> *mut QneonSoftmaxI8 {
            self.0
        }
    }
    let h = Shared(softmax_i8());
    let x: Vec<i8> = data::<i8>(256);
    let mut want = vec![0i8; 256];
    // SAFETY: a live handle and buffers of 256 elements.
    assert_eq!(
        unsafe { qneon_softmax_i8_run(h.0, x.as_ptr(), want.as_mut_ptr(), 256, 32, 0) },
        QneonStatus::Ok
    );
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| {
                let mut y = vec![0i8; 256];
                // SAFETY: as above.
                let st = unsafe {
                    qneon_softmax_i8_run(h.get(), x.as_ptr(), y.as_mut_ptr(), 256, 32, 0)
                };
                assert_eq!(st, QneonStatus::Ok);
                assert_eq!(y, want);
            });
        }
    });
    // SAFETY: the last use of the handle.
    unsafe { qneon_softmax_i8_destroy(h.0) };
}
