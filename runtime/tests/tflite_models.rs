//! The `.tflite` interpreter against TFLite's own outputs (`models/`), on
//! malformed files, and its arena plan.

mod tflite_common;

use qneon::Method;
use qneon_runtime::interp::{Interpreter, Options, Rounding};
use qneon_runtime::Error;
use tflite_common::*;

/// Cases whose ops wait for library kernels in both rounding modes: each
/// must fail to load with `UnsupportedOp`, so that the day the library has
/// them this list has to shrink. (Empty since MUL, SUB and BATCH_MATMUL.)
const PENDING_BOTH: &[&str] = &[];

/// Cases that wait for the library's single rounding and so run against
/// `tf219_ref` (double) only. (Empty: every requantizing op has both.)
const PENDING_SINGLE: &[&str] = &[];

fn reference_rounding(reference: &str) -> Rounding {
    match reference {
        "litert_ref" => Rounding::Single,
        "tf219_ref" => Rounding::Double,
        other => panic!("unknown reference {other}"),
    }
}

#[test]
fn single_op_models_equal_tflite_reference_kernels_bit_for_bit() {
    let manifest = manifest("ops/manifest.json");
    let cases = manifest["cases"].as_array().unwrap();
    // Every single-op model on disk is a case of the manifest (no count to
    // keep in step when a case is added).
    let listed: std::collections::BTreeSet<&str> =
        cases.iter().map(|c| c["model"].as_str().unwrap()).collect();
    for entry in std::fs::read_dir(models_dir().join("ops")).unwrap() {
        let path = entry.unwrap().path();
        for model in std::fs::read_dir(&path).into_iter().flatten() {
            let model = model.unwrap().path();
            if model.extension().is_some_and(|e| e == "tflite") {
                let relative = model.strip_prefix(models_dir()).unwrap();
                let relative = relative.to_str().unwrap();
                assert!(listed.contains(relative), "{relative} is in no case");
            }
        }
    }
    let (mut compared, mut pending) = (0usize, Vec::new());
    for case in cases {
        let name = case["name"].as_str().unwrap();
        if !case["sequence"].is_null() {
            // Stateful (LSTM): runs are separate sequences, checked by
            // lstm_ops.rs on fresh interpreters.
            continue;
        }
        let bytes = read_model(case["model"].as_str().unwrap());
        for reference in ["tf219_ref", "litert_ref"] {
            let rounding = reference_rounding(reference);
            let expect_pending = PENDING_BOTH.contains(&name)
                || (rounding == Rounding::Single && PENDING_SINGLE.contains(&name));
            for backend in qneon::Backend::available() {
                let options = Options {
                    backend,
                    ..options(rounding, Method::FixedPoint)
                };
                let loaded = Interpreter::new(bytes.as_bytes(), options);
                if expect_pending {
                    match loaded {
                        Err(Error::UnsupportedOp { .. }) => {}
                        other => panic!("{name} ({reference}): listed as pending, got {other:?}"),
                    }
                    continue;
                }
                let mut interpreter =
                    loaded.unwrap_or_else(|e| panic!("{name} ({reference}): {e}"));
                for run in case["runs"].as_array().unwrap() {
                    for (output, ours, refs) in run_case(&mut interpreter, &case["tensors"], run) {
                        let expected = npy(refs[reference].as_str().unwrap());
                        assert_eq!(
                            ours,
                            expected.data,
                            "{name} {} output {output} vs {reference} ({})",
                            run["name"],
                            backend.name()
                        );
                        compared += 1;
                    }
                }
            }
            if expect_pending {
                pending.push(format!("{name}/{reference}"));
            }
        }
    }
    println!(
        "compared {compared} outputs bit-exact; pending library support ({}): {}",
        pending.len(),
        pending.join(" ")
    );
    assert!(compared > 0);
}

/// Cases the table method cannot run yet; each must fail to load. (Empty:
/// LOG_SOFTMAX runs TFLite's optimized kernel through `Method::Lut`.)
const PENDING_LUT: &[&str] = &[];

