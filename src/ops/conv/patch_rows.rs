//! A small window's im2col rows built straight into the GEMM's panel, for
//! the implicit GEMM of a layer whose window is a few bytes (a first layer:
//! 3x3 over 3 channels is 27 bytes, 3x3 or 5x5 over 1 channel 9 or 25).
//!
//! The window of output pixel `(oy, ox)` is `kernel_height` runs of
//! `kernel_width * channels` contiguous input bytes (one per kernel row;
//! one group, unit column dilation), its im2col row their concatenation
//! (the filter's `[ky][kx][i]` order). A pixel inside the image loads each
//! run into a slot of a table of up to four registers (16-byte slots for
//! runs of 9 to 16 bytes, 8-byte slots, two per register, for runs of up
//! to 8), and one `tbl` per 16 depth bytes picks the row's bytes out of it
//! with an index vector prepared at `new()` (byte `d = ky * run + j` of the
//! row is table byte `ky * slot + j`; indices past the depth are out of
//! range, so `tbl` writes the panel's zero padding). Instead of the two
//! copies of the scratch path (pixel runs into the scratch, the scratch
//! into the panel), each 16 depth bytes of a row cost a `tbl` and a store.
//!
//! A pixel whose window leaves the image (padding) or whose last load would
//! end past the caller's input slice writes its runs into a stack copy of
//! the table first: taps outside the image hold the input zero point, as
//! the scratch path's do (see `igemm`), so the bytes are the same.
//!
//! The `smmla` panel of row pairs takes two neighbouring pixels of one
//! output row at once when a kernel row of both windows fits 16 bytes
//! (`run + stride_width * channels <= 16`: MobileNet's 3x3x3 at stride 2
//! is 9 + 6): one 16-byte load per kernel row holds both pixels' runs, and
//! per 16 depth bytes two `tbl`s give the pair's two 16-byte panel vectors
//! (depths 0 to 8 of both rows, then 8 to 16) as the panel stores them,
//! instead of two tables, two `tbl`s and four 8-byte stores.

use core::arch::aarch64::*;
use core::mem::MaybeUninit;

use super::geometry::ConvGeometry;
use crate::ops::gemm::kernels::neon::{DotLayout, PairLayout, PanelLayout, PanelRows};
use crate::ops::gemm::kernels::KC;

/// Table registers at most (`tbl` takes 1 to 4).
const TABLE_REGS: usize = 4;
/// Kernel rows at most: 8-byte slots in [`TABLE_REGS`] registers.
const MAX_RUNS: usize = 2 * TABLE_REGS;
/// Steps of 16 depth bytes at most: the table's 64 bytes.
const MAX_STEPS: usize = TABLE_REGS;

/// What `new()` prepares for a small window: its table's shape, the index
/// vectors and the runs' offsets in the image.
#[derive(Clone, Debug)]
pub(crate) struct PatchPlan {
    /// Runs of at most 8 bytes: two 8-byte slots per register.
    slot8: bool,
    /// Table registers, 1 to [`TABLE_REGS`].
    regs: usize,
    /// Steps of 16 depth bytes of a row (`k_padded / 16`).
    steps: usize,
    /// Step `s`'s `tbl` indices: depth byte `16 s + b` is table byte
    /// `index[s][b]`, 255 (out of range: zero) past the depth.
    index: [[u8; KC]; MAX_STEPS],
    /// Kernel row `ky`'s run from the window's first byte:
    /// `ky * dilation_height * input_width * channels`; slots past the
    /// kernel's rows repeat the last run (loaded, never read).
    offsets: [usize; MAX_RUNS],
    /// Neighbouring pixels' rows are built in pairs (see the module doc):
    /// 16-byte slots, `run + stride_width * channels <= 16`.
    pairs: bool,
    /// With `pairs`, step `s`'s `tbl` indices of a pixel pair's vectors
    /// `h = 0, 1`: byte `b` is depth `16 s + 8 h + b % 8` of the first
    /// pixel (`b < 8`) or the second, whose runs start `stride_width *
    /// channels` bytes into the slots; 255 past the depth.
    pair_index: [[[u8; KC]; 2]; MAX_STEPS],
}

