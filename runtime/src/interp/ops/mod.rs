//! The operators: each family's TFLite `Prepare` (validation against
//! TFLite's rules, multipliers, tables, packed weights) side by side with
//! the kernel `invoke` runs for it.
//!
//! | file | ops |
//! | --- | --- |
//! | `movement/` | RESHAPE, TRANSPOSE, GATHER, STRIDED_SLICE, PAD, CONCATENATION, SPLIT |
//! | `convert.rs` | CAST, DEQUANTIZE, QUANTIZE |
//! | `activation.rs` | SOFTMAX, LOG_SOFTMAX, LOGISTIC, TANH |
//! | `fully_connected.rs` | FULLY_CONNECTED |
//! | `binary.rs` | ADD, SUB, MUL |
//! | `batch_matmul.rs` | BATCH_MATMUL |
//!
//! The families share leaves only: `op.rs` (the operator being prepared,
//! TFLite's common checks, the errors), `buffers.rs` (a node's bytes and
//! their typed views) and `strided_copy.rs` (the one copy primitive).
//!
//! A node's kernel is one variant of the closed enum [`Kernel`] rather than
//! a `Box<dyn Kernel>`: the set of ops is fixed by this runtime, a `match`
//! dispatches without a vtable, and inspect and the profiler can name every
//! kind. The arithmetic of each requantizing op is the library's (the
//! [`binary::ElementwiseInt8`] adapter is where the library's binary
//! kernels plug in); the data movement and the float conversions are here.

mod activation;
mod batch_matmul;
mod binary;
mod buffers;
mod convert;
mod fully_connected;
mod movement;
mod op;
mod strided_copy;

use qneon::Backend;
use qneon_tflite::{BuiltinOp, Model, Operator, Subgraph};

use crate::error::Result;
use crate::interp::options::Options;
use activation::Activation;
use batch_matmul::BatchMatMul;
use binary::Binary;
use convert::Convert;
use fully_connected::FullyConnected;
use movement::concat_split::{self, Concat, Split};
use movement::gather::{self, Gather};
use movement::pad::{self, Pad};
use movement::{reshape, strided_slice, transpose};
use strided_copy::StridedCopy;

use buffers::view;

pub(crate) use buffers::{element_size, Io};
pub(crate) use op::PreparedOp;

/// A prepared node's kernel.
#[derive(Debug)]
pub(crate) enum Kernel {
    /// Nothing to do: the output shares its input's bytes (an aliased
    /// RESHAPE), or the operator did not prepare (never run: `new` refuses
    /// such a model).
    Nop,
    /// Input 0 to output 0 through a planned copy (TRANSPOSE,
    /// STRIDED_SLICE).
    Copy(StridedCopy),
    /// PAD: fill with one element's bytes, then copy the interior.
    Pad(Pad),
    /// GATHER: params input 0, int32 indices input 1.
    Gather(Gather),
    /// CONCATENATION: input `i` through copy `i` into output 0.
    Concat(Concat),
    /// SPLIT: the data (input 1) through copy `i` into output `i`.
    Split(Split),
    /// CAST, DEQUANTIZE, QUANTIZE.
    Convert(Convert),
    /// An activation of the library.
    Activation(Box<Activation>),
    /// FULLY_CONNECTED through the library's GEMM.
    FullyConnected(FullyConnected),
    /// A binary int8 element-wise op.
    Binary(Binary),
    /// BATCH_MATMUL through the library's product of run-time operands.
    BatchMatMul(BatchMatMul),
}

impl Kernel {
    /// Runs the kernel on its buffers; an error (a message) only for data
    /// TFLite would refuse at run time too (a GATHER index out of range).
    pub(crate) fn run(&self, backend: Backend, io: Io<'_>) -> Result<(), String> {
        let Io {
            ins,
            mut outs,
            scratch,
        } = io;
        match self {
            Kernel::Nop => {}
            Kernel::Copy(copy) => copy.run(ins[0], outs[0]),
            Kernel::Pad(pad) => pad.run(ins[0], outs[0]),
            Kernel::Gather(gather) => gather.run(ins[0], view(ins[1])?, outs[0])?,
            Kernel::Concat(concat) => concat.run(&ins, outs[0]),
            Kernel::Split(split) => split.run(ins[1], &mut outs),
            Kernel::Convert(convert) => convert.run(ins[0], outs[0])?,
            Kernel::Activation(activation) => activation.run(backend, ins[0], outs[0])?,
            Kernel::FullyConnected(fc) => fc.run(backend, ins[0], outs[0])?,
            Kernel::Binary(binary) => binary.run(backend, ins[0], ins[1], scratch, outs[0])?,
            Kernel::BatchMatMul(matmul) => matmul.run(backend, ins[0], ins[1], scratch, outs[0])?,
        }
        Ok(())
    }
}

/// Prepares `operator` of `graph`: the family's `Prepare`, its kernel
/// wrapped into the node's.
pub(crate) fn prepare(
    _model: &Model<'_>,
    graph: &Subgraph<'_>,
    operator: &Operator<'_>,
    options: &Options,
) -> Result<PreparedOp<Kernel>> {
    let op = op::Op::new(graph, operator, options);
    let Some(builtin) = operator.builtin() else {
        return Err(op.unsupported("custom operators are not supported"));
    };
    match builtin {
        BuiltinOp::RESHAPE => Ok(reshape::prepare(&op)?.map(|()| Kernel::Nop)),
        BuiltinOp::TRANSPOSE => Ok(transpose::prepare(&op)?.map(Kernel::Copy)),
        BuiltinOp::GATHER => Ok(gather::prepare(&op)?.map(Kernel::Gather)),
        BuiltinOp::STRIDED_SLICE => Ok(strided_slice::prepare(&op)?.map(Kernel::Copy)),
        BuiltinOp::PAD => Ok(pad::prepare(&op)?.map(Kernel::Pad)),
        BuiltinOp::CONCATENATION => {
            Ok(concat_split::prepare_concatenation(&op)?.map(Kernel::Concat))
        }
        BuiltinOp::SPLIT => Ok(concat_split::prepare_split(&op)?.map(Kernel::Split)),
        BuiltinOp::CAST | BuiltinOp::DEQUANTIZE | BuiltinOp::QUANTIZE => {
            Ok(convert::prepare(&op, builtin)?.map(Kernel::Convert))
        }
        BuiltinOp::SOFTMAX | BuiltinOp::LOG_SOFTMAX | BuiltinOp::LOGISTIC | BuiltinOp::TANH => {
            Ok(activation::prepare(&op, builtin)?.map(|a| Kernel::Activation(Box::new(a))))
        }
        BuiltinOp::FULLY_CONNECTED => {
            Ok(fully_connected::prepare(&op)?.map(Kernel::FullyConnected))
        }
        BuiltinOp::ADD | BuiltinOp::SUB | BuiltinOp::MUL => {
            Ok(binary::prepare(&op, builtin)?.map(Kernel::Binary))
        }
        BuiltinOp::BATCH_MATMUL => Ok(batch_matmul::prepare(&op)?.map(Kernel::BatchMatMul)),
        _ => Err(op.unsupported("no kernel for this operator")),
    }
}
