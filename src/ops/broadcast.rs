//! How one operand of a broadcasting binary op (MAXIMUM, MINIMUM, PRELU)
//! appears along one contiguous run of the output: the caller's broadcast
//! walk cuts the output into runs and hands each operand as one of these.

use crate::error::{Error, Result};

/// One operand along a run of `n` output elements.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BroadcastOperand<'a, T> {
    /// One element per output element (`n` of them).
    Slice(&'a [T]),
    /// The same element for every output element.
    Scalar(T),
    /// A run repeated along the output: output element `i` takes
    /// `row[i % row.len()]` (a per-channel operand such as PRELU's alpha);
    /// `n` is a multiple of the row's length.
    Row(&'a [T]),
}

impl<T> BroadcastOperand<'_, T> {
    /// Checks the operand against a run of `n` output elements.
    pub(crate) fn check(&self, op: &'static str, n: usize) -> Result<()> {
        match self {
            BroadcastOperand::Slice(s) if s.len() != n => Err(Error::LengthMismatch {
                op,
                input: s.len(),
                output: n,
            }),
            BroadcastOperand::Row(r) if r.is_empty() || !n.is_multiple_of(r.len()) => {
                Err(Error::RowLength {
                    op,
                    len: n,
                    row: r.len(),
                })
            }
            _ => Ok(()),
        }
    }
}
