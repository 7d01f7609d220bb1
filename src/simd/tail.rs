//! The one tail helper: kernels see whole blocks of `W` elements; the last,
//! partial block goes through stack buffers padded with a fill value, so
//! nothing outside the caller's slices is read or written.
//!
//! The core is [`map_tail`] / [`read_tail_raw`] (one partial block); the
//! block walkers [`map_blocks`], [`map_blocks_at`] and [`read_blocks`] feed
//! whole blocks straight from the slices and the rest through them, and
//! [`map_blocks_raw`] does the same for kernels that run in place. Kernels
//! with their own whole-block loop (unrolled, counting down) call the tail
//! functions directly.

/// Elements per block in the NEON kernels of 8- and 16-bit data: 16 (one
/// `int8x16_t`, or two `int16x8_t`, widened to four `int32x4_t`).
pub(crate) const BLOCK: usize = 16;

/// Runs `f` on one partial block: `src` (shorter than `W`) copied into a
/// buffer of `W` filled with `pad`, `f` writing a buffer of `W`, and the first
/// `src.len()` of those copied to `dst` (as long as `src`).
#[inline(always)]
pub(crate) fn map_tail<const W: usize, T: Copy>(
    src: &[T],
    dst: &mut [T],
    pad: T,
    f: impl FnOnce(*const T, *mut T),
) {
    let rest = src.len();
    debug_assert!(rest < W && dst.len() == rest);
    let mut src_buf = [pad; W];
    let mut dst_buf = [pad; W];
    src_buf[..rest].copy_from_slice(src);
    f(src_buf.as_ptr(), dst_buf.as_mut_ptr());
    dst.copy_from_slice(&dst_buf[..rest]);
}

/// Runs `f` on one partial block for reading: the `rest < W` elements at
/// `src` copied into a buffer of `W` filled with `pad`.
///
/// # Safety
/// `src` must be valid for reading `rest` elements.
#[inline(always)]
pub(crate) unsafe fn read_tail_raw<const W: usize, T: Copy, R>(
    src: *const T,
    rest: usize,
    pad: T,
    f: impl FnOnce(*const T) -> R,
) -> R {
    debug_assert!(rest < W);
    let mut buf = [pad; W];
    // SAFETY: `src[..rest]` is readable (the caller) and the local buffer
    // holds W > rest elements; they do not overlap.
    unsafe { core::ptr::copy_nonoverlapping(src, buf.as_mut_ptr(), rest) };
    f(buf.as_ptr())
}

/// [`read_tail_raw`] on a slice shorter than `W`.
#[inline(always)]
pub(crate) fn read_tail<const W: usize, T: Copy, R>(
    src: &[T],
    pad: T,
    f: impl FnOnce(*const T) -> R,
) -> R {
    let rest = src.len().min(W - 1);
    // SAFETY: `rest` is at most the slice's length.
    unsafe { read_tail_raw::<W, T, R>(src.as_ptr(), rest, pad, f) }
}

/// Calls `f(src, dst)` for each `W`-element block of `input` / `output`
/// (`input.len() == output.len()`, checked by the caller; only the common
/// length is touched): whole blocks in place, then the partial block through
/// [`map_tail`] (input padded with `pad`).
#[inline(always)]
pub(crate) fn map_blocks<const W: usize, T: Copy>(
    input: &[T],
    output: &mut [T],
    pad: T,
    mut f: impl FnMut(*const T, *mut T),
) {
    debug_assert_eq!(input.len(), output.len());
    let n = input.len().min(output.len());
    let whole = n - n % W;
    let (src, dst) = (input.as_ptr(), output.as_mut_ptr());
    let mut i = 0;
    while i < whole {
        // SAFETY: i + W <= whole <= n, the length of both slices, so the
        // offsets and the W elements after them are in bounds.
        let (s, d) = unsafe { (src.add(i), dst.add(i)) };
        f(s, d);
        i += W;
    }
    if whole < n {
        map_tail::<W, T>(
            &input[whole..n],
            &mut output[whole..n],
            pad,
            // A closure rather than `f` itself: moved into `map_tail`, `f`
            // would be called through `FnOnce::call_once`, which LLVM then
            // keeps out of line.
            #[allow(clippy::redundant_closure)]
            #[inline(always)]
            |s, d| f(s, d),
        );
    }
}

/// [`map_blocks`] that also tells `f` where each block starts:
/// `f(src, dst, start)` (the same walk; its own loop, as the
/// `Method::DequantF32` kernels were measured with).
#[inline(always)]
pub(crate) fn map_blocks_at<const W: usize, T: Copy>(
    input: &[T],
    output: &mut [T],
    pad: T,
    mut f: impl FnMut(*const T, *mut T, usize),
) {
    debug_assert_eq!(input.len(), output.len());
    let n = input.len().min(output.len());
    let whole = n - n % W;
    let mut start = 0;
    while start < whole {
        // SAFETY: start + W <= whole <= n, the length of both slices.
        let (s, d) = unsafe { (input.as_ptr().add(start), output.as_mut_ptr().add(start)) };
        f(s, d, start);
        start += W;
    }
    if whole < n {
        map_tail::<W, T>(
            &input[whole..n],
            &mut output[whole..n],
            pad,
            #[inline(always)]
            |s, d| f(s, d, whole),
        );
    }
}

