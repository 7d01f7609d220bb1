//! The rows: every (op, type, method) case of `qneon::catalogue`, its input
//! data, and the `--filter` selection.

use qneon::catalogue::{self, Dtype, Op, Variant};
use qneon::{
    q31, Backend, Error, LogSoftmax, Logistic, Method, QuantElem, QuantParams, Rounding, Softmax,
    Tanh,
};
use std::sync::atomic::{AtomicU32, Ordering};

use crate::args::{Args, Shape};

/// A small deterministic generator (xorshift64*), so runs are repeatable.
pub(crate) struct Rng(pub(crate) u64);
impl Rng {
    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    pub(crate) fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
    /// Standard normal by Box-Muller.
    pub(crate) fn normal(&mut self) -> f64 {
        let u = self.uniform().max(1e-300);
        let v = self.uniform();
        (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
    }
}

/// Attention-like logits, N(0, 3) in real units (N(0, 40 steps) where the
/// scale is below 0.075, so small scales do not clamp every value), quantized
/// with `q`.
pub(crate) fn logits<T: QuantElem + TryFrom<i32>>(n: usize, q: QuantParams, seed: u64) -> Vec<T> {
    let mut rng = Rng(seed);
    let sigma = 3.0f64.min(40.0 * q.scale as f64);
    (0..n)
        .map(|_| {
            let real = sigma * rng.normal();
            let v = (real / q.scale as f64).round() as i64 + q.zero_point as i64;
            let v = v.clamp(T::MIN as i64, T::MAX as i64) as i32;
            T::try_from(v).ok().expect("clamped to the type")
        })
        .collect()
}

/// `--filter` selects rows whose `"op type method"` equals the filter or
/// starts with it followed by a space (so `softmax` selects neither
/// `log_softmax` nor `softmax_online`, and `logistic int8 lut` not
/// `lut-fixed`), or whose type equals it.
pub(crate) fn filter_matches(filter: &str, op: &str, dtype: &str, method: &str) -> bool {
    let name = format!("{op} {dtype} {method}");
    name == filter || name.starts_with(&format!("{filter} ")) || filter == dtype
}

/// One kernel of one type: runs `(backend, input, output, row_len)`.
pub(crate) type Kernel<'a, T> =
    Box<dyn Fn(Backend, &[T], &mut [T], usize) -> qneon::Result<()> + 'a>;

/// A prepared (op, method) of one element type.
pub(crate) struct Case<'a, T> {
    pub(crate) op: &'static str,
    pub(crate) method: &'static str,
    /// Softmax-like (runs per row) rather than element-wise.
    pub(crate) row_wise: bool,
    pub(crate) kernel: Kernel<'a, T>,
}

/// Input scale of the 8-bit types (`--in-scale`, f32 bits; 0.1 by default).
pub(crate) static IN_SCALE_8BIT: AtomicU32 = AtomicU32::new(0x3dcc_cccd);

/// Input quantization of the quantized types: 0.1 per step for 8 bits
/// (N(0, 3) logits span about +-4 sigma) unless `--in-scale` says otherwise,
/// 1/2048 for int16.
pub(crate) fn input_quant<T: QuantElem>() -> QuantParams {
    let scale_8bit = f32::from_bits(IN_SCALE_8BIT.load(Ordering::Relaxed));
    match T::NAME {
        "int8" => QuantParams::new(scale_8bit, 0),
        "uint8" => QuantParams::new(scale_8bit, 128),
        _ => QuantParams::new(1.0 / 2048.0, 0),
    }
}

/// The cases of every element type, from the catalogue's rows
/// (`qneon::catalogue::KERNELS`, those it marks as benchmarked), each
/// type's in the catalogue's order.
#[derive(Default)]
pub(crate) struct Cases<'a> {
    pub(crate) int8: Vec<Case<'a, i8>>,
    pub(crate) uint8: Vec<Case<'a, u8>>,
    pub(crate) int16: Vec<Case<'a, i16>>,
    pub(crate) q31: Vec<Case<'a, i32>>,
    pub(crate) f32: Vec<Case<'a, f32>>,
}

