//! The prepared parameters of the element-wise binary ops and their scalar
//! reference arithmetic ([`AddParams::element`], [`MulParams::element`],
//! what every backend must equal), plus what the vector kernels derive
//! from them once: which lanes of a rounding step can skip their sign
//! fix-up ([`AddFast`], [`mul_needs_fixup`]) and which instruction
//! sequence applies a multiplier in each rounding mode ([`StageMode`]).

use crate::fixedpoint::Lane;
use crate::quant::{QuantizedMultiplier, Rounding};

/// TFLite's left shift of 8-bit add inputs: 255 << 20 still fits an `i32`
/// with room for the sum.
pub const ADD_LEFT_SHIFT: u32 = 20;

/// Everything the add and subtract kernels need, computed once by
/// [`Add::new`](crate::Add::new) or [`Sub::new`](crate::Sub::new): SUB has
/// ADD's multipliers and subtracts the rescaled inputs (TFLite's
/// `SubElementwise`; not a negated multiplier, which would round ties the
/// other way).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AddParams {
    /// `-zero_point` of input 1.
    pub input1_offset: i32,
    /// `-zero_point` of input 2.
    pub input2_offset: i32,
    /// Q0.31 mantissa of `scale_1 / (2 max(scale_1, scale_2))`.
    pub input1_multiplier: i32,
    /// Its exponent (`<= 0`, a right shift).
    pub input1_shift: i32,
    /// Q0.31 mantissa of `scale_2 / (2 max(scale_1, scale_2))`.
    pub input2_multiplier: i32,
    /// Its exponent (`<= 0`).
    pub input2_shift: i32,
    /// Q0.31 mantissa of `2 max(scale_1, scale_2) / (2^20 scale_out)`.
    pub output_multiplier: i32,
    /// Its exponent (`<= 0`).
    pub output_shift: i32,
    /// Output zero point.
    pub output_offset: i32,
    /// Lowest output (activation range).
    pub act_min: i32,
    /// Highest output (activation range).
    pub act_max: i32,
    /// How every multiplier is applied.
    pub rounding: Rounding,
    /// SUB: the output stage takes input 1's rescaled value minus input 2's.
    pub subtract: bool,
}

/// The `(mantissa, shift)` pair as the quantization leaf takes it.
#[inline(always)]
fn qm(multiplier: i32, shift: i32) -> QuantizedMultiplier {
    QuantizedMultiplier { multiplier, shift }
}

impl AddParams {
    /// Input 1's value after its rescale: `(x - zp_1) << 20` times its
    /// multiplier, in the output stage's fixed-point units.
    #[inline(always)]
    pub(crate) fn scaled1(&self, x: i8) -> i32 {
        let shifted = (x as i32 + self.input1_offset) << ADD_LEFT_SHIFT;
        self.rounding
            .multiply(shifted, qm(self.input1_multiplier, self.input1_shift))
    }

    /// Input 2's value after its rescale.
    #[inline(always)]
    pub(crate) fn scaled2(&self, y: i8) -> i32 {
        let shifted = (y as i32 + self.input2_offset) << ADD_LEFT_SHIFT;
        self.rounding
            .multiply(shifted, qm(self.input2_multiplier, self.input2_shift))
    }

    /// The output of a sum of rescaled inputs (`|sum| < 2^28`).
    #[inline(always)]
    pub(crate) fn output(&self, sum: i32) -> i8 {
        let r = self
            .rounding
            .multiply(sum, qm(self.output_multiplier, self.output_shift));
        (r + self.output_offset).clamp(self.act_min, self.act_max) as i8
    }

    /// The scalar reference: TFLite's int8 `AddFunc` (`reference_integer_ops`)
    /// or `SubElementwise` (`reference_ops`) in this rounding mode, for one
    /// pair of inputs.
    #[inline(always)]
    pub fn element(&self, x: i8, y: i8) -> i8 {
        let (a, b) = (self.scaled1(x), self.scaled2(y));
        self.output(if self.subtract { a - b } else { a + b })
    }
}

