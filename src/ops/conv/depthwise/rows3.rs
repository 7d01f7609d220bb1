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
//! and a row costs its 3 row pointers, its layout and 6 instructions of
//! the asm loop.

use core::mem::MaybeUninit;
use core::ops::Range;

use super::super::geometry::ConvGeometry;
use super::dot::{lay_out, zero_columns, ENTRIES, ENTRY};
use super::dot3::{self, RunStage};
use super::folded::Folded;
use super::pack::{Packed, BLOCK};

/// Rows per asm call at most (the row biases' stack array).
const MAX_ROWS: usize = 64;

/// Whether a 3x3 layer of width dilation 1 with dot weights runs this path: its
/// stage ties upward with no left shift, its rows have at most
/// [`dot3::RUNS`] runs of one column class, and a row's columns fit the
/// buffer.
pub(super) fn takes(p: &Packed, f: &Folded, g: &ConvGeometry) -> bool {
    p.stage.right_only
        && !f.runs3.is_empty()
        && (g.output_width - 1) * g.stride_width + 3 <= ENTRIES
}

/// The output rows `rows` of the block of `4 N` channels (16 or a last 8)
/// from `c0`, from output row `first` of `output` on (the pair kernel's
/// checks: `input` the whole NHWC tensor of `g`).
///
/// # Safety
/// The CPU has the dotprod extension; the layer is 3x3 of width dilation 1 and
/// [`takes`] it, `c0 + 4 N <= g.output_channels`, `f` holds the layer's
/// dot weights.
#[target_feature(enable = "dotprod")]
#[inline(never)]
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn block_rows<const N: usize>(
    p: &Packed,
    f: &Folded,
    g: &ConvGeometry,
    input: &[i8],
    output: &mut [i8],
    first: usize,
    rows: Range<usize>,
    c0: usize,
) {
    debug_assert!(takes(p, f, g) && c0 + 4 * N <= g.output_channels);
    debug_assert!(g.kernel_height == 3 && g.kernel_width == 3 && g.dilation_width == 1);
    // (Kernel rows `dilation_height` input rows apart.)
    // Bytes per laid-out column, columns per row, rows per asm call.
    let entry = 16 * N;
    let sw = g.stride_width;
    let count = (g.output_width - 1) * sw + 3;
    let chunk = (ENTRIES * ENTRY / entry / count).min(MAX_ROWS);
    let ic = g.input_channels;
    let in_row = g.input_width * ic;
    let in_image = g.input_height * in_row;
    let oc = g.output_channels;
    let out_row = g.output_width * oc;
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
    // Each row's input columns `x0..x0 + count`: zeros left of the image,
    // its columns from `xi`, zeros right of it (the same in every row).
    let x0 = -(g.pad_left as isize);
    let left = g.pad_left.min(count);
    let xi = (x0 + left as isize) as usize;
    let end = (x0 + count as isize).min(g.input_width as isize).max(0) as usize;
    let inside = end.saturating_sub(xi);
    let right = count - left - inside;
    let classes = f.column_classes * f.padded;
    let row_class = &f.row_class[..g.output_height];
    // Each run's bias offset plus the block's lanes is within a row
    // class's biases (`runs3` offsets are `class * padded`).
    debug_assert!(f.runs3.iter().all(|&[at, _]| at + c0 + 4 * N <= classes));
    let zero_row = [0i8; BLOCK];
    let mut buffer = [MaybeUninit::<[i8; ENTRY]>::uninit(); ENTRIES];
    let buf = buffer.as_mut_ptr() as *mut i8;
    let mut row_bias = [core::ptr::null::<i32>(); MAX_ROWS];
    let mut r0 = rows.start;
    while r0 < rows.end {
        let r1 = (r0 + chunk).min(rows.end);
        for (j, r) in (r0..r1).enumerate() {
            let (batch, oy) = (r / g.output_height, r % g.output_height);
            let image = &input[batch * in_image..][..in_image];
            let y0 = (oy * g.stride_height) as isize - g.pad_top as isize;
            // Each kernel row's first column read and step per column:
            // rows outside the image read a zero row in place.
            let mut at = [zero_row.as_ptr(); 4];
            let mut step = [0usize; 4];
            for ky in 0..3 {
                let iy = y0 + (ky * g.dilation_height) as isize;
                if iy >= 0 && (iy as usize) < g.input_height && inside > 0 {
                    // SAFETY: row `iy` and column `xi < input_width` are
                    // inside the image.
                    at[ky] = unsafe { image.as_ptr().add(iy as usize * in_row + xi * ic + ci) };
                    step[ky] = ic;
                }
            }
            let biases = &f.biases[row_class[oy] as usize * classes..][..classes];
            row_bias[j] = biases[c0..].as_ptr();
            // SAFETY: `chunk` rows of `count` columns of `entry` bytes fit
            // the buffer; the inside columns `xi..end` are image columns,
            // each kernel row's pointer a row of the image (or the zero
            // row, step 0), reading `4 N` bytes from channel `ci` (one
            // with a broadcast layer), within the row.
            unsafe {
                let dst = buf.add(j * count * entry);
                zero_columns::<N>(dst, left);
                let mid = dst.add(left * entry);
                if f.broadcast {
                    lay_out::<3, N, true>(at, step, mid, inside);
                } else {
                    lay_out::<3, N, false>(at, step, mid, inside);
                }
                zero_columns::<N>(dst.add((left + inside) * entry), right);
            }
        }
        let out = &mut output[(r0 - first) * out_row..(r1 - first) * out_row];
        // SAFETY: dotprod (the caller's); the weights hold 3 entries of
        // `entry` bytes; each row's biases hold the block's lanes at every
        // run's offset; the stage arrays hold 16 values from `c0`; the
        // runs cover a row's `output_width` pixels, which read the
        // row's laid-out columns (`count` of them) and write their `4 N`
        // bytes within `out` (`c0 + 4 N <= oc`).
        unsafe {
            let o = out.as_mut_ptr().add(c0);
            let rb = &row_bias[..r1 - r0];
            if N == 4 {
                dot3::run(wp, &rs, rb, &f.runs3, buf, sw, o, oc);
            } else {
                dot3::run8(wp, &rs, rb, &f.runs3, buf, sw, o, oc);
            }
        }
        r0 = r1;
    }
}
