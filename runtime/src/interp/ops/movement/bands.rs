//! TRANSPOSE and PAD cut into bands of output rows, so that several threads
//! can each write one (issue 29: MobileNetV2's input TRANSPOSE and its PADs
//! were a tenth of its 4-thread critical path, run on one thread).
//!
//! The rows are those of the output's outermost dimension of more than one
//! element: every dimension before it has one element, so a range of its
//! rows is a contiguous range of output bytes. Each band keeps its own
//! copy, planned at load like the whole one (the part of the copy whose
//! destination lies in the band's rows); the whole node still runs the
//! one whole copy, so one thread executes what it did before the bands.

use std::ops::Range;

use qneon::Backend;

use crate::interp::ops::buffers::{output_band, Io};
use crate::interp::ops::kernel::Kernel;
use crate::interp::ops::strided_copy::StridedCopy;

/// Most bands a node is cut into: eight threads with several bands each to
/// share out evenly, and few enough that the plans stay small.
const MAX_BANDS: usize = 64;

/// A copy into an output (PAD: after a fill with the pad value), whole and
/// cut into bands of output rows.
#[derive(Debug)]
pub(crate) struct RowBands {
    /// The whole copy: what a run of every band at once does.
    whole: StridedCopy,
    /// Each band's part of the copy (`None` when no input byte lands in its
    /// rows: PAD's edges) and the output bytes the band covers.
    parts: Vec<(Option<StridedCopy>, Range<usize>)>,
    /// PAD's value, one element's bytes, that fills the band (or the whole
    /// output) before the copy; `None` for a copy that writes every byte.
    fill: Option<Vec<u8>>,
}

impl RowBands {
    /// The bands of an output of shape `output_shape` (elements of `elem`
    /// bytes) written by `whole` after the fill; `part(rows)` is the copy of
    /// the part of `whole` that writes output rows `rows` (of the outermost
    /// dimension of more than one element), `None` when there is none.
    pub(crate) fn new(
        whole: StridedCopy,
        output_shape: &[usize],
        elem: usize,
        fill: Option<Vec<u8>>,
        part: impl Fn(usize, Range<usize>) -> Result<Option<StridedCopy>, String>,
    ) -> Result<RowBands, String> {
        let dim = output_shape.iter().position(|&n| n > 1);
        let (dim, rows) = dim.map_or((0, 1), |d| (d, output_shape[d]));
        let row_bytes = output_shape
            .get(dim + 1..)
            .unwrap_or_default()
            .iter()
            .try_fold(elem, |bytes, &n| bytes.checked_mul(n))
            .ok_or("output size overflows")?;
        let bands = rows.clamp(1, MAX_BANDS);
        let mut parts = Vec::with_capacity(bands);
        if output_shape.is_empty() || output_shape.contains(&0) {
            // Nothing to cut (a scalar or an empty output): one band, the
            // whole copy.
            parts.push((None, 0..0));
        } else {
            for b in 0..bands {
                let band_rows = b * rows / bands..(b + 1) * rows / bands;
                let bytes = band_rows.start * row_bytes..band_rows.end * row_bytes;
                parts.push((part(dim, band_rows)?, bytes));
            }
        }
        Ok(RowBands { whole, parts, fill })
    }
}

impl Kernel for RowBands {
    fn tiles(&self) -> usize {
        self.parts.len()
    }

    fn split(&self) -> Option<usize> {
        (self.parts.len() > 1).then_some(1)
    }

    fn band(&self, tiles: Range<usize>) -> Range<usize> {
        let start = self.parts.get(tiles.start).map(|(_, b)| b.start);
        let end = tiles
            .end
            .checked_sub(1)
            .and_then(|last| self.parts.get(last))
            .map(|(_, b)| b.end);
        match (start, end) {
            (Some(start), Some(end)) if tiles.start < tiles.end => start..end,
            _ => 0..0,
        }
    }

    fn run_tiles(&self, _: Backend, tiles: Range<usize>, io: &mut Io<'_>) -> Result<(), String> {
        let (src, out, base) = (io.ins[0], &mut *io.outs[0], io.out_start);
        if tiles == (0..self.parts.len()) && base == 0 {
            // The whole node: the one copy of before the bands.
            if let Some(fill) = &self.fill {
                fill_with(out, fill);
            }
            self.whole.run(src, out);
            return Ok(());
        }
        let parts = self
            .parts
            .get(tiles.clone())
            .ok_or_else(|| format!("tiles {tiles:?} of {}", self.parts.len()))?;
        for (copy, bytes) in parts {
            if let Some(fill) = &self.fill {
                fill_with(output_band::<u8>(out, base, bytes.clone())?, fill);
            }
            if let Some(copy) = copy {
                copy.run_in_band(src, out, base)?;
            }
        }
        Ok(())
    }
}

