//! The `sdot` kernel's 3x3 window (dilation 1) on a whole block of 16
//! channels with LiteRT's ties-upward double rounding and no channel of
//! the block shifting left: rows of output pixels in one asm loop, each
//! by runs of one column class (one bias each), the block's 12 weight
//! vectors, multipliers, right shifts, zero point and clamp held in
//! registers for all the rows (loaded once per call, not once per row:
//! a small image's rows have few pixels).
//!
//! Per pixel of 16 channels that is 37 instructions: the class's bias (one
//! 4-register load), 3 column loads and 12 `sdot`s, `sqrdmulh` and the
//! ties-upward `srshl` on 4 vectors (the stage without left shift: a shift
//! by 0 is the identity), the saturating narrows with the zero point, the
//! clamp, the store and 2 for the loop (and 4 per run, 6 per row); the
//! kernel's generic loop spends about 49 (weights reloaded per pixel, the
//! class looked up per pixel, the left shift tested per pixel). Registers:
//! weights v0-v11, zero point and clamp v12-v14, accumulators v16-v19,
//! columns v20-v23, multipliers v24-v27, right shifts v28-v31.

use super::narrow::{by_narrow, narrow16, narrow8, RunStage};

/// The most runs of one column class a row may have for [`run`] (a 3x3
/// window's row has at most 5: up to 2 edge classes on either side and
/// the interior).
pub(super) const RUNS: usize = 8;

