//! The `capi` target's activation cases: softmax, log-softmax, logistic and
//! tanh handles on every element type, the raw Q31 functions, quantize and
//! dequantize (see `capi.rs` for what every call asserts).

use std::ptr;

use arbitrary::Arbitrary;
use qneon::{q31, Backend, LogSoftmax, Logistic, Method, QuantElem, QuantParams, Softmax, Tanh};
use qneon_capi::*;
use qneon_fuzz::c_api::{agree, backend, bits, first, in_range, overlap, Buf, Place};
use qneon_fuzz::Quant;

use crate::{created, out_over, qp, slot, Data, Len, Spec};

#[derive(Arbitrary, Debug)]
pub struct OpCase {
    op: u8,
    input: Quant,
    /// `None`: the output quantization the op requires (from its getter).
    output: Option<Quant>,
    beta: u8,
    method: u8,
    null_slot: bool,
    runs: Vec<OpRun>,
}

#[derive(Arbitrary, Debug)]
pub struct OpRun {
    rows: u8,
    row_len: u8,
    input: Spec,
    out: Place,
    alias: bool,
    backend: u8,
    null_handle: bool,
}

/// One op on one element type, through its C functions and its Rust type.
struct Ops<T, H, R> {
    create: unsafe fn(QneonQuantParams, f32, QneonQuantParams, u32, *mut *mut H) -> QneonStatus,
    run: unsafe fn(*const H, *const T, *mut T, usize, usize, u32) -> QneonStatus,
    destroy: unsafe fn(*mut H),
    output: fn() -> QneonQuantParams,
    new: fn(QuantParams, f32, QuantParams, Method) -> qneon::Result<R>,
    run_rust: fn(&R, Backend, &[T], &mut [T], usize) -> qneon::Result<()>,
    /// The Rust op's required output quantization.
    required: Option<QuantParams>,
}

const METHODS: [Method; 4] = [
    Method::FixedPoint,
    Method::Lut,
    Method::LutFixedPoint,
    Method::DequantF32,
];

/// Makes an [`Ops`] from one op's functions: `rows` ops take a row length
/// and `beta` ops a beta.
macro_rules! ops {
    ($t:ty, $rust:ty, $create:ident, $run:ident, $destroy:ident, $out:ident, beta, rows) => {
        Ops::<$t, _, $rust> {
            create: |i, beta, o, m, h| unsafe { $create(i, beta, o, m, h) },
            run: |h, x, y, n, row, b| unsafe { $run(h, x, y, n, row, b) },
            destroy: |h| unsafe { $destroy(h) },
            output: || $out(),
            new: |i, beta, o, m| <$rust>::new(i, beta, o, m),
            run_rust: |op, b, x, y, row| op.run_with(b, x, y, row),
            required: Some(<$rust>::output_quantization()),
        }
    };
    ($t:ty, $rust:ty, $create:ident, $run:ident, $destroy:ident, $out:ident, rows) => {
        Ops::<$t, _, $rust> {
            create: |i, _, o, m, h| unsafe { $create(i, o, m, h) },
            run: |h, x, y, n, row, b| unsafe { $run(h, x, y, n, row, b) },
            destroy: |h| unsafe { $destroy(h) },
            output: || $out(),
            new: |i, _, o, m| <$rust>::new(i, o, m),
            run_rust: |op, b, x, y, row| op.run_with(b, x, y, row),
            required: <$rust>::output_quantization().ok(),
        }
    };
    ($t:ty, $rust:ty, $create:ident, $run:ident, $destroy:ident, $out:ident) => {
        Ops::<$t, _, $rust> {
            create: |i, _, o, m, h| unsafe { $create(i, o, m, h) },
            run: |h, x, y, n, _, b| unsafe { $run(h, x, y, n, b) },
            destroy: |h| unsafe { $destroy(h) },
            output: || $out(),
            new: |i, _, o, m| <$rust>::new(i, o, m),
            run_rust: |op, b, x, y, _| op.run_with(b, x, y),
            required: Some(<$rust>::output_quantization()),
        }
    };
}

