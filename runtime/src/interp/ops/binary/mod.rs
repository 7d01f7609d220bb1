//! Binary int8 element-wise ops (ADD, SUB, MUL): TFLite's broadcasting as
//! a walk over the output's outer dimensions, the library's kernel on each
//! innermost run, where an operand is either a run as long as the output's
//! or one repeated value. No operand is expanded in memory.

use std::ops::Range;

use qneon::{Backend, Operand};
use qneon_tflite::options::FusedActivation as TfActivation;
use qneon_tflite::{BuiltinOp, Options as OpOptions, TensorType};

use super::broadcast_walk::{BroadcastWalk, Form};
use super::buffers::{view, view_mut, Io};
use super::kernel::{Kernel, PreparedOp, Registration, CHUNK};
use super::op::Op;
use super::strided_copy::broadcast_shape;
use crate::error::Result;
use crate::interp::options::{Options, TfliteKernels};

/// The ops this family prepares.
pub(crate) const OPS: &[Registration] = &[
    Registration::new(BuiltinOp::ADD, "ADD", prepare)
        .xnnpack()
        .arithmetic(describe),
    Registration::new(BuiltinOp::SUB, "SUB", prepare)
        .xnnpack()
        .arithmetic(describe),
    Registration::new(BuiltinOp::MUL, "MUL", prepare)
        .xnnpack()
        .arithmetic(describe),
];

/// What inspect says: the arithmetic [`prepare`] builds under the options.
fn describe(options: &Options, builtin: BuiltinOp) -> String {
    let xnnpack = options.kernels == TfliteKernels::Xnnpack;
    match (builtin, xnnpack) {
        (BuiltinOp::MUL, true) => format!(
            "XNNPACK rndnu as on ARM (Q31 multiplier of the f32 product scale, rounding shift with \
             ties up; outside its scale limits the builtin {})",
            MUL_ROUNDING.name()
        ),
        (BuiltinOp::MUL, false) => format!("rounding {}", MUL_ROUNDING.name()),
        (_, true) => format!(
            "XNNPACK fixed point (multipliers at a common shift; outside its scale limits the \
             builtin {})",
            options.rounding.name()
        ),
        (_, false) => format!("rounding {}", options.rounding.name()),
    }
}

/// A binary int8 element-wise kernel of the library on one innermost run:
/// each operand a slice as long as `output` or one repeated value.
pub(crate) trait ElementwiseInt8: std::fmt::Debug + Send + Sync {
    fn run(
        &self,
        backend: Backend,
        a: Operand<'_>,
        b: Operand<'_>,
        output: &mut [i8],
    ) -> qneon::Result<()>;
}

/// The library's three binary ops share `run_operands`; one impl each.
macro_rules! elementwise_int8 {
    ($($op:ty),*) => {$(
        impl ElementwiseInt8 for $op {
            fn run(
                &self,
                backend: Backend,
                a: Operand<'_>,
                b: Operand<'_>,
                output: &mut [i8],
            ) -> qneon::Result<()> {
                self.run_operands(backend, a, b, output)
            }
        }
    )*};
}

elementwise_int8!(
    qneon::Add,
    qneon::Sub,
    qneon::Mul,
    qneon::XnnpackAdd,
    qneon::XnnpackMulRndnu
);

/// The rounding of int8 MUL in both of the interpreter's modes: LiteRT
/// 2.3's reference MUL (what `Rounding::Single` is to reproduce) gives the
/// double-rounding bytes. Measured on the single-op cases in `models/ops`:
/// on `mul_same_shape`, `mul_broadcast_rank4`, `mul_broadcast_row_const`,
/// `mul_scalar_input` and `mul_tiny`, 8 outputs land on a tie where the
/// two modes differ, and LiteRT's bytes equal double rounding's on all 8
/// (as TF 2.19's do).
const MUL_ROUNDING: qneon::Rounding = qneon::Rounding::Double;

