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
//! Rows of at least 256 classes are first counted into a histogram of
//! their 256 possible values (a load, an add and a store per element), and
//! the sum runs over the values present: `count * e^(-d scale)` in `f64`.
//! That is 4.8 instructions per element on a 32,768-class row, where a pass
//! of `f64` table reads costs 12.7 (`cargo xtask bench --filter
//! "cross_entropy int8"`). Both backends run this scalar code: a histogram
//! needs scattered increments, which NEON lacks, and the `tbl` byte planes
//! of the 8-bit softmax would give `f32` or fixed-point terms, whose sums
//! lose the few-ulp accuracy of the `f64` sum on long and confident rows.

use core::marker::PhantomData;

use super::{Accumulator, CrossEntropy, OP};
use crate::checks::{check_scale, check_zero_point};
use crate::elem::{view, QuantElem};
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
                let row = if inner == 1 && self.counts_rows() {
                    self.row_from_counts(slab, target)
                } else {
                    self.row(|c| slab[c * inner + j].to_i32(), classes, target)
                };
                let smooth = ce.weight_total * row.ln_sum + row.gaps;
                acc.add(position, ce.weight(target), row.nll, smooth);
            }
        }
        acc.finish();
        Ok(())
    }

    /// Whether rows are counted into a histogram of their values first
    /// ([`Self::row_from_counts`]): long rows, unless label smoothing needs
    /// a class weight per element.
    fn counts_rows(&self) -> bool {
        self.ce.classes >= COUNT_FROM
            && u32::try_from(self.ce.classes).is_ok()
            && !(self.ce.label_smoothing > 0.0 && self.ce.weights.is_some())
    }

    /// [`Self::row`] of a contiguous row by its histogram: one pass counts
    /// each of the 256 values (a load, an add and a store per element; no
    /// maximum pass, no per-element `f64` work), then the sum runs over the
    /// values present, `count * e^(-d scale)` from the smallest terms up,
    /// and the gap sum (unweighted here) is the exact integer `sum count d`.
    fn row_from_counts(&self, row: &[T], target: usize) -> Row {
        let counts = count_values(row);
        // Rows are non-empty (classes >= COUNT_FROM), so both exist.
        let top = counts.iter().rposition(|&c| c != 0).unwrap_or(0);
        let bottom = counts.iter().position(|&c| c != 0).unwrap_or(0);
        // Values bottom..top, whose distances to the maximum are
        // top - bottom down to 1.
        let below = &counts[bottom..top];
        let exps = self.exp[1..=top - bottom].iter().rev();
        let rest = below
            .iter()
            .zip(exps)
            .fold(0f64, |rest, (&count, &e)| rest + count as f64 * e);
        let smoothing = self.ce.label_smoothing > 0.0;
        let gaps = if smoothing {
            let distances = (1..=below.len() as u64).rev();
            below
                .iter()
                .zip(distances)
                .map(|(&count, d)| count as u64 * d)
                .sum::<u64>()
        } else {
            0
        };
        let ties = counts[top];
        let ln_sum = if ties == 1 {
            ln_1p_f64(rest)
        } else {
            ln_f64(ties as f64 + rest)
        };
        let d_target = top as i32 - (row[target].to_i32() - T::MIN);
        Row {
            nll: d_target as f64 * self.scale + ln_sum,
            ln_sum,
            gaps: gaps as f64 * self.scale,
        }
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

/// How many times each of the 256 values occurs in `row` (index: value
/// minus `T::MIN`). Eight bytes per load: an `xor` maps a whole word of
/// int8 bytes to offsets at once, then each byte is an index.
fn count_values<T: QuantElem>(row: &[T]) -> [u32; 256] {
    let mut counts = [0u32; 256];
    let mut none: [T; 0] = [];
    let Some((bytes, _)) = view(row, &mut none).bytes() else {
        // int16 never gets here (`quantized` takes 8-bit types only).
        return counts;
    };
    // int8's offset q + 128 is its byte with the top bit flipped; uint8's
    // is the byte.
    let flip = T::MIN as u8;
    let flip_word = u64::from_ne_bytes([flip; 8]);
    let words = bytes.chunks_exact(8);
    let tail = words.remainder();
    for word in words {
        let mut b = [0u8; 8];
        b.copy_from_slice(word);
        let w = u64::from_le_bytes(b) ^ flip_word;
        for k in 0..8 {
            counts[((w >> (8 * k)) & 0xff) as usize] += 1;
        }
    }
    for &b in tail {
        counts[(b ^ flip) as usize] += 1;
    }
    counts
}

/// Rows of at least this many classes go through a histogram of their
/// values ([`QuantizedCrossEntropy::row_from_counts`]): its fixed cost (256
/// counters cleared and scanned) is below the per-element work it saves
/// from about this length on (`cargo xtask bench --filter cross_entropy`).
const COUNT_FROM: usize = 256;

/// What a position contributes (see [`Stats`](super::stats::Stats) for the
/// `f32` logits' version).
struct Row {
    nll: f64,
    ln_sum: f64,
    gaps: f64,
}