pub fn activation(c: &OpCase, d: &Data) {
    // SAFETY (the closures in `ops!`): forwarded from `check`, whose calls
    // pass valid or refused buffers, a live or null handle, a valid or null
    // slot.
    match c.op % 11 {
        0 => check(
            c,
            d,
            ops!(
                i8,
                Softmax<i8>,
                qneon_softmax_i8_create,
                qneon_softmax_i8_run,
                qneon_softmax_i8_destroy,
                qneon_softmax_i8_output_quantization,
                beta,
                rows
            ),
        ),
        1 => check(
            c,
            d,
            ops!(
                u8,
                Softmax<u8>,
                qneon_softmax_u8_create,
                qneon_softmax_u8_run,
                qneon_softmax_u8_destroy,
                qneon_softmax_u8_output_quantization,
                beta,
                rows
            ),
        ),
        2 => check(
            c,
            d,
            ops!(
                i16,
                Softmax<i16>,
                qneon_softmax_i16_create,
                qneon_softmax_i16_run,
                qneon_softmax_i16_destroy,
                qneon_softmax_i16_output_quantization,
                beta,
                rows
            ),
        ),
        3 => check(
            c,
            d,
            ops!(
                i8,
                LogSoftmax<i8>,
                qneon_log_softmax_i8_create,
                qneon_log_softmax_i8_run,
                qneon_log_softmax_i8_destroy,
                qneon_log_softmax_i8_output_quantization,
                rows
            ),
        ),
        4 => check(
            c,
            d,
            ops!(
                u8,
                LogSoftmax<u8>,
                qneon_log_softmax_u8_create,
                qneon_log_softmax_u8_run,
                qneon_log_softmax_u8_destroy,
                qneon_log_softmax_u8_output_quantization,
                rows
            ),
        ),
        5 => check(
            c,
            d,
            ops!(
                i8,
                Logistic<i8>,
                qneon_logistic_i8_create,
                qneon_logistic_i8_run,
                qneon_logistic_i8_destroy,
                qneon_logistic_i8_output_quantization
            ),
        ),
        6 => check(
            c,
            d,
            ops!(
                u8,
                Logistic<u8>,
                qneon_logistic_u8_create,
                qneon_logistic_u8_run,
                qneon_logistic_u8_destroy,
                qneon_logistic_u8_output_quantization
            ),
        ),
        7 => check(
            c,
            d,
            ops!(
                i16,
                Logistic<i16>,
                qneon_logistic_i16_create,
                qneon_logistic_i16_run,
                qneon_logistic_i16_destroy,
                qneon_logistic_i16_output_quantization
            ),
        ),
        8 => check(
            c,
            d,
            ops!(
                i8,
                Tanh<i8>,
                qneon_tanh_i8_create,
                qneon_tanh_i8_run,
                qneon_tanh_i8_destroy,
                qneon_tanh_i8_output_quantization
            ),
        ),
        9 => check(
            c,
            d,
            ops!(
                u8,
                Tanh<u8>,
                qneon_tanh_u8_create,
                qneon_tanh_u8_run,
                qneon_tanh_u8_destroy,
                qneon_tanh_u8_output_quantization
            ),
        ),
        _ => check(
            c,
            d,
            ops!(
                i16,
                Tanh<i16>,
                qneon_tanh_i16_create,
                qneon_tanh_i16_run,
                qneon_tanh_i16_destroy,
                qneon_tanh_i16_output_quantization
            ),
        ),
    }
}

