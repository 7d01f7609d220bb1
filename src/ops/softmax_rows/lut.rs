//! int8/uint8 softmax through an exp table (`Method::Lut`): TFLite's
//! optimized kernel as it is built for aarch64.
//!
//! TFLite compiles its optimized 8-bit softmax two ways. With clang on aarch64
//! (`TFLITE_SOFTMAX_USE_UINT16_LUT`, the build phones, Raspberry Pi and
//! Graviton wheels run) it is an integer kernel on a 16-bit exp table; this
//! module is that kernel, bit for bit:
//!
//! ```text
//! prepare:  t[d] = min(65535, trunc(f32(expf(-d * f32(beta * in_scale)) * 65535) + 0.5))
//!                                                  for d = 0..=255 (max - x, in input steps)
//! per row:  sum  = sum of t[max - x]                (u16 terms, integer sum)
//!           inv  = 1 / (f32(sum) * out_scale)       (f32)
//!           (m, shift) = QuantizeMultiplier(inv)    (Q0.31 mantissa, exponent)
//!           out  = clamp(MultiplyByQuantizedMultiplier(t[max - x], m, shift) + zero_point)
//! ```
//! The table is filled with `f32::exp` (the platform's `expf`), so this
//! method needs the `std` feature.
//!
//! Where TFLite fails, qneon answers: its sum is an `i32` that overflows on
//! rows of more than 32,768 elements near the maximum; qneon sums in `u64`.
//!
//! Elsewhere (x86 builds, gcc builds) TFLite runs a float-table kernel whose
//! sequential `f32` sum cannot be vectorized bit-exactly; this method differs
//! from it, and from [`Method::FixedPoint`](crate::Method::FixedPoint), by at
//! most one output step (tested on TFLite's own golden vectors).
//!
//! NEON splits the table into a high byte and a low byte (256 bytes each).
//! Where `beta * in_scale` is at least about 0.09 the high byte is zero for
//! `d >= 64` and the whole entry is zero for `d >= 128` (checked in `new()`),
//! so both fit in registers: the high bytes are one 64-byte `tbl` and the low
//! bytes a `tbl` + `tbx` over 128 bytes; out-of-range indices read 0 for free.
//! Smaller scales (a transformer's attention scores) need all 256 entries of
//! both: four `tbl`/`tbx` per byte, the 64-byte chunks reloaded from L1 for
//! every 64 inputs. The output depends on `d` only and does not increase with
//! it, so each row builds only the 64-entry chunks of its output table that
//! can be nonzero (one unless the scale is small), and the output pass is a
//! `tbl` plus a `tbx` per further chunk for every 16 elements.

#[cfg(feature = "std")]
use crate::elem::QuantElem;
use crate::quant::{
    multiply_by_quantized_multiplier, quantize_multiplier, quantize_multiplier_f32,
};

/// Entries of the NEON register high-byte table (in a split table,
/// `t[d] >> 8` is 0 beyond).
pub(crate) const HIGH_ENTRIES: usize = 64;
/// Entries of the NEON register low-byte table (in a split table, `t[d]` is
/// 0 beyond).
pub(crate) const LOW_ENTRIES: usize = 128;
/// Entries of one chunk of the per-row NEON output table (one `tbl` of four
/// registers).
pub(crate) const OUTPUT_ENTRIES: usize = 64;

/// A 64-byte, register-aligned byte table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(C, align(64))]
pub(crate) struct Bytes64(pub(crate) [u8; 64]);

/// Everything `Method::Lut` softmax needs, computed once by `new()`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SoftmaxLut {
    /// `t[d]`: `exp(-d * beta * in_scale)` in units of 2^-16 (65535 = 1),
    /// rounded as TFLite rounds it, for `d = max - x` in `0..=255`.
    pub(crate) exp: [u16; 256],
    /// `t[d]` widened, for the per-row output table (one 128-bit load per
    /// four entries).
    pub(crate) exp_wide: [i32; 256],
    /// `t[d] >> 8` in four 64-entry chunks (`d = 64 k + i` in `high[k].0[i]`).
    pub(crate) high: [Bytes64; 4],
    /// `t[d] & 0xff`, chunked the same way.
    pub(crate) low: [Bytes64; 4],
    /// `high[0]` and `low[0..2]` hold every nonzero byte of `t` (the NEON
    /// register tables).
    pub(crate) split: bool,
    /// Number of 64-entry chunks of `high` up to the last nonzero byte
    /// (`t[d] < 256` beyond them; at least 1, as `t[0] = 65535`).
    pub(crate) high_chunks: usize,
    /// Number of 64-entry chunks of `low` up to the last nonzero `t[d]`
    /// (`t[d] = 0` beyond them; at least 1).
    pub(crate) low_chunks: usize,
    /// `t[64] <= 126`: then every row's output is 0 above the minimum for
    /// `d >= 64` (see `from_exp_table`), and the output table needs one
    /// chunk without a per-row check.
    pub(crate) outputs_fit: bool,
    /// The output scale as given (TFLite divides by it, not by 1/256).
    pub(crate) output_scale: f32,
    /// Output zero point (-128 for int8, 0 for uint8).
    pub(crate) output_zero_point: i32,
}