impl PatchPlan {
    /// The plan for a layer of one group (`depth` the input channels) with
    /// unit column dilation, whose runs fit a slot and whose table fits
    /// four registers; `None` for any other layer.
    pub(crate) fn new(g: &ConvGeometry, depth: usize) -> Option<PatchPlan> {
        let (kh, run) = (g.kernel_height, g.kernel_width * depth);
        if depth != g.input_channels || g.dilation_width != 1 || run > KC || kh > MAX_RUNS {
            return None;
        }
        let slot = if run <= 8 { 8 } else { KC };
        if kh * slot > TABLE_REGS * KC {
            return None;
        }
        let k = kh * run;
        let steps = k.div_ceil(KC);
        let mut index = [[u8::MAX; KC]; MAX_STEPS];
        for d in 0..k {
            index[d / KC][d % KC] = ((d / run) * slot + d % run) as u8;
        }
        let row_step = g.dilation_height * g.input_width * g.input_channels;
        let offsets = core::array::from_fn(|ky| ky.min(kh - 1) * row_step);
        let delta = g.stride_width * depth;
        let pairs = slot == KC && run + delta <= KC;
        let mut pair_index = [[[u8::MAX; KC]; 2]; MAX_STEPS];
        if pairs {
            for (s, step) in pair_index.iter_mut().enumerate().take(steps) {
                for (h, half) in step.iter_mut().enumerate() {
                    for (b, i) in half.iter_mut().enumerate() {
                        let d = KC * s + 8 * h + b % 8;
                        if d < k {
                            let second = if b < 8 { 0 } else { delta };
                            *i = ((d / run) * KC + d % run + second) as u8;
                        }
                    }
                }
            }
        }
        Some(PatchPlan {
            slot8: slot == 8,
            regs: (kh * slot).div_ceil(KC),
            steps,
            index,
            offsets,
            pairs,
            pair_index,
        })
    }
}

/// The implicit GEMM's rows `0..` as output pixels `pixel0..` (numbered
/// over the batch) of the layer `g`, built from `input` (the whole NHWC
/// input) by the [`PatchPlan`].
pub(crate) struct PatchRows<'a> {
    pub(crate) plan: &'a PatchPlan,
    pub(crate) g: &'a ConvGeometry,
    pub(crate) input: &'a [i8],
    pub(crate) pixel0: usize,
    pub(crate) zero_point: i8,
}

/// Where a pixel's window starts, stepped from pixel to pixel.
struct Cursor {
    /// The pixel's output row (over the batch) and column.
    row: usize,
    ox: usize,
    /// The window's first input row and column (negative in the padding).
    y0: isize,
    x0: isize,
    /// Every kernel row lies in the image.
    rows_inside: bool,
    /// The input offset of row `y0`, column 0 of the pixel's image (only
    /// used while `rows_inside`).
    row_at: usize,
}

