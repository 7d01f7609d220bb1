//! A [`Session`]: the memory one run of a [`Plan`] writes (the arena, which
//! holds the model's inputs, outputs, activations and every node's scratch,
//! and the variable block, which holds the state of variable tensors across
//! invokes). Any number of sessions share one plan; each runs on its own
//! thread without locking anything. With [`Options::threads`] above 1 a
//! session also keeps a pool of worker threads (see `threads/mod.rs`), started
//! with it: a node's shares run there.
//!
//! A panic inside a worker's share becomes an [`Error::InvalidOp`] naming
//! the node, never an abort. The session stays usable: the next invoke
//! runs every node again (only variable tensors, which the threads never
//! touch, keep state; an invoke that failed in any way leaves its outputs
//! undefined, as on one thread).
//!
//! [`Options::threads`]: super::Options::threads

use std::sync::Arc;

use qneon_pool::Pool;
use qneon_tflite::TensorType;

use super::arena::ARENA_ALIGNMENT;
use super::info::NodeInfo;
use super::ops::HitStore;
use super::place::Place;
use super::plan::Plan;
use super::threads::{run_shares, Cut, Scratch, Shared, ThreadMarks};
use super::threshold::Hits;
use crate::error::{Error, Result};

/// Sees every node `invoke` runs: `begin` right before its kernel, `end`
/// right after. Both default to nothing. `Send`: with several threads the
/// invoke loop runs on a worker thread of the session.
pub trait Profiler: Send {
    /// Node `node` starts.
    fn begin(&mut self, node: &NodeInfo) {
        let _ = node;
    }
    /// Node `node` ended.
    fn end(&mut self, node: &NodeInfo) {
        let _ = node;
    }
    /// What every thread reports when it starts and ends its share of a
    /// split node (with [`Options::threads`](super::Options::threads) above
    /// 1); `None` (the default): nothing.
    fn thread_marks(&self) -> Option<&dyn ThreadMarks> {
        None
    }
}

/// The profiler that records nothing.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoProfile;

impl Profiler for NoProfile {}

/// One run state of a shared [`Plan`]: allocated once at creation, then
/// [`invoke`](Session::invoke) only runs kernels.
pub struct Session<'a> {
    plan: Arc<Plan<'a>>,
    /// `u128` for alignment; the arena starts at `arena_start` bytes, the
    /// first 64-byte aligned address.
    arena: Vec<u128>,
    arena_start: usize,
    /// The variable block (16-byte aligned, each variable 64-byte aligned
    /// in it).
    variables: Vec<u128>,
    /// The hit buffer of each of the plan's fused nodes (one slot per
    /// output element), and how many hits the last invoke wrote there.
    hits: Vec<HitStore>,
    hit_counts: Vec<usize>,
    /// The worker threads, with more than one thread.
    workers: Option<Workers>,
}

/// A session's worker threads: the pool (or why it could not start) and a
/// scratch for every share after a node's first.
struct Workers {
    pool: std::result::Result<Pool, String>,
    scratch: Vec<Scratch>,
}

impl Workers {
    /// The pool of `plan`'s threads, when more than one.
    fn new(plan: &Plan<'_>) -> Option<Workers> {
        let threads = plan.options.threads;
        if threads < 2 {
            return None;
        }
        let pool = Pool::new(threads).map_err(|e| e.to_string());
        // A share's scratch: the node's, and before it, with a node cut by
        // columns, the share's tile.
        let scratch_bytes = plan
            .nodes
            .iter()
            .zip(&plan.shares)
            .map(|(node, shares)| {
                let tile = shares.iter().map(|s| match s.cut {
                    Cut::Columns(_) => s.bytes.len(),
                    Cut::Bands => 0,
                });
                tile.max().map_or(0, |tile| node.info.scratch_bytes + tile)
            })
            .max()
            .unwrap_or(0);
        // One per thread: the shares of a node cut by columns all run on
        // these (those of a band's node, but the first, which has the
        // node's scratch in the arena).
        let scratch = (0..threads).map(|_| Scratch::new(scratch_bytes)).collect();
        Some(Workers { pool, scratch })
    }
}

impl std::fmt::Debug for Session<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session").field("plan", &self.plan).finish()
    }
}

impl<'a> Session<'a> {
    /// A session of `plan`: its arena and variable block allocated, the
    /// variables reset ([`reset_variables`](Self::reset_variables)).
    pub fn new(plan: Arc<Plan<'a>>) -> Session<'a> {
        let arena = vec![0u128; (plan.arena.arena_bytes + ARENA_ALIGNMENT).div_ceil(16)];
        let address = arena.as_ptr() as usize;
        let arena_start = address.next_multiple_of(ARENA_ALIGNMENT) - address;
        let variables = vec![0u128; plan.variable_bytes.div_ceil(16)];
        let hits = plan.fusions.iter().map(|f| f.fused.new_store()).collect();
        let hit_counts = vec![0; plan.fusions.len()];
        let workers = Workers::new(&plan);
        let mut session = Session {
            plan,
            arena,
            arena_start,
            variables,
            hits,
            hit_counts,
            workers,
        };
        session.reset_variables();
        session
    }

    /// The plan it runs.
    pub fn plan(&self) -> &Arc<Plan<'a>> {
        &self.plan
    }

