//! [`Method::DequantF32`](crate::Method::DequantF32): dequantize, compute in
//! `f32`, requantize.
//!
//! ```text
//! softmax, per row:
//!   max = max(q)                       on the integers (dequantizing is monotone)
//!   e   = exp((q - max) * c)           c = beta * input_scale, rounded to f32
//!   sum = sum of e                     four lane accumulators, one fixed order
//!   r   = (1 / output_scale) / sum     one f32 division per row
//!   out = round_half_away(e * r) + output_zero_point, saturated to the type
//! log-softmax, per row (beta = 1, output scale 16/256):
//!   max, sum as above;  lse = ln(sum)  (f32, computed in f64, rounded once)
//!   out = round_half_away((q - max) * (c / output_scale) - lse / output_scale)
//!         + output_zero_point, saturated        one fused multiply-add
//! logistic, tanh:
//!   x   = (q - input_zero_point) * input_scale   (as TFLite dequantizes)
//!   out = round_half_away(f(x) * (1 / output_scale)) + output_zero_point, saturated
//! ```
//! Rounding is TFLite's quantization rounding, half away from zero (NEON
//! `fcvtas`; the scalar reference [`round_half_away`] is `core`-only), then
//! the zero point, then saturation to the element type.
//!
//! The `f32` math is [`crate::f32`]'s, not a copy: `exp` is
//! [`exp_kernel`](crate::f32::exp_kernel) (range reduction `x = n ln2 + r`
//! with two Cody-Waite constants, a degree-6 polynomial on `|r| <= ln2/2`,
//! scaling by `2^n` in the exponent bits), at most **1 ulp** from the exact
//! value over `[-87.3, 0]` (measured 0.98 ulp over every 257th `f32` there, asserted by
//! `exp_kernel_ulp_bound` below and by `tests/f32_kernels.rs` for the same
//! algorithm); logistic and tanh are `sigmoid_lanes` / `tanh_lanes` (3 ulp).
//!
//! The per-row reciprocal is one correctly rounded `f32` division (scalar
//! code shared by both backends): it runs once per row, so a Newton step
//! would save nothing measurable (the division is under 0.1 instructions per
//! element at rows of 384) and would add up to 1 ulp of error.
//!
//! # Accuracy
//!
//! Against exact (`f64`) math, the correctly rounded result (half away from
//! zero, clamped): at most 1 LSB for every op and type, asserted by
//! `tests/dequant_f32.rs` over every int8/uint8 input and every int16
//! logistic/tanh input for grids of scales and zero points, and over softmax
//! and log-softmax rows of lengths 1 to 5000. A result differs from the
//! correctly rounded one only where the exact value lies within the `f32`
//! error (a few ulp, relative 1e-6) of a rounding boundary.
//!
//! # Backends
//!
//! Scalar and NEON give the same bytes: the same lane-generic code (fused
//! multiply-adds emulated exactly in the scalar lane), row sums in one fixed
//! order (four lane accumulators: four scalars, or one `float32x4_t`), and
//! the same requantization (`fcvtas` saturates and maps NaN to 0, as
//! [`round_half_away`] does).
//!
//! This module holds what the three ops share (loads, requantizing stores,
//! the sum of exps); each op's row code and prepared constants are its
//! family's `f32.rs` (`softmax/f32.rs`, `log_softmax/f32.rs`,
//! `activation/f32.rs`), the NEON lanes [`neon`].
//!
//! `run()` never allocates: each row's exps are cached in a stack buffer of
//! [`EXP_CACHE`] `f32`; the part of a longer row beyond it is recomputed in
//! the output pass.

#[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
pub(crate) mod neon;

use crate::elem::QuantElem;
use crate::f32::{exp_kernel, tree, Lane, BLOCK};
use crate::simd::tail::read_blocks;
use crate::simd::{keep_first, Vector};

/// Exps cached per row (`f32`, 8 KiB of stack): rows up to this length compute
/// each exp once. A multiple of [`BLOCK`].
pub(crate) const EXP_CACHE: usize = 2048;
const _: () = assert!(EXP_CACHE.is_multiple_of(BLOCK));

/// `c` as an `f32` multiplier, capped at `f32::MAX` so that `0 * c` stays 0
/// (a larger real multiplier saturates every nonzero difference anyway).
pub(crate) fn f32_multiplier(c: f64) -> f32 {
    let c = c as f32;
    if c > f32::MAX {
        f32::MAX
    } else {
        c
    }
}