/// Single-op cases without LiteRT aarch64 outputs yet (made after the
/// `litert_aarch64_builtin` references; `cargo xtask compare --refs-only`
/// adds them): each must be absent from that manifest, so that the day its
/// outputs are added this list has to shrink.
const NO_AARCH64_REFS_YET: &[&str] = &[
    "avg_pool_2x2_s2_valid",
    "avg_pool_3x3_s1_same",
    "avg_pool_3x3_s2_same",
    "avg_pool_3x3_s2_same_even",
    "avg_pool_3x3_s2_valid",
    "avg_pool_2x3_s1x2_same",
    "avg_pool_global_6x6",
    "avg_pool_3x3_s2_same_relu",
    "avg_pool_2x2_s2_same_relu6",
    "avg_pool_int16",
    "max_pool_2x2_s2_valid",
    "max_pool_3x3_s1_same",
    "max_pool_3x3_s2_same",
    "max_pool_3x3_s2_same_even",
    "max_pool_3x3_s2_valid",
    "max_pool_2x3_s1x2_same",
    "max_pool_global_6x6",
    "max_pool_3x3_s2_same_relu",
    "max_pool_2x2_s2_same_relu6",
    "max_pool_int16",
    // Every int8 byte through LOGISTIC / TANH (made for the XNNPACK path).
    "logistic_int8_all_bytes",
    "tanh_int8_all_bytes",
];

/// `--softmax lut` (single rounding, the optimized kernels' DEQUANTIZE)
/// against LiteRT's own aarch64 build with its builtin kernels, every case
/// and run: these differ from the reference kernels where the int8 SOFTMAX
/// takes its table path (`softmax_int8_beta`) and in LOG_SOFTMAX,
/// CONV_2D's single rounding, and DEPTHWISE_CONV_2D's two roundings (the
/// 3x3 kernel's ties upward, the general kernel's on whole blocks of 8
/// channels; [`DEPTHWISE_KERNEL_CASES`] lists the cases where
/// these part from plain double rounding).
#[test]
fn single_op_models_with_tables_equal_litert_aarch64_builtin_kernels() {
    let aarch64 = manifest("litert_aarch64_builtin/manifest.json");
    let manifest = manifest("ops/manifest.json");
    let (mut compared, mut pending) = (0usize, Vec::new());
    for case in manifest["cases"].as_array().unwrap() {
        let name = case["name"].as_str().unwrap();
        if !case["sequence"].is_null() {
            // Stateful (LSTM): checked by lstm_ops.rs.
            continue;
        }
        if NO_AARCH64_REFS_YET.contains(&name) {
            assert!(
                aarch64["ops"]["cases"][name].is_null(),
                "{name} has aarch64 outputs now: remove it from NO_AARCH64_REFS_YET"
            );
            continue;
        }
        let bytes = read_model(case["model"].as_str().unwrap());
        let expect_pending = PENDING_BOTH.contains(&name)
            || PENDING_SINGLE.contains(&name)
            || PENDING_LUT.contains(&name);
        assert!(
            aarch64["ops"]["cases"].get(name).is_some(),
            "{name} has no LiteRT aarch64 outputs"
        );
        for backend in qneon::Backend::available() {
            let options = Options {
                backend,
                ..options(Rounding::Single, Method::Lut)
            };
            let loaded = Interpreter::new(bytes.as_bytes(), options);
            if expect_pending {
                match loaded {
                    Err(Error::UnsupportedOp { .. }) => {}
                    other => panic!("{name} (lut): listed as pending, got {other:?}"),
                }
                continue;
            }
            let mut interpreter = loaded.unwrap_or_else(|e| panic!("{name} (lut): {e}"));
            for run in case["runs"].as_array().unwrap() {
                let files = &aarch64["ops"]["cases"][name][run["name"].as_str().unwrap()];
                let mut run = run.clone();
                for (output, refs) in run["outputs"].as_object_mut().unwrap() {
                    refs["litert_aarch64_builtin"] = files[output.as_str()].clone();
                }
                for (output, ours, refs) in run_case(&mut interpreter, &case["tensors"], &run) {
                    let expected = npy(refs["litert_aarch64_builtin"].as_str().unwrap());
                    let what = format!(
                        "{name} {} output {output} vs LiteRT aarch64 builtin ({})",
                        run["name"],
                        backend.name()
                    );
                    assert_eq!(ours, expected.data, "{what}");
                    compared += 1;
                }
            }
        }
        if expect_pending {
            pending.push(name);
        }
    }
    println!(
        "lut: compared {compared} outputs bit-exact; pending ({}): {}",
        pending.len(),
        pending.join(" ")
    );
    assert!(compared > 0);
}

/// DEPTHWISE_CONV_2D cases where LiteRT's aarch64 builtin kernels part
/// from plain double rounding (which `TfliteKernels::Optimized` used to
/// apply, leaving these +1 on negative ties): the 3x3 kernel's ties upward
/// (`depthwise_3x3_same`, `depthwise_rounding`) and the general kernel's on
/// whole blocks of 8 channels (`depthwise_3x3_stride2_m2`, 4 x 2 channels;
/// `depthwise_m8_one_channel`, 1 x 8). The test above holds
/// them bit-exact; this one checks that they still tell the roundings
/// apart, so that the test above would fail with plain double rounding.
const DEPTHWISE_KERNEL_CASES: &[&str] = &[
    "depthwise_3x3_same",
    "depthwise_3x3_stride2_m2",
    "depthwise_m8_one_channel",
    "depthwise_rounding",
];

