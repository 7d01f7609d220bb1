//! [`Backend::Neon`](crate::Backend::Neon) of the 8-bit element-wise
//! activations: the prepared 256-entry table, 64 bytes at a time with
//! `tbl` / `tbx` over its four 64-byte chunks.

use core::arch::aarch64::*;

use crate::simd::lookup::lookup4;

/// `output[i] = table[input[i] as u8]` for int8 data.
#[inline(never)]
pub(crate) fn table_lookup_i8(table: &[u8; 256], input: &[i8], output: &mut [i8]) {
    let n = input.len().min(output.len());
    // SAFETY: `n` elements are readable at `input` and writable at
    // `output`; i8 and u8 share size and alignment.
    unsafe { lookup(table, input.as_ptr().cast(), output.as_mut_ptr().cast(), n) }
}

/// `output[i] = table[input[i]]` for uint8 data.
#[inline(never)]
pub(crate) fn table_lookup_u8(table: &[u8; 256], input: &[u8], output: &mut [u8]) {
    let n = input.len().min(output.len());
    // SAFETY: `n` elements are readable at `input` and writable at `output`.
    unsafe { lookup(table, input.as_ptr(), output.as_mut_ptr(), n) }
}

/// # Safety
/// `n` bytes readable at `input` and writable at `output`.
#[inline(always)]
unsafe fn lookup(table: &[u8; 256], input: *const u8, output: *mut u8, n: usize) {
    let blocks = n / 64 * 64;
    let mut i = 0;
    while i < blocks {
        // SAFETY: neon is a compile-time target feature (cfg on this module);
        // the 64 bytes at `i` are inside both buffers (i + 64 <= blocks <=
        // n, the caller's guarantee), and each chunk's 64 table bytes are
        // inside `table`.
        unsafe {
            let p = input.add(i);
            let d = [
                vld1q_u8(p),
                vld1q_u8(p.add(16)),
                vld1q_u8(p.add(32)),
                vld1q_u8(p.add(48)),
            ];
            let mut out = [vdupq_n_u8(0); 4];
            lookup4::<true>(table.as_ptr(), &d, &mut out);
            for c in 1..4u8 {
                // Indices of chunk c land in 0..64; the others wrap above
                // it and keep their lanes (tbx).
                let idx = d.map(|v| vsubq_u8(v, vdupq_n_u8(64 * c)));
                lookup4::<false>(table.as_ptr().add(64 * c as usize), &idx, &mut out);
            }
            let o = output.add(i);
            vst1q_u8(o, out[0]);
            vst1q_u8(o.add(16), out[1]);
            vst1q_u8(o.add(32), out[2]);
            vst1q_u8(o.add(48), out[3]);
        }
        i += 64;
    }
    for j in blocks..n {
        // SAFETY: j < n, inside both buffers (the caller's guarantee).
        unsafe { *output.add(j) = table[*input.add(j) as usize] }
    }
}