/// Everything the multiply kernels need, computed once by
/// [`Mul::new`](crate::Mul::new).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MulParams {
    /// `-zero_point` of input 1.
    pub input1_offset: i32,
    /// `-zero_point` of input 2.
    pub input2_offset: i32,
    /// Q0.31 mantissa of `scale_1 * scale_2 / scale_out` (computed in `f32`,
    /// as TFLite does).
    pub output_multiplier: i32,
    /// Its exponent (positive: a left shift).
    pub output_shift: i32,
    /// Output zero point.
    pub output_offset: i32,
    /// Lowest output (activation range).
    pub act_min: i32,
    /// Highest output (activation range).
    pub act_max: i32,
    /// How the multiplier is applied.
    pub rounding: Rounding,
}

impl MulParams {
    /// The product of the offset inputs (`|.| <= 255 * 255`).
    #[inline(always)]
    pub(crate) fn product(&self, x: i8, y: i8) -> i32 {
        (x as i32 + self.input1_offset) * (y as i32 + self.input2_offset)
    }

    /// The output of a product (range checked by `Mul::new`: no overflow).
    #[inline(always)]
    pub(crate) fn output(&self, product: i32) -> i8 {
        let r = self
            .rounding
            .multiply(product, qm(self.output_multiplier, self.output_shift));
        (r + self.output_offset).clamp(self.act_min, self.act_max) as i8
    }

    /// The scalar reference: TFLite's int8 `MulElementwise` in this
    /// rounding mode, for one pair of inputs.
    #[inline(always)]
    pub fn element(&self, x: i8, y: i8) -> i8 {
        self.output(self.product(x, y))
    }
}

/// How a vector kernel applies one multiplier `(m, shift)` to a lane `x`;
/// each equals the reference [`Rounding::multiply`] on the values the
/// kernel meets (see each variant).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(
    not(all(target_arch = "aarch64", target_feature = "neon")),
    allow(dead_code)
)]
pub(crate) enum StageMode {
    /// `sqrdmulh(x, m)` (after a left shift by `shift > 0` where the kernel
    /// has one): both roundings when there is no right shift, since
    /// `floor((x m + 2^30) / 2^31)` is the single-rounding result and
    /// gemmlowp's `SaturatingRoundingDoublingHighMul` alike.
    High,
    /// `srshl(sqrdmulh(x, m), -r)`: double rounding whose rounding divide
    /// rounds its ties up; used when no negative tie changes an output byte.
    Round,
    /// `srshl(sqrdmulh(x, m) + (sign), -r)`: double rounding exactly (the
    /// `ssra #31` moves negative ties down, as `RoundingDivideByPOT` does).
    RoundFix,
    /// `srshl(sqdmulh(x, m), -r)` with `r >= 1`: single rounding exactly.
    /// With `p = x m = H 2^31 + L` (`0 <= L < 2^31`), `(p + 2^(30 + r)) >>
    /// (31 + r)` is `(H + 2^(r - 1) + (L / 2^31)) >> r`, and the fraction
    /// below one cannot carry, so it is `(H + 2^(r - 1)) >> r`.
    Floor,
}

impl StageMode {
    /// The mode for a multiplier with right shift `r` (`-shift`, `>= 0`)
    /// in `rounding`; `fixup`: some negative tie of double rounding's
    /// divide changes an output byte.
    #[cfg_attr(
        not(all(target_arch = "aarch64", target_feature = "neon")),
        allow(dead_code)
    )]
    pub(crate) fn for_right_shift(rounding: Rounding, r: u32, fixup: bool) -> StageMode {
        match (rounding, r, fixup) {
            (_, 0, _) => StageMode::High,
            (Rounding::Single, _, _) => StageMode::Floor,
            (Rounding::Double, _, false) => StageMode::Round,
            (Rounding::Double, _, true) => StageMode::RoundFix,
        }
    }
}

/// `x / 2^r` rounded half up, as `srshl` by `-r` does.
fn half_up(x: i32, r: u32) -> i32 {
    if r == 0 {
        x
    } else {
        ((x as i64 + (1i64 << (r - 1))) >> r) as i32
    }
}

