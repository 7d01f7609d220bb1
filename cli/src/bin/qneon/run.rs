//! `qneon run`: load, set the inputs, invoke `--reps` times, then print the
//! summary and the profile and write the outputs and the JSON report. With
//! a sequence of input files (`--input K=a.npy,b.npy`), one invoke per step
//! in order, the model's state carried from one to the next (reset every
//! `--reset-every` steps), and each step's outputs in `DIR/step<k>/`.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use qneon::Backend;
use qneon_runtime::interp::{Hits, Interpreter, NodeInfo, Profiler, TensorInfo, ThreadMarks};
use qneon_runtime::npy::NpyArray;
use serde_json::{json, Value};

use crate::args::{read_model, RunArgs};
use crate::inputs::{numpy_name, Sequence};
use crate::marker;

/// Times every node, `times[p]` accumulating the node at position `p`
/// (execution order), and brackets its kernel with the instruction-count
/// region markers of `regions[p]` (see `marker.rs`). The clock is read
/// once per node, at its end, outside the marked region (so counts per node
/// hold the kernel alone) and in a region of its own (so the invoke loop's
/// count holds the loop alone): a node's time runs from the end of the one
/// before (the first's from its start), so it includes the interpreter's
/// few hundred instructions of bookkeeping before the kernel.
struct Timer {
    started: Instant,
    times: Vec<Duration>,
    regions: Vec<u16>,
    position: usize,
}

impl Profiler for Timer {
    fn begin(&mut self, _node: &NodeInfo) {
        if self.position == 0 {
            marker::region(marker::PROFILER);
            self.started = Instant::now();
        }
        marker::region(self.regions[self.position]);
    }
    fn end(&mut self, _node: &NodeInfo) {
        // One clock read per node, counted apart from the invoke loop: the
        // next node's time starts here.
        marker::region(marker::PROFILER);
        let now = Instant::now();
        self.times[self.position] += now.duration_since(self.started);
        self.started = now;
        self.position += 1;
        marker::region(marker::BETWEEN);
    }
    fn thread_marks(&self) -> Option<&dyn ThreadMarks> {
        Some(self)
    }
}

/// With `--threads` above 1: every thread enters the node's region when it
/// starts its share of a split node and region 0 when it has finished it,
/// so that a per-thread count gives each op its instructions on each thread
/// and the waiting to region 0. (The invoke loop's own thread also enters
/// the node's region in `begin`, and in `end` the region of the loop's own
/// work, `BETWEEN`, which is serial.)
impl ThreadMarks for Timer {
    fn start(&self, node: &NodeInfo) {
        // Nodes run in operator order: operator `index` is position `index`.
        if let Some(&region) = self.regions.get(node.index) {
            marker::region(region);
        }
    }
    fn idle(&self) {
        marker::region(marker::OUTSIDE);
    }
}

fn output_json(index: usize, info: &TensorInfo) -> Value {
    let (scale, zero_point) = match info.per_tensor() {
        Some((s, z)) => (json!(s), json!(z)),
        None => (Value::Null, Value::Null),
    };
    json!({
        "index": index,
        "name": info.name,
        "dtype": numpy_name(info.dtype),
        "shape": info.shape,
        "scale": scale,
        "zero_point": zero_point,
    })
}

/// The name the profile and the JSON report give a node: its op, or
/// `THRESHOLDED_<op>` when it runs fused with `--threshold` (so that its
/// instructions are counted apart from the dense ops of its type).
fn profile_name(node: &NodeInfo) -> String {
    match node.fused {
        Some(_) => format!("THRESHOLDED_{}", node.op),
        None => node.op.clone(),
    }
}

/// `DIR/<i>.hits.json` of a fused output: the threshold and the kept
/// elements' flat indices, codes and values, in index order.
fn hits_json(threshold: Option<f32>, hits: &Hits<'_>) -> Value {
    json!({
        "threshold": threshold,
        "count": hits.len(),
        "index": hits.iter().map(|h| h.index).collect::<Vec<_>>(),
        "code": hits.iter().map(|h| h.code).collect::<Vec<_>>(),
        "value": hits.iter().map(|h| h.value).collect::<Vec<_>>(),
    })
}

