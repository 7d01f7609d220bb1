//! The C API's entry points with arbitrary parameters, lengths, enum
//! values and pointers (valid memory wherever a length says so; null,
//! misaligned, byte sizes that overflow, outputs written over inputs), each
//! call checked against the Rust API: nothing panics or aborts; the status
//! is the C API's own check where one fails (in its documented order), else
//! the library's error's (with its message); when both succeed the output
//! bits are equal; after every error the message getter gives a message.

#![no_main]

mod capi_float;
mod capi_matrix;
mod capi_quant;

use std::ptr;

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use qneon::{Add, FusedActivation, Mul, NoNorm, Operand, QuantParams, Rounding, Sub};
use qneon_capi::*;
use qneon_fuzz::c_api::{agree, backend, first, huge, in_range, overlap, Buf, Place};
use qneon_fuzz::Quant;

/// A buffer's length relative to the one the call expects.
#[derive(Arbitrary, Clone, Copy, Debug)]
enum Len {
    Exact,
    Off(i8),
    /// A byte size beyond `isize::MAX`.
    Huge,
}

/// A buffer as the fuzzer picks it.
#[derive(Arbitrary, Clone, Copy, Debug)]
struct Spec {
    place: Place,
    len: Len,
}

impl Spec {
    fn len<T>(self, exact: usize) -> usize {
        match self.len {
            Len::Exact => exact,
            // A length off a huge one stays huge (no real allocation).
            Len::Off(d) if exact >= huge::<T>() => {
                exact.saturating_add_signed(d as isize).max(huge::<T>())
            }
            Len::Off(d) => exact.saturating_add_signed(d as isize),
            Len::Huge => huge::<T>(),
        }
    }

    fn buf<T: Copy>(
        self,
        name: &'static str,
        exact: usize,
        write: bool,
        fill: impl Fn(usize) -> T,
    ) -> Buf<T> {
        Buf::new(name, self.place, self.len::<T>(exact), write, fill)
    }
}

/// An output buffer, or (if `alias` and both are non-empty real buffers)
/// one written over `input`'s memory, which is made large enough.
fn out_over<T: Copy + Default, U: Copy>(
    alias: bool,
    input: &Buf<U>,
    spec: Spec,
    name: &'static str,
    exact: usize,
) -> Buf<T> {
    let len = spec.len::<T>(exact);
    let fits = input.len.saturating_mul(std::mem::size_of::<U>())
        >= len.saturating_mul(std::mem::size_of::<T>());
    let real = input.len > 0 && input.len < huge::<U>() && len > 0 && len < huge::<T>();
    if alias && real && fits && !input.ptr.is_null() {
        Buf::over(name, input, len)
    } else {
        Buf::new(name, spec.place, len, true, |_| T::default())
    }
}

/// A dimension: mostly small, sometimes one whose products overflow.
#[derive(Arbitrary, Clone, Copy, Debug)]
enum Dim {
    Small(u8),
    Huge,
}

impl Dim {
    fn get(self, max: u8) -> usize {
        match self {
            Dim::Small(v) => (v % (max + 1)) as usize,
            Dim::Huge => 1 << (usize::BITS - 1),
        }
    }
}

#[derive(Arbitrary, Debug)]
enum Case {
    Binary(Binary),
    NoNorm(NoNormCase),
    Gemm(capi_matrix::GemmCase),
    MatMul(capi_matrix::MatMulCase),
    F32(capi_float::F32Case),
    Loss(capi_float::LossCase),
    QuantizedLoss(capi_float::QuantizedLossCase),
    Activation(capi_quant::OpCase),
    Raw(capi_quant::RawCase),
    Heads(HeadsCase),
}

#[derive(Arbitrary, Debug)]
struct Input {
    case: Case,
    data: Vec<u8>,
}

