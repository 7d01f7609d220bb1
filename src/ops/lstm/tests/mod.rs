//! The integer LSTM against two oracles written here: a naive transcription
//! of TFLite's integer step (plain loops, i64 sums, every rule spelled out
//! again), equal bit for bit on every option combination; and an `f64` LSTM
//! on the dequantized values, which the int8 output must follow within a
//! few steps (this catches a wrong scale or formula that both integer
//! versions would share). NEON equals scalar on aarch64.

// The naive oracle indexes as the C++ does, on purpose.
#![allow(clippy::needless_range_loop)]

extern crate std;
use super::*;
use crate::fixedpoint::gemmlowp16;
use std::vec;
use std::vec::Vec;

mod layer_norm;

/// A small deterministic generator (xorshift).
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn i8s(&mut self, n: usize, range: i32) -> Vec<i8> {
        (0..n)
            .map(|_| ((self.next() % (2 * range as u64 + 1)) as i32 - range) as i8)
            .collect()
    }
    fn i16s(&mut self, n: usize, range: i32) -> Vec<i16> {
        (0..n)
            .map(|_| ((self.next() % (2 * range as u64 + 1)) as i32 - range) as i16)
            .collect()
    }
    fn i32s(&mut self, n: usize, range: i32) -> Vec<i32> {
        (0..n)
            .map(|_| (self.next() % (2 * range as u64 + 1)) as i32 - range)
            .collect()
    }
}

#[derive(Clone, Copy, Debug)]
struct Options {
    cifg: bool,
    peephole: bool,
    layer_norm: bool,
    projection: bool,
    projection_bias: bool,
    cell_clip: bool,
    projection_clip: bool,
}

/// Owned tensors of one random LSTM.
struct Model {
    shape: LstmShape,
    w_in: [Vec<i8>; 4],
    w_rec: [Vec<i8>; 4],
    peep: [Vec<i16>; 4],
    ln: [Vec<i16>; 4],
    bias: [Vec<i32>; 4],
    proj: Vec<i8>,
    proj_bias: Vec<i32>,
    quant: LstmQuantization,
    options: Options,
}

const W_SCALE: [f32; 4] = [0.011, 0.0093, 0.0127, 0.0081];
const R_SCALE: [f32; 4] = [0.0071, 0.0102, 0.0088, 0.0095];
const PEEP_SCALE: f32 = 0.00013;
const LN_SCALE: f32 = 0.00049;
const PROJ_SCALE: f32 = 0.0087;

impl Model {
    fn random(seed: u64, shape: LstmShape, options: Options) -> Model {
        let mut rng = Rng(seed);
        let LstmShape {
            n_input,
            n_cell,
            n_output,
            ..
        } = shape;
        let each = |f: &mut dyn FnMut() -> Vec<i8>| [f(), f(), f(), f()];
        let w_in = each(&mut || rng.i8s(n_cell * n_input, 127));
        let w_rec = each(&mut || rng.i8s(n_cell * n_output, 127));
        let peep = [0; 4].map(|_| rng.i16s(n_cell, 20000));
        let ln = [0; 4].map(|_| rng.i16s(n_cell, 32767));
        let bias = [0; 4].map(|_| rng.i32s(n_cell, 3000));
        let proj = rng.i8s(n_output * n_cell, 127);
        let proj_bias = rng.i32s(n_output, 500);
        let quant = LstmQuantization {
            input: QuantParams::new(0.031, 5),
            output_state: QuantParams::new(0.0078, -3),
            cell_state_scale: 1.0 / 2048.0,
            hidden: QuantParams::new(0.0072, 2),
            gate_scales: options
                .layer_norm
                .then_some([0.00031, 0.00047, 0.00052, 0.00029]),
            cell_clip: if options.cell_clip { 3.0 } else { 0.0 },
            projection_clip: if options.projection_clip { 0.6 } else { 0.0 },
        };
        Model {
            shape,
            w_in,
            w_rec,
            peep,
            ln,
            bias,
            proj,
            proj_bias,
            quant,
            options,
        }
    }

