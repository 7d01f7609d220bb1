//! What every entry point shares: the C types (status, method, backend,
//! quantization parameters), the thread-local last error, the panic guard,
//! and the checked conversion of C pointers and lengths into slices.

use std::cell::RefCell;
use std::ffi::{c_char, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};

use qneon::{Backend, Error, Method, QuantParams};

/// The result of every fallible call. `QNEON_STATUS_OK` is 0; on anything
/// else `qneon_last_error_message()` says why.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QneonStatus {
    /// Success.
    Ok = 0,
    /// A pointer that must not be null was null (a buffer with a length
    /// above 0, a handle, or the handle output of `create`).
    NullPointer = 1,
    /// A parameter outside its domain: a scale, zero point, `beta`,
    /// `integer_bits`, an output quantization the op does not accept, an
    /// enum value out of range, a misaligned pointer, overlapping buffers.
    InvalidArgument = 2,
    /// Buffer lengths that do not fit: a length whose byte size overflows,
    /// a `row_len` of 0 or one that does not divide the length.
    Length = 3,
    /// The op, element type and method combination is not implemented.
    Unsupported = 4,
    /// The requested backend is not available on this target or CPU.
    BackendUnavailable = 5,
    /// Memory could not be allocated.
    Allocation = 6,
    /// A bug in qneon: a panic was caught at the boundary.
    Internal = 7,
}

/// The algorithm of an operator (qneon's `Method`); passed as `uint32_t`.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QneonMethod {
    /// Integer-only fixed point, bit-exact with TFLite's reference kernels.
    FixedPoint = 0,
    /// TFLite's table kernels (its interpreter's builtin kernels), bit-exact.
    Lut = 1,
    /// A table of the fixed-point results (int8/uint8 logistic and tanh).
    LutFixedPoint = 2,
    /// Dequantize, compute in `float`, requantize (within 1 LSB).
    DequantF32 = 3,
}

/// The instruction set a `run` uses (qneon's `Backend`, or the best one);
/// passed as `uint32_t`. It never changes a result byte.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QneonBackend {
    /// The fastest available here (NEON on aarch64, else scalar).
    Best = 0,
    /// Portable scalar code, the reference.
    Scalar = 1,
    /// aarch64 NEON.
    Neon = 2,
}

/// Per-tensor affine quantization: `real = scale * (q - zero_point)`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct QneonQuantParams {
    /// Real value of one quantization step; finite and > 0.
    pub scale: f32,
    /// The quantized value of real 0; within the element type's range.
    pub zero_point: i32,
}

impl From<QneonQuantParams> for QuantParams {
    fn from(q: QneonQuantParams) -> QuantParams {
        QuantParams::new(q.scale, q.zero_point)
    }
}

impl From<QuantParams> for QneonQuantParams {
    fn from(q: QuantParams) -> QneonQuantParams {
        QneonQuantParams {
            scale: q.scale,
            zero_point: q.zero_point,
        }
    }
}

/// A failed call: its status and message.
pub(crate) struct Failure {
    status: QneonStatus,
    message: String,
}

impl Failure {
    pub(crate) fn new(status: QneonStatus, message: impl Into<String>) -> Failure {
        Failure {
            status,
            message: message.into(),
        }
    }

    #[cfg(test)]
    pub(crate) fn message(&self) -> &str {
        &self.message
    }
}

impl From<Error> for Failure {
    fn from(e: Error) -> Failure {
        let status = match e {
            Error::LengthMismatch { .. }
            | Error::RowLength { .. }
            | Error::Length { .. }
            | Error::ZeroDimension { .. } => QneonStatus::Length,
            Error::Unsupported { .. } => QneonStatus::Unsupported,
            Error::BackendUnavailable { .. } => QneonStatus::BackendUnavailable,
            Error::Allocation { .. } => QneonStatus::Allocation,
            _ => QneonStatus::InvalidArgument,
        };
        Failure::new(status, e.to_string())
    }
}

thread_local! {
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
}

fn set_last_error(message: &str) {
    // Interior NULs cannot occur in qneon's messages; replace them anyway.
    let c = CString::new(message.replace('\0', " ")).unwrap_or_default();
    LAST_ERROR.with(|e| *e.borrow_mut() = c);
}

/// The message of the last call on this thread that failed ("" if none
/// has). The pointer stays valid until the next failing call on this thread;
/// copy the text to keep it.
#[no_mangle]
pub extern "C" fn qneon_last_error_message() -> *const c_char {
    catch_unwind(|| LAST_ERROR.with(|e| e.borrow().as_ptr())).unwrap_or(c"".as_ptr())
}

/// Runs an entry point's body: its failure becomes a status and the last
/// error, and a panic becomes [`QneonStatus::Internal`] instead of crossing
/// the boundary.
pub(crate) fn guard(body: impl FnOnce() -> Result<(), Failure>) -> QneonStatus {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(())) => QneonStatus::Ok,
        Ok(Err(f)) => {
            set_last_error(&f.message);
            f.status
        }
        Err(_) => {
            set_last_error("internal error: qneon panicked (a bug; please report it)");
            QneonStatus::Internal
        }
    }
}

