//! Raw fixed-point constants, each with the real number it stands for.
//!
//! These are the values gemmlowp and TFLite use (facts, not code); the test at
//! the bottom checks every raw value against its `f64` expression, as gemmlowp's
//! `GEMMLOWP_CHECKED_FIXEDPOINT_CONSTANT` does.

/// `exp(-1/8)`, Q0.31: the Taylor expansion point of the exp polynomial.
pub const EXP_NEG_ONE_EIGHTH: i32 = 1_895_147_668;
/// `1/3`, Q0.31.
pub const ONE_THIRD: i32 = 715_827_883;

/// `exp(-1/4)`, Q0.31: barrel-shifter factor for the `2^-2` bit.
pub const EXP_NEG_QUARTER: i32 = 1_672_461_947;
/// `exp(-1/2)`, Q0.31: barrel-shifter factor for the `2^-1` bit.
pub const EXP_NEG_HALF: i32 = 1_302_514_674;
/// `exp(-1)`, Q0.31: barrel-shifter factor for the `2^0` bit.
pub const EXP_NEG_1: i32 = 790_015_084;
/// `exp(-2)`, Q0.31: barrel-shifter factor for the `2^1` bit.
pub const EXP_NEG_2: i32 = 290_630_308;
/// `exp(-4)`, Q0.31: barrel-shifter factor for the `2^2` bit.
pub const EXP_NEG_4: i32 = 39_332_535;
/// `exp(-8)`, Q0.31: barrel-shifter factor for the `2^3` bit.
pub const EXP_NEG_8: i32 = 720_401;
/// `exp(-16)`, Q0.31: barrel-shifter factor for the `2^4` bit.
pub const EXP_NEG_16: i32 = 242;

/// The barrel shifter: `(e, exp(-2^e) in Q0.31)` for the input bit worth `2^e`.
pub const EXP_BARREL_SHIFTER: [(i32, i32); 7] = [
    (-2, EXP_NEG_QUARTER),
    (-1, EXP_NEG_HALF),
    (0, EXP_NEG_1),
    (1, EXP_NEG_2),
    (2, EXP_NEG_4),
    (3, EXP_NEG_8),
    (4, EXP_NEG_16),
];

/// `48/17`, Q2.29: Newton-Raphson seed offset for `1/d` with `d` in `[1/2, 1]`.
pub const FORTY_EIGHT_OVER_SEVENTEEN: i32 = 1_515_870_810;
/// `-32/17`, Q2.29: Newton-Raphson seed slope.
pub const NEG_THIRTY_TWO_OVER_SEVENTEEN: i32 = -1_010_580_540;

#[cfg(test)]
mod tests {
    use super::*;

    /// Rounds `x * 2^frac` to nearest, the way the checked constants were made.
    fn raw(x: f64, frac: u32) -> i64 {
        (x * (1u64 << frac) as f64).round() as i64
    }

    #[test]
    fn constants_match_their_real_values() {
        let checks: [(i32, f64, u32); 11] = [
            (EXP_NEG_ONE_EIGHTH, (-1.0f64 / 8.0).exp(), 31),
            (ONE_THIRD, 1.0 / 3.0, 31),
            (EXP_NEG_QUARTER, (-0.25f64).exp(), 31),
            (EXP_NEG_HALF, (-0.5f64).exp(), 31),
            (EXP_NEG_1, (-1.0f64).exp(), 31),
            (EXP_NEG_2, (-2.0f64).exp(), 31),
            (EXP_NEG_4, (-4.0f64).exp(), 31),
            (EXP_NEG_8, (-8.0f64).exp(), 31),
            (EXP_NEG_16, (-16.0f64).exp(), 31),
            (FORTY_EIGHT_OVER_SEVENTEEN, 48.0 / 17.0, 29),
            (NEG_THIRTY_TWO_OVER_SEVENTEEN, -32.0 / 17.0, 29),
        ];
        for (value, real, frac) in checks {
            assert_eq!(value as i64, raw(real, frac), "constant for {real}");
        }
        for (e, m) in EXP_BARREL_SHIFTER {
            assert_eq!(m as i64, raw((-(2f64.powi(e))).exp(), 31));
        }
    }
}
