//! int8 add, subtract and multiply: one opaque handle type per op, each
//! with `create`, `run` (operands as long as the output), `run_broadcast`
//! (either operand a value or a row repeated along the output) and
//! `destroy`. The bodies are the generic helpers at the end; the extern
//! functions stay written out so that cbindgen sees every one.

use qneon::{Add, Backend, Mul, Operand, QuantParams, Sub};

use crate::choices;
use crate::entry::{
    self, create, destroy, disjoint, guard, handle, input, output, Failure, QneonQuantParams,
    QneonStatus,
};

/// A prepared int8 add (qneon's `Add`).
pub struct QneonAdd(Add);
/// A prepared int8 subtract (qneon's `Sub`).
pub struct QneonSub(Sub);
/// A prepared int8 multiply (qneon's `Mul`).
pub struct QneonMul(Mul);

/// Prepares `out = a + b` on int8 data (TFLite's int8 `ADD`): validates
/// the three quantizations, `activation` (a `QneonActivation`) and
/// `rounding` (a `QneonRounding`), then writes a new handle to `*out`.
/// Free it with `qneon_add_destroy`.
///
/// # Safety
/// `out` must be null or valid for writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn qneon_add_create(
    a: QneonQuantParams,
    b: QneonQuantParams,
    output: QneonQuantParams,
    activation: u32,
    rounding: u32,
    out: *mut *mut QneonAdd,
) -> QneonStatus {
    // SAFETY: forwarded from the caller.
    unsafe {
        create(out, || {
            prepare(a, b, output, activation, rounding, Add::new).map(QneonAdd)
        })
    }
}

/// `output[i] = a[i] + b[i]` for `i < len`, on `backend` (a `QneonBackend`).
///
/// # Safety
/// `op` must be null or a live handle; `a`, `b` null or readable and
/// `output` null or writable for `len` elements, during the call.
#[no_mangle]
pub unsafe extern "C" fn qneon_add_run(
    op: *const QneonAdd,
    a: *const i8,
    b: *const i8,
    output: *mut i8,
    len: usize,
    backend: u32,
) -> QneonStatus {
    // SAFETY: forwarded from the caller.
    unsafe {
        run(
            op,
            a,
            len,
            b,
            len,
            output,
            len,
            backend,
            |op, b, x, y, o| op.0.run_operands(b, x, y, o),
        )
    }
}

/// `output[i] = a[i % a_len] + b[i % b_len]` for `i < len`, on `backend`:
/// an operand of 1 element is a repeated value, one of `len` elements a
/// plain operand, one of another length a row repeated along the output
/// (`len` a multiple of it; two rows of one length).
///
/// # Safety
/// `op` must be null or a live handle; `a` null or readable for `a_len`
/// elements, `b` for `b_len`, `output` null or writable for `len`, during
/// the call.
#[no_mangle]
pub unsafe extern "C" fn qneon_add_run_broadcast(
    op: *const QneonAdd,
    a: *const i8,
    a_len: usize,
    b: *const i8,
    b_len: usize,
    output: *mut i8,
    len: usize,
    backend: u32,
) -> QneonStatus {
    // SAFETY: forwarded from the caller.
    unsafe {
        run(
            op,
            a,
            a_len,
            b,
            b_len,
            output,
            len,
            backend,
            |op, b, x, y, o| op.0.run_operands(b, x, y, o),
        )
    }
}

/// Frees a handle made by `qneon_add_create` (null is ignored).
///
/// # Safety
/// `op` must be null or a live handle, not used after this call.
#[no_mangle]
pub unsafe extern "C" fn qneon_add_destroy(op: *mut QneonAdd) {
    // SAFETY: forwarded from the caller.
    unsafe { destroy(op) }
}

/// Prepares `out = a - b` on int8 data (TFLite's int8 `SUB`), as
/// `qneon_add_create`. Free it with `qneon_sub_destroy`.
///
/// # Safety
/// `out` must be null or valid for writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn qneon_sub_create(
    a: QneonQuantParams,
    b: QneonQuantParams,
    output: QneonQuantParams,
    activation: u32,
    rounding: u32,
    out: *mut *mut QneonSub,
) -> QneonStatus {
    // SAFETY: forwarded from the caller.
    unsafe {
        create(out, || {
            prepare(a, b, output, activation, rounding, Sub::new).map(QneonSub)
        })
    }
}

/// `output[i] = a[i] - b[i]` for `i < len`, on `backend` (a `QneonBackend`).
///
/// # Safety
/// As `qneon_add_run`.
#[no_mangle]
pub unsafe extern "C" fn qneon_sub_run(
    op: *const QneonSub,
    a: *const i8,
    b: *const i8,
    output: *mut i8,
    len: usize,
    backend: u32,
) -> QneonStatus {
    // SAFETY: forwarded from the caller.
    unsafe {
        run(
            op,
            a,
            len,
            b,
            len,
            output,
            len,
            backend,
            |op, b, x, y, o| op.0.run_operands(b, x, y, o),
        )
    }
}

