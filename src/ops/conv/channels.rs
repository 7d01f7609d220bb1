//! A pointwise CONV_2D by ranges of output channels
//! ([`Conv2d::run_channels`]): every pixel, some channels, into a tile of
//! their own. How threads share a layer with few pixels and many channels
//! (the late layers of the MobileNets: 7x7 or 3x3 pixels, up to 1,280
//! channels), where bands of output rows leave threads idle and each band
//! would read every weight.

use core::ops::Range;

use super::conv2d::{Conv2d, CONV};
use crate::backend::Backend;
use crate::checks::check_length;
use crate::error::{Error, Result};

impl Conv2d {
    /// The grain of [`run_channels`](Self::run_channels): channel ranges
    /// start at multiples of it and end at one or at the output channels.
    /// `None` for a layer that does not run by channels: only a pointwise
    /// layer (1x1 kernel, stride 1, no padding, one group) under a
    /// quantized multiplier does, through its GEMM.
    pub fn channel_grain(&self) -> Option<usize> {
        self.pointwise.as_ref().map(|gemm| gemm.tile_grain().1)
    }

    /// Output channels `channels` of every output pixel of the NHWC
    /// `input`'s convolution, with `backend`, into `tile`: pixel `p`'s
    /// channel `c` at `p * channels.len() + (c - channels.start)`. The bytes
    /// [`run`](Self::run) writes there, on every backend (the GEMM's scalar
    /// kernel is the same arithmetic as the scalar loops). Allocates
    /// nothing.
    ///
    /// Errors: a layer without a [`channel_grain`](Self::channel_grain)
    /// ([`Error::Unsupported`]); an unavailable backend
    /// ([`Error::BackendUnavailable`]); an input of the wrong length or a
    /// tile other than pixels x channels ([`Error::Length`]); channels
    /// reversed, past the output channels or off the grain
    /// ([`Error::Tile`]).
    pub fn run_channels(
        &self,
        backend: Backend,
        input: &[i8],
        tile: &mut [i8],
        channels: Range<usize>,
    ) -> Result<()> {
        let Some(gemm) = &self.pointwise else {
            return Err(Error::Unsupported {
                op: CONV,
                dtype: "int8",
                reason: "only a pointwise layer under a quantized multiplier runs by channels",
            });
        };
        check_length(CONV, "input", Some(self.prepared.input_len), input.len())?;
        let pixels = self.prepared.rows() * self.prepared.geometry.output_width;
        check_length(
            CONV,
            "channel tile (pixels x channels)",
            pixels.checked_mul(channels.len()),
            tile.len(),
        )?;
        gemm.run_tile_with(backend, input, tile, channels.len(), 0..pixels, channels)
    }
}
