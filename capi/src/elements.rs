//! Logistic and tanh: one opaque handle type and four functions per element
//! type, as in `rows.rs`.

use qneon::{Logistic, Tanh};

use crate::entry::{self, buffers, create, destroy, guard, handle, QneonQuantParams, QneonStatus};
/// A prepared logistic on int8 data (qneon's `Logistic<i8>`).
pub struct QneonLogisticI8(Logistic<i8>);

/// Prepares logistic on int8 data: validates the `input` and `output`
/// quantization and `method` (a `QneonMethod`), then writes a new
/// handle to `*out`. Free it with `qneon_logistic_i8_destroy`.
///
/// # Safety
/// `out` must be null or valid for writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn qneon_logistic_i8_create(
    input: QneonQuantParams,
    output: QneonQuantParams,
    method: u32,
    out: *mut *mut QneonLogisticI8,
) -> QneonStatus {
    let make = || {
        let method = entry::method(method)?;
        Ok(QneonLogisticI8(Logistic::new(
            input.into(),
            output.into(),
            method,
        )?))
    };
    // SAFETY: forwarded from the caller.
    unsafe { create(out, make) }
}

/// Runs logistic of each element of `input[0..len]` into `output[0..len]` on `backend` (a
/// `QneonBackend`).
///
/// # Safety
/// `op` must be null or a live handle; `input` null or readable for `len`
/// elements and `output` null or writable for `len` elements, during the
/// call.
#[no_mangle]
pub unsafe extern "C" fn qneon_logistic_i8_run(
    op: *const QneonLogisticI8,
    input: *const i8,
    output: *mut i8,
    len: usize,
    backend: u32,
) -> QneonStatus {
    guard(|| {
        // SAFETY: forwarded from the caller.
        let (op, (input, output)) = unsafe { (handle(op)?, buffers(input, output, len)?) };
        let backend = entry::backend(backend)?;
        Ok(op.0.run_with(backend, input, output)?)
    })
}

/// Frees a handle made by `qneon_logistic_i8_create` (null is ignored).
///
/// # Safety
/// `op` must be null or a live handle, not used after this call.
#[no_mangle]
pub unsafe extern "C" fn qneon_logistic_i8_destroy(op: *mut QneonLogisticI8) {
    // SAFETY: forwarded from the caller.
    unsafe { destroy(op) }
}

/// The output quantization `qneon_logistic_i8_create` requires (TFLite's).
#[no_mangle]
pub extern "C" fn qneon_logistic_i8_output_quantization() -> QneonQuantParams {
    Logistic::<i8>::output_quantization().into()
}

/// A prepared logistic on uint8 data (qneon's `Logistic<u8>`).
pub struct QneonLogisticU8(Logistic<u8>);

/// Prepares logistic on uint8 data: validates the `input` and `output`
/// quantization and `method` (a `QneonMethod`), then writes a new
/// handle to `*out`. Free it with `qneon_logistic_u8_destroy`.
///
/// # Safety
/// `out` must be null or valid for writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn qneon_logistic_u8_create(
    input: QneonQuantParams,
    output: QneonQuantParams,
    method: u32,
    out: *mut *mut QneonLogisticU8,
) -> QneonStatus {
    let make = || {
        let method = entry::method(method)?;
        Ok(QneonLogisticU8(Logistic::new(
            input.into(),
            output.into(),
            method,
        )?))
    };
    // SAFETY: forwarded from the caller.
    unsafe { create(out, make) }
}

/// Runs logistic of each element of `input[0..len]` into `output[0..len]` on `backend` (a
/// `QneonBackend`).
///
/// # Safety
/// `op` must be null or a live handle; `input` null or readable for `len`
/// elements and `output` null or writable for `len` elements, during the
/// call.
#[no_mangle]
pub unsafe extern "C" fn qneon_logistic_u8_run(
    op: *const QneonLogisticU8,
    input: *const u8,
    output: *mut u8,
    len: usize,
    backend: u32,
) -> QneonStatus {
    guard(|| {
        // SAFETY: forwarded from the caller.
        let (op, (input, output)) = unsafe { (handle(op)?, buffers(input, output, len)?) };
        let backend = entry::backend(backend)?;
        Ok(op.0.run_with(backend, input, output)?)
    })
}

/// Frees a handle made by `qneon_logistic_u8_create` (null is ignored).
///
/// # Safety
/// `op` must be null or a live handle, not used after this call.
#[no_mangle]
pub unsafe extern "C" fn qneon_logistic_u8_destroy(op: *mut QneonLogisticU8) {
    // SAFETY: forwarded from the caller.
    unsafe { destroy(op) }
}

