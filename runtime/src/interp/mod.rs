//! The `.tflite` interpreter: load -> prepare -> plan -> invoke.
//!
//! [`Interpreter::new`] reads a model through [`qneon_tflite`] (zero-copy,
//! every offset, length, index and shape verified, the declared tensor sizes
//! checked against the memory budget before anything is allocated), then
//! prepares every operator as TFLite's `Prepare` does: dtypes and shapes
//! checked, quantization checked against TFLite's rules, multipliers and
//! tables computed, weights packed once. An operator it cannot run is a
//! load-time [`Error::UnsupportedOp`] naming the op (its TFLite name), its
//! index and what is missing. Then the tensors' lifetimes are folded into one
//! arena ([`plan`]), which is allocated once; [`Interpreter::invoke`] only
//! runs kernels.
//!
//! Requantizing arithmetic is the library's ([`qneon::Gemm`],
//! [`qneon::MatMul`], [`qneon::Add`], [`qneon::Sub`], [`qneon::Mul`], the
//! activations), in the rounding [`Options::rounding`] chooses; where LiteRT
//! was measured to round otherwise (BATCH_MATMUL and MUL round twice in its
//! single-rounding build) the op says so and follows LiteRT.
//!
//! Where things are: [`Options`] in `options.rs`; the reported types in
//! `info.rs`; loading and planning (`prepare_model`, `plan_model`) in
//! `build.rs`; the arena plan in [`plan`]; each op family's `Prepare` and
//! kernel side by side under `ops/`. This file holds the [`Interpreter`]
//! and its driving loop.

mod build;
mod carve;
mod info;
mod ops;
mod options;
pub mod plan;

use std::ops::Range;

use crate::error::{Error, Result};
use build::{parse, prepare_model, Location, Node};
use carve::{NodeIo, Place};
use ops::Io;
use plan::{ArenaPlan, ARENA_ALIGNMENT};

pub use info::{NodeInfo, OpReport, TensorInfo};
pub use options::{Options, Rounding, TfliteKernels};

/// Sees every node `invoke` runs: `begin` right before its kernel, `end`
/// right after. Both default to nothing.
pub trait Profiler {
    /// Node `node` starts.
    fn begin(&mut self, node: &NodeInfo) {
        let _ = node;
    }
    /// Node `node` ended.
    fn end(&mut self, node: &NodeInfo) {
        let _ = node;
    }
}

/// The profiler that records nothing.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoProfile;

impl Profiler for NoProfile {}

/// A loaded, prepared and planned model.
pub struct Interpreter<'a> {
    options: Options,
    tensors: Vec<TensorInfo>,
    locations: Vec<Location<'a>>,
    nodes: Vec<Node>,
    /// Each node's input and output memory, worked out at load.
    node_io: Vec<NodeIo>,
    inputs: Vec<usize>,
    outputs: Vec<usize>,
    plan: ArenaPlan,
    /// `u128` for alignment; the arena starts at `arena_start` bytes, the
    /// first 64-byte aligned address.
    arena: Vec<u128>,
    arena_start: usize,
}

impl std::fmt::Debug for Interpreter<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Interpreter")
            .field("nodes", &self.nodes.len())
            .field("tensors", &self.tensors.len())
            .field("arena_bytes", &self.plan.arena_bytes)
            .finish()
    }
}