/// Every case of the catalogue. A row this program cannot prepare (an op
/// on a type it has no kernel for, or a method `new()` refuses) is an
/// error naming the row, not a row left out.
pub(crate) fn every_case<'a>() -> Result<Cases<'a>, String> {
    let mut cases = Cases::default();
    for dtype in Dtype::ALL {
        // Exhaustive: a new element type needs its input data (main.rs) and
        // its kernels here.
        match dtype {
            Dtype::Int8 => cases.int8 = quant_cases(dtype, &binary_kernel)?,
            Dtype::Uint8 => cases.uint8 = quant_cases(dtype, &|op, _| int8_only(op))?,
            Dtype::Int16 => cases.int16 = quant_cases(dtype, &|op, _| int8_only(op))?,
            Dtype::Q31 => cases.q31 = q31_cases()?,
            Dtype::F32 => cases.f32 = f32_cases()?,
        }
    }
    Ok(cases)
}

/// Builds the case of each benchmarked variant of `dtype`'s catalogue rows
/// with `kernel`.
fn cases_of<'a, T>(
    dtype: Dtype,
    mut kernel: impl FnMut(Op, Variant) -> Result<Kernel<'a, T>, String>,
) -> Result<Vec<Case<'a, T>>, String> {
    let mut cases = Vec::new();
    for row in catalogue::of_type(dtype).filter(|row| row.bench) {
        for (variant, [op, dtype, method]) in row.names() {
            let kernel =
                kernel(row.op, variant).map_err(|e| format!("{op} {dtype} {method}: {e}"))?;
            cases.push(Case {
                op,
                method,
                row_wise: row.op.row_wise(),
                kernel,
            });
        }
    }
    Ok(cases)
}

/// The error of an (op, variant) pair the catalogue lists and this program
/// has no kernel for.
fn no_case(op: Op, variant: Variant) -> String {
    format!(
        "listed in qneon::catalogue, but qneon-bench has no case for {} with {}",
        op.name(),
        variant.name()
    )
}

fn int8_only<'a, T>(op: Op) -> Result<Kernel<'a, T>, String> {
    Err(format!("qneon-bench runs {} on int8 only", op.name()))
}

/// A binary op's kernel on this element type (int8 only).
type BinaryKernel<'a, T> = dyn Fn(Op, Rounding) -> Result<Kernel<'a, T>, String>;

/// Every case of a quantized type's catalogue rows (with the output
/// quantization TFLite requires for each op); `binary` makes the binary
/// ops' kernels.
fn quant_cases<'a, T: QuantElem>(
    dtype: Dtype,
    binary: &BinaryKernel<'a, T>,
) -> Result<Vec<Case<'a, T>>, String> {
    assert_eq!(
        dtype.name(),
        T::NAME,
        "quant_cases: type and element disagree"
    );
    let (softmax_out, tanh_out, log_softmax_zero) = match T::NAME {
        "int8" => (
            QuantParams::new(1.0 / 256.0, -128),
            QuantParams::new(1.0 / 128.0, 0),
            127,
        ),
        "uint8" => (
            QuantParams::new(1.0 / 256.0, 0),
            QuantParams::new(1.0 / 128.0, 128),
            255,
        ),
        _ => (
            QuantParams::new(1.0 / 32768.0, 0),
            QuantParams::new(1.0 / 32768.0, 0),
            0,
        ),
    };
    let log_softmax_out = QuantParams::new(16.0 / 256.0, log_softmax_zero);
    let q_in = input_quant::<T>();
    // int16 logistic and tanh `Method::Lut` at input scale 2^-12: TFLite
    // computes them in gemmlowp's 16-bit fixed point there instead of
    // interpolating its table (tanh also at 2^-11, the int16 rows' default
    // scale).
    let q_pow2 = QuantParams::new(2f32.powi(-12), 0);
    let error = |e: Error| e.to_string();
    cases_of(dtype, |op, variant| {
        use Variant::{LutPow2Scale, Method as M, Rounding as R, Table};
        Ok(match (op, variant) {
            (Op::Softmax, M(m)) => {
                let op = Softmax::<T>::new(q_in, 1.0, softmax_out, m).map_err(error)?;
                Box::new(move |b, x: &[T], y: &mut [T], r| op.run_with(b, x, y, r))
            }
            (Op::LogSoftmax, M(m)) => {
                let op = LogSoftmax::<T>::new(q_in, log_softmax_out, m).map_err(error)?;
                Box::new(move |b, x: &[T], y: &mut [T], r| op.run_with(b, x, y, r))
            }
            (Op::Logistic, M(_) | LutPow2Scale) => {
                let (q_in, m) = match variant {
                    M(m) => (q_in, m),
                    _ => (q_pow2, Method::Lut),
                };
                let op = Logistic::<T>::new(q_in, softmax_out, m).map_err(error)?;
                Box::new(move |b, x: &[T], y: &mut [T], _| op.run_with(b, x, y))
            }
            (Op::Tanh, M(_) | LutPow2Scale) => {
                let (q_in, out, m) = match variant {
                    M(m) => (q_in, tanh_out, m),
                    _ => (q_pow2, softmax_out, Method::Lut),
                };
                let op = Tanh::<T>::new(q_in, out, m).map_err(error)?;
                Box::new(move |b, x: &[T], y: &mut [T], _| op.run_with(b, x, y))
            }
            (Op::ThresholdedLogistic, M(m)) => thresholded_logistic(q_in, softmax_out, m)?,
            (Op::ThresholdedSoftmax, M(m)) => thresholded_softmax(q_in, softmax_out, m)?,
            (Op::CrossEntropy, Table) => quantized_cross_entropy_kernel::<T>(q_in),
            (
                Op::Add
                | Op::AddRow
                | Op::AddScalar
                | Op::Sub
                | Op::Mul
                | Op::MulRow
                | Op::MulScalar,
                R(rounding),
            ) => binary(op, rounding)?,
            _ => return Err(no_case(op, variant)),
        })
    })
}

