//! The sum pass of the exact 8-bit [`Method::FixedPoint`](crate::Method::FixedPoint)
//! softmax on NEON (`SoftmaxExact`'s byte planes of the reference's sum
//! terms, see `exact.rs`), and a row's maximum and sum by it: the softmax
//! kernel (`ops/softmax/lut_neon/fixed.rs`) writes a row's outputs from
//! these, the thresholded softmax decides its hits from them.
//!
//! One pass per 64-entry chunk `k` of the term planes: `d - 64 k` (out of
//! `0..64` for the other chunks, where `tbl` reads 0), one `tbl` per 16
//! bytes and nonzero plane of the chunk, `uadalp` into u16 lanes, which are
//! reduced into a `u64` per plane before they can overflow. A chunk's three
//! planes stay in registers for the whole pass.

use super::blocks::{for_each_whole_block, opaque, row_max, row_max_min, Block, Masks, STEP};
use crate::ops::softmax_rows::exact::{SoftmaxExact, PLANES};
use core::arch::aarch64::*;

/// Blocks (of any chunk pass) between reductions of the u16 plane sums:
/// each of the two registers of a plane gains at most 2 * 510 per lane and
/// block, and their lane sum must stay below 2^16 (32 * 2 * 1020 < 65536).
const FLUSH_BLOCKS: usize = 32;

/// u16 lane sums of the three planes, two registers per plane, and their
/// exact totals.
struct PlaneSums {
    acc: [[uint16x8_t; 2]; PLANES],
    total: [u64; PLANES],
    /// Blocks added (in any pass) since the last flush.
    blocks: usize,
}

impl PlaneSums {
    #[inline(always)]
    fn new() -> Self {
        // SAFETY: register arithmetic; NEON is a compile-time target feature.
        let z = unsafe { vdupq_n_u16(0) };
        PlaneSums {
            acc: [[z; 2]; PLANES],
            total: [0; PLANES],
            blocks: 0,
        }
    }

    /// Counts a block added, and flushes before the lanes can overflow.
    #[inline(always)]
    fn count(&mut self) {
        self.blocks += 1;
        if self.blocks == FLUSH_BLOCKS {
            self.flush();
        }
    }

    /// Moves the lane sums into the totals.
    #[inline(always)]
    fn flush(&mut self) {
        self.blocks = 0;
        for j in 0..PLANES {
            {
                // SAFETY: register arithmetic. Each lane of the two registers
                // holds at most FLUSH_BLOCKS * 1020, so their sum fits u16.
                unsafe {
                    let a = vaddq_u16(self.acc[j][0], self.acc[j][1]);
                    self.total[j] += vaddlvq_u16(a) as u64;
                    self.acc[j] = [vdupq_n_u16(0); 2];
                }
            }
        }
    }

    /// The sum of the terms: `low + 256 mid + 65536 high`.
    #[inline(always)]
    fn sum(&self) -> u64 {
        self.total[0] + (self.total[1] << 8) + (self.total[2] << 16)
    }
}

/// Adds chunk `k`'s term bytes of a block to the plane sums: `dk` is the
/// row maximum minus `64 k` (so `dk - x` is `d - 64 k`), `skip` ORs 0x80
/// into the lanes not to count (an index of 128 or more reads 0).
// Index loops over fixed-size arrays of registers and planes: the
// indices pick planes, chunks and lanes at compile time once unrolled.
#[allow(clippy::needless_range_loop)]
#[inline(always)]
fn add_block<const MASK: u8>(
    tables: &[uint8x16x4_t; PLANES],
    dk: uint8x16_t,
    b: Block,
    skip: Option<Block>,
    sums: &mut PlaneSums,
) {
    let x = [b.0, b.1, b.2, b.3];
    let s = skip.map(|m| [m.0, m.1, m.2, m.3]);
    for (i, x) in x.into_iter().enumerate() {
        // SAFETY: register arithmetic.
        let d = unsafe {
            let d = vsubq_u8(dk, x);
            match s {
                Some(m) => vorrq_u8(d, m[i]),
                None => d,
            }
        };
        for j in 0..PLANES {
            if MASK & (1 << j) != 0 {
                // SAFETY: register arithmetic.
                unsafe {
                    let t = vqtbl4q_u8(tables[j], d);
                    sums.acc[j][i % 2] = vpadalq_u8(sums.acc[j][i % 2], t);
                }
            }
        }
    }
}

