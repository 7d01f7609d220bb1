//! Softmax cross-entropy of 8-bit quantized logits (qneon's
//! `QuantizedCrossEntropy`): a handle per element type holding the options
//! and the table of `e^(-d scale)` built once by create.

use std::ptr::NonNull;

use qneon::loss::{CrossEntropy, QuantizedCrossEntropy};
use qneon::QuantElem;

use crate::entry::{
    self, create, destroy, disjoint, guard, handle, input, output, Failure, QneonQuantParams,
    QneonStatus,
};
use crate::loss::{from_options, QneonCrossEntropyOptions};

/// The library's loss and the class weights it borrows (owned here: leaked
/// by [`Quantized::new`], freed by `Drop` once the loss is gone).
struct Quantized<T: QuantElem> {
    op: Option<QuantizedCrossEntropy<'static, T>>,
    weights: Option<NonNull<[f32]>>,
}

impl<T: QuantElem> Quantized<T> {
    /// # Safety
    /// As `from_options`.
    unsafe fn new(
        options: QneonCrossEntropyOptions,
        input_q: QneonQuantParams,
        backend: u32,
    ) -> Result<Quantized<T>, Failure> {
        // SAFETY: forwarded from the caller.
        let base = unsafe { from_options(options)? };
        let backend = entry::backend(backend)?;
        let raw = base.weights.map(Box::into_raw);
        // From here on, dropping `q` frees the weights (error paths too).
        let mut q = Quantized {
            op: None,
            weights: raw.and_then(NonNull::new),
        };
        let mut ce = CrossEntropy::new(base.classes)?.reduction(base.reduction);
        if let Some(raw) = raw {
            // SAFETY: from Box::into_raw just above; freed only by `drop`,
            // after `op` (the only holder of this borrow) is cleared.
            let w: &'static [f32] = unsafe { &*raw };
            ce = ce.weights(w)?;
        }
        let ce = ce
            .ignore_index(base.ignore_index)
            .label_smoothing(base.label_smoothing)?
            .backend(backend)?;
        q.op = Some(ce.quantized::<T>(input_q.into())?);
        Ok(q)
    }

    /// # Safety
    /// The buffers must be null or valid for their lengths during the call.
    #[allow(clippy::too_many_arguments)]
    unsafe fn forward(
        &self,
        logits: *const T,
        logits_len: usize,
        targets: *const i64,
        targets_len: usize,
        inner: usize,
        out: *mut f32,
        out_len: usize,
    ) -> Result<(), Failure> {
        let (x, t) = (
            input("logits", logits, logits_len)?,
            input("targets", targets, targets_len)?,
        );
        let o = output("out", out, out_len)?;
        disjoint(&[x.span, t.span, o.span])?;
        // SAFETY: checked, `out` disjoint from the others, valid for their
        // lengths (the caller).
        let (x, t, o) = unsafe { (x.slice(), t.slice(), o.slice()) };
        match &self.op {
            Some(op) => Ok(op.forward(x, t, inner, o)?),
            None => Err(Failure::new(
                QneonStatus::Internal,
                "the loss was not prepared",
            )),
        }
    }
}

impl<T: QuantElem> Drop for Quantized<T> {
    fn drop(&mut self) {
        // The loss borrows the weights: gone first.
        self.op = None;
        if let Some(w) = self.weights.take() {
            // SAFETY: from Box::into_raw in `new`, freed once, no borrow
            // left.
            drop(unsafe { Box::from_raw(w.as_ptr()) });
        }
    }
}

/// A prepared cross-entropy of int8 logits.
pub struct QneonQuantizedCrossEntropyI8(Quantized<i8>);
/// A prepared cross-entropy of uint8 logits.
pub struct QneonQuantizedCrossEntropyU8(Quantized<u8>);

