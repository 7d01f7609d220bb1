//! [`Operand`]: how a binary op sees each input along its output (a run as
//! long as the output, one repeated value, or a repeated row), and the
//! split of the output into rows that every backend shares.

use crate::error::{Error, Result};
use core::ops::Range;

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
    /// This operand for the tile `elements` of the output: the tile
    /// contract of the binary ops. A tile of `Add`, `Sub` or `Mul` is a
    /// range of output elements, run with each operand narrowed by this
    /// method and the matching part of the output; tiles give the bytes of
    /// one run, since each output element depends on its operand elements
    /// only. With a [`Operand::Row`] operand a tile is a range of whole
    /// rows (the outer index of the broadcast), so both ends must be
    /// multiples of the row length; a [`Operand::Slice`] is cut to
    /// `elements`; a [`Operand::Scalar`] stays as it is.
    ///
    /// [`Error::Tile`] for a reversed range, a range past a slice's end, or
    /// a row operand's range with an end inside a row.
    pub fn tile(self, elements: Range<usize>) -> Result<Operand<'a>> {
        let bad = |limit, grain| Error::Tile {
            op: "binary operand",
            what: "elements",
            start: elements.start,
            end: elements.end,
            limit,
            grain,
        };
        if elements.start > elements.end {
            return Err(bad(usize::MAX, 1));
        }
        match self {
            Operand::Slice(s) => s
                .get(elements.clone())
                .map(Operand::Slice)
                .ok_or_else(|| bad(s.len(), 1)),
            Operand::Scalar(_) => Ok(self),
            Operand::Row(r) => {
                let whole_rows = !r.is_empty()
                    && elements.start.is_multiple_of(r.len())
                    && elements.end.is_multiple_of(r.len());
                if whole_rows {
                    Ok(self)
                } else {
                    Err(bad(usize::MAX, r.len()))
                }
            }
        }
    }

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
