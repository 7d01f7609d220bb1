//! int8/uint8 softmax, `Method::Lut`, scalar backend: TFLite's aarch64
//! table kernel element by element (the method and its tables are in
//! `ops/softmax_rows/lut.rs`; the NEON side is `lut_neon/`).

use crate::elem::QuantElem;
use crate::error::Error;
use crate::ops::softmax_rows::SoftmaxLut;

/// Scalar reference: TFLite's kernel element by element on every row.
/// Lengths were checked by the caller.
pub(crate) fn softmax_scalar<T: QuantElem>(
    p: &SoftmaxLut,
    input: &[T],
    output: &mut [T],
    row_len: usize,
) {
    for (row_in, row_out) in input
        .chunks_exact(row_len)
        .zip(output.chunks_exact_mut(row_len))
    {
        let max = row_in.iter().fold(i32::MIN, |m, x| m.max(x.to_i32()));
        let term = |x: &T| p.exp[(max - x.to_i32()) as usize];
        let sum: u64 = row_in.iter().map(|x| term(x) as u64).sum();
        let (multiplier, shift) = p.row_multiplier(sum);
        for (x, y) in row_in.iter().zip(row_out.iter_mut()) {
            *y = T::saturate(p.output(term(x), multiplier, shift));
        }
    }
}

/// The error for a non-8-bit type reaching the NEON table kernel (`new()`
/// prepares `Method::Lut` tables for int8 and uint8 only).
#[cfg_attr(
    not(all(target_arch = "aarch64", target_feature = "neon")),
    allow(dead_code)
)]
pub(crate) fn not_8bit<T: QuantElem>() -> Error {
    Error::Unsupported {
        op: "softmax",
        dtype: T::NAME,
        reason: "Method::Lut softmax is for int8 and uint8",
    }
}
