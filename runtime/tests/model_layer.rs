//! The int8 MobileBert layer end to end at reduced sizes: every softmax
//! method within the accuracy bound of the float reference forward
//! pass, the backends bit-exact with each other, the profiler seeing every
//! operator with the right amount of work, and bad parameters or buffers
//! rejected with errors.

use qneon::{Backend, Method};
use qneon_runtime::float::{accuracy, synthetic, Synthetic};
use qneon_runtime::Error;
use qneon_runtime::{Layer, MobileBertConfig, NoProfile, OpKind, Profiler};
use std::collections::BTreeMap;

/// MobileBert's structure at a size that runs in well under a second under
/// qemu: 4 heads, 2 feed-forward networks, odd sequence length.
const SMALL: MobileBertConfig = MobileBertConfig {
    seq_len: 37,
    hidden: 64,
    bottleneck: 32,
    heads: 4,
    head_dim: 8,
    ffn_count: 2,
    intermediate: 48,
};

const METHODS: [Method; 3] = [Method::FixedPoint, Method::Lut, Method::DequantF32];

fn small(seed: u64) -> Synthetic {
    synthetic(SMALL, seed, 2).expect("the synthetic layer quantizes")
}

fn run(layer: &Layer, backend: Backend, input: &[i8]) -> Vec<i8> {
    let mut ws = layer.workspace();
    let mut out = vec![0x5a; input.len()];
    layer
        .run(&mut ws, backend, input, &mut out, &mut NoProfile)
        .unwrap();
    out
}

#[test]
fn every_softmax_method_is_close_to_the_float_reference() {
    for seed in [1, 2, 3] {
        let s = small(seed);
        for method in METHODS {
            let layer = Layer::new(&s.params, method).unwrap();
            let out = run(&layer, Backend::Scalar, &s.input);
            let a = accuracy(&out, layer.output_quant(), &s.reference);
            assert!(
                a.cosine >= 0.99,
                "seed {seed} {method:?}: cosine {} < 0.99 ({a:?})",
                a.cosine
            );
            // Quantizing the reference itself would be within half a step;
            // the layer's roundings add a few more.
            assert!(a.max_abs_err_lsb < 16.0, "seed {seed} {method:?}: {a:?}");
        }
    }
}

#[test]
fn full_size_squad_layer_is_close_to_the_float_reference() {
    let s = synthetic(MobileBertConfig::SQUAD, 7, 1).unwrap();
    let layer = Layer::new(&s.params, Method::Lut).unwrap();
    let out = run(&layer, Backend::best(), &s.input);
    let a = accuracy(&out, layer.output_quant(), &s.reference);
    assert!(a.cosine >= 0.99, "{a:?}");
}

#[test]
fn a_workspace_is_reusable_and_runs_are_deterministic() {
    let s = small(4);
    let layer = Layer::new(&s.params, Method::FixedPoint).unwrap();
    let mut ws = layer.workspace();
    let mut first = vec![0; s.input.len()];
    let mut second = vec![1; s.input.len()];
    let other = small(5).input;
    let mut scratch = vec![0; s.input.len()];
    layer
        .run(
            &mut ws,
            Backend::Scalar,
            &s.input,
            &mut first,
            &mut NoProfile,
        )
        .unwrap();
    layer
        .run(
            &mut ws,
            Backend::Scalar,
            &other,
            &mut scratch,
            &mut NoProfile,
        )
        .unwrap();
    layer
        .run(
            &mut ws,
            Backend::Scalar,
            &s.input,
            &mut second,
            &mut NoProfile,
        )
        .unwrap();
    assert_eq!(first, second);
    assert_ne!(first, scratch, "different inputs give different outputs");
}

#[derive(Default)]
struct Recorder {
    open: Option<OpKind>,
    work: BTreeMap<OpKind, (u64, u64)>,
}

impl Profiler for Recorder {
    fn begin(&mut self, op: OpKind) {
        assert_eq!(self.open, None, "{op:?} begins inside another operator");
        self.open = Some(op);
    }
    fn end(&mut self, op: OpKind, work: u64) {
        assert_eq!(self.open, Some(op), "{op:?} ends without beginning");
        self.open = None;
        let e = self.work.entry(op).or_default();
        e.0 += 1;
        e.1 += work;
    }
}

