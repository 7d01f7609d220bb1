//! Plans and sessions: one plan shared by sessions on two threads, and the
//! variable tensors a session keeps (persisting across invokes, reset on
//! demand). The published models' refusals are in `published_models.rs`.

mod tflite_common;

use std::sync::Arc;

use qneon::Method;
use qneon_runtime::interp::{Interpreter, Plan, Rounding, Session};
use qneon_runtime::Error;
use tflite_common::*;

#[test]
fn a_plan_is_send_and_sync() {
    fn shareable<T: Send + Sync>() {}
    shareable::<Plan<'static>>();
    shareable::<Arc<Plan<'_>>>();
    fn sendable<T: Send>() {}
    sendable::<Session<'static>>();
}

/// The 1-layer MobileBert's first manifest input, as (position, bytes).
fn mobilebert_inputs(interpreter: &Interpreter<'_>) -> Vec<(usize, Vec<u8>)> {
    let manifest = manifest("mobilebert_squad/manifest.json");
    let mut inputs = Vec::new();
    for (name, file) in manifest["inputs"]["case2_short"].as_object().unwrap() {
        let position = interpreter.input_position(name).expect("input by name");
        inputs.push((position, npy(file.as_str().unwrap()).data));
    }
    inputs
}

#[test]
fn two_sessions_of_one_plan_on_two_threads_give_one_sessions_bytes() {
    let manifest = manifest("mobilebert_squad/manifest.json");
    let bytes = read_model(manifest["models"]["1l"]["model"].as_str().unwrap());
    let options = options(Rounding::Single, Method::Lut);
    // One session alone.
    let mut alone = Interpreter::new(bytes.as_bytes(), options).unwrap();
    let inputs = mobilebert_inputs(&alone);
    assert!(!inputs.is_empty());
    for (position, data) in &inputs {
        alone.set_input(*position, data).unwrap();
    }
    alone.invoke().unwrap();
    let expected: Vec<Vec<u8>> = (0..alone.outputs().len())
        .map(|p| alone.output(p).unwrap().to_vec())
        .collect();
    // Two sessions of one shared plan (owning the bytes: `Plan<'static>`),
    // invoked at the same time.
    let shared = Arc::new(qneon_tflite::ModelBytes::copy_from(bytes.as_bytes()));
    let plan = Arc::new(Plan::from_shared(shared, options).unwrap());
    let run = |plan: Arc<Plan<'static>>| {
        let inputs = inputs.clone();
        std::thread::spawn(move || {
            let mut session = Session::new(plan);
            let mut outputs = Vec::new();
            for _ in 0..2 {
                for (position, data) in &inputs {
                    session.set_input(*position, data).unwrap();
                }
                session.invoke().unwrap();
                outputs = (0..session.plan().output_tensors().len())
                    .map(|p| session.output(p).unwrap().to_vec())
                    .collect::<Vec<_>>();
            }
            outputs
        })
    };
    let (a, b) = (run(plan.clone()), run(plan.clone()));
    assert_eq!(a.join().unwrap(), expected);
    assert_eq!(b.join().unwrap(), expected);
}

/// ADD(x, state) -> y, int8 [1, 4], scale 0.5; `state` a variable tensor
/// (zero point 3) that no operator writes: legal, it holds state.
fn add_with_variable_model() -> Vec<u8> {
    add_model(&[0, 1], &[2])
}

