//! The `capi` target's float cases: the f32 kernels, cross-entropy and
//! target log-probabilities (see `capi.rs` for what every call asserts).

use std::ptr;

use arbitrary::Arbitrary;
use qneon::f32 as qf32;
use qneon::loss::{target_log_probs_with, CrossEntropy, LogSumExp, Reduction};
use qneon_capi::*;
use qneon_fuzz::c_api::{agree, backend, bits, first, in_range, overlap, Buf, Place};

use crate::{created, out_over, qp, slot, Data, Dim, Len, Spec};

#[derive(Arbitrary, Debug)]
pub struct F32Case {
    which: u8,
    input: Spec,
    second: Place,
    out: Place,
    alias: bool,
    row_len: u8,
    variant: u8,
    backend: u8,
}

pub fn f32_kernels(c: &F32Case, d: &Data) {
    let which = c.which % 7;
    let len = c.input.len::<f32>(c.row_len as usize * 3);
    let x = Buf::new("input", c.input.place, len, false, |i| d.f32(i, 1));
    let dy = Buf::new("dy", c.second, len, false, |i| d.f32(i, 2));
    let exact = Spec {
        place: c.out,
        len: Len::Exact,
    };
    let out: Buf<f32> = out_over(c.alias, &x, exact, "output", len);
    let (row, variant, bk) = (
        c.row_len as usize,
        c.variant as u32 % 3,
        c.backend as u32 % 4,
    );
    // SAFETY: each buffer valid for `len` elements or refused first.
    let status = unsafe {
        match which {
            0 => qneon_f32_softmax(x.ptr, out.ptr, len, row, variant, bk),
            1 => qneon_f32_log_softmax(x.ptr, out.ptr, len, row, bk),
            2 => qneon_f32_logistic(x.ptr, out.ptr, len, bk),
            3 => qneon_f32_tanh(x.ptr, out.ptr, len, bk),
            4 => qneon_f32_exp(x.ptr, out.ptr, len, bk),
            _ => qneon_f32_logistic_backward(x.ptr, dy.ptr, out.ptr, len, bk),
        }
    };
    let backward = which >= 5;
    let pre = if backward {
        first([
            x.check(),
            dy.check(),
            out.check(),
            overlap(&[x.span(), dy.span(), out.span()]),
            in_range(bk, 3),
        ])
    } else {
        first([
            x.check(),
            out.check(),
            overlap(&[x.span(), out.span()]),
            if which == 0 {
                in_range(variant, 2)
            } else {
                None
            },
            in_range(bk, 3),
        ])
    };
    let want = agree("f32", status, pre, || {
        let (x, b) = (x.values(), backend(bk).unwrap());
        let mut y = vec![0f32; len];
        let variants = [qf32::SoftmaxVariant::TwoPass, qf32::SoftmaxVariant::Online];
        match which {
            0 => qf32::softmax_variant(variants[variant as usize], b, &x, &mut y, row),
            1 => qf32::log_softmax_with(b, &x, &mut y, row),
            2 => qf32::sigmoid_with(b, &x, &mut y),
            3 => qf32::tanh_with(b, &x, &mut y),
            4 => qf32::exp_into_with(b, &x, &mut y),
            _ => qf32::sigmoid_backward_with(b, &x, &dy.values(), &mut y),
        }?;
        Ok(y)
    });
    if let Some(want) = want {
        assert_eq!(bits(&out.values()), bits(&want), "f32 kernel {which}");
    }
}

#[derive(Arbitrary, Debug)]
pub struct LossCase {
    classes: Dim,
    reduction: u8,
    weights: Option<Place>,
    ignore_index: Option<i8>,
    smoothing: u8,
    null_slot: bool,
    calls: Vec<LossCall>,
}

