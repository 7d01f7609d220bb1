//! Scalar `f64` logarithms and exponential shared by both backends (once
//! per row, or once per prepared table), without `std`.

/// Natural logarithm, computed in `f64` (`ln m + e ln 2` with
/// `ln m = 2 atanh((m-1)/(m+1))`, `m` in `[sqrt(1/2), sqrt(2))`) and rounded
/// once to `f32`: correctly rounded except in rare double-rounding cases.
pub(crate) fn ln_f32(x: f32) -> f32 {
    ln_to_f32(x as f64)
}

/// Natural logarithm of an `f64` (a row sum; normal, zero, infinite or
/// NaN), computed as [`ln_f32`] and rounded once to `f32`.
pub(crate) fn ln_to_f32(x: f64) -> f32 {
    ln_f64(x) as f32
}

/// Natural logarithm in `f64` of a normal, zero, infinite or NaN `x`
/// (`ln m + e ln 2` with `ln m = 2 atanh((m-1)/(m+1))`, `m` in
/// `[sqrt(1/2), sqrt(2))`): within a few `f64` ulp, no `std`.
pub(crate) fn ln_f64(x: f64) -> f64 {
    if x.is_nan() || x < 0.0 {
        return f64::NAN;
    }
    if x == 0.0 {
        return f64::NEG_INFINITY;
    }
    if x == f64::INFINITY {
        return f64::INFINITY;
    }
    let mut v = x;
    let bits = v.to_bits();
    let mut e = ((bits >> 52) & 0x7ff) as i64 - 1023;
    v = f64::from_bits((bits & !(0x7ffu64 << 52)) | (1023u64 << 52));
    if v > core::f64::consts::SQRT_2 {
        v *= 0.5;
        e += 1;
    }
    // |t| <= 0.1716: 11 terms reach 1e-17.
    2.0 * atanh_series((v - 1.0) / (v + 1.0), 21.0) + e as f64 * core::f64::consts::LN_2
}

/// `ln(1 + r)` in `f64` for `r >= 0`, without forming `1 + r` (whose
/// rounding would lose a small `r`): `2 atanh(r / (2 + r))`. Within a few
/// `f64` ulp for `r <= 1` (`|t| <= 1/3`); larger `r` go through [`ln_f64`].
pub(crate) fn ln_1p_f64(r: f64) -> f64 {
    if r.is_nan() || r > 1.0 {
        return ln_f64(1.0 + r);
    }
    // |t| <= 1/3: 18 terms reach (1/9)^18 < 2^-57.
    2.0 * atanh_series(r / (2.0 + r), 35.0)
}

/// `e^x` in `f64` for `x <= 0` (NaN for NaN), without `std`: `x = k ln 2 +
/// r` with `|r| <= ln 2 / 2` (`ln 2` in two parts, so `k ln 2` is exact
/// for the `k` that occur), a Taylor series of 20 terms for `e^r` (`(ln 2 /
/// 2)^21 / 21! < 2^-90`), then `2^k` by the exponent; 0 below `-745`.
/// Within a few `f64` ulp: for tables built once (the quantized losses').
pub(crate) fn exp_neg_f64(x: f64) -> f64 {
    if x.is_nan() {
        return f64::NAN;
    }
    if x < -745.0 {
        return 0.0;
    }
    const LN2_HI: f64 = 0.693_147_180_369_123_8; // 32 significant bits
    const LN2_LO: f64 = 1.908_214_929_270_587_7e-10;
    let k = (x / core::f64::consts::LN_2 - 0.5) as i64 as f64; // round half down, x <= 0
    let k = if x - k * core::f64::consts::LN_2 > core::f64::consts::LN_2 / 2.0 {
        k + 1.0
    } else {
        k
    };
    let r = (x - k * LN2_HI) - k * LN2_LO;
    let mut sum = 1.0f64;
    let mut term = 1.0f64;
    for n in 1..=20 {
        term *= r / n as f64;
        sum += term;
    }
    // 2^k in two steps, so that results down to the subnormals are formed.
    let k = k as i64;
    let half = k / 2;
    let pow2 = |e: i64| f64::from_bits(((e + 1023) as u64) << 52);
    sum * pow2(half) * pow2(k - half)
}

/// `atanh(t) = t (1 + t^2/3 + t^4/5 + ...)`, the series evaluated by
/// Horner's rule from the term `t^(last - 1) / last` down.
fn atanh_series(t: f64, last: f64) -> f64 {
    let t2 = t * t;
    let mut sum = 0.0f64;
    let mut k = last;
    while k >= 1.0 {
        sum = sum * t2 + 1.0 / k;
        k -= 2.0;
    }
    t * sum
}