fn check<T: QuantElem + Default + PartialEq, H, R>(c: &OpCase, d: &Data, ops: Ops<T, H, R>) {
    let required = (ops.output)();
    if let Some(r) = ops.required {
        assert_eq!(
            (required.scale.to_bits(), required.zero_point),
            (r.scale.to_bits(), r.zero_point)
        );
    }
    let qi = c.input.get::<T>();
    let qo = c
        .output
        .map_or(QuantParams::new(required.scale, required.zero_point), |q| {
            q.get::<T>()
        });
    let beta = [1.0, 0.5, 2.0, 0.0, -1.0, f32::NAN, 1e-6, 1e6][c.beta as usize % 8];
    let m = c.method as u32 % 5;
    let mut h = ptr::null_mut();
    let s = slot(c.null_slot, &mut h);
    // SAFETY: `s` is null or a valid slot.
    let status = unsafe { (ops.create)(qp(qi), beta, qp(qo), m, s) };
    let pre = first([
        c.null_slot.then_some(QneonStatus::NullPointer),
        in_range(m, 4),
    ]);
    let Some((h, op)) = created("activation create", status, h, pre, || {
        (ops.new)(qi, beta, qo, METHODS[m as usize])
    }) else {
        return;
    };
    for run in c.runs.iter().take(3) {
        let row = run.row_len as usize % 40;
        let len = run.input.len::<T>(row * (run.rows as usize % 5));
        let x = Buf::new("input", run.input.place, len, false, |i| {
            elem::<T>(d.i32(i, 20))
        });
        let exact = Spec {
            place: run.out,
            len: Len::Exact,
        };
        let out: Buf<T> = out_over(run.alias, &x, exact, "output", len);
        let handle = if run.null_handle {
            ptr::null()
        } else {
            h as *const H
        };
        let bk = run.backend as u32 % 4;
        // SAFETY: as above.
        let status = unsafe { (ops.run)(handle, x.ptr, out.ptr, len, row, bk) };
        let pre = first([
            run.null_handle.then_some(QneonStatus::NullPointer),
            x.check(),
            out.check(),
            overlap(&[x.span(), out.span()]),
            in_range(bk, 3),
        ]);
        let want = agree("activation run", status, pre, || {
            let mut y = vec![T::default(); len];
            (ops.run_rust)(&op, backend(bk).unwrap(), &x.values(), &mut y, row)?;
            Ok(y)
        });
        if let Some(want) = want {
            assert!(out.values() == want, "activation output");
        }
    }
    // SAFETY: the last use of a live handle.
    unsafe { (ops.destroy)(h) };
}

#[derive(Arbitrary, Debug)]
pub struct RawCase {
    op: u8,
    integer_bits: u8,
    row_len: u8,
    params: Quant,
    input: Spec,
    out: Place,
    alias: bool,
    backend: u8,
}

/// The Q31 functions and quantize / dequantize on every element type.
pub fn raw(c: &RawCase, d: &Data) {
    let bk = c.backend as u32 % 4;
    let exact = Spec {
        place: c.out,
        len: Len::Exact,
    };
    let (ib, row) = (c.integer_bits as u32 % 34, c.row_len as usize);
    let op = c.op % 9;
    if op < 3 {
        let len = c.input.len::<i32>(row * 3);
        let x = Buf::new("input", c.input.place, len, false, |i| {
            d.i32(i, 21).wrapping_mul(40_009)
        });
        let out: Buf<i32> = out_over(c.alias, &x, exact, "output", len);
        // SAFETY: valid or refused buffers.
        let status = unsafe {
            match op {
                0 => qneon_q31_softmax(x.ptr, ib, out.ptr, len, row, bk),
                1 => qneon_q31_logistic(x.ptr, ib, out.ptr, len, bk),
                _ => qneon_q31_tanh(x.ptr, ib, out.ptr, len, bk),
            }
        };
        let pre = first([
            x.check(),
            out.check(),
            overlap(&[x.span(), out.span()]),
            in_range(bk, 3),
        ]);
        let want = agree("q31", status, pre, || {
            let (x, b) = (x.values(), backend(bk).unwrap());
            let mut y = vec![0i32; len];
            match op {
                0 => q31::softmax_with::<i32, i32>(b, &x, ib, &mut y, row),
                1 => q31::logistic_with::<i32, i32>(b, &x, ib, &mut y),
                _ => q31::tanh_with::<i32, i32>(b, &x, ib, &mut y),
            }?;
            Ok(y)
        });
        if let Some(want) = want {
            assert_eq!(out.values(), want, "q31 output");
        }
        return;
    }
    let q = qp(QuantParams::new(
        c.params.scale.get(),
        c.params.zero_point.get::<i16>(),
    ));
    match op {
        3 => convert::<i8>(
            c,
            d,
            q,
            bk,
            |q, x, y, n, b| unsafe { qneon_quantize_i8(q, x, y, n, b) },
            |q, x, y, n, b| unsafe { qneon_dequantize_i8(q, x, y, n, b) },
        ),
        4 => convert::<u8>(
            c,
            d,
            q,
            bk,
            |q, x, y, n, b| unsafe { qneon_quantize_u8(q, x, y, n, b) },
            |q, x, y, n, b| unsafe { qneon_dequantize_u8(q, x, y, n, b) },
        ),
        _ => convert::<i16>(
            c,
            d,
            q,
            bk,
            |q, x, y, n, b| unsafe { qneon_quantize_i16(q, x, y, n, b) },
            |q, x, y, n, b| unsafe { qneon_dequantize_i16(q, x, y, n, b) },
        ),
    }
}

