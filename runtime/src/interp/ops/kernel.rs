//! What a prepared node is: a [`Kernel`] the driving loop runs without
//! knowing its op, the [`PreparedOp`] a family's `Prepare` returns, and the
//! [`Registration`] by which a family offers the builtin ops it prepares.
//!
//! The kernel is a trait object (`Box<dyn Kernel>`) so that adding an op is
//! adding a folder: no central enum or `match` to extend. Its cost is one
//! indirect call per node, against kernels of thousands to millions of
//! instructions each (MobileBert's 1,101 nodes).
//!
//! Tiles: every kernel cuts its work into [`Kernel::tiles`] independent
//! pieces, each writing its own part of the outputs (FULLY_CONNECTED by
//! output rows, BATCH_MATMUL by output matrix, the row-wise activations by
//! rows, element-wise ops by chunks of [`CHUNK`] elements). A run of
//! consecutive tiles is one call of the library's kernel, so running all
//! tiles at once ([`Kernel::run`]) is exactly the single call of before: the
//! same bytes and the same instructions. A scheduler may hand disjoint tile
//! ranges to several threads.
//!
//! Threads: a kernel that can share its tiles out says so with
//! [`Kernel::split`] (ranges cut at multiples of its step) and
//! [`Kernel::band`] (the bytes of output 0 such a range writes, successive
//! ranges writing successive bands). Each thread then runs its range on an
//! [`Io`] whose `outs[0]` is only its band (safe Rust: the output is cut
//! with `split_at_mut`, the inputs are shared), starting at byte
//! `io.out_start` of the whole output; `buffers::output_band` gives a
//! kernel its elements in either case.

use std::fmt::Debug;
use std::ops::Range;

use qneon::Backend;
use qneon_tflite::BuiltinOp;

use super::buffers::Io;
use super::op::Op;
use crate::error::Result;
use crate::interp::options::{Options, TfliteKernels};

/// Elements per tile of the element-wise kernels: 16 KiB of int8, large
/// enough that a tile's call overhead is noise, small enough that
/// MobileBert's element-wise ops (up to 589,824 elements) cut into dozens.
pub(crate) const CHUNK: usize = 16 * 1024;

/// A prepared node's work.
pub(crate) trait Kernel: Debug + Send + Sync {
    /// How many independent tiles the work is cut into (at least 1).
    fn tiles(&self) -> usize {
        1
    }

    /// Runs tiles `tiles` (a range inside `0..self.tiles()`) in order;
    /// consecutive tiles are one call of the library's kernel where the
    /// kernel allows. An error (a message) only for data TFLite would refuse
    /// at run time too (a GATHER index out of range).
    fn run_tiles(
        &self,
        backend: Backend,
        tiles: Range<usize>,
        io: &mut Io<'_>,
    ) -> Result<(), String>;

    /// Tiles per cut when the kernel's tiles may run on several threads:
    /// ranges starting and ending at multiples of it (or at
    /// [`tiles`](Self::tiles)) write disjoint bands of output 0 and need no
    /// memory but their band and a scratch of the node's scratch size.
    /// `None` (the default): the node runs on one thread.
    fn split(&self) -> Option<usize> {
        None
    }

    /// The bytes of output 0 that tiles `tiles` (cut as [`split`](Self::split)
    /// says) write, for a kernel that splits.
    fn band(&self, tiles: Range<usize>) -> Range<usize> {
        let _ = tiles;
        0..0
    }

    /// Runs every tile: the whole node.
    fn run(&self, backend: Backend, io: &mut Io<'_>) -> Result<(), String> {
        self.run_tiles(backend, 0..self.tiles(), io)
    }

    /// The other way a kernel's work may split: by columns of output 0
    /// (seen as [`Columns::rows`] x [`Columns::columns`] elements), each
    /// thread computing some columns of every row into a tile of its own
    /// ([`run_columns`](Self::run_columns)), the tiles then copied into the
    /// output. For layers with few rows and many columns (a pointwise
    /// CONV_2D's late layers: 7x7 pixels, 1,280 channels), where bands of
    /// rows leave threads idle. `None` (the default): no such split.
    fn columns(&self) -> Option<Columns> {
        None
    }

    /// Columns `columns` (cut at multiples of [`Columns::grain`]) of every
    /// row of output 0 into `tile`, row `r`'s at `r * columns.len()`
    /// elements (with [`Columns::whole_rows`], in their place of a tile of
    /// the output's size); `io.outs` is empty, `io.scratch` the node's
    /// scratch.
    fn run_columns(
        &self,
        backend: Backend,
        columns: Range<usize>,
        io: &mut Io<'_>,
        tile: &mut [u8],
    ) -> Result<(), String> {
        let _ = (backend, io, tile);
        Err(format!(
            "columns {columns:?}: this kernel does not split by columns"
        ))
    }
}

/// Output 0 of a kernel that splits by columns ([`Kernel::columns`]):
/// `rows` x `columns` elements of `elem` bytes; column ranges start at
/// multiples of `grain`. A share's tile holds `rows` x its columns, or
/// with `whole_rows` every column's place of every row, the share's
/// columns written there and the others not (a depthwise layer's kernels
/// write a block of channels in place).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Columns {
    pub rows: usize,
    pub columns: usize,
    pub grain: usize,
    pub elem: usize,
    pub whole_rows: bool,
}

