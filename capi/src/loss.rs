//! Softmax cross-entropy over `float` logits (qneon's `loss` module):
//! a handle holding PyTorch's options (its class weights copied), then
//! forward (the loss, and optionally each position's log-sum-exp for the
//! backward pass), backward (the gradient), the NLL of log-probabilities;
//! and `qneon_target_log_probs` without a handle.

use std::mem::{align_of, offset_of, size_of};

use qneon::loss::{target_log_probs_with, CrossEntropy, LogSumExp, Reduction};
use qneon::Backend;

use crate::choices;
use crate::entry::{
    self, create, destroy, disjoint, guard, handle, input, optional_output, output, Failure,
    QneonStatus,
};

/// The options of a cross-entropy (PyTorch's `cross_entropy` arguments).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct QneonCrossEntropyOptions {
    /// Classes `C`, at least 1.
    pub classes: usize,
    /// A `QneonReduction`.
    pub reduction: u32,
    /// Null for every class weight 1; else `classes` weights, each finite
    /// and >= 0 (copied by create).
    pub weights: *const f32,
    /// Whether targets equal to `ignore_index` are skipped (loss 0, gradient
    /// 0, not counted by the mean); if false every target must be a class.
    pub has_ignore_index: bool,
    /// The target value skipped when `has_ignore_index`.
    pub ignore_index: i64,
    /// Label smoothing in [0, 1].
    pub label_smoothing: f32,
}

/// What forward saves per position for backward (qneon's `LogSumExp`):
/// `ln sum_c e^(x_c - max)` and the position's maximum logit.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct QneonLogSumExp {
    /// `ln sum_c e^(x_c - max)`.
    pub ln_sum: f64,
    /// The maximum logit.
    pub max: f32,
}

// The C struct is qneon's `LogSumExp` (both `repr(C)`, the same fields in
// the same order): buffers of one are passed as the other.
const _: () = assert!(
    size_of::<QneonLogSumExp>() == size_of::<LogSumExp>()
        && align_of::<QneonLogSumExp>() == align_of::<LogSumExp>()
        && offset_of!(QneonLogSumExp, ln_sum) == offset_of!(LogSumExp, ln_sum)
        && offset_of!(QneonLogSumExp, max) == offset_of!(LogSumExp, max)
);

/// A prepared softmax cross-entropy (qneon's `loss::CrossEntropy`, its
/// class weights owned).
pub struct QneonCrossEntropy {
    pub(crate) classes: usize,
    pub(crate) reduction: Reduction,
    pub(crate) weights: Option<Box<[f32]>>,
    pub(crate) ignore_index: Option<i64>,
    pub(crate) label_smoothing: f32,
}

impl QneonCrossEntropy {
    /// The library's loss with these options on `backend`. The options were
    /// validated by create; the weights are checked again, O(classes).
    fn get(&self, backend: Backend) -> Result<CrossEntropy<'_>, Failure> {
        let mut ce = CrossEntropy::new(self.classes)?.reduction(self.reduction);
        if let Some(w) = &self.weights {
            ce = ce.weights(w)?;
        }
        Ok(ce
            .ignore_index(self.ignore_index)
            .label_smoothing(self.label_smoothing)?
            .backend(backend)?)
    }
}

/// The handle of `options`, validated (every option, on the best backend).
///
/// # Safety
/// `options.weights` must be null or readable for `options.classes`
/// elements during the call.
pub(crate) unsafe fn from_options(
    options: QneonCrossEntropyOptions,
) -> Result<QneonCrossEntropy, Failure> {
    let reduction = choices::reduction(options.reduction)?;
    let weights = if options.weights.is_null() {
        None
    } else {
        let w = input("weights", options.weights, options.classes)?;
        // SAFETY: checked; readable for `classes` elements (the caller).
        Some(Box::from(unsafe { w.slice() }))
    };
    let op = QneonCrossEntropy {
        classes: options.classes,
        reduction,
        weights,
        ignore_index: options.has_ignore_index.then_some(options.ignore_index),
        label_smoothing: options.label_smoothing,
    };
    // Validates every option (the best backend is always available).
    op.get(Backend::best())?;
    Ok(op)
}

