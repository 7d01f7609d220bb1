//! The C API of qneon: prepared operators behind opaque handles.
//!
//! Every operator and element type has four functions, named
//! `qneon_<op>_<type>_<verb>`:
//!
//! * `create(input, [beta,] output, method, &handle)`: validates and prepares
//!   (qneon's `new()`); on success writes a new handle.
//! * `run(handle, input, output, len, [row_len,] backend)`: the op on `len`
//!   elements (rows of `row_len` for softmax and log-softmax); allocates
//!   nothing.
//! * `destroy(handle)`: frees the handle (null is accepted and ignored).
//! * `output_quantization()`: the output quantization `create` requires.
//!
//! plus `qneon_q31_{softmax,logistic,tanh}` on raw Q31 data and
//! `qneon_quantize_<type>` / `qneon_dequantize_<type>`.
//!
//! The int8 ops with several inputs or parameter arrays follow the same
//! create / run / destroy pattern: `qneon_{add,sub,mul}_*` (with
//! `run_broadcast` for a repeated value or row), `qneon_no_norm_*`,
//! `qneon_gemm_*` (weights packed by `create`, replaced by `set_weights`),
//! `qneon_matmul_*` (the caller's scratch, sized by `qneon_matmul_scratch`),
//! `qneon_cross_entropy_*` over `float` logits (forward, backward,
//! NLL), and `qneon_svdf_i16_*` (one time step per `run`, the state a
//! buffer the caller keeps across calls and resets with
//! `qneon_svdf_i16_reset_state`). The `float` kernels `qneon_f32_*` and `qneon_target_log_probs`
//! need no handle. Arrays are a pointer and an element count; where the
//! count follows from a shape (`n * k` weights, `m * k` GEMM inputs) it is
//! computed, and an overflowing product is a `QNEON_STATUS_LENGTH`.
//!
//! Every function that can fail returns a [`QneonStatus`]; on failure
//! [`qneon_last_error_message`] gives the reason (the cause first, then what
//! to use instead), for the calling thread. No panic crosses the boundary:
//! every entry point runs under `catch_unwind` and reports a caught panic as
//! [`QneonStatus::Internal`]. Null pointers (except with a length of 0),
//! misaligned pointers, lengths whose byte size overflows, a buffer the call
//! writes overlapping another of its buffers, and enum values out of range
//! are reported as errors, never dereferenced. A handle may be used from several threads at once (`run`
//! only reads it; `qneon_gemm_set_weights` writes it, so not concurrently
//! with anything else on that handle); `destroy` must be the handle's last
//! use.
//!
//! The per-type functions of the quantized ops and the conversions
//! (`rows.rs`, `elements.rs`, `raw/conversions.rs`) are generated from
//! `qneon::catalogue` by `cargo xtask capi-header`, which then writes the
//! header `include/qneon.h` (cbindgen); both are committed; `cargo xtask capi` checks that it is current and
//! runs `examples/softmax.c` and `examples/ops.c` against this library on the
//! host and under qemu.

#![deny(unsafe_op_in_unsafe_fn)]
#![warn(clippy::undocumented_unsafe_blocks)]

mod binary;
mod choices;
mod elements;
mod entry;
mod f32;
mod heads;
mod loss;
mod loss_quantized;
mod matrix;
mod no_norm;
mod raw;
mod rows;
mod svdf;

pub use binary::*;
pub use choices::{
    QneonActivation, QneonReduction, QneonRequantization, QneonRounding, QneonSoftmaxVariant,
};
pub use elements::*;
pub use entry::{
    qneon_last_error_message, QneonBackend, QneonMethod, QneonQuantParams, QneonStatus,
};
pub use f32::*;
pub use heads::*;
pub use loss::*;
pub use loss_quantized::*;
pub use matrix::*;
pub use no_norm::*;
pub use raw::*;
pub use rows::*;
pub use svdf::*;
