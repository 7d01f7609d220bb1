//! `invoke` only runs kernels: after load, running a model allocates
//! nothing. A counting allocator (counting only on the test's own thread,
//! only around `invoke`) checks it on the 1-layer MobileBert and every
//! single-op model that loads, for every backend, softmax method and
//! rounding.

mod tflite_common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use qneon::Method;
use qneon_runtime::interp::{Interpreter, NodeInfo, Options, Profiler, Rounding, Session};
use tflite_common::*;

struct Counting;

thread_local! {
    static COUNTING: Cell<bool> = const { Cell::new(false) };
    static ALLOCATIONS: Cell<usize> = const { Cell::new(0) };
}

/// Counting on the pool's threads too (the workers of a session with
/// threads, while they run a share), besides the test's own thread: not on
/// the test harness's, which allocates to print that a test runs long.
/// (The pool crate's own test counts on every thread of its process.)
static EVERY_THREAD: AtomicBool = AtomicBool::new(false);
static ALL_ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);
/// The tests of this file run one at a time: counting on every thread must
/// not count another test's allocations.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn note_allocation() {
    if EVERY_THREAD.load(Ordering::Relaxed)
        && (qneon_pool::current_thread_index().is_some()
            || COUNTING.try_with(Cell::get).unwrap_or(false))
    {
        ALL_ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
    }
    // `try_with`: the thread's locals may be gone while it exits.
    let _ = COUNTING.try_with(|counting| {
        if counting.get() {
            let _ = ALLOCATIONS.try_with(|n| n.set(n.get() + 1));
        }
    });
}

// SAFETY: every call is forwarded to the system allocator unchanged; the
// counters are plain thread-locals with const initializers (no allocation).
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note_allocation();
        // SAFETY: the caller's contract is passed on as it is.
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note_allocation();
        // SAFETY: as above.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note_allocation();
        // SAFETY: as above.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: as above.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Records which operators allocated, and how often.
#[derive(Default)]
struct Allocating {
    at_begin: usize,
    ops: Vec<String>,
}

impl Profiler for Allocating {
    fn begin(&mut self, _node: &NodeInfo) {
        self.at_begin = ALLOCATIONS.with(|n| n.get());
    }
    fn end(&mut self, node: &NodeInfo) {
        let n = ALLOCATIONS.with(|n| n.get()) - self.at_begin;
        if n > 0 {
            // The record's own allocations are not the operator's.
            COUNTING.with(|c| c.set(false));
            self.ops
                .push(format!("operator {} ({}): {n}", node.index, node.op));
            COUNTING.with(|c| c.set(true));
        }
    }
}

/// Allocations made by one `invoke` (after a first one, so that nothing
/// lazily set up on first use counts), and the operators that made them.
fn allocations_of_invoke(interpreter: &mut Interpreter<'_>) -> (usize, Vec<String>) {
    allocations_of_session_invoke(interpreter.session())
}

/// [`allocations_of_invoke`] for a session.
fn allocations_of_session_invoke(session: &mut Session<'_>) -> (usize, Vec<String>) {
    session.invoke().expect("first invoke");
    let mut profiler = Allocating::default();
    ALLOCATIONS.with(|n| n.set(0));
    COUNTING.with(|c| c.set(true));
    let result = session.invoke_with(&mut profiler);
    COUNTING.with(|c| c.set(false));
    result.expect("second invoke");
    (ALLOCATIONS.with(|n| n.get()), profiler.ops)
}

/// Every method and rounding on the best backend: scalar on the host, NEON
/// under qemu (the scalar backend is the same portable code on both).
fn configurations() -> Vec<Options> {
    let mut all = Vec::new();
    for backend in [qneon::Backend::best()] {
        for method in [Method::FixedPoint, Method::Lut, Method::DequantF32] {
            for rounding in [Rounding::Single, Rounding::Double] {
                all.push(Options {
                    backend,
                    ..options(rounding, method)
                });
            }
        }
    }
    all
}

#[test]
fn the_counter_counts() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    COUNTING.with(|c| c.set(true));
    let v = std::hint::black_box(vec![1u8; 3]);
    COUNTING.with(|c| c.set(false));
    drop(v);
    assert!(ALLOCATIONS.with(|n| n.get()) >= 1);
}

