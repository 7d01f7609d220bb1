//! int8/uint8 log-softmax through an `f32` exp table (`Method::Lut`):
//! TFLite's optimized 8-bit kernel (`optimized_ops::LogSoftmax`, with the
//! table its `Prepare` fills by `PopulateSoftmaxLookupTable`), bit for bit:
//!
//! ```text
//! prepare:  t[d] = expf(-in_scale * d)                 f32, d = max - x in 0..=255
//!           step = in_scale / out_scale                f32
//! per row:  sum  = ((0 + t[d_0]) + t[d_1]) + ...       f32, in element order
//!           pre  = (in_scale * max + logf(sum)) / out_scale      f32, left to right
//!           out  = clamp(i32(rint(step * x - pre) + zero_point))  rint: ties to even
//! ```
//! Every operation is a single `f32` operation rounded to nearest, as in
//! TFLite's x86 build, where the golden vectors come from (no fused
//! multiply-add). The conversion to `i32` is x86's: values outside the `i32`
//! range (and NaN, only for input scales near `f32::MAX`) give `i32::MIN`.
//! `expf` and `logf` are the platform's (`f32::exp`, `f32::ln`), so this
//! method needs the `std` feature.
//!
//! The sum is sequential: `f32` addition is not associative, so its order is
//! part of the result. The NEON kernel keeps the order (one fused
//! multiply-add by 1.0 per element, which rounds once like the addition) and
//! does the rest by tables: the terms by byte planes of `t`, the outputs by
//! a per-row table over the row's reachable inputs.

// `CHUNK` is used by `new`, which needs `std`.
#[cfg_attr(not(feature = "std"), allow(unused_imports))]
use super::table::{Chunk, CHUNK};
use crate::elem::QuantElem;

/// Entries of `scaled_x`: 256 inputs then 16 of padding, so that 16-entry
/// groups starting anywhere in `0..256` stay inside.
pub(crate) const PADDED: usize = 16 + 256;

/// Everything `Method::Lut` log-softmax needs, computed once by `new()`.
#[derive(Clone, Copy, Debug)]
#[cfg_attr(
    any(
        not(feature = "std"),
        not(all(target_arch = "aarch64", target_feature = "neon"))
    ),
    allow(dead_code)
)]
pub(crate) struct LogSoftmaxLut {
    /// `t[d] = expf(-in_scale * d)`.
    pub(crate) exp: [f32; 256],
    /// The bytes of `t[d]` (little-endian byte `k` in plane `k`), in 64-entry
    /// chunks, for the NEON lookups.
    pub(crate) planes: [[Chunk; 4]; 4],
    /// `step * x` for `x = T::MAX - i` at `i` (descending `x`, so that a
    /// row's entries lie in `d` order from `T::MAX - max` on; the 16 after
    /// `i = 255` repeat it).
    pub(crate) scaled_x: [f32; PADDED],
    /// The input scale.
    pub(crate) input_scale: f32,
    /// Chunks of `exp` up to its last nonzero entry (at least 1: `t[0] = 1`).
    pub(crate) exp_chunks: usize,
    /// Chunks of `exp` up to its last entry of at least `2^-24` (at least
    /// 1). The rest cannot change a running `f32` sum that has reached 1:
    /// they are below half an ulp of it, so the rounded sum stays put.
    pub(crate) late_chunks: usize,
    /// The output scale (16/256).
    pub(crate) output_scale: f32,
    /// `in_scale / out_scale`.
    pub(crate) step: f32,
    /// Output zero point (127 for int8, 255 for uint8).
    pub(crate) output_zero_point: i32,
}

impl LogSoftmaxLut {
    /// The tables for element type `T`; scales were validated by
    /// `LogSoftmaxParams::new` (finite and positive, output 16/256).
    #[cfg(feature = "std")]
    pub(crate) fn new<T: QuantElem>(input_scale: f32, output: crate::QuantParams) -> Self {
        // TFLite: scale = -in_scale * beta (beta = 1), table[255 - val] =
        // expf(scale * val), looked up at val = d.
        let neg_scale: f32 = -input_scale;
        let exp: [f32; 256] = core::array::from_fn(|d| (neg_scale * d as f32).exp());
        let mut planes = [[Chunk([0; CHUNK]); 4]; 4];
        for (d, t) in exp.iter().enumerate() {
            for (k, b) in t.to_bits().to_le_bytes().into_iter().enumerate() {
                planes[k][d / CHUNK].0[d % CHUNK] = b;
            }
        }
        let step: f32 = input_scale / output.scale;
        let scaled_x = core::array::from_fn(|i| step * (T::MAX - i.min(255) as i32) as f32);
        let exp_chunks = exp
            .iter()
            .rposition(|&t| t != 0.0)
            .map_or(1, |d| d / CHUNK + 1);
        let half_ulp_of_one = f32::EPSILON / 2.0;
        let late_chunks = exp
            .iter()
            .rposition(|&t| t >= half_ulp_of_one)
            .map_or(1, |d| d / CHUNK + 1);
        LogSoftmaxLut {
            exp,
            exp_chunks,
            late_chunks,
            planes,
            scaled_x,
            input_scale,
            output_scale: output.scale,
            step,
            output_zero_point: output.zero_point,
        }
    }

    /// `(in_scale * max + logf(sum)) / out_scale`.
    #[inline]
    pub(crate) fn precomputed(&self, max: i32, sum: f32) -> f32 {
        #[cfg(feature = "std")]
        let log_sum = sum.ln();
        #[cfg(not(feature = "std"))]
        let log_sum = {
            // Never prepared without std (`new` needs it).
            let _ = sum;
            f32::NAN
        };
        (self.input_scale * max as f32 + log_sum) / self.output_scale
    }

    /// One output before the type's clamp, from `step * x` and the row's
    /// `pre`.
    #[inline(always)]
    pub(crate) fn output(&self, scaled_x: f32, pre: f32) -> i32 {
        let log_prob = scaled_x - pre;
        let rounded = round_ties_even(log_prob) + self.output_zero_point as f32;
        x86_to_i32(rounded)
    }
}

/// `rint` in the default rounding mode: to nearest, ties to even.
#[inline(always)]
fn round_ties_even(x: f32) -> f32 {
    #[cfg(feature = "std")]
    {
        x.round_ties_even()
    }
    #[cfg(not(feature = "std"))]
    {
        x
    }
}

/// C's `float` to `int32_t` as x86 executes it (`cvttss2si`): truncation,
/// and `i32::MIN` for NaN and values out of range.
#[inline(always)]
pub(crate) fn x86_to_i32(x: f32) -> i32 {
    if (-2147483648.0..2147483648.0).contains(&x) {
        x as i32
    } else {
        i32::MIN
    }
}

/// Scalar reference: TFLite's kernel element by element on every row.
/// Lengths were checked by the caller.
pub(crate) fn log_softmax_scalar<T: QuantElem>(
    p: &LogSoftmaxLut,
    input: &[T],
    output: &mut [T],
    row_len: usize,
) {
    for (row_in, row_out) in input
        .chunks_exact(row_len)
        .zip(output.chunks_exact_mut(row_len))
    {
        let max = row_in.iter().fold(i32::MIN, |m, x| m.max(x.to_i32()));
        let mut sum = 0.0f32;
        for x in row_in {
            sum += p.exp[(max - x.to_i32()) as usize];
        }
        let pre = p.precomputed(max, sum);
        for (x, y) in row_in.iter().zip(row_out.iter_mut()) {
            let scaled_x = p.step * x.to_i32() as f32;
            *y = T::saturate(p.output(scaled_x, pre));
        }
    }
}
