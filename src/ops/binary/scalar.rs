//! The scalar reference loops of the binary ops: the params' `element` per
//! output, an operand either a run as long as the output or one repeated
//! value.

use super::operand::{for_each_row, Operand};
use super::params::{AddParams, MulParams};

/// Quantized add or subtract (the params say which), element by element:
/// the entry point matching `neon::add`. Slice operands as long as
/// `output` (checked by the caller).
#[inline(always)]
pub(crate) fn add(p: &AddParams, a: Operand<'_>, b: Operand<'_>, output: &mut [i8]) {
    for_each_row(a, b, output, |a, b, o| map(|x, y| p.element(x, y), a, b, o));
}

/// Quantized multiply, element by element: the entry point matching
/// `neon::mul`. Slice operands as long as `output` (checked by the caller).
#[inline(always)]
pub(crate) fn mul(p: &MulParams, a: Operand<'_>, b: Operand<'_>, output: &mut [i8]) {
    for_each_row(a, b, output, |a, b, o| map(|x, y| p.element(x, y), a, b, o));
}

/// `output[i] = f(a[i], b[i])`, a [`Operand::Scalar`] standing for the same
/// value at every `i`; slice lengths were checked by the caller, and rows
/// were split into slices (`for_each_row`).
#[inline(always)]
fn map(f: impl Fn(i8, i8) -> i8, a: Operand<'_>, b: Operand<'_>, output: &mut [i8]) {
    match (a, b) {
        (Operand::Slice(a), Operand::Slice(b)) => {
            for ((o, &x), &y) in output.iter_mut().zip(a).zip(b) {
                *o = f(x, y);
            }
        }
        (Operand::Slice(a), Operand::Scalar(y)) => {
            for (o, &x) in output.iter_mut().zip(a) {
                *o = f(x, y);
            }
        }
        (Operand::Scalar(x), Operand::Slice(b)) => {
            for (o, &y) in output.iter_mut().zip(b) {
                *o = f(x, y);
            }
        }
        (Operand::Scalar(x), Operand::Scalar(y)) => output.fill(f(x, y)),
        (Operand::Row(_), _) | (_, Operand::Row(_)) => {
            debug_assert!(false, "rows are split by the caller");
        }
    }
}
