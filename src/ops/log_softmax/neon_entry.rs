//! The NEON entry of log-softmax, [`Method::FixedPoint`](crate::Method::FixedPoint):
//! rows of exactly 64 bytes go four at a time to `rows64.rs`, everything
//! else (other row lengths, the last `rows % 4` rows) to the general kernel
//! in `neon.rs`. Here, above both, so that imports point down: `rows64.rs`
//! itself falls back on the general kernel.

use super::blocks::STEP;
use super::neon::{log_softmax_i8, log_softmax_u8};
use super::params::LogSoftmaxParams;
use super::rows64::{rows64_i8, rows64_u8};
use super::table::LogSoftmaxTables;
use crate::elem::{view, QuantElem, Slices};

/// Log-softmax of every `row_len`-long row; lengths were checked by the
/// caller. int16 never reaches here (`new()` rejects it); the scalar
/// reference would handle it.
pub(crate) fn log_softmax<T: QuantElem>(
    p: &LogSoftmaxParams,
    t: &LogSoftmaxTables,
    input: &[T],
    output: &mut [T],
    row_len: usize,
) {
    // Rows of exactly 64 bytes go four at a time through `rows64` (its own
    // functions, so that the general kernel's code is as it was), the
    // remaining `rows % 4` through the general kernel.
    match view(input, output) {
        Slices::I8(i, o) => {
            let (i, o) = (bytemuck::cast_slice(i), bytemuck::cast_slice_mut(o));
            // rows64 does whole groups of rows within both buffers.
            let at = if row_len == STEP {
                rows64_i8(p, t, i, o) * STEP
            } else {
                0
            };
            log_softmax_i8(p, t, &i[at..], &mut o[at..], row_len)
        }
        Slices::U8(i, o) => {
            let at = if row_len == STEP {
                rows64_u8(p, t, i, o) * STEP
            } else {
                0
            };
            log_softmax_u8(p, t, &i[at..], &mut o[at..], row_len)
        }
        Slices::I16(i, o) => super::scalar::log_softmax(p, i, o, row_len),
    }
}