fuzz_target!(|input: Input| {
    let d = Data(&input.data);
    match &input.case {
        Case::Binary(c) => binary(c, &d),
        Case::NoNorm(c) => no_norm(c, &d),
        Case::Gemm(c) => capi_matrix::gemm(c, &d),
        Case::MatMul(c) => capi_matrix::matmul(c, &d),
        Case::F32(c) => capi_float::f32_kernels(c, &d),
        Case::Loss(c) => capi_float::loss(c, &d),
        Case::QuantizedLoss(c) => capi_float::quantized_loss(c, &d),
        Case::Activation(c) => capi_quant::activation(c, &d),
        Case::Raw(c) => capi_quant::raw(c, &d),
        Case::Heads(c) => heads(c, &d),
    }
});

/// Values for the buffers, from the case's bytes.
struct Data<'a>(&'a [u8]);

impl Data<'_> {
    fn byte(&self, i: usize, salt: usize) -> u8 {
        if self.0.is_empty() {
            (i * 31 + salt) as u8
        } else {
            self.0[(i + salt * 7) % self.0.len()]
        }
    }
    fn i8(&self, i: usize, salt: usize) -> i8 {
        self.byte(i, salt) as i8
    }
    fn i32(&self, i: usize, salt: usize) -> i32 {
        (self.byte(i, salt) as i32 - 128) * 997 * (self.byte(i + 1, salt) as i32 % 9)
    }
    fn f32(&self, i: usize, salt: usize) -> f32 {
        match self.byte(i, salt) {
            0 => f32::NAN,
            1 => f32::INFINITY,
            2 => f32::NEG_INFINITY,
            3 => f32::MAX,
            b => (b as f32 - 128.0) / 8.0,
        }
    }
}

fn qp(q: QuantParams) -> QneonQuantParams {
    QneonQuantParams {
        scale: q.scale,
        zero_point: q.zero_point,
    }
}

const ACTIVATIONS: [FusedActivation; 3] = [
    FusedActivation::None,
    FusedActivation::Relu,
    FusedActivation::Relu6,
];
const ROUNDINGS: [Rounding; 2] = [Rounding::Single, Rounding::Double];

/// A handle slot: the address of a handle variable, or null.
fn slot<H>(null: bool, h: &mut *mut H) -> *mut *mut H {
    if null {
        ptr::null_mut()
    } else {
        h
    }
}

/// Checks a create: its status against the pre-checks and `new`; returns
/// the handle and the Rust op when both succeeded.
fn created<H, T>(
    what: &str,
    status: QneonStatus,
    handle: *mut H,
    pre: Option<QneonStatus>,
    rust: impl FnOnce() -> qneon::Result<T>,
) -> Option<(*mut H, T)> {
    match agree(what, status, pre, rust) {
        Some(op) => {
            assert!(!handle.is_null(), "{what}: Ok without a handle");
            Some((handle, op))
        }
        None => {
            assert!(handle.is_null(), "{what}: a handle after an error");
            None
        }
    }
}

#[derive(Arbitrary, Debug)]
struct Binary {
    kind: u8,
    a: Quant,
    b: Quant,
    output: Quant,
    activation: u8,
    rounding: u8,
    null_slot: bool,
    runs: Vec<BinaryRun>,
}

#[derive(Arbitrary, Debug)]
struct BinaryRun {
    broadcast: bool,
    len: u8,
    a: Spec,
    b: Spec,
    out: Spec,
    alias: bool,
    backend: u8,
    null_handle: bool,
}

enum BinaryOp {
    Add(Add),
    Sub(Sub),
    Mul(Mul),
}

