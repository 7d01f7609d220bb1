//! The NEON max and sum passes of 8-bit softmax rows, shared by the softmax
//! kernels (`ops/softmax/lut_neon/`, which add the output passes) and the
//! thresholded softmax (which needs a row's maximum and sum, not its
//! outputs):
//!
//! * `blocks`: 64-byte block walking, lane masks, the row maximum (and
//!   minimum);
//! * `sums`: `Method::Lut`'s exp tables in registers or chunks, and the
//!   exact sum of a row's `t[max - x]`;
//! * `exact_sums`: the sum of the reference's Q12.19 terms by byte planes,
//!   for the exact `Method::FixedPoint` kernel.

pub(crate) mod blocks;
pub(crate) mod exact_sums;
pub(crate) mod sums;

use self::blocks::{row_max, row_max_min, Masks, STEP};
use self::sums::{full_sum, load_tables, row_sum, FullTables};
use super::lut::SoftmaxLut;

/// The maximum (as the raw byte) and the exact sum of `t[max - x]` of each
/// `row_len`-long row, as the softmax kernel (`lut_neon::softmax`) computes them, handed to `f(row, max,
/// sum)` in row order: for the thresholded softmax, which needs them and
/// not the outputs. The caller checked `row_len >= 1`.
#[inline(always)]
pub(crate) fn rows_max_sum<const SIGNED: bool>(
    p: &SoftmaxLut,
    input: &[u8],
    row_len: usize,
    mut f: impl FnMut(usize, u8, u64),
) {
    let masks = Masks::new(row_len);
    for (r, row) in input.chunks_exact(row_len).enumerate() {
        let (max, sum) = if p.split {
            let max = row_max::<SIGNED>(row);
            (max, row_sum(&load_tables(p), row, max, &masks))
        } else if row_len >= STEP {
            let (max, min) = row_max_min::<SIGNED>(row);
            let d_chunks = max.wrapping_sub(min) as usize / 64 + 1;
            let lo = d_chunks.min(p.low_chunks);
            let hi = lo.min(p.high_chunks);
            (max, full_sum(p, hi, lo, row, max, &masks))
        } else {
            let max = row_max::<SIGNED>(row);
            (max, row_sum(&FullTables::<4, 4>(p), row, max, &masks))
        };
        f(r, max, sum);
    }
}
