//! Unit tests of `model.rs`: the row bound against the linear search it
//! stands for, and the Lut requantization against the reference.

use super::model::{checked_guess, Model, RowScale};
use crate::elem::QuantElem;
use crate::ops::Method;
use crate::quant::QuantParams;

/// The linear search the bound stands for: the largest `d` whose own
/// output passes, clamped to `d_limit`.
fn linear<T: QuantElem>(m: &Model, scale: RowScale, c: i32, d_limit: usize) -> Option<usize> {
    (0..256usize)
        .rev()
        .find(|&d| m.out::<T>(scale, d) >= c)
        .map(|d| d.min(d_limit))
}

/// The row scale `rows` makes for a sum, and the sum bounds.
fn scale_of(m: &Model, sum: u64) -> (RowScale, &[u64; 256]) {
    match m {
        Model::Fixed { p, sum_bound, .. } => {
            let (r, n) = p.reciprocal::<i32>(sum as i64);
            (RowScale::Fixed(r, n, sum), sum_bound)
        }
        Model::Lut { lut, sum_bound, .. } => {
            let (mm, shift) = lut.row_multiplier(sum);
            (RowScale::Lut(mm, shift, sum), sum_bound)
        }
        Model::F32 { .. } => unreachable!("f32 rows have no integer sum"),
    }
}

/// Checks `d_max` at `sum` against the linear search for several
/// `d_limit`s; returns whether the sum bounds' guess settled it.
fn check_sum<T: QuantElem>(m: &Model, c: i32, sum: u64) -> bool {
    let (scale, bound) = scale_of(m, sum);
    for d_limit in [0, 1, 37, 127, 200, 255] {
        assert_eq!(
            m.d_max::<T>(scale, c, d_limit),
            linear::<T>(m, scale, c, d_limit),
            "sum {sum} c {c} d_limit {d_limit}"
        );
    }
    let pass = |d: usize| {
        (0..256)
            .filter(|&e| e >= d)
            .any(|e| m.out::<T>(scale, e) >= c)
    };
    checked_guess(bound, sum, pass).is_some()
}

/// Input scales (beta 1) spanning the full and split Lut tables, and
/// thresholds from 0 (all pass) to 1 (none): the bound equals the
/// linear search at every sum bound and its neighbours, at random sums
/// up to 2^63, and at each of the first `sums_exhaustive` sums; the sum
/// bounds' guess settles every row at the bounds and the random sums.
fn sweep<T: QuantElem>(method: Method, out: QuantParams, sums_exhaustive: u64) {
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut random = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for in_scale in [0.004f32, 0.03, 0.1, 0.5, 2.0] {
        for threshold in [0.0f32, 0.001, 0.02, 0.05, 0.3, 0.5, 0.9, 0.999, 1.0] {
            let c = super::code_bound::<T>(out, threshold);
            let q_in = QuantParams::new(in_scale, 0);
            let m = Model::new::<T>("test", q_in, 1.0, out, method, c).unwrap();
            let (lo, bound) = match &m {
                Model::Fixed {
                    term, sum_bound, ..
                } => (term[0] as u64, *sum_bound),
                Model::Lut { sum_bound, .. } => (65535, *sum_bound),
                Model::F32 { .. } => unreachable!(),
            };
            let mut settled = true;
            for b in bound {
                for s in [b.wrapping_sub(1), b, b.wrapping_add(1)] {
                    if s >= lo && s <= i64::MAX as u64 {
                        settled &= check_sum::<T>(&m, c, s);
                    }
                }
            }
            for _ in 0..2000 {
                let r = random();
                let s = lo + (r >> (r % 44 + 20));
                settled &= check_sum::<T>(&m, c, s);
            }
            for s in lo..lo + sums_exhaustive {
                let (scale, _) = scale_of(&m, s);
                assert_eq!(
                    m.d_max::<T>(scale, c, 255),
                    linear::<T>(&m, scale, c, 255),
                    "sum {s}"
                );
            }
            assert!(settled, "in_scale {in_scale} threshold {threshold}");
        }
    }
}

/// The Lut requantization for negative shifts equals
/// `SoftmaxLut::output` for every `t`, at sums giving shifts from -7 to
/// -31 (beyond, the multiplier is flushed to 0 with shift 0, and the
/// kernel takes the general requantization), both zero points.
#[test]
#[cfg(feature = "std")]
#[cfg_attr(miri, ignore = "every t at hundreds of sums")]
fn lut_value_equals_the_reference_output() {
    use crate::ops::softmax_rows::SoftmaxLut;
    let mut state = 0x1234_5678_9abc_def1u64;
    for zp in [-128, 0] {
        let out = QuantParams::new(1.0 / 256.0, zp);
        let lut = SoftmaxLut::new::<i8>(0.1, 1.0, out);
        let sums = (0..58)
            .map(|k| 65535u64 << k)
            .chain((0..58).map(|k| (65535u64 << k) + 1))
            .chain((0..200).map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                65535 + (state >> (state % 44 + 20))
            }));
        let mut shifts = std::collections::BTreeSet::new();
        let mut flushed = false;
        for sum in sums {
            let (m, shift) = lut.row_multiplier(sum);
            if shift >= 0 {
                // A flushed multiplier (shift below -31): the general
                // requantization takes these rows.
                assert_eq!(m, 0, "sum {sum}");
                flushed = true;
                continue;
            }
            shifts.insert(shift);
            let e = shift.unsigned_abs().min(62);
            for t in 0..=u16::MAX {
                assert_eq!(
                    super::model::lut_value(t, m, e, zp),
                    lut.output(t, m, shift),
                    "t {t} sum {sum}"
                );
            }
        }
        assert!(shifts.contains(&-7) && shifts.contains(&-31) && flushed);
    }
}

#[test]
#[cfg(feature = "std")]
#[cfg_attr(miri, ignore = "thousands of rows of linear searches")]
fn lut_row_bound_equals_the_linear_search() {
    sweep::<i8>(Method::Lut, QuantParams::new(1.0 / 256.0, -128), 1 << 12);
    sweep::<u8>(Method::Lut, QuantParams::new(1.0 / 256.0, 0), 1 << 12);
}

#[test]
#[cfg_attr(miri, ignore = "thousands of rows of linear searches")]
fn fixed_row_bound_equals_the_linear_search() {
    sweep::<i8>(
        Method::FixedPoint,
        QuantParams::new(1.0 / 256.0, -128),
        1 << 12,
    );
    sweep::<u8>(
        Method::FixedPoint,
        QuantParams::new(1.0 / 256.0, 0),
        1 << 12,
    );
}
