//! Thresholded activations: logistic and softmax fused with the filter that
//! follows them in vision heads, writing only the elements kept.
//!
//! A detection head applies logistic (or softmax) to `[anchors, classes]`
//! scores and keeps those above a probability threshold; usually far fewer
//! than a fifth survive. Run unfused, every output is computed and written,
//! then read again by the filter. Here the selection happens on the input:
//!
//! ```text
//! logistic, new():  out[x] for every input x (the method's own kernel)
//!                   c     = smallest output code whose value (c - zp) * scale >= threshold
//!                   x_min = smallest input x with out[x] >= c
//! logistic, run():  for every i with input[i] >= x_min:      one compare per element
//!                       if out[input[i]] >= c: emit (i, out[input[i]])
//!
//! softmax, run(), per row:
//!   max, sum        exactly as Softmax::run computes them for the method
//!   v(d)            the output of an element at d = max - x (a function of d
//!                   once the row's sum is known), w(d) the method's exp of d
//!   d_max           largest d for which some d' >= d passes: found on the
//!                   suffix maxima of w, so no monotonicity of the exp is assumed
//!   for every i with input[i] >= max - d_max:                one compare per element
//!       if v(max - input[i]) >= c: emit (row, i, v)
//! ```
//! The candidates (`input >= bound`) are a superset of what passes by
//! construction, and every candidate's value is the one `run` computes and
//! is checked against the code bound; so the hits are exactly `run`
//! followed by the filter, whatever the method (and where the method's
//! output is monotone, as every method's is on the inputs tested, every
//! candidate passes).
//!
//! # What passes
//!
//! An element passes a threshold `t` (in `[0, 1]`) when its output's value
//! is at least `t`: `(q - zero_point) * scale >= t` for quantized outputs,
//! computed once in `new()` in `f64` as the smallest passing output code;
//! `y >= t` for `f32` softmax (NaN never passes). A threshold of 0 keeps
//! everything; 1 keeps nothing from a quantized output (its largest value is
//! `255/256` or `32767/32768`).
//!
//! # Top-k (softmax)
//!
//! Per row, the `k` elements of largest output value; among equal values the
//! lower index wins (a stable ranking). With a threshold too, an element is
//! kept when it passes both (the passing elements are a prefix of the
//! ranking, so this is also the top `k` of those passing). `k = 0` keeps
//! nothing, `k >= row_len` every element.
//!
//! # Output
//!
//! Hits are written in input order (row by row, index by index within a
//! row) into a caller's buffer, and `run` returns their number. A buffer too
//! small is [`Error::Capacity`] with the number needed (the buffer then
//! holds the first hits); nothing is dropped silently. `run` writes nothing
//! per element of the input, only per hit.

mod logistic;
mod model;
#[cfg(test)]
mod model_tests;
#[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
mod neon;
mod scalar;
mod softmax_8bit;
mod softmax_f32;
mod topk;

pub use logistic::ThresholdedLogistic;
pub use softmax_8bit::ThresholdedSoftmax;
pub use softmax_f32::ThresholdedSoftmaxF32;

use crate::backend::{unavailable, Backend};
use crate::elem::QuantElem;
#[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
use crate::elem::{view, ElemKind};
use crate::error::{Error, Result};
use crate::quant::QuantParams;

/// One kept element of an element-wise op: its position in the input and
/// its output (what `run` would have written there).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[repr(C)]
pub struct Hit<T> {
    /// Position in the input.
    pub index: u32,
    /// The output value.
    pub value: T,
}

/// One kept element of a row op: its row, its position in the row and its
/// output (what `run` would have written there).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[repr(C)]
pub struct RowHit<T> {
    /// The row.
    pub row: u32,
    /// Position in the row.
    pub index: u32,
    /// The output value.
    pub value: T,
}

/// The caller's hit buffer: writes while there is room and counts every
/// hit, so that a full buffer is reported with the number needed.
pub(crate) struct Sink<'a, H> {
    buf: &'a mut [H],
    count: usize,
}

impl<'a, H> Sink<'a, H> {
    pub(crate) fn new(buf: &'a mut [H]) -> Self {
        Sink { buf, count: 0 }
    }

    /// Records a hit.
    #[inline(always)]
    pub(crate) fn push(&mut self, hit: H) {
        if let Some(slot) = self.buf.get_mut(self.count) {
            *slot = hit;
        }
        self.count += 1;
    }

