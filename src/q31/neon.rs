//! Q31 softmax, logistic and tanh on NEON: the lane math of
//! [`crate::fixedpoint`] and [`super::params`] on `int32x4_t`, 16 values per
//! block. Kernels are `#[inline(never)]` under stable names for the asm checks.

use super::params::Q31Row;
use crate::fixedpoint::{get_reciprocal_splat, FixedPoint, Lane};
use crate::simd::keep_first;
use crate::simd::neon::{load_block_i32, map4, store_block_i32, with_exp_cache, Block};
use crate::simd::tail::{map_blocks, read_blocks, BLOCK};
use core::arch::aarch64::*;

/// Q31 softmax: input Q(I).(31-I), output Q0.31, per `row_len`-long row.
#[inline(never)]
pub(crate) fn softmax_q31<const I: u32>(input: &[i32], output: &mut [i32], row_len: usize) {
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
                let (min, max) = i32_min_max(row_in);
                let row = Q31Row::new(min, max);
                let cache = cache.as_deref_mut();
                // Rows whose differences all fit the format (the usual case) take
                // the one-exp loop.
                match row.threshold {
                    None => softmax_row(
                        row_in,
                        row_out,
                        cache,
                        #[inline(always)]
                        |v| row.exp_in_range::<int32x4_t, I>(v),
                    ),
                    Some(t) => softmax_row(
                        row_in,
                        row_out,
                        cache,
                        #[inline(always)]
                        |v| row.exp_wide::<int32x4_t, I>(v, t),
                    ),
                }
            }
        },
    )
}

/// Minimum and maximum of a slice of `i32`, 16 per iteration.
#[inline(always)]
fn i32_min_max(x: &[i32]) -> (i32, i32) {
    let whole = x.len() - x.len() % BLOCK;
    // SAFETY: neon is a compile-time target feature on aarch64.
    let (mut lo, mut hi) = unsafe { (vdupq_n_s32(i32::MAX), vdupq_n_s32(i32::MIN)) };
    let mut i = 0;
    while i < whole {
        // SAFETY: i + 16 <= whole <= x.len().
        unsafe {
            let b = load_block_i32(x.as_ptr().add(i));
            lo = vminq_s32(lo, vminq_s32(vminq_s32(b[0], b[1]), vminq_s32(b[2], b[3])));
            hi = vmaxq_s32(hi, vmaxq_s32(vmaxq_s32(b[0], b[1]), vmaxq_s32(b[2], b[3])));
        }
        i += BLOCK;
    }
    // SAFETY: neon is a compile-time target feature on aarch64.
    let (lo, hi) = unsafe { (vminvq_s32(lo), vmaxvq_s32(hi)) };
    x[whole..]
        .iter()
        .fold((lo, hi), |(l, h), &v| (l.min(v), h.max(v)))
}

