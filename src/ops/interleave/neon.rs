//! The structured loads and stores of [`super`]: 16 pixels per step, one
//! plain load or store per plane and one `st2`/`st3`/`st4` (or
//! `ld2`/`ld3`/`ld4`) for the pixels; the last pixels byte by byte.
//! Lengths are checked by the callers: every plane holds the pixels at
//! its `plane_stride` in the planar slice, the interleaved slice is whole
//! pixels.

use core::arch::aarch64::*;

/// Pixels per step.
const STEP: usize = 16;

/// The planes of `planar`, `stride` apart, each `pixels` long (read side).
fn planes_of(planar: &[u8], stride: usize, pixels: usize, planes: usize) -> [&[u8]; 4] {
    let mut all: [&[u8]; 4] = [&[]; 4];
    for (j, plane) in all.iter_mut().enumerate().take(planes) {
        *plane = &planar[j * stride..j * stride + pixels];
    }
    all
}

/// The planes of `planar`, `stride` apart, each `pixels` long (write side:
/// disjoint, since `stride >= pixels`).
fn planes_of_mut(planar: &mut [u8], stride: usize, pixels: usize, planes: usize) -> [&mut [u8]; 4] {
    let mut all: [&mut [u8]; 4] = Default::default();
    let mut rest = planar;
    for (j, plane) in all.iter_mut().enumerate().take(planes) {
        let skip = if j == 0 { 0 } else { stride - pixels };
        let (_, tail) = core::mem::take(&mut rest).split_at_mut(skip);
        let (this, tail) = tail.split_at_mut(pixels);
        *plane = this;
        rest = tail;
    }
    all
}

pub(super) fn interleave(input: &[u8], stride: usize, output: &mut [u8], planes: usize) {
    let pixels = output.len() / planes;
    let whole = pixels / STEP * STEP;
    let [a, b, c, d] = planes_of(input, stride, whole, planes);
    let width = STEP * planes;
    let pixels_out = output[..whole * planes].chunks_exact_mut(width);
    let (a, b, c, d) = (
        a.chunks_exact(STEP),
        b.chunks_exact(STEP),
        c.chunks_exact(STEP),
        d.chunks_exact(STEP),
    );
    match planes {
        2 => {
            for ((o, x), y) in pixels_out.zip(a).zip(b) {
                // SAFETY: `x` and `y` are 16 bytes and `o` 32 (chunks_exact).
                unsafe {
                    vst2q_u8(
                        o.as_mut_ptr(),
                        uint8x16x2_t(vld1q_u8(x.as_ptr()), vld1q_u8(y.as_ptr())),
                    )
                }
            }
        }
        3 => {
            for (((o, x), y), z) in pixels_out.zip(a).zip(b).zip(c) {
                // SAFETY: `x`, `y`, `z` are 16 bytes and `o` 48.
                unsafe {
                    let v = uint8x16x3_t(
                        vld1q_u8(x.as_ptr()),
                        vld1q_u8(y.as_ptr()),
                        vld1q_u8(z.as_ptr()),
                    );
                    vst3q_u8(o.as_mut_ptr(), v)
                }
            }
        }
        _ => {
            for ((((o, x), y), z), w) in pixels_out.zip(a).zip(b).zip(c).zip(d) {
                // SAFETY: `x`, `y`, `z`, `w` are 16 bytes and `o` 64.
                unsafe {
                    let v = uint8x16x4_t(
                        vld1q_u8(x.as_ptr()),
                        vld1q_u8(y.as_ptr()),
                        vld1q_u8(z.as_ptr()),
                        vld1q_u8(w.as_ptr()),
                    );
                    vst4q_u8(o.as_mut_ptr(), v)
                }
            }
        }
    }
    super::interleave_scalar(input, stride, output, planes, whole);
}

pub(super) fn deinterleave(input: &[u8], output: &mut [u8], stride: usize, planes: usize) {
    let pixels = input.len() / planes;
    let whole = pixels / STEP * STEP;
    {
        let [a, b, c, d] = planes_of_mut(output, stride, whole, planes);
        let width = STEP * planes;
        let pixels_in = input[..whole * planes].chunks_exact(width);
        let (a, b, c, d) = (
            a.chunks_exact_mut(STEP),
            b.chunks_exact_mut(STEP),
            c.chunks_exact_mut(STEP),
            d.chunks_exact_mut(STEP),
        );
        match planes {
            2 => {
                for ((i, x), y) in pixels_in.zip(a).zip(b) {
                    // SAFETY: `i` is 32 bytes, `x` and `y` 16 (chunks_exact).
                    unsafe {
                        let v = vld2q_u8(i.as_ptr());
                        vst1q_u8(x.as_mut_ptr(), v.0);
                        vst1q_u8(y.as_mut_ptr(), v.1);
                    }
                }
            }
            3 => {
                for (((i, x), y), z) in pixels_in.zip(a).zip(b).zip(c) {
                    // SAFETY: `i` is 48 bytes, `x`, `y`, `z` 16.
                    unsafe {
                        let v = vld3q_u8(i.as_ptr());
                        vst1q_u8(x.as_mut_ptr(), v.0);
                        vst1q_u8(y.as_mut_ptr(), v.1);
                        vst1q_u8(z.as_mut_ptr(), v.2);
                    }
                }
            }
            _ => {
                for ((((i, x), y), z), w) in pixels_in.zip(a).zip(b).zip(c).zip(d) {
                    // SAFETY: `i` is 64 bytes, `x`, `y`, `z`, `w` 16.
                    unsafe {
                        let v = vld4q_u8(i.as_ptr());
                        vst1q_u8(x.as_mut_ptr(), v.0);
                        vst1q_u8(y.as_mut_ptr(), v.1);
                        vst1q_u8(z.as_mut_ptr(), v.2);
                        vst1q_u8(w.as_mut_ptr(), v.3);
                    }
                }
            }
        }
    }
    super::deinterleave_scalar(input, output, stride, planes, whole);
}
