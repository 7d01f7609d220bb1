//! [`Method::DequantF32`](super::Method::DequantF32): dequantize, compute in
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
//! `run()` never allocates: each row's exps are cached in a stack buffer of
//! [`EXP_CACHE`] `f32`; the part of a longer row beyond it is recomputed in
//! the output pass.

use super::{Activation, QuantElem};
use crate::arch::Backend;
use crate::error::{Error, Result};
use crate::f32::{exp_kernel, ln_f32, sigmoid_lanes, tanh_lanes, tree, Lane, BLOCK};
use crate::quant::QuantParams;

/// Exps cached per row (`f32`, 8 KiB of stack): rows up to this length compute
/// each exp once. A multiple of [`BLOCK`].
pub(crate) const EXP_CACHE: usize = 2048;
const _: () = assert!(EXP_CACHE % BLOCK == 0);

/// `c` as an `f32` multiplier, capped at `f32::MAX` so that `0 * c` stays 0
/// (a larger real multiplier saturates every nonzero difference anyway).
fn f32_multiplier(c: f64) -> f32 {
    let c = c as f32;
    if c > f32::MAX {
        f32::MAX
    } else {
        c
    }
}

/// Prepared `Method::DequantF32` softmax.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct SoftmaxF32 {
    /// `beta * input_scale` (real units per input step), rounded once to `f32`.
    pub(crate) input_multiplier: f32,
    /// `1 / output_scale` in `f32`.
    pub(crate) inv_output_scale: f32,
    /// Output zero point.
    pub(crate) output_zero_point: i32,
}

impl SoftmaxF32 {
    /// From validated quantization (`beta` finite and > 0).
    pub(crate) fn new(input: QuantParams, beta: f32, output: QuantParams) -> Self {
        SoftmaxF32 {
            input_multiplier: f32_multiplier(beta as f64 * input.scale as f64),
            inv_output_scale: 1.0 / output.scale,
            output_zero_point: output.zero_point,
        }
    }
}

/// Prepared `Method::DequantF32` log-softmax.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct LogSoftmaxF32 {
    /// `input_scale` in `f32` (the exps' multiplier, beta = 1).
    pub(crate) input_multiplier: f32,
    /// `input_scale / output_scale`, rounded once to `f32`.
    pub(crate) output_multiplier: f32,
    /// `1 / output_scale` in `f32` (16: TFLite fixes the scale at 16/256).
    pub(crate) inv_output_scale: f32,
    /// Output zero point.
    pub(crate) output_zero_point: i32,
}

impl LogSoftmaxF32 {
    /// From validated quantization.
    pub(crate) fn new(input: QuantParams, output: QuantParams) -> Self {
        LogSoftmaxF32 {
            input_multiplier: f32_multiplier(input.scale as f64),
            output_multiplier: f32_multiplier(input.scale as f64 / output.scale as f64),
            inv_output_scale: 1.0 / output.scale,
            output_zero_point: output.zero_point,
        }
    }
}

/// Prepared `Method::DequantF32` logistic or tanh.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct ActivationF32 {
    /// Which function.
    pub(crate) activation: Activation,
    /// Input scale.
    pub(crate) input_scale: f32,
    /// Input zero point.
    pub(crate) input_zero_point: i32,
    /// `1 / output_scale` in `f32`.
    pub(crate) inv_output_scale: f32,
    /// Output zero point.
    pub(crate) output_zero_point: i32,
}

