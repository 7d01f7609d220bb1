//! The activation kernels and the cross-entropy on numpy arrays, for
//! people who want the math without a model: `qneon.softmax`,
//! `log_softmax`, `logistic`, `tanh`, `cross_entropy`.
//!
//! Input arrays are read in place (`qneon/__init__.py` makes them
//! C-contiguous with the class axis last, which copies nothing when they
//! already are); the output is one new array. Quantized outputs take
//! TFLite's fixed output quantization of each op (see [`output_params`]).
//! The kernels run without the GIL.

use numpy::{Element, PyArrayDyn, PyArrayMethods, PyReadonlyArrayDyn, PyUntypedArrayMethods};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use qneon::loss::{CrossEntropy, Reduction};
use qneon::{Backend, LogSoftmax, Logistic, Method, QuantElem, QuantParams, Softmax, Tanh};

/// Which activation.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Op {
    Softmax,
    LogSoftmax,
    Logistic,
    Tanh,
}

/// TFLite's output quantization of `op` for elements of `T` (the only one
/// its kernels accept): softmax and logistic `[0, 1)` in steps of 1/256
/// (int16: 1/32768), tanh `[-1, 1)` in steps of 1/128, log-softmax
/// `[-16, 0]` in steps of 16/256.
fn output_params<T: QuantElem>(op: Op) -> QuantParams {
    let (min, wide) = (T::MIN, T::MAX - T::MIN > 255);
    match (op, wide) {
        (Op::Softmax | Op::Logistic, false) => QuantParams::new(1.0 / 256.0, min),
        (Op::Tanh, false) => QuantParams::new(1.0 / 128.0, if min == 0 { 128 } else { 0 }),
        (Op::LogSoftmax, _) => QuantParams::new(16.0 / 256.0, T::MAX),
        (_, true) => QuantParams::new(1.0 / 32768.0, 0),
    }
}

fn method_of(name: &str) -> PyResult<Method> {
    name.parse::<Method>()
        .map_err(|e| PyValueError::new_err(format!("method {name:?}: {e}")))
}

fn backend_of(name: Option<&str>) -> PyResult<Backend> {
    match name {
        None => Ok(Backend::best()),
        Some(name) => name
            .parse::<Backend>()
            .map_err(|e| PyValueError::new_err(format!("backend {name:?}: {e}"))),
    }
}

fn kernel_error(op: &str, e: qneon::Error) -> PyErr {
    PyValueError::new_err(format!("{op}: {e}"))
}

/// The facts every call carries.
struct Call<'a> {
    op: Op,
    name: &'static str,
    scale: Option<f32>,
    zero_point: Option<i32>,
    beta: f32,
    method: &'a str,
    backend: Option<&'a str>,
}

/// A new C-contiguous array of `shape`, written by `fill` through its
/// slice (zeros first: numpy hands out no uninitialised memory).
fn new_array<'py, T: Element>(
    py: Python<'py>,
    shape: &[usize],
    fill: impl FnOnce(&mut [T]) -> PyResult<()>,
) -> PyResult<Bound<'py, PyArrayDyn<T>>> {
    let out = PyArrayDyn::<T>::zeros(py, shape, false);
    fill(out.readwrite().as_slice_mut()?)?;
    Ok(out)
}

/// The length of the rows the activations run along: the last axis (a
/// 0-d array is one row of one).
fn row_len_of(shape: &[usize]) -> usize {
    shape.last().copied().unwrap_or(1).max(1)
}

/// Runs `call` on a quantized array of `T`, rows along the last axis.
fn run_quantized<'py, T: QuantElem + Element + Send + Sync>(
    py: Python<'py>,
    x: PyReadonlyArrayDyn<'py, T>,
    call: &Call<'_>,
) -> PyResult<Bound<'py, PyArrayDyn<T>>> {
    let (Some(scale), Some(zero_point)) = (call.scale, call.zero_point) else {
        return Err(PyValueError::new_err(format!(
            "{}: a quantized input needs its scale and zero_point",
            call.name
        )));
    };
    let input = QuantParams::new(scale, zero_point);
    let output = output_params::<T>(call.op);
    let method = method_of(call.method)?;
    let backend = backend_of(call.backend)?;
    let row_len = row_len_of(x.shape());
    let src = x.as_slice()?;
    let (op, beta) = (call.op, call.beta);
    new_array(py, x.shape(), |dst| {
        py.detach(|| -> qneon::Result<()> {
            match op {
                Op::Softmax => Softmax::<T>::new(input, beta, output, method)?
                    .run_with(backend, src, dst, row_len),
                Op::LogSoftmax => LogSoftmax::<T>::new(input, output, method)?
                    .run_with(backend, src, dst, row_len),
                Op::Logistic => {
                    Logistic::<T>::new(input, output, method)?.run_with(backend, src, dst)
                }
                Op::Tanh => Tanh::<T>::new(input, output, method)?.run_with(backend, src, dst),
            }
        })
        .map_err(|e| kernel_error(call.name, e))
    })
}

