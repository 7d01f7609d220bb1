//! The `qneon` binary: outputs, outputs.json, exit statuses.

#[path = "../../runtime/tests/tflite_common/flat.rs"]
#[allow(dead_code)]
mod flat;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn models() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../models")
}

fn qneon(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_qneon"))
        .args(args)
        .output()
        .expect("runs qneon")
}

fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// The data bytes of a `.npy` file (after its header).
fn npy_data(file: &Path) -> Vec<u8> {
    let bytes = std::fs::read(file).unwrap();
    let header = u16::from_le_bytes([bytes[8], bytes[9]]) as usize;
    bytes[10 + header..].to_vec()
}

/// A model qneon cannot run: the single-op LOG_SOFTMAX model turned into a
/// FLOOR (builtin code 8, an op without options that TFLite defines for
/// floats only, so without a qneon kernel), written to a temporary file. The FlatBuffers walk: root table
/// -> Model field 1 (`operator_codes`) -> each OperatorCode's fields 0
/// (`deprecated_builtin_code`, i8) and 3 (`builtin_code`, i32); Model field
/// 2 (`subgraphs`) -> SubGraph field 3 (`operators`) -> each Operator's
/// field 3 (`builtin_options_type`, u8) set to NONE.
fn floor_model() -> PathBuf {
    const FLOOR: u8 = 8;
    let mut bytes = std::fs::read(models().join("ops/log_softmax_int8/model.tflite")).unwrap();
    let u32_at =
        |b: &[u8], at: usize| u32::from_le_bytes(b[at..at + 4].try_into().unwrap()) as usize;
    let field = |b: &[u8], table: usize, id: usize| -> Option<usize> {
        let soffset = i32::from_le_bytes(b[table..table + 4].try_into().unwrap());
        let vtable = (table as i64 - soffset as i64) as usize;
        let vtable_len = u16::from_le_bytes(b[vtable..vtable + 2].try_into().unwrap()) as usize;
        let slot = 4 + 2 * id;
        (slot < vtable_len)
            .then(|| {
                u16::from_le_bytes(b[vtable + slot..vtable + slot + 2].try_into().unwrap()) as usize
            })
            .filter(|&o| o != 0)
            .map(|o| table + o)
    };
    // The tables of the vector in field `id` of `table`.
    let tables = |b: &[u8], table: usize, id: usize| -> Vec<usize> {
        let f = field(b, table, id).expect("vector field");
        let v = f + u32_at(b, f);
        (0..u32_at(b, v))
            .map(|i| {
                let e = v + 4 + 4 * i;
                e + u32_at(b, e)
            })
            .collect()
    };
    let model = u32_at(&bytes, 0);
    for code in tables(&bytes, model, 1) {
        let deprecated = field(&bytes, code, 0).expect("deprecated_builtin_code");
        assert_eq!(bytes[deprecated], 50, "the model's op is LOG_SOFTMAX");
        bytes[deprecated] = FLOOR;
        if let Some(builtin) = field(&bytes, code, 3) {
            bytes[builtin..builtin + 4].copy_from_slice(&(FLOOR as i32).to_le_bytes());
        }
    }
    for graph in tables(&bytes, model, 2) {
        for operator in tables(&bytes, graph, 3) {
            if let Some(options_type) = field(&bytes, operator, 3) {
                bytes[options_type] = 0;
            }
        }
    }
    let out = std::env::temp_dir().join(format!("qneon-cli-floor-{}.tflite", std::process::id()));
    std::fs::write(&out, bytes).unwrap();
    out
}

