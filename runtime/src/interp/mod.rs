//! The `.tflite` interpreter: load -> prepare -> plan -> invoke, split into
//! what is shared and what a run writes.
//!
//! [`Plan::new`] reads a model through [`qneon_tflite`] (zero-copy, every
//! offset, length, index and shape verified, the declared tensor sizes
//! checked against the memory budget before anything is allocated), then
//! prepares every operator as TFLite's `Prepare` does: dtypes and shapes
//! checked, quantization checked against TFLite's rules, multipliers and
//! tables computed, weights packed once. An operator it cannot run is a
//! load-time [`UnsupportedOp`](crate::Error::UnsupportedOp) error naming
//! the op (its TFLite name), its index and what is missing, reported before
//! any graph check. Then the
//! tensors' lifetimes are folded into one arena plan ([`arena`]) and every
//! tensor gets its place. The [`Plan`] is immutable and `Send + Sync`: behind
//! an `Arc`, any number of [`Session`]s (each an arena and the variable
//! tensors' state, allocated once) run it, on any threads;
//! [`Session::invoke`] only runs kernels. [`Interpreter`] is the
//! convenience of one plan and one session.
//!
//! Requantizing arithmetic is the library's ([`qneon::Gemm`],
//! [`qneon::MatMul`], [`qneon::Add`], [`qneon::Sub`], [`qneon::Mul`], the
//! activations), in the rounding [`Options::rounding`] chooses; where LiteRT
//! was measured to round otherwise (BATCH_MATMUL and MUL round twice in its
//! single-rounding build) the op says so and follows LiteRT.
//!
//! Where things are: [`Options`] in `options.rs`; the reported types in
//! `info.rs`; preparing and placing (`prepare_model`, `place_tensors`) in
//! `build.rs`; where a tensor lives in `place.rs`; each node's memory in
//! `carve.rs`; the threads of [`Options::threads`] (which nodes split, the
//! pool) in `threads.rs`; the arena plan in [`arena`]; [`Plan`] in `plan.rs`,
//! [`Session`] and the driving loop in `session.rs`; the nodes fused with
//! [`Options::threshold`] and their [`Hits`] in `threshold.rs`; each op family's
//! `Prepare` and kernel side by side under `ops/`. This file holds the
//! [`Interpreter`] and [`Interpreter::analyze`].

pub mod arena;
mod build;
mod carve;
mod fold;
mod info;
mod ops;
mod options;
mod place;
mod plan;
mod session;
mod threads;
mod threshold;

use std::ops::Range;
use std::sync::Arc;

use crate::error::Result;
use arena::ArenaPlan;
use build::{parse, place_tensors, prepare_model};

pub use info::{NodeInfo, OpReport, TensorInfo};
pub use ops::HitSlice;
pub use options::{Options, Rounding, TfliteKernels, MAX_THREADS};
pub use plan::Plan;
pub use session::{NoProfile, Profiler, Session};
pub use threads::ThreadMarks;
pub use threshold::{Hits, OutputHit};

/// A loaded, prepared and planned model with one session: today's
/// one-inference-at-a-time API over a [`Plan`] and a [`Session`].
pub struct Interpreter<'a> {
    session: Session<'a>,
}

impl std::fmt::Debug for Interpreter<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Interpreter")
            .field("nodes", &self.plan_ref().nodes.len())
            .field("tensors", &self.plan_ref().tensors.len())
            .field("arena_bytes", &self.plan_ref().arena.arena_bytes)
            .finish()
    }
}

impl<'a> Interpreter<'a> {
    /// Loads, prepares and plans the model in `bytes` (zero-copy: constant
    /// data stays in `bytes` when aligned). Errors name the problem and where.
    pub fn new(bytes: &'a [u8], options: Options) -> Result<Interpreter<'a>> {
        let plan = Arc::new(Plan::new(bytes, options)?);
        Ok(Interpreter {
            session: Session::new(plan),
        })
    }

    /// Prepares every operator of the model without stopping at the first
    /// that fails, for inspection: one report per operator, and the arena
    /// plan. Only a file the reader refuses (or a broken graph) is an error.
    pub fn analyze(bytes: &[u8], options: Options) -> Result<Analysis> {
        options.check_threads()?;
        let model = parse(bytes, &options)?;
        let mut prepared = prepare_model(&model, &options);
        threshold::fuse(&model, &mut prepared, &options)?;
        build::share_nodes(&mut prepared.nodes, &prepared.tensors, options.threads)?;
        let placed = place_tensors(&model, &prepared)?;
        Ok(Analysis {
            tensors: prepared.tensors,
            nodes: prepared.nodes.into_iter().map(|n| n.info).collect(),
            reports: prepared.reports,
            inputs: prepared.inputs,
            outputs: prepared.outputs,
            plan: placed.arena,
            buffers: placed.buffers,
        })
    }

    fn plan_ref(&self) -> &Plan<'a> {
        self.session.plan()
    }