/// A `QNEON_METHOD_*` value.
pub(crate) fn method(value: u32) -> Result<Method, Failure> {
    Ok(match value {
        0 => Method::FixedPoint,
        1 => Method::Lut,
        2 => Method::LutFixedPoint,
        3 => Method::DequantF32,
        v => {
            return Err(Failure::new(
                QneonStatus::InvalidArgument,
                format!("method {v} is not a QneonMethod; use QNEON_METHOD_FIXED_POINT (0) to 3"),
            ))
        }
    })
}

/// A `QNEON_BACKEND_*` value.
pub(crate) fn backend(value: u32) -> Result<Backend, Failure> {
    Ok(match value {
        0 => Backend::best(),
        1 => Backend::Scalar,
        2 => Backend::Neon,
        v => {
            return Err(Failure::new(
                QneonStatus::InvalidArgument,
                format!("backend {v} is not a QneonBackend; use QNEON_BACKEND_BEST (0) to 2"),
            ))
        }
    })
}

/// Checks a C buffer of `len` elements of `T` at `p`: not null unless
/// `len` is 0, aligned, and its byte size within `isize::MAX`. Returns the
/// pointer to build the slice from (dangling for an empty buffer).
fn checked<T>(what: &str, p: *const T, len: usize) -> Result<*const T, Failure> {
    if len == 0 {
        return Ok(std::ptr::NonNull::<T>::dangling().as_ptr());
    }
    if p.is_null() {
        return Err(Failure::new(
            QneonStatus::NullPointer,
            format!("{what} is null but len is {len}"),
        ));
    }
    if !(p as usize).is_multiple_of(std::mem::align_of::<T>()) {
        return Err(Failure::new(
            QneonStatus::InvalidArgument,
            format!(
                "{what} is not aligned to {} bytes (its element type's alignment)",
                std::mem::align_of::<T>()
            ),
        ));
    }
    if len
        .checked_mul(std::mem::size_of::<T>())
        .is_none_or(|b| b > isize::MAX as usize)
    {
        return Err(Failure::new(
            QneonStatus::Length,
            format!("len {len} is too large for {what} (its byte size overflows)"),
        ));
    }
    Ok(p)
}

/// Where a checked C buffer lies, for the overlap check.
#[derive(Clone, Copy)]
pub(crate) struct Span {
    what: &'static str,
    start: usize,
    end: usize,
    write: bool,
}

/// A C buffer the call reads, checked by [`checked`].
pub(crate) struct In<T> {
    p: *const T,
    len: usize,
    pub(crate) span: Span,
}

/// A C buffer the call writes, checked by [`checked`].
pub(crate) struct Out<T> {
    p: *mut T,
    len: usize,
    pub(crate) span: Span,
}

/// Checks a buffer the call reads (see [`checked`]).
pub(crate) fn input<T>(what: &'static str, p: *const T, len: usize) -> Result<In<T>, Failure> {
    let p = checked(what, p, len)?;
    Ok(In {
        p,
        len,
        span: span(what, p, len, false),
    })
}

/// Checks a buffer the call writes (see [`checked`]).
pub(crate) fn output<T>(what: &'static str, p: *mut T, len: usize) -> Result<Out<T>, Failure> {
    let p = checked(what, p as *const T, len)? as *mut T;
    Ok(Out {
        p,
        len,
        span: span(what, p, len, true),
    })
}

/// An optional buffer the call writes: null with a length of 0 is "none".
pub(crate) fn optional_output<T>(
    what: &'static str,
    p: *mut T,
    len: usize,
) -> Result<Option<Out<T>>, Failure> {
    if p.is_null() && len == 0 {
        return Ok(None);
    }
    output(what, p, len).map(Some)
}

fn span<T>(what: &'static str, p: *const T, len: usize, write: bool) -> Span {
    // `checked` bounded the byte size by isize::MAX; an empty buffer spans
    // nothing (its pointer may be dangling).
    let start = p as usize;
    Span {
        what,
        start,
        end: start.saturating_add(len * std::mem::size_of::<T>()),
        write,
    }
}

/// Checks that no buffer a call writes overlaps another of its buffers
/// (qneon's operators are out of place; Rust forbids the aliasing).
pub(crate) fn disjoint(spans: &[Span]) -> Result<(), Failure> {
    for (i, a) in spans.iter().enumerate() {
        for b in &spans[i + 1..] {
            let empty = a.start >= a.end || b.start >= b.end;
            if (a.write || b.write) && !empty && a.start < b.end && b.start < a.end {
                return Err(Failure::new(
                    QneonStatus::InvalidArgument,
                    format!(
                        "{} and {} overlap; the operators are out of place: use separate buffers",
                        a.what, b.what
                    ),
                ));
            }
        }
    }
    Ok(())
}

