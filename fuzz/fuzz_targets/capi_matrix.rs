//! The `capi` target's matrix cases: GEMM (create, set_weights, run) and
//! matmul (create, scratch, run); see `capi.rs` for what every call asserts.

use std::ptr;

use arbitrary::Arbitrary;
use qneon::{Gemm, MatMul, Requantization, Rounding};
use qneon_capi::*;
use qneon_fuzz::c_api::{agree, backend, first, in_range, overlap, Buf, Place};
use qneon_fuzz::Quant;

use crate::{created, out_over, qp, slot, Data, Dim, Len, Spec, ACTIVATIONS, ROUNDINGS};

#[derive(Arbitrary, Debug)]
pub struct GemmCase {
    n: Dim,
    k: Dim,
    weights: Place,
    bias: Option<Place>,
    scales: Place,
    input: Quant,
    output: Quant,
    activation: u8,
    requantization: u8,
    null_slot: bool,
    steps: Vec<GemmStep>,
}

#[derive(Arbitrary, Debug)]
enum GemmStep {
    Run {
        m: Dim,
        input: Place,
        out: Place,
        alias: bool,
        backend: u8,
        null_handle: bool,
    },
    SetWeights {
        weights: Spec,
        transposed: bool,
        salt: u8,
    },
}

pub fn gemm(c: &GemmCase, d: &Data) {
    let (n, k) = (c.n.get(20), c.k.get(40));
    let (qi, qo) = (c.input.get::<i8>(), c.output.get::<i8>());
    let (act, rq) = (c.activation as u32 % 4, c.requantization as u32 % 4);
    let product = n.checked_mul(k);
    let w = Buf::new("weights", c.weights, product.unwrap_or(0), false, |i| {
        d.i8(i, 7)
    });
    let bias = c
        .bias
        .map(|p| Buf::new("bias", p, n, false, |i| d.i32(i, 8)));
    let sc = Buf::new("weight_scales", c.scales, n, false, |i| {
        d.f32(i, 9).abs() / 256.0
    });
    let mut h = ptr::null_mut();
    let s = slot(c.null_slot, &mut h);
    let bias_ptr = bias.as_ref().map_or(ptr::null(), |b| b.ptr as *const i32);
    // SAFETY: buffers valid for their lengths or refused first.
    let status =
        unsafe { qneon_gemm_create(w.ptr, n, k, bias_ptr, qp(qi), sc.ptr, qp(qo), act, rq, s) };
    // A null bias pointer means "no bias".
    let bias_check = bias
        .as_ref()
        .filter(|b| !b.ptr.is_null())
        .and_then(|b| b.check());
    let pre = first([
        c.null_slot.then_some(QneonStatus::NullPointer),
        product.is_none().then_some(QneonStatus::Length),
        w.check(),
        bias_check,
        sc.check(),
        in_range(act, 3),
        in_range(rq, 3),
    ]);
    let requant = [
        Requantization::Multiplier(Rounding::Single),
        Requantization::Multiplier(Rounding::Double),
        Requantization::RealF64,
    ];
    let new = || {
        let b = bias
            .as_ref()
            .filter(|b| !b.ptr.is_null())
            .map(|b| b.values());
        let a = ACTIVATIONS[act as usize];
        Gemm::new(
            &w.values(),
            n,
            k,
            b.as_deref(),
            qi,
            &sc.values(),
            qo,
            a,
            requant[rq as usize],
        )
    };
    let Some((h, mut op)) = created("gemm create", status, h, pre, new) else {
        return;
    };
    for step in c.steps.iter().take(4) {
        match *step {
            GemmStep::Run {
                m,
                input,
                out,
                alias,
                backend: bk,
                null_handle,
            } => {
                let m = m.get(8);
                let (mk, mn) = (m.checked_mul(k), m.checked_mul(n));
                let x = Buf::new("input", input, mk.unwrap_or(0), false, |i| d.i8(i, 10));
                let exact = Spec {
                    place: out,
                    len: Len::Exact,
                };
                let o: Buf<i8> = out_over(alias, &x, exact, "output", mn.unwrap_or(0));
                let handle = if null_handle {
                    ptr::null()
                } else {
                    h as *const _
                };
                let bk = bk as u32 % 4;
                // SAFETY: as in `binary`.
                let status = unsafe { qneon_gemm_run(handle, x.ptr, o.ptr, m, bk) };
                let pre = first([
                    null_handle.then_some(QneonStatus::NullPointer),
                    mk.is_none().then_some(QneonStatus::Length),
                    x.check(),
                    mn.is_none().then_some(QneonStatus::Length),
                    o.check(),
                    overlap(&[x.span(), o.span()]),
                    in_range(bk, 3),
                ]);
                let want = agree("gemm run", status, pre, || {
                    let mut y = vec![0i8; o.len];
                    op.run_with(backend(bk).unwrap(), &x.values(), &mut y, m)?;
                    Ok(y)
                });
                if let Some(want) = want {
                    assert_eq!(o.values(), want, "gemm output");
                }
            }
            GemmStep::SetWeights {
                weights,
                transposed,
                salt,
            } => {
                let w = weights.buf("weights", n * k, false, |i| d.i8(i, salt as usize));
                // SAFETY: a live handle used by this call only; the buffer
                // valid for its length or refused first.
                let status = unsafe { qneon_gemm_set_weights(h, w.ptr, w.len, transposed) };
                agree("gemm set_weights", status, w.check(), || {
                    if transposed {
                        op.set_weights_transposed(&w.values())
                    } else {
                        op.set_weights(&w.values())
                    }
                });
            }
        }
    }
    // SAFETY: the last use of a live handle.
    unsafe { qneon_gemm_destroy(h) };
}

