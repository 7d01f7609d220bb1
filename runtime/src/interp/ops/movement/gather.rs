//! GATHER (TFLite's `axis` and `batch_dims`): slices of the params picked by
//! int32 indices, which are checked at run time (or at load when constant).

use qneon_tflite::{Options as OpOptions, TensorType};

use crate::error::Result;
use std::ops::Range;

use qneon::Backend;

use crate::interp::ops::buffers::{view, Io};
use crate::interp::ops::kernel::{Kernel, PreparedOp};
use crate::interp::ops::op::Op;

/// TFLite's `Prepare` of GATHER: int32 indices, `axis` and `batch_dims`
/// that fit the shapes, int8 params and output quantized alike.
pub(crate) fn prepare(op: &Op<'_, '_>) -> Result<PreparedOp> {
    op.input_count(2, 2)?;
    op.output_count(1)?;
    let (params, indices, output) = (op.input(0)?, op.input(1)?, op.output(0)?);
    if indices.dtype() != TensorType::Int32 || params.dtype() != output.dtype() {
        return Err(op.unsupported_types());
    }
    let elem = op.elem(params)?;
    let (axis, batch_dims) = match op.operator.options() {
        OpOptions::Builtin(qneon_tflite::schema::BuiltinOptions::GatherOptions(g)) => {
            (g.axis as i64, g.batch_dims as i64)
        }
        _ => (0, 0),
    };
    let p = params.shape();
    let axis = op.normalize_axis(axis, p.len())?;
    let i = indices.shape();
    let batch_dims = if batch_dims < 0 {
        batch_dims + i.len() as i64
    } else {
        batch_dims
    };
    let batch_dims = usize::try_from(batch_dims)
        .ok()
        .filter(|&b| b <= axis && b <= i.len() && p[..b] == i[..b])
        .ok_or_else(|| op.invalid(format!("batch_dims {batch_dims} does not fit the shapes")))?;
    let expected: Vec<usize> = p[..axis]
        .iter()
        .chain(&i[batch_dims..])
        .chain(&p[axis + 1..])
        .copied()
        .collect();
    op.expect_shape(output, &expected)?;
    if params.dtype().code() == TensorType::Int8.code() {
        let (a, b) = (params.quantization(), output.quantization());
        if a.and_then(|q| q.per_tensor()) != b.and_then(|q| q.per_tensor()) {
            return Err(op.invalid("int8 params and output quantization differ"));
        }
    }
    let batch: usize = p[..batch_dims].iter().product();
    let gather = Gather {
        batch,
        outer: p[batch_dims..axis].iter().product(),
        axis_size: p[axis],
        coords: i[batch_dims..].iter().product(),
        inner_bytes: p[axis + 1..].iter().product::<usize>() * elem,
    };
    if indices.is_constant() {
        // Constant indices out of range: refuse at load rather than at run.
        let values = op.constant_ints(indices, "indices")?;
        if let Some(bad) = values.iter().find(|&&v| v < 0 || v as usize >= p[axis]) {
            return Err(op.invalid(format!("constant index {bad} is outside 0..{}", p[axis])));
        }
    }
    Ok(PreparedOp::elements(gather, output.element_count()))
}

/// A prepared GATHER (TFLite's `axis` and `batch_dims`).
#[derive(Clone, Debug)]
pub struct Gather {
    /// Product of the batch dimensions.
    pub batch: usize,
    /// Product of the dimensions between the batch ones and `axis`.
    pub outer: usize,
    /// Size of the gathered axis (indices must lie in `0..axis_size`).
    pub axis_size: usize,
    /// Indices per batch.
    pub coords: usize,
    /// Bytes of one gathered slice (the dimensions after `axis`).
    pub inner_bytes: usize,
}

impl Gather {
    /// Copies the slices `indices` pick; an error naming the first index
    /// outside `0..axis_size` (TFLite fails the same way at run time).
    pub fn run(&self, params: &[u8], indices: &[i32], output: &mut [u8]) -> Result<(), String> {
        let n = self.inner_bytes;
        for b in 0..self.batch {
            for o in 0..self.outer {
                let table = (b * self.outer + o) * self.axis_size;
                for c in 0..self.coords {
                    let raw = indices[b * self.coords + c];
                    let index = usize::try_from(raw)
                        .ok()
                        .filter(|&i| i < self.axis_size)
                        .ok_or_else(|| {
                            format!(
                                "index {raw} (position {}) is outside 0..{}",
                                b * self.coords + c,
                                self.axis_size
                            )
                        })?;
                    let src = (table + index) * n;
                    let dst = ((b * self.outer + o) * self.coords + c) * n;
                    output[dst..dst + n].copy_from_slice(&params[src..src + n]);
                }
            }
        }
        Ok(())
    }
}

impl Kernel for Gather {
    /// Params input 0, int32 indices input 1.
    fn run_tiles(&self, _: Backend, _: Range<usize>, io: &mut Io<'_>) -> Result<(), String> {
        self.run(io.ins[0], view(io.ins[1])?, io.outs[0])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gather_refuses_out_of_range_indices() {
        let g = Gather {
            batch: 1,
            outer: 1,
            axis_size: 3,
            coords: 2,
            inner_bytes: 2,
        };
        let mut out = vec![0; 4];
        g.run(&[1, 2, 3, 4, 5, 6], &[2, 0], &mut out).unwrap();
        assert_eq!(out, vec![5, 6, 1, 2]);
        assert!(g.run(&[1, 2, 3, 4, 5, 6], &[3, 0], &mut out).is_err());
        assert!(g.run(&[1, 2, 3, 4, 5, 6], &[-1, 0], &mut out).is_err());
    }
}