/// `rows.len()` output rows of the block, each by `runs` of `[bias
/// offset, pixels]` (`n` pixels in all): pixel `i` of row `j` reads the
/// laid-out columns at `x + 64 (count j + stride i + kx)` (`kx` in 0..3,
/// `count = stride (n - 1) + 3` columns laid out per row), its
/// accumulators start at the 16 values at `rows[j]` plus its run's
/// offset, and its 16 bytes go to `out + out_step (n j + i) + out_skip j`
/// (rows of the output follow each other, or every other one with
/// `out_skip` one output row: rows3's row pairs). `w` holds the block's 3
/// weight entries of 64 bytes (`[kx][channel][row]`).
///
/// # Safety
/// The CPU has dotprod; `rows` and `runs` are not empty and every run has
/// a pixel; `w` holds 192 bytes, each `rows[j]` 16 values at each run's
/// offset, the stage pointers 16 values each; `x` holds the `64 count
/// rows.len()` bytes read, and `out + out_step (n j + i) + out_skip j`
/// 16 writable bytes for each pixel `i < n` of each row `j`.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn run(
    w: *const i8,
    s: &RunStage,
    rows: &[*const i32],
    runs: &[[usize; 2]],
    x: *const i8,
    stride: usize,
    out: *mut i8,
    out_step: usize,
    out_skip: usize,
) {
    debug_assert!(!rows.is_empty() && !runs.is_empty() && runs.iter().all(|r| r[1] >= 1));
    // After the window's first two columns (post-incremented by 64 each),
    // on to the next pixel's first column (negative for stride 1: the
    // register post-index adds modulo 2^64).
    let x_step = (64 * stride).wrapping_sub(128);
    // After a row's `n` pixels (`64 stride n` bytes on), on to the next
    // row's first column (`64 (stride (n - 1) + 3)` bytes on).
    let x_row = (64 * 3usize).wrapping_sub(64 * stride);
    // SAFETY: the caller's bounds: every load reads within `w`, `rows`, the row biases, `runs`,
    // the stage arrays and the laid-out columns, every store writes one
    // pixel's 16 bytes; `sdot` needs dotprod (the caller's); the
    // intrinsic is not stable yet, hence the asm.
    unsafe {
        let (lo, hi) = s.clamp_bytes();
        macro_rules! body {
            ($mode:ident) => {
                core::arch::asm!(
                    "ld1 {{v0.16b-v3.16b}}, [{w}], #64",
                    "ld1 {{v4.16b-v7.16b}}, [{w}], #64",
                    "ld1 {{v8.16b-v11.16b}}, [{w}]",
                    "ld1 {{v24.4s-v27.4s}}, [{m}]",
                    "ld1 {{v28.4s-v31.4s}}, [{r}]",
                    "dup v12.8h, {zp:w}",
                    "dup v13.16b, {lo:w}",
                    "dup v14.16b, {hi:w}",
                    "4:",
                    "ldr {rb}, [{rows}], #8",
                    "mov {rp}, {runs}",
                    "mov {k}, {nruns}",
                    "3:",
                    "ldp {b}, {n}, [{rp}], #16",
                    "add {b}, {rb}, {b}, lsl #2",
                    "2:",
                    "ld1 {{v16.4s-v19.4s}}, [{b}]",
                    "ld1 {{v20.16b-v23.16b}}, [{x}], #64",
                    "sdot v16.4s, v20.16b, v0.16b",
                    "sdot v17.4s, v21.16b, v1.16b",
                    "sdot v18.4s, v22.16b, v2.16b",
                    "sdot v19.4s, v23.16b, v3.16b",
                    "ld1 {{v20.16b-v23.16b}}, [{x}], #64",
                    "sdot v16.4s, v20.16b, v4.16b",
                    "sdot v17.4s, v21.16b, v5.16b",
                    "sdot v18.4s, v22.16b, v6.16b",
                    "sdot v19.4s, v23.16b, v7.16b",
                    "ld1 {{v20.16b-v23.16b}}, [{x}], {xs}",
                    "sdot v16.4s, v20.16b, v8.16b",
                    "sdot v17.4s, v21.16b, v9.16b",
                    "sdot v18.4s, v22.16b, v10.16b",
                    "sdot v19.4s, v23.16b, v11.16b",
                    "sqrdmulh v16.4s, v16.4s, v24.4s",
                    "sqrdmulh v17.4s, v17.4s, v25.4s",
                    "sqrdmulh v18.4s, v18.4s, v26.4s",
                    "sqrdmulh v19.4s, v19.4s, v27.4s",
                    "srshl v16.4s, v16.4s, v28.4s",
                    "srshl v17.4s, v17.4s, v29.4s",
                    "srshl v18.4s, v18.4s, v30.4s",
                    "srshl v19.4s, v19.4s, v31.4s",
                    "sqxtn v16.4h, v16.4s",
                    "sqxtn2 v16.8h, v17.4s",
                    "sqxtn v18.4h, v18.4s",
                    "sqxtn2 v18.8h, v19.4s",
                    narrow16!($mode, "16", "16", "18"),
                    "subs {n}, {n}, #1",
                    "st1 {{v16.16b}}, [{o}], {os}",
                    "b.ne 2b",
                    "subs {k}, {k}, #1",
                    "b.ne 3b",
                    "add {x}, {x}, {xr}",
                    "add {o}, {o}, {oskip}",
                    "subs {nrows}, {nrows}, #1",
                    "b.ne 4b",
                    w = inout(reg) w => _,
                    m = in(reg) s.multiplier,
                    r = in(reg) s.neg_right_shift,
                    zp = in(reg) s.zero_point as i32,
                    lo = in(reg) lo,
                    hi = in(reg) hi,
                    rows = inout(reg) rows.as_ptr() => _,
                    nrows = inout(reg) rows.len() => _,
                    rb = out(reg) _,
                    runs = in(reg) runs.as_ptr(),
                    nruns = in(reg) runs.len(),
                    rp = out(reg) _,
                    k = out(reg) _,
                    xr = in(reg) x_row,
                    oskip = in(reg) out_skip,
                    b = out(reg) _,
                    x = inout(reg) x => _,
                    xs = in(reg) x_step,
                    o = inout(reg) out => _,
                    os = in(reg) out_step,
                    n = out(reg) _,
                    out("v0") _, out("v1") _, out("v2") _, out("v3") _,
                    out("v4") _, out("v5") _, out("v6") _, out("v7") _,
                    out("v8") _, out("v9") _, out("v10") _, out("v11") _,
                    out("v12") _, out("v13") _, out("v14") _,
                    out("v16") _, out("v17") _, out("v18") _, out("v19") _,
                    out("v20") _, out("v21") _, out("v22") _, out("v23") _,
                    out("v24") _, out("v25") _, out("v26") _, out("v27") _,
                    out("v28") _, out("v29") _, out("v30") _, out("v31") _,
                    options(nostack),
                )
            };
        }
        by_narrow!(s.narrow(), body);
    }
}

