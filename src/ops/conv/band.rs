//! Both convolutions into a band of output rows: a slice holding only the
//! rows `rows` (what one thread of a split layer owns), from the whole
//! input. The same inner loops as `run_rows`, told which output row the
//! slice starts at, so a band holds exactly the bytes the whole run writes
//! to those rows.

use core::ops::Range;

use super::conv2d::{Conv2d, CONV};
use super::depthwise_conv2d::{DepthwiseConv2d, CHANNEL_BLOCK, DEPTHWISE};
use super::origin::BandFrom;
use crate::backend::Backend;
use crate::error::{Error, Result};

impl Conv2d {
    /// Output rows `rows` into `band`, which holds those rows only
    /// (`rows.len() * output_width * output_channels` elements), with
    /// `backend` and a caller's `scratch` as
    /// [`run_rows_with_scratch`](Self::run_rows_with_scratch): exactly the
    /// bytes a whole run writes to those rows. Errors as `run_rows_with_scratch`,
    /// and [`Error::Length`] for a band of another length.
    pub fn run_band_with_scratch(
        &self,
        backend: Backend,
        input: &[i8],
        band: &mut [i8],
        rows: Range<usize>,
        scratch: &mut [i8],
    ) -> Result<()> {
        self.prepared
            .check_band(CONV, backend, input, band, &rows)?;
        if scratch.len() < self.scratch_bytes() {
            return Err(Error::Length {
                op: CONV,
                what: "scratch (at least scratch_bytes())",
                expected: self.scratch_bytes(),
                got: scratch.len(),
            });
        }
        let first = BandFrom(rows.start);
        match &self.implicit {
            Some(implicit) if backend != Backend::Scalar => implicit.run(
                &self.prepared.geometry,
                backend,
                input,
                (band, first),
                rows,
                scratch,
            ),
            _ => self.dispatch(backend, input, (band, first), rows),
        }
    }

    /// [`run_band_with_scratch`](Self::run_band_with_scratch) with the
    /// stack's scratch, as [`run_rows`](Self::run_rows).
    pub fn run_band(
        &self,
        backend: Backend,
        input: &[i8],
        band: &mut [i8],
        rows: Range<usize>,
    ) -> Result<()> {
        self.prepared
            .check_band(CONV, backend, input, band, &rows)?;
        let first = BandFrom(rows.start);
        self.dispatch(backend, input, (band, first), rows)
    }
}

impl DepthwiseConv2d {
    /// Output rows `rows` into `band`, which holds those rows only
    /// (`rows.len() * output_width * output_channels` elements), with
    /// `backend`: exactly the bytes [`run_rows`](Self::run_rows) writes to
    /// those rows. Errors as `run_rows`, and [`Error::Length`] for a band of
    /// another length.
    pub fn run_band(
        &self,
        backend: Backend,
        input: &[i8],
        band: &mut [i8],
        rows: Range<usize>,
    ) -> Result<()> {
        self.prepared
            .check_band(DEPTHWISE, backend, input, band, &rows)?;
        let first = BandFrom(rows.start);
        self.dispatch(backend, input, (band, first), rows)
    }

    /// Output channels `channels` of output rows `rows` into `band`, which
    /// holds those rows only (every channel's place): exactly the bytes
    /// [`run_band`](Self::run_band) writes to those channels; the band's
    /// other channels are left as they are. What a thread computes of a
    /// layer with few rows cut by channels: every kernel reads the
    /// channels' input in place and runs them as the whole layer's run
    /// does, [`CHANNEL_BLOCK`] at a time, so a cut costs no copy of the
    /// input and little more than its share of the whole run. Errors as
    /// `run_band`, and [`Error::Tile`] for channels reversed, past the
    /// output channels, or not starting and ending on a multiple of
    /// [`CHANNEL_BLOCK`] (or ending at the output channels).
    pub fn run_band_channels(
        &self,
        backend: Backend,
        input: &[i8],
        band: &mut [i8],
        (rows, channels): (Range<usize>, Range<usize>),
    ) -> Result<()> {
        self.prepared
            .check_band(DEPTHWISE, backend, input, band, &rows)?;
        let all = self.prepared.geometry.output_channels;
        let on_block = |c: usize| c.is_multiple_of(CHANNEL_BLOCK) || c == all;
        if channels.start > channels.end
            || channels.end > all
            || !on_block(channels.start)
            || !on_block(channels.end)
        {
            return Err(Error::Tile {
                op: DEPTHWISE,
                what: "output channels",
                start: channels.start,
                end: channels.end,
                limit: all,
                grain: CHANNEL_BLOCK,
            });
        }
        let blocks = channels.start / CHANNEL_BLOCK..channels.end.div_ceil(CHANNEL_BLOCK);
        let first = BandFrom(rows.start);
        self.dispatch_blocks(backend, input, (band, first), (rows, blocks))
    }
}
