//! The depthwise kernel's output stage with one block's per-channel
//! parameters in registers ([`BlockStage`]), loaded once per block (for
//! all the rows a call runs) rather than once per pixel.
//!
//! Each requantization is the scalar one on four lanes at a time
//! (`requantize_lanes`, `requantize_single`, the ties-upward `srshl`, or
//! XNNPACK's `f32` product rounded by `fcvtns`), then saturating narrows,
//! the zero point added with 16-bit saturation and the activation clamp:
//! the scalar bytes (a value beyond 16 bits saturates the byte either way;
//! XNNPACK's clamp before rounding equals one after it, the bounds being
//! integers).

use core::arch::aarch64::*;

use super::pack::{LaneStage, Stage};
use crate::ops::requant::neon::requantize_single;
use crate::ops::requant::{requantize_lanes, ChannelMultiplier};

/// The output stage as the kernel's const parameter: [`F32`] (XNNPACK's
/// arithmetic) compiled apart, so a block's loop keeps its scale vectors
/// and clamp in registers, where matched per pixel with the other stages
/// it reloaded them from the stack (7% of person_detect's depthwise
/// instructions under `--kernels xnnpack`); or [`FIXED`], the fixed-point
/// stages matched per pixel at run time as before (each compiled apart
/// measured mixed: MobileNetV2's stride-2 layers 4% fewer instructions,
/// its stride-1 layers 5% more, their taps then spilling).
pub(super) const F32: u8 = Stage::F32 as u8;
/// Any fixed-point stage, read from the block's [`LaneStage`].
pub(super) const FIXED: u8 = u8::MAX;
/// Each stage compiled apart (the pair kernel's: its loops hold no more
/// than the one stage's vectors).
pub(super) const DOUBLE: u8 = Stage::Double as u8;
pub(super) const SINGLE: u8 = Stage::Single as u8;
pub(super) const TIES_UPWARD: u8 = Stage::TiesUpward as u8;

/// The stage `S` names, or `stage` when `S` is [`FIXED`].
#[inline(always)]
fn stage_of<const S: u8>(stage: Stage) -> Stage {
    match S {
        DOUBLE => Stage::Double,
        SINGLE => Stage::Single,
        TIES_UPWARD => Stage::TiesUpward,
        F32 => Stage::F32,
        _ => stage,
    }
}

/// A block's output stage parameters, four lanes per vector. In the
/// paired layout (two pixels of at most 8 channels side by side), vectors
/// 2 and 3 repeat vectors 0 and 1: lanes 8 to 15 are the same channels
/// as lanes 0 to 7. Vectors a stage does not read are zero.
pub(super) struct BlockStage<const S: u8> {
    stage: Stage,
    fixed: [ChannelMultiplier<int32x4_t>; 4],
    /// Single rounding's `-(31 - shift)`, two lanes per vector.
    neg_total_shift: [int64x2_t; 8],
    /// [`Stage::TiesUpwardInBlocksOf8`]: all ones on the channels of whole
    /// blocks of 8, and their split shifts.
    block_lanes: [uint32x4_t; 4],
    block_left_shift: [int32x4_t; 4],
    block_neg_right_shift: [int32x4_t; 4],
    /// [`Stage::F32`]: each lane's `f32` scale.
    scales: [float32x4_t; 4],
    /// Whether any lane's left shift is not 0 ([`Stage::TiesUpward`]
    /// skips its `sqshl` otherwise: a shift by 0 saturates nothing).
    shifts_left: bool,
    zero_point: int16x8_t,
    act_min: int8x16_t,
    act_max: int8x16_t,
}

