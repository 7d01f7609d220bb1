//! int8 GEMM (a fully connected layer with its weights packed once by
//! `create`, run many times) and the matrix product of two run-time
//! operands (batch matmul, one matrix at a time, with the caller's
//! scratch).

use qneon::{Gemm, MatMul};

use crate::choices;
use crate::entry::{
    self, create, destroy, disjoint, guard, handle, handle_mut, input, output, product,
    QneonQuantParams, QneonStatus,
};

/// A prepared int8 fully connected layer (qneon's `Gemm`): weights packed.
pub struct QneonGemm(Gemm);

/// Prepares `output (m x n) = input (m x k) * weights^T`, requantized
/// (TFLite's per-channel int8 `FULLY_CONNECTED`): `weights` `n x k` int8
/// row-major, symmetric, row `c` with scale `weight_scales[c]` (`n`
/// values); `bias` null for zeros or `n` int32 values in units of
/// `input.scale * weight_scales[c]`; `activation` a `QneonActivation`;
/// `requantization` a `QneonRequantization`. Packs the weights and writes a
/// new handle to `*out`; free it with `qneon_gemm_destroy`.
///
/// # Safety
/// `weights` must be null or readable for `n * k` elements, `bias` and
/// `weight_scales` null or readable for `n`, during the call; `out` null or
/// valid for writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn qneon_gemm_create(
    weights: *const i8,
    n: usize,
    k: usize,
    bias: *const i32,
    input_q: QneonQuantParams,
    weight_scales: *const f32,
    output_q: QneonQuantParams,
    activation: u32,
    requantization: u32,
    out: *mut *mut QneonGemm,
) -> QneonStatus {
    let make = || {
        let w = input("weights", weights, product("weights (n * k)", n, k)?)?;
        // Null is "no bias"; otherwise `n` values.
        let b = if bias.is_null() {
            None
        } else {
            Some(input("bias", bias, n)?)
        };
        let s = input("weight_scales", weight_scales, n)?;
        let activation = choices::activation(activation)?;
        let requantization = choices::requantization(requantization)?;
        // SAFETY: checked; readable for their lengths (the caller).
        let (w, b, s) = unsafe { (w.slice(), b.map(|b| b.slice()), s.slice()) };
        Ok(QneonGemm(Gemm::new(
            w,
            n,
            k,
            b,
            input_q.into(),
            s,
            output_q.into(),
            activation,
            requantization,
        )?))
    };
    // SAFETY: forwarded from the caller.
    unsafe { create(out, make) }
}

/// Replaces the weights (`n x k` row-major, quantized with the scales
/// given to create) and repacks them; `transposed`: `weights` is `k x n`
/// row-major instead. Allocates nothing. Not concurrently with a `run` of
/// the same handle.
///
/// # Safety
/// `op` must be null or a live handle nothing else uses during the call;
/// `weights` null or readable for `len` elements.
#[no_mangle]
pub unsafe extern "C" fn qneon_gemm_set_weights(
    op: *mut QneonGemm,
    weights: *const i8,
    len: usize,
    transposed: bool,
) -> QneonStatus {
    guard(|| {
        // SAFETY: forwarded from the caller.
        let op = unsafe { handle_mut(op)? };
        let w = input("weights", weights, len)?;
        // SAFETY: checked; readable for `len` elements (the caller).
        let w = unsafe { w.slice() };
        if transposed {
            Ok(op.0.set_weights_transposed(w)?)
        } else {
            Ok(op.0.set_weights(w)?)
        }
    })
}

/// `output (m x n) = input (m x k) * weights^T`, requantized, on
/// `backend` (a `QneonBackend`): `input` holds `m * k` values, `output`
/// `m * n`. Allocates nothing.
///
/// # Safety
/// `op` must be null or a live handle; `input` null or readable for
/// `m * k` elements and `output` null or writable for `m * n`, during the
/// call.
#[no_mangle]
pub unsafe extern "C" fn qneon_gemm_run(
    op: *const QneonGemm,
    input_data: *const i8,
    output_data: *mut i8,
    m: usize,
    backend: u32,
) -> QneonStatus {
    guard(|| {
        // SAFETY: forwarded from the caller.
        let op = unsafe { handle(op)? };
        let (n, k) = (op.0.n(), op.0.k());
        let i = input("input", input_data, product("input (m * k)", m, k)?)?;
        let o = output("output", output_data, product("output (m * n)", m, n)?)?;
        disjoint(&[i.span, o.span])?;
        let backend = entry::backend(backend)?;
        // SAFETY: checked, disjoint, valid for their lengths (the caller).
        let (i, o) = unsafe { (i.slice(), o.slice()) };
        Ok(op.0.run_with(backend, i, o, m)?)
    })
}

/// Writes the handle's output channels `n` and depth `k`.
///
/// # Safety
/// `op` must be null or a live handle; `n` and `k` null or writable.
#[no_mangle]
pub unsafe extern "C" fn qneon_gemm_shape(
    op: *const QneonGemm,
    n: *mut usize,
    k: *mut usize,
) -> QneonStatus {
    guard(|| {
        // SAFETY: forwarded from the caller.
        let op = unsafe { handle(op)? };
        let (n, k) = (output("n", n, 1)?, output("k", k, 1)?);
        // SAFETY: checked, one writable element each (the caller).
        unsafe { (n.slice()[0], k.slice()[0]) = (op.0.n(), op.0.k()) };
        Ok(())
    })
}

