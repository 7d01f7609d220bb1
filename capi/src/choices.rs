//! The enumerations of the ops beyond the activations (rounding,
//! requantization, fused activation, f32 softmax variant, loss reduction),
//! each passed as `uint32_t` and converted here, so that a value out of
//! range is an error, not undefined behaviour.

use qneon::f32::SoftmaxVariant;
use qneon::loss::Reduction;
use qneon::{FusedActivation, Requantization, Rounding};

use crate::entry::{Failure, QneonStatus};

/// How a quantized multiplier is applied (qneon's `Rounding`); passed as
/// `uint32_t`.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QneonRounding {
    /// One rounding of the 64-bit product (LiteRT 2.x, XNNPACK).
    Single = 0,
    /// gemmlowp's two roundings (TensorFlow 2.19's TFLite, TFLite Micro).
    Double = 1,
}

/// How a GEMM's accumulators are scaled to the output (qneon's
/// `Requantization`); passed as `uint32_t`. The first two values equal
/// `QneonRounding`'s.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QneonRequantization {
    /// The quantized multiplier in single rounding.
    Single = 0,
    /// The quantized multiplier in double rounding.
    Double = 1,
    /// `round(double(acc) * real)`: LiteRT's reference fully connected.
    RealF64 = 2,
    /// `float(acc) * scale` rounded to even, the scale in `float`: the
    /// XNNPACK delegate's fully connected.
    XnnpackF32 = 3,
}

/// The activation fused into an int8 op's output clamp (qneon's
/// `FusedActivation`); passed as `uint32_t`.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QneonActivation {
    /// No clamp beyond the int8 range.
    None = 0,
    /// `max(x, 0)`.
    Relu = 1,
    /// `min(max(x, 0), 6)`.
    Relu6 = 2,
}

/// The algorithm of `qneon_f32_softmax` (qneon's `f32::SoftmaxVariant`);
/// passed as `uint32_t`.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QneonSoftmaxVariant {
    /// Maximum, then `exp` stored and summed, then scaled (within 3 ulp).
    TwoPass = 0,
    /// A running maximum and rescaled sum, then `exp` again (within 3.5 ulp).
    Online = 1,
}

/// How a loss combines its per-position values (qneon's
/// `loss::Reduction`); passed as `uint32_t`.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QneonReduction {
    /// Every position's loss.
    None = 0,
    /// Their sum.
    Sum = 1,
    /// Their sum over the sum of the target weights not ignored (PyTorch's
    /// default).
    Mean = 2,
}

fn out_of_range(value: u32, what: &str, first: &str, last: u32) -> Failure {
    Failure::new(
        QneonStatus::InvalidArgument,
        format!(
            "{what} {value} is not a Qneon{what_cap}; use {first} (0) to {last}",
            what_cap = capitalized(what)
        ),
    )
}

fn capitalized(what: &str) -> String {
    // "rounding" -> "Rounding", "softmax variant" -> "SoftmaxVariant".
    what.split(' ')
        .map(|w| {
            let mut c = w.chars();
            c.next()
                .map(|f| f.to_ascii_uppercase().to_string() + c.as_str())
                .unwrap_or_default()
        })
        .collect()
}

/// A `QNEON_ROUNDING_*` value.
pub(crate) fn rounding(value: u32) -> Result<Rounding, Failure> {
    match value {
        0 => Ok(Rounding::Single),
        1 => Ok(Rounding::Double),
        v => Err(out_of_range(v, "rounding", "QNEON_ROUNDING_SINGLE", 1)),
    }
}

/// A `QNEON_REQUANTIZATION_*` value.
pub(crate) fn requantization(value: u32) -> Result<Requantization, Failure> {
    match value {
        0 => Ok(Requantization::Multiplier(Rounding::Single)),
        1 => Ok(Requantization::Multiplier(Rounding::Double)),
        2 => Ok(Requantization::RealF64),
        3 => Ok(Requantization::XnnpackF32),
        v => Err(out_of_range(
            v,
            "requantization",
            "QNEON_REQUANTIZATION_SINGLE",
            3,
        )),
    }
}

/// A `QNEON_ACTIVATION_*` value.
pub(crate) fn activation(value: u32) -> Result<FusedActivation, Failure> {
    match value {
        0 => Ok(FusedActivation::None),
        1 => Ok(FusedActivation::Relu),
        2 => Ok(FusedActivation::Relu6),
        v => Err(out_of_range(v, "activation", "QNEON_ACTIVATION_NONE", 2)),
    }
}

/// A `QNEON_SOFTMAX_VARIANT_*` value.
pub(crate) fn softmax_variant(value: u32) -> Result<SoftmaxVariant, Failure> {
    match value {
        0 => Ok(SoftmaxVariant::TwoPass),
        1 => Ok(SoftmaxVariant::Online),
        v => Err(out_of_range(
            v,
            "softmax variant",
            "QNEON_SOFTMAX_VARIANT_TWO_PASS",
            1,
        )),
    }
}

/// A `QNEON_REDUCTION_*` value.
pub(crate) fn reduction(value: u32) -> Result<Reduction, Failure> {
    match value {
        0 => Ok(Reduction::None),
        1 => Ok(Reduction::Sum),
        2 => Ok(Reduction::Mean),
        v => Err(out_of_range(v, "reduction", "QNEON_REDUCTION_NONE", 2)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn out_of_range_messages_name_the_c_type() {
        let f = |r: Result<Rounding, Failure>| r.err().map(|f| f.message().to_string());
        assert_eq!(
            f(rounding(7)).unwrap(),
            "rounding 7 is not a QneonRounding; use QNEON_ROUNDING_SINGLE (0) to 1"
        );
        let m = softmax_variant(2).err().unwrap().message().to_string();
        assert!(
            m.starts_with("softmax variant 2 is not a QneonSoftmaxVariant"),
            "{m}"
        );
    }
}
