//! What the fuzz targets share: structured choices of scales, zero points
//! and shapes, the backend comparison, and the checks several targets
//! assert (monotonic rows, the exact `f64` references of
//! `Method::DequantF32`).
//!
//! Every target follows one rule: errors are fine, panics are not, and an
//! `Ok` result must satisfy what the library documents for it.

use arbitrary::Arbitrary;
use qneon::catalogue::{Dtype, Op, Variant, KERNELS};
use qneon::{Backend, Method, QuantElem, QuantParams, Rounding};

pub mod c_api;

/// A scale as the fuzzer picks it: mostly a positive normal value at any
/// magnitude, sometimes any `f32` bit pattern (zero, negative, subnormal,
/// infinite, NaN), which `new()` must refuse with an error.
#[derive(Arbitrary, Clone, Copy, Debug)]
pub enum Scale {
    /// `(1 + mantissa / 2^16) * 2^exponent`.
    Normal { exponent: i8, mantissa: u16 },
    /// `(1 + mantissa / 2^16) * 2^(exponent / 16)`: magnitudes near 1,
    /// where most real models live.
    NearOne { exponent: i8, mantissa: u16 },
    /// Any bit pattern.
    Bits(u32),
}

impl Scale {
    /// The `f32` value.
    pub fn get(self) -> f32 {
        match self {
            Scale::Normal { exponent, mantissa } => {
                (1.0 + mantissa as f32 / 65536.0) * 2f32.powi(exponent as i32)
            }
            Scale::NearOne { exponent, mantissa } => {
                (1.0 + mantissa as f32 / 65536.0) * 2f32.powi(exponent as i32 / 16)
            }
            Scale::Bits(bits) => f32::from_bits(bits),
        }
    }
}

/// A zero point: mostly inside the element type's range, sometimes any
/// `i32` (an error unless it happens to be in range).
#[derive(Arbitrary, Clone, Copy, Debug)]
pub enum ZeroPoint {
    /// `T::MIN + value mod (T::MAX - T::MIN + 1)`.
    InRange(u16),
    /// Any value.
    Raw(i32),
}

impl ZeroPoint {
    /// The zero point for element type `T`.
    pub fn get<T: QuantElem>(self) -> i32 {
        match self {
            ZeroPoint::InRange(v) => T::MIN + (v as i32).rem_euclid(T::MAX - T::MIN + 1),
            ZeroPoint::Raw(v) => v,
        }
    }
}

/// Quantization parameters from a [`Scale`] and a [`ZeroPoint`].
#[derive(Arbitrary, Clone, Copy, Debug)]
pub struct Quant {
    pub scale: Scale,
    pub zero_point: ZeroPoint,
}

impl Quant {
    /// The parameters for element type `T`.
    pub fn get<T: QuantElem>(self) -> QuantParams {
        QuantParams::new(self.scale.get(), self.zero_point.get::<T>())
    }
}

/// An op's output quantization: the one TFLite requires (the usual case),
/// one near it (softmax accepts 0.1% off), or any.
#[derive(Arbitrary, Clone, Copy, Debug)]
pub enum OutputQuant {
    Required,
    /// The required scale times `1 + tweak / 2^24` (up to about 0.2% off,
    /// on both sides of softmax's tolerance), the required zero point.
    Near(i16),
    Any(Quant),
}

impl OutputQuant {
    /// The parameters, given the required ones.
    pub fn get<T: QuantElem>(self, required: QuantParams) -> QuantParams {
        match self {
            OutputQuant::Required => required,
            OutputQuant::Near(tweak) => QuantParams::new(
                (required.scale as f64 * (1.0 + tweak as f64 / (1 << 24) as f64)) as f32,
                required.zero_point,
            ),
            OutputQuant::Any(q) => q.get::<T>(),
        }
    }
}

/// The element types of the quantized ops.
#[derive(Arbitrary, Clone, Copy, Debug)]
pub enum ElemType {
    I8,
    U8,
    I16,
}

impl ElemType {
    pub const ALL: [ElemType; 3] = [ElemType::I8, ElemType::U8, ElemType::I16];

    pub fn dtype(self) -> Dtype {
        match self {
            ElemType::I8 => Dtype::Int8,
            ElemType::U8 => Dtype::Uint8,
            ElemType::I16 => Dtype::Int16,
        }
    }
}

