//! The `sdot` depthwise convolution (FEAT_DotProd) for the blocks of 16
//! channels (and a last 8) of a [`Folded`] layer, bit-exact with the
//! scalar loops.
//!
//! `sdot` sums four byte products per 32-bit lane; in a depthwise layer a
//! lane is one channel, so its four bytes are four taps of that channel.
//! The taps grouped are a window's column of kernel rows: per output row,
//! each input column the row's windows read is laid out once in a stack
//! buffer as 16 channels x 4 kernel rows (one `st4` of the 4 rows' 16-byte
//! loads), and every window over that column (`kernel_width / stride` of
//! them) then takes it with one 4-register load:
//!
//! ```text
//! column[x][c][j] = x(row y0 + j * dilation, column x, channel c0 + c)
//!                   (0 outside the image, and for j >= kernel_height)
//! acc[c] = folded_bias[class][c]
//!        + sum over kx, groups: sdot(column[ox * stride - pad + kx * dilation][c], w[kx][c])
//! ```
//!
//! Taps outside the image read raw zeros and their zero-point share is in
//! the class's folded bias ([`Folded`]), so edge windows run the interior's
//! code. Kernels of 5 to 8 rows take two groups of 4 rows. A 3x3 window is
//! 12 `sdot`s and 7 loads per pixel of 16 channels (144 MACs), each column
//! costing 3 loads and one `st4`, where the pair kernel spends about 47
//! instructions on its products; the sums are int32 modulo 2^32 as the
//! scalar loops', exact for any weight (no 16-bit intermediate). A last
//! block of 8 channels lays out 8-byte rows (`st4` of `.8b`) and runs 2
//! accumulators.

use core::arch::aarch64::*;
use core::mem::MaybeUninit;

use super::super::geometry::ConvGeometry;
use super::dot3;
use super::folded::Folded;
use super::narrow::RunStage;
use super::pack::{Packed, BLOCK};
use super::stage::BlockStage;

/// The stack buffer's capacity in laid-out (column, group) entries of 64
/// bytes (12 KiB).
pub(super) const ENTRIES: usize = 192;
/// Bytes per entry: 16 channels x 4 kernel rows (a block of 8 channels
/// uses half).
pub(super) const ENTRY: usize = 64;

/// Whether a layer's blocks of 16 can run this kernel: kernels of at most
/// 8 rows (two groups), and a window plus one stride that fits the buffer.
pub(super) fn takes(g: &ConvGeometry) -> bool {
    let groups = g.kernel_height.div_ceil(4);
    let span = (g.kernel_width - 1) * g.dilation_width + 1;
    groups <= 2 && span + g.stride_width <= ENTRIES / groups
}

/// The kernel's weights of `weights` (`[channel][tap]`) for the `lanes`
/// (16 or 8) channels from `c0`: `[kx][group][channel][row]`, rows past
/// the kernel zero.
pub(super) fn pack_block(
    g: &ConvGeometry,
    weights: &[i8],
    c0: usize,
    lanes: usize,
    out: &mut [i8],
) {
    let (kh, kw) = (g.kernel_height, g.kernel_width);
    let groups = kh.div_ceil(4);
    let size = 4 * lanes;
    for kx in 0..kw {
        for group in 0..groups {
            let entry = &mut out[(kx * groups + group) * size..][..size];
            for c in 0..lanes {
                for j in 0..4 {
                    let ky = 4 * group + j;
                    entry[4 * c + j] = if ky < kh {
                        weights[(c0 + c) * kh * kw + ky * kw + kx]
                    } else {
                        0
                    };
                }
            }
        }
    }
}

