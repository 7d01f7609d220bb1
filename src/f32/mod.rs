//! Floating-point (`f32`) activations: softmax, log-softmax, sigmoid, tanh,
//! the sigmoid gradient, and the `exp` they are built on.
//!
//! `no_std`: nothing here calls `f32::exp` or any other `std` float function.
//! The math is written once in this module, generic over the private
//! `Lane` trait, and instantiated with `f32` (the scalar backend, also the
//! reference) and `float32x4_t` (the NEON backend).
//!
//! # Bit-identical backends
//!
//! [`Backend::Scalar`] and [`Backend::Neon`] give the **same bits** for every
//! non-NaN output (NaN payloads may differ). Three things make that true:
//!
//! * every operation is an IEEE operation with one rounding: `+ - * /`,
//!   fused multiply-add and round-to-integer in single precision, `+ *` in
//!   double precision for the row sums. NEON uses `fmla` (`vfmaq_f32`) and
//!   `frintn`; the scalar backend uses [`fma`], a correctly rounded fused
//!   multiply-add written with `f64` arithmetic and round-to-odd, and the
//!   add-and-subtract-`2^23` rounding (no `std` needed);
//! * reductions use a fixed tree in both backends: row maxima 16
//!   accumulators (the scalar backend keeps 16 scalars, NEON four vectors),
//!   row sums four `f64` accumulators (four scalars; one pair of
//!   `float64x2_t`);
//! * per-row reciprocals and logarithms are scalar code shared by both.
//!
//! # Accuracy (against `f64` math, in ulp of the `f32` result)
//!
//! Bounds are asserted by the tests (`tests/f32_kernels.rs`,
//! `tests/f32_softmax_bound.rs`); the measured maxima are in brackets.
//!
//! * [`exp`]: at most 1 ulp over `[-87.3, 0]` and `[0, 88.72]` (0.95 ulp);
//!   `+0` below `ln(f32::MIN_POSITIVE) = -87.3365` (subnormal results are
//!   flushed), `+inf` above `ln(f32::MAX) = 88.7228`.
//! * [`softmax`], for outputs `>= f32::MIN_POSITIVE` (absolute error
//!   `< 2^-126` below): at most **3 ulp** two-pass (2.57 ulp) and **3.5
//!   ulp** online (3.16 ulp) from the exact softmax of the differences
//!   `x - max` as rounded to `f32`. Maxima over two million random rows,
//!   658 million outputs (`cargo test --release --test f32_softmax_bound --
//!   --ignored`): lengths 1 to 2048; uniform, normal, nearly flat, sorted
//!   and slowly rising rows; spreads 0.1 to 1000, offsets to ±500.
//!   The row sum is accumulated in `f64`, so its rounding does not grow with
//!   the row length (in `f32` it cost 14 ulp on rows of 2048, 112 ulp on a
//!   row with one large and 2047 small values); its reciprocal is rounded
//!   once to `f32`, then one multiply per element. The online variant's
//!   sum is formed from differences to running maxima (rounded differently
//!   from `x - max`) and rescaled by factors computed without rounding to
//!   `f32` near 1 (`exp_wide`; rounded, they cost 30 ulp on sorted rows).
//!   The bounds are measured ones; a first-order worst-case analysis (one
//!   `exp` 1 ulp off one way, the sum's average the other, the result's
//!   mantissa near 2 and the `exp`s' near 1) allows 5.4 ulp.
//!
//!   The rounding of `x - max` itself (`δ_j`, at most `2^-24 |x_j - max|`,
//!   zero when the subtraction is exact, as when `x_j` and `max` have the
//!   same sign and are within a factor of 2) is the input's: it moves the
//!   exact softmax by a relative `|δ_i| + sum_j y_j |δ_j|` at most (first
//!   order), up to 66 ulp in the sample above (values near ±500). Against
//!   the exact softmax of `x`, the error is within the bound plus that.
//! * [`log_softmax`]: absolute error at most `ulp(y) + 2^-22 (1 + ln sum)`
//!   (0.999 of it over the sample above), the row sum in `f64` as well.
//! * [`sigmoid`]: at most 3 ulp for outputs `>= f32::MIN_POSITIVE` (2.24 ulp),
//!   absolute error `< 2^-126` below; one `fdiv`/`/` per element.
//! * [`tanh`]: at most 3 ulp everywhere (2.36 ulp), including tiny inputs
//!   (computed from `expm1`, without cancellation).
//! * NEON vs scalar: 0 ulp (identical bits), asserted for every op.
//!
//! # NaN and infinities
//!
//! * Every NaN input gives NaN, in every function and on every backend,
//!   whatever its sign, payload or quietness (quiet or signalling); the
//!   output NaN's payload is unspecified. (The scaling by `2^n` adds
//!   `n << 23` to the exponent bits; `n` is converted to that integer by a
//!   float-to-fixed-point conversion that maps NaN to 0, so a NaN keeps its
//!   all-ones exponent instead of wrapping into a number.)
//! * [`softmax`] (both variants) and [`log_softmax`]: a NaN anywhere in a
//!   row makes **every element of that row** NaN, also when the row holds
//!   `+inf` or `-inf`; other rows are not affected.
//! * Finite inputs never give NaN (softmax and log-softmax rows of finite
//!   values included). Infinities: `exp(-inf) = 0`, `exp(+inf) = +inf`,
//!   `sigmoid(±inf) = 1, 0`, `tanh(±inf) = ±1`; softmax rows with `±inf` as
//!   documented at [`softmax`] and [`log_softmax`].
//!
//! Asserted by `tests/f32_nan.rs` (1.5 million NaN patterns, every 11th
//! payload of both signs plus the class extremes, through every kernel).
//!
//! # Cost (NEON, qemu instruction counts, rows of 384)
//!
//! Softmax (two-pass) 7.1 instructions per element, online softmax 13.1,
//! log-softmax 7.5, sigmoid 5.8, tanh 6.2 (`cargo xtask bench`, rows of
//! `f32` type). With `f32` row sums and the exponent `n` rounded by adding
//! a magic constant they were 6.9, 12.2, 7.6, 5.9 and 6.6: the `f64` sums
//! (`fcvtl`, `fcvtl2` and two `fadd` per four sums) cost 0.4 to 1.2 per
//! element, `frintn` saves about 0.3 per `exp`.
//!
//! Inputs to all functions are `&[f32]`; row-wise ops take `row_len`, the
//! length of the last axis. Lengths are checked: [`Error::LengthMismatch`]
//! when buffers differ, [`Error::RowLength`] when `row_len` is 0 or does not
//! divide the length.