impl SoftmaxLut {
    /// Prepares the tables; `beta * input.scale` and the output quantization
    /// were validated by `SoftmaxParams::new`. 8-bit types only.
    #[cfg(feature = "std")]
    pub(crate) fn new<T: QuantElem>(
        input_scale: f32,
        beta: f32,
        output: crate::QuantParams,
    ) -> Self {
        debug_assert!(T::MAX - T::MIN == 255);
        // TFLite: `scale = input_scale * beta` and `input_to_exp = scale * (val - 255)`
        // for table index val = 255 - d, all in f32.
        let scale: f32 = input_scale * beta;
        let mut exp = [0u16; 256];
        for (d, t) in exp.iter_mut().enumerate() {
            if d == 0 {
                // exp(0) = 1. TFLite computes scale * 0, which is NaN when
                // beta * scale overflows f32 (then its cast is undefined);
                // 65535 also keeps every row's sum at least 65535.
                *t = 65535;
                continue;
            }
            let x: f32 = scale * -(d as f32);
            // `expf(x) * 65535` is an f32 product; `+ 0.5` is done in double
            // and the conversion truncates.
            let scaled: f32 = x.exp() * 65535.0f32;
            let rounded = (scaled as f64 + 0.5) as i32;
            *t = rounded.clamp(0, 65535) as u16;
        }
        Self::from_exp_table(exp, output)
    }

    /// The split tables and checks for a given exp table.
    pub(crate) fn from_exp_table(exp: [u16; 256], output: crate::QuantParams) -> Self {
        let exp_wide = exp.map(i32::from);
        let mut high = [Bytes64([0; 64]); 4];
        let mut low = [Bytes64([0; 64]); 4];
        for (d, &t) in exp.iter().enumerate() {
            high[d / 64].0[d % 64] = (t >> 8) as u8;
            low[d / 64].0[d % 64] = t as u8;
        }
        let split = exp[HIGH_ENTRIES..].iter().all(|&t| t < 256)
            && exp[LOW_ENTRIES..].iter().all(|&t| t == 0);
        // The output for d is t[d] * inverse rounded twice, with inverse =
        // 1 / (sum * out_scale) <= 256 / (65535 * 0.999) (sum >= t[0] = 65535,
        // out_scale within 0.1% of 1/256, as validated). For t <= 126 the real
        // value is below 0.4927, and the first rounding (to 2^-r with r >= 7)
        // adds at most 2^-8: below one half, so the output rounds to 0.
        let outputs_fit = exp[OUTPUT_ENTRIES] <= 126;
        // Chunks up to the last entry with a nonzero high byte / a nonzero
        // value (t does not increase, but this does not rely on it).
        let chunks_to = |nonzero: fn(u16) -> bool| {
            exp.iter()
                .rposition(|&t| nonzero(t))
                .map_or(1, |d| d / 64 + 1)
        };
        let high_chunks = chunks_to(|t| t >= 256);
        let low_chunks = chunks_to(|t| t != 0);
        SoftmaxLut {
            exp,
            exp_wide,
            high,
            low,
            split,
            high_chunks,
            low_chunks,
            outputs_fit,
            output_scale: output.scale,
            output_zero_point: output.zero_point,
        }
    }

    /// The row's requantization multiplier for its sum of `t` terms:
    /// `QuantizeMultiplier(1 / (f32(sum) * out_scale))`, as `(Q0.31 mantissa, shift)`.
    #[inline]
    pub(crate) fn row_multiplier(&self, sum: u64) -> (i32, i32) {
        // u64 -> f32 rounds to nearest, ties to even, as C's int -> float.
        let inverse: f32 = 1.0f32 / (sum as f32 * self.output_scale);
        // sum >= 65535 (the maximum contributes t[0]), so inverse is finite,
        // positive and normal: the bit-level QuantizeMultiplier applies.
        match quantize_multiplier_f32(inverse) {
            Some(q) => (q.multiplier, q.shift),
            None => general_multiplier(inverse),
        }
    }

