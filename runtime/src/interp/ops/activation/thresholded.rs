//! LOGISTIC and SOFTMAX fused with a probability threshold
//! ([`Options::threshold`](crate::interp::Options::threshold)): the
//! library's [`qneon::ThresholdedLogistic`] / [`qneon::ThresholdedSoftmax`]
//! reading the node's input and writing only the kept elements into a hit
//! buffer the session owns, or, where the library's thresholded kernel
//! cannot reproduce the path's bytes, the node's own dense kernel followed
//! by the filter.
//!
//! Which one a node gets:
//!
//! | op, type | path | fused kernel |
//! | --- | --- | --- |
//! | LOGISTIC int8 / uint8 / int16 | reference, optimized | `ThresholdedLogistic` (same method as the dense kernel) |
//! | LOGISTIC int16 | xnnpack (left to the builtin kernels) | `ThresholdedLogistic` |
//! | LOGISTIC int8 / uint8 | xnnpack | run then filter: XNNPACK's float-built table is not a [`qneon::Method`] the thresholded op wraps |
//! | SOFTMAX int8 / uint8 | every path (XNNPACK leaves it to the builtin kernels) | `ThresholdedSoftmax` (same method and beta) |
//! | SOFTMAX int16 | every path | run then filter: the library's thresholded softmax is 8-bit only |
//!
//! Either way the hits are the dense output filtered: index (flat, in the
//! output tensor's row-major order) and code of every element whose code
//! is at least the bound `T` maps to, in index order.

use qneon::{Hit, QuantElem, QuantParams, RowHit, ThresholdedLogistic, ThresholdedSoftmax};
use qneon_tflite::{BuiltinOp, Options as OpOptions, TensorType};

use super::super::buffers::{view, Io};
use super::super::kernel::Kernel;
use super::super::op::Op;
use super::activation_method;
use crate::error::Result;
use crate::interp::options::TfliteKernels;
use qneon::Backend;

/// The kept elements of one fused node, typed by its output: written by
/// [`Fused::run`], allocated once per session at the output's element
/// count (the worst case: every element kept).
#[derive(Clone, Debug)]
pub(crate) enum HitStore {
    Int8(Vec<Hit<i8>>),
    Uint8(Vec<Hit<u8>>),
    Int16(Vec<Hit<i16>>),
    Int8Rows(Vec<RowHit<i8>>),
    Uint8Rows(Vec<RowHit<u8>>),
}

