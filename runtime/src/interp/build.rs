//! From a parsed model to what `invoke` runs: every operator prepared
//! ([`prepare_model`]), then the tensors' lifetimes, aliases and the arena
//! plan ([`place_tensors`]), which say where each tensor's bytes live.

use qneon_tflite::{Model, ParseOptions};

use super::arena::{ArenaPlan, BufferRequest, ARENA_ALIGNMENT};
use super::fold;
use super::info::{NodeInfo, OpReport, TensorInfo};
use super::ops::{self, element_size, Kernel, Nop};
use super::options::Options;
use super::place::{Constant, Place};
use super::threads::{self, Share};
use crate::error::{Error, Result};

/// A prepared operator: what inspect sees, what runs.
pub(super) struct Node {
    pub(super) info: NodeInfo,
    pub(super) kernel: Box<dyn Kernel>,
    /// Input positions its kernel updates in place (variable tensors).
    pub(super) state_inputs: Vec<usize>,
}

/// Parses `bytes`, refusing any one tensor larger than the memory budget.
pub(super) fn parse<'a>(bytes: &'a [u8], options: &Options) -> Result<Model<'a>> {
    let mut parse = ParseOptions::unlimited();
    if let Some(budget) = options.memory_budget {
        // One tensor over the budget can never fit. The sum of all tensors
        // may exceed it: the arena reuses memory, and is checked once planned.
        parse.max_tensor_bytes = budget;
    }
    Ok(Model::parse_with(bytes, &parse)?)
}

fn tensor_info(t: &qneon_tflite::Tensor<'_>) -> TensorInfo {
    let q = t.quantization();
    TensorInfo {
        index: t.index(),
        name: t.name().to_string(),
        dtype: t.dtype(),
        shape: t.shape().to_vec(),
        // `parse` checked that the size fits; STRING and resource tensors
        // have none and are refused by every op here.
        bytes: t.byte_size().unwrap_or(0),
        scales: q.map(|q| q.scales().to_vec()).unwrap_or_default(),
        zero_points: q.map(|q| q.zero_points().to_vec()).unwrap_or_default(),
        axis: q.and_then(|q| q.axis()),
        constant: t.is_constant() && !t.is_variable(),
        variable: t.is_variable(),
    }
}

/// Every operator prepared (a failure is reported, not returned: `analyze`
/// shows them all).
pub(super) struct Prepared {
    pub(super) tensors: Vec<TensorInfo>,
    pub(super) nodes: Vec<Node>,
    pub(super) reports: Vec<OpReport>,
    pub(super) inputs: Vec<usize>,
    pub(super) outputs: Vec<usize>,
}

impl Prepared {
    /// The first operator that did not prepare: a model with one cannot
    /// run, and saying so comes before any graph check.
    pub(super) fn first_failure(&self) -> Option<Error> {
        self.reports.iter().find_map(|r| r.status.clone().err())
    }
}

