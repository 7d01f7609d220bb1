//! TFLite's `Prepare`, per operator: dtypes, shapes and options checked,
//! quantization checked against TFLite's rules, kernels of the library built
//! (multipliers, tables, packed weights). Anything it cannot run is an
//! [`Error::UnsupportedOp`] naming the op, its index and what is missing.

use qneon::{Method, QuantParams};
use qneon_tflite::options::{FusedActivation as TfActivation, WeightsFormat};
use qneon_tflite::{
    BuiltinOp, Model, Operator, Options as OpOptions, Subgraph, Tensor, TensorType,
};

use super::ops::movement::{self, Gather, StridedCopy};
use super::ops::{Activation, IntType, Kernel};
use super::{element_size, Options, Rounding};
use crate::error::{Error, Result};

/// A prepared operator.
pub(super) struct PreparedOp {
    pub kernel: Kernel,
    pub work: u64,
    pub unit: &'static str,
    pub scratch_bytes: usize,
    /// The output is the input's bytes (RESHAPE).
    pub alias: bool,
}

impl PreparedOp {
    fn elements(kernel: Kernel, elements: usize) -> PreparedOp {
        PreparedOp {
            kernel,
            work: elements as u64,
            unit: "element",
            scratch_bytes: 0,
            alias: false,
        }
    }
}

/// The operator being prepared and its tensors, with error constructors.
struct Op<'m, 'a> {
    graph: &'m Subgraph<'a>,
    operator: &'m Operator<'a>,
    name: String,
    options: &'m Options,
}