mod row_kernels;
mod scalar;
mod scalar_math;

#[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
mod neon;

use crate::error::{Error, Result};
use crate::Backend;
pub(crate) use row_kernels::{row_max, softmax_reciprocal, sum_of_exps_row, tree, BLOCK};
pub(crate) use scalar_math::{exp_neg_f64, ln_1p_f64, ln_f32, ln_f64, ln_to_f32};

// ---------------------------------------------------------------------------
// The lane abstraction.
// ---------------------------------------------------------------------------

/// A group of `f32` lanes (`f32` itself, or `float32x4_t`). Every arithmetic
/// method is one correctly rounded IEEE operation per lane.
pub(crate) trait Lane: Copy {
    /// Lanes per value.
    const WIDTH: usize;
    /// Per-lane comparison result.
    type Mask: Copy;

    /// Loads `WIDTH` elements.
    ///
    /// # Safety
    /// `p` must be valid for reading `WIDTH` `f32`s.
    unsafe fn load(p: *const f32) -> Self;
    /// Stores `WIDTH` elements.
    ///
    /// # Safety
    /// `p` must be valid for writing `WIDTH` `f32`s.
    unsafe fn store(self, p: *mut f32);

    fn splat(v: f32) -> Self;
    fn add(self, o: Self) -> Self;
    fn sub(self, o: Self) -> Self;
    fn mul(self, o: Self) -> Self;
    fn div(self, o: Self) -> Self;
    /// `self * b + c` with a single rounding.
    fn fma(self, b: Self, c: Self) -> Self;
    /// `self + a * b` with a single rounding (the same operation as [`fma`](Self::fma)).
    #[inline(always)]
    fn add_mul(self, a: Self, b: Self) -> Self {
        a.fma(b, self)
    }
    /// The larger value; NaN if either is NaN; `max(-0, +0) = +0` (as `fmax`).
    fn max(self, o: Self) -> Self;
    /// The smaller value; NaN if either is NaN (as `fmin`).
    fn min(self, o: Self) -> Self;
    fn abs(self) -> Self;
    /// `|self|` with the sign bit of `sign`.
    fn copysign(self, sign: Self) -> Self;
    /// Rounded to an integer, ties to even (NEON `frintn`).
    fn round(self) -> Self;
    /// `self < o` (false for NaN).
    fn lt(self, o: Self) -> Self::Mask;
    /// `mask ? a : b`.
    fn select(mask: Self::Mask, a: Self, b: Self) -> Self;
    /// `mask ? +0 : self`.
    fn zero_where(self, mask: Self::Mask) -> Self;
    /// `p * 2^n` for an integer-valued `n`, by the integer addition of
    /// `n << 23` to `p`'s bits (the exponent field). Valid while the result
    /// is a normal number. `n << 23` is formed by a float-to-fixed-point
    /// conversion (`n * 2^23` to `i32`, toward zero, saturating; NEON:
    /// `fcvtzs #23`), which turns a NaN `n` into 0: a NaN `p` then keeps its
    /// exponent field and stays NaN, whatever its payload.
    fn scale_by_pow2(p: Self, n: Self) -> Self;
    /// `p * 2^n` as [`scale_by_pow2`](Self::scale_by_pow2), but with the
    /// exponent addition saturating at 0: results whose exponent field would
    /// go negative become `+0`. (NEON: `usqadd`.)
    fn scale_by_pow2_sat(p: Self, n: Self) -> Self;
    /// The sum of the lanes, in the order `(l0 + l2) + (l1 + l3)`.
    fn reduce_add(self) -> f32;
    /// The largest lane (NaN if any lane is NaN).
    fn reduce_max(self) -> f32;

