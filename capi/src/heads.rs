//! The attention-head transposes (qneon's `split_heads` and
//! `merge_heads`): `[seq, heads * head_dim]` to `[heads, seq, head_dim]` and
//! back, per element type. No handle: nothing is prepared.

use crate::entry::{buffers, guard, product, Failure, QneonStatus};

/// `seq * heads * head_dim`, or a length failure when it overflows.
fn elements(seq: usize, heads: usize, head_dim: usize) -> Result<usize, Failure> {
    product(
        "seq * heads * head_dim",
        product("seq * heads", seq, heads)?,
        head_dim,
    )
}

/// `split_heads` or `merge_heads` for one element type.
type Transpose<T> = fn(&[T], &mut [T], usize, usize, usize) -> qneon::Result<()>;

/// Runs `op` on the `seq * heads * head_dim` elements at `input` and
/// `output`.
///
/// # Safety
/// As the entry points: `input` null or readable, `output` null or
/// writable, for that many elements.
unsafe fn transpose<T: Copy>(
    op: Transpose<T>,
    input: *const T,
    output: *mut T,
    seq: usize,
    heads: usize,
    head_dim: usize,
) -> QneonStatus {
    guard(|| {
        let len = elements(seq, heads, head_dim)?;
        // SAFETY: forwarded from the caller.
        let (input, output) = unsafe { buffers(input, output, len)? };
        Ok(op(input, output, seq, heads, head_dim)?)
    })
}

/// `[seq, heads * head_dim]` (row-major) to `[heads, seq, head_dim]`, int8 elements: `input` and `output` each hold `seq * heads *
/// head_dim` elements (`heads` and `head_dim` at least 1).
///
/// # Safety
/// `input` must be null or readable and `output` null or writable for
/// `seq * heads * head_dim` elements, during the call.
#[no_mangle]
pub unsafe extern "C" fn qneon_split_heads_i8(
    input: *const i8,
    output: *mut i8,
    seq: usize,
    heads: usize,
    head_dim: usize,
) -> QneonStatus {
    // SAFETY: forwarded from the caller.
    unsafe {
        transpose(
            qneon::split_heads::<i8>,
            input,
            output,
            seq,
            heads,
            head_dim,
        )
    }
}

/// `[heads, seq, head_dim]` back to `[seq, heads * head_dim]`, int8 elements: `input` and `output` each hold `seq * heads *
/// head_dim` elements (`heads` and `head_dim` at least 1).
///
/// # Safety
/// `input` must be null or readable and `output` null or writable for
/// `seq * heads * head_dim` elements, during the call.
#[no_mangle]
pub unsafe extern "C" fn qneon_merge_heads_i8(
    input: *const i8,
    output: *mut i8,
    seq: usize,
    heads: usize,
    head_dim: usize,
) -> QneonStatus {
    // SAFETY: forwarded from the caller.
    unsafe {
        transpose(
            qneon::merge_heads::<i8>,
            input,
            output,
            seq,
            heads,
            head_dim,
        )
    }
}

/// `[seq, heads * head_dim]` (row-major) to `[heads, seq, head_dim]`, uint8 elements: `input` and `output` each hold `seq * heads *
/// head_dim` elements (`heads` and `head_dim` at least 1).
///
/// # Safety
/// `input` must be null or readable and `output` null or writable for
/// `seq * heads * head_dim` elements, during the call.
#[no_mangle]
pub unsafe extern "C" fn qneon_split_heads_u8(
    input: *const u8,
    output: *mut u8,
    seq: usize,
    heads: usize,
    head_dim: usize,
) -> QneonStatus {
    // SAFETY: forwarded from the caller.
    unsafe {
        transpose(
            qneon::split_heads::<u8>,
            input,
            output,
            seq,
            heads,
            head_dim,
        )
    }
}

/// `[heads, seq, head_dim]` back to `[seq, heads * head_dim]`, uint8 elements: `input` and `output` each hold `seq * heads *
/// head_dim` elements (`heads` and `head_dim` at least 1).
///
/// # Safety
/// `input` must be null or readable and `output` null or writable for
/// `seq * heads * head_dim` elements, during the call.
#[no_mangle]
pub unsafe extern "C" fn qneon_merge_heads_u8(
    input: *const u8,
    output: *mut u8,
    seq: usize,
    heads: usize,
    head_dim: usize,
) -> QneonStatus {
    // SAFETY: forwarded from the caller.
    unsafe {
        transpose(
            qneon::merge_heads::<u8>,
            input,
            output,
            seq,
            heads,
            head_dim,
        )
    }
}

/// `[seq, heads * head_dim]` (row-major) to `[heads, seq, head_dim]`, int16 elements: `input` and `output` each hold `seq * heads *
/// head_dim` elements (`heads` and `head_dim` at least 1).
///
/// # Safety
/// `input` must be null or readable and `output` null or writable for
/// `seq * heads * head_dim` elements, during the call.
#[no_mangle]
pub unsafe extern "C" fn qneon_split_heads_i16(
    input: *const i16,
    output: *mut i16,
    seq: usize,
    heads: usize,
    head_dim: usize,
) -> QneonStatus {
    // SAFETY: forwarded from the caller.
    unsafe {
        transpose(
            qneon::split_heads::<i16>,
            input,
            output,
            seq,
            heads,
            head_dim,
        )
    }
}

/// `[heads, seq, head_dim]` back to `[seq, heads * head_dim]`, int16 elements: `input` and `output` each hold `seq * heads *
/// head_dim` elements (`heads` and `head_dim` at least 1).
///
/// # Safety
/// `input` must be null or readable and `output` null or writable for
/// `seq * heads * head_dim` elements, during the call.
#[no_mangle]
pub unsafe extern "C" fn qneon_merge_heads_i16(
    input: *const i16,
    output: *mut i16,
    seq: usize,
    heads: usize,
    head_dim: usize,
) -> QneonStatus {
    // SAFETY: forwarded from the caller.
    unsafe {
        transpose(
            qneon::merge_heads::<i16>,
            input,
            output,
            seq,
            heads,
            head_dim,
        )
    }
}

/// `[seq, heads * head_dim]` (row-major) to `[heads, seq, head_dim]`, float elements: `input` and `output` each hold `seq * heads *
/// head_dim` elements (`heads` and `head_dim` at least 1).
///
/// # Safety
/// `input` must be null or readable and `output` null or writable for
/// `seq * heads * head_dim` elements, during the call.
#[no_mangle]
pub unsafe extern "C" fn qneon_split_heads_f32(
    input: *const f32,
    output: *mut f32,
    seq: usize,
    heads: usize,
    head_dim: usize,
) -> QneonStatus {
    // SAFETY: forwarded from the caller.
    unsafe {
        transpose(
            qneon::split_heads::<f32>,
            input,
            output,
            seq,
            heads,
            head_dim,
        )
    }
}

/// `[heads, seq, head_dim]` back to `[seq, heads * head_dim]`, float elements: `input` and `output` each hold `seq * heads *
/// head_dim` elements (`heads` and `head_dim` at least 1).
///
/// # Safety
/// `input` must be null or readable and `output` null or writable for
/// `seq * heads * head_dim` elements, during the call.
#[no_mangle]
pub unsafe extern "C" fn qneon_merge_heads_f32(
    input: *const f32,
    output: *mut f32,
    seq: usize,
    heads: usize,
    head_dim: usize,
) -> QneonStatus {
    // SAFETY: forwarded from the caller.
    unsafe {
        transpose(
            qneon::merge_heads::<f32>,
            input,
            output,
            seq,
            heads,
            head_dim,
        )
    }
}