    /// `row_multiplier` for the NEON kernels: `(multiplier, shift)` with the
    /// shift clamped to `-31` (a right shift of 31 or more gives 0 for every
    /// `t`, as the reference's zero multiplier does). Straight from the bits
    /// of the inverse, which is always a normal `f32` here: the sum is at
    /// least 65535 and below 2^64, and the output scale within 0.1% of 1/256,
    /// so the inverse lies between 2^-57 and 2^-7 (checked against
    /// `row_multiplier` by the tests below).
    #[inline(always)]
    pub(crate) fn row_multiplier_clamped(&self, sum: u64) -> (i32, i32) {
        let inverse: f32 = 1.0f32 / (sum as f32 * self.output_scale);
        let bits = inverse.to_bits();
        // Q0.31 mantissa: the implicit one at bit 30, the 23 stored bits
        // below it.
        let multiplier = (((bits & 0x7f_ffff) << 7) | 0x4000_0000) as i32;
        let shift = (bits >> 23) as i32 - 126;
        (multiplier, shift.max(-31))
    }

    /// `row_multiplier_clamped` for a row of at most 256 elements whose sum
    /// the caller already converted to `f32` (exactly: such sums are below
    /// 256 * 65536 = 2^24). Its inverse lies between 256 / (2^24 * 1.001)
    /// and 256 / (65535 * 0.999), so the shift is between -16 and -7 and
    /// needs no clamp.
    #[inline(always)]
    pub(crate) fn row_multiplier_short(&self, sum: f32) -> (i32, i32) {
        let inverse: f32 = 1.0f32 / (sum * self.output_scale);
        let bits = inverse.to_bits();
        let multiplier = (((bits & 0x7f_ffff) << 7) | 0x4000_0000) as i32;
        let shift = (bits >> 23) as i32 - 126;
        debug_assert!((-31..=-7).contains(&shift));
        (multiplier, shift)
    }

    /// One output before the element type's clamp.
    #[inline(always)]
    pub(crate) fn output(&self, t: u16, multiplier: i32, shift: i32) -> i32 {
        multiply_by_quantized_multiplier(t as i32, multiplier, shift) + self.output_zero_point
    }
}

/// `QuantizeMultiplier` through `f64`, out of the row loops: only reached for
/// an `inverse` that is not a normal `f32` (none when sums stay below 2^100).
#[cold]
#[inline(never)]
fn general_multiplier(inverse: f32) -> (i32, i32) {
    match quantize_multiplier(inverse as f64) {
        Ok(q) => (q.multiplier, q.shift),
        Err(_) => (0, 0),
    }
}

#[cfg(test)]
mod tests {
    use crate::quant::{quantize_multiplier, quantize_multiplier_f32};

    /// The NEON kernels' multiplier equals the reference's wherever the
    /// reference's shift is at least -31, on sums from the smallest (65535)
    /// to far beyond any row, for output scales across the accepted 0.1%.
    #[test]
    #[cfg_attr(
        miri,
        ignore = "sweeps sums and scales: too slow under Miri; f32_quantize_multiplier_equals_the_f64_one runs"
    )]
    fn clamped_row_multiplier_equals_the_reference() {
        use super::SoftmaxLut;
        let exp = [0u16; 256];
        for scale in [1.0f32 / 256.0 * 0.999, 1.0 / 256.0, 1.0 / 256.0 * 1.001] {
            let out = crate::QuantParams {
                scale,
                zero_point: -128,
            };
            let p = SoftmaxLut::from_exp_table(exp, out);
            let mut state = 0x1234_5678_9abc_def1u64;
            let random = core::iter::repeat_with(move || {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                65535 + (state >> (state % 40 + 20))
            });
            let sums = (0..41)
                .map(|k| 65535u64 << k)
                .chain(65535..70000)
                .chain(random.take(100_000));
            for sum in sums {
                let (m, shift) = p.row_multiplier(sum);
                let (mc, sc) = p.row_multiplier_clamped(sum);
                if shift >= -31 && m != 0 {
                    assert_eq!((mc, sc), (m, shift), "sum {sum} scale {scale}");
                } else {
                    // Both give 0 for every t (the clamped one by shifting
                    // t * m < 2^47 right by 31 + 31).
                    assert_eq!(sc, -31, "sum {sum}");
                }
            }
        }
    }

    /// The bit-level QuantizeMultiplier equals the f64 one on every exponent
    /// and a spread of mantissas, and refuses what it cannot represent.
    #[test]
    fn f32_quantize_multiplier_equals_the_f64_one() {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        for exp_field in 1u32..255 {
            for k in 0..64u32 {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                let mantissa = match k {
                    0 => 0,
                    1 => 0x7f_ffff,
                    _ => (state as u32) & 0x7f_ffff,
                };
                let x = f32::from_bits(exp_field << 23 | mantissa);
                let want = quantize_multiplier(x as f64).unwrap();
                assert_eq!(quantize_multiplier_f32(x), Some(want), "{x:e}");
            }
        }
        for x in [
            0.0f32,
            -1.0,
            f32::INFINITY,
            f32::NAN,
            f32::from_bits(1),
            -0.0,
        ] {
            assert_eq!(quantize_multiplier_f32(x), None, "{x:e}");
        }
    }
}