#[test]
fn run_writes_outputs_equal_to_the_reference_and_their_listing() {
    let case = models().join("ops/softmax_int8");
    let out = std::env::temp_dir().join(format!("qneon-cli-run-{}", std::process::id()));
    let json = out.join("run.json");
    std::fs::create_dir_all(&out).unwrap();
    let input = format!("x={}", path(&case.join("run0.input.x.npy")));
    let result = qneon(&[
        "run",
        path(&case.join("model.tflite")),
        "--input",
        &input,
        "--output-dir",
        path(&out),
        "--profile",
        "--reps",
        "2",
        "--json",
        path(&json),
    ]);
    assert!(
        result.status.success(),
        "{}",
        String::from_utf8_lossy(&result.stderr)
    );
    assert_eq!(
        npy_data(&out.join("0.npy")),
        npy_data(&case.join("run0.litert_ref.y.npy"))
    );
    let listing: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("outputs.json")).unwrap()).unwrap();
    let first = &listing[0];
    assert_eq!(first["index"], 0);
    assert_eq!(first["name"], "PartitionedCall:0");
    assert_eq!(first["dtype"], "int8");
    assert_eq!(first["shape"], serde_json::json!([4, 16]));
    assert_eq!(first["scale"], 0.00390625);
    assert_eq!(first["zero_point"], -128);
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(report["ops"][0]["op"], "SOFTMAX");
    assert_eq!(report["invoke_ns"].as_array().unwrap().len(), 2);
    // What `cargo xtask run` and `compare` read: the op's instruction-count
    // region (its own, 1-based), its position, and the MACs (none here).
    assert_eq!(report["ops"][0]["region"], 1);
    assert_eq!(report["ops"][0]["position"], 0);
    assert_eq!(report["region_per_op"], true);
    assert_eq!(report["macs"], 0);
    let stdout = String::from_utf8_lossy(&result.stdout);
    assert!(stdout.contains("SOFTMAX"), "{stdout}");
    std::fs::remove_dir_all(&out).unwrap();
}

#[test]
fn exit_status_is_2_for_usage_and_1_for_model_or_input_errors() {
    let softmax = models().join("ops/softmax_int8/model.tflite");
    assert_eq!(qneon(&["run", "--bogus"]).status.code(), Some(2));
    assert_eq!(
        qneon(&["run", path(&softmax), "--rounding", "triple"])
            .status
            .code(),
        Some(2)
    );
    assert_eq!(qneon(&["frobnicate"]).status.code(), Some(2));
    let cases: Vec<(Vec<String>, &str)> = vec![
        (
            vec!["run".into(), "no/such/model.tflite".into()],
            "no/such/model.tflite",
        ),
        (
            vec![
                "run".into(),
                path(&softmax).into(),
                "--input".into(),
                "nope=x.npy".into(),
            ],
            "no such input",
        ),
        (
            vec![
                "run".into(),
                path(&softmax).into(),
                "--input".into(),
                // An int8 input of another shape.
                format!("0={}", path(&models().join("ops/reshape/run0.input.x.npy"))),
            ],
            "but input 0",
        ),
        (
            // An operator qneon has no kernel for: a load error naming it.
            vec!["run".into(), path(&floor_model()).into()],
            "(FLOOR) is not supported",
        ),
    ];
    for (args, message) in cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let result = qneon(&args);
        let stderr = String::from_utf8_lossy(&result.stderr);
        assert_eq!(result.status.code(), Some(1), "{args:?}: {stderr}");
        assert!(stderr.contains(message), "{args:?}: {stderr}");
    }
}

