//! Cross-entropy of 8-bit quantized logits (a quantized classifier's or LM
//! head's output), result in `f32`.
//!
//! Per position every quantity is a function of `d = max - q` (0 to 255
//! steps): `e^(-d scale)` comes from a table of 256 `f64` values built once
//! in [`CrossEntropy::quantized`], so a row costs a max pass and a pass of
//! table reads. The sum is split into the maximal terms (`d = 0`, counted)
//! and the rest, so `ln sum = ln(count + rest)` keeps a confident row's
//! digits without a second pass; the gap sum of label smoothing is
//! `scale sum w_c d_c`. Zero points cancel (only differences matter).
//!
//! Both backends run this scalar code today (a NEON version with the
//! table split into byte planes and read with `tbl`, as the exact 8-bit
//! softmax does, is the planned fast path).

use core::marker::PhantomData;

use super::{Accumulator, CrossEntropy, OP};
use crate::checks::{check_scale, check_zero_point};
use crate::elem::QuantElem;
use crate::error::{Error, Result};
use crate::f32::{exp_neg_f64, ln_1p_f64, ln_f64};
use crate::quant::QuantParams;

/// A [`CrossEntropy`] prepared for `T` logits of one quantization.
#[derive(Clone, Copy, Debug)]
pub struct QuantizedCrossEntropy<'w, T: QuantElem> {
    ce: CrossEntropy<'w>,
    /// The input scale, in `f64`.
    scale: f64,
    /// `e^(-d scale)` for `d` in `0..=255`.
    exp: [f64; 256],
    _type: PhantomData<T>,
}

impl<'w> CrossEntropy<'w> {
    /// This loss over `T` logits (int8 or uint8) quantized with `input`:
    /// the scale finite and `> 0`, the zero point in `T`'s range (it does
    /// not change the loss). int16 is [`Error::Unsupported`].
    pub fn quantized<T: QuantElem>(
        self,
        input: QuantParams,
    ) -> Result<QuantizedCrossEntropy<'w, T>> {
        let scale = check_scale("input scale", input.scale)?;
        check_zero_point::<T>("input zero point", input.zero_point)?;
        if T::MAX - T::MIN != 255 {
            return Err(Error::Unsupported {
                op: OP,
                dtype: T::NAME,
                reason: "quantized cross-entropy takes 8-bit logits (its table has one entry \
                         per difference to the row maximum); dequantize int16 logits and use \
                         CrossEntropy::forward",
            });
        }
        let exp = core::array::from_fn(|d| exp_neg_f64(-(d as f64) * scale));
        Ok(QuantizedCrossEntropy {
            ce: self,
            scale,
            exp,
            _type: PhantomData,
        })
    }
}

impl<T: QuantElem> QuantizedCrossEntropy<'_, T> {
    /// The loss of `logits` (`[N, C, inner]`) against `targets` (`[N,
    /// inner]`), as [`CrossEntropy::forward`] with the dequantized logits
    /// (within a few `f32` ulp of the exact loss, also on confident rows).
    pub fn forward(
        &self,
        logits: &[T],
        targets: &[i64],
        inner: usize,
        out: &mut [f32],
    ) -> Result<()> {
        let ce = &self.ce;
        ce.check(logits.len(), targets, inner, out.len())?;
        let classes = ce.classes;
        let mut acc = Accumulator::new(ce, out);
        for (n, slab) in logits.chunks_exact(classes * inner).enumerate() {
            for j in 0..inner {
                let position = n * inner + j;
                let Some(target) = ce.class_of(targets[position]) else {
                    acc.ignored(position);
                    continue;
                };
                let row = self.row(|c| slab[c * inner + j].to_i32(), classes, target);
                let smooth = ce.weight_total * row.ln_sum + row.gaps;
                acc.add(position, ce.weight(target), row.nll, smooth);
            }
        }
        acc.finish();
        Ok(())
    }

    /// One position's `-ln p_target`, `ln sum` and gap sum, in real units.
    fn row(&self, q: impl Fn(usize) -> i32, classes: usize, target: usize) -> Row {
        let max = (0..classes).map(&q).max().unwrap_or_default();
        let (mut ties, mut rest, mut gaps) = (0u64, 0f64, 0f64);
        let smoothing = self.ce.label_smoothing > 0.0;
        for c in 0..classes {
            let d = (max - q(c)) as usize;
            if d == 0 {
                ties += 1;
            } else {
                rest += self.exp[d];
            }
            if smoothing {
                gaps += self.ce.weight(c) * d as f64;
            }
        }
        let ln_sum = if ties == 1 {
            ln_1p_f64(rest)
        } else {
            ln_f64(ties as f64 + rest)
        };
        Row {
            nll: (max - q(target)) as f64 * self.scale + ln_sum,
            ln_sum,
            gaps: gaps * self.scale,
        }
    }
}

/// What a position contributes (see [`Stats`](super::stats::Stats) for the
/// `f32` logits' version).
struct Row {
    nll: f64,
    ln_sum: f64,
    gaps: f64,
}