    /// One `f64` per lane (`f64` itself, or two `float64x2_t` holding lanes
    /// 0, 1 and 2, 3): the softmax row sums are accumulated in `f64`, so
    /// that their rounding (about `2^-53` per addition) stays far below one
    /// `f32` ulp of the result whatever the row length.
    type Wide: Copy;
    /// `+0` in every lane.
    fn wide_zero() -> Self::Wide;
    /// The lanes converted to `f64` (exact).
    fn widen(self) -> Self::Wide;
    /// Lane-wise `f64` addition, one rounding.
    fn wide_add(a: Self::Wide, b: Self::Wide) -> Self::Wide;
    /// Lane-wise `f64` multiplication, one rounding.
    fn wide_mul(a: Self::Wide, b: Self::Wide) -> Self::Wide;
    /// The `f64` sum of the lanes, in the order `(l0 + l2) + (l1 + l3)`.
    fn wide_reduce_add(a: Self::Wide) -> f64;
    /// Stores the `WIDTH` `f64` lanes.
    ///
    /// # Safety
    /// `p` must be valid for writing `WIDTH` `f64`s.
    unsafe fn wide_store(a: Self::Wide, p: *mut f64);
}

// ---------------------------------------------------------------------------
// The math, written once.
// ---------------------------------------------------------------------------

