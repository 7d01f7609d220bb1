//! What the C API's op tests share: the last error, quantization and data
//! helpers, the backends, and the status check against the library.

#![allow(dead_code)]

use std::ffi::CStr;

use qneon::{Backend, QuantParams};
use qneon_capi::*;

pub fn last_error() -> String {
    // SAFETY: the function returns a valid NUL-terminated string.
    unsafe { CStr::from_ptr(qneon_last_error_message()) }
        .to_string_lossy()
        .into_owned()
}

pub fn qp(scale: f32, zero_point: i32) -> QneonQuantParams {
    QneonQuantParams { scale, zero_point }
}

pub fn q(p: QneonQuantParams) -> QuantParams {
    QuantParams::new(p.scale, p.zero_point)
}

pub fn bytes(n: usize, salt: usize) -> Vec<i8> {
    (0..n)
        .map(|i| ((i * 73 + salt * 29 + (i * i) % 11) % 256) as u8 as i8)
        .collect()
}

pub fn reals(n: usize, salt: usize, span: f32) -> Vec<f32> {
    (0..n)
        .map(|i| span * (((i * 37 + salt * 53) % 101) as f32 - 50.0) / 50.0)
        .collect()
}

pub const BACKENDS: [(QneonBackend, Backend); 2] = [
    (QneonBackend::Scalar, Backend::Scalar),
    (QneonBackend::Neon, Backend::Neon),
];

/// A C status against the library's result: both succeed, or the C call
/// fails with the library's message (backend unavailability included).
pub fn agree(status: QneonStatus, rust: qneon::Result<()>) -> bool {
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