impl PatchRows<'_> {
    fn cursor(&self, pixel: usize) -> Cursor {
        let g = self.g;
        let mut c = Cursor {
            row: pixel / g.output_width,
            ox: pixel % g.output_width,
            y0: 0,
            x0: 0,
            rows_inside: false,
            row_at: 0,
        };
        self.enter_row(&mut c);
        c
    }

    /// The row state of `c.row`, and `x0` of column `c.ox`.
    #[inline(always)]
    fn enter_row(&self, c: &mut Cursor) {
        let g = self.g;
        let (b, oy) = (c.row / g.output_height, c.row % g.output_height);
        c.y0 = (oy * g.stride_height) as isize - g.pad_top as isize;
        let span = (g.kernel_height - 1) * g.dilation_height;
        c.rows_inside = c.y0 >= 0 && c.y0 as usize + span < g.input_height;
        let in_row = g.input_width * g.input_channels;
        if c.rows_inside {
            c.row_at = (b * g.input_height + c.y0 as usize) * in_row;
        }
        c.x0 = (c.ox * g.stride_width) as isize - g.pad_left as isize;
    }

    #[inline(always)]
    fn advance(&self, c: &mut Cursor) {
        c.ox += 1;
        c.x0 += self.g.stride_width as isize;
        if c.ox == self.g.output_width {
            c.ox = 0;
            c.row += 1;
            self.enter_row(c);
        }
    }

    /// The table of the pixel at `c`: its runs in slots of `16 / (1 +
    /// SLOT8)` bytes, `R` registers.
    #[inline(always)]
    fn table<const SLOT8: bool, const R: usize>(&self, c: &Cursor) -> [int8x16_t; TABLE_REGS] {
        let g = self.g;
        let p = self.plan;
        let slot = if SLOT8 { 8 } else { KC };
        if c.rows_inside && c.x0 >= 0 && c.x0 as usize + g.kernel_width <= g.input_width {
            let at = c.row_at + c.x0 as usize * g.input_channels;
            // The last slot's load ends furthest (offsets grow with ky).
            let last = if SLOT8 { 2 * R - 1 } else { R - 1 };
            if at + p.offsets[last] + slot <= self.input.len() {
                let base = self.input.as_ptr();
                // SAFETY: every load below reads `slot` bytes at `at +
                // offsets[i]` for some i <= last, within `input` (checked
                // just above, offsets non-decreasing).
                return core::array::from_fn(|j| unsafe {
                    if j >= R {
                        vdupq_n_s8(0)
                    } else if SLOT8 {
                        vcombine_s8(
                            vld1_s8(base.add(at + p.offsets[2 * j])),
                            vld1_s8(base.add(at + p.offsets[2 * j + 1])),
                        )
                    } else {
                        vld1q_s8(base.add(at + p.offsets[j]))
                    }
                });
            }
        }
        let buf = self.gather(c, slot);
        // SAFETY: buf holds 64 = 16 TABLE_REGS bytes.
        core::array::from_fn(|j| unsafe { vld1q_s8(buf.as_ptr().add(KC * j)) })
    }

    /// The table of the pixel at `c` and of the next one (16-byte slots, `R`
    /// registers: one load per kernel row holds both runs) when both
    /// windows lie in the image, on one output row, and the loads end
    /// within `input`; `None` otherwise.
    #[inline(always)]
    fn pair_table<const R: usize>(&self, c: &Cursor) -> Option<[int8x16_t; TABLE_REGS]> {
        let g = self.g;
        let p = self.plan;
        let inside = c.rows_inside
            && c.x0 >= 0
            && c.ox + 1 < g.output_width
            && c.x0 as usize + g.stride_width + g.kernel_width <= g.input_width;
        if !inside {
            return None;
        }
        let at = c.row_at + c.x0 as usize * g.input_channels;
        // The last kernel row's load ends furthest (offsets grow with ky).
        if at + p.offsets[R - 1] + KC > self.input.len() {
            return None;
        }
        let base = self.input.as_ptr();
        // SAFETY: every load below reads 16 bytes at `at + offsets[j]`
        // for some j < R, within `input` (checked just above, offsets
        // non-decreasing); neon is a compile-time target feature.
        let mut t = [unsafe { vdupq_n_s8(0) }; TABLE_REGS];
        for (j, t) in t.iter_mut().enumerate().take(R) {
            // SAFETY: as above.
            *t = unsafe { vld1q_s8(base.add(at + p.offsets[j])) };
        }
        Some(t)
    }

    /// Rows `row..row + 8` (rows past `row + mr` repeat the last one)
    /// into the tile's panel of row pairs, a pair's two pixels from one
    /// table ([`Self::pair_table`]) where they can, one by one otherwise
    /// (an edge, a pair across output rows, the tile's last rows); `R`
    /// table registers of 16-byte slots.
    #[inline(always)]
    fn fill_pairs_with<const R: usize>(
        &self,
        panel: &mut [MaybeUninit<i8>],
        row: usize,
        mr: usize,
    ) {
        let steps = self.plan.steps;
        // One check for every store below: the tile's 8 k_padded bytes.
        let panel = &mut panel[..8 * KC * steps];
        let dst = panel.as_mut_ptr().cast::<i8>();
        // SAFETY: neon is a compile-time target feature; each index row
        // holds 16 bytes.
        let (mut index, mut pair_index) =
            unsafe { ([vdupq_n_u8(0); MAX_STEPS], [[vdupq_n_u8(0); 2]; MAX_STEPS]) };
        for s in 0..steps {
            // SAFETY: as above.
            unsafe {
                index[s] = vld1q_u8(self.plan.index[s].as_ptr());
                pair_index[s] = [
                    vld1q_u8(self.plan.pair_index[s][0].as_ptr()),
                    vld1q_u8(self.plan.pair_index[s][1].as_ptr()),
                ];
            }
        }
        let mut c = self.cursor(self.pixel0 + row);
        for q in 0..4 {
            let r = 2 * q;
            if r > 0 && r < mr {
                self.advance(&mut c);
            }
            if r + 1 < mr {
                if let Some(table) = self.pair_table::<R>(&c) {
                    for (s, pair) in pair_index.iter().enumerate().take(steps) {
                        let lo = lookup::<R>(&table, pair[0]);
                        let hi = lookup::<R>(&table, pair[1]);
                        // SAFETY: 128 s + 64 + 16 q + 16 <= 128 (s + 1)
                        // with q < 4, s < steps (sliced above).
                        unsafe {
                            let at = dst.add(128 * s + 16 * q);
                            vst1q_s8(at, lo);
                            vst1q_s8(at.add(64), hi);
                        }
                    }
                    self.advance(&mut c);
                    continue;
                }
            }
            for h in 0..2 {
                if h == 1 && r + 1 < mr {
                    self.advance(&mut c);
                }
                let table = self.table::<false, R>(&c);
                for (s, &index) in index.iter().enumerate().take(steps) {
                    let v = lookup::<R>(&table, index);
                    // SAFETY: s < steps and r + h < 8: the store ends
                    // within the panel's 128 steps bytes (sliced above).
                    unsafe { PairLayout::store_row(dst, s, r + h, v) };
                }
            }
        }
    }

    /// The table of a pixel at the image's edge, in memory: its runs at
    /// `ky * slot`, taps outside the image the input zero point.
    #[inline(never)]
    fn gather(&self, c: &Cursor, slot: usize) -> [i8; TABLE_REGS * KC] {
        let g = self.g;
        let cin = g.input_channels;
        let mut buf = [self.zero_point; TABLE_REGS * KC];
        let (b, oy) = (c.row / g.output_height, c.row % g.output_height);
        let (y0, ys) = ConvGeometry::taps(
            oy,
            g.stride_height,
            g.pad_top,
            g.dilation_height,
            g.kernel_height,
            g.input_height,
        );
        let (x0, xs) = ConvGeometry::taps(
            c.ox,
            g.stride_width,
            g.pad_left,
            1,
            g.kernel_width,
            g.input_width,
        );
        if xs.is_empty() {
            return buf;
        }
        let in_row = g.input_width * cin;
        let ix = (x0 + xs.start as isize) as usize;
        for ky in ys {
            // In the image: taps() kept only such rows and columns.
            let iy = (y0 + (ky * g.dilation_height) as isize) as usize;
            let src = (b * g.input_height + iy) * in_row + ix * cin;
            let dst = ky * slot + xs.start * cin;
            buf[dst..dst + xs.len() * cin].copy_from_slice(&self.input[src..][..xs.len() * cin]);
        }
        buf
    }

    /// Rows `row..row + 8` (rows past `row + mr` repeat the last one) into
    /// the tile's panel in `L`'s layout, `R` table registers.
    #[inline(always)]
    fn fill_with<L: PanelLayout, const SLOT8: bool, const R: usize>(
        &self,
        panel: &mut [MaybeUninit<i8>],
        row: usize,
        mr: usize,
    ) {
        let steps = self.plan.steps;
        // One check for every store below: the tile's 8 k_padded bytes.
        let panel = &mut panel[..8 * KC * steps];
        let dst = panel.as_mut_ptr().cast::<i8>();
        // SAFETY: each index row holds 16 bytes.
        let index: [uint8x16_t; MAX_STEPS] =
            core::array::from_fn(|s| unsafe { vld1q_u8(self.plan.index[s].as_ptr()) });
        let mut c = self.cursor(self.pixel0 + row);
        let mut table = self.table::<SLOT8, R>(&c);
        for r in 0..8 {
            if r > 0 && r < mr {
                self.advance(&mut c);
                table = self.table::<SLOT8, R>(&c);
            }
            for (s, &index) in index.iter().enumerate().take(steps) {
                let v = lookup::<R>(&table, index);
                // SAFETY: s < steps and r < 8: the store ends within the
                // panel's 128 steps bytes (sliced above).
                unsafe { L::store_row(dst, s, r, v) };
            }
        }
    }

    #[inline(always)]
    fn fill<L: PanelLayout>(&self, panel: &mut [MaybeUninit<i8>], row: usize, mr: usize) {
        match (self.plan.slot8, self.plan.regs) {
            (true, 1) => self.fill_with::<L, true, 1>(panel, row, mr),
            (true, 2) => self.fill_with::<L, true, 2>(panel, row, mr),
            (true, 3) => self.fill_with::<L, true, 3>(panel, row, mr),
            (true, _) => self.fill_with::<L, true, 4>(panel, row, mr),
            (false, 1) => self.fill_with::<L, false, 1>(panel, row, mr),
            (false, 2) => self.fill_with::<L, false, 2>(panel, row, mr),
            (false, 3) => self.fill_with::<L, false, 3>(panel, row, mr),
            (false, _) => self.fill_with::<L, false, 4>(panel, row, mr),
        }
    }
}

