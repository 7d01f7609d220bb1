//! The SVDF step on NEON, four filters (or four output units) per vector,
//! equal to `scalar.rs` bit for bit.
//!
//! - Feature dot products: four weight rows against the input row per 16
//!   bytes, with `sdot` (FEAT_DotProd, detected once at `Svdf::new`) or
//!   widening multiplies (`smull` + `sadalp`). The input zero point comes
//!   out as `sum w * x - zp_x * sum w`: the same `i32` as the scalar
//!   `sum w * (x - zp_x)`, because both are the exact sum modulo 2^32
//!   (`x - zp_x` needs 9 bits, which `sdot` cannot take).
//! - Time dot products: eight state values per step, widened to `i16`,
//!   `smlal` / `smlal2` into `i32`, the state zero point taken out the same
//!   way (`sum wt * h - zp_s * sum wt`).
//! - The two requantizations on lanes with the scalar `Rounding::multiply`'s
//!   values (`requantize_single` / `requantize_lanes`).
//!
//! Rows that do not fill a vector of four repeat the last filter or unit
//! and only the real lanes are stored; depth tails below 8 are summed in
//! scalar code.

use core::arch::aarch64::*;

use super::params::SvdfParams;
use crate::ops::requant::neon::requantize_single;
use crate::ops::requant::{requantize_lanes, ChannelMultiplier};
use crate::quant::{QuantizedMultiplier, Rounding};

/// The state types as NEON sees them.
pub(super) trait StateLanes: Copy {
    /// Smallest and largest value, widened.
    const MIN: i32;
    const MAX: i32;
    /// Eight values at `p`, widened to `i16`.
    ///
    /// # Safety
    /// `p` must point to 8 readable values.
    unsafe fn load8(p: *const Self) -> int16x8_t;
    /// Widened to `i32`.
    fn widen(self) -> i32;
    /// `x` narrowed as a C cast does (two's-complement wrap).
    fn truncate(x: i32) -> Self;
}

impl StateLanes for i16 {
    const MIN: i32 = i16::MIN as i32;
    const MAX: i32 = i16::MAX as i32;
    #[inline(always)]
    unsafe fn load8(p: *const i16) -> int16x8_t {
        // SAFETY: the caller guarantees 8 readable values at `p`.
        unsafe { vld1q_s16(p) }
    }
    #[inline(always)]
    fn widen(self) -> i32 {
        self as i32
    }
    #[inline(always)]
    fn truncate(x: i32) -> i16 {
        x as i16
    }
}

impl StateLanes for i8 {
    const MIN: i32 = i8::MIN as i32;
    const MAX: i32 = i8::MAX as i32;
    #[inline(always)]
    unsafe fn load8(p: *const i8) -> int16x8_t {
        // SAFETY: the caller guarantees 8 readable values at `p`.
        unsafe { vmovl_s8(vld1_s8(p)) }
    }
    #[inline(always)]
    fn widen(self) -> i32 {
        self as i32
    }
    #[inline(always)]
    fn truncate(x: i32) -> i8 {
        x as i8
    }
}

/// One quantized multiplier broadcast to four lanes, in the form the
/// rounding needs.
#[derive(Clone, Copy)]
struct LaneMultiplier {
    single: bool,
    multiplier: int32x4_t,
    /// Double rounding: `max(shift, 0)` (at most 32, where `sqshl`
    /// already saturates every non-zero lane, as the scalar clamp does)
    /// and `min(shift, 0)`.
    left_shift: int32x4_t,
    neg_right_shift: int32x4_t,
    /// Single rounding: `-(31 - shift)`.
    neg_total_shift: int64x2_t,
}