#[test]
fn inspect_lists_ops_plan_and_what_cannot_run() {
    let result = qneon(&[
        "inspect",
        path(&models().join("mobilebert_squad_1l.tflite")),
        "--rounding",
        "double",
    ]);
    assert!(result.status.success());
    let stdout = String::from_utf8_lossy(&result.stdout);
    assert!(stdout.contains("66 operators"), "{stdout}");
    assert!(stdout.contains("arena plan:"));
    assert!(stdout.contains("FULLY_CONNECTED"));
    // Every operator of the converter's MobileBert runs.
    assert!(!stdout.contains("CANNOT RUN"), "{stdout}");
    assert!(!stdout.contains("qneon cannot run"), "{stdout}");
    // An operator without a kernel: inspect names it and why.
    let result = qneon(&["inspect", path(&floor_model())]);
    assert!(result.status.success());
    let stdout = String::from_utf8_lossy(&result.stdout);
    assert!(stdout.contains("qneon cannot run 1 operators"), "{stdout}");
    assert!(stdout.contains("FLOOR"), "{stdout}");
    // LOG_SOFTMAX runs with every method now, the tables included.
    let result = qneon(&[
        "inspect",
        path(&models().join("ops/log_softmax_int8/model.tflite")),
        "--softmax",
        "lut",
    ]);
    assert!(result.status.success());
    let stdout = String::from_utf8_lossy(&result.stdout);
    assert!(!stdout.contains("qneon cannot run"), "{stdout}");
}

#[test]
fn kernels_xnnpack_reproduces_the_delegate_and_refuses_what_is_not_built() {
    // A convolution under --kernels xnnpack: the XNNPACK delegate's bytes
    // (f32 requantization), which in this case differ from the reference
    // kernels' in 5 of 8,192 elements (asserted below, so the flag is seen
    // to change something).
    let case = models().join("ops/conv_rounding");
    let input = format!("x={}", path(&case.join("run0.input.x.npy")));
    let mut outputs = Vec::new();
    for kernels in ["xnnpack", "reference"] {
        let out = std::env::temp_dir().join(format!(
            "qneon-cli-kernels-{kernels}-{}",
            std::process::id()
        ));
        std::fs::create_dir_all(&out).unwrap();
        let result = qneon(&[
            "run",
            path(&case.join("model.tflite")),
            "--input",
            &input,
            "--kernels",
            kernels,
            "--output-dir",
            path(&out),
        ]);
        assert!(
            result.status.success(),
            "{kernels}: {}",
            String::from_utf8_lossy(&result.stderr)
        );
        outputs.push(npy_data(&out.join("0.npy")));
        std::fs::remove_dir_all(&out).unwrap();
    }
    assert_eq!(
        outputs[0],
        npy_data(&case.join("run0.litert_xnnpack.y.npy"))
    );
    assert_eq!(outputs[1], npy_data(&case.join("run0.litert_ref.y.npy")));
    assert_ne!(
        outputs[0], outputs[1],
        "the two paths give the same bytes here"
    );
    // An op whose XNNPACK path is not built (a uint8 RELU6-fused
    // MAX_POOL_2D): refused by name.
    let pool = std::env::temp_dir().join(format!("qneon-cli-pool-{}.tflite", std::process::id()));
    std::fs::write(&pool, flat::uint8_relu6_max_pool()).unwrap();
    let result = qneon(&["run", path(&pool), "--kernels", "xnnpack"]);
    let stderr = String::from_utf8_lossy(&result.stderr);
    assert_eq!(result.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("MAX_POOL_2D"), "{stderr}");
    assert!(stderr.contains("XNNPACK"), "{stderr}");
    let result = qneon(&["inspect", path(&pool), "--kernels", "xnnpack"]);
    assert!(result.status.success());
    let stdout = String::from_utf8_lossy(&result.stdout);
    assert!(stdout.contains("qneon cannot run 1 operators"), "{stdout}");
    assert!(stdout.contains("XNNPACK"), "{stdout}");
    std::fs::remove_file(&pool).unwrap();
    // An op the delegate leaves to the builtin kernels (int8 SOFTMAX):
    // inspect says so.
    let softmax = models().join("ops/softmax_int8/model.tflite");
    let result = qneon(&["inspect", path(&softmax), "--kernels", "xnnpack"]);
    assert!(result.status.success());
    let stdout = String::from_utf8_lossy(&result.stdout);
    assert!(
        stdout.contains("SOFTMAX: ok") && stdout.contains("left to the builtin kernels by XNNPACK"),
        "{stdout}"
    );
    // inspect says, per op, which requantization each path takes.
    for (kernels, arithmetic) in [
        (
            "reference",
            "CONV_2D: ok, 1179648 MAC, requantization double",
        ),
        (
            "optimized",
            "CONV_2D: ok, 1179648 MAC, requantization single",
        ),
        (
            "xnnpack",
            "CONV_2D: ok, 1179648 MAC, requantization xnnpack-f32",
        ),
    ] {
        let result = qneon(&[
            "inspect",
            path(&case.join("model.tflite")),
            "--kernels",
            kernels,
        ]);
        assert!(result.status.success());
        let stdout = String::from_utf8_lossy(&result.stdout);
        assert!(stdout.contains(arithmetic), "{kernels}: {stdout}");
        assert!(
            stdout.contains(&format!("--kernels {kernels} as given")),
            "{stdout}"
        );
    }
    // --help says what the path reproduces.
    let help = String::from_utf8_lossy(&qneon(&["run", "--help"]).stdout).to_string();
    assert!(help.contains("xnnpack"), "{help}");
}