    fn gate(&self, g: usize) -> LstmGateWeights<'_> {
        let o = self.options;
        LstmGateWeights {
            input: &self.w_in[g],
            input_scale: W_SCALE[g],
            recurrent: &self.w_rec[g],
            recurrent_scale: R_SCALE[g],
            peephole: (o.peephole && g != 2).then(|| (&self.peep[g][..], PEEP_SCALE)),
            layer_norm: o.layer_norm.then(|| (&self.ln[g][..], LN_SCALE)),
            bias: &self.bias[g],
        }
    }

    fn weights(&self) -> LstmWeights<'_> {
        let o = self.options;
        LstmWeights {
            input_gate: (!o.cifg).then(|| self.gate(0)),
            forget_gate: self.gate(1),
            cell_gate: self.gate(2),
            output_gate: self.gate(3),
            projection: o.projection.then(|| LstmProjection {
                weights: &self.proj,
                scale: PROJ_SCALE,
                bias: o.projection_bias.then_some(&self.proj_bias[..]),
            }),
        }
    }

    fn lstm(&self) -> Lstm {
        Lstm::new(self.shape, &self.weights(), &self.quant, Rounding::Single).unwrap()
    }
}

fn mbqm(x: i64, real: f32) -> i64 {
    let q = Rounding::Single.quantize_multiplier(real as f64).unwrap();
    Rounding::Single.multiply(x as i32, q) as i64
}

fn sat16(x: i64) -> i16 {
    x.clamp(-32768, 32767) as i16
}

fn rdbp(x: i64, e: u32) -> i64 {
    // Round half away from zero.
    let d = 1i64 << e;
    let q = x.abs() / d;
    let r = x.abs() % d;
    let q = if 2 * r >= d { q + 1 } else { q };
    if x < 0 {
        -q
    } else {
        q
    }
}

