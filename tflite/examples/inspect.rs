//! Prints what a `.tflite` file holds: operator codes, then per subgraph its
//! tensors (type, shape, size, quantization) and operators (inputs, outputs,
//! options), then how often each operator occurs.
//!
//! `cargo run -p qneon-tflite --example inspect -- model.tflite [more.tflite ...]`

use std::collections::BTreeMap;
use std::process::ExitCode;

use qneon_tflite::{Model, ModelBytes, ParseOptions};

fn inspect(path: &str) -> Result<(), Box<dyn std::error::Error>> {
    let bytes = ModelBytes::read(path, usize::MAX)?;
    let model = Model::parse_with(bytes.as_bytes(), &ParseOptions::unlimited())?;
    println!(
        "{path}: {} bytes, schema version {}",
        bytes.as_bytes().len(),
        model.version()
    );
    if let Some(description) = model.description() {
        println!("description: {description}");
    }
    for entry in model.metadata() {
        println!("metadata {:?}: {} bytes", entry.name, entry.data.len());
    }
    println!("operator codes:");
    for (index, code) in model.operator_codes().iter().enumerate() {
        println!("  {index}: {} v{}", code.op, code.version);
    }
    let mut histogram: BTreeMap<String, usize> = BTreeMap::new();
    for subgraph in model.subgraphs() {
        println!(
            "subgraph {} {:?}: inputs {:?}, outputs {:?}",
            subgraph.index(),
            subgraph.name(),
            subgraph.inputs(),
            subgraph.outputs()
        );
        println!("  tensors:");
        for tensor in subgraph.tensors() {
            println!("    {tensor}");
        }
        println!("  operators:");
        for operator in subgraph.operators() {
            println!("    {operator}");
            *histogram.entry(operator.op().to_string()).or_default() += 1;
        }
    }
    println!(
        "non-constant tensors: {} bytes declared",
        model.non_constant_bytes()
    );
    println!("operator histogram:");
    for (op, count) in &histogram {
        println!("  {count:6}  {op}");
    }
    Ok(())
}

fn main() -> ExitCode {
    let paths: Vec<String> = std::env::args().skip(1).collect();
    if paths.is_empty() {
        eprintln!("usage: inspect MODEL.tflite [MORE.tflite ...]");
        return ExitCode::FAILURE;
    }
    let mut status = ExitCode::SUCCESS;
    for path in &paths {
        if let Err(error) = inspect(path) {
            eprintln!("{path}: {error}");
            status = ExitCode::FAILURE;
        }
    }
    status
}
