//! `qneon inspect`: the model's inputs, outputs and operators with their
//! tensors, the arena plan, and every operator qneon cannot run, with why.

use std::collections::BTreeMap;

use qneon::Backend;
use qneon_runtime::interp::{Interpreter, TensorInfo};

use crate::args::{read_model, InspectArgs};

/// One line for tensor `t`: index, name, dtype, shape, quantization.
fn describe(t: &TensorInfo) -> String {
    let mut s = format!("#{} {} {} {:?}", t.index, t.name, t.dtype.name(), t.shape);
    if let Some((scale, zero_point)) = t.per_tensor() {
        s += &format!(" scale {scale} zp {zero_point}");
    } else if !t.scales.is_empty() {
        s += &format!(
            " {} scales along axis {}",
            t.scales.len(),
            t.axis.unwrap_or(0)
        );
    }
    if t.variable {
        s += " variable";
    }
    if t.constant {
        s += " const";
    }
    s
}

/// Runs `qneon inspect`; the error is the message for stderr.
pub(crate) fn inspect(args: InspectArgs) -> Result<(), String> {
    let options = args.load.options(Backend::best());
    let bytes = read_model(&args.model, options.memory_budget.unwrap_or(usize::MAX))?;
    let analysis = Interpreter::analyze(bytes.as_bytes(), options)
        .map_err(|e| format!("{}: {e}", args.model.display()))?;
    let t = &analysis.tensors;
    println!(
        "{}: {} operators, {} tensors",
        args.model.display(),
        analysis.reports.len(),
        t.len()
    );
    println!("inputs:");
    for &i in &analysis.inputs {
        println!("  {}", describe(&t[i]));
    }
    println!("outputs:");
    for &i in &analysis.outputs {
        println!("  {}", describe(&t[i]));
    }
    println!("operators:");
    for (report, node) in analysis.reports.iter().zip(&analysis.nodes) {
        let status = match &report.status {
            Ok(()) if node.aliased => "ok (aliased, no copy)".to_string(),
            Ok(()) => match (node.folded_into, &node.arithmetic) {
                (Some(conv), _) => format!("ok (folded into operator {conv}'s padding, no copy)"),
                (None, Some(arithmetic)) => {
                    format!("ok, {} {}, {arithmetic}", node.work, node.unit)
                }
                (None, None) => format!("ok, {} {}", node.work, node.unit),
            },
            Err(e) => format!("CANNOT RUN: {e}"),
        };
        // The thread plan, with --threads above 1.
        let status = if args.load.threads > 1 {
            let by = if node.split_by_columns {
                " (by output channels)"
            } else {
                ""
            };
            format!("{status}; threads {}{by}", node.threads)
        } else {
            status
        };
        match &node.fused {
            Some(fused) => println!("  {} {} -> {fused}: {status}", report.index, report.op),
            None => println!("  {} {}: {status}", report.index, report.op),
        }
        for i in node.inputs.iter().flatten() {
            println!("      in  {}", describe(&t[*i]));
        }
        for &o in node.outputs.iter().flatten() {
            if let Some(tensor) = t.get(o) {
                println!("      out {}", describe(tensor));
            }
        }
    }
    let plan = &analysis.plan;
    println!(
        "arena plan: {} bytes for {} buffers (sum of non-constant tensors and scratch {} bytes, {:.1}x)",
        plan.arena_bytes,
        plan.buffers.len(),
        plan.unshared_bytes(),
        plan.unshared_bytes() as f64 / plan.arena_bytes.max(1) as f64
    );
    for (i, t) in t.iter().enumerate() {
        if let Some(Some(b)) = analysis.buffers.get(i) {
            let r = plan.range(*b);
            let live = &plan.buffers[*b];
            println!(
                "  #{i} {}: bytes {}..{} live ops {}..={}",
                t.name, r.start, r.end, live.first, live.last
            );
        }
    }
    let failed: Vec<_> = analysis
        .reports
        .iter()
        .filter(|r| r.status.is_err())
        .collect();
    if failed.is_empty() {
        println!(
            "qneon can run every operator (--rounding, --softmax and --kernels {} as given)",
            options.kernels.name()
        );
    } else {
        let mut by_op: BTreeMap<&str, usize> = BTreeMap::new();
        for r in &failed {
            *by_op.entry(&r.op).or_default() += 1;
        }
        println!("qneon cannot run {} operators: {by_op:?}", failed.len());
    }
    Ok(())
}
