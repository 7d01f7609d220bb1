//! The NEON loop of PRELU ([`Backend::Neon`](crate::Backend::Neon)): blocks
//! of 16 inputs and 16 alphas widened to four `int32x4_t` each, the product
//! by `mul`, then [`PreluParams::finish`] on the lanes. The op is a pure
//! out-of-place map, so a partial last block is the last whole block of the
//! run (overlapping the one before, rewritten with the same bytes); a run
//! shorter than a block goes through stack buffers.

use core::arch::aarch64::*;

use super::params::PreluParams;
use crate::elem::QuantElem;
use crate::simd::neon::{Block, NeonElem};
use crate::simd::tail::BLOCK;

/// One block: 16 inputs at `x`, 16 alphas at `a` (or `alpha` duplicated
/// when `a` is `None`), 16 outputs at `out`.
///
/// # Safety
/// `x` and `a` must be valid for reading, `out` for writing 16 elements.
#[inline(always)]
unsafe fn block<T: NeonElem>(
    p: &PreluParams,
    x: *const T,
    a: Option<*const T>,
    alpha: Block,
    out: *mut T,
) {
    // SAFETY: the pointers are the caller's; neon is a compile-time target
    // feature (cfg on this module).
    unsafe {
        let x = T::load_block(x);
        let a = match a {
            Some(a) => T::load_block(a),
            None => alpha,
        };
        let zp_in = vdupq_n_s32(p.input_zero_point);
        let zp_alpha = vdupq_n_s32(p.alpha_zero_point);
        let mut y = [vdupq_n_s32(0); 4];
        for k in 0..4 {
            let v = vsubq_s32(x[k], zp_in);
            let product = vmulq_s32(v, vsubq_s32(a[k], zp_alpha));
            y[k] = p.finish(v, product);
        }
        T::store_block(out, y);
    }
}

/// `out[i] = prelu(x[i], alpha[i])`, or with one `alpha` for all when
/// `alphas` is `None`; `x`, `alphas` and `out` of one length.
#[inline(always)]
fn run<T: QuantElem + NeonElem>(
    p: &PreluParams,
    x: &[T],
    alphas: Option<&[T]>,
    alpha: T,
    out: &mut [T],
) {
    let n = out.len().min(x.len());
    let n = alphas.map_or(n, |a| n.min(a.len()));
    // SAFETY: neon is a compile-time target feature (cfg on this module).
    let dup = unsafe { [vdupq_n_s32(alpha.to_i32()); 4] };
    if n < BLOCK {
        let (mut bx, mut ba, mut bo) =
            ([T::default(); BLOCK], [alpha; BLOCK], [T::default(); BLOCK]);
        bx[..n].copy_from_slice(&x[..n]);
        if let Some(a) = alphas {
            ba[..n].copy_from_slice(&a[..n]);
        }
        // SAFETY: the stack buffers hold BLOCK elements each.
        unsafe { block(p, bx.as_ptr(), Some(ba.as_ptr()), dup, bo.as_mut_ptr()) };
        out[..n].copy_from_slice(&bo[..n]);
        return;
    }
    let (px, po) = (x.as_ptr(), out.as_mut_ptr());
    let pa = alphas.map(|a| a.as_ptr());
    let mut i = 0;
    let mut last = false;
    loop {
        // SAFETY: i + BLOCK <= n, the length of every slice here.
        unsafe { block(p, px.add(i), pa.map(|a| a.add(i)), dup, po.add(i)) };
        if last {
            break;
        }
        i += BLOCK;
        if i + BLOCK > n {
            if i == n {
                break;
            }
            i = n - BLOCK;
            last = true;
        }
    }
}

/// The entry points of one 8-bit type, not generic, so that the library's
/// own object code holds them for the asm checks.
macro_rules! entry_points {
    ($t:ty, $slices:ident, $scalar:ident) => {
        /// PRELU of a run whose alphas are a slice as long as it.
        #[inline(never)]
        pub(crate) fn $slices(p: &PreluParams, x: &[$t], alphas: &[$t], out: &mut [$t]) {
            run(p, x, Some(alphas), 0, out)
        }

        /// PRELU of a run with one alpha.
        #[inline(never)]
        pub(crate) fn $scalar(p: &PreluParams, x: &[$t], alpha: $t, out: &mut [$t]) {
            run(p, x, None, alpha, out)
        }
    };
}

entry_points!(i8, prelu_i8, prelu_scalar_alpha_i8);
entry_points!(u8, prelu_u8, prelu_scalar_alpha_u8);

/// `T`'s slice as the concrete type `U` that [`QuantElem::KIND`] names.
///
/// # Safety
/// `T` and `U` must be the same type.
#[inline(always)]
unsafe fn same<T, U>(s: &[T]) -> &[U] {
    // SAFETY: T is U (the caller's guarantee); length and borrow unchanged.
    unsafe { core::slice::from_raw_parts(s.as_ptr() as *const U, s.len()) }
}

/// [`same`] for the output.
///
/// # Safety
/// `T` and `U` must be the same type.
#[inline(always)]
unsafe fn same_mut<T, U>(s: &mut [T]) -> &mut [U] {
    // SAFETY: T is U (the caller's guarantee); length and borrow unchanged.
    unsafe { core::slice::from_raw_parts_mut(s.as_mut_ptr() as *mut U, s.len()) }
}

/// The entry point of the 8-bit type `T` for a slice of alphas (`Ok`) or
/// one (`Err`) (`new()` refuses int16).
pub(super) fn dispatch<T: QuantElem>(
    p: &PreluParams,
    x: &[T],
    alphas: Result<&[T], T>,
    out: &mut [T],
) {
    use crate::elem::ElemKind;
    macro_rules! go {
        ($t:ty, $slices:ident, $scalar:ident) => {{
            // SAFETY: T::KIND says T is this type.
            let (x, out) = unsafe { (same::<T, $t>(x), same_mut::<T, $t>(out)) };
            match alphas {
                // SAFETY: as above.
                Ok(a) => $slices(p, x, unsafe { same::<T, $t>(a) }, out),
                Err(a) => $scalar(p, x, a.to_i32() as $t, out),
            }
        }};
    }
    match T::KIND {
        ElemKind::I8 => go!(i8, prelu_i8, prelu_scalar_alpha_i8),
        ElemKind::U8 => go!(u8, prelu_u8, prelu_scalar_alpha_u8),
        ElemKind::I16 => {
            for (i, (o, &v)) in out.iter_mut().zip(x).enumerate() {
                let a = match alphas {
                    Ok(a) => a[i],
                    Err(a) => a,
                };
                *o = T::from_i32(p.apply(v.to_i32(), a.to_i32()));
            }
        }
    }
}
