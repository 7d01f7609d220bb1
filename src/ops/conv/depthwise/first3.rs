//! A first layer's 3x3 depthwise convolution (dilation 1) of one input
//! channel into 8 output channels (depth multiplier 8, as person_detect's
//! 96x96x1 input layer), with the ties-upward stage and no left shift.
//!
//! Every output channel reads the same input bytes, so the four bytes of
//! an `sdot` lane need not be laid out per channel: a kernel row's taps
//! are three neighbouring bytes of one input row, and `sdot` by element
//! (`sdot acc.4s, w.16b, x.4b[0]`) multiplies each channel's 4 weights of
//! that kernel row (`w[c][ky][0..3]` and a zero) by the same 4 input
//! bytes:
//!
//! ```text
//! acc[c] = folded_bias[class][c]
//!        + sum over ky: sum over kx < 4: row[ky][stride ox + kx] * w[c][ky][kx]
//! ```
//!
//! where `row[ky]` is input row `oy * stride - pad + ky` copied into a
//! zeroed buffer from column `-pad_left` on (zeros outside the image: the
//! zero point's share of those taps is in the class's folded bias, see
//! [`Folded`]). A pixel of 8 channels is 3 loads of 4 bytes, 6 `sdot`s
//! and the output stage: 23 instructions, where laying out columns for
//! the column kernel (`super::rows3`) costs 12 more per pixel at stride 2.
//! At stride 2 one 8-byte load holds the taps of pixels `i` and `i + 2`
//! (two `sdot` elements), so four pixels a step share their loads and
//! run the stage on 16 lanes ([`run4`]): about 18 instructions a pixel.

use core::ops::Range;

use super::super::geometry::ConvGeometry;
use super::folded::Folded;
use super::narrow::RunStage;
use super::narrow::{by_narrow, narrow16, narrow8};
use super::pack::Packed;

/// The longest input row, its padding on both sides included, in bytes.
const ROW: usize = 512;

/// Whether this kernel runs the layer: one input channel and 8 output
/// channels, a 3x3 window of dilation 1, the ties-upward stage with no
/// left shift, at most `super::dot3::RUNS` column runs, and a padded row
/// that fits [`ROW`].
pub(super) fn takes(p: &Packed, f: &Folded, g: &ConvGeometry) -> bool {
    f.broadcast
        && !f.first_weights.is_empty()
        && p.stage.right_only
        && !f.runs3.is_empty()
        && g.pad_left + g.input_width + 4 <= ROW
        && (g.output_width - 1) * g.stride_width + 4 <= ROW
}

/// Whether `g` has the shape of [`takes`] (the weights [`pack`] packs).
pub(super) fn shape(g: &ConvGeometry) -> bool {
    g.input_channels == 1
        && g.output_channels == 8
        && g.kernel_height == 3
        && g.kernel_width == 3
        && g.dilation_height == 1
        && g.dilation_width == 1
}

/// The kernel's weights of `weights` (`[channel][tap]`, 8 channels of 3x3
/// taps): `[ky][channel][kx]`, `kx = 3` zero (96 bytes).
pub(super) fn pack(weights: &[i8], out: &mut [i8]) {
    for ky in 0..3 {
        for c in 0..8 {
            for kx in 0..3 {
                out[(ky * 8 + c) * 4 + kx] = weights[c * 9 + ky * 3 + kx];
            }
            out[(ky * 8 + c) * 4 + 3] = 0;
        }
    }
}