const LOG2_E: f32 = core::f32::consts::LOG2_E;
/// `ln 2 = LN2_HI + LN2_LO`; `LN2_HI` has 9 significant bits so `n * LN2_HI`
/// is exact for `|n| <= 2^15`.
#[allow(clippy::excessive_precision)]
const LN2_HI: f32 = 0.693_359_375;
const LN2_LO: f32 = -2.121_944_4e-4;
/// `ln(f32::MIN_POSITIVE)`: below this `exp` returns 0.
const EXP_LO: f32 = -87.336_55;
/// Above this `exp` overflows to +inf (`ln(f32::MAX)`).
const EXP_HI: f32 = 88.722_84;

/// `(e^r - 1 - r) / r^2 ~ C2 + C3 r + C4 r^2 + C5 r^3 + C6 r^4` on
/// `|r| <= ln2/2`: coefficients fitted for this crate (minimax of the
/// relative error of `1 + r + r^2 q(r)`, iteratively reweighted least
/// squares, then rounded to `f32`; relative error 3.7e-9 = 0.06 half-ulp).
#[allow(clippy::excessive_precision)]
const C2: f32 = 0.4999999403953552; // 0x3eff_fffe
#[allow(clippy::excessive_precision)]
const C3: f32 = 0.1666652113199234; // 0x3e2a_aa49
#[allow(clippy::excessive_precision)]
const C4: f32 = 0.04166838899254799; // 0x3d2a_ac79
#[allow(clippy::excessive_precision)]
const C5: f32 = 0.00836874544620514; // 0x3c09_1d10
#[allow(clippy::excessive_precision)]
const C6: f32 = 0.001381453825160861; // 0x3ab5_11e6

/// Range reduction: returns `(n, r)` with `x = n ln2 + r`, `n` an integer
/// (NaN for NaN `x`), `|r| <= ln2/2` (up to rounding). `n` rounds the `f32`
/// product `x log2 e` (so `|r|` may exceed `ln2/2` by about `2^-24 |x|`,
/// harmless to the polynomial); Cody-Waite with two constants.
#[inline(always)]
fn exp_reduce<L: Lane>(x: L) -> (L, L) {
    let n = x.mul(L::splat(LOG2_E)).round();
    let r = n.fma(L::splat(-LN2_HI), x);
    let r = n.fma(L::splat(-LN2_LO), r);
    (n, r)
}

/// `e^r - 1` for the reduced argument, without cancellation.
#[inline(always)]
fn expm1_poly<L: Lane>(r: L) -> L {
    // Estrin's scheme: two of the four steps accumulate into a variable
    // rather than a constant, which saves a register copy each with `fmla`.
    let r2 = r.mul(r);
    let hi = r.fma(L::splat(C5), L::splat(C4)).add_mul(r2, L::splat(C6));
    let lo = r.fma(L::splat(C3), L::splat(C2));
    let q = lo.add_mul(r2, hi);
    r.add_mul(r2, q)
}

/// `e^x` for `x <= 88.37` (so that `n <= 127`): 0 below [`EXP_LO`] (and for
/// `-inf`), NaN for NaN.
#[inline(always)]
pub(crate) fn exp_lanes<L: Lane>(x: L) -> L {
    let (n, r) = exp_reduce(x);
    let p = expm1_poly(r).add(L::splat(1.0));
    L::scale_by_pow2(p, n).zero_where(x.lt(L::splat(EXP_LO)))
}

/// Below this the kernels' `exp` clamps its argument: `e^-104` scales to 0.
const EXP_CLAMP: f32 = -104.0;

/// `e^x` for `x <= 88.37`, the kernels' cheaper form: the argument is clamped
/// at -104 and the scaling by `2^n` saturates, so results are as [`exp_lanes`]
/// down to `f32::MIN_POSITIVE`, `+0` from about `e^-103.3` down (and for `-inf`),
/// and in between some value in `[0, f32::MIN_POSITIVE)` (absolute error
/// below `2^-126`). NaN for NaN. One instruction per vector fewer than
/// [`exp_lanes`]' compare-and-clear.
#[inline(always)]
pub(crate) fn exp_kernel<L: Lane>(x: L) -> L {
    let x = x.max(L::splat(EXP_CLAMP));
    let (n, r) = exp_reduce(x);
    let p = expm1_poly(r).add(L::splat(1.0));
    L::scale_by_pow2_sat(p, n)
}