/// [`map_blocks`] on `src[..len]` / `dst[..len]` given by pointers, which
/// may be the same buffer (kernels that run in place).
///
/// # Safety
/// `src` must be valid for reading and `dst` for writing `len` elements;
/// they are either the same buffer or do not overlap.
#[inline(always)]
pub(crate) unsafe fn map_blocks_raw<const W: usize, T: Copy>(
    src: *const T,
    dst: *mut T,
    len: usize,
    pad: T,
    mut f: impl FnMut(*const T, *mut T),
) {
    let whole = len - len % W;
    let mut i = 0;
    while i < whole {
        // SAFETY: i + W <= whole <= len: both blocks are in bounds.
        let (s, d) = unsafe { (src.add(i), dst.add(i)) };
        f(s, d);
        i += W;
    }
    if whole < len {
        let rest = len - whole;
        // The input's tail is copied out before the output's is borrowed:
        // the two may be the same memory.
        let mut tail_in = [pad; W];
        // SAFETY: `src[whole..len]` is readable (the caller); `tail_in` is a
        // distinct local with room for W > rest elements.
        unsafe { core::ptr::copy_nonoverlapping(src.add(whole), tail_in.as_mut_ptr(), rest) };
        // SAFETY: `dst[whole..len]` is writable (the caller) and no other
        // reference to it is live.
        let tail_out = unsafe { core::slice::from_raw_parts_mut(dst.add(whole), rest) };
        map_tail::<W, T>(
            &tail_in[..rest],
            tail_out,
            pad,
            // A closure rather than `f` itself: moved into `map_tail`, `f`
            // would be called through `FnOnce::call_once`, which LLVM then
            // keeps out of line.
            #[allow(clippy::redundant_closure)]
            #[inline(always)]
            |s, d| f(s, d),
        );
    }
}

/// Calls `f(src, start, valid)` for each `W`-element block of `src[..len]`:
/// whole blocks in place (`valid == W`), then the partial block through
/// [`read_tail_raw`] (padded with `pad`; its first `valid` lanes are the
/// row's). Always inlined, so `valid` is a constant in the main loop.
///
/// # Safety
/// `src` must be valid for reading `len` elements.
#[inline(always)]
pub(crate) unsafe fn read_blocks_raw<const W: usize, T: Copy>(
    src: *const T,
    len: usize,
    pad: T,
    mut f: impl FnMut(*const T, usize, usize),
) {
    let whole = len - len % W;
    let mut start = 0;
    while start < whole {
        // SAFETY: start + W <= whole <= len: the block is in bounds.
        f(unsafe { src.add(start) }, start, W);
        start += W;
    }
    if whole < len {
        let rest = len - whole;
        // SAFETY: the last `rest` elements are in bounds.
        unsafe {
            read_tail_raw::<W, T, ()>(
                src.add(whole),
                rest,
                pad,
                #[inline(always)]
                |s| f(s, whole, rest),
            )
        }
    }
}

/// [`read_blocks_raw`] over a slice.
#[inline(always)]
pub(crate) fn read_blocks<const W: usize, T: Copy>(
    row: &[T],
    pad: T,
    f: impl FnMut(*const T, usize, usize),
) {
    // SAFETY: the slice is readable for its length.
    unsafe { read_blocks_raw::<W, T>(row.as_ptr(), row.len(), pad, f) }
}

/// [`map_blocks`] between slices of different element types (`f32` to a
/// quantized type and back): whole `W`-element blocks in place, then the
/// partial block through stack buffers padded with `pad_in` / `pad_out`.
/// `input.len() == output.len()` is checked by the caller; only the common
/// length is touched.
#[inline(always)]
pub(crate) fn map_blocks_across<const W: usize, A: Copy, B: Copy>(
    input: &[A],
    output: &mut [B],
    pad_in: A,
    pad_out: B,
    mut f: impl FnMut(*const A, *mut B),
) {
    debug_assert_eq!(input.len(), output.len());
    let n = input.len().min(output.len());
    let whole = n - n % W;
    let mut i = 0;
    while i < whole {
        // SAFETY: i + W <= whole <= n, the length of both slices, so the
        // offsets and the W elements after them are in bounds.
        let (s, d) = unsafe { (input.as_ptr().add(i), output.as_mut_ptr().add(i)) };
        f(s, d);
        i += W;
    }
    if whole < n {
        let rest = n - whole;
        let mut src_buf = [pad_in; W];
        let mut dst_buf = [pad_out; W];
        src_buf[..rest].copy_from_slice(&input[whole..n]);
        f(src_buf.as_ptr(), dst_buf.as_mut_ptr());
        output[whole..n].copy_from_slice(&dst_buf[..rest]);
    }
}
