//! What the depthwise convolution prepares beyond the scalar loops' data:
//! the weights and per-channel output parameters in the NEON kernel's
//! layout ([`Packed`], aarch64 only), and which requantization LiteRT's
//! aarch64 optimized kernels apply to a layer
//! ([`litert_aarch64_requantization`]).
//!
//! Two NEON kernels compute each output pixel's channels in blocks of 16
//! (or 8) lanes:
//!
//! ```text
//! acc[lane] = bias[c] + sum over taps inside the image:
//!               (x[tap][input channel of c] - input_zero_point) * w[c][tap]
//! ```
//!
//! * the pair kernel ([`pairs`], layout `folded::Folded`): depth
//!   multiplier 1, channels a multiple of 8 and no weight of -128. The zero
//!   point's share is folded at `new()` into one bias per class of window
//!   (which kernel rows and columns are inside the image), so the taps
//!   multiply raw bytes, two taps per 16-bit sum of 8-bit products; edge
//!   windows run the same products over their taps inside the image. No
//!   scratch. On a CPU with dotprod its layers run the `sdot` kernel
//!   ([`dot`]) instead: each input column a row of windows reads laid out
//!   once per output row (16 channels x 4 kernel rows in a stack buffer),
//!   four taps of a channel per `sdot` lane, taps outside the image read as
//!   raw zeros (their share is in the folded bias). Its 3x3 layers with
//!   the ties-upward stage and no left shift run many rows per asm call
//!   ([`rows3`]), and a first layer of one input channel x 8 its own
//!   kernel ([`first3`]: `sdot` by element on a padded input row, no
//!   column layout).
//! * the widening kernel ([`neon`]), every other layer: `x -
//!   input_zero_point` is one widening subtract (`ssubl`, it fits 16
//!   bits), the product accumulates into 32 bits (`smlal`) by 16-bit
//!   weights, so taps in the padding are skipped exactly as the scalar
//!   loops skip them.

#[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
mod dot;
#[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
mod dot3;
#[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
mod first3;
#[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
mod folded;
#[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
mod narrow;
#[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
pub(crate) mod neon;
#[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
mod pack;
#[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
pub(crate) mod pairs;
#[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
mod rows3;
#[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
mod stage;

use super::geometry::ConvGeometry;
use super::params::ConvRequantization;

/// The requantization LiteRT 2.x's aarch64 optimized int8
/// DEPTHWISE_CONV_2D applies to a layer (its `DepthwiseConvWithRounding`
/// for per-channel int8, outside Android's dot-product kernels).
///
/// Its 3x3 kernel (`Fast3x3FilterKernelSupported` for per-channel int8)
/// takes a layer with a 3x3 filter, depth multiplier 1, equal strides of 1
/// or 2, no dilation, equal paddings of 0 or 1 before the image, input
/// channels a multiple of 8, a last window that ends inside the image
/// (padding 0) or at most one past it (padding 1), and not an image one
/// pixel wide or high unless it is 1x1. That kernel rounds the final
/// divide's ties upward ([`ConvRequantization::DoubleTiesUpward`]). Every
/// other layer runs its general kernel, whose output stage requantizes
/// whole blocks of 8 channels rounding ties upward too (with its own split
/// of non-negative shifts) and the rest with plain double rounding
/// ([`ConvRequantization::TiesUpwardInBlocksOf8`]).
pub fn litert_aarch64_requantization(
    g: &ConvGeometry,
    depth_multiplier: usize,
) -> ConvRequantization {
    if fast_3x3_supported(g, depth_multiplier) {
        ConvRequantization::DoubleTiesUpward
    } else {
        ConvRequantization::TiesUpwardInBlocksOf8
    }
}

/// TFLite's `Fast3x3FilterKernelSupported` (per-channel int8: the shift
/// test applies to a shift of 0, so it always passes).
fn fast_3x3_supported(g: &ConvGeometry, depth_multiplier: usize) -> bool {
    let shape_ok = g.kernel_height == 3
        && g.kernel_width == 3
        && depth_multiplier == 1
        && matches!(g.stride_width, 1 | 2)
        && g.stride_height == g.stride_width
        && matches!(g.pad_left, 0 | 1)
        && g.pad_top == g.pad_left
        && g.input_channels.is_multiple_of(8)
        && g.dilation_width == 1
        && g.dilation_height == 1;
    if !shape_ok {
        return false;
    }
    // The last window's end, one past its last tap (padded coordinates
    // shifted back to the image's: may be past the image).
    let end_x = (g.output_width - 1) * g.stride_width + 3 - g.pad_left;
    let end_y = (g.output_height - 1) * g.stride_height + 3 - g.pad_top;
    if g.pad_left == 0 {
        return end_x <= g.input_width && end_y <= g.input_height;
    }
    if end_x > g.input_width + 1 || end_y > g.input_height + 1 {
        return false;
    }
    // One-pixel-wide or one-pixel-high images only as 1x1.
    if g.input_width == 1 || g.input_height == 1 {
        return g.input_width == g.input_height;
    }
    true
}

#[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
pub(crate) use self::folded::Folded;
#[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
pub(crate) use self::pack::Packed;
