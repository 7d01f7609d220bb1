//! Both convolutions into a band of output rows: a slice holding only the
//! rows `rows` (what one thread of a split layer owns), from the whole
//! input. The same inner loops as `run_rows`, told which output row the
//! slice starts at, so a band holds exactly the bytes the whole run writes
//! to those rows.

use core::ops::Range;

use super::conv2d::{Conv2d, CONV};
use super::depthwise_conv2d::{DepthwiseConv2d, DEPTHWISE};
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
}