/// Runs `qneon run`; the error is the message for stderr.
pub(crate) fn run(args: RunArgs) -> Result<(), String> {
    let backend = args.backend.unwrap_or_else(Backend::best);
    if !backend.is_available() {
        return Err(format!(
            "backend {} is not available on this CPU",
            backend.name()
        ));
    }
    // Until the first invoke, and after the last: once per run, counted
    // apart from the invokes (see `marker.rs`).
    marker::region(marker::SETUP);
    let options = args.load.options(backend);
    let bytes = read_model(&args.model, options.memory_budget.unwrap_or(usize::MAX))?;
    let load_start = Instant::now();
    let mut interpreter = Interpreter::new(bytes.as_bytes(), options)
        .map_err(|e| format!("{}: {e}", args.model.display()))?;
    let load_time = load_start.elapsed();
    if let Some(path) = &args.json {
        std::fs::write(path, b"").map_err(|e| format!("{}: {e}", path.display()))?;
    }
    let sequence = Sequence::load(&interpreter, &args.inputs)?;
    let steps = sequence.steps();
    if steps > 1 && args.reps > 1 {
        return Err(format!(
            "--reps {} with a sequence of {steps} input files: one invoke per step",
            args.reps
        ));
    }
    let node_count = interpreter.nodes().count();
    let names: Vec<String> = interpreter.nodes().map(profile_name).collect();
    let op_names: Vec<&str> = names.iter().map(String::as_str).collect();
    let (regions, region_per_node) = marker::assign(&op_names);
    let mut timer = Timer {
        started: Instant::now(),
        times: vec![Duration::ZERO; node_count],
        regions,
        position: 0,
    };
    let invokes = args.reps as usize * steps;
    let mut invoke_times = Vec::with_capacity(invokes);
    for step in 0..steps {
        if step > 0 && args.reset_every.is_some_and(|n| step % n as usize == 0) {
            interpreter.reset_variables();
        }
        marker::region(marker::INPUTS);
        sequence.set(&mut interpreter, step)?;
        for _ in 0..args.reps {
            timer.position = 0;
            let start = Instant::now();
            interpreter
                .invoke_with(&mut timer)
                .map_err(|e| format!("{}: {e}", args.model.display()))?;
            invoke_times.push(start.elapsed());
        }
        marker::region(marker::SETUP);
        if let Some(dir) = &args.output_dir {
            if steps > 1 {
                write_outputs(
                    &interpreter,
                    &dir.join(format!("step{step}")),
                    options.threshold,
                )?;
            } else {
                write_outputs(&interpreter, dir, options.threshold)?;
            }
        }
    }
    let reps = invokes as f64;
    let plan = interpreter.plan();
    println!(
        "{}: {} ops, arena {} bytes (non-constant tensors {} bytes), load {:.1} ms",
        args.model.display(),
        node_count,
        plan.arena_bytes,
        plan.unshared_bytes(),
        load_time.as_secs_f64() * 1e3
    );
    let mut sorted = invoke_times.clone();
    sorted.sort();
    println!(
        "invoke: {} reps, median {:.3} ms, min {:.3} ms",
        invokes,
        sorted[sorted.len() / 2].as_secs_f64() * 1e3,
        sorted[0].as_secs_f64() * 1e3
    );
    for (i, info) in interpreter.outputs().iter().enumerate() {
        let hits = match interpreter.hits(i) {
            Some(hits) => format!(
                ", {} of {} elements at or above the threshold",
                hits.len(),
                info.shape.iter().product::<usize>()
            ),
            None => String::new(),
        };
        println!(
            "output {i}: {} {} {:?}{hits}",
            info.name,
            numpy_name(info.dtype),
            info.shape
        );
    }
    if options.threshold.is_some() && interpreter.nodes().all(|n| n.fused.is_none()) {
        println!("--threshold: no LOGISTIC or SOFTMAX writes a model output alone; nothing fused");
    }
    let nodes: Vec<NodeInfo> = interpreter.nodes().cloned().collect();
    if args.profile {
        // Per op type: calls per invoke, work, time per invoke, share.
        let mut by_type: BTreeMap<&str, (usize, u64, &str, Duration)> = BTreeMap::new();
        for ((node, time), name) in nodes.iter().zip(&timer.times).zip(&names) {
            let row = by_type
                .entry(name)
                .or_insert((0, 0, node.unit, Duration::ZERO));
            row.0 += 1;
            row.1 += node.work;
            row.3 += *time;
        }
        let total: f64 = timer.times.iter().map(|t| t.as_secs_f64()).sum::<f64>() / reps;
        let mut rows: Vec<_> = by_type.into_iter().collect();
        rows.sort_by_key(|row| std::cmp::Reverse(row.1 .3));
        println!(
            "{:<18} {:>6} {:>16} {:>12} {:>7}",
            "op", "calls", "work", "ms", "share"
        );
        for (op, (calls, work, unit, time)) in rows {
            let ms = time.as_secs_f64() / reps * 1e3;
            println!(
                "{op:<18} {calls:>6} {:>16} {ms:>12.3} {:>6.1}%",
                format!("{work} {unit}"),
                100.0 * ms / 1e3 / total.max(f64::MIN_POSITIVE)
            );
        }
    }
    if let Some(path) = &args.json {
        let ops: Vec<Value> = nodes
            .iter()
            .zip(&timer.times)
            .zip(&timer.regions)
            .zip(&names)
            .enumerate()
            .map(|(position, (((n, t), region), name))| {
                json!({
                    "position": position, "index": n.index, "op": name,
                    "work": n.work, "unit": n.unit, "region": region,
                    "ns": (t.as_secs_f64() / reps * 1e9).round(),
                })
            })
            .collect();
        let macs: u64 = nodes
            .iter()
            .filter(|n| n.unit == "MAC")
            .map(|n| n.work)
            .sum();
        let report = json!({
            "model": args.model.display().to_string(),
            "rounding": options.rounding.name(),
            "softmax": options.softmax_method.name(),
            "backend": backend.name(),
            "threshold": options.threshold,
            "arena_bytes": plan.arena_bytes,
            "non_constant_tensor_bytes": plan.unshared_bytes(),
            "reps": invokes,
            "macs": macs,
            // Whether every op has a region of its own (else one per op type).
            "region_per_op": region_per_node,
            "setup_region": marker::SETUP,
            "between_region": marker::BETWEEN,
            "inputs_region": marker::INPUTS,
            "profiler_region": marker::PROFILER,
            "invoke_ns": invoke_times.iter().map(|t| t.as_nanos() as u64).collect::<Vec<_>>(),
            "ops": ops,
            "outputs": interpreter.outputs().iter().enumerate()
                .map(|(i, t)| output_json(i, t)).collect::<Vec<_>>(),
        });
        let text = serde_json::to_string_pretty(&report).unwrap_or_default();
        std::fs::write(path, text + "\n").map_err(|e| format!("{}: {e}", path.display()))?;
    }
    Ok(())
}