/// Nothing to run: the output shares its input's bytes (an aliased
/// RESHAPE), or the operator did not prepare (never run: a plan refuses a
/// model with such a node).
#[derive(Debug)]
pub(crate) struct Nop;

impl Kernel for Nop {
    fn tiles(&self) -> usize {
        0
    }

    fn run_tiles(&self, _: Backend, _: Range<usize>, _: &mut Io<'_>) -> Result<(), String> {
        Ok(())
    }
}

/// A prepared operator: its kernel and what the plan and the profiler need.
#[derive(Debug)]
pub(crate) struct PreparedOp {
    pub kernel: Box<dyn Kernel>,
    pub work: u64,
    pub unit: &'static str,
    pub scratch_bytes: usize,
    /// The output is the input's bytes (RESHAPE).
    pub alias: bool,
    /// Input positions the kernel updates in place (a recurrent op's state,
    /// a variable tensor): they come to it in [`Io::state`], writable.
    pub state_inputs: Vec<usize>,
}

impl PreparedOp {
    /// A kernel whose work is `elements` output elements, without scratch.
    pub(crate) fn elements(kernel: impl Kernel + 'static, elements: usize) -> PreparedOp {
        PreparedOp {
            kernel: Box::new(kernel),
            work: elements as u64,
            unit: "element",
            scratch_bytes: 0,
            alias: false,
            state_inputs: Vec::new(),
        }
    }
}

/// A family's `Prepare` of one op: TFLite's checks, then the kernel.
pub(crate) type Prepare = fn(&Op<'_, '_>) -> Result<PreparedOp>;

/// What inspect says of an op's arithmetic under the options: the
/// requantization or float arithmetic the family's `Prepare` will choose
/// (computed by the same function the `Prepare` calls).
pub(crate) type Describe = fn(&Options, BuiltinOp) -> String;

/// The kernel sets of TFLite whose bytes a registered op reproduces: the
/// options' [`TfliteKernels`] an op prepares under.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct KernelPaths {
    /// LiteRT's reference and optimized builtin kernels (every op has both:
    /// where the two differ, the op follows the options' choice).
    pub litert: bool,
    /// The XNNPACK delegate's arithmetic.
    pub xnnpack: bool,
    /// The XNNPACK delegate leaves the op to TFLite's builtin kernels (it
    /// refuses its types): under [`TfliteKernels::Xnnpack`] the op prepares
    /// with [`TfliteKernels::Optimized`]'s arithmetic.
    pub left_by_xnnpack: bool,
}

impl KernelPaths {
    /// Whether an op with these paths prepares under `kernels`.
    pub(crate) const fn reproduces(self, kernels: TfliteKernels) -> bool {
        match kernels {
            TfliteKernels::Reference | TfliteKernels::Optimized => self.litert,
            TfliteKernels::Xnnpack => self.xnnpack,
        }
    }

    /// The options an op with these paths prepares with: the caller's, or
    /// under [`TfliteKernels::Xnnpack`] for an op the delegate leaves to the
    /// builtin kernels, the same with [`TfliteKernels::Optimized`].
    pub(crate) fn prepare_options(self, options: &Options) -> Options {
        if self.left_by_xnnpack && options.kernels == TfliteKernels::Xnnpack {
            Options {
                kernels: TfliteKernels::Optimized,
                ..*options
            }
        } else {
            *options
        }
    }
}

/// One builtin op a family prepares: the resolver's table row.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Registration {
    pub op: BuiltinOp,
    /// TFLite's name of the op: what inspect, the profiler and errors show.
    pub name: &'static str,
    pub prepare: Prepare,
    /// The kernel sets whose bytes the op reproduces; under any other the
    /// op is refused by name before its `Prepare` runs.
    pub paths: KernelPaths,
    /// What the op's arithmetic is under given options, for ops whose
    /// arithmetic depends on them; `None` for the rest.
    pub arithmetic: Option<Describe>,
}

impl Registration {
    /// An op that reproduces LiteRT's reference and optimized builtin
    /// kernels (not XNNPACK's arithmetic, until [`Registration::xnnpack`]).
    pub(crate) const fn new(op: BuiltinOp, name: &'static str, prepare: Prepare) -> Registration {
        Registration {
            op,
            name,
            prepare,
            paths: KernelPaths {
                litert: true,
                xnnpack: false,
                left_by_xnnpack: false,
            },
            arithmetic: None,
        }
    }

    /// The same row, with `describe` saying which arithmetic the op takes.
    pub(crate) const fn arithmetic(self, describe: Describe) -> Registration {
        Registration {
            arithmetic: Some(describe),
            ..self
        }
    }

    /// The same row, also reproducing the XNNPACK delegate's bytes: its
    /// arithmetic is built (the convolutions), or the op only moves bytes,
    /// which every kernel set does alike.
    pub(crate) const fn xnnpack(self) -> Registration {
        Registration {
            paths: KernelPaths {
                xnnpack: true,
                ..self.paths
            },
            ..self
        }
    }

    /// The same row, for an op the XNNPACK delegate never takes (LiteRT
    /// 2.3's delegate refuses its quantized types): under
    /// [`TfliteKernels::Xnnpack`] it runs in the builtin kernels, so it
    /// prepares with [`TfliteKernels::Optimized`]'s arithmetic.
    pub(crate) const fn left_by_xnnpack(self) -> Registration {
        Registration {
            paths: KernelPaths {
                xnnpack: true,
                left_by_xnnpack: true,
                ..self.paths
            },
            ..self
        }
    }
}
