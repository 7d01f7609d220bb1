//! The scalar backend: [`Lane`] for `f32`, the reference for NEON.
//!
//! Sixteen scalar accumulators per block reproduce the NEON backend's four
//! vectors of four lanes, so reductions round in the same order.

use super::Lane;

impl Lane for f32 {
    const WIDTH: usize = 1;
    type Mask = bool;

    #[inline(always)]
    unsafe fn load(p: *const f32) -> Self {
        // SAFETY: the caller guarantees `p` is readable.
        unsafe { p.read() }
    }
    #[inline(always)]
    unsafe fn store(self, p: *mut f32) {
        // SAFETY: the caller guarantees `p` is writable.
        unsafe { p.write(self) }
    }
    #[inline(always)]
    fn splat(v: f32) -> Self {
        v
    }
    #[inline(always)]
    fn add(self, o: Self) -> Self {
        self + o
    }
    #[inline(always)]
    fn sub(self, o: Self) -> Self {
        self - o
    }
    #[inline(always)]
    fn mul(self, o: Self) -> Self {
        self * o
    }
    #[inline(always)]
    fn div(self, o: Self) -> Self {
        self / o
    }
    #[inline(always)]
    fn fma(self, b: Self, c: Self) -> Self {
        super::fma(self, b, c)
    }
    #[inline(always)]
    fn max(self, o: Self) -> Self {
        if self.is_nan() || o.is_nan() {
            self + o
        } else if self == o {
            // Equal values: only ±0 differ in bits; `fmax` prefers +0.
            f32::from_bits(self.to_bits() & o.to_bits())
        } else if self > o {
            self
        } else {
            o
        }
    }
    #[inline(always)]
    fn min(self, o: Self) -> Self {
        if self.is_nan() || o.is_nan() {
            self + o
        } else if self == o {
            // Equal values: only ±0 differ in bits; `fmin` prefers -0.
            f32::from_bits(self.to_bits() | o.to_bits())
        } else if self < o {
            self
        } else {
            o
        }
    }
    #[inline(always)]
    fn abs(self) -> Self {
        f32::from_bits(self.to_bits() & 0x7fff_ffff)
    }
    #[inline(always)]
    fn copysign(self, sign: Self) -> Self {
        f32::from_bits((self.to_bits() & 0x7fff_ffff) | (sign.to_bits() & 0x8000_0000))
    }
    #[inline(always)]
    fn round(self) -> Self {
        // Adding and removing 2^23 rounds |v| < 2^23 (ties to even); larger
        // values are integers already (or inf/NaN).
        let a = Lane::abs(self);
        if a < 8_388_608.0 {
            Lane::copysign((a + 8_388_608.0) - 8_388_608.0, self)
        } else {
            self
        }
    }
    #[inline(always)]
    fn lt(self, o: Self) -> bool {
        self < o
    }
    #[inline(always)]
    fn select(mask: bool, a: Self, b: Self) -> Self {
        if mask {
            a
        } else {
            b
        }
    }
    #[inline(always)]
    fn zero_where(self, mask: bool) -> Self {
        if mask {
            0.0
        } else {
            self
        }
    }
    #[inline(always)]
    fn scale_by_pow2(p: Self, n: Self) -> Self {
        f32::from_bits(p.to_bits().wrapping_add(exponent_step(n) as u32))
    }
    #[inline(always)]
    fn scale_by_pow2_sat(p: Self, n: Self) -> Self {
        let sum = p.to_bits() as i64 + exponent_step(n) as i64;
        f32::from_bits(sum.clamp(0, u32::MAX as i64) as u32)
    }
    #[inline(always)]
    fn reduce_add(self) -> f32 {
        self
    }
    #[inline(always)]
    fn reduce_max(self) -> f32 {
        self
    }

    type Wide = f64;
    #[inline(always)]
    fn wide_zero() -> f64 {
        0.0
    }
    #[inline(always)]
    fn widen(self) -> f64 {
        self as f64
    }
    #[inline(always)]
    fn wide_add(a: f64, b: f64) -> f64 {
        a + b
    }
    #[inline(always)]
    fn wide_mul(a: f64, b: f64) -> f64 {
        a * b
    }
    #[inline(always)]
    fn wide_reduce_add(a: f64) -> f64 {
        a
    }
    #[inline(always)]
    unsafe fn wide_store(a: f64, p: *mut f64) {
        // SAFETY: the caller guarantees one writable `f64` at `p`.
        unsafe { p.write(a) }
    }
}

/// `n << 23` for an integer-valued `n`, as aarch64's `fcvtzs #23` forms it:
/// `n * 2^23` converted to `i32` toward zero, saturating, NaN to 0 (Rust's
/// float-to-integer `as` has exactly these rules).
#[inline(always)]
fn exponent_step(n: f32) -> i32 {
    (n * 8_388_608.0) as i32
}

/// Kernels with the NEON backend's names and block layout (16 lanes).
pub(super) fn softmax_two_pass(x: &[f32], y: &mut [f32], row_len: usize) {
    super::rows(
        x,
        y,
        row_len,
        super::row_kernels::softmax_two_pass_row::<f32, 16, 4>,
    )
}

pub(super) fn softmax_online(x: &[f32], y: &mut [f32], row_len: usize) {
    super::rows(
        x,
        y,
        row_len,
        super::row_kernels::softmax_online_row::<f32, 16, 4>,
    )
}

pub(super) fn log_softmax(x: &[f32], y: &mut [f32], row_len: usize) {
    super::rows(
        x,
        y,
        row_len,
        super::row_kernels::log_softmax_row::<f32, 16, 4>,
    )
}

pub(super) fn sigmoid(x: &[f32], y: &mut [f32]) {
    // SAFETY: equal lengths (checked by the caller), distinct borrows.
    unsafe {
        super::row_kernels::map::<f32, 16>(
            x.as_ptr(),
            y.as_mut_ptr(),
            x.len(),
            super::sigmoid_lanes,
        )
    }
}

pub(super) fn tanh(x: &[f32], y: &mut [f32]) {
    // SAFETY: equal lengths (checked by the caller), distinct borrows.
    unsafe {
        super::row_kernels::map::<f32, 16>(x.as_ptr(), y.as_mut_ptr(), x.len(), super::tanh_lanes)
    }
}

pub(super) fn exp(x: &[f32], y: &mut [f32]) {
    // SAFETY: equal lengths (checked by the caller), distinct borrows.
    unsafe {
        super::row_kernels::map::<f32, 16>(x.as_ptr(), y.as_mut_ptr(), x.len(), super::exp_lanes)
    }
}

pub(super) fn sigmoid_backward(y: &[f32], dy: &[f32], dx: &mut [f32]) {
    super::row_kernels::sigmoid_backward_row::<f32, 16>(y, dy, dx)
}