    /// Sets every variable tensor to zero, as TFLite's
    /// `ResetVariableTensor` does: an int8 variable to its zero point (the
    /// quantized zero), any other to zero bytes.
    pub fn reset_variables(&mut self) {
        let plan = &self.plan;
        let block = bytemuck::cast_slice_mut::<u128, u8>(&mut self.variables);
        for (t, place) in plan.places.iter().enumerate() {
            if let Place::Variable(range) = place {
                let info = &plan.tensors[t];
                let fill = match (info.dtype, info.per_tensor()) {
                    (TensorType::Int8, Some((_, zero_point))) => zero_point as i8 as u8,
                    _ => 0,
                };
                block[range.clone()].fill(fill);
            }
        }
    }

    fn arena_bytes(&self) -> &[u8] {
        let (start, len) = (self.arena_start, self.plan.arena.arena_bytes);
        &bytemuck::cast_slice::<u128, u8>(&self.arena)[start..start + len]
    }

    /// Copies `data` (the input's bytes, little-endian, row-major) into
    /// model input `position`. [`Error::Input`] for an unknown position or
    /// a length other than the tensor's.
    pub fn set_input(&mut self, position: usize, data: &[u8]) -> Result<()> {
        let plan = &self.plan;
        let t = *plan.inputs.get(position).ok_or_else(|| Error::Input {
            problem: format!(
                "input {position} does not exist (the model has {})",
                plan.inputs.len()
            ),
        })?;
        let info = &plan.tensors[t];
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
        let range = plan.arena_range(t).ok_or_else(|| Error::Input {
            problem: format!("input {position} is not in the arena (constant or variable)"),
        })?;
        let (start, len) = (self.arena_start, plan.arena.arena_bytes);
        let arena = &mut bytemuck::cast_slice_mut::<u128, u8>(&mut self.arena)[start..start + len];
        arena[range].copy_from_slice(data);
        Ok(())
    }

    /// The bytes of model output `position` after [`invoke`](Self::invoke);
    /// `None` for an output whose node runs fused with
    /// [`Options::threshold`](super::Options::threshold) (its dense bytes
    /// are never written: see [`hits`](Self::hits)).
    pub fn output(&self, position: usize) -> Option<&[u8]> {
        let t = *self.plan.outputs.get(position)?;
        self.tensor_data(t)
    }