#[test]
fn depthwise_litert_aarch64_cases_differ_from_plain_double_rounding() {
    let aarch64 = manifest("litert_aarch64_builtin/manifest.json");
    let manifest = manifest("ops/manifest.json");
    for &name in DEPTHWISE_KERNEL_CASES {
        let case = manifest["cases"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == name)
            .unwrap_or_else(|| panic!("no case {name}"));
        let bytes = read_model(case["model"].as_str().unwrap());
        // The reference kernels' arithmetic: plain double rounding.
        let options = Options {
            kernels: qneon_runtime::interp::TfliteKernels::Reference,
            ..options(Rounding::Single, Method::Lut)
        };
        let mut interpreter = Interpreter::new(bytes.as_bytes(), options).unwrap();
        let mut differing = 0usize;
        for run in case["runs"].as_array().unwrap() {
            let files = &aarch64["ops"]["cases"][name][run["name"].as_str().unwrap()];
            let mut run = run.clone();
            for (output, refs) in run["outputs"].as_object_mut().unwrap() {
                refs["litert_aarch64_builtin"] = files[output.as_str()].clone();
            }
            for (_, ours, refs) in run_case(&mut interpreter, &case["tensors"], &run) {
                let expected = npy(refs["litert_aarch64_builtin"].as_str().unwrap());
                differing += ours
                    .iter()
                    .zip(&expected.data)
                    .filter(|(a, b)| a != b)
                    .count();
            }
        }
        assert!(
            differing > 0,
            "{name}: plain double rounding equals LiteRT aarch64 here"
        );
    }
}

#[test]
fn every_op_of_mobilebert_prepares() {
    let mut arena_ratios = Vec::new();
    for (model, ops) in [
        ("mobilebert_squad_1l.tflite", 66),
        ("mobilebert_squad_24l.tflite", 1101),
    ] {
        let bytes = read_model(model);
        let analysis = Interpreter::analyze(
            bytes.as_bytes(),
            options(Rounding::Double, Method::FixedPoint),
        )
        .unwrap();
        assert_eq!(analysis.reports.len(), ops);
        for report in &analysis.reports {
            if let Err(e) = &report.status {
                panic!("{model}: operator {} cannot run: {e}", report.index);
            }
        }
        let plan = &analysis.plan;
        assert!(plan.conflicts().is_empty(), "{model}: live buffers overlap");
        println!(
            "{model}: arena {} bytes, sum of non-constant tensors {} bytes ({:.1}x smaller), {} buffers",
            plan.arena_bytes,
            plan.unshared_bytes(),
            plan.unshared_bytes() as f64 / plan.arena_bytes as f64,
            plan.buffers.len()
        );
        arena_ratios.push((model, plan.arena_bytes, plan.unshared_bytes()));
        // No node writes a buffer it reads, and its outputs are disjoint.
        for node in &analysis.nodes {
            if node.aliased {
                continue;
            }
            let range = |t: usize| {
                analysis
                    .buffers
                    .get(t)
                    .copied()
                    .flatten()
                    .map(|b| plan.range(b))
            };
            let reads: Vec<_> = node
                .inputs
                .iter()
                .flatten()
                .filter_map(|&t| range(t))
                .collect();
            let writes: Vec<_> = node
                .outputs
                .iter()
                .flatten()
                .filter_map(|&t| range(t))
                .collect();
            for (i, w) in writes.iter().enumerate() {
                for r in reads.iter().chain(&writes[i + 1..]) {
                    assert!(
                        w.end <= r.start || r.end <= w.start || w.is_empty() || r.is_empty(),
                        "{model}: operator {} writes {w:?} over {r:?}",
                        node.index
                    );
                }
            }
        }
    }
    // The target: at most a quarter on MobileBert (24 layers; one layer has
    // too few tensors to reuse that much: 3.9x when measured).
    let (model, arena, unshared) = arena_ratios[1];
    assert!(
        arena * 4 <= unshared,
        "{model}: arena {arena} over 1/4 of {unshared}"
    );
}

fn small_model() -> Vec<u8> {
    read_model("ops/softmax_int8/model.tflite")
        .as_bytes()
        .to_vec()
}

fn load(bytes: &[u8]) -> Result<(), Error> {
    Interpreter::new(bytes, options(Rounding::Double, Method::FixedPoint)).map(|_| ())
}

#[test]
fn truncated_files_are_errors() {
    let bytes = small_model();
    load(&bytes).unwrap();
    for len in 0..bytes.len() {
        match load(&bytes[..len]) {
            Err(Error::Tflite(_)) => {}
            other => panic!("truncated to {len} bytes: {other:?}"),
        }
    }
}