/// Output rows `rows` from output row `first` of `output` on (the pair
/// kernel's checks: `input` the whole NHWC tensor of `g`).
///
/// # Safety
/// The CPU has the dotprod extension and [`takes`] the layer.
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
    debug_assert!(takes(p, f, g) && shape(g));
    let iw = g.input_width;
    let in_image = g.input_height * iw;
    let out_row = g.output_width * 8;
    let pl = g.pad_left;
    let rs = RunStage {
        multiplier: p.stage.multiplier[..8].as_ptr(),
        neg_right_shift: p.stage.neg_right_shift[..8].as_ptr(),
        zero_point: p.stage.zero_point,
        act_min: p.stage.act_min,
        act_max: p.stage.act_max,
    };
    let classes = f.column_classes * f.padded;
    debug_assert!(f.runs3.iter().all(|&[at, _]| at + 16 <= classes));
    let row_class = &f.row_class[..g.output_height];
    let weights = &f.first_weights[..96];
    // Three input rows from column `-pad_left`, zeros around the image's
    // columns (written once: the copies write only the image's columns).
    let mut padded = [[0i8; ROW]; 3];
    for r in rows {
        let (batch, oy) = (r / g.output_height, r % g.output_height);
        let image = &input[batch * in_image..][..in_image];
        let y0 = (oy * g.stride_height) as isize - g.pad_top as isize;
        for (ky, row) in padded.iter_mut().enumerate() {
            let iy = y0 + ky as isize;
            let dst = &mut row[pl..pl + iw];
            if iy >= 0 && (iy as usize) < g.input_height {
                dst.copy_from_slice(&image[iy as usize * iw..][..iw]);
            } else {
                dst.fill(0);
            }
        }
        let biases = &f.biases[row_class[oy] as usize * classes..][..classes];
        let out = &mut output[(r - first) * out_row..][..out_row];
        // SAFETY: dotprod (the caller's); the weights hold 96 bytes, the
        // biases 16 values at every run's offset, the stage arrays 8
        // values; the runs cover the row's `output_width` pixels, pixel
        // `i` reading 4 bytes at `stride i < ROW - 3` of each padded row
        // and writing 8 bytes at `8 i` of `out`.
        unsafe {
            let rows = [padded[0].as_ptr(), padded[1].as_ptr(), padded[2].as_ptr()];
            if g.stride_width == 2 {
                // (Each run's biases hold 16 lanes: the block of 8's
                // repeated.)
                run4(
                    weights.as_ptr(),
                    &rs,
                    biases.as_ptr(),
                    &f.runs3,
                    rows,
                    out.as_mut_ptr(),
                );
                continue;
            }
            run(
                weights.as_ptr(),
                &rs,
                biases.as_ptr(),
                &f.runs3,
                rows,
                g.stride_width,
                out.as_mut_ptr(),
            );
        }
    }
}