    /// The shared plan (to start more sessions of the same model).
    pub fn shared_plan(&self) -> &Arc<Plan<'a>> {
        self.session.plan()
    }

    /// Its session.
    pub fn session(&mut self) -> &mut Session<'a> {
        &mut self.session
    }

    /// The options it was loaded with.
    pub fn options(&self) -> &Options {
        self.plan_ref().options()
    }

    /// Every tensor of the main subgraph.
    pub fn tensors(&self) -> &[TensorInfo] {
        self.plan_ref().tensors()
    }

    /// The model's inputs, in order.
    pub fn inputs(&self) -> Vec<&TensorInfo> {
        let plan = self.plan_ref();
        plan.inputs.iter().map(|&t| &plan.tensors[t]).collect()
    }

    /// The model's outputs, in order.
    pub fn outputs(&self) -> Vec<&TensorInfo> {
        let plan = self.plan_ref();
        plan.outputs.iter().map(|&t| &plan.tensors[t]).collect()
    }

    /// The nodes in execution order.
    pub fn nodes(&self) -> impl Iterator<Item = &NodeInfo> {
        self.plan_ref().nodes()
    }

    /// The arena plan.
    pub fn plan(&self) -> &ArenaPlan {
        self.plan_ref().arena_plan()
    }

    /// The arena's byte range of tensor `t`, if it lives in the arena.
    pub fn arena_range(&self, t: usize) -> Option<Range<usize>> {
        self.plan_ref().arena_range(t)
    }

    /// The arena buffer index of tensor `t`, if any (aliased tensors share one).
    pub fn arena_buffer(&self, t: usize) -> Option<usize> {
        self.plan_ref().arena_buffer(t)
    }

    /// Finds input `key`: its position (`"0"`), its tensor name, or the
    /// tensor name's part before `:` (`input_ids` for
    /// `serving_default_input_ids:0`, its signature name without prefix).
    pub fn input_position(&self, key: &str) -> Option<usize> {
        self.plan_ref().input_position(key)
    }

    /// Copies `data` (the input's bytes, little-endian, row-major) into
    /// model input `position`. [`Error::Input`](crate::Error::Input) for an
    /// unknown position or a length other than the tensor's.
    pub fn set_input(&mut self, position: usize, data: &[u8]) -> Result<()> {
        self.session.set_input(position, data)
    }

    /// The bytes of model output `position` after [`invoke`](Self::invoke)
    /// (`None` for an output fused with [`Options::threshold`]: see
    /// [`hits`](Self::hits)).
    pub fn output(&self, position: usize) -> Option<&[u8]> {
        self.session.output(position)
    }

    /// The hits of model output `position` after [`invoke`](Self::invoke),
    /// if its node runs fused with [`Options::threshold`]
    /// ([`Session::hits`]).
    pub fn hits(&self, position: usize) -> Option<Hits<'_>> {
        self.session.hits(position)
    }

    /// The bytes of tensor `t` (constant data, a variable's state, or its
    /// arena bytes, which hold the last invoke's value only while the
    /// tensor is live).
    pub fn tensor_data(&self, t: usize) -> Option<&[u8]> {
        self.session.tensor_data(t)
    }

    /// Resets every variable tensor ([`Session::reset_variables`]).
    pub fn reset_variables(&mut self) {
        self.session.reset_variables()
    }

    /// Runs every node on the inputs set with [`set_input`](Self::set_input).
    pub fn invoke(&mut self) -> Result<()> {
        self.session.invoke()
    }

    /// [`invoke`](Self::invoke), telling `profiler` about every node.
    pub fn invoke_with(&mut self, profiler: &mut dyn Profiler) -> Result<()> {
        self.session.invoke_with(profiler)
    }
}

/// What [`Interpreter::analyze`] found.
#[derive(Clone, Debug)]
pub struct Analysis {
    /// Every tensor of the main subgraph.
    pub tensors: Vec<TensorInfo>,
    /// The nodes that prepared, in execution order.
    pub nodes: Vec<NodeInfo>,
    /// One report per operator.
    pub reports: Vec<OpReport>,
    /// Model input tensor indices.
    pub inputs: Vec<usize>,
    /// Model output tensor indices.
    pub outputs: Vec<usize>,
    /// The arena plan. Operators that did not prepare are planned with
    /// their tensors but without the scratch their kernels would need.
    pub plan: ArenaPlan,
    /// The buffer of each tensor in the plan (`None`: constant, variable or
    /// unused).
    pub buffers: Vec<Option<usize>>,
}
