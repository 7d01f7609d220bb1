//! `Options::threads`: every committed model gives the same output bytes at
//! 1, 2, 3, 4 and 8 threads, on the scalar and the best backend; a session
//! moves between threads; 0 threads is an error.
//!
//! The models: every `.tflite` file under `models/` (the single-op cases,
//! the generated nets, the TFLite Micro models, the 1-layer MobileBert),
//! on deterministic inputs. The 24-layer MobileBert is left out (minutes
//! at ten configurations in a test build, and under qemu): its nodes are
//! the 1-layer model's, repeated. Threads change which thread runs a tile,
//! never a tile's arithmetic, so the bytes at 1 thread (which the model
//! tests compare to TFLite's references) are the reference here.

mod tflite_common;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use qneon::{Backend, Method};
use qneon_runtime::interp::{NodeInfo, Options, Plan, Session, TfliteKernels};
use qneon_runtime::Error;
use qneon_tflite::TensorType;
use tflite_common::models_dir;

const THREADS: [usize; 4] = [2, 3, 4, 8];

/// Every `.tflite` under `dir`, but the 24-layer MobileBert and the
/// malformed files (which no options load).
fn tflite_files(dir: &Path, found: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            tflite_files(&path, found);
        } else if path.extension().is_some_and(|e| e == "tflite")
            && !path.ends_with("mobilebert_squad_24l.tflite")
            && !path.to_string_lossy().contains("malformed")
        {
            found.push(path);
        }
    }
}

/// Deterministic input bytes for every input of `plan`: small int32 values
/// (valid GATHER indices and masks), finite floats, any 8- or 16-bit code.
fn set_inputs(plan: &Plan<'_>, session: &mut Session<'_>) {
    for (position, &t) in plan.input_tensors().iter().enumerate() {
        let info = &plan.tensors()[t];
        let data: Vec<u8> = (0..info.bytes)
            .map(|i| match info.dtype {
                TensorType::Int32 | TensorType::Int64 => {
                    let width = if info.dtype == TensorType::Int32 {
                        4
                    } else {
                        8
                    };
                    (if i % width == 0 { (i / width) % 2 } else { 0 }) as u8
                }
                TensorType::Float32 if i % 4 == 3 => 0x3f,
                _ => (i * 37 % 251) as u8,
            })
            .collect();
        session.set_input(position, &data).unwrap();
    }
}

/// The output bytes of one invoke of `bytes` under `options`, and how many
/// nodes split; `None` if the model does not load under them.
fn run(bytes: &[u8], options: Options) -> Option<(Vec<Vec<u8>>, usize)> {
    let plan = Arc::new(Plan::new(bytes, options).ok()?);
    let split = plan.nodes().filter(|n| n.threads > 1).count();
    let mut session = Session::new(plan.clone());
    set_inputs(&plan, &mut session);
    session.invoke().expect("invoke");
    let outputs = (0..plan.output_tensors().len())
        .map(|p| session.output(p).unwrap_or_default().to_vec())
        .collect();
    Some((outputs, split))
}

fn backends() -> Vec<Backend> {
    let mut all = vec![Backend::Scalar];
    if Backend::best() != Backend::Scalar {
        all.push(Backend::best());
    }
    all
}

#[test]
fn every_model_gives_the_same_bytes_at_every_thread_count() {
    let mut files = Vec::new();
    tflite_files(&models_dir(), &mut files);
    assert!(files.len() > 100, "{} models", files.len());
    let (mut checked, mut split_nodes) = (0, 0);
    for file in &files {
        let bytes = qneon_tflite::ModelBytes::read(file, 1 << 30).unwrap();
        for backend in backends() {
            // The first kernel set the model loads under (a few cases are
            // XNNPACK's alone).
            let Some((options, (one, none_split))) = [
                (Method::FixedPoint, TfliteKernels::Reference),
                (Method::Lut, TfliteKernels::Optimized),
                (Method::Lut, TfliteKernels::Xnnpack),
            ]
            .into_iter()
            .find_map(|(softmax_method, kernels)| {
                let options = Options {
                    backend,
                    softmax_method,
                    kernels,
                    ..Options::default()
                };
                Some((options, run(bytes.as_bytes(), options)?))
            }) else {
                continue;
            };
            assert_eq!(
                none_split,
                0,
                "{}: a node split at 1 thread",
                file.display()
            );
            for threads in THREADS {
                let (many, split) = run(bytes.as_bytes(), Options { threads, ..options })
                    .unwrap_or_else(|| panic!("{} does not load at {threads}", file.display()));
                assert!(
                    one == many,
                    "{}: {backend:?}, {threads} threads: outputs differ from 1 thread",
                    file.display()
                );
                split_nodes += split;
            }
            checked += 1;
        }
    }
    let expected = files.len() * backends().len();
    assert!(checked >= expected, "{checked} model runs of {expected}");
    // The large models' big nodes do split.
    assert!(split_nodes > 100, "{split_nodes} split nodes");
}

/// The 1-layer MobileBert at 4 threads: its large nodes take all 4, and
/// the bytes are those of 1 thread in TFLite's reference options.
#[test]
fn mobilebert_splits_its_large_nodes_four_ways() {
    let manifest = tflite_common::manifest("mobilebert_squad/manifest.json");
    let model = &manifest["models"]["1l"];
    let bytes = tflite_common::read_model(model["model"].as_str().unwrap());
    let options = Options {
        threads: 4,
        ..tflite_common::options(
            qneon_runtime::interp::Rounding::Single,
            qneon::Method::FixedPoint,
        )
    };
    let plan = Plan::new(bytes.as_bytes(), options).unwrap();
    assert!(plan.nodes().filter(|n| n.threads == 4).count() > 10);
    let one = run(
        bytes.as_bytes(),
        Options {
            threads: 1,
            ..options
        },
    )
    .unwrap();
    let four = run(bytes.as_bytes(), options).unwrap();
    assert_eq!(one.0, four.0);
}