/// ADD of tensors `inputs` into `outputs` over x (0), state (1, a
/// variable) and y (2); x is the model input, y its output.
fn add_model(inputs: &[i32], outputs: &[i32]) -> Vec<u8> {
    use flat::{Field::*, Table};
    let tensor = |name: &str, zero_point: i64, variable: bool| {
        Table(vec![
            (0, I32s(vec![1, 4])),
            (1, U8(9)), // INT8
            (2, U32(0)),
            (3, Str(name.to_string())),
            (
                4,
                flat::Field::Table(Table(vec![
                    (2, F32s(vec![0.5])),
                    (3, I64s(vec![zero_point])),
                ])),
            ),
            (5, Bool(variable)),
        ])
    };
    let model = Table(vec![
        (0, U32(3)),
        (
            1,
            Tables(vec![Table(vec![(0, U8(0)), (2, I32(1)), (3, I32(0))])]), // ADD
        ),
        (
            2,
            Tables(vec![Table(vec![
                (
                    0,
                    Tables(vec![
                        tensor("x", 0, false),
                        tensor("state", 3, true),
                        tensor("y", 0, false),
                    ]),
                ),
                (1, I32s(vec![0])),
                (2, I32s(vec![2])),
                (
                    3,
                    Tables(vec![Table(vec![
                        (0, U32(0)),
                        (1, I32s(inputs.to_vec())),
                        (2, I32s(outputs.to_vec())),
                    ])]),
                ),
                (4, Str("main".to_string())),
            ])]),
        ),
        (4, Tables(vec![Table(vec![])])),
    ]);
    flat::file(&model)
}

#[test]
fn variable_tensors_persist_across_invokes_and_reset_to_their_zero() {
    let file = qneon_tflite::ModelBytes::copy_from(&add_with_variable_model());
    let model = qneon_tflite::Model::parse(file.as_bytes()).expect("the built model parses");
    assert!(model.main_subgraph().tensors()[1].is_variable());
    let options = options(Rounding::Single, Method::FixedPoint);
    let plan =
        Arc::new(Plan::new(file.as_bytes(), options).expect("a variable read first is legal"));
    assert!(plan.tensors()[1].variable);
    assert!(plan.variable_bytes() >= 4);
    let mut session = Session::new(plan.clone());
    let x = [1u8, 2, 3, 250];
    // Created reset: the int8 zero point (real 0), so y = x.
    assert_eq!(session.tensor_data(1), Some(&[3u8; 4][..]));
    session.set_input(0, &x).unwrap();
    session.invoke().unwrap();
    assert_eq!(session.output(0), Some(&x[..]));
    // A state of real 1.0 (q 5) adds 2 (real 1.0 at scale 0.5), and stays
    // across invokes.
    session.variable_mut(1).unwrap().copy_from_slice(&[5; 4]);
    let plus_two: Vec<u8> = x
        .iter()
        .map(|&q| (q as i8).saturating_add(2) as u8)
        .collect();
    for _ in 0..2 {
        session.invoke().unwrap();
        assert_eq!(session.output(0), Some(&plus_two[..]));
        assert_eq!(session.tensor_data(1), Some(&[5u8; 4][..]));
    }
    // Another session of the plan has its own state.
    let other = Session::new(plan);
    assert_eq!(other.tensor_data(1), Some(&[3u8; 4][..]));
    // Reset: back to the zero point.
    session.reset_variables();
    assert_eq!(session.tensor_data(1), Some(&[3u8; 4][..]));
    session.invoke().unwrap();
    assert_eq!(session.output(0), Some(&x[..]));
    // The interpreter resets too.
    let mut interpreter = Interpreter::new(file.as_bytes(), options).unwrap();
    interpreter.session().variable_mut(1).unwrap().fill(5);
    interpreter.reset_variables();
    assert_eq!(interpreter.tensor_data(1), Some(&[3u8; 4][..]));
}

#[test]
fn an_operator_writing_a_variable_as_its_output_is_a_graph_error() {
    // ADD(x, y) -> state: a variable is updated in place, never an output.
    let file = qneon_tflite::ModelBytes::copy_from(&add_model(&[0, 0], &[1]));
    match Interpreter::new(
        file.as_bytes(),
        options(Rounding::Single, Method::FixedPoint),
    ) {
        Err(Error::Graph { problem }) => {
            assert!(problem.contains("writes variable tensor 1"), "{problem}")
        }
        other => panic!("{other:?}"),
    }
}