/// The target that fuzzes each op of `qneon::catalogue` (exhaustive: a new
/// op does not build here until a target takes it).
pub fn target_of(op: Op) -> &'static str {
    match op {
        Op::Softmax => "softmax",
        Op::LogSoftmax => "log_softmax",
        Op::Logistic | Op::Tanh => "activation",
        Op::SoftmaxOnline | Op::Sigmoid => "f32_kernels",
        Op::ThresholdedLogistic | Op::ThresholdedSoftmax => "threshold",
        Op::CrossEntropy | Op::CrossEntropyBackward => "loss",
        Op::Add | Op::AddRow | Op::AddScalar | Op::Sub | Op::Mul | Op::MulRow | Op::MulScalar => {
            "binary"
        }
    }
}

/// For a target's `init`: panics unless its `ElemType` and `MethodChoice`
/// can pick every quantized element type and method `qneon::catalogue`
/// lists for `ops`, and the catalogue names this target for each of them;
/// so a type or method added to the catalogue fails the target at once
/// instead of going unfuzzed.
pub fn check_catalogue(target: &str, ops: &[Op]) {
    for &op in ops {
        assert_eq!(target_of(op), target, "{op:?} is fuzzed by another target");
        for row in KERNELS.iter().filter(|k| k.op == op && k.dtype.quantized()) {
            assert!(
                ElemType::ALL.iter().any(|e| e.dtype() == row.dtype),
                "{target}: qneon::catalogue lists {} {}, which ElemType cannot pick",
                op.name(),
                row.dtype.name()
            );
            for variant in row.variants {
                if let Variant::Method(m) = variant {
                    assert!(
                        MethodChoice::ALL.iter().any(|c| c.get() == *m),
                        "{target}: qneon::catalogue lists {} {} {}, which MethodChoice cannot pick",
                        op.name(),
                        row.dtype.name(),
                        m.name()
                    );
                }
            }
        }
    }
}

/// Every [`Method`].
#[derive(Arbitrary, Clone, Copy, Debug, PartialEq, Eq)]
pub enum MethodChoice {
    FixedPoint,
    Lut,
    LutFixedPoint,
    DequantF32,
}

impl MethodChoice {
    pub const ALL: [MethodChoice; 4] = [
        MethodChoice::FixedPoint,
        MethodChoice::Lut,
        MethodChoice::LutFixedPoint,
        MethodChoice::DequantF32,
    ];

    pub fn get(self) -> Method {
        match self {
            MethodChoice::FixedPoint => Method::FixedPoint,
            MethodChoice::Lut => Method::Lut,
            MethodChoice::LutFixedPoint => Method::LutFixedPoint,
            MethodChoice::DequantF32 => Method::DequantF32,
        }
    }
}

/// Both [`Rounding`]s.
#[derive(Arbitrary, Clone, Copy, Debug)]
pub enum RoundingChoice {
    Single,
    Double,
}

impl RoundingChoice {
    pub fn get(self) -> Rounding {
        match self {
            RoundingChoice::Single => Rounding::Single,
            RoundingChoice::Double => Rounding::Double,
        }
    }
}

/// How a row-wise call is shaped: normally `rows` whole rows over the data,
/// sometimes a bad row length or an output of the wrong length (the call
/// must then be an error).
#[derive(Arbitrary, Clone, Copy, Debug)]
pub struct RowShape {
    /// `1 + rows % 4` rows.
    pub rows: u8,
    pub defect: Option<ShapeDefect>,
}

/// A length error to provoke.
#[derive(Arbitrary, Clone, Copy, Debug)]
pub enum ShapeDefect {
    /// This row length instead of the one that divides the data.
    RowLen(u16),
    /// The output longer or shorter by this much (saturating at 0).
    OutputDelta(i8),
}

/// A prepared row-wise call: the input truncated to whole rows, the row
/// length and the output length.
pub struct Rows<T> {
    pub input: Vec<T>,
    pub row_len: usize,
    pub output_len: usize,
    /// Whether the shape is valid (rows divide the input, lengths equal).
    pub valid: bool,
}

impl RowShape {
    /// Applies the shape to `data`.
    pub fn apply<T: Copy>(self, mut data: Vec<T>) -> Rows<T> {
        let rows = 1 + self.rows as usize % 4;
        let row_len = data.len() / rows;
        data.truncate(row_len * rows);
        let len = data.len();
        match self.defect {
            None => Rows {
                input: data,
                row_len,
                output_len: len,
                valid: row_len > 0,
            },
            Some(ShapeDefect::RowLen(r)) => {
                let r = r as usize;
                Rows {
                    input: data,
                    row_len: r,
                    output_len: len,
                    valid: r > 0 && len.is_multiple_of(r),
                }
            }
            Some(ShapeDefect::OutputDelta(d)) => {
                let out = (len as isize + d as isize).max(0) as usize;
                Rows {
                    input: data,
                    row_len,
                    output_len: out,
                    valid: row_len > 0 && out == len,
                }
            }
        }
    }
}