impl ActivationF32 {
    /// From validated quantization.
    pub(crate) fn new(activation: Activation, input: QuantParams, output: QuantParams) -> Self {
        ActivationF32 {
            activation,
            input_scale: input.scale,
            input_zero_point: input.zero_point,
            inv_output_scale: 1.0 / output.scale,
            output_zero_point: output.zero_point,
        }
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
pub(crate) trait QuantLanes<T: QuantElem, const N: usize>: Lane {
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

// ---------------------------------------------------------------------------
// Block walking.

/// Calls `f(src, start, valid)` for each 16-element block of `x`: whole blocks
/// in place (`valid == 16`), then the last partial block from a stack copy
/// padded with `pad` (only its first `valid` lanes are the row's).
#[inline(always)]
fn read_blocks<T: Copy>(x: &[T], pad: T, mut f: impl FnMut(*const T, usize, usize)) {
    let n = x.len();
    let whole = n - n % BLOCK;
    let mut start = 0;
    while start < whole {
        // SAFETY: start + 16 <= whole <= n: the block is inside `x`.
        f(unsafe { x.as_ptr().add(start) }, start, BLOCK);
        start += BLOCK;
    }
    if whole < n {
        let mut buf = [pad; BLOCK];
        buf[..n - whole].copy_from_slice(&x[whole..]);
        f(buf.as_ptr(), whole, n - whole);
    }
}

/// Calls `f(src, dst, start)` for each 16-element block of `x` / `y` (same
/// length, checked by the caller); the last partial block goes through stack
/// buffers (input padded with `pad`) and only `y`'s own elements are written.
#[inline(always)]
fn map_blocks<T: Copy>(x: &[T], y: &mut [T], pad: T, mut f: impl FnMut(*const T, *mut T, usize)) {
    debug_assert_eq!(x.len(), y.len());
    let n = x.len().min(y.len());
    let whole = n - n % BLOCK;
    let mut start = 0;
    while start < whole {
        // SAFETY: start + 16 <= whole <= n, the length of both slices.
        let (s, d) = unsafe { (x.as_ptr().add(start), y.as_mut_ptr().add(start)) };
        f(s, d, start);
        start += BLOCK;
    }
    if whole < n {
        let mut src = [pad; BLOCK];
        let mut dst = [pad; BLOCK];
        src[..n - whole].copy_from_slice(&x[whole..n]);
        f(src.as_ptr(), dst.as_mut_ptr(), whole);
        y[whole..n].copy_from_slice(&dst[..n - whole]);
    }
}

/// Sets the lanes of a block at index `>= valid` to `+0` (tail padding must
/// not count in a sum).
#[inline(always)]
fn keep_first<L: Lane, const N: usize>(mut v: [L; N], valid: usize) -> [L; N] {
    let mut buf = [0.0f32; BLOCK];
    for (j, x) in v.iter().enumerate() {
        // SAFETY: j * WIDTH + WIDTH <= N * WIDTH = 16 = buf.len().
        unsafe { x.store(buf.as_mut_ptr().add(j * L::WIDTH)) };
    }
    for x in buf.iter_mut().skip(valid) {
        *x = 0.0;
    }
    for (j, x) in v.iter_mut().enumerate() {
        // SAFETY: as above.
        *x = unsafe { L::load(buf.as_ptr().add(j * L::WIDTH)) };
    }
    v
}

/// `exp((q - max) * c)` for a block loaded at `src`.
///
/// # Safety
/// `src` must be valid for reading 16 elements.
#[inline(always)]
unsafe fn exp_block<L: QuantLanes<T, N>, T: QuantElem, const N: usize>(
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
fn sum_of_exps<L: QuantLanes<T, N>, T: QuantElem, const N: usize>(
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
    read_blocks(&x[..split], pad, |src, start, valid| {
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
    read_blocks(&x[split..], pad, |src, _, valid| {
        // SAFETY: read_blocks hands out 16 readable elements.
        let mut e = unsafe { exp_block::<L, T, N>(src, max, c) };
        if valid < BLOCK {
            e = keep_first(e, valid);
        }
        accumulate(&mut acc, &e);
    });
    tree(acc, L::add).reduce_add()
}

// ---------------------------------------------------------------------------
// The row kernels, generic over the backend's lanes.

/// Softmax of every `row_len`-long row (lengths checked by the caller).
#[inline(always)]
pub(crate) fn softmax_rows<L: QuantLanes<T, N>, T: QuantElem, const N: usize>(
    k: &SoftmaxF32,
    input: &[T],
    output: &mut [T],
    row_len: usize,
) {
    if row_len == 0 {
        return; // checked by the caller; lets the compiler drop a panic path
    }
    let mut cache = [0.0f32; EXP_CACHE];
    let c = L::splat(k.input_multiplier);
    let pad = T::from_i32(T::MIN);
    for (x, y) in input
        .chunks_exact(row_len)
        .zip(output.chunks_exact_mut(row_len))
    {
        let max = L::row_max(x);
        // >= 1: the maximum contributes exp(0) = 1.
        let sum = sum_of_exps::<L, T, N>(x, max, c, Some(&mut cache));
        let r = L::splat(k.inv_output_scale / sum);
        let split = x.len().min(EXP_CACHE);
        let (x_cached, x_rest) = x.split_at(split);
        let (y_cached, y_rest) = y.split_at_mut(split);
        map_blocks(x_cached, y_cached, pad, |_, dst, start| {
            let mut e = [L::splat(0.0); N];
            for (j, v) in e.iter_mut().enumerate() {
                // SAFETY: sum_of_exps stored this block: start + 16 <= EXP_CACHE.
                *v = unsafe { L::load(cache.as_ptr().add(start + j * L::WIDTH)) }.mul(r);
            }
            // SAFETY: map_blocks hands out 16 writable elements.
            unsafe { L::store_requantized(dst, e, k.output_zero_point) };
        });
        map_blocks(x_rest, y_rest, pad, |src, dst, _| {
            // SAFETY: map_blocks hands out 16 readable elements.
            let mut e = unsafe { exp_block::<L, T, N>(src, max, c) };
            for v in e.iter_mut() {
                *v = v.mul(r);
            }
            // SAFETY: map_blocks hands out 16 writable elements.
            unsafe { L::store_requantized(dst, e, k.output_zero_point) };
        });
    }
}

/// Log-softmax of every `row_len`-long row (lengths checked by the caller).
#[inline(always)]
pub(crate) fn log_softmax_rows<L: QuantLanes<T, N>, T: QuantElem, const N: usize>(
    k: &LogSoftmaxF32,
    input: &[T],
    output: &mut [T],
    row_len: usize,
) {
    if row_len == 0 {
        return; // checked by the caller; lets the compiler drop a panic path
    }
    let c = L::splat(k.input_multiplier);
    let m = L::splat(k.output_multiplier);
    let pad = T::from_i32(T::MIN);
    for (x, y) in input
        .chunks_exact(row_len)
        .zip(output.chunks_exact_mut(row_len))
    {
        let max = L::row_max(x);
        let sum = sum_of_exps::<L, T, N>(x, max, c, None);
        // ln(sum) >= 0 in output steps (exact product for the power-of-two scale).
        let b = L::splat(-(ln_f32(sum) * k.inv_output_scale));
        map_blocks(x, y, pad, |src, dst, _| {
            // SAFETY: map_blocks hands out 16 readable elements.
            let mut v = unsafe { L::load_offset(src, max) };
            for d in v.iter_mut() {
                *d = d.fma(m, b);
            }
            // SAFETY: map_blocks hands out 16 writable elements.
            unsafe { L::store_requantized(dst, v, k.output_zero_point) };
        });
    }
}

/// Logistic (`TANH == false`) or tanh, element-wise (lengths checked by the caller).
#[inline(always)]
pub(crate) fn activation_map<
    L: QuantLanes<T, N>,
    T: QuantElem,
    const N: usize,
    const TANH: bool,
>(
    k: &ActivationF32,
    input: &[T],
    output: &mut [T],
) {
    debug_assert_eq!(TANH, k.activation == Activation::Tanh);
    let s = L::splat(k.input_scale);
    let inv = L::splat(k.inv_output_scale);
    let pad = T::from_i32(k.input_zero_point);
    map_blocks(input, output, pad, |src, dst, _| {
        // SAFETY: map_blocks hands out 16 readable elements.
        let mut v = unsafe { L::load_offset(src, k.input_zero_point) };
        for x in v.iter_mut() {
            let real = x.mul(s);
            let f = if TANH {
                tanh_lanes(real)
            } else {
                sigmoid_lanes(real)
            };
            *x = f.mul(inv);
        }
        // SAFETY: map_blocks hands out 16 writable elements.
        unsafe { L::store_requantized(dst, v, k.output_zero_point) };
    });
}

// ---------------------------------------------------------------------------
// Dispatch.

fn unavailable(backend: Backend) -> Error {
    Error::BackendUnavailable {
        backend: backend.name(),
    }
}

/// Softmax rows on `backend`.
pub(crate) fn softmax<T: QuantElem>(
    backend: Backend,
    k: &SoftmaxF32,
    input: &[T],
    output: &mut [T],
    row_len: usize,
) -> Result<()> {
    match backend {
        Backend::Scalar => softmax_rows::<f32, T, BLOCK>(k, input, output, row_len),
        #[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
        Backend::Neon => crate::arch::neon_f32q::softmax(k, input, output, row_len),
        #[allow(unreachable_patterns)]
        b => return Err(unavailable(b)),
    }
    Ok(())
}

/// Log-softmax rows on `backend`.
pub(crate) fn log_softmax<T: QuantElem>(
    backend: Backend,
    k: &LogSoftmaxF32,
    input: &[T],
    output: &mut [T],
    row_len: usize,
) -> Result<()> {
    match backend {
        Backend::Scalar => log_softmax_rows::<f32, T, BLOCK>(k, input, output, row_len),
        #[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
        Backend::Neon => crate::arch::neon_f32q::log_softmax(k, input, output, row_len),
        #[allow(unreachable_patterns)]
        b => return Err(unavailable(b)),
    }
    Ok(())
}

/// Logistic or tanh on `backend`.
pub(crate) fn activation<T: QuantElem>(
    backend: Backend,
    k: &ActivationF32,
    input: &[T],
    output: &mut [T],
) -> Result<()> {
    match (backend, k.activation) {
        (Backend::Scalar, Activation::Logistic) => {
            activation_map::<f32, T, BLOCK, false>(k, input, output)
        }
        (Backend::Scalar, Activation::Tanh) => {
            activation_map::<f32, T, BLOCK, true>(k, input, output)
        }
        #[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
        (Backend::Neon, _) => crate::arch::neon_f32q::activation(k, input, output),
        #[allow(unreachable_patterns)]
        (b, _) => return Err(unavailable(b)),
    }
    Ok(())
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