type Quantize<T> = unsafe fn(QneonQuantParams, *const f32, *mut T, usize, u32) -> QneonStatus;
type Dequantize<T> = unsafe fn(QneonQuantParams, *const T, *mut f32, usize, u32) -> QneonStatus;

/// Quantize `T`, then dequantize the result (or `T` data when that failed).
fn convert<T: QuantElem + Default + PartialEq>(
    c: &RawCase,
    d: &Data,
    q: QneonQuantParams,
    bk: u32,
    quantize: Quantize<T>,
    dequantize: Dequantize<T>,
) {
    let exact = Spec {
        place: c.out,
        len: Len::Exact,
    };
    let rq = QuantParams::new(q.scale, q.zero_point);
    let len = c.input.len::<f32>(c.row_len as usize);
    let x = Buf::new("input", c.input.place, len, false, |i| d.f32(i, 22));
    let out: Buf<T> = out_over(c.alias, &x, exact, "output", len);
    // SAFETY: valid or refused buffers.
    let status = unsafe { quantize(q, x.ptr, out.ptr, len, bk) };
    let pre = first([
        x.check(),
        out.check(),
        overlap(&[x.span(), out.span()]),
        in_range(bk, 3),
    ]);
    let want = agree("quantize", status, pre, || {
        let mut y = vec![T::default(); len];
        rq.quantize_with(backend(bk).unwrap(), &x.values(), &mut y)?;
        Ok(y)
    });
    if let Some(want) = &want {
        assert!(out.values() == *want, "quantize output");
    }
    let qs = want.unwrap_or_else(|| (0..len.min(64)).map(|i| elem::<T>(d.i32(i, 23))).collect());
    let back = Buf::new("input", Place::Valid, qs.len(), false, |i| qs[i]);
    let y: Buf<f32> = out_over(c.alias, &back, exact, "output", qs.len());
    // SAFETY: as above.
    let status = unsafe { dequantize(q, back.ptr, y.ptr, back.len, bk) };
    let pre = first([
        back.check(),
        y.check(),
        overlap(&[back.span(), y.span()]),
        in_range(bk, 3),
    ]);
    let want = agree("dequantize", status, pre, || {
        let mut v = vec![0f32; back.len];
        rq.dequantize_with(backend(bk).unwrap(), &back.values(), &mut v)?;
        Ok(v)
    });
    if let Some(want) = want {
        assert_eq!(bits(&y.values()), bits(&want), "dequantize output");
    }
}

/// `v` wrapped into `T`'s range.
fn elem<T: QuantElem>(v: i32) -> T {
    T::from_i32(T::MIN + v.rem_euclid(T::MAX - T::MIN + 1))
}
