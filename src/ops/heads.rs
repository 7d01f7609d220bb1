//! The attention-head transposes: [`split_heads`] turns `[seq, heads * head_dim]` into
//! `[heads, seq, head_dim]`, [`merge_heads`] back.

use crate::checks::check_length;
use crate::error::{Error, Result};

fn check_heads(
    op: &'static str,
    input: usize,
    output: usize,
    seq: usize,
    heads: usize,
    head_dim: usize,
) -> Result<()> {
    if heads == 0 {
        return Err(Error::ZeroDimension { op, what: "heads" });
    }
    if head_dim == 0 {
        return Err(Error::ZeroDimension {
            op,
            what: "head_dim",
        });
    }
    let len = seq.checked_mul(heads).and_then(|x| x.checked_mul(head_dim));
    check_length(op, "input", len, input)?;
    check_length(op, "output", len, output)
}

/// `[seq, heads * head_dim]` (row-major) to `[heads, seq, head_dim]`: the
/// per-head layout attention multiplies. Errors if `heads` or `head_dim` is 0
/// or a length is not `seq * heads * head_dim`.
pub fn split_heads<T: Copy>(
    input: &[T],
    output: &mut [T],
    seq: usize,
    heads: usize,
    head_dim: usize,
) -> Result<()> {
    check_heads(
        "split_heads",
        input.len(),
        output.len(),
        seq,
        heads,
        head_dim,
    )?;
    if seq == 0 {
        // Nothing to move; `heads * head_dim` may not even fit a usize.
        return Ok(());
    }
    for (s, row) in input.chunks_exact(heads * head_dim).enumerate() {
        for (h, piece) in row.chunks_exact(head_dim).enumerate() {
            let at = (h * seq + s) * head_dim;
            output[at..at + head_dim].copy_from_slice(piece);
        }
    }
    Ok(())
}

/// `[heads, seq, head_dim]` back to `[seq, heads * head_dim]`, the inverse of
/// [`split_heads`]. Errors as it does.
pub fn merge_heads<T: Copy>(
    input: &[T],
    output: &mut [T],
    seq: usize,
    heads: usize,
    head_dim: usize,
) -> Result<()> {
    check_heads(
        "merge_heads",
        input.len(),
        output.len(),
        seq,
        heads,
        head_dim,
    )?;
    if seq == 0 {
        // Nothing to move; `heads * head_dim` may not even fit a usize.
        return Ok(());
    }
    for (s, row) in output.chunks_exact_mut(heads * head_dim).enumerate() {
        for (h, piece) in row.chunks_exact_mut(head_dim).enumerate() {
            let at = (h * seq + s) * head_dim;
            piece.copy_from_slice(&input[at..at + head_dim]);
        }
    }
    Ok(())
}