impl<'a> Op<'_, 'a> {
    fn unsupported(&self, missing: impl Into<String>) -> Error {
        Error::UnsupportedOp {
            op: self.name.clone(),
            index: self.operator.index(),
            missing: missing.into(),
        }
    }

    fn invalid(&self, problem: impl Into<String>) -> Error {
        Error::InvalidOp {
            op: self.name.clone(),
            index: self.operator.index(),
            problem: problem.into(),
        }
    }

    fn kernel_error(&self, e: qneon::Error) -> Error {
        self.invalid(e.to_string())
    }

    fn input_count(&self, min: usize, max: usize) -> Result<()> {
        let n = self.operator.inputs().len();
        if n < min || n > max {
            return Err(self.invalid(format!("has {n} inputs, expected {min} to {max}")));
        }
        Ok(())
    }

    fn output_count(&self, expected: usize) -> Result<()> {
        let n = self.operator.outputs().len();
        if n != expected {
            return Err(self.invalid(format!("has {n} outputs, expected {expected}")));
        }
        Ok(())
    }

    fn optional_input(&self, i: usize) -> Option<&'_ Tensor<'a>> {
        let t = (*self.operator.inputs().get(i)?)?;
        self.graph.tensor(t)
    }

    fn input(&self, i: usize) -> Result<&'_ Tensor<'a>> {
        self.optional_input(i)
            .ok_or_else(|| self.invalid(format!("input {i} is missing")))
    }

    fn output(&self, i: usize) -> Result<&'_ Tensor<'a>> {
        self.operator
            .outputs()
            .get(i)
            .copied()
            .flatten()
            .and_then(|t| self.graph.tensor(t))
            .ok_or_else(|| self.invalid(format!("output {i} is missing")))
    }

    /// The op's dtypes as `INT8,INT32->INT8`, for messages.
    fn signature(&self) -> String {
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

    fn unsupported_types(&self) -> Error {
        self.unsupported(format!("no kernel for dtypes {}", self.signature()))
    }

    fn elem(&self, t: &Tensor<'_>) -> Result<usize> {
        element_size(t.dtype()).ok_or_else(|| self.unsupported_types())
    }

    /// Per-tensor quantization of an int8/uint8/int16 tensor, its zero point
    /// in the type's range (TFLite's rules).
    fn per_tensor(&self, t: &Tensor<'_>, what: &str) -> Result<QuantParams> {
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

    /// The values of a constant int32 (or int64) tensor: shapes, axes,
    /// permutations. Dynamic ones are not supported.
    fn constant_ints(&self, t: &Tensor<'_>, what: &str) -> Result<Vec<i64>> {
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

    fn same_shape(&self, a: &Tensor<'_>, b: &Tensor<'_>) -> Result<()> {
        if a.shape() != b.shape() {
            return Err(self.invalid(format!(
                "output shape {:?} differs from input shape {:?}",
                b.shape(),
                a.shape()
            )));
        }
        Ok(())
    }

    fn expect_shape(&self, t: &Tensor<'_>, expected: &[usize]) -> Result<()> {
        if t.shape() != expected {
            return Err(self.invalid(format!(
                "output shape {:?}, TFLite computes {expected:?}",
                t.shape()
            )));
        }
        Ok(())
    }

    fn copy_error(&self, problem: String) -> Error {
        self.invalid(problem)
    }

    /// The fused activation as the library takes it.
    fn activation(&self, activation: TfActivation) -> Result<qneon::FusedActivation> {
        match activation {
            TfActivation::None => Ok(qneon::FusedActivation::None),
            TfActivation::Relu => Ok(qneon::FusedActivation::Relu),
            TfActivation::Relu6 => Ok(qneon::FusedActivation::Relu6),
            other => Err(self.unsupported(format!("fused activation {other}"))),
        }
    }

    /// Refuses single rounding until the library has it.
    fn needs_double_rounding(&self, kernel: &str) -> Result<()> {
        if self.options.rounding == Rounding::Single {
            return Err(self.unsupported(format!(
                "single rounding (--rounding single) needs the library's single-rounding \
                 {kernel}, not there yet; --rounding double runs it"
            )));
        }
        Ok(())
    }
}

/// Prepares `operator` of `graph`.
pub(super) fn prepare(
    _model: &Model<'_>,
    graph: &Subgraph<'_>,
    operator: &Operator<'_>,
    options: &Options,
) -> Result<PreparedOp> {
    let op = Op {
        graph,
        operator,
        name: operator.op().to_string(),
        options,
    };
    let Some(builtin) = operator.builtin() else {
        return Err(op.unsupported("custom operators are not supported"));
    };
    match builtin {
        BuiltinOp::RESHAPE => reshape(&op),
        BuiltinOp::TRANSPOSE => transpose(&op),
        BuiltinOp::GATHER => gather(&op),
        BuiltinOp::STRIDED_SLICE => strided_slice(&op),
        BuiltinOp::PAD => pad(&op),
        BuiltinOp::CONCATENATION => concatenation(&op),
        BuiltinOp::SPLIT => split(&op),
        BuiltinOp::CAST => cast(&op),
        BuiltinOp::DEQUANTIZE => dequantize(&op),
        BuiltinOp::QUANTIZE => quantize(&op),
        BuiltinOp::SOFTMAX | BuiltinOp::LOG_SOFTMAX | BuiltinOp::LOGISTIC | BuiltinOp::TANH => {
            activation(&op, builtin)
        }
        BuiltinOp::FULLY_CONNECTED => fully_connected(&op),
        BuiltinOp::ADD | BuiltinOp::SUB | BuiltinOp::MUL => binary(&op, builtin),
        BuiltinOp::BATCH_MATMUL => batch_matmul(&op),
        _ => Err(op.unsupported("no kernel for this operator")),
    }
}

fn reshape(op: &Op<'_, '_>) -> Result<PreparedOp> {
    op.input_count(1, 2)?;
    op.output_count(1)?;
    let (input, output) = (op.input(0)?, op.output(0)?);
    if input.dtype() != output.dtype() || element_size(input.dtype()).is_none() {
        return Err(op.unsupported_types());
    }
    if input.element_count() != output.element_count() {
        return Err(op.invalid(format!(
            "reshapes {} elements {:?} into {} {:?}",
            input.element_count(),
            input.shape(),
            output.element_count(),
            output.shape()
        )));
    }
    // The output shape is the declared one (static shapes); a shape input or
    // option must agree with it.
    let declared: Option<Vec<i64>> = match op.optional_input(1) {
        Some(shape) if shape.is_constant() => Some(op.constant_ints(shape, "shape")?),
        _ => match op.operator.options() {
            OpOptions::Reshape(r) => r
                .new_shape
                .as_ref()
                .map(|s| s.iter().map(|&x| x as i64).collect()),
            _ => None,
        },
    };
    if let Some(shape) = declared {
        let known: Vec<usize> = output.shape().to_vec();
        let fits = shape.len() == known.len()
            && shape
                .iter()
                .zip(&known)
                .all(|(&s, &k)| s == -1 || s == k as i64);
        // A scalar output may be given as [] or [1]-like shapes; only refuse
        // clear disagreement.
        if !(fits || shape.is_empty() || known.is_empty()) {
            return Err(op.invalid(format!(
                "shape input {shape:?} disagrees with the output shape {known:?}"
            )));
        }
    }
    Ok(PreparedOp {
        kernel: Kernel::Nop,
        work: 0,
        unit: "element",
        scratch_bytes: 0,
        alias: true,
    })
}

fn transpose(op: &Op<'_, '_>) -> Result<PreparedOp> {
    op.input_count(2, 2)?;
    op.output_count(1)?;
    let (input, output) = (op.input(0)?, op.output(0)?);
    if input.dtype() != output.dtype() {
        return Err(op.unsupported_types());
    }
    let elem = op.elem(input)?;
    let rank = input.shape().len();
    if rank > 6 {
        return Err(op.unsupported(format!("rank {rank} (at most 6)")));
    }
    let perm = op.constant_ints(op.input(1)?, "permutation")?;
    let mut seen = vec![false; rank];
    let perm: Vec<usize> = perm
        .iter()
        .map(|&p| {
            let p = if p < 0 { p + rank as i64 } else { p };
            usize::try_from(p)
                .ok()
                .filter(|&p| p < rank && !std::mem::replace(&mut seen[p], true))
        })
        .collect::<Option<Vec<usize>>>()
        .filter(|p| p.len() == rank)
        .ok_or_else(|| op.invalid(format!("{perm:?} is not a permutation of {rank} axes")))?;
    let expected: Vec<usize> = perm.iter().map(|&p| input.shape()[p]).collect();
    op.expect_shape(output, &expected)?;
    let copy = movement::transpose(input.shape(), &perm, output.shape(), elem)
        .map_err(|e| op.copy_error(e))?;
    Ok(PreparedOp::elements(
        Kernel::Copy(copy),
        output.element_count(),
    ))
}

fn normalize_axis(op: &Op<'_, '_>, axis: i64, rank: usize) -> Result<usize> {
    let a = if axis < 0 { axis + rank as i64 } else { axis };
    usize::try_from(a)
        .ok()
        .filter(|&a| a < rank)
        .ok_or_else(|| op.invalid(format!("axis {axis} is outside a rank-{rank} tensor")))
}

fn gather(op: &Op<'_, '_>) -> Result<PreparedOp> {
    op.input_count(2, 2)?;
    op.output_count(1)?;
    let (params, indices, output) = (op.input(0)?, op.input(1)?, op.output(0)?);
    if indices.dtype() != TensorType::Int32 || params.dtype() != output.dtype() {
        return Err(op.unsupported_types());
    }
    let elem = op.elem(params)?;
    let (axis, batch_dims) = match op.operator.options() {
        OpOptions::Gather(g) => (g.axis as i64, g.batch_dims as i64),
        _ => (0, 0),
    };
    let p = params.shape();
    let axis = normalize_axis(op, axis, p.len())?;
    let i = indices.shape();
    let batch_dims = if batch_dims < 0 {
        batch_dims + i.len() as i64
    } else {
        batch_dims
    };
    let batch_dims = usize::try_from(batch_dims)
        .ok()
        .filter(|&b| b <= axis && b <= i.len() && p[..b] == i[..b])
        .ok_or_else(|| op.invalid(format!("batch_dims {batch_dims} does not fit the shapes")))?;
    let expected: Vec<usize> = p[..axis]
        .iter()
        .chain(&i[batch_dims..])
        .chain(&p[axis + 1..])
        .copied()
        .collect();
    op.expect_shape(output, &expected)?;
    if params.dtype().code() == TensorType::Int8.code() {
        let (a, b) = (params.quantization(), output.quantization());
        if a.and_then(|q| q.per_tensor()) != b.and_then(|q| q.per_tensor()) {
            return Err(op.invalid("int8 params and output quantization differ"));
        }
    }
    let batch: usize = p[..batch_dims].iter().product();
    let gather = Gather {
        batch,
        outer: p[batch_dims..axis].iter().product(),
        axis_size: p[axis],
        coords: i[batch_dims..].iter().product(),
        inner_bytes: p[axis + 1..].iter().product::<usize>() * elem,
    };
    if indices.is_constant() {
        // Constant indices out of range: refuse at load rather than at run.
        let values = op.constant_ints(indices, "indices")?;
        if let Some(bad) = values.iter().find(|&&v| v < 0 || v as usize >= p[axis]) {
            return Err(op.invalid(format!("constant index {bad} is outside 0..{}", p[axis])));
        }
    }
    Ok(PreparedOp::elements(
        Kernel::Gather(gather),
        output.element_count(),
    ))
}

fn strided_slice(op: &Op<'_, '_>) -> Result<PreparedOp> {
    op.input_count(4, 4)?;
    op.output_count(1)?;
    let (input, output) = (op.input(0)?, op.output(0)?);
    if input.dtype() != output.dtype() {
        return Err(op.unsupported_types());
    }
    let elem = op.elem(input)?;
    let o = match op.operator.options() {
        OpOptions::StridedSlice(o) => *o,
        _ => Default::default(),
    };
    if o.ellipsis_mask != 0 || o.new_axis_mask != 0 || o.offset {
        return Err(op.unsupported(format!(
            "ellipsis_mask {}, new_axis_mask {}, offset {} (only 0, 0, false)",
            o.ellipsis_mask, o.new_axis_mask, o.offset
        )));
    }
    let rank = input.shape().len();
    let ints = |i: usize, what: &str| -> Result<Vec<i32>> {
        let v = op.constant_ints(op.input(i)?, what)?;
        v.iter()
            .map(|&x| i32::try_from(x).map_err(|_| op.invalid(format!("{what} {x} overflows"))))
            .collect()
    };
    let (begin, end, strides) = (ints(1, "begin")?, ints(2, "end")?, ints(3, "strides")?);
    if begin.len() != end.len() || begin.len() != strides.len() || begin.len() > rank {
        return Err(op.invalid(format!(
            "begin, end and strides have {}, {} and {} entries for a rank-{rank} input",
            begin.len(),
            end.len(),
            strides.len()
        )));
    }
    let (copy, shape) = movement::strided_slice(
        input.shape(),
        &begin,
        &end,
        &strides,
        o.begin_mask,
        o.end_mask,
        o.shrink_axis_mask,
        elem,
    )
    .map_err(|e| op.invalid(e))?;
    let expected: Vec<usize> = shape
        .iter()
        .enumerate()
        .filter(|&(axis, _)| axis >= 32 || o.shrink_axis_mask & (1 << axis) == 0)
        .map(|(_, &n)| n)
        .collect();
    op.expect_shape(output, &expected)?;
    quantization_equal(op, input, output)?;
    Ok(PreparedOp::elements(
        Kernel::Copy(copy),
        output.element_count(),
    ))
}

/// TFLite's rule for int8 movement ops: input and output quantized alike.
fn quantization_equal(op: &Op<'_, '_>, input: &Tensor<'_>, output: &Tensor<'_>) -> Result<()> {
    if matches!(
        input.dtype(),
        TensorType::Int8 | TensorType::Uint8 | TensorType::Int16
    ) {
        let (a, b) = (
            op.per_tensor(input, "input")?,
            op.per_tensor(output, "output")?,
        );
        if a != b {
            return Err(op.invalid(format!(
                "input quantization {a:?} differs from the output's {b:?} (TFLite requires them equal)"
            )));
        }
    }
    Ok(())
}

fn pad(op: &Op<'_, '_>) -> Result<PreparedOp> {
    op.input_count(2, 2)?;
    op.output_count(1)?;
    let (input, output) = (op.input(0)?, op.output(0)?);
    if input.dtype() != output.dtype() {
        return Err(op.unsupported_types());
    }
    let elem = op.elem(input)?;
    let rank = input.shape().len();
    let paddings = op.constant_ints(op.input(1)?, "paddings")?;
    if paddings.len() != 2 * rank || paddings.iter().any(|&p| p < 0) {
        return Err(op.invalid(format!(
            "paddings {paddings:?} are not {rank} non-negative (before, after) pairs"
        )));
    }
    let before: Vec<usize> = (0..rank).map(|d| paddings[2 * d] as usize).collect();
    let expected: Vec<usize> = (0..rank)
        .map(|d| input.shape()[d] + before[d] + paddings[2 * d + 1] as usize)
        .collect();
    op.expect_shape(output, &expected)?;
    // The pad value: the output zero point for quantized types, else 0.
    let fill: Vec<u8> = match input.dtype() {
        TensorType::Int8 | TensorType::Uint8 | TensorType::Int16 => {
            quantization_equal(op, input, output)?;
            let zero_point = op.per_tensor(output, "output")?.zero_point;
            match input.dtype() {
                TensorType::Int16 => (zero_point as i16).to_le_bytes().to_vec(),
                _ => vec![zero_point as u8],
            }
        }
        _ => vec![0; elem],
    };
    let copy = movement::pad(input.shape(), &before, output.shape(), elem)
        .map_err(|e| op.copy_error(e))?;
    Ok(PreparedOp::elements(
        Kernel::Pad { copy, fill },
        output.element_count(),
    ))
}

fn concatenation(op: &Op<'_, '_>) -> Result<PreparedOp> {
    let n = op.operator.inputs().len();
    op.input_count(1, usize::MAX)?;
    op.output_count(1)?;
    let output = op.output(0)?;
    let elem = op.elem(output)?;
    let (axis, activation) = match op.operator.options() {
        OpOptions::Concatenation(c) => (c.axis as i64, c.fused_activation),
        _ => (0, TfActivation::None),
    };
    if activation != TfActivation::None {
        return Err(op.unsupported(format!("fused activation {activation}")));
    }
    let rank = output.shape().len();
    let axis = normalize_axis(op, axis, rank)?;
    let mut parts = Vec::with_capacity(n);
    for i in 0..n {
        let input = op.input(i)?;
        if input.dtype() != output.dtype() {
            return Err(op.unsupported_types());
        }
        let s = input.shape();
        if s.len() != rank || (0..rank).any(|d| d != axis && s[d] != output.shape()[d]) {
            return Err(op.invalid(format!(
                "input {i} shape {s:?} does not match the output {:?} off axis {axis}",
                output.shape()
            )));
        }
        // int8: TFLite requires every input quantized as the output (no
        // rescaling kernel for int8).
        quantization_equal(op, input, output)?;
        parts.push(s[axis]);
    }
    if parts.iter().sum::<usize>() != output.shape()[axis] {
        return Err(op.invalid("the inputs' axis sizes do not add up to the output's"));
    }
    let outer: usize = output.shape()[..axis].iter().product();
    let inner: usize = output.shape()[axis + 1..].iter().product::<usize>() * elem;
    let copies = movement::join_parts(outer, inner, &parts, true).map_err(|e| op.copy_error(e))?;
    Ok(PreparedOp::elements(
        Kernel::Concat(copies),
        output.element_count(),
    ))
}

fn split(op: &Op<'_, '_>) -> Result<PreparedOp> {
    op.input_count(2, 2)?;
    let (axis_tensor, input) = (op.input(0)?, op.input(1)?);
    let axis = op.constant_ints(axis_tensor, "axis")?;
    let [axis] = axis[..] else {
        return Err(op.invalid("axis is not one value"));
    };
    let rank = input.shape().len();
    let axis = normalize_axis(op, axis, rank)?;
    let splits = match op.operator.options() {
        OpOptions::Split(s) => s.num_splits,
        _ => 0,
    };
    let n = op.operator.outputs().len();
    if splits <= 0 || splits as usize != n || input.shape()[axis] % n != 0 {
        return Err(op.invalid(format!(
            "num_splits {splits} with {n} outputs does not divide axis {axis} of {:?}",
            input.shape()
        )));
    }
    let elem = op.elem(input)?;
    let part = input.shape()[axis] / n;
    let mut expected = input.shape().to_vec();
    expected[axis] = part;
    for i in 0..n {
        let output = op.output(i)?;
        if output.dtype() != input.dtype() {
            return Err(op.unsupported_types());
        }
        op.expect_shape(output, &expected)?;
    }
    let outer: usize = input.shape()[..axis].iter().product();
    let inner: usize = input.shape()[axis + 1..].iter().product::<usize>() * elem;
    let copies =
        movement::join_parts(outer, inner, &vec![part; n], false).map_err(|e| op.copy_error(e))?;
    Ok(PreparedOp::elements(
        Kernel::Split(copies),
        input.element_count(),
    ))
}

fn cast(op: &Op<'_, '_>) -> Result<PreparedOp> {
    op.input_count(1, 1)?;
    op.output_count(1)?;
    let (input, output) = (op.input(0)?, op.output(0)?);
    op.same_shape(input, output)?;
    match (input.dtype(), output.dtype()) {
        (TensorType::Int32, TensorType::Float32) => Ok(PreparedOp::elements(
            Kernel::CastI32F32,
            output.element_count(),
        )),
        _ => Err(op.unsupported_types()),
    }
}

fn int_type(dtype: TensorType) -> Option<IntType> {
    match dtype {
        TensorType::Int8 => Some(IntType::I8),
        TensorType::Uint8 => Some(IntType::U8),
        TensorType::Int16 => Some(IntType::I16),
        _ => None,
    }
}

fn dequantize(op: &Op<'_, '_>) -> Result<PreparedOp> {
    op.input_count(1, 1)?;
    op.output_count(1)?;
    let (input, output) = (op.input(0)?, op.output(0)?);
    op.same_shape(input, output)?;
    let from = int_type(input.dtype())
        .filter(|_| output.dtype() == TensorType::Float32)
        .ok_or_else(|| op.unsupported_types())?;
    let q = op.per_tensor(input, "input")?;
    Ok(PreparedOp::elements(
        Kernel::Dequantize {
            from,
            scale: q.scale as f64,
            zero_point: q.zero_point,
        },
        output.element_count(),
    ))
}

fn quantize(op: &Op<'_, '_>) -> Result<PreparedOp> {
    op.input_count(1, 1)?;
    op.output_count(1)?;
    let (input, output) = (op.input(0)?, op.output(0)?);
    op.same_shape(input, output)?;
    let to = int_type(output.dtype()).ok_or_else(|| op.unsupported_types())?;
    let out_q = op.per_tensor(output, "output")?;
    match input.dtype() {
        TensorType::Float32 => Ok(PreparedOp::elements(
            Kernel::Quantize {
                to,
                scale: out_q.scale,
                zero_point: out_q.zero_point,
            },
            output.element_count(),
        )),
        TensorType::Int8 if to == IntType::I8 => {
            op.needs_double_rounding("requantize")?;
            let in_q = op.per_tensor(input, "input")?;
            let real = in_q.scale as f64 / out_q.scale as f64;
            let m = qneon::quant::quantize_multiplier(real).map_err(|e| op.kernel_error(e))?;
            Ok(PreparedOp::elements(
                Kernel::RequantizeI8 {
                    multiplier: m.multiplier,
                    shift: m.shift,
                    input_zero_point: in_q.zero_point,
                    output_zero_point: out_q.zero_point,
                },
                output.element_count(),
            ))
        }
        _ => Err(op.unsupported_types()),
    }
}

fn activation(op: &Op<'_, '_>, builtin: BuiltinOp) -> Result<PreparedOp> {
    op.input_count(1, 1)?;
    op.output_count(1)?;
    let (input, output) = (op.input(0)?, op.output(0)?);
    op.same_shape(input, output)?;
    if input.dtype() != output.dtype() {
        return Err(op.unsupported_types());
    }
    let method = activation_method(builtin, input.dtype(), op.options.softmax_method);
    let (in_q, out_q) = (
        op.per_tensor(input, "input")?,
        op.per_tensor(output, "output")?,
    );
    let row = input.shape().last().copied().unwrap_or(1);
    if row == 0 || input.element_count() == 0 {
        return Err(op.invalid("empty input"));
    }
    let e = |err: qneon::Error| op.kernel_error(err);
    let beta = match op.operator.options() {
        OpOptions::Softmax(s) => s.beta,
        _ => 1.0,
    };
    let dtype = input.dtype();
    let a = match (builtin, dtype) {
        (BuiltinOp::SOFTMAX, TensorType::Int8) => Activation::SoftmaxI8(
            qneon::Softmax::new(in_q, beta, out_q, method).map_err(e)?,
            row,
        ),
        (BuiltinOp::SOFTMAX, TensorType::Uint8) => Activation::SoftmaxU8(
            qneon::Softmax::new(in_q, beta, out_q, method).map_err(e)?,
            row,
        ),
        (BuiltinOp::SOFTMAX, TensorType::Int16) => Activation::SoftmaxI16(
            qneon::Softmax::new(in_q, beta, out_q, method).map_err(e)?,
            row,
        ),
        (BuiltinOp::LOG_SOFTMAX, TensorType::Int8) => {
            Activation::LogSoftmaxI8(qneon::LogSoftmax::new(in_q, out_q, method).map_err(e)?, row)
        }
        (BuiltinOp::LOG_SOFTMAX, TensorType::Uint8) => {
            Activation::LogSoftmaxU8(qneon::LogSoftmax::new(in_q, out_q, method).map_err(e)?, row)
        }
        (BuiltinOp::LOGISTIC, TensorType::Int8) => {
            Activation::LogisticI8(qneon::Logistic::new(in_q, out_q, method).map_err(e)?)
        }
        (BuiltinOp::LOGISTIC, TensorType::Uint8) => {
            Activation::LogisticU8(qneon::Logistic::new(in_q, out_q, method).map_err(e)?)
        }
        (BuiltinOp::LOGISTIC, TensorType::Int16) => {
            Activation::LogisticI16(qneon::Logistic::new(in_q, out_q, method).map_err(e)?)
        }
        (BuiltinOp::TANH, TensorType::Int8) => {
            Activation::TanhI8(qneon::Tanh::new(in_q, out_q, method).map_err(e)?)
        }
        (BuiltinOp::TANH, TensorType::Uint8) => {
            Activation::TanhU8(qneon::Tanh::new(in_q, out_q, method).map_err(e)?)
        }
        (BuiltinOp::TANH, TensorType::Int16) => {
            Activation::TanhI16(qneon::Tanh::new(in_q, out_q, method).map_err(e)?)
        }
        _ => return Err(op.unsupported_types()),
    };
    Ok(PreparedOp::elements(
        Kernel::Activation(Box::new(a)),
        output.element_count(),
    ))
}

/// The library method that gives TFLite's bytes for the requested one.
/// TFLite's int16 SOFTMAX, LOGISTIC and TANH exist only as the table kernels
/// (its reference resolver runs them too), so `FixedPoint` (the reference
/// kernels' bytes) means [`Method::Lut`] there: measured on `models/ops`,
/// the library's int16 fixed-point kernels differ from both TFLite
/// references and its `Lut` kernels equal them.
fn activation_method(builtin: BuiltinOp, dtype: TensorType, requested: Method) -> Method {
    let int16_table_op = matches!(
        builtin,
        BuiltinOp::SOFTMAX | BuiltinOp::LOGISTIC | BuiltinOp::TANH
    );
    if dtype == TensorType::Int16 && int16_table_op && requested == Method::FixedPoint {
        Method::Lut
    } else {
        requested
    }
}

fn fully_connected(op: &Op<'_, '_>) -> Result<PreparedOp> {
    op.input_count(2, 3)?;
    op.output_count(1)?;
    let (input, weights, output) = (op.input(0)?, op.input(1)?, op.output(0)?);
    let bias = op.optional_input(2);
    let types_ok = input.dtype() == TensorType::Int8
        && weights.dtype() == TensorType::Int8
        && output.dtype() == TensorType::Int8
        && bias.is_none_or(|b| b.dtype() == TensorType::Int32);
    if !types_ok {
        return Err(op.unsupported_types());
    }
    let o = match op.operator.options() {
        OpOptions::FullyConnected(o) => *o,
        _ => Default::default(),
    };
    if o.weights_format != WeightsFormat::Default {
        return Err(op.unsupported(format!("weights format {:?}", o.weights_format)));
    }
    let activation = op.activation(o.fused_activation)?;
    if !weights.is_constant() || bias.is_some_and(|b| !b.is_constant()) {
        return Err(op.unsupported("weights and bias must be constant"));
    }
    let [n, k] = weights.shape()[..] else {
        return Err(op.invalid(format!("weights shape {:?} is not rank 2", weights.shape())));
    };
    if k == 0 || n == 0 || input.element_count() % k != 0 {
        return Err(op.invalid(format!(
            "input shape {:?} is not a whole number of rows of depth {k}",
            input.shape()
        )));
    }
    let m = input.element_count() / k;
    if output.element_count() != m * n || output.shape().last() != Some(&n) {
        return Err(op.invalid(format!(
            "output shape {:?}, expected {m} rows of {n}",
            output.shape()
        )));
    }
    let in_q = op.per_tensor(input, "input")?;
    let out_q = op.per_tensor(output, "output")?;
    let wq = weights
        .quantization()
        .ok_or_else(|| op.invalid("weights are not quantized"))?;
    if wq.zero_points().iter().any(|&z| z != 0) {
        return Err(op.invalid("int8 weights must have zero point 0 (TFLite's rule)"));
    }
    let scales: Vec<f32> = match (wq.scales(), wq.axis()) {
        ([scale], _) => vec![*scale; n],
        (scales, Some(0)) if scales.len() == n => scales.to_vec(),
        _ => return Err(op.invalid("weight scales are neither per tensor nor per output channel")),
    };
    let bias_values: Option<Vec<i32>> = match bias {
        None => None,
        Some(b) => {
            if b.element_count() != n {
                return Err(op.invalid(format!(
                    "bias has {} values for {n} outputs",
                    b.element_count()
                )));
            }
            // TFLite: the bias scale equals input scale * weight scale.
            if let Some(bq) = b.quantization() {
                for (c, &bias_scale) in bq.scales().iter().enumerate() {
                    let product = in_q.scale as f64 * scales[c.min(n - 1)] as f64;
                    let bias_scale = bias_scale as f64;
                    if (product - bias_scale).abs() > 1e-6 * product.min(bias_scale) {
                        return Err(op.invalid(format!(
                            "bias scale {bias_scale} is not input scale * weight scale {product}"
                        )));
                    }
                }
            }
            let values = b
                .constant_values::<i32>()
                .map_err(|e| op.invalid(e.to_string()))?
                .unwrap_or_default();
            Some(values.to_vec())
        }
    };
    op.needs_double_rounding("GEMM")?;
    let w = weights
        .constant_values::<i8>()
        .map_err(|e| op.invalid(e.to_string()))?
        .unwrap_or_default();
    let gemm = qneon::Gemm::new(
        &w,
        n,
        k,
        bias_values.as_deref(),
        in_q,
        &scales,
        out_q,
        activation,
    )
    .map_err(|e| op.kernel_error(e))?;
    Ok(PreparedOp {
        kernel: Kernel::FullyConnected {
            gemm: Box::new(gemm),
            m,
        },
        work: (m * n * k) as u64,
        unit: "MAC",
        scratch_bytes: 0,
        alias: false,
    })
}

fn binary(op: &Op<'_, '_>, builtin: BuiltinOp) -> Result<PreparedOp> {
    op.input_count(2, 2)?;
    op.output_count(1)?;
    let (a, b, output) = (op.input(0)?, op.input(1)?, op.output(0)?);
    if a.dtype() != TensorType::Int8
        || b.dtype() != TensorType::Int8
        || output.dtype() != TensorType::Int8
    {
        return Err(op.unsupported_types());
    }
    let shape = movement::broadcast_shape(a.shape(), b.shape()).map_err(|e| op.invalid(e))?;
    if shape.len() > 6 {
        return Err(op.unsupported(format!("rank {} broadcast (at most 6)", shape.len())));
    }
    op.expect_shape(output, &shape)?;
    let fused = match op.operator.options() {
        OpOptions::Add(o) | OpOptions::Sub(o) => o.fused_activation,
        OpOptions::Mul(o) => o.fused_activation,
        _ => TfActivation::None,
    };
    let activation = op.activation(fused)?;
    let (qa, qb, qo) = (
        op.per_tensor(a, "input 1")?,
        op.per_tensor(b, "input 2")?,
        op.per_tensor(output, "output")?,
    );
    let kernel: Box<dyn super::ops::ElementwiseInt8> = match builtin {
        BuiltinOp::ADD => {
            op.needs_double_rounding("ADD")?;
            Box::new(qneon::Add::new(qa, qb, qo, activation).map_err(|e| op.kernel_error(e))?)
        }
        _ => {
            return Err(op.unsupported(format!(
                "int8 {} needs the library's {} kernel (pending in qneon)",
                op.name, op.name
            )))
        }
    };
    let count = output.element_count();
    let expand = |t: &Tensor<'_>| -> Result<Option<StridedCopy>> {
        if t.shape() == shape.as_slice() {
            return Ok(None);
        }
        movement::broadcast(t.shape(), &shape, 1)
            .map(Some)
            .map_err(|e| op.copy_error(e))
    };
    let (expand_a, expand_b) = (expand(a)?, expand(b)?);
    let scratch_bytes = count * (expand_a.is_some() as usize + expand_b.is_some() as usize);
    Ok(PreparedOp {
        kernel: Kernel::Binary {
            kernel,
            expand_a,
            expand_b,
            count,
        },
        work: count as u64,
        unit: "element",
        scratch_bytes,
        alias: false,
    })
}

fn batch_matmul(op: &Op<'_, '_>) -> Result<PreparedOp> {
    op.input_count(2, 2)?;
    op.output_count(1)?;
    let (a, b, output) = (op.input(0)?, op.input(1)?, op.output(0)?);
    if a.dtype() != TensorType::Int8
        || b.dtype() != TensorType::Int8
        || output.dtype() != TensorType::Int8
    {
        return Err(op.unsupported_types());
    }
    let o = match op.operator.options() {
        OpOptions::BatchMatMul(o) => *o,
        _ => Default::default(),
    };
    let (sa, sb) = (a.shape(), b.shape());
    if sa.len() < 2 || sb.len() < 2 {
        return Err(op.invalid("inputs of rank below 2"));
    }
    let (rows, depth_a) = if o.adj_x {
        (sa[sa.len() - 1], sa[sa.len() - 2])
    } else {
        (sa[sa.len() - 2], sa[sa.len() - 1])
    };
    let (depth_b, cols) = if o.adj_y {
        (sb[sb.len() - 1], sb[sb.len() - 2])
    } else {
        (sb[sb.len() - 2], sb[sb.len() - 1])
    };
    if depth_a != depth_b {
        return Err(op.invalid(format!("depths {depth_a} and {depth_b} differ")));
    }
    let batch = movement::broadcast_shape(&sa[..sa.len() - 2], &sb[..sb.len() - 2])
        .map_err(|e| op.invalid(e))?;
    let mut expected = batch;
    expected.extend([rows, cols]);
    op.expect_shape(output, &expected)?;
    op.per_tensor(a, "input 1")?;
    op.per_tensor(b, "input 2")?;
    op.per_tensor(output, "output")?;
    Err(op.unsupported(
        "int8 BATCH_MATMUL needs the library's GEMM with a run-time right-hand side and a \
         non-zero right-hand zero point (pending in qneon)",
    ))
}
