//! BATCH_MATMUL (int8 x int8 -> int8): TFLite's `Prepare` checks, then the
//! library's [`qneon::MatMul`] on every matrix of the broadcast batch, the
//! right-hand side packed at run time into the node's scratch.

use std::ops::Range;

use qneon::{Backend, Requantization};
use qneon_tflite::{BuiltinOp, Options as OpOptions, TensorType};

use super::buffers::{output_band, tile_elements, view, view_mut, Io};
use super::kernel::{Kernel, PreparedOp, Registration};
use super::op::Op;
use super::strided_copy::broadcast_shape;
use crate::error::Result;
use crate::interp::options::{Options, Rounding, TfliteKernels};

/// Most dimensions TFLite's BATCH_MATMUL takes (two matrix dimensions and
/// up to three batch dimensions).
const MAX_RANK: usize = 5;

/// The ops this family prepares.
pub(crate) const OPS: &[Registration] =
    &[
        Registration::new(BuiltinOp::BATCH_MATMUL, "BATCH_MATMUL", prepare)
            .xnnpack()
            .arithmetic(describe),
    ];

/// What inspect says: the requantization [`requantization`] chooses.
fn describe(options: &Options, _: BuiltinOp) -> String {
    match options.kernels {
        TfliteKernels::Xnnpack => format!(
            "requantization {} (input 2 zero point 0, taken by XNNPACK), else {} (left to \
             the builtin kernels)",
            Requantization::XnnpackF32.name(),
            lite_rt_rounding(options.rounding).name()
        ),
        _ => format!(
            "requantization {}",
            lite_rt_rounding(options.rounding).name()
        ),
    }
}

/// The requantization of a BATCH_MATMUL whose right-hand operand has zero
/// point `rhs_zero_point`. LiteRT 2.3's XNNPACK delegate takes an int8
/// BATCH_MATMUL only when that zero point is 0 (measured on `models/ops`:
/// `batch_matmul_rank4`, zero point 0, is delegated; the four cases of zero
/// point -26 run in the builtin kernel); it then runs XNNPACK's qs8 GEMM,
/// whose x86 requantization is `f32` rounded to even
/// ([`Requantization::XnnpackF32`]). Otherwise [`lite_rt_rounding`].
fn requantization(options: &Options, rhs_zero_point: i32) -> Requantization {
    if options.kernels == TfliteKernels::Xnnpack && rhs_zero_point == 0 {
        Requantization::XnnpackF32
    } else {
        Requantization::Multiplier(lite_rt_rounding(options.rounding))
    }
}

/// A prepared BATCH_MATMUL: one library product per output matrix, the
/// operands' matrices picked through the broadcast batch. A tile is one
/// output matrix (one batch index, one attention head of MobileBert). Tiles
/// share the node's scratch: concurrent tiles need a scratch each.
#[derive(Debug)]
pub(crate) struct BatchMatMul {
    kernel: Box<qneon::MatMul>,
    /// For each output matrix (in order): the index of its left-hand and
    /// right-hand matrices (a broadcast dimension repeats one).
    batches: Vec<(usize, usize)>,
    lhs_len: usize,
    rhs_len: usize,
    out_len: usize,
    /// Scratch: `words` int32 first (a 64-byte multiple, so the bytes
    /// after them stay aligned), then the kernel's bytes.
    words_bytes: usize,
}

impl Kernel for BatchMatMul {
    fn tiles(&self) -> usize {
        self.batches.len()
    }

    /// Any range of matrices; each thread's range gets a scratch of its own.
    fn split(&self) -> Option<usize> {
        Some(1)
    }

    fn band(&self, tiles: Range<usize>) -> Range<usize> {
        let tiles = tile_elements(tiles, 1, self.batches.len());
        tiles.start * self.out_len..tiles.end * self.out_len
    }

