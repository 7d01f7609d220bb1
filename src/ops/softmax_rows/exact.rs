//! The tables of the exact 8-bit [`Method::FixedPoint`](crate::Method::FixedPoint)
//! kernel on NEON, prepared once by `Softmax::new`.
//!
//! For 8-bit input every per-element quantity of the reference loop
//! (`ops/softmax/scalar.rs`) depends on `d = max - x` alone, and `d` takes 256 values.
//! So `new()` runs that loop's own fixed-point code once per `d`:
//!
//! ```text
//! e[d] = exp_on_negative_values(-d rescaled to Q5.26)   Q0.31, 0 where -d < diff_min
//! s[d] = e[d] rounded to Q12.19                          the reference's sum term, <= 2^19
//! ```
//!
//! and a row's sum of exps is the sum of `s[max - x]`, an exact integer sum
//! whatever the order (the reference sums in `i64`, and so does the kernel
//! once the partial sums leave their lanes). The kernel looks the terms up
//! by `tbl` over byte planes: `s` needs 20 bits, so its low, middle and high
//! bytes are three tables of 256 bytes, summed plane by plane in u16 lanes
//! and u32 totals and recombined as `low + 256 mid + 65536 high` in `u64`.
//! From the sum, the row's reciprocal and exponent come from the same
//! `reciprocal` as the reference's; the output of an element is then
//! `output(e[d])`, again a function of `d` only, so the kernel builds the
//! row's output bytes for the `d` the row can reach and maps the row through
//! them with `tbl`. Every value is the reference's, computed by the
//! reference's code (per `d` here, per row in the kernel): the kernel is
//! exact by construction, not by an error bound.
//!
//! Most of a table is zero, and the kernel skips what is zero: a plane's
//! 64-entry chunks beyond its last nonzero byte, and output chunks that
//! cannot be nonzero. `output(e)` is `rounding_divide_by_pot(sqrdmulh(e, r),
//! n)` with `r < 2^31`, so `sqrdmulh(e, r) <= e`, and the output is 0 (the
//! zero point) wherever `e < 2^(n - 1)`: a chunk whose largest `e` is below
//! that bound is all zero for the row.

use super::lut::Bytes64;
use super::params::SoftmaxParams;

/// Number of byte planes of a sum term (`s[d] <= 2^19` needs 20 bits).
pub(crate) const PLANES: usize = 3;

/// Everything the exact 8-bit table kernel needs beyond [`SoftmaxParams`].
#[derive(Clone, Copy, Debug)]
pub(crate) struct SoftmaxExact {
    /// `e[d]`, Q0.31 raw: `exp(-d * beta * scale)` as the reference computes
    /// it, 0 where `-d < diff_min`; `d = max - x` in `0..=255`.
    pub(crate) exp: [i32; 256],
    /// Byte `j` of `s[d]` (the Q12.19 sum term) in `planes[j][d / 64].0[d % 64]`.
    pub(crate) planes: [[Bytes64; 4]; PLANES],
    /// Per plane, the number of 64-entry chunks up to its last nonzero byte
    /// (0 if none; beyond them the plane is 0).
    pub(crate) plane_chunks: [usize; PLANES],
    /// Largest `e[d]` of each 64-entry chunk.
    pub(crate) chunk_max: [i32; 4],
    /// Byte `j` of `e[d]` for `d < 64` in `exp_bytes[j].0[d]` (the short-row
    /// kernel gathers `e` itself rather than building output tables).
    pub(crate) exp_bytes: [Bytes64; 4],
    /// Every output with `d >= 64` is the zero point, whatever the row:
    /// `e[d] < 2^22` there (see `output_chunks`; the exponent is at least
    /// 23 for 8-bit output).
    pub(crate) outputs_fit: bool,
    /// `s[0]`, the sum term of the row maximum.
    pub(crate) term0: u32,
}

impl SoftmaxExact {
    /// The tables for `p` (an 8-bit type's params: Q12.19 sum terms).
    pub(crate) fn new(p: &SoftmaxParams) -> Self {
        debug_assert_eq!(p.accumulation_integer_bits, 12);
        let mut exp = [0i32; 256];
        let mut planes = [[Bytes64([0; 64]); 4]; PLANES];
        let mut plane_chunks = [0usize; PLANES];
        let mut chunk_max = [0i32; 4];
        for (d, e) in exp.iter_mut().enumerate() {
            let diff = -(d as i32);
            // The reference's condition and functions (softmax's scalar.rs).
            if diff >= p.diff_min {
                *e = p.exp_of_diff(diff).raw();
            }
            let term = p.sum_term(crate::fixedpoint::Q0_31::from_raw(*e));
            debug_assert!((0..1 << 20).contains(&term));
            for (j, plane) in planes.iter_mut().enumerate() {
                let byte = (term >> (8 * j)) as u8;
                plane[d / 64].0[d % 64] = byte;
                if byte != 0 {
                    plane_chunks[j] = d / 64 + 1;
                }
            }
            chunk_max[d / 64] = chunk_max[d / 64].max(*e);
        }
        let mut exp_bytes = [Bytes64([0; 64]); 4];
        for (d, &e) in exp[..64].iter().enumerate() {
            for (j, plane) in exp_bytes.iter_mut().enumerate() {
                plane.0[d] = (e >> (8 * j)) as u8;
            }
        }
        let term0 = p.sum_term(crate::fixedpoint::Q0_31::from_raw(exp[0])) as u32;
        SoftmaxExact {
            exp,
            planes,
            plane_chunks,
            chunk_max,
            exp_bytes,
            outputs_fit: chunk_max[1..].iter().all(|&e| e < 1 << 22),
            term0,
        }
    }