/// The add of [`AddParams::element`] in the form the vector kernel computes
/// it, equal to it for every pair of int8 inputs:
///
/// * The input with the larger scale (the "exact" side) has the real
///   multiplier `scale / (2 scale) = 1/2` exactly, quantized as mantissa
///   2^30 and shift 0, and in both roundings `(d 2^20 2^30 + 2^30) >> 31 =
///   d 2^19`: that side needs no multiply, only `(x - zp) << 19`.
/// * SUB negates input 2's rescaled value: the exact side's factor is
///   `-2^14` instead of `2^14`, the other side's value is negated after its
///   rounding.
/// * In double rounding a rounding divide by `2^r` rounds ties away from
///   zero and a vector rounding shift (`srshl`) rounds them up. The two
///   differ only on negative values whose low `r` bits are exactly one
///   half. Each input side takes 256 values and the output stage sees the
///   65,536 sums, so `new` checks all of them: the other side's fix-up is
///   dropped when no tie of it changes any output byte, the output's when
///   no sum the kernel forms lands on a tie. Single rounding needs no
///   fix-up ([`StageMode::Floor`]).
#[derive(Clone, Copy, Debug)]
#[cfg_attr(
    not(all(target_arch = "aarch64", target_feature = "neon")),
    allow(dead_code)
)]
pub(crate) struct AddFast {
    /// The exact side is input 2.
    pub swap: bool,
    /// The exact side's value is `-(x - zp) << 19` (SUB, exact side input 2).
    pub exact_negated: bool,
    /// The other side's value is negated after its rounding (SUB, other
    /// side input 2).
    pub other_negated: bool,
    /// Zero point of the exact side.
    pub exact_zero_point: i32,
    /// Zero point of the other side.
    pub other_zero_point: i32,
    /// The other side's Q0.31 mantissa.
    pub other_multiplier: i32,
    /// The other side's exponent (`<= 0`).
    pub other_shift: i32,
    /// How the other side's multiplier is applied.
    pub other_mode: StageMode,
    /// How the output multiplier is applied.
    pub output_mode: StageMode,
}

