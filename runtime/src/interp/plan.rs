//! A [`Plan`]: a verified, prepared and placed model, immutable after load,
//! `Send + Sync`, so one plan behind an `Arc` serves any number of
//! [`Session`](super::Session)s on any threads.
//!
//! It owns what every session shares: the kernels (packed weights, tables,
//! multipliers), the constants, where every tensor lives ([`Place`]), each
//! node's I/O and the arena plan. The model's bytes are borrowed
//! ([`Plan::new`], the plan lives no longer than they do: what
//! `Interpreter<'a>` always did) or shared ([`Plan::from_shared`], a
//! `Plan<'static>` that can go anywhere); either way constant tensors stay
//! ranges of the file, so no weight is copied unless misaligned.

use std::ops::Range;
use std::sync::Arc;

use qneon_tflite::ModelBytes;

use super::arena::ArenaPlan;
use super::build::{parse, place_tensors, prepare_model, share_nodes, Node, Prepared};
use super::carve::NodeIo;
use super::info::{NodeInfo, TensorInfo};
use super::options::Options;
use super::place::{Constant, ModelData, Place};
use super::threads::Share;
use super::threshold::{self, Fusion};
use crate::error::{Error, Result};

/// A loaded, prepared and planned model: everything but the memory a run
/// writes.
pub struct Plan<'a> {
    pub(super) options: Options,
    pub(super) model: ModelData<'a>,
    pub(super) tensors: Vec<TensorInfo>,
    pub(super) places: Vec<Place>,
    pub(super) constants: Vec<Constant>,
    /// The arena buffer of each tensor (aliased tensors share one).
    buffers: Vec<Option<usize>>,
    pub(super) nodes: Vec<Node>,
    /// Each node's memory, worked out at load.
    pub(super) node_io: Vec<NodeIo>,
    pub(super) inputs: Vec<usize>,
    pub(super) outputs: Vec<usize>,
    pub(super) arena: ArenaPlan,
    pub(super) variable_bytes: usize,
    /// The nodes fused with [`Options::threshold`], in execution order.
    pub(super) fusions: Vec<Fusion>,
    /// Each node's fusion (an index into `fusions`), if it has one; empty
    /// without fusions.
    pub(super) fused_at: Vec<Option<usize>>,
    /// Each node's shares under [`Options::threads`] (empty for a node that
    /// runs whole); empty with one thread.
    pub(super) shares: Vec<Vec<Share>>,
}

impl std::fmt::Debug for Plan<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Plan")
            .field("nodes", &self.nodes.len())
            .field("tensors", &self.tensors.len())
            .field("arena_bytes", &self.arena.arena_bytes)
            .field("variable_bytes", &self.variable_bytes)
            .finish()
    }
}

impl<'a> Plan<'a> {
    /// Loads, prepares and plans the model in `bytes`, borrowing them
    /// (constant data stays in `bytes` when aligned). Errors name the
    /// problem and where; an operator this runtime cannot run is reported
    /// before any graph check.
    pub fn new(bytes: &'a [u8], options: Options) -> Result<Plan<'a>> {
        Plan::build(ModelData::Borrowed(bytes), options)
    }

    fn build(model: ModelData<'a>, options: Options) -> Result<Plan<'a>> {
        options.check_threads()?;
        threshold::check(&options)?;
        let bytes = model.bytes();
        let parsed = parse(bytes, &options)?;
        let mut prepared = prepare_model(&parsed, &options);
        if let Some(e) = prepared.first_failure() {
            return Err(e);
        }
        let fusions = threshold::fuse(&parsed, &mut prepared, &options)?;
        // Without fusions nothing is allocated (the plan's memory as it was).
        let mut fused_at = Vec::new();
        if !fusions.is_empty() {
            fused_at = vec![None; prepared.nodes.len()];
            for (k, fusion) in fusions.iter().enumerate() {
                fused_at[fusion.step] = Some(k);
            }
        }
        let shares = share_nodes(&mut prepared.nodes, &prepared.tensors, options.threads)?;
        let placed = place_tensors(&parsed, &prepared)?;
        if let Some(budget) = options.memory_budget {
            let needed = placed
                .arena
                .arena_bytes
                .saturating_add(placed.variable_bytes);
            if needed > budget {
                return Err(Error::OverBudget {
                    what: "arena",
                    needed,
                    budget,
                });
            }
        }
        let Prepared {
            tensors,
            nodes,
            inputs,
            outputs,
            ..
        } = prepared;
        let node_io = nodes
            .iter()
            .zip(&placed.scratch)
            .map(|(node, scratch)| {
                if node.info.aliased || node.info.folded_into.is_some() {
                    return Ok(NodeIo::default());
                }
                NodeIo::new(
                    &node.info.inputs,
                    &node.info.outputs,
                    &node.state_inputs,
                    scratch.clone(),
                    (placed.arena.arena_bytes, placed.variable_bytes),
                    |t| placed.places[t].clone(),
                )
                .map_err(|problem| Error::InvalidOp {
                    op: node.info.op.clone(),
                    index: node.info.index,
                    problem,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        drop(parsed);
        Ok(Plan {
            options,
            model,
            tensors,
            places: placed.places,
            constants: placed.constants,
            buffers: placed.buffers,
            nodes,
            node_io,
            inputs,
            outputs,
            arena: placed.arena,
            variable_bytes: placed.variable_bytes,
            fusions,
            fused_at,
            shares,
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

    /// The model's input tensor indices, in order.
    pub fn input_tensors(&self) -> &[usize] {
        &self.inputs
    }

    /// The model's output tensor indices, in order.
    pub fn output_tensors(&self) -> &[usize] {
        &self.outputs
    }

    /// The nodes in execution order.
    pub fn nodes(&self) -> impl Iterator<Item = &NodeInfo> {
        self.nodes.iter().map(|n| &n.info)
    }

    /// Whether tensor `t` is the output of a node fused with the
    /// threshold: its dense bytes are never written.
    pub fn is_fused_output(&self, t: usize) -> bool {
        self.fusions.iter().any(|f| f.tensor == t)
    }

    /// The arena plan.
    pub fn arena_plan(&self) -> &ArenaPlan {
        &self.arena
    }

    /// Bytes of a session's variable block (0 without variable tensors).
    pub fn variable_bytes(&self) -> usize {
        self.variable_bytes
    }

    /// The arena's byte range of tensor `t`, if it lives in the arena.
    pub fn arena_range(&self, t: usize) -> Option<Range<usize>> {
        match self.places.get(t)? {
            Place::Arena(range) => Some(range.clone()),
            _ => None,
        }
    }

    /// The arena buffer index of tensor `t`, if any (aliased tensors share one).
    pub fn arena_buffer(&self, t: usize) -> Option<usize> {
        self.buffers.get(t).copied().flatten()
    }

    /// The bytes of constant tensor `t` (`None` for any other).
    pub fn constant_data(&self, t: usize) -> Option<&[u8]> {
        match self.places.get(t)? {
            Place::Constant(c) => Some(self.constants[*c].bytes(self.model.bytes())),
            _ => None,
        }
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
}

impl Plan<'static> {
    /// [`Plan::new`] on shared model bytes: the plan keeps a reference to
    /// them, so it borrows nothing and can be moved or shared anywhere.
    pub fn from_shared(bytes: Arc<ModelBytes>, options: Options) -> Result<Plan<'static>> {
        Plan::build(ModelData::Shared(bytes), options)
    }
}
