//! The shared bodies of the generated binary-op functions of `binary.rs`.

use qneon::{Backend, Operand, QuantParams};

use crate::choices;
use crate::entry::{
    self, disjoint, guard, handle, input, output, Failure, QneonQuantParams, QneonStatus,
};

/// A binary op's `new`.
type New<T> = fn(
    QuantParams,
    QuantParams,
    QuantParams,
    qneon::FusedActivation,
    qneon::Rounding,
) -> qneon::Result<T>;

/// The shared body of the three `create`s.
pub(super) fn prepare<T>(
    a: QneonQuantParams,
    b: QneonQuantParams,
    output: QneonQuantParams,
    activation: u32,
    rounding: u32,
    new: New<T>,
) -> Result<T, Failure> {
    let activation = choices::activation(activation)?;
    let rounding = choices::rounding(rounding)?;
    Ok(new(
        a.into(),
        b.into(),
        output.into(),
        activation,
        rounding,
    )?)
}

/// An operand of `n` elements along an output of `len`: the whole run, one
/// repeated value, or a repeated row (whose length the library checks).
fn operand(values: &[i8], len: usize) -> Operand<'_> {
    match values {
        v if v.len() == len => Operand::Slice(v),
        [v] => Operand::Scalar(*v),
        v => Operand::Row(v),
    }
}

/// The shared body of the six `run`s.
///
/// # Safety
/// As the `run_broadcast` functions.
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn run<H>(
    op: *const H,
    a: *const i8,
    a_len: usize,
    b: *const i8,
    b_len: usize,
    out: *mut i8,
    len: usize,
    backend: u32,
    f: impl FnOnce(&H, Backend, Operand<'_>, Operand<'_>, &mut [i8]) -> qneon::Result<()>,
) -> QneonStatus {
    guard(|| {
        // SAFETY: forwarded from the caller.
        let op = unsafe { handle(op)? };
        let (a, b, o) = (
            input("a", a, a_len)?,
            input("b", b, b_len)?,
            output("output", out, len)?,
        );
        disjoint(&[a.span, b.span, o.span])?;
        let backend = entry::backend(backend)?;
        // SAFETY: checked, disjoint from the output, valid for their
        // lengths (the caller).
        let (a, b, o) = unsafe { (a.slice(), b.slice(), o.slice()) };
        Ok(f(op, backend, operand(a, len), operand(b, len), o)?)
    })
}