impl LaneMultiplier {
    #[inline(always)]
    fn new(rounding: Rounding, q: QuantizedMultiplier) -> LaneMultiplier {
        // SAFETY: register-only NEON (a target feature of this module).
        unsafe {
            LaneMultiplier {
                single: rounding == Rounding::Single,
                multiplier: vdupq_n_s32(q.multiplier),
                left_shift: vdupq_n_s32(q.shift.clamp(0, 32)),
                neg_right_shift: vdupq_n_s32(q.shift.min(0)),
                neg_total_shift: vdupq_n_s64(-(31 - q.shift as i64)),
            }
        }
    }

    /// `rounding.multiply(acc, q)` on each lane.
    #[inline(always)]
    fn apply(&self, acc: int32x4_t) -> int32x4_t {
        if self.single {
            requantize_single(acc, self.multiplier, &[self.neg_total_shift; 2])
        } else {
            requantize_lanes(
                acc,
                &ChannelMultiplier {
                    left_shift: self.left_shift,
                    multiplier: self.multiplier,
                    neg_right_shift: self.neg_right_shift,
                },
            )
        }
    }
}

/// `[sum a0, sum a1, sum a2, sum a3]`.
#[inline(always)]
fn reduce4(a: [int32x4_t; 4]) -> int32x4_t {
    // SAFETY: register-only NEON (a target feature of this module).
    unsafe { vpaddq_s32(vpaddq_s32(a[0], a[1]), vpaddq_s32(a[2], a[3])) }
}

/// `acc += dot4(w, x)` per 32-bit lane with `sdot`.
#[inline]
#[target_feature(enable = "dotprod")]
unsafe fn sdot(acc: int32x4_t, w: int8x16_t, x: int8x16_t) -> int32x4_t {
    let mut acc = acc;
    // SAFETY: `sdot` works on registers only; the function requires
    // dotprod, so the instruction exists (the intrinsic is not stable).
    unsafe {
        core::arch::asm!(
            "sdot {acc:v}.4s, {w:v}.16b, {x:v}.16b",
            acc = inout(vreg) acc,
            w = in(vreg) w,
            x = in(vreg) x,
            options(pure, nomem, nostack, preserves_flags),
        );
    }
    acc
}

/// `acc += pairwise sums of w * x` (16 products into 4 lanes) without
/// dotprod.
#[inline(always)]
fn widening(acc: int32x4_t, w: int8x16_t, x: int8x16_t) -> int32x4_t {
    // SAFETY: register-only NEON (a target feature of this module).
    unsafe {
        let acc = vpadalq_s16(acc, vmull_s8(vget_low_s8(w), vget_low_s8(x)));
        vpadalq_s16(acc, vmull_high_s8(w, x))
    }
}

/// One SVDF step on NEON (the lengths checked by `run_with`): the same
/// state and output as `scalar::svdf`.
#[allow(clippy::too_many_arguments)]
pub(super) fn svdf<S: StateLanes>(
    p: &SvdfParams,
    dotprod: bool,
    input: &[i8],
    feature: &[i8],
    time: &[S],
    bias: Option<&[i32]>,
    state: &mut [S],
    output: &mut [i8],
) {
    if dotprod {
        // SAFETY: the CPU has dotprod (detected at `Svdf::new`).
        unsafe { svdf_dot(p, input, feature, time, bias, state, output) }
    } else {
        svdf_with(p, widening, input, feature, time, bias, state, output)
    }
}

/// The `sdot` instantiation.
#[target_feature(enable = "dotprod")]
unsafe fn svdf_dot<S: StateLanes>(
    p: &SvdfParams,
    input: &[i8],
    feature: &[i8],
    time: &[S],
    bias: Option<&[i32]>,
    state: &mut [S],
    output: &mut [i8],
) {
    // SAFETY: this function requires dotprod, so `sdot` may run.
    svdf_with(
        p,
        |acc, w, x| unsafe { sdot(acc, w, x) },
        input,
        feature,
        time,
        bias,
        state,
        output,
    )
}