/// Reads bytes as elements of `T` (two bytes little-endian for `i16`).
pub fn elements<T: QuantElem>(bytes: &[u8]) -> Vec<T> {
    if T::MAX - T::MIN == 255 {
        bytes
            .iter()
            .map(|&b| {
                let v = if T::MIN < 0 { b as i8 as i32 } else { b as i32 };
                T::from_i32(v)
            })
            .collect()
    } else {
        bytes
            .chunks_exact(2)
            .map(|c| T::from_i32(i16::from_le_bytes([c[0], c[1]]) as i32))
            .collect()
    }
}

/// Widens a slice of elements.
pub fn widen<T: QuantElem>(x: &[T]) -> Vec<i32> {
    x.iter().map(|v| v.to_i32()).collect()
}

/// Runs `run` with the best backend (`None`: the op's `run`) and with every
/// backend, available or not. Asserts that unavailable backends are errors,
/// that every available backend and `run` agree with [`Backend::Scalar`] on
/// the result and on every output element (`same` decides equality, so that
/// `f32` NaN payloads may differ), and returns the scalar result and output.
/// Outputs start poisoned with `fill`, so an element a backend forgets to
/// write shows.
pub fn on_every_backend<T: Clone + std::fmt::Debug, E: std::fmt::Debug>(
    output_len: usize,
    fill: T,
    same: impl Fn(&T, &T) -> bool,
    run: impl Fn(Option<Backend>, &mut [T]) -> Result<(), E>,
) -> (Result<(), E>, Vec<T>) {
    let mut reference = vec![fill.clone(); output_len];
    let reference_result = run(Some(Backend::Scalar), &mut reference);
    let mut others: Vec<Option<Backend>> = vec![None];
    for backend in [Backend::Scalar, Backend::Neon] {
        if backend == Backend::Scalar {
            continue;
        }
        if backend.is_available() {
            others.push(Some(backend));
        } else {
            let mut out = vec![fill.clone(); output_len];
            let result = run(Some(backend), &mut out);
            assert!(
                result.is_err(),
                "{backend:?} is not available here but ran without an error"
            );
        }
    }
    for backend in others {
        let mut out = vec![fill.clone(); output_len];
        let result = run(backend, &mut out);
        assert_eq!(
            format!("{result:?}"),
            format!("{reference_result:?}"),
            "{backend:?} (None: the best) and the scalar backend disagree on the result"
        );
        if reference_result.is_ok() {
            if let Some(i) = (0..output_len).find(|&i| !same(&out[i], &reference[i])) {
                panic!(
                    "{backend:?} (None: the best) differs from the scalar backend at {i}: {:?} vs {:?}",
                    out[i], reference[i]
                );
            }
        }
    }
    (reference_result, reference)
}

/// Within one row: equal inputs give equal outputs, and `x_i > x_j`
/// implies `y_i >= y_j - tolerance`.
pub fn assert_monotonic(x: &[i64], y: &[i64], tolerance: i64, what: &str) {
    let mut order: Vec<usize> = (0..x.len()).collect();
    order.sort_by_key(|&i| x[i]);
    let mut running_max: Option<usize> = None;
    let mut k = 0;
    while k < order.len() {
        let first = order[k];
        let mut end = k;
        while end < order.len() && x[order[end]] == x[first] {
            assert_eq!(
                y[order[end]], y[first],
                "{what}: equal inputs x[{first}] = x[{}] = {} give different outputs",
                order[end], x[first]
            );
            end += 1;
        }
        if let Some(at) = running_max {
            assert!(
                y[at] - y[first] <= tolerance,
                "{what}: not monotonic (tolerance {tolerance}): x[{at}] = {} < x[{first}] = {} \
                 but y = {} > {}",
                x[at],
                x[first],
                y[at],
                y[first]
            );
        }
        if running_max.is_none_or(|at| y[first] > y[at]) {
            running_max = Some(first);
        }
        k = end;
    }
}

/// The elements equal to the row's maximum get the row's largest output.
pub fn assert_argmax(x: &[i64], y: &[i64], what: &str) {
    let (Some(&x_max), Some(&y_max)) = (x.iter().max(), y.iter().max()) else {
        return;
    };
    for i in 0..x.len() {
        if x[i] == x_max {
            assert_eq!(
                y[i], y_max,
                "{what}: the maximum x[{i}] = {x_max} does not get the largest output"
            );
        }
    }
}

