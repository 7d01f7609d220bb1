//! What both MEAN backends share: the reduction's layout (the input's
//! dimensions merged into alternating kept and reduced groups), the
//! requantization of a sum in each of TFLite's two int8 paths, and the
//! output shape TFLite's `Prepare` gives.

use crate::checks::{check_scale, check_zero_point};
use crate::elem::QuantElem;
use crate::error::{Error, Result};
use crate::quant::{QuantParams, QuantizedMultiplier, Rounding};

/// The largest input rank [`Mean`](super::Mean) takes (TFLite's kernels
/// take any; the models it runs stay far below).
pub(crate) const MAX_RANK: usize = 8;

/// Which of TFLite's MEAN kernels a prepared [`Mean`](super::Mean)
/// reproduces.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MeanKernels {
    /// The reference kernel (`QuantizedMeanOrSum`) for every shape.
    Reference,
    /// The optimized builtin kernels: the 4-D height-and-width kernel
    /// (int8, `keep_dims`, rank 4, axes exactly `{1, 2}`), the reference
    /// kernel for every other case.
    Optimized,
    /// The XNNPACK delegate's 8-bit mean (its `reduce` with the mean
    /// operator, `qs8` / `qu8`), for every shape: the raw sum converted to
    /// `f32`, times a scale, plus a zero point, both prepared in `f32`,
    /// rounded to nearest with ties to even and clamped to the type.
    /// int8 and uint8 only (the delegate leaves int16 to TFLite).
    Xnnpack,
}

/// How a sum becomes an output: which of TFLite's two arithmetics.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Path {
    /// `QuantizedMeanOrSum`: `(sum - zp_in * n)` times the input/output
    /// scale ratio's multiplier with `1 / n` folded in, plus `zp_out`.
    Reference,
    /// The optimized 4-D height-and-width mean: the raw sum times the
    /// multiplier of `s_in / (n * s_out)` (computed in `f32`), plus a bias
    /// `zp_out - round(zp_in * s_in / s_out)` (in `f32`).
    HeightWidth,
    /// XNNPACK's: `rint(f32(sum) * scale + zero)` clamped, no integer
    /// multiplier ([`MeanParams::xnnpack`]).
    Xnnpack,
}

/// XNNPACK's mean conversion of a raw sum, prepared in `f32` as XNNPACK
/// prepares it: `scale = f32(s_in / s_out) * f32(1 / n)`,
/// `zero = f32(zp_out) - f32(n * zp_in) * scale`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct XnnpackScale {
    pub scale: f32,
    pub zero: f32,
}

impl XnnpackScale {
    fn new(input: QuantParams, output: QuantParams, count: usize) -> XnnpackScale {
        // Each step is one f32 operation, in XNNPACK's order (its reduce
        // parameters, then its int32 -> quantized conversion with the input
        // zero point folded into the output's).
        let ratio = input.scale / output.scale;
        let scale = ratio * (1.0f32 / count as f32);
        // `(int32) n * zp_in` with the zero point a `float`: the count
        // converted, then one f32 product.
        let folded = (count as i32) as f32 * input.zero_point as f32;
        XnnpackScale {
            scale,
            zero: output.zero_point as f32 - folded * scale,
        }
    }

    /// The output value of `sum` before clamping: `f32(sum) * scale +
    /// zero`, two roundings (XNNPACK's x86 build does not fuse them),
    /// then to nearest, ties to even.
    #[inline(always)]
    pub(crate) fn apply(&self, sum: i32) -> f32 {
        crate::quant::round_ties_even_f32(sum as f32 * self.scale + self.zero)
    }
}

/// The reduction as loops: up to [`MAX_RANK`] groups of merged dimensions
/// (size-1 dimensions dropped, neighbours of one kind merged), outermost
/// first, alternating between kept and reduced.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Layout {
    /// Group sizes, outermost first (`groups` of them are used).
    pub sizes: [usize; MAX_RANK],
    /// Whether group `g` is reduced.
    pub reduced: [bool; MAX_RANK],
    /// Input elements between consecutive indices of group `g`.
    pub strides: [usize; MAX_RANK],
    /// Groups in use (0 for a single-element input).
    pub groups: usize,
    /// Elements summed into each output (`n`).
    pub count: usize,
    /// Output elements.
    pub outputs: usize,
    /// Input elements.
    pub inputs: usize,
}

