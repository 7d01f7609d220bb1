//! Logistic and tanh, [`Method::FixedPoint`](crate::Method::FixedPoint),
//! scalar: the reference loop, one `i32` lane at a time.

use super::params::{activation_lanes, Activation, ActivationParams};
use crate::elem::QuantElem;

/// Logistic or tanh, element-wise; lengths were checked by the caller.
pub(crate) fn activation<T: QuantElem>(p: &ActivationParams, input: &[T], output: &mut [T]) {
    match (p.input_integer_bits, p.activation) {
        (4, Activation::Logistic) => activation_loop::<T, 4, 5, false>(p, input, output),
        (4, Activation::Tanh) => activation_loop::<T, 4, 5, true>(p, input, output),
        (_, Activation::Logistic) => activation_loop::<T, 5, 6, false>(p, input, output),
        (_, Activation::Tanh) => activation_loop::<T, 5, 6, true>(p, input, output),
    }
}

fn activation_loop<T: QuantElem, const I: u32, const I_PLUS_1: u32, const TANH: bool>(
    p: &ActivationParams,
    input: &[T],
    output: &mut [T],
) {
    for (x, y) in input.iter().zip(output.iter_mut()) {
        *y = T::saturate(activation_lanes::<i32, I, I_PLUS_1, TANH>(x.to_i32(), p));
    }
}
