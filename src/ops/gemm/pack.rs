//! The packed weight layout of the GEMM (see [`Gemm`](crate::Gemm)): blocks
//! of [`NR`] output channels, the depth padded to a multiple of [`KC`] in
//! groups of 4 bytes, and the portable packing (the NEON one is
//! `neon::pack`).

/// Output channels per packed weight block (the NEON tile width).
pub(crate) const NR: usize = 8;
/// Depth bytes per NEON step; the packed depth is padded to a multiple of it.
pub(crate) const KC: usize = 16;

/// Index of weight `(c, d)` in the packed layout of depth `k_padded`.
#[inline(always)]
pub(crate) fn packed_index(k_padded: usize, c: usize, d: usize) -> usize {
    (c / NR) * NR * k_padded + (d / 4) * 4 * NR + (c % NR) * 4 + d % 4
}

/// Packs rows `c0..c1` of the `n x k` row-major `w` into `packed` (depth
/// `k_padded`) from depth `d0` (a multiple of 4) on, one group of 4 depth
/// bytes (or the last, shorter one) at a time.
pub(crate) fn pack_rows_groups(
    packed: &mut [i8],
    w: &[i8],
    c0: usize,
    c1: usize,
    d0: usize,
    k: usize,
    k_padded: usize,
) {
    debug_assert!(d0.is_multiple_of(4));
    for c in c0..c1 {
        let row = &w[c * k + d0..(c + 1) * k];
        let dst = &mut packed[packed_index(k_padded, c, d0)..];
        let mut groups = row.chunks_exact(4);
        for (g, q) in (&mut groups).enumerate() {
            dst[32 * g..32 * g + 4].copy_from_slice(q);
        }
        let rest = groups.remainder();
        if !rest.is_empty() {
            let g = (k - d0) / 4;
            dst[32 * g..32 * g + rest.len()].copy_from_slice(rest);
        }
    }
}

/// Packs weights `(c, d)` = `wt[d * n + c]` for `c` in `c0..c1`, `d` in
/// `d0..d1` into `packed` (depth `k_padded`), byte by byte.
#[allow(clippy::too_many_arguments)]
pub(crate) fn pack_columns_bytes(
    packed: &mut [i8],
    wt: &[i8],
    c0: usize,
    c1: usize,
    d0: usize,
    d1: usize,
    n: usize,
    k_padded: usize,
) {
    for d in d0..d1 {
        for c in c0..c1 {
            packed[packed_index(k_padded, c, d)] = wt[d * n + c];
        }
    }
}

/// The 8 channel sums (wrapping) of one packed block, and its smallest weight.
#[cfg_attr(
    all(target_arch = "aarch64", target_feature = "neon"),
    allow(dead_code)
)]
pub(crate) fn block_sums(block: &[i8]) -> ([i32; NR], i8) {
    let mut sums = [0i32; NR];
    let mut min = i8::MAX;
    for group in block.chunks_exact(4 * NR) {
        for (j, sum) in sums.iter_mut().enumerate() {
            for &v in &group[4 * j..4 * j + 4] {
                *sum = sum.wrapping_add(v as i32);
                min = min.min(v);
            }
        }
    }
    (sums, min)
}
