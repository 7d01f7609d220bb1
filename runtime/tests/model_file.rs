//! The committed MobileBert layer files: they load, they are exactly what the
//! generator builds, the layer read back equals the layer written, and cut or
//! corrupted files are rejected with errors (never a panic).

use qneon::{Backend, Method};
// Only the host test that regenerates the files uses `model_files`.
#[cfg(not(target_arch = "aarch64"))]
use qneon_runtime::float::model_files;
use qneon_runtime::float::synthetic;
use qneon_runtime::qnb::{AlignedBytes, Qnb, QnbWriter, Quant};
use qneon_runtime::Error;
use qneon_runtime::{Layer, LayerInput, LayerParams, MobileBertConfig, NoProfile};
use std::path::PathBuf;

fn path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join("models")
        .join(name)
}

fn committed() -> (AlignedBytes, AlignedBytes) {
    let read = |n: &str| AlignedBytes::read(path(n)).unwrap_or_else(|e| panic!("{n}: {e}"));
    (
        read("mobilebert_layer.qnb"),
        read("mobilebert_layer.input.bin"),
    )
}

const SMALL: MobileBertConfig = MobileBertConfig {
    seq_len: 19,
    hidden: 48,
    bottleneck: 16,
    heads: 2,
    head_dim: 8,
    ffn_count: 3,
    intermediate: 24,
};

#[test]
fn committed_files_load_and_run_close_to_their_reference() {
    let (model, input) = committed();
    let params = LayerParams::from_qnb(&Qnb::parse(&model).unwrap()).unwrap();
    assert_eq!(params.config, MobileBertConfig::SQUAD);
    let input = LayerInput::from_qnb(&Qnb::parse(&input).unwrap(), &params.config).unwrap();
    assert_eq!(input.quant, params.input);
    let layer = Layer::new(&params, Method::FixedPoint).unwrap();
    let mut ws = layer.workspace();
    let mut out = vec![0; input.input.len()];
    layer
        .run(
            &mut ws,
            Backend::best(),
            &input.input,
            &mut out,
            &mut NoProfile,
        )
        .unwrap();
    let a = qneon_runtime::float::accuracy(&out, layer.output_quant(), &input.reference_output);
    assert!(a.cosine >= 0.99, "{a:?}");
}

/// `cargo xtask gen-model` reproduces the committed bytes (f32 arithmetic
/// and this crate's own `exp` only, so the result is the same on every IEEE
/// machine; checked on the host, where it is fast).
#[cfg(not(target_arch = "aarch64"))]
#[test]
fn committed_files_are_what_the_generator_builds() {
    let (model, input) = committed();
    let (want_model, want_input) = model_files(MobileBertConfig::SQUAD).unwrap();
    assert!(
        model[..] == want_model[..],
        "models/mobilebert_layer.qnb is stale: run `cargo xtask gen-model`"
    );
    assert!(
        input[..] == want_input[..],
        "models/mobilebert_layer.input.bin is stale: run `cargo xtask gen-model`"
    );
}

#[test]
fn layer_params_survive_a_round_trip() {
    for seed in [1, 2] {
        let s = synthetic(SMALL, seed, 1).unwrap();
        let bytes = AlignedBytes::copy_from(&s.params.to_qnb().unwrap());
        let back = LayerParams::from_qnb(&Qnb::parse(&bytes).unwrap()).unwrap();
        assert_eq!(back, s.params);
        let li = LayerInput {
            input: s.input.clone(),
            quant: s.params.input,
            reference_output: s.reference.clone(),
        };
        let bytes = AlignedBytes::copy_from(&li.to_qnb(&SMALL).unwrap());
        assert_eq!(
            LayerInput::from_qnb(&Qnb::parse(&bytes).unwrap(), &SMALL).unwrap(),
            li
        );
    }
}

/// Parses and reads a layer; any error is fine, a panic or success is not.
fn load(bytes: &[u8]) -> Result<LayerParams, Error> {
    let aligned = AlignedBytes::copy_from(bytes);
    let f = Qnb::parse(&aligned)?;
    LayerParams::from_qnb(&f)
}