fn binary(c: &Binary, d: &Data) {
    let (qa, qb, qo) = (c.a.get::<i8>(), c.b.get::<i8>(), c.output.get::<i8>());
    let (act, rnd) = (c.activation as u32 % 4, c.rounding as u32 % 3);
    let kind = c.kind % 3;
    let mut h: *mut std::ffi::c_void = ptr::null_mut();
    let s = slot(c.null_slot, &mut h) as *mut *mut _;
    // SAFETY: `s` is null or a valid slot; the handle types are opaque.
    let status = unsafe {
        match kind {
            0 => qneon_add_create(qp(qa), qp(qb), qp(qo), act, rnd, s as *mut *mut QneonAdd),
            1 => qneon_sub_create(qp(qa), qp(qb), qp(qo), act, rnd, s as *mut *mut QneonSub),
            _ => qneon_mul_create(qp(qa), qp(qb), qp(qo), act, rnd, s as *mut *mut QneonMul),
        }
    };
    let pre = first([
        c.null_slot.then_some(QneonStatus::NullPointer),
        in_range(act, 3),
        in_range(rnd, 2),
    ]);
    let new = || {
        let (a, r) = (ACTIVATIONS[act as usize], ROUNDINGS[rnd as usize]);
        Ok(match kind {
            0 => BinaryOp::Add(Add::new(qa, qb, qo, a, r)?),
            1 => BinaryOp::Sub(Sub::new(qa, qb, qo, a, r)?),
            _ => BinaryOp::Mul(Mul::new(qa, qb, qo, a, r)?),
        })
    };
    let Some((h, op)) = created("binary create", status, h, pre, new) else {
        return;
    };
    for run in c.runs.iter().take(4) {
        let n = run.len as usize % 80;
        // The plain run takes one length for all three buffers.
        let (a_len, b_len, o_len) = if run.broadcast {
            let row = (run.len as usize / 80).max(1);
            (
                run.a.len::<i8>(n),
                run.b.len::<i8>(row),
                run.out.len::<i8>(n),
            )
        } else {
            let l = run.a.len::<i8>(n);
            (l, l, l)
        };
        let a = Buf::new("a", run.a.place, a_len, false, |i| d.i8(i, 1));
        let b = Buf::new("b", run.b.place, b_len, false, |i| d.i8(i, 2));
        let exact = Spec {
            place: run.out.place,
            len: Len::Exact,
        };
        let out: Buf<i8> = out_over(run.alias, &a, exact, "output", o_len);
        let handle = if run.null_handle {
            ptr::null()
        } else {
            h as *const _
        };
        let bk = run.backend as u32 % 4;
        // SAFETY: each buffer is valid for its length, or an error the API
        // detects before any access; the handle is live or null.
        let status = unsafe {
            let (ap, bp, op) = (a.ptr, b.ptr, out.ptr);
            match (kind, run.broadcast) {
                (0, false) => qneon_add_run(handle as _, ap, bp, op, a_len, bk),
                (1, false) => qneon_sub_run(handle as _, ap, bp, op, a_len, bk),
                (_, false) => qneon_mul_run(handle as _, ap, bp, op, a_len, bk),
                (0, true) => {
                    qneon_add_run_broadcast(handle as _, ap, a_len, bp, b_len, op, o_len, bk)
                }
                (1, true) => {
                    qneon_sub_run_broadcast(handle as _, ap, a_len, bp, b_len, op, o_len, bk)
                }
                (_, true) => {
                    qneon_mul_run_broadcast(handle as _, ap, a_len, bp, b_len, op, o_len, bk)
                }
            }
        };
        let pre = first([
            run.null_handle.then_some(QneonStatus::NullPointer),
            a.check(),
            b.check(),
            out.check(),
            overlap(&[a.span(), b.span(), out.span()]),
            in_range(bk, 3),
        ]);
        let want = agree("binary run", status, pre, || {
            let (x, y) = (a.values(), b.values());
            let mut o = vec![0i8; o_len];
            let (ox, oy) = (to_operand(&x, o_len), to_operand(&y, o_len));
            let bk = backend(bk).unwrap();
            match &op {
                BinaryOp::Add(op) => op.run_operands(bk, ox, oy, &mut o),
                BinaryOp::Sub(op) => op.run_operands(bk, ox, oy, &mut o),
                BinaryOp::Mul(op) => op.run_operands(bk, ox, oy, &mut o),
            }?;
            Ok(o)
        });
        if let Some(want) = want {
            assert_eq!(out.values(), want, "binary output");
        }
    }
    // SAFETY: the handle is live and not used again.
    unsafe {
        match kind {
            0 => qneon_add_destroy(h as _),
            1 => qneon_sub_destroy(h as _),
            _ => qneon_mul_destroy(h as _),
        }
    }
}