/// TFLite's quantization rounding: to nearest, ties away from zero; saturated
/// to `i32`, NaN to 0. The reference for NEON's `fcvtas`.
#[inline(always)]
pub(crate) fn round_half_away(y: f32) -> i32 {
    // In f64, y + 1/2 is exact below 2^52 and rounds back to y above (where
    // every f32 is an integer already), so the truncation toward zero of
    // y +- 1/2 is the rounding; `as` also saturates and maps NaN to 0.
    let y = y as f64;
    (if y < 0.0 { y - 0.5 } else { y + 0.5 }) as i32
}

/// How one backend moves 16 quantized elements in and out of `f32` lanes:
/// `N` lanes of `L::WIDTH` elements (16 scalars, or four `float32x4_t`).
pub(crate) trait QuantLanes<T: QuantElem, const N: usize>:
    Lane + Vector<Elem = f32>
{
    /// Loads 16 elements and returns `q - offset`, exact, as `f32`.
    ///
    /// # Safety
    /// `p` must be valid for reading 16 elements.
    unsafe fn load_offset(p: *const T, offset: i32) -> [Self; N];
    /// Stores `saturate(round_half_away(v) + zero_point)` for 16 values.
    ///
    /// # Safety
    /// `p` must be valid for writing 16 elements.
    unsafe fn store_requantized(p: *mut T, v: [Self; N], zero_point: i32);
    /// The largest element of a non-empty row, widened.
    fn row_max(row: &[T]) -> i32;
}

impl<T: QuantElem> QuantLanes<T, BLOCK> for f32 {
    #[inline(always)]
    unsafe fn load_offset(p: *const T, offset: i32) -> [f32; BLOCK] {
        let mut v = [0.0; BLOCK];
        for (k, x) in v.iter_mut().enumerate() {
            // SAFETY: the caller guarantees 16 readable elements; k < 16.
            // |q - offset| <= 65535 is exact in f32.
            *x = (unsafe { p.add(k).read() }.to_i32() - offset) as f32;
        }
        v
    }
    #[inline(always)]
    unsafe fn store_requantized(p: *mut T, v: [f32; BLOCK], zero_point: i32) {
        for (k, &x) in v.iter().enumerate() {
            let q = T::saturate(round_half_away(x).saturating_add(zero_point));
            // SAFETY: the caller guarantees 16 writable elements; k < 16.
            unsafe { p.add(k).write(q) };
        }
    }
    #[inline(always)]
    fn row_max(row: &[T]) -> i32 {
        row.iter().fold(T::MIN, |m, x| m.max(x.to_i32()))
    }
}

/// `exp((q - max) * c)` for a block loaded at `src`.
///
/// # Safety
/// `src` must be valid for reading 16 elements.
#[inline(always)]
pub(crate) unsafe fn exp_block<L: QuantLanes<T, N>, T: QuantElem, const N: usize>(
    src: *const T,
    max: i32,
    c: L,
) -> [L; N] {
    // SAFETY: forwarded from the caller.
    let mut v = unsafe { L::load_offset(src, max) };
    for x in v.iter_mut() {
        *x = exp_kernel(x.mul(c));
    }
    v
}

/// Adds a block of exps into the accumulators. A block is four groups of four
/// lanes (group `j` holds elements `4j..4j + 4`, one NEON vector); they are
/// summed lane by lane as `(g0 + g2) + (g1 + g3)` and the result added into
/// four lane accumulators (`acc[..N / 4]`; the others stay 0): the same
/// order in every backend, with one vector accumulator on NEON (fewer live
/// registers in the exp loop).
#[inline(always)]
fn accumulate<L: Lane, const N: usize>(acc: &mut [L; N], e: &[L; N]) {
    let mut v = *e;
    let mut n = N;
    while n > N / 4 {
        n /= 2;
        for k in 0..n {
            v[k] = v[k].add(v[k + n]);
        }
    }
    for (a, &x) in acc.iter_mut().zip(&v).take(N / 4) {
        *a = a.add(x);
    }
}