/// `e^x` for `x <= 0` as `f64` lanes, the online softmax's rescaling factor:
/// [`exp_kernel`]'s algorithm, but `1 + (e^r - 1)` and the scaling by `2^n`
/// are done in `f64`, so the factor is never rounded to `f32` near 1 (that
/// rounding, `2^-25` each time a row's maximum grows by a little, compounds
/// over a row whose maximum keeps growing). Relative error that of `e^r - 1`
/// in `f32`: below `2^-24` (`2^-24.5` measured over `[-87, 0]`), and below
/// `2^-30` for `|x| < 2^-8` (`2^-33`); `+0` below about `-88`; NaN for NaN.
#[inline(always)]
pub(crate) fn exp_wide<L: Lane>(x: L) -> L::Wide {
    let x = x.max(L::splat(EXP_CLAMP));
    let (n, r) = exp_reduce(x);
    let pm1 = expm1_poly(r);
    let pow2 = L::scale_by_pow2_sat(L::splat(1.0), n);
    L::wide_mul(
        L::wide_add(L::splat(1.0).widen(), pm1.widen()),
        pow2.widen(),
    )
}

/// `e^-a` for `a >= 0` (or NaN), the same algorithm as [`exp_kernel`] on
/// `-a` with the signs folded into the constants (saves the negation):
/// `n = -round(a log2 e)`, `s = a + n ln2 = -r`, and `e^r = 1 - s + s^2 q(-s)`.
#[inline(always)]
fn exp_neg_kernel<L: Lane>(a: L) -> L {
    let a = a.min(L::splat(-EXP_CLAMP));
    let n = a.mul(L::splat(-LOG2_E)).round();
    let s = n.fma(L::splat(LN2_HI), a);
    let s = n.fma(L::splat(LN2_LO), s);
    let s2 = s.mul(s);
    let hi = s.fma(L::splat(-C5), L::splat(C4)).add_mul(s2, L::splat(C6));
    let lo = s.fma(L::splat(-C3), L::splat(C2));
    let q = lo.add_mul(s2, hi);
    let p = L::splat(1.0).sub(s).add_mul(s2, q);
    L::scale_by_pow2_sat(p, n)
}

/// `e^x - 1` for `-88 <= x <= 0` (callers clamp), accurate for tiny `x`.
#[inline(always)]
pub(crate) fn expm1_lanes<L: Lane>(x: L) -> L {
    let (n, r) = exp_reduce(x);
    let pm1 = expm1_poly(r);
    // 2^n for n in [-127, 0] (n = -127 gives +0, which is fine here; a NaN
    // `n` gives 1, and `pm1` is NaN then).
    let s = L::scale_by_pow2(L::splat(1.0), n);
    s.fma(pm1, s.sub(L::splat(1.0)))
}

/// `1 / (1 + e^-x)`, never forming `inf / inf`: with `e = e^-|x|` in `[0, 1]`,
/// `1 / (1 + e)` for `x >= 0` and `e / (1 + e)` for `x < 0` (one division).
#[inline(always)]
pub(crate) fn sigmoid_lanes<L: Lane>(x: L) -> L {
    let one = L::splat(1.0);
    let e = exp_neg_kernel(x.abs());
    L::select(x.lt(L::splat(0.0)), e, one).div(one.add(e))
}

/// `tanh(x) = sign(x) * -m / (2 + m)` with `m = expm1(-2|x|)`.
#[inline(always)]
pub(crate) fn tanh_lanes<L: Lane>(x: L) -> L {
    let z = x.abs().mul(L::splat(-2.0)).max(L::splat(-88.0));
    let m = expm1_lanes(z);
    let t = L::splat(0.0).sub(m).div(L::splat(2.0).add(m));
    t.copysign(x)
}

