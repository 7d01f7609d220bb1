//! SVDF against an oracle written from the definition: each filter's
//! history as a queue of its last `memory` state values (oldest first),
//! sums in `i64`, over several steps with the state carried; and each
//! quantized step within one output step of the real-valued formula.

extern crate std;
use std::collections::VecDeque;
use std::vec::Vec;

use super::*;

/// xorshift64*: deterministic test data.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn range(&mut self, lo: i32, hi: i32) -> i32 {
        lo + (self.next() >> 33) as i32 % (hi - lo + 1)
    }
}

struct Case<S> {
    shape: SvdfShape,
    q: SvdfQuantization,
    feature: Vec<i8>,
    time: Vec<S>,
    bias: Option<Vec<i32>>,
}

fn case<S: SvdfState>(rng: &mut Rng, shape: SvdfShape, with_bias: bool) -> Case<S> {
    let n_feature = shape.filters * shape.input_size;
    let n_time = shape.filters * shape.memory;
    let feature = (0..n_feature).map(|_| rng.range(-127, 127) as i8).collect();
    let time = (0..n_time)
        .map(|_| S::from_i32(rng.range(S::MIN + 1, S::MAX)))
        .collect();
    let state_scale = if S::MAX > 127 { 0.002 } else { 0.25 };
    let weights_time_scale = if S::MAX > 127 { 0.003 } else { 0.01 };
    let bias = with_bias.then(|| {
        (0..shape.units())
            .map(|_| rng.range(-20_000, 20_000))
            .collect()
    });
    Case {
        shape,
        q: SvdfQuantization {
            input: QuantParams::new(0.05, rng.range(-128, 127)),
            weights_feature_scale: 0.008,
            weights_time_scale,
            state: QuantParams::new(state_scale, 0),
            output: QuantParams::new(0.1, rng.range(-128, 127)),
        },
        feature,
        time,
        bias,
    }
}

/// The definition, step by step: push the new state value into each
/// filter's queue (dropping the oldest), then sum the time products.
struct Oracle {
    history: Vec<VecDeque<i64>>,
}

impl Oracle {
    fn new(shape: SvdfShape) -> Oracle {
        let mut queue = VecDeque::new();
        queue.resize(shape.memory, 0);
        Oracle {
            history: std::vec![queue; shape.batch * shape.filters],
        }
    }

    fn step<S: SvdfState>(&mut self, c: &Case<S>, rounding: Rounding, x: &[i8]) -> Vec<i8> {
        let s = c.shape;
        let real1 = (c.q.input.scale * c.q.weights_feature_scale / c.q.state.scale) as f64;
        let real2 = (c.q.state.scale * c.q.weights_time_scale / c.q.output.scale) as f64;
        let m1 = rounding.quantize_multiplier(real1).unwrap();
        let m2 = rounding.quantize_multiplier(real2).unwrap();
        let mut out = Vec::new();
        for b in 0..s.batch {
            for f in 0..s.filters {
                let dot: i64 = (0..s.input_size)
                    .map(|i| {
                        c.feature[f * s.input_size + i] as i64
                            * (x[b * s.input_size + i] as i64 - c.q.input.zero_point as i64)
                    })
                    .sum();
                let v = rounding.multiply(dot as i32, m1).clamp(S::MIN, S::MAX);
                let queue = &mut self.history[b * s.filters + f];
                queue.pop_front();
                queue.push_back(v as i64);
            }
            for u in 0..s.units() {
                let mut acc: i64 = c.bias.as_ref().map_or(0, |bias| bias[u] as i64);
                for f in u * s.rank..(u + 1) * s.rank {
                    let queue = &self.history[b * s.filters + f];
                    for (m, &h) in queue.iter().enumerate() {
                        acc += c.time[f * s.memory + m].to_i32() as i64 * h;
                    }
                }
                let y = rounding.multiply(acc as i32, m2) as i64 + c.q.output.zero_point as i64;
                out.push(y.clamp(-128, 127) as i8);
            }
        }
        out
    }
}

fn check_steps<S: SvdfState>(seed: u64, shape: SvdfShape, with_bias: bool) {
    let mut rng = Rng(seed);
    let c = case::<S>(&mut rng, shape, with_bias);
    for rounding in [Rounding::Single, Rounding::Double] {
        let op = Svdf::<S>::new(shape, c.q, rounding).unwrap();
        for backend in Backend::available() {
            let mut oracle = Oracle::new(shape);
            let mut state = std::vec![S::default(); shape.batch * shape.filters * shape.memory];
            for step in 0..shape.memory + 3 {
                let x: Vec<i8> = (0..shape.batch * shape.input_size)
                    .map(|_| rng.range(-128, 127) as i8)
                    .collect();
                let mut y = std::vec![0i8; shape.batch * shape.units()];
                let weights = SvdfWeights {
                    feature: &c.feature,
                    time: &c.time,
                    bias: c.bias.as_deref(),
                };
                op.run_with(backend, &x, weights, &mut state, &mut y)
                    .unwrap();
                let expected = oracle.step(&c, rounding, &x);
                assert_eq!(y, expected, "{shape:?} {rounding:?} {backend} step {step}");
            }
        }
    }
}