/// The accumulators of one window of 3 columns by one group of rows
/// (3x3, dilation 1): the bias at `bias` plus, for `kx` in 0..3, the
/// `sdot`s of the laid-out column at `x + 16 N kx` by the weights at `w +
/// 16 N kx`: one multi-register load per operand (the compiler splits a
/// 64-byte load into two `ldp`). `N` accumulators (4: 16 channels, 2: 8;
/// the others zero).
///
/// # Safety
/// The CPU has dotprod; `bias` holds `4 N` values, `x` and `w` `48 N`
/// bytes.
#[inline(always)]
unsafe fn window3<const N: usize>(bias: *const i32, x: *const i8, w: *const i8) -> [int32x4_t; 4] {
    // SAFETY: the caller's bounds; `sdot` needs dotprod (the caller's),
    // the intrinsic is not stable yet, hence the asm.
    unsafe {
        if N == 4 {
            let (a0, a1, a2, a3);
            core::arch::asm!(
                "ld1 {{v16.4s-v19.4s}}, [{b}]",
                "ld1 {{v20.16b-v23.16b}}, [{x}], #64",
                "ld1 {{v24.16b-v27.16b}}, [{w}], #64",
                "sdot v16.4s, v20.16b, v24.16b",
                "sdot v17.4s, v21.16b, v25.16b",
                "sdot v18.4s, v22.16b, v26.16b",
                "sdot v19.4s, v23.16b, v27.16b",
                "ld1 {{v20.16b-v23.16b}}, [{x}], #64",
                "ld1 {{v24.16b-v27.16b}}, [{w}], #64",
                "sdot v16.4s, v20.16b, v24.16b",
                "sdot v17.4s, v21.16b, v25.16b",
                "sdot v18.4s, v22.16b, v26.16b",
                "sdot v19.4s, v23.16b, v27.16b",
                "ld1 {{v20.16b-v23.16b}}, [{x}]",
                "ld1 {{v24.16b-v27.16b}}, [{w}]",
                "sdot v16.4s, v20.16b, v24.16b",
                "sdot v17.4s, v21.16b, v25.16b",
                "sdot v18.4s, v22.16b, v26.16b",
                "sdot v19.4s, v23.16b, v27.16b",
                b = in(reg) bias,
                x = inout(reg) x => _,
                w = inout(reg) w => _,
                out("v16") a0, out("v17") a1, out("v18") a2, out("v19") a3,
                out("v20") _, out("v21") _, out("v22") _, out("v23") _,
                out("v24") _, out("v25") _, out("v26") _, out("v27") _,
                options(pure, readonly, nostack, preserves_flags),
            );
            [a0, a1, a2, a3]
        } else {
            let (a0, a1);
            core::arch::asm!(
                "ld1 {{v16.4s-v17.4s}}, [{b}]",
                "ld1 {{v20.16b-v21.16b}}, [{x}], #32",
                "ld1 {{v24.16b-v25.16b}}, [{w}], #32",
                "sdot v16.4s, v20.16b, v24.16b",
                "sdot v17.4s, v21.16b, v25.16b",
                "ld1 {{v20.16b-v21.16b}}, [{x}], #32",
                "ld1 {{v24.16b-v25.16b}}, [{w}], #32",
                "sdot v16.4s, v20.16b, v24.16b",
                "sdot v17.4s, v21.16b, v25.16b",
                "ld1 {{v20.16b-v21.16b}}, [{x}]",
                "ld1 {{v24.16b-v25.16b}}, [{w}]",
                "sdot v16.4s, v20.16b, v24.16b",
                "sdot v17.4s, v21.16b, v25.16b",
                b = in(reg) bias,
                x = inout(reg) x => _,
                w = inout(reg) w => _,
                out("v16") a0, out("v17") a1,
                out("v20") _, out("v21") _, out("v24") _, out("v25") _,
                options(pure, readonly, nostack, preserves_flags),
            );
            [a0, a1, vdupq_n_s32(0), vdupq_n_s32(0)]
        }
    }
}

/// `acc += sdot(column at x, weights at w)` for one (column, group), on
/// `N` accumulators.
///
/// # Safety
/// The CPU has dotprod; `x` and `w` hold `16 N` bytes.
#[inline(always)]
unsafe fn column_tap<const N: usize>(acc: &mut [int32x4_t; 4], x: *const i8, w: *const i8) {
    let [a0, a1, a2, a3] = acc;
    // SAFETY: as `window3`.
    unsafe {
        if N == 4 {
            core::arch::asm!(
                "ld1 {{v20.16b-v23.16b}}, [{x}]",
                "ld1 {{v24.16b-v27.16b}}, [{w}]",
                "sdot {a0:v}.4s, v20.16b, v24.16b",
                "sdot {a1:v}.4s, v21.16b, v25.16b",
                "sdot {a2:v}.4s, v22.16b, v26.16b",
                "sdot {a3:v}.4s, v23.16b, v27.16b",
                x = in(reg) x,
                w = in(reg) w,
                a0 = inout(vreg) *a0, a1 = inout(vreg) *a1,
                a2 = inout(vreg) *a2, a3 = inout(vreg) *a3,
                out("v20") _, out("v21") _, out("v22") _, out("v23") _,
                out("v24") _, out("v25") _, out("v26") _, out("v27") _,
                options(pure, readonly, nostack, preserves_flags),
            );
        } else {
            core::arch::asm!(
                "ld1 {{v20.16b-v21.16b}}, [{x}]",
                "ld1 {{v24.16b-v25.16b}}, [{w}]",
                "sdot {a0:v}.4s, v20.16b, v24.16b",
                "sdot {a1:v}.4s, v21.16b, v25.16b",
                x = in(reg) x,
                w = in(reg) w,
                a0 = inout(vreg) *a0, a1 = inout(vreg) *a1,
                out("v20") _, out("v21") _, out("v24") _, out("v25") _,
                options(pure, readonly, nostack, preserves_flags),
            );
        }
    }
}