#[derive(Arbitrary, Debug)]
pub struct MatMulCase {
    m: Dim,
    n: Dim,
    k: Dim,
    adj_x: bool,
    adj_y: bool,
    lhs: Quant,
    rhs: Quant,
    output: Quant,
    rounding: u8,
    null_slot: bool,
    runs: Vec<MatMulRun>,
}

#[derive(Arbitrary, Debug)]
struct MatMulRun {
    lhs: Spec,
    rhs: Spec,
    out: Spec,
    scratch_bytes: Spec,
    scratch_words: Spec,
    alias: bool,
    backend: u8,
    null_handle: bool,
}

pub fn matmul(c: &MatMulCase, d: &Data) {
    let (m, n, k) = (c.m.get(12), c.n.get(12), c.k.get(24));
    let (ql, qr, qo) = (c.lhs.get::<i8>(), c.rhs.get::<i8>(), c.output.get::<i8>());
    let rnd = c.rounding as u32 % 3;
    let mut h = ptr::null_mut();
    let s = slot(c.null_slot, &mut h);
    // SAFETY: `s` is null or a valid slot.
    let status =
        unsafe { qneon_matmul_create(m, n, k, c.adj_x, c.adj_y, qp(ql), qp(qr), qp(qo), rnd, s) };
    let pre = first([
        c.null_slot.then_some(QneonStatus::NullPointer),
        in_range(rnd, 2),
    ]);
    let new = || {
        MatMul::new(
            m,
            n,
            k,
            c.adj_x,
            c.adj_y,
            ql,
            qr,
            qo,
            ROUNDINGS[rnd as usize],
        )
    };
    let Some((h, op)) = created("matmul create", status, h, pre, new) else {
        return;
    };
    let (mut bytes, mut words) = (0, 0);
    // SAFETY: a live handle, two writable sizes.
    assert_eq!(
        unsafe { qneon_matmul_scratch(h, &mut bytes, &mut words) },
        QneonStatus::Ok
    );
    assert_eq!((bytes, words), (op.scratch_bytes(), op.scratch_words()));
    for run in c.runs.iter().take(3) {
        let l = run.lhs.buf("lhs", m * k, false, |i| d.i8(i, 11));
        let r = run.rhs.buf("rhs", k * n, false, |i| d.i8(i, 12));
        let o: Buf<i8> = out_over(run.alias, &l, run.out, "output", m * n);
        let sb: Buf<i8> = run.scratch_bytes.buf("scratch_bytes", bytes, true, |_| 0);
        let sw: Buf<i32> = run.scratch_words.buf("scratch_words", words, true, |_| 0);
        let handle = if run.null_handle {
            ptr::null()
        } else {
            h as *const _
        };
        let bk = run.backend as u32 % 4;
        // SAFETY: as in `binary`.
        let status = unsafe {
            qneon_matmul_run(
                handle, l.ptr, l.len, r.ptr, r.len, o.ptr, o.len, sb.ptr, sb.len, sw.ptr, sw.len,
                bk,
            )
        };
        let pre = first([
            run.null_handle.then_some(QneonStatus::NullPointer),
            l.check(),
            r.check(),
            o.check(),
            sb.check(),
            sw.check(),
            overlap(&[l.span(), r.span(), o.span(), sb.span(), sw.span()]),
            in_range(bk, 3),
        ]);
        let want = agree("matmul run", status, pre, || {
            let mut y = vec![0i8; o.len];
            let (mut b, mut w) = (vec![0i8; sb.len], vec![0i32; sw.len]);
            op.run_with(
                backend(bk).unwrap(),
                &l.values(),
                &r.values(),
                &mut y,
                &mut b,
                &mut w,
            )?;
            Ok(y)
        });
        if let Some(want) = want {
            assert_eq!(o.values(), want, "matmul output");
        }
    }
    // SAFETY: the last use of a live handle.
    unsafe { qneon_matmul_destroy(h) };
}
