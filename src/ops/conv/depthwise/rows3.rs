//! The `sdot` kernel's 3x3 windows (a kernel row's taps adjacent: width
//! dilation 1) with the ties-upward stage and no left shift, run over as
//! many of a call's output rows as the stack buffer holds at once: each row's input columns are laid out
//! (as [`super::dot`] lays them out: 16 channels x 3 kernel rows and a
//! zero row per column), then one [`dot3::run`] call computes all those
//! rows, its weights and stage loaded once. At stride and dilation 1 in
//! height two neighbouring output rows share one layout of their four
//! input rows, run with the weights and with the weights one row lower
//! (`block`): one layout per two rows.
//!
//! Small images are where this pays: person_detect's 6x6 layers have 6
//! pixels a row, on which the generic driver's per-row work (the row's
//! taps and class, the pass's edge columns, the asm loop's set-up)
//! cost about as much as the pixels' products. Here the per-call work
//! (column runs, edge columns) is prepared at `new()` or once per call,
//! each row's input rows and bias class once per call for all blocks, and
//! a row of a block costs its 3 row pointers, its layout and 6
//! instructions of the asm loop.

use core::mem::MaybeUninit;
use core::ops::Range;

use super::super::geometry::ConvGeometry;
use super::dot::{lay_out, lay_out3_pairs, zero_columns, ENTRIES, ENTRY};
use super::dot3;
use super::folded::Folded;
use super::narrow::RunStage;
use super::pack::{Packed, BLOCK};

/// A kernel row outside the image (no input row offset).
const OUTSIDE: usize = usize::MAX;

/// Rows per asm call at most (the stack arrays of a chunk's rows).
const MAX_ROWS: usize = 32;

/// Rows of a chunk from which row pairs share their layouts (see
/// `block`).
const PAIRS_FROM: usize = 8;

/// Whether a 3x3 layer of width dilation 1 with dot weights runs this path: its
/// stage ties upward with no left shift, its rows have at most
/// [`dot3::RUNS`] runs of one column class, and a row's columns fit the
/// buffer.
pub(super) fn takes(p: &Packed, f: &Folded, g: &ConvGeometry) -> bool {
    p.stage.right_only
        && !f.runs3.is_empty()
        && (g.output_width - 1) * g.stride_width + 3 <= ENTRIES
}