/// `output[i] = a[i % a_len] - b[i % b_len]`, as `qneon_add_run_broadcast`.
///
/// # Safety
/// As `qneon_add_run_broadcast`.
#[no_mangle]
pub unsafe extern "C" fn qneon_sub_run_broadcast(
    op: *const QneonSub,
    a: *const i8,
    a_len: usize,
    b: *const i8,
    b_len: usize,
    output: *mut i8,
    len: usize,
    backend: u32,
) -> QneonStatus {
    // SAFETY: forwarded from the caller.
    unsafe {
        run(
            op,
            a,
            a_len,
            b,
            b_len,
            output,
            len,
            backend,
            |op, b, x, y, o| op.0.run_operands(b, x, y, o),
        )
    }
}

/// Frees a handle made by `qneon_sub_create` (null is ignored).
///
/// # Safety
/// `op` must be null or a live handle, not used after this call.
#[no_mangle]
pub unsafe extern "C" fn qneon_sub_destroy(op: *mut QneonSub) {
    // SAFETY: forwarded from the caller.
    unsafe { destroy(op) }
}

/// Prepares `out = a * b` on int8 data (TFLite's int8 `MUL`), as
/// `qneon_add_create`. Free it with `qneon_mul_destroy`.
///
/// # Safety
/// `out` must be null or valid for writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn qneon_mul_create(
    a: QneonQuantParams,
    b: QneonQuantParams,
    output: QneonQuantParams,
    activation: u32,
    rounding: u32,
    out: *mut *mut QneonMul,
) -> QneonStatus {
    // SAFETY: forwarded from the caller.
    unsafe {
        create(out, || {
            prepare(a, b, output, activation, rounding, Mul::new).map(QneonMul)
        })
    }
}

/// `output[i] = a[i] * b[i]` for `i < len`, on `backend` (a `QneonBackend`).
///
/// # Safety
/// As `qneon_add_run`.
#[no_mangle]
pub unsafe extern "C" fn qneon_mul_run(
    op: *const QneonMul,
    a: *const i8,
    b: *const i8,
    output: *mut i8,
    len: usize,
    backend: u32,
) -> QneonStatus {
    // SAFETY: forwarded from the caller.
    unsafe {
        run(
            op,
            a,
            len,
            b,
            len,
            output,
            len,
            backend,
            |op, b, x, y, o| op.0.run_operands(b, x, y, o),
        )
    }
}

/// `output[i] = a[i % a_len] * b[i % b_len]`, as `qneon_add_run_broadcast`.
///
/// # Safety
/// As `qneon_add_run_broadcast`.
#[no_mangle]
pub unsafe extern "C" fn qneon_mul_run_broadcast(
    op: *const QneonMul,
    a: *const i8,
    a_len: usize,
    b: *const i8,
    b_len: usize,
    output: *mut i8,
    len: usize,
    backend: u32,
) -> QneonStatus {
    // SAFETY: forwarded from the caller.
    unsafe {
        run(
            op,
            a,
            a_len,
            b,
            b_len,
            output,
            len,
            backend,
            |op, b, x, y, o| op.0.run_operands(b, x, y, o),
        )
    }
}

/// Frees a handle made by `qneon_mul_create` (null is ignored).
///
/// # Safety
/// `op` must be null or a live handle, not used after this call.
#[no_mangle]
pub unsafe extern "C" fn qneon_mul_destroy(op: *mut QneonMul) {
    // SAFETY: forwarded from the caller.
    unsafe { destroy(op) }
}

type New<T> = fn(
    QuantParams,
    QuantParams,
    QuantParams,
    qneon::FusedActivation,
    qneon::Rounding,
) -> qneon::Result<T>;

/// The shared body of the three `create`s.
fn prepare<T>(
    a: QneonQuantParams,
    b: QneonQuantParams,
    output: QneonQuantParams,
    activation: u32,
    rounding: u32,
    new: New<T>,
) -> Result<T, Failure> {
    let activation = choices::activation(activation)?;
    let rounding = choices::rounding(rounding)?;
    Ok(new(
        a.into(),
        b.into(),
        output.into(),
        activation,
        rounding,
    )?)
}

/// An operand of `n` elements along an output of `len`: the whole run, one
/// repeated value, or a repeated row (whose length the library checks).
pub(crate) fn operand(values: &[i8], len: usize) -> Operand<'_> {
    match values {
        v if v.len() == len => Operand::Slice(v),
        [v] => Operand::Scalar(*v),
        v => Operand::Row(v),
    }
}

/// The shared body of the six `run`s.
///
/// # Safety
/// As the `run_broadcast` functions.
#[allow(clippy::too_many_arguments)]
unsafe fn run<H>(
    op: *const H,
    a: *const i8,
    a_len: usize,
    b: *const i8,
    b_len: usize,
    out: *mut i8,
    len: usize,
    backend: u32,
    f: impl FnOnce(&H, Backend, Operand<'_>, Operand<'_>, &mut [i8]) -> qneon::Result<()>,
) -> QneonStatus {
    guard(|| {
        // SAFETY: forwarded from the caller.
        let op = unsafe { handle(op)? };
        let (a, b, o) = (
            input("a", a, a_len)?,
            input("b", b, b_len)?,
            output("output", out, len)?,
        );
        disjoint(&[a.span, b.span, o.span])?;
        let backend = entry::backend(backend)?;
        // SAFETY: checked, disjoint from the output, valid for their
        // lengths (the caller).
        let (a, b, o) = unsafe { (a.slice(), b.slice(), o.slice()) };
        Ok(f(op, backend, operand(a, len), operand(b, len), o)?)
    })
}
