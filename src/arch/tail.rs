//! The one tail helper: kernels see whole blocks, the remainder goes through a
//! stack buffer. Nothing is read or written outside the caller's slices.

/// Elements per block in every NEON kernel: 16 (one `int8x16_t`, or two
/// `int16x8_t`, widened to four `int32x4_t`).
pub(crate) const BLOCK: usize = 16;

/// Runs `kernel` on every whole block of `input`/`output`, then on the last
/// partial block copied into a buffer padded with `pad`, and copies back only
/// the valid part. `input.len() == output.len()` (checked by the caller).
///
/// The kernel receives pointers to `BLOCK` readable input and `BLOCK` writable
/// output elements.
#[inline(always)]
pub(crate) fn for_each_block<T: Copy>(
    input: &[T],
    output: &mut [T],
    pad: T,
    mut kernel: impl FnMut(*const T, *mut T),
) {
    debug_assert_eq!(input.len(), output.len());
    let n = input.len().min(output.len());
    let whole = n - n % BLOCK;
    let (src, dst) = (input.as_ptr(), output.as_mut_ptr());
    let mut i = 0;
    while i < whole {
        // SAFETY: i + BLOCK <= whole <= n, the length of both slices, so the
        // offsets and the BLOCK elements after them are in bounds.
        let (s, d) = unsafe { (src.add(i), dst.add(i)) };
        kernel(s, d);
        i += BLOCK;
    }
    if whole < n {
        let rest = n - whole;
        let mut src = [pad; BLOCK];
        let mut dst = [pad; BLOCK];
        src[..rest].copy_from_slice(&input[whole..n]);
        kernel(src.as_ptr(), dst.as_mut_ptr());
        output[whole..n].copy_from_slice(&dst[..rest]);
    }
}