/// Most dimensions of a broadcast (TFLite's limit for these ops).
const MAX_RANK: usize = 6;

/// TFLite's broadcast of two operands to the output as runs: the output
/// is contiguous runs of `inner` elements; along the outer dimensions
/// (size-1 dimensions dropped, dimensions merged where both operands step
/// over them contiguously) each operand advances by its element stride (0
/// where it is broadcast), and inside a run it has a [`Form`]. A row
/// repeated down a contiguous other operand becomes one run of many rows,
/// so the kernel sets its constants up once for all of them.
///
/// The plan is [`BroadcastWalk`]'s (MAXIMUM, MINIMUM, PRELU); the walk is
/// this one's own: it cuts runs to any range of output elements, the tiles
/// and bands a split node hands out, where those ops walk whole runs as one
/// tile.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct BroadcastRuns {
    /// Sizes of the outer dimensions, outermost first.
    outer: Vec<usize>,
    /// Input 1's element stride along each outer dimension.
    a_strides: Vec<usize>,
    /// Input 2's element stride along each outer dimension.
    b_strides: Vec<usize>,
    /// Elements per run.
    inner: usize,
    /// Input 1 inside a run.
    a_form: Form,
    /// Input 2 inside a run.
    b_form: Form,
    /// Elements of input 1, input 2 and the output.
    counts: [usize; 3],
}

impl BroadcastRuns {
    /// Plans the broadcast of `a` and `b` to `output` (the shape
    /// [`broadcast_shape`] gives, at most [`MAX_RANK`] dimensions).
    pub(crate) fn new(a: &[usize], b: &[usize], output: &[usize]) -> Result<Self, String> {
        let rank = output.len();
        if rank > MAX_RANK || a.len() > rank || b.len() > rank {
            return Err(format!(
                "shapes {a:?} and {b:?} to {output:?}: at most {MAX_RANK} dimensions"
            ));
        }
        // Rank 6 at most: under the walk's limit of outer dimensions.
        let BroadcastWalk {
            outer,
            strides: [a_strides, b_strides],
            inner,
            forms: [a_form, b_form],
            counts,
        } = BroadcastWalk::new(a, b, output)?;
        Ok(BroadcastRuns {
            outer,
            a_strides,
            b_strides,
            inner,
            a_form,
            b_form,
            counts,
        })
    }

