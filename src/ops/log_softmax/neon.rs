//! Log-softmax, [`Method::FixedPoint`](crate::Method::FixedPoint), NEON: the
//! lane math of [`super::params`] on `int32x4_t`, 16 elements per block.
//! Kernels (`log_softmax_i8`, `log_softmax_u8`) are `#[inline(never)]` under
//! stable names for the asm checks.

use super::params::LogSoftmaxParams;
use crate::elem::{view, QuantElem, Slices};
use crate::fixedpoint::Lane;
use crate::simd::keep_first;
use crate::simd::neon::{map4, unswitch_on_shift, NeonElem, SumOfExps};
use crate::simd::tail::{map_blocks, read_blocks, BLOCK};
use core::arch::aarch64::*;

#[inline(always)]
fn log_softmax_rows<T: NeonElem + QuantElem>(
    p: &LogSoftmaxParams,
    input: &[T],
    output: &mut [T],
    row_len: usize,
) {
    unswitch_on_shift!(p, |p| log_softmax_rows_inner::<T>(
        p, input, output, row_len
    ))
}

#[inline(always)]
fn log_softmax_rows_inner<T: NeonElem + QuantElem>(
    p: &LogSoftmaxParams,
    input: &[T],
    output: &mut [T],
    row_len: usize,
) {
    let pad = T::from_i32(T::MIN);
    for (row_in, row_out) in input
        .chunks_exact(row_len)
        .zip(output.chunks_exact_mut(row_len))
    {
        let max = int32x4_t::splat(T::slice_max(row_in));
        let mut sum = SumOfExps::new();
        read_blocks::<BLOCK, _>(
            row_in,
            pad,
            #[inline(always)]
            |ptr, _, valid| {
                // SAFETY: read_blocks hands out pointers to 16 readable elements.
                let x = unsafe { T::load_block(ptr) };
                let mut e = map4(
                    x,
                    #[inline(always)]
                    |v| p.exp_term(v.sub(max)),
                );
                if valid < BLOCK {
                    e = keep_first(e, valid);
                }
                sum.add(e);
            },
        );
        let row = p.row_constants(sum.total());
        map_blocks::<BLOCK, _>(
            row_in,
            row_out,
            pad,
            #[inline(always)]
            |src, dst| {
                // SAFETY: map_blocks hands out pointers to 16 valid elements.
                unsafe {
                    let x = T::load_block(src);
                    T::store_block(
                        dst,
                        map4(
                            x,
                            #[inline(always)]
                            |v| p.output(v.sub(max), &row),
                        ),
                    );
                }
            },
        );
    }
}

macro_rules! log_softmax_kernels {
    ($($name:ident: $t:ty;)*) => {$(
        #[doc = concat!("Log-softmax rows of `", stringify!($t), "`.")]
        #[inline(never)]
        pub(crate) fn $name(p: &LogSoftmaxParams, input: &[$t], output: &mut [$t], row_len: usize) {
            log_softmax_rows::<$t>(p, input, output, row_len)
        }
    )*};
}

log_softmax_kernels! {
    log_softmax_i8: i8;
    log_softmax_u8: u8;
}

/// Log-softmax of every `row_len`-long row; lengths were checked by the caller.
pub(crate) fn log_softmax<T: QuantElem>(
    p: &LogSoftmaxParams,
    input: &[T],
    output: &mut [T],
    row_len: usize,
) {
    match view(input, output) {
        Slices::I8(i, o) => log_softmax_i8(p, i, o, row_len),
        Slices::U8(i, o) => log_softmax_u8(p, i, o, row_len),
        // Never constructed (`LogSoftmax::new` rejects int16); the generic loop is still correct.
        Slices::I16(i, o) => log_softmax_rows::<i16>(p, i, o, row_len),
    }
}
