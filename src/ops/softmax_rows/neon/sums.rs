//! The sum pass of the `Method::Lut` NEON kernel: `t[max - x]` over a row,
//! through the split tables pinned in registers or the full 256-entry tables
//! loaded chunk by chunk (inline asm, see the module docs of `ops/softmax/lut_neon`).

use super::blocks::{for_each_block, load_post, opaque, Block, Masks, FLUSH_EVERY, STEP, T0};
use crate::ops::softmax_rows::lut::SoftmaxLut;
use core::arch::aarch64::*;

/// The split exp tables in registers.
pub(crate) struct Tables {
    pub(crate) high: uint8x16x4_t,
    pub(crate) low0: uint8x16x4_t,
    pub(crate) low1: uint8x16x4_t,
}

/// u16 partial sums of the high and low bytes, two registers each (so
/// consecutive `uadalp`s do not wait on each other), and their u32 totals.
pub(crate) struct Partial {
    pub(crate) high: [uint16x8_t; 2],
    pub(crate) low: [uint16x8_t; 2],
    pub(crate) high32: uint32x4_t,
    pub(crate) low32: uint32x4_t,
}

impl Partial {
    #[inline(always)]
    pub(crate) fn new() -> Self {
        // SAFETY: register arithmetic; NEON is a compile-time target feature.
        let (z, z32) = unsafe { (vdupq_n_u16(0), vdupq_n_u32(0)) };
        Partial {
            high: [z; 2],
            low: [z; 2],
            high32: z32,
            low32: z32,
        }
    }

    /// Adds the high and low bytes of 16 terms into sum registers `acc`.
    #[inline(always)]
    pub(crate) fn accumulate(&mut self, hi: uint8x16_t, lo: uint8x16_t, acc: usize) {
        // SAFETY: register arithmetic; NEON is a compile-time target feature.
        unsafe {
            self.high[acc] = vpadalq_u8(self.high[acc], hi);
            self.low[acc] = vpadalq_u8(self.low[acc], lo);
        }
    }

    /// Adds a 64-byte block of inputs through split tables; `mask` bytes
    /// are ORed into `d` (0x80 marks a lane to skip: `d | 0x80 >= 128` adds
    /// 0). The high byte is one `tbl`, the low byte `tbl` + `tbx` (`d ^ 64`
    /// moves 64..128 to 0..64 and the rest out of range). In asm with the
    /// tables pinned to v16..v27 and two temporaries: with intrinsics LLVM's
    /// allocation of the register-tuple operands varies from build to build,
    /// and some builds spill inside this loop (32 registers are just enough).
    #[inline(always)]
    pub(crate) fn add_block_split(
        &mut self,
        tables: &Tables,
        maxv: uint8x16_t,
        b: Block,
        mask: Option<&Block>,
    ) {
        // SAFETY: register arithmetic; NEON is a compile-time target feature.
        let d = |x: uint8x16_t, k: usize| unsafe {
            let d = vsubq_u8(maxv, x);
            match mask {
                Some(m) => vorrq_u8(d, [m.0, m.1, m.2, m.3][k]),
                None => d,
            }
        };
        let (h, l0, l1) = (&tables.high, &tables.low0, &tables.low1);
        // SAFETY: register arithmetic on the operands (the temporaries are
        // outputs the asm may write; the tables are read-only inputs); no
        // memory, stack or flag effects.
        unsafe {
            core::arch::asm!(
                "tbl {t0:v}.16b, {{v16.16b-v19.16b}}, {d0:v}.16b",
                "tbl {t1:v}.16b, {{v16.16b-v19.16b}}, {d1:v}.16b",
                "uadalp {h0:v}.8h, {t0:v}.16b",
                "uadalp {h1:v}.8h, {t1:v}.16b",
                "tbl {t0:v}.16b, {{v16.16b-v19.16b}}, {d2:v}.16b",
                "tbl {t1:v}.16b, {{v16.16b-v19.16b}}, {d3:v}.16b",
                "uadalp {h0:v}.8h, {t0:v}.16b",
                "uadalp {h1:v}.8h, {t1:v}.16b",
                "tbl {t0:v}.16b, {{v20.16b-v23.16b}}, {d0:v}.16b",
                "tbl {t1:v}.16b, {{v20.16b-v23.16b}}, {d1:v}.16b",
                "eor {d0:v}.16b, {d0:v}.16b, {c64:v}.16b",
                "eor {d1:v}.16b, {d1:v}.16b, {c64:v}.16b",
                "tbx {t0:v}.16b, {{v24.16b-v27.16b}}, {d0:v}.16b",
                "tbx {t1:v}.16b, {{v24.16b-v27.16b}}, {d1:v}.16b",
                "uadalp {l0:v}.8h, {t0:v}.16b",
                "uadalp {l1:v}.8h, {t1:v}.16b",
                "tbl {t0:v}.16b, {{v20.16b-v23.16b}}, {d2:v}.16b",
                "tbl {t1:v}.16b, {{v20.16b-v23.16b}}, {d3:v}.16b",
                "eor {d2:v}.16b, {d2:v}.16b, {c64:v}.16b",
                "eor {d3:v}.16b, {d3:v}.16b, {c64:v}.16b",
                "tbx {t0:v}.16b, {{v24.16b-v27.16b}}, {d2:v}.16b",
                "tbx {t1:v}.16b, {{v24.16b-v27.16b}}, {d3:v}.16b",
                "uadalp {l0:v}.8h, {t0:v}.16b",
                "uadalp {l1:v}.8h, {t1:v}.16b",
                d0 = inout(vreg) d(b.0, 0) => _,
                d1 = inout(vreg) d(b.1, 1) => _,
                d2 = inout(vreg) d(b.2, 2) => _,
                d3 = inout(vreg) d(b.3, 3) => _,
                c64 = in(vreg) vdupq_n_u8(64),
                t0 = out(vreg) _,
                t1 = out(vreg) _,
                h0 = inout(vreg) self.high[0],
                h1 = inout(vreg) self.high[1],
                l0 = inout(vreg) self.low[0],
                l1 = inout(vreg) self.low[1],
                in("v16") h.0, in("v17") h.1, in("v18") h.2, in("v19") h.3,
                in("v20") l0.0, in("v21") l0.1, in("v22") l0.2, in("v23") l0.3,
                in("v24") l1.0, in("v25") l1.1, in("v26") l1.2, in("v27") l1.3,
                options(pure, nomem, nostack, preserves_flags),
            );
        }
    }

