//! What the interpreter tells about a model: its tensors, its operators as
//! planned, and whether each one prepared.

use crate::error::Error;
use qneon_tflite::TensorType;

/// A tensor as the interpreter sees it.
#[derive(Clone, Debug, PartialEq)]
pub struct TensorInfo {
    /// Index in the main subgraph.
    pub index: usize,
    /// Name in the file.
    pub name: String,
    /// Element type.
    pub dtype: TensorType,
    /// Shape (empty for a scalar).
    pub shape: Vec<usize>,
    /// Bytes of its data.
    pub bytes: usize,
    /// Scales (one, or one per index of `axis`); empty when not quantized.
    pub scales: Vec<f32>,
    /// Zero points, as many as scales.
    pub zero_points: Vec<i64>,
    /// The quantized axis of per-channel quantization.
    pub axis: Option<usize>,
    /// Has data in the file (and is not a variable).
    pub constant: bool,
    /// A variable (`is_variable`: recurrent state), kept by a session
    /// across invokes.
    pub variable: bool,
}

impl TensorInfo {
    /// The per-tensor `(scale, zero_point)`, if quantized per tensor.
    pub fn per_tensor(&self) -> Option<(f32, i64)> {
        match (self.scales.as_slice(), self.zero_points.as_slice()) {
            ([scale], [zero_point]) => Some((*scale, *zero_point)),
            _ => None,
        }
    }
}

/// One operator as planned: what the profiler and inspect see.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeInfo {
    /// Operator index in the main subgraph.
    pub index: usize,
    /// TFLite's name of the op (`FULLY_CONNECTED`), from the registration
    /// that prepared it.
    pub op: String,
    /// Work per invoke: multiply-accumulates for FULLY_CONNECTED and
    /// BATCH_MATMUL, output elements for the others.
    pub work: u64,
    /// `"MAC"` or `"element"`.
    pub unit: &'static str,
    /// Input tensor indices (`None`: an omitted optional input).
    pub inputs: Vec<Option<usize>>,
    /// Output tensor indices (`None`: an omitted output).
    pub outputs: Vec<Option<usize>>,
    /// Scratch bytes in the arena.
    pub scratch_bytes: usize,
    /// The output shares its input's bytes (a RESHAPE): nothing runs.
    pub aliased: bool,
    /// A PAD whose padding the convolution of this operator index takes
    /// over (it reads the PAD's input): nothing runs, and the padded
    /// tensor is never made.
    pub folded_into: Option<usize>,
    /// Which arithmetic the op takes under the load's options (its
    /// requantization, float arithmetic or method), for the ops whose
    /// arithmetic the options choose; `None` for the others.
    pub arithmetic: Option<String>,
    /// With [`Options::threshold`](super::Options::threshold): what the
    /// node runs as, fused with the threshold (`"ThresholdedLogistic
    /// (T=0.5, method fixed)"`, or the run-then-filter fallback and why);
    /// `None` for a node that writes its dense output.
    pub fused: Option<String>,
    /// Threads its tiles are shared among under
    /// [`Options::threads`](super::Options::threads): 1 for a node whose
    /// work is worth one thread or whose kernel does not split.
    pub threads: usize,
    /// Its threads each compute some columns of the output (a pointwise
    /// CONV_2D's channels) rather than a band of its tiles.
    pub split_by_columns: bool,
}

/// Per-op results of preparing a model: what inspect reports.
#[derive(Clone, Debug, PartialEq)]
pub struct OpReport {
    /// Operator index.
    pub index: usize,
    /// TFLite's name of the op.
    pub op: String,
    /// `Ok` when prepared; the error otherwise.
    pub status: std::result::Result<(), Error>,
}
