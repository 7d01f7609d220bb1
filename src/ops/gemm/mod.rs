//! int8 GEMM (a fully connected layer) with int32 accumulation and the int8
//! requantization fused into the output stage.
//!
//! For an `M x K` input `x` and `N x K` weights `w` (one row per output
//! channel), output element `(m, n)` is TFLite's per-channel int8
//! `FullyConnected` (`reference_integer_ops::FullyConnectedPerChannel`):
//!
//! ```text
//! acc   = sum_k (x[m][k] - input_zero_point) * w[n][k] + bias[n]      int32, wrapping
//! y     = MultiplyByQuantizedMultiplier(acc, multiplier[n], shift[n])  in a Rounding
//!    or = round(f64(acc) * real[n])                                  LiteRT's reference
//! out   = clamp(y + output_zero_point, act_min, act_max)               int8
//! ```
//!
//! with `multiplier[n] * 2^(shift[n] - 31)` the quantized
//! `input_scale * weight_scale[n] / output_scale` (computed in `f64`, as
//! TFLite's `PopulateConvolutionQuantizationParams`), weights symmetric
//! (zero point 0, as TFLite requires for per-channel weights), and
//! `[act_min, act_max]` the fused activation's range. The accumulator wraps
//! modulo 2^32 like the C++ `int32_t` sum does in practice; every backend gives
//! the same wrapped value, which is the exact sum whenever it fits (any
//! `K` below 65,000).
//!
//! `new()` packs the weights once for the NEON kernels (blocks of 8 output
//! channels, depth in groups of 4 bytes, see [`Gemm`]) and folds the input zero
//! point into the bias (`bias[n] - input_zero_point * sum_k w[n][k]`, the same
//! value modulo 2^32), so the NEON inner loops multiply raw int8 values.
//!
//! NEON has three paths, bit-exact with each other and with the scalar
//! reference, chosen at `new()` from the CPU's features: `smmla`
//! (FEAT_I8MM) on an 8 x 8 tile of 2 x 2 blocks, `sdot` (FEAT_DotProd) on an
//! 8 x 8 tile of int32 accumulators, and a widening multiply-accumulate
//! fallback (`smull` + `sadalp`) on a 4 x 8 tile. All three read the same
//! packed weights.
//!
//! The work splits into independent `M x N` tiles ([`Gemm::run_tile`]):
//! every output element depends on its input row and its channel only, and
//! each is accumulated in the same order whatever tile holds it, so any
//! split gives `run`'s bytes, and `run` is the one tile covering the whole
//! output (the same kernels, the same loops). A tile's channels start at a
//! multiple of the packed column block ([`Gemm::tile_grain`]).

pub(crate) mod kernels;
#[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
mod neon;
mod pack;
#[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
mod panel_rows;
mod params;
mod scalar;

#[cfg(not(all(target_arch = "aarch64", target_feature = "neon")))]
use self::pack::{block_sums, pack_columns_bytes, pack_rows_groups};
use self::pack::{KC, NR};
use self::params::{GemmParams, Tile};
use super::requant::{try_filled, ChannelMultipliers, FusedActivation};
use crate::backend::{Backend, CpuFeatures};
use crate::checks::{check_length, check_scale, check_zero_point};
use crate::error::{Error, Result};
use crate::quant::{QuantParams, Requantization, Rounding};
use alloc::vec::Vec;
use core::ops::Range;

const OP: &str = "gemm";

/// The NEON inner loop of a [`Gemm`] (the backend stays [`Backend::Neon`]).
#[doc(hidden)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum GemmPath {
    /// `sdot` on an 8 x 8 tile; needs the dotprod extension.
    Dot,
    /// `smmla` on an 8 x 8 tile of 2 x 2 blocks; needs the i8mm extension
    /// (and dotprod, whose kernel runs depths past its panel).
    Mmla,
    /// `smull` + `sadalp` on a 4 x 8 tile; plain NEON.
    Widening,
}

impl GemmPath {
    /// The fastest path `cpu` runs: `smmla` with i8mm (and dotprod), else
    /// `sdot` with dotprod, else the widening kernel.
    pub(crate) fn for_cpu(cpu: &CpuFeatures) -> GemmPath {
        if cpu.i8mm && cpu.dotprod {
            GemmPath::Mmla
        } else if cpu.dotprod {
            GemmPath::Dot
        } else {
            GemmPath::Widening
        }
    }
}

