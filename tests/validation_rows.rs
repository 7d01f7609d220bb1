//! Row lengths the data does not back: nothing may be sized from them.
//!
//! The row ops accept any `row_len >= 1` on an empty buffer (zero rows, see
//! `tests/lengths.rs`). Their NEON FixedPoint kernels (softmax i8/u8/i16,
//! `q31::softmax`) once sized their scratch of exps from `row_len` before
//! looking at the data: `row_len = 2^40` on an empty buffer aborted the
//! process (a 4 TiB allocation), `usize::MAX - 100` panicked with a capacity
//! overflow, `usize::MAX` overflowed a multiplication and `2^28` returned
//! `Ok` after allocating 1 GiB.
//!
//! Here every op, element type, method and available backend runs under an
//! allocator that records the largest request of the running thread:
//!
//! * empty buffers with huge `row_len`s: `Ok`, and no allocation at all;
//! * a non-empty buffer with `row_len` larger than it (or not dividing it):
//!   `Err(RowLength)`, no allocation;
//! * one long row: scratch at most 4 bytes per element (plus a page), i.e.
//!   proportional to the data.

use qneon::q31;
use qneon::{Backend, Error, LogSoftmax, Logistic, Method, QuantElem, QuantParams, Softmax, Tanh};
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

/// The system allocator, recording the largest request of each thread.
struct Recording;

thread_local! {
    static LARGEST: Cell<usize> = const { Cell::new(0) };
}

