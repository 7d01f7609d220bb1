//! `qneon_runtime::interp::Interpreter` on any bytes (seeded with the
//! single-op models of `models/ops/`): `analyze`, then `new` under a 1 MiB
//! memory budget in several configurations (both roundings, every
//! activation method, the three kernel sets (XNNPACK's: the convolutions
//! and data movement, every other op refused), every backend), then `set_input`
//! and `invoke`.
//!
//! Never a panic, and nothing allocated past the budget by a declared size
//! (`cargo xtask fuzz` runs this target with a malloc limit, so a large
//! allocation is a crash). A model that loads keeps its promises: the arena
//! and every non-constant tensor within the budget; inputs of the wrong
//! length refused; every output as long as its tensor after `invoke`; the
//! scalar backend and the best give the same bytes.

#![no_main]

use libfuzzer_sys::fuzz_target;
use qneon::{Backend, Method};
use qneon_fuzz::reached;
use qneon_runtime::interp::{Interpreter, Options, Rounding, TfliteKernels};
use qneon_tflite::TensorType;

/// The memory budget: far below libFuzzer's malloc limit.
const BUDGET: usize = 1 << 20;

fuzz_target!(|data: &[u8]| check(data));

/// Loads, fills every input with bytes from `data` and invokes; the
/// outputs, or `None` if the model does not load or run.
fn load_and_run(data: &[u8], options: Options) -> Option<Vec<Vec<u8>>> {
    let mut interpreter = Interpreter::new(data, options).ok()?;
    assert!(
        interpreter.plan().arena_bytes <= BUDGET,
        "an arena of {} bytes under a budget of {BUDGET}",
        interpreter.plan().arena_bytes
    );
    for tensor in interpreter.tensors() {
        if !tensor.constant {
            assert!(
                tensor.bytes <= BUDGET,
                "tensor {} of {} bytes loaded under a budget of {BUDGET}",
                tensor.index,
                tensor.bytes
            );
        }
    }
    let _ = format!("{interpreter:?}");
    let _ = interpreter.nodes().count();
    let inputs: Vec<(usize, TensorType)> = interpreter
        .inputs()
        .iter()
        .map(|t| (t.bytes, t.dtype))
        .collect();
    for (position, &(bytes, dtype)) in inputs.iter().enumerate() {
        assert!(
            interpreter
                .set_input(position, &vec![0u8; bytes + 1])
                .is_err(),
            "input {position} of {bytes} bytes took {}",
            bytes + 1
        );
        // Integer inputs are mostly indices (GATHER): zeros are in range.
        let fill: Vec<u8> = match dtype {
            TensorType::Int32 | TensorType::Int64 => vec![0; bytes],
            _ => (0..bytes)
                .map(|i| {
                    if data.is_empty() {
                        0
                    } else {
                        data[i % data.len()]
                    }
                })
                .collect(),
        };
        // A constant input is refused; any other input of the right length is taken.
        let _ = interpreter.set_input(position, &fill);
    }
    assert!(
        interpreter.set_input(inputs.len(), &[]).is_err(),
        "an input past the last was taken"
    );
    interpreter.invoke().ok()?;
    for node in interpreter.nodes() {
        reached(|| format!("runtime invoked {}", node.op));
    }
    let outputs: Vec<usize> = interpreter.outputs().iter().map(|t| t.bytes).collect();
    Some(
        outputs
            .iter()
            .enumerate()
            .map(|(position, &bytes)| {
                let out = interpreter
                    .output(position)
                    .expect("a listed output has bytes");
                assert_eq!(out.len(), bytes, "output {position}");
                out.to_vec()
            })
            .collect(),
    )
}

fn check(data: &[u8]) {
    let base = Options {
        memory_budget: Some(BUDGET),
        ..Options::default()
    };
    if let Ok(analysis) = Interpreter::analyze(data, base) {
        let _ = format!("{analysis:?}");
    }
    let configurations = [
        (
            Rounding::Single,
            Method::FixedPoint,
            TfliteKernels::Reference,
        ),
        (
            Rounding::Double,
            Method::FixedPoint,
            TfliteKernels::Optimized,
        ),
        (Rounding::Single, Method::Lut, TfliteKernels::Optimized),
        (
            Rounding::Double,
            Method::DequantF32,
            TfliteKernels::Reference,
        ),
        (Rounding::Single, Method::FixedPoint, TfliteKernels::Xnnpack),
    ];
    for (rounding, softmax_method, kernels) in configurations {
        let options = Options {
            rounding,
            softmax_method,
            kernels,
            ..base
        };
        let scalar = load_and_run(
            data,
            Options {
                backend: Backend::Scalar,
                ..options
            },
        );
        let neon = load_and_run(
            data,
            Options {
                backend: Backend::Neon,
                ..options
            },
        );
        let what = format!("{rounding:?} {softmax_method:?} {kernels:?}");
        if Backend::Neon.is_available() {
            assert_eq!(neon, scalar, "{what}: NEON and scalar differ");
        } else {
            // Unavailable: an error at load or invoke, unless nothing ran a
            // kernel; never other bytes.
            assert!(
                neon.is_none() || neon == scalar,
                "{what}: an unavailable backend gave other bytes"
            );
        }
    }
}