#[derive(Arbitrary, Debug)]
pub enum LossCall {
    Forward {
        shape: Shape,
        saved: Option<Spec>,
        backend: u8,
        null_handle: bool,
    },
    Backward {
        shape: Shape,
        saved: Spec,
        grad_output: Spec,
        backend: u8,
        null_handle: bool,
    },
    Nll {
        shape: Shape,
        backend: u8,
        null_handle: bool,
    },
    TargetLogProbs {
        shape: Shape,
        backend: u8,
    },
}

/// The buffers of a loss call: `samples` by `classes` by `inner` logits.
#[derive(Arbitrary, Clone, Copy, Debug)]
pub struct Shape {
    samples: u8,
    inner: u8,
    logits: Spec,
    targets: Spec,
    out: Spec,
}

pub fn loss(c: &LossCase, d: &Data) {
    let classes = c.classes.get(12);
    let red = c.reduction as u32 % 4;
    let smoothing = [0.0, 0.1, 1.0, -0.5, f32::NAN, 1.5][c.smoothing as usize % 6];
    let weights = c
        .weights
        .map(|p| Buf::new("weights", p, classes, false, |i| d.f32(i, 3).abs()));
    let mut o = qneon_cross_entropy_default_options(classes);
    o.reduction = red;
    o.weights = weights
        .as_ref()
        .map_or(ptr::null(), |w| w.ptr as *const f32);
    o.has_ignore_index = c.ignore_index.is_some();
    o.ignore_index = c.ignore_index.unwrap_or(0) as i64;
    o.label_smoothing = smoothing;
    let mut h = ptr::null_mut();
    let s = slot(c.null_slot, &mut h);
    // SAFETY: the weights valid for `classes` elements or refused first.
    let status = unsafe { qneon_cross_entropy_create(o, s) };
    // Null weights mean "none".
    let live = weights.as_ref().filter(|w| !w.ptr.is_null());
    let pre = first([
        c.null_slot.then_some(QneonStatus::NullPointer),
        in_range(red, 3),
        live.and_then(|w| w.check()),
    ]);
    // Read only when the C API would (its checks passed).
    let w = if pre.is_none() {
        live.map(|w| w.values())
    } else {
        None
    };
    let reduction = [Reduction::None, Reduction::Sum, Reduction::Mean];
    let ce = |b| -> qneon::Result<CrossEntropy<'_>> {
        let mut ce = CrossEntropy::new(classes)?.reduction(reduction[red as usize % 3]);
        if let Some(w) = &w {
            ce = ce.weights(w)?;
        }
        ce.ignore_index(c.ignore_index.map(|i| i as i64))
            .label_smoothing(smoothing)?
            .backend(b)
    };
    let Some((h, _)) = created("cross_entropy create", status, h, pre, || {
        ce(qneon::Backend::best())
    }) else {
        return;
    };
    let mut last_saved: Vec<LogSumExp> = Vec::new();
    for call in c.calls.iter().take(4) {
        let (shape, bk, null_handle) = match *call {
            LossCall::Forward {
                shape,
                backend,
                null_handle,
                ..
            }
            | LossCall::Backward {
                shape,
                backend,
                null_handle,
                ..
            }
            | LossCall::Nll {
                shape,
                backend,
                null_handle,
            } => (shape, backend, null_handle),
            LossCall::TargetLogProbs { shape, backend } => (shape, backend, false),
        };
        let bk = bk as u32 % 4;
        let inner = shape.inner as usize % 4;
        let positions = (shape.samples as usize % 6) * inner;
        let x = shape
            .logits
            .buf("logits", positions.saturating_mul(classes), false, |i| {
                d.f32(i, 4)
            });
        let t = shape.targets.buf("targets", positions, false, |i| {
            let b = d.byte(i, 5) as i64;
            if b == 255 {
                c.ignore_index.unwrap_or(-100) as i64
            } else {
                b % (classes as i64 + 2) - 1
            }
        });
        let per = matches!(red % 3, 0) || matches!(call, LossCall::TargetLogProbs { .. });
        let grad_call = matches!(call, LossCall::Backward { .. });
        let out_exact = if grad_call {
            x.len
        } else if per {
            positions
        } else {
            1
        };
        let out: Buf<f32> = shape.out.buf(
            if grad_call { "grad" } else { "out" },
            out_exact,
            true,
            |_| 0.0,
        );
        let handle = if null_handle {
            ptr::null()
        } else {
            h as *const _
        };
        let b = backend(bk);
        let head = null_handle.then_some(QneonStatus::NullPointer);
        let want = match *call {
            LossCall::Forward { saved, .. } => {
                let sv: Option<Buf<QneonLogSumExp>> =
                    saved.map(|s| s.buf("saved", positions, true, |_| QneonLogSumExp::default()));
                let (sp, sl) = sv.as_ref().map_or((ptr::null_mut(), 0), |s| (s.ptr, s.len));
                // SAFETY: buffers valid for their lengths or refused first.
                let status = unsafe {
                    qneon_cross_entropy_forward(
                        handle, x.ptr, x.len, t.ptr, t.len, inner, out.ptr, out.len, sp, sl, bk,
                    )
                };
                let live = sv.as_ref().filter(|s| !(s.ptr.is_null() && s.len == 0));
                let mut spans = vec![x.span(), t.span(), out.span()];
                spans.extend(live.map(|s| s.span()));
                let pre = first([
                    head,
                    x.check(),
                    t.check(),
                    out.check(),
                    live.and_then(|s| s.check()),
                    overlap(&spans),
                    in_range(bk, 3),
                ]);
                let r = agree("cross_entropy forward", status, pre, || {
                    let mut y = vec![0f32; out.len];
                    let mut saved = live.map(|s| vec![LogSumExp::default(); s.len]);
                    ce(b.unwrap())?.forward(
                        &x.values(),
                        &t.values(),
                        inner,
                        &mut y,
                        saved.as_deref_mut(),
                    )?;
                    Ok((y, saved))
                });
                r.map(|(y, saved)| {
                    if let (Some(want), Some(s)) = (&saved, live) {
                        let got = s.values();
                        let targets = t.values();
                        for (i, (g, w)) in got.iter().zip(want).enumerate() {
                            // Unspecified at ignored positions.
                            if Some(targets[i]) != c.ignore_index.map(|v| v as i64) {
                                assert_eq!(
                                    (g.ln_sum.to_bits(), g.max.to_bits()),
                                    (w.ln_sum.to_bits(), w.max.to_bits()),
                                    "saved {i}"
                                );
                            }
                        }
                        last_saved = want.clone();
                    }
                    y
                })
            }
            LossCall::Backward {
                saved, grad_output, ..
            } => {
                let sv: Buf<QneonLogSumExp> = saved.buf("saved", positions, false, |i| {
                    let s = last_saved.get(i).copied().unwrap_or_default();
                    QneonLogSumExp {
                        ln_sum: s.ln_sum,
                        max: s.max,
                    }
                });
                let g =
                    grad_output.buf("grad_output", if per { positions } else { 1 }, false, |i| {
                        d.f32(i, 6)
                    });
                // SAFETY: as above.
                let status = unsafe {
                    qneon_cross_entropy_backward(
                        handle, x.ptr, x.len, t.ptr, t.len, inner, sv.ptr, sv.len, g.ptr, g.len,
                        out.ptr, out.len, bk,
                    )
                };
                let pre = first([
                    head,
                    x.check(),
                    t.check(),
                    sv.check(),
                    g.check(),
                    out.check(),
                    overlap(&[x.span(), t.span(), sv.span(), g.span(), out.span()]),
                    in_range(bk, 3),
                ]);
                agree("cross_entropy backward", status, pre, || {
                    let mut y = vec![0f32; out.len];
                    let saved: Vec<LogSumExp> = sv
                        .values()
                        .iter()
                        .map(|s| LogSumExp {
                            ln_sum: s.ln_sum,
                            max: s.max,
                        })
                        .collect();
                    ce(b.unwrap())?.backward(
                        &x.values(),
                        &t.values(),
                        inner,
                        &saved,
                        &g.values(),
                        &mut y,
                    )?;
                    Ok(y)
                })
            }
            LossCall::Nll { .. } => {
                // SAFETY: as above.
                let status = unsafe {
                    qneon_cross_entropy_nll(
                        handle, x.ptr, x.len, t.ptr, t.len, inner, out.ptr, out.len, bk,
                    )
                };
                let pre = first([
                    head,
                    x.check(),
                    t.check(),
                    out.check(),
                    overlap(&[x.span(), t.span(), out.span()]),
                    in_range(bk, 3),
                ]);
                agree("cross_entropy nll", status, pre, || {
                    let mut y = vec![0f32; out.len];
                    ce(b.unwrap())?.nll(&x.values(), &t.values(), inner, &mut y)?;
                    Ok(y)
                })
            }
            LossCall::TargetLogProbs { .. } => {
                // SAFETY: as above.
                let status = unsafe {
                    qneon_target_log_probs(
                        x.ptr, x.len, classes, t.ptr, t.len, inner, out.ptr, out.len, bk,
                    )
                };
                let pre = first([
                    x.check(),
                    t.check(),
                    out.check(),
                    overlap(&[x.span(), t.span(), out.span()]),
                    in_range(bk, 3),
                ]);
                agree("target_log_probs", status, pre, || {
                    let mut y = vec![0f32; out.len];
                    target_log_probs_with(
                        b.unwrap(),
                        &x.values(),
                        classes,
                        &t.values(),
                        inner,
                        &mut y,
                    )?;
                    Ok(y)
                })
            }
        };
        if let Some(want) = want {
            assert_eq!(bits(&out.values()), bits(&want), "loss output");
        }
    }
    // SAFETY: the last use of a live handle.
    unsafe { qneon_cross_entropy_destroy(h) };
}

