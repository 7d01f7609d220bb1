//! The quantized element types (`i8`, `u8`, `i16`) and the one way to view a
//! generic slice as its concrete type.
//!
//! A leaf: it imports nothing from the crate. Code that must know which of the
//! three types a `T: QuantElem` is matches on [`QuantElem::KIND`] (a constant,
//! so the match folds away after monomorphization) or, to reach a concrete
//! kernel, on [`view`].

mod sealed {
    /// Which of the sealed element types a [`QuantElem`](super::QuantElem) is.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum ElemKind {
        /// `i8`.
        I8,
        /// `u8`.
        U8,
        /// `i16`.
        I16,
    }

    pub trait Sealed {
        /// The concrete type.
        const KIND: ElemKind;
    }
    impl Sealed for i8 {
        const KIND: ElemKind = ElemKind::I8;
    }
    impl Sealed for u8 {
        const KIND: ElemKind = ElemKind::U8;
    }
    impl Sealed for i16 {
        const KIND: ElemKind = ElemKind::I16;
    }
}

pub(crate) use sealed::ElemKind;

/// A quantized element type: `i8`, `u8` or `i16` (sealed).
pub trait QuantElem:
    sealed::Sealed + Copy + Default + PartialOrd + core::fmt::Debug + 'static
{
    /// Smallest value, widened.
    const MIN: i32;
    /// Largest value, widened.
    const MAX: i32;
    /// TFLite's name of the type (`"int8"`, `"uint8"`, `"int16"`), for messages.
    const NAME: &'static str;
    /// Widen to `i32`.
    fn to_i32(self) -> i32;
    /// Narrow an `i32` already clamped to `[MIN, MAX]`.
    fn from_i32(x: i32) -> Self;
    /// Narrow an `i32`, saturating to `[MIN, MAX]` (what NEON's saturating
    /// narrows do).
    fn saturate(x: i32) -> Self;
}

macro_rules! quant_elem {
    ($t:ty, $name:literal) => {
        impl QuantElem for $t {
            const MIN: i32 = <$t>::MIN as i32;
            const MAX: i32 = <$t>::MAX as i32;
            const NAME: &'static str = $name;
            #[inline(always)]
            fn to_i32(self) -> i32 {
                self as i32
            }
            #[inline(always)]
            fn saturate(x: i32) -> Self {
                x.clamp(<Self as QuantElem>::MIN, <Self as QuantElem>::MAX) as $t
            }
            #[inline(always)]
            fn from_i32(x: i32) -> Self {
                debug_assert!((<Self as QuantElem>::MIN..=<Self as QuantElem>::MAX).contains(&x));
                x as $t
            }
        }
    };
}
quant_elem!(i8, "int8");
quant_elem!(u8, "uint8");
quant_elem!(i16, "int16");

/// An input and an output slice of a [`QuantElem`] seen as their concrete type.
pub(crate) enum Slices<'a> {
    /// `i8` data.
    I8(&'a [i8], &'a mut [i8]),
    /// `u8` data.
    U8(&'a [u8], &'a mut [u8]),
    /// `i16` data.
    I16(&'a [i16], &'a mut [i16]),
}

impl<'a> Slices<'a> {
    /// 8-bit data as bytes (`i8` as its two's-complement bytes); `None` for `i16`.
    #[inline(always)]
    pub(crate) fn bytes(self) -> Option<(&'a [u8], &'a mut [u8])> {
        match self {
            Slices::I8(i, o) => Some((bytemuck::cast_slice(i), bytemuck::cast_slice_mut(o))),
            Slices::U8(i, o) => Some((i, o)),
            Slices::I16(..) => None,
        }
    }

    /// `i16` data; `None` for the 8-bit types.
    #[inline(always)]
    pub(crate) fn i16(self) -> Option<(&'a [i16], &'a mut [i16])> {
        match self {
            Slices::I16(i, o) => Some((i, o)),
            _ => None,
        }
    }
}

/// Views `input` and `output` as the concrete element type behind `T`. The
/// match on `T::KIND` is on a constant, so after monomorphization only one
/// arm remains.
#[inline(always)]
pub(crate) fn view<'a, T: QuantElem>(input: &'a [T], output: &'a mut [T]) -> Slices<'a> {
    /// # Safety
    /// `T` and `U` must be the same type.
    #[inline(always)]
    unsafe fn cast<'a, T, U>(input: &'a [T], output: &'a mut [T]) -> (&'a [U], &'a mut [U]) {
        let (len_in, len_out) = (input.len(), output.len());
        // SAFETY: T is U (the caller's guarantee): same layout and validity;
        // the lengths are unchanged and the new slices take over the borrows
        // with their lifetimes and mutability.
        unsafe {
            (
                core::slice::from_raw_parts(input.as_ptr() as *const U, len_in),
                core::slice::from_raw_parts_mut(output.as_mut_ptr() as *mut U, len_out),
            )
        }
    }
    // SAFETY: KIND names the type it is implemented for (sealed: i8, u8, i16).
    unsafe {
        match T::KIND {
            ElemKind::I8 => {
                let (i, o) = cast::<T, i8>(input, output);
                Slices::I8(i, o)
            }
            ElemKind::U8 => {
                let (i, o) = cast::<T, u8>(input, output);
                Slices::U8(i, o)
            }
            ElemKind::I16 => {
                let (i, o) = cast::<T, i16>(input, output);
                Slices::I16(i, o)
            }
        }
    }
}