#[test]
fn cut_files_are_errors() {
    let bytes = synthetic(SMALL, 3, 1).unwrap().params.to_qnb().unwrap();
    assert!(load(&bytes).is_ok());
    let mut cuts: Vec<usize> = (0..bytes.len()).step_by(7).collect();
    cuts.extend([bytes.len() - 1, bytes.len() - 64, 64, 63]);
    for len in cuts {
        assert!(load(&bytes[..len]).is_err(), "cut to {len} bytes loaded");
    }
}

#[test]
fn flipped_bits_are_errors() {
    let bytes = synthetic(SMALL, 4, 1).unwrap().params.to_qnb().unwrap();
    for i in (0..bytes.len()).step_by(5) {
        for bit in [0, 3, 7] {
            let mut bad = bytes.clone();
            bad[i] ^= 1 << bit;
            assert!(load(&bad).is_err(), "bit {bit} of byte {i} flipped loaded");
        }
    }
}

/// A well-formed file that lacks a tensor, or has one of the wrong shape or
/// kind, is an error naming it.
#[test]
fn missing_or_mismatched_tensors_are_named() {
    let s = synthetic(SMALL, 5, 1).unwrap();
    let good = s.params.to_qnb().unwrap();
    let good = AlignedBytes::copy_from(&good);
    let f = Qnb::parse(&good).unwrap();

    // Copy every tensor but one (or change one) into a new file.
    let rebuild = |skip: &str, replace: Option<(&str, Vec<i8>, Quant, Vec<usize>)>| {
        let mut w = QnbWriter::new();
        for (k, v) in f.metas() {
            w.meta(k, v).unwrap();
        }
        for name in f.names() {
            if name == skip {
                continue;
            }
            if let Some((r, data, quant, shape)) = &replace {
                if name == *r {
                    w.tensor(name, shape, quant.clone(), data).unwrap();
                    continue;
                }
            }
            copy_tensor(&f, &mut w, name);
        }
        w.to_bytes()
    };
    let missing = rebuild("ffn1.output.weight", None);
    assert_eq!(
        load(&missing),
        Err(Error::ModelTensor {
            name: "ffn1.output.weight",
            problem: "not in the model file"
        })
    );
    let missing_act = rebuild("scores.output", None);
    assert!(matches!(
        load(&missing_act),
        Err(Error::ModelTensor {
            name: "scores.output",
            ..
        })
    ));
    let wrong_shape = rebuild(
        "",
        Some((
            "query.weight",
            vec![1; 16 * 15],
            Quant::PerChannel {
                scales: vec![0.01; 16],
            },
            vec![16, 15],
        )),
    );
    assert!(matches!(
        load(&wrong_shape),
        Err(Error::ModelTensor {
            name: "query.weight",
            ..
        })
    ));
    let not_per_channel = rebuild(
        "",
        Some(("key.weight", vec![1; 256], Quant::None, vec![16, 16])),
    );
    assert!(matches!(
        load(&not_per_channel),
        Err(Error::ModelTensor {
            name: "key.weight",
            ..
        })
    ));
    let wrong_config = {
        let mut w = QnbWriter::new();
        for (k, v) in f.metas() {
            w.meta(k, if k == "head_dim" { 7 } else { v }).unwrap();
        }
        w.to_bytes()
    };
    assert!(matches!(
        load(&wrong_config),
        Err(Error::Kernel(qneon::Error::Length { .. }))
    ));
}

fn copy_tensor(f: &Qnb<'_>, w: &mut QnbWriter, name: &str) {
    use qneon_runtime::qnb::DType;
    let (dtype, shape) = f.info(name).unwrap();
    let shape = shape.to_vec();
    // Names handed to `tensor` must be 'static; leak the few of this test.
    let name: &'static str = Box::leak(name.to_string().into_boxed_str());
    match dtype {
        DType::I8 => {
            let t = f.tensor::<i8>(name, &shape).unwrap();
            w.tensor(name, &shape, t.quant, t.data).unwrap();
        }
        DType::I32 => {
            let t = f.tensor::<i32>(name, &shape).unwrap();
            w.tensor(name, &shape, t.quant, t.data).unwrap();
        }
        other => panic!("unexpected dtype {other:?}"),
    }
}
