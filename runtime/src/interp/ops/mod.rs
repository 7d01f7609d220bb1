//! The operators: each family's TFLite `Prepare` (validation against
//! TFLite's rules, multipliers, tables, packed weights) side by side with
//! the kernel `invoke` runs for it, one folder per family.
//!
//! | folder | ops |
//! | --- | --- |
//! | `movement/` | RESHAPE, TRANSPOSE, GATHER, STRIDED_SLICE, PAD, PADV2, CONCATENATION, SPLIT |
//! | `convert/` | CAST, DEQUANTIZE, QUANTIZE |
//! | `activation/` | SOFTMAX, LOG_SOFTMAX, LOGISTIC, TANH |
//! | `fully_connected/` | FULLY_CONNECTED |
//! | `binary/` | ADD, SUB, MUL |
//! | `batch_matmul/` | BATCH_MATMUL |
//! | `conv/` | CONV_2D, DEPTHWISE_CONV_2D |
//! | `pool/` | AVERAGE_POOL_2D, MAX_POOL_2D |
//! | `reduce/` | MEAN |
//! | `elementwise/` | RELU, RELU6, RELU_N1_TO_1, LEAKY_RELU, HARD_SWISH |
//! | `minmax/` | MAXIMUM, MINIMUM |
//! | `prelu/` | PRELU |
//! | `arg_min_max/` | ARG_MAX, ARG_MIN |
//! | `transpose_conv/` | TRANSPOSE_CONV |
//! | `resize/` | RESIZE_NEAREST_NEIGHBOR, RESIZE_BILINEAR |
//! | `svdf/` | SVDF |
//! | `lstm/` | UNIDIRECTIONAL_SEQUENCE_LSTM (integer, with state) |
//!
//! Each family lists the builtin ops it prepares in its `OPS` table
//! ([`Registration`]: op, name, prepare function, the kernel sets whose
//! bytes it reproduces), and [`REGISTRY`] below
//! collects the tables: TFLite Micro's op resolver, built at compile time.
//! A prepared node's kernel is a `Box<dyn Kernel>` ([`kernel`]), so the
//! driving loop, inspect and the profiler never name an op. Adding an op
//! family is a folder and one line in [`REGISTRY`].
//!
//! The families share leaves only: `kernel.rs` (the kernel trait, what a
//! `Prepare` returns, the registration row), `op.rs` (the operator being
//! prepared, TFLite's common checks, the errors), `buffers.rs` (a node's
//! bytes and their typed views), `strided_copy.rs` (the one copy
//! primitive) and `broadcast_walk.rs` (two operands' broadcast as runs for
//! the library's kernels of any element type). The arithmetic of each requantizing op is the library's;
//! the data movement and the float conversions are here.

mod activation;
mod arg_min_max;
mod batch_matmul;
mod binary;
mod broadcast_walk;
mod buffers;
mod conv;
mod convert;
mod elementwise;
mod fully_connected;
mod kernel;
mod lstm;
mod minmax;
mod movement;
pub(super) mod op;
mod pool;
mod prelu;
mod reduce;
mod resize;
mod strided_copy;
mod svdf;
mod transpose_conv;

use qneon_tflite::{Operator, Subgraph};

use crate::error::Result;
use crate::interp::options::Options;

pub use activation::HitSlice;
pub(crate) use activation::{Fused, HitStore};
pub(crate) use buffers::{element_size, Ins, Io, Outs, INLINE};
pub(crate) use kernel::{Columns, Kernel, Nop, PreparedOp, Registration};

/// Every family's table of the builtin ops it prepares.
const REGISTRY: &[&[Registration]] = &[
    movement::OPS,
    convert::OPS,
    activation::OPS,
    fully_connected::OPS,
    binary::OPS,
    batch_matmul::OPS,
    conv::OPS,
    pool::OPS,
    reduce::OPS,
    elementwise::OPS,
    minmax::OPS,
    prelu::OPS,
    arg_min_max::OPS,
    transpose_conv::OPS,
    resize::OPS,
    svdf::OPS,
    lstm::OPS,
];

