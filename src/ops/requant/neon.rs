//! The NEON output stage of the layer ops ([`Gemm`](crate::Gemm),
//! [`NoNorm`](crate::NoNorm), [`Add`](crate::Add)): [`ChannelLane`] on
//! `int32x4_t` (four channels, bit-exact with the `i32` reference), the
//! per-block specialised [`requantize`], and the zero point, clamp and
//! saturating narrows of [`narrow_store`].

use super::{requantize_lanes, ChannelLane, ChannelMultiplier};
use crate::fixedpoint::Lane;
use core::arch::aarch64::*;

impl ChannelLane for int32x4_t {
    #[inline(always)]
    fn shl_lanes(self, n: Self) -> Self {
        // SAFETY: neon is a compile-time target feature (cfg on this module).
        unsafe { vqshlq_s32(self, n) }
    }
    #[inline(always)]
    fn rounding_divide_by_pot_lanes(self, neg_exponent: Self) -> Self {
        // The lane-vector form of `Lane::rounding_divide_by_pot` for int32x4_t:
        // -1 (saturating) on negative lanes with a non-zero exponent turns
        // `srshl`'s ties toward +inf into ties away from zero.
        // SAFETY: neon is a compile-time target feature (cfg on this module).
        unsafe {
            let fixup = vshrq_n_s32::<31>(vandq_s32(self, neg_exponent));
            vrshlq_s32(vqaddq_s32(self, fixup), neg_exponent)
        }
    }
    #[inline(always)]
    fn wrapping_mul(self, b: Self) -> Self {
        // SAFETY: neon is a compile-time target feature (cfg on this module).
        unsafe { vmulq_s32(self, b) }
    }
}

/// `requantize_lanes` for one vector of 4 channels, specialised per block:
/// without the left shift when no channel of the block has one (shifting by
/// 0 is the identity), and, when every channel shifts right by at least 1,
/// with the sign fix-up of the rounding divide as one `ssra` (`x + (x >> 31)`)
/// instead of `and` + `sshr` + `sqadd`: the same values, because the
/// fix-up's `and` with a negative shift keeps the sign bit, and the saturation
/// of `sqadd` never acts (`sqrdmulh` by a multiplier below 2^31 cannot give
/// `i32::MIN`, so adding -1 cannot overflow).
/// Shared by the GEMM and NoNorm kernels.
#[inline(always)]
pub(crate) fn requantize<const LEFT: bool, const FAST: bool>(
    acc: int32x4_t,
    m: &ChannelMultiplier<int32x4_t>,
) -> int32x4_t {
    if LEFT && !FAST {
        return requantize_lanes(acc, m);
    }
    let x = if LEFT {
        acc.shl_lanes(m.left_shift)
    } else {
        acc
    };
    let x = x.saturating_rounding_doubling_high_mul(m.multiplier);
    if FAST {
        // SAFETY: neon is a compile-time target feature (cfg on this module).
        unsafe { vrshlq_s32(vsraq_n_s32::<31>(x, x), m.neg_right_shift) }
    } else {
        x.rounding_divide_by_pot_lanes(m.neg_right_shift)
    }
}

/// Single rounding (`Rounding::Single.multiply`) of 4 accumulators, each by
/// its lane's multiplier: `smull`/`smull2` form the exact products
/// `acc * multiplier` in 64 bits (`|acc * multiplier| < 2^62`), `srshl` by the
/// negated total shift `-(31 - shift)` (in `-62..=-1`) adds `2^(30 - shift)`
/// and shifts right arithmetically, which is the reference's
/// `(acc * multiplier + 2^(30 - shift)) >> (31 - shift)` (the rounding add is
/// done without overflow: the architecture defines it on the unbounded
/// value, and the result fits 63 bits), and `sqxtn` saturates to `i32` as
/// the reference's clamp does. `neg_total_shift[h]` holds lanes `2h, 2h + 1`.
#[inline(always)]
pub(crate) fn requantize_single(
    acc: int32x4_t,
    multiplier: int32x4_t,
    neg_total_shift: &[int64x2_t; 2],
) -> int32x4_t {
    // SAFETY: neon is a compile-time target feature (cfg on this module).
    unsafe {
        let lo = vrshlq_s64(
            vmull_s32(vget_low_s32(acc), vget_low_s32(multiplier)),
            neg_total_shift[0],
        );
        let hi = vrshlq_s64(vmull_high_s32(acc, multiplier), neg_total_shift[1]);
        vqmovn_high_s64(vqmovn_s64(lo), hi)
    }
}

