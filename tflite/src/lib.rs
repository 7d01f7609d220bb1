//! A zero-copy, eagerly verified reader of TFLite model files (`.tflite`).
//!
//! [`Model::parse`] takes the file's bytes, walks every table, vector and
//! string this crate exposes once, and checks it: offsets and lengths lie in
//! the file, indices (tensors, buffers, operator codes) are in range, shapes
//! are non-negative and their element and byte counts fit `usize`, constant
//! buffers hold exactly the bytes their tensors need, quantization vectors
//! are consistent, and the declared size of the non-constant tensors fits a
//! caller-set budget ([`ParseOptions`]). A bad file is an [`Error`] that says
//! what and where; nothing panics, and nothing is allocated by a size the
//! walk has not checked against the file.
//!
//! After `parse`, every accessor is infallible. Constant data are `&[u8]`
//! slices into the file; [`values`] reads them as numbers, borrowing when the
//! slice is aligned and copying when it is not.
//!
//! The reader does no arithmetic on tensors: it answers "what is in this
//! file". The FlatBuffers code in `generated.rs` comes from the crate's own
//! schema (`schema/tflite.fbs`) through planus; see README.md.
//!
//! ```no_run
//! let bytes = qneon_tflite::ModelBytes::read("model.tflite", 1 << 30)?;
//! let model = qneon_tflite::Model::parse(bytes.as_bytes())?;
//! for operator in model.main_subgraph().operators() {
//!     println!("{} {}", operator.op(), operator.options());
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

// The hand-written code has no unsafe; planus emits some in the generated
// module (its writer side and trait impls), allowed there alone.
#![deny(unsafe_code)]
#![warn(missing_docs)]

pub mod dtype;
pub mod error;
mod file;
mod model;
pub mod op;
pub mod options;
mod values;

#[rustfmt::skip]
#[allow(unsafe_code, clippy::all, clippy::pedantic, missing_docs, unused_imports)]
mod generated;

pub use dtype::TensorType;
pub use error::{Error, Place, QuantizationProblem, Result, Structure};
pub use file::ModelBytes;
/// The generated FlatBuffers types of the complete TFLite schema
/// (`schema/tflite.fbs`): owned tables (as in [`Options`]), their
/// zero-copy `...Ref` readers and builders.
pub use generated::tflite as schema;
pub use model::{
    Metadata, Model, Operator, OperatorCode, ParseOptions, Quantization, Subgraph, Tensor,
    FILE_IDENTIFIER, SCHEMA_VERSION,
};
pub use op::{BuiltinOp, OpKind};
pub use options::{Options, OptionsUnion};
pub use values::{values, Element};

#[cfg(test)]
mod tests;