/// One output row: pixel `i` of `runs` (`[bias offset, pixels]`) starts
/// at the 8 values at `biases` plus its run's offset, adds the `sdot`s of
/// the 4 bytes at `rows[ky] + stride i` by the weights of kernel row `ky`,
/// and its 8 bytes go to `out + 8 i`. Registers: weights v0-v5, zero
/// point and clamp v12-v14, accumulators v16-v17, input bytes v20-v22,
/// multipliers v24-v25, right shifts v28-v29.
///
/// # Safety
/// The CPU has dotprod; `runs` is not empty and every run has a pixel;
/// `w` holds 96 bytes, `biases` 8 values at each run's offset, the stage
/// pointers 8 values each; each row `stride (n - 1) + 4` bytes for the
/// `n` pixels of the runs, `out` `8 n` writable bytes.
#[inline(always)]
unsafe fn run(
    w: *const i8,
    s: &RunStage,
    biases: *const i32,
    runs: &[[usize; 2]],
    rows: [*const i8; 3],
    stride: usize,
    out: *mut i8,
) {
    debug_assert!(!runs.is_empty() && runs.iter().all(|r| r[1] >= 1));
    // SAFETY: the caller's bounds: every load reads within `w`, `biases`,
    // `runs`, the stage arrays and the rows, every store writes one
    // pixel's 8 bytes; `sdot` needs dotprod (the caller's); the intrinsic
    // is not stable yet, hence the asm.
    unsafe {
        core::arch::asm!(
            "ld1 {{v0.16b-v3.16b}}, [{w}], #64",
            "ld1 {{v4.16b-v5.16b}}, [{w}]",
            "ld1 {{v24.4s-v25.4s}}, [{m}]",
            "ld1 {{v28.4s-v29.4s}}, [{r}]",
            "dup v12.8h, {zp:w}",
            "dup v13.8b, {lo:w}",
            "dup v14.8b, {hi:w}",
            "3:",
            "ldp {b}, {n}, [{runs}], #16",
            "add {b}, {biases}, {b}, lsl #2",
            "2:",
            "ld1 {{v16.4s-v17.4s}}, [{b}]",
            "ld1 {{v20.s}}[0], [{p0}], {xs}",
            "ld1 {{v21.s}}[0], [{p1}], {xs}",
            "ld1 {{v22.s}}[0], [{p2}], {xs}",
            "sdot v16.4s, v0.16b, v20.4b[0]",
            "sdot v17.4s, v1.16b, v20.4b[0]",
            "sdot v16.4s, v2.16b, v21.4b[0]",
            "sdot v17.4s, v3.16b, v21.4b[0]",
            "sdot v16.4s, v4.16b, v22.4b[0]",
            "sdot v17.4s, v5.16b, v22.4b[0]",
            "sqrdmulh v16.4s, v16.4s, v24.4s",
            "sqrdmulh v17.4s, v17.4s, v25.4s",
            "srshl v16.4s, v16.4s, v28.4s",
            "srshl v17.4s, v17.4s, v29.4s",
            "sqxtn v16.4h, v16.4s",
            "sqxtn2 v16.8h, v17.4s",
            "sqadd v16.8h, v16.8h, v12.8h",
            "sqxtn v16.8b, v16.8h",
            "smax v16.8b, v16.8b, v13.8b",
            "smin v16.8b, v16.8b, v14.8b",
            "subs {n}, {n}, #1",
            "st1 {{v16.8b}}, [{o}], #8",
            "b.ne 2b",
            "subs {k}, {k}, #1",
            "b.ne 3b",
            w = inout(reg) w => _,
            m = in(reg) s.multiplier,
            r = in(reg) s.neg_right_shift,
            zp = in(reg) s.zero_point as i32,
            lo = in(reg) s.act_min as i32,
            hi = in(reg) s.act_max as i32,
            biases = in(reg) biases,
            runs = inout(reg) runs.as_ptr() => _,
            k = inout(reg) runs.len() => _,
            b = out(reg) _,
            n = out(reg) _,
            p0 = inout(reg) rows[0] => _,
            p1 = inout(reg) rows[1] => _,
            p2 = inout(reg) rows[2] => _,
            xs = in(reg) stride,
            o = inout(reg) out => _,
            out("v0") _, out("v1") _, out("v2") _, out("v3") _,
            out("v4") _, out("v5") _,
            out("v12") _, out("v13") _, out("v14") _,
            out("v16") _, out("v17") _,
            out("v20") _, out("v21") _, out("v22") _,
            out("v24") _, out("v25") _,
            out("v28") _, out("v29") _,
            options(nostack),
        );
    }
}

