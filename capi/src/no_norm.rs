//! int8 NoNorm (MobileBert's per-channel `x * gamma + beta`): a handle
//! made from quantized or real gammas and betas, run on rows of
//! `channels`.

use qneon::NoNorm;

use crate::choices;
use crate::entry::{
    self, buffers, create, destroy, guard, handle, input, QneonQuantParams, QneonStatus,
};

/// A prepared int8 NoNorm (qneon's `NoNorm`).
pub struct QneonNoNorm(NoNorm);

/// Prepares NoNorm over `channels` channels from quantized parameters:
/// `gamma[c]` int8 (symmetric, scale `gamma_scales[c]`), `beta[c]` int32 in
/// units of `input.scale * gamma_scales[c]`, each array `channels` long;
/// `activation` a `QneonActivation`. Writes a new handle to `*out`; free
/// it with `qneon_no_norm_destroy`.
///
/// # Safety
/// `gamma`, `gamma_scales` and `beta` must be null or readable for
/// `channels` elements during the call; `out` null or valid for writing
/// one pointer.
#[no_mangle]
pub unsafe extern "C" fn qneon_no_norm_create(
    gamma: *const i8,
    gamma_scales: *const f32,
    beta: *const i32,
    channels: usize,
    input_q: QneonQuantParams,
    output_q: QneonQuantParams,
    activation: u32,
    out: *mut *mut QneonNoNorm,
) -> QneonStatus {
    let make = || {
        let (g, s, b) = (
            input("gamma", gamma, channels)?,
            input("gamma_scales", gamma_scales, channels)?,
            input("beta", beta, channels)?,
        );
        let activation = choices::activation(activation)?;
        // SAFETY: checked; readable for `channels` elements (the caller).
        let (g, s, b) = unsafe { (g.slice(), s.slice(), b.slice()) };
        Ok(QneonNoNorm(NoNorm::new(
            g,
            s,
            b,
            input_q.into(),
            output_q.into(),
            activation,
        )?))
    };
    // SAFETY: forwarded from the caller.
    unsafe { create(out, make) }
}

/// Prepares NoNorm from real gammas and betas (`channels` each; qneon's
/// `NoNorm::from_f32`: each gamma quantized to +-127 steps of its own
/// scale, each beta to the accumulator's units). As `qneon_no_norm_create`.
///
/// # Safety
/// `gamma` and `beta` must be null or readable for `channels` elements
/// during the call; `out` null or valid for writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn qneon_no_norm_create_f32(
    gamma: *const f32,
    beta: *const f32,
    channels: usize,
    input_q: QneonQuantParams,
    output_q: QneonQuantParams,
    activation: u32,
    out: *mut *mut QneonNoNorm,
) -> QneonStatus {
    let make = || {
        let (g, b) = (
            input("gamma", gamma, channels)?,
            input("beta", beta, channels)?,
        );
        let activation = choices::activation(activation)?;
        // SAFETY: checked; readable for `channels` elements (the caller).
        let (g, b) = unsafe { (g.slice(), b.slice()) };
        Ok(QneonNoNorm(NoNorm::from_f32(
            g,
            b,
            input_q.into(),
            output_q.into(),
            activation,
        )?))
    };
    // SAFETY: forwarded from the caller.
    unsafe { create(out, make) }
}

/// NoNorm of every `channels`-long row of `input[0..len]` into
/// `output[0..len]` on `backend` (a `QneonBackend`); `len` a multiple of
/// the channels.
///
/// # Safety
/// `op` must be null or a live handle; `input` null or readable and
/// `output` null or writable for `len` elements, during the call.
#[no_mangle]
pub unsafe extern "C" fn qneon_no_norm_run(
    op: *const QneonNoNorm,
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

/// Frees a handle made by `qneon_no_norm_create` or `_create_f32` (null is
/// ignored).
///
/// # Safety
/// `op` must be null or a live handle, not used after this call.
#[no_mangle]
pub unsafe extern "C" fn qneon_no_norm_destroy(op: *mut QneonNoNorm) {
    // SAFETY: forwarded from the caller.
    unsafe { destroy(op) }
}
