//! The lane trait: gemmlowp's primitive set over one raw type.
//!
//! Every fixed-point algorithm in [`crate::fixedpoint`] is written once, generic
//! over [`Lane`]. The scalar `i32` implementation below *is* the specification:
//! each body states the exact tie and overflow behaviour, and other lane types
//! (NEON `int32x4_t` on aarch64) must agree with it bit for bit on every input.
//!
//! All methods are required (no default bodies) so that a lane type which forgets
//! one is a compile error rather than a silent fallback.

/// A vector (or scalar) of `i32` lanes with gemmlowp's primitive operations.
///
/// Masks are lane values that are either all ones (`-1`) or all zeros.
pub trait Lane: Copy {
    /// Number of `i32` lanes.
    const LANES: usize;

    /// Every lane set to `x`.
    fn splat(x: i32) -> Self;

    /// Wrapping addition (two's complement, like C's `int32_t` on every target we run).
    fn add(self, b: Self) -> Self;
    /// Wrapping subtraction.
    fn sub(self, b: Self) -> Self;
    /// Wrapping negation: `i32::MIN` stays `i32::MIN`.
    fn neg(self) -> Self;

    /// Bitwise and.
    fn and(self, b: Self) -> Self;
    /// Bitwise or.
    fn or(self, b: Self) -> Self;
    /// Bitwise exclusive or.
    fn xor(self, b: Self) -> Self;
    /// Bitwise not.
    fn not(self) -> Self;

    /// Logical shift left by `n` in `0..=31`; bits shifted out are lost.
    fn shl(self, n: u32) -> Self;
    /// Arithmetic shift right by `n` in `0..=31` (rounds toward minus infinity).
    fn shr(self, n: u32) -> Self;

    /// Lane minimum.
    fn lane_min(self, b: Self) -> Self;
    /// Lane maximum.
    fn lane_max(self, b: Self) -> Self;

    /// All ones where the lane is zero.
    fn mask_if_zero(self) -> Self;
    /// All ones where the lane is not zero.
    fn mask_if_non_zero(self) -> Self;
    /// All ones where `self < b`.
    fn mask_if_less_than(self, b: Self) -> Self;
    /// All ones where `self > b`.
    fn mask_if_greater_than(self, b: Self) -> Self;
    /// All ones where `self & b != 0` (NEON `cmtst`).
    fn mask_if_any_bit_set(self, b: Self) -> Self;

    /// `if mask { a } else { b }` per lane; `mask` must be a mask.
    fn select(mask: Self, a: Self, b: Self) -> Self;

    /// `(a + b) / 2` rounded half away from zero, computed without overflow
    /// (gemmlowp's scalar `RoundingHalfSum`).
    ///
    /// NEON's `vrhaddq_s32` rounds ties toward +inf instead, so the two differ
    /// for negative odd sums; a NEON implementation must emulate the scalar rule.
    fn rounding_half_sum(self, b: Self) -> Self;

    /// Saturating addition (`sqadd`).
    fn saturating_add(self, b: Self) -> Self;
    /// Saturating subtraction (`sqsub`).
    fn saturating_sub(self, b: Self) -> Self;

    /// `round(a * b / 2^31)` with ties toward +inf, saturating the single
    /// overflow case `(i32::MIN, i32::MIN)` to `i32::MAX`: gemmlowp's
    /// `SaturatingRoundingDoublingHighMul`, NEON `sqrdmulh`.
    fn saturating_rounding_doubling_high_mul(self, b: Self) -> Self;

    /// `floor(a * b / 2^31)`, saturating `(i32::MIN, i32::MIN)` to `i32::MAX`:
    /// the non-rounding doubling high multiply, NEON `sqdmulh`.
    fn saturating_doubling_high_mul(self, b: Self) -> Self;

    /// `x / 2^exponent` rounded to nearest, ties away from zero
    /// (gemmlowp's `RoundingDivideByPOT`); `exponent` in `0..=31`.
    fn rounding_divide_by_pot(self, exponent: u32) -> Self;

    /// [`Lane::rounding_divide_by_pot`] for lanes known to be non-negative,
    /// where round-half-away-from-zero and round-half-up coincide.
    ///
    /// The caller guarantees `self >= 0` in every lane (a `debug_assert` in the
    /// scalar reference checks it); NEON then needs no sign fix-up and the
    /// shift can fuse into `srshr`/`srsra`.
    fn rounding_divide_by_pot_non_negative(self, exponent: u32) -> Self;