/// One pass of chunk `k` over a row: `whole` holds its whole 64-byte
/// blocks, `last` its final block and the lanes of it to skip.
#[inline(always)]
fn chunk_pass<const MASK: u8>(
    t: &SoftmaxExact,
    k: usize,
    whole: &[u8],
    last: &impl Fn() -> Option<(Block, Block)>,
    max: u8,
    sums: &mut PlaneSums,
) {
    // SAFETY: each plane chunk is 64 bytes; opaque keeps the loads here,
    // once per pass, rather than hoisted into registers the loop lacks.
    let tables: [uint8x16x4_t; PLANES] = core::array::from_fn(|j| unsafe {
        if MASK & (1 << j) != 0 {
            vld1q_u8_x4(opaque(t.planes[j][k].0.as_ptr()))
        } else {
            uint8x16x4_t(vdupq_n_u8(0), vdupq_n_u8(0), vdupq_n_u8(0), vdupq_n_u8(0))
        }
    });
    // SAFETY: register arithmetic.
    let dk = unsafe { vdupq_n_u8(max.wrapping_sub(64 * k as u8)) };
    for_each_whole_block(whole, |b| {
        add_block::<MASK>(&tables, dk, b, None, sums);
        sums.count();
    });
    if let Some((b, skip)) = last() {
        add_block::<MASK>(&tables, dk, b, Some(skip), sums);
        sums.count();
    }
}

/// The row's sum of exps (Q12.19 raw): the terms of every `d` of the row,
/// all of which lie below `64 range_chunks`.
#[inline(always)]
pub(crate) fn row_sum(
    t: &SoftmaxExact,
    whole: &[u8],
    last: impl Fn() -> Option<(Block, Block)>,
    max: u8,
    range_chunks: usize,
) -> u64 {
    let mut sums = PlaneSums::new();
    for k in 0..range_chunks.min(4) {
        let mask = (0..PLANES)
            .filter(|&j| t.plane_chunks[j] > k)
            .fold(0u8, |m, j| m | 1 << j);
        macro_rules! pass {
            ($($m:literal)*) => {
                match mask {
                    $($m => chunk_pass::<$m>(t, k, whole, &last, max, &mut sums),)*
                    _ => {}
                }
            };
        }
        pass!(1 2 3 4 5 6 7);
    }
    sums.flush();
    sums.sum()
}

/// A row's maximum (raw byte) and the exact sum of the reference's terms
/// (Q12.19 raw), by this kernel's passes: for the thresholded softmax,
/// which needs both but writes only the elements that pass. `SIGNED`
/// selects int8 over uint8; an empty row gives `(0, 0)`.
#[inline(always)]
pub(crate) fn exact_row_max_sum<const SIGNED: bool>(t: &SoftmaxExact, row: &[u8]) -> (u8, u64) {
    let n = row.len();
    if n == 0 {
        return (0, 0);
    }
    let masks = Masks::new(n);
    // SAFETY: the mask is STEP bytes.
    let skip = || unsafe { vld1q_u8_x4(opaque(masks.skip.as_ptr())) };
    if n >= STEP {
        let (max, min) = row_max_min::<SIGNED>(row);
        // The distance max - min (0..=255) for int8 too.
        let range_chunks = max.wrapping_sub(min) as usize / 64 + 1;
        let whole = &row[..n - n % STEP];
        let last = || {
            (!n.is_multiple_of(STEP)).then(|| {
                // SAFETY: n >= STEP, so the last STEP bytes are in bounds;
                // their first lanes, counted in the block before, are masked.
                (unsafe { vld1q_u8_x4(row.as_ptr().add(n - STEP)) }, skip())
            })
        };
        (max, row_sum(t, whole, last, max, range_chunks))
    } else {
        let max = row_max::<SIGNED>(row);
        let mut buf = [0u8; STEP];
        buf[..n].copy_from_slice(row);
        // SAFETY: the buffer is STEP bytes; lanes past n are masked.
        let last = || Some((unsafe { vld1q_u8_x4(buf.as_ptr()) }, skip()));
        (max, row_sum(t, &[], last, max, 4))
    }
}
