//! The `sdot` kernel's 3x3 windows (a kernel row's taps adjacent: width
//! dilation 1) with the ties-upward stage and no left shift, run over as
//! many of a call's output rows as the stack buffer holds at once: each row's input columns are laid out
//! (as [`super::dot`] lays them out: 16 channels x 3 kernel rows and a
//! zero row per column), then one [`dot3::run`] call computes all those
//! rows, its weights and stage loaded once.
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

/// Whether a 3x3 layer of width dilation 1 with dot weights runs this path: its
/// stage ties upward with no left shift, its rows have at most
/// [`dot3::RUNS`] runs of one column class, and a row's columns fit the
/// buffer.
pub(super) fn takes(p: &Packed, f: &Folded, g: &ConvGeometry) -> bool {
    p.stage.right_only
        && !f.runs3.is_empty()
        && (g.output_width - 1) * g.stride_width + 3 <= ENTRIES
}

/// The output rows `rows` of every block of the layer (16 channels, and a
/// last 8), from output row `first` of `output` on (the pair kernel's
/// checks: `input` the whole NHWC tensor of `g`): by chunks of rows whose
/// columns fit the buffer, each chunk's rows found once, then each block
/// laid out and run.
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
    rows: Range<usize>,
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
    let chunk = (ENTRIES * ENTRY / entry / l.count).min(MAX_ROWS);
    let mut buffer = [MaybeUninit::<[i8; ENTRY]>::uninit(); ENTRIES];
    let buf = buffer.as_mut_ptr() as *mut i8;
    // Per row of a chunk: each kernel row's input row offset (`OUTSIDE`
    // outside the image) and the row class's bias offset.
    let mut row_at = [[OUTSIDE; 3]; MAX_ROWS];
    let mut bias_at = [0usize; MAX_ROWS];
    let (mut batch, mut oy) = (rows.start / g.output_height, rows.start % g.output_height);
    let mut r0 = rows.start;
    while r0 < rows.end {
        let r1 = (r0 + chunk).min(rows.end);
        let n = r1 - r0;
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
        if oc >= BLOCK {
            for j in 0..n {
                // SAFETY: row `j`'s `count` columns of 64 bytes are in the
                // buffer (`n <= chunk`).
                unsafe {
                    let dst = buf.add(j * l.count * ENTRY);
                    zero_columns::<4>(dst, l.left);
                    zero_columns::<4>(dst.add((l.left + l.inside) * ENTRY), l.right);
                }
            }
        }
        for c0 in (0..oc).step_by(BLOCK) {
            // SAFETY: the caller's (dotprod, `takes`); `c0 + 16 <= oc` or
            // a last block of 8 (channels are a multiple of 8); the
            // chunk's rows' offsets are rows of `input` (the whole
            // tensor), `out` holds the chunk's rows; the buffer holds
            // `n <= chunk` rows of `count` columns of `entry` bytes (a
            // last block of 8 after blocks of 16 uses less).
            unsafe {
                if oc - c0 >= BLOCK {
                    block::<4>(&l, p, f, input, chunk_rows, buf, out, c0);
                } else {
                    block::<2>(&l, p, f, input, chunk_rows, buf, out, c0);
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
/// caller, a block of 8 writes them), then
/// one [`dot3::run`] (or `run8`, `run8x2`) call for all of them into `out` (the
/// chunk's output rows).
///
/// # Safety
/// The CPU has dotprod; `c0 + 4 N <= l.oc`; each input row offset of `rows`
/// other than [`OUTSIDE`]
/// starts a row of `input`, each bias offset a row class of `f.biases`;
/// `buf` holds `rows.0.len() * l.count` entries of `16 N` bytes (with `N`
/// 4, each row's columns outside the image already zero), `out`
/// `rows.0.len()` output rows.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn block<const N: usize>(
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
    let entry = 16 * N;
    // Every block of a broadcast layer reads input channel 0.
    let ci = if f.broadcast { 0 } else { c0 };
    let wp = f.dot_weights[(c0 / BLOCK) * 3 * ENTRY..][..3 * entry].as_ptr();
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
    let zero_row = [0i8; BLOCK];
    let mut row_bias = [MaybeUninit::<*const i32>::uninit(); MAX_ROWS];
    for (j, (at_j, &bias)) in row_at.iter().zip(bias_at).enumerate() {
        debug_assert!(bias + l.classes <= f.biases.len());
        // SAFETY: the bias offset starts a row class (the caller's), the
        // block's lanes from `c0` within it.
        row_bias[j] = MaybeUninit::new(unsafe { f.biases.as_ptr().add(bias + c0) });
        // Each kernel row's first column read and step per column: rows
        // outside the image read a zero row in place.
        let mut at = [zero_row.as_ptr(); 4];
        let mut step = [0usize; 4];
        for ky in 0..3 {
            let row = at_j[ky];
            if row != OUTSIDE && l.inside > 0 {
                debug_assert!(row + l.in_row <= input.len());
                // SAFETY: `row` starts a row of `input` (the caller's),
                // column `xi < input_width` inside it.
                at[ky] = unsafe { input.as_ptr().add(row + l.xi * l.ic + ci) };
                step[ky] = l.ic;
            }
        }
        // SAFETY: row `j` of the chunk's `count` columns of `entry` bytes
        // is in the buffer (the caller's); the inside columns `xi..xi +
        // inside` are image columns, each kernel row's pointer in a row of
        // the image (or the zero row of 16 bytes, step 0), reading `4 N`
        // bytes from channel `ci` (one with a broadcast layer), within the
        // row; with 8 channels, a pair's 16 bytes are its two inside
        // columns (`2 pairs <= inside`).
        unsafe {
            let dst = buf.add(j * l.count * entry);
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
                let pairs = l.inside / 2;
                lay_out::<3, 4, false>(at, step.map(|s| 2 * s), mid, pairs);
                let at: [*const i8; 4] =
                    core::array::from_fn(|j| at[j].wrapping_add(2 * pairs * step[j]));
                lay_out::<3, 2, false>(at, step, mid.add(pairs * 2 * entry), l.inside % 2);
            } else {
                lay_out3_pairs::<N, false>(at, step, mid, l.inside);
            }
            if N == 2 {
                zero_columns::<N>(dst.add((l.left + l.inside) * entry), l.right);
            }
        }
    }
    // SAFETY: dotprod (the caller's); the weights hold 3 entries of
    // `entry` bytes; each row's biases hold the block's lanes at every
    // run's offset; the stage arrays hold 16 values from `c0`; the runs
    // cover a row's `output_width` pixels, which read the row's laid-out
    // columns (`count` of them) and write their `4 N` bytes within `out`
    // (`c0 + 4 N <= oc`); the row biases written above are initialized.
    unsafe {
        let o = out.as_mut_ptr().add(c0);
        let rb = core::slice::from_raw_parts(row_bias.as_ptr() as *const *const i32, row_at.len());
        if N == 4 {
            dot3::run(wp, &rs, rb, &f.runs3, buf, l.sw, o, l.oc);
        } else if l.oc == 8 && l.sw == 1 {
            // A layer of 8 channels at stride 1: two pixels a step (each
            // row's biases hold 16 lanes per run: a block of 8 repeats its
            // 8 in lanes 8 to 15).
            dot3::run8x2(wp, &rs, rb, &f.runs3, buf, o);
        } else {
            dot3::run8(wp, &rs, rb, &f.runs3, buf, l.sw, o, l.oc);
        }
    }
}