/// [`Requantization::RealF64`](crate::quant::Requantization::RealF64) of 4
/// accumulators, each by its lane's real multiplier (`real[h]` holds lanes
/// `2h, 2h + 1`): widened to `i64` and converted to `f64` (exact), one `f64`
/// multiply per lane (`fmul`, rounded to nearest as the scalar product is),
/// `fcvtas` (round to nearest, ties away from zero, to `i64`, saturating) and
/// `sqxtn` to `i32`: [`requantize_real_f64`](crate::quant::requantize_real_f64)
/// lane by lane.
#[inline(always)]
pub(crate) fn requantize_real_f64(acc: int32x4_t, real: &[float64x2_t; 2]) -> int32x4_t {
    // SAFETY: neon is a compile-time target feature (cfg on this module).
    unsafe {
        let lo = vcvtq_f64_s64(vmovl_s32(vget_low_s32(acc)));
        let hi = vcvtq_f64_s64(vmovl_high_s32(acc));
        let lo = vcvtaq_s64_f64(vmulq_f64(lo, real[0]));
        let hi = vcvtaq_s64_f64(vmulq_f64(hi, real[1]));
        vqmovn_high_s64(vqmovn_s64(lo), hi)
    }
}

/// [`Requantization::XnnpackF32`](crate::quant::Requantization::XnnpackF32)
/// of 4 accumulators: `scvtf` to `f32` (rounded to nearest, as the scalar
/// `acc as f32`), one `fmul` by each lane's scale, `fcvtns` (round to
/// nearest, ties to even, saturating): [`requantize_xnnpack_f32`](crate::quant::requantize_xnnpack_f32)
/// lane by lane.
#[inline(always)]
pub(crate) fn requantize_xnnpack_f32(acc: int32x4_t, scale: float32x4_t) -> int32x4_t {
    // SAFETY: neon is a compile-time target feature (cfg on this module).
    unsafe { vcvtnq_s32_f32(vmulq_f32(vcvtq_f32_s32(acc), scale)) }
}

/// [`Requantization::GemvTiesUpward`](crate::quant::Requantization::GemvTiesUpward)
/// on lanes: `srshl(sqrdmulh(shl(acc, left), multiplier), neg_right)`, the
/// left shift wrapping, as [`requantize_gemv_ties_upward`](crate::quant::requantize_gemv_ties_upward).
#[inline(always)]
pub(crate) fn requantize_gemv_ties_upward(
    acc: int32x4_t,
    m: &ChannelMultiplier<int32x4_t>,
) -> int32x4_t {
    // SAFETY: neon is a compile-time target feature (cfg on this module).
    unsafe {
        vrshlq_s32(
            vqrdmulhq_s32(vshlq_s32(acc, m.left_shift), m.multiplier),
            m.neg_right_shift,
        )
    }
}