/// Runs `call` on a float32 array (the `f32` kernels; `beta` scales the
/// softmax's input).
fn run_f32<'py>(
    py: Python<'py>,
    x: PyReadonlyArrayDyn<'py, f32>,
    call: &Call<'_>,
) -> PyResult<Bound<'py, PyArrayDyn<f32>>> {
    let backend = backend_of(call.backend)?;
    let row_len = row_len_of(x.shape());
    let src = x.as_slice()?;
    let (op, beta) = (call.op, call.beta);
    new_array(py, x.shape(), |dst| {
        py.detach(|| -> qneon::Result<()> {
            match op {
                Op::Softmax if beta != 1.0 => {
                    let scaled: Vec<f32> = src.iter().map(|v| v * beta).collect();
                    qneon::f32::softmax_with(backend, &scaled, dst, row_len)
                }
                Op::Softmax => qneon::f32::softmax_with(backend, src, dst, row_len),
                Op::LogSoftmax => qneon::f32::log_softmax_with(backend, src, dst, row_len),
                Op::Logistic => qneon::f32::sigmoid_with(backend, src, dst),
                Op::Tanh => qneon::f32::tanh_with(backend, src, dst),
            }
        })
        .map_err(|e| kernel_error(call.name, e))
    })
}

/// Dispatches on the array's dtype.
fn activation<'py>(
    py: Python<'py>,
    x: &Bound<'py, PyAny>,
    call: Call<'_>,
) -> PyResult<Bound<'py, PyAny>> {
    if let Ok(a) = x.extract::<PyReadonlyArrayDyn<'py, i8>>() {
        return Ok(run_quantized(py, a, &call)?.into_any());
    }
    if let Ok(a) = x.extract::<PyReadonlyArrayDyn<'py, u8>>() {
        return Ok(run_quantized(py, a, &call)?.into_any());
    }
    if let Ok(a) = x.extract::<PyReadonlyArrayDyn<'py, i16>>() {
        return Ok(run_quantized(py, a, &call)?.into_any());
    }
    if let Ok(a) = x.extract::<PyReadonlyArrayDyn<'py, f32>>() {
        return Ok(run_f32(py, a, &call)?.into_any());
    }
    Err(PyTypeError::new_err(format!(
        "{}: expected a numpy array of int8, uint8, int16 or float32",
        call.name
    )))
}

#[pyfunction]
#[pyo3(signature = (x, scale=None, zero_point=None, beta=1.0, method="fixed", backend=None))]
fn softmax<'py>(
    py: Python<'py>,
    x: &Bound<'py, PyAny>,
    scale: Option<f32>,
    zero_point: Option<i32>,
    beta: f32,
    method: &str,
    backend: Option<&str>,
) -> PyResult<Bound<'py, PyAny>> {
    let call = Call {
        op: Op::Softmax,
        name: "softmax",
        scale,
        zero_point,
        beta,
        method,
        backend,
    };
    activation(py, x, call)
}

/// The `#[pyfunction]` of an activation without a `beta` (all but
/// softmax): `name(x, scale=None, zero_point=None, method="fixed",
/// backend=None)`, named in Python and in its errors as in Rust.
macro_rules! activation_without_beta {
    ($name:ident, $op:expr) => {
        #[pyfunction]
        #[pyo3(signature = (x, scale=None, zero_point=None, method="fixed", backend=None))]
        fn $name<'py>(
            py: Python<'py>,
            x: &Bound<'py, PyAny>,
            scale: Option<f32>,
            zero_point: Option<i32>,
            method: &str,
            backend: Option<&str>,
        ) -> PyResult<Bound<'py, PyAny>> {
            let call = Call {
                op: $op,
                name: stringify!($name),
                scale,
                zero_point,
                beta: 1.0,
                method,
                backend,
            };
            activation(py, x, call)
        }
    };
}

