//! The `capi` target's harness: C buffers placed as the fuzzer says (valid,
//! null, misaligned, of a length whose byte size overflows, or written
//! over another buffer), the status a call must return before it reaches
//! the library (the C API's documented checks, in its order), and the
//! comparison with the Rust API when it does.

use std::ffi::CStr;

use arbitrary::Arbitrary;
use qneon::{Backend, Error};
use qneon_capi::{qneon_last_error_message, QneonStatus};

/// Where a buffer's pointer points.
#[derive(Arbitrary, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Place {
    /// Memory for its length, filled with the case's data.
    Valid,
    /// Null (an error unless the length is 0).
    Null,
    /// One byte past an aligned address (an error for types wider than a
    /// byte, unless the length is 0).
    Misaligned,
}

/// A C buffer of `len` `T`s at `ptr`, with the memory behind it.
pub struct Buf<T> {
    pub ptr: *mut T,
    pub len: usize,
    place: Place,
    name: &'static str,
    write: bool,
    _storage: Vec<u64>,
}

/// The length of a buffer whose byte size exceeds `isize::MAX`.
pub fn huge<T>() -> usize {
    isize::MAX as usize / std::mem::size_of::<T>() + 1
}

impl<T: Copy> Buf<T> {
    /// A buffer of `len` elements placed at `place`; a valid one holds
    /// `fill(i)`. A length from [`huge`] gets the memory of one element
    /// (the API must refuse it before reading).
    pub fn new(
        name: &'static str,
        place: Place,
        len: usize,
        write: bool,
        fill: impl Fn(usize) -> T,
    ) -> Buf<T> {
        let size = std::mem::size_of::<T>();
        // A length beyond any real allocation (a huge one, or one shared
        // with a buffer of a wider type whose length is huge) gets the
        // memory of one element: the call must fail on it or on an earlier
        // buffer before touching it (ASan reports it if not).
        let real = if len >= 1 << 24 { 1 } else { len };
        let mut storage = vec![0u64; (real * size).div_ceil(8) + 2];
        let base = storage.as_mut_ptr() as *mut u8;
        let ptr = match place {
            Place::Null => std::ptr::null_mut(),
            // SAFETY: one byte into an allocation of at least 16 bytes.
            Place::Misaligned => (unsafe { base.add(1) }) as *mut T,
            Place::Valid => base as *mut T,
        };
        if place == Place::Valid && len == real {
            for i in 0..len {
                // SAFETY: `storage` holds `len` aligned elements of `T`
                // (8-byte alignment covers every element type here).
                unsafe { ptr.add(i).write(fill(i)) };
            }
        }
        Buf {
            ptr,
            len,
            place,
            name,
            write,
            _storage: storage,
        }
    }

    /// This buffer's pointer over `other`'s memory (an output written over
    /// an input); `other` must outlive the result, whose memory it is.
    pub fn over<U>(name: &'static str, other: &Buf<U>, len: usize) -> Buf<T> {
        Buf {
            ptr: other.ptr as *mut T,
            len,
            place: other.place,
            name,
            write: true,
            _storage: Vec::new(),
        }
    }

    /// The contents (a valid buffer of a real length).
    pub fn values(&self) -> Vec<T> {
        if self.len == 0 {
            // Its pointer may be null.
            return Vec::new();
        }
        // SAFETY: a valid buffer holds `len` initialised elements.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }.to_vec()
    }

    /// The C API's check of this buffer, or `None` if it passes.
    pub fn check(&self) -> Option<QneonStatus> {
        let align = std::mem::align_of::<T>();
        if self.len == 0 {
            None
        } else if self.ptr.is_null() {
            Some(QneonStatus::NullPointer)
        } else if !(self.ptr as usize).is_multiple_of(align) {
            Some(QneonStatus::InvalidArgument)
        } else if self.len >= huge::<T>() {
            Some(QneonStatus::Length)
        } else {
            None
        }
    }

    /// Where this buffer lies (for the overlap check).
    pub fn span(&self) -> Span {
        let start = self.ptr as usize;
        let bytes = if self.len >= huge::<T>() {
            0
        } else {
            self.len * std::mem::size_of::<T>()
        };
        Span {
            name: self.name,
            start,
            end: start + bytes,
            write: self.write,
        }
    }
}

/// A buffer's address range and whether the call writes it.
#[derive(Clone, Copy, Debug)]
pub struct Span {
    pub name: &'static str,
    pub start: usize,
    pub end: usize,
    pub write: bool,
}

/// The overlap check: a written buffer sharing a byte with another
/// non-empty buffer.
pub fn overlap(spans: &[Span]) -> Option<QneonStatus> {
    for (i, a) in spans.iter().enumerate() {
        for b in &spans[i + 1..] {
            let empty = a.start == a.end || b.start == b.end;
            if (a.write || b.write) && !empty && a.start < b.end && b.start < a.end {
                return Some(QneonStatus::InvalidArgument);
            }
        }
    }
    None
}

/// The first failing check of a call: `checks` in the API's order.
pub fn first(checks: impl IntoIterator<Item = Option<QneonStatus>>) -> Option<QneonStatus> {
    checks.into_iter().flatten().next()
}

/// The backend a `QNEON_BACKEND_*` value names, or `None` out of range.
pub fn backend(value: u32) -> Option<Backend> {
    match value {
        0 => Some(Backend::best()),
        1 => Some(Backend::Scalar),
        2 => Some(Backend::Neon),
        _ => None,
    }
}

/// An enumeration's check: out of range is an invalid argument.
pub fn in_range(value: u32, count: u32) -> Option<QneonStatus> {
    (value >= count).then_some(QneonStatus::InvalidArgument)
}

/// The status the C API documents for a library error.
pub fn status_of(e: &Error) -> QneonStatus {
    match e {
        Error::LengthMismatch { .. }
        | Error::RowLength { .. }
        | Error::Length { .. }
        | Error::ZeroDimension { .. } => QneonStatus::Length,
        Error::Unsupported { .. } => QneonStatus::Unsupported,
        Error::BackendUnavailable { .. } => QneonStatus::BackendUnavailable,
        Error::Allocation { .. } => QneonStatus::Allocation,
        _ => QneonStatus::InvalidArgument,
    }
}

/// The calling thread's last error message.
pub fn last_error() -> String {
    let p = qneon_last_error_message();
    assert!(!p.is_null(), "the message getter returned null");
    // SAFETY: non-null, and the API returns a NUL-terminated string.
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}

/// Checks a C call's `status` against its expected pre-check failure
/// `pre`, else against the Rust API's result `rust()` (computed only when
/// every pre-check passed, so its buffers are valid): the same status, the
/// library's message on failure, a message after any failure. True when
/// both succeeded (the caller then compares the outputs).
pub fn agree<T>(
    what: &str,
    status: QneonStatus,
    pre: Option<QneonStatus>,
    rust: impl FnOnce() -> qneon::Result<T>,
) -> Option<T> {
    if let Some(p) = pre {
        assert_eq!(
            status,
            p,
            "{what}: the C API's own check ({})",
            last_error()
        );
        assert!(
            !last_error().is_empty(),
            "{what}: no message after an error"
        );
        return None;
    }
    match rust() {
        Ok(v) => {
            assert_eq!(
                status,
                QneonStatus::Ok,
                "{what}: C failed where Rust succeeded: {}",
                last_error()
            );
            Some(v)
        }
        Err(e) => {
            assert_eq!(status, status_of(&e), "{what}: {e}");
            assert_eq!(last_error(), e.to_string(), "{what}");
            None
        }
    }
}

/// Bit patterns, so that NaN compares equal to itself.
pub fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}