/// The output quantization `qneon_logistic_u8_create` requires (TFLite's).
#[no_mangle]
pub extern "C" fn qneon_logistic_u8_output_quantization() -> QneonQuantParams {
    Logistic::<u8>::output_quantization().into()
}

/// A prepared logistic on int16 data (qneon's `Logistic<i16>`).
pub struct QneonLogisticI16(Logistic<i16>);

/// Prepares logistic on int16 data: validates the `input` and `output`
/// quantization and `method` (a `QneonMethod`), then writes a new
/// handle to `*out`. Free it with `qneon_logistic_i16_destroy`.
///
/// # Safety
/// `out` must be null or valid for writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn qneon_logistic_i16_create(
    input: QneonQuantParams,
    output: QneonQuantParams,
    method: u32,
    out: *mut *mut QneonLogisticI16,
) -> QneonStatus {
    let make = || {
        let method = entry::method(method)?;
        Ok(QneonLogisticI16(Logistic::new(
            input.into(),
            output.into(),
            method,
        )?))
    };
    // SAFETY: forwarded from the caller.
    unsafe { create(out, make) }
}

/// Runs logistic of each element of `input[0..len]` into `output[0..len]` on `backend` (a
/// `QneonBackend`).
///
/// # Safety
/// `op` must be null or a live handle; `input` null or readable for `len`
/// elements and `output` null or writable for `len` elements, during the
/// call.
#[no_mangle]
pub unsafe extern "C" fn qneon_logistic_i16_run(
    op: *const QneonLogisticI16,
    input: *const i16,
    output: *mut i16,
    len: usize,
    backend: u32,
) -> QneonStatus {
    guard(|| {
        // SAFETY: forwarded from the caller.
        let (op, (input, output)) = unsafe { (handle(op)?, buffers(input, output, len)?) };
        let backend = entry::backend(backend)?;
        Ok(op.0.run_with(backend, input, output)?)
    })
}

/// Frees a handle made by `qneon_logistic_i16_create` (null is ignored).
///
/// # Safety
/// `op` must be null or a live handle, not used after this call.
#[no_mangle]
pub unsafe extern "C" fn qneon_logistic_i16_destroy(op: *mut QneonLogisticI16) {
    // SAFETY: forwarded from the caller.
    unsafe { destroy(op) }
}

/// The output quantization `qneon_logistic_i16_create` requires (TFLite's).
#[no_mangle]
pub extern "C" fn qneon_logistic_i16_output_quantization() -> QneonQuantParams {
    Logistic::<i16>::output_quantization().into()
}

/// A prepared tanh on int8 data (qneon's `Tanh<i8>`).
pub struct QneonTanhI8(Tanh<i8>);

/// Prepares tanh on int8 data: validates the `input` and `output`
/// quantization and `method` (a `QneonMethod`), then writes a new
/// handle to `*out`. Free it with `qneon_tanh_i8_destroy`.
///
/// # Safety
/// `out` must be null or valid for writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn qneon_tanh_i8_create(
    input: QneonQuantParams,
    output: QneonQuantParams,
    method: u32,
    out: *mut *mut QneonTanhI8,
) -> QneonStatus {
    let make = || {
        let method = entry::method(method)?;
        Ok(QneonTanhI8(Tanh::new(input.into(), output.into(), method)?))
    };
    // SAFETY: forwarded from the caller.
    unsafe { create(out, make) }
}

/// Runs tanh of each element of `input[0..len]` into `output[0..len]` on `backend` (a
/// `QneonBackend`).
///
/// # Safety
/// `op` must be null or a live handle; `input` null or readable for `len`
/// elements and `output` null or writable for `len` elements, during the
/// call.
#[no_mangle]
pub unsafe extern "C" fn qneon_tanh_i8_run(
    op: *const QneonTanhI8,
    input: *const i8,
    output: *mut i8,
    len: usize,
    backend: u32,
) -> QneonStatus {
    guard(|| {
        // SAFETY: forwarded from the caller.
        let (op, (input, output)) = unsafe { (handle(op)?, buffers(input, output, len)?) };
        let backend = entry::backend(backend)?;
        Ok(op.0.run_with(backend, input, output)?)
    })
}

/// Frees a handle made by `qneon_tanh_i8_create` (null is ignored).
///
/// # Safety
/// `op` must be null or a live handle, not used after this call.
#[no_mangle]
pub unsafe extern "C" fn qneon_tanh_i8_destroy(op: *mut QneonTanhI8) {
    // SAFETY: forwarded from the caller.
    unsafe { destroy(op) }
}

/// The output quantization `qneon_tanh_i8_create` requires (TFLite's).
#[no_mangle]
pub extern "C" fn qneon_tanh_i8_output_quantization() -> QneonQuantParams {
    Tanh::<i8>::output_quantization().into()
}

