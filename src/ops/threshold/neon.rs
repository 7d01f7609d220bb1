//! The NEON scans: compare a block of lanes per step against the bound,
//! skip blocks where no lane passes with one reduction, and hand out the
//! passing lanes in index order from a 64-bit lane mask (bytes: 64 lanes
//! per block, one bit each, folded by pairwise additions; 16-bit and `f32`
//! lanes: `xtn` of the comparison, eight bits per lane).
//! They select exactly the elements the scalar scans select: the same
//! comparison, lane by lane. The last partial block goes through the
//! crate's tail helper, padded with a value that never passes.

use crate::simd::tail::read_tail;
use core::arch::aarch64::*;

/// Calls `f(base + l, *chunk.add(l))` for every lane `l` whose bit is set
/// in `bits` (one bit per lane, bit `l << shift` or above it in lane `l`'s
/// `1 << shift` bits), in lane order.
///
/// # Safety
/// `chunk` must be readable for every lane whose bit is set.
#[inline(always)]
unsafe fn emit<E: Copy>(
    mut bits: u64,
    shift: u32,
    chunk: *const E,
    base: usize,
    f: &mut impl FnMut(usize, E),
) {
    while bits != 0 {
        let l = (bits.trailing_zeros() >> shift) as usize;
        // SAFETY: lane l's bit is set (the caller's guarantee).
        f(base + l, unsafe { chunk.add(l).read() });
        bits &= bits - 1;
    }
}

/// One bit per byte lane (bit `4 l + 3` for lane `l`) of a 16-byte mask.
#[inline(always)]
fn byte_lane_bits(m: uint8x16_t) -> u64 {
    // SAFETY: register arithmetic; NEON is a compile-time target feature
    // (the cfg on this module).
    let nibbles = unsafe {
        vget_lane_u64(
            vreinterpret_u64_u8(vshrn_n_u16(vreinterpretq_u16_u8(m), 4)),
            0,
        )
    };
    nibbles & 0x8888_8888_8888_8888
}

/// One bit per 16-bit lane (bit `8 l + 7` for lane `l`) of a 16-bit mask.
#[inline(always)]
fn half_lane_bits(m: uint16x8_t) -> u64 {
    // SAFETY: register arithmetic.
    let bytes = unsafe { vget_lane_u64(vreinterpret_u64_u8(vmovn_u16(m)), 0) };
    bytes & 0x8080_8080_8080_8080
}

/// `v >= b` per byte lane, signed (int8) or unsigned (uint8).
#[inline(always)]
fn at_least<const SIGNED: bool>(v: uint8x16_t, b: uint8x16_t) -> uint8x16_t {
    // SAFETY: register arithmetic.
    unsafe {
        if SIGNED {
            vcgeq_s8(vreinterpretq_s8_u8(v), vreinterpretq_s8_u8(b))
        } else {
            vcgeq_u8(v, b)
        }
    }
}

/// Calls `f(i, row[i])` for every byte with `row[i] >= bound` (as `i8` if
/// `SIGNED`), in index order. `bound` must be above the type's minimum (the
/// tail is padded with it).
#[inline(always)]
pub(crate) fn scan_bytes<const SIGNED: bool>(row: &[u8], bound: u8, mut f: impl FnMut(usize, u8)) {
    byte_blocks::<SIGNED, true, 16>(row, bound, |bits, shift, chunk, base, _| {
        // SAFETY: the bits set are lanes of the block at `chunk`
        // (`byte_blocks`' guarantee).
        unsafe { emit::<u8>(bits, shift, chunk, base, &mut f) }
    });
}

