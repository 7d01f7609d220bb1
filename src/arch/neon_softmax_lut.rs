//! NEON `Method::Lut` softmax on 8-bit data (see `crate::ops::softmax_lut`).
//!
//! Per row, 64 bytes per iteration in each of three passes:
//! 1. max: `umax`/`smax`.
//! 2. sum: `d = max - x` (bytes; the same for int8 and uint8), the high and
//!    the low byte of `t[d]` by table lookups, each summed by `uadalp` into
//!    u16 lanes, which are widened into u32 lanes before they can overflow.
//!    Split tables (`beta * scale >= ~0.09`) stay in registers: the high byte
//!    is one 64-byte `tbl`, the low byte `tbl` + `tbx` over 128 bytes
//!    (out-of-range indices read 0). Full tables take a `tbl` and up to three
//!    `tbx` per byte over 256 entries; their 16 registers per byte do not fit
//!    beside the row, so every 64 inputs reload them, 64 bytes at a time.
//!    Full-table rows of at least 64 bytes find their minimum in the max pass
//!    too: all their `d` lie below `max - min + 1`, so only the 64-entry
//!    chunks that range reaches are looked up (and of the high bytes only
//!    those where `t >= 256` somewhere): attention scores at scale 0.03 span
//!    two or three chunks, not four.
//! 3. output: the row's outputs by `d`, in 64-entry chunks built with four
//!    lanes of `sqrdmulh`, narrowed to u16 and divided by the row's power of
//!    two with `urshl` on eight lanes, then a `tbl` (plus a `tbx` per
//!    further chunk) for every 16 elements. Outputs do not increase with `d`,
//!    so only the chunks whose first entry is nonzero are built and looked
//!    up; beyond them `tbl`/`tbx` leave 0, the output's minimum. Full-table
//!    rows too short to repay the chunks (under 56 elements per chunk) look
//!    `t` up again and requantize every element instead.
//!
//! The table lookups of the sum pass are inline asm: LLVM allocates the
//! four-register table operands differently from build to build, hoists
//! table loads into more registers than there are, and spills. The asm pins
//! the split tables to v16..v27 and loads each full-table chunk into
//! v24..v31 where it is used.
//!
//! Rows of at least 64 bytes end with an overlapping block whose lanes
//! already counted are masked off. Shorter rows are read as 64-byte windows
//! of the input (lanes past the row masked off) and written as 64-byte
//! windows of the output, whose bytes past the row are rewritten by the next
//! rows; only the last rows, whose window would pass the end of the slices,
//! go through 64-byte stack buffers. Nothing outside the slices is touched.

use crate::fixedpoint::Lane;
use crate::ops::softmax_lut::{SoftmaxLut, OUTPUT_ENTRIES};
use core::arch::aarch64::*;

/// Bytes per loop iteration.
const STEP: usize = 64;
/// Iterations after which the u16 sums are widened: each lane gains at most
/// 2 * 255 per `uadalp`, two `uadalp`s per iteration, and 64 * 1020 < 65536.
const FLUSH_EVERY: usize = 64;
/// `t[0]`: exp(0) in units of 2^-16. Lanes masked off in a full-table block
/// read it (d = 0), and the row's sum drops it again.
const T0: u64 = 65535;

/// Four registers of bytes.
type Block = uint8x16x4_t;

/// `ptr`, hidden from the optimizer, so that loads through it stay where
/// they are written: LLVM would otherwise hoist loop-invariant table loads
/// out of the loops into more registers than there are, and spill them.
#[inline(always)]
fn opaque<T>(ptr: *const T) -> *const T {
    // As an address: the asm does not dereference it.
    let mut addr = ptr as usize;
    // SAFETY: an empty asm that claims to rewrite one general register; it
    // touches no memory, stack or flags.
    unsafe {
        core::arch::asm!("/* {0} */", inout(reg) addr, options(nomem, nostack, preserves_flags));
    }
    addr as *const T
}

/// The row's bytes in 64-byte blocks: whole blocks straight from the slice,
/// then the tail copied into a buffer filled with `pad` first.
#[inline(always)]
fn for_each_block(row: &[u8], pad: u8, mut f: impl FnMut(Block)) {
    let whole = row.len() - row.len() % STEP;
    for_each_whole_block(&row[..whole], &mut f);
    if whole < row.len() {
        let mut buf = [pad; STEP];
        buf[..row.len() - whole].copy_from_slice(&row[whole..]);
        // SAFETY: buf is STEP bytes.
        f(unsafe { vld1q_u8_x4(buf.as_ptr()) });
    }
}

/// The whole 64-byte blocks of a row (the tail is the caller's).
#[inline(always)]
fn for_each_whole_block(row: &[u8], mut f: impl FnMut(Block)) {
    let mut src = row.as_ptr();
    let mut blocks = row.len() / STEP;
    while blocks > 0 {
        // SAFETY: src points `(row.len() / STEP - blocks) * STEP` bytes into
        // row, so the next STEP bytes are in bounds.
        unsafe {
            f(vld1q_u8_x4(src));
            src = src.add(STEP);
        }
        blocks -= 1;
    }
}