    /// The next `n` slots, if the buffer has them (filled by the caller,
    /// then counted with [`advance`](Self::advance)).
    pub(crate) fn slots(&mut self, n: usize) -> Option<&mut [H]> {
        let end = self.count.checked_add(n)?;
        self.buf.get_mut(self.count..end)
    }

    /// Counts `n` hits the caller wrote into [`slots`](Self::slots) (or,
    /// past the buffer's end, only counts them).
    pub(crate) fn advance(&mut self, n: usize) {
        self.count += n;
    }

    /// The number of hits, or [`Error::Capacity`] if they did not all fit.
    pub(crate) fn finish(self, op: &'static str) -> Result<usize> {
        if self.count <= self.buf.len() {
            Ok(self.count)
        } else {
            Err(Error::Capacity {
                op,
                capacity: self.buf.len(),
                needed: self.count,
            })
        }
    }
}

/// Checks a probability threshold: finite, in `[0, 1]`.
pub(crate) fn check_threshold(op: &'static str, threshold: f32) -> Result<f32> {
    if (0.0..=1.0).contains(&threshold) {
        Ok(threshold)
    } else {
        Err(Error::OutOfDomain {
            op,
            what: "threshold",
            value: threshold as f64,
            requirement: "a probability in [0, 1]",
        })
    }
}

/// The smallest output code of `T` whose value `(q - zero_point) * scale`
/// (in `f64`) is at least `threshold`; `T::MAX + 1` if none is.
pub(crate) fn code_bound<T: QuantElem>(output: QuantParams, threshold: f32) -> i32 {
    let (scale, zp, t) = (output.scale as f64, output.zero_point, threshold as f64);
    // The value grows with the code (scale > 0): the first code that passes.
    (T::MIN..=T::MAX)
        .find(|&q| (q - zp) as f64 * scale >= t)
        .unwrap_or(T::MAX + 1)
}

/// Row and hit counts fit the `u32` fields of the hits.
pub(crate) fn check_index_range(op: &'static str, len: usize) -> Result<()> {
    if len <= u32::MAX as usize + 1 {
        Ok(())
    } else {
        Err(Error::OutOfDomain {
            op,
            what: "input length",
            value: len as f64,
            requirement: "at most 2^32 elements (hit indices are u32)",
        })
    }
}

/// Calls `f(i, x)` for every `x = input[i] >= bound`, in index order, on
/// `backend` (every backend selects the same elements).
#[inline(always)]
pub(crate) fn scan<T: QuantElem>(
    backend: Backend,
    input: &[T],
    bound: i32,
    mut f: impl FnMut(usize, T),
) -> Result<()> {
    if !backend.is_available() {
        return Err(unavailable(backend));
    }
    if bound > T::MAX {
        return Ok(());
    }
    if bound <= T::MIN {
        input.iter().enumerate().for_each(|(i, &x)| f(i, x));
        return Ok(());
    }
    match backend {
        #[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
        Backend::Neon => {
            let input_view = view(input, &mut []);
            match T::KIND {
                ElemKind::I8 | ElemKind::U8 => {
                    let Some((bytes, _)) = input_view.bytes() else {
                        return Err(crate::checks::not_int16());
                    };
                    if T::KIND == ElemKind::I8 {
                        neon::scan_bytes::<true>(bytes, bound as i8 as u8, |i, b| {
                            f(i, T::from_i32(b as i8 as i32))
                        })
                    } else {
                        neon::scan_bytes::<false>(bytes, bound as u8, |i, b| {
                            f(i, T::from_i32(b as i32))
                        })
                    }
                }
                ElemKind::I16 => {
                    let Some((row, _)) = input_view.i16() else {
                        return Err(crate::checks::not_int16());
                    };
                    neon::scan_i16(row, bound as i16, |i, x| f(i, T::from_i32(x as i32)))
                }
            }
        }
        _ => scalar::scan_at_least(input, bound, f),
    }
    Ok(())
}

/// [`scan`] on `f32` rows (never selecting NaN).
#[inline(always)]
pub(crate) fn scan_f32(backend: Backend, row: &[f32], bound: f32, f: impl FnMut(usize, f32)) {
    match backend {
        #[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
        Backend::Neon => neon::scan_f32(row, bound, f),
        _ => scalar::scan_at_least_f32(row, bound, f),
    }
}