/// The sum of exps of a row (see [`accumulate`]), caching the first
/// [`EXP_CACHE`] of them in `cache` when given.
#[inline(always)]
pub(crate) fn sum_of_exps<L: QuantLanes<T, N>, T: QuantElem, const N: usize>(
    x: &[T],
    max: i32,
    c: L,
    mut cache: Option<&mut [f32; EXP_CACHE]>,
) -> f32 {
    let pad = T::from_i32(T::MIN);
    let mut acc = [L::splat(0.0); N];
    let split = x.len().min(EXP_CACHE);
    // EXP_CACHE is a multiple of 16, so the blocks after the split keep their
    // lane-to-accumulator assignment.
    read_blocks::<BLOCK, T>(&x[..split], pad, |src, start, valid| {
        // SAFETY: read_blocks hands out 16 readable elements.
        let mut e = unsafe { exp_block::<L, T, N>(src, max, c) };
        if valid < BLOCK {
            e = keep_first(e, valid);
        }
        accumulate(&mut acc, &e);
        if let Some(cache) = cache.as_deref_mut() {
            for (j, v) in e.iter().enumerate() {
                // SAFETY: start + 16 <= split rounded up to 16 <= EXP_CACHE.
                unsafe { v.store(cache.as_mut_ptr().add(start + j * L::WIDTH)) };
            }
        }
    });
    read_blocks::<BLOCK, T>(&x[split..], pad, |src, _, valid| {
        // SAFETY: read_blocks hands out 16 readable elements.
        let mut e = unsafe { exp_block::<L, T, N>(src, max, c) };
        if valid < BLOCK {
            e = keep_first(e, valid);
        }
        accumulate(&mut acc, &e);
    });
    tree(acc, L::add).reduce_add()
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;

    /// ulp of the f32 nearest `v` (normal results only).
    fn ulp_of(v: f64) -> f64 {
        let b = (v.abs() as f32).to_bits() & 0x7f80_0000;
        f32::from_bits(b) as f64 * f64::powi(2.0, -23)
    }

    /// The exp the kernels use, over `[-87.3, 0]`: every 257th `f32` (about
    /// 4.4 million values, all exponents and mantissa bit patterns): at most 1 ulp.
    #[test]
    #[cfg_attr(
        miri,
        ignore = "4.4 million exps: too slow under Miri; tests/unsafe_paths.rs runs the kernels"
    )]
    fn exp_kernel_ulp_bound() {
        let (lo, hi) = ((-0.0f32).to_bits(), (-87.3f32).to_bits());
        let mut worst = (0.0f64, 0.0f32);
        let mut xs = std::vec::Vec::new();
        let mut bits = lo;
        while bits <= hi {
            let x = f32::from_bits(bits);
            let got = exp_kernel::<f32>(x) as f64;
            let exact = std::primitive::f64::exp(x as f64);
            let err = (got - exact).abs() / ulp_of(exact);
            if err > worst.0 {
                worst = (err, x);
            }
            xs.push(x);
            bits += if bits < hi - 257 { 257 } else { 1 };
        }
        std::println!(
            "exp_kernel on [-87.3, 0]: max {:.3} ulp at {:e}",
            worst.0,
            worst.1
        );
        assert!(worst.0 <= 1.0, "{:.3} ulp at {:e}", worst.0, worst.1);
        // The NEON lanes give the scalar bits.
        #[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
        for chunk in xs.chunks_exact(4) {
            use core::arch::aarch64::float32x4_t;
            let mut out = [0.0f32; 4];
            // SAFETY: `chunk` and `out` hold 4 f32 each.
            unsafe { exp_kernel(float32x4_t::load(chunk.as_ptr())).store(out.as_mut_ptr()) };
            for (&x, y) in chunk.iter().zip(out) {
                assert_eq!(y.to_bits(), exp_kernel::<f32>(x).to_bits(), "{x:e}");
            }
        }
        #[cfg(not(all(target_arch = "aarch64", target_feature = "neon")))]
        drop(xs);
    }

    #[test]
    fn round_half_away_is_fcvtas() {
        let cases = [
            (0.5f32, 1),
            (-0.5, -1),
            (1.5, 2),
            (2.5, 3),
            (-2.5, -3),
            (0.49999997, 0),
            (-0.49999997, 0),
            (8388609.0, 8388609),
            (3e9, i32::MAX),
            (-3e9, i32::MIN),
            (f32::INFINITY, i32::MAX),
            (f32::NEG_INFINITY, i32::MIN),
            (f32::NAN, 0),
            (-0.0, 0),
        ];
        for (y, want) in cases {
            assert_eq!(round_half_away(y), want, "{y:e}");
        }
    }
}