    /// The hits of model output `position` after [`invoke`](Self::invoke):
    /// its elements whose value is at or above
    /// [`Options::threshold`](super::Options::threshold), in index order,
    /// if its node runs fused with the threshold (`None` for every other
    /// output, and without a threshold). Empty before the first invoke.
    pub fn hits(&self, position: usize) -> Option<Hits<'_>> {
        let t = *self.plan.outputs.get(position)?;
        let k = self.plan.fusions.iter().position(|f| f.tensor == t)?;
        Some(self.plan.fusions[k].hits(&self.hits[k], self.hit_counts[k]))
    }

    /// The bytes of tensor `t`: constant data, a variable's current state,
    /// or its arena bytes (which hold the last invoke's value only while the
    /// tensor is live). `None` for the output of a node fused with the
    /// threshold (never written).
    pub fn tensor_data(&self, t: usize) -> Option<&[u8]> {
        if self.plan.is_fused_output(t) {
            return None;
        }
        match self.plan.places.get(t)? {
            Place::Arena(range) => Some(&self.arena_bytes()[range.clone()]),
            Place::Variable(range) => {
                Some(&bytemuck::cast_slice::<u128, u8>(&self.variables)[range.clone()])
            }
            Place::Constant(_) => self.plan.constant_data(t),
            Place::Unused => None,
        }
    }

    /// The bytes of variable tensor `t`, writable (to set a state before an
    /// invoke); `None` when `t` is not a variable.
    pub fn variable_mut(&mut self, t: usize) -> Option<&mut [u8]> {
        match self.plan.places.get(t)? {
            Place::Variable(range) => {
                Some(&mut bytemuck::cast_slice_mut::<u128, u8>(&mut self.variables)[range.clone()])
            }
            _ => None,
        }
    }

    /// Runs every node on the inputs set with [`set_input`](Self::set_input).
    pub fn invoke(&mut self) -> Result<()> {
        self.invoke_with(&mut NoProfile)
    }

    /// [`invoke`](Self::invoke), telling `profiler` about every node.
    pub fn invoke_with(&mut self, profiler: &mut dyn Profiler) -> Result<()> {
        // A plan with threads or with fused nodes takes the general loop,
        // so that this one, the loop of every plan without either, keeps
        // only what it needs around each kernel (`with_io` runs the kernel
        // on the `Io` where it was built: one thread's instructions within
        // 0.5% of the threadless runtime's, issue 29).
        if self.workers.is_some() || !self.plan.fusions.is_empty() {
            return self.invoke_general(profiler);
        }
        let plan = &*self.plan;
        let backend = plan.options.backend;
        let (start, len) = (self.arena_start, plan.arena.arena_bytes);
        let arena = &mut bytemuck::cast_slice_mut::<u128, u8>(&mut self.arena)[start..start + len];
        let variables = bytemuck::cast_slice_mut::<u128, u8>(&mut self.variables);
        let model = plan.model.bytes();
        let constant = |c: usize| plan.constants[c].bytes(model);
        for (node, io) in plan.nodes.iter().zip(&plan.node_io) {
            if node.info.aliased || node.info.folded_into.is_some() {
                profiler.begin(&node.info);
                profiler.end(&node.info);
                continue;
            }
            let ran = io.with_io(&mut *arena, &mut *variables, constant, |io| {
                profiler.begin(&node.info);
                node.kernel.run(backend, io)
            });
            ran.map_err(|problem| Error::InvalidOp {
                op: node.info.op.clone(),
                index: node.info.index,
                problem,
            })?;
            profiler.end(&node.info);
        }
        Ok(())
    }

    /// [`invoke_with`](Self::invoke_with) for a plan with nodes fused with
    /// the threshold (those write their hits into the session's buffers),
    /// or with threads (the loop runs on the calling thread, each split
    /// node's shares on as many of the pool's), or both.
    #[inline(never)]
    fn invoke_general(&mut self, profiler: &mut dyn Profiler) -> Result<()> {
        let workers = match &mut self.workers {
            Some(workers) => {
                let pool = workers.pool.as_ref().map_err(|e| Error::InvalidOption {
                    option: "threads",
                    problem: format!("the session's threads did not start: {e}"),
                })?;
                Some((pool, &mut workers.scratch[..]))
            }
            None => None,
        };
        let plan = &*self.plan;
        let (start, len) = (self.arena_start, plan.arena.arena_bytes);
        let memory = Memory {
            arena: &mut bytemuck::cast_slice_mut::<u128, u8>(&mut self.arena)[start..start + len],
            variables: bytemuck::cast_slice_mut::<u128, u8>(&mut self.variables),
            hits: &mut self.hits,
            hit_counts: &mut self.hit_counts,
        };
        run_nodes(plan, memory, workers, profiler)
    }
}

/// What an invoke writes: the arena, the variable block, the fused nodes'
/// hit buffers and counts.
struct Memory<'s> {
    arena: &'s mut [u8],
    variables: &'s mut [u8],
    hits: &'s mut [HitStore],
    hit_counts: &'s mut [usize],
}