    /// Adds a 64-byte block of inputs through the full 256-entry tables
    /// (`tbl` for `d < 64`, then `tbx` with `d` lowered by 64 per chunk: a
    /// chunk's indices land in `0..64`, the others, wrapped, at 64 or above,
    /// where `tbx` keeps what it has). `keep` bytes are ANDed into `d`: a 0
    /// there reads `t[0]` (`T0`), which the caller takes off the sum.
    ///
    /// Only the first `LO` chunks of the low bytes and `HI <= LO` of the
    /// high bytes are looked up: lanes of later chunks keep the 0 that the
    /// first chunk's `tbl` left, which the caller guarantees is their byte
    /// (every `d` of the block below `64 LO`, high bytes 0 from `64 HI` on).
    #[inline(always)]
    pub(crate) fn add_block_full<const HI: usize, const LO: usize>(
        &mut self,
        p: &SoftmaxLut,
        maxv: uint8x16_t,
        b: Block,
        keep: Option<&Block>,
    ) {
        debug_assert!(1 <= HI && HI <= LO && LO <= 4);
        let high = p.high.as_ptr().cast::<u8>();
        let low = p.low.as_ptr().cast::<u8>();
        // SAFETY: register arithmetic; NEON is a compile-time target feature.
        let mut d = [b.0, b.1, b.2, b.3].map(|x| unsafe { vsubq_u8(maxv, x) });
        if let Some(m) = keep {
            let m = [m.0, m.1, m.2, m.3];
            for j in 0..4 {
                // SAFETY: as above.
                d[j] = unsafe { vandq_u8(d[j], m[j]) };
            }
        }
        // Placeholders: the first chunk's `tbl`s write every lane.
        // SAFETY: as above.
        let (mut hi, mut lo) = unsafe { ([vdupq_n_u8(0); 4], [vdupq_n_u8(0); 4]) };
        // SAFETY: high and low point at four 64-byte chunks each, so the
        // loads at 64 k for k < 4 are in bounds.
        unsafe {
            lookup_chunk::<true, true>(high, low, &mut d, &mut hi, &mut lo);
            for k in 1..LO {
                if k < HI {
                    lookup_chunk::<false, true>(
                        high.add(64 * k),
                        low.add(64 * k),
                        &mut d,
                        &mut hi,
                        &mut lo,
                    );
                } else {
                    lookup_chunk::<false, false>(
                        high.add(64 * k),
                        low.add(64 * k),
                        &mut d,
                        &mut hi,
                        &mut lo,
                    );
                }
            }
        }
        for j in 0..4 {
            self.accumulate(hi[j], lo[j], j % 2);
        }
    }