    /// Calls `f(a_run, b_run, output_run)` for every run, in output order.
    #[cfg(test)]
    pub(crate) fn for_each<'a, 'o, E>(
        &self,
        a: &'a [i8],
        b: &'a [i8],
        output: &'o mut [i8],
        f: impl FnMut(Operand<'a>, Operand<'a>, &'o mut [i8]) -> Result<(), E>,
    ) -> Result<(), E>
    where
        E: From<String>,
    {
        let all = 0..self.counts[2];
        self.for_each_in(all, a, b, output, 0, f)
    }

    /// [`for_each`](Self::for_each) on the output elements `elements` only:
    /// the part of each run inside them (a part starts at a multiple of a
    /// row operand's length: [`Binary`]'s tiles see to it). `output` holds
    /// the output's elements from `out_start` on (the whole output, or one
    /// thread's band), and must hold `elements`.
    pub(crate) fn for_each_in<'a, 'o, E>(
        &self,
        elements: std::ops::Range<usize>,
        a: &'a [i8],
        b: &'a [i8],
        output: &'o mut [i8],
        out_start: usize,
        mut f: impl FnMut(Operand<'a>, Operand<'a>, &'o mut [i8]) -> Result<(), E>,
    ) -> Result<(), E>
    where
        E: From<String>,
    {
        let [na, nb, no] = self.counts;
        let held = out_start..out_start + output.len();
        if a.len() != na || b.len() != nb || held.end > no {
            return Err(E::from(format!(
                "buffers of {}, {} and {} elements from {out_start} for {na}, {nb} and {no}",
                a.len(),
                b.len(),
                output.len()
            )));
        }
        if !elements.is_empty() && (elements.start < held.start || elements.end > held.end) {
            return Err(E::from(format!(
                "output elements {elements:?} outside the {held:?} given"
            )));
        }
        if no == 0 || elements.is_empty() {
            return Ok(());
        }
        let inner = self.inner;
        let operand = |data: &'a [i8],
                       at: usize,
                       form: Form,
                       part: &std::ops::Range<usize>|
         -> Result<Operand<'a>, E> {
            let range = match form {
                Form::Slice => at + part.start..at + part.end,
                Form::Scalar => at..at + 1,
                Form::Row(row) => at..at + row,
            };
            let slice = data
                .get(range)
                .ok_or_else(|| E::from(format!("broadcast reads past {} elements", data.len())))?;
            Ok(match form {
                Form::Slice => Operand::Slice(slice),
                Form::Scalar => Operand::Scalar(slice[0]),
                Form::Row(_) => Operand::Row(slice),
            })
        };
        let rank = self.outer.len();
        let first = elements.start / inner;
        // The odometer at run `first`.
        let mut index = [0usize; MAX_RANK];
        let (mut at_a, mut at_b) = (0usize, 0usize);
        let mut rest = first;
        for d in (0..rank).rev() {
            index[d] = rest % self.outer[d];
            rest /= self.outer[d];
            at_a += index[d] * self.a_strides[d];
            at_b += index[d] * self.b_strides[d];
        }
        // The output not yet handed out, from element `rest_start` on.
        let (mut rest, mut rest_start) = (output, out_start);
        for run in first.. {
            let start = run * inner;
            if start >= elements.end {
                break;
            }
            let part = elements.start.max(start) - start..elements.end.min(start + inner) - start;
            let (_, tail) = std::mem::take(&mut rest).split_at_mut(start + part.start - rest_start);
            let (out, tail) = tail.split_at_mut(part.len());
            (rest, rest_start) = (tail, start + part.end);
            f(
                operand(a, at_a, self.a_form, &part)?,
                operand(b, at_b, self.b_form, &part)?,
                out,
            )?;
            // Odometer over the outer dimensions.
            for d in (0..rank).rev() {
                index[d] += 1;
                at_a += self.a_strides[d];
                at_b += self.b_strides[d];
                if index[d] < self.outer[d] {
                    break;
                }
                at_a -= self.a_strides[d] * self.outer[d];
                at_b -= self.b_strides[d] * self.outer[d];
                index[d] = 0;
            }
        }
        Ok(())
    }

    /// Elements per tile inside a run: [`CHUNK`], rounded up to whole rows
    /// of a row operand so a tile's row starts where the row does.
    fn chunk(&self) -> usize {
        let row = match (self.a_form, self.b_form) {
            (Form::Row(row), _) | (_, Form::Row(row)) => row.max(1),
            _ => 1,
        };
        CHUNK.div_ceil(row) * row
    }

    /// Tiles per run and the run count.
    fn tiling(&self) -> (usize, usize) {
        let runs = self.counts[2] / self.inner.max(1);
        (self.inner.div_ceil(self.chunk()), runs)
    }
}

/// A prepared binary op: the library's kernel and the broadcast walk. A
/// tile is a chunk of a run; the tiles of a range that fall in one run are
/// one call of the library's kernel.
#[derive(Debug)]
pub(crate) struct Binary {
    kernel: Box<dyn ElementwiseInt8>,
    runs: BroadcastRuns,
}

impl Kernel for Binary {
    fn tiles(&self) -> usize {
        let (per_run, runs) = self.runs.tiling();
        per_run * runs
    }

    fn split(&self) -> Option<usize> {
        Some(1)
    }