/// TFLite's integer step again, naively, for all `n_batch` rows (the
/// peephole runs over the rows flat, `n_output` long each, as TFLite's does).
fn naive_step(m: &Model, n_batch: usize, x: &[i8], h: &mut [i8], c: &mut [i16]) {
    let LstmShape {
        n_input,
        n_cell,
        n_output,
        ..
    } = m.shape;
    let o = m.options;
    let q = &m.quant;
    let gate_scale = |g: usize| q.gate_scales.map_or(1.0 / 4096.0, |s| s[g]);
    let compute = |g: usize, c: &[i16]| -> Vec<i16> {
        let mut all = vec![0i16; n_batch * n_cell];
        for (i, out) in all.iter_mut().enumerate() {
            let (row, r) = (i / n_cell, i % n_cell);
            let x = &x[row * n_input..(row + 1) * n_input];
            let h = &h[row * n_output..(row + 1) * n_output];
            let mut acc: i64 = 0;
            for k in 0..n_input {
                acc +=
                    m.w_in[g][r * n_input + k] as i64 * (x[k] as i64 - q.input.zero_point as i64);
            }
            if !o.layer_norm {
                acc += m.bias[g][r] as i64;
            }
            let a = mbqm(acc, W_SCALE[g] * q.input.scale / gate_scale(g));
            let mut acc: i64 = 0;
            for k in 0..n_output {
                acc += m.w_rec[g][r * n_output + k] as i64
                    * (h[k] as i64 - q.output_state.zero_point as i64);
            }
            let b = mbqm(acc, R_SCALE[g] * q.output_state.scale / gate_scale(g));
            *out = sat16(sat16(a) as i64 + b);
        }
        if o.peephole && g != 2 {
            let real = (2f64.powi(-11) * PEEP_SCALE as f64 / gate_scale(g) as f64) as f32;
            for k in 0..n_batch * n_output {
                let w = m.peep[g][k % n_output] as i64;
                all[k] = sat16(all[k] as i64 + mbqm(w * c[k] as i64, real));
            }
        }
        for out in all.chunks_exact_mut(n_cell) {
            if o.layer_norm {
                let n = n_cell as i64;
                let sum: i64 = out.iter().map(|&v| v as i64).sum();
                let sum_sq: i64 = out.iter().map(|&v| v as i64 * v as i64).sum();
                let mean = sum * 1024 / n;
                let var = (sum_sq * ((1 << 20) / n) - mean * mean) / (1 << 20);
                let var = if var < 1 {
                    ((10000.0 * LN_SCALE) as i64).max(1)
                } else {
                    var
                };
                let inv = params::inv_sqrt_multiplier(var as i32);
                for (r, v) in out.iter_mut().enumerate() {
                    let shifted = 1024 * *v as i64 - mean;
                    let rescaled = Rounding::Single.multiply(shifted as i32, inv) as i64;
                    let w = (rescaled * m.ln[g][r] as i64 + m.bias[g][r] as i64) as i32 as i64;
                    let rounded = if w > 0 {
                        (w + 512) / 1024
                    } else {
                        (w - 512) / 1024
                    };
                    let mut qm = Rounding::Single
                        .quantize_multiplier(LN_SCALE as f64)
                        .unwrap();
                    qm.shift += 12;
                    *v = sat16(Rounding::Single.multiply(rounded as i32, qm) as i64);
                }
            }
        }
        all
    };
    let sig = |v: Vec<i16>| -> Vec<i16> { v.into_iter().map(gemmlowp16::logistic_q3_12).collect() };
    let i_gate = if o.cifg {
        None
    } else {
        Some(sig(compute(0, c)))
    };
    let f_gate = sig(compute(1, c));
    let g_gate: Vec<i16> = compute(2, c)
        .into_iter()
        .map(gemmlowp16::tanh_q3_12)
        .collect();
    for r in 0..n_batch * n_cell {
        let i = i_gate
            .as_ref()
            .map_or(32767 - f_gate[r] as i64, |i| i[r] as i64);
        let kept = rdbp(f_gate[r] as i64 * c[r] as i64, 15);
        let added = rdbp(i * g_gate[r] as i64, 19) as i16 as i64;
        let mut v = sat16(kept + added);
        if o.cell_clip {
            let clip = (3.0f32 * 2048.0) as i16;
            v = v.clamp(-clip, clip);
        }
        c[r] = v;
    }
    let o_gate = sig(compute(3, c));
    let hidden_real = (2f64.powi(-30) / q.hidden.scale as f64) as f32;
    let hidden: Vec<i64> = (0..n_batch * n_cell)
        .map(|r| {
            let t = gemmlowp16::tanh_q(c[r], 4) as i64;
            mbqm(o_gate[r] as i64 * t, hidden_real)
        })
        .collect();
    if o.projection {
        let hz = q.hidden.zero_point as i64;
        let hid: Vec<i64> = hidden.iter().map(|&v| (v - hz).clamp(-128, 127)).collect();
        for (row, r) in (0..n_batch).flat_map(|b| (0..n_output).map(move |r| (b, r))) {
            let hid = &hid[row * n_cell..(row + 1) * n_cell];
            let mut acc: i64 = if o.projection_bias {
                m.proj_bias[r] as i64
            } else {
                0
            };
            for k in 0..n_cell {
                acc += m.proj[r * n_cell + k] as i64 * (hid[k] + hz);
            }
            let v = mbqm(acc, PROJ_SCALE * q.hidden.scale / q.output_state.scale)
                + q.output_state.zero_point as i64;
            let mut v = v.clamp(-128, 127) as i8;
            if o.projection_clip {
                let clip = (0.6f32 / q.output_state.scale) as i8;
                v = v.clamp(-clip, clip);
            }
            h[row * n_output + r] = v;
        }
    } else {
        for r in 0..n_batch * n_cell {
            h[r] = (hidden[r] + q.hidden.zero_point as i64).clamp(-128, 127) as i8;
        }
    }
}

fn all_options() -> Vec<Options> {
    let mut v = Vec::new();
    for bits in 0..128u32 {
        let b = |i: u32| bits & (1 << i) != 0;
        let o = Options {
            cifg: b(0),
            peephole: b(1),
            layer_norm: b(2),
            projection: b(3),
            projection_bias: b(4),
            cell_clip: b(5),
            projection_clip: b(6),
        };
        if !o.projection && (o.projection_bias || o.projection_clip) {
            continue;
        }
        v.push(o);
    }
    v
}

/// Runs `steps` steps of `lstm` with `backend`, returning each step's output
/// state and the final cell state.
fn run_steps(
    lstm: &Lstm,
    backend: Backend,
    inputs: &[Vec<i8>],
    state0: (&[i8], &[i16]),
) -> (Vec<Vec<i8>>, Vec<i16>) {
    let (d, g, hd) = lstm.scratch_lens();
    let (mut dots, mut gates, mut hidden) = (vec![0; d], vec![0; g], vec![0; hd]);
    let mut h = state0.0.to_vec();
    let mut c = state0.1.to_vec();
    let mut outs = Vec::new();
    for x in inputs {
        let mut scratch = LstmScratch {
            dots: &mut dots,
            gates: &mut gates,
            hidden: &mut hidden,
        };
        lstm.step_with(backend, x, &mut h, &mut c, &mut scratch)
            .unwrap();
        outs.push(h.clone());
    }
    (outs, c)
}

