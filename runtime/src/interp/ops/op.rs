//! What every op's `Prepare` works with: [`Op`], the operator being prepared
//! with its tensors, TFLite's shared checks (counts, per-tensor
//! quantization, constant shapes and axes) and the error constructors that
//! name the op and its index.

use qneon::QuantParams;
use qneon_tflite::options::FusedActivation as TfActivation;
use qneon_tflite::{BuiltinOp, Operator, Subgraph, Tensor, TensorType};

use super::buffers::element_size;
use crate::error::{Error, Result};
use crate::interp::options::Options;

/// A PAD (operator position `pad`) whose padding a convolution takes over
/// (`interp/fold.rs` finds them).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct PadFold {
    /// The PAD's position in the execution order.
    pub pad: usize,
    /// The PAD's input tensor: the convolution reads it instead.
    pub source: usize,
    /// Rows the PAD adds above and below the image.
    pub rows: [usize; 2],
    /// Columns the PAD adds left and right of it.
    pub columns: [usize; 2],
}

/// The operator being prepared and its tensors, with error constructors.
pub(crate) struct Op<'m, 'a> {
    pub graph: &'m Subgraph<'a>,
    pub operator: &'m Operator<'a>,
    /// The builtin op (a family registering several ops prepares each in
    /// its own way).
    pub builtin: BuiltinOp,
    /// TFLite's name of the op, for messages.
    pub name: String,
    pub options: &'m Options,
    /// A PAD whose padding this convolution takes over (`fold.rs`): it
    /// reads the PAD's input instead of input 0.
    pub pad_fold: Option<PadFold>,
}

impl<'m, 'a> Op<'m, 'a> {
    /// `operator` of `graph` (builtin op `builtin`, named `name`),
    /// prepared with the caller's `options`.
    pub(crate) fn new(
        graph: &'m Subgraph<'a>,
        operator: &'m Operator<'a>,
        builtin: BuiltinOp,
        name: &str,
        options: &'m Options,
    ) -> Op<'m, 'a> {
        Op {
            graph,
            operator,
            builtin,
            name: name.to_string(),
            options,
            pad_fold: None,
        }
    }
}