activation_without_beta!(log_softmax, Op::LogSoftmax);
activation_without_beta!(logistic, Op::Logistic);
activation_without_beta!(tanh, Op::Tanh);

/// The cross-entropy of quantized `logits` (int8 or uint8) into `dst`.
#[allow(clippy::too_many_arguments)]
fn cross_entropy_quantized<T: QuantElem + Element + Sync>(
    py: Python<'_>,
    ce: CrossEntropy<'_>,
    logits: PyReadonlyArrayDyn<'_, T>,
    quant: Option<QuantParams>,
    targets: &[i64],
    inner: usize,
    dst: &mut [f32],
) -> PyResult<()> {
    let error = |e| kernel_error("cross_entropy", e);
    let quant = quant.ok_or_else(|| {
        PyValueError::new_err("cross_entropy: quantized logits need scale and zero_point")
    })?;
    let q = ce.quantized::<T>(quant).map_err(error)?;
    let src = logits.as_slice()?;
    py.detach(|| q.forward(src, targets, inner, dst))
        .map_err(error)
}

/// The cross-entropy of `logits` (`[N, C, inner]`, C-contiguous) against
/// `targets` (`[N * inner]` int64 class indices): every position's loss
/// for `reduction="none"`, else one value in a 1-element array.
#[pyfunction]
#[pyo3(signature = (logits, targets, classes, inner, scale=None, zero_point=None,
                    reduction="mean", ignore_index=-100, label_smoothing=0.0))]
#[allow(clippy::too_many_arguments)]
fn cross_entropy<'py>(
    py: Python<'py>,
    logits: &Bound<'py, PyAny>,
    targets: PyReadonlyArrayDyn<'py, i64>,
    classes: usize,
    inner: usize,
    scale: Option<f32>,
    zero_point: Option<i32>,
    reduction: &str,
    ignore_index: Option<i64>,
    label_smoothing: f32,
) -> PyResult<Bound<'py, PyArrayDyn<f32>>> {
    let reduction = match reduction {
        "none" => Reduction::None,
        "sum" => Reduction::Sum,
        "mean" => Reduction::Mean,
        other => {
            return Err(PyValueError::new_err(format!(
                "reduction {other:?}: expected \"none\", \"sum\" or \"mean\""
            )))
        }
    };
    let error = |e| kernel_error("cross_entropy", e);
    let ce = CrossEntropy::new(classes)
        .map_err(error)?
        .reduction(reduction)
        .ignore_index(ignore_index)
        .label_smoothing(label_smoothing)
        .map_err(error)?;
    let targets = targets.as_slice()?;
    let len = if reduction == Reduction::None {
        targets.len()
    } else {
        1
    };
    new_array(py, &[len], |dst| {
        let quant =
            match (scale, zero_point) {
                (Some(s), Some(z)) => Some(QuantParams::new(s, z)),
                (None, None) => None,
                _ => return Err(PyValueError::new_err(
                    "cross_entropy: give both scale and zero_point (quantized logits) or neither",
                )),
            };
        if let Ok(a) = logits.extract::<PyReadonlyArrayDyn<'py, f32>>() {
            let src = a.as_slice()?;
            py.detach(|| ce.forward(src, targets, inner, dst, None))
                .map_err(error)
        } else if let Ok(a) = logits.extract::<PyReadonlyArrayDyn<'py, i8>>() {
            cross_entropy_quantized(py, ce, a, quant, targets, inner, dst)
        } else if let Ok(a) = logits.extract::<PyReadonlyArrayDyn<'py, u8>>() {
            cross_entropy_quantized(py, ce, a, quant, targets, inner, dst)
        } else {
            Err(PyTypeError::new_err(
                "cross_entropy: expected logits of float32, int8 or uint8",
            ))
        }
    })
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(softmax, m)?)?;
    m.add_function(wrap_pyfunction!(log_softmax, m)?)?;
    m.add_function(wrap_pyfunction!(logistic, m)?)?;
    m.add_function(wrap_pyfunction!(tanh, m)?)?;
    m.add_function(wrap_pyfunction!(cross_entropy, m)?)?;
    Ok(())
}
