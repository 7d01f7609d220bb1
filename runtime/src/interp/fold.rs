//! A PAD folded into the convolution that reads it.
//!
//! Converters write a convolution's padding as a PAD (or PADV2) before a
//! VALID CONV_2D or DEPTHWISE_CONV_2D (MobileNetV2's PyTorch export: 18 of
//! them, 1.9% of its instructions, and a padded copy of every activation
//! they pad). An int8 PAD fills with the zero point, and a convolution
//! subtracts the input zero point from every tap, so a padded tap adds 0
//! to the accumulator, exactly what a tap outside the image adds when the
//! convolution pads by itself: the convolution can read the PAD's input
//! with the PAD's rows and columns added to its own padding, same
//! accumulators, same bytes, in each kernel path (the requantization a path
//! picks from the layer's shape is still picked from the shape TFLite
//! sees). The PAD then runs nothing and its output takes no memory.
//!
//! Folded only where nothing else can see the difference, and only into
//! the ops where it pays ([`FOLDS_INTO`]): the padded
//! tensor is read by the convolution's input alone and is no model input
//! or output; the PAD pads height and width only, with the zero point
//! (PAD of int8, or PADV2 whose constant value is the zero point) and
//! equal quantization on both sides. Anything else runs as written.

use qneon_tflite::{BuiltinOp, Operator, Subgraph, TensorType};

use super::ops::op::{Op, PadFold};
use super::options::Options;

/// The ops a PAD folds into. Not CONV_2D for now, although the bytes
/// would be the same: its im2col gather pays more for padded windows than
/// the PAD costs (MobileNetV2's first layer under `-cpu neoverse-n1`:
/// +433 K instructions in the CONV_2D for 28 K saved in its PAD; with the
/// small-window panel rows, `conv/patch_rows.rs`, +41 K for 42 K: even),
/// where the depthwise kernels take the padding at almost no cost (its 17
/// depthwise layers: -780 K in the PADs, +50 K in the layers).
const FOLDS_INTO: [BuiltinOp; 1] = [BuiltinOp::DEPTHWISE_CONV_2D];

/// For each operator position, the PAD its input 0 may fold ([`PadFold`]),
/// for the convolutions ([`FOLDS_INTO`]) that qualify.
pub(crate) fn pad_folds(graph: &Subgraph<'_>, options: &Options) -> Vec<Option<PadFold>> {
    let operators = graph.operators();
    let count = graph.tensors().len();
    // Who writes each tensor, and how many operator inputs read it.
    let mut producer = vec![None; count];
    let mut readers = vec![0usize; count];
    for (position, operator) in operators.iter().enumerate() {
        for &t in operator.outputs().iter().flatten() {
            if t < count {
                producer[t] = Some(position);
            }
        }
        for &t in operator.inputs().iter().flatten() {
            if t < count {
                readers[t] += 1;
            }
        }
    }
    operators
        .iter()
        .enumerate()
        .map(|(position, conv)| {
            if !FOLDS_INTO.contains(&conv.builtin()?) {
                return None;
            }
            let padded = (*conv.inputs().first()?)?;
            let pad = producer.get(padded).copied().flatten()?;
            let seen = graph.inputs().contains(&padded) || graph.outputs().contains(&padded);
            if pad >= position || readers[padded] != 1 || seen {
                return None;
            }
            fold(graph, &operators[pad], options).map(|(source, rows, columns)| PadFold {
                pad,
                source,
                rows,
                columns,
            })
        })
        .collect()
}

/// The PAD `operator`'s input and its (before, after) rows and columns,
/// if it pads an int8 image's height and width with its zero point.
fn fold(
    graph: &Subgraph<'_>,
    operator: &Operator<'_>,
    options: &Options,
) -> Option<(usize, [usize; 2], [usize; 2])> {
    let builtin = operator.builtin()?;
    if !matches!(builtin, BuiltinOp::PAD | BuiltinOp::PADV2) {
        return None;
    }
    let op = Op::new(graph, operator, builtin, "PAD", options);
    let (input, output) = (op.input(0).ok()?, op.output(0).ok()?);
    if input.dtype() != TensorType::Int8 || output.dtype() != TensorType::Int8 {
        return None;
    }
    let (in_q, out_q) = (
        op.per_tensor(input, "input").ok()?,
        op.per_tensor(output, "output").ok()?,
    );
    if in_q != out_q || input.is_variable() || output.is_variable() {
        return None;
    }
    let p = op.constant_ints(op.input(1).ok()?, "paddings").ok()?;
    let [0, 0, top, bottom, left, right, 0, 0] = p[..] else {
        return None;
    };
    let pads = [top, bottom, left, right].map(|v| usize::try_from(v).ok());
    let [Some(top), Some(bottom), Some(left), Some(right)] = pads else {
        return None;
    };
    let (s, o) = (input.shape(), output.shape());
    let expected = [
        s.first()?,
        &s.get(1)?.checked_add(top)?.checked_add(bottom)?,
        &s.get(2)?.checked_add(left)?.checked_add(right)?,
        s.get(3)?,
    ];
    if s.len() != 4 || o.len() != 4 || (0..4).any(|d| o[d] != *expected[d]) {
        return None;
    }
    if builtin == BuiltinOp::PADV2 {
        let value = op.input(2).ok()?;
        let same_q = op.per_tensor(value, "constant value").ok()? == out_q;
        let zero_point = [out_q.zero_point as i8 as u8];
        if !value.is_constant() || !same_q || value.data()? != &zero_point[..] {
            return None;
        }
    }
    Some((op.input(0).ok()?.index(), [top, bottom], [left, right]))
}
