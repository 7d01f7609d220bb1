//! The rows: every (op, type, method) case, its input data, and the
//! `--filter` selection.

use qneon::{
    q31, Backend, Error, LogSoftmax, Logistic, Method, QuantElem, QuantParams, Softmax, Tanh,
};
use std::sync::atomic::{AtomicU32, Ordering};

use crate::args::{Args, Shape};

/// Every method, in the order rows are printed.
pub(crate) const METHODS: [Method; 4] = [
    Method::FixedPoint,
    Method::Lut,
    Method::LutFixedPoint,
    Method::DequantF32,
];

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

/// Adds a case made by `new()`, skipping methods the op does not implement
/// for this type; any other error is a bug in this program's parameters.
pub(crate) fn add_case<'a, T: 'a>(
    cases: &mut Vec<Case<'a, T>>,
    (op, dtype, method, row_wise): (&'static str, &str, Method, bool),
    made: qneon::Result<Kernel<'a, T>>,
) -> Result<(), String> {
    match made {
        Ok(kernel) => {
            cases.push(Case {
                op,
                method: method.name(),
                row_wise,
                kernel,
            });
            Ok(())
        }
        Err(Error::Unsupported { .. }) => Ok(()),
        Err(e) => Err(format!("{op} {dtype} {}: {e}", method.name())),
    }
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

/// Every op and method of a quantized type (the output quantization TFLite
/// requires for each op).
pub(crate) fn quant_cases<'a, T: QuantElem>() -> Result<Vec<Case<'a, T>>, String> {
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
    let mut cases = Vec::new();
    for method in METHODS {
        add_case(
            &mut cases,
            ("softmax", T::NAME, method, true),
            Softmax::<T>::new(q_in, 1.0, softmax_out, method)
                .map(|op| Box::new(move |b, x: &[T], y: &mut [T], r| op.run_with(b, x, y, r)) as _),
        )?;
        add_case(
            &mut cases,
            ("log_softmax", T::NAME, method, true),
            LogSoftmax::<T>::new(q_in, log_softmax_out, method)
                .map(|op| Box::new(move |b, x: &[T], y: &mut [T], r| op.run_with(b, x, y, r)) as _),
        )?;
        add_case(
            &mut cases,
            ("logistic", T::NAME, method, false),
            Logistic::<T>::new(q_in, softmax_out, method)
                .map(|op| Box::new(move |b, x: &[T], y: &mut [T], _| op.run_with(b, x, y)) as _),
        )?;
        add_case(
            &mut cases,
            ("tanh", T::NAME, method, false),
            Tanh::<T>::new(q_in, tanh_out, method)
                .map(|op| Box::new(move |b, x: &[T], y: &mut [T], _| op.run_with(b, x, y)) as _),
        )?;
    }
    if T::NAME == "int16" {
        pot_scale_cases(&mut cases, softmax_out)?;
    }
    thresholded_cases(&mut cases, q_in, softmax_out)?;
    if T::NAME != "int16" {
        cases.push(Case {
            op: "cross_entropy",
            method: "table",
            row_wise: true,
            kernel: quantized_cross_entropy_kernel::<T>(q_in),
        });
    }
    Ok(cases)
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

/// The fused threshold ops on 8-bit types (`qneon::ThresholdedLogistic`,
/// `qneon::ThresholdedSoftmax`): the hits go to a buffer kept between calls
/// (sized on the first call, outside the count's repetitions' difference),
/// their number into `y[0]`; nothing else is written.
fn thresholded_cases<'a, T: QuantElem>(
    cases: &mut Vec<Case<'a, T>>,
    q_in: QuantParams,
    out: QuantParams,
) -> Result<(), String> {
    use qneon::{Hit, RowHit, ThresholdedLogistic, ThresholdedSoftmax};
    use std::cell::RefCell;
    if T::NAME == "int16" {
        return Ok(());
    }
    let count = |y: &mut [T], n: usize| {
        if let Some(first) = y.first_mut() {
            *first = T::from_i32((n as i32).clamp(0, T::MAX));
        }
    };
    for method in METHODS {
        let hits = RefCell::new(Vec::<Hit<T>>::new());
        add_case(
            cases,
            ("thresholded_logistic", T::NAME, method, false),
            ThresholdedLogistic::<T>::new(q_in, out, method, LOGISTIC_THRESHOLD).map(|op| {
                Box::new(move |b, x: &[T], y: &mut [T], _| {
                    let mut hits = hits.borrow_mut();
                    if hits.len() < x.len() {
                        hits.resize(x.len(), Hit::default());
                    }
                    count(y, op.run_with(b, x, &mut hits)?);
                    Ok(())
                }) as _
            }),
        )?;
        let hits = RefCell::new(Vec::<RowHit<T>>::new());
        add_case(
            cases,
            ("thresholded_softmax", T::NAME, method, true),
            ThresholdedSoftmax::<T>::new(q_in, 1.0, out, method, Some(SOFTMAX_THRESHOLD), None)
                .map(|op| {
                    Box::new(move |b, x: &[T], y: &mut [T], r| {
                        let mut hits = hits.borrow_mut();
                        if hits.len() < x.len() {
                            hits.resize(x.len(), RowHit::default());
                        }
                        count(y, op.run_with(b, x, r, &mut hits)?);
                        Ok(())
                    }) as _
                }),
        )?;
    }
    Ok(())
}

/// int16 logistic and tanh `Method::Lut` at input scale 2^-12, method
/// `lut-2^-12`: TFLite computes them in gemmlowp's 16-bit fixed point there
/// instead of interpolating its table (tanh also at 2^-11, the int16 rows'
/// default scale).
fn pot_scale_cases<'a, T: QuantElem>(
    cases: &mut Vec<Case<'a, T>>,
    out: QuantParams,
) -> Result<(), String> {
    let q_in = QuantParams::new(2f32.powi(-12), 0);
    let made: [(&'static str, qneon::Result<Kernel<'a, T>>); 2] = [
        (
            "logistic",
            Logistic::<T>::new(q_in, out, Method::Lut)
                .map(|op| Box::new(move |b, x: &[T], y: &mut [T], _| op.run_with(b, x, y)) as _),
        ),
        (
            "tanh",
            Tanh::<T>::new(q_in, out, Method::Lut)
                .map(|op| Box::new(move |b, x: &[T], y: &mut [T], _| op.run_with(b, x, y)) as _),
        ),
    ];
    for (op, kernel) in made {
        match kernel {
            Ok(kernel) => cases.push(Case {
                op,
                method: "lut-2^-12",
                row_wise: false,
                kernel,
            }),
            Err(Error::Unsupported { .. }) => {}
            Err(e) => return Err(format!("{op} {} lut-2^-12: {e}", T::NAME)),
        }
    }
    Ok(())
}

/// Raw Q31 kernels: input Q5.26.
pub(crate) const Q31_INTEGER_BITS: u32 = 5;

pub(crate) fn q31_cases<'a>() -> Vec<Case<'a, i32>> {
    let ib = Q31_INTEGER_BITS;
    let case = |op, row_wise, kernel: Kernel<'a, i32>| Case {
        op,
        method: "fixed",
        row_wise,
        kernel,
    };
    vec![
        case(
            "softmax",
            true,
            Box::new(move |b, x, y, r| q31::softmax_with(b, x, ib, y, r)),
        ),
        case(
            "logistic",
            false,
            Box::new(move |b, x, y, _| q31::logistic_with(b, x, ib, y)),
        ),
        case(
            "tanh",
            false,
            Box::new(move |b, x, y, _| q31::tanh_with(b, x, ib, y)),
        ),
    ]
}