/// [`run`] at stride 2, four pixels a step: the 8 bytes at `rows[ky] + 2
/// i` hold pixel `i`'s 4 taps and pixel `i + 2`'s (elements 0 and 1), the
/// 8 bytes 2 further pixels `i + 1` and `i + 3`, so 4 pixels take 6 loads
/// (not 12), 24 `sdot`s, the stage on two sets of 4 vectors (pixels
/// `i, i + 1` and `i + 2, i + 3`, 16 lanes each: a last block of 8 repeats its
/// biases in lanes 8 to 15, see [`Folded`]) and one 32-byte store, 71
/// instructions where [`run`] spends 92. A run's last 1 to 3 pixels run
/// as [`run`]'s. Registers: weights v0-v5, input bytes v6-v11, zero point
/// and clamp v12-v14, accumulators v16-v23, multipliers v24-v25, right
/// shifts v28-v29.
///
/// # Safety
/// As [`run`] at stride 2, with `biases` holding 16 values at each run's
/// offset (each row `2 (n - 1) + 4` bytes, as [`run`]'s).
#[inline(always)]
unsafe fn run4(
    w: *const i8,
    s: &RunStage,
    biases: *const i32,
    runs: &[[usize; 2]],
    rows: [*const i8; 3],
    out: *mut i8,
) {
    debug_assert!(!runs.is_empty() && runs.iter().all(|r| r[1] >= 1));
    // SAFETY: as `run`: every load reads within `w`, `biases` (16 values
    // at a run's offset), `runs`, the stage arrays and the rows (a group
    // from pixel `i` reads bytes `2 i .. 2 i + 10`, `i + 3 < n`), every
    // store writes 4 or 1 pixels' bytes; `sdot` needs dotprod (the
    // caller's).
    unsafe {
        let (lo, hi) = s.clamp_bytes();
        macro_rules! body {
            ($mode:ident) => {
                core::arch::asm!(
                    "ld1 {{v0.16b-v3.16b}}, [{w}], #64",
                    "ld1 {{v4.16b-v5.16b}}, [{w}]",
                    "ld1 {{v24.4s-v25.4s}}, [{m}]",
                    "ld1 {{v28.4s-v29.4s}}, [{r}]",
                    "dup v12.8h, {zp:w}",
                    "dup v13.16b, {lo:w}",
                    "dup v14.16b, {hi:w}",
                    "mov {c2}, #2",
                    "mov {c6}, #6",
                    "3:",
                    "ldp {b}, {n}, [{runs}], #16",
                    "add {b}, {biases}, {b}, lsl #2",
                    "lsr {q}, {n}, #2",
                    "cbz {q}, 5f",
                    "2:",
                    "ld1 {{v16.4s-v19.4s}}, [{b}]",
                    "ld1 {{v6.8b}}, [{p0}], {c2}",
                    "ld1 {{v9.8b}}, [{p0}], {c6}",
                    "ld1 {{v20.4s-v23.4s}}, [{b}]",
                    "ld1 {{v7.8b}}, [{p1}], {c2}",
                    "ld1 {{v10.8b}}, [{p1}], {c6}",
                    "ld1 {{v8.8b}}, [{p2}], {c2}",
                    "ld1 {{v11.8b}}, [{p2}], {c6}",
                    "sdot v16.4s, v0.16b, v6.4b[0]",
                    "sdot v17.4s, v1.16b, v6.4b[0]",
                    "sdot v18.4s, v0.16b, v9.4b[0]",
                    "sdot v19.4s, v1.16b, v9.4b[0]",
                    "sdot v20.4s, v0.16b, v6.4b[1]",
                    "sdot v21.4s, v1.16b, v6.4b[1]",
                    "sdot v22.4s, v0.16b, v9.4b[1]",
                    "sdot v23.4s, v1.16b, v9.4b[1]",
                    "sdot v16.4s, v2.16b, v7.4b[0]",
                    "sdot v17.4s, v3.16b, v7.4b[0]",
                    "sdot v18.4s, v2.16b, v10.4b[0]",
                    "sdot v19.4s, v3.16b, v10.4b[0]",
                    "sdot v20.4s, v2.16b, v7.4b[1]",
                    "sdot v21.4s, v3.16b, v7.4b[1]",
                    "sdot v22.4s, v2.16b, v10.4b[1]",
                    "sdot v23.4s, v3.16b, v10.4b[1]",
                    "sdot v16.4s, v4.16b, v8.4b[0]",
                    "sdot v17.4s, v5.16b, v8.4b[0]",
                    "sdot v18.4s, v4.16b, v11.4b[0]",
                    "sdot v19.4s, v5.16b, v11.4b[0]",
                    "sdot v20.4s, v4.16b, v8.4b[1]",
                    "sdot v21.4s, v5.16b, v8.4b[1]",
                    "sdot v22.4s, v4.16b, v11.4b[1]",
                    "sdot v23.4s, v5.16b, v11.4b[1]",
                    "sqrdmulh v16.4s, v16.4s, v24.4s",
                    "sqrdmulh v17.4s, v17.4s, v25.4s",
                    "sqrdmulh v18.4s, v18.4s, v24.4s",
                    "sqrdmulh v19.4s, v19.4s, v25.4s",
                    "sqrdmulh v20.4s, v20.4s, v24.4s",
                    "sqrdmulh v21.4s, v21.4s, v25.4s",
                    "sqrdmulh v22.4s, v22.4s, v24.4s",
                    "sqrdmulh v23.4s, v23.4s, v25.4s",
                    "srshl v16.4s, v16.4s, v28.4s",
                    "srshl v17.4s, v17.4s, v29.4s",
                    "srshl v18.4s, v18.4s, v28.4s",
                    "srshl v19.4s, v19.4s, v29.4s",
                    "srshl v20.4s, v20.4s, v28.4s",
                    "srshl v21.4s, v21.4s, v29.4s",
                    "srshl v22.4s, v22.4s, v28.4s",
                    "srshl v23.4s, v23.4s, v29.4s",
                    "sqxtn v16.4h, v16.4s",
                    "sqxtn2 v16.8h, v17.4s",
                    "sqxtn v18.4h, v18.4s",
                    "sqxtn2 v18.8h, v19.4s",
                    "sqxtn v20.4h, v20.4s",
                    "sqxtn2 v20.8h, v21.4s",
                    "sqxtn v22.4h, v22.4s",
                    "sqxtn2 v22.8h, v23.4s",
                    narrow16!($mode, "16", "16", "18"),
                    narrow16!($mode, "17", "20", "22"),
                    "subs {q}, {q}, #1",
                    "st1 {{v16.16b-v17.16b}}, [{o}], #32",
                    "b.ne 2b",
                    "5:",
                    "ands {n}, {n}, #3",
                    "b.eq 6f",
                    "7:",
                    "ld1 {{v16.4s-v17.4s}}, [{b}]",
                    "ld1 {{v20.s}}[0], [{p0}], {c2}",
                    "ld1 {{v21.s}}[0], [{p1}], {c2}",
                    "ld1 {{v22.s}}[0], [{p2}], {c2}",
                    "sdot v16.4s, v0.16b, v20.4b[0]",
                    "sdot v17.4s, v1.16b, v20.4b[0]",
                    "sdot v16.4s, v2.16b, v21.4b[0]",
                    "sdot v17.4s, v3.16b, v21.4b[0]",
                    "sdot v16.4s, v4.16b, v22.4b[0]",
                    "sdot v17.4s, v5.16b, v22.4b[0]",
                    "sqrdmulh v16.4s, v16.4s, v24.4s",
                    "sqrdmulh v17.4s, v17.4s, v25.4s",
                    "srshl v16.4s, v16.4s, v28.4s",
                    "srshl v17.4s, v17.4s, v29.4s",
                    "sqxtn v16.4h, v16.4s",
                    "sqxtn2 v16.8h, v17.4s",
                    narrow8!($mode, "16", "16"),
                    "subs {n}, {n}, #1",
                    "st1 {{v16.8b}}, [{o}], #8",
                    "b.ne 7b",
                    "6:",
                    "subs {k}, {k}, #1",
                    "b.ne 3b",
                    w = inout(reg) w => _,
                    m = in(reg) s.multiplier,
                    r = in(reg) s.neg_right_shift,
                    zp = in(reg) s.zero_point as i32,
                    lo = in(reg) lo,
                    hi = in(reg) hi,
                    biases = in(reg) biases,
                    runs = inout(reg) runs.as_ptr() => _,
                    k = inout(reg) runs.len() => _,
                    b = out(reg) _,
                    n = out(reg) _,
                    q = out(reg) _,
                    c2 = out(reg) _,
                    c6 = out(reg) _,
                    p0 = inout(reg) rows[0] => _,
                    p1 = inout(reg) rows[1] => _,
                    p2 = inout(reg) rows[2] => _,
                    o = inout(reg) out => _,
                    out("v0") _, out("v1") _, out("v2") _, out("v3") _,
                    out("v4") _, out("v5") _, out("v6") _, out("v7") _,
                    out("v8") _, out("v9") _, out("v10") _, out("v11") _,
                    out("v12") _, out("v13") _, out("v14") _,
                    out("v16") _, out("v17") _, out("v18") _, out("v19") _,
                    out("v20") _, out("v21") _, out("v22") _, out("v23") _,
                    out("v24") _, out("v25") _,
                    out("v28") _, out("v29") _,
                    options(nostack),
                )
            };
        }
        by_narrow!(s.narrow(), body);
    }
}
