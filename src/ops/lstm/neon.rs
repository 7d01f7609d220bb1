//! The gate matrix products on NEON: four weight rows against one input
//! row per step of 16 depth bytes, with `sdot` (FEAT_DotProd, detected at
//! run time) or widening multiplies (`smull` + `sadalp`). The depth tail
//! below 16 is summed in scalar code. The int32 sums wrap like the scalar
//! reference's, so every path gives its values exactly.

use crate::backend::CpuFeatures;
use core::arch::aarch64::*;

/// `acc += dot4(w, x)` per 32-bit lane: `sdot`. The feature is on the
/// function itself so that the assembler takes `sdot` in every build (a
/// bare-metal target's default features lack it).
#[inline]
#[target_feature(enable = "dotprod")]
unsafe fn sdot(acc: int32x4_t, w: int8x16_t, x: int8x16_t) -> int32x4_t {
    let mut acc = acc;
    // SAFETY: `sdot` on vector registers has no memory, stack or flag
    // effects; it is only reached from `mat_vec_dot`, which requires dotprod
    // (the intrinsic is not stable, hence the asm).
    unsafe {
        core::arch::asm!(
            "sdot {acc:v}.4s, {w:v}.16b, {x:v}.16b",
            acc = inout(vreg) acc,
            w = in(vreg) w,
            x = in(vreg) x,
            options(pure, nomem, nostack, preserves_flags),
        );
    }
    acc
}

/// `acc += pairwise sums of w * x` (16 products into 4 lanes): widening.
#[inline(always)]
fn widening(acc: int32x4_t, w: int8x16_t, x: int8x16_t) -> int32x4_t {
    // SAFETY: register-only NEON arithmetic (NEON is a target feature here).
    unsafe {
        let acc = vpadalq_s16(acc, vmull_s8(vget_low_s8(w), vget_low_s8(x)));
        vpadalq_s16(acc, vmull_high_s8(w, x))
    }
}

/// The tail of one row's dot product past the vector steps.
#[inline(always)]
fn tail(w: &[i8], x: &[i8]) -> i32 {
    w.iter()
        .zip(x)
        .fold(0i32, |acc, (&w, &x)| acc.wrapping_add(w as i32 * x as i32))
}

/// The one loop of both paths; `step` is `sdot` or `widening`.
#[inline(always)]
fn mat_vec_with(
    weights: &[i8],
    rows: usize,
    cols: usize,
    x: &[i8],
    dots: &mut [i32],
    step: impl Fn(int32x4_t, int8x16_t, int8x16_t) -> int32x4_t,
) {
    let vec_cols = cols / 16 * 16;
    for (xb, db) in x.chunks_exact(cols).zip(dots.chunks_exact_mut(rows)) {
        let mut r = 0;
        while r + 4 <= rows {
            let w = &weights[r * cols..(r + 4) * cols];
            // SAFETY: every load reads 16 bytes at an offset `c < vec_cols
            // <= cols` of a row of `w` (4 rows of `cols` bytes) or of `xb`
            // (`cols` bytes), so within the slices.
            let sums = unsafe {
                let mut acc = [vdupq_n_s32(0); 4];
                let mut c = 0;
                while c < vec_cols {
                    let xv = vld1q_s8(xb.as_ptr().add(c));
                    for (j, a) in acc.iter_mut().enumerate() {
                        *a = step(*a, vld1q_s8(w.as_ptr().add(j * cols + c)), xv);
                    }
                    c += 16;
                }
                [
                    vaddvq_s32(acc[0]),
                    vaddvq_s32(acc[1]),
                    vaddvq_s32(acc[2]),
                    vaddvq_s32(acc[3]),
                ]
            };
            for (j, s) in sums.iter().enumerate() {
                let row = &w[j * cols..(j + 1) * cols];
                db[r + j] = s.wrapping_add(tail(&row[vec_cols..], &xb[vec_cols..]));
            }
            r += 4;
        }
        while r < rows {
            let row = &weights[r * cols..(r + 1) * cols];
            // SAFETY: as above, one row.
            let s = unsafe {
                let mut acc = vdupq_n_s32(0);
                let mut c = 0;
                while c < vec_cols {
                    acc = step(
                        acc,
                        vld1q_s8(row.as_ptr().add(c)),
                        vld1q_s8(xb.as_ptr().add(c)),
                    );
                    c += 16;
                }
                vaddvq_s32(acc)
            };
            db[r] = s.wrapping_add(tail(&row[vec_cols..], &xb[vec_cols..]));
            r += 1;
        }
    }
}

/// `sdot` path.
#[target_feature(enable = "dotprod")]
unsafe fn mat_vec_dot(weights: &[i8], rows: usize, cols: usize, x: &[i8], dots: &mut [i32]) {
    // SAFETY: this function requires dotprod, so `sdot` may run.
    mat_vec_with(weights, rows, cols, x, dots, |acc, w, x| unsafe {
        sdot(acc, w, x)
    })
}

/// `dots[b * rows + r] = sum_c weights[r * cols + c] * x[b * cols + c]`, as
/// `scalar::mat_vec`. The caller checked the lengths (`weights` `rows *
/// cols`, `x` a whole number of `cols` rows, `dots` `rows` per row of `x`).
pub(crate) fn mat_vec(weights: &[i8], rows: usize, cols: usize, x: &[i8], dots: &mut [i32]) {
    if CpuFeatures::detect().dotprod {
        // SAFETY: the CPU has dotprod (checked just above).
        unsafe { mat_vec_dot(weights, rows, cols, x, dots) }
    } else {
        mat_vec_with(weights, rows, cols, x, dots, widening)
    }
}

/// The widening path alone, for tests on CPUs with dotprod.
#[cfg(test)]
pub(crate) fn mat_vec_widening(
    weights: &[i8],
    rows: usize,
    cols: usize,
    x: &[i8],
    dots: &mut [i32],
) {
    mat_vec_with(weights, rows, cols, x, dots, widening)
}
