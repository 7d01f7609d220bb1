//! The 16-bit lane trait: gemmlowp's `int16_t` primitives over one raw type,
//! so that the 16-bit logistic and tanh (`gemmlowp16.rs`) are written once
//! and run on a scalar `i16` or on eight NEON lanes (`neon16.rs`).
//!
//! The `i16` implementation below is the specification; its scalar
//! primitives (the functions first in this file) state the tie and
//! overflow rules.
//! A vector lane type must agree with it bit for bit on every input (tested
//! exhaustively over all 65,536 inputs of each function).

/// `a * b / 2^15` rounded to nearest (ties toward +inf: the negative nudge
/// `1 - 2^14` and the truncating divide send -0.5 to 0), `-1 * -1`
/// saturated: gemmlowp's 16-bit `SaturatingRoundingDoublingHighMul`.
#[inline(always)]
pub(crate) fn srdhm(a: i16, b: i16) -> i16 {
    if a == i16::MIN && b == i16::MIN {
        return i16::MAX;
    }
    let ab = a as i32 * b as i32;
    let nudge = if ab >= 0 { 1 << 14 } else { 1 - (1 << 14) };
    // `/` truncates toward zero, as the C++.
    ((ab + nudge) / (1 << 15)) as i16
}

/// `x / 2^e` rounded to nearest, ties away from zero (`e` in `0..=15`).
#[inline(always)]
pub(crate) fn rounding_divide_by_pot(x: i16, e: u32) -> i16 {
    let mask = ((1i32 << e) - 1) as i16;
    let remainder = x & mask;
    let threshold = (mask >> 1) + (x < 0) as i16;
    (x >> e) + (remainder > threshold) as i16
}

/// `x * 2^e` for `e` in `1..=15`, saturating (gemmlowp's
/// `SaturatingRoundingMultiplyByPOT` with a positive exponent).
#[inline(always)]
pub(crate) fn saturating_shl(x: i16, e: u32) -> i16 {
    let threshold = ((1i32 << (15 - e)) - 1) as i16;
    if x > threshold {
        i16::MAX
    } else if x < -threshold {
        i16::MIN
    } else {
        x << e
    }
}

/// A vector (or scalar) of `i16` lanes with the operations the 16-bit
/// gemmlowp functions use. Masks are lanes that are all ones or all zeros.
pub(crate) trait Lane16: Copy {
    /// Every lane set to `x`.
    fn splat(x: i16) -> Self;
    /// Wrapping addition (the C++ adds in `int` and stores to `int16_t`).
    fn add(self, b: Self) -> Self;
    /// Wrapping subtraction.
    fn sub(self, b: Self) -> Self;
    /// Wrapping negation (`i16::MIN` stays).
    fn neg(self) -> Self;
    /// Bitwise and.
    fn and(self, b: Self) -> Self;
    /// Saturating addition.
    fn saturating_add(self, b: Self) -> Self;
    /// gemmlowp's 16-bit `SaturatingRoundingDoublingHighMul` (`sqrdmulh.8h`).
    fn srdhm(self, b: Self) -> Self;
    /// `x / 2^e` rounded half away from zero, `e` in `0..=15`.
    fn rounding_divide_by_pot(self, e: u32) -> Self;
    /// `x * 2^e` saturating, `e` in `1..=15`.
    fn saturating_shl(self, e: u32) -> Self;
    /// `(a + b) / 2` rounded half away from zero, without overflow.
    fn rounding_half_sum(self, b: Self) -> Self;
    /// All ones where the lane is zero.
    fn mask_if_zero(self) -> Self;
    /// All ones where `self < b`.
    fn mask_if_less_than(self, b: Self) -> Self;
    /// All ones where `self > b`.
    fn mask_if_greater_than(self, b: Self) -> Self;
    /// All ones where `self & b != 0`.
    fn mask_if_any_bit_set(self, b: Self) -> Self;
    /// `if mask { a } else { b }` per lane; `mask` must be a mask.
    fn select(mask: Self, a: Self, b: Self) -> Self;
}

/// All ones for `true`.
#[inline(always)]
fn mask(b: bool) -> i16 {
    -(b as i16)
}

impl Lane16 for i16 {
    #[inline(always)]
    fn splat(x: i16) -> Self {
        x
    }
    #[inline(always)]
    fn add(self, b: Self) -> Self {
        self.wrapping_add(b)
    }
    #[inline(always)]
    fn sub(self, b: Self) -> Self {
        self.wrapping_sub(b)
    }
    #[inline(always)]
    fn neg(self) -> Self {
        self.wrapping_neg()
    }
    #[inline(always)]
    fn and(self, b: Self) -> Self {
        self & b
    }
    #[inline(always)]
    fn saturating_add(self, b: Self) -> Self {
        i16::saturating_add(self, b)
    }
    #[inline(always)]
    fn srdhm(self, b: Self) -> Self {
        srdhm(self, b)
    }
    #[inline(always)]
    fn rounding_divide_by_pot(self, e: u32) -> Self {
        rounding_divide_by_pot(self, e)
    }
    #[inline(always)]
    fn saturating_shl(self, e: u32) -> Self {
        saturating_shl(self, e)
    }
    #[inline(always)]
    fn rounding_half_sum(self, b: Self) -> Self {
        let sum = self as i32 + b as i32;
        let sign = if sum >= 0 { 1 } else { -1 };
        // `/` truncates toward zero, as the C++.
        ((sum + sign) / 2) as i16
    }
    #[inline(always)]
    fn mask_if_zero(self) -> Self {
        mask(self == 0)
    }
    #[inline(always)]
    fn mask_if_less_than(self, b: Self) -> Self {
        mask(self < b)
    }
    #[inline(always)]
    fn mask_if_greater_than(self, b: Self) -> Self {
        mask(self > b)
    }
    #[inline(always)]
    fn mask_if_any_bit_set(self, b: Self) -> Self {
        mask(self & b != 0)
    }
    #[inline(always)]
    fn select(mask: Self, a: Self, b: Self) -> Self {
        (mask & a) | (!mask & b)
    }
}
