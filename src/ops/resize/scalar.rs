//! The reference resize loops ([`Backend::Scalar`](crate::Backend::Scalar)),
//! and nearest neighbour's copy on every backend.

use core::ops::Range;

use super::params::{mul_add, round_q20, xnnpack_q11, BilinearArithmetic, ResizeShape, Tap};
use super::BilinearParams;
use crate::elem::QuantElem;

/// Nearest neighbour: each output pixel is a copy of its source pixel; an
/// output row whose source row is the previous output row's (2x
/// upsampling: every second row) is a copy of that row. `output` holds the
/// rows `rows`; lengths are checked by the caller.
pub(crate) fn resize_nearest<T: QuantElem>(
    s: &ResizeShape,
    source_rows: &[u32],
    source_columns: &[u32],
    rows: Range<usize>,
    input: &[T],
    output: &mut [T],
) {
    let c = s.channels;
    let row_len = s.output_width * c;
    let in_row_len = s.input_width * c;
    let mut previous: Option<(usize, u32)> = None;
    for (i, r) in rows.enumerate() {
        let (b, oy) = (r / s.output_height, r % s.output_height);
        let iy = source_rows[oy];
        let at = i * row_len;
        if previous == Some((b, iy)) {
            output.copy_within(at - row_len..at, at);
            continue;
        }
        previous = Some((b, iy));
        let start = (b * s.input_height + iy as usize) * in_row_len;
        let source = &input[start..start + in_row_len];
        let out = &mut output[at..at + row_len];
        for (pixel, &ix) in out.chunks_exact_mut(c).zip(source_columns) {
            let from = ix as usize * c;
            pixel.copy_from_slice(&source[from..from + c]);
        }
    }
}

/// The two source rows of output row `r` (numbered across the images) and
/// its row tap.
#[inline(always)]
pub(crate) fn source_rows<'a, T>(
    p: &BilinearParams,
    input: &'a [T],
    r: usize,
) -> (&'a [T], &'a [T], Tap) {
    let s = &p.shape;
    let (b, oy) = (r / s.output_height, r % s.output_height);
    let tap = p.rows[oy];
    let len = s.input_width * s.channels;
    let image = b * s.input_height;
    let row = |y: u32| {
        let start = (image + y as usize) * len;
        &input[start..start + len]
    };
    (row(tap.lo), row(tap.hi), tap)
}

/// Bilinear interpolation of the rows `rows` in the params' arithmetic
/// (`output` holds just those rows; lengths are checked by the caller).
pub(crate) fn resize_bilinear<T: QuantElem>(
    p: &BilinearParams,
    rows: Range<usize>,
    input: &[T],
    output: &mut [T],
) {
    let c = p.shape.channels;
    let row_len = p.shape.output_width * c;
    for (r, out_row) in rows.zip(output.chunks_exact_mut(row_len)) {
        let (top, bottom, ty) = source_rows(p, input, r);
        for (out, tx) in out_row.chunks_exact_mut(c).zip(&p.columns) {
            let (l, h) = (tx.lo as usize * c, tx.hi as usize * c);
            let corners = (
                &top[l..l + c],
                &top[h..h + c],
                &bottom[l..l + c],
                &bottom[h..h + c],
            );
            pixel(p.arithmetic, ty, *tx, corners, out);
        }
    }
}

/// One output pixel from its four source pixels (top left, top right,
/// bottom left, bottom right).
#[inline(always)]
fn pixel<T: QuantElem>(
    arithmetic: BilinearArithmetic,
    ty: Tap,
    tx: Tap,
    (tl, tr, bl, br): (&[T], &[T], &[T], &[T]),
    out: &mut [T],
) {
    let corners = tl.iter().zip(tr).zip(bl).zip(br);
    match arithmetic {
        BilinearArithmetic::Integer10 { rounding } => {
            // Q10 weights; the products are Q20.
            let (wy1, wx1) = (ty.frac as i64, tx.frac as i64);
            let (wy0, wx0) = (1024 - wy1, 1024 - wx1);
            for (o, (((a, b), c), d)) in out.iter_mut().zip(corners) {
                let acc = a.to_i32() as i64 * wy0 * wx0
                    + c.to_i32() as i64 * wy1 * wx0
                    + b.to_i32() as i64 * wy0 * wx1
                    + d.to_i32() as i64 * wy1 * wx1;
                *o = T::saturate(round_q20(acc, rounding) as i32);
            }
        }
        BilinearArithmetic::Float => {
            let dy = ty.pos - ty.lo as f32;
            let dx = tx.pos - tx.lo as f32;
            for (o, (((a, b), c), d)) in out.iter_mut().zip(corners) {
                // TFLite's order: (0,0), (1,0), (0,1), (1,1), each product
                // left to right.
                let v = a.to_i32() as f32 * (1.0 - dy) * (1.0 - dx)
                    + c.to_i32() as f32 * dy * (1.0 - dx)
                    + b.to_i32() as f32 * (1.0 - dy) * dx
                    + d.to_i32() as f32 * dy * dx
                    + 0.5;
                *o = T::saturate(v as i32);
            }
        }
        BilinearArithmetic::FloatWeights { fused } => {
            let dy = ty.pos - ty.lo as f32;
            let dx = tx.pos - tx.lo as f32;
            let w = [
                (1.0 - dy) * (1.0 - dx),
                (1.0 - dy) * dx,
                dy * (1.0 - dx),
                dy * dx,
            ];
            for (o, (((a, b), c), d)) in out.iter_mut().zip(corners) {
                let (a, b) = (a.to_i32() as f32, b.to_i32() as f32);
                let (c, d) = (c.to_i32() as f32, d.to_i32() as f32);
                let v = if fused {
                    let sum = mul_add(a, w[0], b * w[1]);
                    mul_add(d, w[3], mul_add(c, w[2], sum)) + 0.5
                } else {
                    a * w[0] + b * w[1] + c * w[2] + d * w[3] + 0.5
                };
                *o = T::saturate(v as i32);
            }
        }
        BilinearArithmetic::XnnpackQ11 => {
            for (o, (((a, b), c), d)) in out.iter_mut().zip(corners) {
                let v = xnnpack_q11(
                    a.to_i32(),
                    b.to_i32(),
                    c.to_i32(),
                    d.to_i32(),
                    tx.frac,
                    ty.frac,
                );
                *o = T::saturate(v);
            }
        }
    }
}