/// The operand the C API makes of `v` along an output of `n`: the whole
/// run, one repeated value, or a repeated row.
fn to_operand(v: &[i8], n: usize) -> Operand<'_> {
    match v.len() {
        l if l == n => Operand::Slice(v),
        1 => Operand::Scalar(v[0]),
        _ => Operand::Row(v),
    }
}

#[derive(Arbitrary, Debug)]
struct NoNormCase {
    from_f32: bool,
    channels: Dim,
    gamma: Place,
    scales: Place,
    beta: Place,
    input: Quant,
    output: Quant,
    activation: u8,
    null_slot: bool,
    runs: Vec<RowsRun>,
}

/// A run over rows: one length for the input and the output.
#[derive(Arbitrary, Debug)]
struct RowsRun {
    rows: u8,
    input: Spec,
    out: Place,
    alias: bool,
    backend: u8,
    null_handle: bool,
}

fn no_norm(c: &NoNormCase, d: &Data) {
    let ch = c.channels.get(40);
    let (qi, qo) = (c.input.get::<i8>(), c.output.get::<i8>());
    let act = c.activation as u32 % 4;
    let mut h = ptr::null_mut();
    let s = slot(c.null_slot, &mut h);
    let (status, pre, new): (_, _, Box<dyn FnOnce() -> qneon::Result<NoNorm>>) = if c.from_f32 {
        let g = Buf::new("gamma", c.gamma, ch, false, |i| d.f32(i, 3));
        let b = Buf::new("beta", c.beta, ch, false, |i| d.f32(i, 4));
        // SAFETY: buffers valid for `ch` elements or refused first.
        let status = unsafe { qneon_no_norm_create_f32(g.ptr, b.ptr, ch, qp(qi), qp(qo), act, s) };
        let pre = first([
            c.null_slot.then_some(QneonStatus::NullPointer),
            g.check(),
            b.check(),
            in_range(act, 3),
        ]);
        let new =
            move || NoNorm::from_f32(&g.values(), &b.values(), qi, qo, ACTIVATIONS[act as usize]);
        (status, pre, Box::new(new))
    } else {
        let g = Buf::new("gamma", c.gamma, ch, false, |i| d.i8(i, 3));
        let sc = Buf::new("gamma_scales", c.scales, ch, false, |i| {
            d.f32(i, 5).abs() / 64.0
        });
        let b = Buf::new("beta", c.beta, ch, false, |i| d.i32(i, 4));
        // SAFETY: as above.
        let status =
            unsafe { qneon_no_norm_create(g.ptr, sc.ptr, b.ptr, ch, qp(qi), qp(qo), act, s) };
        let pre = first([
            c.null_slot.then_some(QneonStatus::NullPointer),
            g.check(),
            sc.check(),
            b.check(),
            in_range(act, 3),
        ]);
        let new = move || {
            NoNorm::new(
                &g.values(),
                &sc.values(),
                &b.values(),
                qi,
                qo,
                ACTIVATIONS[act as usize],
            )
        };
        (status, pre, Box::new(new))
    };
    let Some((h, op)) = created("no_norm create", status, h, pre, new) else {
        return;
    };
    for run in c.runs.iter().take(4) {
        let len = run.input.len::<i8>(ch * (run.rows as usize % 8));
        let x = Buf::new("input", run.input.place, len, false, |i| d.i8(i, 6));
        let exact = Spec {
            place: run.out,
            len: Len::Exact,
        };
        let out: Buf<i8> = out_over(run.alias, &x, exact, "output", len);
        let handle = if run.null_handle {
            ptr::null()
        } else {
            h as *const _
        };
        let bk = run.backend as u32 % 4;
        // SAFETY: as in `binary`.
        let status = unsafe { qneon_no_norm_run(handle, x.ptr, out.ptr, len, bk) };
        let pre = first([
            run.null_handle.then_some(QneonStatus::NullPointer),
            x.check(),
            out.check(),
            overlap(&[x.span(), out.span()]),
            in_range(bk, 3),
        ]);
        let want = agree("no_norm run", status, pre, || {
            let mut o = vec![0i8; len];
            op.run_with(backend(bk).unwrap(), &x.values(), &mut o)?;
            Ok(o)
        });
        if let Some(want) = want {
            assert_eq!(out.values(), want, "no_norm output");
        }
    }
    // SAFETY: the last use of a live handle.
    unsafe { qneon_no_norm_destroy(h) };
}

