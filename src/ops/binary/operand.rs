//! [`Operand`]: how a binary op sees each input along its output (a run as
//! long as the output, one repeated value, or a repeated row), and the
//! split of the output into rows that every backend shares.

/// One operand of a binary op along its output: a run as long as the
/// output, one value standing for every element, or one row repeated
/// (TFLite's broadcasting without copying the broadcast operand).
#[derive(Clone, Copy, Debug)]
pub enum Operand<'a> {
    /// One element per output element.
    Slice(&'a [i8]),
    /// The same element for every output element.
    Scalar(i8),
    /// A run repeated along the output: output element `i` takes
    /// `row[i % row.len()]` (a row-constant operand such as a per-column
    /// gamma; the output length must be a multiple of the row's).
    Row(&'a [i8]),
}

impl<'a> Operand<'a> {
    /// Elements `start..start + len` of this operand along the output (a
    /// [`Operand::Row`] as the slice of its run that `start` falls on,
    /// `start` a multiple of the row length and `len` at most one row).
    #[inline(always)]
    pub(crate) fn part(self, start: usize, len: usize) -> Operand<'a> {
        match self {
            Operand::Slice(s) => Operand::Slice(&s[start..start + len]),
            Operand::Scalar(v) => Operand::Scalar(v),
            Operand::Row(r) => Operand::Slice(&r[..len]),
        }
    }
}

/// The row length the output is split into: that of a [`Operand::Row`]
/// operand (checked by `check_lengths`: both rows alike), `None` without.
#[inline(always)]
pub(crate) fn row_len(a: Operand<'_>, b: Operand<'_>) -> Option<usize> {
    match (a, b) {
        (Operand::Row(r), _) | (_, Operand::Row(r)) => Some(r.len()),
        _ => None,
    }
}

/// Runs `f` on each row of `output` when an operand is a [`Operand::Row`]
/// (the operands narrowed to that row, both now slices or scalars), or
/// once on the whole output.
#[inline(always)]
pub(crate) fn for_each_row(
    a: Operand<'_>,
    b: Operand<'_>,
    output: &mut [i8],
    mut f: impl FnMut(Operand<'_>, Operand<'_>, &mut [i8]),
) {
    match row_len(a, b) {
        Some(row) if row > 0 => {
            for (k, out) in output.chunks_mut(row).enumerate() {
                let n = out.len();
                f(a.part(k * row, n), b.part(k * row, n), out);
            }
        }
        _ => f(a, b, output),
    }
}