#[derive(Arbitrary, Debug)]
pub struct QuantizedLossCase {
    unsigned: bool,
    classes: u8,
    reduction: u8,
    weights: bool,
    smoothing: bool,
    input: qneon_fuzz::Quant,
    backend: u8,
    null_slot: bool,
    shapes: Vec<Shape>,
}

/// Cross-entropy of int8 / uint8 logits through its handle.
pub fn quantized_loss(c: &QuantizedLossCase, d: &Data) {
    if c.unsigned {
        quantized::<u8>(c, d)
    } else {
        quantized::<i8>(c, d)
    }
}

/// The C functions of one element type.
trait Logit: qneon::QuantElem {
    type H;
    unsafe fn create(
        o: QneonCrossEntropyOptions,
        q: QneonQuantParams,
        b: u32,
        h: *mut *mut Self::H,
    ) -> QneonStatus;
    #[allow(clippy::too_many_arguments)]
    unsafe fn forward(
        h: *const Self::H,
        x: *const Self,
        xl: usize,
        t: *const i64,
        tl: usize,
        inner: usize,
        o: *mut f32,
        ol: usize,
    ) -> QneonStatus;
    unsafe fn destroy(h: *mut Self::H);
}

impl Logit for i8 {
    type H = QneonQuantizedCrossEntropyI8;
    unsafe fn create(
        o: QneonCrossEntropyOptions,
        q: QneonQuantParams,
        b: u32,
        h: *mut *mut Self::H,
    ) -> QneonStatus {
        unsafe { qneon_quantized_cross_entropy_i8_create(o, q, b, h) }
    }
    unsafe fn forward(
        h: *const Self::H,
        x: *const i8,
        xl: usize,
        t: *const i64,
        tl: usize,
        inner: usize,
        o: *mut f32,
        ol: usize,
    ) -> QneonStatus {
        unsafe { qneon_quantized_cross_entropy_i8_forward(h, x, xl, t, tl, inner, o, ol) }
    }
    unsafe fn destroy(h: *mut Self::H) {
        unsafe { qneon_quantized_cross_entropy_i8_destroy(h) }
    }
}