#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn svdf_with<S: StateLanes>(
    p: &SvdfParams,
    step: impl Fn(int32x4_t, int8x16_t, int8x16_t) -> int32x4_t + Copy,
    input: &[i8],
    feature: &[i8],
    time: &[S],
    bias: Option<&[i32]>,
    state: &mut [S],
    output: &mut [i8],
) {
    let s = p.shape;
    let (filters, memory, rank, units) = (s.filters, s.memory, s.rank, s.units());
    let to_state = LaneMultiplier::new(p.rounding, p.feature_to_state);
    let to_output = LaneMultiplier::new(p.rounding, p.time_to_output);
    // Every filter's history one step older (see `scalar.rs`).
    state.copy_within(1.., 0);
    let per_batch = filters * memory;
    for ((x, state), y) in input
        .chunks_exact(s.input_size)
        .zip(state.chunks_exact_mut(per_batch))
        .zip(output.chunks_exact_mut(units))
    {
        // The newest column, four filters at a time.
        for f0 in (0..filters).step_by(4) {
            let rows = core::array::from_fn(|j| (f0 + j).min(filters - 1));
            let dots = feature_dots(step, feature, s.input_size, rows, x, p.input_zero_point);
            let mut column = [0i32; 4];
            // SAFETY: register-only NEON, and a store of 4 lanes into
            // `column` (4 `i32`).
            unsafe {
                let v = vminq_s32(
                    vmaxq_s32(to_state.apply(dots), vdupq_n_s32(S::MIN)),
                    vdupq_n_s32(S::MAX),
                );
                vst1q_s32(
                    column.as_mut_ptr(),
                    vaddq_s32(v, vdupq_n_s32(p.state_zero_point)),
                );
            }
            for (j, &v) in column.iter().enumerate().take(filters - f0) {
                state[(f0 + j) * memory + memory - 1] = S::truncate(v);
            }
        }
        // The output units, four at a time, each the sum of its `rank`
        // filters' time dot products.
        for u0 in (0..units).step_by(4) {
            let unit = |j: usize| (u0 + j).min(units - 1);
            let mut bias4 = [0i32; 4];
            if let Some(b) = bias {
                for (j, v) in bias4.iter_mut().enumerate() {
                    *v = b[unit(j)];
                }
            }
            // SAFETY: a load of 4 lanes from `bias4`.
            let mut acc = unsafe { vld1q_s32(bias4.as_ptr()) };
            for r in 0..rank {
                let rows = core::array::from_fn(|j| unit(j) * rank + r);
                let dots = time_dots(time, state, memory, rows, p.state_zero_point);
                // SAFETY: register-only NEON.
                acc = unsafe { vaddq_s32(acc, dots) };
            }
            let mut out = [0i8; 8];
            // SAFETY: register-only NEON, and a store of 8 lanes into `out`
            // (8 bytes).
            unsafe {
                let v = vqaddq_s32(to_output.apply(acc), vdupq_n_s32(p.output_zero_point));
                let v = vminq_s32(vmaxq_s32(v, vdupq_n_s32(-128)), vdupq_n_s32(127));
                let narrow = vmovn_s32(v);
                vst1_s8(out.as_mut_ptr(), vmovn_s16(vcombine_s16(narrow, narrow)));
            }
            let n = (units - u0).min(4);
            y[u0..u0 + n].copy_from_slice(&out[..n]);
        }
    }
}

