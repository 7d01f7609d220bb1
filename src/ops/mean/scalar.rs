//! The reference MEAN loops ([`Backend::Scalar`](crate::Backend::Scalar)):
//! for each output, the sum of its inputs (wrapping `i32`, as TFLite's),
//! then the prepared requantization.

use super::params::{Layout, MeanParams};
use crate::elem::QuantElem;

/// Sums the inputs of every output of `output` (all of them, in order) and
/// requantizes. Lengths are checked by the caller.
pub(crate) fn mean<T: QuantElem>(p: &MeanParams, input: &[T], output: &mut [T]) {
    let l = &p.layout;
    for (index, o) in output.iter_mut().enumerate() {
        let base = input_offset(l, index);
        let sum = reduced_sum(l, input, base);
        *o = p.requantize(sum, index);
    }
}

/// Where output `index`'s first input lies: its kept-group indices (the
/// innermost kept group varies fastest) times their strides.
fn input_offset(l: &Layout, mut index: usize) -> usize {
    let mut offset = 0;
    for g in (0..l.groups).rev() {
        if !l.reduced[g] {
            offset += (index % l.sizes[g]) * l.strides[g];
            index /= l.sizes[g];
        }
    }
    offset
}

/// The wrapping sum of the inputs at `base` plus every combination of the
/// reduced groups' offsets.
fn reduced_sum<T: QuantElem>(l: &Layout, input: &[T], base: usize) -> i32 {
    // An odometer over the reduced groups, innermost fastest.
    let mut at = [0usize; super::params::MAX_RANK];
    let mut sum = 0i32;
    loop {
        let offset: usize = (0..l.groups)
            .filter(|&g| l.reduced[g])
            .map(|g| at[g] * l.strides[g])
            .sum();
        sum = sum.wrapping_add(input[base + offset].to_i32());
        let mut g = l.groups;
        loop {
            if g == 0 {
                return sum;
            }
            g -= 1;
            if !l.reduced[g] {
                continue;
            }
            at[g] += 1;
            if at[g] < l.sizes[g] {
                break;
            }
            at[g] = 0;
        }
    }
}
