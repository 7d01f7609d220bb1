//! The `float` kernels (qneon's `f32` module): softmax and log-softmax
//! along rows, logistic, tanh, `exp`, and the logistic's gradient. No
//! handle: nothing is prepared. Every backend gives the same bits.

use qneon::f32;

use crate::choices;
use crate::entry::{self, buffers, disjoint, guard, input, output, QneonStatus};

/// Softmax of each `row_len`-long row of `input[0..len]` into
/// `output[0..len]`, with `variant` (a `QneonSoftmaxVariant`) on `backend`
/// (a `QneonBackend`). Stable for any input (see qneon's `f32::softmax`
/// for infinities and NaN).
///
/// # Safety
/// `input` must be null or readable and `output` null or writable for
/// `len` elements, during the call.
#[no_mangle]
pub unsafe extern "C" fn qneon_f32_softmax(
    input: *const f32,
    output: *mut f32,
    len: usize,
    row_len: usize,
    variant: u32,
    backend: u32,
) -> QneonStatus {
    guard(|| {
        // SAFETY: forwarded from the caller.
        let (input, output) = unsafe { buffers(input, output, len)? };
        let variant = choices::softmax_variant(variant)?;
        let backend = entry::backend(backend)?;
        Ok(f32::softmax_variant(
            variant, backend, input, output, row_len,
        )?)
    })
}

/// Log-softmax of each `row_len`-long row of `input[0..len]` into
/// `output[0..len]` on `backend`.
///
/// # Safety
/// As `qneon_f32_softmax`.
#[no_mangle]
pub unsafe extern "C" fn qneon_f32_log_softmax(
    input: *const f32,
    output: *mut f32,
    len: usize,
    row_len: usize,
    backend: u32,
) -> QneonStatus {
    guard(|| {
        // SAFETY: forwarded from the caller.
        let (input, output) = unsafe { buffers(input, output, len)? };
        let backend = entry::backend(backend)?;
        Ok(f32::log_softmax_with(backend, input, output, row_len)?)
    })
}

/// The logistic sigmoid `1 / (1 + e^-x)` of each element of
/// `input[0..len]` into `output[0..len]` on `backend`.
///
/// # Safety
/// As `qneon_f32_softmax`.
#[no_mangle]
pub unsafe extern "C" fn qneon_f32_logistic(
    input: *const f32,
    output: *mut f32,
    len: usize,
    backend: u32,
) -> QneonStatus {
    // SAFETY: forwarded from the caller.
    unsafe { map(input, output, len, backend, f32::sigmoid_with) }
}

/// `tanh` of each element of `input[0..len]` into `output[0..len]` on
/// `backend`.
///
/// # Safety
/// As `qneon_f32_softmax`.
#[no_mangle]
pub unsafe extern "C" fn qneon_f32_tanh(
    input: *const f32,
    output: *mut f32,
    len: usize,
    backend: u32,
) -> QneonStatus {
    // SAFETY: forwarded from the caller.
    unsafe { map(input, output, len, backend, f32::tanh_with) }
}

/// `e^x` of each element of `input[0..len]` into `output[0..len]` on
/// `backend`.
///
/// # Safety
/// As `qneon_f32_softmax`.
#[no_mangle]
pub unsafe extern "C" fn qneon_f32_exp(
    input: *const f32,
    output: *mut f32,
    len: usize,
    backend: u32,
) -> QneonStatus {
    // SAFETY: forwarded from the caller.
    unsafe { map(input, output, len, backend, f32::exp_into_with) }
}

/// The logistic's gradient from its output: `dx[i] = y[i] (1 - y[i])
/// dy[i]` for `i < len`, on `backend`.
///
/// # Safety
/// `y` and `dy` must be null or readable and `dx` null or writable for
/// `len` elements, during the call.
#[no_mangle]
pub unsafe extern "C" fn qneon_f32_logistic_backward(
    y: *const f32,
    dy: *const f32,
    dx: *mut f32,
    len: usize,
    backend: u32,
) -> QneonStatus {
    guard(|| {
        let (y, dy, dx) = (
            input("y", y, len)?,
            input("dy", dy, len)?,
            output("dx", dx, len)?,
        );
        disjoint(&[y.span, dy.span, dx.span])?;
        let backend = entry::backend(backend)?;
        // SAFETY: checked, `dx` disjoint from the inputs, valid for `len`
        // elements (the caller).
        let (y, dy, dx) = unsafe { (y.slice(), dy.slice(), dx.slice()) };
        Ok(f32::sigmoid_backward_with(backend, y, dy, dx)?)
    })
}

/// The shared body of the element-wise functions.
///
/// # Safety
/// As `qneon_f32_softmax`.
unsafe fn map(
    input: *const f32,
    output: *mut f32,
    len: usize,
    backend: u32,
    f: fn(qneon::Backend, &[f32], &mut [f32]) -> qneon::Result<()>,
) -> QneonStatus {
    guard(|| {
        // SAFETY: forwarded from the caller.
        let (input, output) = unsafe { buffers(input, output, len)? };
        let backend = entry::backend(backend)?;
        Ok(f(backend, input, output)?)
    })
}
