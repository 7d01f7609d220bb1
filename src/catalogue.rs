//! Every op the library offers, with its element types and methods, in one
//! table the workspace's tools read instead of keeping lists of their own:
//! `qneon-bench`'s rows (and so `cargo xtask bench`'s tables, in the order
//! of [`Op::ALL`]), the host criterion benches, the asm expectations'
//! coverage check (`cargo xtask asm`), the fuzz targets' choice of element
//! type and method, and the C API's per-type functions (generated from this
//! table by `cargo xtask capi-header`).
//!
//! Adding an op is a new [`Op`] variant: every tool matches on it
//! exhaustively, so each one must decide how to cover it before the
//! workspace builds again. Adding an element type or a method to a row of
//! [`KERNELS`] makes the tools that cannot run it fail with a message that
//! names the row (and this module's tests check that the library's `new()`
//! accepts every quantized row listed, and refuses the methods left out).
//!
//! Not part of the library's stable API: the names and rows change as the
//! library does.

use crate::{Method, Rounding};

/// An element type, as the tools name it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Dtype {
    /// `i8`, quantized.
    Int8,
    /// `u8`, quantized.
    Uint8,
    /// `i16`, quantized (zero point 0).
    Int16,
    /// Raw fixed-point `i32` (the `q31` module).
    Q31,
    /// `f32` (the `f32` and `loss` modules).
    F32,
}

impl Dtype {
    /// Every element type, in the order the tools list rows.
    pub const ALL: [Dtype; 5] = [
        Dtype::Int8,
        Dtype::Uint8,
        Dtype::Int16,
        Dtype::Q31,
        Dtype::F32,
    ];

    /// The tools' name (`int8`, ..., as `QuantElem::NAME`).
    pub const fn name(self) -> &'static str {
        match self {
            Dtype::Int8 => "int8",
            Dtype::Uint8 => "uint8",
            Dtype::Int16 => "int16",
            Dtype::Q31 => "q31",
            Dtype::F32 => "f32",
        }
    }

    /// The Rust element type (`i8`, `u8`, `i16`, `i32`, `f32`).
    pub const fn rust(self) -> &'static str {
        match self {
            Dtype::Int8 => "i8",
            Dtype::Uint8 => "u8",
            Dtype::Int16 => "i16",
            Dtype::Q31 => "i32",
            Dtype::F32 => "f32",
        }
    }

    /// One of the quantized types (`QuantElem`): int8, uint8, int16.
    pub const fn quantized(self) -> bool {
        matches!(self, Dtype::Int8 | Dtype::Uint8 | Dtype::Int16)
    }
}

/// An op (or one form of an op, as the benchmarks tell them apart).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Op {
    /// `Softmax`, `q31::softmax`, `f32::softmax`.
    Softmax,
    /// `f32::softmax_variant(SoftmaxVariant::Online, ..)`.
    SoftmaxOnline,
    /// `LogSoftmax`, `f32::log_softmax`.
    LogSoftmax,
    /// `Logistic`, `q31::logistic`.
    Logistic,
    /// `f32::sigmoid` (the float logistic, under its float name).
    Sigmoid,
    /// `Tanh`, `q31::tanh`, `f32::tanh`.
    Tanh,
    /// `ThresholdedLogistic`.
    ThresholdedLogistic,
    /// `ThresholdedSoftmax`.
    ThresholdedSoftmax,
    /// `loss::CrossEntropy` forward (quantized logits: `quantized()`).
    CrossEntropy,
    /// `loss::CrossEntropy::backward`.
    CrossEntropyBackward,
    /// `Add` on two whole operands.
    Add,
    /// `Add` with a repeated row (`Operand::Row`).
    AddRow,
    /// `Add` with one repeated value (`Operand::Scalar`).
    AddScalar,
    /// `Sub` on two whole operands.
    Sub,
    /// `Mul` on two whole operands.
    Mul,
    /// `Mul` with a repeated row.
    MulRow,
    /// `Mul` with one repeated value.
    MulScalar,
}