impl<T> In<T> {
    /// The buffer as a slice.
    ///
    /// # Safety
    /// The C caller's pointer must be valid for reading `len` elements for
    /// `'a`, and no buffer written meanwhile may overlap it ([`disjoint`]).
    pub(crate) unsafe fn slice<'a>(self) -> &'a [T] {
        // SAFETY: non-null, aligned, within isize::MAX bytes (checked;
        // dangling only for len 0); readable and unaliased by writes (the
        // caller).
        unsafe { std::slice::from_raw_parts(self.p, self.len) }
    }
}

impl<T> Out<T> {
    /// The buffer as a mutable slice.
    ///
    /// # Safety
    /// The C caller's pointer must be valid for writing `len` elements for
    /// `'a`, and no other buffer of the call may overlap it ([`disjoint`]).
    pub(crate) unsafe fn slice<'a>(self) -> &'a mut [T] {
        // SAFETY: non-null, aligned, within isize::MAX bytes (checked;
        // dangling only for len 0); writable and not aliased (the caller).
        unsafe { std::slice::from_raw_parts_mut(self.p, self.len) }
    }
}

/// The input and output buffers of a call as slices, checked by [`checked`]
/// and for overlap (qneon's operators are out of place).
///
/// # Safety
/// `input` must be null or valid for reading `len` elements of `A`, and
/// `output` null or valid for writing `len` elements of `B`, for the
/// lifetime `'a`, with no other access to them meanwhile.
pub(crate) unsafe fn buffers<'a, A, B>(
    input: *const A,
    output: *mut B,
    len: usize,
) -> Result<(&'a [A], &'a mut [B]), Failure> {
    let i = self::input("input", input, len)?;
    let o = self::output("output", output, len)?;
    disjoint(&[i.span, o.span])?;
    // SAFETY: checked and disjoint; valid for `len` elements (the caller).
    unsafe { Ok((i.slice(), o.slice())) }
}

/// Boxes a prepared op into `*out`.
///
/// # Safety
/// `out` must be null or valid for writing one pointer.
pub(crate) unsafe fn create<H>(
    out: *mut *mut H,
    make: impl FnOnce() -> Result<H, Failure>,
) -> QneonStatus {
    guard(|| {
        if out.is_null() {
            return Err(Failure::new(
                QneonStatus::NullPointer,
                "the handle output pointer is null; pass the address of a handle variable",
            ));
        }
        let handle = Box::into_raw(Box::new(make()?));
        // SAFETY: `out` is non-null (checked) and writable (the caller).
        unsafe { out.write(handle) };
        Ok(())
    })
}

/// Frees a handle made by [`create`].
///
/// # Safety
/// `handle` must be null or a pointer `create` wrote for `H`, not yet freed.
pub(crate) unsafe fn destroy<H>(handle: *mut H) {
    if !handle.is_null() {
        // Dropping a prepared op cannot panic (plain data and boxes); catch
        // anyway so nothing unwinds into C.
        // SAFETY: the caller guarantees `handle` came from Box::into_raw in
        // `create` and is freed once.
        let _ = catch_unwind(AssertUnwindSafe(|| drop(unsafe { Box::from_raw(handle) })));
    }
}

/// The handle behind `handle`.
///
/// # Safety
/// `handle` must be null or a live handle of `H`.
pub(crate) unsafe fn handle<'a, H>(handle: *const H) -> Result<&'a H, Failure> {
    // SAFETY: null is checked by `as_ref`; otherwise the caller guarantees a
    // live handle.
    unsafe { handle.as_ref() }.ok_or_else(|| {
        Failure::new(
            QneonStatus::NullPointer,
            "the handle is null; create it first (and check the create status)",
        )
    })
}

/// The handle behind `handle`, to modify.
///
/// # Safety
/// `handle` must be null or a live handle of `H` that nothing else uses
/// during the call.
pub(crate) unsafe fn handle_mut<'a, H>(handle: *mut H) -> Result<&'a mut H, Failure> {
    // SAFETY: null is checked by `as_mut`; otherwise the caller guarantees a
    // live handle used by this call only.
    unsafe { handle.as_mut() }.ok_or_else(|| {
        Failure::new(
            QneonStatus::NullPointer,
            "the handle is null; create it first (and check the create status)",
        )
    })
}

/// A value of 0 or more elements: `a * b`, or a [`QneonStatus::Length`]
/// failure naming `what` when the product overflows.
pub(crate) fn product(what: &str, a: usize, b: usize) -> Result<usize, Failure> {
    a.checked_mul(b).ok_or_else(|| {
        Failure::new(
            QneonStatus::Length,
            format!("{what}: {a} * {b} elements overflow size_t"),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_becomes_an_internal_status_and_message() {
        let s = guard(|| panic!("a deliberate panic"));
        assert_eq!(s, QneonStatus::Internal);
        // SAFETY: the function returns a valid NUL-terminated string.
        let msg = unsafe { std::ffi::CStr::from_ptr(qneon_last_error_message()) };
        assert!(msg.to_str().unwrap().starts_with("internal error"));
        assert_eq!(guard(|| Ok(())), QneonStatus::Ok);
    }
}
