//! Functions without a prepared handle: softmax, logistic and tanh on raw
//! Q31 data, and quantize / dequantize.

use qneon::{q31, QuantParams};

use crate::entry::{self, buffers, guard, QneonQuantParams, QneonStatus};
/// Softmax of each `row_len`-long row of raw Q31 values: `input[0..len]` in
/// Q(`integer_bits`) (`integer_bits` in 0..=28), `output[0..len]` in Q0.31.
///
/// # Safety
/// `input` must be null or readable for `len` elements and `output` null or
/// writable for `len` elements, during the call.
#[no_mangle]
pub unsafe extern "C" fn qneon_q31_softmax(
    input: *const i32,
    integer_bits: u32,
    output: *mut i32,
    len: usize,
    row_len: usize,
    backend: u32,
) -> QneonStatus {
    guard(|| {
        // SAFETY: forwarded from the caller.
        let (input, output) = unsafe { buffers(input, output, len)? };
        let backend = entry::backend(backend)?;
        Ok(q31::softmax_with(
            backend,
            input,
            integer_bits,
            output,
            row_len,
        )?)
    })
}

/// Logistic of raw Q31 values: `input[0..len]` in Q(`integer_bits`),
/// `output[0..len]` in Q0.31 ([0, 1)).
///
/// # Safety
/// `input` must be null or readable for `len` elements and `output` null or
/// writable for `len` elements, during the call.
#[no_mangle]
pub unsafe extern "C" fn qneon_q31_logistic(
    input: *const i32,
    integer_bits: u32,
    output: *mut i32,
    len: usize,
    backend: u32,
) -> QneonStatus {
    guard(|| {
        // SAFETY: forwarded from the caller.
        let (input, output) = unsafe { buffers(input, output, len)? };
        let backend = entry::backend(backend)?;
        Ok(q31::logistic_with(backend, input, integer_bits, output)?)
    })
}

/// Tanh of raw Q31 values: `input[0..len]` in Q(`integer_bits`),
/// `output[0..len]` in Q0.31 ([-1, 1)).
///
/// # Safety
/// `input` must be null or readable for `len` elements and `output` null or
/// writable for `len` elements, during the call.
#[no_mangle]
pub unsafe extern "C" fn qneon_q31_tanh(
    input: *const i32,
    integer_bits: u32,
    output: *mut i32,
    len: usize,
    backend: u32,
) -> QneonStatus {
    guard(|| {
        // SAFETY: forwarded from the caller.
        let (input, output) = unsafe { buffers(input, output, len)? };
        let backend = entry::backend(backend)?;
        Ok(q31::tanh_with(backend, input, integer_bits, output)?)
    })
}

/// Quantizes `input[0..len]` to int8: `clamp(round(x / scale) + zero_point)`,
/// rounding half away from zero, NaN to `zero_point` (TFLite's `QUANTIZE`).
///
/// # Safety
/// `input` must be null or readable for `len` elements and `output` null or
/// writable for `len` elements, during the call.
#[no_mangle]
pub unsafe extern "C" fn qneon_quantize_i8(
    params: QneonQuantParams,
    input: *const f32,
    output: *mut i8,
    len: usize,
    backend: u32,
) -> QneonStatus {
    guard(|| {
        // SAFETY: forwarded from the caller.
        let (input, output) = unsafe { buffers(input, output, len)? };
        let backend = entry::backend(backend)?;
        Ok(QuantParams::from(params).quantize_with(backend, input, output)?)
    })
}

/// Dequantizes int8 `input[0..len]`: `scale * (q - zero_point)` in `float`
/// (TFLite's `DEQUANTIZE`).
///
/// # Safety
/// `input` must be null or readable for `len` elements and `output` null or
/// writable for `len` elements, during the call.
#[no_mangle]
pub unsafe extern "C" fn qneon_dequantize_i8(
    params: QneonQuantParams,
    input: *const i8,
    output: *mut f32,
    len: usize,
    backend: u32,
) -> QneonStatus {
    guard(|| {
        // SAFETY: forwarded from the caller.
        let (input, output) = unsafe { buffers(input, output, len)? };
        let backend = entry::backend(backend)?;
        Ok(QuantParams::from(params).dequantize_with(backend, input, output)?)
    })
}

/// Quantizes `input[0..len]` to uint8: `clamp(round(x / scale) + zero_point)`,
/// rounding half away from zero, NaN to `zero_point` (TFLite's `QUANTIZE`).
///
/// # Safety
/// `input` must be null or readable for `len` elements and `output` null or
/// writable for `len` elements, during the call.
#[no_mangle]
pub unsafe extern "C" fn qneon_quantize_u8(
    params: QneonQuantParams,
    input: *const f32,
    output: *mut u8,
    len: usize,
    backend: u32,
) -> QneonStatus {
    guard(|| {
        // SAFETY: forwarded from the caller.
        let (input, output) = unsafe { buffers(input, output, len)? };
        let backend = entry::backend(backend)?;
        Ok(QuantParams::from(params).quantize_with(backend, input, output)?)
    })
}

/// Dequantizes uint8 `input[0..len]`: `scale * (q - zero_point)` in `float`
/// (TFLite's `DEQUANTIZE`).
///
/// # Safety
/// `input` must be null or readable for `len` elements and `output` null or
/// writable for `len` elements, during the call.
#[no_mangle]
pub unsafe extern "C" fn qneon_dequantize_u8(
    params: QneonQuantParams,
    input: *const u8,
    output: *mut f32,
    len: usize,
    backend: u32,
) -> QneonStatus {
    guard(|| {
        // SAFETY: forwarded from the caller.
        let (input, output) = unsafe { buffers(input, output, len)? };
        let backend = entry::backend(backend)?;
        Ok(QuantParams::from(params).dequantize_with(backend, input, output)?)
    })
}

/// Quantizes `input[0..len]` to int16: `clamp(round(x / scale) + zero_point)`,
/// rounding half away from zero, NaN to `zero_point` (TFLite's `QUANTIZE`).
///
/// # Safety
/// `input` must be null or readable for `len` elements and `output` null or
/// writable for `len` elements, during the call.
#[no_mangle]
pub unsafe extern "C" fn qneon_quantize_i16(
    params: QneonQuantParams,
    input: *const f32,
    output: *mut i16,
    len: usize,
    backend: u32,
) -> QneonStatus {
    guard(|| {
        // SAFETY: forwarded from the caller.
        let (input, output) = unsafe { buffers(input, output, len)? };
        let backend = entry::backend(backend)?;
        Ok(QuantParams::from(params).quantize_with(backend, input, output)?)
    })
}

/// Dequantizes int16 `input[0..len]`: `scale * (q - zero_point)` in `float`
/// (TFLite's `DEQUANTIZE`).
///
/// # Safety
/// `input` must be null or readable for `len` elements and `output` null or
/// writable for `len` elements, during the call.
#[no_mangle]
pub unsafe extern "C" fn qneon_dequantize_i16(
    params: QneonQuantParams,
    input: *const i16,
    output: *mut f32,
    len: usize,
    backend: u32,
) -> QneonStatus {
    guard(|| {
        // SAFETY: forwarded from the caller.
        let (input, output) = unsafe { buffers(input, output, len)? };
        let backend = entry::backend(backend)?;
        Ok(QuantParams::from(params).dequantize_with(backend, input, output)?)
    })
}