impl<'a> Op<'_, 'a> {
    pub fn unsupported(&self, missing: impl Into<String>) -> Error {
        Error::UnsupportedOp {
            op: self.name.clone(),
            index: self.operator.index(),
            missing: missing.into(),
        }
    }

    pub fn invalid(&self, problem: impl Into<String>) -> Error {
        Error::InvalidOp {
            op: self.name.clone(),
            index: self.operator.index(),
            problem: problem.into(),
        }
    }

    /// A library kernel's refusal: what the library does not implement
    /// (its `Unsupported`) is an unsupported op, anything else (a scale, a
    /// zero point, a shape) an invalid one.
    pub fn kernel_error(&self, e: qneon::Error) -> Error {
        match e {
            qneon::Error::Unsupported { .. } => self.unsupported(e.to_string()),
            _ => self.invalid(e.to_string()),
        }
    }

    pub fn input_count(&self, min: usize, max: usize) -> Result<()> {
        let n = self.operator.inputs().len();
        if n < min || n > max {
            return Err(self.invalid(format!("has {n} inputs, expected {min} to {max}")));
        }
        Ok(())
    }

    pub fn output_count(&self, expected: usize) -> Result<()> {
        let n = self.operator.outputs().len();
        if n != expected {
            return Err(self.invalid(format!("has {n} outputs, expected {expected}")));
        }
        Ok(())
    }

    pub fn optional_input(&self, i: usize) -> Option<&'_ Tensor<'a>> {
        let t = (*self.operator.inputs().get(i)?)?;
        self.graph.tensor(t)
    }

    pub fn input(&self, i: usize) -> Result<&'_ Tensor<'a>> {
        self.optional_input(i)
            .ok_or_else(|| self.invalid(format!("input {i} is missing")))
    }

    pub fn output(&self, i: usize) -> Result<&'_ Tensor<'a>> {
        self.operator
            .outputs()
            .get(i)
            .copied()
            .flatten()
            .and_then(|t| self.graph.tensor(t))
            .ok_or_else(|| self.invalid(format!("output {i} is missing")))
    }

    /// The op's dtypes as `INT8,INT32->INT8`, for messages.
    pub fn signature(&self) -> String {
        let names = |ts: &[Option<usize>]| -> String {
            ts.iter()
                .map(|t| match t.and_then(|t| self.graph.tensor(t)) {
                    Some(t) => t.dtype().name().to_string(),
                    None => "-".to_string(),
                })
                .collect::<Vec<_>>()
                .join(",")
        };
        format!(
            "{}->{}",
            names(self.operator.inputs()),
            names(self.operator.outputs())
        )
    }

    pub fn unsupported_types(&self) -> Error {
        self.unsupported(format!("no kernel for dtypes {}", self.signature()))
    }

    /// The int8 layer signature the requantizing layers take (int8 input,
    /// weights and output, an optional int32 bias: FULLY_CONNECTED,
    /// CONV_2D, DEPTHWISE_CONV_2D); anything else is an unsupported type.
    pub fn int8_layer_types(
        &self,
        input: &Tensor<'_>,
        weights: &Tensor<'_>,
        output: &Tensor<'_>,
        bias: Option<&Tensor<'_>>,
    ) -> Result<()> {
        let int8 = TensorType::Int8;
        let ok = input.dtype() == int8
            && weights.dtype() == int8
            && output.dtype() == int8
            && bias.is_none_or(|b| b.dtype() == TensorType::Int32);
        if ok {
            Ok(())
        } else {
            Err(self.unsupported_types())
        }
    }

    pub fn elem(&self, t: &Tensor<'_>) -> Result<usize> {
        element_size(t.dtype()).ok_or_else(|| self.unsupported_types())
    }

    /// Per-tensor quantization of an int8/uint8/int16 tensor, its zero point
    /// in the type's range (TFLite's rules).
    pub fn per_tensor(&self, t: &Tensor<'_>, what: &str) -> Result<QuantParams> {
        let (scale, zero_point) = t
            .quantization()
            .and_then(|q| q.per_tensor())
            .ok_or_else(|| self.invalid(format!("{what} is not quantized per tensor")))?;
        let (lo, hi) = match t.dtype() {
            TensorType::Int8 => (-128, 127),
            TensorType::Uint8 => (0, 255),
            TensorType::Int16 => (-32768, 32767),
            _ => (i32::MIN as i64, i32::MAX as i64),
        };
        if !(lo..=hi).contains(&zero_point) {
            return Err(self.invalid(format!(
                "{what} zero point {zero_point} is outside {lo}..={hi}"
            )));
        }
        if !(scale.is_finite() && scale > 0.0) {
            return Err(self.invalid(format!("{what} scale {scale} is not finite and > 0")));
        }
        Ok(QuantParams::new(scale, zero_point as i32))
    }

    /// The scales of a symmetric int8 weight tensor (`what`: "filter",
    /// "weights"): one, or one per output channel along `axis` (TFLite's
    /// `quantized_dimension`: 0 for CONV_2D and TRANSPOSE_CONV, 3 for
    /// DEPTHWISE_CONV_2D), every zero point 0.
    pub fn symmetric_scales(
        &self,
        t: &Tensor<'_>,
        what: &str,
        channels: usize,
        axis: usize,
    ) -> Result<Vec<f32>> {
        let q = t.quantization().ok_or_else(|| {
            self.invalid(format!("{what} (tensor {}) is not quantized", t.name()))
        })?;
        if q.zero_points().iter().any(|&z| z != 0) {
            return Err(self.invalid(format!(
                "{what} (tensor {}) zero points {:?}: int8 {what} must be symmetric (zero point 0)",
                t.name(),
                q.zero_points()
            )));
        }
        match (q.scales(), q.axis()) {
            ([scale], _) => Ok(vec![*scale]),
            (scales, Some(a)) if a == axis && scales.len() == channels => Ok(scales.to_vec()),
            (scales, a) => Err(self.invalid(format!(
                "{what} (tensor {}): {} scales along axis {a:?}; expected 1 or {channels} along \
                 axis {axis}",
                t.name(),
                scales.len()
            ))),
        }
    }

    /// The values of a constant int32 (or int64) tensor: shapes, axes,
    /// permutations. Dynamic ones are not supported.
    pub fn constant_ints(&self, t: &Tensor<'_>, what: &str) -> Result<Vec<i64>> {
        if !t.is_constant() {
            return Err(self.unsupported(format!("{what} must be constant (dynamic {what})")));
        }
        let e = |e: qneon_tflite::Error| self.invalid(e.to_string());
        match t.dtype() {
            TensorType::Int32 => Ok(t
                .constant_values::<i32>()
                .map_err(e)?
                .map(|v| v.iter().map(|&x| x as i64).collect())
                .unwrap_or_default()),
            TensorType::Int64 => Ok(t
                .constant_values::<i64>()
                .map_err(e)?
                .map(|v| v.to_vec())
                .unwrap_or_default()),
            other => Err(self.invalid(format!("{what} has dtype {}", other.name()))),
        }
    }

    pub fn same_shape(&self, a: &Tensor<'_>, b: &Tensor<'_>) -> Result<()> {
        if a.shape() != b.shape() {
            return Err(self.invalid(format!(
                "output shape {:?} differs from input shape {:?}",
                b.shape(),
                a.shape()
            )));
        }
        Ok(())
    }

    pub fn expect_shape(&self, t: &Tensor<'_>, expected: &[usize]) -> Result<()> {
        if t.shape() != expected {
            return Err(self.invalid(format!(
                "output shape {:?}, TFLite computes {expected:?}",
                t.shape()
            )));
        }
        Ok(())
    }

    pub fn copy_error(&self, problem: String) -> Error {
        self.invalid(problem)
    }

    /// The fused activation as the library takes it.
    pub fn activation(&self, activation: TfActivation) -> Result<qneon::FusedActivation> {
        match activation {
            TfActivation::None => Ok(qneon::FusedActivation::None),
            TfActivation::Relu => Ok(qneon::FusedActivation::Relu),
            TfActivation::Relu6 => Ok(qneon::FusedActivation::Relu6),
            other => Err(self.unsupported(format!("fused activation {other}"))),
        }
    }

    /// `axis` (negative counts from the end) as an index into `rank` axes.
    pub fn normalize_axis(&self, axis: i64, rank: usize) -> Result<usize> {
        let a = if axis < 0 { axis + rank as i64 } else { axis };
        usize::try_from(a)
            .ok()
            .filter(|&a| a < rank)
            .ok_or_else(|| self.invalid(format!("axis {axis} is outside a rank-{rank} tensor")))
    }

    /// TFLite's rule for int8 movement ops: input and output quantized alike.
    pub fn quantization_equal(&self, input: &Tensor<'_>, output: &Tensor<'_>) -> Result<()> {
        if matches!(
            input.dtype(),
            TensorType::Int8 | TensorType::Uint8 | TensorType::Int16
        ) {
            let (a, b) = (
                self.per_tensor(input, "input")?,
                self.per_tensor(output, "output")?,
            );
            if a != b {
                return Err(self.invalid(format!(
                    "input quantization {a:?} differs from the output's {b:?} (TFLite requires them equal)"
                )));
            }
        }
        Ok(())
    }
}
