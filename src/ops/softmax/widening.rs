//! Softmax of int8 rows into int16 probabilities, as TFLite's reference
//! kernel computes it for an int8 input with an int16 output (keyword
//! spotters' last op): the int8 fixed-point softmax (exps summed in Q12.19,
//! the reciprocal of the sum) with 16 output fraction bits and the output
//! zero point -32768 (output scale 2^-16). One `i32` lane at a time: rows
//! of a classifier head are a handful of classes.

use crate::checks::{check_rows, check_scale, check_zero_point};
use crate::error::{Error, Result};
use crate::ops::softmax_rows::SoftmaxParams;
use crate::quant::QuantParams;

/// The output quantization TFLite requires of an int8 -> int16 softmax.
const OUTPUT_SCALE: f64 = 1.0 / 65536.0;
const OUTPUT_ZERO_POINT: i32 = -32768;
/// TFLite's tolerance on that scale (relative).
const OUTPUT_SCALE_TOLERANCE: f64 = 1e-3;

/// A prepared int8 -> int16 softmax, bit-exact with TFLite's reference
/// kernel. `run` allocates nothing; rows are independent (a tile is a
/// range of rows).
#[derive(Clone, Copy, Debug)]
pub struct SoftmaxI8ToI16 {
    params: SoftmaxParams,
}

impl SoftmaxI8ToI16 {
    /// Prepares from the int8 `input` quantization, `beta` and the int16
    /// `output` quantization (scale 2^-16 within 0.1%, zero point -32768).
    pub fn new(input: QuantParams, beta: f32, output: QuantParams) -> Result<Self> {
        let out_scale = check_scale("output scale", output.scale)?;
        check_zero_point::<i16>("output zero point", output.zero_point)?;
        if (out_scale - OUTPUT_SCALE).abs() > OUTPUT_SCALE_TOLERANCE * OUTPUT_SCALE
            || output.zero_point != OUTPUT_ZERO_POINT
        {
            return Err(Error::OutputQuantization {
                op: "softmax int8 -> int16",
                dtype: "int16",
                expected_scale: OUTPUT_SCALE,
                expected_zero_point: OUTPUT_ZERO_POINT,
                scale: out_scale,
                zero_point: output.zero_point,
            });
        }
        // The int8 preparation (input multiplier, radius, Q12.19 sums), then
        // the int16 output stage: 16 fraction bits, TFLite's
        // `numeric_limits<int16>::min()` as the zero point.
        let int8_output = QuantParams::new(1.0 / 256.0, -128);
        let mut params = SoftmaxParams::new::<i8>(input, beta, int8_output)?;
        params.output_bits = 16;
        params.output_zero_point = OUTPUT_ZERO_POINT;
        Ok(SoftmaxI8ToI16 { params })
    }

    /// The prepared parameters.
    pub fn params(&self) -> &SoftmaxParams {
        &self.params
    }

    /// Softmax of each `row_len`-long row of `input` into `output`. Errors
    /// if the lengths differ or `row_len` is 0 or does not divide them.
    pub fn run(&self, input: &[i8], output: &mut [i16], row_len: usize) -> Result<()> {
        check_rows("softmax", input.len(), output.len(), row_len)?;
        let p = &self.params;
        for (row_in, row_out) in input
            .chunks_exact(row_len)
            .zip(output.chunks_exact_mut(row_len))
        {
            let max = row_in.iter().fold(i32::MIN, |m, &x| m.max(x as i32));
            let mut sum_of_exps: i64 = 0;
            for &x in row_in {
                let diff = x as i32 - max;
                if diff >= p.diff_min {
                    sum_of_exps += p.sum_term(p.exp_of_diff(diff));
                }
            }
            let (scale, exponent) = p.reciprocal::<i32>(sum_of_exps);
            for (&x, y) in row_in.iter().zip(row_out.iter_mut()) {
                let diff = x as i32 - max;
                let q = if diff >= p.diff_min {
                    p.output(p.exp_of_diff(diff), scale, exponent)
                } else {
                    p.output_zero_point
                };
                *y = q.clamp(i16::MIN as i32, i16::MAX as i32) as i16;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;

    /// Against the real softmax: within one output step (2^-16) plus the
    /// Q12.19 rounding of each exp in the sum, for rows of 2 to 12 classes.
    #[test]
    fn rows_are_within_the_rounding_of_the_real_softmax() {
        let input_q = QuantParams::new(0.07, 2);
        let op =
            SoftmaxI8ToI16::new(input_q, 1.0, QuantParams::new(1.0 / 65536.0, -32768)).unwrap();
        let mut seed = 12345u64;
        for len in 2..=12usize {
            for _ in 0..50 {
                let row: std::vec::Vec<i8> = (0..len)
                    .map(|_| {
                        seed = seed
                            .wrapping_mul(6364136223846793005)
                            .wrapping_add(1442695040888963407);
                        (seed >> 56) as i8
                    })
                    .collect();
                let mut out = std::vec![0i16; len];
                op.run(&row, &mut out, len).unwrap();
                let reals: std::vec::Vec<f64> = row
                    .iter()
                    .map(|&x| ((x as i32 - 2) as f64 * 0.07).exp())
                    .collect();
                let total: f64 = reals.iter().sum();
                for (r, &y) in reals.iter().zip(&out) {
                    let expected = r / total * 65536.0 - 32768.0;
                    let slack = 1.0 + len as f64 * 65536.0 / (1u64 << 19) as f64;
                    assert!(
                        (y as f64 - expected.min(32767.0)).abs() <= slack,
                        "{row:?}: {y} vs {expected}"
                    );
                }
            }
        }
    }

    #[test]
    fn output_quantization_other_than_tflites_is_an_error() {
        let input = QuantParams::new(0.07, 2);
        assert!(SoftmaxI8ToI16::new(input, 1.0, QuantParams::new(1.0 / 32768.0, 0)).is_err());
        assert!(SoftmaxI8ToI16::new(input, 1.0, QuantParams::new(1.0 / 65536.0, 0)).is_err());
    }
}
