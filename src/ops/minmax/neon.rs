//! The NEON loops of MAXIMUM and MINIMUM ([`Backend::Neon`](crate::Backend::Neon)):
//! one `smax` / `smin` (`umax` / `umin`) per vector of 16 bytes or 8
//! halfwords. The op is a pure out-of-place map, so a partial last vector is
//! the last whole vector of the run (overlapping the one before, which it
//! rewrites with the same bytes); a run shorter than a vector goes through
//! stack buffers, so nothing outside the slices is touched.

use core::arch::aarch64::*;

use crate::elem::{ElemKind, QuantElem};

macro_rules! kernels {
    ($t:ty, $v:ty, $lanes:expr, $ld:ident, $st:ident, $dup:ident, $max:ident, $min:ident,
     $slices:ident, $scalar:ident) => {
        /// `out[i] = max(a[i], b[i])` (`min` unless `max`); all three of
        /// one length. Not generic, so that the library's own object code
        /// holds it (both loops) for the asm checks.
        #[inline(never)]
        pub(crate) fn $slices(max: bool, a: &[$t], b: &[$t], out: &mut [$t]) {
            #[inline(always)]
            fn body<const MAX: bool>(a: &[$t], b: &[$t], out: &mut [$t]) {
                const LANES: usize = $lanes;
                let n = out.len().min(a.len()).min(b.len());
                // SAFETY: neon is a compile-time target feature (cfg on this
                // module); every pointer below is `p + i` with `i + LANES <= n`,
                // the length of all three slices (or the stack buffers' LANES).
                unsafe {
                    let step = |pa: *const $t, pb: *const $t, po: *mut $t| {
                        let (x, y) = ($ld(pa), $ld(pb));
                        $st(po, if MAX { $max(x, y) } else { $min(x, y) });
                    };
                    if n < LANES {
                        let (mut ba, mut bb, mut bo) =
                            ([0 as $t; LANES], [0 as $t; LANES], [0 as $t; LANES]);
                        ba[..n].copy_from_slice(&a[..n]);
                        bb[..n].copy_from_slice(&b[..n]);
                        step(ba.as_ptr(), bb.as_ptr(), bo.as_mut_ptr());
                        out[..n].copy_from_slice(&bo[..n]);
                        return;
                    }
                    let (pa, pb, po) = (a.as_ptr(), b.as_ptr(), out.as_mut_ptr());
                    let mut i = 0;
                    while i + LANES <= n {
                        step(pa.add(i), pb.add(i), po.add(i));
                        i += LANES;
                    }
                    if i < n {
                        let last = n - LANES;
                        step(pa.add(last), pb.add(last), po.add(last));
                    }
                }
            }
            if max {
                body::<true>(a, b, out)
            } else {
                body::<false>(a, b, out)
            }
        }

        /// `out[i] = max(a[i], v)` (`min` unless `max`); `a` as long as `out`.
        #[inline(never)]
        pub(crate) fn $scalar(max: bool, a: &[$t], v: $t, out: &mut [$t]) {
            #[inline(always)]
            fn body<const MAX: bool>(a: &[$t], v: $t, out: &mut [$t]) {
                const LANES: usize = $lanes;
                let n = out.len().min(a.len());
                // SAFETY: neon is a compile-time target feature (cfg on this
                // module); every pointer below is `p + i` with `i + LANES <= n`,
                // the length of both slices (or the stack buffers' LANES).
                unsafe {
                    let y = $dup(v);
                    let step = |pa: *const $t, po: *mut $t| {
                        let x = $ld(pa);
                        $st(po, if MAX { $max(x, y) } else { $min(x, y) });
                    };
                    if n < LANES {
                        let (mut ba, mut bo) = ([0 as $t; LANES], [0 as $t; LANES]);
                        ba[..n].copy_from_slice(&a[..n]);
                        step(ba.as_ptr(), bo.as_mut_ptr());
                        out[..n].copy_from_slice(&bo[..n]);
                        return;
                    }
                    let (pa, po) = (a.as_ptr(), out.as_mut_ptr());
                    let mut i = 0;
                    while i + LANES <= n {
                        step(pa.add(i), po.add(i));
                        i += LANES;
                    }
                    if i < n {
                        let last = n - LANES;
                        step(pa.add(last), po.add(last));
                    }
                }
            }
            if max {
                body::<true>(a, v, out)
            } else {
                body::<false>(a, v, out)
            }
        }
    };
}

kernels!(
    i8,
    int8x16_t,
    16,
    vld1q_s8,
    vst1q_s8,
    vdupq_n_s8,
    vmaxq_s8,
    vminq_s8,
    minmax_i8,
    minmax_scalar_i8
);
kernels!(
    u8,
    uint8x16_t,
    16,
    vld1q_u8,
    vst1q_u8,
    vdupq_n_u8,
    vmaxq_u8,
    vminq_u8,
    minmax_u8,
    minmax_scalar_u8
);
kernels!(
    i16,
    int16x8_t,
    8,
    vld1q_s16,
    vst1q_s16,
    vdupq_n_s16,
    vmaxq_s16,
    vminq_s16,
    minmax_i16,
    minmax_scalar_i16
);

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

/// The slice-and-slice kernel of `T`.
pub(super) fn slices<T: QuantElem>(max: bool, a: &[T], b: &[T], out: &mut [T]) {
    macro_rules! go {
        ($t:ty, $k:ident) => {{
            // SAFETY: T::KIND says T is this type.
            let (a, b) = unsafe { (same::<T, $t>(a), same::<T, $t>(b)) };
            // SAFETY: as above.
            let out = unsafe { same_mut::<T, $t>(out) };
            $k(max, a, b, out)
        }};
    }
    match T::KIND {
        ElemKind::I8 => go!(i8, minmax_i8),
        ElemKind::U8 => go!(u8, minmax_u8),
        ElemKind::I16 => go!(i16, minmax_i16),
    }
}

/// The slice-and-value kernel of `T`.
pub(super) fn scalar<T: QuantElem>(max: bool, a: &[T], v: T, out: &mut [T]) {
    macro_rules! go {
        ($t:ty, $k:ident) => {{
            // SAFETY: T::KIND says T is this type.
            let (a, out) = unsafe { (same::<T, $t>(a), same_mut::<T, $t>(out)) };
            let v = v.to_i32() as $t;
            $k(max, a, v, out)
        }};
    }
    match T::KIND {
        ElemKind::I8 => go!(i8, minmax_scalar_i8),
        ElemKind::U8 => go!(u8, minmax_scalar_u8),
        ElemKind::I16 => go!(i16, minmax_scalar_i16),
    }
}
