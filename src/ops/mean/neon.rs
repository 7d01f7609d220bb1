//! [`Backend::Neon`](crate::Backend::Neon) MEAN on 8-bit data: the
//! `[outer, reduced, inner]` layouts, 16 inner elements (channels) at a
//! time. The 16 sums are built in `i16` lanes (`saddw` / `uaddw`) for up
//! to 256 reduced rows at a time, which cannot overflow there
//! (`256 * 128` and `256 * 255` fit), and widened into `i32` lanes after
//! each such chunk: the exact sums, wrapping in `i32` as the scalar ones.
//! Inner elements past the last full block of 16, and layouts that are
//! not three loops, take the scalar code.

use core::arch::aarch64::*;

use super::params::{MeanParams, Path};
use super::scalar;
use crate::fixedpoint::Lane;
use crate::ops::requant::neon::requantize_single;
use crate::ops::requant::{requantize_lanes, ChannelLane, ChannelMultiplier};
use crate::quant::Rounding;

/// Reduced rows summed in `i16` lanes before they are widened.
const CHUNK_ROWS: usize = 256;

/// The prepared multiply of 4 sums (offset already subtracted), as
/// [`MeanParams::requantize`] does it lane by lane.
struct Multiply {
    rounding: Rounding,
    /// Double rounding with ties upward in the final shift (TFLite's NEON
    /// height-width blocks).
    half_up: bool,
    lanes: ChannelMultiplier<int32x4_t>,
    neg_total_shift: [int64x2_t; 2],
    /// XNNPACK's `f32` scale and zero ([`Path::Xnnpack`]).
    xnnpack: Option<(float32x4_t, float32x4_t)>,
}

impl Multiply {
    fn new(p: &MeanParams) -> Multiply {
        let q = p.multiplier;
        // SAFETY: neon is a compile-time target feature (cfg on this module).
        unsafe {
            let total = vdupq_n_s64(-(31 - q.shift.clamp(-31, 30)) as i64);
            Multiply {
                rounding: p.rounding,
                half_up: p.path == Path::HeightWidth,
                lanes: ChannelMultiplier {
                    left_shift: vdupq_n_s32(q.shift.max(0)),
                    multiplier: vdupq_n_s32(q.multiplier),
                    neg_right_shift: vdupq_n_s32(q.shift.min(0)),
                },
                neg_total_shift: [total, total],
                xnnpack: (p.path == Path::Xnnpack)
                    .then(|| (vdupq_n_f32(p.xnnpack.scale), vdupq_n_f32(p.xnnpack.zero))),
            }
        }
    }

    #[inline(always)]
    fn apply(&self, x: int32x4_t) -> int32x4_t {
        if let Some((scale, zero)) = self.xnnpack {
            // A separate multiply and add (no fused `fmla`), as the scalar
            // code; `fcvtns` rounds ties to even and saturates, which the
            // narrowing then carries to the type's bounds.
            // SAFETY: neon is a compile-time target feature (cfg on this module).
            return unsafe { vcvtnq_s32_f32(vaddq_f32(vmulq_f32(vcvtq_f32_s32(x), scale), zero)) };
        }
        match self.rounding {
            Rounding::Single => requantize_single(x, self.lanes.multiplier, &self.neg_total_shift),
            Rounding::Double if self.half_up => {
                let high = x
                    .shl_lanes(self.lanes.left_shift)
                    .saturating_rounding_doubling_high_mul(self.lanes.multiplier);
                // SAFETY: neon is a compile-time target feature (cfg on this module).
                unsafe { vrshlq_s32(high, self.lanes.neg_right_shift) }
            }
            Rounding::Double => requantize_lanes(x, &self.lanes),
        }
    }
}

/// Whether the vector blocks may run: a three-loop layout whose blocks of
/// 16 inner elements are blocks of TFLite's channels where the two
/// arithmetics of the height-width path differ.
fn blocks(p: &MeanParams) -> Option<super::params::ThreeLoops> {
    let t = p.layout.three_loops()?;
    let split = p.rounding == Rounding::Double && p.vector_channels > 0;
    if split && t.inner != p.channels {
        return None;
    }
    Some(t)
}