/// PyTorch's defaults for `classes` classes: mean reduction, no class
/// weights, ignore index -100, no label smoothing.
#[no_mangle]
pub extern "C" fn qneon_cross_entropy_default_options(classes: usize) -> QneonCrossEntropyOptions {
    QneonCrossEntropyOptions {
        classes,
        reduction: crate::choices::QneonReduction::Mean as u32,
        weights: std::ptr::null(),
        has_ignore_index: true,
        ignore_index: -100,
        label_smoothing: 0.0,
    }
}

/// Validates `options` and writes a new handle to `*out`; free it with
/// `qneon_cross_entropy_destroy`.
///
/// # Safety
/// `options.weights` must be null or readable for `options.classes`
/// elements during the call; `out` null or valid for writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn qneon_cross_entropy_create(
    options: QneonCrossEntropyOptions,
    out: *mut *mut QneonCrossEntropy,
) -> QneonStatus {
    // SAFETY: forwarded from the caller.
    let make = || unsafe { from_options(options) };
    // SAFETY: forwarded from the caller.
    unsafe { create(out, make) }
}

/// The loss of `logits` (`[N, C, inner]`, `inner` 1 for `[N, C]`;
/// `logits_len` = `targets_len * C`) against `targets` (`[N, inner]`,
/// class indices) into `out` (`targets_len` values for
/// `QNEON_REDUCTION_NONE`, else 1), on `backend`. `saved`: null (with
/// `saved_len` 0), or `targets_len` entries that receive each position's
/// log-sum-exp for `qneon_cross_entropy_backward`.
///
/// # Safety
/// `op` must be null or a live handle; each buffer null or valid for its
/// length (readable for `logits` and `targets`, writable for `out` and
/// `saved`), during the call.
#[no_mangle]
pub unsafe extern "C" fn qneon_cross_entropy_forward(
    op: *const QneonCrossEntropy,
    logits: *const f32,
    logits_len: usize,
    targets: *const i64,
    targets_len: usize,
    inner: usize,
    out: *mut f32,
    out_len: usize,
    saved: *mut QneonLogSumExp,
    saved_len: usize,
    backend: u32,
) -> QneonStatus {
    guard(|| {
        // SAFETY: forwarded from the caller.
        let op = unsafe { handle(op)? };
        let (x, t) = (
            input("logits", logits, logits_len)?,
            input("targets", targets, targets_len)?,
        );
        let o = output("out", out, out_len)?;
        // The same layout (asserted above).
        let s = optional_output("saved", saved as *mut LogSumExp, saved_len)?;
        match &s {
            Some(s) => disjoint(&[x.span, t.span, o.span, s.span])?,
            None => disjoint(&[x.span, t.span, o.span])?,
        }
        let ce = op.get(entry::backend(backend)?)?;
        // SAFETY: checked, every written buffer disjoint from the others,
        // valid for their lengths (the caller).
        let (x, t, o, s) = unsafe { (x.slice(), t.slice(), o.slice(), s.map(|s| s.slice())) };
        Ok(ce.forward(x, t, inner, o, s)?)
    })
}