/// Lays out `count` columns from the row pointers `at` (each advancing
/// by its step per column) into `dst`, `16 N` bytes per column: `ROWS`
/// rows of `4 N` channels loaded (3: the fourth row zero), or with `B` one
/// byte broadcast to the `4 N` lanes (`ld1r`: one input channel), then one
/// `st4`.
///
/// # Safety
/// Each `at[j] + step[j] * (count - 1)` starts `4 N` readable bytes (1
/// with `B`; `j < ROWS`); `dst` holds `16 N count` bytes.
#[inline(always)]
pub(super) unsafe fn lay_out<const ROWS: usize, const N: usize, const B: bool>(
    at: [*const i8; 4],
    step: [usize; 4],
    dst: *mut i8,
    count: usize,
) {
    if count == 0 {
        return;
    }
    macro_rules! lay_out {
        ($ld:literal, $t:literal, $size:literal) => {
            if ROWS == 3 {
                core::arch::asm!(
                    "movi v23.16b, #0",
                    "2:",
                    concat!($ld, " {{v20.", $t, "}}, [{p0}], {s0}"),
                    concat!($ld, " {{v21.", $t, "}}, [{p1}], {s1}"),
                    concat!($ld, " {{v22.", $t, "}}, [{p2}], {s2}"),
                    "subs {n}, {n}, #1",
                    concat!("st4 {{v20.", $t, "-v23.", $t, "}}, [{d}], #", $size),
                    "b.ne 2b",
                    p0 = inout(reg) at[0] => _, p1 = inout(reg) at[1] => _,
                    p2 = inout(reg) at[2] => _,
                    s0 = in(reg) step[0], s1 = in(reg) step[1], s2 = in(reg) step[2],
                    d = inout(reg) dst => _,
                    n = inout(reg) count => _,
                    out("v20") _, out("v21") _, out("v22") _, out("v23") _,
                    options(nostack),
                );
            } else {
                core::arch::asm!(
                    "2:",
                    concat!($ld, " {{v20.", $t, "}}, [{p0}], {s0}"),
                    concat!($ld, " {{v21.", $t, "}}, [{p1}], {s1}"),
                    concat!($ld, " {{v22.", $t, "}}, [{p2}], {s2}"),
                    concat!($ld, " {{v23.", $t, "}}, [{p3}], {s3}"),
                    "subs {n}, {n}, #1",
                    concat!("st4 {{v20.", $t, "-v23.", $t, "}}, [{d}], #", $size),
                    "b.ne 2b",
                    p0 = inout(reg) at[0] => _, p1 = inout(reg) at[1] => _,
                    p2 = inout(reg) at[2] => _, p3 = inout(reg) at[3] => _,
                    s0 = in(reg) step[0], s1 = in(reg) step[1], s2 = in(reg) step[2],
                    s3 = in(reg) step[3],
                    d = inout(reg) dst => _,
                    n = inout(reg) count => _,
                    out("v20") _, out("v21") _, out("v22") _, out("v23") _,
                    options(nostack),
                );
            }
        };
    }
    // SAFETY: the caller's bounds: `count` columns, `4 N` bytes per row
    // read, `16 N` bytes per column written.
    unsafe {
        match (N, B) {
            (4, false) => lay_out!("ld1", "16b", "64"),
            (4, true) => lay_out!("ld1r", "16b", "64"),
            (_, false) => lay_out!("ld1", "8b", "32"),
            (_, true) => lay_out!("ld1r", "8b", "32"),
        }
    }
}