/// Calls `f(i, row[i])` for every `row[i] >= bound`, in index order;
/// `bound > i16::MIN`.
#[inline(always)]
pub(crate) fn scan_i16(row: &[i16], bound: i16, mut f: impl FnMut(usize, i16)) {
    let n = row.len();
    let p = row.as_ptr();
    // SAFETY: register arithmetic.
    let b = unsafe { vdupq_n_s16(bound) };
    let mut i = 0;
    while i + 32 <= n {
        // SAFETY: the 32 elements at i are in the row.
        unsafe {
            let v = vld1q_s16_x4(p.add(i));
            let m = [
                vcgeq_s16(v.0, b),
                vcgeq_s16(v.1, b),
                vcgeq_s16(v.2, b),
                vcgeq_s16(v.3, b),
            ];
            let any = vorrq_u16(vorrq_u16(m[0], m[1]), vorrq_u16(m[2], m[3]));
            if vmaxvq_u16(any) != 0 {
                for (k, &mk) in m.iter().enumerate() {
                    emit::<i16>(half_lane_bits(mk), 3, p.add(i + 8 * k), i + 8 * k, &mut f);
                }
            }
        }
        i += 32;
    }
    while i + 8 <= n {
        // SAFETY: the 8 elements at i are in the row.
        unsafe {
            let m = vcgeq_s16(vld1q_s16(p.add(i)), b);
            emit::<i16>(half_lane_bits(m), 3, p.add(i), i, &mut f);
        }
        i += 8;
    }
    if i < n {
        read_tail::<8, i16, ()>(&row[i..], i16::MIN, |buf| {
            // SAFETY: read_tail hands out 8 readable elements; the padding
            // never passes (bound > i16::MIN).
            unsafe {
                let m = vcgeq_s16(vld1q_s16(buf), b);
                emit::<i16>(half_lane_bits(m), 3, buf, i, &mut f);
            }
        });
    }
}

/// Calls `f(i, row[i])` for every `row[i] >= bound` (never NaN), in index
/// order.
#[inline(always)]
pub(crate) fn scan_f32(row: &[f32], bound: f32, mut f: impl FnMut(usize, f32)) {
    let n = row.len();
    let p = row.as_ptr();
    // SAFETY: register arithmetic.
    let b = unsafe { vdupq_n_f32(bound) };
    // Eight 32-bit masks as one of eight 16-bit lanes.
    // SAFETY: register arithmetic.
    let pair = |m0, m1| unsafe { vcombine_u16(vmovn_u32(m0), vmovn_u32(m1)) };
    let mut i = 0;
    while i + 16 <= n {
        // SAFETY: the 16 elements at i are in the row.
        unsafe {
            let v = vld1q_f32_x4(p.add(i));
            let lo = pair(vcgeq_f32(v.0, b), vcgeq_f32(v.1, b));
            let hi = pair(vcgeq_f32(v.2, b), vcgeq_f32(v.3, b));
            if vmaxvq_u16(vorrq_u16(lo, hi)) != 0 {
                emit::<f32>(half_lane_bits(lo), 3, p.add(i), i, &mut f);
                emit::<f32>(half_lane_bits(hi), 3, p.add(i + 8), i + 8, &mut f);
            }
        }
        i += 16;
    }
    if i < n {
        read_tail::<16, f32, ()>(&row[i..], f32::NAN, |buf| {
            // SAFETY: read_tail hands out 16 readable elements; NaN padding
            // never passes a comparison.
            unsafe {
                let v = vld1q_f32_x4(buf);
                let lo = pair(vcgeq_f32(v.0, b), vcgeq_f32(v.1, b));
                let hi = pair(vcgeq_f32(v.2, b), vcgeq_f32(v.3, b));
                emit::<f32>(half_lane_bits(lo), 3, buf, i, &mut f);
                emit::<f32>(half_lane_bits(hi), 3, buf.add(8), i + 8, &mut f);
            }
        });
    }
}

/// One bit per lane of a 64-byte mask (bit `l` for byte lane `l`): each
/// lane keeps its bit of `1 << (l % 8)`, and four pairwise additions fold
/// the 64 lanes' bits into 8 bytes. The additions are asm: LLVM rewrites
/// `vpaddq_u8` of disjoint bits as `uzp1`/`uzp2`/`orr` (13 instructions
/// instead of 4).
#[inline(always)]
fn block_lane_bits(m: [uint8x16_t; 4]) -> u64 {
    const BIT: [u8; 16] = [1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128];
    let bits: u64;
    // SAFETY: BIT is 16 readable bytes; the rest is register arithmetic
    // (the asm reads and writes only its register operands).
    unsafe {
        let bit = vld1q_u8(BIT.as_ptr());
        core::arch::asm!(
            "addp {a:v}.16b, {a:v}.16b, {b:v}.16b",
            "addp {c:v}.16b, {c:v}.16b, {d:v}.16b",
            "addp {a:v}.16b, {a:v}.16b, {c:v}.16b",
            "addp {a:v}.16b, {a:v}.16b, {a:v}.16b",
            "fmov {bits}, {a:d}",
            a = inout(vreg) vandq_u8(m[0], bit) => _,
            b = in(vreg) vandq_u8(m[1], bit),
            c = inout(vreg) vandq_u8(m[2], bit) => _,
            d = in(vreg) vandq_u8(m[3], bit),
            bits = out(reg) bits,
            options(pure, nomem, nostack, preserves_flags),
        );
    }
    bits
}