/// `qneon::loss::CrossEntropy::quantized` on 8-bit logits (method `table`:
/// its exps come from a per-op table of `d = max - q`): rows of `row_len`
/// classes, reduction sum, targets as in [`cross_entropy_kernel`] (kept
/// between calls); the loss's integer part into `y[0]`, nothing else
/// written.
fn quantized_cross_entropy_kernel<'a, T: QuantElem>(q_in: QuantParams) -> Kernel<'a, T> {
    use qneon::loss::{CrossEntropy, QuantizedCrossEntropy, Reduction};
    use std::cell::RefCell;
    struct State<T: QuantElem> {
        /// (backend, row length) the op and targets were made for.
        key: Option<(Backend, usize, usize)>,
        op: Option<QuantizedCrossEntropy<'static, T>>,
        targets: Vec<i64>,
    }
    let state = RefCell::new(State::<T> {
        key: None,
        op: None,
        targets: Vec::new(),
    });
    Box::new(move |b, x: &[T], y: &mut [T], row_len| {
        let rows = x.len() / row_len;
        let mut st = state.borrow_mut();
        // Prepared once (its table of 256 exps is new()'s work, not the
        // kernel's), outside the repetitions' difference.
        if st.key != Some((b, row_len, rows)) {
            st.op = Some(
                CrossEntropy::new(row_len)?
                    .reduction(Reduction::Sum)
                    .backend(b)?
                    .quantized::<T>(q_in)?,
            );
            st.targets = (0..rows).map(|r| ((r * 7919) % row_len) as i64).collect();
            st.key = Some((b, row_len, rows));
        }
        let State { op, targets, .. } = &*st;
        let mut loss = [0f32];
        op.as_ref()
            .expect("prepared above")
            .forward(x, targets, 1, &mut loss)?;
        if let Some(first) = y.first_mut() {
            *first = T::from_i32((loss[0] as i32).clamp(T::MIN, T::MAX));
        }
        Ok(())
    })
}

/// Threshold of the `thresholded_logistic` rows: on the N(0, 3) logits at
/// input scale 0.1 about 10% of the scores pass (logistic >= 0.98 where the
/// logit is above about 3.9; scattered uniformly, not clustered).
pub(crate) const LOGISTIC_THRESHOLD: f32 = 0.98;
/// Threshold of the `thresholded_softmax` rows: about 3.7 elements of a
/// 384-element row of those logits pass (a few per row).
pub(crate) const SOFTMAX_THRESHOLD: f32 = 0.05;

/// Writes a thresholded op's hit count into `y[0]`.
fn count_hits<T: QuantElem>(y: &mut [T], n: usize) {
    if let Some(first) = y.first_mut() {
        *first = T::from_i32((n as i32).clamp(0, T::MAX));
    }
}