/// The float kernels (`qneon::f32`), method "float".
pub(crate) fn f32_cases<'a>() -> Vec<Case<'a, f32>> {
    use qneon::f32 as qf;
    let case = |op, row_wise, kernel: Kernel<'a, f32>| Case {
        op,
        method: "float",
        row_wise,
        kernel,
    };
    vec![
        case("softmax", true, Box::new(qf::softmax_with)),
        case(
            "softmax_online",
            true,
            Box::new(|b, x, y, r| qf::softmax_variant(qf::SoftmaxVariant::Online, b, x, y, r)),
        ),
        case("log_softmax", true, Box::new(qf::log_softmax_with)),
        case(
            "sigmoid",
            false,
            Box::new(|b, x, y, _| qf::sigmoid_with(b, x, y)),
        ),
        case("tanh", false, Box::new(|b, x, y, _| qf::tanh_with(b, x, y))),
        case("cross_entropy", true, cross_entropy_kernel(false)),
        case("cross_entropy_bwd", true, cross_entropy_kernel(true)),
    ]
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
pub(crate) fn binary_cases<'a>() -> Result<Vec<Case<'a, i8>>, String> {
    use qneon::{Add, FusedActivation, Mul, Operand, Rounding, Sub};
    const ROW: usize = 128;
    let a = input_quant::<i8>();
    let b = QuantParams::new(0.05, 3);
    let add_out = QuantParams::new(0.15, -2);
    let mul_out = QuantParams::new(0.02, 1);
    let none = FusedActivation::None;
    let row: Vec<i8> = (0..ROW)
        .map(|i| (i as i32 * 37 % 256 - 128) as i8)
        .collect();
    let mut cases = Vec::new();
    for rounding in [Rounding::Single, Rounding::Double] {
        let fail = |e: Error| format!("binary {}: {e}", rounding.name());
        let add = Add::new(a, b, add_out, none, rounding).map_err(fail)?;
        let sub = Sub::new(a, b, add_out, none, rounding).map_err(fail)?;
        let mul = Mul::new(a, b, mul_out, none, rounding).map_err(fail)?;
        let case = |op, kernel: Kernel<'a, i8>| Case {
            op,
            method: rounding.name(),
            row_wise: false,
            kernel,
        };
        cases.push(case(
            "add",
            Box::new(move |bk, x, y, _| add.run_with(bk, x, x, y)),
        ));
        cases.push(case("add_row", {
            let row = row.clone();
            Box::new(move |bk, x, y, _| {
                add.run_operands(bk, Operand::Slice(x), Operand::Row(&row), y)
            })
        }));
        cases.push(case(
            "add_scalar",
            Box::new(move |bk, x, y, _| {
                add.run_operands(bk, Operand::Slice(x), Operand::Scalar(5), y)
            }),
        ));
        cases.push(case(
            "sub",
            Box::new(move |bk, x, y, _| sub.run_with(bk, x, x, y)),
        ));
        cases.push(case(
            "mul",
            Box::new(move |bk, x, y, _| mul.run_with(bk, x, x, y)),
        ));
        cases.push(case("mul_row", {
            let row = row.clone();
            Box::new(move |bk, x, y, _| {
                mul.run_operands(bk, Operand::Slice(x), Operand::Row(&row), y)
            })
        }));
        cases.push(case(
            "mul_scalar",
            Box::new(move |bk, x, y, _| {
                mul.run_operands(bk, Operand::Slice(x), Operand::Scalar(5), y)
            }),
        ));
    }
    Ok(cases)
}