/// The output rows `rows` of the layer's blocks `blocks` (of 16 channels,
/// and a last 8), from output row `first` of `output` on (the pair
/// kernel's checks: `input` the whole NHWC tensor of `g`): by chunks of
/// rows whose columns fit the buffer, each chunk's rows found once, then
/// each block laid out and run.
///
/// # Safety
/// The CPU has the dotprod extension; the layer is 3x3 of width dilation
/// 1 and [`takes`] it, `f` holds the layer's dot weights.
#[target_feature(enable = "dotprod")]
#[inline(never)]
pub(super) unsafe fn depthwise_rows(
    p: &Packed,
    f: &Folded,
    g: &ConvGeometry,
    input: &[i8],
    output: &mut [i8],
    first: usize,
    (rows, blocks): (Range<usize>, Range<usize>),
) {
    debug_assert!(takes(p, f, g));
    debug_assert!(g.kernel_height == 3 && g.kernel_width == 3 && g.dilation_width == 1);
    let l = Layer::new(f, g);
    // The row offsets below are within `input` (the blocks read it
    // unchecked).
    assert!(rows.end <= g.batch * g.output_height && g.batch * l.in_image <= input.len());
    let oc = g.output_channels;
    let out_row = g.output_width * oc;
    // Rows per chunk: of 64-byte entries, or 32-byte ones in a layer of
    // one block of 8.
    let entry = if oc >= BLOCK { ENTRY } else { ENTRY / 2 };
    // Laid-out rows the buffer holds: one per output row, or with row
    // pairs (`Folded::dot_weights_low`) one per two.
    let layouts = ENTRIES * ENTRY / entry / l.count;
    let pairs = !f.dot_weights_low.is_empty();
    let chunk = if pairs { 2 * layouts } else { layouts }.min(MAX_ROWS);
    let mut buffer = [MaybeUninit::<[i8; ENTRY]>::uninit(); ENTRIES];
    let buf = buffer.as_mut_ptr() as *mut i8;
    // Per row of a chunk: each kernel row's input row offset (`OUTSIDE`
    // outside the image) and the row class's bias offset.
    let mut row_at = [[OUTSIDE; 3]; MAX_ROWS];
    let mut bias_at = [0usize; MAX_ROWS];
    let (mut batch, mut oy) = (rows.start / g.output_height, rows.start % g.output_height);
    let mut r0 = rows.start;
    while r0 < rows.end {
        // A pair's rows are in one image: its lower row's kernel rows are
        // the upper row's one input row down.
        let image_end = if pairs {
            (r0 / g.output_height + 1) * g.output_height
        } else {
            usize::MAX
        };
        let r1 = (r0 + chunk).min(rows.end).min(image_end);
        let n = r1 - r0;
        // Pairs save a layout per two rows but cost each block a second
        // asm call (its weights and stage loaded again): worth it from 8
        // rows a chunk (person_detect's 6x6 and 3x3 layers gained nothing
        // or lost), and needed when the buffer holds fewer layouts.
        let paired = pairs && (n >= PAIRS_FROM || n > layouts);
        let laid = if paired { n.div_ceil(2) } else { n };
        for j in 0..n {
            let y0 = (oy * g.stride_height) as isize - g.pad_top as isize;
            for (ky, at) in row_at[j].iter_mut().enumerate() {
                let iy = y0 + (ky * g.dilation_height) as isize;
                *at = if iy >= 0 && (iy as usize) < g.input_height {
                    batch * l.in_image + iy as usize * l.in_row
                } else {
                    OUTSIDE
                };
            }
            bias_at[j] = f.row_class[oy] as usize * l.classes;
            oy += 1;
            if oy == g.output_height {
                (batch, oy) = (batch + 1, 0);
            }
        }
        let out = &mut output[(r0 - first) * out_row..(r1 - first) * out_row];
        let chunk_rows = (&row_at[..n], &bias_at[..n]);
        // The blocks of 16 lay out each row's columns at the same places:
        // their zero columns outside the image are written once per chunk
        // (a last block of 8, with its shorter entries, writes its own).
        debug_assert!(!paired || (0..n / 2).all(|q| row_at[2 * q + 1][..2] == row_at[2 * q][1..]));
        if oc >= BLOCK {
            for j in 0..laid {
                // SAFETY: layout `j`'s `count` columns of 64 bytes are in
                // the buffer (`laid <= layouts`).
                unsafe {
                    let dst = buf.add(j * l.count * ENTRY);
                    zero_columns::<4>(dst, l.left);
                    zero_columns::<4>(dst.add((l.left + l.inside) * ENTRY), l.right);
                }
            }
        }
        for c0 in (blocks.start * BLOCK..oc.min(blocks.end * BLOCK)).step_by(BLOCK) {
            // SAFETY: the caller's (dotprod, `takes`); `c0 + 16 <= oc` or
            // a last block of 8 (channels are a multiple of 8); the
            // chunk's rows' offsets are rows of `input` (the whole
            // tensor), `out` holds the chunk's rows; the buffer holds
            // `laid <= layouts` layouts of `count` columns of `entry`
            // bytes (a last block of 8 after blocks of 16 uses less).
            unsafe {
                match (oc - c0 >= BLOCK, paired) {
                    (true, false) => block::<4, false>(&l, p, f, input, chunk_rows, buf, out, c0),
                    (true, true) => block::<4, true>(&l, p, f, input, chunk_rows, buf, out, c0),
                    (false, false) => block::<2, false>(&l, p, f, input, chunk_rows, buf, out, c0),
                    (false, true) => block::<2, true>(&l, p, f, input, chunk_rows, buf, out, c0),
                }
            }
        }
        r0 = r1;
    }
}

/// What every block's rows share, found once per call.
struct Layer {
    ic: usize,
    oc: usize,
    out_width: usize,
    in_row: usize,
    in_image: usize,
    sw: usize,
    /// Columns laid out per row; of them, zeros left of the image, the
    /// image's columns from `xi`, zeros right of it.
    count: usize,
    left: usize,
    xi: usize,
    inside: usize,
    right: usize,
    /// Biases per row class.
    classes: usize,
}

impl Layer {
    fn new(f: &Folded, g: &ConvGeometry) -> Layer {
        let count = (g.output_width - 1) * g.stride_width + 3;
        // Each row's input columns `x0..x0 + count` (the same in every row).
        let x0 = -(g.pad_left as isize);
        let left = g.pad_left.min(count);
        let xi = (x0 + left as isize) as usize;
        let end = (x0 + count as isize).min(g.input_width as isize).max(0) as usize;
        let inside = end.saturating_sub(xi);
        Layer {
            ic: g.input_channels,
            oc: g.output_channels,
            out_width: g.output_width,
            in_row: g.input_width * g.input_channels,
            in_image: g.input_height * g.input_width * g.input_channels,
            sw: g.stride_width,
            count,
            left,
            xi,
            inside,
            right: count - left - inside,
            classes: f.column_classes * f.padded,
        }
    }
}

