//! gemmlowp-style fixed-point arithmetic on raw `i32` values.
//!
//! A [`FixedPoint<L, INT_BITS>`] holds, in each lane of `L`, a raw `i32` that
//! represents `raw / 2^(31 - INT_BITS)`. **Integer bits exclude the sign**, as
//! gemmlowp counts them: `FixedPoint<i32, 0>` is Q0.31 with values in `[-1, 1)`,
//! `FixedPoint<i32, 5>` is Q5.26 with values in `[-32, 32)`.
//!
//! The `fixed` crate counts the sign as an integer bit, so Q0.31 is
//! `fixed::types::I1F31` and Q5.26 is `fixed::types::I6F26`; the raw bits are
//! identical.
//!
//! The algorithms ([`exp_on_negative_values`], [`one_over_one_plus_x_for_x_in_0_1`],
//! [`logistic`], [`tanh`], ...) are written once over [`Lane`]; the `i32` lane is
//! the reference and vector lanes reuse the same code. Rounding is gemmlowp's:
//! multiplies round ties toward +inf (`sqrdmulh`), power-of-two divides round
//! ties away from zero.

mod constants;
mod exp;
pub(crate) mod gemmlowp16;
mod lane;
pub(crate) mod lane16;
pub(crate) mod log;
mod recip;

pub use exp::{exp_on_interval_between_negative_one_quarter_and_0_excl, exp_on_negative_values};
pub use lane::Lane;
pub use log::log_x_for_x_greater_than_or_equal_to_1;
#[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
mod neon;
#[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
pub(crate) mod neon16;

pub(crate) use recip::get_reciprocal_splat;
pub use recip::{
    get_reciprocal, logistic, one_minus_x_over_one_plus_x_for_x_in_0_1,
    one_over_one_plus_x_for_x_in_0_1, tanh,
};

/// A fixed-point number (or vector of them) with `INT_BITS` integer bits,
/// excluding the sign, stored in the raw `i32` lanes of `L`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(transparent)]
pub struct FixedPoint<L, const INT_BITS: u32>(L);

/// Q0.31: values in `[-1, 1)`.
#[allow(non_camel_case_types)]
pub type Q0_31<L> = FixedPoint<L, 0>;
/// Q2.29: values in `[-4, 4)`, the Newton-Raphson format.
#[allow(non_camel_case_types)]
pub type Q2_29<L> = FixedPoint<L, 2>;
/// Q4.27: values in `[-16, 16)`, the int8 logistic/tanh input format.
#[allow(non_camel_case_types)]
pub type Q4_27<L> = FixedPoint<L, 4>;
/// Q5.26: values in `[-32, 32)`, the softmax scaled-difference format.
#[allow(non_camel_case_types)]
pub type Q5_26<L> = FixedPoint<L, 5>;
/// Q12.19: values in `[-4096, 4096)`, TFLite's softmax accumulator format.
#[allow(non_camel_case_types)]
pub type Q12_19<L> = FixedPoint<L, 12>;

impl<L: Lane, const I: u32> FixedPoint<L, I> {
    /// Fractional bits: `31 - INT_BITS`.
    pub const FRAC_BITS: u32 = {
        assert!(I <= 31, "at most 31 integer bits fit in an i32");
        31 - I
    };

    /// Wraps raw lanes.
    #[inline(always)]
    pub fn from_raw(raw: L) -> Self {
        FixedPoint(raw)
    }

    /// The raw lanes.
    #[inline(always)]
    pub fn raw(self) -> L {
        self.0
    }

    /// Every lane set to the raw value `raw`.
    #[inline(always)]
    pub fn from_scalar_raw(raw: i32) -> Self {
        FixedPoint(L::splat(raw))
    }

    /// Zero.
    #[inline(always)]
    pub fn zero() -> Self {
        Self::from_scalar_raw(0)
    }

    /// One; for `INT_BITS == 0` the largest value, `1 - 2^-31`, as in gemmlowp.
    #[inline(always)]
    pub fn one() -> Self {
        Self::from_scalar_raw(if I == 0 {
            i32::MAX
        } else {
            1 << Self::FRAC_BITS
        })
    }