    /// `output[b] = lhs[batch b] * rhs[batch b]` for the output matrices
    /// `tiles`.
    fn run_tiles(
        &self,
        backend: Backend,
        tiles: Range<usize>,
        io: &mut Io<'_>,
    ) -> Result<(), String> {
        let (lhs, rhs): (&[i8], &[i8]) = (view(io.ins[0])?, view(io.ins[1])?);
        let scratch = &mut *io.scratch;
        if scratch.len() < self.words_bytes {
            return Err(format!(
                "scratch of {} bytes, expected at least {}",
                scratch.len(),
                self.words_bytes
            ));
        }
        let (words, bytes) = scratch.split_at_mut(self.words_bytes);
        let (words, bytes): (&mut [i32], &mut [i8]) = (view_mut(words)?, view_mut(bytes)?);
        let expected = (
            self.batches.iter().map(|b| b.0 + 1).max().unwrap_or(0) * self.lhs_len,
            self.batches.iter().map(|b| b.1 + 1).max().unwrap_or(0) * self.rhs_len,
        );
        if lhs.len() < expected.0 || rhs.len() < expected.1 {
            return Err(format!(
                "operands of {} and {} bytes, expected {} and {}",
                lhs.len(),
                rhs.len(),
                expected.0,
                expected.1
            ));
        }
        let tiles = tile_elements(tiles, 1, self.batches.len());
        let output = output_band::<i8>(
            io.outs[0],
            io.out_start,
            tiles.start * self.out_len..tiles.end * self.out_len,
        )?;
        let outputs = output.chunks_exact_mut(self.out_len);
        for (out, &(a, b)) in outputs.zip(&self.batches[tiles]) {
            self.kernel
                .run_with(
                    backend,
                    &lhs[a * self.lhs_len..(a + 1) * self.lhs_len],
                    &rhs[b * self.rhs_len..(b + 1) * self.rhs_len],
                    out,
                    bytes,
                    words,
                )
                .map_err(|e| e.to_string())?;
        }
        Ok(())
    }
}

/// The batch index of each output matrix in an operand of batch shape
/// `dims` (right-aligned with the output's batch shape `out`, size-1
/// dimensions repeated).
fn operand_batches(dims: &[usize], out: &[usize]) -> Vec<usize> {
    let pad = out.len() - dims.len();
    let total: usize = out.iter().product();
    (0..total)
        .map(|flat| {
            // Walk the output index from the last dimension, accumulating
            // the operand's row-major index.
            let (mut rest, mut index, mut stride) = (flat, 0, 1);
            for d in (0..out.len()).rev() {
                let i = rest % out[d];
                rest /= out[d];
                if d >= pad {
                    let size = dims[d - pad];
                    if size != 1 {
                        index += i * stride;
                    }
                    stride *= size;
                }
            }
            index
        })
        .collect()
}

/// The rounding BATCH_MATMUL requantizes with under the options' rounding:
/// double in both. LiteRT 2.3 (the single-rounding runtime) was measured to
/// requantize its int8 BATCH_MATMUL with gemmlowp's double rounding:
/// in the `batch_matmul_adj_y` case an accumulator of -8600 at an effective
/// scale of 0.00261620 (-22.4993) comes out as -23 before the zero point,
/// which single rounding cannot give (it rounds to -22) and double rounding
/// does (the high multiply rounds it to -5760 / 256 = -22.5, a tie taken away
/// from zero); double rounding equals LiteRT's output on every element of
/// every BATCH_MATMUL case, single rounding differs on that one.
fn lite_rt_rounding(_options: Rounding) -> Rounding {
    Rounding::Double
}

