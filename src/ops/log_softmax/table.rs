//! The tables of the NEON [`Method::FixedPoint`](crate::Method::FixedPoint)
//! kernel, prepared once by `LogSoftmax::new` from [`LogSoftmaxParams`].
//!
//! For 8-bit input every per-element quantity of log-softmax is a function of
//! `d = max - x` (`0..=255`, input steps):
//!
//! * the sum term `exp_term(-d)` (Q12.19 raw, `0..=2^19`), kept as three byte
//!   planes (bits 0..8, 8..16, 16..24), each in four 64-entry chunks, so that
//!   the sum is three table lookups per element and byte sums that are exact
//!   in any order (integers);
//! * once the row's log-sum `L` (Q5.26) is known, the output
//!   `rounding_divide_by_pot(s[d] - L, 22) + zero_point` with
//!   `s[d] = scaled_diff(-d)` (Q5.26). For `s[d] - L` negative and not
//!   wrapped, `rounding_divide_by_pot` (round half away from zero) is
//!   `floor((s[d] - A) / 2^22)` with `A = L - 2^21 + 1`, and adding the
//!   zero point inside the floor gives `floor((s[d] - B) / 2^22)` with
//!   `B = A - zero_point 2^22`. `s[d] - B` then lies in
//!   `[-2^31 + 2^21 - 1, 2^21 + 2^30)`, an exact `i32`, so NEON takes it as
//!   a subtraction keeping the high halves (`subhn`: `floor(. / 2^16)`) and
//!   a saturating narrowing shift by 6 (`sqshrn`/`sqshrun`: `floor(. /
//!   2^6)`, clamped to the type): eight instructions per 16 entries from
//!   `s` alone. `B` is prepared per row.
//!
//! Rows where the split does not apply (`s[0] - L >= 0`, i.e. a log-sum at or
//! below 0, or `s[d] - L` below `-2^31` for a reachable, kept `d`, where the
//! reference's `i32` subtraction wraps) build their output table entry by
//! entry with the reference lane math instead ([`LogSoftmaxTables::plan`]
//! says which). Everything here is checked against the scalar reference for
//! every `d` by `tests/log_softmax_table.rs`.

use super::params::{LogSoftmaxParams, LogSoftmaxRow};

/// Entries of one table chunk (one four-register `tbl`).
pub(crate) const CHUNK: usize = 64;
/// Fraction bits dropped by the output's `rounding_divide_by_pot`
/// (`31 - 5 - 4`: Q5.26 to the output's 16/256 steps).
const OUTPUT_SHIFT: u32 = 22;

/// A 64-byte, register-aligned byte table chunk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(C, align(64))]
pub(crate) struct Chunk(pub(crate) [u8; CHUNK]);

/// What `new()` prepares for the NEON `Method::FixedPoint` kernel.
#[derive(Clone, Copy, Debug)]
#[cfg_attr(
    not(all(target_arch = "aarch64", target_feature = "neon")),
    allow(dead_code)
)]
pub(crate) struct LogSoftmaxTables {
    /// Byte `k` of the sum term by `d`: `planes[k][d / 64].0[d % 64] =
    /// (exp_term(-d) >> 8 k) as u8` (terms are below 2^24).
    pub(crate) planes: [[Chunk; 4]; 3],
    /// Per plane, the number of chunks up to its last nonzero byte (0 for a
    /// plane that is zero everywhere): later chunks need no lookup.
    pub(crate) plane_chunks: [usize; 3],
    /// `s[d]`, Q5.26 (non-increasing in `d`, checked in `new`).
    pub(crate) scaled: [i32; 256],
    /// `s` is non-increasing on `0..monotonic`, so the checks of `plan` at
    /// the ends of a row's range cover it there. (The rescaling's left shift
    /// wraps, as TFLite's does, once `d * scale` passes 32; such `d` lie
    /// beyond `diff_min` and are cut off. Rows reaching past `monotonic`
    /// take the entry-by-entry path.)
    pub(crate) monotonic: usize,
    /// `s[16 g]` for `g` in `0..16`: the first entry of each 16-entry group
    /// of the output table (the 64-wide kernel counts the groups whose
    /// outputs are not all the type's minimum with them).
    pub(crate) heads: [i32; 16],
}