/// A prepared tanh on uint8 data (qneon's `Tanh<u8>`).
pub struct QneonTanhU8(Tanh<u8>);

/// Prepares tanh on uint8 data: validates the `input` and `output`
/// quantization and `method` (a `QneonMethod`), then writes a new
/// handle to `*out`. Free it with `qneon_tanh_u8_destroy`.
///
/// # Safety
/// `out` must be null or valid for writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn qneon_tanh_u8_create(
    input: QneonQuantParams,
    output: QneonQuantParams,
    method: u32,
    out: *mut *mut QneonTanhU8,
) -> QneonStatus {
    let make = || {
        let method = entry::method(method)?;
        Ok(QneonTanhU8(Tanh::new(input.into(), output.into(), method)?))
    };
    // SAFETY: forwarded from the caller.
    unsafe { create(out, make) }
}

/// Runs tanh of each element of `input[0..len]` into `output[0..len]` on `backend` (a
/// `QneonBackend`).
///
/// # Safety
/// `op` must be null or a live handle; `input` null or readable for `len`
/// elements and `output` null or writable for `len` elements, during the
/// call.
#[no_mangle]
pub unsafe extern "C" fn qneon_tanh_u8_run(
    op: *const QneonTanhU8,
    input: *const u8,
    output: *mut u8,
    len: usize,
    backend: u32,
) -> QneonStatus {
    guard(|| {
        // SAFETY: forwarded from the caller.
        let (op, (input, output)) = unsafe { (handle(op)?, buffers(input, output, len)?) };
        let backend = entry::backend(backend)?;
        Ok(op.0.run_with(backend, input, output)?)
    })
}

/// Frees a handle made by `qneon_tanh_u8_create` (null is ignored).
///
/// # Safety
/// `op` must be null or a live handle, not used after this call.
#[no_mangle]
pub unsafe extern "C" fn qneon_tanh_u8_destroy(op: *mut QneonTanhU8) {
    // SAFETY: forwarded from the caller.
    unsafe { destroy(op) }
}

/// The output quantization `qneon_tanh_u8_create` requires (TFLite's).
#[no_mangle]
pub extern "C" fn qneon_tanh_u8_output_quantization() -> QneonQuantParams {
    Tanh::<u8>::output_quantization().into()
}

/// A prepared tanh on int16 data (qneon's `Tanh<i16>`).
pub struct QneonTanhI16(Tanh<i16>);

/// Prepares tanh on int16 data: validates the `input` and `output`
/// quantization and `method` (a `QneonMethod`), then writes a new
/// handle to `*out`. Free it with `qneon_tanh_i16_destroy`.
///
/// # Safety
/// `out` must be null or valid for writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn qneon_tanh_i16_create(
    input: QneonQuantParams,
    output: QneonQuantParams,
    method: u32,
    out: *mut *mut QneonTanhI16,
) -> QneonStatus {
    let make = || {
        let method = entry::method(method)?;
        Ok(QneonTanhI16(Tanh::new(
            input.into(),
            output.into(),
            method,
        )?))
    };
    // SAFETY: forwarded from the caller.
    unsafe { create(out, make) }
}

/// Runs tanh of each element of `input[0..len]` into `output[0..len]` on `backend` (a
/// `QneonBackend`).
///
/// # Safety
/// `op` must be null or a live handle; `input` null or readable for `len`
/// elements and `output` null or writable for `len` elements, during the
/// call.
#[no_mangle]
pub unsafe extern "C" fn qneon_tanh_i16_run(
    op: *const QneonTanhI16,
    input: *const i16,
    output: *mut i16,
    len: usize,
    backend: u32,
) -> QneonStatus {
    guard(|| {
        // SAFETY: forwarded from the caller.
        let (op, (input, output)) = unsafe { (handle(op)?, buffers(input, output, len)?) };
        let backend = entry::backend(backend)?;
        Ok(op.0.run_with(backend, input, output)?)
    })
}

/// Frees a handle made by `qneon_tanh_i16_create` (null is ignored).
///
/// # Safety
/// `op` must be null or a live handle, not used after this call.
#[no_mangle]
pub unsafe extern "C" fn qneon_tanh_i16_destroy(op: *mut QneonTanhI16) {
    // SAFETY: forwarded from the caller.
    unsafe { destroy(op) }
}

/// The output quantization `qneon_tanh_i16_create` requires (TFLite's).
#[no_mangle]
pub extern "C" fn qneon_tanh_i16_output_quantization() -> QneonQuantParams {
    Tanh::<i16>::output_quantization().into()
}
