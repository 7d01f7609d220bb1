//! Functions without a prepared handle: softmax, logistic and tanh on raw
//! Q31 data, and quantize / dequantize (generated, in `raw/conversions.rs`;
//! declared last so that the header lists them after these).

use qneon::q31;

use crate::entry::{self, buffers, guard, QneonStatus};
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

mod conversions;
pub use conversions::*;