#[test]
fn bit_flips_never_panic_and_errors_say_something() {
    let bytes = small_model();
    let mut errors = 0;
    for position in 0..bytes.len() {
        for bit in 0..8 {
            let mut flipped = bytes.clone();
            flipped[position] ^= 1 << bit;
            if let Err(e) = load(&flipped) {
                assert!(!e.to_string().is_empty());
                errors += 1;
            }
        }
    }
    assert!(errors > 0);
}

/// Every position where `pattern` occurs.
fn positions(bytes: &[u8], pattern: &[u8]) -> Vec<usize> {
    (0..=bytes.len().saturating_sub(pattern.len()))
        .filter(|&i| &bytes[i..i + pattern.len()] == pattern)
        .collect()
}

#[test]
fn an_unsupported_op_is_named_at_load() {
    // Rewrite the LOGISTIC operator code (14) as FLOOR (8), both ops
    // without options (the reader checks options against the op). The code
    // table holds it twice (the int8 `deprecated_builtin_code` and the int32
    // `builtin_code`, the larger counts), so rewrite every pair of 14s.
    let bytes = read_model("ops/logistic_int8/model.tflite")
        .as_bytes()
        .to_vec();
    let mut named = false;
    let found = positions(&bytes, &[14]);
    let pairs = found
        .iter()
        .flat_map(|&a| found.iter().map(move |&b| (a, b)));
    for (a, b) in pairs {
        let mut patched = bytes.clone();
        patched[a] = 8;
        patched[b] = 8;
        if let Err(Error::UnsupportedOp { op, index, missing }) = load(&patched) {
            if op == "FLOOR" {
                assert_eq!(index, 0);
                assert!(!missing.is_empty());
                let text = Error::UnsupportedOp { op, index, missing }.to_string();
                assert!(
                    text.contains("FLOOR") && text.contains("operator 0"),
                    "{text}"
                );
                named = true;
            }
        }
    }
    assert!(named, "no rewrite produced a FLOOR operator");
}

#[test]
fn overflowing_and_over_budget_shapes_are_refused_before_allocation() {
    // fc_per_channel_bias: input [4, 16]. Rewrite the 16 of every `4, 16`
    // int32 pair to 2^31 - 1: the reader or the op's checks must refuse.
    let bytes = read_model("ops/fc_per_channel_bias/model.tflite")
        .as_bytes()
        .to_vec();
    let pattern = [4u8, 0, 0, 0, 16, 0, 0, 0];
    let found = positions(&bytes, &pattern);
    assert!(!found.is_empty());
    for at in found {
        let mut patched = bytes.clone();
        patched[at + 4..at + 8].copy_from_slice(&i32::MAX.to_le_bytes());
        assert!(load(&patched).is_err());
    }
    // A budget below one tensor: refused by the reader; below the arena:
    // refused after planning, before the arena is allocated.
    let model = read_model("mobilebert_squad_1l.tflite");
    let tiny = Options {
        memory_budget: Some(1000),
        ..options(Rounding::Double, Method::FixedPoint)
    };
    assert!(matches!(
        Interpreter::new(model.as_bytes(), tiny),
        Err(Error::Tflite(_))
    ));
    let softmax = read_model("ops/softmax_int8_row384/model.tflite");
    let interpreter = Interpreter::new(
        softmax.as_bytes(),
        options(Rounding::Double, Method::FixedPoint),
    )
    .unwrap();
    let arena = interpreter.plan().arena_bytes;
    let largest = interpreter.tensors().iter().map(|t| t.bytes).max().unwrap();
    if largest < arena {
        let short = Options {
            memory_budget: Some(arena - 1),
            ..options(Rounding::Double, Method::FixedPoint)
        };
        match Interpreter::new(softmax.as_bytes(), short) {
            Err(Error::OverBudget { needed, budget, .. }) => {
                assert_eq!((needed, budget), (arena, arena - 1))
            }
            other => panic!("{other:?}"),
        }
    }
}

#[test]
fn inputs_of_the_wrong_size_are_errors() {
    let bytes = small_model();
    let mut interpreter =
        Interpreter::new(&bytes, options(Rounding::Double, Method::FixedPoint)).unwrap();
    let len = interpreter.inputs()[0].bytes;
    assert!(matches!(
        interpreter.set_input(0, &vec![0; len + 1]),
        Err(Error::Input { .. })
    ));
    assert!(matches!(
        interpreter.set_input(1, &[]),
        Err(Error::Input { .. })
    ));
    interpreter.set_input(0, &vec![0; len]).unwrap();
    interpreter.invoke().unwrap();
}
