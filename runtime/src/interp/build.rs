//! From a parsed model to what `invoke` runs: every operator prepared
//! ([`prepare_model`]), then the tensors' lifetimes, aliases and the arena
//! plan ([`plan_model`]), which say where each tensor's bytes live.

use qneon_tflite::{Model, ParseOptions, TensorType};

use super::info::{NodeInfo, OpReport, TensorInfo};
use super::ops::{self, element_size, Kernel};
use super::options::Options;
use super::plan::{ArenaPlan, BufferRequest};
use crate::error::{Error, Result};

/// Where a tensor's bytes live at run time.
#[derive(Clone, Debug)]
pub(super) enum Location<'a> {
    /// Buffer `.0` of the arena plan.
    Arena(usize),
    /// Constant data: in the model file when aligned for its type, else a
    /// copy made at load.
    Constant(Constant<'a>),
    /// Not used by any node, not an input or output.
    Unused,
}

/// Constant bytes of the model, borrowed or copied for alignment.
#[derive(Clone, Debug)]
pub(super) enum Constant<'a> {
    Borrowed(&'a [u8]),
    /// `u128` storage for its alignment; `.1` bytes of it are the data.
    Owned(Vec<u128>, usize),
}

impl Constant<'_> {
    pub(super) fn bytes(&self) -> &[u8] {
        match self {
            Constant::Borrowed(bytes) => bytes,
            Constant::Owned(storage, len) => &bytemuck::cast_slice(storage)[..*len],
        }
    }
}

/// A planned operator: what inspect sees, what runs, where its scratch is.
pub(super) struct Node {
    pub(super) info: NodeInfo,
    pub(super) kernel: Kernel,
    /// Buffer of its scratch, if any.
    pub(super) scratch: Option<usize>,
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
        constant: t.is_constant(),
    }
}

/// Everything `new` and `analyze` compute before allocating the arena.
pub(super) struct Prepared<'a> {
    pub(super) tensors: Vec<TensorInfo>,
    pub(super) locations: Vec<Location<'a>>,
    pub(super) nodes: Vec<Node>,
    pub(super) reports: Vec<OpReport>,
    pub(super) inputs: Vec<usize>,
    pub(super) outputs: Vec<usize>,
    pub(super) plan: ArenaPlan,
}

/// Prepares every operator (a failure is reported, not returned: `analyze`
/// shows them all), then plans the arena.
pub(super) fn prepare_model<'a>(model: &Model<'a>, options: &Options) -> Result<Prepared<'a>> {
    let graph = model.main_subgraph();
    let tensors: Vec<TensorInfo> = graph.tensors().iter().map(tensor_info).collect();
    let mut nodes = Vec::with_capacity(graph.operators().len());
    let mut reports = Vec::with_capacity(graph.operators().len());
    for operator in graph.operators() {
        let op_name = operator.op().to_string();
        match ops::prepare(model, graph, operator, options) {
            Ok(prepared) => {
                reports.push(OpReport {
                    index: operator.index(),
                    op: op_name.clone(),
                    status: Ok(()),
                });
                nodes.push(Node {
                    info: NodeInfo {
                        index: operator.index(),
                        op: op_name,
                        work: prepared.work,
                        unit: prepared.unit,
                        inputs: operator.inputs().to_vec(),
                        outputs: operator
                            .outputs()
                            .iter()
                            .map(|o| o.unwrap_or(usize::MAX))
                            .collect(),
                        scratch_bytes: prepared.scratch_bytes,
                        aliased: prepared.alias,
                    },
                    kernel: prepared.kernel,
                    scratch: None,
                });
            }
            Err(e) => {
                reports.push(OpReport {
                    index: operator.index(),
                    op: op_name.clone(),
                    status: Err(e),
                });
                // Planned like the others (its tensors' lifetimes count),
                // never run: `new` refuses a model with any such node.
                nodes.push(Node {
                    info: NodeInfo {
                        index: operator.index(),
                        op: op_name,
                        work: 0,
                        unit: "element",
                        inputs: operator.inputs().to_vec(),
                        outputs: operator
                            .outputs()
                            .iter()
                            .map(|o| o.unwrap_or(usize::MAX))
                            .collect(),
                        scratch_bytes: 0,
                        aliased: false,
                    },
                    kernel: Kernel::Nop,
                    scratch: None,
                });
            }
        }
    }
    let inputs = graph.inputs().to_vec();
    let outputs = graph.outputs().to_vec();
    let (locations, plan) = plan_model(model, &tensors, &mut nodes, &inputs, &outputs)?;
    Ok(Prepared {
        tensors,
        locations,
        nodes,
        reports,
        inputs,
        outputs,
        plan,
    })
}

/// Lifetimes, aliases and the arena plan; the tensors' locations.
fn plan_model<'a>(
    model: &Model<'a>,
    tensors: &[TensorInfo],
    nodes: &mut [Node],
    inputs: &[usize],
    outputs: &[usize],
) -> Result<(Vec<Location<'a>>, ArenaPlan)> {
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
    for (step, node) in nodes.iter().enumerate() {
        for input in node.info.inputs.iter().flatten() {
            let t = *input;
            if !tensors[t].constant && !is_input[t] && producer[t].is_none() {
                return Err(graph_error(format!(
                    "operator {} ({}) reads tensor {t} ({:?}) before any operator writes it",
                    node.info.index, node.info.op, tensors[t].name
                )));
            }
            last_read[t] = Some(step);
        }
        for &t in &node.info.outputs {
            if t == usize::MAX {
                continue;
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
    for node in nodes.iter() {
        if node.info.aliased {
            let input = node.info.inputs[0].expect("an aliased node has its input");
            let (a, b) = (
                find(&mut root, input),
                find(&mut root, node.info.outputs[0]),
            );
            root[b] = a;
        }
    }
    // One buffer per root that is not constant; lifetimes over its members.
    let mut buffer_of_root: Vec<Option<usize>> = vec![None; count];
    let mut requests: Vec<BufferRequest> = Vec::new();
    let mut locations: Vec<Location<'a>> = vec![Location::Unused; count];
    let mut is_output = vec![false; count];
    for &o in outputs {
        is_output[o] = true;
    }
    for t in 0..count {
        let r = find(&mut root, t);
        if tensors[r].constant {
            let data = graph.tensors()[r].data().unwrap_or(&[]);
            locations[t] = Location::Constant(constant_data(data, tensors[r].dtype));
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
        locations[t] = Location::Arena(buffer);
    }
    for (step, node) in nodes.iter_mut().enumerate() {
        if node.info.scratch_bytes > 0 {
            requests.push(BufferRequest {
                size: node.info.scratch_bytes,
                first: step,
                last: step,
            });
            node.scratch = Some(requests.len() - 1);
        }
    }
    let plan = ArenaPlan::new(requests)
        .ok_or_else(|| graph_error("the arena's size overflows usize".to_string()))?;
    Ok((locations, plan))
}

/// Constant data, borrowed when aligned for its element type, else copied.
fn constant_data(data: &[u8], dtype: TensorType) -> Constant<'_> {
    let align = element_size(dtype).unwrap_or(1).min(16);
    if (data.as_ptr() as usize).is_multiple_of(align) {
        Constant::Borrowed(data)
    } else {
        let mut storage = vec![0u128; data.len().div_ceil(16)];
        bytemuck::cast_slice_mut::<u128, u8>(&mut storage)[..data.len()].copy_from_slice(data);
        Constant::Owned(storage, data.len())
    }
}