/// `output` filled with copies of `pattern` (one element), whole ones only:
/// a memset for one-byte elements, else the pattern then copies of what is
/// already filled, doubling (element by element it cost MobileNetV2's 18
/// PADs 63% of the model's instructions, 32 per element).
pub(crate) fn fill_with(output: &mut [u8], pattern: &[u8]) {
    if let [byte] = pattern {
        output.fill(*byte);
        return;
    }
    let whole = output.len() / pattern.len().max(1) * pattern.len();
    let output = &mut output[..whole];
    if output.is_empty() {
        return;
    }
    output[..pattern.len()].copy_from_slice(pattern);
    let mut filled = pattern.len();
    while filled < output.len() {
        let take = filled.min(output.len() - filled);
        output.copy_within(..take, filled);
        filled += take;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::interp::ops::movement::pad::pad_bands;
    use crate::interp::ops::movement::transpose::transpose_bands;
    use smallvec::smallvec;

    /// Runs `kernel`'s tiles in the ranges `cuts` gives, each into a band
    /// of its own (as threads do) and, separately, in one whole output with
    /// the ranges in reverse order; both must equal the whole run.
    fn check_bands(kernel: &RowBands, src: &[u8], out_len: usize, what: &str) {
        let run = |tiles: Range<usize>, out: &mut [u8], out_start: usize| {
            let mut io = Io {
                ins: smallvec![src],
                outs: smallvec![out],
                scratch: &mut [],
                out_start,
                state: smallvec![],
            };
            kernel.run_tiles(Backend::Scalar, tiles, &mut io).unwrap();
        };
        let mut whole = vec![0xEE; out_len];
        run(0..kernel.tiles(), &mut whole, 0);
        let n = kernel.tiles();
        for shares in [2, 3, 5, 8] {
            let cuts: Vec<Range<usize>> = (0..shares)
                .map(|i| i * n / shares..(i + 1) * n / shares)
                .collect();
            let mut banded = vec![0xEE; out_len];
            for tiles in &cuts {
                let bytes = kernel.band(tiles.clone());
                let mut band = banded[bytes.clone()].to_vec();
                run(tiles.clone(), &mut band, bytes.start);
                banded[bytes].copy_from_slice(&band);
            }
            assert_eq!(banded, whole, "{what}: {shares} bands");
            let mut reversed = vec![0xEE; out_len];
            for tiles in cuts.iter().rev() {
                run(tiles.clone(), &mut reversed, 0);
            }
            assert_eq!(reversed, whole, "{what}: {shares} ranges in reverse");
        }
    }

    #[test]
    fn transpose_bands_equal_the_whole_copy() {
        let cases: [(&[usize], &[usize]); 5] = [
            (&[1, 3, 13, 11], &[0, 2, 3, 1]),
            (&[2, 5, 7], &[2, 0, 1]),
            (&[1, 1, 70, 3], &[0, 1, 3, 2]),
            (&[1, 200, 2], &[0, 2, 1]),
            (&[4], &[0]),
        ];
        for (shape, perm) in cases {
            for elem in [1, 2] {
                let n: usize = shape.iter().product::<usize>() * elem;
                let src: Vec<u8> = (0..n).map(|i| (i * 7 % 251) as u8).collect();
                let out_shape: Vec<usize> = perm.iter().map(|&p| shape[p]).collect();
                let kernel = transpose_bands(shape, perm, &out_shape, elem).unwrap();
                check_bands(&kernel, &src, n, &format!("transpose {shape:?} {perm:?}"));
            }
        }
    }

    #[test]
    fn pad_bands_equal_the_whole_pad() {
        let cases: [(&[usize], &[usize], &[usize]); 4] = [
            (&[1, 5, 6, 3], &[0, 1, 1, 0], &[0, 2, 1, 0]),
            (&[1, 9, 4, 2], &[0, 0, 1, 0], &[0, 1, 0, 0]),
            (&[3, 2], &[2, 0], &[3, 1]),
            (&[1, 1, 1, 8], &[0, 0, 0, 1], &[0, 0, 0, 1]),
        ];
        for (shape, before, after) in cases {
            for pattern in [&[0x55u8][..], &[0x12, 0x34][..]] {
                let elem = pattern.len();
                let out_shape: Vec<usize> = (0..shape.len())
                    .map(|d| shape[d] + before[d] + after[d])
                    .collect();
                let n: usize = shape.iter().product::<usize>() * elem;
                let src: Vec<u8> = (0..n).map(|i| (i * 7 % 251) as u8).collect();
                let out_len = out_shape.iter().product::<usize>() * elem;
                let kernel = pad_bands(shape, before, &out_shape, elem, pattern.to_vec()).unwrap();
                check_bands(
                    &kernel,
                    &src,
                    out_len,
                    &format!("pad {shape:?} {before:?} {after:?} elem {elem}"),
                );
            }
        }
    }

    #[test]
    fn fill_repeats_the_element_over_whole_elements_only() {
        for (len, pattern) in [(7, &[9u8][..]), (10, &[1, 2][..]), (13, &[5, 6, 7, 8][..])] {
            let mut out = vec![0xEE; len];
            fill_with(&mut out, pattern);
            let whole = len / pattern.len() * pattern.len();
            for (i, &b) in out.iter().enumerate() {
                let expected = if i < whole {
                    pattern[i % pattern.len()]
                } else {
                    0xEE
                };
                assert_eq!(b, expected, "{len} {pattern:?} at {i}");
            }
        }
    }
}