impl<'a> Interpreter<'a> {
    /// Loads, prepares and plans the model in `bytes` (zero-copy: constant
    /// data stays in `bytes` when aligned). Errors name the problem and where.
    pub fn new(bytes: &'a [u8], options: Options) -> Result<Interpreter<'a>> {
        let model = parse(bytes, &options)?;
        let prepared = prepare_model(&model, &options)?;
        if let Some(e) = prepared.reports.iter().find_map(|r| r.status.clone().err()) {
            return Err(e);
        }
        let plan = prepared.plan;
        if let Some(budget) = options.memory_budget {
            if plan.arena_bytes > budget {
                return Err(Error::OverBudget {
                    what: "arena",
                    needed: plan.arena_bytes,
                    budget,
                });
            }
        }
        let node_io = node_io(
            &prepared.nodes,
            &prepared.locations,
            &prepared.tensors,
            &plan,
        )?;
        let arena = vec![0u128; (plan.arena_bytes + ARENA_ALIGNMENT).div_ceil(16)];
        let address = arena.as_ptr() as usize;
        let arena_start = address.next_multiple_of(ARENA_ALIGNMENT) - address;
        Ok(Interpreter {
            options,
            tensors: prepared.tensors,
            locations: prepared.locations,
            nodes: prepared.nodes,
            node_io,
            inputs: prepared.inputs,
            outputs: prepared.outputs,
            plan,
            arena,
            arena_start,
        })
    }

    /// Prepares every operator of the model without stopping at the first
    /// that fails, for inspection: one report per operator, and the arena
    /// plan when every operator prepared. Only a file the reader refuses
    /// (or a broken graph) is an error.
    pub fn analyze(bytes: &[u8], options: Options) -> Result<Analysis> {
        let model = parse(bytes, &options)?;
        let prepared = prepare_model(&model, &options)?;
        Ok(Analysis {
            tensors: prepared.tensors,
            nodes: prepared.nodes.into_iter().map(|n| n.info).collect(),
            reports: prepared.reports,
            inputs: prepared.inputs,
            outputs: prepared.outputs,
            plan: prepared.plan,
            buffers: prepared
                .locations
                .iter()
                .map(|l| match l {
                    Location::Arena(b) => Some(*b),
                    _ => None,
                })
                .collect(),
        })
    }

    /// The options it was loaded with.
    pub fn options(&self) -> &Options {
        &self.options
    }

    /// Every tensor of the main subgraph.
    pub fn tensors(&self) -> &[TensorInfo] {
        &self.tensors
    }

    /// The model's inputs, in order.
    pub fn inputs(&self) -> Vec<&TensorInfo> {
        self.inputs.iter().map(|&t| &self.tensors[t]).collect()
    }

    /// The model's outputs, in order.
    pub fn outputs(&self) -> Vec<&TensorInfo> {
        self.outputs.iter().map(|&t| &self.tensors[t]).collect()
    }

    /// The nodes in execution order.
    pub fn nodes(&self) -> impl Iterator<Item = &NodeInfo> {
        self.nodes.iter().map(|n| &n.info)
    }

    /// The arena plan.
    pub fn plan(&self) -> &ArenaPlan {
        &self.plan
    }

    /// The arena's byte range of tensor `t`, if it lives in the arena.
    pub fn arena_range(&self, t: usize) -> Option<Range<usize>> {
        match self.locations.get(t)? {
            Location::Arena(buffer) => {
                let range = self.plan.range(*buffer);
                Some(range.start..range.start + self.tensors[t].bytes)
            }
            _ => None,
        }
    }

    /// The arena buffer index of tensor `t`, if any (aliased tensors share one).
    pub fn arena_buffer(&self, t: usize) -> Option<usize> {
        match self.locations.get(t)? {
            Location::Arena(buffer) => Some(*buffer),
            _ => None,
        }
    }

    fn arena_bytes_mut(&mut self) -> &mut [u8] {
        let len = self.plan.arena_bytes;
        let start = self.arena_start;
        &mut bytemuck::cast_slice_mut::<u128, u8>(&mut self.arena)[start..start + len]
    }

    fn arena_bytes(&self) -> &[u8] {
        let len = self.plan.arena_bytes;
        &bytemuck::cast_slice::<u128, u8>(&self.arena)[self.arena_start..self.arena_start + len]
    }

    /// Finds input `key`: its position (`"0"`), its tensor name, or the
    /// tensor name's part before `:` (`input_ids` for
    /// `serving_default_input_ids:0`, its signature name without prefix).
    pub fn input_position(&self, key: &str) -> Option<usize> {
        if let Ok(position) = key.parse::<usize>() {
            return (position < self.inputs.len()).then_some(position);
        }
        let names: Vec<&str> = self
            .inputs
            .iter()
            .map(|&t| self.tensors[t].name.as_str())
            .collect();
        if let Some(p) = names.iter().position(|&n| n == key) {
            return Some(p);
        }
        let short = |name: &str| -> String {
            let base = name.split(':').next().unwrap_or(name);
            base.strip_prefix("serving_default_")
                .unwrap_or(base)
                .to_string()
        };
        let matches: Vec<usize> = (0..names.len())
            .filter(|&p| short(names[p]) == key)
            .collect();
        (matches.len() == 1).then(|| matches[0])
    }

    /// Copies `data` (the input's bytes, little-endian, row-major) into
    /// model input `position`. [`Error::Input`] for an unknown position or
    /// a length other than the tensor's.
    pub fn set_input(&mut self, position: usize, data: &[u8]) -> Result<()> {
        let t = *self.inputs.get(position).ok_or_else(|| Error::Input {
            problem: format!(
                "input {position} does not exist (the model has {})",
                self.inputs.len()
            ),
        })?;
        let info = &self.tensors[t];
        if data.len() != info.bytes {
            return Err(Error::Input {
                problem: format!(
                    "input {position} ({:?}, {} {:?}) needs {} bytes, got {}",
                    info.name,
                    info.dtype.name(),
                    info.shape,
                    info.bytes,
                    data.len()
                ),
            });
        }
        let range = self.arena_range(t).ok_or_else(|| Error::Input {
            problem: format!("input {position} is constant in the model"),
        })?;
        self.arena_bytes_mut()[range].copy_from_slice(data);
        Ok(())
    }

    /// The bytes of model output `position` after [`invoke`](Self::invoke).
    pub fn output(&self, position: usize) -> Option<&[u8]> {
        let t = *self.outputs.get(position)?;
        self.tensor_data(t)
    }

    /// The bytes of tensor `t` (constant data, or its arena bytes, which
    /// hold the last invoke's value only while the tensor is live).
    pub fn tensor_data(&self, t: usize) -> Option<&[u8]> {
        match self.locations.get(t)? {
            Location::Arena(_) => Some(&self.arena_bytes()[self.arena_range(t)?]),
            Location::Constant(c) => Some(c.bytes()),
            Location::Unused => None,
        }
    }

    /// Runs every node on the inputs set with [`set_input`](Self::set_input).
    pub fn invoke(&mut self) -> Result<()> {
        self.invoke_with(&mut NoProfile)
    }

    /// [`invoke`](Self::invoke), telling `profiler` about every node.
    pub fn invoke_with(&mut self, profiler: &mut dyn Profiler) -> Result<()> {
        let backend = self.options.backend;
        let start = self.arena_start;
        let len = self.plan.arena_bytes;
        let arena = &mut bytemuck::cast_slice_mut::<u128, u8>(&mut self.arena)[start..start + len];
        let locations = &self.locations;
        let constant = |t: usize| match &locations[t] {
            Location::Constant(c) => c.bytes(),
            _ => &[],
        };
        for (node, io) in self.nodes.iter().zip(&self.node_io) {
            if node.info.aliased {
                profiler.begin(&node.info);
                profiler.end(&node.info);
                continue;
            }
            let (ins, mut outs) = io.carve(&mut *arena, constant);
            let scratch: &mut [u8] = if io.has_scratch {
                outs.pop().unwrap_or_default()
            } else {
                &mut []
            };
            profiler.begin(&node.info);
            node.kernel
                .run(backend, Io { ins, outs, scratch })
                .map_err(|problem| Error::InvalidOp {
                    op: node.info.op.clone(),
                    index: node.info.index,
                    problem,
                })?;
            profiler.end(&node.info);
        }
        Ok(())
    }
}

/// Every node's [`NodeIo`]: its tensors' arena ranges from the plan, a
/// broken plan (an input overlapping an output of the same node) an error
/// naming the operator.
fn node_io(
    nodes: &[Node],
    locations: &[Location<'_>],
    tensors: &[TensorInfo],
    plan: &ArenaPlan,
) -> Result<Vec<NodeIo>> {
    let place = |t: usize| match locations.get(t) {
        Some(Location::Arena(buffer)) => {
            let r = plan.range(*buffer);
            Place::Arena(r.start..r.start + tensors[t].bytes)
        }
        Some(Location::Constant(_)) => Place::Constant,
        _ => Place::Absent,
    };
    nodes
        .iter()
        .map(|node| {
            if node.info.aliased {
                return Ok(NodeIo::default());
            }
            let scratch = node.scratch.map(|buffer| plan.range(buffer));
            NodeIo::new(
                &node.info.inputs,
                &node.info.outputs,
                scratch,
                plan.arena_bytes,
                place,
            )
            .map_err(|problem| Error::InvalidOp {
                op: node.info.op.clone(),
                index: node.info.index,
                problem,
            })
        })
        .collect()
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
    /// The buffer of each tensor in the plan (`None`: constant or unused).
    pub buffers: Vec<Option<usize>>,
}