/// Frees a handle made by `qneon_gemm_create` (null is ignored).
///
/// # Safety
/// `op` must be null or a live handle, not used after this call.
#[no_mangle]
pub unsafe extern "C" fn qneon_gemm_destroy(op: *mut QneonGemm) {
    // SAFETY: forwarded from the caller.
    unsafe { destroy(op) }
}

/// A prepared int8 matrix product of two run-time operands (qneon's
/// `MatMul`, TFLite's int8 `BATCH_MATMUL` for one matrix).
pub struct QneonMatMul(MatMul);

/// Prepares `output (m x n) = lhs (m x k) * rhs (k x n)`, requantized,
/// `lhs` stored `k x m` when `adj_x`, `rhs` stored `n x k` when `adj_y`;
/// `rounding` a `QneonRounding`. Writes a new handle to `*out`; free it
/// with `qneon_matmul_destroy`.
///
/// # Safety
/// `out` must be null or valid for writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn qneon_matmul_create(
    m: usize,
    n: usize,
    k: usize,
    adj_x: bool,
    adj_y: bool,
    lhs: QneonQuantParams,
    rhs: QneonQuantParams,
    output_q: QneonQuantParams,
    rounding: u32,
    out: *mut *mut QneonMatMul,
) -> QneonStatus {
    let make = || {
        let rounding = choices::rounding(rounding)?;
        Ok(QneonMatMul(MatMul::new(
            m,
            n,
            k,
            adj_x,
            adj_y,
            lhs.into(),
            rhs.into(),
            output_q.into(),
            rounding,
        )?))
    };
    // SAFETY: forwarded from the caller.
    unsafe { create(out, make) }
}

/// Writes the scratch `qneon_matmul_run` needs: `*bytes` int8 values and
/// `*words` int32 values.
///
/// # Safety
/// `op` must be null or a live handle; `bytes` and `words` null or
/// writable.
#[no_mangle]
pub unsafe extern "C" fn qneon_matmul_scratch(
    op: *const QneonMatMul,
    bytes: *mut usize,
    words: *mut usize,
) -> QneonStatus {
    guard(|| {
        // SAFETY: forwarded from the caller.
        let op = unsafe { handle(op)? };
        let (b, w) = (output("bytes", bytes, 1)?, output("words", words, 1)?);
        // SAFETY: checked, one writable element each (the caller).
        unsafe { (b.slice()[0], w.slice()[0]) = (op.0.scratch_bytes(), op.0.scratch_words()) };
        Ok(())
    })
}

/// `output = lhs * rhs`, requantized, on `backend` (a `QneonBackend`):
/// `lhs` `m * k` values, `rhs` `k * n`, `output` `m * n`, with
/// `scratch_bytes` and `scratch_words` at least as long as
/// `qneon_matmul_scratch` says (no allocation). Errors name any buffer of
/// the wrong length.
///
/// # Safety
/// `op` must be null or a live handle; each buffer null or valid (readable
/// for `lhs` and `rhs`, writable for the others) for its length, during
/// the call.
#[no_mangle]
pub unsafe extern "C" fn qneon_matmul_run(
    op: *const QneonMatMul,
    lhs: *const i8,
    lhs_len: usize,
    rhs: *const i8,
    rhs_len: usize,
    output_data: *mut i8,
    output_len: usize,
    scratch_bytes: *mut i8,
    scratch_bytes_len: usize,
    scratch_words: *mut i32,
    scratch_words_len: usize,
    backend: u32,
) -> QneonStatus {
    guard(|| {
        // SAFETY: forwarded from the caller.
        let op = unsafe { handle(op)? };
        let (l, r) = (input("lhs", lhs, lhs_len)?, input("rhs", rhs, rhs_len)?);
        let o = output("output", output_data, output_len)?;
        let sb = output("scratch_bytes", scratch_bytes, scratch_bytes_len)?;
        let sw = output("scratch_words", scratch_words, scratch_words_len)?;
        disjoint(&[l.span, r.span, o.span, sb.span, sw.span])?;
        let backend = entry::backend(backend)?;
        // SAFETY: checked, every written buffer disjoint from the others,
        // valid for their lengths (the caller).
        let (l, r, o, sb, sw) =
            unsafe { (l.slice(), r.slice(), o.slice(), sb.slice(), sw.slice()) };
        Ok(op.0.run_with(backend, l, r, o, sb, sw)?)
    })
}

/// Frees a handle made by `qneon_matmul_create` (null is ignored).
///
/// # Safety
/// `op` must be null or a live handle, not used after this call.
#[no_mangle]
pub unsafe extern "C" fn qneon_matmul_destroy(op: *mut QneonMatMul) {
    // SAFETY: forwarded from the caller.
    unsafe { destroy(op) }
}