impl<const S: u8> BlockStage<S> {
    /// Loads the parameters of channels `c0..c0 + 16`, or with `paired`
    /// those of `c0..c0 + 8` twice; `S` is [`F32`] when `s.stage` is, else
    /// [`FIXED`].
    ///
    /// # Safety
    /// `c0 + 16` is within the stage's padded per-channel arrays.
    #[inline(always)]
    pub(super) unsafe fn load(s: &LaneStage, c0: usize, paired: bool) -> Self {
        debug_assert!((s.stage == Stage::F32) == (S == F32));
        debug_assert!(S == FIXED || stage_of::<S>(s.stage) == s.stage);
        let stage = stage_of::<S>(s.stage);
        let channel = |j: usize| c0 + 4 * if paired { j % 2 } else { j };
        // SAFETY: every load reads 4 values (2 for the 64-bit ones) at
        // `channel(j) + 2 * h < c0 + 16`, within the arrays the stage
        // fills (the caller's bound); the others are not read.
        unsafe {
            let i32s = |v: &[i32]| -> [int32x4_t; 4] {
                if v.is_empty() || (S != FIXED && stage == Stage::F32) {
                    [vdupq_n_s32(0); 4]
                } else {
                    core::array::from_fn(|j| vld1q_s32(v.as_ptr().add(channel(j))))
                }
            };
            let multiplier = i32s(&s.multiplier);
            let left_shift = i32s(&s.left_shift);
            let neg_right_shift = i32s(&s.neg_right_shift);
            let neg_total_shift = if stage == Stage::Single {
                core::array::from_fn(|i| {
                    vld1q_s64(s.neg_total_shift.as_ptr().add(channel(i / 2) + 2 * (i % 2)))
                })
            } else {
                [vdupq_n_s64(0); 8]
            };
            let scales = if stage == Stage::F32 {
                core::array::from_fn(|j| vld1q_f32(s.scales.as_ptr().add(channel(j))))
            } else {
                [vdupq_n_f32(0.0); 4]
            };
            BlockStage {
                stage,
                fixed: core::array::from_fn(|j| ChannelMultiplier {
                    left_shift: left_shift[j],
                    multiplier: multiplier[j],
                    neg_right_shift: neg_right_shift[j],
                }),
                neg_total_shift,
                block_lanes: i32s(&s.block_lanes).map(|v| vreinterpretq_u32_s32(v)),
                block_left_shift: i32s(&s.block_left_shift),
                block_neg_right_shift: i32s(&s.block_neg_right_shift),
                scales,
                shifts_left: left_shift
                    .iter()
                    .any(|&v| vmaxvq_u32(vreinterpretq_u32_s32(v)) != 0),
                zero_point: vdupq_n_s16(s.zero_point),
                act_min: vdupq_n_s8(s.act_min),
                act_max: vdupq_n_s8(s.act_max),
            }
        }
    }

    /// Whether the stage is [`TIES_UPWARD`] with no lane shifting left
    /// (`sqrdmulh` then `srshl`: the `sdot` kernel's 3x3 asm loop).
    #[inline(always)]
    pub(super) fn ties_upward_right_only(&self) -> bool {
        S == TIES_UPWARD && !self.shifts_left
    }

    /// The output bytes of `acc`'s first `4 * N` lanes (the rest zero).
    #[inline(always)]
    pub(super) fn bytes<const N: usize>(&self, acc: &[int32x4_t; 4]) -> int8x16_t {
        // SAFETY: neon is a compile-time target feature (cfg on this module).
        unsafe {
            let mut v = [vdupq_n_s32(0); 4];
            for j in 0..N {
                let a = acc[j];
                let m = &self.fixed[j];
                v[j] = if S == F32 {
                    vcvtnq_s32_f32(vmulq_f32(vcvtq_f32_s32(a), self.scales[j]))
                } else {
                    match stage_of::<S>(self.stage) {
                        Stage::Double => requantize_lanes(a, m),
                        Stage::Single => requantize_single(
                            a,
                            m.multiplier,
                            &[self.neg_total_shift[2 * j], self.neg_total_shift[2 * j + 1]],
                        ),
                        Stage::TiesUpward if !self.shifts_left => {
                            vrshlq_s32(vqrdmulhq_s32(a, m.multiplier), m.neg_right_shift)
                        }
                        Stage::TiesUpward => {
                            ties_upward(a, m.left_shift, m.multiplier, m.neg_right_shift)
                        }
                        Stage::TiesUpwardInBlocksOf8 => {
                            let blocks = ties_upward(
                                a,
                                self.block_left_shift[j],
                                m.multiplier,
                                self.block_neg_right_shift[j],
                            );
                            vbslq_s32(self.block_lanes[j], blocks, requantize_lanes(a, m))
                        }
                        // Compiled apart (`S == F32`); kept so that the
                        // fixed-point instance's code stays as it was.
                        Stage::F32 => vcvtnq_s32_f32(vmulq_f32(vcvtq_f32_s32(a), self.scales[j])),
                    }
                };
            }
            let lo = vqaddq_s16(vqmovn_high_s32(vqmovn_s32(v[0]), v[1]), self.zero_point);
            let o = if N == 2 {
                vcombine_s8(vqmovn_s16(lo), vdup_n_s8(0))
            } else {
                let hi = vqaddq_s16(vqmovn_high_s32(vqmovn_s32(v[2]), v[3]), self.zero_point);
                vqmovn_high_s16(vqmovn_s16(lo), hi)
            };
            vminq_s8(vmaxq_s8(o, self.act_min), self.act_max)
        }
    }
}

/// `srshl(sqrdmulh(acc << left, multiplier), neg_right)`: both roundings'
/// ties toward +infinity, the left shift saturating (`sqshl`), as the
/// scalar `ties_upward`.
#[inline(always)]
fn ties_upward(
    acc: int32x4_t,
    left: int32x4_t,
    multiplier: int32x4_t,
    neg_right: int32x4_t,
) -> int32x4_t {
    // SAFETY: neon is a compile-time target feature (cfg on this module).
    unsafe { vrshlq_s32(vqrdmulhq_s32(vqshlq_s32(acc, left), multiplier), neg_right) }
}
