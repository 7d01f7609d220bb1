//! Independent oracles for the layer operators (GEMM, add, NoNorm), written
//! from TFLite's definitions in plain `i64`/`f64` arithmetic, sharing no code
//! with the crate: the multiplier quantization (`QuantizeMultiplier`), the
//! double-rounding `MultiplyByQuantizedMultiplier`, the activation range, and
//! the reference kernels' loops.

#![allow(dead_code)]

/// SplitMix64: small, fast, deterministic (`QNEON_SEED` overrides the seed).
pub struct Rng(u64);

impl Rng {
    pub fn new(stream: u64) -> Rng {
        let seed = std::env::var("QNEON_SEED")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(0x5EED_6E33_u64);
        Rng(seed ^ stream.wrapping_mul(0xD1B5_4A32_D192_ED03))
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in `0..n` (`n > 0`).
    pub fn below(&mut self, n: u64) -> u64 {
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }
    /// Uniform in `lo..=hi`.
    pub fn range(&mut self, lo: i64, hi: i64) -> i64 {
        lo + self.below((hi - lo + 1) as u64) as i64
    }
    pub fn usize(&mut self, lo: usize, hi: usize) -> usize {
        self.range(lo as i64, hi as i64) as usize
    }
    pub fn i8(&mut self) -> i8 {
        self.next_u64() as i8
    }
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
    /// Log-uniform in `[lo, hi]`.
    pub fn log_uniform(&mut self, lo: f64, hi: f64) -> f32 {
        (lo.ln() + self.unit() * (hi / lo).ln()).exp() as f32
    }
    pub fn vec_i8(&mut self, n: usize) -> Vec<i8> {
        (0..n).map(|_| self.i8()).collect()
    }
}

/// TFLite's `QuantizeMultiplier` (double-rounding build): `real = q * 2^shift`
/// with `q` in `[0.5, 1)` as a Q0.31 integer rounded half away from zero.
pub fn quantize_multiplier(real: f64) -> (i64, i64) {
    assert!(real >= 0.0 && real.is_finite());
    if real == 0.0 {
        return (0, 0);
    }
    // frexp by exact halving/doubling.
    let (mut q, mut shift) = (real, 0i64);
    while q >= 1.0 {
        q /= 2.0;
        shift += 1;
    }
    while q < 0.5 {
        q *= 2.0;
        shift -= 1;
    }
    let mut fixed = (q * 2f64.powi(31)).round() as i64; // half away from zero
    if fixed == 1 << 31 {
        fixed /= 2;
        shift += 1;
    }
    if shift < -31 {
        return (0, 0);
    }
    (fixed, shift)
}

/// gemmlowp's `SaturatingRoundingDoublingHighMul` on `i64`s holding `i32`s.
pub fn srdhm(a: i64, b: i64) -> i64 {
    if a == i32::MIN as i64 && b == i32::MIN as i64 {
        return i32::MAX as i64;
    }
    let ab = a * b;
    let nudge = if ab >= 0 { 1 << 30 } else { 1 - (1 << 30) };
    // C++ integer division truncates toward zero.
    (ab + nudge) / (1i64 << 31)
}

/// gemmlowp's `RoundingDivideByPOT`: `x / 2^e`, ties away from zero.
pub fn rounding_divide_by_pot(x: i64, e: i64) -> i64 {
    if e == 0 {
        return x;
    }
    let d = 1i64 << e;
    if x >= 0 {
        (x + d / 2) / d
    } else {
        -((-x + d / 2) / d)
    }
}

/// TFLite's `MultiplyByQuantizedMultiplier(x, m, shift)` on an `i32` value,
/// with the left shift saturated to 32 bits where the C++ overflows (there
/// TFLite's result is garbage; qneon's saturates, as the exact value does).
pub fn mbqm(x: i64, m: i64, shift: i64) -> i64 {
    let left = shift.max(0);
    let right = (-shift).max(0);
    let shifted = ((x as i32 as i64) << left).clamp(i32::MIN as i64, i32::MAX as i64);
    rounding_divide_by_pot(srdhm(shifted, m), right)
}

/// TFLite's `CalculateActivationRangeQuantized` for int8: 0 = none, 1 = relu,
/// 2 = relu6.
pub fn activation_range(activation: u8, scale: f32, zero_point: i32) -> (i64, i64) {
    let q = |real: f32| zero_point as i64 + (real / scale).round() as i64;
    match activation {
        0 => (-128, 127),
        1 => (q(0.0).max(-128), 127),
        _ => (q(0.0).max(-128), q(6.0).min(127)),
    }
}

/// The int8 output: zero point added (exactly), clamped to the activation range.
pub fn output(r: i64, zero_point: i32, range: (i64, i64)) -> i8 {
    (r + zero_point as i64).clamp(range.0, range.1) as i8
}