/// TFLite's `Prepare` of BATCH_MATMUL for int8: ranks 2 to 5, broadcast batch
/// dimensions, `adj_x` / `adj_y`, equal depths, per-tensor quantization
/// (any zero points), no fused activation; the multiplier
/// `lhs_scale * rhs_scale / output_scale` (see [`lite_rt_rounding`] for its
/// rounding).
fn prepare(op: &Op<'_, '_>) -> Result<PreparedOp> {
    op.input_count(2, 2)?;
    op.output_count(1)?;
    let (a, b, output) = (op.input(0)?, op.input(1)?, op.output(0)?);
    if a.dtype() != TensorType::Int8
        || b.dtype() != TensorType::Int8
        || output.dtype() != TensorType::Int8
    {
        return Err(op.unsupported_types());
    }
    let o = match op.operator.options() {
        OpOptions::Builtin(qneon_tflite::schema::BuiltinOptions::BatchMatMulOptions(o)) => {
            (**o).clone()
        }
        _ => Default::default(),
    };
    let (sa, sb) = (a.shape(), b.shape());
    for (s, what) in [(sa, "input 1"), (sb, "input 2")] {
        if s.len() < 2 || s.len() > MAX_RANK {
            return Err(op.invalid(format!(
                "{what} has rank {} (BATCH_MATMUL takes 2 to {MAX_RANK})",
                s.len()
            )));
        }
    }
    let (rows, depth_a) = if o.adj_x {
        (sa[sa.len() - 1], sa[sa.len() - 2])
    } else {
        (sa[sa.len() - 2], sa[sa.len() - 1])
    };
    let (depth_b, cols) = if o.adj_y {
        (sb[sb.len() - 1], sb[sb.len() - 2])
    } else {
        (sb[sb.len() - 2], sb[sb.len() - 1])
    };
    if depth_a != depth_b {
        return Err(op.invalid(format!("depths {depth_a} and {depth_b} differ")));
    }
    let (batch_a, batch_b) = (&sa[..sa.len() - 2], &sb[..sb.len() - 2]);
    let batch = broadcast_shape(batch_a, batch_b).map_err(|e| op.invalid(e))?;
    let mut expected = batch.clone();
    expected.extend([rows, cols]);
    op.expect_shape(output, &expected)?;
    let lhs_q = op.per_tensor(a, "input 1")?;
    let rhs_q = op.per_tensor(b, "input 2")?;
    let out_q = op.per_tensor(output, "output")?;
    if output.element_count() == 0 {
        return Err(op.unsupported("an empty BATCH_MATMUL (a zero dimension)"));
    }
    let kernel = qneon::MatMul::new(
        rows,
        cols,
        depth_a,
        o.adj_x,
        o.adj_y,
        lhs_q,
        rhs_q,
        out_q,
        requantization(op.options, rhs_q.zero_point),
    )
    .map_err(|e| op.kernel_error(e))?;
    let batches: Vec<(usize, usize)> = operand_batches(batch_a, &batch)
        .into_iter()
        .zip(operand_batches(batch_b, &batch))
        .collect();
    let words_bytes = (kernel.scratch_words() * 4).next_multiple_of(64);
    let scratch_bytes = words_bytes + kernel.scratch_bytes();
    let work = (batches.len() * rows * cols * depth_a) as u64;
    Ok(PreparedOp {
        kernel: Box::new(BatchMatMul {
            kernel: Box::new(kernel),
            batches,
            lhs_len: rows * depth_a,
            rhs_len: depth_a * cols,
            out_len: rows * cols,
            words_bytes,
        }),
        work,
        unit: "MAC",
        scratch_bytes,
        alias: false,
        state_inputs: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::operand_batches;

    #[test]
    fn operand_batches_repeat_broadcast_dimensions() {
        assert_eq!(operand_batches(&[2, 3], &[2, 3]), vec![0, 1, 2, 3, 4, 5]);
        assert_eq!(operand_batches(&[1, 3], &[2, 3]), vec![0, 1, 2, 0, 1, 2]);
        assert_eq!(operand_batches(&[2, 1], &[2, 3]), vec![0, 0, 0, 1, 1, 1]);
        assert_eq!(operand_batches(&[3], &[2, 3]), vec![0, 1, 2, 0, 1, 2]);
        assert_eq!(operand_batches(&[], &[2, 3]), vec![0; 6]);
        assert_eq!(operand_batches(&[], &[]), vec![0]);
        assert_eq!(
            operand_batches(&[2, 1, 2], &[2, 2, 2]),
            vec![0, 1, 0, 1, 2, 3, 2, 3]
        );
    }
}