impl Op {
    /// Every op, in the order of the benchmark tables and charts.
    pub const ALL: [Op; 17] = [
        Op::Softmax,
        Op::SoftmaxOnline,
        Op::LogSoftmax,
        Op::Logistic,
        Op::Sigmoid,
        Op::Tanh,
        Op::ThresholdedLogistic,
        Op::ThresholdedSoftmax,
        Op::CrossEntropy,
        Op::CrossEntropyBackward,
        Op::Add,
        Op::AddRow,
        Op::AddScalar,
        Op::Sub,
        Op::Mul,
        Op::MulRow,
        Op::MulScalar,
    ];

    /// The tools' name (`softmax`, `log_softmax`, `add_row`, ...).
    pub const fn name(self) -> &'static str {
        match self {
            Op::Softmax => "softmax",
            Op::SoftmaxOnline => "softmax_online",
            Op::LogSoftmax => "log_softmax",
            Op::Logistic => "logistic",
            Op::Sigmoid => "sigmoid",
            Op::Tanh => "tanh",
            Op::ThresholdedLogistic => "thresholded_logistic",
            Op::ThresholdedSoftmax => "thresholded_softmax",
            Op::CrossEntropy => "cross_entropy",
            Op::CrossEntropyBackward => "cross_entropy_bwd",
            Op::Add => "add",
            Op::AddRow => "add_row",
            Op::AddScalar => "add_scalar",
            Op::Sub => "sub",
            Op::Mul => "mul",
            Op::MulRow => "mul_row",
            Op::MulScalar => "mul_scalar",
        }
    }

    /// Runs along rows (a `row_len` argument) rather than element by element.
    pub const fn row_wise(self) -> bool {
        matches!(
            self,
            Op::Softmax
                | Op::SoftmaxOnline
                | Op::LogSoftmax
                | Op::ThresholdedSoftmax
                | Op::CrossEntropy
                | Op::CrossEntropyBackward
        )
    }
}

/// How a row computes: a quantized op's [`Method`], a binary op's
/// [`Rounding`], or the one algorithm an op has.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Variant {
    /// A quantized op's `Method`.
    Method(Method),
    /// A binary op's requantization rounding.
    Rounding(Rounding),
    /// int16 `Method::Lut` at input scale 2^-12, where TFLite computes
    /// logistic and tanh in 16-bit fixed point instead of its table.
    LutPow2Scale,
    /// The raw Q31 kernels.
    Fixed,
    /// The float kernels.
    Float,
    /// Quantized cross-entropy: its exps from a per-op table.
    Table,
}

impl Variant {
    /// The tools' name (`Method::name`, `Rounding::name`, `lut-2^-12`,
    /// `fixed`, `float`, `table`).
    pub fn name(self) -> &'static str {
        match self {
            Variant::Method(m) => m.name(),
            Variant::Rounding(r) => r.name(),
            Variant::LutPow2Scale => "lut-2^-12",
            Variant::Fixed => "fixed",
            Variant::Float => "float",
            Variant::Table => "table",
        }
    }
}

/// One op on one element type and the variants the library implements.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Kernels {
    /// The op.
    pub op: Op,
    /// The element type.
    pub dtype: Dtype,
    /// Every variant, in the order the tools list them.
    pub variants: &'static [Variant],
    /// Measured by `qneon-bench` (and so `cargo xtask bench`).
    pub bench: bool,
}