#[test]
fn the_profiler_sees_every_operator_with_its_work() {
    let s = small(6);
    let c = SMALL;
    let layer = Layer::new(&s.params, Method::Lut).unwrap();
    let mut ws = layer.workspace();
    let mut out = vec![0; s.input.len()];
    let mut rec = Recorder::default();
    layer
        .run(&mut ws, Backend::Scalar, &s.input, &mut out, &mut rec)
        .unwrap();
    assert_eq!(rec.open, None);
    let (l, h, b, f) = (
        c.seq_len as u64,
        c.hidden as u64,
        c.bottleneck as u64,
        c.intermediate as u64,
    );
    let fc_calls = 7 + 2 * c.ffn_count as u64;
    let fc_macs = l * (3 * h * b + 3 * b * b + c.ffn_count as u64 * 2 * b * f + b * h);
    let attention_macs = l * l * b;
    let want: BTreeMap<OpKind, (u64, u64)> = [
        (OpKind::FullyConnected, (fc_calls, fc_macs)),
        (OpKind::AttentionScores, (1, attention_macs)),
        (OpKind::Softmax, (1, c.heads as u64 * l * l)),
        (OpKind::AttentionContext, (1, attention_macs)),
        (
            OpKind::Add,
            (
                2 + c.ffn_count as u64,
                l * (b * (1 + c.ffn_count as u64) + h),
            ),
        ),
        (
            OpKind::NoNorm,
            (
                4 + c.ffn_count as u64,
                l * (b * (3 + c.ffn_count as u64) + h),
            ),
        ),
        (OpKind::Transpose, (2, 4 * l * b)),
    ]
    .into_iter()
    .collect();
    assert_eq!(rec.work, want);
    let macs: u64 = rec
        .work
        .iter()
        .filter(|(k, _)| k.unit() == "MAC")
        .map(|(_, &(_, w))| w)
        .sum();
    assert_eq!(macs, c.macs());
}

#[test]
fn bad_parameters_and_buffers_are_errors() {
    let s = small(8);
    let mut p = s.params.clone();
    p.key.output.zero_point = 3;
    assert!(matches!(
        Layer::new(&p, Method::Lut),
        Err(Error::Kernel(qneon::Error::ZeroPoint { value: 3, .. }))
    ));
    let mut p = s.params.clone();
    p.ffn.pop();
    assert!(matches!(
        Layer::new(&p, Method::Lut),
        Err(Error::Kernel(qneon::Error::Length {
            what: "feed-forward networks",
            ..
        }))
    ));
    let mut p = s.params.clone();
    p.query.inputs += 1;
    assert!(matches!(
        Layer::new(&p, Method::Lut),
        Err(Error::Kernel(qneon::Error::Length { .. }))
    ));
    let mut p = s.params.clone();
    p.scores.scale = f32::NAN;
    assert!(matches!(
        Layer::new(&p, Method::Lut),
        Err(Error::Kernel(qneon::Error::Scale { .. }))
    ));
    let mut p = s.params.clone();
    p.value.weight.pop();
    assert!(matches!(
        Layer::new(&p, Method::Lut),
        Err(Error::Kernel(qneon::Error::Length { .. }))
    ));

    let layer = Layer::new(&s.params, Method::Lut).unwrap();
    let mut ws = layer.workspace();
    let n = s.input.len();
    let mut out = vec![0; n];
    assert!(matches!(
        layer.run(
            &mut ws,
            Backend::Scalar,
            &s.input[1..],
            &mut out,
            &mut NoProfile
        ),
        Err(Error::Kernel(qneon::Error::Length { what: "input", .. }))
    ));
    assert!(matches!(
        layer.run(
            &mut ws,
            Backend::Scalar,
            &s.input,
            &mut out[1..],
            &mut NoProfile
        ),
        Err(Error::Kernel(qneon::Error::Length { what: "output", .. }))
    ));
    let mut other = SMALL;
    other.seq_len += 1;
    let bigger = Layer::new(&synthetic(other, 9, 1).unwrap().params, Method::Lut).unwrap();
    let mut wrong_ws = bigger.workspace();
    assert!(matches!(
        layer.run(
            &mut wrong_ws,
            Backend::Scalar,
            &s.input,
            &mut out,
            &mut NoProfile
        ),
        Err(Error::Kernel(qneon::Error::Length { .. }))
    ));
}

#[cfg(target_arch = "aarch64")]
#[test]
fn neon_layer_equals_scalar_layer_for_every_method() {
    for seed in [10, 11] {
        let s = small(seed);
        for method in METHODS {
            let layer = Layer::new(&s.params, method).unwrap();
            assert_eq!(
                run(&layer, Backend::Neon, &s.input),
                run(&layer, Backend::Scalar, &s.input),
                "seed {seed} {method:?}"
            );
        }
    }
}