#[test]
fn lstm_i8_scalar_equals_naive_tflite_step_every_option() {
    for (case, options) in all_options().into_iter().enumerate() {
        for (n_batch, n_input, n_cell, n_output) in [(1, 5, 8, 8), (3, 19, 16, 16), (2, 33, 12, 7)]
        {
            let n_output = if options.projection { n_output } else { n_cell };
            let shape = LstmShape {
                n_batch,
                n_input,
                n_cell,
                n_output,
            };
            let m = Model::random(
                0x9e37_79b9 + case as u64 * 31 + n_input as u64,
                shape,
                options,
            );
            let lstm = m.lstm();
            let mut rng = Rng(77 + case as u64);
            let inputs: Vec<Vec<i8>> = (0..4).map(|_| rng.i8s(n_batch * n_input, 128)).collect();
            let h0 = rng.i8s(n_batch * n_output, 60);
            let c0 = rng.i16s(n_batch * n_cell, 9000);
            let (outs, c_end) = run_steps(&lstm, Backend::Scalar, &inputs, (&h0, &c0));
            let mut h = h0.clone();
            let mut c = c0.clone();
            for (t, x) in inputs.iter().enumerate() {
                naive_step(&m, n_batch, x, &mut h, &mut c);
                assert_eq!(outs[t], h, "{options:?} {shape:?} step {t}");
            }
            assert_eq!(c_end, c, "{options:?} {shape:?} cell");
        }
    }
}

/// A float LSTM (sigmoid / tanh gates, no layer norm or peephole) on the
/// dequantized tensors of `m`, one row, one step.
fn float_step(m: &Model, x: &[i8], h: &[i8], c: &[i16]) -> (Vec<f64>, Vec<f64>) {
    let LstmShape {
        n_input, n_cell, ..
    } = m.shape;
    let q = &m.quant;
    let xf: Vec<f64> = x
        .iter()
        .map(|&v| (v as i32 - q.input.zero_point) as f64 * q.input.scale as f64)
        .collect();
    let hf: Vec<f64> = h
        .iter()
        .map(|&v| (v as i32 - q.output_state.zero_point) as f64 * q.output_state.scale as f64)
        .collect();
    let gate = |g: usize, r: usize| -> f64 {
        let mut s = m.bias[g][r] as f64 * W_SCALE[g] as f64 * q.input.scale as f64;
        for k in 0..n_input {
            s += m.w_in[g][r * n_input + k] as f64 * W_SCALE[g] as f64 * xf[k];
        }
        for k in 0..n_cell {
            s += m.w_rec[g][r * n_cell + k] as f64 * R_SCALE[g] as f64 * hf[k];
        }
        s
    };
    let sigmoid = |v: f64| 1.0 / (1.0 + (-v).exp());
    let mut c_new = Vec::new();
    let mut h_new = Vec::new();
    for r in 0..n_cell {
        let i = sigmoid(gate(0, r));
        let f = sigmoid(gate(1, r));
        let g = gate(2, r).tanh();
        let o = sigmoid(gate(3, r));
        let cv = f * c[r] as f64 / 2048.0 + i * g;
        c_new.push(cv);
        h_new.push(o * cv.tanh());
    }
    (h_new, c_new)
}

