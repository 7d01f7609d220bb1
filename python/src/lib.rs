//! `qneon._qneon`, the extension module of the `qneon` Python package:
//! the `.tflite` interpreter ([`interpreter::Model`], wrapped by
//! `qneon/interpreter.py` into TFLite's `Interpreter`) and the activation
//! kernels on numpy arrays ([`kernels`]).

#![forbid(unsafe_code)]

mod interpreter;
mod kernels;
mod options;
mod signatures;

use pyo3::prelude::*;

#[pymodule]
fn _qneon(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<interpreter::Model>()?;
    kernels::register(m)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