impl Kernels {
    /// `"op type variant"` of each variant, as the tools' rows name them.
    pub fn names(&self) -> impl Iterator<Item = (Variant, [&'static str; 3])> + '_ {
        self.variants
            .iter()
            .map(|&v| (v, [self.op.name(), self.dtype.name(), v.name()]))
    }
}

const FIXED: Variant = Variant::Method(Method::FixedPoint);
const LUT: Variant = Variant::Method(Method::Lut);
const LUT_FIXED: Variant = Variant::Method(Method::LutFixedPoint);
const DEQUANT_F32: Variant = Variant::Method(Method::DequantF32);
/// Every method of an 8-bit element-wise op.
const EVERY_METHOD: &[Variant] = &[FIXED, LUT, LUT_FIXED, DEQUANT_F32];
/// The methods of the row-wise ops and of int16 (no `LutFixedPoint`).
const NO_LUT_FIXED: &[Variant] = &[FIXED, LUT, DEQUANT_F32];
const ROUNDINGS: &[Variant] = &[
    Variant::Rounding(Rounding::Single),
    Variant::Rounding(Rounding::Double),
];

const fn k(op: Op, dtype: Dtype, variants: &'static [Variant]) -> Kernels {
    Kernels {
        op,
        dtype,
        variants,
        bench: true,
    }
}

/// A row `qneon-bench` leaves out.
const fn not_benched(op: Op, dtype: Dtype, variants: &'static [Variant]) -> Kernels {
    Kernels {
        bench: false,
        ..k(op, dtype, variants)
    }
}

/// The library's ops: every (op, element type) and its variants, grouped by
/// op in the order of [`Op::ALL`].
pub const KERNELS: &[Kernels] = &[
    k(Op::Softmax, Dtype::Int8, NO_LUT_FIXED),
    k(Op::Softmax, Dtype::Uint8, NO_LUT_FIXED),
    k(Op::Softmax, Dtype::Int16, NO_LUT_FIXED),
    k(Op::Softmax, Dtype::Q31, &[Variant::Fixed]),
    k(Op::Softmax, Dtype::F32, &[Variant::Float]),
    k(Op::SoftmaxOnline, Dtype::F32, &[Variant::Float]),
    k(Op::LogSoftmax, Dtype::Int8, NO_LUT_FIXED),
    k(Op::LogSoftmax, Dtype::Uint8, NO_LUT_FIXED),
    k(Op::LogSoftmax, Dtype::F32, &[Variant::Float]),
    k(Op::Logistic, Dtype::Int8, EVERY_METHOD),
    k(Op::Logistic, Dtype::Uint8, EVERY_METHOD),
    k(
        Op::Logistic,
        Dtype::Int16,
        &[FIXED, LUT, DEQUANT_F32, Variant::LutPow2Scale],
    ),
    k(Op::Logistic, Dtype::Q31, &[Variant::Fixed]),
    k(Op::Sigmoid, Dtype::F32, &[Variant::Float]),
    k(Op::Tanh, Dtype::Int8, EVERY_METHOD),
    k(Op::Tanh, Dtype::Uint8, EVERY_METHOD),
    k(
        Op::Tanh,
        Dtype::Int16,
        &[FIXED, LUT, DEQUANT_F32, Variant::LutPow2Scale],
    ),
    k(Op::Tanh, Dtype::Q31, &[Variant::Fixed]),
    k(Op::Tanh, Dtype::F32, &[Variant::Float]),
    k(Op::ThresholdedLogistic, Dtype::Int8, EVERY_METHOD),
    k(Op::ThresholdedLogistic, Dtype::Uint8, EVERY_METHOD),
    // Not among the measured rows, which keep to the 8-bit types of the
    // MobileBert-style workloads.
    not_benched(Op::ThresholdedLogistic, Dtype::Int16, NO_LUT_FIXED),
    k(Op::ThresholdedSoftmax, Dtype::Int8, NO_LUT_FIXED),
    k(Op::ThresholdedSoftmax, Dtype::Uint8, NO_LUT_FIXED),
    k(Op::CrossEntropy, Dtype::Int8, &[Variant::Table]),
    k(Op::CrossEntropy, Dtype::Uint8, &[Variant::Table]),
    k(Op::CrossEntropy, Dtype::F32, &[Variant::Float]),
    k(Op::CrossEntropyBackward, Dtype::F32, &[Variant::Float]),
    k(Op::Add, Dtype::Int8, ROUNDINGS),
    k(Op::AddRow, Dtype::Int8, ROUNDINGS),
    k(Op::AddScalar, Dtype::Int8, ROUNDINGS),
    k(Op::Sub, Dtype::Int8, ROUNDINGS),
    k(Op::Mul, Dtype::Int8, ROUNDINGS),
    k(Op::MulRow, Dtype::Int8, ROUNDINGS),
    k(Op::MulScalar, Dtype::Int8, ROUNDINGS),
];

/// The rows of [`KERNELS`] on `dtype`, in table order.
pub fn of_type(dtype: Dtype) -> impl Iterator<Item = &'static Kernels> {
    KERNELS.iter().filter(move |k| k.dtype == dtype)
}

/// The row of `op` on `dtype`, if the library has one.
pub fn find(op: Op, dtype: Dtype) -> Option<&'static Kernels> {
    KERNELS.iter().find(|k| k.op == op && k.dtype == dtype)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{
        Error, LogSoftmax, Logistic, QuantElem, QuantParams, Softmax, Tanh, ThresholdedLogistic,
        ThresholdedSoftmax,
    };