/// `y (1 - y) dy`.
#[inline(always)]
pub(crate) fn sigmoid_backward_lanes<L: Lane>(y: L, dy: L) -> L {
    y.mul(L::splat(1.0).sub(y)).mul(dy)
}

// ---------------------------------------------------------------------------
// Scalar helpers shared by both backends.
// ---------------------------------------------------------------------------

/// Fused multiply-add `a * b + c` with one rounding, without `std`.
///
/// The product is exact in `f64`; the sum is rounded to odd in `f64`
/// (round to nearest, then, if inexact, move to the neighbour with an odd
/// last bit on the side of the exact value), and round-to-odd at 53 bits
/// followed by rounding to 24 bits is the correctly rounded result. The same
/// bits as aarch64's `fmadd`/`fmla` (NaN payloads aside).
#[inline]
pub fn fma(a: f32, b: f32, c: f32) -> f32 {
    let p = a as f64 * b as f64;
    let cc = c as f64;
    let s = p + cc;
    if !s.is_finite() || s == 0.0 {
        // Infinities/NaN propagate; an exact zero: RN(p + c) already has the
        // right sign (both operands are exact in f64).
        return s as f32;
    }
    // TwoSum: s + err == p + c exactly.
    let bb = s - p;
    let err = (p - (s - bb)) + (cc - bb);
    let mut bits = s.to_bits();
    if err != 0.0 && bits & 1 == 0 {
        if (err > 0.0) == (s > 0.0) {
            bits += 1;
        } else {
            bits -= 1;
        }
    }
    f64::from_bits(bits) as f32
}

/// `e^x` (scalar), the kernels' algorithm: Cody-Waite reduction
/// `x = n ln2 + r` (two constants), a degree-6 polynomial, scaling by `2^n`
/// through the exponent bits. At most 1 ulp from the exact value for
/// `x >= ln(f32::MIN_POSITIVE) = -87.3365`; 0 below (subnormal results are
/// flushed, `exp(-inf) = 0`); `+inf` above `ln(f32::MAX) = 88.7228`; NaN for NaN.
pub fn exp(x: f32) -> f32 {
    if x > 88.0 {
        if x > EXP_HI {
            return f32::INFINITY;
        }
        // n may be 128: scale by 2^(n-1) in the exponent, then by 2.
        let (n, r) = exp_reduce(x);
        let p = expm1_poly(r).add(1.0);
        return <f32 as Lane>::scale_by_pow2(p, n - 1.0) * 2.0;
    }
    exp_lanes(x)
}

// ---------------------------------------------------------------------------
// The public API.
// ---------------------------------------------------------------------------

/// Which softmax algorithm to run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SoftmaxVariant {
    /// Three passes over the row: the maximum; `e^(x - max)` stored to the
    /// output and summed; the output scaled by `1/sum`. One `exp` per
    /// element, the sum in `f64`. Within 3 ulp (see the module docs). The
    /// default: 7.1 instructions per element with NEON (qemu, 1536 rows of
    /// 384), against 13.1 for [`Online`](Self::Online).
    #[default]
    TwoPass,
    /// Two passes: one keeping a running maximum and a running sum that is
    /// rescaled by `e^(old max - new max)` whenever the maximum grows; then
    /// `y = e^(x - max) / sum`. Reads the input twice and never re-reads the
    /// output, but computes `exp` twice per element. Within 3.5 ulp: the sum
    /// is formed from differences to running maxima, which round otherwise
    /// than `x - max`.
    Online,
}

fn unavailable(backend: Backend) -> Error {
    Error::BackendUnavailable {
        backend: backend.name(),
    }
}

/// Runs `row(x_row, y_row)` over every row on the requested backend.
macro_rules! by_backend {
    ($backend:expr, $scalar:expr, $neon:expr) => {{
        match $backend {
            Backend::Scalar => {
                $scalar;
                Ok(())
            }
            #[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
            Backend::Neon => {
                $neon;
                Ok(())
            }
            #[allow(unreachable_patterns)]
            b => Err(unavailable(b)),
        }
    }};
}