#[test]
fn mobilebert_invoke_allocates_nothing() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let manifest = manifest("mobilebert_squad/manifest.json");
    let bytes = read_model(manifest["models"]["1l"]["model"].as_str().unwrap());
    for options in configurations() {
        let mut interpreter = Interpreter::new(bytes.as_bytes(), options).expect("load");
        let (n, ops) = allocations_of_invoke(&mut interpreter);
        assert_eq!(
            n, 0,
            "MobileBert 1 layer, {options:?}: {n} allocations in invoke: {ops:?}"
        );
        // A second session of the same plan allocates nothing either.
        let mut session = Session::new(interpreter.shared_plan().clone());
        let (n, ops) = allocations_of_session_invoke(&mut session);
        assert_eq!(
            n, 0,
            "MobileBert 1 layer, second session, {options:?}: {n} allocations: {ops:?}"
        );
    }
}

/// With 4 threads, counting on the test's thread (which runs the loop and
/// share 0) and on the workers while they run shares: 50 invokes after a
/// first.
/// Under rayon's `broadcast` this counted 8,206 allocations (its job list,
/// once per split node); the pool crate allocates nothing per call.
#[test]
fn mobilebert_invoke_with_threads_allocates_nothing() {
    const INVOKES: usize = 50;
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let manifest = manifest("mobilebert_squad/manifest.json");
    let bytes = read_model(manifest["models"]["1l"]["model"].as_str().unwrap());
    let options = Options {
        threads: 4,
        backend: qneon::Backend::best(),
        ..options(Rounding::Single, Method::FixedPoint)
    };
    let mut interpreter = Interpreter::new(bytes.as_bytes(), options).expect("load");
    assert!(interpreter.nodes().any(|n| n.threads == 4));
    interpreter.invoke().expect("first invoke");
    ALL_ALLOCATIONS.store(0, Ordering::Relaxed);
    EVERY_THREAD.store(true, Ordering::Relaxed);
    COUNTING.with(|c| c.set(true));
    for _ in 0..INVOKES {
        interpreter.invoke().expect("invoke");
    }
    COUNTING.with(|c| c.set(false));
    EVERY_THREAD.store(false, Ordering::Relaxed);
    let n = ALL_ALLOCATIONS.load(Ordering::Relaxed);
    assert_eq!(
        n, 0,
        "MobileBert 1 layer, 4 threads: {n} allocations in {INVOKES} invokes"
    );
}

#[test]
fn single_op_invokes_allocate_nothing() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let manifest = manifest("ops/manifest.json");
    let cases = manifest["cases"].as_array().unwrap();
    let mut checked = 0;
    for case in cases {
        let bytes = read_model(case["model"].as_str().unwrap());
        let mut loaded = false;
        for options in configurations() {
            // Cases qneon refuses for a method (LOG_SOFTMAX by table) are
            // the tflite_models tests' business.
            let Ok(mut interpreter) = Interpreter::new(bytes.as_bytes(), options) else {
                continue;
            };
            let (n, ops) = allocations_of_invoke(&mut interpreter);
            assert_eq!(
                n, 0,
                "{}, {options:?}: {n} allocations in invoke: {ops:?}",
                case["name"]
            );
            checked += 1;
            loaded = true;
        }
        assert!(loaded, "{} loads in no configuration", case["name"]);
    }
    assert!(checked >= cases.len());
}