    /// Moves the u16 partial sums into the u32 totals.
    #[inline(always)]
    pub(crate) fn flush(&mut self) {
        // SAFETY: register arithmetic; NEON is a compile-time target feature.
        unsafe {
            let z = vdupq_n_u16(0);
            self.high32 = vpadalq_u16(vpadalq_u16(self.high32, self.high[0]), self.high[1]);
            self.low32 = vpadalq_u16(vpadalq_u16(self.low32, self.low[0]), self.low[1]);
            self.high = [z; 2];
            self.low = [z; 2];
        }
    }

    /// The exact sum of the u32 totals of high and low bytes.
    #[inline(always)]
    pub(crate) fn total(&self) -> u64 {
        // SAFETY: register arithmetic; NEON is a compile-time target feature.
        // Each u32 lane holds at most row_len / 4 * 510, below 2^32 for rows
        // shorter than 2^24; the lanes are added in 64 bits.
        unsafe { (vaddlvq_u32(self.high32) << 8) + vaddlvq_u32(self.low32) }
    }
}

/// One 64-entry chunk of the full tables for 16 x 4 indices: loads the
/// chunk's high and low bytes into v24..v31, then `tbl` (`FIRST`) or lowers
/// `d` by 64 and `tbx`. Without `HIGH` (not for the first chunk), only the
/// low bytes: the high bytes of the chunk are all 0, which is what the first
/// chunk's `tbl` left in those lanes. In asm so that each chunk is loaded
/// where it is used: with intrinsics LLVM loads all 32 table registers at
/// once and spills the row.
///
/// # Safety
/// `high` and `low` must be valid for reading 64 bytes.
#[inline(always)]
pub(crate) unsafe fn lookup_chunk<const FIRST: bool, const HIGH: bool>(
    high: *const u8,
    low: *const u8,
    d: &mut [uint8x16_t; 4],
    hi: &mut [uint8x16_t; 4],
    lo: &mut [uint8x16_t; 4],
) {
    if FIRST {
        // SAFETY: the caller guarantees 64 readable bytes at high and low;
        // the asm writes only its operands and v24..v31 (declared
        // clobbered), and touches no stack or flags. The results are `out`,
        // not `lateout`: each is written while later `d`s are still read,
        // so none may share a register with them (when `d` dies here, for
        // one-chunk sums, LLVM would otherwise reuse its registers).
        unsafe {
            core::arch::asm!(
                "ld1 {{v24.16b-v27.16b}}, [{high}]",
                "ld1 {{v28.16b-v31.16b}}, [{low}]",
                "tbl {h0:v}.16b, {{v24.16b-v27.16b}}, {d0:v}.16b",
                "tbl {h1:v}.16b, {{v24.16b-v27.16b}}, {d1:v}.16b",
                "tbl {h2:v}.16b, {{v24.16b-v27.16b}}, {d2:v}.16b",
                "tbl {h3:v}.16b, {{v24.16b-v27.16b}}, {d3:v}.16b",
                "tbl {l0:v}.16b, {{v28.16b-v31.16b}}, {d0:v}.16b",
                "tbl {l1:v}.16b, {{v28.16b-v31.16b}}, {d1:v}.16b",
                "tbl {l2:v}.16b, {{v28.16b-v31.16b}}, {d2:v}.16b",
                "tbl {l3:v}.16b, {{v28.16b-v31.16b}}, {d3:v}.16b",
                high = in(reg) high,
                low = in(reg) low,
                d0 = in(vreg) d[0],
                d1 = in(vreg) d[1],
                d2 = in(vreg) d[2],
                d3 = in(vreg) d[3],
                h0 = out(vreg) hi[0],
                h1 = out(vreg) hi[1],
                h2 = out(vreg) hi[2],
                h3 = out(vreg) hi[3],
                l0 = out(vreg) lo[0],
                l1 = out(vreg) lo[1],
                l2 = out(vreg) lo[2],
                l3 = out(vreg) lo[3],
                out("v24") _, out("v25") _, out("v26") _, out("v27") _,
                out("v28") _, out("v29") _, out("v30") _, out("v31") _,
                options(readonly, nostack, preserves_flags),
            );
        }
    } else if !HIGH {
        // SAFETY: as above (only `low` is read; v28..v31 are clobbered).
        unsafe {
            core::arch::asm!(
                "ld1 {{v28.16b-v31.16b}}, [{low}]",
                "sub {d0:v}.16b, {d0:v}.16b, {sixty_four:v}.16b",
                "sub {d1:v}.16b, {d1:v}.16b, {sixty_four:v}.16b",
                "sub {d2:v}.16b, {d2:v}.16b, {sixty_four:v}.16b",
                "sub {d3:v}.16b, {d3:v}.16b, {sixty_four:v}.16b",
                "tbx {l0:v}.16b, {{v28.16b-v31.16b}}, {d0:v}.16b",
                "tbx {l1:v}.16b, {{v28.16b-v31.16b}}, {d1:v}.16b",
                "tbx {l2:v}.16b, {{v28.16b-v31.16b}}, {d2:v}.16b",
                "tbx {l3:v}.16b, {{v28.16b-v31.16b}}, {d3:v}.16b",
                low = in(reg) low,
                sixty_four = in(vreg) vdupq_n_u8(64),
                d0 = inout(vreg) d[0],
                d1 = inout(vreg) d[1],
                d2 = inout(vreg) d[2],
                d3 = inout(vreg) d[3],
                l0 = inout(vreg) lo[0],
                l1 = inout(vreg) lo[1],
                l2 = inout(vreg) lo[2],
                l3 = inout(vreg) lo[3],
                out("v28") _, out("v29") _, out("v30") _, out("v31") _,
                options(readonly, nostack, preserves_flags),
            );
        }
    } else {
        // SAFETY: as above.
        unsafe {
            core::arch::asm!(
                "ld1 {{v24.16b-v27.16b}}, [{high}]",
                "ld1 {{v28.16b-v31.16b}}, [{low}]",
                "sub {d0:v}.16b, {d0:v}.16b, {sixty_four:v}.16b",
                "sub {d1:v}.16b, {d1:v}.16b, {sixty_four:v}.16b",
                "sub {d2:v}.16b, {d2:v}.16b, {sixty_four:v}.16b",
                "sub {d3:v}.16b, {d3:v}.16b, {sixty_four:v}.16b",
                "tbx {h0:v}.16b, {{v24.16b-v27.16b}}, {d0:v}.16b",
                "tbx {h1:v}.16b, {{v24.16b-v27.16b}}, {d1:v}.16b",
                "tbx {h2:v}.16b, {{v24.16b-v27.16b}}, {d2:v}.16b",
                "tbx {h3:v}.16b, {{v24.16b-v27.16b}}, {d3:v}.16b",
                "tbx {l0:v}.16b, {{v28.16b-v31.16b}}, {d0:v}.16b",
                "tbx {l1:v}.16b, {{v28.16b-v31.16b}}, {d1:v}.16b",
                "tbx {l2:v}.16b, {{v28.16b-v31.16b}}, {d2:v}.16b",
                "tbx {l3:v}.16b, {{v28.16b-v31.16b}}, {d3:v}.16b",
                high = in(reg) high,
                low = in(reg) low,
                sixty_four = in(vreg) vdupq_n_u8(64),
                d0 = inout(vreg) d[0],
                d1 = inout(vreg) d[1],
                d2 = inout(vreg) d[2],
                d3 = inout(vreg) d[3],
                h0 = inout(vreg) hi[0],
                h1 = inout(vreg) hi[1],
                h2 = inout(vreg) hi[2],
                h3 = inout(vreg) hi[3],
                l0 = inout(vreg) lo[0],
                l1 = inout(vreg) lo[1],
                l2 = inout(vreg) lo[2],
                l3 = inout(vreg) lo[3],
                out("v24") _, out("v25") _, out("v26") _, out("v27") _,
                out("v28") _, out("v29") _, out("v30") _, out("v31") _,
                options(readonly, nostack, preserves_flags),
            );
        }
    }
}