macro_rules! mean_8bit {
    ($name:ident, $t:ty, $load:ident, $widen_lo:ident, $widen_hi:ident, $acc16:ty,
     $zero16:ident, $to32_lo:expr, $to32_hi:expr, $narrow:expr, $store:ident) => {
        /// MEAN of 8-bit data; `output` is the whole output. Lengths are
        /// checked by the caller.
        #[inline(never)]
        pub(crate) fn $name(p: &MeanParams, input: &[$t], output: &mut [$t]) {
            let Some(t) = blocks(p) else {
                return scalar::mean(p, input, output);
            };
            assert!(input.len() >= t.outer * t.reduced * t.inner);
            assert!(output.len() >= t.outer * t.inner);
            let m = Multiply::new(p);
            let full = t.inner / 16 * 16;
            // SAFETY: neon is a compile-time target feature (cfg on this
            // module); every load reads 16 elements at `(o * reduced + r) *
            // inner + c` with `c + 16 <= inner`, inside `input` (asserted
            // above), and every store writes 16 at `o * inner + c`, inside
            // `output`.
            unsafe {
                let offset = vdupq_n_s32(p.sum_offset);
                let out_offset = vdupq_n_s32(p.output_offset);
                for o in 0..t.outer {
                    let image = input.as_ptr().add(o * t.reduced * t.inner);
                    let mut c = 0;
                    while c < full {
                        let mut acc = [vdupq_n_s32(0); 4];
                        let mut r0 = 0;
                        while r0 < t.reduced {
                            let r1 = (r0 + CHUNK_ROWS).min(t.reduced);
                            let mut lo: $acc16 = $zero16(0);
                            let mut hi: $acc16 = $zero16(0);
                            for r in r0..r1 {
                                let v = $load(image.add(r * t.inner + c));
                                lo = $widen_lo(lo, v);
                                hi = $widen_hi(hi, v);
                            }
                            acc[0] = vaddq_s32(acc[0], $to32_lo(lo));
                            acc[1] = vaddq_s32(acc[1], $to32_hi(lo));
                            acc[2] = vaddq_s32(acc[2], $to32_lo(hi));
                            acc[3] = vaddq_s32(acc[3], $to32_hi(hi));
                            r0 = r1;
                        }
                        let y = acc.map(|a| {
                            let x = m.apply(vsubq_s32(a, offset));
                            vqaddq_s32(x, out_offset)
                        });
                        let lo16 = vqmovn_high_s32(vqmovn_s32(y[0]), y[1]);
                        let hi16 = vqmovn_high_s32(vqmovn_s32(y[2]), y[3]);
                        $store(
                            output.as_mut_ptr().add(o * t.inner + c),
                            $narrow(lo16, hi16),
                        );
                        c += 16;
                    }
                }
            }
            if full < t.inner {
                tail(p, t, input, output, full);
            }
        }
    };
}

mean_8bit!(
    mean_i8,
    i8,
    vld1q_s8,
    widen_lo_s8,
    vaddw_high_s8,
    int16x8_t,
    vdupq_n_s16,
    |v: int16x8_t| vmovl_s16(vget_low_s16(v)),
    |v: int16x8_t| vmovl_high_s16(v),
    |a: int16x8_t, b: int16x8_t| vqmovn_high_s16(vqmovn_s16(a), b),
    vst1q_s8
);
mean_8bit!(
    mean_u8,
    u8,
    vld1q_u8,
    widen_lo_u8,
    vaddw_high_u8,
    uint16x8_t,
    vdupq_n_u16,
    |v: uint16x8_t| vreinterpretq_s32_u32(vmovl_u16(vget_low_u16(v))),
    |v: uint16x8_t| vreinterpretq_s32_u32(vmovl_high_u16(v)),
    |a: int16x8_t, b: int16x8_t| vqmovun_high_s16(vqmovun_s16(a), b),
    vst1q_u8
);

/// `saddw` of the low 8 bytes.
#[inline(always)]
unsafe fn widen_lo_s8(acc: int16x8_t, v: int8x16_t) -> int16x8_t {
    // SAFETY: neon is a compile-time target feature (cfg on this module).
    unsafe { vaddw_s8(acc, vget_low_s8(v)) }
}

/// `uaddw` of the low 8 bytes.
#[inline(always)]
unsafe fn widen_lo_u8(acc: uint16x8_t, v: uint8x16_t) -> uint16x8_t {
    // SAFETY: neon is a compile-time target feature (cfg on this module).
    unsafe { vaddw_u8(acc, vget_low_u8(v)) }
}

/// The inner elements `from..inner` of every outer index, one by one with
/// the scalar arithmetic (their sums strided by `inner`).
fn tail<T: crate::elem::QuantElem>(
    p: &MeanParams,
    t: super::params::ThreeLoops,
    input: &[T],
    output: &mut [T],
    from: usize,
) {
    for o in 0..t.outer {
        for c in from..t.inner {
            let base = o * t.reduced * t.inner + c;
            let sum = (0..t.reduced).fold(0i32, |s, r| {
                s.wrapping_add(input[base + r * t.inner].to_i32())
            });
            let index = o * t.inner + c;
            output[index] = p.requantize(sum, index);
        }
    }
}