/// [`run`] for a last block of 8 channels (half entries: the columns and
/// weight entries are 32 bytes, `[channel][row]` of 8 channels): per pixel
/// 23 instructions (the bias in one 2-register load, 3 column loads and 6
/// `sdot`s, the stage on 2 vectors, narrows to 8 bytes and an 8-byte
/// store) where the generic loop spends about 33. Registers: weights
/// v0-v5, zero point and clamp v12-v14, accumulators v16-v17, columns
/// v20-v21, multipliers v24-v25, right shifts v28-v29.
///
/// # Safety
/// As [`run`] with half the bytes: `w` holds 96 bytes, each `rows[j]` 8
/// values at each run's offset, the stage pointers 8 values each; `x`
/// holds the `32 count rows.len()` bytes read, and `out + out_step (n j +
/// i) + out_skip j` 8 writable bytes for each pixel `i < n` of each row
/// `j`.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn run8(
    w: *const i8,
    s: &RunStage,
    rows: &[*const i32],
    runs: &[[usize; 2]],
    x: *const i8,
    stride: usize,
    out: *mut i8,
    out_step: usize,
    out_skip: usize,
) {
    debug_assert!(!rows.is_empty() && !runs.is_empty() && runs.iter().all(|r| r[1] >= 1));
    // As in `run`, with columns of 32 bytes.
    let x_step = (32 * stride).wrapping_sub(64);
    let x_row = (32 * 3usize).wrapping_sub(32 * stride);
    // SAFETY: as `run`: every load reads within `w`, `rows`, the row biases, `runs`, the
    // stage arrays and the laid-out columns, every store writes one
    // pixel's 8 bytes; `sdot` needs dotprod (the caller's).
    unsafe {
        let (lo, hi) = s.clamp_bytes();
        macro_rules! body {
            ($mode:ident) => {
                core::arch::asm!(
                    "ld1 {{v0.16b-v3.16b}}, [{w}], #64",
                    "ld1 {{v4.16b-v5.16b}}, [{w}]",
                    "ld1 {{v24.4s-v25.4s}}, [{m}]",
                    "ld1 {{v28.4s-v29.4s}}, [{r}]",
                    "dup v12.8h, {zp:w}",
                    "dup v13.8b, {lo:w}",
                    "dup v14.8b, {hi:w}",
                    "4:",
                    "ldr {rb}, [{rows}], #8",
                    "mov {rp}, {runs}",
                    "mov {k}, {nruns}",
                    "3:",
                    "ldp {b}, {n}, [{rp}], #16",
                    "add {b}, {rb}, {b}, lsl #2",
                    "2:",
                    "ld1 {{v16.4s-v17.4s}}, [{b}]",
                    "ld1 {{v20.16b-v21.16b}}, [{x}], #32",
                    "sdot v16.4s, v20.16b, v0.16b",
                    "sdot v17.4s, v21.16b, v1.16b",
                    "ld1 {{v20.16b-v21.16b}}, [{x}], #32",
                    "sdot v16.4s, v20.16b, v2.16b",
                    "sdot v17.4s, v21.16b, v3.16b",
                    "ld1 {{v20.16b-v21.16b}}, [{x}], {xs}",
                    "sdot v16.4s, v20.16b, v4.16b",
                    "sdot v17.4s, v21.16b, v5.16b",
                    "sqrdmulh v16.4s, v16.4s, v24.4s",
                    "sqrdmulh v17.4s, v17.4s, v25.4s",
                    "srshl v16.4s, v16.4s, v28.4s",
                    "srshl v17.4s, v17.4s, v29.4s",
                    "sqxtn v16.4h, v16.4s",
                    "sqxtn2 v16.8h, v17.4s",
                    narrow8!($mode, "16", "16"),
                    "subs {n}, {n}, #1",
                    "st1 {{v16.8b}}, [{o}], {os}",
                    "b.ne 2b",
                    "subs {k}, {k}, #1",
                    "b.ne 3b",
                    "add {x}, {x}, {xr}",
                    "add {o}, {o}, {oskip}",
                    "subs {nrows}, {nrows}, #1",
                    "b.ne 4b",
                    w = inout(reg) w => _,
                    m = in(reg) s.multiplier,
                    r = in(reg) s.neg_right_shift,
                    zp = in(reg) s.zero_point as i32,
                    lo = in(reg) lo,
                    hi = in(reg) hi,
                    rows = inout(reg) rows.as_ptr() => _,
                    nrows = inout(reg) rows.len() => _,
                    rb = out(reg) _,
                    runs = in(reg) runs.as_ptr(),
                    nruns = in(reg) runs.len(),
                    rp = out(reg) _,
                    k = out(reg) _,
                    xr = in(reg) x_row,
                    oskip = in(reg) out_skip,
                    b = out(reg) _,
                    x = inout(reg) x => _,
                    xs = in(reg) x_step,
                    o = inout(reg) out => _,
                    os = in(reg) out_step,
                    n = out(reg) _,
                    out("v0") _, out("v1") _, out("v2") _, out("v3") _,
                    out("v4") _, out("v5") _,
                    out("v12") _, out("v13") _, out("v14") _,
                    out("v16") _, out("v17") _,
                    out("v20") _, out("v21") _,
                    out("v24") _, out("v25") _,
                    out("v28") _, out("v29") _,
                    options(nostack),
                )
            };
        }
        by_narrow!(s.narrow(), body);
    }
}