/// The fused threshold logistic (`qneon::ThresholdedLogistic`): the hits
/// go to a buffer kept between calls (sized on the first call, outside the
/// count's repetitions' difference), their number into `y[0]`; nothing
/// else is written.
fn thresholded_logistic<'a, T: QuantElem>(
    q_in: QuantParams,
    out: QuantParams,
    method: Method,
) -> Result<Kernel<'a, T>, String> {
    use qneon::{Hit, ThresholdedLogistic};
    use std::cell::RefCell;
    let op = ThresholdedLogistic::<T>::new(q_in, out, method, LOGISTIC_THRESHOLD)
        .map_err(|e| e.to_string())?;
    let hits = RefCell::new(Vec::<Hit<T>>::new());
    Ok(Box::new(move |b, x: &[T], y: &mut [T], _| {
        let mut hits = hits.borrow_mut();
        if hits.len() < x.len() {
            hits.resize(x.len(), Hit::default());
        }
        count_hits(y, op.run_with(b, x, &mut hits)?);
        Ok(())
    }))
}

/// The fused threshold softmax (`qneon::ThresholdedSoftmax`), as
/// [`thresholded_logistic`].
fn thresholded_softmax<'a, T: QuantElem>(
    q_in: QuantParams,
    out: QuantParams,
    method: Method,
) -> Result<Kernel<'a, T>, String> {
    use qneon::{RowHit, ThresholdedSoftmax};
    use std::cell::RefCell;
    let op = ThresholdedSoftmax::<T>::new(q_in, 1.0, out, method, Some(SOFTMAX_THRESHOLD), None)
        .map_err(|e| e.to_string())?;
    let hits = RefCell::new(Vec::<RowHit<T>>::new());
    Ok(Box::new(move |b, x: &[T], y: &mut [T], r| {
        let mut hits = hits.borrow_mut();
        if hits.len() < x.len() {
            hits.resize(x.len(), RowHit::default());
        }
        count_hits(y, op.run_with(b, x, r, &mut hits)?);
        Ok(())
    }))
}

/// Raw Q31 kernels: input Q5.26.
pub(crate) const Q31_INTEGER_BITS: u32 = 5;

fn q31_cases<'a>() -> Result<Vec<Case<'a, i32>>, String> {
    let ib = Q31_INTEGER_BITS;
    cases_of(
        Dtype::Q31,
        |op, variant| -> Result<Kernel<'a, i32>, String> {
            Ok(match (op, variant) {
                (Op::Softmax, Variant::Fixed) => {
                    Box::new(move |b, x, y, r| q31::softmax_with(b, x, ib, y, r))
                }
                (Op::Logistic, Variant::Fixed) => {
                    Box::new(move |b, x, y, _| q31::logistic_with(b, x, ib, y))
                }
                (Op::Tanh, Variant::Fixed) => {
                    Box::new(move |b, x, y, _| q31::tanh_with(b, x, ib, y))
                }
                _ => return Err(no_case(op, variant)),
            })
        },
    )
}

/// The float kernels (`qneon::f32`, `qneon::loss`), method "float".
fn f32_cases<'a>() -> Result<Vec<Case<'a, f32>>, String> {
    use qneon::f32 as qf;
    cases_of(
        Dtype::F32,
        |op, variant| -> Result<Kernel<'a, f32>, String> {
            if variant != Variant::Float {
                return Err(no_case(op, variant));
            }
            Ok(match op {
                Op::Softmax => Box::new(qf::softmax_with),
                Op::SoftmaxOnline => Box::new(|b, x, y, r| {
                    qf::softmax_variant(qf::SoftmaxVariant::Online, b, x, y, r)
                }),
                Op::LogSoftmax => Box::new(qf::log_softmax_with),
                Op::Sigmoid => Box::new(|b, x, y, _| qf::sigmoid_with(b, x, y)),
                Op::Tanh => Box::new(|b, x, y, _| qf::tanh_with(b, x, y)),
                Op::CrossEntropy => cross_entropy_kernel(false),
                Op::CrossEntropyBackward => cross_entropy_kernel(true),
                _ => return Err(no_case(op, variant)),
            })
        },
    )
}

