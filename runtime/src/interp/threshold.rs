//! [`Options::threshold`] inside a graph: which nodes run fused with the
//! threshold, and the hits a session hands out for them.
//!
//! A LOGISTIC or SOFTMAX node fuses when its output tensor is a model
//! output that no other node reads (so nothing needs the dense values) and
//! is not a model input. Its kernel is then the fused one of
//! `ops/activation/thresholded.rs`: it writes the kept elements into a hit
//! buffer each session allocates once, at the output's element count, and
//! leaves the dense output unwritten ([`Session::output`](super::Session::output)
//! is `None` for it). Every other node runs as without a threshold.

use qneon_tflite::Model;

use super::build::Prepared;
use super::ops::{self, Fused, HitSlice};
use super::options::Options;
use crate::error::{Error, Result};

/// A fused node: where it runs, what it writes, and how its codes map to
/// values.
#[derive(Debug)]
pub(super) struct Fusion {
    /// Its position in execution order.
    pub(super) step: usize,
    /// Its output tensor (a model output).
    pub(super) tensor: usize,
    pub(super) fused: Fused,
    /// The output's quantization.
    scale: f32,
    zero_point: i32,
}

/// Checks [`Options::threshold`]: NaN, negative or above 1 is an error
/// naming the option.
pub(super) fn check(options: &Options) -> Result<Option<f32>> {
    match options.threshold {
        None => Ok(None),
        Some(t) if (0.0..=1.0).contains(&t) => Ok(Some(t)),
        Some(t) => Err(Error::InvalidOption {
            option: "threshold",
            problem: format!("{t} is not a probability in [0, 1]"),
        }),
    }
}

/// Fuses every LOGISTIC or SOFTMAX node of `prepared` that writes a model
/// output no node reads, when the options set a threshold (checked here);
/// marks them in their [`NodeInfo::fused`](super::NodeInfo::fused). Nodes
/// that did not prepare are left alone (a plan refuses them anyway).
pub(super) fn fuse(
    model: &Model<'_>,
    prepared: &mut Prepared,
    options: &Options,
) -> Result<Vec<Fusion>> {
    let Some(threshold) = check(options)? else {
        return Ok(Vec::new());
    };
    let graph = model.main_subgraph();
    let operators = graph.operators();
    let mut fusions = Vec::new();
    for step in 0..prepared.nodes.len() {
        if prepared.reports[step].status.is_err()
            || prepared.nodes[step].info.aliased
            || prepared.nodes[step].info.folded_into.is_some()
        {
            continue;
        }
        let info = &prepared.nodes[step].info;
        let [Some(tensor)] = info.outputs[..] else {
            continue;
        };
        let read = prepared
            .nodes
            .iter()
            .any(|n| n.info.inputs.contains(&Some(tensor)));
        if !prepared.outputs.contains(&tensor) || prepared.inputs.contains(&tensor) || read {
            continue;
        }
        let Some(operator) = operators.iter().find(|o| o.index() == info.index) else {
            continue;
        };
        let Some(fused) = ops::prepare_thresholded(graph, operator, options, threshold) else {
            continue;
        };
        let fused = fused?;
        let Some((scale, zero_point)) = prepared.tensors[tensor].per_tensor() else {
            continue;
        };
        prepared.nodes[step].info.fused = Some(fused.description.clone());
        fusions.push(Fusion {
            step,
            tensor,
            fused,
            scale,
            zero_point: zero_point as i32,
        });
    }
    Ok(fusions)
}

impl Fusion {
    /// The first `len` hits of `store`, as the caller sees them.
    pub(super) fn hits<'s>(&self, store: &'s ops::HitStore, len: usize) -> Hits<'s> {
        Hits {
            slice: store.slice(len),
            row: self.fused.row(),
            scale: self.scale,
            zero_point: self.zero_point,
        }
    }
}

/// One kept element of a fused output.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct OutputHit {
    /// Its flat index in the output tensor (row-major).
    pub index: usize,
    /// Its output code (what the dense output would hold there).
    pub code: i32,
    /// The code's value, `(code - zero_point) * scale`.
    pub value: f32,
}

/// The hits of one fused output after an invoke: the elements whose value
/// is at or above the threshold, in index order.
#[derive(Clone, Copy, Debug)]
pub struct Hits<'a> {
    slice: HitSlice<'a>,
    /// Elements of a row, for `(row, index)` hits.
    row: usize,
    scale: f32,
    zero_point: i32,
}

impl<'a> Hits<'a> {
    /// The hits as the library's kernel wrote them (typed by the output;
    /// SOFTMAX's 8-bit ones as `(row, index in row)`).
    pub fn raw(&self) -> HitSlice<'a> {
        self.slice
    }

    /// How many elements passed.
    pub fn len(&self) -> usize {
        match self.slice {
            HitSlice::Int8(h) => h.len(),
            HitSlice::Uint8(h) => h.len(),
            HitSlice::Int16(h) => h.len(),
            HitSlice::Int8Rows(h) => h.len(),
            HitSlice::Uint8Rows(h) => h.len(),
        }
    }

    /// Whether none did.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Hit `k` (in index order) as flat index, code and value.
    pub fn get(&self, k: usize) -> Option<OutputHit> {
        let (index, code) = match self.slice {
            HitSlice::Int8(h) => h.get(k).map(|h| (h.index as usize, h.value as i32))?,
            HitSlice::Uint8(h) => h.get(k).map(|h| (h.index as usize, h.value as i32))?,
            HitSlice::Int16(h) => h.get(k).map(|h| (h.index as usize, h.value as i32))?,
            HitSlice::Int8Rows(h) => h
                .get(k)
                .map(|h| (h.row as usize * self.row + h.index as usize, h.value as i32))?,
            HitSlice::Uint8Rows(h) => h
                .get(k)
                .map(|h| (h.row as usize * self.row + h.index as usize, h.value as i32))?,
        };
        Some(OutputHit {
            index,
            code,
            value: (code - self.zero_point) as f32 * self.scale,
        })
    }

    /// Every hit, in index order.
    pub fn iter(&self) -> impl Iterator<Item = OutputHit> + 'a {
        let hits = *self;
        (0..hits.len()).filter_map(move |k| hits.get(k))
    }
}
