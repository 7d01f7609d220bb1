//! The NEON backend: [`Lane`] for `float32x4_t`, four vectors (16 elements)
//! per block. Fused multiply-add is `fmla`, division `fdiv` (aarch64 has a
//! correctly rounded vector divide), so results equal the scalar backend's.

use super::Lane;
use core::arch::aarch64::*;

impl Lane for float32x4_t {
    const WIDTH: usize = 4;
    type Mask = uint32x4_t;

    #[inline(always)]
    unsafe fn load(p: *const f32) -> Self {
        // SAFETY: the caller guarantees 4 readable elements at `p`.
        unsafe { vld1q_f32(p) }
    }
    #[inline(always)]
    unsafe fn store(self, p: *mut f32) {
        // SAFETY: the caller guarantees 4 writable elements at `p`.
        unsafe { vst1q_f32(p, self) }
    }
    #[inline(always)]
    fn splat(v: f32) -> Self {
        // SAFETY: NEON is baseline on aarch64 (this module's cfg).
        unsafe { vdupq_n_f32(v) }
    }
    #[inline(always)]
    fn add(self, o: Self) -> Self {
        // SAFETY: NEON is baseline on aarch64.
        unsafe { vaddq_f32(self, o) }
    }
    #[inline(always)]
    fn sub(self, o: Self) -> Self {
        // SAFETY: NEON is baseline on aarch64.
        unsafe { vsubq_f32(self, o) }
    }
    #[inline(always)]
    fn mul(self, o: Self) -> Self {
        // SAFETY: NEON is baseline on aarch64.
        unsafe { vmulq_f32(self, o) }
    }
    #[inline(always)]
    fn div(self, o: Self) -> Self {
        // SAFETY: NEON is baseline on aarch64.
        unsafe { vdivq_f32(self, o) }
    }
    #[inline(always)]
    fn fma(self, b: Self, c: Self) -> Self {
        // SAFETY: NEON is baseline on aarch64. vfmaq_f32(c, a, b) = c + a * b, fused.
        unsafe { vfmaq_f32(c, self, b) }
    }
    #[inline(always)]
    fn max(self, o: Self) -> Self {
        // SAFETY: NEON is baseline on aarch64. `fmax` propagates NaN.
        unsafe { vmaxq_f32(self, o) }
    }
    #[inline(always)]
    fn min(self, o: Self) -> Self {
        // SAFETY: NEON is baseline on aarch64. `fmin` propagates NaN.
        unsafe { vminq_f32(self, o) }
    }
    #[inline(always)]
    fn abs(self) -> Self {
        // SAFETY: NEON is baseline on aarch64.
        unsafe { vabsq_f32(self) }
    }
    #[inline(always)]
    fn copysign(self, sign: Self) -> Self {
        // SAFETY: NEON is baseline on aarch64; bit select on reinterpreted lanes.
        unsafe { vbslq_f32(vdupq_n_u32(0x8000_0000), sign, self) }
    }
    #[inline(always)]
    fn round(self) -> Self {
        // SAFETY: NEON is baseline on aarch64.
        unsafe { vrndnq_f32(self) }
    }
    #[inline(always)]
    fn lt(self, o: Self) -> uint32x4_t {
        // SAFETY: NEON is baseline on aarch64.
        unsafe { vcltq_f32(self, o) }
    }
    #[inline(always)]
    fn select(mask: uint32x4_t, a: Self, b: Self) -> Self {
        // SAFETY: NEON is baseline on aarch64.
        unsafe { vbslq_f32(mask, a, b) }
    }
    #[inline(always)]
    fn zero_where(self, mask: uint32x4_t) -> Self {
        // SAFETY: NEON is baseline on aarch64; lane reinterpretation only.
        unsafe { vreinterpretq_f32_u32(vbicq_u32(vreinterpretq_u32_f32(self), mask)) }
    }
    #[inline(always)]
    fn scale_by_pow2(p: Self, n: Self) -> Self {
        // SAFETY: NEON is baseline on aarch64; `fcvtzs #23` gives n << 23
        // (NaN -> 0), then an integer add on the lanes' bits.
        unsafe {
            let step = vreinterpretq_u32_s32(vcvtq_n_s32_f32::<23>(n));
            vreinterpretq_f32_u32(vaddq_u32(vreinterpretq_u32_f32(p), step))
        }
    }
    #[inline(always)]
    fn scale_by_pow2_sat(p: Self, n: Self) -> Self {
        // SAFETY: NEON is baseline on aarch64; `fcvtzs #23` gives n << 23
        // (NaN -> 0), then a saturating unsigned += signed on the bits.
        unsafe {
            let step = vcvtq_n_s32_f32::<23>(n);
            vreinterpretq_f32_u32(vsqaddq_u32(vreinterpretq_u32_f32(p), step))
        }
    }
    #[inline(always)]
    fn reduce_add(self) -> f32 {
        // SAFETY: NEON is baseline on aarch64. (l0 + l2, l1 + l3), then their sum.
        unsafe {
            let h = vadd_f32(vget_low_f32(self), vget_high_f32(self));
            vpadds_f32(h)
        }
    }
    #[inline(always)]
    fn reduce_max(self) -> f32 {
        // SAFETY: NEON is baseline on aarch64. `fmaxv` propagates NaN.
        unsafe { vmaxvq_f32(self) }
    }