#[test]
fn lstm_i8_basic_follows_float_lstm() {
    let options = Options {
        cifg: false,
        peephole: false,
        layer_norm: false,
        projection: false,
        projection_bias: false,
        cell_clip: false,
        projection_clip: false,
    };
    let shape = LstmShape {
        n_batch: 1,
        n_input: 24,
        n_cell: 20,
        n_output: 20,
    };
    let mut worst_h: f64 = 0.0;
    let mut worst_c: f64 = 0.0;
    for seed in 1..40u64 {
        let mut m = Model::random(seed * 7919, shape, options);
        // Small weights keep the gates inside Q3.12's range (|x| < 8).
        for g in 0..4 {
            m.w_in[g].iter_mut().for_each(|w| *w /= 4);
            m.w_rec[g].iter_mut().for_each(|w| *w /= 4);
        }
        let lstm = m.lstm();
        let mut rng = Rng(seed);
        let x = rng.i8s(24, 100);
        let h = rng.i8s(20, 100);
        let c = rng.i16s(20, 4000);
        let (outs, c_end) = run_steps(&lstm, Backend::Scalar, core::slice::from_ref(&x), (&h, &c));
        let (hf, cf) = float_step(&m, &x, &h, &c);
        let q = m.quant;
        for r in 0..20 {
            // The int8 range clamps (o * tanh(c) reaches 1 / 0.0072 = 139 steps).
            let want =
                (hf[r] / q.hidden.scale as f64 + q.hidden.zero_point as f64).clamp(-128.0, 127.0);
            worst_h = worst_h.max((outs[0][r] as f64 - want).abs());
            worst_c = worst_c.max((c_end[r] as f64 / 2048.0 - cf[r]).abs() * 2048.0);
        }
    }
    // Within two output steps and a few cell steps (the 16-bit sigmoid and
    // tanh carry up to ~12 Q0.15 steps, the gate products round at 2^-12).
    assert!(
        worst_h <= 2.0,
        "hidden off by {worst_h} steps (cell {worst_c})"
    );
    assert!(worst_c <= 16.0, "cell off by {worst_c} steps");
}

#[test]
fn lstm_i8_inv_sqrt_multiplier_is_one_over_sqrt() {
    let mut worst: f64 = 0.0;
    for x in (2..1 << 30)
        .step_by(999_983)
        .chain([2, 3, 4, 1 << 29, i32::MAX])
    {
        let q = params::inv_sqrt_multiplier(x);
        let got = q.multiplier as f64 * 2f64.powi(q.shift - 31);
        let exact = 1.0 / (x as f64).sqrt();
        worst = worst.max((got / exact - 1.0).abs());
    }
    // Measured 1.24e-6: TFLite's five Newton steps from 1 stop short of
    // convergence at the ends of the normalized range.
    assert!(worst < 2e-6, "{worst}");
}

#[test]
fn lstm_i8_prepare_errors() {
    let options = all_options()[0];
    let shape = LstmShape {
        n_batch: 1,
        n_input: 4,
        n_cell: 8,
        n_output: 8,
    };
    let m = Model::random(5, shape, options);
    let w = m.weights();
    let ok = |w: &LstmWeights<'_>, q: &LstmQuantization| Lstm::new(shape, w, q, Rounding::Single);
    assert!(ok(&w, &m.quant).is_ok());
    let mut bad = w;
    bad.forget_gate.input = &m.w_in[1][..5];
    assert!(matches!(
        ok(&bad, &m.quant),
        Err(Error::Length {
            what: "input weights",
            ..
        })
    ));
    let mut bad = w;
    bad.cell_gate.peephole = Some((&m.peep[2], PEEP_SCALE));
    assert!(matches!(ok(&bad, &m.quant), Err(Error::Unsupported { .. })));
    let mut bad = w;
    bad.forget_gate.layer_norm = Some((&m.ln[1], LN_SCALE));
    assert!(matches!(ok(&bad, &m.quant), Err(Error::Unsupported { .. })));
    let mut q = m.quant;
    q.cell_state_scale = 0.001;
    assert!(matches!(ok(&w, &q), Err(Error::OutOfDomain { .. })));
    q.cell_state_scale = 1.0 / 256.0;
    assert!(matches!(ok(&w, &q), Err(Error::OutOfDomain { .. })));
    let mut q = m.quant;
    q.input.zero_point = 200;
    assert!(matches!(ok(&w, &q), Err(Error::ZeroPoint { .. })));
    let mut q = m.quant;
    q.hidden.scale = f32::NAN;
    assert!(matches!(ok(&w, &q), Err(Error::Scale { .. })));
    let mut q = m.quant;
    q.gate_scales = Some([0.001; 4]);
    assert!(matches!(ok(&w, &q), Err(Error::Unsupported { .. })));
    let bad_shape = LstmShape {
        n_output: 7,
        ..shape
    };
    assert!(Lstm::new(bad_shape, &w, &m.quant, Rounding::Single).is_err());
    // A step with wrong buffers is an error, not a panic.
    let lstm = ok(&w, &m.quant).unwrap();
    let (d, g, hd) = lstm.scratch_lens();
    let (mut dots, mut gates, mut hidden) = (vec![0; d], vec![0; g - 1], vec![0; hd]);
    let mut scratch = LstmScratch {
        dots: &mut dots,
        gates: &mut gates,
        hidden: &mut hidden,
    };
    let (mut h, mut c) = (vec![0i8; 8], vec![0i16; 8]);
    assert!(lstm.step(&[0; 4], &mut h, &mut c, &mut scratch).is_err());
    let mut gates = vec![0; g];
    scratch.gates = &mut gates;
    assert!(lstm.step(&[0; 3], &mut h, &mut c, &mut scratch).is_err());
    assert!(lstm.step(&[0; 8], &mut h, &mut c, &mut scratch).is_err());
    assert!(lstm
        .step(&[0; 4], &mut h[..7], &mut c, &mut scratch)
        .is_err());
    assert!(lstm.step(&[0; 4], &mut h, &mut c, &mut scratch).is_ok());
}

