//! The state behind the generated per-type handles of `loss_quantized.rs`:
//! the library's quantized loss and the class weights it borrows.

use std::ptr::NonNull;

use qneon::loss::{CrossEntropy, QuantizedCrossEntropy};
use qneon::QuantElem;

use crate::entry::{self, disjoint, input, output, Failure, QneonQuantParams, QneonStatus};
use crate::loss::{from_options, QneonCrossEntropyOptions};

/// The library's loss and the class weights it borrows (owned here: leaked
/// by [`Quantized::new`], freed by `Drop` once the loss is gone).
pub(super) struct Quantized<T: QuantElem> {
    op: Option<QuantizedCrossEntropy<'static, T>>,
    weights: Option<NonNull<[f32]>>,
}

impl<T: QuantElem> Quantized<T> {
    /// # Safety
    /// As `from_options`.
    pub(super) unsafe fn new(
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
    pub(super) unsafe fn forward(
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