/// `q[l] >= b` for the 64 byte lanes at `q`, as four masks.
///
/// # Safety
/// `q` must be readable for 64 bytes.
#[inline(always)]
unsafe fn block_masks<const SIGNED: bool>(q: *const u8, b: uint8x16_t) -> [uint8x16_t; 4] {
    // SAFETY: the caller's guarantee.
    let v = unsafe { vld1q_u8_x4(q) };
    [
        at_least::<SIGNED>(v.0, b),
        at_least::<SIGNED>(v.1, b),
        at_least::<SIGNED>(v.2, b),
        at_least::<SIGNED>(v.3, b),
    ]
}

/// Calls `block(bits, shift, chunk, base, whole)` for the blocks of `row`
/// in order: `chunk` points to the block's bytes and `base` is its index in
/// the row; `bits` has lane `l`'s bit set (bit `(l << shift) + (1 << shift)
/// - 1`) for every lane with `chunk[l] >= bound` (as `i8` if `SIGNED`).
/// Blocks of 64 lanes (`shift` 0: bits folded by pairwise additions) while
/// they fit, then blocks of `REST` (64, or 16 with `shift` 2: `shrn` of the
/// comparison), the last partial one as a copy padded with the type's
/// minimum (`whole` false; `chunk` valid during the call only), so `bound` must be above that minimum. `SPARSE`
/// skips, with one reduction, the 64-lane blocks where no lane passes (rows
/// where few pass). `REST` 16 suits short rows (no 64-byte copy); with 64,
/// `block` has two call sites, which keeps a large `block` inlined.
#[inline(always)]
fn byte_blocks<const SIGNED: bool, const SPARSE: bool, const REST: usize>(
    row: &[u8],
    bound: u8,
    mut block: impl FnMut(u64, u32, *const u8, usize, bool),
) {
    let n = row.len();
    let p = row.as_ptr();
    // SAFETY: register arithmetic.
    let b = unsafe { vdupq_n_u8(bound) };
    let mut i = 0;
    while i + 64 <= n {
        let at = p.wrapping_add(i);
        // SAFETY: i + 64 <= n: the 64 bytes at i are in the row.
        let m = unsafe { block_masks::<SIGNED>(at, b) };
        // SAFETY: register arithmetic.
        let skip = SPARSE
            && unsafe { vmaxvq_u8(vorrq_u8(vorrq_u8(m[0], m[1]), vorrq_u8(m[2], m[3]))) } == 0;
        if !skip {
            block(block_lane_bits(m), 0, at, i, true);
        }
        i += 64;
    }
    if REST == 16 {
        while i + 16 <= n {
            let at = p.wrapping_add(i);
            // SAFETY: i + 16 <= n: the 16 bytes at i are in the row.
            let m = at_least::<SIGNED>(unsafe { vld1q_u8(at) }, b);
            block(byte_lane_bits(m), 2, at, i, true);
            i += 16;
        }
    }
    if i < n {
        let pad = if SIGNED { 0x80 } else { 0 };
        read_tail::<REST, u8, ()>(&row[i..], pad, |buf| {
            // SAFETY: read_tail hands out REST readable bytes; the padding
            // (the type's minimum, below the bound) never passes.
            let (bits, shift) = unsafe {
                if REST == 64 {
                    (block_lane_bits(block_masks::<SIGNED>(buf, b)), 0)
                } else {
                    (byte_lane_bits(at_least::<SIGNED>(vld1q_u8(buf), b)), 2)
                }
            };
            block(bits, shift, buf, i, false);
        });
    }
}