/// `qneon::loss::CrossEntropy` on rows of `row_len` classes, reduction sum,
/// each row's target a fixed function of its index: the forward pass (the
/// loss into `y[0]`) or the backward pass (the gradient into `y`, from the
/// forward's saved values, computed once per input outside the count's
/// repetitions' difference). Targets and saved values are kept between
/// calls, so a repetition allocates nothing.
fn cross_entropy_kernel<'a>(backward: bool) -> Kernel<'a, f32> {
    use qneon::loss::{CrossEntropy, LogSumExp, Reduction};
    use std::cell::RefCell;
    struct State {
        key: (usize, usize, usize),
        targets: Vec<i64>,
        saved: Vec<LogSumExp>,
    }
    let state = RefCell::new(State {
        key: (0, 0, 0),
        targets: Vec::new(),
        saved: Vec::new(),
    });
    Box::new(move |b, x, y, row_len| {
        let ce = CrossEntropy::new(row_len)?
            .reduction(Reduction::Sum)
            .backend(b)?;
        let rows = x.len() / row_len;
        let mut st = state.borrow_mut();
        let key = (x.as_ptr() as usize, x.len(), row_len);
        if st.key != key {
            st.targets = (0..rows).map(|r| ((r * 7919) % row_len) as i64).collect();
            st.saved = vec![LogSumExp::default(); rows];
            let State { targets, saved, .. } = &mut *st;
            ce.forward(x, targets, 1, &mut y[..1], Some(saved))?;
            st.key = key;
        }
        if backward {
            ce.backward(x, &st.targets, 1, &st.saved, &[1.0], y)
        } else {
            ce.forward(x, &st.targets, 1, &mut y[..1], None)
        }
    })
}

/// The cases `--filter` and the shape select.
pub(crate) fn select<'a, T>(
    args: &Args,
    shape: &Shape,
    dtype: &str,
    cases: Vec<Case<'a, T>>,
) -> Vec<Case<'a, T>> {
    cases
        .into_iter()
        .filter(|c| shape.row_ops || !c.row_wise)
        .filter(|c| {
            args.filter
                .as_deref()
                .is_none_or(|f| filter_matches(f, c.op, dtype, c.method))
        })
        .collect()
}

/// The int8 element-wise binary ops (`add`, `sub`, `mul`), method
/// `single` or `double` (the rounding), in three forms: same-shape (both
/// operands the input), `_row` (the input plus a constant 128-element row
/// repeated down it, as MobileBert's NoNorm gamma and beta: one
/// `Operand::Row`, as the interpreter's broadcast walk passes it; every
/// shape's length is a multiple of 128) and `_scalar` (the input and one
/// repeated value).
fn binary_kernel<'a>(op: Op, rounding: Rounding) -> Result<Kernel<'a, i8>, String> {
    use qneon::{Add, FusedActivation, Mul, Operand, Sub};
    const ROW: usize = 128;
    let a = input_quant::<i8>();
    let b = QuantParams::new(0.05, 3);
    let add_out = QuantParams::new(0.15, -2);
    let mul_out = QuantParams::new(0.02, 1);
    let none = FusedActivation::None;
    let row: Vec<i8> = (0..ROW)
        .map(|i| (i as i32 * 37 % 256 - 128) as i8)
        .collect();
    let fail = |e: Error| format!("binary {}: {e}", rounding.name());
    let add = || Add::new(a, b, add_out, none, rounding).map_err(fail);
    let mul = || Mul::new(a, b, mul_out, none, rounding).map_err(fail);
    Ok(match op {
        Op::Add => {
            let add = add()?;
            Box::new(move |bk, x, y, _| add.run_with(bk, x, x, y))
        }
        Op::AddRow => {
            let add = add()?;
            Box::new(move |bk, x, y, _| {
                add.run_operands(bk, Operand::Slice(x), Operand::Row(&row), y)
            })
        }
        Op::AddScalar => {
            let add = add()?;
            Box::new(move |bk, x, y, _| {
                add.run_operands(bk, Operand::Slice(x), Operand::Scalar(5), y)
            })
        }
        Op::Sub => {
            let sub = Sub::new(a, b, add_out, none, rounding).map_err(fail)?;
            Box::new(move |bk, x, y, _| sub.run_with(bk, x, x, y))
        }
        Op::Mul => {
            let mul = mul()?;
            Box::new(move |bk, x, y, _| mul.run_with(bk, x, x, y))
        }
        Op::MulRow => {
            let mul = mul()?;
            Box::new(move |bk, x, y, _| {
                mul.run_operands(bk, Operand::Slice(x), Operand::Row(&row), y)
            })
        }
        Op::MulScalar => {
            let mul = mul()?;
            Box::new(move |bk, x, y, _| {
                mul.run_operands(bk, Operand::Slice(x), Operand::Scalar(5), y)
            })
        }
        _ => return Err(no_case(op, Variant::Rounding(rounding))),
    })
}