// SAFETY: every call is forwarded to the system allocator unchanged; the
// thread-local `Cell` with a const initialiser does not allocate.
unsafe impl GlobalAlloc for Recording {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LARGEST.with(|l| l.set(l.get().max(layout.size())));
        // SAFETY: forwarded with the caller's layout.
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        LARGEST.with(|l| l.set(l.get().max(layout.size())));
        // SAFETY: forwarded with the caller's layout.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded with the caller's pointer and layout.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LARGEST.with(|l| l.set(l.get().max(new_size)));
        // SAFETY: forwarded with the caller's pointer, layout and size.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Recording = Recording;

/// Runs `f` and returns its result with the largest allocation it requested.
fn largest_allocation<R>(f: impl FnOnce() -> R) -> (R, usize) {
    LARGEST.with(|l| l.set(0));
    let r = f();
    (r, LARGEST.with(Cell::get))
}

/// Row lengths no buffer here backs: 2^28 (a 1 GiB scratch of `i32`), 2^40
/// (4 TiB), and those whose rounding up or scaling overflows `usize`.
const HUGE_ROW_LENS: [usize; 6] = [
    1 << 28,
    1 << 40,
    isize::MAX as usize,
    isize::MAX as usize + 1,
    usize::MAX - 100,
    usize::MAX,
];

/// The backends of this build; on aarch64 NEON must be one of them.
fn backends() -> Vec<Backend> {
    if cfg!(target_arch = "aarch64") {
        assert!(Backend::Neon.is_available(), "aarch64 build without NEON");
    }
    Backend::available().collect()
}

/// A row op of one element type, method and backend, boxed as a closure over
/// `(input, output, row_len)`; `None` where `new` refuses the method.
type RowOp<T> = Box<dyn Fn(&[T], &mut [T], usize) -> Result<(), Error>>;

fn row_ops<T: QuantElem>(backend: Backend) -> Vec<(String, RowOp<T>)> {
    let (softmax_out, log_softmax_out) = match T::MIN {
        -128 => (
            QuantParams::new(1.0 / 256.0, -128),
            QuantParams::new(16.0 / 256.0, 127),
        ),
        0 => (
            QuantParams::new(1.0 / 256.0, 0),
            QuantParams::new(16.0 / 256.0, 255),
        ),
        _ => (
            QuantParams::new(1.0 / 32768.0, 0),
            QuantParams::new(16.0 / 256.0, 0),
        ),
    };
    let q_in = QuantParams::new(0.05, 0);
    let mut ops: Vec<(String, RowOp<T>)> = Vec::new();
    for method in [
        Method::FixedPoint,
        Method::Lut,
        Method::LutFixedPoint,
        Method::DequantF32,
    ] {
        if let Ok(op) = Softmax::<T>::new(q_in, 1.0, softmax_out, method) {
            ops.push((
                format!("softmax {} {method:?} {backend:?}", T::NAME),
                Box::new(move |x, y, r| op.run_with(backend, x, y, r)),
            ));
        }
        if let Ok(op) = LogSoftmax::<T>::new(q_in, log_softmax_out, method) {
            ops.push((
                format!("log_softmax {} {method:?} {backend:?}", T::NAME),
                Box::new(move |x, y, r| op.run_with(backend, x, y, r)),
            ));
        }
    }
    ops
}

/// Every row op of `T` on every backend: empty buffers with huge row
/// lengths, non-empty ones with row lengths they do not back, one long row.
fn check_row_ops<T: QuantElem>(long_row: &[T]) -> usize {
    let mut checked = 0;
    for backend in backends() {
        for (name, op) in row_ops::<T>(backend) {
            for row_len in HUGE_ROW_LENS {
                let (r, largest) = largest_allocation(|| op(&[], &mut [], row_len));
                assert_eq!(r, Ok(()), "{name}, empty, row_len {row_len}");
                assert_eq!(largest, 0, "{name}, empty, row_len {row_len}: allocated");
            }
            let x = &long_row[..100];
            let mut y = vec![T::default(); x.len()];
            for row_len in [101, 1000, 33].into_iter().chain(HUGE_ROW_LENS) {
                let (r, largest) = largest_allocation(|| op(x, &mut y, row_len));
                assert!(
                    matches!(r, Err(Error::RowLength { len: 100, row, .. }) if row == row_len),
                    "{name}, 100 elements, row_len {row_len}: {r:?}"
                );
                assert_eq!(
                    largest, 0,
                    "{name}, 100 elements, row_len {row_len}: allocated"
                );
            }
            let mut y = vec![T::default(); long_row.len()];
            let (r, largest) = largest_allocation(|| op(long_row, &mut y, long_row.len()));
            assert_eq!(r, Ok(()), "{name}, one row of {}", long_row.len());
            // An exp cache of i32 per element at most, rounded up to blocks.
            let bound = 4 * long_row.len() + 4096;
            assert!(
                largest <= bound,
                "{name}, one row of {}: allocated {largest} bytes (bound {bound})",
                long_row.len()
            );
            checked += 1;
        }
    }
    checked
}

fn long_row<T: QuantElem + TryFrom<i32>>(len: usize) -> Vec<T> {
    let span = (T::MAX - T::MIN + 1) as usize;
    (0..len)
        .map(|i| {
            let v = T::MIN + ((i * 7919) % span) as i32;
            T::try_from(v).ok().unwrap()
        })
        .collect()
}

#[test]
fn row_ops_size_nothing_from_an_unbacked_row_len() {
    let mut checked = check_row_ops::<i8>(&long_row(20_000));
    checked += check_row_ops::<u8>(&long_row(20_000));
    checked += check_row_ops::<i16>(&long_row(20_000));
    // softmax: 3 types x (FixedPoint, Lut, DequantF32); log-softmax: 2 x 3.
    assert_eq!(checked, 15 * backends().len());
}

#[test]
fn q31_softmax_sizes_nothing_from_an_unbacked_row_len() {
    let long_row: Vec<i32> = (0..20_000i32)
        .map(|i| i.wrapping_mul(-1_640_531_527))
        .collect();
    for backend in backends() {
        for integer_bits in [0, 5, 28] {
            for row_len in HUGE_ROW_LENS {
                let (r, largest) = largest_allocation(|| {
                    q31::softmax_with::<i32, i32>(backend, &[], integer_bits, &mut [], row_len)
                });
                assert_eq!(r, Ok(()), "{backend:?} I{integer_bits} row_len {row_len}");
                assert_eq!(largest, 0, "{backend:?} I{integer_bits} row_len {row_len}");
            }
            let mut y = vec![0i32; 100];
            for row_len in [101, 1000, 33].into_iter().chain(HUGE_ROW_LENS) {
                let (r, largest) = largest_allocation(|| {
                    q31::softmax_with(backend, &long_row[..100], integer_bits, &mut y, row_len)
                });
                assert!(
                    matches!(r, Err(Error::RowLength { len: 100, row, .. }) if row == row_len),
                    "{backend:?} row_len {row_len}: {r:?}"
                );
                assert_eq!(largest, 0);
            }
            let mut y = vec![0i32; long_row.len()];
            let (r, largest) = largest_allocation(|| {
                q31::softmax_with(backend, &long_row, integer_bits, &mut y, long_row.len())
            });
            assert_eq!(r, Ok(()));
            assert!(
                largest <= 4 * long_row.len() + 4096,
                "{backend:?}: {largest} bytes"
            );
        }
    }
}

/// The element-wise ops have no row length; on long inputs they allocate
/// nothing (`run()` is documented as allocation-free).
#[test]
fn element_wise_ops_allocate_nothing() {
    let x16 = long_row::<i16>(20_000);
    let x8 = long_row::<i8>(20_000);
    let x32: Vec<i32> = (0..20_000i32)
        .map(|i| i.wrapping_mul(-1_640_531_527))
        .collect();
    for backend in backends() {
        for method in [
            Method::FixedPoint,
            Method::Lut,
            Method::LutFixedPoint,
            Method::DequantF32,
        ] {
            let q16 = (
                QuantParams::new(1e-3, 0),
                QuantParams::new(1.0 / 32768.0, 0),
            );
            let q8 = QuantParams::new(0.05, 0);
            let mut y16 = vec![0i16; x16.len()];
            let mut y8 = vec![0i8; x8.len()];
            if let Ok(op) = Logistic::<i16>::new(q16.0, q16.1, method) {
                let (r, largest) = largest_allocation(|| op.run_with(backend, &x16, &mut y16));
                assert_eq!(
                    (r, largest),
                    (Ok(()), 0),
                    "logistic i16 {method:?} {backend:?}"
                );
            }
            if let Ok(op) = Tanh::<i16>::new(q16.0, q16.1, method) {
                let (r, largest) = largest_allocation(|| op.run_with(backend, &x16, &mut y16));
                assert_eq!((r, largest), (Ok(()), 0), "tanh i16 {method:?} {backend:?}");
            }
            if let Ok(op) = Logistic::<i8>::new(q8, QuantParams::new(1.0 / 256.0, -128), method) {
                let (r, largest) = largest_allocation(|| op.run_with(backend, &x8, &mut y8));
                assert_eq!(
                    (r, largest),
                    (Ok(()), 0),
                    "logistic i8 {method:?} {backend:?}"
                );
            }
            if let Ok(op) = Tanh::<i8>::new(q8, QuantParams::new(1.0 / 128.0, 0), method) {
                let (r, largest) = largest_allocation(|| op.run_with(backend, &x8, &mut y8));
                assert_eq!((r, largest), (Ok(()), 0), "tanh i8 {method:?} {backend:?}");
            }
        }
        let mut y32 = vec![0i32; x32.len()];
        for integer_bits in [0, 5, 28] {
            let (r, largest) =
                largest_allocation(|| q31::logistic_with(backend, &x32, integer_bits, &mut y32));
            assert_eq!((r, largest), (Ok(()), 0), "q31 logistic {backend:?}");
            let (r, largest) =
                largest_allocation(|| q31::tanh_with(backend, &x32, integer_bits, &mut y32));
            assert_eq!((r, largest), (Ok(()), 0), "q31 tanh {backend:?}");
        }
    }
}