/// The SVDF keyword spotters (state carried in the session's variable
/// block, int16 and int8) and the single-op SVDFs: invoke allocates
/// nothing, also on a step that follows a reset.
#[test]
fn svdf_invokes_allocate_nothing() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let mut models = vec![
        "tflite_micro/keyword_scrambled.tflite".to_string(),
        "tflite_micro/keyword_scrambled_8bit.tflite".to_string(),
    ];
    let svdf = manifest("tflite_micro/refs/svdf/manifest.json");
    for case in svdf["cases"].as_array().unwrap() {
        models.push(case["model"].as_str().unwrap().to_string());
    }
    for model in &models {
        let bytes = read_model(model);
        for options in configurations() {
            let mut interpreter = Interpreter::new(bytes.as_bytes(), options)
                .unwrap_or_else(|e| panic!("{model}: {e}"));
            let (n, ops) = allocations_of_invoke(&mut interpreter);
            assert_eq!(
                n, 0,
                "{model}, {options:?}: {n} allocations in invoke: {ops:?}"
            );
            interpreter.reset_variables();
            let (n, ops) = allocations_of_invoke(&mut interpreter);
            assert_eq!(
                n, 0,
                "{model} after a reset, {options:?}: {n} allocations: {ops:?}"
            );
        }
    }
}

/// With `Options::threshold`, the fused nodes (the class-score LOGISTIC of
/// the YOLOv8n-shaped net, the SOFTMAX of the DS-CNN keyword spotter) write
/// into hit buffers the session allocated at creation: invoke allocates
/// nothing, on every kernel path (XNNPACK's LOGISTIC by run-then-filter)
/// and for a threshold keeping everything (the buffers' worst case).
#[test]
fn fused_threshold_invokes_allocate_nothing() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    use qneon_runtime::interp::TfliteKernels;
    let mut checked = 0;
    for (model, input) in [
        (
            "nets/yolov8n_shaped_96.tflite",
            "nets/refs/yolov8n_shaped_96/run0.input.0.npy",
        ),
        (
            "nets/ds_cnn_kws.tflite",
            "nets/refs/ds_cnn_kws/run0.input.0.npy",
        ),
    ] {
        let bytes = read_model(model);
        let data = npy(input).data;
        for (method, kernels) in [
            (Method::FixedPoint, TfliteKernels::Reference),
            (Method::Lut, TfliteKernels::Optimized),
            (Method::Lut, TfliteKernels::Xnnpack),
        ] {
            for threshold in [0.0, 0.5] {
                let options = Options {
                    kernels,
                    backend: qneon::Backend::best(),
                    threshold: Some(threshold),
                    ..options(Rounding::Single, method)
                };
                let mut interpreter = Interpreter::new(bytes.as_bytes(), options).expect("load");
                assert!(interpreter.nodes().any(|n| n.fused.is_some()), "{model}");
                interpreter.set_input(0, &data).unwrap();
                let (n, ops) = allocations_of_invoke(&mut interpreter);
                assert_eq!(n, 0, "{model}, {options:?}: {n} allocations: {ops:?}");
                let fused = (0..interpreter.outputs().len())
                    .filter_map(|p| interpreter.hits(p))
                    .count();
                assert_eq!(fused, 1, "{model}");
                checked += 1;
            }
        }
    }
    assert_eq!(checked, 12);
}

/// The published LSTM models (UNIDIRECTIONAL_SEQUENCE_LSTM with its state in
/// the session, 24 inputs per node) and the generated LSTM cases: no
/// allocation in invoke, also after a reset of the variables.
#[test]
fn lstm_invokes_allocate_nothing() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let mut models: Vec<String> = [
        "trained_lstm_int8",
        "dtln_noise_suppression",
        "micro_speech_lstm",
    ]
    .iter()
    .map(|m| format!("tflite_micro/{m}.tflite"))
    .collect();
    let ops = manifest("ops/manifest.json");
    for case in ops["cases"].as_array().unwrap() {
        if case["name"].as_str().unwrap().starts_with("lstm_") {
            models.push(case["model"].as_str().unwrap().to_string());
        }
    }
    assert_eq!(models.len(), 15);
    for model in &models {
        let bytes = read_model(model);
        for options in configurations() {
            let mut interpreter = Interpreter::new(bytes.as_bytes(), options).expect("load");
            let (n, ops) = allocations_of_invoke(&mut interpreter);
            assert_eq!(n, 0, "{model}, {options:?}: {n} allocations: {ops:?}");
            interpreter.reset_variables();
            let (n, ops) = allocations_of_invoke(&mut interpreter);
            assert_eq!(
                n, 0,
                "{model} after reset, {options:?}: {n} allocations: {ops:?}"
            );
        }
    }
}