/// The exp tables a row sums through: split tables in registers, or the
/// full tables reloaded for every block.
pub(crate) trait SumTables {
    /// Adds a 64-byte block of inputs, all counted.
    fn add(&self, partial: &mut Partial, maxv: uint8x16_t, b: Block);
    /// Loads the 64-byte block at `*src` and advances `src` past it.
    ///
    /// # Safety
    /// `*src` must be valid for reading 64 bytes.
    #[inline(always)]
    unsafe fn load(&self, src: &mut *const u8) -> Block {
        // SAFETY: the caller guarantees 64 readable bytes.
        unsafe {
            let b = vld1q_u8_x4(*src);
            *src = src.add(STEP);
            b
        }
    }
    /// Adds a row's last 64 bytes (or a short row's 64-byte window) where
    /// the lanes `masks` marks were counted already or are not the row's:
    /// 63) were counted already: `masks` is the table's lane mask for it.
    /// Returns what the masked lanes added (taken off the sum).
    fn add_last(&self, partial: &mut Partial, maxv: uint8x16_t, b: Block, masks: &Masks) -> u64;
    /// Adds a row shorter than 64 bytes as one padded block. Returns what
    /// the padding added (taken off the sum).
    fn add_padded(&self, partial: &mut Partial, row: &[u8], max: u8) -> u64;
}