/// TFLite's quantization of an exact real output `v` (in output steps):
/// `round_half_away(v) + zero_point`, clamped to `T`.
pub fn quantize_exact<T: QuantElem>(steps: f64, zero_point: i32) -> i64 {
    (steps.round() + zero_point as f64).clamp(T::MIN as f64, T::MAX as f64) as i64
}

/// `Method::DequantF32`'s promise: every output within 1 LSB of the
/// correctly rounded exact value (`want`, already quantized).
pub fn assert_within_one_lsb(got: i64, want: i64, what: impl FnOnce() -> String) {
    assert!(
        (got - want).abs() <= 1,
        "{}: got {got}, the correctly rounded exact value is {want} (more than 1 LSB apart)",
        what()
    );
}

/// The exact softmax (`log == false`) or log-softmax of one row of
/// quantized inputs with real multiplier `c = beta * input_scale`, in real
/// output units.
pub fn exact_softmax_row(x: &[i32], c: f64, log: bool) -> Vec<f64> {
    let max = x.iter().copied().max().unwrap_or(0);
    // d = 0 is exactly exp(0) = 1 even when c is huge (0 * inf would be NaN).
    let arg = |v: i32| {
        if v == max {
            0.0
        } else {
            c * (v - max) as f64
        }
    };
    let sum: f64 = x.iter().map(|&v| arg(v).exp()).sum();
    if log {
        let ln_sum = sum.ln();
        x.iter().map(|&v| arg(v) - ln_sum).collect()
    } else {
        x.iter().map(|&v| arg(v).exp() / sum).collect()
    }
}

/// The output TFLite requires of softmax for `T`: `(params, output bits)`.
pub fn softmax_output<T: QuantElem>() -> (QuantParams, u32) {
    match (T::MIN, T::MAX) {
        (-128, 127) => (QuantParams::new(1.0 / 256.0, -128), 8),
        (0, 255) => (QuantParams::new(1.0 / 256.0, 0), 8),
        _ => (QuantParams::new(1.0 / 32768.0, 0), 15),
    }
}

/// The output TFLite requires of log-softmax for `T` (scale 16/256, zero
/// point the type's maximum).
pub fn log_softmax_output<T: QuantElem>() -> QuantParams {
    QuantParams::new(16.0 / 256.0, T::MAX)
}

/// The output TFLite requires of logistic (`tanh == false`) or tanh for
/// `T`: `(params, output fraction bits)`.
pub fn activation_output<T: QuantElem>(tanh: bool) -> (QuantParams, u32) {
    match (tanh, T::MIN, T::MAX) {
        (false, -128, 127) => (QuantParams::new(1.0 / 256.0, -128), 8),
        (false, 0, 255) => (QuantParams::new(1.0 / 256.0, 0), 8),
        (true, -128, 127) => (QuantParams::new(1.0 / 128.0, 0), 7),
        (true, 0, 255) => (QuantParams::new(1.0 / 128.0, 128), 7),
        _ => (QuantParams::new(1.0 / 32768.0, 0), 15),
    }
}

/// A constant `c` such that `x + c` stays within `[min, max]` for every
/// `x` in `values`, chosen by `pick` between the two extremes.
pub fn shift_constant(values: &[i64], min: i64, max: i64, pick: u8) -> i64 {
    let (Some(&lo), Some(&hi)) = (values.iter().min(), values.iter().max()) else {
        return 0;
    };
    let (c_lo, c_hi) = (min - lo, max - hi);
    if c_lo > c_hi {
        return 0;
    }
    c_lo + ((c_hi - c_lo) as i128 * pick as i128 / 255) as i64
}

/// Marks a checked branch as reached: with `QNEON_FUZZ_REACHED` set in the
/// environment, prints `reached: <label>` to stderr the first time each
/// label is seen. Running a target over its corpus with `-runs=0` then
/// shows which assertions the corpus exercises (a check no input reaches
/// asserts nothing). `label` is only called when enabled.
pub fn reached(label: impl FnOnce() -> String) {
    use std::collections::HashSet;
    use std::sync::{Mutex, OnceLock};
    static ENABLED: OnceLock<bool> = OnceLock::new();
    static SEEN: Mutex<Option<HashSet<String>>> = Mutex::new(None);
    if !*ENABLED.get_or_init(|| std::env::var_os("QNEON_FUZZ_REACHED").is_some()) {
        return;
    }
    let label = label();
    let mut seen = SEEN.lock().unwrap_or_else(|p| p.into_inner());
    if seen.get_or_insert_with(HashSet::new).insert(label.clone()) {
        eprintln!("reached: {label}");
    }
}
