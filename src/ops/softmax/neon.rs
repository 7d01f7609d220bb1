//! Softmax, [`Method::FixedPoint`](crate::Method::FixedPoint), NEON, int16:
//! the lane math of [`SoftmaxParams`] on `int32x4_t`, 16 elements per block,
//! each row's exps cached between the sum and the output pass. The kernel
//! (`softmax_i16`) is `#[inline(never)]` under a stable name for the asm
//! checks. (8-bit rows take the exact tables of `lut_neon/fixed.rs`: there
//! every per-element value depends on one of 256 differences.)

use crate::elem::QuantElem;
use crate::fixedpoint::{FixedPoint, Lane};
use crate::ops::softmax_rows::SoftmaxParams;
use crate::simd::keep_first;
use crate::simd::neon::{
    load_block_i32, map4, store_block_i32, unswitch_on_shift, with_exp_cache, Block, NeonElem,
    SumOfExps,
};
use crate::simd::tail::{map_blocks, read_blocks, BLOCK};
use core::arch::aarch64::*;

/// `exp(diff)` for a block of differences from the row maximum, 0 where the
/// difference is below `diff_min`.
#[inline(always)]
fn softmax_exp_block(p: &SoftmaxParams, diff: Block) -> Block {
    map4(
        diff,
        #[inline(always)]
        |d| {
            let e = p.exp_of_diff(d).raw();
            <int32x4_t as Lane>::select(
                d.mask_if_less_than(int32x4_t::splat(p.diff_min)),
                int32x4_t::splat(0),
                e,
            )
        },
    )
}

#[inline(always)]
fn softmax_row<T: NeonElem + QuantElem>(
    p: &SoftmaxParams,
    row_in: &[T],
    row_out: &mut [T],
    cache: Option<&mut [i32]>,
) {
    let n = row_in.len();
    let max = T::slice_max(row_in);
    let pad = T::from_i32(T::MIN);
    let mut sum = SumOfExps::new();
    let cache_ptr = cache.map(|c| {
        debug_assert!(c.len() >= n.div_ceil(BLOCK) * BLOCK);
        c.as_mut_ptr()
    });
    read_blocks::<BLOCK, _>(
        row_in,
        pad,
        #[inline(always)]
        |ptr, start, valid| {
            // SAFETY: read_blocks hands out pointers to 16 readable elements.
            let diff = unsafe { T::load_diff_block(ptr, max) };
            let mut e = softmax_exp_block(p, diff);
            if valid < BLOCK {
                e = keep_first(e, valid);
            }
            // int16: the exact Q0.31 sum (accumulation_integer_bits == 0).
            sum.add_exact(e);
            if let Some(c) = cache_ptr {
                // SAFETY: the cache holds n rounded up to whole blocks of i32.
                unsafe { store_block_i32(c.add(start), e) };
            }
        },
    );
    debug_assert_eq!(p.accumulation_integer_bits, 0);
    let (scale, exponent) = p.reciprocal::<int32x4_t>(sum.total());
    // Two copies of the output loop: in each the compiler knows which side of
    // 31 the exponent is on, and drops the other case from the loop body.
    #[allow(clippy::if_same_then_else)]
    if exponent <= 31 {
        softmax_output_pass(p, row_in, row_out, cache_ptr, max, scale, exponent);
    } else {
        softmax_output_pass(p, row_in, row_out, cache_ptr, max, scale, exponent);
    }
}

/// Writes a row's outputs from the cached exps (or recomputed ones without a cache).
#[inline(always)]
fn softmax_output_pass<T: NeonElem + QuantElem>(
    p: &SoftmaxParams,
    row_in: &[T],
    row_out: &mut [T],
    cache_ptr: Option<*mut i32>,
    max: i32,
    scale: int32x4_t,
    exponent: u32,
) {
    let pad = T::from_i32(T::MIN);
    let mut start = 0;
    map_blocks::<BLOCK, _>(
        row_in,
        row_out,
        pad,
        #[inline(always)]
        |src, dst| {
            let e = match cache_ptr {
                // SAFETY: the cache holds the row rounded up to whole blocks of i32.
                Some(c) => unsafe { load_block_i32(c.add(start)) },
                // SAFETY: map_blocks hands out pointers to 16 valid elements.
                None => softmax_exp_block(p, unsafe { T::load_diff_block(src, max) }),
            };
            let y = map4(
                e,
                #[inline(always)]
                |v| p.output(FixedPoint::<int32x4_t, 0>::from_raw(v), scale, exponent),
            );
            // SAFETY: map_blocks hands out pointers to 16 valid elements.
            unsafe { T::store_block(dst, y) };
            start += BLOCK;
        },
    );
}

#[inline(always)]
fn softmax_rows<T: NeonElem + QuantElem>(
    p: &SoftmaxParams,
    input: &[T],
    output: &mut [T],
    row_len: usize,
) {
    unswitch_on_shift!(p, |p| softmax_rows_inner::<T>(p, input, output, row_len))
}

#[inline(always)]
fn softmax_rows_inner<T: NeonElem + QuantElem>(
    p: &SoftmaxParams,
    input: &[T],
    output: &mut [T],
    row_len: usize,
) {
    // A row is never longer than the buffer: size the scratch from the data
    // (the caller's checks make row_len <= input.len() for non-empty input).
    debug_assert!(input.is_empty() || row_len <= input.len());
    with_exp_cache(
        row_len.min(input.len()),
        #[inline(always)]
        |cache| {
            for (row_in, row_out) in input
                .chunks_exact(row_len)
                .zip(output.chunks_exact_mut(row_len))
            {
                softmax_row(p, row_in, row_out, cache.as_deref_mut());
            }
        },
    )
}

/// Softmax rows of `i16`; lengths were checked by the caller.
#[inline(never)]
pub(crate) fn softmax_i16(p: &SoftmaxParams, input: &[i16], output: &mut [i16], row_len: usize) {
    softmax_rows::<i16>(p, input, output, row_len)
}