impl SumTables for Tables {
    #[inline(always)]
    fn add(&self, partial: &mut Partial, maxv: uint8x16_t, b: Block) {
        partial.add_block_split(self, maxv, b, None);
    }
    #[inline(always)]
    fn add_last(&self, partial: &mut Partial, maxv: uint8x16_t, b: Block, masks: &Masks) -> u64 {
        // Opaque: loaded here, in the tail, rather than hoisted out of the
        // row loop into four registers that the block loops then lack.
        // SAFETY: the mask is STEP bytes.
        let mask = unsafe { vld1q_u8_x4(opaque(masks.skip.as_ptr())) };
        partial.add_block_split(self, maxv, b, Some(&mask));
        0
    }
    #[inline(always)]
    fn add_padded(&self, partial: &mut Partial, row: &[u8], max: u8) -> u64 {
        // SAFETY: register arithmetic.
        let maxv = unsafe { vdupq_n_u8(max) };
        // Padding bytes get d = 128: past both tables, so they add 0.
        for_each_block(row, max.wrapping_sub(128), |b| {
            partial.add_block_split(self, maxv, b, None)
        });
        0
    }
}

/// The full 256-entry tables, in memory, of which the first `LO` chunks of
/// low bytes and `HI` of high bytes are looked up (see `add_block_full`).
pub(crate) struct FullTables<'a, const HI: usize, const LO: usize>(pub(crate) &'a SoftmaxLut);

impl<const HI: usize, const LO: usize> SumTables for FullTables<'_, HI, LO> {
    #[inline(always)]
    fn add(&self, partial: &mut Partial, maxv: uint8x16_t, b: Block) {
        partial.add_block_full::<HI, LO>(self.0, maxv, b, None);
    }
    #[inline(always)]
    unsafe fn load(&self, src: &mut *const u8) -> Block {
        // SAFETY: as the caller guarantees.
        unsafe { load_post(src) }
    }
    #[inline(always)]
    fn add_last(&self, partial: &mut Partial, maxv: uint8x16_t, b: Block, masks: &Masks) -> u64 {
        // SAFETY: the mask is STEP bytes (opaque: as for the split tables).
        let keep = unsafe { vld1q_u8_x4(opaque(masks.keep.as_ptr())) };
        partial.add_block_full::<HI, LO>(self.0, maxv, b, Some(&keep));
        masks.masked as u64 * T0
    }
    #[inline(always)]
    fn add_padded(&self, partial: &mut Partial, row: &[u8], max: u8) -> u64 {
        // SAFETY: register arithmetic.
        let maxv = unsafe { vdupq_n_u8(max) };
        // Padding bytes equal the maximum: d = 0, each adds t[0].
        debug_assert!(row.len() < STEP);
        for_each_block(row, max, |b| {
            partial.add_block_full::<HI, LO>(self.0, maxv, b, None)
        });
        (STEP - row.len()) as u64 * T0
    }
}