/// The three-loop form most reductions take: `outer` kept, `reduced`
/// summed, `inner` kept and contiguous (`[outer, reduced, inner]` in
/// memory). MobileNet's global pool is `[batch, height * width, channels]`.
#[cfg_attr(
    not(all(target_arch = "aarch64", target_feature = "neon")),
    allow(dead_code)
)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ThreeLoops {
    pub outer: usize,
    pub reduced: usize,
    pub inner: usize,
}

impl Layout {
    /// The groups of `dims` with `reduce[d]` saying whether dimension `d`
    /// is reduced. Sizes are at least 1 and their product fits `usize`
    /// (checked by the caller).
    fn new(dims: &[usize], reduce: &[bool]) -> Layout {
        let mut l = Layout {
            sizes: [1; MAX_RANK],
            reduced: [false; MAX_RANK],
            strides: [0; MAX_RANK],
            groups: 0,
            count: 1,
            outputs: 1,
            inputs: 1,
        };
        for (&size, &r) in dims.iter().zip(reduce) {
            l.inputs *= size;
            if r {
                l.count *= size;
            } else {
                l.outputs *= size;
            }
            if size == 1 {
                continue;
            }
            if l.groups > 0 && l.reduced[l.groups - 1] == r {
                l.sizes[l.groups - 1] *= size;
            } else {
                l.sizes[l.groups] = size;
                l.reduced[l.groups] = r;
                l.groups += 1;
            }
        }
        let mut stride = 1;
        for g in (0..l.groups).rev() {
            l.strides[g] = stride;
            stride *= l.sizes[g];
        }
        l
    }

    /// The layout as `[outer, reduced, inner]` when it has at most one
    /// reduced group (every layout but those alternating twice).
    #[cfg_attr(
        not(all(target_arch = "aarch64", target_feature = "neon")),
        allow(dead_code)
    )]
    pub(crate) fn three_loops(&self) -> Option<ThreeLoops> {
        let used = &self.reduced[..self.groups];
        let Some(r) = used.iter().position(|&r| r) else {
            // Nothing reduced: every output is one input.
            return Some(ThreeLoops {
                outer: 1,
                reduced: 1,
                inner: self.inputs,
            });
        };
        if used[r + 1..].iter().any(|&x| x) {
            return None;
        }
        let inner = if r + 1 < self.groups {
            self.sizes[r + 1]
        } else {
            1
        };
        let outer = if r > 0 { self.sizes[0] } else { 1 };
        Some(ThreeLoops {
            outer,
            reduced: self.sizes[r],
            inner,
        })
    }
}

/// Everything a run needs: the layout and the requantization
/// `clamp(multiply(sum - sum_offset, multiplier) + output_offset)`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct MeanParams {
    pub layout: Layout,
    pub path: Path,
    pub rounding: Rounding,
    pub multiplier: QuantizedMultiplier,
    /// XNNPACK's conversion ([`Path::Xnnpack`]; unused on the others).
    pub xnnpack: XnnpackScale,
    /// Subtracted from each sum (wrapping, as TFLite's `int32` cast):
    /// `zp_in * n` on the reference path, 0 on the height-width one.
    pub sum_offset: i32,
    /// Added after the multiply: `zp_out`, or the height-width bias.
    pub output_offset: i32,
    /// Channels `0..vector_channels` of the height-width path are, in
    /// TFLite's aarch64 kernel, requantized 16 at a time with
    /// `MultiplyByQuantizedMultiplier4Rows`, the rest one by one. With
    /// single rounding the two agree; with double rounding the vector one
    /// rounds its final shift half up (`srshl`) instead of half away from
    /// zero. 0 when every channel takes the scalar arithmetic.
    pub vector_channels: usize,
    /// Channels of the height-width path (the input's last dimension), 1
    /// on the reference path.
    pub channels: usize,
    /// The output's (keep_dims or not) and the input's rank.
    pub output_rank: usize,
    pub output_dims: [usize; MAX_RANK],
}

/// TFLite's `MeanParams` check for the height-width kernel: the resolved
/// axes are `{1, 2}` of a rank-4 input.
fn is_height_width(rank: usize, resolved: &[usize]) -> bool {
    rank == 4 && matches!(resolved, [1, 2] | [2, 1])
}