/// The registration of `operator`'s builtin op, if some family prepares it.
pub(crate) fn registration(operator: &Operator<'_>) -> Option<&'static Registration> {
    let builtin = operator.builtin()?;
    REGISTRY
        .iter()
        .flat_map(|family| family.iter())
        .find(|r| r.op == builtin)
}

/// The name inspect, the profiler and errors give `operator`: its
/// registration's, else TFLite's name of its code.
pub(crate) fn op_name(operator: &Operator<'_>) -> String {
    match registration(operator) {
        Some(r) => r.name.to_string(),
        None => operator.op().to_string(),
    }
}

/// Which arithmetic `operator` takes under `options` (its requantization,
/// its float arithmetic), where its family says so.
pub(crate) fn arithmetic(operator: &Operator<'_>, options: &Options) -> Option<String> {
    let registration = registration(operator)?;
    use crate::interp::options::TfliteKernels;
    let describe = registration.arithmetic?;
    let paths = registration.paths;
    if paths.left_by_xnnpack && options.kernels == TfliteKernels::Xnnpack {
        let builtin = describe(&paths.prepare_options(options), registration.op);
        return Some(format!("left to the builtin kernels by XNNPACK: {builtin}"));
    }
    Some(describe(options, registration.op))
}

/// Prepares `operator` of `graph` with the family that registered its op;
/// a convolution with `pad_fold` reads the PAD's input in its place.
pub(crate) fn prepare(
    graph: &Subgraph<'_>,
    operator: &Operator<'_>,
    options: &Options,
    pad_fold: Option<op::PadFold>,
) -> Result<PreparedOp> {
    let name = op_name(operator);
    let Some(builtin) = operator.builtin() else {
        return Err(crate::error::Error::UnsupportedOp {
            op: name,
            index: operator.index(),
            missing: "custom operators are not supported".to_string(),
        });
    };
    let Some(registration) = registration(operator) else {
        let op = op::Op::new(graph, operator, builtin, &name, options);
        return Err(op.unsupported("no kernel for this operator"));
    };
    let options = registration.paths.prepare_options(options);
    let mut op = op::Op::new(graph, operator, builtin, &name, &options);
    op.pad_fold = pad_fold;
    if !registration.paths.reproduces(options.kernels) {
        // Only XNNPACK lacks ops today: every row reproduces LiteRT's sets.
        return Err(op.unsupported("XNNPACK's arithmetic for this operator is not built yet"));
    }
    (registration.prepare)(&op)
}

/// The fused form of LOGISTIC or SOFTMAX `operator` for a probability
/// threshold (see `activation/thresholded.rs`); `None` for any other op.
pub(crate) fn prepare_thresholded(
    graph: &Subgraph<'_>,
    operator: &Operator<'_>,
    options: &Options,
    threshold: f32,
) -> Option<Result<Fused>> {
    let builtin = operator.builtin()?;
    if !matches!(
        builtin,
        qneon_tflite::BuiltinOp::LOGISTIC | qneon_tflite::BuiltinOp::SOFTMAX
    ) {
        return None;
    }
    let registration = registration(operator)?;
    let name = op_name(operator);
    let options = registration.paths.prepare_options(options);
    let op = op::Op::new(graph, operator, builtin, &name, &options);
    Some(activation::prepare_thresholded(&op, threshold))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_op_is_registered_once_under_tflite_name() {
        let all: Vec<&Registration> = REGISTRY.iter().flat_map(|f| f.iter()).collect();
        for (i, r) in all.iter().enumerate() {
            assert_eq!(r.op.name(), Some(r.name), "{:?}", r.op);
            assert!(
                all[i + 1..].iter().all(|other| other.op != r.op),
                "{} registered twice",
                r.name
            );
        }
        assert!(!all.is_empty());
    }

    #[test]
    fn every_op_reproduces_litert_and_xnnpack_ones_are_marked() {
        use crate::interp::options::TfliteKernels;
        let all: Vec<&Registration> = REGISTRY.iter().flat_map(|f| f.iter()).collect();
        // The refusal in `prepare` names XNNPACK: it must be the only set
        // an op can lack.
        for r in &all {
            assert!(r.paths.reproduces(TfliteKernels::Reference), "{}", r.name);
            assert!(r.paths.reproduces(TfliteKernels::Optimized), "{}", r.name);
        }
        let xnnpack = |name: &str| {
            all.iter()
                .find(|r| r.name == name)
                .is_some_and(|r| r.paths.reproduces(TfliteKernels::Xnnpack))
        };
        // Built XNNPACK arithmetic, pure data movement and the ops the
        // delegate leaves to the builtin kernels prepare under it; ops it
        // takes whose XNNPACK arithmetic is not built do not.
        assert!(xnnpack("CONV_2D") && xnnpack("DEPTHWISE_CONV_2D") && xnnpack("RESHAPE"));
        assert!(xnnpack("FULLY_CONNECTED") && xnnpack("BATCH_MATMUL") && xnnpack("SOFTMAX"));
        assert!(xnnpack("ADD") && xnnpack("SUB") && xnnpack("MUL"));
        assert!(xnnpack("LOGISTIC") && xnnpack("TANH") && xnnpack("QUANTIZE"));
        let left = |name: &str| {
            all.iter()
                .any(|r| r.name == name && r.paths.left_by_xnnpack)
        };
        assert!(left("SOFTMAX") && left("LOG_SOFTMAX") && left("CAST"));
        assert!(!left("FULLY_CONNECTED") && !left("CONV_2D"));
        // Raw comparisons and byte moves are alike in every set; the
        // delegate leaves quantized PRELU and ARG_MAX / ARG_MIN to TFLite.
        assert!(xnnpack("MAXIMUM") && xnnpack("MINIMUM") && xnnpack("PADV2"));
        assert!(!left("MAXIMUM") && left("PRELU") && left("ARG_MAX") && left("ARG_MIN"));
    }
}