/// Sum of `t[max - x]` over a row, exact. Rows of at least 64 bytes: whole
/// blocks, then the last 64 bytes again with the lanes already counted
/// masked off. Shorter rows: one padded block.
#[inline(always)]
pub(crate) fn row_sum(tables: &impl SumTables, row: &[u8], max: u8, masks: &Masks) -> u64 {
    let mut partial = Partial::new();
    if row.len() < STEP {
        let extra = tables.add_padded(&mut partial, row, max);
        partial.flush();
        return partial.total() - extra;
    }
    // SAFETY: register arithmetic; NEON is a compile-time target feature.
    let maxv = unsafe { vdupq_n_u8(max) };
    let whole = row.len() / STEP;
    // Opaque so that LLVM does not keep the max pass's last block in four
    // registers for the tail below (it would spill the tables).
    let start = opaque(row.as_ptr());
    let mut src = start;
    let mut left = whole;
    while left > 0 {
        let chunk = left.min(FLUSH_EVERY);
        for _ in 0..chunk {
            // SAFETY: src points at a whole 64-byte block inside row: at most
            // `whole` blocks are read from the start of row.
            unsafe {
                let b = tables.load(&mut src);
                tables.add(&mut partial, maxv, b);
            }
        }
        partial.flush();
        left -= chunk;
    }
    let mut extra = 0;
    if !row.len().is_multiple_of(STEP) {
        // SAFETY: row.len() >= STEP, so the last STEP bytes are in bounds.
        let last = unsafe { vld1q_u8_x4(start.add(row.len() - STEP)) };
        extra = tables.add_last(&mut partial, maxv, last, masks);
        partial.flush();
    }
    partial.total() - extra
}

/// Loads the split tables.
#[inline(always)]
pub(crate) fn load_tables(p: &SoftmaxLut) -> Tables {
    // Loaded where called (once per row), not hoisted out of the row loop,
    // where LLVM would keep them across the output pass and the rare calls
    // and spill them on every row instead; in asm so that each table is one
    // four-register `ld1` straight into the registers the sum pins it to
    // (LLVM splits the intrinsic into `ldp`s).
    let high = p.high[0].0.as_ptr();
    let low = p.low[0].0.as_ptr();
    let (h0, h1, h2, h3, a0, a1, a2, a3, b0, b1, b2, b3);
    // SAFETY: high[0] and low[0..2] are 64, 64 and 128 contiguous bytes
    // (low is an array of 64-byte chunks); the asm only reads them and
    // writes its outputs.
    unsafe {
        core::arch::asm!(
            "ld1 {{v16.16b-v19.16b}}, [{high}]",
            "ld1 {{v20.16b-v23.16b}}, [{low}], #64",
            "ld1 {{v24.16b-v27.16b}}, [{low}]",
            high = in(reg) high,
            low = inout(reg) low => _,
            out("v16") h0, out("v17") h1, out("v18") h2, out("v19") h3,
            out("v20") a0, out("v21") a1, out("v22") a2, out("v23") a3,
            out("v24") b0, out("v25") b1, out("v26") b2, out("v27") b3,
            options(readonly, nostack, preserves_flags),
        );
    }
    Tables {
        high: uint8x16x4_t(h0, h1, h2, h3),
        low0: uint8x16x4_t(a0, a1, a2, a3),
        low1: uint8x16x4_t(b0, b1, b2, b3),
    }
}

/// `row_sum` through the first `lo` low-byte and `hi` high-byte chunks of
/// the full tables (`1 <= hi <= lo <= 4`).
#[inline(always)]
pub(crate) fn full_sum(
    p: &SoftmaxLut,
    hi: usize,
    lo: usize,
    row: &[u8],
    max: u8,
    masks: &Masks,
) -> u64 {
    macro_rules! sum {
        ($h:literal, $l:literal) => {
            row_sum(&FullTables::<$h, $l>(p), row, max, masks)
        };
    }
    match (hi, lo) {
        (1, 1) => sum!(1, 1),
        (1, 2) => sum!(1, 2),
        (2, 2) => sum!(2, 2),
        (1, 3) => sum!(1, 3),
        (2, 3) => sum!(2, 3),
        (3, 3) => sum!(3, 3),
        (1, 4) => sum!(1, 4),
        (2, 4) => sum!(2, 4),
        (3, 4) => sum!(3, 4),
        _ => sum!(4, 4),
    }
}