/// Writes `dir/<i>.npy` per output (`dir/<i>.hits.json` for an output
/// fused with `--threshold`) and `dir/outputs.json`.
fn write_outputs(
    interpreter: &Interpreter<'_>,
    dir: &Path,
    threshold: Option<f32>,
) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut listing = Vec::new();
    for (i, info) in interpreter.outputs().iter().enumerate() {
        if let Some(hits) = interpreter.hits(i) {
            let path = dir.join(format!("{i}.hits.json"));
            let text = serde_json::to_string(&hits_json(threshold, &hits)).unwrap_or_default();
            std::fs::write(&path, text + "\n").map_err(|e| format!("{}: {e}", path.display()))?;
            let mut entry = output_json(i, info);
            entry["hits"] = json!(format!("{i}.hits.json"));
            listing.push(entry);
            continue;
        }
        let array = NpyArray {
            dtype: info.dtype,
            shape: info.shape.clone(),
            data: interpreter.output(i).unwrap_or(&[]).to_vec(),
        };
        let bytes = array
            .to_bytes()
            .ok_or_else(|| format!("output {i}: dtype {} has no .npy form", info.dtype.name()))?;
        let path = dir.join(format!("{i}.npy"));
        std::fs::write(&path, bytes).map_err(|e| format!("{}: {e}", path.display()))?;
        listing.push(output_json(i, info));
    }
    let path = dir.join("outputs.json");
    let text = serde_json::to_string_pretty(&Value::Array(listing)).unwrap_or_default();
    std::fs::write(&path, text + "\n").map_err(|e| format!("{}: {e}", path.display()))
}