/// How a row's output table is built (see [`LogSoftmaxTables::plan`]).
#[derive(Clone, Copy, Debug)]
#[cfg_attr(
    not(all(target_arch = "aarch64", target_feature = "neon")),
    allow(dead_code)
)]
pub(crate) struct RowPlan {
    /// Entries `d < kept` follow the formula; from `kept` on the output is
    /// the type's minimum (the reference's cut-off), `0..=256`.
    pub(crate) kept: usize,
    /// `Some(B)` when the floor formula holds for every kept, reachable `d`:
    /// the output is `floor((s[d] - B) / 2^22)`, `B = L - 2^21 + 1 -
    /// zero_point 2^22` (an `i32` there: `L >= 1`).
    pub(crate) split: Option<i32>,
}

#[cfg_attr(
    not(all(target_arch = "aarch64", target_feature = "neon")),
    allow(dead_code)
)]
impl LogSoftmaxTables {
    /// The tables for prepared params `p`.
    pub(crate) fn new(p: &LogSoftmaxParams) -> Self {
        let mut planes = [[Chunk([0; CHUNK]); 4]; 3];
        let mut scaled = [0i32; 256];
        for d in 0..256usize {
            let term = p.exp_term::<i32>(-(d as i32));
            // Q12.19 terms lie in 0..=2^19 (exp <= 1), so three bytes hold them.
            debug_assert!((0..1 << 24).contains(&term));
            for (k, plane) in planes.iter_mut().enumerate() {
                plane[d / CHUNK].0[d % CHUNK] = (term >> (8 * k)) as u8;
            }
            let s = p.scaled_diff::<i32>(-(d as i32));
            scaled[d] = s;
        }
        let plane_chunks = planes.map(|plane| {
            plane
                .iter()
                .rposition(|c| c.0.iter().any(|&b| b != 0))
                .map_or(0, |k| k + 1)
        });
        let monotonic = 1 + scaled.windows(2).take_while(|w| w[0] >= w[1]).count();
        LogSoftmaxTables {
            planes,
            plane_chunks,
            scaled,
            monotonic,
            heads: core::array::from_fn(|g| scaled[16 * g]),
        }
    }

    /// The sum term for `d`, reassembled from the planes.
    #[cfg(test)]
    pub(crate) fn term(&self, d: usize) -> i32 {
        (0..3)
            .map(|k| (self.planes[k][d / CHUNK].0[d % CHUNK] as i32) << (8 * k))
            .sum()
    }

    /// How to build the output table of a row with constants `row` whose
    /// differences reach `0..=reach`.
    pub(crate) fn plan(&self, p: &LogSoftmaxParams, row: &LogSoftmaxRow, reach: usize) -> RowPlan {
        // Kept: -d > adjusted_diff_min, i.e. d < -adjusted_diff_min.
        let kept = (-(row.adjusted_diff_min as i64)).clamp(0, 256) as usize;
        let last = reach.min(255);
        if kept == 0 {
            return RowPlan { kept, split: None };
        }
        let last = last.min(kept - 1);
        let log_sum = row.log_sum as i64;
        // s[d] - L for the largest and the smallest s in range: negative
        // (rounding below zero) and not below i32::MIN (no wrap).
        let top = self.scaled[0] as i64 - log_sum;
        let bottom = self.scaled[last] as i64 - log_sum;
        let split = if last < self.monotonic && top < 0 && bottom >= i32::MIN as i64 {
            let b = log_sum - (1 << (OUTPUT_SHIFT - 1)) + 1
                - ((p.output_zero_point as i64) << OUTPUT_SHIFT);
            i32::try_from(b).ok()
        } else {
            None
        };
        RowPlan { kept, split }
    }

