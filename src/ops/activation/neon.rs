//! Logistic and tanh, [`Method::FixedPoint`](crate::Method::FixedPoint),
//! NEON: [`activation_lanes`] on `int32x4_t`, 16 elements per block. Kernels
//! (`logistic_i8`, `tanh_i16`, ...) are `#[inline(never)]` under stable names
//! for the asm checks.

use super::params::{activation_lanes, Activation, ActivationParams};
use crate::elem::{view, QuantElem, Slices};
use crate::simd::neon::{map4, unswitch_on_shift, NeonElem};
use crate::simd::tail::{map_blocks, BLOCK};
use core::arch::aarch64::*;

#[inline(always)]
fn activation_rows<T: NeonElem + QuantElem, const I: u32, const I_PLUS_1: u32, const TANH: bool>(
    p: &ActivationParams,
    input: &[T],
    output: &mut [T],
) {
    unswitch_on_shift!(p, |p| activation_rows_inner::<T, I, I_PLUS_1, TANH>(
        p, input, output
    ))
}

#[inline(always)]
fn activation_rows_inner<
    T: NeonElem + QuantElem,
    const I: u32,
    const I_PLUS_1: u32,
    const TANH: bool,
>(
    p: &ActivationParams,
    input: &[T],
    output: &mut [T],
) {
    let pad = T::from_i32(p.input_zero_point);
    map_blocks::<BLOCK, _>(
        input,
        output,
        pad,
        #[inline(always)]
        |src, dst| {
            // SAFETY: map_blocks hands out pointers to 16 valid elements each.
            unsafe {
                let x = T::load_block(src);
                T::store_block(
                    dst,
                    map4(
                        x,
                        #[inline(always)]
                        |v| activation_lanes::<int32x4_t, I, I_PLUS_1, TANH>(v, p),
                    ),
                );
            }
        },
    );
}

macro_rules! activation_kernels {
    ($($name:ident: $t:ty, $i:literal, $i1:literal, $tanh:literal;)*) => {$(
        #[doc = concat!("`", stringify!($name), "`: Q", $i, " rescaled input, 16 elements per iteration.")]
        #[inline(never)]
        pub(crate) fn $name(p: &ActivationParams, input: &[$t], output: &mut [$t]) {
            activation_rows::<$t, $i, $i1, $tanh>(p, input, output)
        }
    )*};
}

activation_kernels! {
    logistic_i8: i8, 4, 5, false;
    logistic_u8: u8, 4, 5, false;
    logistic_i16: i16, 5, 6, false;
    tanh_i8: i8, 4, 5, true;
    tanh_u8: u8, 4, 5, true;
    tanh_i16: i16, 5, 6, true;
}

/// Logistic or tanh, element-wise; lengths were checked by the caller.
pub(crate) fn activation<T: QuantElem>(p: &ActivationParams, input: &[T], output: &mut [T]) {
    match (p.activation, view(input, output)) {
        (Activation::Logistic, Slices::I8(i, o)) => logistic_i8(p, i, o),
        (Activation::Logistic, Slices::U8(i, o)) => logistic_u8(p, i, o),
        (Activation::Logistic, Slices::I16(i, o)) => logistic_i16(p, i, o),
        (Activation::Tanh, Slices::I8(i, o)) => tanh_i8(p, i, o),
        (Activation::Tanh, Slices::U8(i, o)) => tanh_u8(p, i, o),
        (Activation::Tanh, Slices::I16(i, o)) => tanh_i16(p, i, o),
    }
}