#[cfg_attr(
    not(all(target_arch = "aarch64", target_feature = "neon")),
    allow(dead_code)
)]
impl AddFast {
    /// The fast form of `p`, or `None` if no input has the exact-half
    /// multiplier (cannot happen with `new`'s parameters; kept as a guard
    /// so that the kernels never rely on it unchecked).
    pub(crate) fn new(p: &AddParams) -> Option<AddFast> {
        const HALF: i32 = 1 << 30;
        let (swap, ze, zo, m, shift) = if p.input1_multiplier == HALF && p.input1_shift == 0 {
            (
                false,
                -p.input1_offset,
                -p.input2_offset,
                p.input2_multiplier,
                p.input2_shift,
            )
        } else if p.input2_multiplier == HALF && p.input2_shift == 0 {
            (
                true,
                -p.input2_offset,
                -p.input1_offset,
                p.input1_multiplier,
                p.input1_shift,
            )
        } else {
            return None;
        };
        // Input 2's value is subtracted: the exact side's when it is input
        // 2, else the other side's.
        let (exact_negated, other_negated) = (p.subtract && swap, p.subtract && !swap);
        let other_sign = if other_negated { -1 } else { 1 };
        if shift > 0 || p.output_shift > 0 {
            return None;
        }
        let r_other = shift.unsigned_abs();
        let r_out = p.output_shift.unsigned_abs();
        let mut exact = [0i32; 256];
        let mut other = [0i32; 256];
        let mut other_half_up = [0i32; 256];
        for x in i8::MIN..=i8::MAX {
            let i = (x as i32 + 128) as usize;
            let e = (x as i32 - ze) << 19;
            exact[i] = if exact_negated { -e } else { e };
            let shifted = (x as i32 - zo) << ADD_LEFT_SHIFT;
            other[i] = other_sign * p.rounding.multiply(shifted, qm(m, shift));
            other_half_up[i] =
                other_sign * half_up(shifted.saturating_rounding_doubling_high_mul(m), r_other);
        }
        let (other_mode, output_mode) = match p.rounding {
            Rounding::Single => (
                StageMode::for_right_shift(Rounding::Single, r_other, false),
                StageMode::for_right_shift(Rounding::Single, r_out, false),
            ),
            Rounding::Double => {
                // Without its fix-up the other side is 1 too high on its
                // negative ties, which moves the sum by 1 in 2^19 of an
                // input step: the output rarely changes. The fix-up is
                // dropped when, for every such input and every input of the
                // exact side, the reference output stage gives the same
                // int8 for both sums.
                let other_fixup = other.iter().zip(&other_half_up).any(|(&o, &h)| {
                    o != h
                        && exact
                            .iter()
                            .any(|&e| p.output(e.wrapping_add(o)) != p.output(e.wrapping_add(h)))
                });
                // The sums the kernel forms.
                let other = if other_fixup { other } else { other_half_up };
                // srdhm(s, m) = (s m + 2^30) >> 31 for every sum s (|s| <
                // 2^28, so its saturation never acts), and the rounding
                // divide of that `y` differs from rounding half up exactly
                // when `y < 0` and its low `r` bits are one half. `s m` is
                // split as `e m + o m` so that the 65,536 pairs cost one
                // add each.
                let mut output_fixup = false;
                if r_out > 0 {
                    let m_out = p.output_multiplier as i64;
                    let (mask, half) = ((1i64 << r_out) - 1, 1i64 << (r_out - 1));
                    let other_m = other.map(|o| o as i64 * m_out);
                    for &e in &exact {
                        let em = e as i64 * m_out + (1 << 30);
                        let mut tie = false;
                        for &om in &other_m {
                            let v = em + om;
                            // v >> 31 is y, and y < 0 exactly when v < 0.
                            tie |= (v < 0) & ((v >> 31) & mask == half);
                        }
                        if tie {
                            output_fixup = true;
                            break;
                        }
                    }
                }
                (
                    StageMode::for_right_shift(Rounding::Double, r_other, other_fixup),
                    StageMode::for_right_shift(Rounding::Double, r_out, output_fixup),
                )
            }
        };
        Some(AddFast {
            swap,
            exact_negated,
            other_negated,
            exact_zero_point: ze,
            other_zero_point: zo,
            other_multiplier: m,
            other_shift: shift,
            other_mode,
            output_mode,
        })
    }
}

/// The vector form of the multiply's output stage: [`StageMode::High`]
/// after the left shift for `shift >= 0`; for a right shift in double
/// rounding, whether the sign fix-up can be dropped because no product of
/// two int8 inputs is a negative tie that changes an output byte.
#[cfg_attr(
    not(all(target_arch = "aarch64", target_feature = "neon")),
    allow(dead_code)
)]
pub(crate) fn mul_stage_mode(p: &MulParams) -> StageMode {
    if p.output_shift >= 0 {
        return StageMode::High;
    }
    let r = p.output_shift.unsigned_abs();
    let fixup = p.rounding == Rounding::Double && mul_needs_fixup(p, r);
    StageMode::for_right_shift(p.rounding, r, fixup)
}

/// Double rounding, right shift `r >= 1`: does rounding the divide's ties
/// up instead of away from zero change the output of some input pair?
fn mul_needs_fixup(p: &MulParams, r: u32) -> bool {
    let finish = |v: i32| (v + p.output_offset).clamp(p.act_min, p.act_max);
    for x in i8::MIN..=i8::MAX {
        for y in i8::MIN..=i8::MAX {
            let high = p
                .product(x, y)
                .saturating_rounding_doubling_high_mul(p.output_multiplier);
            let exact = high.rounding_divide_by_pot(r);
            let up = half_up(high, r);
            if exact != up && finish(exact) != finish(up) {
                return true;
            }
        }
    }
    false
}