/// The gradient of the loss with respect to `logits` into `grad`
/// (`logits_len` values), from the `saved` log-sum-exps a forward of the
/// same logits and targets wrote (`targets_len` entries) and the incoming
/// gradient `grad_output` (`targets_len` values for `QNEON_REDUCTION_NONE`,
/// else 1), on `backend`.
///
/// # Safety
/// `op` must be null or a live handle; each buffer null or valid for its
/// length (writable for `grad`, readable for the others), during the call.
#[no_mangle]
pub unsafe extern "C" fn qneon_cross_entropy_backward(
    op: *const QneonCrossEntropy,
    logits: *const f32,
    logits_len: usize,
    targets: *const i64,
    targets_len: usize,
    inner: usize,
    saved: *const QneonLogSumExp,
    saved_len: usize,
    grad_output: *const f32,
    grad_output_len: usize,
    grad: *mut f32,
    grad_len: usize,
    backend: u32,
) -> QneonStatus {
    guard(|| {
        // SAFETY: forwarded from the caller.
        let op = unsafe { handle(op)? };
        let (x, t) = (
            input("logits", logits, logits_len)?,
            input("targets", targets, targets_len)?,
        );
        // The same layout (asserted above).
        let s = input("saved", saved as *const LogSumExp, saved_len)?;
        let g = input("grad_output", grad_output, grad_output_len)?;
        let d = output("grad", grad, grad_len)?;
        disjoint(&[x.span, t.span, s.span, g.span, d.span])?;
        let ce = op.get(entry::backend(backend)?)?;
        // SAFETY: checked, `grad` disjoint from the others, valid for their
        // lengths (the caller).
        let (x, t, s, g, d) = unsafe { (x.slice(), t.slice(), s.slice(), g.slice(), d.slice()) };
        Ok(ce.backward(x, t, inner, s, g, d)?)
    })
}

/// The negative log-likelihood of `log_probs` (`[N, C, inner]`, e.g. a
/// log-softmax output) against `targets`, with the handle's options, into
/// `out` (as forward), on `backend`.
///
/// # Safety
/// As `qneon_cross_entropy_forward`.
#[no_mangle]
pub unsafe extern "C" fn qneon_cross_entropy_nll(
    op: *const QneonCrossEntropy,
    log_probs: *const f32,
    log_probs_len: usize,
    targets: *const i64,
    targets_len: usize,
    inner: usize,
    out: *mut f32,
    out_len: usize,
    backend: u32,
) -> QneonStatus {
    guard(|| {
        // SAFETY: forwarded from the caller.
        let op = unsafe { handle(op)? };
        let x = input("log_probs", log_probs, log_probs_len)?;
        let t = input("targets", targets, targets_len)?;
        let o = output("out", out, out_len)?;
        disjoint(&[x.span, t.span, o.span])?;
        let ce = op.get(entry::backend(backend)?)?;
        // SAFETY: checked, `out` disjoint from the others, valid for their
        // lengths (the caller).
        let (x, t, o) = unsafe { (x.slice(), t.slice(), o.slice()) };
        Ok(ce.nll(x, t, inner, o)?)
    })
}

/// Frees a handle made by `qneon_cross_entropy_create` (null is ignored).
///
/// # Safety
/// `op` must be null or a live handle, not used after this call.
#[no_mangle]
pub unsafe extern "C" fn qneon_cross_entropy_destroy(op: *mut QneonCrossEntropy) {
    // SAFETY: forwarded from the caller.
    unsafe { destroy(op) }
}

/// `ln p_target` at every position (log-softmax then a gather, without the
/// log-softmax tensor): `logits` `[N, classes, inner]`, `targets`
/// `[N, inner]` (each a class), `out` `targets_len` values, on `backend`.
///
/// # Safety
/// Each buffer must be null or valid for its length (writable for `out`,
/// readable for the others) during the call.
#[no_mangle]
pub unsafe extern "C" fn qneon_target_log_probs(
    logits: *const f32,
    logits_len: usize,
    classes: usize,
    targets: *const i64,
    targets_len: usize,
    inner: usize,
    out: *mut f32,
    out_len: usize,
    backend: u32,
) -> QneonStatus {
    guard(|| {
        let (x, t) = (
            input("logits", logits, logits_len)?,
            input("targets", targets, targets_len)?,
        );
        let o = output("out", out, out_len)?;
        disjoint(&[x.span, t.span, o.span])?;
        let backend = entry::backend(backend)?;
        // SAFETY: checked, `out` disjoint from the others, valid for their
        // lengths (the caller).
        let (x, t, o) = unsafe { (x.slice(), t.slice(), o.slice()) };
        Ok(target_log_probs_with(backend, x, classes, t, inner, o)?)
    })
}
