//! [`AddParams`]: what `Add::new` prepares, and its lane math
//! ([`AddParams::lanes`], every backend's reference); [`AddFast`], the same
//! arithmetic in fewer vector operations for the NEON kernel.

use crate::fixedpoint::Lane;
use crate::quant::multiply_by_quantized_multiplier;

/// TFLite's left shift of 8-bit add inputs: 255 << 20 still fits an `i32`
/// with room for the sum.
pub const ADD_LEFT_SHIFT: u32 = 20;

/// Everything the add kernels need, computed once by [`Add::new`](crate::Add::new).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AddParams {
    /// `-zero_point` of input a.
    pub input1_offset: i32,
    /// `-zero_point` of input b.
    pub input2_offset: i32,
    /// Q0.31 mantissa of `scale_a / (2 max(scale_a, scale_b))`.
    pub input1_multiplier: i32,
    /// Its exponent (`<= 0`, a right shift).
    pub input1_shift: i32,
    /// Q0.31 mantissa of `scale_b / (2 max(scale_a, scale_b))`.
    pub input2_multiplier: i32,
    /// Its exponent (`<= 0`).
    pub input2_shift: i32,
    /// Q0.31 mantissa of `2 max(scale_a, scale_b) / (2^20 scale_out)`.
    pub output_multiplier: i32,
    /// Its exponent (`<= 0`).
    pub output_shift: i32,
    /// Output zero point.
    pub output_offset: i32,
    /// Lowest output (activation range).
    pub act_min: i32,
    /// Highest output (activation range).
    pub act_max: i32,
}

impl AddParams {
    /// The whole per-element computation on already-widened inputs, shared by
    /// every backend: the output, within `[act_min, act_max]`.
    #[inline(always)]
    pub(crate) fn lanes<L: Lane>(&self, a: L, b: L) -> L {
        // |a - zp| <= 255, so the shifted values stay below 2^28.
        let a = a.add(L::splat(self.input1_offset)).shl(ADD_LEFT_SHIFT);
        let b = b.add(L::splat(self.input2_offset)).shl(ADD_LEFT_SHIFT);
        let a = multiply_by_quantized_multiplier(a, self.input1_multiplier, self.input1_shift);
        let b = multiply_by_quantized_multiplier(b, self.input2_multiplier, self.input2_shift);
        let sum =
            multiply_by_quantized_multiplier(a.add(b), self.output_multiplier, self.output_shift);
        sum.add(L::splat(self.output_offset))
            .lane_max(L::splat(self.act_min))
            .lane_min(L::splat(self.act_max))
    }
}

/// The add of [`AddParams::lanes`] rewritten with fewer vector operations,
/// equal to it for every pair of int8 inputs:
///
/// * The input with the larger scale ("exact" side) has the real multiplier
///   `scale / (2 scale) = 1/2` exactly, quantized as mantissa 2^30 and shift
///   0, and `srdhm(d << 20, 2^30) = floor((2 d 2^20 2^30 + 2^31) / 2^32) =
///   floor(d 2^19 + 1/2) = d << 19` exactly: that side needs no multiply at
///   all, only `(x - zp) << 19`.
/// * A rounding divide by `2^r` rounds ties away from zero; a vector rounding
///   shift (`srshl`) rounds them up. The two differ only on negative values
///   whose low `r` bits are exactly one half. Each input side takes 256
///   values and the output stage sees the 65,536 sums, so [`Add::new`](crate::Add::new) checks
///   all of them: the other side's fix-up is dropped when no tie of it
///   changes any output byte, the output's when no sum the kernel forms
///   lands on a tie.
#[derive(Clone, Copy, Debug)]
#[cfg_attr(
    not(all(target_arch = "aarch64", target_feature = "neon")),
    allow(dead_code)
)]
pub(crate) struct AddFast {
    /// The exact side is input b (inputs are swapped; the sum commutes).
    pub swap: bool,
    /// Zero point of the exact side.
    pub exact_zero_point: i32,
    /// Zero point of the other side.
    pub other_zero_point: i32,
    /// The other side's Q0.31 mantissa.
    pub other_multiplier: i32,
    /// The other side's exponent (`<= 0`).
    pub other_shift: i32,
    /// Some input of the other side is a negative tie of its rounding divide.
    pub other_fixup: bool,
    /// Some input pair is a negative tie of the output's rounding divide.
    pub output_fixup: bool,
}

impl AddFast {
    /// The fast form of `p`, or `None` if no input has the exact-half
    /// multiplier (cannot happen with `Add::new`'s parameters; kept as a
    /// guard so that the kernels never rely on it unchecked).
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
        // `x / 2^r` rounded half up, as `srshl` by `-r` does.
        let half_up = |x: i32, r: u32| -> i32 {
            if r == 0 {
                x
            } else {
                ((x as i64 + (1i64 << (r - 1))) >> r) as i32
            }
        };
        let r_other = shift.unsigned_abs();
        let r_out = p.output_shift.unsigned_abs();
        let mut exact = [0i32; 256];
        let mut other = [0i32; 256];
        let mut other_half_up = [0i32; 256];
        for x in i8::MIN..=i8::MAX {
            let i = (x as i32 + 128) as usize;
            exact[i] = (x as i32 - ze) << 19;
            let y = ((x as i32 - zo) << ADD_LEFT_SHIFT).saturating_rounding_doubling_high_mul(m);
            other[i] = y.rounding_divide_by_pot(r_other);
            other_half_up[i] = half_up(y, r_other);
        }
        // Without its fix-up the other side is 1 too high on its negative
        // ties, which moves the sum by 1 in 2^19 of an input step: the output
        // rarely changes. The fix-up is dropped when, for every such input
        // and every input of the exact side, the reference output stage
        // gives the same int8 for both sums.
        let output = |s: i32| -> i32 {
            s.saturating_rounding_doubling_high_mul(p.output_multiplier)
                .rounding_divide_by_pot(r_out)
                .wrapping_add(p.output_offset)
                .clamp(p.act_min, p.act_max)
        };
        let other_fixup = other.iter().zip(&other_half_up).any(|(&o, &h)| {
            o != h
                && exact
                    .iter()
                    .any(|&e| output(e.wrapping_add(o)) != output(e.wrapping_add(h)))
        });
        // The sums the kernel forms.
        let other = if other_fixup { other } else { other_half_up };
        // The output stage: srdhm(s, m) = (s m + 2^30) >> 31 for every sum s
        // (|s| < 2^29, so the i32::MIN saturation never acts), and the
        // rounding divide of that `y` differs from rounding half up exactly
        // when `y < 0` and its low `r` bits are one half. `s m` is split as
        // `e m + o m` so that the 65,536 pairs cost one add each.
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
        Some(AddFast {
            swap,
            exact_zero_point: ze,
            other_zero_point: zo,
            other_multiplier: m,
            other_shift: shift,
            other_fixup,
            output_fixup,
        })
    }
}