impl MeanParams {
    /// Validates and prepares; see [`Mean::new`](super::Mean::new).
    pub(crate) fn new<T: QuantElem>(
        dims: &[usize],
        axes: &[i32],
        keep_dims: bool,
        input: QuantParams,
        output: QuantParams,
        kernels: MeanKernels,
        rounding: Rounding,
    ) -> Result<MeanParams> {
        let op = "mean";
        let rank = dims.len();
        if rank > MAX_RANK {
            return Err(Error::OutOfDomain {
                op,
                what: "input rank",
                value: rank as f64,
                requirement: "at most 8",
            });
        }
        if dims.contains(&0) {
            return Err(Error::ZeroDimension {
                op,
                what: "input dimension",
            });
        }
        let Some(inputs) = dims.iter().try_fold(1usize, |n, &d| n.checked_mul(d)) else {
            return Err(Error::OutOfDomain {
                op,
                what: "input elements",
                value: f64::INFINITY,
                requirement: "a length that fits in usize",
            });
        };
        // TFLite's ResolveAxis: negative axes count from the end, every axis
        // inside the rank, duplicates dropped (first occurrence kept).
        let mut resolved = [0usize; MAX_RANK];
        let mut n_resolved = 0;
        let mut reduce = [false; MAX_RANK];
        for &a in axes {
            let axis = if a < 0 {
                a as i64 + rank as i64
            } else {
                a as i64
            };
            if axis < 0 || axis >= rank as i64 {
                return Err(Error::OutOfDomain {
                    op,
                    what: "axis",
                    value: a as f64,
                    requirement: "in -rank..rank",
                });
            }
            let axis = axis as usize;
            if !reduce[axis] {
                reduce[axis] = true;
                resolved[n_resolved] = axis;
                n_resolved += 1;
            }
        }
        let in_scale = check_scale("input scale", input.scale)?;
        check_zero_point::<T>("input zero point", input.zero_point)?;
        let out_scale = check_scale("output scale", output.scale)?;
        check_zero_point::<T>("output zero point", output.zero_point)?;
        if T::NAME == "int16" && (input.zero_point != 0 || output.zero_point != 0) {
            // TFLite's Prepare requires int16 zero points of 0.
            return Err(Error::ZeroPoint {
                what: "int16 mean zero point",
                value: if input.zero_point != 0 {
                    input.zero_point
                } else {
                    output.zero_point
                },
                min: 0,
                max: 0,
            });
        }
        let layout = Layout::new(dims, &reduce[..rank]);
        debug_assert_eq!(layout.inputs, inputs);
        let count = layout.count;
        let xnnpack = XnnpackScale::new(input, output, count);
        let (output_rank, output_dims) = output_shape(dims, &reduce[..rank], keep_dims);
        if kernels == MeanKernels::Xnnpack {
            if T::NAME == "int16" {
                // The delegate takes 8-bit means only.
                return Err(Error::Unsupported {
                    op,
                    dtype: T::NAME,
                    reason: "XNNPACK's mean is 8-bit only (TFLite keeps int16 means)",
                });
            }
            return Ok(MeanParams {
                layout,
                path: Path::Xnnpack,
                rounding,
                multiplier: QuantizedMultiplier {
                    multiplier: 0,
                    shift: 0,
                },
                xnnpack,
                sum_offset: 0,
                output_offset: 0,
                vector_channels: 0,
                channels: 1,
                output_rank,
                output_dims,
            });
        }
        // TFLite's optimized kernels take their height-width kernel for
        // 8-bit types only; int16 keeps the reference arithmetic.
        let height_width = kernels == MeanKernels::Optimized
            && keep_dims
            && T::NAME != "int16"
            && is_height_width(rank, &resolved[..n_resolved]);
        let (path, multiplier, sum_offset, output_offset) = if height_width {
            if T::NAME == "uint8" {
                // uint8 takes another optimized kernel (optimized_ops::Mean),
                // not built here.
                return Err(Error::Unsupported {
                    op,
                    dtype: T::NAME,
                    reason: "the optimized height-width mean is built for int8 only",
                });
            }
            // All in f32, in TFLite's order of operations.
            let n = count as f32;
            let real = input.scale / (n * output.scale);
            let multiplier = rounding.quantize_multiplier(real as f64)?;
            let t = input.zero_point as f32 * input.scale / output.scale;
            let t = if t > 0.0 { t + 0.5 } else { t - 0.5 };
            // `as` truncates toward zero as the C++ cast; it saturates where
            // that one is undefined.
            let bias = output.zero_point.wrapping_sub(t as i32);
            (Path::HeightWidth, multiplier, 0, bias)
        } else {
            let q = rounding.quantize_multiplier(in_scale / out_scale)?;
            // Fold 1 / n into the multiplier as TFLite does: shift by
            // floor(log2 n), at most 32 and at most 31 + shift.
            let log2 = (usize::BITS - 1 - count.leading_zeros()) as i32;
            let s = log2.min(32).min(31 + q.shift);
            let m = ((q.multiplier as i64) << s) / count as i64;
            let multiplier = QuantizedMultiplier {
                multiplier: m as i32,
                shift: q.shift - s,
            };
            let sum_offset = (input.zero_point as i64).wrapping_mul(count as i64) as i32;
            (Path::Reference, multiplier, sum_offset, output.zero_point)
        };
        let (vector_channels, channels) = match path {
            Path::HeightWidth => (dims[3] / 16 * 16, dims[3]),
            Path::Reference | Path::Xnnpack => (0, 1),
        };
        Ok(MeanParams {
            layout,
            path,
            rounding,
            multiplier,
            xnnpack,
            sum_offset,
            output_offset,
            vector_channels,
            channels,
            output_rank,
            output_dims,
        })
    }