impl PanelRows for PatchRows<'_> {
    fn fill_dot(&self, panel: &mut [MaybeUninit<i8>], row: usize, mr: usize) {
        self.fill::<DotLayout>(panel, row, mr)
    }

    fn fill_pairs(&self, panel: &mut [MaybeUninit<i8>], row: usize, mr: usize) {
        // Pairs take 16-byte slots: one register per kernel row.
        match (self.plan.pairs, self.plan.regs) {
            (false, _) => self.fill::<PairLayout>(panel, row, mr),
            (true, 1) => self.fill_pairs_with::<1>(panel, row, mr),
            (true, 2) => self.fill_pairs_with::<2>(panel, row, mr),
            (true, 3) => self.fill_pairs_with::<3>(panel, row, mr),
            (true, _) => self.fill_pairs_with::<4>(panel, row, mr),
        }
    }

    fn dense(&self) -> Option<&[i8]> {
        None
    }
}

/// `tbl` over the first `R` registers of `t`: byte `b` is table byte
/// `index[b]`, zero for an index of `16 R` or more.
#[inline(always)]
fn lookup<const R: usize>(t: &[int8x16_t; TABLE_REGS], index: uint8x16_t) -> int8x16_t {
    // SAFETY: neon is a compile-time target feature (cfg on this module).
    unsafe {
        match R {
            1 => vqtbl1q_s8(t[0], index),
            2 => vqtbl2q_s8(int8x16x2_t(t[0], t[1]), index),
            3 => vqtbl3q_s8(int8x16x3_t(t[0], t[1], t[2]), index),
            _ => vqtbl4q_s8(int8x16x4_t(t[0], t[1], t[2], t[3]), index),
        }
    }
}