/// Prepares every operator of the main subgraph. `NodeInfo` is built here,
/// once, from the operator and its registration.
pub(super) fn prepare_model(model: &Model<'_>, options: &Options) -> Prepared {
    let graph = model.main_subgraph();
    let tensors: Vec<TensorInfo> = graph.tensors().iter().map(tensor_info).collect();
    let mut nodes: Vec<Node> = Vec::with_capacity(graph.operators().len());
    let mut reports = Vec::with_capacity(graph.operators().len());
    let folds = fold::pad_folds(graph, options);
    for (position, operator) in graph.operators().iter().enumerate() {
        let op_name = ops::op_name(operator);
        // A convolution that can take over its input's PAD does, unless it
        // then fails to prepare (it is prepared as written instead, and
        // its error, if any, is the model's).
        let mut folded = folds[position];
        let mut result = ops::prepare(graph, operator, options, folded);
        if folded.is_some() && result.is_err() {
            folded = None;
            result = ops::prepare(graph, operator, options, None);
        }
        let mut inputs = operator.inputs().to_vec();
        if let (Some(f), Ok(_)) = (folded, &result) {
            inputs[0] = Some(f.source);
            let pad = &mut nodes[f.pad];
            pad.info.folded_into = Some(operator.index());
            pad.info.work = 0;
        }
        // A failed operator is planned like the others (its tensors'
        // lifetimes count) and never run: a plan refuses such a model.
        let prepared = result.as_ref().ok();
        nodes.push(Node {
            info: NodeInfo {
                index: operator.index(),
                op: op_name.clone(),
                work: prepared.map_or(0, |p| p.work),
                unit: prepared.map_or("element", |p| p.unit),
                inputs,
                outputs: operator.outputs().to_vec(),
                scratch_bytes: prepared.map_or(0, |p| p.scratch_bytes),
                aliased: prepared.is_some_and(|p| p.alias),
                folded_into: None,
                arithmetic: prepared.and_then(|_| ops::arithmetic(operator, options)),
                fused: None,
                threads: 1,
                split_by_columns: false,
            },
            state_inputs: prepared.map(|p| p.state_inputs.clone()).unwrap_or_default(),
            kernel: Box::new(Nop),
        });
        let status = match result {
            Ok(prepared) => {
                if let Some(node) = nodes.last_mut() {
                    node.kernel = prepared.kernel;
                }
                Ok(())
            }
            Err(e) => Err(e),
        };
        reports.push(OpReport {
            index: operator.index(),
            op: op_name,
            status,
        });
    }
    Prepared {
        tensors,
        nodes,
        reports,
        inputs: graph.inputs().to_vec(),
        outputs: graph.outputs().to_vec(),
    }
}

/// Where every tensor lives: the arena plan, the variable block and the
/// constants.
pub(super) struct Placed {
    pub(super) places: Vec<Place>,
    pub(super) constants: Vec<Constant>,
    pub(super) arena: ArenaPlan,
    /// Each node's scratch range in the arena, if any.
    pub(super) scratch: Vec<Option<std::ops::Range<usize>>>,
    /// Bytes of the variable block.
    pub(super) variable_bytes: usize,
    /// The arena buffer of each tensor (aliased tensors share one).
    pub(super) buffers: Vec<Option<usize>>,
}