    #[test]
    fn rows_are_grouped_in_op_order_without_repeats() {
        let rank = |op: Op| Op::ALL.iter().position(|&o| o == op).unwrap();
        for pair in KERNELS.windows(2) {
            assert!(rank(pair[0].op) <= rank(pair[1].op), "{pair:?}");
            assert!(
                (pair[0].op, pair[0].dtype) != (pair[1].op, pair[1].dtype),
                "{pair:?}"
            );
        }
        for k in KERNELS {
            assert!(!k.variants.is_empty(), "{k:?}");
            for (i, v) in k.variants.iter().enumerate() {
                assert!(!k.variants[..i].contains(v), "{k:?} lists {v:?} twice");
            }
        }
        for op in Op::ALL {
            assert!(KERNELS.iter().any(|k| k.op == op), "{op:?} has no row");
        }
    }

    /// Whether the quantized op `op` accepts `method` on `T` (with the
    /// output quantization it requires), or `None` if `op` is not one of
    /// the quantized ops prepared with a method.
    fn accepts<T: QuantElem>(op: Op, method: Method) -> Option<bool> {
        let q_in = QuantParams::new(0.1, 0);
        let out = Softmax::<T>::output_quantization();
        let result = match op {
            Op::Softmax => Softmax::<T>::new(q_in, 1.0, out, method).map(drop),
            Op::LogSoftmax => LogSoftmax::<T>::output_quantization()
                .and_then(|out| LogSoftmax::<T>::new(q_in, out, method))
                .map(drop),
            Op::Logistic => Logistic::<T>::new(q_in, out, method).map(drop),
            Op::Tanh => Tanh::<T>::new(q_in, Tanh::<T>::output_quantization(), method).map(drop),
            Op::ThresholdedLogistic => {
                ThresholdedLogistic::<T>::new(q_in, out, method, 0.5).map(drop)
            }
            Op::ThresholdedSoftmax => {
                ThresholdedSoftmax::<T>::new(q_in, 1.0, out, method, Some(0.5), None).map(drop)
            }
            _ => return None,
        };
        match result {
            Ok(()) => Some(true),
            Err(Error::Unsupported { .. }) => Some(false),
            Err(e) => panic!("{op:?} {} {method:?}: {e}", T::NAME),
        }
    }

    fn methods_match<T: QuantElem>(dtype: Dtype) {
        let every = [
            Method::FixedPoint,
            Method::Lut,
            Method::LutFixedPoint,
            Method::DequantF32,
        ];
        for op in Op::ALL {
            let listed = find(op, dtype).map_or(&[][..], |k| k.variants);
            for method in every {
                let Some(accepted) = accepts::<T>(op, method) else {
                    continue;
                };
                assert_eq!(
                    accepted,
                    listed.contains(&Variant::Method(method)),
                    "{op:?} {dtype:?} {method:?}: the library and the catalogue disagree"
                );
            }
        }
    }

    #[test]
    fn the_quantized_rows_list_exactly_the_methods_new_accepts() {
        methods_match::<i8>(Dtype::Int8);
        methods_match::<u8>(Dtype::Uint8);
        methods_match::<i16>(Dtype::Int16);
    }
}