impl Logit for u8 {
    type H = QneonQuantizedCrossEntropyU8;
    unsafe fn create(
        o: QneonCrossEntropyOptions,
        q: QneonQuantParams,
        b: u32,
        h: *mut *mut Self::H,
    ) -> QneonStatus {
        unsafe { qneon_quantized_cross_entropy_u8_create(o, q, b, h) }
    }
    unsafe fn forward(
        h: *const Self::H,
        x: *const u8,
        xl: usize,
        t: *const i64,
        tl: usize,
        inner: usize,
        o: *mut f32,
        ol: usize,
    ) -> QneonStatus {
        unsafe { qneon_quantized_cross_entropy_u8_forward(h, x, xl, t, tl, inner, o, ol) }
    }
    unsafe fn destroy(h: *mut Self::H) {
        unsafe { qneon_quantized_cross_entropy_u8_destroy(h) }
    }
}

fn quantized<T: Logit + PartialEq>(c: &QuantizedLossCase, d: &Data) {
    let classes = c.classes as usize % 10;
    let red = c.reduction as u32 % 3;
    let weights: Vec<f32> = (0..classes).map(|i| d.f32(i, 7).abs()).collect();
    let smoothing = if c.smoothing { 0.25 } else { 0.0 };
    let mut o = qneon_cross_entropy_default_options(classes);
    o.reduction = red;
    o.label_smoothing = smoothing;
    if c.weights && classes > 0 {
        o.weights = weights.as_ptr();
    }
    let iq = c.input.get::<T>();
    let bk = c.backend as u32 % 4;
    let mut h = ptr::null_mut();
    let s = slot(c.null_slot, &mut h);
    // SAFETY: weights of `classes` elements, a valid or null slot.
    let status = unsafe { T::create(o, qp(iq), bk, s) };
    let pre = first([c.null_slot.then_some(QneonStatus::NullPointer)]);
    let reduction = [Reduction::None, Reduction::Sum, Reduction::Mean][red as usize];
    // The options first (as create validates them), then the backend value.
    let options = || -> qneon::Result<CrossEntropy<'_>> {
        let mut ce = CrossEntropy::new(classes)?.reduction(reduction);
        if c.weights && classes > 0 {
            ce = ce.weights(&weights)?;
        }
        ce.ignore_index(Some(-100)).label_smoothing(smoothing)
    };
    let pre = pre.or_else(|| {
        (options().is_ok() && backend(bk).is_none()).then_some(QneonStatus::InvalidArgument)
    });
    let new = || options()?.backend(backend(bk).unwrap())?.quantized::<T>(iq);
    let Some((h, op)) = created("quantized cross_entropy create", status, h, pre, new) else {
        return;
    };
    for shape in c.shapes.iter().take(3) {
        let inner = shape.inner as usize % 4;
        let positions = (shape.samples as usize % 6) * inner;
        let x = shape.logits.buf("logits", positions * classes, false, |i| {
            T::from_i32(T::MIN + d.byte(i, 8) as i32 % (T::MAX - T::MIN + 1))
        });
        let t = shape.targets.buf("targets", positions, false, |i| {
            d.byte(i, 9) as i64 % (classes as i64 + 2) - 1
        });
        let exact = if red == 0 { positions } else { 1 };
        let out: Buf<f32> = shape.out.buf("out", exact, true, |_| 0.0);
        // SAFETY: a live handle; buffers valid for their lengths or refused.
        let status = unsafe { T::forward(h, x.ptr, x.len, t.ptr, t.len, inner, out.ptr, out.len) };
        let pre = first([
            x.check(),
            t.check(),
            out.check(),
            overlap(&[x.span(), t.span(), out.span()]),
        ]);
        let want = agree("quantized cross_entropy forward", status, pre, || {
            let mut y = vec![0f32; out.len];
            op.forward(&x.values(), &t.values(), inner, &mut y)?;
            Ok(y)
        });
        if let Some(want) = want {
            assert_eq!(bits(&out.values()), bits(&want), "quantized loss output");
        }
    }
    // SAFETY: the last use of a live handle.
    unsafe { T::destroy(h) };
}