/// A prepared int8 fully connected layer: TFLite's per-channel int8
/// `FullyConnected` (`reference_integer_ops::FullyConnectedPerChannel`) bit for
/// bit. Output `(m, n)` of an `m x k` input and `n x k` weights:
///
/// ```text
/// acc = sum_k (x[m][k] - input_zero_point) * w[n][k] + bias[n]      int32, wrapping
/// y   = MultiplyByQuantizedMultiplier(acc, multiplier[n], shift[n])  Multiplier(rounding)
///  or = round(f64(acc) * real[n])                                    RealF64
/// out = clamp(y + output_zero_point, act_min, act_max)               int8
/// ```
///
/// with `real[n]` = `input_scale * weight_scales[n] / output_scale` (in
/// `f64`), `multiplier[n] * 2^(shift[n] - 31)` its quantized form and
/// `[act_min, act_max]` the fused activation's range. The
/// [`Requantization`] is which TFLite kernel's arithmetic to reproduce: the
/// quantized multiplier in the build's rounding (single: one rounding of the
/// 64-bit product, LiteRT's optimized kernels; double: gemmlowp's two
/// roundings, TF 2.19), or LiteRT's reference kernel's `f64` product
/// (rounded half away from zero). The sum wraps modulo
/// 2^32 as the C++ `int32_t` sum does; it is exact whenever it fits (any `k`
/// below 65,000). Every backend gives the same bytes: the scalar reference, and
/// on aarch64 NEON with `sdot` (dotprod, detected at run time; an 8 x 8 tile of
/// int32 accumulators) or widening multiply-accumulates (a 4 x 8 tile).
///
/// Packed weight layout: output channels in blocks of 8 (the last
/// block padded with zero weights), each block holding the whole depth, padded
/// with zeros to a multiple of 16, in groups of 4: group `g` of block `b` is
/// 32 bytes, `w[8b + c][4g + t]` at byte `16 (c / 4) + 4 (c % 4) + t`. One
/// 16-byte vector is then four channels by four depths, the operand of one
/// `sdot` against four input bytes. The input zero point is folded into the
/// bias (`bias[n] - input_zero_point * sum_k w[n][k]`, equal modulo 2^32), so
/// the NEON inner loops multiply raw int8 values.
#[derive(Clone, Debug)]
#[cfg_attr(docsrs, doc(cfg(feature = "alloc")))]
pub struct Gemm {
    params: GemmParams,
    backend: Backend,
    path: GemmPath,
}

/// The arguments of a fully-connected layer as [`Gemm::new`] and
/// [`Gemv::new`](crate::Gemv::new) take them.
pub(crate) struct DenseLayer<'a> {
    pub weights: &'a [i8],
    pub n: usize,
    pub k: usize,
    pub bias: Option<&'a [i32]>,
    pub input: QuantParams,
    pub weight_scales: &'a [f32],
    pub output: QuantParams,
}

impl DenseLayer<'_> {
    /// Checks the layer as [`Gemm::new`] documents, for `op`, and makes its
    /// per-channel multipliers, `padded(n)` long (channels past `n` repeat
    /// the last); `padded` runs after the checks, so it may compute with `n`.
    pub(crate) fn multipliers(
        &self,
        op: &'static str,
        padded: impl FnOnce(usize) -> usize,
        requantization: Requantization,
    ) -> Result<ChannelMultipliers> {
        let DenseLayer {
            weights,
            n,
            k,
            bias,
            input,
            weight_scales,
            output,
        } = *self;
        if n == 0 {
            return Err(Error::ZeroDimension {
                op,
                what: "n (output channels)",
            });
        }
        if k == 0 {
            return Err(Error::ZeroDimension {
                op,
                what: "k (depth)",
            });
        }
        check_length(op, "weights", n.checked_mul(k), weights.len())?;
        if let Some(b) = bias {
            check_length(op, "bias", Some(n), b.len())?;
        }
        check_length(op, "weight scales", Some(n), weight_scales.len())?;
        let input_scale = check_scale("input scale", input.scale)?;
        check_zero_point::<i8>("input zero point", input.zero_point)?;
        let output_scale = check_scale("output scale", output.scale)?;
        check_zero_point::<i8>("output zero point", output.zero_point)?;
        ChannelMultipliers::new(
            op,
            "weight scale",
            "with double rounding the effective output scale, input scale * weight scale / \
             output scale, must be below 2^30",
            input_scale,
            weight_scales,
            output_scale,
            padded(n),
            requantization,
        )
    }
}