#[test]
fn steps_match_the_queue_oracle_int16_state() {
    let mut seed = 1;
    for (batch, input_size, units, rank, memory) in [
        (1, 96, 64, 1, 8),
        (2, 7, 5, 2, 3),
        (3, 16, 4, 3, 1),
        (1, 1, 1, 1, 10),
        (2, 33, 3, 4, 5),
    ] {
        let shape = SvdfShape {
            batch,
            input_size,
            filters: units * rank,
            memory,
            rank,
        };
        for with_bias in [true, false] {
            seed += 1;
            check_steps::<i16>(seed, shape, with_bias);
        }
    }
}

#[test]
fn steps_match_the_queue_oracle_int8_state() {
    let mut seed = 100;
    for (batch, input_size, units, rank, memory) in [(1, 16, 32, 1, 32), (2, 5, 3, 2, 4)] {
        let shape = SvdfShape {
            batch,
            input_size,
            filters: units * rank,
            memory,
            rank,
        };
        for with_bias in [true, false] {
            seed += 1;
            check_steps::<i8>(seed, shape, with_bias);
        }
    }
}

#[test]
fn a_step_is_within_one_output_step_of_the_real_formula() {
    // One step from a zero state: the newest column only. Where neither
    // clamp acts, the two requantizations lose at most half a state step
    // (times the time weights) and half an output step.
    let shape = SvdfShape {
        batch: 1,
        input_size: 4,
        filters: 2,
        memory: 3,
        rank: 1,
    };
    let mut rng = Rng(7);
    let c = case::<i16>(&mut rng, shape, false);
    let op = Svdf::<i16>::new(shape, c.q, Rounding::Single).unwrap();
    let x: Vec<i8> = (0..4).map(|_| rng.range(-20, 20) as i8).collect();
    let mut state = std::vec![0i16; 6];
    let mut y = [0i8; 2];
    let weights = SvdfWeights {
        feature: &c.feature,
        time: &c.time,
        bias: None,
    };
    op.run(&x, weights, &mut state, &mut y).unwrap();
    for (f, &y) in y.iter().enumerate() {
        let real_in: f64 = (0..4)
            .map(|i| {
                c.feature[f * 4 + i] as f64
                    * c.q.weights_feature_scale as f64
                    * (x[i] as f64 - c.q.input.zero_point as f64)
                    * c.q.input.scale as f64
            })
            .sum();
        let real_out = real_in * c.time[f * 3 + 2] as f64 * c.q.weights_time_scale as f64;
        let expected = real_out / c.q.output.scale as f64 + c.q.output.zero_point as f64;
        if (-128.0..=127.0).contains(&expected) {
            let slack = 0.5
                + 0.5
                    * (c.time[f * 3 + 2] as f64).abs()
                    * c.q.weights_time_scale as f64
                    * c.q.state.scale as f64
                    / c.q.output.scale as f64;
            assert!(
                (y as f64 - expected).abs() <= slack + 1e-9,
                "filter {f}: {y} vs {expected} (slack {slack})"
            );
        }
    }
}

#[test]
fn bad_shapes_and_buffers_are_errors() {
    let q = SvdfQuantization {
        input: QuantParams::new(0.05, 0),
        weights_feature_scale: 0.01,
        weights_time_scale: 0.01,
        state: QuantParams::new(0.01, 0),
        output: QuantParams::new(0.1, 0),
    };
    let shape = SvdfShape {
        batch: 1,
        input_size: 2,
        filters: 3,
        memory: 2,
        rank: 2,
    };
    assert!(matches!(
        Svdf::<i16>::new(shape, q, Rounding::Single),
        Err(Error::OutOfDomain { .. })
    ));
    let zero = SvdfShape { memory: 0, ..shape };
    assert!(matches!(
        Svdf::<i16>::new(zero, q, Rounding::Single),
        Err(Error::ZeroDimension { .. })
    ));
    let bad_scale = SvdfQuantization {
        state: QuantParams::new(0.0, 0),
        ..q
    };
    let ok = SvdfShape { rank: 1, ..shape };
    assert!(Svdf::<i16>::new(ok, bad_scale, Rounding::Single).is_err());
    let op = Svdf::<i16>::new(ok, q, Rounding::Single).unwrap();
    let mut state = [0i16; 5]; // 6 needed
    let mut y = [0i8; 3];
    let weights = SvdfWeights {
        feature: &[0; 6],
        time: &[0; 6],
        bias: None,
    };
    assert!(matches!(
        op.run(&[0, 0], weights, &mut state, &mut y),
        Err(Error::Length { what: "state", .. })
    ));
}