/// The exact sum of `t[d]` over 64 indices `d` through the split tables,
/// as an `f32` (exact: at most 64 * 65535 < 2^24). The high and low bytes
/// are each summed in u16 lanes (at most 8 * 255 per lane) and reduced by
/// `uaddlv`; the total is `256 high + low`. In asm for the same reasons as
/// `add_block_split` (tables pinned to v16..v27); `d` is left intact for
/// the output pass (the `d ^ 64` of the second low table go to temporaries).
#[inline(always)]
pub(crate) fn block_sum_split(tables: &Tables, d: &[uint8x16_t; 4]) -> f32 {
    let (h, l0, l1) = (&tables.high, &tables.low0, &tables.low1);
    let sum: float32x4_t;
    // SAFETY: register arithmetic on the operands (temporaries are outputs
    // the asm may write; tables and `d` are read-only inputs); no memory,
    // stack or flag effects.
    unsafe {
        core::arch::asm!(
            "tbl {t0:v}.16b, {{v16.16b-v19.16b}}, {d0:v}.16b",
            "tbl {t1:v}.16b, {{v16.16b-v19.16b}}, {d1:v}.16b",
            "uaddlp {hs:v}.8h, {t0:v}.16b",
            "uadalp {hs:v}.8h, {t1:v}.16b",
            "tbl {t0:v}.16b, {{v16.16b-v19.16b}}, {d2:v}.16b",
            "tbl {t1:v}.16b, {{v16.16b-v19.16b}}, {d3:v}.16b",
            "uadalp {hs:v}.8h, {t0:v}.16b",
            "uadalp {hs:v}.8h, {t1:v}.16b",
            "tbl {t0:v}.16b, {{v20.16b-v23.16b}}, {d0:v}.16b",
            "tbl {t1:v}.16b, {{v20.16b-v23.16b}}, {d1:v}.16b",
            "eor {e0:v}.16b, {d0:v}.16b, {c64:v}.16b",
            "eor {e1:v}.16b, {d1:v}.16b, {c64:v}.16b",
            "tbx {t0:v}.16b, {{v24.16b-v27.16b}}, {e0:v}.16b",
            "tbx {t1:v}.16b, {{v24.16b-v27.16b}}, {e1:v}.16b",
            "uaddlp {ls:v}.8h, {t0:v}.16b",
            "uadalp {ls:v}.8h, {t1:v}.16b",
            "tbl {t0:v}.16b, {{v20.16b-v23.16b}}, {d2:v}.16b",
            "tbl {t1:v}.16b, {{v20.16b-v23.16b}}, {d3:v}.16b",
            "eor {e0:v}.16b, {d2:v}.16b, {c64:v}.16b",
            "eor {e1:v}.16b, {d3:v}.16b, {c64:v}.16b",
            "tbx {t0:v}.16b, {{v24.16b-v27.16b}}, {e0:v}.16b",
            "tbx {t1:v}.16b, {{v24.16b-v27.16b}}, {e1:v}.16b",
            "uadalp {ls:v}.8h, {t0:v}.16b",
            "uadalp {ls:v}.8h, {t1:v}.16b",
            "uaddlv {hs:s}, {hs:v}.8h",
            "uaddlv {ls:s}, {ls:v}.8h",
            "shl {hs:v}.2s, {hs:v}.2s, #8",
            "add {ls:v}.2s, {ls:v}.2s, {hs:v}.2s",
            "ucvtf {ls:s}, {ls:s}",
            d0 = in(vreg) d[0],
            d1 = in(vreg) d[1],
            d2 = in(vreg) d[2],
            d3 = in(vreg) d[3],
            c64 = in(vreg) vdupq_n_u8(64),
            t0 = out(vreg) _,
            t1 = out(vreg) _,
            e0 = out(vreg) _,
            e1 = out(vreg) _,
            hs = out(vreg) _,
            ls = out(vreg) sum,
            in("v16") h.0, in("v17") h.1, in("v18") h.2, in("v19") h.3,
            in("v20") l0.0, in("v21") l0.1, in("v22") l0.2, in("v23") l0.3,
            in("v24") l1.0, in("v25") l1.1, in("v26") l1.2, in("v27") l1.3,
            options(pure, nomem, nostack, preserves_flags),
        );
        vgetq_lane_f32(sum, 0)
    }
}

/// Sum of a short row read as a 64-byte window (lanes past the row masked).
#[inline(always)]
pub(crate) fn window_sum(tables: &impl SumTables, window: &[u8], max: u8, masks: &Masks) -> u64 {
    debug_assert!(window.len() == STEP);
    let mut partial = Partial::new();
    // SAFETY: the window is STEP bytes; the rest is register arithmetic.
    let (maxv, b) = unsafe { (vdupq_n_u8(max), vld1q_u8_x4(window.as_ptr())) };
    let extra = tables.add_last(&mut partial, maxv, b, masks);
    partial.flush();
    partial.total() - extra
}