/// Writes `make(i, row[i])` for every byte with `row[i] >= bound` (as `i8`
/// if `SIGNED`; `bound` above the type's minimum) for which it is `Some`,
/// in index order, into `out` from `count` on while `out` has room, and
/// returns the new count (of all of them, written or not).
///
/// The blocks of [`byte_blocks`] (`SPARSE` as there), each one's set bits
/// in a loop (ctz, load, `make`, store, clear). The count stays in a
/// register, and writes go unchecked while the block's 64 possible hits
/// fit.
#[inline(always)]
pub(crate) fn hits_bytes<H, const SIGNED: bool, const SPARSE: bool>(
    row: &[u8],
    bound: u8,
    out: &mut [H],
    mut count: usize,
    mut make: impl FnMut(usize, u8) -> Option<H>,
) -> usize {
    let cap = out.len();
    let o = out.as_mut_ptr();
    // The hits of one block at `base` whose bytes `chunk` points to, lane
    // `l` at bit `l << shift` or above; `checked` bounds each write.
    macro_rules! hits {
        ($bits:expr, $shift:expr, $chunk:expr, $base:expr, $checked:expr) => {{
            let mut bits: u64 = $bits;
            while bits != 0 {
                let l = (bits.trailing_zeros() >> $shift) as usize;
                // SAFETY: lane l passed, so it is one of the block's lanes
                // inside the row (or the tail buffer's copy of them).
                let x = unsafe { $chunk.add(l).read() };
                if let Some(hit) = make($base + l, x) {
                    if !$checked || count < cap {
                        // SAFETY: count < cap: checked here, or by the
                        // caller of the unchecked form for the whole block.
                        unsafe { o.add(count).write(hit) };
                    }
                    count += 1;
                }
                bits &= bits - 1;
                // SAFETY: an empty asm block (a comment) that only claims
                // to change `bits`, a register: it keeps LLVM from turning
                // this loop into a popcount-counted one, which costs a
                // popcount per block and a second counter per hit (the
                // thresholded logistic at 10% passing: 1.71 -> 1.52
                // instructions per element without it).
                unsafe {
                    core::arch::asm!(
                        "// {0}",
                        inout(reg) bits,
                        options(pure, nomem, nostack, preserves_flags),
                    )
                };
            }
        }};
    }
    byte_blocks::<SIGNED, SPARSE, 64>(row, bound, |bits, shift, chunk, base, whole| {
        // At most 64 hits per block.
        if whole && count + 64 <= cap {
            hits!(bits, shift, chunk, base, false);
        } else {
            hits!(bits, shift, chunk, base, true);
        }
    });
    count
}

/// The 8-bit thresholded logistic where every input at or above `bound`
/// passes: `out[n] = (i, table[row[i]])` for every such `i`, in index
/// order, while `out` has room; returns the number of hits (all of them,
/// written or not).
#[inline(always)]
pub(crate) fn table_hits<T: crate::elem::QuantElem, const SIGNED: bool>(
    row: &[u8],
    bound: u8,
    table: &[T; 256],
    out: &mut [super::Hit<T>],
) -> usize {
    hits_bytes::<_, SIGNED, false>(row, bound, out, 0, |i, x| {
        Some(super::Hit {
            index: i as u32,
            value: table[x as usize],
        })
    })
}

/// [`table_hits`] on int8 inputs as bytes, outputs as bytes: out of line,
/// compiled once in the library and named for the asm checks.
#[inline(never)]
pub(crate) fn logistic_hits_i8(
    row: &[u8],
    bound: u8,
    table: &[u8; 256],
    out: &mut [super::Hit<u8>],
) -> usize {
    table_hits::<u8, true>(row, bound, table, out)
}

/// [`table_hits`] on uint8 inputs.
#[inline(never)]
pub(crate) fn logistic_hits_u8(
    row: &[u8],
    bound: u8,
    table: &[u8; 256],
    out: &mut [super::Hit<u8>],
) -> usize {
    table_hits::<u8, false>(row, bound, table, out)
}