/// `split_heads` / `merge_heads` on int8 and float buffers.
#[derive(Arbitrary, Debug)]
struct HeadsCase {
    merge: bool,
    float: bool,
    seq: Dim,
    heads: Dim,
    head_dim: Dim,
    input: Place,
    out: Place,
    alias: bool,
}

fn heads(c: &HeadsCase, d: &Data) {
    let (seq, heads, head_dim) = (c.seq.get(9), c.heads.get(5), c.head_dim.get(9));
    if c.float {
        heads_of::<f32>(c, seq, heads, head_dim, |i| d.f32(i, 8));
    } else {
        heads_of::<i8>(c, seq, heads, head_dim, |i| d.i8(i, 8));
    }
}

/// The C entry points of one element type.
trait HeadsC: Copy + Default + PartialEq + std::fmt::Debug {
    /// # Safety
    /// As the entry points.
    unsafe fn call(
        merge: bool,
        x: *const Self,
        y: *mut Self,
        s: usize,
        h: usize,
        d: usize,
    ) -> QneonStatus;
    fn same(a: &[Self], b: &[Self]) -> bool;
}

impl HeadsC for i8 {
    unsafe fn call(
        merge: bool,
        x: *const i8,
        y: *mut i8,
        s: usize,
        h: usize,
        d: usize,
    ) -> QneonStatus {
        // SAFETY: forwarded.
        unsafe {
            if merge {
                qneon_merge_heads_i8(x, y, s, h, d)
            } else {
                qneon_split_heads_i8(x, y, s, h, d)
            }
        }
    }
    fn same(a: &[i8], b: &[i8]) -> bool {
        a == b
    }
}

impl HeadsC for f32 {
    unsafe fn call(
        merge: bool,
        x: *const f32,
        y: *mut f32,
        s: usize,
        h: usize,
        d: usize,
    ) -> QneonStatus {
        // SAFETY: forwarded.
        unsafe {
            if merge {
                qneon_merge_heads_f32(x, y, s, h, d)
            } else {
                qneon_split_heads_f32(x, y, s, h, d)
            }
        }
    }
    fn same(a: &[f32], b: &[f32]) -> bool {
        qneon_fuzz::c_api::bits(a) == qneon_fuzz::c_api::bits(b)
    }
}

fn heads_of<T: HeadsC>(
    c: &HeadsCase,
    seq: usize,
    heads: usize,
    head_dim: usize,
    fill: impl Fn(usize) -> T,
) {
    let len = seq.checked_mul(heads).and_then(|n| n.checked_mul(head_dim));
    let exact = len.unwrap_or(0);
    // The entry points take no lengths: both buffers hold the shape's
    // element count (the fuzzer picks only where they point).
    let x = Buf::new("input", c.input, exact, false, fill);
    let spec = Spec {
        place: c.out,
        len: Len::Exact,
    };
    let out: Buf<T> = out_over(c.alias, &x, spec, "output", exact);
    // SAFETY: buffers valid for their lengths or refused first.
    let status = unsafe { T::call(c.merge, x.ptr, out.ptr, seq, heads, head_dim) };
    // The C API's order: the shape's product, then the buffers, then their
    // overlap; then the library (heads or head_dim 0).
    let pre = first([
        len.is_none().then_some(QneonStatus::Length),
        x.check(),
        out.check(),
        overlap(&[x.span(), out.span()]),
    ]);
    let what = if c.merge {
        "merge_heads"
    } else {
        "split_heads"
    };
    let want = agree(what, status, pre, || {
        let mut y = vec![T::default(); out.len];
        if c.merge {
            qneon::merge_heads(&x.values(), &mut y, seq, heads, head_dim)?;
        } else {
            qneon::split_heads(&x.values(), &mut y, seq, heads, head_dim)?;
        }
        Ok(y)
    });
    if let Some(want) = want {
        assert!(
            T::same(&out.values(), &want),
            "{what}: C and Rust outputs differ"
        );
    }
}