/// Lifetimes, aliases and the arena plan; the tensors' places. A variable
/// tensor may be read before any operator writes it (it holds state); no
/// operator may write one as an output (a kernel updates it in place).
pub(super) fn place_tensors(model: &Model<'_>, prepared: &Prepared) -> Result<Placed> {
    let Prepared {
        tensors,
        nodes,
        inputs,
        outputs,
        ..
    } = prepared;
    let graph = model.main_subgraph();
    let count = tensors.len();
    let steps = nodes.len();
    let graph_error = |problem: String| Error::Graph { problem };
    // Who writes each tensor, and when it is last read.
    let mut producer: Vec<Option<usize>> = vec![None; count];
    let mut last_read: Vec<Option<usize>> = vec![None; count];
    let mut is_input = vec![false; count];
    for &i in inputs {
        is_input[i] = true;
    }
    // A folded PAD neither reads nor writes: its convolution reads its
    // input, and its output is never made.
    let live = |node: &&Node| node.info.folded_into.is_none();
    for (step, node) in nodes.iter().enumerate().filter(|(_, n)| live(n)) {
        for &t in node.info.inputs.iter().flatten() {
            let ready = tensors[t].constant || tensors[t].variable || is_input[t];
            if !ready && producer[t].is_none() {
                return Err(graph_error(format!(
                    "operator {} ({}) reads tensor {t} ({:?}) before any operator writes it",
                    node.info.index, node.info.op, tensors[t].name
                )));
            }
            last_read[t] = Some(step);
        }
        for &t in node.info.outputs.iter().flatten() {
            if tensors[t].variable {
                return Err(graph_error(format!(
                    "operator {} ({}) writes variable tensor {t} ({:?}) as an output (a \
                     variable is updated in place by the operator that reads it)",
                    node.info.index, node.info.op, tensors[t].name
                )));
            }
            if tensors[t].constant || is_input[t] || producer[t].is_some() {
                return Err(graph_error(format!(
                    "operator {} ({}) writes tensor {t} ({:?}), which is constant, a model \
                     input or written before",
                    node.info.index, node.info.op, tensors[t].name
                )));
            }
            producer[t] = Some(step);
        }
    }
    for &t in outputs {
        if !tensors[t].constant && !is_input[t] && producer[t].is_none() {
            return Err(graph_error(format!(
                "model output tensor {t} ({:?}) is written by no operator",
                tensors[t].name
            )));
        }
    }
    // Aliases: an aliased RESHAPE's output is its input (union-find root).
    let mut root: Vec<usize> = (0..count).collect();
    fn find(root: &mut [usize], mut t: usize) -> usize {
        while root[t] != t {
            root[t] = root[root[t]];
            t = root[t];
        }
        t
    }
    for node in nodes {
        if node.info.aliased {
            let (Some(&Some(input)), Some(&Some(output))) =
                (node.info.inputs.first(), node.info.outputs.first())
            else {
                return Err(graph_error(format!(
                    "operator {} ({}) aliases a missing tensor",
                    node.info.index, node.info.op
                )));
            };
            let (a, b) = (find(&mut root, input), find(&mut root, output));
            root[b] = a;
        }
    }
    // The variable block: each variable (root) once, 64-byte aligned.
    let mut variable_of_root: Vec<Option<std::ops::Range<usize>>> = vec![None; count];
    let mut variable_bytes = 0usize;
    // One buffer per root that is neither constant nor variable; lifetimes
    // over its members.
    let mut buffer_of_root: Vec<Option<usize>> = vec![None; count];
    let mut buffer_of: Vec<Option<usize>> = vec![None; count];
    let mut requests: Vec<BufferRequest> = Vec::new();
    let mut places: Vec<Place> = vec![Place::Unused; count];
    let mut constants: Vec<Constant> = Vec::new();
    let mut is_output = vec![false; count];
    for &o in outputs {
        is_output[o] = true;
    }
    let overflow = || graph_error("the memory needed overflows usize".to_string());
    for t in 0..count {
        let r = find(&mut root, t);
        if tensors[r].variable {
            let range = match &variable_of_root[r] {
                Some(range) => range.clone(),
                None => {
                    let start = variable_bytes
                        .checked_next_multiple_of(ARENA_ALIGNMENT)
                        .ok_or_else(overflow)?;
                    variable_bytes = start.checked_add(tensors[r].bytes).ok_or_else(overflow)?;
                    variable_of_root[r] = Some(start..variable_bytes);
                    start..variable_bytes
                }
            };
            places[t] =
                Place::Variable(range.start..range.start + tensors[t].bytes.min(range.len()));
            continue;
        }
        if tensors[r].constant {
            let data = graph.tensors()[r].data().unwrap_or(&[]);
            let align = element_size(tensors[r].dtype).unwrap_or(1).min(16);
            constants.push(Constant::new(model.bytes(), data, align));
            places[t] = Place::Constant(constants.len() - 1);
            continue;
        }
        let used = is_input[t] || is_output[t] || producer[t].is_some() || last_read[t].is_some();
        if !used {
            continue;
        }
        let first = if is_input[t] {
            0
        } else {
            producer[t].unwrap_or(0)
        };
        let mut last = last_read[t].unwrap_or(first).max(first);
        // Outputs are read after the invoke; inputs keep what the caller set
        // for every later invoke (as in TFLite), so neither is ever reused.
        if is_output[t] || is_input[t] {
            last = steps;
        }
        let buffer = match buffer_of_root[r] {
            Some(b) => b,
            None => {
                requests.push(BufferRequest {
                    size: tensors[r].bytes,
                    first,
                    last,
                });
                buffer_of_root[r] = Some(requests.len() - 1);
                requests.len() - 1
            }
        };
        let request = &mut requests[buffer];
        request.first = request.first.min(first);
        request.last = request.last.max(last);
        request.size = request.size.max(tensors[t].bytes);
        buffer_of[t] = Some(buffer);
    }
    let mut scratch_buffer: Vec<Option<usize>> = vec![None; steps];
    for (step, node) in nodes.iter().enumerate() {
        if node.info.scratch_bytes > 0 && node.info.folded_into.is_none() {
            requests.push(BufferRequest {
                size: node.info.scratch_bytes,
                first: step,
                last: step,
            });
            scratch_buffer[step] = Some(requests.len() - 1);
        }
    }
    let arena = ArenaPlan::new(requests).ok_or_else(overflow)?;
    for t in 0..count {
        if let Some(buffer) = buffer_of[t] {
            let start = arena.range(buffer).start;
            places[t] = Place::Arena(start..start + tensors[t].bytes);
        }
    }
    let scratch = scratch_buffer
        .iter()
        .map(|b| b.map(|b| arena.range(b)))
        .collect();
    Ok(Placed {
        places,
        constants,
        arena,
        scratch,
        variable_bytes,
        buffers: buffer_of,
    })
}