/// [`lay_out`] of 3 kernel rows, two columns per loop step (one loop
/// counter and branch per two `st4`s: 5 instructions a column where the
/// one-column loop spends 6), an odd last column after the loop.
///
/// # Safety
/// As [`lay_out`] with `ROWS` 3.
#[inline(always)]
pub(super) unsafe fn lay_out3_pairs<const N: usize, const B: bool>(
    at: [*const i8; 4],
    step: [usize; 4],
    dst: *mut i8,
    count: usize,
) {
    macro_rules! lay_out {
        ($ld:literal, $t:literal, $size:literal) => {
            core::arch::asm!(
                "movi v23.16b, #0",
                "movi v27.16b, #0",
                "lsr {m}, {n}, #1",
                "cbz {m}, 3f",
                "2:",
                concat!($ld, " {{v20.", $t, "}}, [{p0}], {s0}"),
                concat!($ld, " {{v21.", $t, "}}, [{p1}], {s1}"),
                concat!($ld, " {{v22.", $t, "}}, [{p2}], {s2}"),
                concat!($ld, " {{v24.", $t, "}}, [{p0}], {s0}"),
                concat!($ld, " {{v25.", $t, "}}, [{p1}], {s1}"),
                concat!($ld, " {{v26.", $t, "}}, [{p2}], {s2}"),
                "subs {m}, {m}, #1",
                concat!("st4 {{v20.", $t, "-v23.", $t, "}}, [{d}], #", $size),
                concat!("st4 {{v24.", $t, "-v27.", $t, "}}, [{d}], #", $size),
                "b.ne 2b",
                "3:",
                "tbz {n}, #0, 4f",
                concat!($ld, " {{v20.", $t, "}}, [{p0}]"),
                concat!($ld, " {{v21.", $t, "}}, [{p1}]"),
                concat!($ld, " {{v22.", $t, "}}, [{p2}]"),
                concat!("st4 {{v20.", $t, "-v23.", $t, "}}, [{d}]"),
                "4:",
                p0 = inout(reg) at[0] => _, p1 = inout(reg) at[1] => _,
                p2 = inout(reg) at[2] => _,
                s0 = in(reg) step[0], s1 = in(reg) step[1], s2 = in(reg) step[2],
                d = inout(reg) dst => _,
                n = in(reg) count,
                m = out(reg) _,
                out("v20") _, out("v21") _, out("v22") _, out("v23") _,
                out("v24") _, out("v25") _, out("v26") _, out("v27") _,
                options(nostack),
            )
        };
    }
    // SAFETY: the caller's bounds: `count` columns, `4 N` bytes per row
    // read, `16 N` bytes per column written.
    unsafe {
        match (N, B) {
            (4, false) => lay_out!("ld1", "16b", "64"),
            (4, true) => lay_out!("ld1r", "16b", "64"),
            (_, false) => lay_out!("ld1", "8b", "32"),
            (_, true) => lay_out!("ld1r", "8b", "32"),
        }
    }
}

/// Zeroes `count` laid-out columns of `16 N` bytes at `dst` (columns
/// outside the image).
///
/// # Safety
/// `dst` holds `16 N count` bytes.
#[inline(always)]
pub(super) unsafe fn zero_columns<const N: usize>(dst: *mut i8, count: usize) {
    // SAFETY: the caller's bound (neon is a compile-time target feature).
    unsafe {
        let zero = vdupq_n_s8(0);
        for i in 0..count {
            if N == 4 {
                vst1q_s8_x4(dst.add(64 * i), int8x16x4_t(zero, zero, zero, zero));
            } else {
                vst1q_s8_x2(dst.add(32 * i), int8x16x2_t(zero, zero));
            }
        }
    }
}