/// Maximum byte of a non-empty row, signed (int8) or unsigned (uint8), as
/// the raw byte. Rows of at least 64 bytes end with an overlapping block (a
/// repeated byte cannot change the maximum); shorter ones are padded with
/// their first byte.
#[inline(always)]
fn row_max<const SIGNED: bool>(row: &[u8]) -> u8 {
    // SAFETY: register arithmetic; NEON is a compile-time target feature
    // (the cfg on this module).
    let mut acc = unsafe { vdupq_n_u8(if SIGNED { 0x80 } else { 0 }) };
    // SAFETY: as above.
    let mut fold = |b: Block| unsafe {
        if SIGNED {
            let s = |v| vreinterpretq_s8_u8(v);
            let m01 = vmaxq_s8(s(b.0), s(b.1));
            let m23 = vmaxq_s8(s(b.2), s(b.3));
            acc = vreinterpretq_u8_s8(vmaxq_s8(s(acc), vmaxq_s8(m01, m23)));
        } else {
            acc = vmaxq_u8(acc, vmaxq_u8(vmaxq_u8(b.0, b.1), vmaxq_u8(b.2, b.3)));
        }
    };
    if row.len() >= STEP {
        for_each_whole_block(row, &mut fold);
        if row.len() % STEP != 0 {
            // SAFETY: row.len() >= STEP, so the last STEP bytes are in bounds.
            fold(unsafe { vld1q_u8_x4(row.as_ptr().add(row.len() - STEP)) });
        }
    } else {
        for_each_block(row, row[0], fold);
    }
    // SAFETY: register arithmetic.
    unsafe {
        if SIGNED {
            vmaxvq_s8(vreinterpretq_s8_u8(acc)) as u8
        } else {
            vmaxvq_u8(acc)
        }
    }
}

/// The split exp tables in registers.
struct Tables {
    high: uint8x16x4_t,
    low0: uint8x16x4_t,
    low1: uint8x16x4_t,
}

/// u16 partial sums of the high and low bytes, two registers each (so
/// consecutive `uadalp`s do not wait on each other), and their u32 totals.
struct Partial {
    high: [uint16x8_t; 2],
    low: [uint16x8_t; 2],
    high32: uint32x4_t,
    low32: uint32x4_t,
}