/// A random real scale `10^e`, `e` uniform in `[lo, hi]` tenths.
#[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
fn scale(rng: &mut Rng, lo: i32, hi: i32) -> f32 {
    10f32.powf(rng.range(lo, hi) as f32 / 10.0)
}

/// NEON (both the `sdot` and the widening path) against the scalar loops
/// over several steps from a random full-range state: odd sizes (tails of
/// every length, filters and units not multiples of 4), weights and state
/// at their extremes, state zero points, and scales from tiny to huge (so
/// that sums wrap and both requantizations saturate).
#[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
fn check_neon_against_scalar<S: SvdfState>(seed: u64) {
    let mut rng = Rng(seed);
    let rank = rng.range(1, 4) as usize;
    let shape = SvdfShape {
        batch: rng.range(1, 3) as usize,
        input_size: rng.range(1, 50) as usize,
        filters: rank * rng.range(1, 11) as usize,
        memory: rng.range(1, 27) as usize,
        rank,
    };
    let extreme = rng.range(0, 3) == 0;
    let draw = |rng: &mut Rng, lo: i32, hi: i32| {
        if extreme && rng.range(0, 1) == 0 {
            if rng.range(0, 1) == 0 {
                lo
            } else {
                hi
            }
        } else {
            rng.range(lo, hi)
        }
    };
    let feature: Vec<i8> = (0..shape.filters * shape.input_size)
        .map(|_| draw(&mut rng, -128, 127) as i8)
        .collect();
    let time: Vec<S> = (0..shape.filters * shape.memory)
        .map(|_| S::from_i32(draw(&mut rng, S::MIN, S::MAX)))
        .collect();
    let bias: Option<Vec<i32>> = (rng.range(0, 1) == 0).then(|| {
        (0..shape.units())
            .map(|_| (rng.next() >> 32) as i32 >> rng.range(0, 31))
            .collect()
    });
    let q = SvdfQuantization {
        input: QuantParams::new(scale(&mut rng, -40, 10), rng.range(-128, 127)),
        weights_feature_scale: scale(&mut rng, -40, 0),
        weights_time_scale: scale(&mut rng, -50, 0),
        state: QuantParams::new(scale(&mut rng, -50, 0), rng.range(S::MIN, S::MAX)),
        output: QuantParams::new(scale(&mut rng, -40, 10), rng.range(-128, 127)),
    };
    let n_state = shape.batch * shape.filters * shape.memory;
    let state0: Vec<S> = (0..n_state)
        .map(|_| S::from_i32(draw(&mut rng, S::MIN, S::MAX)))
        .collect();
    let inputs: Vec<Vec<i8>> = (0..4)
        .map(|_| {
            (0..shape.batch * shape.input_size)
                .map(|_| draw(&mut rng, -128, 127) as i8)
                .collect()
        })
        .collect();
    let weights = SvdfWeights {
        feature: &feature,
        time: &time,
        bias: bias.as_deref(),
    };
    for rounding in [Rounding::Single, Rounding::Double] {
        let op = Svdf::<S>::new(shape, q, rounding).unwrap();
        let mut scalar_state = state0.clone();
        let mut scalar_out = std::vec![0i8; shape.batch * shape.units()];
        let mut runs = std::vec![];
        for x in &inputs {
            op.run_with(
                Backend::Scalar,
                x,
                weights,
                &mut scalar_state,
                &mut scalar_out,
            )
            .unwrap();
            runs.push((scalar_state.clone(), scalar_out.clone()));
        }
        for dotprod in [true, false] {
            let neon = op.clone().with_dotprod(dotprod);
            let mut state = state0.clone();
            let mut out = std::vec![0i8; shape.batch * shape.units()];
            for (step, (x, expected)) in inputs.iter().zip(&runs).enumerate() {
                neon.run_with(Backend::Neon, x, weights, &mut state, &mut out)
                    .unwrap();
                let what = std::format!(
                    "seed {seed} {shape:?} {q:?} {rounding:?} dotprod {dotprod} step {step}"
                );
                assert_eq!(state, expected.0, "state: {what}");
                assert_eq!(out, expected.1, "output: {what}");
            }
        }
    }
}

#[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
#[test]
fn neon_equals_scalar_on_random_shapes_and_extreme_parameters() {
    for seed in 1..=150 {
        check_neon_against_scalar::<i16>(seed);
        check_neon_against_scalar::<i8>(1000 + seed);
    }
}