impl Gemm {
    /// Validates and prepares a fully connected layer.
    ///
    /// * `weights`: `n x k` int8, row-major, one row per output channel,
    ///   symmetric (zero point 0) with scale `weight_scales[c]` for row `c`;
    /// * `bias`: `n` int32 values in units of `input.scale * weight_scales[c]`,
    ///   or `None` for zeros;
    /// * `input`, `output`: per-tensor int8 quantization (any zero point in
    ///   `-128..=127`);
    /// * `activation`: fused into the output clamp;
    /// * `requantization`: how the accumulators are scaled to the output: a
    ///   [`Rounding`] of the quantized multipliers (a `Rounding` converts),
    ///   or [`Requantization::RealF64`], LiteRT's reference kernel, or
    ///   [`Requantization::XnnpackF32`], the XNNPACK delegate's (whose
    ///   activation bounds are quantized as XNNPACK does).
    ///
    /// Errors: `n` or `k` zero ([`Error::ZeroDimension`]), `weights`, `bias` or
    /// `weight_scales` of the wrong length ([`Error::Length`]), a scale that is
    /// not finite and `> 0` ([`Error::Scale`]), a zero point out of range
    /// ([`Error::ZeroPoint`]), with double rounding an effective scale
    /// `input * weight / output` of 2^30 or more ([`Error::Unsupported`];
    /// single rounding saturates it, as TFLite's single-rounding build does).
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        weights: &[i8],
        n: usize,
        k: usize,
        bias: Option<&[i32]>,
        input: QuantParams,
        weight_scales: &[f32],
        output: QuantParams,
        activation: FusedActivation,
        requantization: impl Into<Requantization>,
    ) -> Result<Gemm> {
        let layer = DenseLayer {
            weights,
            n,
            k,
            bias,
            input,
            weight_scales,
            output,
        };
        let multipliers = layer.multipliers(OP, |n| n.div_ceil(NR) * NR, requantization.into())?;
        // Checked: n * k fits (the weights' length).
        let blocks = n.div_ceil(NR);
        let n_padded = blocks * NR;
        let k_padded = k.div_ceil(KC) * KC;

        let bias: Vec<i32> = match bias {
            Some(b) => b.to_vec(),
            None => alloc::vec![0; n],
        };
        let (act_min, act_max) = activation.range_i8_for(output, multipliers.requantization);
        let path = GemmPath::for_cpu(&CpuFeatures::detect());
        let block_shifts = block_shifts(OP, &multipliers, blocks)?;
        let single_right = params::single_right_room(&multipliers, blocks);
        let mut gemm = Gemm {
            params: GemmParams {
                n,
                k,
                k_padded,
                packed: alloc::vec![0i8; n_padded * k_padded],
                paired: Vec::new(),
                bias,
                folded_bias: alloc::vec![0i32; n_padded],
                multipliers,
                block_shifts,
                single_right,
                weights_above_min: true,
                input_zero_point: input.zero_point,
                output_zero_point: output.zero_point,
                act_min,
                act_max,
            },
            backend: Backend::best(),
            path,
        };
        // `smmla`'s weights paired once, not per group of row tiles per call.
        #[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
        if path == GemmPath::Mmla && neon::mmla::pre_pairs(k, k_padded) {
            gemm.params.paired = alloc::vec![0i8; n_padded * k_padded];
        }
        gemm.pack_rows(weights);
        Ok(gemm)
    }

    /// Replaces the weights, keeping everything else (scales, bias, zero
    /// points): for a right-hand side computed at run time, such as attention's
    /// keys (`Q K^T`: `weights` = `K`, `n x k` row-major). Repacks and refolds
    /// the bias; allocates nothing. [`Error::Length`] unless `weights` is
    /// `n * k` long; they are read with the scales given to [`new`](Self::new).
    pub fn set_weights(&mut self, weights: &[i8]) -> Result<()> {
        check_length(
            OP,
            "weights",
            Some(self.params.n * self.params.k),
            weights.len(),
        )?;
        self.pack_rows(weights);
        Ok(())
    }

    /// [`set_weights`](Self::set_weights) from the transpose: `weights_t` is
    /// `k x n` row-major (`weights_t[d * n + c]` is weight `(c, d)`), as
    /// attention's values are (`P V`: `weights_t` = `V`, sequence by head
    /// size). [`Error::Length`] unless it is `k * n` long.
    pub fn set_weights_transposed(&mut self, weights_t: &[i8]) -> Result<()> {
        check_length(
            OP,
            "weights",
            Some(self.params.n * self.params.k),
            weights_t.len(),
        )?;
        self.pack_columns(weights_t);
        Ok(())
    }

    /// Packs the `n x k` row-major `w` (the padding stays zero), then
    /// [`fold`](Self::fold)s. Each row's depth groups of 4 bytes are copied
    /// whole (on aarch64, 8 rows at a time with NEON transposes).
    fn pack_rows(&mut self, w: &[i8]) {
        debug_assert_eq!(w.len(), self.params.n * self.params.k);
        #[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
        neon::pack::pack_rows(
            &mut self.params.packed,
            w,
            self.params.n,
            self.params.k,
            self.params.k_padded,
        );
        #[cfg(not(all(target_arch = "aarch64", target_feature = "neon")))]
        pack_rows_groups(
            &mut self.params.packed,
            w,
            0,
            self.params.n,
            0,
            self.params.k,
            self.params.k_padded,
        );
        self.pair();
        self.fold();
    }

    /// Packs the transpose of the `k x n` row-major `wt` (weight `(c, d)` =
    /// `wt[d * n + c]`, the padding stays zero), then [`fold`](Self::fold)s.
    fn pack_columns(&mut self, wt: &[i8]) {
        debug_assert_eq!(wt.len(), self.params.n * self.params.k);
        #[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
        neon::pack::pack_columns(
            &mut self.params.packed,
            wt,
            self.params.n,
            self.params.k,
            self.params.k_padded,
        );
        #[cfg(not(all(target_arch = "aarch64", target_feature = "neon")))]
        pack_columns_bytes(
            &mut self.params.packed,
            wt,
            0,
            self.params.n,
            0,
            self.params.k,
            self.params.n,
            self.params.k_padded,
        );
        self.pair();
        self.fold();
    }

    /// Fills the `smmla` kernel's paired weights when `new` made room.
    fn pair(&mut self) {
        #[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
        if !self.params.paired.is_empty() {
            let p = &mut self.params;
            neon::mmla::pair_blocks(&p.packed, &mut p.paired, p.k_padded);
        }
    }

    /// From the packed weights: folds the input zero point into the bias
    /// (`bias[c] - input_zero_point * sum_d w(c, d)`, wrapping, the padding
    /// adding nothing), records whether any weight is -128, fills the stages.
    fn fold(&mut self) {
        let block_bytes = NR * self.params.k_padded;
        let mut above_min = true;
        for (b, block) in self.params.packed.chunks_exact(block_bytes).enumerate() {
            #[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
            let (sums, min) = neon::pack::block_sums(block);
            #[cfg(not(all(target_arch = "aarch64", target_feature = "neon")))]
            let (sums, min) = block_sums(block);
            above_min &= min != i8::MIN;
            for (j, &sum) in sums.iter().enumerate() {
                let c = b * NR + j;
                if c < self.params.n {
                    self.params.folded_bias[c] = self.params.bias[c]
                        .wrapping_sub(self.params.input_zero_point.wrapping_mul(sum));
                }
            }
        }
        self.params.weights_above_min = above_min;
        self.params.fill_single_right();
    }

    /// How the accumulators are requantized.
    pub fn requantization(&self) -> Requantization {
        self.params.multipliers.requantization
    }

    /// The rounding of the quantized multipliers ([`Rounding::Single`] under
    /// [`Requantization::RealF64`], which does not use them).
    pub fn rounding(&self) -> Rounding {
        self.params.multipliers.rounding
    }

    /// Output channels (`n`).
    pub fn n(&self) -> usize {
        self.params.n
    }

    /// Depth (`k`).
    pub fn k(&self) -> usize {
        self.params.k
    }

    /// The quantized output range `[min, max]` of the fused activation.
    pub fn activation_range(&self) -> (i32, i32) {
        (self.params.act_min, self.params.act_max)
    }

    /// The backend [`run`](Self::run) uses.
    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// The NEON path `run` uses on this CPU (`Mmla` when it has i8mm and
    /// dotprod, `Dot` when dotprod alone, else `Widening`).
    #[doc(hidden)]
    pub fn path(&self) -> GemmPath {
        self.path
    }

    /// `output (m x n) = input (m x k) * weights^T`, requantized, with the best
    /// backend. Errors if `input` is not `m * k` or `output` not `m * n` long.
    pub fn run(&self, input: &[i8], output: &mut [i8], m: usize) -> Result<()> {
        self.run_with(self.backend, input, output, m)
    }

    /// [`run`](Self::run) with the given backend (an error if not available
    /// here). Every backend gives the same bytes.
    pub fn run_with(
        &self,
        backend: Backend,
        input: &[i8],
        output: &mut [i8],
        m: usize,
    ) -> Result<()> {
        self.check_buffers(input, output, m)?;
        self.run_kernel(
            backend,
            self.path,
            input,
            output,
            &Tile::whole(m, self.params.n),
        )
    }

    /// [`run_with`](Self::run_with)`(Backend::Neon, ..)` on the given NEON path;
    /// [`Error::BackendUnavailable`] if this CPU lacks it. For tests and
    /// benchmarks.
    #[doc(hidden)]
    pub fn run_neon_path(
        &self,
        path: GemmPath,
        input: &[i8],
        output: &mut [i8],
        m: usize,
    ) -> Result<()> {
        self.check_buffers(input, output, m)?;
        self.run_kernel(
            Backend::Neon,
            path,
            input,
            output,
            &Tile::whole(m, self.params.n),
        )
    }

    /// The tile grain `(rows, columns)` of [`run_tile`](Self::run_tile) on
    /// the backend and path [`run`](Self::run) uses. A tile's columns must
    /// start at a multiple of `columns` (8, the packed weights' column
    /// block) and end at one or at `n`. Rows may split anywhere; tiles whose
    /// rows start at multiples of `rows` (the kernel's row block: 8 for
    /// `sdot`, 4 for the widening path, 1 for the scalar reference) cost no
    /// more in total than one `run`, other splits recompute the partial row
    /// blocks (the bytes are the same).
    pub fn tile_grain(&self) -> (usize, usize) {
        let rows = match (self.backend, self.path) {
            (Backend::Scalar, _) => 1,
            (_, GemmPath::Dot | GemmPath::Mmla) => 8,
            (_, GemmPath::Widening) => 4,
        };
        (rows, NR)
    }

    /// One tile of [`run`](Self::run)'s output, with the best backend: input
    /// rows `rows` by output channels `cols`, the same bytes `run` gives
    /// there. `input` is the whole `m x k` input (`m = input.len() / k`);
    /// `output` holds the tile alone, row `r`, channel `c` at
    /// `(r - rows.start) * output_stride + (c - cols.start)`, and nothing
    /// else in it is written. To fill a whole `m x n` output `y` tile by
    /// tile, pass `&mut y[rows.start * n + cols.start..]` and stride `n`;
    /// tiles of whole rows (or with `m = 1`, of columns) are disjoint
    /// sub-slices, so threads can own them. An empty range computes
    /// nothing.
    ///
    /// Errors: `input` not a whole number of `k`-byte rows
    /// ([`Error::RowLength`]); `rows` not within `0..m`, `cols` not within
    /// `0..n`, either reversed, or `cols` off the column grain of
    /// [`tile_grain`](Self::tile_grain) ([`Error::Tile`]); a stride below
    /// the tile's width when it has more than one row, or an `output`
    /// shorter than `(rows.len() - 1) * output_stride + cols.len()`
    /// ([`Error::Length`]).
    pub fn run_tile(
        &self,
        input: &[i8],
        output: &mut [i8],
        output_stride: usize,
        rows: Range<usize>,
        cols: Range<usize>,
    ) -> Result<()> {
        self.run_tile_with(self.backend, input, output, output_stride, rows, cols)
    }

    /// [`run_tile`](Self::run_tile) with the given backend (an error if not
    /// available here). Every backend gives the same bytes.
    pub fn run_tile_with(
        &self,
        backend: Backend,
        input: &[i8],
        output: &mut [i8],
        output_stride: usize,
        rows: Range<usize>,
        cols: Range<usize>,
    ) -> Result<()> {
        let tile = self.check_tile(input, output, output_stride, rows, cols)?;
        self.run_kernel(backend, self.path, input, output, &tile)
    }

    /// [`run_tile_with`](Self::run_tile_with)`(Backend::Neon, ..)` on the
    /// given NEON path; [`Error::BackendUnavailable`] if this CPU lacks it.
    /// For tests and benchmarks.
    #[doc(hidden)]
    pub fn run_tile_neon_path(
        &self,
        path: GemmPath,
        input: &[i8],
        output: &mut [i8],
        output_stride: usize,
        rows: Range<usize>,
        cols: Range<usize>,
    ) -> Result<()> {
        let tile = self.check_tile(input, output, output_stride, rows, cols)?;
        self.run_kernel(Backend::Neon, path, input, output, &tile)
    }

    fn check_buffers(&self, input: &[i8], output: &[i8], m: usize) -> Result<()> {
        check_length(OP, "input", m.checked_mul(self.params.k), input.len())?;
        check_length(OP, "output", m.checked_mul(self.params.n), output.len())
    }

    /// The checks of [`run_tile`](Self::run_tile), in its order.
    fn check_tile(
        &self,
        input: &[i8],
        output: &[i8],
        stride: usize,
        rows: Range<usize>,
        cols: Range<usize>,
    ) -> Result<Tile> {
        let (n, k) = (self.params.n, self.params.k);
        Tile::checked(OP, (n, k), input.len(), output.len(), stride, rows, cols)
    }

    /// The one dispatch of backend and path, for `run` (the whole output) and
    /// `run_tile` alike; the tile was checked.
    #[allow(unused_variables)]
    fn run_kernel(
        &self,
        backend: Backend,
        path: GemmPath,
        input: &[i8],
        output: &mut [i8],
        tile: &Tile,
    ) -> Result<()> {
        let empty = tile.rows.is_empty() || tile.cols.is_empty();
        // `run`'s whole output, and any tile starting at the first row and
        // channel, take the kernels' origin specialization.
        #[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
        let at_origin = tile.rows.start == 0 && tile.cols.start == 0;

        match backend {
            Backend::Scalar => {
                if !empty {
                    scalar::gemm(&self.params, input, output, tile);
                }
                return Ok(());
            }
            #[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
            Backend::Neon => match path {
                GemmPath::Dot if CpuFeatures::detect().dotprod => {
                    if !empty {
                        // SAFETY: the CPU has dotprod (checked just above);
                        // the input and the tile's output were checked by the
                        // caller.
                        unsafe {
                            if at_origin {
                                neon::dot::gemm_dot::<true>(
                                    &self.params.view(),
                                    input,
                                    output,
                                    tile,
                                )
                            } else {
                                neon::dot::gemm_dot::<false>(
                                    &self.params.view(),
                                    input,
                                    output,
                                    tile,
                                )
                            }
                        };
                    }
                    return Ok(());
                }
                GemmPath::Dot => {
                    return Err(Error::BackendUnavailable {
                        backend: "neon (sdot)",
                    })
                }
                GemmPath::Mmla if CpuFeatures::detect().i8mm && CpuFeatures::detect().dotprod => {
                    if !empty {
                        let view = self.params.view();
                        // SAFETY: the CPU has i8mm and dotprod (checked just
                        // above); the input and the tile's output were
                        // checked by the caller.
                        unsafe {
                            if at_origin {
                                neon::mmla::gemm_mmla::<true>(&view, input, output, tile)
                            } else {
                                neon::mmla::gemm_mmla::<false>(&view, input, output, tile)
                            }
                        };
                    }
                    return Ok(());
                }
                GemmPath::Mmla => {
                    return Err(Error::BackendUnavailable {
                        backend: "neon (smmla)",
                    })
                }
                GemmPath::Widening => {
                    if !empty {
                        let view = self.params.view();
                        if at_origin {
                            neon::widening::gemm_widening::<true>(&view, input, output, tile);
                        } else {
                            neon::widening::gemm_widening::<false>(&view, input, output, tile);
                        }
                    }
                    return Ok(());
                }
            },
            #[allow(unreachable_patterns)]
            _ => {}
        }
        #[allow(unreachable_code)]
        Err(Error::BackendUnavailable { backend: "neon" })
    }
}

/// Per block of [`NR`] channels: (some channel shifts left, every channel
/// shifts right by at least 1), which selects the NEON output stage of
/// double rounding.
pub(crate) fn block_shifts(
    op: &'static str,
    multipliers: &ChannelMultipliers,
    blocks: usize,
) -> Result<Vec<(bool, bool)>> {
    let mut shifts = try_filled(op, "block shifts", (false, false), blocks)?;
    for (b, s) in shifts.iter_mut().enumerate() {
        let channels = b * NR..(b + 1) * NR;
        *s = (
            multipliers.left_shift[channels.clone()]
                .iter()
                .any(|&s| s != 0),
            multipliers.neg_right_shift[channels].iter().all(|&s| s < 0),
        );
    }
    Ok(shifts)
}
