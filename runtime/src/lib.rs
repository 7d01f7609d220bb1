//! # qneon-runtime
//!
//! `.tflite` models run on the [`qneon`] kernels: load (the file verified by
//! [`qneon_tflite`]), prepare every operator as TFLite's `Prepare` does,
//! plan one arena ([`interp::Plan`], immutable and shareable across
//! threads), then invoke any number of [`interp::Session`]s of it;
//! [`interp::Interpreter`] is one plan with one session. The library stays a
//! small `no_std` dependency; everything that needs files, a heap and `std`
//! is here.
//!
//! * [`interp`]: the interpreter, its [`Options`](interp::Options) (rounding,
//!   softmax method, backend, memory budget, threads per invoke) and the
//!   [`Profiler`](interp::Profiler) hook that sees every node it runs;
//! * [`npy`]: `.npy` arrays, the inputs and outputs of the command line;
//! * [`Error`]: model problems (unsupported or invalid operators, a graph
//!   that cannot be planned, over budget, bad input), and the library's
//!   errors wrapped in [`Error::Kernel`].

#![deny(missing_docs)]
#![forbid(unsafe_code)]

mod error;
pub mod interp;
pub mod npy;

pub use error::{Error, Result};
