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
//! A last group of fewer than four filters (units) is the last four, some
//! computed twice (the same values stored again); depth tails below 8 are
//! summed in scalar code; an op with fewer than 4 filters or units runs
//! the scalar loops.

use core::arch::aarch64::*;

use crate::ops::dot_neon::{sdot, widening};

use super::params::SvdfParams;
use super::scalar;
use crate::elem::QuantElem;
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

/// One SVDF step on NEON (the lengths checked by `run_with`): the same
/// state and output as `scalar::svdf`. Fewer than 4 filters or units go to
/// the scalar loops (a vector would be mostly padding).
#[allow(clippy::too_many_arguments)]
pub(super) fn svdf<S: StateLanes + QuantElem>(
    p: &SvdfParams,
    dotprod: bool,
    input: &[i8],
    feature: &[i8],
    time: &[S],
    bias: Option<&[i32]>,
    state: &mut [S],
    output: &mut [i8],
) {
    if p.shape.filters < 4 || p.shape.units() < 4 {
        scalar::svdf(p, input, feature, time, bias, state, output)
    } else if dotprod {
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
    svdf_with(
        p,
        // SAFETY: this function requires dotprod, so `sdot` may run.
        |acc, w, x| unsafe { sdot(acc, w, x) },
        input,
        feature,
        time,
        bias,
        state,
        output,
    )
}

/// The step for at least 4 filters and 4 units. Vectors take 4 filters
/// (units) at a time; the last group starts 4 before the end and so
/// computes some again, storing the same values.
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
    let (cols, filters, memory, rank, units) =
        (s.input_size, s.filters, s.memory, s.rank, s.units());
    let to_state = LaneMultiplier::new(p.rounding, p.feature_to_state);
    let to_output = LaneMultiplier::new(p.rounding, p.time_to_output);
    // Every filter's history one step older (see `scalar.rs`).
    state.copy_within(1.., 0);
    let per_batch = filters * memory;
    for ((x, state), y) in input
        .chunks_exact(cols)
        .zip(state.chunks_exact_mut(per_batch))
        .zip(output.chunks_exact_mut(units))
    {
        // The newest column.
        let newest = state[memory - 1..].as_mut_ptr();
        for group in (0..filters).step_by(4) {
            let f0 = group.min(filters - 4);
            // SAFETY: filters `f0..f0 + 4` exist (`f0 + 4 <= filters`):
            // `feature` holds `filters` rows of `cols` bytes, `x` `cols`
            // bytes, and this batch row's state `filters` rows of `memory`
            // values (checked by `run_with`), whose last values `newest +
            // f * memory` are written; the rest is register-only NEON.
            unsafe {
                let dots = feature_dots(
                    step,
                    feature.as_ptr().add(f0 * cols),
                    x.as_ptr(),
                    cols,
                    p.input_zero_point,
                );
                let v = vminq_s32(
                    vmaxq_s32(to_state.apply(dots), vdupq_n_s32(S::MIN)),
                    vdupq_n_s32(S::MAX),
                );
                let v = vaddq_s32(v, vdupq_n_s32(p.state_zero_point));
                let out = newest.add(f0 * memory);
                *out = S::truncate(vgetq_lane_s32::<0>(v));
                *out.add(memory) = S::truncate(vgetq_lane_s32::<1>(v));
                *out.add(2 * memory) = S::truncate(vgetq_lane_s32::<2>(v));
                *out.add(3 * memory) = S::truncate(vgetq_lane_s32::<3>(v));
            }
        }
        // The output units, each the sum of its `rank` filters' time dot
        // products (filter `u * rank + r` of unit `u`).
        for group in (0..units).step_by(4) {
            let u0 = group.min(units - 4);
            // SAFETY: units `u0..u0 + 4` exist; `bias` holds `units`
            // values, and filter `(u0 + j) * rank + r` is below `filters`
            // for `j < 4`, `r < rank`: `time` and this batch row's `state`
            // hold `filters` rows of `memory` values (checked by
            // `run_with`); the rest is register-only NEON and a store of 8
            // lanes into `out` (8 bytes).
            let out = unsafe {
                let mut acc = match bias {
                    Some(b) => vld1q_s32(b.as_ptr().add(u0)),
                    None => vdupq_n_s32(0),
                };
                for r in 0..rank {
                    let first = (u0 * rank + r) * memory;
                    let dots = time_dots(
                        time.as_ptr().add(first),
                        state.as_ptr().add(first),
                        rank * memory,
                        memory,
                        p.state_zero_point,
                    );
                    acc = vaddq_s32(acc, dots);
                }
                let v = vqaddq_s32(to_output.apply(acc), vdupq_n_s32(p.output_zero_point));
                let v = vminq_s32(vmaxq_s32(v, vdupq_n_s32(-128)), vdupq_n_s32(127));
                let narrow = vmovn_s32(v);
                let mut out = [0i8; 8];
                vst1_s8(out.as_mut_ptr(), vmovn_s16(vcombine_s16(narrow, narrow)));
                out
            };
            y[u0..u0 + 4].copy_from_slice(&out[..4]);
        }
    }
}

