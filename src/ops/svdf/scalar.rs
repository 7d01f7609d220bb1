//! The SVDF step in plain loops: the oracle, and (the op being small) the
//! kernel of every backend. `run` has checked every length.

use super::params::SvdfParams;
use crate::elem::QuantElem;

/// One step: shift the state, write its newest column, then the output.
pub(super) fn svdf<S: QuantElem>(
    p: &SvdfParams,
    input: &[i8],
    feature: &[i8],
    time: &[S],
    bias: Option<&[i32]>,
    state: &mut [S],
    output: &mut [i8],
) {
    let s = p.shape;
    let (memory, rank, units) = (s.memory, s.rank, s.units());
    // Every filter's history moves one step older. TFLite moves the whole
    // block by one element: the element that crosses into the previous
    // filter's newest slot is overwritten below, so per-filter shifts give
    // the same state.
    state.copy_within(1.., 0);
    let per_batch = s.filters * memory;
    for ((x, state), y) in input
        .chunks_exact(s.input_size)
        .zip(state.chunks_exact_mut(per_batch))
        .zip(output.chunks_exact_mut(units))
    {
        // The newest column: the feature dot product in state units.
        for (w, history) in feature
            .chunks_exact(s.input_size)
            .zip(state.chunks_exact_mut(memory))
        {
            let dot = w.iter().zip(x).fold(0i32, |acc, (&w, &x)| {
                acc.wrapping_add((w as i32).wrapping_mul(x as i32 - p.input_zero_point))
            });
            let scaled = p
                .rounding
                .multiply(dot, p.feature_to_state)
                .clamp(S::MIN, S::MAX);
            // TFLite Micro adds the zero point after the clamp and narrows
            // with a plain cast (LiteRT's zero point is always 0).
            history[memory - 1] = S::from_i32(wrap_to::<S>(scaled + p.state_zero_point));
        }
        // The time dot products, summed by rank into units, then the
        // output stage.
        for (u, y) in y.iter_mut().enumerate() {
            let mut acc = bias.map_or(0, |b| b[u]);
            for f in u * rank..(u + 1) * rank {
                let weights = &time[f * memory..(f + 1) * memory];
                let history = &state[f * memory..(f + 1) * memory];
                for (&w, &h) in weights.iter().zip(history) {
                    acc = acc.wrapping_add(
                        w.to_i32()
                            .wrapping_mul(h.to_i32().wrapping_sub(p.state_zero_point)),
                    );
                }
            }
            let scaled = p.rounding.multiply(acc, p.time_to_output);
            *y = scaled
                .saturating_add(p.output_zero_point)
                .clamp(i8::MIN as i32, i8::MAX as i32) as i8;
        }
    }
}

/// `x` narrowed to `S` the way a C cast does (two's complement wrap).
fn wrap_to<S: QuantElem>(x: i32) -> i32 {
    let span = S::MAX as i64 - S::MIN as i64 + 1;
    ((x as i64 - S::MIN as i64).rem_euclid(span) + S::MIN as i64) as i32
}