/// The first `len` hits of a node, as the session hands them out: flat
/// indices for LOGISTIC (and for the run-then-filter paths), `(row, index
/// in the row)` for the thresholded SOFTMAX.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum HitSlice<'a> {
    /// int8 output, flat indices.
    Int8(&'a [Hit<i8>]),
    /// uint8 output, flat indices.
    Uint8(&'a [Hit<u8>]),
    /// int16 output, flat indices.
    Int16(&'a [Hit<i16>]),
    /// int8 SOFTMAX output: rows of the innermost dimension.
    Int8Rows(&'a [RowHit<i8>]),
    /// uint8 SOFTMAX output: rows of the innermost dimension.
    Uint8Rows(&'a [RowHit<u8>]),
}

impl HitStore {
    /// The first `len` hits.
    pub(crate) fn slice(&self, len: usize) -> HitSlice<'_> {
        match self {
            HitStore::Int8(v) => HitSlice::Int8(&v[..len.min(v.len())]),
            HitStore::Uint8(v) => HitSlice::Uint8(&v[..len.min(v.len())]),
            HitStore::Int16(v) => HitSlice::Int16(&v[..len.min(v.len())]),
            HitStore::Int8Rows(v) => HitSlice::Int8Rows(&v[..len.min(v.len())]),
            HitStore::Uint8Rows(v) => HitSlice::Uint8Rows(&v[..len.min(v.len())]),
        }
    }
}

/// The fused kernel of a node.
#[derive(Debug)]
enum FusedKernel {
    LogisticI8(ThresholdedLogistic<i8>),
    LogisticU8(ThresholdedLogistic<u8>),
    LogisticI16(ThresholdedLogistic<i16>),
    SoftmaxI8(ThresholdedSoftmax<i8>),
    SoftmaxU8(ThresholdedSoftmax<u8>),
    /// The node's dense kernel, then every output code compared with
    /// `code_bound` (the smallest passing code).
    Filter {
        dtype: TensorType,
        code_bound: i32,
    },
}

/// A LOGISTIC or SOFTMAX node fused with the threshold.
#[derive(Debug)]
pub(crate) struct Fused {
    kernel: FusedKernel,
    /// Elements of the output (the hit buffer's size).
    len: usize,
    /// Elements of a SOFTMAX row (the innermost dimension).
    row: usize,
    /// What inspect shows: `"ThresholdedLogistic (T=0.5)"`, or the
    /// run-then-filter fallback and why.
    pub(crate) description: String,
}

/// The smallest code of `dtype` whose value `(q - zero_point) * scale`
/// (in `f64`) is at least `threshold`, one past the largest if none is:
/// the library's rule for its thresholded ops, for the run-then-filter
/// paths.
fn code_bound(dtype: TensorType, q: QuantParams, threshold: f32) -> i32 {
    let (min, max) = match dtype {
        TensorType::Int8 => (i8::MIN as i32, i8::MAX as i32),
        TensorType::Uint8 => (0, u8::MAX as i32),
        _ => (i16::MIN as i32, i16::MAX as i32),
    };
    let (scale, t) = (q.scale as f64, threshold as f64);
    (min..=max)
        .find(|&c| (c - q.zero_point) as f64 * scale >= t)
        .unwrap_or(max + 1)
}

/// Prepares the fused form of LOGISTIC or SOFTMAX node `op` (whose dense
/// `Prepare` succeeded: its checks are not repeated) for `threshold`.
pub(crate) fn prepare(op: &Op<'_, '_>, threshold: f32) -> Result<Fused> {
    let (input, output) = (op.input(0)?, op.output(0)?);
    let (in_q, out_q) = (
        op.per_tensor(input, "input")?,
        op.per_tensor(output, "output")?,
    );
    let dtype = input.dtype();
    let len = output.element_count();
    let row = output.shape().last().copied().unwrap_or(1).max(1);
    let method = activation_method(op.builtin, dtype, op.options.softmax_method);
    let e = |err: qneon::Error| op.kernel_error(err);
    let xnnpack_table = op.options.kernels == TfliteKernels::Xnnpack
        && op.builtin == BuiltinOp::LOGISTIC
        && matches!(dtype, TensorType::Int8 | TensorType::Uint8);
    let filter = |why: &str| Fused {
        kernel: FusedKernel::Filter {
            dtype,
            code_bound: code_bound(dtype, out_q, threshold),
        },
        len,
        row,
        description: format!("run then filter (T={threshold}): {why}"),
    };
    if xnnpack_table {
        return Ok(filter(
            "XNNPACK's LOGISTIC table has no thresholded kernel in the library",
        ));
    }
    let named = |kernel, name: &str| Fused {
        kernel,
        len,
        row,
        description: format!("{name} (T={threshold}, method {method})"),
    };
    Ok(match (op.builtin, dtype) {
        (BuiltinOp::LOGISTIC, TensorType::Int8) => named(
            FusedKernel::LogisticI8(
                ThresholdedLogistic::new(in_q, out_q, method, threshold).map_err(e)?,
            ),
            "ThresholdedLogistic",
        ),
        (BuiltinOp::LOGISTIC, TensorType::Uint8) => named(
            FusedKernel::LogisticU8(
                ThresholdedLogistic::new(in_q, out_q, method, threshold).map_err(e)?,
            ),
            "ThresholdedLogistic",
        ),
        (BuiltinOp::LOGISTIC, TensorType::Int16) => named(
            FusedKernel::LogisticI16(
                ThresholdedLogistic::new(in_q, out_q, method, threshold).map_err(e)?,
            ),
            "ThresholdedLogistic",
        ),
        (BuiltinOp::SOFTMAX, TensorType::Int8 | TensorType::Uint8) => {
            let beta = match op.operator.options() {
                OpOptions::Builtin(qneon_tflite::schema::BuiltinOptions::SoftmaxOptions(s)) => {
                    s.beta
                }
                _ => 1.0,
            };
            let kernel = if dtype == TensorType::Int8 {
                FusedKernel::SoftmaxI8(
                    ThresholdedSoftmax::new(in_q, beta, out_q, method, Some(threshold), None)
                        .map_err(e)?,
                )
            } else {
                FusedKernel::SoftmaxU8(
                    ThresholdedSoftmax::new(in_q, beta, out_q, method, Some(threshold), None)
                        .map_err(e)?,
                )
            };
            named(kernel, "ThresholdedSoftmax")
        }
        (BuiltinOp::SOFTMAX, _) => filter("the library's thresholded softmax is 8-bit only"),
        _ => return Err(op.unsupported_types()),
    })
}

/// Keeps every `(i, code)` of `output` with `code >= bound` into `hits`.
fn filter<T: QuantElem + bytemuck::Pod>(
    output: &[u8],
    bound: i32,
    hits: &mut [Hit<T>],
) -> Result<usize, String> {
    let output: &[T] = view(output)?;
    let mut n = 0;
    for (i, &value) in output.iter().enumerate() {
        if value.to_i32() >= bound {
            let slot = hits
                .get_mut(n)
                .ok_or_else(|| format!("hit buffer of {} elements overflows", output.len()))?;
            *slot = Hit {
                index: i as u32,
                value,
            };
            n += 1;
        }
    }
    Ok(n)
}

impl Fused {
    /// A hit buffer for this node: one slot per output element.
    pub(crate) fn new_store(&self) -> HitStore {
        let n = self.len;
        match &self.kernel {
            FusedKernel::LogisticI8(_) => HitStore::Int8(vec![Hit::default(); n]),
            FusedKernel::LogisticU8(_) => HitStore::Uint8(vec![Hit::default(); n]),
            FusedKernel::LogisticI16(_) => HitStore::Int16(vec![Hit::default(); n]),
            FusedKernel::SoftmaxI8(_) => HitStore::Int8Rows(vec![RowHit::default(); n]),
            FusedKernel::SoftmaxU8(_) => HitStore::Uint8Rows(vec![RowHit::default(); n]),
            FusedKernel::Filter { dtype, .. } => match dtype {
                TensorType::Int8 => HitStore::Int8(vec![Hit::default(); n]),
                TensorType::Uint8 => HitStore::Uint8(vec![Hit::default(); n]),
                _ => HitStore::Int16(vec![Hit::default(); n]),
            },
        }
    }

    /// Elements of a row (SOFTMAX's innermost dimension), to flatten
    /// `(row, index)` hits.
    pub(crate) fn row(&self) -> usize {
        self.row
    }

    /// Runs the node into `store` and returns the number of hits. `dense`
    /// is the node's own kernel (run by the run-then-filter paths, which
    /// write the dense output first; the fused kernels leave it unwritten).
    pub(crate) fn run(
        &self,
        dense: &dyn Kernel,
        backend: Backend,
        io: &mut Io<'_>,
        store: &mut HitStore,
    ) -> Result<usize, String> {
        let input = io.ins.first().copied().unwrap_or(&[]);
        let err = |e: qneon::Error| e.to_string();
        match (&self.kernel, store) {
            (FusedKernel::LogisticI8(op), HitStore::Int8(hits)) => {
                op.run_with(backend, view(input)?, hits).map_err(err)
            }
            (FusedKernel::LogisticU8(op), HitStore::Uint8(hits)) => {
                op.run_with(backend, view(input)?, hits).map_err(err)
            }
            (FusedKernel::LogisticI16(op), HitStore::Int16(hits)) => {
                op.run_with(backend, view(input)?, hits).map_err(err)
            }
            (FusedKernel::SoftmaxI8(op), HitStore::Int8Rows(hits)) => op
                .run_with(backend, view(input)?, self.row, hits)
                .map_err(err),
            (FusedKernel::SoftmaxU8(op), HitStore::Uint8Rows(hits)) => op
                .run_with(backend, view(input)?, self.row, hits)
                .map_err(err),
            (FusedKernel::Filter { code_bound, .. }, store) => {
                dense.run(backend, io)?;
                let output = io.outs.first().map(|o| &**o).unwrap_or(&[]);
                match store {
                    HitStore::Int8(hits) => filter::<i8>(output, *code_bound, hits),
                    HitStore::Uint8(hits) => filter::<u8>(output, *code_bound, hits),
                    HitStore::Int16(hits) => filter::<i16>(output, *code_bound, hits),
                    _ => Err("a row hit buffer for a run-then-filter node".to_string()),
                }
            }
            _ => Err("the hit buffer's type is not the fused kernel's".to_string()),
        }
    }
}
