//! Logistic and tanh, [`Method::DequantF32`](crate::Method::DequantF32):
//! dequantize, sigmoid or tanh in `f32`, requantize (see
//! [`crate::ops::dequant_f32`] for the method and its accuracy). The map is
//! generic over the lanes; the scalar backend runs it on 16 `f32`, NEON on
//! four `float32x4_t` (`logistic_f32_i8`, ... under stable names).

use super::params::Activation;
use crate::elem::QuantElem;
#[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
use crate::elem::{view, Slices};
use crate::f32::{sigmoid_lanes, tanh_lanes, BLOCK};
use crate::ops::dequant_f32::QuantLanes;
use crate::quant::QuantParams;
use crate::simd::tail::map_blocks_at;
#[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
use core::arch::aarch64::float32x4_t;

/// Prepared `Method::DequantF32` logistic or tanh.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct ActivationF32 {
    /// Which function.
    pub(crate) activation: Activation,
    /// Input scale.
    pub(crate) input_scale: f32,
    /// Input zero point.
    pub(crate) input_zero_point: i32,
    /// `1 / output_scale` in `f32`.
    pub(crate) inv_output_scale: f32,
    /// Output zero point.
    pub(crate) output_zero_point: i32,
}

impl ActivationF32 {
    /// From validated quantization.
    pub(crate) fn new(activation: Activation, input: QuantParams, output: QuantParams) -> Self {
        ActivationF32 {
            activation,
            input_scale: input.scale,
            input_zero_point: input.zero_point,
            inv_output_scale: 1.0 / output.scale,
            output_zero_point: output.zero_point,
        }
    }
}

/// Logistic (`TANH == false`) or tanh, element-wise (lengths checked by the caller).
#[inline(always)]
pub(crate) fn activation_map<
    L: QuantLanes<T, N>,
    T: QuantElem,
    const N: usize,
    const TANH: bool,
>(
    k: &ActivationF32,
    input: &[T],
    output: &mut [T],
) {
    debug_assert_eq!(TANH, k.activation == Activation::Tanh);
    let s = L::splat(k.input_scale);
    let inv = L::splat(k.inv_output_scale);
    let pad = T::from_i32(k.input_zero_point);
    map_blocks_at::<BLOCK, T>(input, output, pad, |src, dst, _| {
        // SAFETY: map_blocks hands out 16 readable elements.
        let mut v = unsafe { L::load_offset(src, k.input_zero_point) };
        for x in v.iter_mut() {
            let real = x.mul(s);
            let f = if TANH {
                tanh_lanes(real)
            } else {
                sigmoid_lanes(real)
            };
            *x = f.mul(inv);
        }
        // SAFETY: map_blocks hands out 16 writable elements.
        unsafe { L::store_requantized(dst, v, k.output_zero_point) };
    });
}

/// Logistic or tanh on the scalar backend; lengths were checked by the caller.
pub(crate) fn activation_scalar<T: QuantElem>(k: &ActivationF32, input: &[T], output: &mut [T]) {
    match k.activation {
        Activation::Logistic => activation_map::<f32, T, BLOCK, false>(k, input, output),
        Activation::Tanh => activation_map::<f32, T, BLOCK, true>(k, input, output),
    }
}

macro_rules! neon_kernels {
    ($($name:ident: $t:ty, $tanh:literal;)*) => {$(
        #[doc = concat!("Element-wise on `", stringify!($t), "` (tanh: ", $tanh, "), NEON.")]
        #[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
        #[inline(never)]
        pub(crate) fn $name(k: &ActivationF32, input: &[$t], output: &mut [$t]) {
            activation_map::<float32x4_t, $t, 4, $tanh>(k, input, output)
        }
    )*};
}

neon_kernels! {
    logistic_f32_i8: i8, false;
    logistic_f32_u8: u8, false;
    logistic_f32_i16: i16, false;
    tanh_f32_i8: i8, true;
    tanh_f32_u8: u8, true;
    tanh_f32_i16: i16, true;
}

/// Logistic or tanh on NEON; lengths were checked by the caller.
#[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
pub(crate) fn activation_neon<T: QuantElem>(k: &ActivationF32, input: &[T], output: &mut [T]) {
    match (k.activation, view(input, output)) {
        (Activation::Logistic, Slices::I8(i, o)) => logistic_f32_i8(k, i, o),
        (Activation::Logistic, Slices::U8(i, o)) => logistic_f32_u8(k, i, o),
        (Activation::Logistic, Slices::I16(i, o)) => logistic_f32_i16(k, i, o),
        (Activation::Tanh, Slices::I8(i, o)) => tanh_f32_i8(k, i, o),
        (Activation::Tanh, Slices::U8(i, o)) => tanh_f32_u8(k, i, o),
        (Activation::Tanh, Slices::I16(i, o)) => tanh_f32_i16(k, i, o),
    }
}
