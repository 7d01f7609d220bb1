//! What both convolutions prepare (the geometry's buffer lengths, the
//! weights in the scalar loops' order, the bias, the output stage), the
//! checks of a run against it, whole (`run_rows`) or a band of rows
//! (`run_band`), and the scalar loops over it.

use alloc::vec::Vec;
use core::ops::Range;

use super::geometry::ConvGeometry;
use super::origin::FirstRow;
use super::params::{ConvQuantization, OutputStage};
use super::scalar::{self, Layer};
use crate::backend::Backend;
use crate::checks::check_length;
use crate::error::{Error, Result};
use crate::ops::requant::try_filled;

/// What both convolutions prepare.
#[derive(Clone, Debug)]
pub(super) struct Prepared {
    pub(super) geometry: ConvGeometry,
    /// Input channels per output channel.
    pub(super) depth: usize,
    pub(super) outputs_per_group: usize,
    /// `[output channel][ky][kx][depth]`.
    pub(super) weights: Vec<i8>,
    pub(super) bias: Vec<i32>,
    pub(super) input_zero_point: i32,
    pub(super) stage: OutputStage,
    pub(super) input_len: usize,
    pub(super) output_len: usize,
}

impl Prepared {
    pub(super) fn new(
        op: &'static str,
        geometry: ConvGeometry,
        depth: usize,
        outputs_per_group: usize,
        bias: Option<&[i32]>,
        q: &ConvQuantization<'_>,
    ) -> Result<Prepared> {
        let (input_len, output_len) = geometry.validate(op)?;
        let channels = geometry.output_channels;
        if let Some(b) = bias {
            check_length(op, "bias", Some(channels), b.len())?;
        }
        let stage = OutputStage::new(
            op,
            channels,
            q.input,
            q.weight_scales,
            q.output,
            q.activation,
            q.requantization,
        )?;
        let bias = match bias {
            Some(b) => {
                let mut v = try_filled(op, "bias", 0, channels)?;
                v.copy_from_slice(b);
                v
            }
            None => try_filled(op, "bias", 0, channels)?,
        };
        Ok(Prepared {
            geometry,
            depth,
            outputs_per_group,
            weights: Vec::new(),
            bias,
            input_zero_point: q.input.zero_point,
            stage,
            input_len,
            output_len,
        })
    }

    pub(super) fn rows(&self) -> usize {
        self.geometry.batch * self.geometry.output_height
    }

    /// Checks a run over the whole `output`: the backend, the buffers and
    /// `rows` within the batch's rows.
    pub(super) fn check(
        &self,
        op: &'static str,
        backend: Backend,
        input: &[i8],
        output: &[i8],
        rows: &Range<usize>,
    ) -> Result<()> {
        self.check_backend_and_input(op, backend, input)?;
        check_length(op, "output", Some(self.output_len), output.len())?;
        self.check_rows(op, rows)
    }

    /// Checks a band run: as [`check`](Self::check), with a `band` of
    /// exactly the rows `rows` in the whole output's place (its length is
    /// checked last, once `rows` is known to be within the batch).
    pub(super) fn check_band(
        &self,
        op: &'static str,
        backend: Backend,
        input: &[i8],
        band: &[i8],
        rows: &Range<usize>,
    ) -> Result<()> {
        self.check_backend_and_input(op, backend, input)?;
        self.check_rows(op, rows)?;
        let g = &self.geometry;
        let row_len = g.output_width * g.output_channels;
        let what = "output band (rows x output width x channels)";
        check_length(op, what, Some(rows.len() * row_len), band.len())
    }

    /// The checks every run starts with: the backend is here, the input
    /// holds the whole batch. Always inlined, as the next, so that `check`
    /// compiles to the code it had before bands shared these.
    #[inline(always)]
    fn check_backend_and_input(
        &self,
        op: &'static str,
        backend: Backend,
        input: &[i8],
    ) -> Result<()> {
        if !backend.is_available() {
            return Err(Error::BackendUnavailable {
                backend: backend.name(),
            });
        }
        check_length(op, "input", Some(self.input_len), input.len())
    }

    /// [`Error::Tile`] unless `rows` are output rows of the batch, in order.
    #[inline(always)]
    fn check_rows(&self, op: &'static str, rows: &Range<usize>) -> Result<()> {
        if rows.start > rows.end || rows.end > self.rows() {
            return Err(Error::Tile {
                op,
                what: "output rows",
                start: rows.start,
                end: rows.end,
                limit: self.rows(),
                grain: 1,
            });
        }
        Ok(())
    }

    /// The scalar loops over output rows `rows` and output channels
    /// `channels` (checked) into `output` holding the rows from `first` on.
    pub(super) fn run_scalar<F: FirstRow>(
        &self,
        input: &[i8],
        output: (&mut [i8], F),
        rows: (Range<usize>, Range<usize>),
    ) {
        let layer = Layer {
            geometry: &self.geometry,
            depth: self.depth,
            weights: &self.weights,
            bias: &self.bias,
            input_zero_point: self.input_zero_point,
            stage: &self.stage,
            outputs_per_group: self.outputs_per_group,
        };
        scalar::conv(&layer, input, output, rows);
    }
}