#[inline(always)]
fn rows(input: &[f32], output: &mut [f32], row_len: usize, mut f: impl FnMut(&[f32], &mut [f32])) {
    for (x, y) in input
        .chunks_exact(row_len)
        .zip(output.chunks_exact_mut(row_len))
    {
        f(x, y);
    }
}

/// Softmax along rows of `row_len`, with the best backend and the default
/// [`SoftmaxVariant`] (two-pass).
///
/// Stable for any input (the row maximum is subtracted first): `-inf`
/// contributes 0; a row with one `+inf` gives 1 there and 0 elsewhere (the
/// limit); two or more `+inf` make the whole row **NaN** (the limit depends
/// on how they grow: ONNX's reference, PyTorch and numpy give NaN); a row of only
/// `-inf` gives **NaN** in every element (there is no maximum to subtract:
/// `-inf - -inf`), by convention; any NaN in a row makes the whole row NaN.
pub fn softmax(input: &[f32], output: &mut [f32], row_len: usize) -> Result<()> {
    softmax_with(Backend::best(), input, output, row_len)
}

/// [`softmax`] on a chosen backend.
pub fn softmax_with(
    backend: Backend,
    input: &[f32],
    output: &mut [f32],
    row_len: usize,
) -> Result<()> {
    softmax_variant(SoftmaxVariant::default(), backend, input, output, row_len)
}

/// [`softmax`] with a chosen algorithm and backend. Both variants follow the
/// same special-value conventions; they differ in rounding (each is within
/// the documented ulp bound of the exact result).
pub fn softmax_variant(
    variant: SoftmaxVariant,
    backend: Backend,
    input: &[f32],
    output: &mut [f32],
    row_len: usize,
) -> Result<()> {
    crate::checks::check_rows("f32 softmax", input.len(), output.len(), row_len)?;
    match variant {
        SoftmaxVariant::TwoPass => by_backend!(
            backend,
            scalar::softmax_two_pass(input, output, row_len),
            neon::softmax_two_pass(input, output, row_len)
        ),
        SoftmaxVariant::Online => by_backend!(
            backend,
            scalar::softmax_online(input, output, row_len),
            neon::softmax_online(input, output, row_len)
        ),
    }
}

/// Log-softmax along rows of `row_len`: `x - max - ln(sum e^(x - max))`.
///
/// Finite for finite rows whose spread fits in `f32` (`max - min` finite);
/// `-inf` inputs give `-inf`; a row with one `+inf` gives 0 there and
/// `-inf` elsewhere; two or more `+inf` or an all-`-inf` row give NaN; NaN
/// propagates to the whole row.
pub fn log_softmax(input: &[f32], output: &mut [f32], row_len: usize) -> Result<()> {
    log_softmax_with(Backend::best(), input, output, row_len)
}

/// [`log_softmax`] on a chosen backend.
pub fn log_softmax_with(
    backend: Backend,
    input: &[f32],
    output: &mut [f32],
    row_len: usize,
) -> Result<()> {
    crate::checks::check_rows("f32 log_softmax", input.len(), output.len(), row_len)?;
    by_backend!(
        backend,
        scalar::log_softmax(input, output, row_len),
        neon::log_softmax(input, output, row_len)
    )
}

/// Logistic sigmoid `1 / (1 + e^-x)`, element-wise. Never forms `inf/inf`:
/// `sigmoid(88.8) == 1.0`, `sigmoid(-548.3) == 0.0`, NaN gives NaN.
pub fn sigmoid(input: &[f32], output: &mut [f32]) -> Result<()> {
    sigmoid_with(Backend::best(), input, output)
}

/// [`sigmoid`] on a chosen backend.
pub fn sigmoid_with(backend: Backend, input: &[f32], output: &mut [f32]) -> Result<()> {
    crate::checks::check_lengths("f32 sigmoid", input.len(), output.len())?;
    by_backend!(
        backend,
        scalar::sigmoid(input, output),
        neon::sigmoid(input, output)
    )
}