/// A sequence: `--input K=a.npy,b.npy,...` invokes once per file in order on
/// one interpreter, the SVDF's state carried from step to step, each step's
/// outputs in `DIR/step<k>/` equal to LiteRT's after that step; with
/// `--reset-every 2` step 2 starts from the zero state again, so it equals a
/// single invoke of its input.
#[test]
fn run_sequence_carries_state_and_writes_each_step() {
    let case = "svdf_b2_i20_u6_r2_m4";
    let dir = models().join("tflite_micro/refs/svdf");
    let model = dir.join(format!("{case}.tflite"));
    let step_input = |k: usize| dir.join(format!("{case}/seq0.step{k}.input.0.npy"));
    let step_ref = |k: usize| dir.join(format!("{case}/seq0.step{k}.litert_ref.0.npy"));
    let files: Vec<String> = (0..4).map(|k| path(&step_input(k)).to_string()).collect();
    let input = format!("0={}", files.join(","));
    let out = std::env::temp_dir().join(format!("qneon-cli-seq-{}", std::process::id()));
    let result = qneon(&[
        "run",
        path(&model),
        "--input",
        &input,
        "--output-dir",
        path(&out),
    ]);
    assert!(
        result.status.success(),
        "{}",
        String::from_utf8_lossy(&result.stderr)
    );
    for k in 0..4 {
        assert_eq!(
            npy_data(&out.join(format!("step{k}/0.npy"))),
            npy_data(&step_ref(k)),
            "step {k}"
        );
        assert!(out.join(format!("step{k}/outputs.json")).exists());
    }
    assert!(
        !out.join("0.npy").exists(),
        "a sequence writes per step only"
    );
    std::fs::remove_dir_all(&out).unwrap();

    // Reset before step 2: steps 2 and 3 are steps 0 and 1 of a sequence
    // starting at step 2's input.
    let reset = qneon(&[
        "run",
        path(&model),
        "--input",
        &input,
        "--reset-every",
        "2",
        "--output-dir",
        path(&out),
    ]);
    assert!(
        reset.status.success(),
        "{}",
        String::from_utf8_lossy(&reset.stderr)
    );
    let single = out.join("single");
    let alone = qneon(&[
        "run",
        path(&model),
        "--input",
        &format!("0={}", path(&step_input(2))),
        "--output-dir",
        path(&single),
    ]);
    assert!(
        alone.status.success(),
        "{}",
        String::from_utf8_lossy(&alone.stderr)
    );
    assert_eq!(
        npy_data(&out.join("step2/0.npy")),
        npy_data(&single.join("0.npy"))
    );
    assert_eq!(npy_data(&out.join("step1/0.npy")), npy_data(&step_ref(1)));
    assert_ne!(npy_data(&out.join("step2/0.npy")), npy_data(&step_ref(2)));
    std::fs::remove_dir_all(&out).unwrap();

    // Two inputs' step counts must agree; --reps does not go with a sequence.
    let reps = qneon(&["run", path(&model), "--input", &input, "--reps", "2"]);
    assert_eq!(reps.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&reps.stderr).contains("one invoke per step"));
}