    /// `x * 2^exponent`: for `exponent > 0` a left shift saturating to
    /// `[i32::MIN, i32::MAX]`, for `exponent < 0` [`Lane::rounding_divide_by_pot`]
    /// by `-exponent` (gemmlowp's `SaturatingRoundingMultiplyByPOT`);
    /// `exponent` in `-31..=31`.
    fn saturating_rounding_multiply_by_pot(self, exponent: i32) -> Self;
}

impl Lane for i32 {
    const LANES: usize = 1;

    #[inline(always)]
    fn splat(x: i32) -> Self {
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
    fn or(self, b: Self) -> Self {
        self | b
    }
    #[inline(always)]
    fn xor(self, b: Self) -> Self {
        self ^ b
    }
    #[inline(always)]
    fn not(self) -> Self {
        !self
    }
    #[inline(always)]
    fn shl(self, n: u32) -> Self {
        debug_assert!(n <= 31);
        self.wrapping_shl(n)
    }
    #[inline(always)]
    fn shr(self, n: u32) -> Self {
        debug_assert!(n <= 31);
        self >> n
    }
    #[inline(always)]
    fn lane_min(self, b: Self) -> Self {
        Ord::min(self, b)
    }
    #[inline(always)]
    fn lane_max(self, b: Self) -> Self {
        Ord::max(self, b)
    }
    #[inline(always)]
    fn mask_if_zero(self) -> Self {
        -((self == 0) as i32)
    }
    #[inline(always)]
    fn mask_if_non_zero(self) -> Self {
        -((self != 0) as i32)
    }
    #[inline(always)]
    fn mask_if_less_than(self, b: Self) -> Self {
        -((self < b) as i32)
    }
    #[inline(always)]
    fn mask_if_greater_than(self, b: Self) -> Self {
        -((self > b) as i32)
    }
    #[inline(always)]
    fn mask_if_any_bit_set(self, b: Self) -> Self {
        -((self & b != 0) as i32)
    }
    #[inline(always)]
    fn select(mask: Self, a: Self, b: Self) -> Self {
        debug_assert!(mask == 0 || mask == -1);
        (mask & a) ^ (!mask & b)
    }
    #[inline(always)]
    fn rounding_half_sum(self, b: Self) -> Self {
        let sum = self as i64 + b as i64;
        let sign = if sum >= 0 { 1 } else { -1 };
        // Truncating division after adding the sign: ties go away from zero.
        ((sum + sign) / 2) as i32
    }
    #[inline(always)]
    fn saturating_add(self, b: Self) -> Self {
        i32::saturating_add(self, b)
    }
    #[inline(always)]
    fn saturating_sub(self, b: Self) -> Self {
        i32::saturating_sub(self, b)
    }
    #[inline(always)]
    fn saturating_rounding_doubling_high_mul(self, b: Self) -> Self {
        if self == i32::MIN && b == i32::MIN {
            return i32::MAX;
        }
        let ab = self as i64 * b as i64;
        // gemmlowp nudges by +-2^30 and divides truncating; that equals a
        // floor division after adding 2^30, i.e. ties toward +inf.
        ((ab + (1 << 30)) >> 31) as i32
    }
    #[inline(always)]
    fn saturating_doubling_high_mul(self, b: Self) -> Self {
        if self == i32::MIN && b == i32::MIN {
            return i32::MAX;
        }
        ((self as i64 * b as i64) >> 31) as i32
    }
    #[inline(always)]
    fn rounding_divide_by_pot(self, exponent: u32) -> Self {
        debug_assert!(exponent <= 31);
        let mask = ((1i64 << exponent) - 1) as i32;
        let remainder = self & mask;
        let threshold = (mask >> 1) + (self < 0) as i32;
        (self >> exponent) + (remainder > threshold) as i32
    }
    #[inline(always)]
    fn rounding_divide_by_pot_non_negative(self, exponent: u32) -> Self {
        debug_assert!(self >= 0, "operand must be non-negative");
        Lane::rounding_divide_by_pot(self, exponent)
    }
    #[inline(always)]
    fn saturating_rounding_multiply_by_pot(self, exponent: i32) -> Self {
        debug_assert!((-31..=31).contains(&exponent));
        if exponent >= 0 {
            let wide = (self as i64) << exponent;
            wide.clamp(i32::MIN as i64, i32::MAX as i64) as i32
        } else {
            Lane::rounding_divide_by_pot(self, exponent.unsigned_abs())
        }
    }
}