    /// The output dimensions TFLite's `Prepare` gives (reduced axes 1 with
    /// `keep_dims`, dropped without).
    pub(crate) fn output_dims(&self) -> &[usize] {
        &self.output_dims[..self.output_rank]
    }

    /// Output element `index` from its sum (the index decides only which
    /// of the height-width path's two arithmetics its channel takes).
    #[inline(always)]
    pub(crate) fn requantize<T: QuantElem>(&self, sum: i32, index: usize) -> T {
        if self.path == Path::Xnnpack {
            // Clamped in f32 as XNNPACK does; the bounds are integers, so
            // clamping the rounded value equals saturating it.
            let y = self.xnnpack.apply(sum);
            return T::saturate(y.clamp(i32::MIN as f32, i32::MAX as f32) as i32);
        }
        let x = sum.wrapping_sub(self.sum_offset);
        let vector_lane = self.rounding == Rounding::Double
            && self.vector_channels > 0
            && index % self.channels < self.vector_channels;
        let scaled = if vector_lane {
            multiply_round_half_up(x, self.multiplier)
        } else {
            self.rounding.multiply(x, self.multiplier)
        };
        T::saturate(scaled.saturating_add(self.output_offset))
    }
}

/// The output shape TFLite's `Prepare` gives, as (rank, dimensions padded
/// with 1s): the kept dimensions in order, the reduced ones as 1s in place
/// with `keep_dims` and dropped without.
fn output_shape(dims: &[usize], reduce: &[bool], keep_dims: bool) -> (usize, [usize; MAX_RANK]) {
    let mut out = [1usize; MAX_RANK];
    let mut rank = 0;
    for (&d, &r) in dims.iter().zip(reduce) {
        if !r {
            out[rank] = d;
            rank += 1;
        } else if keep_dims {
            rank += 1;
        }
    }
    (rank, out)
}

/// The double-rounding multiply of TFLite's NEON 4-row helper:
/// `srdhm(x << left, m)` then a rounding right shift with ties upward
/// (`srshl`), the left shift saturated as [`Rounding::multiply`] does.
#[inline(always)]
pub(crate) fn multiply_round_half_up(x: i32, q: QuantizedMultiplier) -> i32 {
    use crate::fixedpoint::Lane;
    let left = q.shift.max(0);
    let right = (-q.shift).max(0);
    let shifted = ((x as i64) << left.min(32)).clamp(i32::MIN as i64, i32::MAX as i64) as i32;
    let high = shifted.saturating_rounding_doubling_high_mul(q.multiplier);
    if right == 0 {
        high
    } else {
        ((high as i64 + (1i64 << (right - 1))) >> right) as i32
    }
}