/// One chunk of rows of the block of `4 N` channels (16 or a last 8) from
/// `c0`: each row's columns laid out at `buf`, one after the other (a
/// block of 16 finds the zero columns outside the image written by the
/// caller, a block of 8 writes them), then one [`dot3::run`] (or `run8`,
/// `run8x2`) call for all of them into `out` (the chunk's output rows).
///
/// With `PAIRS`, rows `2q` and `2q + 1` share layout `q`: their four input
/// rows (the upper row's three kernel rows and the lower row's last) as
/// the four bytes of each channel's column entry, where a single row's
/// layout has its three and a zero. The upper rows run with the block's
/// weights (zero for the fourth byte), then the lower rows with
/// `dot_weights_low` (zero for the first), each call writing every other
/// output row: one layout per two rows, the same products and sums.
///
/// # Safety
/// The CPU has dotprod; `c0 + 4 N <= l.oc`; each input row offset of `rows`
/// other than [`OUTSIDE`]
/// starts a row of `input`, each bias offset a row class of `f.biases`;
/// with `PAIRS` each odd row's first two kernel rows are the row before's
/// last two and `f.dot_weights_low` is not empty;
/// `buf` holds `rows.0.len()` (with `PAIRS` half of it, rounded up)
/// layouts of `l.count` entries of `16 N` bytes (with `N` 4, each one's
/// columns outside the image already zero), `out` `rows.0.len()` output
/// rows.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn block<const N: usize, const PAIRS: bool>(
    l: &Layer,
    p: &Packed,
    f: &Folded,
    input: &[i8],
    (row_at, bias_at): (&[[usize; 3]], &[usize]),
    buf: *mut i8,
    out: &mut [i8],
    c0: usize,
) {
    debug_assert!(c0 + 4 * N <= l.oc && row_at.len() == bias_at.len());
    let n = row_at.len();
    let laid = if PAIRS { n.div_ceil(2) } else { n };
    let entry = 16 * N;
    // Every block of a broadcast layer reads input channel 0.
    let ci = if f.broadcast { 0 } else { c0 };
    let at_weights = (c0 / BLOCK) * 3 * ENTRY;
    let wp = f.dot_weights[at_weights..][..3 * entry].as_ptr();
    let rs = RunStage {
        multiplier: p.stage.multiplier[c0..c0 + BLOCK].as_ptr(),
        neg_right_shift: p.stage.neg_right_shift[c0..c0 + BLOCK].as_ptr(),
        zero_point: p.stage.zero_point,
        act_min: p.stage.act_min,
        act_max: p.stage.act_max,
    };
    // Each run's bias offset plus the block's lanes is within a row
    // class's biases (`runs3` offsets are `class * padded`).
    debug_assert!(f.runs3.iter().all(|&[at, _]| at + c0 + 4 * N <= l.classes));
    // Each row's biases from the block's lanes; with pairs the upper rows'
    // first (`0..laid`), then the lower rows' (`laid..n`).
    let mut row_bias = [MaybeUninit::<*const i32>::uninit(); MAX_ROWS];
    for (j, &bias) in bias_at.iter().enumerate() {
        debug_assert!(bias + l.classes <= f.biases.len());
        let slot = match (PAIRS, j % 2) {
            (false, _) => j,
            (true, 0) => j / 2,
            (true, _) => laid + j / 2,
        };
        // SAFETY: the bias offset starts a row class (the caller's), the
        // block's lanes from `c0` within it.
        row_bias[slot] = MaybeUninit::new(unsafe { f.biases.as_ptr().add(bias + c0) });
    }
    let zero_row = [0i8; BLOCK];
    for q in 0..laid {
        // The layout's input rows: a row's three kernel rows, with pairs
        // and a lower row the lower row's last as the fourth.
        let top = if PAIRS { 2 * q } else { q };
        let mut kernel_rows = [OUTSIDE; 4];
        kernel_rows[..3].copy_from_slice(&row_at[top]);
        if PAIRS && top + 1 < n {
            kernel_rows[3] = row_at[top + 1][2];
        }
        // Each input row's first column read and step per column: rows
        // outside the image read a zero row in place.
        let mut at = [zero_row.as_ptr(); 4];
        let mut step = [0usize; 4];
        for (ky, &row) in kernel_rows.iter().enumerate() {
            if row != OUTSIDE && l.inside > 0 {
                debug_assert!(row + l.in_row <= input.len());
                // SAFETY: `row` starts a row of `input` (the caller's),
                // column `xi < input_width` inside it.
                at[ky] = unsafe { input.as_ptr().add(row + l.xi * l.ic + ci) };
                step[ky] = l.ic;
            }
        }
        // SAFETY: layout `q`'s `count` columns of `entry` bytes are in the
        // buffer (the caller's); the inside columns `xi..xi + inside` are
        // image columns, each input row's pointer in a row of the image
        // (or the zero row of 16 bytes, step 0), reading `4 N` bytes from
        // channel `ci` (one with a broadcast layer), within the row; with
        // 8 channels, a pair's 16 bytes are its two inside columns (`2
        // pairs <= inside`).
        unsafe {
            let dst = buf.add(q * l.count * entry);
            if N == 2 {
                zero_columns::<N>(dst, l.left);
            }
            let mid = dst.add(l.left * entry);
            if f.broadcast {
                lay_out3_pairs::<N, true>(at, step, mid, l.inside);
            } else if N == 2 && l.ic == 8 {
                // A layer of 8 channels: two neighbouring columns are 16
                // bytes of an input row, and one `st4` of such 16-byte
                // rows writes their two 32-byte laid-out columns after
                // each other (the 16-channel layout's loop at twice the
                // step), half the loop's instructions per column; an odd
                // last column as 8 bytes.
                let two = l.inside / 2;
                let odd: [*const i8; 4] =
                    core::array::from_fn(|j| at[j].wrapping_add(2 * two * step[j]));
                let odd_dst = mid.add(two * 2 * entry);
                if PAIRS {
                    lay_out::<4, 4, false>(at, step.map(|s| 2 * s), mid, two);
                    lay_out::<4, 2, false>(odd, step, odd_dst, l.inside % 2);
                } else {
                    lay_out::<3, 4, false>(at, step.map(|s| 2 * s), mid, two);
                    lay_out::<3, 2, false>(odd, step, odd_dst, l.inside % 2);
                }
            } else if PAIRS {
                lay_out::<4, N, false>(at, step, mid, l.inside);
            } else {
                lay_out3_pairs::<N, false>(at, step, mid, l.inside);
            }
            if N == 2 {
                zero_columns::<N>(dst.add((l.left + l.inside) * entry), l.right);
            }
        }
    }
    // SAFETY: dotprod (the caller's); the weights (and with pairs the low
    // weights, as long) hold 3 entries of `entry` bytes; each row's biases
    // hold the block's lanes at every run's offset; the stage arrays hold
    // 16 values from `c0`; the runs cover a row's `output_width` pixels,
    // which read their layout's columns (`count` of them) and write their
    // `4 N` bytes within `out` (`c0 + 4 N <= oc`; with pairs every other
    // row from the first or the second: `laid` and `n - laid` rows); the
    // row biases written above are initialized (`n` of them).
    unsafe {
        let o = out.as_mut_ptr().add(c0);
        let rb = core::slice::from_raw_parts(row_bias.as_ptr() as *const *const i32, n);
        let (x, sw, oc) = (buf as *const i8, l.sw, l.oc);
        // A macro, not a closure: the asm needs the caller's dotprod.
        macro_rules! run {
            ($w:expr, $rows:expr, $o:expr, $skip:expr) => {
                if N == 4 {
                    dot3::run($w, &rs, $rows, &f.runs3, x, sw, $o, oc, $skip);
                } else if oc == 8 && sw == 1 {
                    // A layer of 8 channels at stride 1: two pixels a step
                    // (each row's biases hold 16 lanes per run: a block of
                    // 8 repeats its 8 in lanes 8 to 15).
                    dot3::run8x2($w, &rs, $rows, &f.runs3, x, $o, $skip);
                } else {
                    dot3::run8($w, &rs, $rows, &f.runs3, x, sw, $o, oc, $skip);
                }
            };
        }
        if PAIRS {
            let out_row = l.out_width * oc;
            let low = f.dot_weights_low[at_weights..][..3 * entry].as_ptr();
            run!(wp, &rb[..laid], o, out_row);
            if n > laid {
                run!(low, &rb[laid..], o.add(out_row), out_row);
            }
        } else {
            run!(wp, rb, o, 0);
        }
    }
}
