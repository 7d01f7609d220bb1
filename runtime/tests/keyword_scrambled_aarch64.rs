//! keyword_scrambled (the published SVDF keyword spotter) against LiteRT's
//! own aarch64 build: the sequences of `tflite_micro/refs/sequences.json`
//! run by `cargo xtask compare --refs-only` with each sequence's three
//! input files (one interpreter, one invoke per step, builtin kernels
//! without XNNPACK, qemu `-cpu neoverse-n1`), its outputs after each step
//! committed as `seq<q>.step<k>.litert_aarch64_builtin.0.npy`. qneon's
//! optimized kernels with the LUT softmax must give the same bytes at every
//! step, on the scalar backend and on the best one (NEON under aarch64).

mod tflite_common;

use qneon::{Backend, Method};
use qneon_runtime::interp::{Interpreter, Rounding, TfliteKernels};
use tflite_common::*;

const REFS: &str = "tflite_micro/refs/keyword_scrambled";
const SEQUENCES: usize = 3;
const STEPS: usize = 3;

#[test]
fn keyword_scrambled_sequences_equal_litert_aarch64_builtin() {
    let bytes = read_model("tflite_micro/keyword_scrambled.tflite");
    for backend in [Backend::Scalar, Backend::best()] {
        let mut options = options(Rounding::Single, Method::Lut);
        options.kernels = TfliteKernels::Optimized;
        options.backend = backend;
        let mut interpreter = Interpreter::new(bytes.as_bytes(), options).unwrap();
        for seq in 0..SEQUENCES {
            // Each sequence starts from the zero state, as LiteRT's fresh
            // interpreter did.
            interpreter.reset_variables();
            for step in 0..STEPS {
                let input = npy(&format!("{REFS}/seq{seq}.step{step}.input.0.npy"));
                interpreter.set_input(0, &input.data).unwrap();
                interpreter.invoke().unwrap();
                let expected = npy(&format!(
                    "{REFS}/seq{seq}.step{step}.litert_aarch64_builtin.0.npy"
                ));
                assert_eq!(
                    interpreter.output(0).unwrap(),
                    &expected.data[..],
                    "seq{seq} step {step} on {backend:?}"
                );
            }
        }
    }
}