/// `sum_i w[j, i] * (x[i] - zp)` for the four rows `j` of `cols` bytes
/// from `w`, wrapping as the scalar sums do.
///
/// # Safety
/// `w` must point to `4 * cols` readable bytes, `x` to `cols`.
#[inline(always)]
unsafe fn feature_dots(
    step: impl Fn(int32x4_t, int8x16_t, int8x16_t) -> int32x4_t,
    w: *const i8,
    x: *const i8,
    cols: usize,
    zero_point: i32,
) -> int32x4_t {
    let vec16 = cols / 16 * 16;
    let vec8 = cols / 8 * 8;
    // SAFETY: every 16-byte load reads at `c + 16 <= vec16 <= cols` and the
    // 8-byte load at `vec16 + 8 <= vec8 <= cols` of a row of `cols` bytes
    // (the caller's guarantee); the rest is register-only NEON.
    unsafe {
        let ones = vdupq_n_s8(1);
        let mut dot = [vdupq_n_s32(0); 4];
        let mut sum = [vdupq_n_s32(0); 4];
        let mut c = 0;
        while c < vec16 {
            let xv = vld1q_s8(x.add(c));
            for j in 0..4 {
                let wv = vld1q_s8(w.add(j * cols + c));
                dot[j] = step(dot[j], wv, xv);
                sum[j] = step(sum[j], wv, ones);
            }
            c += 16;
        }
        if vec8 > vec16 {
            let xv = vcombine_s8(vld1_s8(x.add(c)), vdup_n_s8(0));
            for j in 0..4 {
                let wv = vcombine_s8(vld1_s8(w.add(j * cols + c)), vdup_n_s8(0));
                dot[j] = step(dot[j], wv, xv);
                sum[j] = step(sum[j], wv, ones);
            }
        }
        let result = vmlsq_n_s32(reduce4(dot), reduce4(sum), zero_point);
        if vec8 < cols {
            vaddq_s32(result, feature_tail(w, x, vec8, cols, zero_point))
        } else {
            result
        }
    }
}

/// The scalar part of [`feature_dots`]: columns `from..cols`.
///
/// # Safety
/// As [`feature_dots`].
#[inline(never)]
unsafe fn feature_tail(
    w: *const i8,
    x: *const i8,
    from: usize,
    cols: usize,
    zero_point: i32,
) -> int32x4_t {
    // SAFETY: the caller's guarantee: `4 * cols` readable bytes at `w`,
    // `cols` at `x`.
    unsafe {
        let w = core::slice::from_raw_parts(w, 4 * cols);
        let x = core::slice::from_raw_parts(x, cols);
        let tail: [i32; 4] = core::array::from_fn(|j| {
            w[j * cols + from..(j + 1) * cols]
                .iter()
                .zip(&x[from..])
                .fold(0i32, |acc, (&w, &x)| {
                    acc.wrapping_add((w as i32).wrapping_mul(x as i32 - zero_point))
                })
        });
        vld1q_s32(tail.as_ptr())
    }
}

/// `sum_m w[j][m] * (h[j][m] - zp)` for four filters `j` whose time weights
/// start at `w + j * stride` and histories at `h + j * stride`, `memory`
/// values each, wrapping as the scalar sums do.
///
/// # Safety
/// `memory` values must be readable at `w + j * stride` and
/// `h + j * stride` for `j < 4`.
#[inline(always)]
unsafe fn time_dots<S: StateLanes>(
    w: *const S,
    h: *const S,
    stride: usize,
    memory: usize,
    zero_point: i32,
) -> int32x4_t {
    let vec8 = memory / 8 * 8;
    // SAFETY: every load reads 8 values at `m + 8 <= vec8 <= memory` of a
    // row of `memory` values (the caller's guarantee); the rest is
    // register-only NEON.
    unsafe {
        let mut dot = [vdupq_n_s32(0); 4];
        let mut sum = [vdupq_n_s32(0); 4];
        let mut m = 0;
        while m < vec8 {
            for j in 0..4 {
                let wv = S::load8(w.add(j * stride + m));
                let hv = S::load8(h.add(j * stride + m));
                dot[j] = vmlal_s16(dot[j], vget_low_s16(wv), vget_low_s16(hv));
                dot[j] = vmlal_high_s16(dot[j], wv, hv);
                sum[j] = vpadalq_s16(sum[j], wv);
            }
            m += 8;
        }
        let result = vmlsq_n_s32(reduce4(dot), reduce4(sum), zero_point);
        if vec8 < memory {
            vaddq_s32(result, time_tail(w, h, stride, vec8, memory, zero_point))
        } else {
            result
        }
    }
}

/// The scalar part of [`time_dots`]: values `from..memory`.
///
/// # Safety
/// As [`time_dots`].
#[inline(never)]
unsafe fn time_tail<S: StateLanes>(
    w: *const S,
    h: *const S,
    stride: usize,
    from: usize,
    memory: usize,
    zero_point: i32,
) -> int32x4_t {
    // SAFETY: the caller's guarantee: `memory` readable values at each
    // row's start.
    unsafe {
        let tail: [i32; 4] = core::array::from_fn(|j| {
            let w = core::slice::from_raw_parts(w.add(j * stride), memory);
            let h = core::slice::from_raw_parts(h.add(j * stride), memory);
            w[from..]
                .iter()
                .zip(&h[from..])
                .fold(0i32, |acc, (&w, &h)| {
                    acc.wrapping_add(w.widen().wrapping_mul(h.widen().wrapping_sub(zero_point)))
                })
        });
        vld1q_s32(tail.as_ptr())
    }
}