#[inline(always)]
fn softmax_row(
    row_in: &[i32],
    row_out: &mut [i32],
    cache: Option<&mut [i32]>,
    exp: impl Fn(int32x4_t) -> int32x4_t,
) {
    #[inline(always)]
    fn exp_block_with(exp: &impl Fn(int32x4_t) -> int32x4_t, x: Block) -> Block {
        // The explicit, always-inlined closure keeps `exp` inlined in the
        // loop (passing `exp` itself measured 0.4 instructions/element more).
        #[allow(clippy::redundant_closure)]
        map4(
            x,
            #[inline(always)]
            |v| exp(v),
        )
    }
    let exp_block = move |x: Block| exp_block_with(&exp, x);
    // Exact Q0.31 sum in u64 lanes (each exp is below 2^31).
    // SAFETY: neon is a compile-time target feature on aarch64.
    let mut wide = unsafe { vdupq_n_u64(0) };
    let cache_ptr = cache.map(|c| c.as_mut_ptr());
    read_blocks::<BLOCK, _>(
        row_in,
        i32::MIN,
        #[inline(always)]
        |ptr, start, valid| {
            // SAFETY: read_blocks hands out pointers to 16 readable elements.
            let mut e = exp_block(unsafe { load_block_i32(ptr) });
            if valid < BLOCK {
                e = keep_first(e, valid);
            }
            // SAFETY: neon is a compile-time target feature on aarch64.
            unsafe {
                for v in e {
                    wide = vpadalq_u32(wide, vreinterpretq_u32_s32(v));
                }
            }
            if let Some(c) = cache_ptr {
                // SAFETY: the cache holds the row rounded up to whole blocks of i32.
                unsafe { store_block_i32(c.add(start), e) };
            }
        },
    );
    // SAFETY: neon is a compile-time target feature on aarch64.
    let total = unsafe { vaddvq_u64(wide) } as i64;
    let (scale, num_bits_over_unit) = get_reciprocal_splat::<int32x4_t>(total, 0);
    // One loop per shift direction; exp * scale >= 0, so the right shift needs
    // no sign fix-up (the same value as the scalar kernel's rounding divide).
    match num_bits_over_unit {
        n if n <= 0 => output_pass(
            row_in,
            row_out,
            cache_ptr,
            &exp_block,
            #[inline(always)]
            |e| {
                e.saturating_rounding_doubling_high_mul(scale)
                    .saturating_rounding_multiply_by_pot(-n)
            },
        ),
        n if n <= 31 => output_pass(
            row_in,
            row_out,
            cache_ptr,
            &exp_block,
            #[inline(always)]
            |e| {
                e.saturating_rounding_doubling_high_mul(scale)
                    .rounding_divide_by_pot_non_negative(n as u32)
            },
        ),
        _ => output_pass(
            row_in,
            row_out,
            cache_ptr,
            &exp_block,
            #[inline(always)]
            |_| int32x4_t::splat(0),
        ),
    }
}

/// Writes `f(exp)` for the row, exps from the cache (or recomputed without one).
#[inline(always)]
fn output_pass(
    row_in: &[i32],
    row_out: &mut [i32],
    cache_ptr: Option<*mut i32>,
    exp_block: &impl Fn(Block) -> Block,
    f: impl Fn(int32x4_t) -> int32x4_t,
) {
    let mut start = 0;
    map_blocks::<BLOCK, _>(
        row_in,
        row_out,
        i32::MIN,
        #[inline(always)]
        |src, dst| {
            let e = match cache_ptr {
                // SAFETY: the cache holds the row rounded up to whole blocks of i32.
                Some(c) => unsafe { load_block_i32(c.add(start)) },
                // SAFETY: map_blocks hands out pointers to 16 valid elements.
                None => exp_block(unsafe { load_block_i32(src) }),
            };
            // SAFETY: map_blocks hands out pointers to 16 valid elements.
            unsafe {
                store_block_i32(
                    dst,
                    #[allow(clippy::redundant_closure)]
                    map4(
                        e,
                        #[inline(always)]
                        |v| f(v),
                    ),
                )
            };
            start += BLOCK;
        },
    );
}

/// Q31 logistic: input Q(I).(31-I), output Q0.31.
#[inline(never)]
pub(crate) fn logistic_q31<const I: u32>(input: &[i32], output: &mut [i32]) {
    map_blocks::<BLOCK, _>(
        input,
        output,
        0,
        #[inline(always)]
        |src, dst| {
            // SAFETY: map_blocks hands out pointers to 16 valid elements.
            unsafe {
                let x = load_block_i32(src);
                store_block_i32(
                    dst,
                    map4(
                        x,
                        #[inline(always)]
                        |v| {
                            crate::fixedpoint::logistic(FixedPoint::<int32x4_t, I>::from_raw(v))
                                .raw()
                        },
                    ),
                );
            }
        },
    );
}

/// Q31 tanh: input Q(I).(31-I), output Q0.31.
#[inline(never)]
pub(crate) fn tanh_q31<const I: u32, const I_PLUS_1: u32>(input: &[i32], output: &mut [i32]) {
    map_blocks::<BLOCK, _>(
        input,
        output,
        0,
        #[inline(always)]
        |src, dst| {
            // SAFETY: map_blocks hands out pointers to 16 valid elements.
            unsafe {
                let x = load_block_i32(src);
                store_block_i32(
                    dst,
                    map4(
                        x,
                        #[inline(always)]
                        |v| {
                            crate::fixedpoint::tanh::<int32x4_t, I, I_PLUS_1>(FixedPoint::from_raw(
                                v,
                            ))
                            .raw()
                        },
                    ),
                );
            }
        },
    );
}