/// Hyperbolic tangent, element-wise; saturates to `±1` for large `|x|`,
/// keeps the sign of zero, NaN gives NaN.
pub fn tanh(input: &[f32], output: &mut [f32]) -> Result<()> {
    tanh_with(Backend::best(), input, output)
}

/// [`tanh`] on a chosen backend.
pub fn tanh_with(backend: Backend, input: &[f32], output: &mut [f32]) -> Result<()> {
    crate::checks::check_lengths("f32 tanh", input.len(), output.len())?;
    by_backend!(
        backend,
        scalar::tanh(input, output),
        neon::tanh(input, output)
    )
}

/// `e^x` element-wise (see [`exp`]).
pub fn exp_into(input: &[f32], output: &mut [f32]) -> Result<()> {
    exp_into_with(Backend::best(), input, output)
}

/// [`exp_into`] on a chosen backend. Inputs above 88.37 go through the
/// scalar [`exp`] (the vector kernel scales by `2^n` with `n <= 127`).
pub fn exp_into_with(backend: Backend, input: &[f32], output: &mut [f32]) -> Result<()> {
    crate::checks::check_lengths("f32 exp", input.len(), output.len())?;
    by_backend!(
        backend,
        scalar::exp(input, output),
        neon::exp(input, output)
    )?;
    for (y, &x) in output.iter_mut().zip(input) {
        if x > 88.0 {
            *y = exp(x);
        }
    }
    Ok(())
}

/// Gradient of the sigmoid from its output: `dx = y (1 - y) dy`. Saturated
/// outputs (`y` = 0 or 1) give 0 for finite `dy`, never NaN.
pub fn sigmoid_backward(y: &[f32], dy: &[f32], dx: &mut [f32]) -> Result<()> {
    sigmoid_backward_with(Backend::best(), y, dy, dx)
}

/// [`sigmoid_backward`] on a chosen backend.
pub fn sigmoid_backward_with(
    backend: Backend,
    y: &[f32],
    dy: &[f32],
    dx: &mut [f32],
) -> Result<()> {
    crate::checks::check_lengths("f32 sigmoid_backward", y.len(), dy.len())?;
    crate::checks::check_lengths("f32 sigmoid_backward", y.len(), dx.len())?;
    by_backend!(
        backend,
        scalar::sigmoid_backward(y, dy, dx),
        neon::sigmoid_backward(y, dy, dx)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `exp_wide` against `f64` `exp` over every 97th `f32` in `[-87, 0]`:
    /// the relative error stays below `2^-24` (it is that of `e^r - 1` in
    /// `f32`, `|e^r - 1| <= 0.42`), and for `|x| < 2^-8`, where the factor is
    /// within 0.4% of 1, below `2^-30`: rounding to `f32` would cost up to
    /// `2^-25` there.
    #[test]
    #[cfg_attr(
        miri,
        ignore = "11 million exps of safe code: nothing for Miri, hours under it"
    )]
    fn exp_wide_error() {
        let (lo, hi) = (0.0f32.to_bits() | 0x8000_0000, (-87.0f32).to_bits());
        let mut worst = 0.0f64;
        let mut worst_small = 0.0f64;
        for bits in (lo..=hi).step_by(97) {
            let x = f32::from_bits(bits);
            let exact = (x as f64).exp();
            let got = exp_wide::<f32>(x);
            let rel = (got - exact).abs() / exact;
            worst = worst.max(rel);
            if x.abs() < 1.0 / 256.0 {
                worst_small = worst_small.max(rel);
            }
        }
        std::println!(
            "exp_wide: max relative error 2^{:.2}, 2^{:.2} for |x| < 2^-8",
            worst.log2(),
            worst_small.log2()
        );
        assert!(worst < f64::powi(2.0, -24), "{worst:e}");
        assert!(worst_small < f64::powi(2.0, -30), "{worst_small:e}");
    }
}