    /// `2^exponent`, exactly representable: `-FRAC_BITS <= exponent < INT_BITS`.
    #[inline(always)]
    pub fn constant_pot(exponent: i32) -> Self {
        let shift = Self::FRAC_BITS as i32 + exponent;
        debug_assert!((0..31).contains(&shift), "2^{exponent} not representable");
        Self::from_scalar_raw(1 << shift)
    }

    /// Wrapping sum (gemmlowp's `operator+`).
    #[inline(always)]
    #[allow(clippy::should_implement_trait)]
    pub fn add(self, b: Self) -> Self {
        FixedPoint(self.0.add(b.0))
    }

    /// Wrapping difference.
    #[inline(always)]
    #[allow(clippy::should_implement_trait)]
    pub fn sub(self, b: Self) -> Self {
        FixedPoint(self.0.sub(b.0))
    }

    /// Wrapping negation.
    #[inline(always)]
    #[allow(clippy::should_implement_trait)]
    pub fn neg(self) -> Self {
        FixedPoint(self.0.neg())
    }

    /// Bitwise and of the raw values.
    #[inline(always)]
    pub fn and(self, b: Self) -> Self {
        FixedPoint(self.0.and(b.0))
    }

    /// Product with a `J`-integer-bit value, giving `K = I + J` integer bits
    /// (checked at compile time): one saturating rounding doubling high multiply.
    #[inline(always)]
    #[allow(clippy::should_implement_trait)]
    pub fn mul<const J: u32, const K: u32>(self, b: FixedPoint<L, J>) -> FixedPoint<L, K> {
        const {
            assert!(
                I + J == K,
                "product integer bits must be the sum of the factors'"
            )
        };
        FixedPoint(self.0.saturating_rounding_doubling_high_mul(b.0))
    }

    /// The same value in a format with `J` integer bits: a saturating rounding
    /// multiply by `2^(I - J)` of the raw value (gemmlowp's `Rescale`).
    #[inline(always)]
    pub fn rescale<const J: u32>(self) -> FixedPoint<L, J> {
        FixedPoint(
            self.0
                .saturating_rounding_multiply_by_pot(I as i32 - J as i32),
        )
    }

    /// The raw value reinterpreted with `J = I + e` integer bits, which multiplies
    /// the represented value by `2^e` exactly (gemmlowp's `ExactMulByPot`).
    #[inline(always)]
    pub fn exact_mul_by_pot<const J: u32>(self) -> FixedPoint<L, J> {
        FixedPoint(self.0)
    }

    /// `self * 2^exponent` with saturation (left) or rounding (right) of the raw value.
    #[inline(always)]
    pub fn saturating_rounding_multiply_by_pot(self, exponent: i32) -> Self {
        FixedPoint(self.0.saturating_rounding_multiply_by_pot(exponent))
    }

    /// Per-lane `if mask { a } else { b }`.
    #[inline(always)]
    pub fn select(mask: L, a: Self, b: Self) -> Self {
        FixedPoint(L::select(mask, a.0, b.0))
    }
}

impl<const I: u32> FixedPoint<i32, I> {
    /// The represented value as `f64` (exact).
    pub fn to_f64(self) -> f64 {
        self.0 as f64 / (1u64 << Self::FRAC_BITS) as f64
    }

    /// The nearest representable value to `x` (ties away from zero), saturating.
    pub fn from_f64(x: f64) -> Self {
        let scaled = libm_round(x * (1u64 << Self::FRAC_BITS) as f64);
        FixedPoint(scaled.clamp(i32::MIN as f64, i32::MAX as f64) as i32)
    }
}

/// `f64::round` without `std`: round half away from zero.
pub(crate) fn libm_round(x: f64) -> f64 {
    // Values this large are already integers (and NaN stays NaN).
    if x.is_nan() || x.abs() >= 4_503_599_627_370_496.0 {
        return x;
    }
    let a = x.abs();
    // Truncation, exact below 2^52; `a - whole` is then exact too, which
    // avoids the classic `a + 0.5` double rounding.
    let whole = a as i64 as f64;
    let r = if a - whole >= 0.5 { whole + 1.0 } else { whole };
    if x < 0.0 {
        -r
    } else {
        r
    }
}