/// Each node's [`Share`]s under `threads` threads (none for a node that runs
/// whole on one thread: one fused with the threshold, one that updates
/// state in place, one whose kernel does not split or whose work is small),
/// each node's [`NodeInfo::threads`] set. With one thread: nothing
/// allocated, every node on one.
pub(super) fn share_nodes(
    nodes: &mut [Node],
    tensors: &[TensorInfo],
    threads: usize,
) -> Result<Vec<Vec<Share>>> {
    if threads < 2 {
        return Ok(Vec::new());
    }
    nodes
        .iter_mut()
        .map(|node| {
            let info = &mut node.info;
            let output = info.outputs.first().copied().flatten();
            let alone = info.aliased
                || info.folded_into.is_some()
                || info.fused.is_some()
                || !node.state_inputs.is_empty();
            let (Some(output), false) = (output, alone) else {
                return Ok(Vec::new());
            };
            let bytes = tensors.get(output).map_or(0, |t| t.bytes);
            let weights = info.inputs.get(1).copied().flatten();
            let weights = weights.and_then(|t| tensors.get(t)).map_or(0, |t| t.bytes);
            // A pointwise CONV_2D (one that also splits by columns) has
            // tiles of pixel blocks.
            let by_pixels = node.kernel.columns().is_some();
            let setup = threads::share_setup(&info.op, weights, by_pixels);
            let weighted = info.work.saturating_mul(threads::mac_weight(&info.op));
            let work = (weighted, info.unit, setup);
            let bands =
                threads::shares(&*node.kernel, work, bytes, threads).map_err(|problem| {
                    Error::InvalidOp {
                        op: info.op.clone(),
                        index: info.index,
                        problem,
                    }
                })?;
            // A kernel that also splits by columns takes them when they
            // cost its busiest thread less (few rows, many channels).
            let by_columns = match node.kernel.columns() {
                Some(columns) if info.unit == "MAC" && columns.columns > 0 => {
                    let depth = weights / columns.columns;
                    let column_setup = threads::column_setup(&info.op, &columns, depth)
                        .saturating_add(threads::column_overhead(&info.op));
                    let cut = (bands.len(), threads::band_setup(&info.op, &columns, setup));
                    threads::column_shares(&*node.kernel, (weighted, column_setup), cut, threads)
                }
                _ => None,
            };
            info.split_by_columns = by_columns.is_some();
            let shares = by_columns.unwrap_or(bands);
            info.threads = shares.len().max(1);
            Ok(shares)
        })
        .collect()
}