/// Validates `options`, the int8 logits' quantization `input` (its zero
/// point does not change the loss) and `backend` (a `QneonBackend`, used by
/// every forward), builds the table of `e^(-d scale)`, and writes a new
/// handle to `*out`; free it with `qneon_quantized_cross_entropy_i8_destroy`.
///
/// # Safety
/// `options.weights` must be null or readable for `options.classes`
/// elements during the call; `out` null or valid for writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn qneon_quantized_cross_entropy_i8_create(
    options: QneonCrossEntropyOptions,
    input_q: QneonQuantParams,
    backend: u32,
    out: *mut *mut QneonQuantizedCrossEntropyI8,
) -> QneonStatus {
    // SAFETY: forwarded from the caller.
    let make =
        || unsafe { Quantized::new(options, input_q, backend) }.map(QneonQuantizedCrossEntropyI8);
    // SAFETY: forwarded from the caller.
    unsafe { create(out, make) }
}

/// The loss of int8 `logits` (`[N, C, inner]`) against `targets`
/// (`[N, inner]`) into `out`, as `qneon_cross_entropy_forward` with the
/// dequantized logits (within a few float ulp of the exact loss).
///
/// # Safety
/// `op` must be null or a live handle; each buffer null or valid for its
/// length (writable for `out`, readable for the others), during the call.
#[no_mangle]
pub unsafe extern "C" fn qneon_quantized_cross_entropy_i8_forward(
    op: *const QneonQuantizedCrossEntropyI8,
    logits: *const i8,
    logits_len: usize,
    targets: *const i64,
    targets_len: usize,
    inner: usize,
    out: *mut f32,
    out_len: usize,
) -> QneonStatus {
    guard(|| {
        // SAFETY: forwarded from the caller.
        unsafe {
            handle(op)?.0.forward(
                logits,
                logits_len,
                targets,
                targets_len,
                inner,
                out,
                out_len,
            )
        }
    })
}

/// Frees a handle made by `qneon_quantized_cross_entropy_i8_create` (null
/// is ignored).
///
/// # Safety
/// `op` must be null or a live handle, not used after this call.
#[no_mangle]
pub unsafe extern "C" fn qneon_quantized_cross_entropy_i8_destroy(
    op: *mut QneonQuantizedCrossEntropyI8,
) {
    // SAFETY: forwarded from the caller.
    unsafe { destroy(op) }
}

/// As `qneon_quantized_cross_entropy_i8_create`, for uint8 logits.
///
/// # Safety
/// As `qneon_quantized_cross_entropy_i8_create`.
#[no_mangle]
pub unsafe extern "C" fn qneon_quantized_cross_entropy_u8_create(
    options: QneonCrossEntropyOptions,
    input_q: QneonQuantParams,
    backend: u32,
    out: *mut *mut QneonQuantizedCrossEntropyU8,
) -> QneonStatus {
    // SAFETY: forwarded from the caller.
    let make =
        || unsafe { Quantized::new(options, input_q, backend) }.map(QneonQuantizedCrossEntropyU8);
    // SAFETY: forwarded from the caller.
    unsafe { create(out, make) }
}

/// As `qneon_quantized_cross_entropy_i8_forward`, for uint8 logits.
///
/// # Safety
/// As `qneon_quantized_cross_entropy_i8_forward`.
#[no_mangle]
pub unsafe extern "C" fn qneon_quantized_cross_entropy_u8_forward(
    op: *const QneonQuantizedCrossEntropyU8,
    logits: *const u8,
    logits_len: usize,
    targets: *const i64,
    targets_len: usize,
    inner: usize,
    out: *mut f32,
    out_len: usize,
) -> QneonStatus {
    guard(|| {
        // SAFETY: forwarded from the caller.
        unsafe {
            handle(op)?.0.forward(
                logits,
                logits_len,
                targets,
                targets_len,
                inner,
                out,
                out_len,
            )
        }
    })
}

/// Frees a handle made by `qneon_quantized_cross_entropy_u8_create` (null
/// is ignored).
///
/// # Safety
/// `op` must be null or a live handle, not used after this call.
#[no_mangle]
pub unsafe extern "C" fn qneon_quantized_cross_entropy_u8_destroy(
    op: *mut QneonQuantizedCrossEntropyU8,
) {
    // SAFETY: forwarded from the caller.
    unsafe { destroy(op) }
}