/// The output stage of 16 requantized values: add the output zero point and
/// clamp, as `output_stage`, with the clamp to `[-128, 127]` done by the
/// saturating narrows. Saturating `i32 -> i16` first and then adding the zero
/// point (`|zp| <= 128`) with `i16` saturation gives the same int8 as the
/// `i32` saturating add: a value outside `i16` stays outside `i8` on the same
/// side after adding the zero point. `CLAMP`: the activation range is
/// narrower than `[-128, 127]`.
#[inline(always)]
pub(crate) fn narrow_store<const CLAMP: bool>(
    v: [int32x4_t; 4],
    zp: int16x8_t,
    min: int8x16_t,
    max: int8x16_t,
    po: *mut i8,
) {
    // SAFETY: neon is a compile-time target feature (cfg on this module); the
    // caller guarantees 16 writable bytes at `po`.
    unsafe {
        let lo = vqaddq_s16(vqmovn_high_s32(vqmovn_s32(v[0]), v[1]), zp);
        let hi = vqaddq_s16(vqmovn_high_s32(vqmovn_s32(v[2]), v[3]), zp);
        let mut o = vqmovn_high_s16(vqmovn_s16(lo), hi);
        if CLAMP {
            o = vminq_s8(vmaxq_s8(o, min), max);
        }
        vst1q_s8(po, o);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::quant::{QuantizedMultiplier, Rounding};

    /// `requantize_single` on 4 lanes against `Rounding::Single.multiply`
    /// lane by lane.
    fn check(acc: [i32; 4], multiplier: [i32; 4], shift: [i32; 4]) {
        // SAFETY: neon is a compile-time target feature (cfg on this module);
        // every load and store is of a 4- or 2-element array.
        let got = unsafe {
            let neg: [i64; 4] = core::array::from_fn(|j| -(31 - shift[j] as i64));
            let s = [vld1q_s64(neg.as_ptr()), vld1q_s64(neg.as_ptr().add(2))];
            let r = requantize_single(vld1q_s32(acc.as_ptr()), vld1q_s32(multiplier.as_ptr()), &s);
            let mut out = [0i32; 4];
            vst1q_s32(out.as_mut_ptr(), r);
            out
        };
        for j in 0..4 {
            let q = QuantizedMultiplier {
                multiplier: multiplier[j],
                shift: shift[j],
            };
            assert_eq!(
                got[j],
                Rounding::Single.multiply(acc[j], q),
                "acc {} m {} shift {}",
                acc[j],
                multiplier[j],
                shift[j]
            );
        }
    }

    #[test]
    fn single_rounding_lanes_equal_the_scalar_reference_on_every_shift_and_extreme() {
        let accs = [
            i32::MIN,
            i32::MIN + 1,
            i32::MAX,
            i32::MAX - 1,
            0,
            1,
            -1,
            2,
            -2,
            3,
            -3,
            1 << 30,
            -(1 << 30),
            123_456_789,
            -987_654_321,
        ];
        let mults = [
            0,
            1,
            1 << 30,
            (1 << 30) + 1,
            i32::MAX,
            i32::MAX - 1,
            1_518_500_250,
        ];
        for shift in -31i32..=30 {
            for &m in &mults {
                for a in accs.chunks(4) {
                    let mut acc = [a[0]; 4];
                    acc[..a.len()].copy_from_slice(a);
                    // Mixed shifts across lanes, as per-channel blocks have.
                    let other = (shift + 17).rem_euclid(62) - 31;
                    check(acc, [m, m, m, m], [shift, other, shift, other]);
                }
            }
        }
    }

    /// `requantize_real_f64` on 4 lanes against the scalar reference.
    fn check_real(acc: [i32; 4], real: [f64; 4]) {
        // SAFETY: neon is a compile-time target feature (cfg on this module);
        // every load and store is of a 4- or 2-element array.
        let got = unsafe {
            let r = [vld1q_f64(real.as_ptr()), vld1q_f64(real.as_ptr().add(2))];
            let v = requantize_real_f64(vld1q_s32(acc.as_ptr()), &r);
            let mut out = [0i32; 4];
            vst1q_s32(out.as_mut_ptr(), v);
            out
        };
        for j in 0..4 {
            assert_eq!(
                got[j],
                crate::quant::requantize_real_f64(acc[j], real[j]),
                "acc {} real {:e}",
                acc[j],
                real[j]
            );
        }
    }

    #[test]
    fn real_f64_lanes_equal_the_scalar_reference() {
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        // Ties (odd * 2^(s-1) * 2^-s), saturation (real up to 1e12) and random values.
        for s in 0u32..=20 {
            let r = 1.0 / (1u64 << s) as f64;
            for odd in [-7, -3, -1, 1, 3, 7] {
                let acc = odd << s.saturating_sub(1);
                check_real([acc, -acc, acc + 1, acc - 1], [r; 4]);
            }
        }
        check_real([i32::MIN, i32::MAX, -1, 1], [1e12, 1e12, 1e12, 1e12]);
        check_real([i32::MIN, i32::MAX, 0, 7], [1.0, 1.0, 1e-300, 3.5]);
        for _ in 0..200_000 {
            let sh = next() % 31;
            let acc: [i32; 4] = core::array::from_fn(|_| next() as i32 >> sh);
            let real: [f64; 4] = core::array::from_fn(|_| {
                let e = (next() % 48) as i32 - 40;
                (1.0 + (next() >> 11) as f64 / (1u64 << 53) as f64) * 2f64.powi(e)
            });
            check_real(acc, real);
        }
    }

    /// `requantize_xnnpack_f32` on 4 lanes against the scalar reference.
    fn check_xnnpack(acc: [i32; 4], scale: [f32; 4]) {
        // SAFETY: neon is a compile-time target feature (cfg on this module);
        // every load and store is of a 4-element array.
        let got = unsafe {
            let v = requantize_xnnpack_f32(vld1q_s32(acc.as_ptr()), vld1q_f32(scale.as_ptr()));
            let mut out = [0i32; 4];
            vst1q_s32(out.as_mut_ptr(), v);
            out
        };
        for j in 0..4 {
            let expected = crate::quant::requantize_xnnpack_f32(acc[j], scale[j]);
            assert_eq!(got[j], expected, "acc {} scale {:e}", acc[j], scale[j]);
        }
    }

    #[test]
    fn xnnpack_f32_lanes_equal_the_scalar_reference() {
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        // Ties to even (odd * 2^(s-1) at scale 2^-s), saturation, random.
        for s in 0u32..=20 {
            let r = 1.0 / (1u64 << s) as f32;
            for odd in [-7, -3, -1, 1, 3, 7] {
                let acc = odd << s.saturating_sub(1);
                check_xnnpack([acc, -acc, acc + 1, acc - 1], [r; 4]);
            }
        }
        check_xnnpack([i32::MIN, i32::MAX, -1, 1], [255.0; 4]);
        check_xnnpack([i32::MIN, i32::MAX, 0, 7], [1.0, 1.0, 1e-30, 3.5]);
        for _ in 0..200_000 {
            let sh = next() % 31;
            let acc: [i32; 4] = core::array::from_fn(|_| next() as i32 >> sh);
            let scale: [f32; 4] = core::array::from_fn(|_| {
                let e = (next() % 40) as i32 - 32;
                (1.0 + (next() >> 41) as f32 / (1u32 << 23) as f32) * 2f32.powi(e)
            });
            check_xnnpack(acc, scale);
        }
    }

    #[test]
    fn single_rounding_lanes_round_ties_upward() {
        // multiplier 2^30 with shift -s is 2^(-1 - s): acc = odd * 2^s are ties.
        for s in 0..=29 {
            for odd in [-7, -5, -3, -1, 1, 3, 5, 7] {
                let acc = odd << s;
                check([acc, -acc, acc + 1, acc - 1], [1 << 30; 4], [-s; 4]);
            }
        }
    }

    #[test]
    fn single_rounding_lanes_equal_the_reference_on_random_values() {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for _ in 0..200_000 {
            let r = next();
            let acc: [i32; 4] = core::array::from_fn(|j| (next() >> (j * 8)) as i32 >> (r % 31));
            let multiplier: [i32; 4] =
                core::array::from_fn(|_| ((next() as u32 >> 1) | (1 << 30)) as i32);
            let shift: [i32; 4] = core::array::from_fn(|_| (next() % 62) as i32 - 31);
            check(acc, multiplier, shift);
        }
    }
}