/// `--threshold T` on the YOLOv8n-shaped detector: the class-score LOGISTIC
/// (output 0) is written as `0.hits.json`, equal to the dense `0.npy` of a
/// run without threshold filtered at T; the box output stays a `.npy`,
/// equal to the dense run's; the profile and the JSON name the fused node;
/// a threshold that is not a probability is an error naming the option.
#[test]
fn run_threshold_writes_hits_equal_to_the_filtered_dense_output() {
    let model = models().join("nets/yolov8n_shaped_96.tflite");
    let input = format!(
        "0={}",
        path(&models().join("nets/refs/yolov8n_shaped_96/run0.input.0.npy"))
    );
    let base = std::env::temp_dir().join(format!("qneon-cli-threshold-{}", std::process::id()));
    let (dense, fused) = (base.join("dense"), base.join("fused"));
    let json = base.join("run.json");
    let run = |dir: &Path, extra: &[&str]| {
        let mut args = vec![
            "run",
            path(&model),
            "--input",
            &input,
            "--output-dir",
            path(dir),
        ];
        args.extend_from_slice(extra);
        let result = qneon(&args);
        assert!(
            result.status.success(),
            "{}",
            String::from_utf8_lossy(&result.stderr)
        );
        String::from_utf8_lossy(&result.stdout).to_string()
    };
    run(&dense, &[]);
    let stdout = run(
        &fused,
        &["--threshold", "0.5", "--profile", "--json", path(&json)],
    );
    assert!(stdout.contains("THRESHOLDED_LOGISTIC"), "{stdout}");
    assert!(stdout.contains("at or above the threshold"), "{stdout}");
    assert!(!fused.join("0.npy").exists());
    assert_eq!(
        npy_data(&fused.join("1.npy")),
        npy_data(&dense.join("1.npy"))
    );
    let listing: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dense.join("outputs.json")).unwrap())
            .unwrap();
    let (scale, zero_point) = (
        listing[0]["scale"].as_f64().unwrap() as f32,
        listing[0]["zero_point"].as_i64().unwrap(),
    );
    let want: Vec<(usize, i64)> = npy_data(&dense.join("0.npy"))
        .iter()
        .map(|&b| b as i8 as i64)
        .enumerate()
        .filter(|&(_, q)| (q - zero_point) as f64 * scale as f64 >= 0.5f32 as f64)
        .collect();
    let hits: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(fused.join("0.hits.json")).unwrap()).unwrap();
    let got: Vec<(usize, i64)> = hits["index"]
        .as_array()
        .unwrap()
        .iter()
        .zip(hits["code"].as_array().unwrap())
        .map(|(i, c)| (i.as_u64().unwrap() as usize, c.as_i64().unwrap()))
        .collect();
    assert_eq!(got, want);
    assert_eq!(hits["count"], want.len());
    assert_eq!(hits["threshold"], 0.5);
    let fused_listing: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(fused.join("outputs.json")).unwrap())
            .unwrap();
    assert_eq!(fused_listing[0]["hits"], "0.hits.json");
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(report["threshold"], 0.5);
    let ops = report["ops"].as_array().unwrap();
    assert_eq!(
        ops.iter()
            .filter(|o| o["op"] == "THRESHOLDED_LOGISTIC")
            .count(),
        1
    );
    for bad in ["nan", "-0.5", "1.5"] {
        let arg = format!("--threshold={bad}");
        let result = qneon(&["run", path(&model), "--input", &input, &arg]);
        assert_eq!(result.status.code(), Some(1), "T={bad}");
        let stderr = String::from_utf8_lossy(&result.stderr);
        assert!(stderr.contains("option threshold"), "T={bad}: {stderr}");
    }
    std::fs::remove_dir_all(&base).unwrap();
}
