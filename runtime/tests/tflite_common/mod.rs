//! Shared by the `.tflite` tests: the models' manifests and running a case.

#![allow(dead_code)]

pub mod flat;

use std::path::{Path, PathBuf};

use qneon_runtime::interp::{Interpreter, Options};
use qneon_runtime::npy::NpyArray;
use serde_json::Value;

pub fn models_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../models")
}

pub fn manifest(path: &str) -> Value {
    let text = std::fs::read_to_string(models_dir().join(path)).expect("manifest");
    serde_json::from_str(&text).expect("manifest JSON")
}

pub fn read_model(path: &str) -> qneon_tflite::ModelBytes {
    qneon_tflite::ModelBytes::read(models_dir().join(path), 1 << 30).expect("model file")
}

pub fn npy(path: &str) -> NpyArray {
    NpyArray::read(&models_dir().join(path)).expect("npy")
}

/// Runs one `run` of a case (inputs by signature name -> tensor name) and
/// returns, per signature output, (reference bytes by ref name, our bytes).
pub fn run_case(
    interpreter: &mut Interpreter<'_>,
    signature: &Value,
    run: &Value,
) -> Vec<(String, Vec<u8>, Value)> {
    let tensor_of = |list: &str, name: &str| -> String {
        signature[list]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["name"] == name)
            .unwrap()["tensor"]
            .as_str()
            .unwrap()
            .to_string()
    };
    for (name, file) in run["inputs"].as_object().unwrap() {
        let tensor = tensor_of("inputs", name);
        let position = interpreter
            .inputs()
            .iter()
            .position(|t| t.name == tensor)
            .expect("input tensor");
        let array = npy(file.as_str().unwrap());
        interpreter
            .set_input(position, &array.data)
            .expect("set input");
    }
    interpreter.invoke().expect("invoke");
    let mut results = Vec::new();
    for (name, refs) in run["outputs"].as_object().unwrap() {
        let tensor = tensor_of("outputs", name);
        let position = interpreter
            .outputs()
            .iter()
            .position(|t| t.name == tensor)
            .expect("output tensor");
        let ours = interpreter.output(position).unwrap().to_vec();
        results.push((name.clone(), ours, refs.clone()));
    }
    results
}

pub fn options(rounding: qneon_runtime::interp::Rounding, method: qneon::Method) -> Options {
    Options {
        rounding,
        softmax_method: method,
        kernels: qneon_runtime::interp::TfliteKernels::matching(method),
        backend: qneon::Backend::Scalar,
        memory_budget: Some(1 << 30),
        threshold: None,
        threads: 1,
    }
}