/// Runs `plan`'s nodes in order on `memory`: fused nodes write their hits,
/// split nodes run their shares on `workers` (the pool and a scratch for
/// every share after the first; the calling thread is the pool's thread 0).
fn run_nodes(
    plan: &Plan<'_>,
    memory: Memory<'_>,
    mut workers: Option<(&Pool, &mut [Scratch])>,
    profiler: &mut dyn Profiler,
) -> Result<()> {
    let Memory {
        arena,
        variables,
        hits,
        hit_counts,
    } = memory;
    let backend = plan.options.backend;
    let model = plan.model.bytes();
    let constant = |c: usize| plan.constants[c].bytes(model);
    // A failed invoke leaves no hits of an earlier one behind.
    hit_counts.fill(0);
    for (p, (node, io)) in plan.nodes.iter().zip(&plan.node_io).enumerate() {
        if node.info.aliased || node.info.folded_into.is_some() {
            profiler.begin(&node.info);
            profiler.end(&node.info);
            continue;
        }
        let failed = |problem| Error::InvalidOp {
            op: node.info.op.clone(),
            index: node.info.index,
            problem,
        };
        // One-thread plans have no shares at all.
        let shares = plan.shares.get(p).map_or(&[][..], |s| &s[..]);
        let fused = plan.fused_at.get(p).copied().flatten();
        // The node runs on its `Io` where it was built (`with_io`): carved
        // and returned, the `Io` (about 600 bytes) was copied once more per
        // node, about 140 instructions of the serial part with threads.
        let ran = io.with_io(&mut *arena, &mut *variables, constant, |io| {
            profiler.begin(&node.info);
            if let Some(k) = fused {
                hit_counts[k] =
                    plan.fusions[k]
                        .fused
                        .run(&*node.kernel, backend, io, &mut hits[k])?;
            } else if let (false, Some((pool, more))) = (shares.is_empty(), workers.as_mut()) {
                let band = std::mem::take(&mut io.outs[0]);
                let shared = Shared {
                    kernel: &*node.kernel,
                    backend,
                    ins: &io.ins,
                    node: &node.info,
                    scratch_bytes: node.info.scratch_bytes,
                    marks: profiler.thread_marks(),
                };
                run_shares(pool, &shared, shares, (band, 0), &mut *io.scratch, more)?;
            } else {
                node.kernel.run(backend, io)?;
            }
            Ok(())
        });
        ran.map_err(failed)?;
        profiler.end(&node.info);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::interp::Options;

    impl Session<'_> {
        /// [`Session::invoke`] with every node's tiles run one call each,
        /// last tile first: what a scheduler splitting the tiles may do.
        /// Runs every node in ranges of `span` tiles, last range first.
        fn invoke_tile_by_tile(&mut self, span: usize) -> Result<()> {
            let plan = &*self.plan;
            let backend = plan.options.backend;
            let (start, len) = (self.arena_start, plan.arena.arena_bytes);
            let arena =
                &mut bytemuck::cast_slice_mut::<u128, u8>(&mut self.arena)[start..start + len];
            let variables = bytemuck::cast_slice_mut::<u128, u8>(&mut self.variables);
            let model = plan.model.bytes();
            let constant = |c: usize| plan.constants[c].bytes(model);
            for (node, io) in plan.nodes.iter().zip(&plan.node_io) {
                let mut io = io.carve(&mut *arena, &mut *variables, constant);
                let mut end = node.kernel.tiles();
                while end > 0 {
                    let start = end.saturating_sub(span);
                    node.kernel
                        .run_tiles(backend, start..end, &mut io)
                        .map_err(|problem| Error::Graph { problem })?;
                    end = start;
                }
            }
            Ok(())
        }
    }

    fn models() -> std::path::PathBuf {
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../models")
    }

    /// Every single-op model and the 1-layer MobileBert give the same bytes
    /// run whole, one tile at a time and three tiles at a time (ranges that
    /// start and end inside a FULLY_CONNECTED row of column tiles), in
    /// reverse order: the tiles are independent and cover the outputs.
    #[test]
    fn tiles_run_alone_give_the_bytes_of_the_whole_run() {
        let mut files = vec![models().join("mobilebert_squad_1l.tflite")];
        for case in std::fs::read_dir(models().join("ops")).unwrap() {
            let model = case.unwrap().path().join("model.tflite");
            if model.exists() {
                files.push(model);
            }
        }
        let mut checked = 0;
        let mut multi_tile_nodes = 0;
        for file in &files {
            let bytes = qneon_tflite::ModelBytes::read(file, 1 << 30).unwrap();
            for method in [qneon::Method::FixedPoint, qneon::Method::Lut] {
                let options = Options {
                    softmax_method: method,
                    ..Options::default()
                };
                let Ok(plan) = Plan::new(bytes.as_bytes(), options) else {
                    continue;
                };
                let plan = Arc::new(plan);
                multi_tile_nodes += plan.nodes.iter().filter(|n| n.kernel.tiles() > 1).count();
                let (mut whole, mut tiled, mut spans) = (
                    Session::new(plan.clone()),
                    Session::new(plan.clone()),
                    Session::new(plan.clone()),
                );
                // Deterministic input bytes.
                for (position, &t) in plan.inputs.iter().enumerate() {
                    let info = &plan.tensors[t];
                    let data: Vec<u8> = (0..info.bytes)
                        .map(|i| match info.dtype {
                            // Small int32 values: valid GATHER indices.
                            TensorType::Int32 => (if i % 4 == 0 { (i / 4) % 2 } else { 0 }) as u8,
                            TensorType::Float32 if i % 4 == 3 => 0x3f,
                            _ => (i * 37 % 251) as u8,
                        })
                        .collect();
                    whole.set_input(position, &data).unwrap();
                    tiled.set_input(position, &data).unwrap();
                    spans.set_input(position, &data).unwrap();
                }
                whole.invoke().unwrap();
                tiled.invoke_tile_by_tile(1).unwrap();
                spans.invoke_tile_by_tile(3).unwrap();
                for position in 0..plan.outputs.len() {
                    assert_eq!(
                        whole.output(position),
                        tiled.output(position),
                        "{}: output {position}",
                        file.display()
                    );
                    assert_eq!(
                        whole.output(position),
                        spans.output(position),
                        "{}: output {position}, 3-tile ranges",
                        file.display()
                    );
                }
                checked += 1;
            }
        }
        assert!(checked >= files.len(), "only {checked} models ran");
        assert!(multi_tile_nodes > 0);
    }
}
