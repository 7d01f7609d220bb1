//! The public methods both convolutions share: their geometry, backend
//! and row count, and the run entry points over the whole output (`run`,
//! `run_rows`; the band ones are in `band.rs`).

use core::ops::Range;

use super::conv2d::Conv2d;
use super::depthwise_conv2d::DepthwiseConv2d;
use super::geometry::ConvGeometry;
use super::origin::Whole;
use crate::backend::Backend;
use crate::error::Result;

/// The public methods both convolutions share.
macro_rules! conv_methods {
    ($op:ident, $name:literal) => {
        impl $op {
            /// The geometry given to `new`.
            pub fn geometry(&self) -> &ConvGeometry {
                &self.prepared.geometry
            }

            /// The backend [`run`](Self::run) uses: [`Backend::best`].
            pub fn backend(&self) -> Backend {
                self.backend
            }

            /// Output rows in the batch (`batch * output_height`): the
            /// units [`run_rows`](Self::run_rows) splits the work into.
            pub fn rows(&self) -> usize {
                self.prepared.rows()
            }

            /// The whole convolution of the NHWC `input` into the NHWC
            /// `output`. Errors ([`Error::Length`](crate::Error::Length))
            /// unless both have the geometry's element counts. Allocates
            /// nothing.
            pub fn run(&self, input: &[i8], output: &mut [i8]) -> Result<()> {
                self.run_rows(self.backend, input, output, 0..self.rows())
            }

            /// Only output rows `rows` (row `r` is image `r / output_height`,
            /// row `r % output_height`) of the whole `output`, with
            /// `backend`: exactly the bytes [`run`](Self::run) writes there,
            /// whatever the split. [`Error::Tile`](crate::Error::Tile) for
            /// rows past [`rows`](Self::rows) or reversed;
            /// [`Error::BackendUnavailable`](crate::Error::BackendUnavailable)
            /// for a backend not here.
            pub fn run_rows(
                &self,
                backend: Backend,
                input: &[i8],
                output: &mut [i8],
                rows: Range<usize>,
            ) -> Result<()> {
                self.prepared.check($name, backend, input, output, &rows)?;
                self.dispatch(backend, input, (output, Whole), rows)
            }
        }
    };
}

conv_methods!(Conv2d, "conv_2d");
conv_methods!(DepthwiseConv2d, "depthwise_conv_2d");