    /// The output for `d` of a row by the floor formula (before the cut-off
    /// and the type's saturation), as the NEON table builder computes it:
    /// the `i32` difference's high half, then an arithmetic shift by 6.
    #[cfg(test)]
    pub(crate) fn split_output(&self, d: usize, b: i32) -> i32 {
        ((self.scaled[d].wrapping_sub(b) >> 16) as i16 >> 6) as i32
    }
}

impl LogSoftmaxParams {
    /// The reference output for `d` (before the type's saturation): what
    /// the scalar kernel computes for an element `d` below its row's maximum.
    #[inline]
    #[cfg_attr(
        not(all(target_arch = "aarch64", target_feature = "neon")),
        allow(dead_code)
    )]
    pub(crate) fn output_for(&self, d: usize, row: &LogSoftmaxRow) -> i32 {
        self.output::<i32>(-(d as i32), row)
    }
}

#[cfg(test)]
mod tests {
    use super::{LogSoftmaxTables, CHUNK};
    use crate::elem::QuantElem;
    use crate::ops::log_softmax::params::LogSoftmaxParams;
    use crate::QuantParams;

    /// The planes reassemble every term; the split formula gives the
    /// reference output for every `d` wherever `plan` chooses it, for sums
    /// from one maximum alone to 2^16 maxima, on scales across the range.
    fn check<T: QuantElem>() {
        let zp = if T::MIN == -128 { 127 } else { 255 };
        let out = QuantParams::new(16.0 / 256.0, zp);
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut split_rows = 0;
        for scale in [
            1e-9f32, 1e-6, 1e-3, 0.01, 0.05, 0.1, 0.3, 1.0, 4.0, 30.0, 1e3, 1e6,
        ] {
            let p = LogSoftmaxParams::new::<T>(QuantParams::new(scale, 0), out).unwrap();
            let t = LogSoftmaxTables::new(&p);
            for d in 0..256 {
                assert_eq!(
                    t.term(d),
                    p.exp_term::<i32>(-(d as i32)),
                    "scale {scale} d {d}"
                );
            }
            for k in 0..3 {
                let last = (0..256).rev().find(|&d| (t.term(d) >> (8 * k)) & 0xff != 0);
                assert_eq!(t.plane_chunks[k], last.map_or(0, |d| d / CHUNK + 1));
            }
            let sums = (0..2000).map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                (1i64 << 19) + (state >> (state % 30 + 29)) as i64
            });
            for sum in sums.chain([1 << 19, (1 << 19) + 1, 1 << 35, (1 << 31) - 1, 1 << 31]) {
                let row = p.row_constants(sum);
                for reach in [0, 15, 16, 63, 64, 200, 255] {
                    let plan = t.plan(&p, &row, reach);
                    for d in 0..=reach {
                        let want = T::saturate(p.output_for(d, &row)).to_i32();
                        let got = match plan.split {
                            Some(b) if d < plan.kept => T::saturate(t.split_output(d, b)).to_i32(),
                            Some(_) => T::MIN,
                            None => continue,
                        };
                        assert_eq!(got, want, "scale {scale} sum {sum} reach {reach} d {d}");
                    }
                    split_rows += plan.split.is_some() as usize;
                }
            }
        }
        assert!(split_rows > 100_000, "{split_rows}");
    }

    #[test]
    #[cfg_attr(
        miri,
        ignore = "a sweep of safe table code: nothing for Miri, hours under it"
    )]
    fn split_output_equals_the_reference_int8() {
        check::<i8>();
    }

    #[test]
    #[cfg_attr(
        miri,
        ignore = "a sweep of safe table code: nothing for Miri, hours under it"
    )]
    fn split_output_equals_the_reference_uint8() {
        check::<u8>();
    }
}