    /// Lanes 0, 1 and lanes 2, 3.
    type Wide = [float64x2_t; 2];
    #[inline(always)]
    fn wide_zero() -> Self::Wide {
        // SAFETY: NEON is baseline on aarch64.
        unsafe { [vdupq_n_f64(0.0); 2] }
    }
    #[inline(always)]
    fn widen(self) -> Self::Wide {
        // SAFETY: NEON is baseline on aarch64 (`fcvtl`, `fcvtl2`).
        unsafe { [vcvt_f64_f32(vget_low_f32(self)), vcvt_high_f64_f32(self)] }
    }
    #[inline(always)]
    fn wide_add(a: Self::Wide, b: Self::Wide) -> Self::Wide {
        // SAFETY: NEON is baseline on aarch64.
        unsafe { [vaddq_f64(a[0], b[0]), vaddq_f64(a[1], b[1])] }
    }
    #[inline(always)]
    fn wide_mul(a: Self::Wide, b: Self::Wide) -> Self::Wide {
        // SAFETY: NEON is baseline on aarch64.
        unsafe { [vmulq_f64(a[0], b[0]), vmulq_f64(a[1], b[1])] }
    }
    #[inline(always)]
    fn wide_reduce_add(a: Self::Wide) -> f64 {
        // SAFETY: NEON is baseline on aarch64. (l0 + l2, l1 + l3), then their sum.
        unsafe { vpaddd_f64(vaddq_f64(a[0], a[1])) }
    }
    #[inline(always)]
    unsafe fn wide_store(a: Self::Wide, p: *mut f64) {
        // SAFETY: the caller guarantees 4 writable `f64`s at `p`.
        unsafe {
            vst1q_f64(p, a[0]);
            vst1q_f64(p.add(2), a[1]);
        }
    }
}

/// Named, not inlined into the dispatch, so they are easy to find in the asm.
#[inline(never)]
pub(super) fn softmax_two_pass(x: &[f32], y: &mut [f32], row_len: usize) {
    super::rows(
        x,
        y,
        row_len,
        super::row_kernels::softmax_two_pass_row::<float32x4_t, 4, 1>,
    )
}

#[inline(never)]
pub(super) fn softmax_online(x: &[f32], y: &mut [f32], row_len: usize) {
    super::rows(
        x,
        y,
        row_len,
        super::row_kernels::softmax_online_row::<float32x4_t, 4, 1>,
    )
}

#[inline(never)]
pub(super) fn log_softmax(x: &[f32], y: &mut [f32], row_len: usize) {
    super::rows(
        x,
        y,
        row_len,
        super::row_kernels::log_softmax_row::<float32x4_t, 4, 1>,
    )
}

#[inline(never)]
pub(super) fn sigmoid(x: &[f32], y: &mut [f32]) {
    // SAFETY: equal lengths (checked by the caller), distinct borrows.
    unsafe {
        super::row_kernels::map::<float32x4_t, 4>(
            x.as_ptr(),
            y.as_mut_ptr(),
            x.len(),
            super::sigmoid_lanes,
        )
    }
}

#[inline(never)]
pub(super) fn tanh(x: &[f32], y: &mut [f32]) {
    // SAFETY: equal lengths (checked by the caller), distinct borrows.
    unsafe {
        super::row_kernels::map::<float32x4_t, 4>(
            x.as_ptr(),
            y.as_mut_ptr(),
            x.len(),
            super::tanh_lanes,
        )
    }
}

#[inline(never)]
pub(super) fn exp(x: &[f32], y: &mut [f32]) {
    // SAFETY: equal lengths (checked by the caller), distinct borrows.
    unsafe {
        super::row_kernels::map::<float32x4_t, 4>(
            x.as_ptr(),
            y.as_mut_ptr(),
            x.len(),
            super::exp_lanes,
        )
    }
}

#[inline(never)]
pub(super) fn sigmoid_backward(y: &[f32], dy: &[f32], dx: &mut [f32]) {
    super::row_kernels::sigmoid_backward_row::<float32x4_t, 4>(y, dy, dx)
}