/// The output rows `rows` of the block of `4 N` channels (16 or a last 8)
/// from `c0`, from output row `first` of `output` on (the pair kernel's
/// checks: `input` the whole NHWC tensor of `g`). `K` is 3 for a 3x3
/// window of dilation 1 (unrolled), else 0.
///
/// # Safety
/// The CPU has the dotprod extension; `takes(g)`, `c0 + 4 N <=
/// g.output_channels`, and `f` holds the layer's dot weights.
#[target_feature(enable = "dotprod")]
#[inline(never)]
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn block_rows<const S: u8, const K: usize, const N: usize>(
    p: &Packed,
    f: &Folded,
    g: &ConvGeometry,
    input: &[i8],
    output: &mut [i8],
    first: usize,
    rows: core::ops::Range<usize>,
    c0: usize,
) {
    debug_assert!(takes(g) && c0 + 4 * N <= g.output_channels);
    // Bytes per laid-out column and group, and per weight entry.
    let entry = 16 * N;
    let (kh, kw) = if K != 0 {
        (K, K)
    } else {
        (g.kernel_height, g.kernel_width)
    };
    let groups = if K != 0 { 1 } else { kh.div_ceil(4) };
    let (sw, dw) = (g.stride_width, if K != 0 { 1 } else { g.dilation_width });
    let ic = g.input_channels;
    let in_row = g.input_width * ic;
    let in_image = g.input_height * in_row;
    let oc = g.output_channels;
    let out_row = g.output_width * oc;
    // (A last block of 8 follows the whole blocks of 16.) Every block of a
    // broadcast layer reads input channel 0.
    let ci = if f.broadcast { 0 } else { c0 };
    let block_weights = &f.dot_weights[(c0 / BLOCK) * kw * groups * ENTRY..][..kw * groups * entry];
    let wp = block_weights.as_ptr();
    // SAFETY: `c0 + 16` is within the padded per-channel arrays.
    let stage = unsafe { BlockStage::<S>::load(&p.stage, c0, false) };
    let zero_row = [0i8; BLOCK];
    // Output pixels per pass: their columns fit the buffer.
    let span = (kw - 1) * dw + 1;
    let per_pass = (ENTRIES / groups - span) / sw + 1;
    let mut buffer = [MaybeUninit::<[i8; ENTRY]>::uninit(); ENTRIES];
    let buf = buffer.as_mut_ptr() as *mut i8;
    let classes = f.column_classes * f.padded;
    // Each output column's bias offset within a row class's biases.
    let column_class = &f.column_class[..g.output_width];
    // A whole block's 3x3 windows with the ties-upward stage and no left
    // shift, a row in one pass: each row's pixels in the asm loop of
    // `dot3`, by runs of one column class (found once per call).
    let mut runs = [[0usize; 2]; dot3::RUNS];
    let mut run_count = 0;
    let fast = K == 3 && stage.ties_upward_right_only() && per_pass >= g.output_width;
    if fast {
        for (ox, &class) in column_class.iter().enumerate() {
            if ox > 0 && class == column_class[ox - 1] {
                runs[run_count - 1][1] += 1;
            } else if run_count < dot3::RUNS {
                runs[run_count] = [class as usize * f.padded + c0, 1];
                run_count += 1;
            } else {
                run_count = 0;
                break;
            }
        }
    }
    let run3 = (run_count > 0).then(|| RunStage {
        multiplier: p.stage.multiplier[c0..c0 + BLOCK].as_ptr(),
        neg_right_shift: p.stage.neg_right_shift[c0..c0 + BLOCK].as_ptr(),
        zero_point: p.stage.zero_point,
        act_min: p.stage.act_min,
        act_max: p.stage.act_max,
    });
    for r in rows {
        let (batch, oy) = (r / g.output_height, r % g.output_height);
        let image = &input[batch * in_image..][..in_image];
        let out = &mut output[(r - first) * out_row..][..out_row];
        let (y0, ys) = ConvGeometry::taps(
            oy,
            g.stride_height,
            g.pad_top,
            g.dilation_height,
            kh,
            g.input_height,
        );
        // Each kernel row's first byte of the block and step per column:
        // rows outside the image read a zero row in place.
        let mut row_at = [zero_row.as_ptr(); 8];
        let mut row_step = [0usize; 8];
        for ky in ys.clone() {
            let iy = (y0 + (ky * g.dilation_height) as isize) as usize;
            // SAFETY: row `iy` is inside the image.
            row_at[ky] = unsafe { image.as_ptr().add(iy * in_row + ci) };
            row_step[ky] = ic;
        }
        let row_biases = &f.biases[f.row_class[oy] as usize * classes..][..classes];
        let (bias_ptr, out_ptr) = (row_biases.as_ptr(), out.as_mut_ptr());
        let mut ox0 = 0;
        while ox0 < g.output_width {
            let ox1 = (ox0 + per_pass).min(g.output_width);
            // The pass's input columns `x0..x0 + count` (x0 may be left of
            // the image, the end right of it): zeros, then the image's
            // columns, then zeros.
            let x0 = (ox0 * sw) as isize - g.pad_left as isize;
            let count = (ox1 - 1 - ox0) * sw + span;
            debug_assert!(count * groups <= ENTRIES);
            let left = ((-x0).max(0) as usize).min(count);
            let end = (x0 + count as isize).min(g.input_width as isize).max(0) as usize;
            let inside = end.saturating_sub((x0 + left as isize) as usize);
            let right = count - left - inside;
            // SAFETY: `count * groups` entries fit the buffer; the inside
            // columns `x0 + left..end` are image columns, each kernel row's
            // pointer a row of the image (or the zero row, step 0).
            unsafe {
                zero_columns::<N>(buf, left * groups);
                let xi = (x0 + left as isize) as usize;
                for group in 0..groups {
                    let at: [*const i8; 4] = core::array::from_fn(|j| {
                        let ky = 4 * group + j;
                        row_at[ky].wrapping_add(xi * row_step[ky])
                    });
                    let step: [usize; 4] = core::array::from_fn(|j| row_step[4 * group + j]);
                    let dst = buf.add((left * groups + group) * entry);
                    if groups == 1 {
                        match (K, f.broadcast) {
                            (3, false) => lay_out::<3, N, false>(at, step, dst, inside),
                            (3, true) => lay_out::<3, N, true>(at, step, dst, inside),
                            (_, false) => lay_out::<4, N, false>(at, step, dst, inside),
                            (_, true) => lay_out::<4, N, true>(at, step, dst, inside),
                        }
                    } else {
                        // Two groups interleave: lay out one column at a time.
                        for i in 0..inside {
                            let at_i = core::array::from_fn(|j| at[j].add(i * step[j]));
                            let dst = dst.add(i * groups * entry);
                            if f.broadcast {
                                lay_out::<4, N, true>(at_i, step, dst, 1);
                            } else {
                                lay_out::<4, N, false>(at_i, step, dst, 1);
                            }
                        }
                    }
                }
                zero_columns::<N>(buf.add((left + inside) * groups * entry), right * groups);
            }
            if let Some(rs) = &run3 {
                debug_assert!(ox0 == 0 && ox1 == g.output_width);
                debug_assert!(runs[..run_count]
                    .iter()
                    .all(|&[at, _]| at + 4 * N <= classes));
                // SAFETY: dotprod (the caller's); the weights hold 3
                // entries of `entry` bytes (`kw * groups`), each run's
                // bias offset is within the row class's biases, the stage
                // arrays are padded past `c0 + 16`; the runs cover the
                // row's `output_width` pixels, which read the laid-out
                // columns (`< count`) and write their `4 N` bytes within
                // `out`.
                unsafe {
                    let (o, rr) = (out_ptr.add(c0), &runs[..run_count]);
                    if N == 4 {
                        dot3::run(wp, rs, &[bias_ptr], rr, buf, sw, o, oc, 0);
                    } else {
                        dot3::run8(wp, rs, &[bias_ptr], rr, buf, sw, o, oc, 0);
                    }
                }
                ox0 = ox1;
                continue;
            }
            for ox in ox0..ox1 {
                debug_assert!(column_class[ox] as usize * f.padded + c0 + 4 * N <= classes);
                debug_assert!(ox * oc + c0 + 4 * N <= out.len());
                // SAFETY: the bias offset is within the row class's
                // biases, `column_class` holds `output_width` entries; the
                // columns read were laid out above (`< count`); the
                // weights hold `kw * groups` entries; the output pixel's
                // 16 bytes are in `out`.
                unsafe {
                    let class = *column_class.get_unchecked(ox) as usize;
                    let bias = bias_ptr.add(class * f.padded + c0);
                    let i = (ox - ox0) * sw;
                    let acc = if K == 3 {
                        window3::<N>(bias, buf.add(i * entry), wp)
                    } else {
                        let mut acc = [vdupq_n_s32(0); 4];
                        for (j, a) in acc.iter_mut().enumerate().take(N) {
                            *a = vld1q_s32(bias.add(4 * j));
                        }
                        for kx in 0..kw {
                            for group in 0..groups {
                                let x = buf.add(((i + kx * dw) * groups + group) * entry);
                                let w = wp.add((kx * groups + group) * entry);
                                column_tap::<N>(&mut acc, x, w);
                            }
                        }
                        acc
                    };
                    let bytes = stage.bytes::<N>(&acc);
                    if N == 4 {
                        vst1q_s8(out_ptr.add(ox * oc + c0), bytes);
                    } else {
                        vst1_s8(out_ptr.add(ox * oc + c0), vget_low_s8(bytes));
                    }
                }
            }
            ox0 = ox1;
        }
    }
}