#[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
#[test]
fn lstm_i8_neon_equals_scalar_every_option() {
    for (case, options) in all_options().into_iter().enumerate() {
        for (n_batch, n_input, n_cell, n_output) in [(1, 5, 8, 8), (3, 40, 21, 21), (2, 64, 12, 33)]
        {
            let n_output = if options.projection { n_output } else { n_cell };
            let shape = LstmShape {
                n_batch,
                n_input,
                n_cell,
                n_output,
            };
            let mut m = Model::random(0x51ed + case as u64, shape, options);
            // Both roundings, and the cell state's tanh at 0, 4 and 6
            // integer bits.
            for (rounding, cell_scale) in [
                (Rounding::Single, 1.0 / 2048.0),
                (Rounding::Double, 1.0 / 32768.0),
                (Rounding::Double, 1.0 / 512.0),
            ] {
                m.quant.cell_state_scale = cell_scale;
                for arithmetic in [LstmLayerNorm::Portable, LstmLayerNorm::Aarch64Neon] {
                    let lstm = Lstm::new(m.shape, &m.weights(), &m.quant, rounding)
                        .unwrap()
                        .with_layer_norm_arithmetic(arithmetic);
                    let mut rng = Rng(3 + case as u64);
                    let inputs: Vec<Vec<i8>> =
                        (0..3).map(|_| rng.i8s(n_batch * n_input, 128)).collect();
                    let h0 = rng.i8s(n_batch * n_output, 128);
                    let c0 = rng.i16s(n_batch * n_cell, 32767);
                    let scalar = run_steps(&lstm, Backend::Scalar, &inputs, (&h0, &c0));
                    let neon = run_steps(&lstm, Backend::Neon, &inputs, (&h0, &c0));
                    assert_eq!(
                        scalar, neon,
                        "{options:?} {shape:?} {rounding:?} {cell_scale} {arithmetic:?}"
                    );
                }
            }
        }
    }
}

#[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
#[test]
fn lstm_i8_neon_mat_vec_paths_equal_scalar_with_extreme_weights() {
    let mut rng = Rng(99);
    for (rows, cols) in [
        (1, 1),
        (4, 16),
        (5, 17),
        (9, 47),
        (13, 300),
        (21, 33),
        (8, 8),
    ] {
        for fill in [None, Some(-128i8), Some(127)] {
            let mut w = rng.i8s(rows * cols, 128);
            let mut x = rng.i8s(2 * cols, 128);
            if let Some(v) = fill {
                w.fill(v);
                x.fill(-128);
            }
            let naive: Vec<i32> = x
                .chunks_exact(cols)
                .flat_map(|xb| {
                    w.chunks_exact(cols).map(move |row| {
                        row.iter()
                            .zip(xb)
                            .map(|(&a, &b)| a as i32 * b as i32)
                            .sum::<i32>()
                    })
                })
                .collect();
            let (w, stride) = params::pack_rows(&w, rows, cols);
            let mut want = vec![0; 2 * rows];
            scalar::mat_vec_packed(&w, rows, cols, stride, &x, &mut want);
            assert_eq!(want, naive, "{rows}x{cols} scalar");
            let mut got = vec![0; 2 * rows];
            neon::mat_vec_packed(&w, rows, cols, stride, &x, &mut got);
            assert_eq!(want, got, "{rows}x{cols}");
            let mut got = vec![0; 2 * rows];
            neon::mat_vec_widening(&w, rows, cols, stride, &x, &mut got);
            assert_eq!(want, got, "{rows}x{cols} widening");
        }
    }
}