    /// Tile `t`'s elements are chunk `t % per_run` of run `t / per_run`:
    /// successive tiles are successive elements (int8: one byte each).
    fn band(&self, tiles: Range<usize>) -> Range<usize> {
        let (per_run, _) = self.runs.tiling();
        let (chunk, inner) = (self.runs.chunk(), self.runs.inner);
        let at = |t: usize| (t / per_run) * inner + ((t % per_run) * chunk).min(inner);
        if tiles.is_empty() {
            return at(tiles.start)..at(tiles.start);
        }
        let end = (tiles.end - 1) / per_run * inner + ((tiles.end - 1) % per_run + 1) * chunk;
        at(tiles.start)..end.min((tiles.end - 1) / per_run * inner + inner)
    }

    /// `output = a op b` on the tiles' elements. Needs no scratch (the walk
    /// broadcasts in place).
    fn run_tiles(
        &self,
        backend: Backend,
        tiles: Range<usize>,
        io: &mut Io<'_>,
    ) -> Result<(), String> {
        if tiles.is_empty() {
            return Ok(());
        }
        let (per_run, _) = self.runs.tiling();
        let (chunk, inner) = (self.runs.chunk(), self.runs.inner);
        // Tile `t` is chunk `t % per_run` of run `t / per_run`.
        let start = |t: usize| (t / per_run) * inner + (t % per_run) * chunk;
        let end = |t: usize| (t / per_run) * inner + ((t % per_run + 1) * chunk).min(inner);
        let elements = start(tiles.start)..end(tiles.end - 1);
        self.runs.for_each_in(
            elements,
            view(io.ins[0])?,
            view(io.ins[1])?,
            view_mut(io.outs[0])?,
            io.out_start,
            |a, b, out| {
                self.kernel
                    .run(backend, a, b, out)
                    .map_err(|e| e.to_string())
            },
        )
    }
}

/// TFLite's `Prepare` of ADD, SUB and MUL: int8 operands that broadcast to
/// the output shape (rank at most 6), per-tensor quantization; the
/// library's kernel built in the interpreter's rounding, the broadcast
/// planned.
fn prepare(op: &Op<'_, '_>) -> Result<PreparedOp> {
    let builtin = op.builtin;
    op.input_count(2, 2)?;
    op.output_count(1)?;
    let (a, b, output) = (op.input(0)?, op.input(1)?, op.output(0)?);
    if a.dtype() != TensorType::Int8
        || b.dtype() != TensorType::Int8
        || output.dtype() != TensorType::Int8
    {
        return Err(op.unsupported_types());
    }
    let shape = broadcast_shape(a.shape(), b.shape()).map_err(|e| op.invalid(e))?;
    if shape.len() > MAX_RANK {
        return Err(op.unsupported(format!(
            "rank {} broadcast (at most {MAX_RANK})",
            shape.len()
        )));
    }
    op.expect_shape(output, &shape)?;
    let fused = match op.operator.options() {
        OpOptions::Builtin(qneon_tflite::schema::BuiltinOptions::AddOptions(o)) => {
            TfActivation::from_code(o.fused_activation_function)
        }
        OpOptions::Builtin(qneon_tflite::schema::BuiltinOptions::SubOptions(o)) => {
            TfActivation::from_code(o.fused_activation_function)
        }
        OpOptions::Builtin(qneon_tflite::schema::BuiltinOptions::MulOptions(o)) => {
            TfActivation::from_code(o.fused_activation_function)
        }
        _ => TfActivation::None,
    };
    let activation = op.activation(fused)?;
    let (qa, qb, qo) = (
        op.per_tensor(a, "input 1")?,
        op.per_tensor(b, "input 2")?,
        op.per_tensor(output, "output")?,
    );
    let rounding = op.options.rounding;
    if op.options.kernels == TfliteKernels::Xnnpack {
        // The delegate takes the op unless XNNPACK refuses its scale ratios
        // (then the builtin kernel below runs it, as in LiteRT).
        let xnnpack: qneon::Result<Box<dyn ElementwiseInt8>> = match builtin {
            BuiltinOp::ADD | BuiltinOp::SUB => {
                qneon::XnnpackAdd::new(qa, qb, qo, activation, builtin == BuiltinOp::SUB)
                    .map(|k| Box::new(k) as _)
            }
            // ARM's MUL (qneon targets aarch64), not the fp32 one of
            // XNNPACK's x86 build: the two differ by a step on ties.
            _ => qneon::XnnpackMulRndnu::new(qa, qb, qo, activation).map(|k| Box::new(k) as _),
        };
        match xnnpack {
            Ok(kernel) => return binary(op, kernel, a.shape(), b.shape(), &shape, output),
            Err(qneon::Error::Unsupported { .. }) => {}
            Err(e) => return Err(op.kernel_error(e)),
        }
    }
    let built: qneon::Result<Box<dyn ElementwiseInt8>> = match builtin {
        BuiltinOp::ADD => {
            qneon::Add::new(qa, qb, qo, activation, rounding).map(|k| Box::new(k) as _)
        }
        BuiltinOp::SUB => {
            qneon::Sub::new(qa, qb, qo, activation, rounding).map(|k| Box::new(k) as _)
        }
        BuiltinOp::MUL => {
            qneon::Mul::new(qa, qb, qo, activation, MUL_ROUNDING).map(|k| Box::new(k) as _)
        }
        _ => return Err(op.unsupported("not an element-wise binary op")),
    };
    let kernel = built.map_err(|e| op.kernel_error(e))?;
    binary(op, kernel, a.shape(), b.shape(), &shape, output)
}

/// The prepared op of `kernel` over the broadcast of shapes `a` and `b` to
/// `shape`.
fn binary(
    op: &Op<'_, '_>,
    kernel: Box<dyn ElementwiseInt8>,
    a: &[usize],
    b: &[usize],
    shape: &[usize],
    output: &qneon_tflite::Tensor<'_>,
) -> Result<PreparedOp> {
    let runs = BroadcastRuns::new(a, b, shape).map_err(|e| op.invalid(e))?;
    Ok(PreparedOp {
        kernel: Box::new(Binary { kernel, runs }),
        work: output.element_count() as u64,
        unit: "element",
        scratch_bytes: 0,
        alias: false,
        state_inputs: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The broadcast by the plain rule: output element at `idx` reads
    /// operand element at `idx` with broadcast dimensions pinned to 0.
    fn naive(a: &[usize], b: &[usize], out: &[usize]) -> Vec<(usize, usize)> {
        let rank = out.len();
        let index_of = |shape: &[usize], idx: &[usize]| -> usize {
            let pad = rank - shape.len();
            let mut at = 0;
            for (d, &n) in shape.iter().enumerate() {
                let i = if n == 1 { 0 } else { idx[d + pad] };
                at = at * n + i;
            }
            at
        };
        let count: usize = out.iter().product();
        (0..count)
            .map(|mut flat| {
                let mut idx = vec![0; rank];
                for d in (0..rank).rev() {
                    idx[d] = flat % out[d];
                    flat /= out[d];
                }
                (index_of(a, &idx), index_of(b, &idx))
            })
            .collect()
    }

    /// The element indices the walk visits for every output element.
    fn walked(a: &[usize], b: &[usize], out: &[usize]) -> Vec<(usize, usize)> {
        let runs = BroadcastRuns::new(a, b, out).unwrap();
        let count = |s: &[usize]| s.iter().product::<usize>();
        // Operands holding their own index (mod 128 does not matter: the
        // shapes here stay below 128 elements).
        let da: Vec<i8> = (0..count(a)).map(|i| i as i8).collect();
        let db: Vec<i8> = (0..count(b)).map(|i| i as i8).collect();
        let mut output = vec![0i8; count(out)];
        let mut seen = Vec::new();
        runs.for_each::<String>(&da, &db, &mut output, |x, y, o| {
            for i in 0..o.len() {
                let pick = |op: &Operand<'_>| match op {
                    Operand::Slice(s) => s[i] as usize,
                    Operand::Scalar(v) => *v as usize,
                    Operand::Row(r) => r[i % r.len()] as usize,
                };
                seen.push((pick(&x), pick(&y)));
            }
            Ok(())
        })
        .unwrap();
        seen
    }

    #[test]
    fn broadcast_runs_visit_the_elements_tflite_broadcasting_pairs() {
        let cases: &[(&[usize], &[usize])] = &[
            (&[2, 3, 8], &[2, 3, 8]),
            (&[2, 1, 3, 4], &[1, 5, 1, 4]),
            (&[4, 1], &[1, 8]),
            (&[3, 8], &[8]),
            (&[2, 8], &[]),
            (&[], &[2, 3, 4]),
            (&[1, 16], &[]),
            (&[1, 2, 1, 3], &[1, 1, 1, 1]),
            (&[1], &[1]),
            (&[2, 1, 3, 1, 2, 1], &[1, 2, 1, 2, 1, 3]),
            (&[1, 1, 1, 6], &[1, 2, 3, 6]),
            (&[2, 3, 8], &[2, 1, 8]),
            (&[8], &[3, 8]),
            (&[3, 1], &[3, 4]),
        ];
        for &(a, b) in cases {
            let out = broadcast_shape(a, b).unwrap();
            assert_eq!(walked(a, b, &out), naive(a, b, &out), "{a:?} {b:?}");
        }
    }

    #[test]
    fn broadcast_runs_merge_the_mobilebert_shapes_into_long_runs() {
        // The attention mask: one run, the mask a row repeated 1,536 times.
        let runs = BroadcastRuns::new(&[1, 4, 384, 384], &[1, 1, 1, 384], &[1, 4, 384, 384]);
        let runs = runs.unwrap();
        assert_eq!((runs.outer.len(), runs.inner), (0, 1536 * 384));
        assert_eq!((runs.a_form, runs.b_form), (Form::Slice, Form::Row(384)));
        // NoNorm's gamma: one run, gamma a row (either side).
        let runs = BroadcastRuns::new(&[128], &[1, 384, 128], &[1, 384, 128]).unwrap();
        assert_eq!((runs.outer.len(), runs.inner), (0, 384 * 128));
        assert_eq!((runs.a_form, runs.b_form), (Form::Row(128), Form::Slice));
        // Rows repeating inside an outer dimension: runs of rows.
        let runs = BroadcastRuns::new(&[2, 3, 8], &[2, 1, 8], &[2, 3, 8]).unwrap();
        assert_eq!((runs.outer.as_slice(), runs.inner), (&[2][..], 24));
        assert_eq!((runs.a_strides[0], runs.b_strides[0]), (24, 8));
        assert_eq!(runs.b_form, Form::Row(8));
        // A same-shape add is one run.
        let runs = BroadcastRuns::new(&[1, 384, 512], &[1, 384, 512], &[1, 384, 512]).unwrap();
        assert_eq!((runs.outer.len(), runs.inner), (0, 384 * 512));
        // A scalar repeats over one run.
        let runs = BroadcastRuns::new(&[1, 384, 128], &[], &[1, 384, 128]).unwrap();
        assert_eq!(
            (runs.inner, runs.a_form, runs.b_form),
            (384 * 128, Form::Slice, Form::Scalar)
        );
    }

    #[test]
    fn broadcast_runs_refuse_mismatched_buffers_and_shapes() {
        assert!(BroadcastRuns::new(&[3], &[4], &[4]).is_err());
        assert!(BroadcastRuns::new(&[1; 7], &[1], &[1; 7]).is_err());
        let runs = BroadcastRuns::new(&[2, 3], &[3], &[2, 3]).unwrap();
        let mut out = [0i8; 6];
        let short = runs.for_each::<String>(&[0; 5], &[0; 3], &mut out, |_, _, _| Ok(()));
        assert!(short.is_err());
    }
}