impl Partial {
    #[inline(always)]
    fn new() -> Self {
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
    fn accumulate(&mut self, hi: uint8x16_t, lo: uint8x16_t, acc: usize) {
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
    fn add_block_split(
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
    fn add_block_full<const HI: usize, const LO: usize>(
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
    fn flush(&mut self) {
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
    fn total(&self) -> u64 {
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
unsafe fn lookup_chunk<const FIRST: bool, const HIGH: bool>(
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

/// Loads the 64-byte block at `*src` and advances `src` past it: one
/// post-incremented four-register `ld1` (LLVM emits two `ldp` and an `add`
/// for the intrinsic and the pointer step).
///
/// # Safety
/// `*src` must be valid for reading 64 bytes.
#[inline(always)]
unsafe fn load_post(src: &mut *const u8) -> Block {
    let (b0, b1, b2, b3);
    // SAFETY: the caller guarantees 64 readable bytes at *src; the asm reads
    // only them and writes its outputs and the pointer.
    unsafe {
        core::arch::asm!(
            "ld1 {{v0.16b-v3.16b}}, [{src}], #64",
            src = inout(reg) *src,
            out("v0") b0, out("v1") b1, out("v2") b2, out("v3") b3,
            options(readonly, nostack, preserves_flags),
        );
    }
    uint8x16x4_t(b0, b1, b2, b3)
}

/// The exp tables a row sums through: split tables in registers, or the
/// full tables reloaded for every block.
trait SumTables {
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

/// Lane masks for a row's last block, computed once per call.
struct Masks {
    /// 0x80 in the masked lanes (split tables: `d | 0x80` adds 0).
    skip: [u8; STEP],
    /// 0 in the masked lanes, 0xff elsewhere (full tables: `d & 0` reads `t[0]`).
    keep: [u8; STEP],
    /// Number of masked lanes.
    masked: usize,
}

impl Masks {
    /// For rows of `row_len` bytes: rows of at least 64 end with a block
    /// whose first `64 - row_len % 64` lanes (if not all) overlap the block
    /// before; shorter rows are read as one 64-byte window whose lanes from
    /// `row_len` on belong to the next rows.
    fn new(row_len: usize) -> Self {
        let mut skip = [0u8; STEP];
        let mut keep = [0xffu8; STEP];
        let masked = if row_len >= STEP {
            let overlap = (STEP - row_len % STEP) % STEP;
            skip[..overlap].fill(0x80);
            keep[..overlap].fill(0);
            overlap
        } else {
            skip[row_len..].fill(0x80);
            keep[row_len..].fill(0);
            STEP - row_len
        };
        Masks { skip, keep, masked }
    }
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
struct FullTables<'a, const HI: usize, const LO: usize>(&'a SoftmaxLut);

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
fn row_sum(tables: &impl SumTables, row: &[u8], max: u8, masks: &Masks) -> u64 {
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
    if row.len() % STEP != 0 {
        // SAFETY: row.len() >= STEP, so the last STEP bytes are in bounds.
        let last = unsafe { vld1q_u8_x4(start.add(row.len() - STEP)) };
        extra = tables.add_last(&mut partial, maxv, last, masks);
        partial.flush();
    }
    partial.total() - extra
}

/// The row's outputs for `d < 64 C` as bytes above the type's minimum
/// (`clamp(out) - MIN`, which is `min(MBQM(t[d]), 255)`), in `C` chunks of
/// four registers.
#[inline(always)]
fn output_table<const C: usize>(
    p: &SoftmaxLut,
    multiplier: i32,
    neg_shift: i16,
) -> [uint8x16x4_t; C] {
    // Opaque so that LLVM reloads the entries here, once per row, instead of
    // hoisting them out of the row loop into registers that the sum loop
    // then has to spill.
    let wide = opaque(p.exp_wide.as_ptr());
    let m = <int32x4_t as Lane>::splat(multiplier);
    // MultiplyByQuantizedMultiplier for a negative shift on values >= 0 is
    // sqrdmulh, then a rounding divide by 2^r (r = -neg_shift, the negative exponent) that needs
    // no sign fix-up: (x + 2^(r - 1)) >> r. The sqrdmulh result
    // is at most t <= 65535 (m < 2^31), so it is narrowed to u16 first and
    // divided eight lanes at a time by `urshl`, which rounds the same way
    // (Arm defines it with the rounding constant added at full precision;
    // right shifts of 16 and more give 0 or 1 as the 32-bit divide would).
    let entries = |k: usize| -> int32x4_t {
        // SAFETY: k < 16 C <= 64, so the 4 lanes at 4k are within the
        // 256-entry table.
        let t = unsafe { vld1q_s32(wide.add(4 * k)) };
        t.saturating_rounding_doubling_high_mul(m)
    };
    // SAFETY: register arithmetic; -31 <= neg_shift <= -7.
    let shift = unsafe { vdupq_n_s16(neg_shift) };
    // Outputs are at most 256 * 65535 / sum * (1 + 0.1%) (the output scale
    // is within 0.1% of 1/256); the narrowing to bytes saturates at 255.
    // (Loads of one register each: the four-register `ld1` raises register
    // pressure enough to make LLVM spill the split tables on every row.)
    // SAFETY: register arithmetic.
    let sixteen = |k: usize| unsafe {
        let h = |a: int32x4_t, b: int32x4_t| {
            let x = vuzp1q_u16(vreinterpretq_u16_s32(a), vreinterpretq_u16_s32(b));
            vrshlq_u16(x, shift)
        };
        let low = h(entries(k), entries(k + 1));
        let high = h(entries(k + 2), entries(k + 3));
        vqmovn_high_u16(vqmovn_u16(low), high)
    };
    core::array::from_fn(|c| {
        let k = 16 * c;
        uint8x16x4_t(sixteen(k), sixteen(k + 4), sixteen(k + 8), sixteen(k + 12))
    })
}

/// One output block: `table[max - x]`, moved to the type's range.
#[inline(always)]
fn look<const SIGNED: bool, const C: usize>(
    table: &[uint8x16x4_t; C],
    maxv: uint8x16_t,
    b: Block,
) -> Block {
    let one = |x: uint8x16_t| -> uint8x16_t {
        // SAFETY: register arithmetic. For int8, q - 128 is q ^ 0x80 (q in
        // 0..=255). Lowering d by 64 per chunk moves the next chunk's
        // indices into 0..64 and the others out of it (see add_block_full).
        unsafe {
            let mut d = vsubq_u8(maxv, x);
            let mut q = vqtbl4q_u8(table[0], d);
            for chunk in &table[1..] {
                d = vsubq_u8(d, vdupq_n_u8(64));
                q = vqtbx4q_u8(q, *chunk, d);
            }
            if SIGNED {
                veorq_u8(q, vdupq_n_u8(0x80))
            } else {
                q
            }
        }
    };
    uint8x16x4_t(one(b.0), one(b.1), one(b.2), one(b.3))
}

/// Writes a row of at least 64 bytes, `f` mapping each 64-byte input block
/// to its outputs: whole blocks, then the last 64 bytes again (rewriting
/// some outputs with the same values).
#[inline(always)]
fn write_outputs(row_in: &[u8], row_out: &mut [u8], mut f: impl FnMut(Block) -> Block) {
    debug_assert!(row_in.len() >= STEP && row_in.len() == row_out.len());
    let n = row_in.len().min(row_out.len());
    let (mut src, mut dst) = (row_in.as_ptr(), row_out.as_mut_ptr());
    let mut blocks = n / STEP;
    while blocks > 0 {
        // SAFETY: src and dst point `(n / STEP - blocks) * STEP` bytes into
        // the rows, so the next STEP bytes of each are in bounds.
        unsafe {
            vst1q_u8_x4(dst, f(vld1q_u8_x4(src)));
            src = src.add(STEP);
            dst = dst.add(STEP);
        }
        blocks -= 1;
    }
    if n % STEP != 0 {
        // SAFETY: n >= STEP, so the last STEP bytes of both rows are in bounds.
        unsafe {
            let y = f(vld1q_u8_x4(row_in.as_ptr().add(n - STEP)));
            vst1q_u8_x4(row_out.as_mut_ptr().add(n - STEP), y);
        }
    }
}

/// `write_outputs` with each whole block loaded and stored by one
/// post-incremented four-register `ld1` / `st1` (LLVM emits two `ldp`, two
/// `stp` and two `add`s), for the full-table rows, where v0..v3 are free.
#[inline(always)]
fn write_outputs_post(row_in: &[u8], row_out: &mut [u8], mut f: impl FnMut(Block) -> Block) {
    assert!(row_in.len() >= STEP && row_in.len() == row_out.len());
    let n = row_in.len();
    let (mut src, mut dst) = (row_in.as_ptr(), row_out.as_mut_ptr());
    for _ in 0..n / STEP {
        // SAFETY: src and dst point at the same whole 64-byte block of
        // their rows (n / STEP blocks from the starts); the asm writes only
        // those 64 bytes of row_out and the pointer.
        unsafe {
            let y = f(load_post(&mut src));
            core::arch::asm!(
                "st1 {{v0.16b-v3.16b}}, [{dst}], #64",
                dst = inout(reg) dst,
                in("v0") y.0, in("v1") y.1, in("v2") y.2, in("v3") y.3,
                options(nostack, preserves_flags),
            );
        }
    }
    if n % STEP != 0 {
        // SAFETY: n >= STEP, so the last STEP bytes of both rows are in bounds.
        unsafe {
            let y = f(vld1q_u8_x4(row_in.as_ptr().add(n - STEP)));
            vst1q_u8_x4(row_out.as_mut_ptr().add(n - STEP), y);
        }
    }
}

/// The same for a row shorter than 64 bytes, through stack buffers (padded
/// with the row's maximum: a valid index for every table).
#[inline(always)]
fn write_short_outputs(
    row_in: &[u8],
    row_out: &mut [u8],
    max: u8,
    mut f: impl FnMut(Block) -> Block,
) {
    for_each_block(row_in, max, |b| {
        let mut buf = [0u8; STEP];
        // SAFETY: buf is STEP bytes.
        unsafe { vst1q_u8_x4(buf.as_mut_ptr(), f(b)) };
        row_out.copy_from_slice(&buf[..row_out.len()]);
    });
}

/// Writes a row through `f` (long or short row).
#[inline(always)]
fn write_any(row_in: &[u8], row_out: &mut [u8], max: u8, f: impl FnMut(Block) -> Block) {
    if row_in.len() >= STEP {
        write_outputs(row_in, row_out, f);
    } else {
        write_short_outputs(row_in, row_out, max, f);
    }
}

/// Builds `C` chunks of the output table and writes the row through them.
#[inline(always)]
fn write_row<const SIGNED: bool, const C: usize>(
    p: &SoftmaxLut,
    row_in: &[u8],
    row_out: &mut [u8],
    max: u8,
    multiplier: i32,
    neg_shift: i16,
) {
    let table = output_table::<C>(p, multiplier, neg_shift);
    // SAFETY: register arithmetic.
    let maxv = unsafe { vdupq_n_u8(max) };
    write_any(row_in, row_out, max, |b| look::<SIGNED, C>(&table, maxv, b));
}

/// Writes a row of full-table data without an output table: each block's
/// `t` looked up again (four chunks, as in the sum) and requantized lane by
/// lane, as `output_table` does it. Cheaper than building a table of `C`
/// chunks for rows shorter than about `33 C` elements.
#[inline(never)]
fn write_row_direct<const SIGNED: bool>(
    p: &SoftmaxLut,
    row_in: &[u8],
    row_out: &mut [u8],
    max: u8,
    multiplier: i32,
    neg_shift: i16,
) {
    let m = <int32x4_t as Lane>::splat(multiplier);
    // SAFETY: register arithmetic; NEON is a compile-time target feature;
    // -31 <= neg_shift <= -7.
    let (maxv, shift) = unsafe { (vdupq_n_u8(max), vdupq_n_s16(neg_shift)) };
    let high = p.high.as_ptr().cast::<u8>();
    let low = p.low.as_ptr().cast::<u8>();
    // 16 outputs from the high and low bytes of their t (see output_table
    // for the arithmetic and its bounds).
    let requantize = |hi: uint8x16_t, lo: uint8x16_t| -> uint8x16_t {
        // SAFETY: register arithmetic.
        unsafe {
            // Little-endian: zipping (lo, hi) bytes gives the u16 t values.
            let t01 = vreinterpretq_u16_u8(vzip1q_u8(lo, hi));
            let t23 = vreinterpretq_u16_u8(vzip2q_u8(lo, hi));
            let wide =
                |t: uint32x4_t| vreinterpretq_s32_u32(t).saturating_rounding_doubling_high_mul(m);
            let h = |a: int32x4_t, b: int32x4_t| {
                let x = vuzp1q_u16(vreinterpretq_u16_s32(a), vreinterpretq_u16_s32(b));
                vrshlq_u16(x, shift)
            };
            let a = h(
                wide(vmovl_u16(vget_low_u16(t01))),
                wide(vmovl_high_u16(t01)),
            );
            let b = h(
                wide(vmovl_u16(vget_low_u16(t23))),
                wide(vmovl_high_u16(t23)),
            );
            let q = vqmovn_high_u16(vqmovn_u16(a), b);
            if SIGNED {
                veorq_u8(q, vdupq_n_u8(0x80))
            } else {
                q
            }
        }
    };
    write_any(row_in, row_out, max, |b| {
        // SAFETY: register arithmetic.
        let mut d = [b.0, b.1, b.2, b.3].map(|x| unsafe { vsubq_u8(maxv, x) });
        // Placeholders: the first chunk's `tbl`s write every lane.
        // SAFETY: as above.
        let (mut hi, mut lo) = unsafe { ([vdupq_n_u8(0); 4], [vdupq_n_u8(0); 4]) };
        // SAFETY: high and low point at four 64-byte chunks each.
        unsafe {
            lookup_chunk::<true, true>(high, low, &mut d, &mut hi, &mut lo);
            for k in 1..4 {
                lookup_chunk::<false, true>(
                    high.add(64 * k),
                    low.add(64 * k),
                    &mut d,
                    &mut hi,
                    &mut lo,
                );
            }
        }
        uint8x16x4_t(
            requantize(hi[0], lo[0]),
            requantize(hi[1], lo[1]),
            requantize(hi[2], lo[2]),
            requantize(hi[3], lo[3]),
        )
    });
}

/// The rest of a row once its maximum and sum are known: the multiplier, the
/// output table chunks that can be nonzero and the outputs. Every `d` of the
/// row is below `64 d_chunks` (at most 4), so later chunks are not needed.
/// `INLINE` writes multi-chunk rows here rather than through the call to
/// `rows_by_chunks` (for loops that keep no tables in registers).
#[inline(always)]
fn finish_row<const SIGNED: bool, const ONE_CHUNK: bool, const INLINE: bool>(
    p: &SoftmaxLut,
    row_in: &[u8],
    row_out: &mut [u8],
    max: u8,
    sum: u64,
    d_chunks: usize,
) {
    // inverse <= 256 / 65535 < 2^-7, so the shift is a right shift of at
    // least 7 (at most 31: beyond, every output is 0 either way).
    let (multiplier, shift) = p.row_multiplier_clamped(sum);
    debug_assert!((-31..=-7).contains(&shift));
    // Negative, as `urshl` takes it.
    let neg_shift = shift as i16;
    if ONE_CHUNK {
        return write_row::<SIGNED, 1>(p, row_in, row_out, max, multiplier, neg_shift);
    }
    // Outputs do not increase with d (t does not, and the requantization is
    // monotonic), so chunk k can be nonzero only if its first entry is.
    let nonzero = |d: usize| p.output(p.exp[d], multiplier, shift) != p.output_zero_point;
    let chunks = 1
        + (1..d_chunks.min(4))
            .take_while(|&k| nonzero(k * OUTPUT_ENTRIES))
            .count();
    // A chunk of the table costs about 50 instructions; looking t up again
    // and requantizing costs about 1.5 more per element than the table
    // lookup (full tables only: split rows need at most two chunks).
    if !p.split && row_in.len() < 56 * chunks {
        return write_row_direct::<SIGNED>(p, row_in, row_out, max, multiplier, neg_shift);
    }
    if INLINE {
        debug_assert!(row_in.len() >= STEP);
        macro_rules! write {
            ($c:literal) => {{
                let table = output_table::<$c>(p, multiplier, neg_shift);
                // SAFETY: register arithmetic.
                let maxv = unsafe { vdupq_n_u8(max) };
                write_outputs_post(row_in, row_out, |b| look::<SIGNED, $c>(&table, maxv, b))
            }};
        }
        match chunks {
            1 => write!(1),
            2 => write!(2),
            3 => write!(3),
            _ => write!(4),
        }
    } else {
        rows_by_chunks::<SIGNED>(p, row_in, row_out, max, multiplier, neg_shift, chunks);
    }
}

/// `write_row` with `chunks` output chunks, out of line so that the common
/// one-chunk row keeps its registers.
#[inline(never)]
fn rows_by_chunks<const SIGNED: bool>(
    p: &SoftmaxLut,
    row_in: &[u8],
    row_out: &mut [u8],
    max: u8,
    multiplier: i32,
    neg_shift: i16,
    chunks: usize,
) {
    write_by_chunks::<SIGNED>(p, row_in, row_out, max, multiplier, neg_shift, chunks)
}

/// `write_row` with `chunks` output chunks.
#[inline(always)]
fn write_by_chunks<const SIGNED: bool>(
    p: &SoftmaxLut,
    row_in: &[u8],
    row_out: &mut [u8],
    max: u8,
    multiplier: i32,
    neg_shift: i16,
    chunks: usize,
) {
    match chunks {
        1 => write_row::<SIGNED, 1>(p, row_in, row_out, max, multiplier, neg_shift),
        2 => write_row::<SIGNED, 2>(p, row_in, row_out, max, multiplier, neg_shift),
        3 => write_row::<SIGNED, 3>(p, row_in, row_out, max, multiplier, neg_shift),
        _ => write_row::<SIGNED, 4>(p, row_in, row_out, max, multiplier, neg_shift),
    }
}

/// Loads the split tables.
#[inline(always)]
fn load_tables(p: &SoftmaxLut) -> Tables {
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

/// `Method::Lut` softmax of every `row_len`-long row of 8-bit data through
/// the sum tables `tables` gives for each row; the caller checked the lengths. `SIGNED` selects
/// int8 (signed maximum, outputs offset by -128) over uint8; `ONE_CHUNK`
/// says that the outputs are 0 from `d = 64` on (`p.outputs_fit`).
#[inline(always)]
fn softmax_rows<const SIGNED: bool, const ONE_CHUNK: bool, S: SumTables>(
    p: &SoftmaxLut,
    tables: impl Fn() -> S,
    input: &[u8],
    output: &mut [u8],
    row_len: usize,
) {
    let masks = Masks::new(row_len);
    let rows = input.len().min(output.len()) / row_len;
    let mut row = 0;
    if row_len < STEP {
        // Short rows as 64-byte windows of the slices: one load for the
        // maximum and the sum (lanes past the row masked off), one store of
        // 64 outputs, of which those past the row land on the next rows'
        // outputs and are rewritten with those rows. The last rows, whose
        // window would pass the end, go through stack buffers below.
        let n = input.len().min(output.len());
        let windows = if n >= STEP {
            ((n - STEP) / row_len + 1).min(rows)
        } else {
            0
        };
        while row < windows {
            let start = row * row_len;
            let window_in = &input[start..start + STEP];
            let window_out = &mut output[start..start + STEP];
            let max = window_max::<SIGNED>(window_in, &masks);
            let sum = window_sum(&tables(), window_in, max, &masks);
            finish_row::<SIGNED, ONE_CHUNK, false>(p, window_in, window_out, max, sum, 4);
            row += 1;
        }
    }
    for (row_in, row_out) in input[row * row_len..]
        .chunks_exact(row_len)
        .zip(output[row * row_len..].chunks_exact_mut(row_len))
    {
        let max = row_max::<SIGNED>(row_in);
        let sum = row_sum(&tables(), row_in, max, &masks);
        finish_row::<SIGNED, ONE_CHUNK, false>(p, row_in, row_out, max, sum, 4);
    }
}

/// Full-table rows of at least 64 bytes. The max pass also finds the row's
/// minimum: every `d` lies in `0..=max - min`, so the sum looks up only the
/// chunks that range reaches (and of those, for the high bytes, only the
/// chunks where `t >= 256` somewhere), and the output pass builds no chunk
/// beyond it. Attention rows span two or three chunks of four.
fn full_rows<const SIGNED: bool>(p: &SoftmaxLut, input: &[u8], output: &mut [u8], row_len: usize) {
    debug_assert!(row_len >= STEP);
    let masks = Masks::new(row_len);
    for (row_in, row_out) in input
        .chunks_exact(row_len)
        .zip(output.chunks_exact_mut(row_len))
    {
        let (max, min) = row_max_min::<SIGNED>(row_in);
        // max >= min in the row's order, so the byte difference is the
        // distance (0..=255) for int8 too.
        let d_chunks = max.wrapping_sub(min) as usize / 64 + 1;
        let lo = d_chunks.min(p.low_chunks);
        let hi = lo.min(p.high_chunks);
        let sum = full_sum(p, hi, lo, row_in, max, &masks);
        finish_row::<SIGNED, false, true>(p, row_in, row_out, max, sum, d_chunks);
    }
}

/// `row_sum` through the first `lo` low-byte and `hi` high-byte chunks of
/// the full tables (`1 <= hi <= lo <= 4`).
#[inline(always)]
fn full_sum(p: &SoftmaxLut, hi: usize, lo: usize, row: &[u8], max: u8, masks: &Masks) -> u64 {
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

/// Maximum and minimum bytes of a row of at least 64 bytes, signed (int8)
/// or unsigned (uint8), as raw bytes (an overlapping last block, as in
/// `row_max`).
#[inline(always)]
fn row_max_min<const SIGNED: bool>(row: &[u8]) -> (u8, u8) {
    debug_assert!(row.len() >= STEP);
    // SAFETY: the caller passes rows of at least STEP bytes (full_rows is
    // only called for them), so the first 16 are in bounds.
    let first = unsafe { vld1q_u8(row.as_ptr()) };
    let (mut hi, mut lo) = (first, first);
    // SAFETY: register arithmetic; NEON is a compile-time target feature.
    let mut fold = |b: Block| unsafe {
        if SIGNED {
            let s = |v| vreinterpretq_s8_u8(v);
            let u = |v| vreinterpretq_u8_s8(v);
            let m = vmaxq_s8(vmaxq_s8(s(b.0), s(b.1)), vmaxq_s8(s(b.2), s(b.3)));
            let n = vminq_s8(vminq_s8(s(b.0), s(b.1)), vminq_s8(s(b.2), s(b.3)));
            hi = u(vmaxq_s8(s(hi), m));
            lo = u(vminq_s8(s(lo), n));
        } else {
            hi = vmaxq_u8(hi, vmaxq_u8(vmaxq_u8(b.0, b.1), vmaxq_u8(b.2, b.3)));
            lo = vminq_u8(lo, vminq_u8(vminq_u8(b.0, b.1), vminq_u8(b.2, b.3)));
        }
    };
    let mut src = row.as_ptr();
    for _ in 0..row.len() / STEP {
        // SAFETY: src points at one of the row's whole 64-byte blocks.
        fold(unsafe { load_post(&mut src) });
    }
    if row.len() % STEP != 0 {
        // SAFETY: row.len() >= STEP, so the last STEP bytes are in bounds.
        fold(unsafe { vld1q_u8_x4(row.as_ptr().add(row.len() - STEP)) });
    }
    // SAFETY: register arithmetic.
    unsafe {
        if SIGNED {
            (
                vmaxvq_s8(vreinterpretq_s8_u8(hi)) as u8,
                vminvq_s8(vreinterpretq_s8_u8(lo)) as u8,
            )
        } else {
            (vmaxvq_u8(hi), vminvq_u8(lo))
        }
    }
}

/// Maximum of a short row read as a 64-byte window: the lanes `masks`
/// marks (past the row) count as the type's minimum.
#[inline(always)]
fn window_max<const SIGNED: bool>(window: &[u8], masks: &Masks) -> u8 {
    debug_assert!(window.len() == STEP);
    // SAFETY: the window and the mask are STEP bytes; the rest is register
    // arithmetic.
    unsafe {
        let b = vld1q_u8_x4(window.as_ptr());
        let keep = vld1q_u8_x4(opaque(masks.keep.as_ptr()));
        let fill = vdupq_n_u8(if SIGNED { 0x80 } else { 0 });
        let m = |x, k| vbslq_u8(k, x, fill);
        let (a, b, c, d) = (
            m(b.0, keep.0),
            m(b.1, keep.1),
            m(b.2, keep.2),
            m(b.3, keep.3),
        );
        if SIGNED {
            let s = |v| vreinterpretq_s8_u8(v);
            vmaxvq_s8(vmaxq_s8(vmaxq_s8(s(a), s(b)), vmaxq_s8(s(c), s(d)))) as u8
        } else {
            vmaxvq_u8(vmaxq_u8(vmaxq_u8(a, b), vmaxq_u8(c, d)))
        }
    }
}

/// Sum of a short row read as a 64-byte window (lanes past the row masked).
#[inline(always)]
fn window_sum(tables: &impl SumTables, window: &[u8], max: u8, masks: &Masks) -> u64 {
    debug_assert!(window.len() == STEP);
    let mut partial = Partial::new();
    // SAFETY: the window is STEP bytes; the rest is register arithmetic.
    let (maxv, b) = unsafe { (vdupq_n_u8(max), vld1q_u8_x4(window.as_ptr())) };
    let extra = tables.add_last(&mut partial, maxv, b, masks);
    partial.flush();
    partial.total() - extra
}

/// Rows of exactly 64 bytes (split tables, one output chunk): each row is
/// one block, loaded once and kept in registers for all three passes, with
/// no loop, mask or flush per pass. Its `d = max - x` serve both the sum
/// and the output lookup; the sum of 64 terms fits u16 lanes, so each byte
/// half is summed by one `uaddlp`, three `uadalp` and one `uaddlv`. The
/// split tables are loaded once for all rows: with no loop inside a row,
/// there are registers enough to keep them beside the row and its output
/// table (no spills in the row loop, checked on the disassembly).
#[inline(never)]
fn rows64<const SIGNED: bool>(p: &SoftmaxLut, input: &[u8], output: &mut [u8]) {
    let rows = input.len().min(output.len()) / STEP;
    let mut src = input.as_ptr();
    let mut dst = output.as_mut_ptr();
    let tables = load_tables(p);
    for _ in 0..rows {
        // SAFETY: src points at row `r < rows` of input, whose 64 bytes are
        // in bounds (rows * 64 <= input.len()).
        let b = unsafe { load_post(&mut src) };
        // SAFETY: register arithmetic; NEON is a compile-time target feature.
        let d = unsafe {
            let max = if SIGNED {
                let s = |v| vreinterpretq_s8_u8(v);
                vmaxvq_s8(vmaxq_s8(vmaxq_s8(s(b.0), s(b.1)), vmaxq_s8(s(b.2), s(b.3)))) as u8
            } else {
                vmaxvq_u8(vmaxq_u8(vmaxq_u8(b.0, b.1), vmaxq_u8(b.2, b.3)))
            };
            let maxv = vdupq_n_u8(max);
            [
                vsubq_u8(maxv, b.0),
                vsubq_u8(maxv, b.1),
                vsubq_u8(maxv, b.2),
                vsubq_u8(maxv, b.3),
            ]
        };
        let sum = block_sum_split(&tables, &d);
        let (multiplier, shift) = p.row_multiplier_short(sum);
        let [table] = output_table::<1>(p, multiplier, shift as i16);
        // SAFETY: register arithmetic; for int8, q - 128 is q ^ 0x80.
        let y = d.map(|d| unsafe {
            let q = vqtbl4q_u8(table, d);
            if SIGNED {
                veorq_u8(q, vdupq_n_u8(0x80))
            } else {
                q
            }
        });
        // SAFETY: dst points at row `r < rows` of output (rows * 64 <=
        // output.len()); the asm writes only those 64 bytes and the pointer.
        unsafe {
            core::arch::asm!(
                "st1 {{v0.16b-v3.16b}}, [{dst}], #64",
                dst = inout(reg) dst,
                in("v0") y[0], in("v1") y[1], in("v2") y[2], in("v3") y[3],
                options(nostack, preserves_flags),
            );
        }
    }
}

/// The exact sum of `t[d]` over 64 indices `d` through the split tables,
/// as an `f32` (exact: at most 64 * 65535 < 2^24). The high and low bytes
/// are each summed in u16 lanes (at most 8 * 255 per lane) and reduced by
/// `uaddlv`; the total is `256 high + low`. In asm for the same reasons as
/// `add_block_split` (tables pinned to v16..v27); `d` is left intact for
/// the output pass (the `d ^ 64` of the second low table go to temporaries).
#[inline(always)]
fn block_sum_split(tables: &Tables, d: &[uint8x16_t; 4]) -> f32 {
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

/// Every row: the common case (split tables, one output chunk, rows of at
/// least 64 bytes) here, with no call in its loop (a call would make LLVM
/// save the table registers around it on every row); the others out of line.
#[inline(always)]
fn softmax_any<const SIGNED: bool>(
    p: &SoftmaxLut,
    input: &[u8],
    output: &mut [u8],
    row_len: usize,
) {
    if p.split && p.outputs_fit && row_len == STEP {
        rows64::<SIGNED>(p, input, output)
    } else if p.split && p.outputs_fit && row_len >= STEP {
        softmax_rows::<SIGNED, true, _>(p, || load_tables(p), input, output, row_len)
    } else {
        other_rows::<SIGNED>(p, input, output, row_len)
    }
}

/// Rows shorter than 64 bytes, rows of scales that may need more than one
/// output chunk, and rows through the full 256-entry tables (`beta * scale`
/// below about 0.09).
#[inline(never)]
fn other_rows<const SIGNED: bool>(p: &SoftmaxLut, input: &[u8], output: &mut [u8], row_len: usize) {
    match (p.split, p.outputs_fit) {
        (true, true) => {
            softmax_rows::<SIGNED, true, _>(p, || load_tables(p), input, output, row_len)
        }
        (true, false) => {
            softmax_rows::<SIGNED, false, _>(p, || load_tables(p), input, output, row_len)
        }
        (false, _) if row_len >= STEP => full_rows::<SIGNED>(p, input, output, row_len),
        (false, _) => {
            softmax_rows::<SIGNED, false, _>(p, || FullTables::<4, 4>(p), input, output, row_len)
        }
    }
}

/// The int8 kernel (named for the asm checks and profiles).
#[inline(never)]
pub(crate) fn softmax_lut_i8(p: &SoftmaxLut, input: &[u8], output: &mut [u8], row_len: usize) {
    softmax_any::<true>(p, input, output, row_len)
}

/// The uint8 kernel.
#[inline(never)]
pub(crate) fn softmax_lut_u8(p: &SoftmaxLut, input: &[u8], output: &mut [u8], row_len: usize) {
    softmax_any::<false>(p, input, output, row_len)
}

/// Dispatches on the signedness.
pub(crate) fn softmax(
    p: &SoftmaxLut,
    signed: bool,
    input: &[u8],
    output: &mut [u8],
    row_len: usize,
) {
    if signed {
        softmax_lut_i8(p, input, output, row_len)
    } else {
        softmax_lut_u8(p, input, output, row_len)
    }
}