    /// The sum term of `d` from the planes (what the kernel adds up).
    #[cfg(test)]
    fn term(&self, d: usize) -> i64 {
        (0..PLANES)
            .map(|j| (self.planes[j][d / 64].0[d % 64] as i64) << (8 * j))
            .sum()
    }

    /// Number of leading 64-entry output chunks that can hold a nonzero
    /// output for a row of output `exponent` whose `d` are all below
    /// `64 range_chunks` (at least 1: the kernel always looks chunk 0 up).
    #[inline(always)]
    pub(crate) fn output_chunks(&self, exponent: u32, range_chunks: usize) -> usize {
        if exponent > 31 {
            // Every output is 0 (see SoftmaxParams::output).
            return 1;
        }
        // exponent >= 23 for 8-bit output (num_bits_over_unit >= 0), so
        // the bound fits i32.
        let bound = 1i32 << (exponent - 1);
        let mut chunks = 1;
        for k in 1..range_chunks.min(4) {
            if self.chunk_max[k] >= bound {
                chunks = k + 1;
            }
        }
        chunks
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::quant::QuantParams;

    /// Wherever every output past `d = 63` is the zero point
    /// (`outputs_fit`, which the four-row kernels need), the sum-term planes
    /// end within `[3, 2, 1]` chunks (low, middle, high byte): `e[64] <
    /// 2^22` makes `e[128]` and `e[192]` too small for a middle byte or a
    /// low one, so the kernels' shapes up to `[3, 2, 1]` cover every such
    /// table and their `[4, 4, 4]` fallback is only a safety net. Swept over
    /// `beta * scale` from the smallest that fits to well past the largest
    /// shape change, for both 8-bit types.
    #[test]
    fn fitting_tables_need_at_most_three_two_one_chunks() {
        let mut fitting = 0;
        for step in 0..=2000 {
            let scale = 0.05f32 * 1.005f32.powi(step);
            for signed in [true, false] {
                let p = if signed {
                    SoftmaxParams::new::<i8>(
                        QuantParams::new(scale, 0),
                        1.0,
                        QuantParams::new(1.0 / 256.0, -128),
                    )
                } else {
                    SoftmaxParams::new::<u8>(
                        QuantParams::new(scale, 0),
                        1.0,
                        QuantParams::new(1.0 / 256.0, 0),
                    )
                }
                .unwrap();
                let t = SoftmaxExact::new(&p);
                if t.outputs_fit {
                    fitting += 1;
                    let [l, m, h] = t.plane_chunks;
                    assert!(l <= 3 && m <= 2 && h <= 1, "scale {scale}: {l} {m} {h}");
                }
            }
        }
        // Most of the sweep (beta * scale above about 0.1) fits.
        assert!(fitting > 3000, "{fitting}");
    }

    /// The planes hold the reference's sum terms, and every output of a
    /// skipped chunk is the zero point, for every `d`, on a grid of scales
    /// and sums.
    #[test]
    fn planes_and_chunk_bounds_match_the_reference() {
        for scale in [1e-6f32, 0.001, 0.03, 0.1, 0.5, 3.0, 1e4] {
            let p = SoftmaxParams::new::<i8>(
                QuantParams::new(scale, 0),
                1.0,
                QuantParams::new(1.0 / 256.0, -128),
            )
            .unwrap();
            let t = SoftmaxExact::new(&p);
            for d in 0..256 {
                let diff = -(d as i32);
                let e = if diff >= p.diff_min {
                    p.exp_of_diff(diff).raw()
                } else {
                    0
                };
                assert_eq!(t.exp[d], e);
                assert_eq!(t.term(d), p.sum_term(crate::fixedpoint::Q0_31::from_raw(e)));
                for j in 0..PLANES {
                    if d / 64 >= t.plane_chunks[j] {
                        assert_eq!(t.planes[j][d / 64].0[d % 64], 0);
                    }
                }
            }
            for d in 0..64 {
                let e = (0..4).fold(0u32, |e, j| e | (t.exp_bytes[j].0[d] as u32) << (8 * j));
                assert_eq!(e as i32, t.exp[d]);
            }
            assert_eq!(t.term0 as i64, t.term(0));
            for sum in [1i64 << 19, 3 << 19, 1 << 28, 1 << 35, (1 << 34) - 7] {
                let (r, n) = p.reciprocal::<i32>(sum);
                let chunks = if t.outputs_fit {
                    1
                } else {
                    t.output_chunks(n, 4)
                };
                for d in chunks * 64..256 {
                    let q = p.output(crate::fixedpoint::Q0_31::from_raw(t.exp[d]), r, n);
                    assert_eq!(q, p.output_zero_point, "scale {scale} sum {sum} d {d}");
                }
            }
        }
    }
}