/// person_detect at 4 threads: its convolutions split by output rows (every
/// CONV_2D and DEPTHWISE_CONV_2D worth two threads gets them: two shares of
/// at least 25,000 MACs plus twice a share's setup, which for CONV_2D is
/// 5,000 + 4 per weight; a depthwise MAC counts 8), or, for the late 1x1
/// layers of 3 x 3 pixels and 128 x 256 or 256 x 256 weights, whose bands
/// would pay more setup than work, and the last depthwise layer (3 x 3
/// pixels, 256 channels), which bands give at most 3 threads, by output
/// channels on all four; the bytes are those of 1 thread on every backend (a depthwise
/// share's channel range or its tile's place in the output wrong would
/// change them).
#[test]
fn person_detect_splits_its_convolutions() {
    let bytes = qneon_tflite::ModelBytes::read(
        models_dir().join("tflite_micro/person_detect.tflite"),
        1 << 30,
    )
    .unwrap();
    for backend in backends() {
        let options = Options {
            backend,
            threads: 4,
            ..Options::default()
        };
        let plan = Plan::new(bytes.as_bytes(), options).unwrap();
        let convs: Vec<_> = plan
            .nodes()
            .filter(|n| n.op == "CONV_2D" || n.op == "DEPTHWISE_CONV_2D")
            .collect();
        assert_eq!(convs.len(), 28);
        for node in convs.iter().filter(|n| !n.split_by_columns) {
            let (setup, weight) = match (node.op.as_str(), node.inputs[1]) {
                ("CONV_2D", Some(w)) => (5_000 + 4 * plan.tensors()[w].bytes as u64, 1),
                _ => (0, 8),
            };
            let worth = node.work * weight >= 2 * (25_000 + 2 * setup);
            assert_eq!(node.threads > 1, worth, "node {} {}", node.index, node.op);
        }
        let three_rows =
            |n: &NodeInfo| n.outputs[0].is_some_and(|t| plan.tensors()[t].shape[1] == 3);
        let late: Vec<_> = convs
            .iter()
            .filter(|n| n.op == "CONV_2D" && n.work >= 294_912)
            .filter(|n| three_rows(n))
            .collect();
        assert_eq!(late.len(), 2);
        assert!(late.iter().all(|n| n.threads == 4 && n.split_by_columns));
        // The last depthwise layer (3 x 3 pixels of 256 channels, 20,736
        // MACs) takes 4 column shares of 4 channel blocks at 4 threads:
        // its 3 bands of rows would leave a thread idle and call every
        // block's kernel in each band (busiest thread 5,460 instructions by
        // rows, 4,624 by channels, each share's channels in place).
        let late_depthwise: Vec<_> = convs
            .iter()
            .filter(|n| n.op == "DEPTHWISE_CONV_2D" && n.work >= 20_736)
            .filter(|n| three_rows(n))
            .collect();
        assert_eq!(late_depthwise.len(), 1);
        for n in &late_depthwise {
            let t = n.inputs[0].map(|t| &plan.tensors()[t].shape);
            assert!(
                n.threads == 4 && n.split_by_columns,
                "node {} {:?} work {}: {} threads, by columns {}",
                n.index,
                t,
                n.work,
                n.threads,
                n.split_by_columns
            );
        }
        assert!(convs.iter().filter(|n| n.threads > 1).count() > 10);
        let one = run(
            bytes.as_bytes(),
            Options {
                threads: 1,
                ..options
            },
        )
        .unwrap();
        let four = run(bytes.as_bytes(), options).unwrap();
        assert_eq!(one.0, four.0, "{backend:?}");
    }
}

/// A session with threads, moved from one std thread to the next between
/// invokes, gives the same bytes each time, and those of another session.
#[test]
fn a_session_with_threads_moves_between_threads() {
    let bytes = tflite_common::read_model("mobilebert_squad_1l.tflite");
    let options = Options {
        threads: 3,
        ..Options::default()
    };
    let plan = Arc::new(Plan::new(bytes.as_bytes(), options).unwrap());
    let mut session = Session::new(plan.clone());
    set_inputs(&plan, &mut session);
    let expected = run(
        bytes.as_bytes(),
        Options {
            threads: 1,
            ..options
        },
    )
    .unwrap()
    .0;
    for _ in 0..3 {
        let expected = &expected;
        session = std::thread::scope(|scope| {
            scope
                .spawn(move || {
                    session.invoke().expect("invoke");
                    for (p, bytes) in expected.iter().enumerate() {
                        assert_eq!(session.output(p).unwrap(), &bytes[..]);
                    }
                    session
                })
                .join()
                .unwrap()
        });
    }
}

#[test]
fn zero_threads_is_an_invalid_option() {
    let bytes = tflite_common::read_model("mobilebert_squad_1l.tflite");
    for threads in [0, qneon_runtime::interp::MAX_THREADS + 1] {
        let options = Options {
            threads,
            ..Options::default()
        };
        let error = Plan::new(bytes.as_bytes(), options).unwrap_err();
        assert!(
            matches!(
                error,
                Error::InvalidOption {
                    option: "threads",
                    ..
                }
            ),
            "{error}"
        );
    }
    // More threads than any node has tiles is fine: the rest idle.
    let options = Options {
        threads: 64,
        ..Options::default()
    };
    assert!(Plan::new(bytes.as_bytes(), options).is_ok());
}