/// [`run8`] two pixels at a time, for a layer of exactly 8 channels at
/// stride 1 (the laid-out columns of 32 bytes follow each other, and so
/// do the output pixels' 8 bytes): a 64-byte load at column `i` holds
/// columns `i` and `i + 1`, the taps `kx` of pixels `ox` and `ox + 1`, so
/// a pair of pixels runs the 16-channel loop's 12 `sdot`s and its stage
/// on 4 vectors, 37 instructions where two [`run8`] pixels spend 46. A
/// run's bias is one 4-register load: a last block of 8 repeats its 8
/// biases in lanes 8 to 15 ([`super::Folded`]), both pixels of a pair
/// are in the run. A run of odd length ends with one pixel as [`run8`].
///
/// # Safety
/// As [`run8`] at stride 1 with `out_step` 8; each `rows[j]` holds 16
/// values at each run's offset.
#[inline(always)]
pub(super) unsafe fn run8x2(
    w: *const i8,
    s: &RunStage,
    rows: &[*const i32],
    runs: &[[usize; 2]],
    x: *const i8,
    out: *mut i8,
    out_skip: usize,
) {
    debug_assert!(!rows.is_empty() && !runs.is_empty() && runs.iter().all(|r| r[1] >= 1));
    // After a row's pixels (`32 n` bytes on), on to the next row's first
    // column (`32 (n + 2)` bytes on).
    let x_row = 64usize;
    // SAFETY: as `run8`: every load reads within `w`, `rows`, the row
    // biases (16 values per run's offset), `runs`, the stage arrays and the
    // laid-out columns (a pair's last load ends at column `ox + 3`, within
    // the row's `n + 2` columns as `ox + 1 < n`), every store writes one or
    // two pixels' bytes; `sdot` needs dotprod (the caller's).
    unsafe {
        let (lo, hi) = s.clamp_bytes();
        macro_rules! body {
            ($mode:ident) => {
                core::arch::asm!(
                    "ld1 {{v0.16b-v3.16b}}, [{w}], #64",
                    "ld1 {{v4.16b-v5.16b}}, [{w}]",
                    "ld1 {{v24.4s-v25.4s}}, [{m}]",
                    "ld1 {{v28.4s-v29.4s}}, [{r}]",
                    "dup v12.8h, {zp:w}",
                    "dup v13.16b, {lo:w}",
                    "dup v14.16b, {hi:w}",
                    "mov {c32}, #32",
                    "4:",
                    "ldr {rb}, [{rows}], #8",
                    "mov {rp}, {runs}",
                    "mov {k}, {nruns}",
                    "3:",
                    "ldp {b}, {n}, [{rp}], #16",
                    "add {b}, {rb}, {b}, lsl #2",
                    "lsr {p}, {n}, #1",
                    "cbz {p}, 5f",
                    "2:",
                    "ld1 {{v16.4s-v19.4s}}, [{b}]",
                    "ld1 {{v20.16b-v23.16b}}, [{x}], {c32}",
                    "sdot v16.4s, v20.16b, v0.16b",
                    "sdot v17.4s, v21.16b, v1.16b",
                    "sdot v18.4s, v22.16b, v0.16b",
                    "sdot v19.4s, v23.16b, v1.16b",
                    "ld1 {{v20.16b-v23.16b}}, [{x}], {c32}",
                    "sdot v16.4s, v20.16b, v2.16b",
                    "sdot v17.4s, v21.16b, v3.16b",
                    "sdot v18.4s, v22.16b, v2.16b",
                    "sdot v19.4s, v23.16b, v3.16b",
                    "ld1 {{v20.16b-v23.16b}}, [{x}]",
                    "sdot v16.4s, v20.16b, v4.16b",
                    "sdot v17.4s, v21.16b, v5.16b",
                    "sdot v18.4s, v22.16b, v4.16b",
                    "sdot v19.4s, v23.16b, v5.16b",
                    "sqrdmulh v16.4s, v16.4s, v24.4s",
                    "sqrdmulh v17.4s, v17.4s, v25.4s",
                    "sqrdmulh v18.4s, v18.4s, v24.4s",
                    "sqrdmulh v19.4s, v19.4s, v25.4s",
                    "srshl v16.4s, v16.4s, v28.4s",
                    "srshl v17.4s, v17.4s, v29.4s",
                    "srshl v18.4s, v18.4s, v28.4s",
                    "srshl v19.4s, v19.4s, v29.4s",
                    "sqxtn v16.4h, v16.4s",
                    "sqxtn2 v16.8h, v17.4s",
                    "sqxtn v18.4h, v18.4s",
                    "sqxtn2 v18.8h, v19.4s",
                    narrow16!($mode, "16", "16", "18"),
                    "subs {p}, {p}, #1",
                    "st1 {{v16.16b}}, [{o}], #16",
                    "b.ne 2b",
                    "5:",
                    "tbz {n}, #0, 6f",
                    "ld1 {{v16.4s-v17.4s}}, [{b}]",
                    "ld1 {{v20.16b-v21.16b}}, [{x}], #32",
                    "sdot v16.4s, v20.16b, v0.16b",
                    "sdot v17.4s, v21.16b, v1.16b",
                    "ld1 {{v20.16b-v21.16b}}, [{x}], #32",
                    "sdot v16.4s, v20.16b, v2.16b",
                    "sdot v17.4s, v21.16b, v3.16b",
                    "ld1 {{v20.16b-v21.16b}}, [{x}]",
                    "sub {x}, {x}, #32",
                    "sdot v16.4s, v20.16b, v4.16b",
                    "sdot v17.4s, v21.16b, v5.16b",
                    "sqrdmulh v16.4s, v16.4s, v24.4s",
                    "sqrdmulh v17.4s, v17.4s, v25.4s",
                    "srshl v16.4s, v16.4s, v28.4s",
                    "srshl v17.4s, v17.4s, v29.4s",
                    "sqxtn v16.4h, v16.4s",
                    "sqxtn2 v16.8h, v17.4s",
                    narrow8!($mode, "16", "16"),
                    "st1 {{v16.8b}}, [{o}], #8",
                    "6:",
                    "subs {k}, {k}, #1",
                    "b.ne 3b",
                    "add {x}, {x}, {xr}",
                    "add {o}, {o}, {oskip}",
                    "subs {nrows}, {nrows}, #1",
                    "b.ne 4b",
                    w = inout(reg) w => _,
                    m = in(reg) s.multiplier,
                    r = in(reg) s.neg_right_shift,
                    zp = in(reg) s.zero_point as i32,
                    lo = in(reg) lo,
                    hi = in(reg) hi,
                    rows = inout(reg) rows.as_ptr() => _,
                    nrows = inout(reg) rows.len() => _,
                    rb = out(reg) _,
                    runs = in(reg) runs.as_ptr(),
                    nruns = in(reg) runs.len(),
                    rp = out(reg) _,
                    k = out(reg) _,
                    xr = in(reg) x_row,
                    oskip = in(reg) out_skip,
                    b = out(reg) _,
                    x = inout(reg) x => _,
                    c32 = out(reg) _,
                    o = inout(reg) out => _,
                    n = out(reg) _,
                    p = out(reg) _,
                    out("v0") _, out("v1") _, out("v2") _, out("v3") _,
                    out("v4") _, out("v5") _,
                    out("v12") _, out("v13") _, out("v14") _,
                    out("v16") _, out("v17") _, out("v18") _, out("v19") _,
                    out("v20") _, out("v21") _, out("v22") _, out("v23") _,
                    out("v24") _, out("v25") _,
                    out("v28") _, out("v29") _,
                    options(nostack),
                )
            };
        }
        by_narrow!(s.narrow(), body);
    }
}
