//! `qneon._qneon.Model`: one planned model and its session, the engine
//! under `qneon.interpreter.Interpreter` (which keeps the numpy side:
//! details dicts, dtype and shape checks, tensor views).
//!
//! Load errors are `ValueError`s (TFLite raises one for a file it cannot
//! open or build); run errors `RuntimeError`s. The message is the
//! runtime's, which names the op and the tensor.

use std::path::PathBuf;
use std::sync::Arc;

use numpy::{PyReadonlyArray1, PyReadwriteArray1};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use qneon_runtime::interp::{Plan, Session};
use qneon_tflite::ModelBytes;

use crate::options::{load_options, LoadArgs};
use crate::signatures::{read_signatures, Signature};

/// A file larger than this is refused before it is read (the runtime's
/// budget bounds what it allocates; the file itself is only mapped into
/// memory once).
const MAX_FILE_BYTES: usize = 1 << 32;

/// One tensor as Python's details dicts need it: index, name, dtype
/// name (TFLite's, `"INT8"`), shape, shape signature, scales, zero points
/// and quantized dimension.
type TensorRow = (
    usize,
    String,
    &'static str,
    Vec<usize>,
    Vec<i64>,
    Vec<f32>,
    Vec<i64>,
    usize,
);

/// A signature as Python sees it: key, subgraph, inputs and outputs as
/// `(name, tensor index)`.
type SignatureRow = (String, usize, Vec<(String, usize)>, Vec<(String, usize)>);

#[pyclass(module = "qneon._qneon")]
pub struct Model {
    plan: Arc<Plan<'static>>,
    /// Made by `allocate_tensors`: an invoke before it is an error, as in
    /// TFLite.
    session: Option<Session<'static>>,
    shape_signatures: Vec<Option<Vec<i32>>>,
    signatures: Vec<Signature>,
}