/// `sum_i w[r, i] * (x[i] - zp)` for the four rows `rows` of `feature`
/// (`cols` bytes each), wrapping as the scalar sums do.
#[inline(always)]
fn feature_dots(
    step: impl Fn(int32x4_t, int8x16_t, int8x16_t) -> int32x4_t,
    feature: &[i8],
    cols: usize,
    rows: [usize; 4],
    x: &[i8],
    zero_point: i32,
) -> int32x4_t {
    let w: [&[i8]; 4] = rows.map(|r| &feature[r * cols..(r + 1) * cols]);
    let vec16 = cols / 16 * 16;
    let vec8 = cols / 8 * 8;
    // SAFETY: every 16-byte load reads at `c + 16 <= vec16 <= cols` and the
    // 8-byte load at `vec16 + 8 <= vec8 <= cols` of a row of `cols` bytes
    // (`w[j]` and `x`); the rest is register-only NEON and a store of 4
    // lanes into `tail` (4 `i32`).
    unsafe {
        let ones = vdupq_n_s8(1);
        let mut dot = [vdupq_n_s32(0); 4];
        let mut sum = [vdupq_n_s32(0); 4];
        let mut c = 0;
        while c < vec16 {
            let xv = vld1q_s8(x.as_ptr().add(c));
            for j in 0..4 {
                let wv = vld1q_s8(w[j].as_ptr().add(c));
                dot[j] = step(dot[j], wv, xv);
                sum[j] = step(sum[j], wv, ones);
            }
            c += 16;
        }
        if vec8 > vec16 {
            let xv = vcombine_s8(vld1_s8(x.as_ptr().add(c)), vdup_n_s8(0));
            for j in 0..4 {
                let wv = vcombine_s8(vld1_s8(w[j].as_ptr().add(c)), vdup_n_s8(0));
                dot[j] = step(dot[j], wv, xv);
                sum[j] = step(sum[j], wv, ones);
            }
        }
        let mut result = vmlsq_n_s32(reduce4(dot), reduce4(sum), zero_point);
        if vec8 < cols {
            let tail: [i32; 4] = core::array::from_fn(|j| {
                w[j][vec8..]
                    .iter()
                    .zip(&x[vec8..])
                    .fold(0i32, |acc, (&w, &x)| {
                        acc.wrapping_add((w as i32).wrapping_mul(x as i32 - zero_point))
                    })
            });
            result = vaddq_s32(result, vld1q_s32(tail.as_ptr()));
        }
        result
    }
}

/// `sum_m time[f, m] * (state[f, m] - zp)` for the four filters `rows`
/// (`memory` values each), wrapping as the scalar sums do.
#[inline(always)]
fn time_dots<S: StateLanes>(
    time: &[S],
    state: &[S],
    memory: usize,
    rows: [usize; 4],
    zero_point: i32,
) -> int32x4_t {
    let w: [&[S]; 4] = rows.map(|r| &time[r * memory..(r + 1) * memory]);
    let h: [&[S]; 4] = rows.map(|r| &state[r * memory..(r + 1) * memory]);
    let vec8 = memory / 8 * 8;
    // SAFETY: every load reads 8 values at `m + 8 <= vec8 <= memory` of a
    // row of `memory` values (`w[j]`, `h[j]`); the rest is register-only
    // NEON and a load of 4 lanes from `tail` (4 `i32`).
    unsafe {
        let mut dot = [vdupq_n_s32(0); 4];
        let mut sum = [vdupq_n_s32(0); 4];
        let mut m = 0;
        while m < vec8 {
            for j in 0..4 {
                let wv = S::load8(w[j].as_ptr().add(m));
                let hv = S::load8(h[j].as_ptr().add(m));
                dot[j] = vmlal_s16(dot[j], vget_low_s16(wv), vget_low_s16(hv));
                dot[j] = vmlal_high_s16(dot[j], wv, hv);
                sum[j] = vpadalq_s16(sum[j], wv);
            }
            m += 8;
        }
        let mut result = vmlsq_n_s32(reduce4(dot), reduce4(sum), zero_point);
        if vec8 < memory {
            let tail: [i32; 4] = core::array::from_fn(|j| {
                w[j][vec8..]
                    .iter()
                    .zip(&h[j][vec8..])
                    .fold(0i32, |acc, (&w, &h)| {
                        acc.wrapping_add(w.widen().wrapping_mul(h.widen().wrapping_sub(zero_point)))
                    })
            });
            result = vaddq_s32(result, vld1q_s32(tail.as_ptr()));
        }
        result
    }
}