#[pymethods]
impl Model {
    #[new]
    #[pyo3(signature = (model_path=None, model_content=None, *, kernels="xnnpack", softmax=None,
                        rounding="single", backend=None, memory_budget=None, num_threads=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        model_path: Option<PathBuf>,
        model_content: Option<&[u8]>,
        kernels: &str,
        softmax: Option<&str>,
        rounding: &str,
        backend: Option<&str>,
        memory_budget: Option<usize>,
        num_threads: Option<usize>,
    ) -> PyResult<Model> {
        let options = load_options(&LoadArgs {
            kernels,
            softmax,
            rounding,
            backend,
            memory_budget,
            num_threads,
        })?;
        let bytes = match (model_path, model_content) {
            (Some(path), None) => ModelBytes::read(&path, MAX_FILE_BYTES).map_err(|e| {
                PyValueError::new_err(format!("Could not open '{}': {e}", path.display()))
            })?,
            (None, Some(content)) => ModelBytes::copy_from(content),
            _ => {
                return Err(PyValueError::new_err(
                    "give exactly one of model_path and model_content",
                ))
            }
        };
        let bytes = Arc::new(bytes);
        let plan = Plan::from_shared(Arc::clone(&bytes), options)
            .map_err(|e| PyValueError::new_err(format!("qneon cannot load the model: {e}")))?;
        // The plan has verified the file, so these reads succeed; should
        // one not, the model simply has no signatures or signature shapes.
        let model = qneon_tflite::Model::parse(bytes.as_bytes()).ok();
        let shape_signatures = plan
            .tensors()
            .iter()
            .map(|t| {
                model.as_ref().and_then(|m| {
                    m.main_subgraph()
                        .tensors()
                        .get(t.index)
                        .and_then(|t| t.shape_signature().map(<[i32]>::to_vec))
                })
            })
            .collect();
        let signatures = read_signatures(bytes.as_bytes()).unwrap_or_default();
        Ok(Model {
            plan: Arc::new(plan),
            session: None,
            shape_signatures,
            signatures,
        })
    }

    /// Every tensor of the main subgraph, as [`TensorRow`]s.
    fn tensors(&self) -> Vec<TensorRow> {
        self.plan
            .tensors()
            .iter()
            .zip(&self.shape_signatures)
            .map(|(t, signature)| {
                let shape_signature = match signature {
                    Some(s) => s.iter().map(|&d| i64::from(d)).collect(),
                    None => t.shape.iter().map(|&d| d as i64).collect(),
                };
                (
                    t.index,
                    t.name.clone(),
                    t.dtype.name(),
                    t.shape.clone(),
                    shape_signature,
                    t.scales.clone(),
                    t.zero_points.clone(),
                    t.axis.unwrap_or(0),
                )
            })
            .collect()
    }

    /// The model's input tensor indices, in order.
    fn inputs(&self) -> Vec<usize> {
        self.plan.input_tensors().to_vec()
    }

    /// The model's output tensor indices, in order.
    fn outputs(&self) -> Vec<usize> {
        self.plan.output_tensors().to_vec()
    }

    /// The signature defs, as [`SignatureRow`]s.
    fn signatures(&self) -> Vec<SignatureRow> {
        self.signatures
            .iter()
            .map(|s| {
                (
                    s.key.clone(),
                    s.subgraph,
                    s.inputs.clone(),
                    s.outputs.clone(),
                )
            })
            .collect()
    }

    /// The kernel set, method, rounding and backend it runs with.
    fn options(&self) -> (String, String, String, String) {
        let o = self.plan.options();
        (
            o.kernels.name().to_string(),
            o.softmax_method.name().to_string(),
            o.rounding.name().to_string(),
            o.backend.name().to_string(),
        )
    }

    /// Makes the session (arena and variable state), once.
    fn allocate(&mut self) {
        if self.session.is_none() {
            self.session = Some(Session::new(Arc::clone(&self.plan)));
        }
    }

    fn is_allocated(&self) -> bool {
        self.session.is_some()
    }

    /// Copies `data` (the input's bytes) into model input `position`.
    fn set_input(&mut self, position: usize, data: PyReadonlyArray1<'_, u8>) -> PyResult<()> {
        let session = self.session_mut()?;
        let bytes = data
            .as_slice()
            .map_err(|e| PyValueError::new_err(format!("input {position}: {e}")))?;
        session
            .set_input(position, bytes)
            .map_err(|e| PyValueError::new_err(e.to_string()))
    }

    /// Runs the model, without the GIL: other Python threads (and other
    /// interpreters) run meanwhile.
    fn invoke(&mut self, py: Python<'_>) -> PyResult<()> {
        let session = self.session_mut()?;
        py.detach(|| session.invoke())
            .map_err(|e| PyRuntimeError::new_err(e.to_string()))
    }

    /// Copies tensor `t`'s bytes into `out`; `False` when the tensor has
    /// no data to read (unused, or never written).
    fn read_tensor(&self, t: usize, mut out: PyReadwriteArray1<'_, u8>) -> PyResult<bool> {
        let Some(session) = &self.session else {
            return Ok(false);
        };
        let Some(data) = session.tensor_data(t) else {
            return Ok(false);
        };
        let out = out
            .as_slice_mut()
            .map_err(|e| PyValueError::new_err(format!("tensor {t}: {e}")))?;
        if out.len() != data.len() {
            return Err(PyValueError::new_err(format!(
                "tensor {t} has {} bytes, the buffer {}",
                data.len(),
                out.len()
            )));
        }
        out.copy_from_slice(data);
        Ok(true)
    }

    /// Sets every variable tensor back to its initial value.
    fn reset_variables(&mut self) -> PyResult<()> {
        self.session_mut()?.reset_variables();
        Ok(())
    }
}

impl Model {
    fn session_mut(&mut self) -> PyResult<&mut Session<'static>> {
        self.session.as_mut().ok_or_else(|| {
            PyRuntimeError::new_err(
                "Invoke called on model that is not ready: call allocate_tensors() first",
            )
        })
    }
}
